"""Safe checkpoint loading: torch's ``weights_only`` unpickler with an allowlist of exactly what fairseq and
fairseq-tree checkpoints hold, never a process-wide switch to full pickle.

A fairseq 0.12 checkpoint is a dict of tensors, numbers, strings, lists and dicts, plus ``cfg.model`` as an
``argparse.Namespace`` (models registered through args); a number in ``extra_state`` may be a numpy scalar.
Nothing else is allowed: a file that pickles a callable (``os.system``, ...) is refused with
:class:`UnsafeCheckpointError`, naming the file and the opt-out.

Opt-out, for a trusted legacy file only: list it in the environment variable ``FAIRSEQ_TREE_TRUSTED_CHECKPOINTS``
(paths separated by ``os.pathsep``); that file, and no other, is then loaded with full pickle. (torch's own
``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1`` still works as torch documents, for every file of the process.)

Needs torch >= 2.6 (``weights_only=True`` is torch's default there, so fairseq's own ``torch.load`` calls are
safe once the allowlist is registered).
"""

import argparse
import os
import pickle
import re
import types
from typing import Callable, List, Tuple, Union

import torch

TRUST_ENV = "FAIRSEQ_TREE_TRUSTED_CHECKPOINTS"


class UnsafeCheckpointError(pickle.UnpicklingError):
    """A checkpoint that holds something the allowlist does not: the message names the file, what it holds and
    how to opt out for a trusted file."""


def allowlist() -> List[Union[type, Tuple[Callable, str]]]:
    """The globals a fairseq / fairseq-tree checkpoint may name beyond torch's defaults (containers, tensors):
    ``argparse.Namespace`` (a data holder) and numpy's scalar reconstructor with the dtypes it takes (it rebuilds a
    number, e.g. a float64 validation score, from its dtype and bytes, and runs nothing else)."""
    import numpy as np

    try:
        from numpy._core.multiarray import scalar  # numpy >= 2
    except ImportError:  # numpy 1.x
        from numpy.core.multiarray import scalar
    dtypes = [type(np.dtype(t)) for t in ("float64", "float32", "int64", "int32", "bool")]
    # numpy 1 and numpy 2 name the scalar reconstructor differently in the files they write
    renamed = [(scalar, name) for name in ("numpy.core.multiarray.scalar", "numpy._core.multiarray.scalar")]
    return [argparse.Namespace, *renamed, np.dtype, *dtypes]


def register() -> None:
    """Add :func:`allowlist` to torch's safe globals (data holders and numpy's scalar reconstructor only), so that
    fairseq's own loads (fairseq-train resume, fairseq-generate, fairseq-interactive, distributed broadcasts)
    read fairseq checkpoints under torch's default ``weights_only=True``."""
    torch.serialization.add_safe_globals(allowlist())


def trusted(path) -> bool:
    """Whether the user listed ``path`` in ``FAIRSEQ_TREE_TRUSTED_CHECKPOINTS``."""
    listed = [p for p in os.environ.get(TRUST_ENV, "").split(os.pathsep) if p]
    if not listed or not isinstance(path, (str, os.PathLike)):
        return False
    real = os.path.realpath(path)
    return any(os.path.realpath(p) == real for p in listed)


def refusal(path, error: Exception) -> UnsafeCheckpointError:
    """The error for a file the safe unpickler refused: the global it named, the file, the opt-out."""
    m = re.search(r"GLOBAL (\S+)", str(error))
    what = m.group(1) if m else str(error).splitlines()[0]
    return UnsafeCheckpointError(
        f"{path}: refused by safe loading (weights_only=True): it holds {what}, which is not in fairseq-tree's "
        f"allowlist of checkpoint contents (fairseq_tree.safe_loading.allowlist). Loading it could run code. "
        f"Only if you trust this file: {TRUST_ENV}={path}")


class _FullPickleTorch:
    """``torch`` as fairseq's loader sees it in :func:`_full_pickle_copy`: every name is torch's, and ``load``
    reads with full pickle (the one place it does: a file the user trusts, here and in :func:`load`)."""

    def __getattr__(self, name):
        return getattr(torch, name)

    @staticmethod
    def load(*args, **kwargs):
        return torch.load(*args, **{**kwargs, "weights_only": False})


def _full_pickle_copy(loader: Callable) -> Callable:
    """A copy of fairseq's ``load_checkpoint_to_cpu`` whose module global ``torch`` is :class:`_FullPickleTorch`,
    in the copy's own globals: fairseq's steps after ``torch.load`` (arg overrides, OmegaConf, state upgrades) run
    as the installed fairseq writes them, and nothing of torch, fairseq or the environment changes for other
    calls or threads (torch's ``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD`` would weaken every load of the process)."""
    if loader.__globals__.get("torch") is not torch:
        raise RuntimeError(f"{loader.__module__}.{loader.__qualname__} does not call torch.load from its module's "
                           f"globals: {TRUST_ENV} cannot apply to it")
    copy = types.FunctionType(loader.__code__, {**loader.__globals__, "torch": _FullPickleTorch()},
                              loader.__name__, loader.__defaults__, loader.__closure__)
    copy.__kwdefaults__ = loader.__kwdefaults__
    return copy


def refused_a_global(error: Exception) -> bool:
    """Whether torch's weights_only unpickler refused a global (not a damaged file)."""
    return "GLOBAL" in str(error) or "Unsupported global" in str(error)


def load(path, map_location="cpu"):
    """``torch.load`` of a fairseq checkpoint with ``weights_only=True`` and :func:`allowlist` (full pickle only
    for a file listed in ``FAIRSEQ_TREE_TRUSTED_CHECKPOINTS``). UnsafeCheckpointError names a refused file; a
    damaged file raises torch's own error."""
    if trusted(path):
        return _FullPickleTorch.load(path, map_location=map_location)
    register()  # (torch's safe_globals context manager would remove the allowlist on exit, for every caller)
    try:
        return torch.load(path, map_location=map_location, weights_only=True)
    except pickle.UnpicklingError as e:
        if not refused_a_global(e):
            raise
        raise refusal(path, e) from None


def guard_fairseq_loader() -> None:
    """Wrap ``fairseq.checkpoint_utils.load_checkpoint_to_cpu`` (every fairseq CLI and hub loads through it) so
    that a refused file is reported by :func:`refusal` and a trusted file loads; the loading itself stays
    fairseq's, under torch's default ``weights_only=True`` (a trusted file: :func:`_full_pickle_copy`)."""
    from fairseq import checkpoint_utils

    original = checkpoint_utils.load_checkpoint_to_cpu
    if getattr(original, "_fairseq_tree_guarded", False):
        return

    def load_checkpoint_to_cpu(path, *args, **kwargs):
        if trusted(path):
            return _full_pickle_copy(original)(path, *args, **kwargs)
        try:
            return original(path, *args, **kwargs)
        except pickle.UnpicklingError as e:
            if isinstance(e, UnsafeCheckpointError) or not refused_a_global(e):
                raise
            raise refusal(path, e) from None

    load_checkpoint_to_cpu._fairseq_tree_guarded = True
    load_checkpoint_to_cpu.__wrapped__ = original
    checkpoint_utils.load_checkpoint_to_cpu = load_checkpoint_to_cpu


__all__ = ["TRUST_ENV", "UnsafeCheckpointError", "allowlist", "guard_fairseq_loader", "load", "register", "trusted"]
