"""The plugin makes fairseq-fixed work on torch >= 2.6 and numpy 2 with no variable set by the user:
checkpoint loading in fairseq-generate and a resumed fairseq-train (safely: tests/test_safe_loading.py), and
masked_lm with --sample-break-mode eos (np.compat.long); and it leaves fairseq's own batching alone."""

import os
import subprocess

import pytest
from conftest import BIN, REPO, SHARED

USER_DIR = str(REPO / "fairseq_tree")


def clean_env():
    env = dict(os.environ)
    env.pop("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", None)
    env.pop("FAIRSEQ_TREE_KEEP_LEFTOVERS", None)
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


LEFTOVERS = """
import numpy as np
import fairseq_tree  # noqa: F401
from fairseq.data import data_utils
idx = np.arange(300, dtype=np.int64)[::-1].copy()
b1 = data_utils.batch_by_size(idx, lambda i: 20, num_tokens_vec=np.full(300, 20), max_tokens=2048,
                              required_batch_size_multiple=8)
b2 = data_utils.batch_by_size(idx, lambda i: 20, max_sentences=128, required_batch_size_multiple=8)
print([len(b) for b in b1], [len(b) for b in b2], np.concatenate(b1).tolist() == idx[:len(np.concatenate(b1))].tolist())
"""


def fairseq_drops_leftovers() -> bool:
    """fairseq main / fairseq-fixed drop the tail the batch multiple leaves; the 0.12.2 release keeps it."""
    import numpy as np
    from fairseq.data import data_utils

    batch_by_size = getattr(data_utils.batch_by_size, "__wrapped__", data_utils.batch_by_size)
    nine = np.arange(9, dtype=np.int64)
    return sum(map(len, batch_by_size(nine, None, np.ones(9, dtype=np.int64), max_sentences=8,
                                      required_batch_size_multiple=8))) < 9


def test_batch_by_size_of_fairseqs_own_tasks_is_stock_unless_asked():
    """300 sentences of 20 tokens, --max-tokens 2048, multiple 8: fairseq's batches hold floor(2048 / 20) = 102
    rounded down to 96 sentences; 300 = 3 * 96 + 12, the 12 give one batch of 8 and fairseq drops the last 4; by
    sentences, 300 = 2 * 128 + 44 -> 40 and 4 dropped. Loading the plugin leaves that as it is (a baseline's batches
    stay stock); FAIRSEQ_TREE_KEEP_LEFTOVERS=1 asks for the 4 in their own last batch, for every task."""
    import sys

    stock = subprocess.run([sys.executable, "-c", LEFTOVERS], capture_output=True, text=True, env=clean_env())
    kept = "[96, 96, 96, 8, 4] [128, 128, 40, 4] True"
    expected = "[96, 96, 96, 8] [128, 128, 40] True" if fairseq_drops_leftovers() else kept
    assert stock.stdout.split("\n")[0] == expected, stock.stderr[-2000:]
    asked = subprocess.run([sys.executable, "-c", LEFTOVERS], capture_output=True, text=True,
                           env=dict(clean_env(), FAIRSEQ_TREE_KEEP_LEFTOVERS="1"))
    assert asked.stdout.split("\n")[0] == "[96, 96, 96, 8, 4] [128, 128, 40, 4] True", asked.stderr[-2000:]


def test_plugin_datasets_keep_the_leftovers():
    """The plugin's tasks batch through keep_leftover_sentences: the same 300 sentences, all of them, the 4 last,
    and only the dataset it was given changes."""
    import numpy as np
    from fairseq.data import FairseqDataset, data_utils

    from fairseq_tree.data.leftovers import keep_leftover_sentences

    class Twenty(FairseqDataset):
        def __len__(self):
            return 300

        def num_tokens(self, i):
            return 20

        def num_tokens_vec(self, indices):
            return np.full(len(indices), 20)

    ds, other = Twenty(), Twenty()
    keep_leftover_sentences(ds)
    keep_leftover_sentences(ds)  # idempotent
    idx = np.arange(300, dtype=np.int64)[::-1].copy()
    batches = ds.batch_by_size(idx, max_tokens=2048, required_batch_size_multiple=8)
    assert [len(b) for b in batches] == [96, 96, 96, 8, 4]
    assert np.concatenate(batches).tolist() == idx.tolist()
    stock = [96] * 3 + [8] + ([] if fairseq_drops_leftovers() else [4])
    assert [len(b) for b in other.batch_by_size(idx, max_tokens=2048, required_batch_size_multiple=8)] == stock
    assert not getattr(data_utils.batch_by_size, "_fairseq_tree_keeps_all", False)
