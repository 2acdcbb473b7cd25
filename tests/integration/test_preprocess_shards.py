"""fairseq's sharded layout from fairseq-tree-preprocess: ``--num-shards`` in one command, ``--dict-only`` then
independent ``--shard-id`` runs, and ``--launcher local`` (submitit's local executor), each equal to a one-shot
run; fairseq-train reading ``DATA/shard0:DATA/shard1:...``; failed jobs reported and rerun."""

import json

import pytest
from conftest import BIN, SHARED, run_command
from test_preprocess import load, run_cli

pytestmark = pytest.mark.slow(minutes=3)  # measured: the file on one xdist worker (2026-11-25)

PTB = SHARED / "data" / "ptb_sample"
KEYS = ("en-xx.en", "en-xx.en.nodes", "en-xx.en.spans", "en-xx.xx")
FIXED = ("dict.en.txt", "dict.xx.txt", "dict.en.labels.txt", "bpe.codes")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """PTB trees as the given source (train 121 lines: parts of 40/40/41 for K=3, 30/30/30/31 for K=4), the
    lower-cased sentences as target."""
    d = tmp_path_factory.mktemp("shardcorpus")
    trees = (PTB / "valid.mrg").read_text().splitlines()[:151]
    text = (PTB / "valid.txt").read_text().splitlines()[:151]
    (d / "train.en").write_text("\n".join(trees[:121]) + "\n")
    (d / "train.xx").write_text("\n".join(t.lower() for t in text[:121]) + "\n")
    (d / "valid.en").write_text("\n".join(trees[121:]) + "\n")
    (d / "valid.xx").write_text("\n".join(t.lower() for t in text[121:]) + "\n")
    return d


def common(corpus, dest, *extra):
    return ["-s", "en", "-t", "xx", "--trainpref", corpus / "train", "--validpref", corpus / "valid",
            "--parser", "given", "--shard-size", "16", "--destdir", dest, *extra]


@pytest.fixture(scope="module")
def one_shot(corpus, tmp_path_factory):
    dest = tmp_path_factory.mktemp("oneshot") / "bin"
    run_cli(*common(corpus, dest, "--bpe-merges", "200", "--workers", "2"))
    return dest


@pytest.fixture(scope="module")
def three_shards(corpus, tmp_path_factory):
    dest = tmp_path_factory.mktemp("sharded") / "bin"
    run_cli(*common(corpus, dest, "--bpe-merges", "200", "--workers", "2", "--num-shards", "3"))
    return dest


def assert_concatenation_equals(sharded, one_shot, k, sizes):
    """train of shard0..k-1, concatenated, is one_shot's train item by item (and its trees line by line); valid
    is whole in shard0; every shard directory has one_shot's dictionaries and codes byte for byte."""
    for key in KEYS:
        parts = [load(sharded / f"shard{i}" / f"train.{key}") for i in range(k)]
        assert [len(p) for p in parts] == sizes
        assert [x for p in parts for x in p] == load(one_shot / f"train.{key}")
        assert load(sharded / "shard0" / f"valid.{key}") == load(one_shot / f"valid.{key}")
    trees = [(sharded / f"shard{i}" / "train.en.trees").read_text() for i in range(k)]
    assert "".join(trees) == (one_shot / "train.en.trees").read_text()
    for i in range(1, k):
        assert not (sharded / f"shard{i}" / "valid.en-xx.en.bin").exists()
    for i in range(k):
        for f in FIXED:
            assert (sharded / f"shard{i}" / f).read_bytes() == (one_shot / f).read_bytes(), (i, f)


def test_num_shards_concatenate_to_the_one_shot_run(three_shards, one_shot):
    # 121 lines in 3 parts: [0, 40), [40, 80), [80, 121)
    assert_concatenation_equals(three_shards, one_shot, 3, [40, 40, 41])
    report = json.loads((three_shards / "preprocess.json").read_text())
    assert [(s["dir"], s["first_line"], s["lines"]) for s in report["shards"]["train"]] == \
        [("shard0", 1, 40), ("shard1", 41, 40), ("shard2", 81, 41)]
    assert report["splits"]["train"]["sentences"] == 121


def test_dict_only_then_independent_shard_ids_equal_one_command(corpus, three_shards, tmp_path):
    dest = tmp_path / "bin"
    run_cli(*common(corpus, dest, "--bpe-merges", "200", "--dict-only"))
    assert sorted(p.name for p in dest.iterdir()) == sorted(FIXED + ("preprocess.json",))
    assert json.loads((dest / "preprocess.json").read_text())["dict_only"] is True
    for i in (2, 0, 1):  # any order, each on its own
        run_cli(*common(corpus, dest, "--num-shards", "3", "--shard-id", str(i)))
    for i in range(3):
        for f in sorted(p.name for p in (three_shards / f"shard{i}").iterdir()):
            assert (dest / f"shard{i}" / f).read_bytes() == (three_shards / f"shard{i}" / f).read_bytes(), (i, f)
    report = json.loads((dest / "shard1" / "preprocess.json").read_text())
    assert report["splits"]["train"]["lines"] == 40 and list(report["splits"]) == ["train"]


def test_shard_id_errors(corpus, tmp_path):
    proc = run_cli(*common(corpus, tmp_path / "a", "--num-shards", "3", "--shard-id", "0"), ok=False)
    assert proc.returncode == 1
    assert "--shard-id needs fixed vocabularies" in proc.stderr and "--dict-only" in proc.stderr
    proc = run_cli(*common(corpus, tmp_path / "b", "--num-shards", "3", "--shard-id", "1", "--bpe-merges", "10"),
                   ok=False)
    assert proc.returncode == 1 and "cannot learn BPE" in proc.stderr
    for bad, msg in ((["--shard-id", "0"], "--shard-id goes with --num-shards"),
                     (["--num-shards", "3", "--shard-id", "3"], "--shard-id must be in 0 .. 2"),
                     (["--num-shards", "0"], "--num-shards must be positive"),
                     (["--dict-only", "--num-shards", "2"], "give it without --num-shards")):
        proc = run_cli(*common(corpus, tmp_path / "c", *bad), ok=False)
        assert proc.returncode == 2 and msg in proc.stderr, (bad, proc.stderr[-500:])
    proc = run_cli(*common(corpus, tmp_path / "d", "--num-shards", "200"), ok=False)
    assert proc.returncode == 1 and "121 lines cannot make --num-shards 200 shards" in proc.stderr


def test_launcher_local_four_shards_equal_one_shot(corpus, one_shot, tmp_path):
    dest = tmp_path / "bin"
    proc = run_cli(*common(corpus, dest, "--bpe-merges", "200", "--num-shards", "4", "--launcher", "local"))
    assert "parse: submitted 4 jobs" in proc.stderr and "binarize: submitted 4 jobs" in proc.stderr
    assert_concatenation_equals(dest, one_shot, 4, [30, 30, 30, 31])
    assert not (dest / ".launcher").exists() and not (dest / ".work").exists()


def test_launcher_reports_a_failed_job_and_rerun_keeps_completed_shards(corpus, tmp_path):
    bad = tmp_path / "corpus"
    bad.mkdir()
    for f in ("train.xx", "valid.en", "valid.xx"):
        (bad / f).write_text((corpus / f).read_text())
    lines = (corpus / "train.en").read_text().splitlines()
    lines[100] = "(S (NP the dog"  # line 101: in the 4th part, its job fails; the other three complete
    (bad / "train.en").write_text("\n".join(lines) + "\n")
    dest = tmp_path / "bin"
    args = common(bad, dest, "--bpe-merges", "200", "--num-shards", "4", "--launcher", "local")
    proc = run_cli(*args, ok=False)
    assert proc.returncode == 1
    assert "parse: 1 of 4 jobs failed; rerun the same command" in proc.stderr
    assert f"{bad / 'train.en'}:101: malformed tree" in proc.stderr and "_log.err)" in proc.stderr
    # 10 work shards of <= 16 lines (train parts 30/30/30/31 -> 2 each, valid 2) in 4 jobs balanced by lines:
    # [t0 t1 t2] [t3 t4] [t5 t6 t7] [v0 v1]; t6 (lines 91-106) fails, so its job never reaches t7
    assert len(list((dest / ".work").glob("*.parsed.json"))) == 8
    proc = run_cli(*args, ok=False)
    assert "parse: resuming, 8 of 10 shards already done" in proc.stderr
    assert "parse: 1 of 2 jobs failed" in proc.stderr  # t6 fails again, t7 now completes
    assert len(list((dest / ".work").glob("*.parsed.json"))) == 9


def test_fairseq_train_reads_the_shards_in_turn(three_shards, tmp_path):
    """Epoch e trains on shard (e-1) % 3, whose size (40/40/41 sentences) fairseq logs as it loads it."""
    proc = run_command(
        BIN / "fairseq-train", f"{three_shards}/shard0:{three_shards}/shard1:{three_shards}/shard2",
        "--user-dir", "fairseq_tree", "--task", "tree_translation", "-s", "en", "-t", "xx",
        "--arch", "tree2seq_tiny", "--optimizer", "adam", "--lr", "1e-3", "--max-tokens", "4000",
        "--max-epoch", "3", "--cpu", "--num-workers", "0", "--no-save", "--log-format", "simple",
        "--disable-validation")
    log = proc.stdout + proc.stderr
    loaded = [line.split("| ")[-1] for line in log.splitlines() if "train en-xx" in line and "examples" in line]
    # fairseq loads the next epoch's shard when an epoch ends: after epoch 3, shard0 again (round robin)
    assert loaded == [f"{three_shards}/shard{i} train en-xx {n} examples"
                      for i, n in ((0, 40), (1, 40), (2, 41), (0, 40))]


def test_slurm_parameters_reach_the_sbatch_script():
    """--slurm-* flags -> the #SBATCH lines submitit writes (no cluster here: its own script writer is used)."""
    from submitit.slurm.slurm import _make_sbatch_string

    from fairseq_tree.cli.preprocess import get_parser
    from fairseq_tree.preprocess.launcher import slurm_parameters

    args = get_parser().parse_args(["-s", "en", "--launcher", "slurm", "--workers", "4", "--slurm-partition", "gpu",
                                    "--slurm-gpus-per-node", "1", "--slurm-time", "90", "--slurm-mem-gb", "32",
                                    "--slurm-setup", "source venv/bin/activate"])
    text = _make_sbatch_string("python -m job", folder="/tmp/x", **slurm_parameters(args))
    for line in ("#SBATCH --partition=gpu", "#SBATCH --time=90", "#SBATCH --cpus-per-task=4", "#SBATCH --mem=32GB",
                 "#SBATCH --gpus-per-node=1", "#SBATCH --job-name=fairseq-tree-preprocess", "source venv/bin/activate"):
        assert line in text, line
    assert "--account" not in text


def test_slurm_launcher_without_a_cluster_fails_before_any_work(corpus, tmp_path):
    proc = run_cli(*common(corpus, tmp_path / "bin", "--num-shards", "2", "--launcher", "slurm"), ok=False)
    assert proc.returncode == 1 and "--launcher slurm: Could not detect" in proc.stderr
    assert not (tmp_path / "bin" / ".work").exists() or not any((tmp_path / "bin" / ".work").glob("*.json"))
