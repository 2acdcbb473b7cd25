"""Validation curves of training runs, and groups of runs (seeds) compared at equal updates.

A curve is ``{updates: value}`` of one metric: a fairseq-train log's validations, or a reference recipe's output
directory (``scripts/recipes/reference_*.sh``: the authors' code scored by our scorer, ``scores_U.txt`` at each of
the recipe's UPDATES entries U). The authors' loops train whole epochs, so stage U holds their model after
ceil(U / B) epochs of B batches: :func:`curve` keys a reference's points by that true count when ``true_counts``
(B read from their training log's ``| epoch 1 |   100/  357 batches |`` lines; the Tree Transformer recipe keeps
exact counts).

:func:`compare` puts groups of runs (ours over seeds, theirs over seeds) side by side at the same update counts:
each run read at a count (linear interpolation between its two nearest validations, never extrapolated), each
group's mean and sample sd over its runs, each group's mean minus the first group's; :func:`compare_summary`
averages those differences over the counts and sets them beside each group's seed spread (the mean sd over the
counts), the question of issue 49's item 3: does ours trail theirs by more than the seed spread?

    fairseq-tree-report curves ours_s1/train.log ours_s2/train.log reference/wsj reference/wsj_seed2 \\
        --groups ours ours theirs theirs --metric uf1 uas uuas --compare [--png uas.png]

:func:`groups_figure` draws one metric of every run, a colour per group (the seed spread at a glance).
"""

import math
import re
import statistics
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from fairseq_tree.evaluation.induction_runs import run_value
from fairseq_tree.evaluation.plotting import figure
from fairseq_tree.evaluation.translation_runs import validations

Curve = Dict[int, float]

_SCORE_KEYS = {"corpus_uf1": "corpus_f1"}  # fairseq-tree-score's JSON name of a validation metric, where they differ
_BATCHES = re.compile(r"\|\s*epoch\s+\d+\s*\|\s*\d+\s*/\s*(\d+) batches")


def batches_per_epoch(out: Path) -> Optional[int]:
    """A reference recipe's ``OUT``: the batches of one of their epochs, from the ``N/B batches`` progress lines of
    its training logs ``train_U.log``; None without one. Different B in two logs is an error (one OUT, one data)."""
    found = {}
    for log in sorted(Path(out).glob("train_*.log")):
        m = _BATCHES.search(log.read_text(encoding="utf-8", errors="replace"))
        if m:
            found[log.name] = int(m.group(1))
    if len(set(found.values())) > 1:
        raise ValueError(f"{out}: training logs disagree on the batches of an epoch: {found}")
    return next(iter(found.values()), None)


def reference_curve(out: Path, metric: str, true_counts: bool) -> Curve:
    """-> {U: value} of a reference recipe's ``OUT/scores_U.txt`` files (U: the recipe's UPDATES entry); with
    ``true_counts`` keyed by ceil(U / B) x B, the updates their model had (B: :func:`batches_per_epoch`). An OUT
    without stage logs ``train_U.log`` (the Tree Transformer recipe, whose stages are exact counts) keeps U; one
    with stage logs none of which states B is an error."""
    per = batches_per_epoch(out) if true_counts else None
    if true_counts and per is None and any(Path(out).glob("train_*.log")):
        raise SystemExit(f"{out}: no train_U.log with an '| epoch E |  N/ B batches |' line: its true update counts "
                         "are unknown")
    points = {}
    for path in Path(out).glob("scores_*.txt"):
        tail = path.stem[len("scores_"):]
        if tail.isdigit():
            value = run_value(path, _SCORE_KEYS.get(metric, metric), None)
            if value is not None:
                u = int(tail)
                points[math.ceil(u / per) * per if per else u] = value
    return points


def curve(log: Path, metric: str, required: bool = True, true_counts: bool = False) -> Curve:
    """-> {updates: value} of the validations in ``log`` (a reference recipe's output directory: its scores, see
    :func:`reference_curve`); a log without one is an error when ``required``."""
    reference = Path(log).is_dir()
    if reference:
        points = reference_curve(log, metric, true_counts)
    else:
        points = {u: m[metric] for u, m in validations(log).items() if metric in m}
    if not points and required:
        raise SystemExit(f"{log}: no {'scores_U.txt' if reference else 'validation line'} with '{metric}'")
    return points


def value_at(c: Curve, u: int) -> Optional[float]:
    """``c`` at ``u`` updates: its value there, else the straight line between its nearest points on either side;
    None outside its range (a curve is never extrapolated)."""
    if u in c:
        return c[u]
    lower = [k for k in c if k < u]
    upper = [k for k in c if k > u]
    if not lower or not upper:
        return None
    lo, hi = max(lower), min(upper)
    return c[lo] + (u - lo) / (hi - lo) * (c[hi] - c[lo])


def group_stats(curves: Sequence[Curve], u: int) -> Tuple[Optional[float], Optional[float], int]:
    """One metric of a group of runs at ``u``: (mean, sample sd or None for fewer than two, runs with a value)."""
    values = [v for v in (value_at(c, u) for c in curves) if v is not None]
    if not values:
        return None, None, 0
    return statistics.mean(values), statistics.stdev(values) if len(values) > 1 else None, len(values)


def compare(groups: Sequence[Tuple[str, Sequence[Sequence[Curve]]]], counts: Sequence[int]) -> List[dict]:
    """``groups``: [(name, runs)], each run a list of curves, one per metric (the same metrics in every run).
    -> one row per count: ``{"updates": u, "stats": [[(mean, sd, n) per metric] per group], "diff": [[later group's
    mean - first group's, or None] per metric] per later group], "complete": [every run of every group has the
    metric at u, per metric]}``."""
    rows = []
    n_metrics = len(groups[0][1][0])
    for u in counts:
        stats = [[group_stats([run[m] for run in runs], u) for m in range(n_metrics)] for _, runs in groups]
        diff = [[None if g[m][0] is None or stats[0][m][0] is None else g[m][0] - stats[0][m][0]
                 for m in range(n_metrics)] for g in stats[1:]]
        complete = [all(st[m][2] == len(runs) for st, (_, runs) in zip(stats, groups)) for m in range(n_metrics)]
        rows.append({"updates": u, "stats": stats, "diff": diff, "complete": complete})
    return rows


def compare_summary(rows: Sequence[dict]) -> dict:
    """Over the rows where every run has the metric (``complete``; a group of fewer runs at some counts would mix
    in another mean): -> ``{"diff": [[mean of each later group's difference, or None] per metric], "counts":
    [complete rows per metric], "spread": [[mean sd, or None for a group of one run] per metric] per group]}``."""
    n_groups, n_metrics = len(rows[0]["stats"]), len(rows[0]["stats"][0])
    full = [[r for r in rows if r["complete"][m]] for m in range(n_metrics)]
    diff = [[statistics.mean(r["diff"][g][m] for r in full[m]) if full[m] else None for m in range(n_metrics)]
            for g in range(n_groups - 1)]
    spread = []
    for g in range(n_groups):
        sds = [[r["stats"][g][m][1] for r in full[m] if r["stats"][g][m][1] is not None] for m in range(n_metrics)]
        spread.append([statistics.mean(s) if s else None for s in sds])
    return {"diff": diff, "counts": [len(f) for f in full], "spread": spread}


def _stat_cell(stats: Sequence[Tuple[Optional[float], Optional[float], int]], runs: int) -> str:
    """'mean ± sd' per metric joined by ' / ' ('-' where no run has a value); ' (n=k)' when k of the group's runs
    (fewer than all) reach this count."""
    parts = ["-" if m is None else f"{m:.1f}" + ("" if sd is None else f" ± {sd:.1f}") for m, sd, _ in stats]
    reached = max(n for _, _, n in stats)
    return " / ".join(parts) + (f" (n={reached})" if 0 < reached < runs else "") if reached else ""


def _signed(values: Sequence[Optional[float]]) -> str:
    return " / ".join("-" if v is None else f"{v:+.1f}" for v in values)


def groups_figure(groups: Sequence[Tuple[str, Sequence[Curve]]], metric: str, baseline: Optional[float] = None,
                  zoom: Optional[float] = None):
    """``groups``: [(name, runs)], each run one metric's curve. -> a 6 x 3.5 inch matplotlib ``Figure``: each run a
    line through its points (not interpolated), the runs of a group in one colour (the group named once in the
    legend), an optional dashed horizontal ``baseline``; ``zoom``: the y axis from the lowest value to that much
    above it (the end of training, where losses differ in the second decimal)."""
    fig, ax = figure(figsize=(6, 3.5))
    for k, (name, runs) in enumerate(groups):
        for j, c in enumerate(runs):
            xs = sorted(c)
            ax.plot(xs, [c[u] for u in xs], color=f"C{k}", marker="o", markersize=2, linewidth=1,
                    label=name if j == 0 else "_nolegend_")
    if baseline is not None:
        ax.axhline(baseline, color="gray", linestyle="--", label="baseline")
    if zoom is not None:
        low = min(min(c.values()) for _, runs in groups for c in runs)
        ax.set_ylim(low - 0.05 * zoom, low + zoom)
    ax.set_xlabel("updates")
    ax.set_ylabel(metric)
    ax.legend()
    return fig


def compare_table(groups: Sequence[Tuple[str, Sequence[Sequence[Curve]]]], counts: Sequence[int],
                  metrics: Sequence[str]) -> str:
    """Markdown: a row per count (each group's mean ± sd, each later group minus the first), then the mean
    differences over the counts and each group's seed spread."""
    rows = compare(groups, counts)
    names = [f"{name} ({len(runs)} run{'s' if len(runs) > 1 else ''})" for name, runs in groups]
    first = groups[0][0]
    diffs = [f"{name} - {first}" for name, _ in groups[1:]]
    lines = [f"{' / '.join(metrics)} at each count (runs read between validations on a straight line)", "",
             f"| updates | {' | '.join(names + diffs)} |", "|---:|" + "---|" * (len(names) + len(diffs))]
    for r in rows:
        cells = [_stat_cell(s, len(runs)) for s, (_, runs) in zip(r["stats"], groups)] + [_signed(d) for d in r["diff"]]
        lines.append(f"| {r['updates']:,} | " + " | ".join(cells) + " |")
    summary = compare_summary(rows)
    lines.append("")
    counted = ", ".join(f"{m} {k}" for m, k in zip(metrics, summary["counts"]))
    lines.append(f"over the counts every run reaches ({counted} of {len(rows)}):")
    for (name, _), d in zip(groups[1:], summary["diff"]):
        lines.append(f"mean {name} - {first}: " + "  ".join(
            f"{m}={'-' if v is None else f'{v:+.2f}'}" for m, v in zip(metrics, d)))
    for (name, runs), s in zip(groups, summary["spread"]):
        if len(runs) > 1:
            lines.append(f"seed sd of {name} (mean): " + "  ".join(
                f"{m}={'-' if v is None else f'{v:.2f}'}" for m, v in zip(metrics, s)))
    return "\n".join(lines)
