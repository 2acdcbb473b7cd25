"""Checkpoint averaging (Vaswani et al. 2017, Sec. 6.1: "averaging the last 5 checkpoints"), as fairseq's
``scripts/average_checkpoints.py`` does it, which the installed fairseq package does not ship.

The average of parameter p over checkpoints 1..K is (1/K) sum_k p_k, summed in float64 and cast back to p's
dtype (fairseq sums fp16 in fp32); integer buffers are floor-divided, as fairseq does. Everything else of
the output (config, extra state, optimizer state) is the first input's, i.e. the newest when the inputs come
from :func:`last_checkpoints`; ``averaged_from`` lists the inputs.
"""

import os
import re
from typing import Dict, List, Optional, Sequence

import torch

from fairseq_tree import safe_loading
from fairseq_tree.trees.io import atomic_path
from fairseq_tree.utils.progress import Progress

#: fairseq's checkpoint names: ``checkpoint{epoch}.pt`` and ``checkpoint_{epoch}_{updates}.pt``
_EPOCH = re.compile(r"^checkpoint(\d+)\.pt$")
_UPDATE = re.compile(r"^checkpoint_\d+_(\d+)\.pt$")


class CheckpointError(ValueError):
    """An input that cannot be averaged; the message names the file."""


def last_checkpoints(directory: str, n: int, by: str = "update", upper_bound: Optional[int] = None) -> List[str]:
    """-> the paths of the ``n`` checkpoints of ``directory`` with the highest epoch (``by='epoch'``:
    ``checkpointE.pt``) or update number (``by='update'``: ``checkpoint_E_U.pt``), at most ``upper_bound``,
    newest first. CheckpointError when fewer than ``n`` are there (an average of fewer is not what was asked)."""
    if by not in ("epoch", "update"):
        raise ValueError(f"by must be 'epoch' or 'update', not {by!r}")
    pattern = _UPDATE if by == "update" else _EPOCH
    found = []
    for name in os.listdir(directory):
        m = pattern.match(name)
        if m and (upper_bound is None or int(m.group(1)) <= upper_bound):
            found.append((int(m.group(1)), os.path.join(directory, name)))
    if len(found) < n:
        bound = f" at most {upper_bound}" if upper_bound is not None else ""
        raise CheckpointError(f"{directory}: {len(found)} {by} checkpoints{bound} ({pattern.pattern}), "
                              f"{n} asked for")
    return [path for _, path in sorted(found, reverse=True)[:n]]


def _load(path: str) -> dict:
    try:
        state = safe_loading.load(path)
    except safe_loading.UnsafeCheckpointError:
        raise
    except Exception as e:  # noqa: BLE001 (torch raises many kinds for a bad file)
        raise CheckpointError(f"{path}: not a readable checkpoint ({type(e).__name__}: {e})") from e
    if not isinstance(state, dict) or not isinstance(state.get("model"), dict):
        raise CheckpointError(f"{path}: no 'model' state dict (not a fairseq checkpoint)")
    return state


def average_checkpoints(paths: Sequence[str], progress: Optional[str] = None) -> dict:
    """-> the first checkpoint of ``paths`` with its ``model`` replaced by the mean over all of them.
    Every input must hold the same parameter names, shapes and dtypes (CheckpointError naming the file).
    ``progress``: the name of a progress bar / log line over the files."""
    if not paths:
        raise CheckpointError("no checkpoints to average")
    first = _load(paths[0])
    ref = first["model"]
    sums: Dict[str, torch.Tensor] = {
        k: v.to(torch.float64 if v.is_floating_point() else torch.int64).clone() for k, v in ref.items()}
    bar = Progress(progress, len(paths), unit="ckpt") if progress else None
    for path in paths[1:]:
        if bar:
            bar.update(1)
        model = _load(path)["model"]
        if model.keys() != ref.keys():
            missing, extra = sorted(ref.keys() - model.keys()), sorted(model.keys() - ref.keys())
            raise CheckpointError(f"{path}: parameters differ from {paths[0]} (missing {missing[:3]}, "
                                  f"extra {extra[:3]})")
        for k, v in model.items():
            if v.shape != ref[k].shape or v.dtype != ref[k].dtype:
                raise CheckpointError(f"{path}: {k} is {v.dtype} {tuple(v.shape)}, {paths[0]} has "
                                      f"{ref[k].dtype} {tuple(ref[k].shape)}")
            sums[k] += v.to(sums[k].dtype)
    if bar:
        bar.update(1)
        bar.close()
    n = len(paths)
    first["model"] = {k: (s / n if s.is_floating_point() else s // n).to(ref[k].dtype) for k, s in sums.items()}
    first["averaged_from"] = [str(p) for p in paths]
    return first


def save_atomic(state: dict, output: str) -> None:
    """torch.save through :func:`~fairseq_tree.trees.io.atomic_path` (creating the directory): never a
    half-written checkpoint."""

    os.makedirs(os.path.dirname(os.path.abspath(output)), exist_ok=True)
    with atomic_path(output) as tmp:
        torch.save(state, tmp)

__all__ = ["CheckpointError", "average_checkpoints", "last_checkpoints", "save_atomic"]
