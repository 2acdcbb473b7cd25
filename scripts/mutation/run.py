#!/usr/bin/env python
"""Mutation testing of fairseq-tree: plausible one-line bugs (:mod:`mutants`), each applied alone to a copy of the
checkout, and the test files that cover the module (``modules.toml``) run against it.

    python scripts/mutation/run.py [--modules PATH ..] [--max-mutants N] [--seed S] [--slow] [--list] [--json OUT]
    make mutation MUTATION_ARGS="--modules fairseq_tree/preprocess/shards.py"

For each module of ``modules.toml`` (or of ``--modules``): a seeded sample of its mutants (``--max-mutants`` per
module, round-robin over the operators so that every kind is tried; the same seed picks the same mutants, and a
larger ``--max-mutants`` adds to a smaller one's), plus the module's ``pinned`` mutants (bugs once found, always
tried). The tests run first on the unmutated copy (they must pass; their time sets the timeout), then once per
mutant: ``pytest -x -q -n 0`` on the module's covering files (``tests``; with ``--slow`` its ``slow`` files too: the
CLI tests that train models, minutes each).

* **caught**: a test failed (or the tests could not be collected: the mutant breaks an import; or the mutant crashed
  the test process: a kernel's out-of-bounds read, SIGSEGV or SIGABRT);
* **timeout**: the tests ran past ``--timeout-factor`` x the unmutated run (counted as caught: a hang is noticed);
* **survived**: every test passed; **equivalent**: a survivor that ``modules.toml`` lists with the reason it cannot
  be told apart (left out of the score); a survivor listed as ``known_survivor`` (not equivalent: why no fast test
  kills it) is reported with its reason and still counts.

Score = (caught + timeout) / (mutants - equivalent). The report ends with every survivor's diff.

Why our own runner (and not mutmut 3 or cosmic-ray): mutmut 3 rewrites every function of a module into a
"trampoline" that picks the mutant at run time, and first runs the whole suite to map tests to functions (15-25
minutes and several trainings here); our modules are registered by fairseq at import time (tasks, models, hydra
dataclasses) and our covering tests start the real CLIs in subprocesses (fairseq-train --user-dir, the
preprocessing's worker processes), so a mutant has to be a plain module on disk that every process imports.
cosmic-ray mutates the files in place (here other people are editing and testing them) and has no operator for the
slips issue 52 names (realpath/abspath, min/max, a dropped keyword argument, a separator literal). Here each mutant
is an edit of one line written into a copy of the checkout, and a fresh pytest process runs with ``PYTHONPATH`` on
that copy, which the CLIs inherit; which tests cover a module is ours to say (``modules.toml``).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Dict, List, Optional

try:
    import tomllib
except ImportError:  # Python < 3.11
    raise SystemExit("scripts/mutation/run.py needs Python >= 3.11 (tomllib): use the venv's python") from None

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mutants import Mutant, mutants  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
CONFIG = Path(__file__).resolve().parent / "modules.toml"


def load_config(path: Path) -> dict:
    with open(path, "rb") as f:
        cfg = tomllib.load(f)
    for m in cfg["module"]:
        m.setdefault("pinned", [])
        m.setdefault("slow", [])
        for t in m["tests"] + m["slow"]:
            if not (REPO / t.split("::")[0]).is_file():
                raise SystemExit(f"{path}: {m['path']}: no test file {t}")
    return cfg


def select(module: dict, max_mutants: int, seed: int) -> List[Mutant]:
    """The module's sample (seeded, round-robin over operators) and its pinned mutants, in line order."""
    path = module["path"]
    every = mutants(path, (REPO / path).read_text(encoding="utf-8"))
    by_key = {m.key: m for m in every}
    missing = [k for k in module["pinned"] if k not in by_key]
    if missing:
        raise SystemExit(f"{path}: pinned mutants no longer made (the line changed?): {missing}")
    chosen = {k: by_key[k] for k in module["pinned"]}
    rng = random.Random(f"{seed}:{path}")
    groups: Dict[str, List[Mutant]] = defaultdict(list)
    for m in every:
        if m.key not in chosen:
            groups[m.operator].append(m)
    ops = sorted(groups)
    rng.shuffle(ops)
    for op in ops:
        rng.shuffle(groups[op])
    picked = 0
    while picked < max_mutants and any(groups.values()):
        for op in ops:
            if groups[op] and picked < max_mutants:
                m = groups[op].pop()
                chosen[m.key] = m
                picked += 1
    return sorted(chosen.values(), key=lambda m: (m.line, m.key))


def stale_keys(cfg: dict, modules: Optional[List[dict]] = None) -> List[str]:
    """The equivalent and known mutants of the config that no module makes any more (their line changed): those
    whose line is in no module, and those whose line is only in ``modules`` (default: all) and that none of them
    makes. (Making a module's mutants compiles each one: seconds for a large module, so a run checks its own.)"""
    sources = {m["path"]: (REPO / m["path"]).read_text("utf-8") for m in cfg["module"]}
    checked = [m["path"] for m in (cfg["module"] if modules is None else modules)]
    made = {m.key for path in checked for m in mutants(path, sources[path])}
    stale = []
    for entry in cfg.get("equivalent", []) + cfg.get("known_survivor", []):
        key = entry["mutant"]
        before = key.split("  ->  ")[0].removesuffix(" ...")
        where = [path for path, text in sources.items() if before in text]
        if not where or (key not in made and set(where) <= set(checked)):
            stale.append(key)
    return stale


def copy_checkout(dest: Path) -> Path:
    """The checkout's files (tracked and untracked, not ignored, as they are now) under ``dest/repo``, and
    ``dest/shared`` linked to the data beside the checkout (the tests read ``REPO/../shared``)."""
    out = dest / "repo"
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO, check=True,
                           capture_output=True).stdout.decode().split("\0")
    for name in files:
        src = REPO / name
        if name and src.is_file():
            (out / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, out / name)
    if (REPO.parent / "shared").exists():
        os.symlink(REPO.parent / "shared", dest / "shared")
    return out


def environment(copy: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(copy), PYTHONDONTWRITEBYTECODE="1", OMP_NUM_THREADS="1",
               MKL_NUM_THREADS="1")
    env.pop("PYTEST_XDIST_WORKER", None)
    return env


def check_copy_is_imported(copy: Path, env: dict) -> None:
    """The editable install points at the checkout: PYTHONPATH must win, in this interpreter and its CLIs."""
    where = subprocess.run([sys.executable, "-c", "import fairseq_tree; print(fairseq_tree.__file__)"], cwd=copy,
                           env=env, capture_output=True, text=True, check=True).stdout.strip()
    if not where.startswith(str(copy)):
        raise SystemExit(f"the copy is not what gets imported: fairseq_tree from {where}")


def run_tests(copy: Path, tests: List[str], env: dict, timeout: Optional[float]) -> tuple:
    """-> (outcome, seconds, output tail): outcome is pytest's return code, or "timeout"."""
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-n", "0", "-p", "no:cacheprovider", *tests]
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=copy, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)  # its own process group: a timeout ends the CLIs it started
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        return "timeout", time.monotonic() - t0, out[-2000:]
    return proc.returncode, time.monotonic() - t0, out[-2000:]


def outcome_name(rc) -> str:
    if rc == "timeout":
        return "timeout"
    if rc == 0:
        return "survived"
    if rc in (1, 2, 3):  # failed, interrupted (a collection error), internal error
        return "caught"
    if isinstance(rc, int) and rc < 0:  # pytest killed by a signal: the mutant crashes the tests (SIGSEGV, SIGABRT)
        return "caught"
    return f"error (pytest exit {rc})"


def mutate(copy: Path, module: dict, sample: List[Mutant], env: dict, args, equivalent: dict, known: dict) -> dict:
    path = copy / module["path"]
    original = path.read_text(encoding="utf-8")
    rc, base_s, out = run_tests(copy, module["tests"], env, None)
    result = {"path": module["path"], "tests": module["tests"], "baseline_s": round(base_s, 1), "mutants": []}
    if rc != 0:
        print(f"{module['path']}: the covering tests fail unmutated (exit {rc}); skipped\n{out}", flush=True)
        result["baseline_failed"] = out
        return result
    timeout = max(args.min_timeout, args.timeout_factor * base_s)
    print(f"{module['path']}: {len(sample)} mutants; tests pass unmutated in {base_s:.0f} s, timeout {timeout:.0f} s",
          flush=True)
    try:
        for k, m in enumerate(sample, 1):
            path.write_text(m.text, encoding="utf-8")
            rc, secs, out = run_tests(copy, module["tests"], env, timeout)
            name = outcome_name(rc)
            if name == "survived" and m.key in equivalent:
                name = "equivalent"
            result["mutants"].append({"line": m.line, "operator": m.operator, "before": m.before, "after": m.after,
                                      "key": m.key, "outcome": name, "seconds": round(secs, 1),
                                      "reason": equivalent.get(m.key) if name == "equivalent" else known.get(m.key)})
            print(f"  [{k}/{len(sample)}] {name:10s} {secs:5.0f} s  {m.path}:{m.line} [{m.operator}] "
                  f"{m.before!r} -> {m.after!r}", flush=True)
            if name.startswith("error"):
                print(out, flush=True)
    finally:
        path.write_text(original, encoding="utf-8")
    return result


def summary(results: List[dict]) -> str:
    rows = ["| module | mutants | caught | timeout | survived | equivalent | score | tests (unmutated run) |",
            "|---|---:|---:|---:|---:|---:|---:|---|"]
    total = defaultdict(int)
    for r in results:
        c = defaultdict(int)
        for m in r["mutants"]:
            c[m["outcome"]] += 1
        n = len(r["mutants"])
        if r.get("baseline_failed"):
            rows.append(f"| {r['path']} | — | | | | | tests fail unmutated | {', '.join(r['tests'])} |")
            continue
        for k in ("caught", "timeout", "survived", "equivalent"):
            total[k] += c[k]
        total["mutants"] += n
        rows.append(f"| {r['path']} | {n} | {c['caught']} | {c['timeout']} | {c['survived']} | {c['equivalent']} | "
                    f"{score(c['caught'] + c['timeout'], n - c['equivalent'])} | "
                    f"{', '.join(Path(t).name for t in r['tests'])} ({r['baseline_s']:.0f} s) |")
    caught = total["caught"] + total["timeout"]
    rows.append(f"| **all** | {total['mutants']} | {total['caught']} | {total['timeout']} | {total['survived']} | "
                f"{total['equivalent']} | **{score(caught, total['mutants'] - total['equivalent'])}** | |")
    lines = ["", *rows, "", "Survivors:"]
    for r in results:
        for m in r["mutants"]:
            if m["outcome"] not in ("caught", "timeout"):
                note = f"  ({m['outcome']}: {m['reason']})" if m["reason"] else f"  ({m['outcome']})"
                lines.append(f"{r['path']}:{m['line']} [{m['operator']}]{note}\n  - {m['before']}\n  + {m['after']}")
    return "\n".join(lines)


def score(caught: int, of: int) -> str:
    return f"{caught}/{of} = {100.0 * caught / of:.0f}%" if of else "—"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", type=Path, default=CONFIG)
    ap.add_argument("--modules", nargs="+", help="module paths of the config (default: all of them)")
    ap.add_argument("--max-mutants", type=int, default=5, help="sampled mutants per module, besides the pinned ones")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--list", action="store_true", help="print the selected mutants and stop")
    ap.add_argument("--json", type=Path, help="write the results here")
    ap.add_argument("--timeout-factor", type=float, default=3.0)
    ap.add_argument("--min-timeout", type=float, default=60.0, help="seconds")
    ap.add_argument("--slow", action="store_true",
                    help="also run each module's slow covering files (the CLI tests that train models)")
    ap.add_argument("--keep", action="store_true", help="keep the copy of the checkout")
    args = ap.parse_args(argv)
    cfg = load_config(args.config)
    modules = cfg["module"]
    if args.modules:
        known = {m["path"]: m for m in modules}
        unknown = [p for p in args.modules if p not in known]
        if unknown:
            raise SystemExit(f"not in {args.config}: {unknown} (known: {', '.join(known)})")
        modules = [known[p] for p in args.modules]
    stale = stale_keys(cfg, modules)
    if stale:
        print(f"{args.config}: listed mutants no module makes any more (their line changed?): {stale}", flush=True)
    if args.slow:
        modules = [dict(m, tests=m["tests"] + m["slow"]) for m in modules]
    equivalent = {e["mutant"]: " ".join(e["reason"].split()) for e in cfg.get("equivalent", [])}
    known = {e["mutant"]: " ".join(e["reason"].split()) for e in cfg.get("known_survivor", [])}
    samples = [(m, select(m, args.max_mutants, args.seed)) for m in modules]
    if args.list:
        for m, sample in samples:
            print(f"{m['path']} ({len(sample)}; tests: {' '.join(m['tests'])})")
            for mut in sample:
                print("  " + mut.diff().replace("\n", "\n  "))
        return 0
    t0 = time.monotonic()
    tmp = Path(tempfile.mkdtemp(prefix="fairseq-tree-mutation-"))
    try:
        copy = copy_checkout(tmp)
        env = environment(copy)
        check_copy_is_imported(copy, env)
        results = [mutate(copy, m, sample, env, args, equivalent, known) for m, sample in samples]
    finally:
        if args.keep:
            print(f"the copy: {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    minutes = (time.monotonic() - t0) / 60
    print(summary(results))
    print(f"\n{sum(len(s) for _, s in samples)} mutants, seed {args.seed}, {minutes:.1f} minutes")
    if args.json:
        args.json.write_text(json.dumps({"seed": args.seed, "max_mutants": args.max_mutants, "minutes": minutes,
                                         "modules": results}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
