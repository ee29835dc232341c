"""ONNX ValueInfoProto <-> TensorInfo: how the importer reads and the exporter writes types."""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping
from functools import lru_cache

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from dmlgraph.dtypes import (
    DTYPE_TO_ELEM_TYPE,
    ELEM_TYPE_TO_DTYPE,
    PLAIN_DTYPES,
    raw_bytes,
    to_elem_type,
    to_numpy_dtype,
)
from dmlgraph.errors import ModelLoadError, UnsupportedError
from dmlgraph.ir import Dim, Shape, TensorInfo, frozen_array, normal_info

#: NumPy dtypes whose bytes are ONNX's ``raw_data`` as they are, and their element types.
_RAW_ELEM_TYPES = {dtype: DTYPE_TO_ELEM_TYPE[dtype] for dtype in PLAIN_DTYPES}


def tensor_info(value_info: onnx.ValueInfoProto, where: str) -> TensorInfo:
    """What a ValueInfoProto says of a tensor; an untyped one says nothing.

    Dims: ``dim_value`` -> int, ``dim_param`` -> its name, neither -> None. Read through
    ``described_type``'s cache: a model repeats a few types hundreds of times.
    """
    try:
        dtype, shape = described_type(value_info.type.SerializeToString())
    except UnsupportedError:  # worded with the tensor's name and where
        return _tensor_info(value_info, where)
    return normal_info(value_info.name, dtype, shape)  # the cache's are normal


def _tensor_info(value_info: onnx.ValueInfoProto, where: str) -> TensorInfo:
    kind = value_info.type.WhichOneof("value")
    if kind is None:
        return TensorInfo(value_info.name)
    if kind != "tensor_type":
        raise UnsupportedError(
            f"{where}: {value_info.name!r} has type {kind}; dmlgraph handles tensors only"
        )
    tensor_type = value_info.type.tensor_type
    dtype = to_numpy_dtype(tensor_type.elem_type, where) if tensor_type.elem_type else None
    shape: tuple[Dim, ...] | None = None
    if tensor_type.HasField("shape"):
        shape = tuple(shape_dim(d) for d in tensor_type.shape.dim)
    return TensorInfo(value_info.name, dtype=dtype, shape=shape)


def value_info(info: TensorInfo) -> onnx.ValueInfoProto:
    """A typed ValueInfoProto; just the name when the dtype is unknown (onnxruntime accepts
    an untyped graph output, not one of element type 0)."""
    if info.dtype is None:
        return onnx.ValueInfoProto(name=info.name)
    elem = to_elem_type(info.dtype, f"tensor {info.name!r}")
    return helper.make_tensor_value_info(
        info.name, elem, None if info.shape is None else list(info.shape)
    )


@lru_cache(maxsize=4096)
def type_bytes(dtype: np.dtype | None, shape: Shape | None) -> bytes:
    """``value_info``'s TypeProto, serialized: per-node inference passes types to onnx's C++
    this way, and a model asks for the same few types over and over (hence the cache)."""
    return value_info(TensorInfo("", dtype=dtype, shape=shape)).type.SerializeToString()


def tensor_bytes(value: np.ndarray, name: str) -> bytes:
    """A serialized TensorProto of ``value``: its bytes as ``raw_data`` where they are exactly
    ONNX's (NumPy's own little-endian dtypes), else through ``numpy_helper.from_array``."""
    elem = _RAW_ELEM_TYPES.get(value.dtype)
    if elem is None or sys.byteorder != "little":
        return numpy_helper.from_array(value, name).SerializeToString()
    return onnx.TensorProto(
        name=name, dims=value.shape, data_type=elem, raw_data=value.tobytes()
    ).SerializeToString()


@lru_cache(maxsize=4096)
def described_type(serialized: bytes) -> tuple[np.dtype | None, Shape | None]:
    """(dtype, shape) of a serialized TypeProto, as ``tensor_info`` reads it."""
    info = _tensor_info(onnx.ValueInfoProto(type=onnx.TypeProto.FromString(serialized)), "")
    return info.dtype, info.shape


def shape_dim(dim: onnx.TensorShapeProto.Dimension) -> Dim:
    """One ONNX dimension as a ``Dim``: a size, a symbolic name, or None."""
    if dim.HasField("dim_value"):
        return int(dim.dim_value) if dim.dim_value >= 0 else None
    if dim.HasField("dim_param") and dim.dim_param:
        return dim.dim_param
    return None


#: Element types whose ``raw_data`` is exactly the array's little-endian bytes: read with one
#: ``frombuffer`` (numpy_helper's general path costs tens of µs a tensor, and models hold
#: hundreds of small constants).
_RAW_DTYPES: Mapping[int, np.dtype] = {
    elem: dtype
    for elem, dtype in ELEM_TYPE_TO_DTYPE.items()
    if dtype in PLAIN_DTYPES
}
_BOOL = np.dtype(np.bool_)
_LITTLE_ENDIAN = sys.byteorder == "little"


#: Element types whose int32_data holds 16-bit patterns.
_HALF_TYPES = frozenset({TensorProto.FLOAT16, TensorProto.BFLOAT16})


def tensor_array(tensor: TensorProto, where: str) -> np.ndarray:
    """A tensor's values as a read-only array, straight from ``raw_data`` where its bytes are
    the array's; ``where`` starts the message of a tensor that cannot be read."""
    array = raw_array(tensor)
    if array is not None:
        return array
    to_numpy_dtype(tensor.data_type, f"{where}: tensor {tensor.name!r}")
    expected = raw_bytes(tensor) if tensor.HasField("raw_data") else None
    if expected is not None and len(tensor.raw_data) != expected and not (
        tensor.data_location == TensorProto.EXTERNAL or tensor.HasField("segment")
    ):
        raise ModelLoadError(  # NumPy said "buffer size must be a multiple of element size"
            f"{where}: tensor {tensor.name!r}: raw_data holds {len(tensor.raw_data)} bytes, "
            f"where dims {list(tensor.dims)} of {TensorProto.DataType.Name(tensor.data_type)} "
            f"take {expected} (onnxruntime refuses it too)"
        )
    if tensor.data_type in _HALF_TYPES and any(not 0 <= v <= 0xFFFF for v in tensor.int32_data):
        raise ModelLoadError(  # as onnxruntime refuses it ("data overflow"); onnx truncates
            f"{where}: tensor {tensor.name!r}: an int32_data value does not fit in the 16 bits "
            f"of a {TensorProto.DataType.Name(tensor.data_type)}"
        )
    try:
        array = (string_array(tensor) if tensor.data_type == TensorProto.STRING
                 else numpy_helper.to_array(tensor))
    except Exception as exc:
        raise ModelLoadError(f"{where}: tensor {tensor.name!r} cannot be read: {exc}") from None
    return frozen_array(array)  # sealed: the proto's buffers are not ours to keep either


def string_array(tensor: TensorProto) -> np.ndarray:
    """A STRING tensor's values, an object array of str. onnx's ``to_array`` passes them
    through a NumPy string array, which drops trailing NULs: "a\\0" came back "a", where
    onnxruntime keeps it. Raises ValueError (UnicodeDecodeError among them) for strings that
    are not UTF-8 or do not fill the dims."""
    count = math.prod(tensor.dims)
    if len(tensor.string_data) != count:
        raise ValueError(f"{len(tensor.string_data)} strings for dims {list(tensor.dims)}")
    array = np.empty(count, dtype=object)
    array[:] = [value.decode("utf-8") for value in tensor.string_data]
    return array.reshape(tuple(tensor.dims))


def raw_array(tensor: TensorProto) -> np.ndarray | None:
    """``tensor_array``'s fast path: the read-only array over a tensor's ``raw_data`` where
    those bytes are the array's (NumPy's own dtypes, little-endian, the size its dims say);
    None otherwise, for ``tensor_array`` to read and word any error (a caller that has a
    tensor to read without a message at hand makes one only then)."""
    dtype = _RAW_DTYPES.get(tensor.data_type)
    if dtype is None or not _LITTLE_ENDIAN:
        return None
    raw = tensor.raw_data  # a fresh bytes object: the array may keep it
    if (
        (raw or tensor.HasField("raw_data"))  # (bytes given are the field set: no call)
        and tensor.data_location != TensorProto.EXTERNAL
        and not tensor.HasField("segment")
    ):
        dims = tuple(tensor.dims[:])  # a slice: half the cost of iterating the field
        if len(raw) == math.prod(dims) * dtype.itemsize:
            if dtype is _BOOL:  # (identity: NumPy's dtypes are singletons; == costs 3x)
                return _bools(raw, dims)
            # one constructor call (frombuffer + reshape cost 3x); read-only, as bytes are
            return np.ndarray(dims, dtype, raw)
    return None


def _bools(raw: bytes, dims: tuple[int, ...]) -> np.ndarray:
    """A bool tensor's raw bytes as bools: a byte other than 0 or 1 is true, as onnxruntime
    reads it into an initializer (the emulator moves bytes, so a 2 would stay a 2 and read
    as 2 after a Cast to an integer)."""
    values = np.frombuffer(raw, np.uint8)
    if (values > 1).any():
        return frozen_array((values != 0).reshape(dims))
    return np.ndarray(dims, np.bool_, raw)


