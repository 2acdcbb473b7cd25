"""Each task checks its criterion (fairseq_tree/tasks/criterion_check.py), through the real fairseq-train:
without ``--criterion`` a task whose models do not fit fairseq's default ``cross_entropy`` trains with its own
default (recorded in the checkpoint), and a criterion that does not fit stops at once with the ones that do."""

import subprocess

import pytest
from conftest import BIN, REPO, SHARED
from conftest import run_command as _run

from fairseq_tree import safe_loading

PTB = SHARED / "data" / "ptb_sample"
COMMON = ("--user-dir", REPO / "fairseq_tree", "--optimizer", "adam", "--lr", "1e-3", "--cpu", "--seed", "1",
          "--log-format", "simple", "--no-epoch-checkpoints")


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """Three tiny data directories from 60 PTB-sample trees: plain text (tree_induction), a treebank
    (constituency_parsing), source trees with targets (tree_translation)."""
    if not (PTB / "train.mrg").is_file():
        pytest.skip(f"{PTB} not found")
    d = tmp_path_factory.mktemp("criteria")
    trees = (PTB / "train.mrg").read_text(encoding="utf-8").splitlines()[:60]
    text = (PTB / "train.txt").read_text(encoding="utf-8").splitlines()[:60]
    (d / "t.mrg").write_text("\n".join(trees) + "\n", encoding="utf-8")
    (d / "t.txt").write_text("\n".join(text) + "\n", encoding="utf-8")
    (d / "t.en").write_text("\n".join(trees) + "\n", encoding="utf-8")
    (d / "t.de").write_text("\n".join(reversed(text)) + "\n", encoding="utf-8")
    _run(BIN / "fairseq-preprocess", "--only-source", "--trainpref", d / "t.txt", "--validpref", d / "t.txt",
         "--destdir", d / "lm")
    _run(BIN / "python", "-m", "fairseq_tree.data.parsing_data", "--destdir", d / "tb", "--train", d / "t.mrg",
         "--valid", d / "t.mrg")
    _run(BIN / "fairseq-tree-preprocess", "-s", "en", "-t", "de", "--trainpref", d / "t", "--validpref", d / "t",
         "--parser", "given", "--tokenize", "none", "--joined-dictionary", "--destdir", d / "mt")
    return d


def _train_fails(*args) -> str:
    proc = subprocess.run([str(a) for a in (BIN / "fairseq-train", *args, *COMMON, "--max-update", "1",
                                           "--no-save")], cwd=str(REPO), capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0, proc.stdout[-2000:]
    return proc.stderr


@pytest.mark.parametrize("task, data_dir, arch, default", [
    ("tree_induction", "lm", "mlm_transformer_tiny", "masked_lm"),
    ("constituency_parsing", "tb", "lal_parser_tiny", "span_hinge_dependency"),
])
def test_task_default_criterion_replaces_cross_entropy(data, tmp_path, task, data_dir, arch, default):
    proc = _run(BIN / "fairseq-train", data / data_dir, "--task", task, "--arch", arch, *COMMON,
                "--max-tokens", "2000", "--max-update", "2", "--save-dir", tmp_path, "--disable-validation")
    assert f"--criterion {default} (the task's default" in proc.stdout + proc.stderr
    state = safe_loading.load(tmp_path / "checkpoint_last.pt")
    assert state["cfg"]["criterion"]["_name"] == default
    assert state["optimizer_history"][-1]["criterion_name"] == {
        "masked_lm": "MaskedLmLoss", "span_hinge_dependency": "SpanHingeDependencyCriterion"}[default]


@pytest.mark.parametrize("task, data_dir, arch, wrong, allowed", [
    ("tree_induction", "lm", "mlm_transformer_tiny", "label_smoothed_cross_entropy", "--criterion masked_lm"),
    ("constituency_parsing", "tb", "lal_parser_tiny", "masked_lm", "--criterion span_hinge_dependency"),
    ("tree_translation", "mt", "tree2seq_tiny", "masked_lm",
     "--criterion cross_entropy or --criterion label_smoothed_cross_entropy"),
])
def test_wrong_criterion_is_refused_with_the_ones_that_fit(data, task, data_dir, arch, wrong, allowed):
    err = _train_fails(data / data_dir, "--task", task, "--arch", arch, "--criterion", wrong, "--max-tokens", "2000")
    assert f"{task} does not work with --criterion {wrong}: pass {allowed}" in err
    assert "TypeError" not in err


def test_tree_translation_keeps_fairseq_default(data, tmp_path):
    """cross_entropy fits a translation model: left as fairseq's default, nothing replaced."""
    proc = _run(BIN / "fairseq-train", data / "mt", "--task", "tree_translation", "--arch", "tree2seq_tiny", *COMMON,
                "--max-tokens", "2000", "--max-update", "1", "--save-dir", tmp_path, "--disable-validation")
    assert "the task's default" not in proc.stdout + proc.stderr
    state = safe_loading.load(tmp_path / "checkpoint_last.pt")
    assert state["cfg"]["criterion"]["_name"] == "cross_entropy"
