"""Independent oracles and a plain executor for the lowering tests.

The NumPy oracles are written from ONNX's and DML_SPEC.md's definitions, independently of the
code under test; ``run_lowered`` executes a lowered graph with the DirectML executor alone.
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import onnx
import onnxruntime as ort
from onnx.reference import ReferenceEvaluator

from backends.numpy import execute_operator
from dmlgraph.dml.binding import from_buffer, to_buffer
from dmlgraph.dml.operators import OperatorDesc
from dmlgraph.ir import OnnxOp


# ------------------------------------------------------------------------------ execution
def run_lowered(lowered: Any, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    """Execute a lowered graph: descriptors on the NumPy executor through their byte views,
    ONNX nodes left for fallback on onnxruntime (onnx's reference evaluator where onnxruntime
    has no kernel; it follows Python's slicing where Slice-13's text clamps differently)."""
    values: dict[str, np.ndarray] = dict(feeds)
    for name in lowered.constants:
        values[name] = lowered.constant(name)
    for node in lowered.topological_order():
        if isinstance(node.op, OperatorDesc):
            buffers = [to_buffer(values[x], d) for x, d in zip(node.inputs, node.op.inputs)]
            (result,) = execute_operator(node.op, buffers, lowered.feature_level)
            info = lowered.tensor(node.outputs[0])
            values[node.outputs[0]] = from_buffer(result, info.dtype, info.static_shape)
        else:
            assert isinstance(node.op, OnnxOp)
            sub = lowered.extract([node.id])
            sub_feeds = {x: values[x] for x in sub.inputs}
            result = ort_or_none(sub.to_onnx(), sub_feeds)
            outs = (
                [result]
                if result is not None
                else ReferenceEvaluator(sub.to_onnx()).run(None, sub_feeds)
            )
            values.update(zip(sub.outputs, outs))
    return [values[name] for name in lowered.outputs]


def ort_or_none(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> np.ndarray | None:
    """onnxruntime's result, or None when it has no kernel for the type."""
    if any(a.dtype == ml_dtypes.bfloat16 for a in feeds.values()):
        return None  # onnxruntime's Python API takes no bfloat16 arrays
    options = ort.SessionOptions()
    options.log_severity_level = 4
    try:
        session = ort.InferenceSession(
            model.SerializeToString(), options, providers=["CPUExecutionProvider"]
        )
    except Exception as exc:  # NOT_IMPLEMENTED: no kernel for this type
        if "NOT_IMPLEMENTED" in str(exc) or "Could not find an implementation" in str(exc):
            return None
        raise
    return session.run(None, feeds)[0]


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return (
        a.dtype == b.dtype
        and a.shape == b.shape
        and np.ascontiguousarray(a).view(np.uint8).tobytes()
        == np.ascontiguousarray(b).view(np.uint8).tobytes()
    )


# ------------------------------------------------------------------------------ oracles
def slice_oracle(x: np.ndarray, starts, ends, axes, steps) -> np.ndarray:
    """Slice-13's text: negative indices add the dim; clamp start to [0, dim] (step > 0) or
    [0, dim - 1] (step < 0), end to [0, dim] or [-1, dim - 1]; then NumPy slicing."""
    index: list[Any] = [slice(None)] * x.ndim
    for s, e, a, t in zip(starts, ends, axes, steps):
        n = x.shape[a]
        s, e = (s + n if s < 0 else s), (e + n if e < 0 else e)
        if t > 0:
            s, e = np.clip(s, 0, n), np.clip(e, 0, n)
        else:
            s, e = np.clip(s, 0, n - 1), np.clip(e, -1, n - 1)
        picked = list(range(int(s), int(e), t)) if n else []
        index[a] = picked
    return x[np.ix_(*[i if isinstance(i, list) else range(x.shape[k]) for k, i in enumerate(index)])]


def pad_index(mode: str, i: np.ndarray, n: int) -> np.ndarray:
    """DML_SPEC.md's index maps; reflect on size 1 repeats the element (as EDGE)."""
    if mode == "edge" or (mode == "reflect" and n == 1):
        return np.clip(i, 0, n - 1)
    if mode == "reflect":
        p = 2 * (n - 1)
        m = np.mod(i, p)
        return np.where(m < n, m, p - m)
    return np.mod(i, n)  # wrap


def pad_oracle(x: np.ndarray, pads: list[int], mode: str, value: np.ndarray) -> np.ndarray:
    r = x.ndim
    crop = tuple(
        slice(max(0, -pads[a]), x.shape[a] - max(0, -pads[a + r])) for a in range(r)
    )
    x = x[crop]
    begin = [max(0, p) for p in pads[:r]]
    end = [max(0, p) for p in pads[r:]]
    if mode == "constant":
        out = np.full([n + b + e for n, b, e in zip(x.shape, begin, end)], value, dtype=x.dtype)
        out[tuple(slice(b, b + n) for b, n in zip(begin, x.shape))] = x
        return out
    for a in range(r):
        if begin[a] or end[a]:
            source = pad_index(mode, np.arange(-begin[a], x.shape[a] + end[a]), x.shape[a])
            x = np.take(x, source, axis=a)
    return x
