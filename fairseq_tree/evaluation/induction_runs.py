"""The induction runs of ``scripts/recipes/induction_wsj.sh`` as one table: each corpus x architecture over its
seeds (mean ± sample sd), the baselines once per evaluation set.

A run is a directory ``WORK/CORPUS/ARCH_sSEED`` with its ``train.log`` (fairseq's ``Saved checkpoint`` lines give
the selected validation: the best wsj22 UF1, and the updates there) and ``induce_SET[_joint]/scores.json``
(``fairseq-tree-induce``). Runs without scores (still training) are listed with their updates so far.
:func:`size_points` gathers wsj22 UF1 / UAS against each corpus's number of training sentences (what more text
buys, issue 49), at the selected checkpoint or at a given number of updates (each run's validation there).
:func:`seed_rows` counts, per group of seeds, the runs under a threshold (StructFormer's inverted heights: wsj22
UAS under the left chain's) and compares each group's rate with the first's by Fisher's exact test;
:func:`kept_fail_rate` says how often a rule that keeps the best of K seeds by another metric (the gold-free
validation loss) keeps a failed one.

    fairseq-tree-report induction WORK > WORK/results.md
"""

import itertools
import json
import math
import re
import statistics
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from fairseq_tree.evaluation.translation_runs import saved_scores, validations

SETS = ("wsj22", "ptbvalid")
_RUN = re.compile(r"^(?P<arch>.+)_s(?P<seed>\d+)$")


def _mean_sd(values: Sequence[float]) -> str:
    """'mean ± sd' with one decimal (the scores are percentages); one value alone; '-' for none."""
    if not values:
        return "-"
    if len(values) == 1:
        return f"{values[0]:.1f}"
    return f"{statistics.mean(values):.1f} ± {statistics.stdev(values):.1f}"


def _scores(run: Path, name: str) -> Optional[dict]:
    path = run / name / "scores.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def run_record(run: Path) -> Dict[str, object]:
    """One run directory -> {'updates': last logged, 'best': (updates, wsj22 UF1 at validation) or None,
    'done': bool, 'valid': {updates: {metric: value}} of its validations on wsj22, and per set: 'SET' /
    'SET_joint' scores.json dicts (absent when not written)}."""
    log = run / "train.log"
    text = log.read_text(encoding="utf-8", errors="replace") if log.is_file() else ""
    updates = re.findall(r"num_updates[ =](\d+)", text)
    saved = saved_scores(log) if log.is_file() else []
    best = max(saved, key=lambda s: (s[1], -s[0].updates)) if saved else None  # the first of equal bests
    rec: Dict[str, object] = {"updates": int(updates[-1]) if updates else 0, "done": (run / ".done").is_file(),
                              "best": (best[0].updates, best[1]) if best else None,
                              "valid": validations(log) if log.is_file() else {}}
    for s in SETS:
        for suffix in ("", "_joint"):
            scores = _scores(run, f"induce_{s}{suffix}")
            if scores is not None:
                rec[s + suffix] = scores
    return rec


def collect(work: Path) -> Dict[tuple, List[dict]]:
    """{(corpus, arch): [run records in seed order]} for every ``CORPUS/ARCH_sSEED`` under ``work``."""
    rows: Dict[tuple, List[dict]] = {}
    for run in sorted(p for p in work.glob("*/*") if p.is_dir() and _RUN.match(p.name)):
        m = _RUN.match(run.name)
        rec = run_record(run)
        rec["seed"] = int(m["seed"])
        rows.setdefault((run.parent.name, m["arch"]), []).append(rec)
    for recs in rows.values():
        recs.sort(key=lambda r: r["seed"])
    return rows


def _model(rec: dict, key: str, metric: str) -> Optional[float]:
    scores = rec.get(key)
    if not scores:
        return None
    if metric == "uf1":
        return scores["model"]["sentence_f1"]
    return scores["model"].get("attachment", {}).get(metric)


def baselines_of(rows: Dict[tuple, List[dict]], name: str = "wsj22") -> dict:
    """The trivial baselines' scores on one evaluation set, from the first run scored on it ({} when none is)."""
    for _, recs in sorted(rows.items()):
        for r in recs:
            if name in r:
                return r[name]["baselines"]
    return {}


def corpus_sentences(work: Path, corpus: str) -> Optional[int]:
    """Training sentences of a corpus: the lines of ``WORK/CORPUS/text/train.txt`` (the recipe's text step writes
    one sentence a line, none empty); None when it is not there."""
    path = Path(work) / corpus / "text" / "train.txt"
    if not path.is_file():
        return None
    with open(path, "rb") as f:
        return sum(1 for line in f if line.strip())


def size_points(rows: Dict[tuple, List[dict]], work: Path, at: Optional[int] = None) -> Dict[str, List[dict]]:
    """wsj22 UF1 and UAS per corpus size, for each architecture (``ARCH`` of the run names, ``_code`` included):
    ``{arch: [{'corpus', 'sentences', 'seeds': [..], 'uf1': [..], 'uas': [..]}, ...]}`` in order of sentences,
    one value per seed. ``at=None``: the selected checkpoint's scores (``induce_wsj22/scores.json``; the per-word
    argmax UAS); ``at=U``: each run's validation at U updates (its train.log; the validation is on wsj22). Runs
    without those scores are left out; corpora without ``text/train.txt`` too."""
    out: Dict[str, List[dict]] = {}
    for (corpus, arch), recs in rows.items():
        n = corpus_sentences(work, corpus)
        if n is None:
            continue
        point = {"corpus": corpus, "sentences": n, "seeds": [], "uf1": [], "uas": []}
        for r in recs:
            if at is None:
                if "wsj22" not in r:
                    continue
                uf1, uas = _model(r, "wsj22", "uf1"), _model(r, "wsj22", "uas")
            else:
                v = r["valid"].get(at)
                if v is None or "uf1" not in v:
                    continue
                uf1, uas = v["uf1"], v.get("uas")
            point["seeds"].append(r["seed"])
            point["uf1"].append(uf1)
            if uas is not None:
                point["uas"].append(uas)
        if point["seeds"]:
            out.setdefault(arch, []).append(point)
    for points in out.values():
        points.sort(key=lambda p: p["sentences"])
    return dict(sorted(out.items()))


def size_table(points: Dict[str, List[dict]], at: Optional[int] = None, baselines: Optional[dict] = None) -> str:
    """Markdown of :func:`size_points`: a row per architecture and corpus, mean ± sd over the seeds; a last row
    with the right-branching UF1 and right chain UAS of ``baselines`` (:func:`baselines_of`) when given."""
    where = f"the validation at {at:,} updates" if at else "the selected checkpoint (best wsj22 UF1)"
    out = [f"wsj22 against the training sentences, at {where}:", "",
           "| arch | corpus | sentences | seeds | wsj22 UF1 | wsj22 UAS |", "|---|---|---:|---|---:|---:|"]
    for arch, pts in points.items():
        for p in pts:
            out.append(f"| `{arch}` | {p['corpus']} | {p['sentences']:,} | {','.join(map(str, p['seeds']))} | "
                       f"{_mean_sd(p['uf1'])} | {_mean_sd(p['uas'])} |")
    if baselines:
        right, chain = baselines.get("right"), baselines.get("right_chain")
        out.append("| right-branching / right chain | | | | " + (f"{right['sentence_f1']:.1f}" if right else "-")
                   + " | " + (f"{chain['uas']:.1f}" if chain else "-") + " |")
    return "\n".join(out) + "\n"


def _best_validation(rec: dict) -> Optional[Dict[str, float]]:
    """The run's validation (train.log's metrics) at its selected update so far; None before its first one."""
    return rec["valid"].get(rec["best"][0]) if rec["best"] else None


def table(rows: Dict[tuple, List[dict]], gold_baselines: Optional[dict] = None) -> str:
    """Markdown: a row per (corpus, arch) with mean ± sd over the seeds that have scores, then the baselines (from
    the runs' scores; ``gold_baselines`` fills wsj22's when no run has any). A row none of whose seeds has scores
    yet shows its runs' best validation so far (wsj22 UF1 / UAS / UUAS from train.log, marked †)."""
    head = ("| corpus | arch | seeds | updates (best / last) | wsj22 UF1 | ptb_sample/valid UF1 | wsj22 UAS argmax | "
            "wsj22 UAS Alg. 3 | wsj22 UUAS argmax |")
    out = [head, "|" + "---|" * 3 + "---|" + "---:|" * 5]
    baselines = {s: baselines_of(rows, s) for s in SETS}
    if not baselines["wsj22"] and gold_baselines:
        baselines["wsj22"] = gold_baselines
    marked = False
    for (corpus, arch), recs in sorted(rows.items()):
        scored = [r for r in recs if "wsj22" in r]
        cells = []
        for key, metric in (("wsj22", "uf1"), ("ptbvalid", "uf1"), ("wsj22", "uas"), ("wsj22_joint", "uas"),
                            ("wsj22", "uuas")):
            cells.append(_mean_sd([v for v in (_model(r, key, metric) for r in scored) if v is not None]))
        so_far = [v for v in map(_best_validation, recs) if v is not None] if not scored else []
        for i, metric in ((0, "uf1"), (2, "uas"), (4, "uuas")):
            values = [v[metric] for v in so_far if metric in v]
            if values:
                cells[i], marked = _mean_sd(values) + " †", True
        steps = " / ".join(f"{r['best'][0] if r['best'] else '-'}/{r['updates']}{'' if r['done'] else '*'}"
                           for r in recs)
        seeds = ",".join(str(r["seed"]) for r in recs)
        out.append(f"| {corpus} | `{arch}` | {seeds} | {steps} | " + " | ".join(cells) + " |")
    for name, label in (("right", "right-branching"), ("left", "left-branching"), ("random", "random trees")):
        cells = [f"{baselines[s][name]['sentence_f1']:.1f}" if name in baselines[s] else "-"
                 for s in SETS]
        out.append(f"| | {label} | | | {cells[0]} | {cells[1]} | | | |")
    for name, label in (("right_chain", "right chain"), ("left_chain", "left chain")):
        b = baselines.get("wsj22", {}).get(name)
        uas, uuas = (f"{b['uas']:.1f}", f"{b['uuas']:.1f}") if b else ("-", "-")
        out.append(f"| | {label} | | | | | {uas} | {uas} | {uuas} |")
    out.append("")
    out.append("updates: at the selected (best wsj22 UF1) validation / last logged, per seed; * still training.")
    if marked:
        out.append("†: the best wsj22 validation so far (train.log); the selected checkpoint's scores, ptb_sample/valid"
                   " and Algorithm 3 come when the run stops.")
    return "\n".join(out) + "\n"


def fisher_less(k1: int, n1: int, k2: int, n2: int) -> float:
    """One-sided Fisher exact p that group 1's rate k1 / n1 is lower than group 2's k2 / n2: P(X <= k1) for X
    hypergeometric (n1 + n2 runs, k1 + k2 of them counted, n1 drawn); scipy's ``fisher_exact([[k1, n1 - k1],
    [k2, n2 - k2]], alternative='less')``."""
    n, k = n1 + n2, k1 + k2
    return sum(math.comb(k, x) * math.comb(n - k, n1 - x) for x in range(k1 + 1)) / math.comb(n, n1)


def run_value(path: Path, metric: str, at: Optional[int]) -> Optional[float]:
    """One run's ``metric``: a fairseq-train log (or a run directory with ``train.log``) gives its validation at
    ``at`` updates (the last validation when None; None when it has none there); any other file is a
    ``fairseq-tree-score`` output whose last line is its JSON (the reference recipes' ``scores_U.txt``)."""
    path = Path(path)
    if path.is_dir():
        path = path / "train.log"
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file")
    if path.suffix == ".log":
        valid = validations(path)
        if not valid:
            return None
        return valid.get(max(valid) if at is None else at, {}).get(metric)
    if metric == "loss":
        return _reference_loss(path)
    lines = path.read_text(encoding="utf-8").splitlines()
    try:
        return json.loads(lines[-1]).get(metric)
    except (IndexError, json.JSONDecodeError):
        raise ValueError(f"{path}:{len(lines)}: not a fairseq-tree-score output (its last line is not JSON)") from None


_REF_BPC = re.compile(r"\| valid bpc +([0-9.]+)")


def _reference_loss(scores: Path) -> Optional[float]:
    """A reference recipe's stage ``scores_U.txt``: the masked-LM validation loss of the last epoch in its training
    log ``train_U.log`` beside it, in bits a masked word (the authors' StructFormer log's ``valid bpc``: their loss
    / ln 2, fairseq's unit of ``loss``); None without that log or line."""
    if not scores.name.startswith("scores_"):
        return None
    log = scores.with_name("train_" + scores.name[len("scores_"):]).with_suffix(".log")
    if not log.is_file():
        return None
    found = _REF_BPC.findall(log.read_text(encoding="utf-8", errors="replace"))
    return float(found[-1]) if found else None


def kept_fail_rate(runs: Sequence[Tuple[float, bool]], keep: int, lowest: bool = True) -> Optional[float]:
    """P(the run a selection rule keeps of ``keep`` seeds fails), exactly over every ``keep``-subset of ``runs``
    ((selection value, failed) each; the kept run has the lowest value, the highest when not ``lowest``; ties
    broken at random). Ranked best first, rank r is kept with probability C(n - 1 - r, keep - 1) / C(n, keep);
    tied runs share their ranks' probability. None when ``keep`` is not in 1..n. ``keep`` = 1 is the failure rate."""
    n = len(runs)
    if not 1 <= keep <= n:
        return None
    order = sorted(runs, key=lambda r: r[0], reverse=not lowest)
    rate, rank = 0.0, 0
    for _, tied in itertools.groupby(order, key=lambda r: r[0]):
        tied = list(tied)
        p_kept = sum(math.comb(n - 1 - r, keep - 1) for r in range(rank, rank + len(tied))) / math.comb(n, keep)
        rate += p_kept * sum(failed for _, failed in tied) / len(tied)
        rank += len(tied)
    return rate


def seed_rows(groups: Sequence[Tuple[str, Sequence[Path]]], metric: str, below: float,
              at: Optional[int] = None, select_by: Optional[str] = None, keep: int = 3,
              lowest: bool = True) -> List[dict]:
    """Per group (name, runs): {'name', 'values' (one per run with the metric), 'missing' (runs without it),
    'under' (values < below), 'p' (:func:`fisher_less` of the group's rate under ``below`` against the first
    group's; None for the first)}; with ``select_by`` (a metric of the same validation, e.g. the gold-free
    ``loss``) also 'kept' (:func:`kept_fail_rate` of the runs that have both) and 'unselectable' (runs without it)."""
    rows = []
    for name, runs in groups:
        values, missing, pairs, unselectable = [], [], [], []
        for run in runs:
            v = run_value(run, metric, at)
            if v is None:
                missing.append(str(run))
                continue
            values.append(v)
            if select_by:
                s = run_value(run, select_by, at)
                if s is None:
                    unselectable.append(str(run))
                else:
                    pairs.append((s, v < below))
        rows.append({"name": name, "values": values, "missing": missing, "under": [v for v in values if v < below]})
        if select_by:
            rows[-1].update(kept=kept_fail_rate(pairs, keep, lowest), unselectable=unselectable)
    first = rows[0]
    for r in rows:
        r["p"] = None if r is first else fisher_less(len(r["under"]), len(r["values"]),
                                                     len(first["under"]), len(first["values"]))
    return rows


def seed_table(rows: List[dict], metric: str, below: float, at: Optional[int] = None, select_by: Optional[str] = None,
               keep: int = 3, lowest: bool = True) -> str:
    """Markdown of :func:`seed_rows`: a row per group, the runs under ``below`` with their values, the others'
    mean ± sd, and the one-sided p against the first group (with ``select_by``: the failure rate of keeping the
    best ``select_by`` of ``keep`` seeds); the runs without the metric (or ``select_by``) listed under the table."""
    where = f" at {at:,} updates" if at else ""
    rule = f"{'lowest' if lowest else 'highest'} {select_by} of {keep} kept" if select_by else ""
    out = [f"| runs | seeds | under {below:g} | their {metric} | the others' {metric}{where} | "
           f"p (fewer under than {rows[0]['name']}) |" + (f" under, the {rule} |" if rule else ""),
           "|---|---:|---:|---|---:|---:|" + ("---:|" if rule else "")]
    for r in rows:
        over = [v for v in r["values"] if v >= below]
        under = ", ".join(f"{v:.1f}" for v in r["under"]) or "-"
        p = "-" if r["p"] is None else f"{r['p']:.3f}"
        kept = "" if not rule else (" - |" if r["kept"] is None else f" {r['kept']:.3f} |")
        out.append(f"| {r['name']} | {len(r['values'])} | {len(r['under'])} | {under} | {_mean_sd(over)} | {p} |"
                   + kept)
    for r in rows:
        out += [f"{r['name']}: no {metric}{where}: {m}" for m in r["missing"]]
        out += [f"{r['name']}: no {select_by}{where}: {m}" for m in r.get("unselectable", [])]
    return "\n".join(out) + "\n"


__all__ = ["baselines_of", "collect", "corpus_sentences", "fisher_less", "kept_fail_rate", "run_record", "run_value",
           "seed_rows", "seed_table", "size_points", "size_table", "table"]
