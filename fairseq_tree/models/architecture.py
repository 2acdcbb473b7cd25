"""What the model files share: architecture presets that fill only unset arguments, and building a registered
encoder model without a task (benchmarks, notebooks, tests)."""

import argparse


def set_default(args, name: str, value) -> None:
    """Set ``args.name`` to ``value`` unless the user (or a more specific preset) already set it."""
    if getattr(args, name, None) is None:
        setattr(args, name, value)


def build_standalone_model(model_cls, encoder_cls, dictionary, arch: str, overrides: dict):
    """``model_cls(args, encoder_cls(args, dictionary))`` with ``args`` = ``overrides`` completed by the registered
    architecture ``arch`` (``dictionary``: a fairseq Dictionary; its bos/eos/pad define the token layout)."""
    from fairseq.models import ARCH_CONFIG_REGISTRY

    args = argparse.Namespace(**overrides)
    ARCH_CONFIG_REGISTRY[arch](args)
    args.arch = arch
    return model_cls(args, encoder_cls(args, dictionary))
