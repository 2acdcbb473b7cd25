"""fairseq-hydra-train with the plugin (issue 50, item 12): the YAML config of examples/tree2seq/config trains, from
another directory, the run the demo's fairseq-train command trains (the same losses update by update, the same
weights), and fairseq-generate decodes its checkpoint. The command is docs/tree2seq.md's, as documented."""

import os
import re
import shlex
import subprocess

import pytest
import torch
from conftest import BIN, REPO
from test_tree2seq import data_bin  # noqa: F401  (the fixture: 64 PTB trees -> their lower-cased words)

pytestmark = pytest.mark.slow(minutes=1.5)

UPDATES = ["--max-update", "3", "--cpu", "--log-interval", "1", "--seed", "1"]
#: scripts/recipes/demo.sh's fairseq-train flags (its time limit and output aside): what the YAML holds
DEMO_FLAGS = ["--task", "tree_translation", "--arch", "tree2seq", "--encoder-layers", "3", "--decoder-layers", "3",
              "--encoder-embed-dim", "256", "--decoder-embed-dim", "256", "--encoder-ffn-embed-dim", "1024",
              "--decoder-ffn-embed-dim", "1024", "--encoder-attention-heads", "4", "--decoder-attention-heads", "4",
              "--share-all-embeddings", "--optimizer", "adam", "--adam-betas", "(0.9,0.98)", "--lr", "1e-3",
              "--lr-scheduler", "inverse_sqrt", "--warmup-updates", "200", "--dropout", "0.3", "--criterion",
              "label_smoothed_cross_entropy", "--label-smoothing", "0.1", "--max-tokens", "4096",
              "--max-update", "100000", "--disable-validation", "--no-epoch-checkpoints", "--log-format", "simple",
              "--num-workers", "0"]


def documented_command():
    """The fairseq-hydra-train line of docs/tree2seq.md, as tokens (continuations joined)."""
    text = (REPO / "docs" / "tree2seq.md").read_text(encoding="utf-8").replace("\\\n", " ")
    (line,) = [x.strip() for x in text.splitlines() if x.strip().startswith("fairseq-hydra-train ")]
    return shlex.split(line.replace('"$(fairseq-tree-user-dir)"', str(REPO / "fairseq_tree")))


def run(cmd, cwd):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    proc = subprocess.run([str(c) for c in cmd], cwd=str(cwd), env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"{cmd[0]} exited {proc.returncode}:\n{proc.stderr[-3000:]}"
    return proc.stdout + proc.stderr


def losses(log: str):
    """-> [(update, loss)] of the train_inner lines (--log-interval 1), in fairseq's and hydra's log formats."""
    return [(int(u), float(x)) for x, u in re.findall(r"train_inner.*? loss=([\d.]+),.*?num_updates=(\d+)", log)]


def test_hydra_train_with_the_yaml_is_the_demos_fairseq_train(data_bin, tmp_path):  # noqa: F811
    cmd = documented_command()
    assert cmd[:5] == ["fairseq-hydra-train", "--config-dir", "examples/tree2seq/config", "--config-name", "demo"]
    cmd[0], cmd[2] = BIN / cmd[0], REPO / cmd[2]  # run from elsewhere: the checkout's config
    cmd = [f"task.data={data_bin}" if str(t).startswith("task.data=") else t for t in cmd]
    hydra = run([*cmd, "optimization.max_update=3", "common.cpu=true", "common.log_interval=1", "common.seed=1",
                 "checkpoint.save_dir=hydra_ckpt"], cwd=tmp_path)
    plain = run([BIN / "fairseq-train", data_bin, "--user-dir", REPO / "fairseq_tree", *DEMO_FLAGS, *UPDATES,
                 "--save-dir", tmp_path / "plain_ckpt"], cwd=tmp_path)
    assert losses(hydra) == losses(plain) and [u for u, _ in losses(hydra)] == [1, 2, 3], (losses(hydra), hydra[-2000:])
    assert not (tmp_path / "outputs").exists()  # hydra.run.dir '.': relative paths are the command's
    h = torch.load(tmp_path / "hydra_ckpt" / "checkpoint_last.pt", weights_only=False)
    p = torch.load(tmp_path / "plain_ckpt" / "checkpoint_last.pt", weights_only=False)
    assert h["model"].keys() == p["model"].keys() and all(torch.equal(h["model"][k], p["model"][k]) for k in h["model"])
    assert h["cfg"]["model"]["_name"] == "tree2seq" and h["cfg"]["task"]["_name"] == "tree_translation"
    out = run([BIN / "fairseq-generate", data_bin, "--user-dir", REPO / "fairseq_tree", "--task", "tree_translation",
               "--path", tmp_path / "hydra_ckpt" / "checkpoint_last.pt", "--gen-subset", "valid", "--beam", "1",
               "--max-len-b", "3", "--batch-size", "64", "--cpu"], cwd=tmp_path)
    assert sum(line.startswith("H-") for line in out.splitlines()) == 64
