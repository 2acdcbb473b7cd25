"""Structure arithmetic in fp32 under mixed precision: :func:`autocast_off`, the one way the modules leave autocast."""

import contextlib

import torch
from torch import Tensor


def autocast_off(t: Tensor):
    """A region with autocast off on ``t``'s device (structure arithmetic in fp32 under ``--amp``/``--fp16``
    autocast), or a plain context where autocast is not on: entering autocast's context costs host time in every
    layer of a host-bound step."""
    dev = t.device.type
    return torch.autocast(dev, enabled=False) if torch.is_autocast_enabled(dev) else contextlib.nullcontext()
