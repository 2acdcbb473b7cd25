"""The plugin makes fairseq-fixed work on torch >= 2.6 and numpy 2 with no variable set by the user:
checkpoint loading in fairseq-generate and a resumed fairseq-train, and masked_lm with
--sample-break-mode eos (np.compat.long)."""

import os
import subprocess

import pytest
from conftest import BIN, REPO, SHARED

USER_DIR = str(REPO / "fairseq_tree")


def clean_env():
    env = dict(os.environ)
    env.pop("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", None)  # importing fairseq_tree in pytest sets it
    env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    return env


def sh(*cmd, ok=True):
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=clean_env())
    if ok and proc.returncode != 0:
        raise AssertionError(f"{cmd[0]} exited {proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")
    return proc


TINY = ["--arch", "transformer", "--encoder-layers", "1", "--decoder-layers", "1", "--encoder-embed-dim", "16",
        "--decoder-embed-dim", "16", "--encoder-ffn-embed-dim", "32", "--decoder-ffn-embed-dim", "32",
        "--encoder-attention-heads", "2", "--decoder-attention-heads", "2", "--optimizer", "adam", "--lr", "1e-3",
        "--max-tokens", "2000", "--cpu", "--num-workers", "0", "--log-format", "simple", "--no-epoch-checkpoints",
        "--disable-validation", "--seed", "1"]


@pytest.fixture(scope="module")
def translation_bin(tmp_path_factory):
    d = tmp_path_factory.mktemp("m30k")
    en = (SHARED / "data" / "multi30k" / "train.en").read_text().splitlines()[:64]
    de = (SHARED / "data" / "multi30k" / "train.de").read_text().splitlines()[:64]
    for split in ("train", "test"):
        (d / f"{split}.en").write_text("\n".join(en) + "\n")
        (d / f"{split}.de").write_text("\n".join(de) + "\n")
    sh(BIN / "fairseq-preprocess", "-s", "en", "-t", "de", "--trainpref", d / "train", "--testpref", d / "test",
       "--destdir", d / "bin", "--joined-dictionary", "--workers", "1")
    return d


def test_generate_and_resume_load_checkpoints_without_env(translation_bin, tmp_path):
    ckpt = tmp_path / "ckpt"
    sh(BIN / "fairseq-train", translation_bin / "bin", "--user-dir", USER_DIR, *TINY, "--max-update", "2",
       "--save-dir", ckpt)
    assert (ckpt / "checkpoint_last.pt").exists()
    gen = ["--path", ckpt / "checkpoint_last.pt", "--gen-subset", "test", "--beam", "2", "--batch-size", "32",
           "--cpu", "--max-len-b", "5"]
    # stock fairseq on this torch cannot load its own checkpoint: that is what the plugin fixes
    bare = sh(BIN / "fairseq-generate", translation_bin / "bin", *gen, ok=False)
    assert bare.returncode != 0 and "weights_only" in bare.stderr
    out = sh(BIN / "fairseq-generate", translation_bin / "bin", "--user-dir", USER_DIR, *gen)
    assert "Generate test with beam=2" in out.stdout + out.stderr
    assert sum(line.startswith("H-") for line in out.stdout.splitlines()) == 64
    # resuming training reads checkpoint_last.pt
    res = sh(BIN / "fairseq-train", translation_bin / "bin", "--user-dir", USER_DIR, *TINY, "--max-update", "4",
             "--save-dir", ckpt)
    log = res.stdout + res.stderr
    assert "Loaded checkpoint" in log and "@ 2 updates)" in log
    assert "done training" in log


def test_masked_lm_sample_break_mode_eos(tmp_path):
    text = (SHARED / "data" / "multi30k" / "train.en").read_text().splitlines()[:200]
    (tmp_path / "train.txt").write_text("\n".join(text) + "\n")
    sh(BIN / "fairseq-preprocess", "--only-source", "--trainpref", tmp_path / "train.txt",
       "--destdir", tmp_path / "bin", "--workers", "1")
    args = [BIN / "fairseq-train", tmp_path / "bin", "--task", "masked_lm", "--criterion", "masked_lm",
            "--arch", "roberta", "--encoder-layers", "1", "--encoder-embed-dim", "16", "--encoder-ffn-embed-dim",
            "32", "--encoder-attention-heads", "2", "--sample-break-mode", "eos", "--tokens-per-sample", "64",
            "--optimizer", "adam", "--lr", "1e-3", "--batch-size", "16", "--max-update", "2", "--cpu",
            "--num-workers", "0", "--disable-validation", "--no-save", "--save-dir", tmp_path / "ck",
            "--log-format", "simple"]
    bare = sh(*args, ok=False)
    assert "np.compat" in bare.stderr or "compat" in bare.stderr  # numpy 2 breaks stock fairseq here
    out = sh(*args, "--user-dir", USER_DIR)
    assert "done training" in out.stdout + out.stderr


def test_batch_by_size_keeps_the_sentences_left_over_by_the_batch_multiple():
    """300 sentences of 20 tokens, --max-tokens 2048, multiple 8: fairseq's batches hold floor(2048 / 20) = 102
    rounded down to 96 sentences; 300 = 3 * 96 + 12, the 12 give one batch of 8 and fairseq dropped the last 4.
    With the plugin loaded they come last, in their own batch; nothing else changes."""
    import numpy as np
    from fairseq.data import data_utils

    import fairseq_tree  # noqa: F401  (applies the shim)

    idx = np.arange(300, dtype=np.int64)[::-1].copy()  # any order: the caller's order is kept
    batches = data_utils.batch_by_size(idx, lambda i: 20, num_tokens_vec=np.full(300, 20), max_tokens=2048,
                                       required_batch_size_multiple=8)
    assert [len(b) for b in batches] == [96, 96, 96, 8, 4]
    assert np.concatenate(batches).tolist() == idx.tolist()
    # by sentences: 128-sentence batches, 300 = 2 * 128 + 44 -> 40 (a multiple of 8) + the 4 fairseq dropped
    batches = data_utils.batch_by_size(idx, lambda i: 20, max_sentences=128, required_batch_size_multiple=8)
    assert [len(b) for b in batches] == [128, 128, 40, 4]
