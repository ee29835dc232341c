"""Wall-clock timing: warm-up runs, then the median and minimum of N repeats.

The median is the figure reported (robust to the odd slow run on a shared machine); the
minimum is kept beside it as the least-disturbed run. The collector is paused while timing so
a collection that garbage from earlier work triggered is not billed to one engine; timing work
whose own garbage is part of its cost (importing a 100k-node graph) keeps it running.
"""

from __future__ import annotations

import gc
import random
import statistics
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
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
            result = fn()  # held past the clock: freeing it (a session's teardown) is untimed
            samples.append(time.perf_counter() - start)
            del result
    return Timing.of(samples)


#: Seed of the orders ``measure_together`` runs its functions in, round by round.
ORDER_SEED = 7


def measure_together(
    fns: Mapping[str, Callable[[], Any]], repeats: int, warmup: int = 2, *, pause_gc: bool = True
) -> dict[str, Timing]:
    """Time several functions in turns, one call of each per round, after ``warmup`` rounds.

    A shared VM's memory bandwidth drifts by up to 2x within a minute; timed one after the
    other, two copies of the same speed can differ by that much. In turns, the drift slows
    them alike, so their ratio holds even when their absolute times do not. Each round runs
    them in another order (the same orders every time): a call that always followed one
    reading the same inputs would find them in cache more often than the others (measured: a
    16 MB copy right after one of the same source ran 15% faster)."""
    for _ in range(warmup):
        for fn in fns.values():
            fn()
    samples: dict[str, list[float]] = {name: [] for name in fns}
    order = list(fns)
    shuffle = random.Random(ORDER_SEED).shuffle
    with collector_paused() if pause_gc else nullcontext():
        for _ in range(max(1, repeats)):
            shuffle(order)
            for name in order:
                fn = fns[name]
                start = time.perf_counter()
                result = fn()  # freed after the clock stops, as in ``measure``
                samples[name].append(time.perf_counter() - start)
                del result
    return {name: Timing.of(times) for name, times in samples.items()}


def measure_alternating(
    groups: Sequence[Mapping[str, Callable[[], Any]]],
    repeats: int,
    warmup: int,
    segments: int,
    settle_s: float,
) -> dict[str, Timing]:
    """Groups that must not run in turns with each other (onnxruntime's idle threads spin
    after its runs and would take a core from another engine's copy threads), each timed in
    turns within itself (``measure_together``), the groups alternating ``segments`` times
    with ``settle_s`` of sleep after each, so a drift of the VM's speed falls on every group,
    not on whichever ran last. ``repeats`` rounds in all per group, ``warmup`` per segment."""
    samples: dict[str, list[float]] = {}
    rounds = max(1, round(repeats / segments))
    for _ in range(max(1, segments)):
        for group in groups:
            for name, timing in measure_together(group, rounds, warmup).items():
                samples.setdefault(name, []).extend(timing.samples)
            time.sleep(settle_s)
    return {name: Timing.of(times) for name, times in samples.items()}


def ratio(ours: float | None, theirs: float | None) -> float | None:
    """``ours / theirs`` of two times (> 1: ours is slower), None when either is missing."""
    if ours is None or theirs is None or theirs <= 0:
        return None
    return ours / theirs
