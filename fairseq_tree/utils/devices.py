"""Devices as the CLIs and hubs name them: ``cpu``, ``cuda`` or ``cuda:N``, checked before any work starts."""

import re

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


def device_arg(value: str) -> str:
    """argparse ``type=`` for ``--device``: :func:`check_device`, so a bad device stops the CLI before any work."""
    import argparse

    try:
        return check_device(value)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


__all__ = ["check_device", "device_arg"]
