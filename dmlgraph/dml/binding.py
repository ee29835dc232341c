"""How a DML node's tensor descs bind the IR's tensors: one buffer, reinterpreted.

An IR tensor is a packed row-major array of its ONNX dtype and shape. A DML node reading or
writing it sees the same bytes through its own ``BufferTensorDesc``, which may give them another
rank (leading 1s, coalesced dimensions), another same-width type (bool as UINT8) or narrower
elements (INT64 as pairs of UINT32, an extra innermost dimension of 2). That is DirectML's own
rule for graph edges: connected tensors need only the same TotalTensorSizeInBytes, their sizes,
rank and type may differ. ``binds`` checks it; the two converters move data across it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dmlgraph.dml.tensor import BufferTensorDesc


def buffer_size(dtype: np.dtype, shape: tuple[int, ...]) -> int:
    """TotalTensorSizeInBytes of a packed tensor of this dtype and shape (rounded up to 4)."""
    count = 1
    for d in shape:
        count *= d
    return (count * np.dtype(dtype).itemsize + 3) & ~3


def binds(desc: BufferTensorDesc, dtype: np.dtype, shape: tuple[int, ...]) -> str:
    """Why ``desc`` cannot view the IR tensor (dtype, shape); "" when it can."""
    expected = buffer_size(dtype, shape)
    if desc.total_tensor_size_in_bytes != expected:
        return (
            f"TotalTensorSizeInBytes {desc.total_tensor_size_in_bytes} differs from the "
            f"{expected} bytes of the {np.dtype(dtype)}{list(shape)} tensor it binds"
        )
    if not desc.is_packed:
        return "the desc is strided; tensors between nodes are packed"
    return ""


def unbound_tensors(graph: Any, require_static: bool = True) -> list[str]:
    """What of ``graph``'s descriptor nodes' tensors their descs do not bind (``binds``),
    each as "NODE: tensor 'NAME': why"; a tensor with no static type too, with
    ``require_static`` (lowering's Verify). The backends ask it of every graph holding
    descriptors, once per plan or session, without: a lowered graph edited afterwards (an
    input's shape changed) ran its descriptors on tensors of other sizes, onnxruntime's
    translation silently ([6, 6] inputs through JOINs sized for [4, 6] made [8, 6])."""
    from dmlgraph.dml.operators import OperatorDesc  # operators imports this module
    from dmlgraph.ir import OnnxOp

    problems: list[str] = []
    for node in graph.nodes:
        # the exact type first: an ABC's isinstance of an ONNX node's op is three calls
        if type(node.op) is OnnxOp or not isinstance(node.op, OperatorDesc):
            continue
        descs = list(node.op.inputs) + list(node.op.outputs)
        for tensor, desc in zip(list(node.inputs) + list(node.outputs), descs):
            info = graph.tensor(tensor)
            if info.dtype is None or not info.is_static:
                if require_static:
                    problems.append(f"{node.label}: tensor {tensor!r} has no static type")
                continue
            why = binds(desc, info.dtype, info.static_shape)
            if why:
                problems.append(f"{node.label}: tensor {tensor!r}: {why}")
    return problems


def to_buffer(array: np.ndarray, desc: BufferTensorDesc) -> np.ndarray:
    """The array's bytes as a flat buffer of the desc's type, zero-padded to its total size."""
    raw = np.ascontiguousarray(array).reshape(-1).view(np.uint8)
    dtype = desc.data_type.numpy_dtype
    buffer = np.zeros(desc.total_tensor_size_in_bytes, dtype=np.uint8)
    buffer[: raw.size] = raw
    return buffer[: buffer.size - buffer.size % dtype.itemsize].view(dtype)


def from_buffer(buffer: np.ndarray, dtype: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
    """The IR tensor (dtype, shape) held in the leading bytes of ``buffer``."""
    dtype = np.dtype(dtype)
    count = 1
    for d in shape:
        count *= d
    raw = np.ascontiguousarray(buffer).reshape(-1).view(np.uint8)[: count * dtype.itemsize]
    return raw.copy().view(dtype).reshape(shape)
