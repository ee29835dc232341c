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
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import helper, numpy_helper

from dmlgraph import load
from dmlgraph.dml.operators import OperatorDesc
from dmlgraph.dtypes import to_elem_type
from lowering import Status, lower
from oracles import (
    ort_or_none,
    pad_oracle,
    run_lowered,
    run_translated,
    same_bits,
    same_values,
    slice_oracle,
)

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


# ------------------------------------------------------------------------------ checking
def check_all_levels(
    model: onnx.ModelProto, feeds: dict[str, np.ndarray], expected: np.ndarray, divergent: bool
) -> None:
    reference = None if divergent else ort_or_none(model, feeds)
    if reference is not None:
        assert same_values(reference, expected), "the NumPy oracle disagrees with onnxruntime"
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
        translated = run_translated(lowered, feeds)  # the second engine, on the same graph
        if translated is not None and not divergent:
            assert same_values(translated[0], expected), (level, record, translated, expected)


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
