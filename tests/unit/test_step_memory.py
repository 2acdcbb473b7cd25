"""fairseq_tree/utils/step_memory.py: the benchmarks' peak memory of a call, checked against hand-counted tensor
bytes."""

import torch

from fairseq_tree.utils import step_memory

MIB = 2**20


def test_cpu_peak_is_the_most_bytes_alive_at_once():
    """1 MiB, then 2 MiB more (3 MiB alive), both freed, then 1 MiB: the peak is 3 MiB, not the 4 allocated."""
    def fn():
        a = torch.empty(MIB // 4)  # fp32: 1 MiB
        b = torch.empty(MIB // 2)  # 2 MiB
        del a, b
        c = torch.empty(MIB // 4)
        del c

    assert step_memory.cpu_peak_bytes(fn) == 3 * MIB
    warm = []  # what the warm-up allocates (and keeps) is not the call's
    assert step_memory.cpu_peak_bytes(fn, warmup=lambda: warm.append(torch.empty(MIB))) == 3 * MIB
    assert step_memory.peak_mb(fn, "cpu") == 3.0


def test_cpu_peak_counts_only_growth_beyond_the_start():
    """A 4 MiB tensor from the warm-up freed, then 1 MiB allocated: nothing grew (peak 0). A 2 MiB result kept alive
    counts. (Whether the profiler sees the free of a tensor made before it started depends on the process's history,
    so no assertion rests on that.)"""
    held, kept = [], []

    def fn():
        held.pop()
        tmp = torch.empty(MIB // 4)
        del tmp

    assert step_memory.cpu_peak_bytes(fn, warmup=lambda: held.append(torch.empty(MIB))) == 0
    assert step_memory.cpu_peak_bytes(lambda: kept.append(torch.empty(MIB // 2))) == 2 * MIB


def test_cpu_peak_of_backward_holds_the_saved_activation():
    """y = relu(x @ w) on [256, 256] fp32 (256 KiB each): forward holds x @ w and y (512 KiB); backward's peak is
    above the forward result alone."""
    x = torch.randn(256, 256, requires_grad=True)
    w = torch.randn(256, 256, requires_grad=True)

    def step():
        torch.relu(x @ w).sum().backward()

    assert step_memory.cpu_peak_bytes(step) >= 2 * 256 * 256 * 4
