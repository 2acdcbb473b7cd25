"""What the model files share: architecture presets that fill only unset arguments, and building a registered
encoder model without a task (benchmarks, notebooks, tests)."""

import argparse

from fairseq_tree.inference.checkpoint import RUNNERS


def set_default(args, name: str, value) -> None:
    """Set ``args.name`` to ``value`` unless the user (or a more specific preset) already set it."""
    if getattr(args, name, None) is None:
        setattr(args, name, value)


def require_task(model: str, task, needs: str, task_name: str) -> None:
    """ValueError unless ``task`` has the attribute ``needs`` that ``model`` is built from (a tree2seq model under
    fairseq's ``translation`` task, a parser under fairseq-generate): names the task and what runs it."""
    if not hasattr(task, needs):
        raise ValueError(f"{model} models need the {task_name!r} task, not {type(task).__name__}: run "
                         f"fairseq-train --task {task_name}; its checkpoints run with {RUNNERS[task_name][0]} "
                         "(with --user-dir $(fairseq-tree-user-dir))")


def build_standalone_model(model_cls, encoder_cls, dictionary, arch: str, overrides: dict):
    """``model_cls(args, encoder_cls(args, dictionary))`` with ``args`` = ``overrides`` completed by the registered
    architecture ``arch`` (``dictionary``: a fairseq Dictionary; its bos/eos/pad define the token layout)."""
    from fairseq.models import ARCH_CONFIG_REGISTRY

    args = argparse.Namespace(**overrides)
    ARCH_CONFIG_REGISTRY[arch](args)
    args.arch = arch
    return model_cls(args, encoder_cls(args, dictionary))
