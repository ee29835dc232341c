"""DirectML's padding index maps (DML_SPEC.md section 3): the one definition of each mode.

``i`` is the input-relative coordinate (output coordinate minus StartPadding) and ``n`` the
input size; each map gives the input coordinate an output element copies. The NumPy executor
runs them and the lowering decomposes padding with them, so both mean the same thing, including
DirectML's periodic meaning of reflection by more than the dimension.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from dmlgraph.dml.enums import PaddingMode


def _edge(i: np.ndarray, n: int) -> np.ndarray:
    return np.clip(i, 0, n - 1)


def _reflection(i: np.ndarray, n: int) -> np.ndarray:
    period = 2 * (n - 1)
    m = np.mod(i, period)
    return np.where(m < n, m, period - m)


def _symmetric(i: np.ndarray, n: int) -> np.ndarray:
    period = 2 * n
    m = np.mod(i, period)
    return np.where(m < n, m, period - 1 - m)


def _wrap(i: np.ndarray, n: int) -> np.ndarray:
    return np.mod(i, n)


INDEX_MAPS: dict[PaddingMode, Callable[[np.ndarray, int], np.ndarray]] = {
    PaddingMode.EDGE: _edge,
    PaddingMode.REFLECTION: _reflection,
    PaddingMode.SYMMETRIC: _symmetric,
    PaddingMode.WRAP: _wrap,
}


#: The period of each periodic mode's map, by the axis's size n (DML_SPEC's table): the map
#: repeats every period positions (EDGE has none), which the executor's moves use to copy a
#: border longer than a few periods as its first period repeated.
PERIODS: dict[PaddingMode, Callable[[int], int]] = {
    PaddingMode.WRAP: lambda n: n,
    PaddingMode.REFLECTION: lambda n: 2 * (n - 1),
    PaddingMode.SYMMETRIC: lambda n: 2 * n,
}


def source_indices(mode: PaddingMode, n: int, start: int, end: int) -> np.ndarray:
    """The input coordinate of each of the ``start + n + end`` output positions of one axis."""
    return INDEX_MAPS[mode](np.arange(-start, n + end, dtype=np.int64), n)
