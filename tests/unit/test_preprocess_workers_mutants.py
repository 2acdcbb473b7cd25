"""What the worker processes of fairseq-tree-preprocess (fairseq_tree/preprocess/workers.py) hand back when a shard
fails with an exception that cannot cross a process boundary: a bug of one line that
tests/unit/test_preprocess_workers.py let through (scripts/mutation/, docs/development.md)."""

import pytest

from fairseq_tree.preprocess.shards import PreprocessError, Shard
from fairseq_tree.preprocess.workers import run_local

SHARDS = [Shard("train", i, 1 + 10 * i, 10, {}) for i in range(6)]


class LineError(Exception):
    """An exception whose constructor takes two arguments but passes one message up: it pickles, and unpickling
    it fails (``LineError(message)`` is one argument short), as many libraries' errors do."""

    def __init__(self, path, line):
        super().__init__(f"{path}:{line}: bad line")


class Fails:
    def __init__(self, on):
        self.on = on

    def __call__(self, shard):
        if shard.index == self.on:
            raise LineError(f"in.{shard.name}", 7)
        return {}


def test_an_error_that_cannot_reach_the_parent_still_stops_the_run_with_its_message():
    """Shard 3 fails in a worker process with an error that cannot be unpickled in the parent: the run stops at
    shard 3 (after 0-2) with the error's type and message, it does not pass for a finished shard nor hang."""
    done = []
    with pytest.raises(PreprocessError, match=r"^LineError: in\.train\.00003:7: bad line$"):
        run_local("parse", lambda: Fails(3), SHARDS, 2, done.append)
    assert done == SHARDS[:3]

