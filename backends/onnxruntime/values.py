"""Arrays into and out of onnxruntime sessions, ml_dtypes' types included.

onnxruntime's Python API takes and gives only NumPy's own dtypes: a bfloat16 feed fails
("Numpy_type 256 can't be converted"), a bfloat16 or float8e5m2 output cannot be fetched, and
a float8e4m3fn output comes back as uint8. So a feed of an ml_dtypes type goes in as an
OrtValue of its ONNX type over the same bits, and a session with an output of such a type
runs through OrtValues whose bits are copied out and viewed in the ml_dtypes dtype. The
packed sub-byte types (int4, float4...) are stored one element a byte by ml_dtypes and two or
four a byte by onnxruntime; they are refused.
"""

from __future__ import annotations

import ctypes
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import onnxruntime as ort

from backends.base import BackendError
from dmlgraph.dtypes import DTYPE_TO_ELEM_TYPE, ELEM_TYPE_TO_DTYPE, PLAIN_DTYPES, element_bits
from dmlgraph.tensorio import native_order

#: The unsigned integer type of each width, whose arrays carry another type's bits.
_BITS: Mapping[int, np.dtype] = {1: np.dtype(np.uint8), 2: np.dtype(np.uint16)}


def _native(dtype: np.dtype) -> bool:
    """Whether onnxruntime's Python API takes and gives arrays of ``dtype`` as they are."""
    return dtype in PLAIN_DTYPES or dtype.kind in "OUSc"


#: onnxruntime's type strings of the types whose arrays need this module.
_OTHER_TYPES: frozenset[str] = frozenset(
    f"tensor({np.dtype(dtype).name.replace('_', '')})"
    for dtype in ELEM_TYPE_TO_DTYPE.values()
    if not _native(dtype)
)


def needs_values(session: ort.InferenceSession) -> bool:
    """Whether a session's outputs include a type NumPy lacks (fetched through OrtValues)."""
    return any(_other(o.type) for o in session.get_outputs())


def _other(type_string: str) -> bool:
    return type_string.lower().replace("_", "") in _OTHER_TYPES


def run(
    session: ort.InferenceSession,
    names: Sequence[str],
    feeds: Mapping[str, np.ndarray],
    fetch_values: bool | None = None,
) -> list[np.ndarray]:
    """``session.run`` for arrays of any dtype dmlgraph knows. ``fetch_values``: the
    session's ``needs_values`` where the caller keeps it (a session runs many times)."""
    # not ascontiguousarray, which makes a scalar (rank 0) a 1-element vector; another byte
    # order in the machine's: onnxruntime reads an array's bytes as its own order (a '>f4'
    # [1.0] as 4.6e-41, a '>i8' start of 1 as 2^56), and this module refused them
    arrays = {k: native_order(np.asarray(v, order="C")) for k, v in feeds.items()}
    other = not all(_native(a.dtype) for a in arrays.values())
    if fetch_values is None:
        fetch_values = needs_values(session)
    if not other and not fetch_values:
        return list(session.run(list(names), arrays))
    values = {k: _ort_value(k, a) for k, a in arrays.items()}
    return [_array(v) for v in session.run_with_ort_values(list(names), values)]


def _ort_value(name: str, array: np.ndarray) -> Any:
    if _native(array.dtype):
        return ort.OrtValue.ortvalue_from_numpy(array)
    bits = _BITS.get(array.dtype.itemsize)
    elem = DTYPE_TO_ELEM_TYPE.get(array.dtype)
    if bits is None or elem is None or _packed(array.dtype):
        raise BackendError(
            f"feed {name!r}: onnxruntime's Python API cannot take {array.dtype} tensors"
        )
    return ort.OrtValue.ortvalue_from_numpy_with_onnx_type(array.view(bits), elem)


def _packed(dtype: np.dtype) -> bool:
    """ml_dtypes' sub-byte types (int4, float4_e2m1fn, int2...), packed by onnxruntime."""
    return element_bits(dtype) < 8 * dtype.itemsize


def _array(value: Any) -> np.ndarray:
    """An OrtValue's tensor: NumPy's own types as onnxruntime gives them, others as their
    bits copied out of onnxruntime's CPU memory and viewed in the ml_dtypes dtype."""
    type_string = value.data_type()
    if not _other(type_string):
        return np.asarray(value.numpy())
    dtype = ELEM_TYPE_TO_DTYPE.get(value.element_type())
    if dtype is None or _packed(dtype) or value.device_name().lower() != "cpu":
        raise BackendError(
            f"onnxruntime gives a {type_string} output on {value.device_name()}, which "
            "dmlgraph cannot read"
        )
    shape = tuple(value.shape())
    count = math.prod(shape)
    if count == 0:
        return np.empty(shape, dtype)
    raw = (ctypes.c_char * (count * dtype.itemsize)).from_address(value.data_ptr())
    return np.frombuffer(raw, np.uint8).copy().view(dtype).reshape(shape)
