"""The results table of ``scripts/recipes/multi30k_anchor.sh`` (issue 30): each row's test BLEU in the anchor's
metric (fairseq's BLEU4 on the tokenized, lowercased text) and sacreBLEU (detokenized, lowercased), per seed and
mean ± sd, where each run stopped; then the comparisons, seed against same seed: the per-seed differences (mean ±
sd), sacreBLEU's paired bootstrap p per seed, a two-sided one-sample t-test of the per-seed differences over
the seeds (the seed noise: it needs two seeds or more), and Welch's t-test over all seeds of each run, unpaired.

    fairseq-tree-report anchor WORK --reference raw/test.de --lang de \\
        [--runs transformer tree2seq_trivial tree2seq_lal] [--seeds 1 2 3] [--png curves.png]

Reads each run's ``result.json`` (``fairseq-tree-report translation``, written by the recipe) and ``test.gen`` in
WORK/ckpt/TGT/RUN_sSEED (WORK: the recipe's work directory, or its ``ARCHIVE`` of the finished runs); a
run without result.json is named on stderr and left out of both tables; one still training (a train.log, no
result.json) gets a row in a third table: its last saved validation, its best so far, and the same-seed
Transformer's validation loss at that epoch (the answer so far, in validation loss only); before any run has
finished, that table alone. ``--png`` draws every run's validation loss against updates, unfinished runs too
(:mod:`fairseq_tree.cli.report_curves`).

A record with a ``transcribed`` key (where its numbers were first reported: a run whose folder was lost, its scores
copied from that report) counts in the means, the differences and the t-test, is marked † in the tables, and has
no paired bootstrap (no hypotheses to resample).
"""

import argparse
import json
import statistics
import sys
from pathlib import Path

from fairseq_tree.cli import report_curves
from fairseq_tree.evaluation.translation_runs import detokenize, generate_lines, mean_sd, paired_p, saved_scores
from fairseq_tree.utils.help_text import ArgumentParser

#: (system, baseline) pairs compared, when both were run
COMPARISONS = [("tree2seq_lal", "transformer"), ("tree2seq_lal", "tree2seq_trivial"),
               ("tree2seq_trivial", "transformer")]


def scipy_stats():
    """scipy.stats, which the t-tests over seeds need (an optional dependency: a clear error without it)."""
    try:
        from scipy import stats
    except ImportError:
        raise SystemExit("fairseq-tree-report anchor: the t-tests over seeds need scipy (pip install scipy)") from None
    return stats


def t_test_p(diffs) -> float:
    """Two-sided p of the one-sample t-test of ``diffs`` against 0 (n - 1 degrees of freedom)."""
    return float(scipy_stats().ttest_1samp(diffs, 0.0).pvalue)


def welch_p(a, b) -> float:
    """Two-sided p of Welch's t-test of two independent samples (unequal variances): the seeds of two runs, unpaired
    (a seed shares the batch order across architectures, not the initialization)."""
    return float(scipy_stats().ttest_ind(a, b, equal_var=False).pvalue)


def run_dir(work: Path, tgt: str, run: str, seed: str) -> Path:
    """The recipe's folder of one run: WORK/ckpt/TGT/RUN_sSEED."""
    return work / "ckpt" / tgt / f"{run}_s{seed}"


def load(work: Path, tgt: str, runs, seeds) -> dict:
    """-> {run: {seed: result.json record}} of the finished runs (the others named on stderr)."""
    found = {}
    for run in runs:
        for seed in seeds:
            path = run_dir(work, tgt, run, seed) / "result.json"
            if path.is_file():
                found.setdefault(run, {})[seed] = json.loads(path.read_text(encoding="utf-8"))
            else:
                print(f"{path.parent}: no result.json (not trained or not finished)", file=sys.stderr)
    return found


def rows(found: dict) -> list:
    """The per-run Markdown rows."""
    out = ["| run | seeds | BLEU4 (fairseq, tokenized) | mean ± sd | sacreBLEU (detokenized) | mean ± sd | "
           "valid BLEU4 | stop: epoch / updates | train min | device |", "|---|---|---|---:|---|---:|---|---|---|---|"]
    for run, by_seed in found.items():
        rs = list(by_seed.values())
        fs, ss = [r["test_fairseq_bleu"] for r in rs], [r["test_sacrebleu"] for r in rs]
        stops = "; ".join(f"{r['epochs']} / {r['updates']}" + (" (patience)" if r.get("stopped_by_patience") else "")
                           for r in rs)
        out.append(f"| {run} | {' '.join(marked(by_seed, by_seed))} | {' / '.join(f'{b:.2f}' for b in fs)} | "
                   f"{mean_sd(fs)} | "
                   f"{' / '.join(f'{b:.2f}' for b in ss)} | {mean_sd(ss)} | "
                   f"{' / '.join(str(r.get('valid_fairseq_bleu', '—')) for r in rs)} | {stops} | "
                   f"{' / '.join(format(r['train_minutes'], '.0f') for r in rs)} | "
                   f"{' / '.join(r['device'] for r in rs)} |")
    notes = sorted({r["transcribed"] for by_seed in found.values() for r in by_seed.values() if "transcribed" in r})
    return out + [""] + [f"† {note}" for note in notes] if notes else out


def transcribed(seed: str, *runs: dict) -> bool:
    """Whether any of ``runs`` ({seed: record}) holds a transcribed record at ``seed`` (the module's docstring)."""
    return any("transcribed" in run[seed] for run in runs)


def marked(seeds, *runs: dict) -> list:
    """``seeds``, each marked † where one of ``runs`` holds a transcribed record at it."""
    return [seed + ("†" if transcribed(seed, *runs) else "") for seed in seeds]


def comparisons(work: Path, lang: str, found: dict, refs, samples: int) -> list:
    """The Markdown rows of :data:`COMPARISONS`, over the seeds both runs have (``lang``: the target language, which
    names the runs' folder and detokenizes their hypotheses)."""
    out = ["| comparison | seeds | Δ BLEU4 per seed | mean ± sd | Δ sacreBLEU per seed | mean ± sd | "
           "paired bootstrap p per seed (sacreBLEU) | t-test over seeds p (Δ sacreBLEU) | "
           "Welch p, all seeds of each (sacreBLEU) |", "|---|---|---|---:|---|---:|---|---:|---:|"]
    hyps = {}  # (run, seed) -> detokenized test hypotheses, read once for every comparison that uses them

    def detokenized(run: str, seed: str):
        if (run, seed) not in hyps:
            hyps[run, seed] = detokenize(generate_lines(run_dir(work, lang, run, seed) / "test.gen", "H"), lang)
        return hyps[run, seed]

    for system, base in COMPARISONS:
        seeds = [s for s in found.get(system, {}) if s in found.get(base, {})]
        if not seeds:
            continue
        a, b = found[system], found[base]
        df = [a[s]["test_fairseq_bleu"] - b[s]["test_fairseq_bleu"] for s in seeds]
        ds = [a[s]["test_sacrebleu"] - b[s]["test_sacrebleu"] for s in seeds]
        p = ["—" if transcribed(s, a, b) else
             f"{paired_p(detokenized(base, s), detokenized(system, s), refs, samples, lowercase=True):.3f}"
             for s in seeds]
        if len(ds) < 2:
            t = "— (one seed)"
        else:  # equal differences have no spread: no t statistic
            t = f"{t_test_p(ds):.3f}" if statistics.stdev(ds) > 0 else "— (no spread)"
        xs, ys = ([r["test_sacrebleu"] for r in run.values()] for run in (a, b))
        w = f"{welch_p(xs, ys):.3f}" if min(len(xs), len(ys)) > 1 and statistics.stdev(xs + ys) > 0 else "—"
        out.append(f"| {system} − {base} | {' '.join(marked(seeds, a, b))} | {' / '.join(f'{d:+.2f}' for d in df)} | "
                   f"{mean_sd(df, signed=True)} | {' / '.join(f'{d:+.2f}' for d in ds)} | {mean_sd(ds, signed=True)} | "
                   f"{' / '.join(p)} | {t} | {w} |")
    if len(out) == 2:
        return ["No comparison yet: it needs two finished runs with a common seed."]
    return out


def in_progress(work: Path, tgt: str, runs, seeds, found: dict) -> list:
    """The Markdown rows of the runs still training (a train.log, no result.json): the last saved validation
    (epoch / updates, loss), the best so far, and the same-seed Transformer's validation loss at the same epoch."""
    out = ["| training | seed | last validation: epoch / updates | valid loss | best so far (epoch) | "
           "transformer, same seed, same epoch |", "|---|---|---|---:|---|---:|"]
    logs = {seed: run_dir(work, tgt, "transformer", seed) / "train.log" for seed in seeds}
    baselines = {seed: {stop.epoch: score for stop, score in saved_scores(log)} if log.is_file() else {}
                 for seed, log in logs.items()}  # seed -> {epoch: the Transformer's validation loss}
    for run in runs:
        for seed in seeds:
            log = run_dir(work, tgt, run, seed) / "train.log"
            scores = saved_scores(log) if log.is_file() and seed not in found.get(run, {}) else []
            if not scores:
                continue
            (last, loss), (best_at, best) = scores[-1], min(scores, key=lambda s: s[1])
            base = baselines[seed] if run != "transformer" else {}
            out.append(f"| {run} | {seed} | {last.epoch} / {last.updates} | {loss:.3f} | {best:.3f} "
                       f"({best_at.epoch}) | {format(base[last.epoch], '.3f') if last.epoch in base else '—'} |")
    return out if len(out) > 2 else []


def validation_curves(work: Path, tgt: str, runs, seeds) -> dict:
    """-> {run directory's name: {updates: validation loss}} of every run with a train.log, finished or not. A run
    that has not validated yet (it has just started) is left out: it has no point to draw."""
    logs = [run_dir(work, tgt, run, seed) / "train.log" for run in runs for seed in seeds]
    curves = {log.parent.name: report_curves.curve(log, "loss", required=False) for log in logs if log.is_file()}
    return {name: points for name, points in curves.items() if points}


def main(argv=None):
    ap = ArgumentParser(prog="fairseq-tree-report anchor", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("work", type=Path)
    ap.add_argument("--reference", required=True, help="the raw test references (sacreBLEU's bootstrap)")
    ap.add_argument("--lang", default="de")
    ap.add_argument("--runs", nargs="+", default=["transformer", "tree2seq_trivial", "tree2seq_lal"])
    ap.add_argument("--seeds", nargs="+", default=["1", "2", "3"])
    ap.add_argument("--bootstrap-samples", type=int, default=1000)
    ap.add_argument("--png", help="also draw every run's validation loss against updates into this file")
    args = ap.parse_args(argv)
    found = load(args.work, args.lang, args.runs, args.seeds)
    training = in_progress(args.work, args.lang, args.runs, args.seeds, found)
    if not found and not training:
        raise SystemExit(f"{args.work}: no run of {' '.join(args.runs)} has finished or validated")
    if found:
        refs = Path(args.reference).read_text(encoding="utf-8").splitlines()
        print(f"**en-{args.lang}**, test 2016, beam 5, the last epoch checkpoints averaged\n")
        print("\n".join(rows(found)))
        print()
        print("\n".join(comparisons(args.work, args.lang, found, refs, args.bootstrap_samples)))
    else:
        print(f"**en-{args.lang}**: no finished run yet")
    if training:
        print("\n" + "\n".join(training))
    if args.png:
        curves = validation_curves(args.work, args.lang, args.runs, args.seeds)
        if not curves:
            raise SystemExit(f"{args.work}: no validation to draw into {args.png}")
        report_curves.plot(list(curves), list(curves.values()), "validation loss", args.png, zoom=1.5)
    return 0
