"""The results table of ``scripts/recipes/train_tree2seq_multi30k.sh``: per target language, each model's test BLEU
(per seed, mean ± sd), its difference to the transformer trained with the same seed (mean ± sd of the
per-seed differences: seeds fix the initialisation and batch order, so the pairing removes part of the seed
variance) with each seed's paired bootstrap p-value (sacreBLEU's), its training (updates, wall minutes,
device) and the quality of its trees on gold treebanks (EVALB F1 / UF1, from ``fairseq-tree-parser-quality``).

    fairseq-tree-report tree2seq WORK --tgts de fr --trees stanza trivial lal induced --seeds 1 2 3

A row lists the seeds among ``--seeds`` that were run (a run directory exists; the others are named on
stderr), so a table can gather rows trained to different numbers of seeds; a run directory without a scored
test.gen is an error. The difference to the transformer pairs the seeds that both have. ``--matched SRC``
adds the rows of positions-matched transformers (``transformer_pm_SRC``: the leaves then SRC's node labels,
no tree), beside SRC's trees' quality. ``--png FILE`` draws the tree2seq rows' differences against their
trees' wsj22 UF1.
"""

import argparse
import json
import re
import statistics
import sys
from pathlib import Path

from fairseq_tree.evaluation.plotting import figure, save
from fairseq_tree.evaluation.translation_runs import RunError, fairseq_bleu, mean_sd, training
from fairseq_tree.evaluation.translation_runs import paired_p as translation_paired_p
from fairseq_tree.utils.help_text import ArgumentParser


def bleu(gen: Path) -> float:
    try:
        return fairseq_bleu(gen)
    except RunError as e:
        raise SystemExit(str(e)) from None


def outputs(gen: Path):
    """-> (detokenized hypotheses, references) of a fairseq-generate log (D- and T- lines), in sentence order."""
    hyps, refs = {}, {}
    for line in gen.read_text(encoding="utf-8").splitlines():
        if line.startswith("D-"):
            i, _, text = line[2:].split("\t", 2)
            hyps[int(i)] = text
        elif line.startswith("T-"):
            i, text = line[2:].split("\t", 1)
            refs[int(i)] = text
    if not hyps or hyps.keys() != refs.keys():
        raise SystemExit(f"{gen}: {len(hyps)} D- lines and {len(refs)} T- lines for different sentences")
    return [hyps[i] for i in sorted(hyps)], [refs[i] for i in sorted(hyps)]


def paired_p(base_gen: Path, gen: Path, samples: int = 1000) -> float:
    """:func:`~fairseq_tree.evaluation.translation_runs.paired_p` of two systems' test outputs (their D- lines)
    against their common references (T- lines)."""
    base, refs = outputs(base_gen)
    hyps, other_refs = outputs(gen)
    if other_refs != refs:
        raise SystemExit(f"{gen} and {base_gen}: the references differ (not the same test set)")
    return translation_paired_p(base, hyps, refs, samples)


def quality_scores(work: Path, src: str) -> list:
    """-> the records of quality/SRC/scores.jsonl (wsj22, then ptb_sample/valid), [] when not scored."""
    path = work / "quality" / src / "scores.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def quality(records: list) -> str:
    """The 'F1 / UF1' cells of wsj22 and ptb_sample/valid ('—' where not scored) from ``quality_scores``."""
    cells = [("—" if r["f1"] is None else f"{r['f1']:.1f}") + f" / {r['uf1']:.1f}" for r in records[:2]]
    return " | ".join(cells + ["—"] * (2 - len(cells)))


def plot(points: dict, path: str):
    """BLEU − transformer (each seed a dot, the mean ± sd a bar) against the trees' wsj22 UF1, a panel per
    target. points: {tgt: [(source, uf1, [difference per seed])]}."""
    fig, axes = figure(1, len(points), figsize=(5 * len(points), 3.6), squeeze=False)
    for ax, (tgt, rows) in zip(axes[0], points.items()):
        for src, uf1, diffs in rows:
            dots = ax.scatter([uf1] * len(diffs), diffs, s=14, alpha=0.5)
            sd = statistics.stdev(diffs) if len(diffs) > 1 else 0.0
            ax.errorbar([uf1], [statistics.mean(diffs)], yerr=[sd], fmt="s", color=dots.get_facecolor()[0][:3],
                        capsize=3, label=f"{src} (n={len(diffs)})")
        ax.axhline(0.0, color="gray", linestyle="--", linewidth=0.8)
        ax.set_xlabel("trees: wsj22 UF1")
        ax.set_ylabel("BLEU − transformer (same seed)")
        ax.set_title(f"en-{tgt}, test 2016")
        ax.legend(fontsize=8, loc="lower right")
    save(fig, path, dpi=120)


def main(argv=None):
    ap = ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("work")
    ap.add_argument("--tgts", nargs="+", default=["de"])
    ap.add_argument("--trees", nargs="*", default=["stanza", "trivial"])
    ap.add_argument("--matched", nargs="*", default=[], help="tree sources of positions-matched transformer rows "
                    "(transformer_pm_SRC runs: the leaves and SRC's node labels, no tree)")
    ap.add_argument("--seeds", nargs="+", default=["1", "2", "3"])
    ap.add_argument("--no-baseline", action="store_true", help="no transformer row (BASELINE=0 runs)")
    ap.add_argument("--png", help="also draw BLEU − transformer against the trees' wsj22 UF1 into this file")
    args = ap.parse_args(argv)
    work = Path(args.work)
    points = {}
    for tgt in args.tgts:
        print(f"\n**en-{tgt}**, test 2016 (sacreBLEU, detokenized, beam 5, averaged checkpoints)\n")
        print("| model | trees: wsj22 F1 / UF1 | ptb_sample/valid F1 / UF1 | seeds | BLEU per seed | mean ± sd | "
              "− transformer, same seed | p per seed (paired bootstrap) | valid loss | sentences per update | "
              "updates | train min (per run) | device |")
        print("|---|---|---|---|---|---:|---:|---|---|---:|---|---:|---|")
        base, base_runs = {}, {}
        names = (["transformer"] * (not args.no_baseline) + [f"tree2seq_{s}" for s in args.trees]
                 + [f"transformer_pm_{s}" for s in args.matched])
        for name in names:
            runs = {s: work / "ckpt" / tgt / f"{name}_s{s}" for s in args.seeds}
            missing = [s for s, r in runs.items() if not r.is_dir()]
            if missing:
                print(f"{work}/ckpt/{tgt}/{name}: no run for seed(s) {' '.join(missing)}", file=sys.stderr)
            runs = {s: r for s, r in runs.items() if s not in missing}
            if not runs:
                continue
            scores = {s: bleu(r / "test.gen") for s, r in runs.items()}
            if name == "transformer":
                base, base_runs = scores, runs
            logs = [training(r / "train.log") for r in runs.values()]
            src = re.sub(r"^(tree2seq|transformer_pm)_", "", name) if name != "transformer" else None
            pairs = [s for s in scores if s in base] if src else []
            paired = [scores[s] - base[s] for s in pairs]
            p = [paired_p(base_runs[s] / "test.gen", runs[s] / "test.gen") for s in pairs]
            records = quality_scores(work, src) if src else []
            if paired and records and name.startswith("tree2seq_"):
                points.setdefault(tgt, []).append((src, records[0]["uf1"], paired))
            losses = " / ".join(f"{t.valid_losses[-1]:.3f}" if t.valid_losses else "—" for t in logs)
            bsz = [t.sentences_per_update for t in logs if t.sentences_per_update is not None]
            print(f"| {name} | {quality(records)} | {' / '.join(runs)} | "
                  f"{' / '.join(f'{b:.2f}' for b in scores.values())} | {mean_sd(list(scores.values()))} | "
                  f"{mean_sd(paired, signed=True) if paired else '—'} | "
                  f"{' / '.join(f'{x:.3f}' for x in p) or '—'} | {losses} | "
                  f"{f'{statistics.mean(bsz):.0f}' if bsz else '—'} | {' / '.join(str(t.updates) for t in logs)} | "
                  f"{statistics.mean(t.minutes for t in logs):.1f} | {logs[0].device} |")
    if args.png:
        if not points:
            raise SystemExit("--png: no tree source has both paired seeds and quality/SRC/scores.jsonl")
        plot(points, args.png)


def cli_main() -> None:
    rc = main(sys.argv[1:])
    sys.exit(rc if isinstance(rc, int) else 0)


if __name__ == "__main__":
    cli_main()
