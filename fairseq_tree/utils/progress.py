"""Progress of a long pass (preprocessing, parsing, inducing, classifying, averaging): a tqdm bar (rate, ETA) on a
terminal, plain log lines every few seconds otherwise."""

from __future__ import annotations

import logging
import time
from typing import Iterable, Iterator, TypeVar

logger = logging.getLogger("fairseq_tree.progress")
T = TypeVar("T")


class Progress:
    """A pass's progress: a tqdm bar (rate, ETA) on a terminal, else a log line every ``every`` seconds and at
    the end (done/total, rate, ETA)."""

    def __init__(self, name: str, total: int, unit: str = "sent", every: float = 10.0):
        from tqdm import tqdm

        self.name, self.total, self.unit, self.every = name, total, unit, every
        self.bar = tqdm(total=total, desc=name, unit=unit, disable=None, leave=False, dynamic_ncols=True)
        self.done, self.t0 = 0, time.perf_counter()
        self.last_log = self.t0

    def update(self, n: int) -> None:
        self.done += n
        self.bar.update(n)
        now = time.perf_counter()
        if self.bar.disable and (now - self.last_log >= self.every or self.done >= self.total):
            self.last_log = now
            rate = self.done / max(now - self.t0, 1e-9)
            eta = (self.total - self.done) / rate if rate > 0 else float("inf")
            logger.info("%s: %d/%d %s (%.0f %s/s, ETA %.0fs)", self.name, self.done, self.total, self.unit,
                        rate, self.unit, eta)

    def close(self) -> None:
        self.bar.close()


def iterate(items: Iterable[T], name: str, total: int, unit: str) -> Iterator[T]:
    """``items`` with a :class:`Progress` of one step per item (closed when the loop ends, even early)."""
    progress = Progress(name, total, unit=unit)
    try:
        for item in items:
            yield item
            progress.update(1)
    finally:
        progress.close()
