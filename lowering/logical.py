"""Logical data-movement ops: what a Slice, Concat or Pad means, before DirectML's limits.

The lower pass turns each ONNX node into these, on the IR's own shapes and dtypes, with every
ONNX convention already resolved (negative indices, sentinels, clamping, negative pads, empty
results). The legalize pass then turns each into DirectML descriptors valid at the target
feature level, or decomposes it into simpler logical ops first. Keeping the two apart means the
ONNX rules and DirectML's tables each live in one place.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dmlgraph.dml.enums import PaddingMode


@dataclass(frozen=True)
class LogicalSlice:
    """``out[c] = in[start + step * c]`` per axis; every size >= 1, steps non-zero."""

    starts: tuple[int, ...]
    steps: tuple[int, ...]
    sizes: tuple[int, ...]

    def touched(self, in_shape: tuple[int, ...]) -> tuple[int, ...]:
        """Axes the slice changes (the others are copied whole, in order)."""
        return tuple(
            a
            for a, (start, step, size) in enumerate(zip(self.starts, self.steps, self.sizes))
            if not (start == 0 and step == 1 and size == in_shape[a])
        )

    def source_indices(self, axis: int) -> np.ndarray:
        start, step, size = self.starts[axis], self.steps[axis], self.sizes[axis]
        return start + step * np.arange(size, dtype=np.int64)


@dataclass(frozen=True)
class LogicalJoin:
    """Concatenation of non-empty inputs along ``axis``."""

    axis: int


@dataclass(frozen=True)
class LogicalPad:
    """Non-negative padding in one DirectML mode; ``value`` (a 0-d array of the data's dtype)
    fills CONSTANT padding."""

    mode: PaddingMode
    value: np.ndarray
    starts: tuple[int, ...]
    ends: tuple[int, ...]

    def touched(self) -> tuple[int, ...]:
        return tuple(a for a, (s, e) in enumerate(zip(self.starts, self.ends)) if s or e)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, LogicalPad)
            and (self.mode, self.starts, self.ends) == (other.mode, other.starts, other.ends)
            and self.value.dtype == other.value.dtype
            and self.value.tobytes() == other.value.tobytes()
        )

    def __hash__(self) -> int:
        return hash((self.mode, self.starts, self.ends, self.value.tobytes()))


LogicalOp = LogicalSlice | LogicalJoin | LogicalPad

