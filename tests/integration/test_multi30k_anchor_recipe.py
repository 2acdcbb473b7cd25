"""scripts/recipes/multi30k_anchor.sh on a 40-sentence slice of Wu et al.'s Multi30k files (issue 30): their BPE'd
text through fairseq-preprocess for the transformer, the same sentences as right-branching trees through
fairseq-tree-preprocess for tree2seq (checked token for token against fairseq-preprocess's; PREPARE_ONLY=1 stops
there), two updates each,
the average, beam search, both metrics, the paired bootstrap, a rerun that trains nothing, and a resumed run whose
log holds the stop of one uninterrupted --patience run, not started again."""

import json
import re
import subprocess
import sys

import pytest
from conftest import REPO, SHARED

from fairseq_tree import safe_loading

pytestmark = pytest.mark.slow(minutes=1)  # measured: the file on one xdist worker (2026-11-25)

REVISIT = SHARED / "data" / "multi30k_revisit" / "en-de"


def slice_env(tmp_path):
    """The first 40 sentences of each of Wu et al.'s files and of multi30k's test references (as
    tmp_path/m30k, a link to tmp_path/shared/data/multi30k), and the recipe's environment over them."""
    if not REVISIT.is_dir():
        pytest.skip(f"{REVISIT} not found")
    rv, m30k = tmp_path / "revisit" / "en-de", tmp_path / "shared" / "data" / "multi30k"
    rv.mkdir(parents=True)
    m30k.mkdir(parents=True)
    for split in ("train", "valid", "test.2016"):
        for suffix in ("en", "de", "bert.en"):
            lines = (REVISIT / f"{split}.{suffix}").read_text(encoding="utf-8").splitlines(keepends=True)[:40]
            (rv / f"{split}.{suffix}").write_text("".join(lines), encoding="utf-8")
    (rv / "code").write_bytes((REVISIT / "code").read_bytes())
    for lang in ("de", "en"):
        test = (SHARED / "data" / "multi30k" / f"test.{lang}").read_text(encoding="utf-8").splitlines(keepends=True)
        (m30k / f"test.{lang}").write_text("".join(test[:40]), encoding="utf-8")
    (tmp_path / "m30k").symlink_to(m30k)
    return dict(PYTHON=sys.executable, REVISIT=str(rv.parent), M30K=str(m30k), SHARED=str(SHARED),
                RUNS="transformer tree2seq_trivial", UPDATES="2", AVERAGE="1",
                GEN_EXTRA="--max-len-a 0 --max-len-b 5", POLL="1", PATH="/usr/bin:/bin", HOME=str(tmp_path))


def log_text(run):
    return (run / "train.log").read_text(encoding="utf-8")


def test_anchor_recipe_transformer_and_trivial_trees(tmp_path):
    env = slice_env(tmp_path)
    m30k = tmp_path / "m30k"
    cmd = ["bash", str(REPO / "scripts" / "recipes" / "multi30k_anchor.sh"), str(tmp_path / "work")]
    # PREPARE_ONLY: the data-bins (the tree one checked against fairseq-preprocess's), no training
    prep = subprocess.run(cmd, env=dict(env, PREPARE_ONLY="1"), capture_output=True, text=True, timeout=900)
    assert prep.returncode == 0, prep.stderr[-3000:]
    for split in ("train", "valid", "test"):
        assert f"{split}: 40 sentences, the same target and source tokens as" in prep.stdout + prep.stderr
    assert (tmp_path / "work" / "data-bin" / "trivial.en-de" / ".done").is_file()
    assert not (tmp_path / "work" / "ckpt").exists()
    archive = tmp_path / "archive"
    proc = subprocess.run(cmd, env=dict(env, ARCHIVE=str(archive)), capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = [json.loads(line) for line in (tmp_path / "work" / "results.jsonl").read_text().splitlines()]
    assert [r["run"].rsplit("/", 1)[1] for r in rows] == ["transformer_s1", "tree2seq_trivial_s1"]
    for r in rows:
        assert r["updates"] == 2 and r["device"] == "cpu" and "case:lc" in r["sacrebleu_signature"]
        assert {"test_fairseq_bleu", "valid_fairseq_bleu", "test_sacrebleu", "best_valid_loss"} <= r.keys()
    assert "paired_p" in rows[1] and "paired_p" not in rows[0]
    flags = (tmp_path / "work" / "ckpt" / "de" / "tree2seq_trivial_s1" / "flags.txt").read_text()
    assert "--arch tree2seq_multi30k_tiny" in flags and "--tree-batch-by leaves" in flags
    # the table: both runs, and trivial trees against the same-seed transformer
    tables = [subprocess.run([sys.executable, "-m", "fairseq_tree.cli.report", "anchor", str(where), "--reference",
                              str(m30k / "test.de"), "--seeds", "1", "--bootstrap-samples", "20"],
                             capture_output=True, text=True, timeout=300) for where in (tmp_path / "work", archive)]
    table = tables[0]
    assert table.returncode == 0, table.stderr[-2000:]
    # the ARCHIVE (the record kept in git) gives the same table from a few kB per run
    assert tables[1].returncode == 0 and tables[1].stdout == table.stdout, tables[1].stderr[-2000:]
    kept = archive / "ckpt" / "de" / "tree2seq_trivial_s1"
    assert sorted(p.name for p in kept.iterdir()) == ["result.json", "test.gen", "train.log"]
    assert "\nS-" not in (kept / "test.gen").read_text() and "Saved checkpoint" in log_text(kept)
    assert "| transformer | 1 |" in table.stdout and "| tree2seq_trivial | 1 |" in table.stdout
    assert "| tree2seq_trivial − transformer | 1 |" in table.stdout
    # a rerun trains and scores nothing again
    logs = {p: p.read_text() for p in (tmp_path / "work" / "ckpt" / "de").glob("*/train.log")}
    again = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr[-2000:]
    assert len(logs) == 2 and all(p.read_text() == text and text.count("start/resume") == 1 for p, text in logs.items())
    # an unfinished run whose saved validations already stop a --patience 1 run (a worse epoch 3 appended, as a
    # killed-and-resumed run's log can hold) is marked done without training: fairseq would count afresh
    run = tmp_path / "work" / "ckpt" / "de" / "transformer_s1"
    (run / ".done").unlink()
    with (run / "train.log").open("a", encoding="utf-8") as log:
        log.write(f"2026-11-26 09:07:15 | INFO | fairseq.checkpoint_utils | Saved checkpoint {run}/checkpoint3.pt "
                  "(epoch 3 @ 3 updates, score 99.0) (writing took 0.05 seconds)\n")
    # its flags.txt as a run that began on the CPU in another work directory wrote it: the same run (it goes on
    # from its checkpoint on a GPU's copy of the directory, or back here); another seed is not
    flags_txt = run / "flags.txt"
    moved = flags_txt.read_text().replace(str(tmp_path / "work"), "/elsewhere/work").rstrip("\n") + " --cpu\n"
    flags_txt.write_text(moved.replace("--seed 1 ", "--seed 2 "))
    other = subprocess.run(cmd, env=dict(env, PATIENCE="1"), capture_output=True, text=True, timeout=300)
    assert other.returncode != 0 and "trained with other flags" in other.stderr
    flags_txt.write_text(moved)
    stopped = subprocess.run(cmd, env=dict(env, PATIENCE="1"), capture_output=True, text=True, timeout=300)
    assert stopped.returncode == 0, stopped.stderr[-2000:]
    assert (run / "train.log").read_text().count("start/resume") == 1 and (run / ".done").is_file()


def test_a_run_trained_in_a_lease_goes_on_here(tmp_path):
    """scripts/recipes/gpu_runs.sh bundle, gpu_checks.sh's `runs` phase (on the CPU here: RUNS_DEVICE=cpu) stopped
    at its deadline, then gpu_runs.sh unpack and the recipe's same command: the run goes on from the last epoch
    checkpoint the lease saved (in another work directory) to its end, and is scored."""
    env = dict(slice_env(tmp_path), RUNS="tree2seq_trivial", SEEDS="2")
    recipes = REPO / "scripts" / "recipes"
    work, bundle, files = tmp_path / "work", tmp_path / "bundle", tmp_path / "files"
    recipe = ["bash", str(recipes / "multi30k_anchor.sh"), str(work)]
    prep = subprocess.run(recipe, env=dict(env, PREPARE_ONLY="1"), capture_output=True, text=True, timeout=900)
    assert prep.returncode == 0, prep.stderr[-3000:]
    leased = dict(ANCHOR_RUNS="tree2seq_trivial", ANCHOR_SEEDS="2")
    pack = subprocess.run(["bash", str(recipes / "gpu_runs.sh"), "bundle", str(work), str(bundle),
                           str(tmp_path / "shared")], env=dict(env, **leased), capture_output=True, text=True,
                          timeout=120)
    assert pack.returncode == 0, pack.stderr[-2000:]
    assert (bundle / "anchor_work" / "data-bin" / "trivial.en-de" / ".done").is_file()
    # the lease: trains until 25 s before its 75 s deadline, in a copy of the work directory under /tmp
    lease_env = dict(env, **leased, PHASES="runs", BUNDLE=str(bundle), BUDGET="75", PACK_SECS="25",
                     RUNS_DEVICE="cpu", WORKERS="0", UPDATES="100000")
    lease = subprocess.run(["bash", str(recipes / "gpu_checks.sh"), str(files)], cwd=REPO, env=lease_env,
                           capture_output=True, text=True, timeout=300)
    assert lease.returncode == 0, lease.stderr[-2000:]
    log = (files / "runs.log").read_text()
    resumed = re.search(r"tree2seq_trivial_s2: resumes from checkpoint(\d+)\.pt", log)
    assert resumed, log[-3000:]
    parts = sorted(p.name for p in files.iterdir() if ".tgz.part-" in p.name)
    assert parts and all(p.startswith("tree2seq_trivial_s2.tgz.part-") for p in parts)
    unpack = subprocess.run(["bash", str(recipes / "gpu_runs.sh"), "unpack", str(files), str(work)],
                            capture_output=True, text=True, timeout=120)
    assert unpack.returncode == 0, unpack.stderr[-2000:]
    run = work / "ckpt" / "de" / "tree2seq_trivial_s2"
    saved = safe_loading.load(run / "checkpoint_last.pt")["optimizer_history"][-1]["num_updates"]
    epoch = resumed[1]
    at = re.search(rf"Saved checkpoint \S+/checkpoint{epoch}\.pt \(epoch {epoch} @ (\d+) updates", log_text(run))
    assert saved >= 1 and at and int(at[1]) == saved  # the lease's last saved epoch, not a later update
    # here: two more updates from the lease's checkpoint (--max-update), then the average and the scores
    done = subprocess.run(recipe, env=dict(env, UPDATES=str(saved + 2)), capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads((run / "result.json").read_text())["updates"] == saved + 2
    assert re.findall(r"start/resume on (\w+)", log_text(run)) == ["cpu", "cpu"]
    assert "/tmp/anchor_work/" not in (run / "flags.txt").read_text()
