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

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np

from dmlgraph.dtypes import ELEM_TYPE_TO_DTYPE, PLAIN_DTYPES
from dmlgraph.ir import frozen_array

Inputs = Sequence[np.ndarray | None]  # None: an omitted optional input
Result = tuple[np.ndarray, ...] | None
KernelFn = Callable[[Inputs, Mapping[str, Any], int], Result]

# The dtypes a kernel computes on are ``PLAIN_DTYPES``: NumPy's own, whose arithmetic matches
# ONNX's (integers wrap, floats are IEEE). ml_dtypes types (bfloat16, float8, int4...) and
# strings go to the reference, except through kernels that only move elements (``_moved``).
_NUMBERS = PLAIN_DTYPES - {np.dtype("bool")}
_FLOATS = frozenset(np.dtype(t) for t in ("float16", "float32", "float64"))
_INDICES = frozenset(np.dtype(t) for t in ("int32", "int64"))
_INT64 = np.dtype("int64")
_FLOAT16, _FLOAT64 = np.dtype("float16"), np.dtype("float64")
#: Slice ends that onnxruntime's CPU kernel reads as "through index 0" with a negative step, by
#: name: ONNX clamps them to dim - 1 like any large end, so the slice stops short of it
#: (measured, onnxruntime 1.32: INT32_MAX - 1, INT32_MAX + 1 and INT64_MAX - 1 follow ONNX).
#: Its DirectML provider's SliceHelper makes such a window empty, as ONNX does (read, not run).
ORT_REVERSE_TO_START_ENDS: Mapping[int, str] = MappingProxyType(
    {2**31 - 1: "INT32_MAX", 2**63 - 1: "INT64_MAX"}
)
FILL_ZERO = frozen_array(np.zeros(1, dtype=np.float32))  # ConstantOfShape's default value
#: (lowest, highest) of each integer dtype as Python ints (np.iinfo builds a new object per call)
_IINFO = {
    dtype: (int(np.iinfo(dtype).min), int(np.iinfo(dtype).max))
    for dtype in PLAIN_DTYPES
    if dtype.kind in "iu"
}
#: Up to this many elements a kernel checks values on a Python list: shape tensors hold a
#: handful, and a NumPy reduction costs ~1.3 µs a call where ``tolist`` costs 0.07.
_SMALL = 64


def ort_reversed_end(end: int, step: int) -> str:
    """The name of ``end`` where onnxruntime reads it otherwise than ONNX with ``step``
    (``ORT_REVERSE_TO_START_ENDS``), else ""."""
    return ORT_REVERSE_TO_START_ENDS.get(end, "") if step < 0 else ""


@dataclass(frozen=True)
class Kernel:
    """``fn`` computes ``op_type`` for since_versions ``first``..``last`` (inclusive)."""

    op_type: str
    first: int
    last: int
    fn: KernelFn

    def covers(self, version: int) -> bool:
        return self.first <= version <= self.last


def _plain(array: np.ndarray | None, of: frozenset[np.dtype] = PLAIN_DTYPES) -> np.ndarray | None:
    """``array`` when it is given and of a dtype in ``of``; else None."""
    return array if array is not None and array.dtype in of else None


def _moved(array: np.ndarray | None) -> np.ndarray | None:
    """``array`` of any dtype, for kernels that only move elements (Slice, Concat, Gather,
    Reshape...): no arithmetic, so ml_dtypes types and strings move as NumPy's own do. Left
    to ``onnx.reference``, a bfloat16 Slice came out by Python's slicing, not ONNX's (a
    start of -10 and an end of -20 with step -1 over 4 elements gave [], not [element 0]),
    and folding adopted that shape."""
    return array


def _port(inputs: Inputs, port: int) -> np.ndarray | None:
    """Input ``port``, None when omitted (empty name, or beyond the inputs given)."""
    return inputs[port] if port < len(inputs) else None


def _ints(array: np.ndarray | None) -> list[int] | None:
    """A 1-D int64 tensor as Python ints; None if it is anything else."""
    if array is None or array.dtype != _INT64 or array.ndim != 1:
        return None
    return array.tolist()  # Python ints, in one C call (iterating makes NumPy scalars)


def _extremes(array: np.ndarray, finite: bool = False) -> tuple[Any, Any] | None:
    """(min, max) of a non-empty array as Python numbers; None when ``finite`` is asked for
    and some value is not (inf, NaN)."""
    if array.size <= _SMALL:
        values = array.ravel().tolist()
        if finite and not all(map(math.isfinite, values)):
            return None
        return min(values), max(values)
    if finite and not np.isfinite(array).all():
        return None
    return array.min().item(), array.max().item()


def _axis(axis: int, rank: int) -> int | None:
    """``axis`` in [-rank, rank) made non-negative; None when out of range."""
    return axis + rank if -rank <= axis < 0 else axis if 0 <= axis < rank else None


def _axes(axes: Sequence[int], rank: int) -> tuple[int, ...] | None:
    """Distinct axes, each in [-rank, rank), made non-negative; None otherwise."""
    normal: list[int] = []
    for a in axes:  # a loop: kernels ask for every Unsqueeze, Squeeze and Slice
        axis = _axis(a, rank)
        if axis is None:
            return None
        normal.append(axis)
    return tuple(normal) if len(set(normal)) == len(normal) else None


# ----------------------------------------------------------------------------- shapes


def shape_range(rank: int, attrs: Mapping[str, Any]) -> slice:
    """The dimensions a Shape node gives of a rank-``rank`` input: Shape-15's start/end, where
    a negative one counts from the back, then both clamp to [0, rank]."""
    if not attrs:
        return slice(0, rank)
    start, end = attrs.get("start", 0), attrs.get("end", rank)
    start = min(max(start + rank if start < 0 else start, 0), rank)
    end = min(max(end + rank if end < 0 else end, 0), rank)
    return slice(start, end)


def _shape(inputs: Inputs, attrs: Mapping[str, Any], version: int) -> Result:
    data = _port(inputs, 0)
    if data is None:
        return None
    if not attrs:
        return (np.array(data.shape, dtype=_INT64),)
    return (np.array(data.shape[shape_range(data.ndim, attrs)], dtype=_INT64),)


def _size(inputs: Inputs, attrs: Mapping[str, Any], version: int) -> Result:
    data = _port(inputs, 0)
    return None if data is None else (np.array(data.size, dtype=_INT64),)


def _identity(inputs: Inputs, attrs: Mapping[str, Any], version: int) -> Result:
    data = _moved(_port(inputs, 0))
    return None if data is None else (data,)


def _gather(inputs: Inputs, attrs: Mapping[str, Any], version: int) -> Result:
    data, indices = _moved(_port(inputs, 0)), _plain(_port(inputs, 1), of=_INDICES)
    if data is None or indices is None or data.ndim == 0:
        return None
    given = attrs.get("axis", 0)
    axis = _axis(given, data.ndim)
    if axis is None or (version < 11 and given < 0):
        return None
    # negative indices count from the back since Gather-11
    low = -data.shape[axis] if version >= 11 else 0
    if indices.size:
        first, last = _extremes(indices)  # type: ignore[misc]  # not None: finite not asked
        if not (low <= first and last < data.shape[axis]):
            return None
    # in range, an index array at ``axis`` selects as np.take does (a negative one from the
    # back), at a fraction of its cost; a 0-d one indexes as an int, giving a view (or a
    # scalar), so that result is copied, as np.take's always is
    taken = data[(slice(None),) * axis + (indices,)]
    return (np.array(taken) if indices.ndim == 0 else taken,)


def _unsqueeze(inputs: Inputs, attrs: Mapping[str, Any], version: int) -> Result:
    data = _moved(_port(inputs, 0))
    axes = list(attrs.get("axes", ())) if version < 13 else _ints(_port(inputs, 1))
    if data is None or not axes or (version < 11 and min(axes) < 0):
        return None
    rank = data.ndim + len(axes)
    normal = _axes(axes, rank)
    if normal is None:
        return None
    sizes = iter(data.shape)  # np.expand_dims' result, as a reshape (a quarter of its cost)
    return (data.reshape([1 if k in normal else next(sizes) for k in range(rank)]),)


def _squeeze(inputs: Inputs, attrs: Mapping[str, Any], version: int) -> Result:
    data = _moved(_port(inputs, 0))
    if data is None:
        return None
    if version < 13:
        axes: list[int] | None = list(attrs.get("axes", ()))
    else:
        given = _port(inputs, 1)
        axes = [] if given is None else _ints(given)
    if axes is None or (version < 11 and axes and min(axes) < 0):
        return None
    if not axes:  # no axes: every size-1 axis
        return (data.reshape([d for d in data.shape if d != 1]),)
    normal = _axes(axes, data.ndim)
    if normal is None or any(data.shape[a] != 1 for a in normal):
        return None
    return (np.squeeze(data, normal),)


def _concat(inputs: Inputs, attrs: Mapping[str, Any], version: int) -> Result:
    parts = [_moved(a) for a in inputs]
    arrays = [a for a in parts if a is not None]
    if not arrays or len(arrays) != len(parts) or "axis" not in attrs:
        return None
    first, given = arrays[0], attrs["axis"]
    rank = first.ndim
    if rank == 0 or (version < 11 and given < 0):
        return None
    axis = _axis(given, rank)
    if axis is None:
        return None
    dtype, outer, inner = first.dtype, first.shape[:axis], first.shape[axis + 1 :]
    for a in arrays:
        if (
            a.dtype != dtype
            or a.ndim != rank
            or a.shape[:axis] != outer
            or a.shape[axis + 1 :] != inner
        ):
            return None
    return (np.concatenate(arrays, axis=axis),)


def _slice(inputs: Inputs, attrs: Mapping[str, Any], version: int) -> Result:
    """Slice-10..13 by the spec's rule: a negative start or end counts from the back; then for
    a positive step both clamp to [0, dim], for a negative step the start to [0, dim - 1] and
    the end to [-1, dim - 1] (-1: through index 0). A negative step with an end of
    ``ORT_REVERSE_TO_START_ENDS``, which onnxruntime reads differently, goes to the reference."""
    data = _moved(_port(inputs, 0))
    starts, ends = _plain(_port(inputs, 1), of=_INDICES), _plain(_port(inputs, 2), of=_INDICES)
    axes_in, steps_in = _port(inputs, 3), _port(inputs, 4)
    if data is None or data.ndim == 0 or starts is None or ends is None:
        return None
    params = [starts, ends] + [p for p in (axes_in, steps_in) if p is not None]
    if any(p.ndim != 1 or p.dtype != starts.dtype or p.size != starts.size for p in params):
        return None
    rank, count = data.ndim, starts.size
    axes = _axes(axes_in.tolist(), rank) if axes_in is not None else tuple(range(count))
    steps: list[int] = steps_in.tolist() if steps_in is not None else [1] * count
    if axes is None or count > rank or 0 in steps:
        return None
    index = [slice(None)] * rank
    for axis, first, last, step in zip(axes, starts.tolist(), ends.tolist(), steps):
        dim = data.shape[axis]
        start, end = (v + dim if v < 0 else v for v in (first, last))
        if step > 0:
            index[axis] = slice(min(max(start, 0), dim), min(max(end, 0), dim), step)
        elif ort_reversed_end(last, step):
            return None
        else:
            start, end = min(max(start, 0), dim - 1), min(max(end, -1), dim - 1)
            index[axis] = slice(start, None if end < 0 else end, step)
    return (data[tuple(index)],)


def _reshape(inputs: Inputs, attrs: Mapping[str, Any], version: int) -> Result:
    data, target = _moved(_port(inputs, 0)), _ints(_port(inputs, 1))
    if data is None or target is None:
        return None
    allowzero = attrs.get("allowzero", 0) if version >= 14 else 0
    if allowzero and 0 in target and -1 in target:
        return None  # invalid per the spec
    shape = list(target)
    for k, d in enumerate(target):
        if d == 0 and not allowzero:
            if k >= data.ndim:
                return None
            shape[k] = data.shape[k]
        elif d < -1:
            return None
    if shape.count(-1) > 1:
        return None
    if -1 in shape:
        known = math.prod(d for d in shape if d != -1)
        if known == 0 or data.size % known:
            return None
        shape[shape.index(-1)] = data.size // known
    if math.prod(shape) != data.size:
        return None
    return (data.reshape(shape),)


def _transpose(inputs: Inputs, attrs: Mapping[str, Any], version: int) -> Result:
    data = _moved(_port(inputs, 0))
    if data is None:
        return None
    perm = tuple(attrs.get("perm", reversed(range(data.ndim))))
    if sorted(perm) != list(range(data.ndim)):
        return None
    return (data.transpose(perm),)


def _constant_of_shape(inputs: Inputs, attrs: Mapping[str, Any], version: int) -> Result:
    shape = _ints(_port(inputs, 0))
    value = attrs.get("value", FILL_ZERO)
    if shape is None or any(d < 0 for d in shape):
        return None
    if not isinstance(value, np.ndarray) or value.shape != (1,) or _plain(value) is None:
        return None  # a value of another shape (a scalar too) is onnxruntime's to refuse
    return (np.full(shape, value.reshape(()), dtype=value.dtype),)


# ----------------------------------------------------------------------------- arithmetic


def _same_numbers(inputs: Inputs) -> tuple[np.ndarray, np.ndarray] | None:
    """The two inputs of a binary op when both are numbers of one dtype."""
    a, b = _plain(_port(inputs, 0), of=_NUMBERS), _plain(_port(inputs, 1), of=_NUMBERS)
    return None if a is None or b is None or a.dtype != b.dtype else (a, b)


def _binary(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> KernelFn:
    """Add/Sub/Mul from version 7: same dtypes, NumPy (multidirectional) broadcasting, integers
    wrapping as in onnxruntime's C++."""

    def kernel(inputs: Inputs, attrs: Mapping[str, Any], version: int) -> Result:
        pair = _same_numbers(inputs)
        if pair is None:
            return None
        a, b = pair
        if a.dtype.kind in "iu":  # integer ufuncs wrap without a warning: no errstate needed
            return (np.asarray(fn(a, b), dtype=a.dtype),)
        with np.errstate(all="ignore"):
            return (np.asarray(fn(a, b), dtype=a.dtype),)

    return kernel


def _div(inputs: Inputs, attrs: Mapping[str, Any], version: int) -> Result:
    pair = _same_numbers(inputs)
    if pair is None:
        return None
    a, b = pair
    if a.dtype in _FLOATS:
        with np.errstate(all="ignore"):
            return (np.asarray(np.divide(a, b), dtype=a.dtype),)
    if not b.all():
        return None  # integer division by zero: undefined
    if a.dtype.kind == "i" and ((a == _IINFO[a.dtype][0]) & (b == -1)).any():
        return None  # the one quotient that overflows: undefined
    # integers truncate toward zero, as C++ does; NumPy's floor_divide rounds down
    with np.errstate(all="ignore"):
        quotient = np.floor_divide(a, b)
        inexact = (np.remainder(a, b) != 0) & ((a < 0) ^ (b < 0))
        return (np.asarray(quotient + inexact.astype(quotient.dtype), dtype=a.dtype),)


def _rounding(fn: Callable[[np.ndarray], np.ndarray]) -> KernelFn:
    """Ceil/Floor: floats only."""

    def kernel(inputs: Inputs, attrs: Mapping[str, Any], version: int) -> Result:
        x = _plain(_port(inputs, 0), of=_FLOATS)
        return None if x is None else (np.asarray(fn(x)),)

    return kernel


def _clip(inputs: Inputs, attrs: Mapping[str, Any], version: int) -> Result:
    x = _plain(_port(inputs, 0), of=_NUMBERS)
    if x is None:
        return None
    bounds: list[np.ndarray | None] = []
    if version < 11:
        if x.dtype != np.float32:
            return None  # Clip-6's float attributes on other types: left to the reference
        limits = np.finfo(np.float32)
        # Clip-6's defaults are float's lowest and highest finite values, not infinities
        for key, default in (("min", limits.min), ("max", limits.max)):
            bounds.append(np.asarray(attrs.get(key, default), dtype=x.dtype))
    else:
        for port in (1, 2):
            bound = _port(inputs, port)
            if bound is not None and (bound.dtype != x.dtype or bound.size != 1):
                return None
            bounds.append(bound)
        if x.dtype in _FLOATS and (bounds[0] is None or bounds[1] is None):
            # an omitted bound is the type's lowest or highest finite value (the spec's
            # numeric_limits::lowest() and max(), as onnxruntime reads them): an infinity
            # clips to it
            limits = np.finfo(x.dtype)
            defaults = (np.asarray(limits.min, x.dtype), np.asarray(limits.max, x.dtype))
            bounds = [d if b is None else b for b, d in zip(bounds, defaults)]
    low, high = bounds
    result = x if low is None else np.maximum(x, low.reshape(()))
    # min > max: every value becomes max (the spec's rule; np.minimum after np.maximum gives it)
    result = result if high is None else np.minimum(result, high.reshape(()))
    return (np.asarray(result, dtype=x.dtype),)


def _cast(inputs: Inputs, attrs: Mapping[str, Any], version: int) -> Result:
    x = _plain(_port(inputs, 0))
    target = ELEM_TYPE_TO_DTYPE.get(attrs.get("to", -1))
    if x is None or target is None or target not in PLAIN_DTYPES:
        return None
    if target.kind in "iu" and x.size and x.dtype != np.bool_:
        # a value the target cannot hold is undefined behaviour in C++: leave it to the
        # reference (and its note)
        lowest, highest = _IINFO[target]
        floats = x.dtype in _FLOATS
        extremes = _extremes(x, finite=floats)
        if extremes is None:
            return None
        low, high = (math.trunc(v) for v in extremes) if floats else extremes
        if low < lowest or high > highest:
            return None
    if target.kind != "f":  # in range (checked above) or to bool: nothing overflows
        return (x.astype(target),)
    with np.errstate(over="ignore"):  # a float too large for a narrower float becomes inf
        if x.dtype == _FLOAT64 and target == _FLOAT16:
            # onnxruntime's CPU Cast makes a double a float, then a half: two roundings
            # (65519.99999 becomes inf, not 65504)
            return (x.astype(np.float32).astype(target),)
        return (x.astype(target),)


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
    """The kernel that computes this ONNX op at this since_version, if there is one. (No
    calls: the importer asks of every node; ``Kernel.covers`` is spelled out.)"""
    if domain != "" or op_type not in KERNELS:
        return None
    kernel = KERNELS[op_type]
    return kernel if kernel.first <= version <= kernel.last else None
