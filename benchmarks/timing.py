"""Wall-clock timing: warm-up runs, then the median and minimum of N repeats.

The median is the figure reported (robust to the odd slow run on a shared machine); the
minimum is kept beside it as the least-disturbed run. The collector is paused while timing so
a collection that garbage from earlier work triggered is not billed to one engine; timing work
whose own garbage is part of its cost (importing a 100k-node graph) keeps it running.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Timing:
    """Seconds per call: median and minimum of ``samples``."""

    median: float
    min: float
    samples: tuple[float, ...]

    @classmethod
    def of(cls, samples: list[float]) -> Timing:
        return cls(statistics.median(samples), min(samples), tuple(samples))

    def gbps(self, nbytes: int) -> float:
        """``nbytes`` per median call, in GB/s (10^9 bytes)."""
        return nbytes / self.median / 1e9


@contextmanager
def collector_paused() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def measure(
    fn: Callable[[], Any], repeats: int, warmup: int = 2, *, pause_gc: bool = True
) -> Timing:
    """Time ``fn()`` ``repeats`` times after ``warmup`` untimed calls."""
    for _ in range(warmup):
        fn()
    samples = []
    with collector_paused() if pause_gc else nullcontext():
        for _ in range(max(1, repeats)):
            start = time.perf_counter()
            fn()
            samples.append(time.perf_counter() - start)
    return Timing.of(samples)


def ratio(ours: float | None, theirs: float | None) -> float | None:
    """``ours / theirs`` of two times (> 1: ours is slower), None when either is missing."""
    if ours is None or theirs is None or theirs <= 0:
        return None
    return ours / theirs
