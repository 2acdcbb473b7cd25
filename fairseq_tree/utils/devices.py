"""Devices as the CLIs and hubs name them: ``cpu``, ``cuda`` or ``cuda:N``, checked before any work starts.
fairseq's convention everywhere: the GPU when there is one (:func:`default_device`), ``--cpu`` or ``--device cpu``
to opt out (:func:`add_device_args`)."""

import re
from typing import Optional

_DEVICE = re.compile(r"(cpu|cuda(?::(\d+))?)")


def check_device(device: str) -> str:
    """``device`` if it is ``cpu``, ``cuda`` or ``cuda:N`` and usable here; else ValueError saying why (malformed;
    CUDA asked for where ``torch.cuda.is_available()`` is False; ``N`` not below the GPU count). Imports torch
    only for ``cuda``."""
    m = _DEVICE.fullmatch(device or "")
    if not m:
        raise ValueError(f"--device {device!r}: expected cpu, cuda or cuda:N")
    if device == "cpu":
        return device
    import torch

    if not torch.cuda.is_available():
        built = torch.version.cuda is not None
        raise ValueError(f"--device {device}: CUDA is not available on this machine (torch {torch.__version__}, "
                         f"{'built with CUDA ' + torch.version.cuda + ' but no GPU visible' if built else ''}"
                         f"{'' if built else 'a CPU-only build'}"
                         "); use --device cpu")
    index = int(m.group(2) or 0)
    if index >= torch.cuda.device_count():
        raise ValueError(f"--device {device}: only {torch.cuda.device_count()} CUDA device(s) here")
    return device


def default_device() -> str:
    """``cuda`` when torch sees a GPU, else ``cpu`` (what fairseq-train and fairseq-generate do without --cpu)."""
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def resolve_device(device: Optional[str]) -> str:
    """``device`` checked (:func:`check_device`), or :func:`default_device` when it is None or ``auto``."""
    return default_device() if device in (None, "", "auto") else check_device(device)


def add_device_args(p, what: str = "the model") -> None:
    """``--device cpu|cuda|cuda:N`` (default: the GPU when there is one) and fairseq's ``--cpu`` (the same as
    ``--device cpu``) on an argparse parser; ``args.device`` is None when neither is given (see
    :func:`resolve_device`)."""
    p.add_argument("--device", type=device_arg, default=None, metavar="cpu|cuda|cuda:N",
                   help=f"where {what} runs (default: cuda when a GPU is visible, else cpu)")
    p.add_argument("--cpu", dest="device", action="store_const", const="cpu",
                   help="run on the CPU even when a GPU is visible (= --device cpu, as fairseq's --cpu)")


def device_arg(value: str) -> str:
    """argparse ``type=`` for ``--device``: :func:`check_device`, so a bad device stops the CLI before any work."""
    import argparse

    try:
        return check_device(value)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


__all__ = ["add_device_args", "check_device", "default_device", "device_arg", "resolve_device"]
