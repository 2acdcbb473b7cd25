"""Tiny real models of every family and their data-bins, trained in about 2 minutes on slices of ../shared
(tests/integration/test_cli_hub_contract.py, tests/integration/test_docs_commands_run.py)."""

import os
import subprocess

from conftest import BIN, REPO, SHARED

USER_DIR = str(REPO / "fairseq_tree")
PTB = SHARED / "data" / "ptb_sample"
SST = SHARED / "data" / "sst"
RAW = ["The company said it expects higher prices .", "Shares fell 5 % in early trading ."]


def sh(*cmd, cwd=None, stdin=None):
    """Run a command (one thread) -> CompletedProcess; never raises on a non-zero exit."""
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=env, cwd=cwd, input=stdin,
                          timeout=600)


def ok(*cmd, **kw):
    proc = sh(*cmd, **kw)
    assert proc.returncode == 0, f"{cmd[0]} failed:\n{proc.stderr[-3000:]}"
    return proc


def train(data, save, *args, run=ok):
    run(BIN / "fairseq-train", data, "--user-dir", USER_DIR, "--cpu", "--seed", "1", "--save-dir", save,
       "--no-epoch-checkpoints", "--disable-validation", "--log-format", "simple", "--num-workers", "0", *args)
    return save / "checkpoint_last.pt"


FAMILIES = ("lal", "lal_notags", "tree2seq", "classifier", "structformer")


def build_models(d, families=FAMILIES, train_models=True, run=ok):
    """Tiny checkpoints of every family in ``d`` (or of ``families`` only), each with its data-bin: lal (POS-tag
    inputs), lal_notags, tree2seq, classifier, structformer -> {family: (checkpoint, data-bin), "dir": d}.
    ``train_models=False``: the data-bins only (checkpoint None), for tests that train their own. ``run(*cmd)``
    runs each command (default :func:`ok`: a process each; one that runs the console script's entry point in
    the test's process saves its ~5 s of imports)."""
    fit = (lambda data, save, *args: train(data, save, *args, run=run)) if train_models else (lambda *args: None)
    d.mkdir(parents=True, exist_ok=True)
    out = {}
    mrg = (PTB / "train.mrg").read_text(encoding="utf-8").splitlines()[:30]
    blocks = [b for b in (PTB / "train.conllu").read_text(encoding="utf-8").split("\n\n") if b.strip()][:30]
    (d / "t.mrg").write_text("\n".join(mrg) + "\n", encoding="utf-8")
    (d / "t.conllu").write_text("\n\n".join(blocks) + "\n\n", encoding="utf-8")
    run(BIN / "fairseq-tree-parsing-data", "--destdir", d / "lal_bin", "--train", d / "t.mrg", "--train-dep",
       d / "t.conllu", "--valid", d / "t.mrg", "--valid-dep", d / "t.conllu")
    lal = ["--task", "constituency_parsing", "--arch", "lal_parser_tiny", "--criterion", "span_hinge_dependency",
           "--optimizer", "adam", "--lr", "4e-3", "--batch-size", "10", "--max-epoch", "2"]
    if "lal" in families:
        out["lal"] = (fit(d / "lal_bin", d / "ck_lal", *lal), d / "lal_bin")
    if "lal_notags" in families:
        out["lal_notags"] = (fit(d / "lal_bin", d / "ck_lal_nt", *lal, "--no-pos-tags"), d / "lal_bin")
    if "tree2seq" in families:
        _tree2seq(d, out, fit, run)
    if "classifier" in families:
        _classifier(d, out, fit, run)
    if "structformer" in families:
        _structformer(d, out, fit, run)
    (d / "raw.txt").write_text("\n".join(RAW) + "\n", encoding="utf-8")
    (d / "empty.txt").write_text("", encoding="utf-8")
    out["dir"] = d
    return out


def _tree2seq(d, out, fit=train, run=ok):
    trees = (PTB / "valid.mrg").read_text(encoding="utf-8").splitlines()[:48]
    text = [t.lower() for t in (PTB / "valid.txt").read_text(encoding="utf-8").splitlines()[:48]]
    (d / "train.en").write_text("\n".join(trees) + "\n", encoding="utf-8")
    (d / "train.xx").write_text("\n".join(text) + "\n", encoding="utf-8")
    run(BIN / "fairseq-tree-preprocess", "-s", "en", "-t", "xx", "--trainpref", d / "train", "--parser", "given",
       "--bpe-merges", "300", "--joined-dictionary", "--destdir", d / "t2s_bin")
    out["tree2seq"] = (fit(d / "t2s_bin", d / "ck_t2s", "--task", "tree_translation", "--arch", "tree2seq_tiny",
                             "--share-all-embeddings", "--optimizer", "adam", "--lr", "1e-3", "--max-tokens", "2000",
                             "--max-update", "3"), d / "t2s_bin")


def _classifier(d, out, fit=train, run=ok):
    (d / "sst.txt").write_text("\n".join((SST / "train.txt").read_text(encoding="utf-8").splitlines()[:60]) + "\n",
                               encoding="utf-8")
    run(BIN / "fairseq-tree-preprocess", "--task", "classification", "--labels", "nodes", "-s", "txt", "--trainpref",
       d / "sst", "--bpe-merges", "200", "--destdir", d / "sst_bin")
    out["classifier"] = (fit(d / "sst_bin", d / "ck_clf", "--task", "tree_classification", "--arch",
                               "tree_classifier_tiny", "--optimizer", "adam", "--lr", "1e-3", "--max-tokens", "2048",
                               "--max-update", "3"), d / "sst_bin")


def _structformer(d, out, fit=train, run=ok):
    run(BIN / "fairseq-tree-induction-text", "--out", d / "ind.txt", "--treebank", d / "t.mrg")
    run(BIN / "fairseq-preprocess", "--only-source", "--trainpref", d / "ind.txt", "--destdir", d / "ind_bin")
    out["structformer"] = (fit(d / "ind_bin", d / "ck_sf", "--task", "tree_induction", "--arch", "structformer_tiny",
                                 "--criterion", "masked_lm", "--optimizer", "adam", "--lr", "1e-3", "--max-tokens",
                                 "1500", "--max-update", "3"), d / "ind_bin")
