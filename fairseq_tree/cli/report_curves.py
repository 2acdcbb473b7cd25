"""A metric of fairseq-train's validations against updates, for several runs: a Markdown table and a PNG.

    fairseq-tree-report curves work/ct/L6/train_constituent_transformer.log work/ct/L10/train_....log \\
        --names L6 L10 --metric uf1 --png uf1_curve.png

Reads the ``valid on 'valid' subset | ... | METRIC x | ... | num_updates N`` lines (a resumed run's log
repeats no update: the last value per update wins). A directory instead of a log is a reference recipe's output
(``scripts/recipes/reference_*.sh``): its ``scores_U.txt`` (``fairseq-tree-score``'s JSON last line) at the
recipe's update counts U, the authors' code scored by our scorer, so the two codes print side by side. Several
metrics make each cell ``a / b / c``:

    fairseq-tree-report curves work/induction_wsj/wsj/structformer_small_code_s1/train.log \
        work/induction_wsj/reference/wsj --names ours theirs --metric uf1 uas uuas
"""

import argparse
from pathlib import Path

from fairseq_tree.evaluation.curves import compare_table, curve, groups_figure
from fairseq_tree.evaluation.plotting import save
from fairseq_tree.utils.help_text import ArgumentParser


def main(argv=None):
    ap = ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("logs", nargs="+", type=Path)
    ap.add_argument("--names", nargs="+")
    ap.add_argument("--metric", nargs="+", default=["uf1"], help="one or more (a cell per run: 'a / b / c')")
    ap.add_argument("--png", help="the first metric's curves (with --compare: a colour per group)")
    ap.add_argument("--baseline", type=float, help="a horizontal line (e.g. right-branching's UF1)")
    ap.add_argument("--groups", nargs="+", help="a group name per run (e.g. ours ours theirs theirs), for --compare")
    ap.add_argument("--compare", action="store_true",
                    help="the groups side by side at equal updates (mean ± sd, differences to the first group)")
    ap.add_argument("--at", nargs="+", type=int, help="--compare's update counts (default: the last group's)")
    args = ap.parse_args(argv)
    names = args.names or [p.stem for p in args.logs]
    if len(names) != len(args.logs):
        ap.error(f"--names gives {len(names)} names for {len(args.logs)} runs")
    if args.compare:
        return _compare(ap, args)
    curves = [[curve(p, m, required=k == 0) for k, m in enumerate(args.metric)] for p in args.logs]
    steps = sorted(set().union(*(c[0] for c in curves)))
    print(f"| updates | {' | '.join(names)} |\n|---:|{'---:|' * len(names)}")
    for u in steps:
        print(f"| {u:,} | " + " | ".join(_cell(c, u) for c in curves) + " |")
    if args.png:
        plot(names, [c[0] for c in curves], args.metric[0], args.png, args.baseline)


def _compare(ap, args) -> int:
    """--compare: the groups in the order they first appear in --groups; a reference directory at its true counts."""
    groups = args.groups or []
    if len(groups) != len(args.logs):
        ap.error(f"--compare needs a --groups name per run: {len(groups)} for {len(args.logs)} runs")
    order = list(dict.fromkeys(groups))
    if len(order) < 2:
        ap.error("--compare needs two groups or more")
    runs = {g: [] for g in order}
    for g, path in zip(groups, args.logs):
        runs[g].append([curve(path, m, required=k == 0, true_counts=True) for k, m in enumerate(args.metric)])
    counts = args.at or sorted(set().union(*(run[0] for run in runs[order[-1]])))
    print(compare_table([(g, runs[g]) for g in order], counts, args.metric))
    if args.png:
        save(groups_figure([(g, [run[0] for run in runs[g]]) for g in order], args.metric[0], args.baseline),
             args.png, dpi=120)
    return 0


def _cell(run_curves: list, u: int) -> str:
    """One run's metrics at ``u`` updates, 'a / b / c' ('-' for a metric it lacks there; '' when it has none)."""
    values = [c.get(u) for c in run_curves]
    if all(v is None for v in values):
        return ""
    return " / ".join("-" if v is None else f"{v:.1f}" for v in values)


def plot(names, curves, metric: str, path: str, baseline=None, zoom=None) -> None:
    """Each curve ({updates: value}) a line of its own colour (:func:`groups_figure`, a group per run), saved at
    120 dpi; ``zoom``: the y axis from the smallest value to that much above it (the end of training, where losses
    differ in the second decimal)."""
    save(groups_figure([(name, [c]) for name, c in zip(names, curves)], metric, baseline, zoom), path, dpi=120)
