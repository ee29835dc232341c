"""Copies spread across threads. NumPy releases the GIL while it copies, so two threads move
data about twice as fast as one until memory bandwidth is the limit."""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from backends.numpy.moves import Move

#: Below this many destination bytes a phase stays on one thread: waking a pool thread costs
#: about 80 µs on a 2-core VM (measured: one thread wins at 2 MB, two win from 8 MB).
PARALLEL_BYTES = 6 << 20
#: Moves that write side by side (a JOIN on an inner axis) are done in blocks of rows of about
#: this many destination bytes, all moves per block, so each block of the output is written
#: while it is still in cache instead of once per input.
BLOCK_BYTES = 1 << 20

_pools: dict[int, ThreadPoolExecutor] = {}


def default_threads() -> int:
    """The CPUs this process may run on (a container's limit, not the host's), at most 8:
    copies saturate memory bandwidth before that."""
    try:
        count = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        count = os.cpu_count() or 1
    return max(1, min(count, 8))


def pool(workers: int) -> ThreadPoolExecutor:
    if workers not in _pools:
        _pools[workers] = ThreadPoolExecutor(workers, thread_name_prefix="dmlgraph-copy")
    return _pools[workers]


def split(destination: np.ndarray, source: np.ndarray, parts: int) -> list[Move]:
    """The copy as up to ``parts`` copies of disjoint destination blocks, cut along the
    outermost axis that divides evenly enough; one piece when none does."""
    source = np.broadcast_to(source, destination.shape)
    for axis, size in enumerate(destination.shape):
        if size >= 4 * parts or (size >= parts and size % parts == 0):
            bounds = [size * k // parts for k in range(parts + 1)]
            lead = (slice(None),) * axis
            return [
                (destination[lead + (slice(a, b),)], source[lead + (slice(a, b),)])
                for a, b in zip(bounds, bounds[1:])
            ]
    return [(destination, source)]


def distribute(phase: Sequence[Move], workers: int) -> list[list[Move]]:
    """Independent moves as one list per worker with about equal bytes each. Moves whose
    destinations share an outer axis are cut along it: each worker gets a range of it, in
    blocks, every move per block. Otherwise large moves are split and pieces go largest first
    to the least loaded worker. One list when the phase is too small to hand over."""
    total = sum(d.nbytes for d, _ in phase)
    if workers < 2 or total < PARALLEL_BYTES:
        return [list(phase)]
    rows = _shared_axis(phase, workers)
    if rows is not None:
        return _row_blocks(phase, rows, workers, total)
    share = total / workers
    pieces: list[Move] = []
    for destination, source in phase:
        if destination.nbytes > share / 2:
            pieces.extend(split(destination, source, workers))
        else:
            pieces.append((destination, source))
    lists: list[list[Move]] = [[] for _ in range(workers)]
    loads = [0] * workers
    for destination, source in sorted(pieces, key=lambda m: -m[0].nbytes):
        least = loads.index(min(loads))
        lists[least].append((destination, source))
        loads[least] += destination.nbytes
    return [moves for moves in lists if moves]


def _shared_axis(phase: Sequence[Move], workers: int) -> int | None:
    """The outermost axis on which every move has the same size, at least 2 per worker, with
    all axes before it the same too; None without one (or with one move: nothing to share)."""
    if len(phase) < 2:
        return None
    shapes = [d.shape for d, _ in phase]
    rank = len(shapes[0])
    if any(len(shape) != rank for shape in shapes):
        return None
    for axis in range(rank):
        size = shapes[0][axis]
        if any(shape[axis] != size for shape in shapes):
            return None
        if size >= 2 * workers:
            return axis
    return None


def _row_blocks(phase: Sequence[Move], axis: int, workers: int, total: int) -> list[list[Move]]:
    size = phase[0][0].shape[axis]
    lead = (slice(None),) * axis
    block = max(1, size * BLOCK_BYTES // total)
    sources = [np.broadcast_to(s, d.shape) for d, s in phase]
    bounds = [size * k // workers for k in range(workers + 1)]
    lists = []
    for low, high in zip(bounds, bounds[1:]):
        moves = []
        for start in range(low, high, block):
            rows = lead + (slice(start, min(high, start + block)),)
            moves.extend((d[rows], s[rows]) for (d, _), s in zip(phase, sources))
        lists.append(moves)
    return lists


def run_list(moves: Sequence[Move]) -> None:
    for destination, source in moves:
        np.copyto(destination, source)


class Batch:
    """Runs one list of moves per worker: the first on the calling thread, the rest on the
    pool, and returns when all are done."""

    __slots__ = ("lists", "executor")

    def __init__(self, lists: list[list[Move]]) -> None:
        self.lists = lists
        self.executor = pool(len(lists) - 1)

    def __call__(self) -> None:
        futures = [self.executor.submit(run_list, moves) for moves in self.lists[1:]]
        run_list(self.lists[0])
        for future in futures:
            future.result()
