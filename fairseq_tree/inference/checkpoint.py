"""Loading a checkpoint: the one place that calls fairseq's ``load_model_ensemble_and_task`` (hub interfaces,
CLIs and parser backends all come through here). A checkpoint of another task stops here, before its model is
built, with a message naming its task and the tool that runs it (:class:`WrongCheckpoint`); one whose data
directory (its dictionaries) is not there stops with the option that names another (:class:`MissingDataDirectory`).
A parser backend rewords both in its own options (:func:`as_parser_backend`)."""

import contextlib
import os
import re
from typing import Iterator, Optional, Sequence

from fairseq_tree.utils.devices import resolve_device

#: each task's checkpoints -> (the command that runs them, the hub class that loads them)
RUNNERS = {
    "tree_translation": ("fairseq-generate / fairseq-interactive DATA --task tree_translation "
                         "--user-dir $(fairseq-tree-user-dir)", "Tree2SeqModel.from_pretrained"),
    "positions_matched_translation": ("fairseq-generate DATA --task positions_matched_translation "
                                      "--user-dir $(fairseq-tree-user-dir)", "fairseq's TransformerModel"),
    "translation": ("fairseq-generate / fairseq-interactive", "fairseq's TransformerModel.from_pretrained"),
    "tree_classification": ("fairseq-tree-classify", "TreeClassifierModel.from_pretrained"),
    "constituency_parsing": ("fairseq-tree-parse", "LALParserModel.from_pretrained"),
    "tree_induction": ("fairseq-tree-induce", "StructFormerModel / ConstituentTransformerModel.from_pretrained"),
}
#: each task's checkpoints -> the preprocessing parser backend that reads them (``--parser NAME``)
PARSER_BACKENDS = {"constituency_parsing": "lal", "tree_induction": "induced"}


class WrongCheckpoint(ValueError):
    """A checkpoint given to a tool that runs another task's checkpoints (``path``, its ``task`` and ``arch``)."""

    def __init__(self, message: str, path: str = "", task: Optional[str] = None, arch: str = ""):
        super().__init__(message)
        self.path, self.task, self.arch = path, task, arch


class MissingDataDirectory(FileNotFoundError):
    """The data directory a checkpoint records (``data``, its dictionaries) is not there; ``how``: the caller's
    way to name another (``fairseq-tree-parse --data DIR``, ``--parser-data DIR``)."""

    def __init__(self, path: str, data: str, how: str, cwd: Optional[str] = None):
        self.path, self.data, self.how, self.cwd = path, data, how, cwd or os.getcwd()
        super().__init__(f"{path} was trained on the data directory {data!r}, which is not there (from "
                         f"{self.cwd}): give the data-bin with its dictionaries ({how}), or a folder written by "
                         "fairseq-tree-export CKPT OUT, which holds everything the model needs")

    def __reduce__(self):  # (to a worker process's parent: its arguments, not the message)
        return type(self), (self.path, self.data, self.how, self.cwd)


def checkpoint_task(state: dict) -> Optional[str]:
    """The task a checkpoint was trained with (``cfg.task._name``, or ``args.task`` of pre-hydra checkpoints)."""
    cfg = state.get("cfg")
    if cfg is not None and cfg.get("task") is not None:
        return cfg["task"].get("_name")
    args = state.get("args")
    return getattr(args, "task", None)


def check_task(path: str, state: dict, expect: Sequence[str], user: str) -> None:
    """WrongCheckpoint unless ``state``'s task is one of ``expect``: names the file, its task, and what runs it."""
    task = checkpoint_task(state)
    if not expect or task in expect:
        return
    command, hub = RUNNERS.get(task, ("the tool of that task", "its model's from_pretrained"))
    wanted = " or ".join(expect)
    raise WrongCheckpoint(f"{path} is a {task!r} checkpoint ({_arch(state)}); {user} takes {wanted} checkpoints. "
                          f"Run it with {command}, or load it with {hub}.", path, task, _arch(state))


def _check_data(path: str, state: dict, user: str) -> None:
    """MissingDataDirectory when the checkpoint's data directory (its dictionaries) is not there (a relative one,
    recorded before training made it absolute: from this working directory)."""
    cfg = state.get("cfg")
    data = getattr(cfg["task"], "data", None) if cfg is not None and cfg.get("task") is not None else None
    first = data.split(os.pathsep)[0] if isinstance(data, str) and data else None
    if first and not os.path.isdir(first):
        raise MissingDataDirectory(path, first, data_advice(user))


def data_advice(user: str) -> str:
    """How ``user`` is given another data directory: ``--data DIR`` for our CLIs (a ``user`` of the form
    ``fairseq-tree-X`` or ``fairseq-tree-X (Hub.from_pretrained)``), ``data_name_or_path=DIR`` for a hub class."""
    m = re.fullmatch(r"(fairseq-tree-\S+)(?: \((.+)\))?", user)
    if m is None:
        return f"data_name_or_path=DIR for {user}" if "from_pretrained" in user else f"--data DIR for {user}"
    how = f"{m.group(1)} --data DIR"
    return f"{how}; data_name_or_path=DIR for {m.group(2)}" if m.group(2) else how


@contextlib.contextmanager
def as_parser_backend(name: str) -> Iterator[None]:
    """Load a checkpoint as the preprocessing parser backend ``name`` (``--parser NAME --parser-model CKPT``, in
    fairseq-tree-preprocess, -classify and -parser-quality): a checkpoint of another task is refused naming the
    backend that reads it, a missing data directory naming ``--parser-data``."""
    try:
        yield
    except WrongCheckpoint as e:
        reads = " or ".join(t for t, b in PARSER_BACKENDS.items() if b == name)
        other = PARSER_BACKENDS.get(e.task)
        fix = (f"give it with --parser {other}" if other else
               f"it is no parser: run it with {RUNNERS.get(e.task, ('the tool of that task',))[0]}")
        raise WrongCheckpoint(f"{e.path} is a {e.task!r} checkpoint ({e.arch}); --parser {name} takes {reads} "
                              f"checkpoints: {fix}", e.path, e.task, e.arch) from None
    except MissingDataDirectory as e:
        raise MissingDataDirectory(e.path, e.data, "--parser-data DIR", e.cwd) from None


def _arch(state: dict) -> str:
    cfg = state.get("cfg")
    if cfg is not None and cfg.get("model") is not None:
        return f"arch {getattr(cfg['model'], 'arch', None) or cfg['model'].get('_name')}"
    return f"arch {getattr(state.get('args'), 'arch', '?')}"


def load_checkpoint(path: str, data: Optional[str] = None, device: Optional[str] = None,
                    expect: Sequence[str] = (), user: str = "this tool", task_options: Optional[dict] = None,
                    **overrides):
    """-> (models in eval mode on ``device``, cfg, task). ``data``: the data directory (dictionaries) when not
    the one recorded in the checkpoint; ``overrides``: further ``arg_overrides`` of the saved config;
    ``task_options``: task settings set even where the saved config predates them (fairseq's overrides skip
    keys it lacks). ``device``: ``cpu``, ``cuda`` or ``cuda:N`` (ValueError if unusable here, before anything
    is loaded), None: the GPU when there is one. ``expect``: the tasks ``user`` (a CLI or hub class, for the
    messages) runs. MissingDataDirectory (a FileNotFoundError) when the data directory is not there,
    saying what ``user`` passes instead."""
    from fairseq import checkpoint_utils  # (fairseq_tree, this module's package, has registered the plugin)

    device = resolve_device(device)
    if data:
        overrides["data"] = data
    state = checkpoint_utils.load_checkpoint_to_cpu(path, overrides)
    check_task(path, state, expect, user)
    _check_data(path, state, user)
    if task_options:
        from omegaconf import open_dict  # (fairseq's config library)

        with open_dict(state["cfg"]["task"]):
            for key, value in task_options.items():
                state["cfg"]["task"][key] = value
    models, cfg, task = checkpoint_utils.load_model_ensemble_and_task([path], arg_overrides=overrides, state=state)
    return [m.to(device).eval() for m in models], cfg, task


__all__ = ["PARSER_BACKENDS", "RUNNERS", "MissingDataDirectory", "WrongCheckpoint", "as_parser_backend", "check_task",
           "checkpoint_task", "data_advice", "load_checkpoint"]
