"""Running a stage's worker over shards in local processes (fairseq_tree/preprocess/workers.py): one worker built
per process, answers in shard order, the first error raised, a worker that cannot start or dies is an error."""

import os

import pytest

from fairseq_tree.preprocess.shards import PreprocessError, Shard
from fairseq_tree.preprocess.workers import run_local

SHARDS = [Shard("train", i, 1 + 10 * i, 10, {}) for i in range(6)]


class Recorder:
    """A worker that leaves a file per build (``built.PID``) and per shard (``SHARD.PID``)."""

    def __init__(self, folder, fail_on=None, die_on=None):
        self.folder, self.fail_on, self.die_on = folder, fail_on, die_on
        with open(folder / f"built.{os.getpid()}", "a") as f:
            f.write("built\n")

    def __call__(self, shard):
        if shard.index == self.die_on:
            os._exit(3)
        if shard.index == self.fail_on:
            raise ValueError(f"bad shard {shard.name}")
        (self.folder / f"{shard.name}.{os.getpid()}").write_text("")
        return {}


@pytest.mark.parametrize("workers", [1, 2])
def test_every_shard_once_one_worker_per_process_done_in_order(tmp_path, workers):
    done = []
    run_local("parse", lambda: Recorder(tmp_path), SHARDS, workers, done.append)
    assert done == SHARDS
    names = sorted(p.name for p in tmp_path.iterdir())
    built = [n for n in names if n.startswith("built.")]
    # one build per process; with 2, the second process may be ended before it starts when the first did all,
    # also while its worker is being built (its file opened, "built" not yet written: seen on a loaded box)
    pids = {n.split(".", 1)[1] for n in built}
    shard_pids = {n.rsplit(".", 1)[1] for n in names if not n.startswith("built.")}
    assert 1 <= len(built) <= workers and shard_pids <= pids
    assert all((tmp_path / n).read_text() == "built\n" for n in built if n.split(".", 1)[1] in shard_pids)
    assert all((tmp_path / n).read_text() in ("built\n", "") for n in built)
    assert sorted(n.rsplit(".", 1)[0] for n in names if not n.startswith("built.")) == [s.name for s in SHARDS]
    assert (str(os.getpid()) in pids) == (workers == 1)  # one worker: in this process


@pytest.mark.parametrize("workers", [1, 2])
def test_a_worker_that_cannot_start_is_an_error(tmp_path, workers):
    def broken():
        raise RuntimeError("no checkpoint")

    with pytest.raises(PreprocessError, match="parse: the worker could not start: RuntimeError: no checkpoint"):
        run_local("parse", broken, SHARDS, workers, lambda s: None)


@pytest.mark.parametrize("workers", [1, 2])
def test_the_first_failing_shard_raises_after_the_ones_before(tmp_path, workers):
    done = []
    with pytest.raises(ValueError, match="bad shard train.00003"):
        run_local("bpe", lambda: Recorder(tmp_path, fail_on=3), SHARDS, workers, done.append)
    assert done == SHARDS[:3]


def test_a_process_that_dies_is_an_error_not_a_hang(tmp_path):
    with pytest.raises(PreprocessError, match="binarize: the worker processes ended before finishing shard train.00002"
                       ):
        run_local("binarize", lambda: Recorder(tmp_path, die_on=2), SHARDS, 2, lambda s: None)
