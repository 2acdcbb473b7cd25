"""``autocast_off``: structure arithmetic leaves autocast (fp32 under bf16 autocast), and enters nothing when
autocast is off."""

import contextlib

import torch

from fairseq_tree.utils.precision import autocast_off


def test_autocast_off_runs_fp32_inside_autocast_and_is_a_plain_context_outside():
    a, b = torch.randn(4, 4), torch.randn(4, 4)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert (a @ b).dtype == torch.bfloat16  # autocast on: half matmul
        with autocast_off(a):
            assert (a @ b).dtype == torch.float32
        assert (a @ b).dtype == torch.bfloat16  # restored on exit
    assert isinstance(autocast_off(a), contextlib.nullcontext)
