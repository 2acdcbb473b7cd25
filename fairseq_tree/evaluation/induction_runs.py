"""The induction runs of ``scripts/recipes/induction_wsj.sh`` as one table: each corpus x architecture over its
seeds (mean ± sample sd), the baselines once per evaluation set.

A run is a directory ``WORK/CORPUS/ARCH_sSEED`` with its ``train.log`` (fairseq's ``Saved checkpoint`` lines give
the selected validation: the best wsj22 UF1, and the updates there) and ``induce_SET[_joint]/scores.json``
(``fairseq-tree-induce``). Runs without scores (still training) are listed with their updates so far.

    fairseq-tree-report induction WORK > WORK/results.md
"""

import json
import re
import statistics
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from fairseq_tree.evaluation.translation_runs import saved_scores

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
    'done': bool, and per set: 'SET' / 'SET_joint' scores.json dicts (absent when not written)}."""
    log = run / "train.log"
    text = log.read_text(encoding="utf-8", errors="replace") if log.is_file() else ""
    updates = re.findall(r"num_updates[ =](\d+)", text)
    saved = saved_scores(log) if log.is_file() else []
    best = max(saved, key=lambda s: (s[1], -s[0].updates)) if saved else None  # the first of equal bests
    rec: Dict[str, object] = {"updates": int(updates[-1]) if updates else 0, "done": (run / ".done").is_file(),
                              "best": (best[0].updates, best[1]) if best else None}
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


def table(rows: Dict[tuple, List[dict]]) -> str:
    """Markdown: a row per (corpus, arch) with mean ± sd over the seeds that have scores, then the baselines."""
    head = ("| corpus | arch | seeds | updates (best / last) | wsj22 UF1 | ptb_sample/valid UF1 | wsj22 UAS argmax | "
            "wsj22 UAS Alg. 3 | wsj22 UUAS argmax |")
    out = [head, "|" + "---|" * 3 + "---|" + "---:|" * 5]
    baselines: Dict[str, dict] = {}
    for (corpus, arch), recs in sorted(rows.items()):
        scored = [r for r in recs if "wsj22" in r]
        cells = []
        for key, metric in (("wsj22", "uf1"), ("ptbvalid", "uf1"), ("wsj22", "uas"), ("wsj22_joint", "uas"),
                            ("wsj22", "uuas")):
            cells.append(_mean_sd([v for v in (_model(r, key, metric) for r in scored) if v is not None]))
        steps = " / ".join(f"{r['best'][0] if r['best'] else '-'}/{r['updates']}{'' if r['done'] else '*'}"
                           for r in recs)
        seeds = ",".join(str(r["seed"]) for r in recs)
        out.append(f"| {corpus} | `{arch}` | {seeds} | {steps} | " + " | ".join(cells) + " |")
        for s in SETS:
            for r in scored:
                if s in r:
                    baselines.setdefault(s, r[s]["baselines"])
    for name, label in (("right", "right-branching"), ("left", "left-branching"), ("random", "random trees")):
        cells = [f"{baselines[s][name]['sentence_f1']:.1f}" if s in baselines and name in baselines[s] else "-"
                 for s in SETS]
        out.append(f"| | {label} | | | {cells[0]} | {cells[1]} | | | |")
    for name, label in (("right_chain", "right chain"), ("left_chain", "left chain")):
        b = baselines.get("wsj22", {}).get(name)
        uas, uuas = (f"{b['uas']:.1f}", f"{b['uuas']:.1f}") if b else ("-", "-")
        out.append(f"| | {label} | | | | | {uas} | {uas} | {uuas} |")
    out.append("")
    out.append("updates: at the selected (best wsj22 UF1) validation / last logged, per seed; * still training.")
    return "\n".join(out) + "\n"


__all__ = ["collect", "run_record", "table"]
