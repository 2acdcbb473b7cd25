"""A metric of fairseq-train's validations against updates, for several runs: a Markdown table and a PNG.

    fairseq-tree-report curves work/ct/L6/train_constituent_transformer.log work/ct/L10/train_....log \\
        --names L6 L10 --metric uf1 --png uf1_curve.png

Reads the ``valid on 'valid' subset | ... | METRIC x | ... | num_updates N`` lines (a resumed run's log
repeats no update: the last value per update wins).
"""

import argparse
import sys
from pathlib import Path

from fairseq_tree.evaluation.translation_runs import validations
from fairseq_tree.utils.help_text import ArgumentParser


def curve(log: Path, metric: str, required: bool = True) -> dict:
    """-> {updates: value} of the validations in ``log``; a log without one is an error when ``required``."""
    points = {u: m[metric] for u, m in validations(log).items() if metric in m}
    if not points and required:
        raise SystemExit(f"{log}: no validation line with '{metric}'")
    return points


def main(argv=None):
    ap = ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("logs", nargs="+", type=Path)
    ap.add_argument("--names", nargs="+")
    ap.add_argument("--metric", default="uf1")
    ap.add_argument("--png")
    ap.add_argument("--baseline", type=float, help="a horizontal line (e.g. right-branching's UF1)")
    args = ap.parse_args(argv)
    names = args.names or [p.stem for p in args.logs]
    curves = [curve(p, args.metric) for p in args.logs]
    steps = sorted(set().union(*curves))
    print(f"| updates | {' | '.join(names)} |\n|---:|{'---:|' * len(names)}")
    for u in steps:
        print(f"| {u:,} | " + " | ".join(f"{c[u]:.1f}" if u in c else "" for c in curves) + " |")
    if args.png:
        plot(names, curves, args.metric, args.png, args.baseline)


def plot(names, curves, metric: str, path: str, baseline=None, zoom=None) -> None:
    """Each curve ({updates: value}) a line; ``zoom``: the y axis from the smallest value to that much above it
    (the end of training, where losses differ in the second decimal)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    for name, c in zip(names, curves):
        ax.plot(sorted(c), [c[u] for u in sorted(c)], marker="o", markersize=2, label=name)
    if baseline is not None:
        ax.axhline(baseline, color="gray", linestyle="--", label="baseline")
    if zoom is not None:
        low = min(min(c.values()) for c in curves)
        ax.set_ylim(low - 0.05 * zoom, low + zoom)
    ax.set_xlabel("updates")
    ax.set_ylabel(metric)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def cli_main() -> None:
    rc = main(sys.argv[1:])
    sys.exit(rc if isinstance(rc, int) else 0)


if __name__ == "__main__":
    cli_main()
