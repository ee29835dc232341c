"""Type and rank legalization: how one op's tensors are viewed so a support row accepts them.

Slice, Concat and Pad only move bytes, so any view of the same bytes computes the same result
as long as every element the op moves is moved whole. Two kinds of view, both driven only by
the support tables of ``dmlgraph.dml.support``:

- a **type view** (``TypeView``): the IR dtype itself, or a same-width integer (bool as UINT8,
  bfloat16 as UINT16), or narrower integers with an extra innermost dimension (INT64 as pairs of
  UINT32), or wider integers over a trailing block the op leaves whole (UINT8 pairs as UINT16).
  Never an integer as a float: GPUs may flush denormals and quiet NaNs.
- a **rank view** (``Layout``): leading 1s up to the row's minimum, and adjacent dimensions
  the op leaves untouched coalesced into one when the row's maximum needs it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from dmlgraph.dml.enums import FeatureLevel, OperatorType, TensorDataType
from dmlgraph.dml.support import SUPPORT, SupportRow, support_row
from dmlgraph.dtypes import element_bits

_T = TensorDataType
#: Integer types by width in bytes: (unsigned, signed).
_INTEGERS: dict[int, tuple[TensorDataType, TensorDataType]] = {
    1: (_T.UINT8, _T.INT8),
    2: (_T.UINT16, _T.INT16),
    4: (_T.UINT32, _T.INT32),
    8: (_T.UINT64, _T.INT64),
}


@dataclass(frozen=True)
class TypeView:
    """The DML type an IR dtype is seen as. ``split`` > 1: one IR element is ``split`` DML
    elements (an extra innermost dimension); ``merge`` > 1: ``merge`` IR elements of a trailing
    block the op leaves whole make one DML element."""

    data_type: TensorDataType
    split: int = 1
    merge: int = 1

    def describe(self, dtype: np.dtype) -> str:
        name = self.data_type.name
        if self.split > 1:
            return f"{dtype} as {self.split} x {name} (an extra innermost dimension)"
        if self.merge > 1:
            return f"{dtype} as {name}, {self.merge} elements at a time"
        if self.data_type == native_type(dtype):
            return f"{dtype} as {name}"
        return f"{dtype} reinterpreted as {name} (same width)"


def native_type(dtype: np.dtype) -> TensorDataType | None:
    """The DML type holding this NumPy dtype's values, if there is one."""
    try:
        return TensorDataType.from_numpy(dtype)
    except ValueError:
        return None


def unsupported_dtype(dtype: np.dtype) -> str:
    """Why no view of ``dtype`` exists at all ("" when views exist)."""
    dtype = np.dtype(dtype)
    if dtype.kind in "OSU":  # "object" is NumPy's word for the arrays holding ONNX's STRING
        return "DirectML has no STRING tensors"
    if element_bits(dtype) < 8 * dtype.itemsize:  # the IR holds one a byte, DirectML packs
        # named from the tables themselves: INT4 and UINT4 (FL 6.3) are in none of their rows
        operators = ", ".join(operator.full_name for operator in SUPPORT)
        return f"{dtype} is a sub-byte type, which no table row of {operators} accepts"
    if dtype.itemsize not in (1, 2, 4, 8, 16):
        return f"{dtype} has an element size of {dtype.itemsize} bytes, no DML type fits it"
    return ""


def type_views(dtype: np.dtype) -> list[TypeView]:
    """Every view of ``dtype``, preferred first: native, same width, narrower, wider."""
    dtype = np.dtype(dtype)
    if unsupported_dtype(dtype):
        return []
    size = dtype.itemsize
    views: list[TypeView] = []
    native = native_type(dtype)
    if native is not None:
        views.append(TypeView(native))
    for candidate in _INTEGERS.get(size, ()):
        if candidate != native:
            views.append(TypeView(candidate))
    for width in (8, 4, 2, 1):
        if width < size:
            views += [TypeView(t, split=size // width) for t in _INTEGERS[width]]
    for width in (2, 4, 8):
        if width > size:
            views += [TypeView(t, merge=width // size) for t in _INTEGERS[width]]
    return views


@dataclass(frozen=True)
class Layout:
    """A rank view: for each DML dimension, the logical axis it is (a touched axis) or None
    with the size of the untouched block it stands for."""

    axes: tuple[int | None, ...]
    blocks: tuple[int, ...]  # the untouched size; 0 where the dimension is a touched axis
    #: (axis, mul, div): a merged view folded the trailing block into the innermost touched
    #: axis, whose coordinates then scale by mul / div (``scale``).
    scaled: tuple[int, int, int] | None = None

    def scale(self, axis: int, value: int) -> int | None:
        """A coordinate or length along ``axis`` in this view; None when it splits an element."""
        if self.scaled is None or self.scaled[0] != axis:
            return value
        _, mul, div = self.scaled
        return None if value * mul % div else value * mul // div

    def sizes(self, shape: Sequence[int]) -> tuple[int, ...]:
        return tuple(
            self.scale(a, shape[a]) or 0 if a is not None else b
            for a, b in zip(self.axes, self.blocks)
        )

    def divides(self, shape: Sequence[int]) -> bool:
        """Whether every element of a tensor of ``shape`` stays whole in this view."""
        return self.scaled is None or self.scale(self.scaled[0], shape[self.scaled[0]]) is not None


def plan_layout(
    shape: Sequence[int], touched: Sequence[int], view: TypeView, row: SupportRow
) -> Layout | str:
    """The rank view of a tensor of ``shape`` for an op changing only ``touched`` axes, or why
    the row cannot hold it. Every tensor of the op shares the untouched sizes."""
    touched_set = set(touched)
    items: list[tuple[int | None, int]] = [
        (a, 0) if a in touched_set else (None, int(n)) for a, n in enumerate(shape)
    ]
    if view.split > 1:
        items.append((None, view.split))
    scaled: tuple[int, int, int] | None = None
    if view.merge > 1:
        tail = 1
        while items and items[-1][0] is None:
            tail *= items.pop()[1]
        if not tail % view.merge:
            items.append((None, tail // view.merge))
        elif items:  # fold the block into the innermost touched axis; callers check its numbers
            scaled = (items[-1][0], tail, view.merge)  # type: ignore[assignment]
        else:
            return (
                f"viewing {view.merge} elements as one {view.data_type.name} needs a whole "
                f"number of them; there are {tail}"
            )
    if len(items) > row.max_dims:
        merged: list[tuple[int | None, int]] = []
        for axis, block in items:
            if axis is None and merged and merged[-1][0] is None:
                merged[-1] = (None, merged[-1][1] * block)
            else:
                merged.append((axis, block))
        if len(merged) > row.max_dims:
            merged = [item for item in merged if item != (None, 1)]
        items = merged
    if len(items) > row.max_dims:
        return (
            f"the {len(touched_set)} changed axes need {len(items)} dimensions even with the "
            f"untouched ones coalesced; the row allows {row.describe_dims()}"
        )
    while len(items) < row.min_dims:
        items.insert(0, (None, 1))
    return Layout(tuple(a for a, _ in items), tuple(b for _, b in items), scaled)


def row_text(operator: OperatorType, level: FeatureLevel) -> str:
    """The support-table row in force, as a reason names it."""
    row = support_row(operator, level)
    if row is None:
        first = next(lv for lv in FeatureLevel if support_row(operator, lv) is not None)
        return f"{operator.full_name} needs {first.full_name} (target {level.full_name})"
    types = ", ".join(sorted(t.name for t in row.data_types))
    return (
        f"{operator.full_name} at {level.full_name} accepts {row.describe_dims()} dimensions "
        f"of {types} (table row from {row.since.full_name})"
    )
