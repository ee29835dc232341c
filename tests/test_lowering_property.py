"""The central property: for random Slice/Concat/Pad nodes and every feature level, the lowered
graph validates at that level and computes, bit for bit, what onnxruntime computes on the
original node (NumPy where onnxruntime has no kernel or where a divergence is declared).

The NumPy oracles are written here from ONNX's and DML_SPEC.md's definitions, independently of
the code under test.
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import onnx
import onnxruntime as ort
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from backends.numpy import execute_operator
from dmlgraph import load
from dmlgraph.dml.binding import from_buffer, to_buffer
from dmlgraph.dml.operators import OperatorDesc
from dmlgraph.dtypes import to_elem_type
from dmlgraph.ir import OnnxOp
from lowering import Status, lower

LEVELS = ["1_0", "2_0", "2_1", "3_0", "3_1", "4_0", "4_1", "5_0", "6_4"]
DTYPES = [
    np.dtype(t)
    for t in (
        np.float32, np.float16, np.float64, np.int8, np.uint8, np.int16, np.uint16, np.int32,
        np.uint32, np.int64, np.uint64, np.bool_, ml_dtypes.bfloat16,
    )
]
INT64_MAX, INT64_MIN = 2**63 - 1, -(2**63)
OPSET = 21


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


# ------------------------------------------------------------------------------ data
def random_array(draw: Any, dtype: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
    count = int(np.prod(shape, dtype=np.int64))
    raw = draw(st.binary(min_size=count * dtype.itemsize, max_size=count * dtype.itemsize))
    array = np.frombuffer(raw, dtype=np.uint8).copy()
    if dtype == np.bool_:
        array = (array & 1).astype(np.uint8)
    return array.view(dtype).reshape(shape)


def model_for(
    node: onnx.NodeProto,
    inputs: list[tuple[str, np.ndarray]],
    initializers: list[np.ndarray | None],
    names: list[str],
    out_shape: tuple[int, ...],
) -> onnx.ModelProto:
    graph = helper.make_graph(
        [node],
        "g",
        [
            helper.make_tensor_value_info(n, to_elem_type(a.dtype), list(a.shape))
            for n, a in inputs
        ],
        [helper.make_tensor_value_info("y", to_elem_type(inputs[0][1].dtype), list(out_shape))],
        [numpy_helper.from_array(v, n) for n, v in zip(names, initializers) if v is not None],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=10)


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


# ------------------------------------------------------------------------------ checking
def check_all_levels(
    model: onnx.ModelProto, feeds: dict[str, np.ndarray], expected: np.ndarray, divergent: bool
) -> None:
    reference = None if divergent else ort_or_none(model, feeds)
    if reference is not None:
        assert same_bits(reference, expected), "the NumPy oracle disagrees with onnxruntime"
    graph = load(model)
    for level in LEVELS:
        lowered = lower(graph, level)
        (record,) = [r for r in lowered.report() if r.op_type in ("Slice", "Concat", "Pad")]
        if record.status is Status.FALLBACK:
            reason = " ".join(record.notes)
            assert "table row from" in reason or "needs DML_" in reason or "limit" in reason, (
                level, reason
            )
        for node in lowered.nodes:
            if isinstance(node.op, OperatorDesc):
                node.op.validate(level)
        if divergent and record.status is Status.FALLBACK:
            continue  # it stays ONNX, where runtimes disagree (onnxruntime refuses it)
        (got,) = run_lowered(lowered, feeds)
        assert same_bits(got, expected), (level, record, got, expected)


@st.composite
def shapes(draw: Any, max_rank: int = 6) -> tuple[int, ...]:
    """Mostly non-empty shapes; one in ten may hold zero-size dimensions."""
    low = 0 if draw(st.integers(0, 9)) == 0 else 1
    return tuple(draw(st.lists(st.integers(low, 4), min_size=1, max_size=max_rank)))


@st.composite
def slice_cases(draw: Any) -> tuple:
    dtype = draw(st.sampled_from(DTYPES))
    shape = draw(shapes())
    x = random_array(draw, dtype, shape)
    r = len(shape)
    axes = draw(st.lists(st.integers(0, r - 1), min_size=1, max_size=r, unique=True))
    sentinel = st.sampled_from([INT64_MAX, INT64_MIN, -100, 100])
    starts, ends, steps = [], [], []
    for a in axes:
        n = shape[a]
        step = draw(st.sampled_from([-3, -2, -1, 1, 1, 2, 3]))
        lo, hi = sorted((draw(st.integers(0, n)), draw(st.integers(0, n))))
        start, end = (lo, hi + 1) if step > 0 else (hi, lo - 1)
        if end == -1:
            end = INT64_MIN  # through index 0 (-1 would mean the last element)
        if draw(st.booleans()) and 0 <= start < n:
            start -= n  # the same index, counted from the end
        if draw(st.integers(0, 7)) == 0:
            start = draw(sentinel)
        if draw(st.integers(0, 5)) == 0:
            end = draw(sentinel)
        starts.append(start), ends.append(end), steps.append(step)
    signed_axes = [a - r if draw(st.booleans()) else a for a in axes]
    return x, starts, ends, signed_axes, steps


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(slice_cases())
def test_slice_lowers_exactly_at_every_level(case: tuple) -> None:
    x, starts, ends, axes, steps = case
    params = [np.array(v, dtype=np.int64) for v in (starts, ends, axes, steps)]
    names = ["starts", "ends", "axes", "steps"]
    node = helper.make_node("Slice", ["x", *names], ["y"])
    expected = slice_oracle(x, starts, ends, axes, steps)
    model = model_for(node, [("x", x)], params, names, expected.shape)
    divergent = any(t < 0 and e == INT64_MAX for t, e in zip(steps, ends))
    check_all_levels(model, {"x": x}, expected, divergent)


@st.composite
def concat_cases(draw: Any) -> tuple:
    dtype = draw(st.sampled_from(DTYPES))
    shape = list(draw(shapes()))
    axis = draw(st.integers(0, len(shape) - 1))
    count = draw(st.integers(1, 4))
    arrays = []
    for _ in range(count):
        shape[axis] = draw(st.integers(0, 3))
        arrays.append(random_array(draw, dtype, tuple(shape)))
    signed = axis - len(shape) if draw(st.booleans()) else axis
    return arrays, signed


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(concat_cases())
def test_concat_lowers_exactly_at_every_level(case: tuple) -> None:
    arrays, axis = case
    names = [f"x{i}" for i in range(len(arrays))]
    node = helper.make_node("Concat", names, ["y"], axis=axis)
    expected = np.concatenate(arrays, axis=axis)
    model = model_for(node, list(zip(names, arrays)), [], [], expected.shape)
    check_all_levels(model, dict(zip(names, arrays)), expected, divergent=False)


@st.composite
def pad_cases(draw: Any) -> tuple:
    dtype = draw(st.sampled_from(DTYPES))
    shape = draw(st.lists(st.integers(1, 4), min_size=1, max_size=5).map(tuple))
    mode = draw(st.sampled_from(["constant", "edge", "reflect", "wrap"]))
    r = len(shape)
    pads = [draw(st.integers(-2, 5 if r <= 3 else 2)) for _ in range(2 * r)]
    for a in range(r):  # ONNX needs the crop to leave a non-negative size
        while shape[a] + min(pads[a], 0) + min(pads[a + r], 0) < 0:
            pads[a if pads[a] < 0 else a + r] += 1
    if mode != "constant":  # and something to repeat where a non-constant mode pads
        for a in range(r):
            if shape[a] + min(pads[a], 0) + min(pads[a + r], 0) == 0:
                pads[a], pads[a + r] = 0, 0
    x = random_array(draw, dtype, shape)
    value = random_array(draw, dtype, ())
    return x, pads, mode, value


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pad_cases())
def test_pad_lowers_exactly_at_every_level(case: tuple) -> None:
    x, pads, mode, value = case
    r = x.ndim
    node = helper.make_node("Pad", ["x", "pads", "value"], ["y"], mode=mode)
    expected = pad_oracle(x, pads, mode, value)
    params = [np.array(pads, dtype=np.int64), value]
    model = model_for(node, [("x", x)], params, ["pads", "value"], expected.shape)
    cropped = [x.shape[a] + min(pads[a], 0) + min(pads[a + r], 0) for a in range(r)]
    divergent = mode == "reflect" and any(
        (max(pads[a], 0) or max(pads[a + r], 0)) and max(pads[a], pads[a + r]) >= cropped[a]
        for a in range(r)
    )
    check_all_levels(model, {"x": x}, expected, divergent)
