"""scripts/mutation/ (``make mutation``): the one-line mutants it makes of a hand-written module, what it leaves
alone, and its seeded selection."""

import sys

from conftest import REPO

sys.path.insert(0, str(REPO / "scripts" / "mutation"))

from mutants import mutants  # noqa: E402

SOURCE = '''"""A module docstring: never mutated."""
import logging
import os

logger = logging.getLogger(__name__)
__all__ = ["read"]


def read(path: str, limit: int = 512) -> list:
    """A docstring."""
    real = os.path.realpath(path)
    with open(real, "rb") as f:
        lines = [line.rstrip(b"\\r\\n") for line in f]
    if len(lines) < limit and not lines:
        logger.info("empty %s", path)
        raise ValueError(f"{path}: empty")
    os.makedirs(real + ".d", exist_ok=True)
    keep = True  # pragma: no mutate
    return lines[:min(limit, len(lines))] if keep else []
'''


def test_the_slips_of_one_line():
    keys = {m.key for m in mutants("m.py", SOURCE)}
    for before, after in [
        ('lines = [line.rstrip(b"\\r\\n") for line in f]', 'lines = [line.rstrip(b"\\n") for line in f]'),
        ("real = os.path.realpath(path)", "real = os.path.abspath(path)"),
        ("if len(lines) < limit and not lines:", "if len(lines) <= limit and not lines:"),
        ("if len(lines) < limit and not lines:", "if len(lines) < limit or not lines:"),
        ("if len(lines) < limit and not lines:", "if len(lines) < limit and lines:"),
        ('raise ValueError(f"{path}: empty")', "pass"),
        ('os.makedirs(real + ".d", exist_ok=True)', 'os.makedirs(real + ".d")'),
        ('os.makedirs(real + ".d", exist_ok=True)', 'os.makedirs(real - ".d", exist_ok=True)'),
        ("return lines[:min(limit, len(lines))] if keep else []",
         "return lines[:max(limit, len(lines))] if keep else []"),
        ("def read(path: str, limit: int = 512) -> list:", "def read(path: str, limit: int = 511) -> list:"),
        ("return lines[:min(limit, len(lines))] if keep else []", "pass"),
    ]:
        assert f"{before}  ->  {after}" in keys
    assert all(compile(m.text, "m.py", "exec") for m in mutants("m.py", SOURCE))


def test_nothing_outside_the_code_is_mutated():
    for m in mutants("m.py", SOURCE):
        assert m.line not in (1, 6, 10, 15, 18), m.key  # docstrings, __all__, a log call, a marked line
        assert "str" in m.after and "-> list" in m.after if "def read" in m.before else True  # annotations kept
        assert '"b"' not in m.after, m.key  # a literal with letters (a mode, a name, a message) is kept
        assert "min(len(lines), limit)" not in m.after, m.key  # min's arguments commute: no swap


def test_the_selection_is_seeded_and_grows_with_max_mutants():
    import run

    module = {"path": "fairseq_tree/utils/devices.py", "tests": [], "pinned": [
        "if index >= torch.cuda.device_count():  ->  if index > torch.cuda.device_count():"]}
    five = [m.key for m in run.select(module, 5, seed=0)]
    assert five == [m.key for m in run.select(module, 5, seed=0)] and len(five) == 6
    assert module["pinned"][0] in five
    assert set(m.key for m in run.select(module, 3, seed=0)) <= set(five)
    assert [m.key for m in run.select(module, 5, seed=1)] != five


def test_the_score_leaves_out_equivalent_mutants_and_counts_known_survivors():
    """2 caught, 1 timeout, 1 equivalent, 1 known survivor (its reason printed), 1 plain survivor: 3 of 5."""
    import run

    def m(outcome, line, reason=None):
        return {"line": line, "operator": "drop", "before": f"x{line}", "after": "pass", "key": f"k{line}",
                "outcome": outcome, "seconds": 1.0, "reason": reason}

    result = {"path": "a.py", "tests": ["t.py"], "baseline_s": 3.0, "mutants": [
        m("caught", 1), m("caught", 2), m("timeout", 3), m("equivalent", 4, "never reached"),
        m("survived", 5, "only a GPU shows it"), m("survived", 6)]}
    text = run.summary([result])
    assert "| a.py | 6 | 2 | 1 | 2 | 1 | 3/5 = 60% | t.py (3 s) |" in text
    assert "| **all** | 6 | 2 | 1 | 2 | 1 | **3/5 = 60%** | |" in text
    assert "a.py:5 [drop]  (survived: only a GPU shows it)" in text and "a.py:6 [drop]  (survived)\n" in text


def test_a_crash_of_the_tests_is_caught_and_a_broken_run_is_an_error():
    """pytest's exit codes: 0 every test passed (survived); 1 a test failed, 2 interrupted (collection), 3 internal
    error: caught; killed by a signal (-11 SIGSEGV, -6 SIGABRT: a kernel reading out of bounds) caught; 4 (usage)
    and 5 (no tests collected: a wrong test path in modules.toml) are errors of the run, not a verdict."""
    import run

    assert [run.outcome_name(rc) for rc in (0, 1, 2, 3, -11, -6, "timeout")] == [
        "survived", "caught", "caught", "caught", "caught", "caught", "timeout"]
    assert [run.outcome_name(rc) for rc in (4, 5)] == ["error (pytest exit 4)", "error (pytest exit 5)"]


def test_every_listed_equivalent_and_known_survivor_is_still_made():
    """modules.toml's equivalent and known mutants are mutants its modules make today: an entry whose line changed
    is stale (the runner warns; the entry must be redone or removed). Checked here on the lines' text for every
    module, and in full on two small ones."""
    import run

    cfg = run.load_config(run.CONFIG)
    assert run.stale_keys(cfg, []) == []  # every listed line is in a module
    compat = [m for m in cfg["module"] if m["path"] in ("fairseq_tree/compat.py", "fairseq_tree/safe_loading.py")]
    assert run.stale_keys(cfg, compat) == []
    gone = {"mutant": "raise refusal(path, e) from None  ->  raise refusal(path, e)", "reason": "no such mutant"}
    cfg["equivalent"] += [gone, {"mutant": "a line of no module  ->  pass", "reason": "x"}]
    assert run.stale_keys(cfg, compat) == [gone["mutant"], "a line of no module  ->  pass"]
    assert run.stale_keys(cfg, []) == ["a line of no module  ->  pass"]  # the line is there: not checked in full
