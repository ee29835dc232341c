"""NumPy kernels for the small ops exporters chain to compute shapes, so import folds them.

Exporters compute Slice starts and Pad pads at run time through Shape -> Gather -> Cast ->
Ceil -> Sub -> Unsqueeze -> Concat chains, hundreds of nodes per model. Evaluating each through
``onnx.reference`` costs a node proto, an evaluator and its checks (about 100 µs a node, most of
a real model's import). These kernels compute the same values directly, at import, before the
nodes ever enter the IR.

Each kernel declares the since_versions it covers (a newer schema falls to ``onnx.reference``)
and returns None for anything outside the plain, fully specified cases: an unusual dtype, an
out-of-range index or axis, an integer division by zero, a cast whose value does not fit. Such a
node is imported as usual and folding evaluates it with ``onnx.reference``, which also words any
error. So a kernel never decides an edge case; it only skips the interpreter on plain ones.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np

from dmlgraph.dtypes import ELEM_TYPE_TO_DTYPE

Inputs = Sequence[np.ndarray | None]  # None: an omitted optional input
Result = tuple[np.ndarray, ...] | None
KernelFn = Callable[[Inputs, Mapping[str, Any], int], Result]

#: The dtypes a kernel computes on: NumPy's own, whose arithmetic matches ONNX's (integers wrap,
#: floats are IEEE). ml_dtypes types (bfloat16, float8, int4...) and strings go to the reference.
PLAIN_DTYPES: frozenset[np.dtype] = frozenset(
    np.dtype(t)
    for t in (
        "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
        "float16", "float32", "float64",
    )
)
_NUMBERS = PLAIN_DTYPES - {np.dtype("bool")}
_FLOATS = frozenset(np.dtype(t) for t in ("float16", "float32", "float64"))
_INDICES = frozenset(np.dtype(t) for t in ("int32", "int64"))
_INT64 = np.dtype("int64")
_INT64_MAX = 2**63 - 1


@dataclass(frozen=True)
class Kernel:
    """``fn`` computes ``op_type`` for since_versions ``first``..``last`` (inclusive)."""

    op_type: str
    first: int
    last: int
    fn: KernelFn

    def covers(self, version: int) -> bool:
        return self.first <= version <= self.last


def _plain(*arrays: np.ndarray | None, of: frozenset[np.dtype] = PLAIN_DTYPES) -> bool:
    return all(a is not None and a.dtype in of for a in arrays)


def _ints(array: np.ndarray | None, rank: int | None = 1) -> list[int] | None:
    """A 1-D (or ``rank``-D) int64 tensor as Python ints; None if it is anything else."""
    if array is None or array.dtype != _INT64 or (rank is not None and array.ndim != rank):
        return None
    return [int(v) for v in array.reshape(-1)]


def _axis(axis: int, rank: int) -> int | None:
    """``axis`` in [-rank, rank) made non-negative; None when out of range."""
    return axis + rank if -rank <= axis < 0 else axis if 0 <= axis < rank else None


# ----------------------------------------------------------------------------- shapes


def _shape(inputs: Inputs, attrs: Mapping[str, Any], version: int) -> Result:
    rank = inputs[0].ndim  # type: ignore[union-attr]
    # Shape-15's start/end: negative counts from the back, then clamped to [0, rank]
    start, end = (
        min(max(v + rank if v < 0 else v, 0), rank)
        for v in (attrs.get("start", 0), attrs.get("end", rank))
    )
    return (np.array(inputs[0].shape[start:end], dtype=_INT64),)  # type: ignore[union-attr]


def _size(inputs: Inputs, attrs: Mapping[str, Any], version: int) -> Result:
    return (np.array(inputs[0].size, dtype=_INT64),)  # type: ignore[union-attr]


def _identity(inputs: Inputs, attrs: Mapping[str, Any], version: int) -> Result:
    return (inputs[0],) if _plain(inputs[0]) else None  # type: ignore[return-value]


def _gather(inputs: Inputs, attrs: Mapping[str, Any], version: int) -> Result:
    data, indices = inputs
    if not _plain(data) or not _plain(indices, of=_INDICES) or data.ndim == 0:  # type: ignore
        return None
    axis = _axis(attrs.get("axis", 0), data.ndim)  # type: ignore[union-attr]
    if axis is None or (version < 11 and attrs.get("axis", 0) < 0):
        return None
    # negative indices count from the back since Gather-11
    low = -data.shape[axis] if version >= 11 else 0  # type: ignore[union-attr]
    if indices.size and not (low <= indices.min() and indices.max() < data.shape[axis]):  # type: ignore
        return None
    return (np.asarray(np.take(data, indices.astype(np.int64), axis=axis)),)  # type: ignore


def _unsqueeze(inputs: Inputs, attrs: Mapping[str, Any], version: int) -> Result:
    data = inputs[0]
    axes = list(attrs.get("axes", ())) if version < 13 else _ints(inputs[1])
    if not _plain(data) or not axes or (version < 11 and min(axes) < 0):
        return None
    rank = data.ndim + len(axes)  # type: ignore[union-attr]
    normal = [_axis(a, rank) for a in axes]
    if None in normal or len(set(normal)) != len(normal):
        return None
    return (np.expand_dims(data, tuple(normal)),)  # type: ignore[arg-type]


def _squeeze(inputs: Inputs, attrs: Mapping[str, Any], version: int) -> Result:
    data = inputs[0]
    if not _plain(data):
        return None
    if version < 13:
        axes: list[int] | None = list(attrs.get("axes", ()))
    else:
        axes = [] if len(inputs) < 2 or inputs[1] is None else _ints(inputs[1])
    if axes is None or (version < 11 and axes and min(axes) < 0):
        return None
    if not axes:  # no axes: every size-1 axis
        return (data.reshape([d for d in data.shape if d != 1]),)  # type: ignore[union-attr]
    normal = [_axis(a, data.ndim) for a in axes]  # type: ignore[union-attr]
    if None in normal or len(set(normal)) != len(normal):
        return None
    if any(data.shape[a] != 1 for a in normal):  # type: ignore[union-attr,index]
        return None
    return (np.squeeze(data, tuple(normal)),)  # type: ignore[arg-type]


def _concat(inputs: Inputs, attrs: Mapping[str, Any], version: int) -> Result:
    if not inputs or not _plain(*inputs) or "axis" not in attrs:
        return None
    first = inputs[0]
    rank = first.ndim  # type: ignore[union-attr]
    axis = attrs["axis"]
    if rank == 0 or (version < 11 and axis < 0):
        return None
    axis = _axis(axis, rank)
    if axis is None or any(
        a.dtype != first.dtype  # type: ignore[union-attr]
        or a.ndim != rank  # type: ignore[union-attr]
        or any(d != e for k, (d, e) in enumerate(zip(a.shape, first.shape)) if k != axis)  # type: ignore
        for a in inputs
    ):
        return None
    return (np.concatenate(inputs, axis=axis),)  # type: ignore[arg-type]


def _slice(inputs: Inputs, attrs: Mapping[str, Any], version: int) -> Result:
    """Slice-10..13 by the spec's rule: a negative start or end counts from the back; then for
    a positive step both clamp to [0, dim], for a negative step the start to [0, dim - 1] and
    the end to [-1, dim - 1] (-1: through index 0). A negative step with end INT64_MAX, which
    onnxruntime reads differently, goes to the reference."""
    data, starts, ends = inputs[0], inputs[1], inputs[2]
    axes_in = inputs[3] if len(inputs) > 3 else None
    steps_in = inputs[4] if len(inputs) > 4 else None
    if not _plain(data) or data.ndim == 0 or not _plain(starts, ends, of=_INDICES):  # type: ignore
        return None
    params = [starts, ends] + [p for p in (axes_in, steps_in) if p is not None]
    if any(p.ndim != 1 or p.dtype != starts.dtype or p.size != starts.size for p in params):  # type: ignore
        return None
    rank = data.ndim  # type: ignore[union-attr]
    count = starts.size  # type: ignore[union-attr]
    axes = [_axis(a, rank) for a in axes_in.tolist()] if axes_in is not None else list(range(count))  # type: ignore
    steps = steps_in.tolist() if steps_in is not None else [1] * count  # type: ignore
    if None in axes or len(set(axes)) != len(axes) or count > rank or 0 in steps:
        return None
    index: list[slice] = [slice(None)] * rank
    for axis, start, end, step in zip(axes, starts.tolist(), ends.tolist(), steps):  # type: ignore
        dim = data.shape[axis]  # type: ignore[union-attr,index]
        start, end = (v + dim if v < 0 else v for v in (start, end))
        if step > 0:
            index[axis] = slice(min(max(start, 0), dim), min(max(end, 0), dim), step)  # type: ignore
        elif end == _INT64_MAX:
            return None
        else:
            start, end = min(max(start, 0), dim - 1), min(max(end, -1), dim - 1)
            index[axis] = slice(start, None if end < 0 else end, step)  # type: ignore[index]
    return (data[tuple(index)],)  # type: ignore[index]


def _reshape(inputs: Inputs, attrs: Mapping[str, Any], version: int) -> Result:
    data, target = inputs[0], _ints(inputs[1])
    if not _plain(data) or target is None:
        return None
    allowzero = attrs.get("allowzero", 0) if version >= 14 else 0
    if allowzero and 0 in target and -1 in target:
        return None  # invalid per the spec
    shape = list(target)
    for k, d in enumerate(target):
        if d == 0 and not allowzero:
            if k >= data.ndim:  # type: ignore[union-attr]
                return None
            shape[k] = data.shape[k]  # type: ignore[union-attr]
        elif d < -1:
            return None
    if shape.count(-1) > 1:
        return None
    if -1 in shape:
        known = int(np.prod([d for d in shape if d != -1], dtype=np.int64))
        if known == 0 or data.size % known:  # type: ignore[union-attr]
            return None
        shape[shape.index(-1)] = data.size // known  # type: ignore[union-attr]
    if int(np.prod(shape, dtype=np.int64)) != data.size:  # type: ignore[union-attr]
        return None
    return (data.reshape(shape),)  # type: ignore[union-attr]


def _transpose(inputs: Inputs, attrs: Mapping[str, Any], version: int) -> Result:
    data = inputs[0]
    if not _plain(data):
        return None
    perm = attrs.get("perm", tuple(reversed(range(data.ndim))))  # type: ignore[union-attr]
    if sorted(perm) != list(range(data.ndim)):  # type: ignore[union-attr]
        return None
    return (np.transpose(data, perm),)  # type: ignore[arg-type]


def _constant_of_shape(inputs: Inputs, attrs: Mapping[str, Any], version: int) -> Result:
    shape = _ints(inputs[0])
    value = attrs.get("value")
    if shape is None or any(d < 0 for d in shape):
        return None
    if value is None:
        value = np.zeros(1, dtype=np.float32)
    if not isinstance(value, np.ndarray) or value.size != 1 or not _plain(value):
        return None
    return (np.full(shape, value.reshape(()), dtype=value.dtype),)


# ----------------------------------------------------------------------------- arithmetic


def _same_numbers(a: np.ndarray | None, b: np.ndarray | None) -> bool:
    return _plain(a, b, of=_NUMBERS) and a.dtype == b.dtype  # type: ignore[union-attr]


def _binary(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> KernelFn:
    """Add/Sub/Mul from version 7: same dtypes, NumPy (multidirectional) broadcasting, integers
    wrapping as in onnxruntime's C++."""

    def kernel(inputs: Inputs, attrs: Mapping[str, Any], version: int) -> Result:
        a, b = inputs
        if not _same_numbers(a, b):
            return None
        with np.errstate(all="ignore"):
            return (np.asarray(fn(a, b), dtype=a.dtype),)  # type: ignore[arg-type,union-attr]

    return kernel


def _div(inputs: Inputs, attrs: Mapping[str, Any], version: int) -> Result:
    a, b = inputs
    if not _same_numbers(a, b):
        return None
    if a.dtype in _FLOATS:  # type: ignore[union-attr]
        with np.errstate(all="ignore"):
            return (np.asarray(np.divide(a, b), dtype=a.dtype),)  # type: ignore[union-attr]
    if not np.all(b):
        return None  # integer division by zero: undefined
    if a.dtype.kind == "i" and np.any((a == np.iinfo(a.dtype).min) & (b == -1)):  # type: ignore
        return None  # the one quotient that overflows: undefined
    # integers truncate toward zero, as C++ does; NumPy's floor_divide rounds down
    with np.errstate(all="ignore"):
        quotient = np.floor_divide(a, b)
        inexact = (np.remainder(a, b) != 0) & ((a < 0) ^ (b < 0))  # type: ignore[operator]
        return (np.asarray(quotient + inexact.astype(quotient.dtype), dtype=a.dtype),)  # type: ignore


def _rounding(fn: Callable[[np.ndarray], np.ndarray]) -> KernelFn:
    """Ceil/Floor: floats only."""

    def kernel(inputs: Inputs, attrs: Mapping[str, Any], version: int) -> Result:
        x = inputs[0]
        return (np.asarray(fn(x)),) if _plain(x, of=_FLOATS) else None  # type: ignore[arg-type]

    return kernel


def _clip(inputs: Inputs, attrs: Mapping[str, Any], version: int) -> Result:
    x = inputs[0]
    if not _plain(x, of=_NUMBERS):
        return None
    if version < 11:
        if x.dtype != np.float32:  # type: ignore[union-attr]
            return None  # Clip-6's float attributes on other types: left to the reference
        limits = np.finfo(np.float32)
        # Clip-6's defaults are float's lowest and highest finite values, not infinities
        bounds = [np.asarray(attrs.get(k, d), dtype=x.dtype)  # type: ignore[union-attr]
                  for k, d in (("min", limits.min), ("max", limits.max))]
    else:
        bounds = []
        for k in (1, 2):
            bound = inputs[k] if len(inputs) > k else None
            if bound is not None and (bound.dtype != x.dtype or bound.size != 1):  # type: ignore
                return None
            bounds.append(bound)  # type: ignore[arg-type]
    low, high = bounds
    result = x if low is None else np.maximum(x, low.reshape(()))  # type: ignore[union-attr]
    # min > max: every value becomes max (the spec's rule; np.minimum after np.maximum gives it)
    result = result if high is None else np.minimum(result, high.reshape(()))  # type: ignore
    return (np.asarray(result, dtype=x.dtype),)  # type: ignore[union-attr]


def _cast(inputs: Inputs, attrs: Mapping[str, Any], version: int) -> Result:
    x = inputs[0]
    target = ELEM_TYPE_TO_DTYPE.get(attrs.get("to", -1))
    if not _plain(x) or target not in PLAIN_DTYPES:
        return None
    if target.kind in "iu" and x.size:  # type: ignore[union-attr]
        # a value the target cannot hold is undefined behaviour in C++: leave it to the
        # reference (and its note)
        info = np.iinfo(target)  # type: ignore[arg-type]
        if x.dtype in _FLOATS and not np.all(np.isfinite(x)):  # type: ignore[union-attr]
            return None
        low, high = x.min(), x.max()  # type: ignore[union-attr]
        if x.dtype in _FLOATS:  # type: ignore[union-attr]
            low, high = np.trunc(low), np.trunc(high)
        if x.dtype != np.bool_ and (int(low) < info.min or int(high) > info.max):  # type: ignore
            return None
    with np.errstate(over="ignore"):  # a float too large for a narrower float becomes inf
        return (x.astype(target),)  # type: ignore[union-attr]


#: (op_type, first since_version, last since_version, kernel). The last is the newest schema
#: this was checked against (onnx 1.23); a newer one goes to onnx.reference until reviewed.
_TABLE: tuple[tuple[str, int, int, KernelFn], ...] = (
    ("Shape", 1, 25, _shape),
    ("Size", 1, 25, _size),
    ("Identity", 1, 25, _identity),
    ("Gather", 1, 13, _gather),
    ("Unsqueeze", 1, 25, _unsqueeze),
    ("Squeeze", 1, 25, _squeeze),
    ("Concat", 4, 13, _concat),
    ("Slice", 10, 13, _slice),
    ("Reshape", 5, 25, _reshape),
    ("Transpose", 1, 25, _transpose),
    ("ConstantOfShape", 9, 25, _constant_of_shape),
    ("Add", 7, 14, _binary(np.add)),
    ("Sub", 7, 14, _binary(np.subtract)),
    ("Mul", 7, 14, _binary(np.multiply)),
    ("Div", 7, 14, _div),
    ("Ceil", 6, 13, _rounding(np.ceil)),
    ("Floor", 6, 13, _rounding(np.floor)),
    ("Clip", 6, 13, _clip),
    ("Cast", 6, 25, _cast),
)

KERNELS: Mapping[str, Kernel] = MappingProxyType(
    {op: Kernel(op, first, last, fn) for op, first, last, fn in _TABLE}
)


def kernel_for(op_type: str, domain: str, version: int) -> Kernel | None:
    """The kernel that computes this ONNX op at this since_version, if there is one."""
    kernel = KERNELS.get(op_type) if domain == "" else None
    return kernel if kernel is not None and kernel.covers(version) else None
