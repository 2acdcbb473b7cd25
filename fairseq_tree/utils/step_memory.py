"""Peak memory of one call, measured the same way on CPU and CUDA: the most tensor bytes alive at once during
the call, beyond those alive when it began. Shared by the ``bench_*.py`` scripts (imported from beside them).

CUDA: the caching allocator's ``max_memory_allocated`` minus ``memory_allocated`` before the call.
CPU: torch's profiler with ``profile_memory=True`` records every allocation and free of the CPU allocator as a
``[memory]`` event with its signed size; the running sum's maximum over the call is the peak. The profiler does
not see the free of a block allocated before it started, so the call's ``warmup`` (a train step before the
measured one) runs under the profiler too: what the measured step frees of the warm-up's tensors (old
gradients, activations) is then counted as on CUDA. (The peak RSS of a fresh process that these scripts used
before counts what the C allocator caches and returns to the OS, not tensors: on CPU it ranked a transformer's
step above a tree2seq step that allocates strictly more.)
"""

from itertools import accumulate
from typing import Callable, Optional

import torch

_MARK = "step_memory.measured"


def cpu_peak_bytes(fn: Callable[[], object], warmup: Optional[Callable[[], object]] = None) -> int:
    """Peak growth of live CPU tensor bytes while ``fn()`` runs (0 if it only frees), after ``warmup()``."""
    from torch.profiler import ProfilerActivity, profile, record_function

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        if warmup is not None:
            warmup()
        with record_function(_MARK):
            fn()
    events = prof.profiler.kineto_results.events()
    start = min(e.start_ns() for e in events if e.name() == _MARK)
    deltas = sorted(((e.start_ns(), e.nbytes()) for e in events
                     if e.name() == "[memory]" and e.device_type() == torch.autograd.DeviceType.CPU
                     and e.start_ns() >= start), key=lambda t: t[0])  # stable: same-ns events keep their order
    return max(accumulate((b for _, b in deltas), initial=0))


def cuda_peak_bytes(fn: Callable[[], object], warmup: Optional[Callable[[], object]] = None) -> int:
    """Peak growth of the CUDA caching allocator's allocated bytes while ``fn()`` runs, after ``warmup()``."""
    if warmup is not None:
        warmup()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    fn()
    torch.cuda.synchronize()
    return torch.cuda.max_memory_allocated() - base


def peak_mb(fn: Callable[[], object], device: str, warmup: Optional[Callable[[], object]] = None) -> float:
    """Peak extra MiB of tensors alive during ``fn()`` on ``device`` ("cpu" or "cuda"), after ``warmup()``."""
    peak = cuda_peak_bytes if device == "cuda" else cpu_peak_bytes
    return peak(fn, warmup) / 2**20
