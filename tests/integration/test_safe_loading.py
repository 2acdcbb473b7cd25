"""Checkpoints load with weights_only=True and an allowlist, through every entry point, and the plugin switches
nothing off: a checkpoint whose config pickles ``os.system("touch MARKER")`` runs nothing anywhere (issue 27)."""

import os
import subprocess
import sys
import threading

import pytest
import torch
from conftest import BIN, REPO, SHARED

import fairseq_tree  # noqa: F401  (what a user's process does: the plugin is loaded)
from fairseq_tree import safe_loading

USER_DIR = str(REPO / "fairseq_tree")


class Call:
    """Pickles as a call of ``fn(*args)`` at load time: ``Call(os.system, "touch MARKER")`` is what a malicious
    checkpoint holds."""

    def __init__(self, fn, *args):
        self.fn, self.args = fn, args

    def __reduce__(self):
        return (self.fn, self.args)


def env(**extra):
    e = {k: v for k, v in os.environ.items() if k not in ("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", safe_loading.TRUST_ENV)}
    e.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", **extra)
    return e


def sh(*cmd, **kw):
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=env(), timeout=600, **kw)


TINY = ["--arch", "transformer", "--encoder-layers", "1", "--decoder-layers", "1", "--encoder-embed-dim", "16",
        "--decoder-embed-dim", "16", "--encoder-ffn-embed-dim", "32", "--decoder-ffn-embed-dim", "32",
        "--encoder-attention-heads", "2", "--decoder-attention-heads", "2", "--optimizer", "adam", "--lr", "1e-3",
        "--max-tokens", "2000", "--cpu", "--num-workers", "0", "--log-format", "simple", "--seed", "1",
        "--disable-validation"]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A real 2-update translation checkpoint (good.pt), the same with the payload in its cfg (evil.pt)."""
    d = tmp_path_factory.mktemp("safe")
    for lang in ("en", "de"):
        lines = (SHARED / "data" / "multi30k" / f"train.{lang}").read_text().splitlines()[:32]
        for split in ("train", "test"):
            (d / f"{split}.{lang}").write_text("\n".join(lines) + "\n")
    p = sh(BIN / "fairseq-preprocess", "-s", "en", "-t", "de", "--trainpref", d / "train", "--testpref", d / "test",
           "--destdir", d / "bin", "--joined-dictionary", "--workers", "1")
    assert p.returncode == 0, p.stderr[-2000:]
    p = sh(BIN / "fairseq-train", d / "bin", "--user-dir", USER_DIR, *TINY, "--max-update", "2",
           "--save-dir", d / "ck", "--no-epoch-checkpoints")
    assert p.returncode == 0, p.stderr[-2000:]
    good = d / "ck" / "checkpoint_last.pt"
    state = safe_loading.load(good)
    state["cfg"]["model"].payload = Call(os.system, f"touch {d / 'MARKER'}")
    torch.save(state, d / "evil.pt")
    return d, good, d / "evil.pt", d / "MARKER"


def refused(proc, evil, marker):
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out[-2000:]
    assert not marker.exists(), "the payload ran"
    assert str(evil) in out and safe_loading.TRUST_ENV in out, out[-3000:]
    assert "os.system" in out or "posix.system" in out, out[-3000:]  # names what the file holds


def test_plain_torch_load_stays_safe_after_import(files):
    _, _, evil, marker = files
    with pytest.raises(Exception, match="Weights only load failed"):
        torch.load(evil)
    assert not marker.exists()
    # and in a fresh process that imports the plugin first, as fairseq's --user-dir does
    p = sh(sys.executable, "-c", f"import fairseq_tree, torch; torch.load({str(evil)!r})")
    assert p.returncode != 0 and "Weights only load failed" in p.stderr and not marker.exists()
    assert "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD" not in os.environ


def test_library_load_refuses_and_names_file_and_opt_out(files):
    _, good, evil, marker = files
    with pytest.raises(safe_loading.UnsafeCheckpointError) as e:
        safe_loading.load(evil)
    assert str(evil) in str(e.value) and safe_loading.TRUST_ENV in str(e.value) and not marker.exists()
    assert safe_loading.load(good)["model"]  # a real checkpoint loads
    # and the allowlist stays registered for fairseq's own loads afterwards (torch.load's default: weights_only)
    assert torch.load(good)["model"].keys() == safe_loading.load(good)["model"].keys()


def test_trusted_file_opt_out_loads_that_file_only(files, tmp_path, monkeypatch):
    _, _, evil, marker = files
    other = tmp_path / "other.pt"
    other.write_bytes(evil.read_bytes())
    monkeypatch.setenv(safe_loading.TRUST_ENV, str(other))
    with pytest.raises(safe_loading.UnsafeCheckpointError):
        safe_loading.load(evil)  # not listed: still refused
    assert not marker.exists()
    safe_loading.load(other)  # listed on purpose: full pickle, the payload runs (harmless here)
    assert marker.exists()
    marker.unlink()


def load_in_another_thread(path):
    """Run while a trusted file unpickles (it is trusted: it may run code): a plain ``torch.load`` of ``path`` in
    another thread, at that moment. Returns what happened there."""
    seen = {}

    def other():
        try:
            torch.load(path)
            seen["other thread"] = "loaded with full pickle"
        except Exception as e:  # noqa: BLE001  (what torch raised is the result)
            seen["other thread"] = f"refused: {type(e).__name__}"

    t = threading.Thread(target=other)
    t.start()
    t.join()
    return seen


def test_trusted_file_through_fairseq_loader_weakens_no_other_thread(files, tmp_path, monkeypatch):
    """The opt-out is for one file in one call: while fairseq's loader unpickles the trusted file with full pickle,
    another thread's torch.load of an untrusted file still refuses it (an opt-out through the process environment,
    torch's TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD, would have run its payload)."""
    from fairseq import checkpoint_utils

    _, good, evil, marker = files
    state = safe_loading.load(good)
    state["cfg"]["model"].probe = Call(load_in_another_thread, str(evil))
    trusted = tmp_path / "trusted.pt"
    torch.save(state, trusted)
    monkeypatch.setenv(safe_loading.TRUST_ENV, str(trusted))
    environ = dict(os.environ)
    loaded = checkpoint_utils.load_checkpoint_to_cpu(str(trusted), arg_overrides={"dropout": 0.5})
    assert loaded["cfg"].model.probe == {"other thread": "refused: UnpicklingError"}
    assert not marker.exists(), "the untrusted file's payload ran"
    assert loaded["cfg"].model.dropout == 0.5  # fairseq's own steps after torch.load still ran
    assert dict(os.environ) == environ
    with pytest.raises(safe_loading.UnsafeCheckpointError):  # and the next untrusted file is refused there too
        checkpoint_utils.load_checkpoint_to_cpu(str(evil))
    assert not marker.exists()


def test_fairseq_cli_entry_points_refuse(files, tmp_path):
    d, _, evil, marker = files
    gen = ["--path", evil, "--beam", "2", "--cpu", "--user-dir", USER_DIR, "--max-len-b", "5"]
    refused(sh(BIN / "fairseq-generate", d / "bin", "--gen-subset", "test", "--batch-size", "8", *gen), evil, marker)
    refused(sh(BIN / "fairseq-interactive", d / "bin", *gen, input="a man .\n"), evil, marker)
    resume = tmp_path / "resume"
    resume.mkdir()
    (resume / "checkpoint_last.pt").write_bytes(evil.read_bytes())
    p = sh(BIN / "fairseq-train", d / "bin", "--user-dir", USER_DIR, *TINY, "--max-update", "4", "--save-dir", resume)
    refused(p, resume / "checkpoint_last.pt", marker)


def test_fairseq_tree_cli_entry_points_refuse(files, tmp_path):
    d, good, evil, marker = files
    sent = tmp_path / "in.txt"
    sent.write_text("(S (NP (DT A) (NN man)) (VP (VBZ sits)))\n")
    refused(sh(BIN / "fairseq-tree-average", "--inputs", evil, good, "--output", tmp_path / "avg.pt"), evil, marker)
    assert not (tmp_path / "avg.pt").exists()
    refused(sh(BIN / "fairseq-tree-parse", "--path", evil, "--input", sent), evil, marker)
    induce = sh(BIN / "fairseq-tree-induce", "--path", evil, "--treebank", sent, "--out", tmp_path / "ind")
    refused(induce, evil, marker)
    refused(sh(BIN / "fairseq-tree-classify", "--path", evil, "--input", sent), evil, marker)
    (tmp_path / "raw.en").write_text("A man sits .\n")
    refused(sh(BIN / "fairseq-tree-preprocess", "--task", "translation", "-s", "en", "--only-source",
               "--trainpref", tmp_path / "raw", "--parser", "lal", "--parser-model", evil,
               "--destdir", tmp_path / "bin", "--workers", "1"), evil, marker)


@pytest.mark.parametrize("family", ["tree2seq_transformer.Tree2SeqModel", "lal_parser.LALParserModel",
                                    "structformer.StructFormerModel", "tree_classifier.TreeClassifierModel"])
def test_hubs_refuse(files, tmp_path, family):
    _, _, evil, marker = files
    (tmp_path / "checkpoint_best.pt").write_bytes(evil.read_bytes())
    module, cls = family.split(".")
    code = (f"from fairseq_tree.models.{module} import {cls}\n"
            f"{cls}.from_pretrained({str(tmp_path)!r})")
    refused(sh(sys.executable, "-c", code), tmp_path / "checkpoint_best.pt", marker)
