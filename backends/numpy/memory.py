"""Memory planning: buffers shared by tensors whose lifetimes do not overlap, and a pool that
recycles output buffers once the caller lets go of them.

Both exist for the same reason as onnxruntime's arena: a fresh buffer costs a page fault per
4 KiB on first touch, which on data movement alone is as slow as the copy itself.
"""

from __future__ import annotations

import heapq
import sys
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Lifetime:
    """A buffer's need: written first at step ``start``, read last at step ``end``."""

    start: int
    end: int
    nbytes: int


def assign_buffers(lifetimes: Sequence[Lifetime]) -> tuple[list[int], list[int]]:
    """Greedy best fit in order of first write: each lifetime gets the smallest free buffer
    that holds it (free: its last reader ran before this start), else the largest free buffer
    grown to hold it (a chain whose tensors grow step by step still ping-pongs between two),
    else a new buffer.

    Returns the buffer index of each lifetime and the size of each buffer.
    """
    order = sorted(range(len(lifetimes)), key=lambda i: (lifetimes[i].start, -lifetimes[i].nbytes))
    busy: list[tuple[int, int]] = []  # (end, buffer) heap
    free: list[int] = []
    sizes: list[int] = []
    assigned = [0] * len(lifetimes)
    for i in order:
        need = lifetimes[i]
        while busy and busy[0][0] < need.start:
            free.append(heapq.heappop(busy)[1])
        fits = [b for b in free if sizes[b] >= need.nbytes]
        if fits:
            buffer = min(fits, key=lambda b: sizes[b])
            free.remove(buffer)
        elif free:
            buffer = max(free, key=lambda b: sizes[b])
            free.remove(buffer)
            sizes[buffer] = need.nbytes
        else:
            buffer = len(sizes)
            sizes.append(need.nbytes)
        assigned[i] = buffer
        heapq.heappush(busy, (need.end, buffer))
    return assigned, sizes


class _Block:
    """A pooled buffer: ``raw`` for the plan's own views, ``handle`` (a second array object
    over the same memory) for everything handed to the caller."""

    __slots__ = ("raw", "handle")

    def __init__(self, nbytes: int) -> None:
        self.raw = np.empty(nbytes, dtype=np.uint8)
        self.handle = np.frombuffer(memoryview(self.raw), dtype=np.uint8)  # type: ignore[arg-type]

    def unused(self) -> bool:
        # NumPy points every view's base at the array that exposes the memory, here the
        # handle: one reference from this block and one from getrefcount means none outside
        return sys.getrefcount(self.handle) <= 2


class OutputPool:
    """Output buffers by size, reused once every array over them is gone (as an arena frees
    an output when its last OrtValue dies); ``limit`` per size caps what it keeps."""

    def __init__(self, limit: int = 4) -> None:
        self.limit = limit
        self._blocks: dict[int, list[_Block]] = {}

    def take(self, nbytes: int) -> tuple[np.ndarray, np.ndarray]:
        """(raw, handle) of a buffer of ``nbytes`` no caller array refers to."""
        blocks = self._blocks.setdefault(nbytes, [])
        for block in blocks:
            if block.unused():
                return block.raw, block.handle
        block = _Block(nbytes)
        if len(blocks) < self.limit:
            blocks.append(block)
        return block.raw, block.handle
