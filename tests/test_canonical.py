"""Canonical forms: every supported version of Slice, Concat and Pad imports to the same form
as the newest version of an equivalent model, and onnxruntime agrees on the results of the
original, the newest and the re-exported model. Oracles: onnxruntime and NumPy."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import onnx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

import dmlgraph
from dmlgraph import canonical
from dmlgraph.errors import UnsupportedError

INT64_MAX = np.iinfo(np.int64).max
INT64_MIN = np.iinfo(np.int64).min

#: since_version -> the opset the test model uses (onnxruntime runs opset 7 and newer only).
SLICE_OPSETS = {1: 9, 10: 10, 11: 11, 13: 13}
CONCAT_OPSETS = {1: 3, 4: 7, 11: 11, 13: 13}
PAD_OPSETS = {2: 10, 11: 11, 13: 13, 18: 18, 19: 19, 21: 21, 23: 23, 24: 24, 25: 25}
#: onnxruntime has no Concat-1 kernel (opsets 1-3): that original, and its re-export at opset
#: 3, are checked against NumPy through the re-export at the newest opset only.
ORT_CANNOT_RUN = {("Concat", 1)}


@pytest.mark.parametrize(
    ("op_type", "opsets"), [("Slice", SLICE_OPSETS), ("Concat", CONCAT_OPSETS), ("Pad", PAD_OPSETS)]
)
def test_every_registered_version_is_tested_here(op_type: str, opsets: dict[int, int]) -> None:
    """The tables below cover exactly the versions canonical.FORMS registers, and each test
    opset resolves to its version through the ONNX schema."""
    assert set(opsets) == set(canonical.FORMS[op_type])
    for version, opset in opsets.items():
        assert onnx.defs.get_schema(op_type, opset, "").since_version == version


# ----------------------------------------------------------------------------- helpers


def _signature(graph: dmlgraph.Graph) -> tuple[Any, tuple[Any, ...]]:
    """The one Slice/Concat/Pad of a graph: its op record and, per input port, the constant
    (dtype, shape, values), the graph input's position, or None when omitted."""
    (node,) = [n for n in graph.nodes if n.op_type in canonical.FORMS]
    ports = []
    for name in node.inputs:
        if not name:
            ports.append(None)
        elif graph.is_constant(name):
            value = graph.constant(name)
            ports.append(("constant", value.dtype.str, value.shape, value.tolist()))
        else:
            ports.append(("input", graph.inputs.index(name)))
    return node.op, tuple(ports)


def _check_versions(
    onnx_run,
    op_type: str,
    version: int,
    model: onnx.ModelProto,
    newest: onnx.ModelProto,
    feeds: dict[str, np.ndarray],
    expected: np.ndarray,
) -> None:
    """Same canonical form as the newest model; onnxruntime on the original, the newest, the
    re-export and the re-export at the newest opset all equal the NumPy ``expected``."""
    graph = dmlgraph.load(model)
    newest_graph = dmlgraph.load(newest)
    assert _signature(graph) == _signature(newest_graph)
    (node,) = [n for n in graph.nodes if n.op_type == op_type]
    assert node.provenance.since_version == version
    assert node.op.since_version == canonical.CANONICAL_VERSION[op_type]

    results = [onnx_run(newest, feeds)[0]]
    if (op_type, version) not in ORT_CANNOT_RUN:
        results += [onnx_run(model, feeds)[0], onnx_run(graph.to_onnx(), feeds)[0]]
    restamped = graph.copy()
    restamped.opset_imports[""] = newest.opset_import[0].version
    results.append(onnx_run(restamped.to_onnx(), feeds)[0])
    for result in results:
        assert result.dtype == expected.dtype and result.shape == expected.shape
        assert np.array_equal(result, expected)


def _int64(name: str, values: Sequence[int], dtype: int = TensorProto.INT64) -> onnx.TensorProto:
    return helper.make_tensor(name, dtype, [len(values)], list(values))


# ----------------------------------------------------------------------------- Slice


def _slice_model(
    onnx_make_model,
    opset: int,
    shape,
    starts,
    ends,
    axes=None,
    steps=None,
    index_type=TensorProto.INT64,
):
    version = onnx.defs.get_schema("Slice", opset, "").since_version
    outputs = [("y", TensorProto.FLOAT, [None] * len(shape))]
    inputs = [("x", TensorProto.FLOAT, list(shape))]
    if version == 1:
        assert steps is None or all(s == 1 for s in steps)
        attrs = {"starts": list(starts), "ends": list(ends)}
        if axes is not None:
            attrs["axes"] = list(axes)
        node = helper.make_node("Slice", ["x"], ["y"], name="the_slice", **attrs)
        return onnx_make_model([node], inputs, outputs, opset=opset)
    names = [
        "x",
        "starts",
        "ends",
        "axes" if axes is not None else "",
        "steps" if steps is not None else "",
    ]
    while names[-1] == "":
        names.pop()
    inits = [_int64("starts", starts, index_type), _int64("ends", ends, index_type)]
    inits += [_int64("axes", axes, index_type)] if axes is not None else []
    inits += [_int64("steps", steps, index_type)] if steps is not None else []
    node = helper.make_node("Slice", names, ["y"], name="the_slice")
    return onnx_make_model([node], inputs, outputs, opset=opset, initializers=inits)


def _numpy_slice(x: np.ndarray, starts, ends, axes=None, steps=None) -> np.ndarray:
    """ONNX Slice by the spec's clamping: starts to [0, dim] (step > 0) or [0, dim - 1]
    (step < 0), ends to [0, dim] or [-1, dim - 1]. (Python's slice.indices differs: it
    clamps a negative-step start below -dim to "before 0", giving nothing.)"""
    axes = list(range(len(starts))) if axes is None else list(axes)
    steps = [1] * len(starts) if steps is None else list(steps)
    for s, e, a, step in zip(starts, ends, axes, steps):
        dim = x.shape[a]
        s, e = (int(v) + dim if v < 0 else int(v) for v in (s, e))
        if step > 0:
            s, e = min(max(s, 0), dim), min(max(e, 0), dim)
        else:
            s, e = min(max(s, 0), dim - 1), min(max(e, -1), dim - 1)
        x = np.take(x, np.arange(s, e, step, dtype=np.int64), axis=a)
    return x


def _non_negative(axes, rank):
    return None if axes is None else [a % rank for a in axes]


SLICE_CASES = {
    "prefix_axes_by_default": dict(starts=[1], ends=[3]),
    "two_axes_negative_indices": dict(starts=[0, -4], ends=[INT64_MAX, -1], axes=[2, 1]),
    "negative_axis": dict(starts=[1], ends=[100], axes=[-1]),
    "steps_and_reverse": dict(
        starts=[0, -1], ends=[INT64_MAX, INT64_MIN], axes=[0, -1], steps=[2, -1]
    ),
    "int32_indices": dict(starts=[-3], ends=[5], axes=[1], steps=[1], index_type=TensorProto.INT32),
    "empty_result": dict(starts=[3], ends=[1], axes=[0]),
}


def _slice_applies(version: int, case: str) -> bool:
    steps = SLICE_CASES[case].get("steps")
    return version > 1 or steps is None or set(steps) == {1}  # Slice-1 has no steps


@pytest.mark.parametrize(
    ("version", "case"),
    [(v, c) for v in sorted(SLICE_OPSETS) for c in sorted(SLICE_CASES) if _slice_applies(v, c)],
)
def test_slice_versions_share_the_newest_canonical_form(
    version: int, case: str, onnx_make_model, onnx_run
) -> None:
    params = dict(SLICE_CASES[case])
    shape = (4, 5, 6)
    index_type = params.pop("index_type", TensorProto.INT64)
    if version == 1:
        index_type = TensorProto.INT64
    versioned = dict(params)
    if version < 11:  # negative axes arrive with Slice-11
        versioned["axes"] = _non_negative(params.get("axes"), len(shape))
    model = _slice_model(
        onnx_make_model, SLICE_OPSETS[version], shape, index_type=index_type, **versioned
    )
    newest = _slice_model(onnx_make_model, SLICE_OPSETS[13], shape, **params)
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    _check_versions(onnx_run, "Slice", version, model, newest, {"x": x}, _numpy_slice(x, **params))


def test_slice_canonical_form_fills_axes_steps_as_int64_constants(onnx_make_model) -> None:
    graph = dmlgraph.load(_slice_model(onnx_make_model, 9, (4, 5, 6), starts=[1, 0], ends=[3, -1]))
    op, ports = _signature(graph)
    assert op == dmlgraph.OnnxOp("Slice", 13)
    assert ports == (
        ("input", 0),
        ("constant", "<i8", (2,), [1, 0]),
        ("constant", "<i8", (2,), [3, -1]),
        ("constant", "<i8", (2,), [0, 1]),
        ("constant", "<i8", (2,), [1, 1]),
    )


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_slice_property_all_versions_match_numpy_and_onnxruntime(
    data, onnx_make_model, onnx_run
) -> None:
    rank = data.draw(st.integers(1, 4), label="rank")
    shape = tuple(
        data.draw(st.lists(st.integers(1, 5), min_size=rank, max_size=rank), label="shape")
    )
    axes = data.draw(
        st.lists(
            st.integers(-rank, rank - 1), min_size=1, max_size=rank, unique_by=lambda a: a % rank
        ),
        label="axes",
    )
    bound = st.one_of(st.integers(-7, 7), st.sampled_from([INT64_MAX, INT64_MIN]))
    starts = [data.draw(bound, label="start") for _ in axes]
    ends = [data.draw(bound, label="end") for _ in axes]
    steps = [data.draw(st.sampled_from([1, 2, 3, -1, -2]), label="step") for _ in axes]
    # onnxruntime 1.31 reads ends = INT64_MAX with a negative step as "through index 0",
    # where the spec clamps it to dim - 1 (an empty slice from start 0): leave that pair out.
    ends = [INT64_MIN if e == INT64_MAX and step < 0 else e for e, step in zip(ends, steps)]
    version = data.draw(st.sampled_from(sorted(SLICE_OPSETS)), label="version")
    if version == 1:
        steps = [1] * len(axes)
    versioned_axes = _non_negative(axes, rank) if version < 11 else axes
    model = _slice_model(
        onnx_make_model, SLICE_OPSETS[version], shape, starts, ends, versioned_axes, steps
    )
    newest = _slice_model(onnx_make_model, 13, shape, starts, ends, axes, steps)
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    _check_versions(
        onnx_run,
        "Slice",
        version,
        model,
        newest,
        {"x": x},
        _numpy_slice(x, starts, ends, axes, steps),
    )


# ----------------------------------------------------------------------------- Concat


def _concat_model(onnx_make_model, opset: int, shapes, axis: int | None):
    attrs = {} if axis is None else {"axis": axis}
    names = [f"x{i}" for i in range(len(shapes))]
    node = helper.make_node("Concat", names, ["y"], name="the_concat", **attrs)
    rank = len(shapes[0])
    return onnx_make_model(
        [node],
        [(n, TensorProto.FLOAT, list(s)) for n, s in zip(names, shapes)],
        [("y", TensorProto.FLOAT, [None] * rank)],
        opset=opset,
        ir_version=3 if opset < 7 else 8,
    )


CONCAT_CASES = {
    "axis_1": ([(2, 3, 4), (2, 1, 4)], 1),
    "negative_axis": ([(2, 3, 4), (2, 3, 1)], -1),
    "zero_size_input": ([(2, 3, 4), (2, 0, 4), (2, 2, 4)], 1),
    "single_input": ([(2, 3, 4)], 0),
    "default_axis": ([(2, 3, 4), (2, 2, 4)], None),
}


@pytest.mark.parametrize(
    ("version", "case"),
    # Only Concat-1 may omit axis (default 1).
    [
        (v, c)
        for v in sorted(CONCAT_OPSETS)
        for c in sorted(CONCAT_CASES)
        if v == 1 or CONCAT_CASES[c][1] is not None
    ],
)
def test_concat_versions_share_the_newest_canonical_form(
    version: int, case: str, onnx_make_model, onnx_run
) -> None:
    shapes, axis = CONCAT_CASES[case]
    rank = len(shapes[0])
    newest_axis = 1 if axis is None else axis
    versioned_axis = axis if axis is None or version >= 11 else axis % rank  # negative from 11
    model = _concat_model(onnx_make_model, CONCAT_OPSETS[version], shapes, versioned_axis)
    newest = _concat_model(onnx_make_model, 13, shapes, newest_axis)
    rng = np.random.default_rng(len(shapes))
    feeds = {f"x{i}": rng.standard_normal(s).astype(np.float32) for i, s in enumerate(shapes)}
    expected = np.concatenate(list(feeds.values()), axis=newest_axis)
    _check_versions(onnx_run, "Concat", version, model, newest, feeds, expected)
    graph = dmlgraph.load(model)
    assert graph.find_nodes("Concat")[0].op.attrs["axis"] == newest_axis % rank


# ----------------------------------------------------------------------------- Pad


def _pad_model(
    onnx_make_model,
    opset: int,
    shape,
    pads,
    mode: str | None = None,
    value: float | None = None,
    axes=None,
    elem: int = TensorProto.FLOAT,
):
    version = onnx.defs.get_schema("Pad", opset, "").since_version
    inputs = [("x", elem, list(shape))]
    outputs = [("y", elem, [None] * len(shape))]
    attrs = {} if mode is None else {"mode": mode}
    if version == 2:
        assert axes is None and elem == TensorProto.FLOAT
        if value is not None:
            attrs["value"] = float(value)
        node = helper.make_node("Pad", ["x"], ["y"], name="the_pad", pads=list(pads), **attrs)
        return onnx_make_model([node], inputs, outputs, opset=opset)
    dtype = helper.tensor_dtype_to_np_dtype(elem)
    names = ["x", "pads", "value" if value is not None else "", "axes" if axes is not None else ""]
    while names[-1] == "":
        names.pop()
    inits = [_int64("pads", pads)]
    inits += (
        [numpy_helper.from_array(np.array(value, dtype=dtype), "value")]
        if value is not None
        else []
    )
    inits += [_int64("axes", axes)] if axes is not None else []
    node = helper.make_node("Pad", names, ["y"], name="the_pad", **attrs)
    return onnx_make_model([node], inputs, outputs, opset=opset, initializers=inits)


def _numpy_pad(x: np.ndarray, pads, mode: str, value: float) -> np.ndarray:
    """ONNX Pad semantics: crop by the negative pads first, then pad by the positive ones."""
    rank = x.ndim
    begins, ends = list(pads[:rank]), list(pads[rank:])
    x = x[
        tuple(
            slice(max(-b, 0), x.shape[i] - max(-e, 0)) for i, (b, e) in enumerate(zip(begins, ends))
        )
    ]
    widths = [(max(b, 0), max(e, 0)) for b, e in zip(begins, ends)]
    if mode == "constant":
        return np.pad(x, widths, mode="constant", constant_values=np.array(value, dtype=x.dtype))
    return np.pad(x, widths, mode=mode)


def _full_pads(pads, axes, rank):
    if axes is None:
        return list(pads)
    full = [0] * (2 * rank)
    for i, a in enumerate(axes):
        full[a % rank] = pads[i]
        full[rank + a % rank] = pads[len(axes) + i]
    return full


PAD_CASES = {
    "constant_value": dict(pads=[0, 1, 2, 1, 0, 0], mode="constant", value=1.5),
    "default_mode_and_value": dict(pads=[1, 0, 0, 0, 0, 1]),
    "reflect": dict(pads=[0, 0, 1, 0, 0, 2], mode="reflect"),
    "edge_with_crop": dict(pads=[0, -1, 1, 0, 1, -2], mode="edge"),
    "partial_negative_axes": dict(pads=[1, 2], mode="reflect", axes=[-1]),
    "partial_unordered_axes": dict(pads=[1, 0, 2, 1], mode="constant", value=-2.0, axes=[2, 0]),
    "wrap": dict(pads=[0, 0, 2, 0, 0, 3], mode="wrap"),
    "int32_data": dict(pads=[1, 0, 0, 0, 2, 0], mode="constant", value=7, elem=TensorProto.INT32),
    "int32_default_value": dict(pads=[0, 1, 0, 0, 1, 0], elem=TensorProto.INT32),
}


def _pad_applies(version: int, case: str) -> bool:
    params = PAD_CASES[case]
    if params.get("mode") == "wrap" and version < 19:
        return False  # wrap arrives with Pad-19
    return (
        version > 2 or params.get("elem", TensorProto.FLOAT) == TensorProto.FLOAT
    )  # Pad-2: floats


@pytest.mark.parametrize(
    ("version", "case"),
    [(v, c) for v in sorted(PAD_OPSETS) for c in sorted(PAD_CASES) if _pad_applies(v, c)],
)
def test_pad_versions_share_the_newest_canonical_form(
    version: int, case: str, onnx_make_model, onnx_run
) -> None:
    params = dict(PAD_CASES[case])
    shape = (3, 4, 5)
    versioned = dict(params)
    if version < 18 and params.get("axes") is not None:  # axes arrive with Pad-18
        versioned["pads"] = _full_pads(params["pads"], params["axes"], len(shape))
        versioned["axes"] = None
    model = _pad_model(onnx_make_model, PAD_OPSETS[version], shape, **versioned)
    newest = _pad_model(onnx_make_model, PAD_OPSETS[25], shape, **params)
    dtype = helper.tensor_dtype_to_np_dtype(params.get("elem", TensorProto.FLOAT))
    x = (np.arange(np.prod(shape)) - 20).astype(dtype).reshape(shape)
    pads = _full_pads(params["pads"], params.get("axes"), len(shape))
    expected = _numpy_pad(x, pads, params.get("mode", "constant"), params.get("value") or 0)
    _check_versions(onnx_run, "Pad", version, model, newest, {"x": x}, expected)


def test_pad_canonical_form_is_full_rank_with_typed_value(onnx_make_model) -> None:
    model = _pad_model(
        onnx_make_model,
        18,
        (3, 4, 5),
        pads=[1, 0, 2, 1],
        mode="edge",
        axes=[2, -3],
        elem=TensorProto.INT32,
    )
    op, ports = _signature(dmlgraph.load(model))
    assert op == dmlgraph.OnnxOp("Pad", 25, attrs={"mode": "edge"})
    assert ports == (
        ("input", 0),
        ("constant", "<i8", (6,), [0, 0, 1, 1, 0, 2]),
        ("constant", "<i4", (), 0),
        ("constant", "<i8", (3,), [0, 1, 2]),
    )


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_pad_property_all_versions_match_numpy_and_onnxruntime(
    data, onnx_make_model, onnx_run
) -> None:
    rank = data.draw(st.integers(1, 4), label="rank")
    shape = tuple(
        data.draw(st.lists(st.integers(2, 5), min_size=rank, max_size=rank), label="shape")
    )
    version = data.draw(st.sampled_from(sorted(PAD_OPSETS)), label="version")
    modes = ["constant", "edge", "reflect"] + (["wrap"] if version >= 19 else [])
    mode = data.draw(st.sampled_from(modes), label="mode")
    pads = []
    for dim in shape:  # reflect/wrap need pads below the (cropped) size; crop at most dim - 2
        crop = (
            data.draw(st.integers(0, dim - 2), label="crop") if mode in ("constant", "edge") else 0
        )
        begin = data.draw(st.integers(-crop, dim - 1 - crop), label="begin")
        end = (
            data.draw(st.integers(-(crop + min(begin, 0)), dim - 1 - crop), label="end")
            if begin < 0
            else data.draw(st.integers(-crop, dim - 1 - crop), label="end")
        )
        pads.append((begin, end))
    flat = [b for b, _ in pads] + [e for _, e in pads]
    value = data.draw(st.sampled_from([None, 0.0, 3.25, -1.0]), label="value")
    use_axes = version >= 18 and data.draw(st.booleans(), label="use_axes")
    axes = data.draw(st.permutations(list(range(rank))), label="axes") if use_axes else None
    given_pads = flat if axes is None else [flat[a] for a in axes] + [flat[rank + a] for a in axes]
    model = _pad_model(onnx_make_model, PAD_OPSETS[version], shape, given_pads, mode, value, axes)
    newest = _pad_model(onnx_make_model, 25, shape, flat, mode, value)
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    _check_versions(
        onnx_run, "Pad", version, model, newest, {"x": x}, _numpy_pad(x, flat, mode, value or 0)
    )


# ----------------------------------------------------------------------------- emitting


def test_partial_axes_pad_written_for_an_older_opset_gets_full_pads(
    onnx_make_model, onnx_run
) -> None:
    """to_onnx writes the canonical form in each opset's syntax: Pad-13 has no axes input."""
    model = _pad_model(onnx_make_model, 18, (3, 4, 5), pads=[2, 1], mode="reflect", axes=[-2])
    graph = dmlgraph.load(model)
    graph.opset_imports[""] = 13
    exported = graph.to_onnx()
    (pad,) = exported.graph.node
    assert len(pad.input) == 3
    x = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    assert np.array_equal(
        onnx_run(exported, {"x": x})[0], np.pad(x, [(0, 0), (2, 1), (0, 0)], mode="reflect")
    )
    graph.opset_imports[""] = 10  # Pad-2: pads and value become attributes again
    (pad,) = graph.to_onnx().graph.node
    assert {a.name: helper.get_attribute_value(a) for a in pad.attribute} == {
        "mode": b"reflect",
        "pads": [0, 2, 0, 0, 1, 0],
        "value": 0.0,
    }


def test_slice_with_steps_cannot_be_written_as_slice_1(onnx_make_model) -> None:
    graph = dmlgraph.load(_slice_model(onnx_make_model, 13, (4, 5), [0], [4], [0], [2]))
    graph.opset_imports[""] = 9
    with pytest.raises(UnsupportedError, match="'the_slice' .*Slice-1 has no steps"):
        graph.to_onnx()


def test_wrap_cannot_be_written_before_pad_19(onnx_make_model) -> None:
    graph = dmlgraph.load(_pad_model(onnx_make_model, 19, (3, 4), [0, 1, 0, 1], "wrap"))
    graph.opset_imports[""] = 18
    with pytest.raises(UnsupportedError, match="mode 'wrap' cannot be written as Pad-18"):
        graph.to_onnx()


# ----------------------------------------------------------------------------- unknown versions


def test_since_version_outside_the_table_is_an_error_not_a_guess() -> None:
    for op_type, forms in canonical.FORMS.items():
        newer = max(forms) + 1
        with pytest.raises(
            UnsupportedError, match=rf"{op_type} since_version {newer} is not supported"
        ):
            canonical.form_for(op_type, newer, "model.onnx: node 'n'")


def test_pad_1_is_refused_naming_the_node(onnx_make_model) -> None:
    """Pad-1 (opsets 1) is an ONNX version dmlgraph does not register."""
    node = helper.make_node("Pad", ["x"], ["y"], name="old_pad", paddings=[0, 0, 1, 1])
    model = onnx_make_model(
        [node],
        [("x", TensorProto.FLOAT, [2, 2])],
        [("y", TensorProto.FLOAT, [2, 4])],
        opset=1,
        ir_version=3,
    )
    with pytest.raises(
        UnsupportedError, match=r"node 'old_pad' \(Pad, #0\): Pad since_version 1 is not supported"
    ) as refused:
        dmlgraph.load(model)
    # and why, and what to do: it said only which versions dmlgraph knows. Oracles: onnx's own
    # Pad-1 schema (its text orders paddings begins then ends, its example, a 3x2 input padded
    # to 3x4 by [0, 0, 2, 0], per axis), and onnxruntime, which has no Pad-1 kernel
    schema = onnx.defs.get_schema("Pad", 1)
    assert "[x1_begin, x2_begin...x1_end, x2_end,...]" in schema.attributes["paddings"].description
    assert "paddings = [0, 0, 2, 0]" in schema.doc
    import onnxruntime as ort
    with pytest.raises(Exception, match="Could not find an implementation for Pad\\(1\\)"):
        ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    said = str(refused.value)
    assert "its own text and its example disagree" in said and "no Pad-1 kernel" in said
    assert said.endswith("export the model at opset 2 or later, where Pad-2's pads are begins, "
                         "then ends")


def test_opset_newer_than_onnx_knows_is_refused(onnx_make_model) -> None:
    newest = onnx.defs.onnx_opset_version()
    model = onnx_make_model(
        [helper.make_node("Relu", ["x"], ["y"])],
        [("x", TensorProto.FLOAT, [2])],
        [("y", TensorProto.FLOAT, [2])],
        opset=newest + 1,
    )
    with pytest.raises(UnsupportedError, match=f"opset {newest + 1} is newer than"):
        dmlgraph.load(model)


@pytest.mark.parametrize("constant", [(), ("starts",), ("starts", "axes")])
@pytest.mark.parametrize("level", ["1_0", "6_4"])
def test_int32_slice_parameters_read_at_run_time_keep_one_index_type(constant, level) -> None:
    """starts/ends int32 fed at run time, axes and steps left out: the defaults filled in
    beside them (and constant parameters) were int64, and the type check, run again when
    the node is lowered at run time, refused the node ONNX types as one. Oracle: NumPy."""
    from backends import get_backend
    from lowering import lower

    values = {"starts": [-3], "ends": [5], "axes": [-1]}
    fields = ["starts", "ends"] + (["axes"] if "axes" in constant else [])
    graph = helper.make_graph(
        [helper.make_node("Slice", ["x", *fields], ["y"], name="s")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 6])]
        + [helper.make_tensor_value_info(f, TensorProto.INT32, [1])
           for f in fields if f not in constant],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.array(values[f], np.int32), f) for f in constant])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=10)
    x = np.arange(12, dtype=np.float32).reshape(2, 6)
    feeds = {"x": x, **{f: np.array(values[f], np.int32) for f in fields if f not in constant}}
    axis = 1 if "axes" in constant else 0
    expected = x[:, -3:5] if axis else x[-3:5]
    y = get_backend("numpy").run(lower(dmlgraph.load(model), level), feeds)["y"]
    assert y.shape == expected.shape and y.tobytes() == np.ascontiguousarray(expected).tobytes()


def test_a_pads_axes_are_not_folded_into_pads_for_data_of_unknown_rank() -> None:
    """Axes [0, 1] pad the leading two axes of data of any rank; Pad-11 (no axes) needs pads
    for every axis, which an unknown rank cannot give: refused, not written as 4 pads (which
    suit only rank-2 data)."""
    from dmlgraph.errors import UnsupportedError

    graph_proto = helper.make_graph(
        [helper.make_node("Pad", ["x", "p", "", "a"], ["y"], name="pad")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, None)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.array([1, 0, 0, 1], np.int64), "p"),
         numpy_helper.from_array(np.array([0, 1], np.int64), "a")])
    graph = dmlgraph.load(helper.make_model(graph_proto,
                                            opset_imports=[helper.make_opsetid("", 19)]))
    (node,) = graph.nodes
    with pytest.raises(UnsupportedError, match="cannot be folded into the pads"):
        canonical.emit(graph, node, 11)


def test_a_concat_input_left_empty_is_refused_by_name() -> None:
    """onnx's checker passes Concat(['A', '']); lowering said a pass broke an invariant ("no
    tensor named ''"), as if dmlgraph had a bug."""
    from dmlgraph.errors import ModelValidationError

    graph = helper.make_graph(
        [helper.make_node("Concat", ["A", ""], ["Y"], name="cat", axis=3)], "g",
        [helper.make_tensor_value_info("A", TensorProto.FLOAT, [1, 1, 2, 3])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, 1, 2, 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    onnx.checker.check_model(model)
    with pytest.raises(ModelValidationError,
                       match=r"node 'cat' \(Concat\): input 1 is empty \(''\)"):
        dmlgraph.load(model)


@pytest.mark.parametrize("opset", [9, 13])
def test_too_many_starts_without_axes_is_said_of_the_starts(opset) -> None:
    """The error named axes [0, 1, 2, 3], dmlgraph's own defaults, not the model's."""
    from dmlgraph.errors import ModelValidationError

    four = np.zeros(4, np.int64)
    if opset == 9:
        node = helper.make_node("Slice", ["x"], ["y"], name="s", starts=[0] * 4, ends=[1] * 4)
        inits = []
    else:
        node = helper.make_node("Slice", ["x", "st", "en"], ["y"], name="s")
        inits = [numpy_helper.from_array(four, "st"), numpy_helper.from_array(four, "en")]
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 5])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              ir_version=7)
    with pytest.raises(ModelValidationError,
                       match=r"'s' \(Slice\): starts and ends have 4 values for data of rank 3"):
        dmlgraph.load(model)


def test_a_concat_of_scalars_is_refused_as_such() -> None:
    from dmlgraph.errors import ModelValidationError

    graph = helper.make_graph(
        [helper.make_node("Concat", ["x", "x"], ["y"], name="cat", axis=0)], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    with pytest.raises(ModelValidationError, match="rank 1 or more; these are scalars"):
        dmlgraph.load(model)  # it said "axis = 0 is out of range [-0, -1] for rank 0"


def test_a_concat_1_of_rank_1_without_axis_says_the_axis_is_its_default() -> None:
    """Concat-1 joins on axis 1 where the node gives none: the error said "axis = 1 is out
    of range" of a node that gives no axis."""
    from dmlgraph.errors import ModelValidationError

    graph = helper.make_graph(
        [helper.make_node("Concat", ["x", "x"], ["y"], name="cat")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 1)], ir_version=3)
    with pytest.raises(ModelValidationError, match=re.escape(
            "node 'cat' (Concat): axis = 1 is out of range [-1, 0] for rank 1 (Concat-1 joins "
            "on axis 1 where the node gives no axis)")):
        dmlgraph.load(model)
