"""The task's data directories (``--data``, colon-separated): which one a split is read from (fairseq's translation
rule), and recording them as absolute paths, so that a checkpoint finds its dictionaries from any working
directory."""

import os


def split_data_path(data: str, split: str, train_subset: str, epoch: int) -> str:
    """The training split rotates through the directories by epoch (1-based); every other split reads the first."""
    paths = data.split(":")
    return paths[(epoch - 1) % len(paths)] if split == train_subset else paths[0]


def record_absolute_data(cfg) -> None:
    """Make ``cfg.data`` absolute (each local directory of it) in a task's ``setup_task``, and in the run's config
    that fairseq saves in every checkpoint: ``data-bin/ptb`` as typed at training time would name a directory
    relative to that run's working directory, and a checkpoint loaded from anywhere else would not find it.

    fairseq's ``tasks.setup_task`` hands the task a merged copy of ``cfg.task`` whose parent is the run's config
    (:func:`fairseq.dataclass.utils.merge_with_parent`); the trainer saves that parent's ``task``, so both are
    set. A checkpoint that recorded a relative path still resolves it from the working directory, as before."""
    data = getattr(cfg, "data", None)
    if not isinstance(data, str) or not data or "://" in data:  # (unset, or a remote path fairseq would open)
        return
    absolute = os.pathsep.join(os.path.abspath(p) if p else p for p in data.split(os.pathsep))
    if absolute == data:
        return
    cfg.data = absolute
    parent = cfg._get_parent() if hasattr(cfg, "_get_parent") else None  # an omegaconf node; None: a Namespace
    saved = parent.get("task") if parent is not None and hasattr(parent, "get") else None
    if saved is not None and saved is not cfg and saved.get("data") == data:
        saved.data = absolute
