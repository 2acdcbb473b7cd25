"""The benchmarks' timing loop: models alternated step by step, so that a shared machine's drift (another job
starting, a core's clock) lands on every model alike instead of on whichever ran in that block of time.

Used by ``bench_tree2seq.py`` and ``bench_induction.py``.
"""

import statistics
import time
from typing import Callable, Dict, List


def train_step(model, loss_fn: Callable[[], "torch.Tensor"], lr: float = 1e-4) -> Callable[[], None]:  # noqa: F821
    """-> a function running one train step of ``model`` (``loss_fn()``'s forward, backward, an Adam step with its
    own optimizer, created here)."""
    import torch

    opt = torch.optim.Adam(model.parameters(), lr=lr)

    def step():
        model.train()
        loss = loss_fn()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return step


def alternate(steps: Dict[str, Callable[[], None]], repeats: int, device: str = "cpu",
              warmup: int = 1, clock: Callable[[], float] = time.perf_counter) -> Dict[str, dict]:
    """Time the step functions alternately: ``warmup`` untimed-in-the-median rounds (the first step of each,
    timed apart: lazy initialisation, compilation), then ``repeats`` rounds in which every step runs once, the
    order rotated each round (so none always runs right after the same one). ``clock``: the wall clock, or on the
    CPU ``time.thread_time`` (the seconds this thread computed: a busy box's other jobs do not stretch them).

    Returns ``{name: {"median": s, "times": [s, ...], "first": s}}``: the median and every time of the timed
    rounds, and the first warm-up step's seconds."""
    names = list(steps)
    sync = device_sync(device)
    out = {name: {"times": [], "first": float("nan")} for name in names}
    for r in range(warmup + repeats):
        order = names[r % len(names):] + names[:r % len(names)]
        for name in order:
            sync()
            t0 = clock()
            steps[name]()
            sync()
            dt = clock() - t0
            if r == 0:
                out[name]["first"] = dt
            if r >= warmup:
                out[name]["times"].append(dt)
    for name in names:
        times: List[float] = out[name]["times"]
        out[name]["median"] = statistics.median(times) if times else float("nan")
    return out


def device_sync(device: str) -> Callable[[], None]:
    """The wait that makes a clock read after it see the device's work: CUDA's synchronize, nothing on the CPU."""
    if device == "cuda":
        import torch

        return torch.cuda.synchronize
    return lambda: None


def ratio(results: Dict[str, dict], a: str, b: str) -> float:
    """median(a) / median(b)."""
    return results[a]["median"] / results[b]["median"]


def paired_ratio(results: Dict[str, dict], a: str, b: str) -> float:
    """The median over the timed rounds of time(a) / time(b) within the round: the two steps of a round ran
    seconds apart, so a load that changes between rounds cancels out of each round's ratio."""
    pairs = [x / y for x, y in zip(results[a]["times"], results[b]["times"])]
    return statistics.median(pairs) if pairs else float("nan")
