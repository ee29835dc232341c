"""ONNX element types <-> NumPy dtypes: the one table the IR, importer and emitters share.

The IR stores dtypes as ``numpy.dtype`` because constant data, the NumPy backend and DirectML's
own ``TensorDataType.numpy_dtype`` all speak NumPy. Types NumPy lacks (bfloat16, float8, int4,
...) come from ``ml_dtypes``, the package onnx itself uses, so ``numpy_helper`` arrays of those
types carry exactly these dtypes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from types import MappingProxyType

import ml_dtypes
import numpy as np
from onnx import TensorProto

from dmlgraph.errors import UnsupportedError

#: ONNX ``TensorProto.DataType`` name -> NumPy (or ml_dtypes) type name, as data. Entries whose
#: type this onnx or ml_dtypes version lacks are skipped, so older onnx releases still import.
_TYPE_NAMES: tuple[tuple[str, str], ...] = (
    ("FLOAT", "float32"),
    ("UINT8", "uint8"),
    ("INT8", "int8"),
    ("UINT16", "uint16"),
    ("INT16", "int16"),
    ("INT32", "int32"),
    ("INT64", "int64"),
    ("STRING", "object"),
    ("BOOL", "bool"),
    ("FLOAT16", "float16"),
    ("DOUBLE", "float64"),
    ("UINT32", "uint32"),
    ("UINT64", "uint64"),
    ("COMPLEX64", "complex64"),
    ("COMPLEX128", "complex128"),
    ("BFLOAT16", "ml_dtypes.bfloat16"),
    ("FLOAT8E4M3FN", "ml_dtypes.float8_e4m3fn"),
    ("FLOAT8E4M3FNUZ", "ml_dtypes.float8_e4m3fnuz"),
    ("FLOAT8E5M2", "ml_dtypes.float8_e5m2"),
    ("FLOAT8E5M2FNUZ", "ml_dtypes.float8_e5m2fnuz"),
    ("UINT4", "ml_dtypes.uint4"),
    ("INT4", "ml_dtypes.int4"),
    ("FLOAT4E2M1", "ml_dtypes.float4_e2m1fn"),
    ("FLOAT8E8M0", "ml_dtypes.float8_e8m0fnu"),
    ("UINT2", "ml_dtypes.uint2"),
    ("INT2", "ml_dtypes.int2"),
)


def _resolve(type_name: str) -> np.dtype | None:
    if type_name.startswith("ml_dtypes."):
        found = getattr(ml_dtypes, type_name.removeprefix("ml_dtypes."), None)
        return None if found is None else np.dtype(found)
    return np.dtype(type_name)


#: ONNX ``TensorProto.DataType`` value -> NumPy dtype. STRING maps to ``object`` as in onnx.
ELEM_TYPE_TO_DTYPE: Mapping[int, np.dtype] = MappingProxyType(
    {
        getattr(TensorProto, onnx_name): dtype
        for onnx_name, type_name in _TYPE_NAMES
        if hasattr(TensorProto, onnx_name) and (dtype := _resolve(type_name)) is not None
    }
)

#: NumPy dtype -> ONNX element type (the inverse of ``ELEM_TYPE_TO_DTYPE``).
DTYPE_TO_ELEM_TYPE: Mapping[np.dtype, int] = MappingProxyType(
    {dtype: elem for elem, dtype in ELEM_TYPE_TO_DTYPE.items()}
)


#: NumPy's own dtypes (not ml_dtypes' bfloat16, float8 or int4, not strings): their arithmetic
#: is ONNX's (integers wrap, floats are IEEE), and their little-endian bytes are ONNX's
#: ``raw_data`` as they are.
PLAIN_DTYPES: frozenset[np.dtype] = frozenset(
    np.dtype(t)
    for t in (
        "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
        "float16", "float32", "float64",
    )
)


def is_float(dtype: np.dtype) -> bool:
    """NumPy floats and the ml_dtypes floats (bfloat16, float8...), whose NumPy kind is 'V'."""
    try:
        ml_dtypes.finfo(dtype)
    except ValueError:
        return False
    return True


def element_bits(dtype: np.dtype) -> int:
    """The bits ONNX stores an element of ``dtype`` in: fewer than its NumPy item for the
    sub-byte types ml_dtypes holds one a byte (int4, float4_e2m1fn), packed two a byte in
    ``raw_data`` and by onnxruntime."""
    dtype = np.dtype(dtype)
    if dtype.kind not in "c":  # complex: ml_dtypes.finfo reads it as its real part
        for info in (ml_dtypes.iinfo, ml_dtypes.finfo):
            try:
                return min(int(info(dtype).bits), 8 * dtype.itemsize)
            except (TypeError, ValueError):
                continue
    return 8 * dtype.itemsize


def to_numpy_dtype(elem_type: int, where: str = "") -> np.dtype:
    """The NumPy dtype of an ONNX element type; UnsupportedError names ``where`` if unknown."""
    try:
        return ELEM_TYPE_TO_DTYPE[elem_type]
    except KeyError:
        name = (
            TensorProto.DataType.Name(elem_type)
            if elem_type in TensorProto.DataType.values()
            else "?"
        )
        prefix = f"{where}: " if where else ""
        raise UnsupportedError(
            f"{prefix}element type {elem_type} ({name}) has no NumPy dtype in dmlgraph "
            f"(supported: {sorted(TensorProto.DataType.Name(e) for e in ELEM_TYPE_TO_DTYPE)})"
        ) from None


def to_elem_type(dtype: np.dtype | type, where: str = "") -> int:
    """The ONNX element type of a NumPy dtype; UnsupportedError names ``where`` if unknown."""
    key = np.dtype(dtype)
    if key.kind in "US":  # NumPy strings travel as ONNX STRING, like onnx does.
        return TensorProto.STRING
    try:
        return DTYPE_TO_ELEM_TYPE[key]
    except KeyError:
        prefix = f"{where}: " if where else ""
        raise UnsupportedError(f"{prefix}dtype {key} has no ONNX element type") from None


def raw_bytes(tensor: TensorProto) -> int | None:
    """The bytes of a tensor's raw data, from its dims and type (sub-byte types packed); None
    for strings (no fixed size) and unknown types."""
    dtype = ELEM_TYPE_TO_DTYPE.get(tensor.data_type)
    if dtype is None or dtype == np.dtype(object):
        return None
    return (math.prod(tensor.dims) * element_bits(dtype) + 7) // 8
