"""The allowlist holds what fairseq checkpoints hold and nothing that runs code (the entry points' refusals are in
tests/integration/test_safe_loading.py)."""

import argparse
import os

import numpy as np
import pytest
import torch

from fairseq_tree import safe_loading


def test_namespaces_and_numpy_scalars_load(tmp_path):
    state = {"cfg": {"model": argparse.Namespace(arch="tree2seq", dropout=0.3)}, "model": {"w": torch.ones(2)},
             "extra_state": {"val_loss": np.float64(3.25), "best": np.float32(1.5), "n": np.int64(7)}}
    torch.save(state, tmp_path / "c.pt")
    out = safe_loading.load(tmp_path / "c.pt")
    assert out["cfg"]["model"].dropout == 0.3 and out["extra_state"]["val_loss"] == 3.25
    assert out["extra_state"]["n"] == 7 and torch.equal(out["model"]["w"], torch.ones(2))


class Call:
    def __reduce__(self):
        return (os.getcwd, ())  # harmless, but a call all the same


def test_anything_callable_is_refused(tmp_path):
    torch.save({"cfg": Call()}, tmp_path / "c.pt")
    with pytest.raises(safe_loading.UnsafeCheckpointError, match="posix.getcwd"):
        safe_loading.load(tmp_path / "c.pt")


def test_the_allowlist_is_exactly_these_names():
    names = {g[1] if isinstance(g, tuple) else f"{g.__module__}.{g.__qualname__}" for g in safe_loading.allowlist()}
    assert names == {"argparse.Namespace", "numpy.core.multiarray.scalar", "numpy._core.multiarray.scalar",
                     "numpy.dtype", "numpy.dtypes.Float64DType", "numpy.dtypes.Float32DType",
                     "numpy.dtypes.Int64DType", "numpy.dtypes.Int32DType", "numpy.dtypes.BoolDType"}
