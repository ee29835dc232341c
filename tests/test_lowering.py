"""The lowering, rule by rule: which descriptors each case becomes, and why.

Expected descriptors come from the seeds' support tables and DML_SPEC.md, results from the
independent oracles in ``oracles.py``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from dmlgraph import DmlgraphError, check, load
from dmlgraph.dml import (
    JoinDesc,
    OperatorDesc,
    Padding1Desc,
    PaddingDesc,
    PaddingMode,
    Slice1Desc,
    SliceDesc,
    TensorDataType,
)
from dmlgraph.dml.enums import FeatureLevel
from dmlgraph.errors import GraphInvariantError, ModelValidationError, UnsupportedError
from dmlgraph.ir import OnnxOp
from lowering import LoweredGraph, Status, lower
from lowering.passes import DEFAULT_PASSES, Context, Origin, Pass, PassManager
from oracles import pad_oracle, run_lowered, same_bits, slice_oracle

REAL_MODELS = [
    "shufflenet_v2_x0_5",
    "squeezenet1_1",
    "tf_mobilenetv3_small_minimal",
    "encodec_encoder_reflect",
]
TARGETS = ("Slice", "Concat", "Pad")


def one_node_model(
    op: str,
    inputs: dict[str, np.ndarray],
    params: dict[str, np.ndarray] | None = None,
    opset: int = 21,
    **attrs: Any,
) -> onnx.ModelProto:
    params = params or {}
    names = list(inputs) + list(params)
    node = helper.make_node(op, names, ["y"], **attrs)
    first = next(iter(inputs.values()))
    elem = helper.np_dtype_to_tensor_dtype(first.dtype)
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info(n, elem, list(a.shape)) for n, a in inputs.items()],
        [helper.make_tensor_value_info("y", elem, [None] * first.ndim)],
        [numpy_helper.from_array(v, n) for n, v in params.items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)


def lowered_one(model: onnx.ModelProto, level: str) -> tuple[LoweredGraph, Any]:
    lowered = lower(load(model), level)
    (record,) = [r for r in lowered.report() if r.op_type in TARGETS]
    return lowered, record


def descs(lowered: LoweredGraph) -> list[OperatorDesc]:
    return [n.op for n in lowered.topological_order() if isinstance(n.op, OperatorDesc)]


def i64(*values: int) -> np.ndarray:
    return np.array(values, dtype=np.int64)


X = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4)


# ----------------------------------------------------------------------------- every version
SLICE_VERSIONS = [
    (1, dict(starts=[1], ends=[3], axes=[2]), {}),
    (10, {}, dict(starts=i64(3), ends=i64(0), axes=i64(2), steps=i64(-1))),
    (11, {}, dict(starts=i64(-1), ends=i64(-4), axes=i64(-1), steps=i64(-2))),
    (13, {}, dict(starts=i64(0, 1), ends=i64(2, 3), axes=i64(0, 2), steps=i64(1, 2))),
]


@pytest.mark.parametrize("opset,attrs,params", SLICE_VERSIONS)
def test_every_slice_version_lowers(opset: int, attrs: dict, params: dict) -> None:
    model = one_node_model("Slice", {"x": X}, params, opset=opset, **attrs)
    lowered, record = lowered_one(model, "6_4")
    assert record.status is Status.LOWERED
    p = attrs or {k: v.tolist() for k, v in params.items()}
    steps = p.get("steps", [1] * len(p["starts"]))
    expected = slice_oracle(X, p["starts"], p["ends"], p["axes"], steps)
    assert same_bits(run_lowered(lowered, {"x": X})[0], expected)


@pytest.mark.parametrize("opset", [1, 4, 11, 13])
def test_every_concat_version_lowers(opset: int) -> None:
    a, b = X, X[:, :1] + 100
    attrs = {} if opset == 1 else {"axis": 1}  # Concat-1's axis defaults to 1
    model = one_node_model("Concat", {"a": a, "b": b}, opset=opset, **attrs)
    lowered, record = lowered_one(model, "6_4")
    assert record.status is Status.LOWERED and record.dml_ops == ("DML_OPERATOR_JOIN",)
    got = run_lowered(lowered, {"a": a, "b": b})[0]
    assert same_bits(got, np.concatenate([a, b], axis=1))


PAD_VERSIONS = [2, 11, 13, 18, 19, 21, 23, 24]


@pytest.mark.parametrize("opset", PAD_VERSIONS)
def test_every_pad_version_lowers(opset: int) -> None:
    pads = [0, 1, 2, 0, 2, 1]
    if opset == 2:
        model = one_node_model("Pad", {"x": X}, opset=2, pads=pads, mode="edge")
    elif opset >= 18:  # with the axes input Pad-18 added: pad axes 1 and 2 only
        params = {"pads": i64(1, 2, 2, 1), "value": np.array(0, np.float32), "axes": i64(1, -1)}
        model = one_node_model("Pad", {"x": X}, params, opset=opset, mode="edge")
    else:
        model = one_node_model("Pad", {"x": X}, {"pads": i64(*pads)}, opset=opset, mode="edge")
    lowered, record = lowered_one(model, "6_4")
    assert record.status is Status.LOWERED
    assert same_bits(run_lowered(lowered, {"x": X})[0], pad_oracle(X, pads, "edge", None))


def test_a_version_no_rule_covers_fails_loudly() -> None:
    graph = load(one_node_model("Concat", {"a": X}, axis=0))
    node = graph.nodes[0]
    future = node.provenance.__class__(node.name, "Concat", "", 99)
    graph.replace_node(node.id, provenance=future)
    with pytest.raises(UnsupportedError, match="since_version 99 has no lowering rule"):
        lower(graph)


# ----------------------------------------------------------------------------- slice
def slice_model(x: np.ndarray, starts, ends, axes, steps) -> onnx.ModelProto:
    params = dict(starts=i64(*starts), ends=i64(*ends), axes=i64(*axes), steps=i64(*steps))
    return one_node_model("Slice", {"x": x}, params)


def test_positive_steps_use_slice_and_negative_ones_slice1() -> None:
    forward, _ = lowered_one(slice_model(X, [1], [4], [2], [2]), "6_4")
    (desc,) = descs(forward)
    assert isinstance(desc, SliceDesc) and desc.strides[-1] == 2
    backward, _ = lowered_one(slice_model(X, [3], [0], [2], [-2]), "2_1")
    (desc,) = descs(backward)
    assert isinstance(desc, Slice1Desc) and -2 in desc.input_window_strides
    assert same_bits(run_lowered(backward, {"x": X})[0], X[:, :, 3:0:-2])


def test_negative_steps_below_2_1_are_a_join_of_single_element_slices() -> None:
    lowered, record = lowered_one(slice_model(X, [-1], [-5], [2], [-1]), "1_0")
    assert record.status is Status.DECOMPOSED
    kinds = [type(d) for d in descs(lowered)]
    assert kinds.count(SliceDesc) == 4 and kinds[-1] is JoinDesc
    assert any("needs DML_OPERATOR_SLICE1" in n for n in record.notes)
    assert same_bits(run_lowered(lowered, {"x": X})[0], X[:, :, ::-1])


def test_int64_below_4_1_moves_as_pairs_of_uint32() -> None:
    x = (np.arange(24, dtype=np.int64) - 12).reshape(2, 3, 4) * (1 << 40)
    lowered, record = lowered_one(slice_model(x, [1], [3], [2], [1]), "3_0")
    (desc,) = descs(lowered)
    assert desc.input_tensor.data_type is TensorDataType.UINT32
    assert desc.input_tensor.sizes[-1] == 2 and desc.input_tensor.sizes[:-1] == (2, 3, 4)
    assert any("2 x UINT32" in n for n in record.notes)
    assert same_bits(run_lowered(lowered, {"x": x})[0], x[:, :, 1:3])
    native, _ = lowered_one(slice_model(x, [1], [3], [2], [1]), "4_1")
    assert descs(native)[0].input_tensor.data_type is TensorDataType.INT64


def test_rank_is_padded_to_four_and_coalesced_to_fit() -> None:
    x = np.arange(2 * 3 * 2 * 2 * 2 * 3, dtype=np.float16).reshape(2, 3, 2, 2, 2, 3)
    lowered, record = lowered_one(slice_model(x, [1, 1], [2, 3], [0, 5], [1, 1]), "2_1")
    (desc,) = descs(lowered)  # [t, 24 untouched, t] + a leading 1: four dimensions
    assert desc.input_tensor.sizes == (1, 2, 24, 3)
    assert same_bits(run_lowered(lowered, {"x": x})[0], x[1:2, :, :, :, :, 1:3])
    small, _ = lowered_one(slice_model(X[0, 0], [1], [3], [0], [1]), "2_1")
    assert descs(small)[0].input_tensor.sizes == (1, 1, 1, 4)


def test_a_slice_no_single_descriptor_holds_becomes_a_chain() -> None:
    x = np.arange(2**7, dtype=np.int32).reshape((2,) * 7)
    starts, ends, axes = [1] * 7, [2] * 7, list(range(7))
    lowered, record = lowered_one(slice_model(x, starts, ends, axes, [1] * 7), "2_1")
    assert record.status is Status.DECOMPOSED and len(record.dml_ops) == 2
    assert same_bits(run_lowered(lowered, {"x": x})[0], x[(slice(1, 2),) * 7])
    one, record = lowered_one(slice_model(x, starts, ends, axes, [1] * 7), "3_0")
    assert record.status is Status.LOWERED  # eight dimensions from FL 3.0


def test_a_reversal_too_long_for_single_element_slices_falls_back_at_once() -> None:
    """Below FL 2.1 a reversed axis of more than MAX_JOIN_PIECES elements cannot be a JOIN of
    single-element SLICEs: refused by its length, before its indices are listed (an axis of
    2**33 elements would have needed 64 GiB for them; before, lowering raised MemoryError)."""
    model = one_node_model("Slice", {"x": np.zeros((1, 1), np.float32)},
                           dict(starts=i64(-1), ends=i64(-(2**63)), axes=i64(1), steps=i64(-1)))
    model.graph.input[0].type.tensor_type.shape.dim[1].dim_value = 2**33
    _, record = lowered_one(model, "1_0")
    assert record.status is Status.FALLBACK
    assert any(f"reversing {2**33} elements" in n and "limit 1024" in n for n in record.notes)


def test_a_reversal_past_the_element_limit_names_that_rule_not_the_table_row() -> None:
    """float32 [70000, 70000] reversed along axis 1 at FL 6.3: SLICE1's row accepts float32
    of rank 2, but the tensor holds more than 2^32 - 1 elements (DML_SPEC.md 2). The note
    named only the row ("accepts 1 to 8 dimensions of ... FLOAT32 ..."), as if the type or
    rank were refused."""
    model = one_node_model("Slice", {"x": np.zeros((1, 1), np.float32)},
                           dict(starts=i64(-1), ends=i64(-(2**63)), axes=i64(1), steps=i64(-1)))
    for dim in model.graph.input[0].type.tensor_type.shape.dim:
        dim.dim_value = 70000
    _, record = lowered_one(model, "6_3")
    assert record.status is Status.FALLBACK
    note = " ".join(record.notes)
    assert "at most 2^32 - 1 elements" in note and "accepts 1 to 8" not in note, note
    assert "reversing 70000 elements" in note, note


def test_a_view_breaking_the_element_limit_gives_way_to_one_that_keeps_it() -> None:
    """float32 [3, 2**31] sliced to rows 1:3: as FLOAT32 the input holds 3 * 2**31 elements,
    past DirectML's 2^32 - 1; from FL 4.1 the untouched rows are UINT64 pairs, [3, 2**30]
    (DML_SPEC.md 2 and 4). Before, the first view's invalid descriptor ended the search and
    the node fell back as a planning error."""
    model = one_node_model("Slice", {"x": np.zeros((3, 2), np.float32)},
                           dict(starts=i64(1), ends=i64(3), axes=i64(0), steps=i64(1)))
    model.graph.input[0].type.tensor_type.shape.dim[1].dim_value = 2**31
    lowered, record = lowered_one(model, "6_4")
    assert record.status is Status.LOWERED, record.notes
    (desc,) = descs(lowered)
    assert isinstance(desc, SliceDesc) and desc.input_tensor.data_type.name == "UINT64"
    assert (desc.input_tensor.sizes, desc.offsets, desc.sizes) == (
        (3, 2**30), (1, 0), (2, 2**30))
    _, record = lowered_one(model, "3_0")  # no 64-bit view there: refused by the rule
    assert record.status is Status.FALLBACK
    assert any("at most 2^32 - 1 elements" in n and "planned descriptor" not in n
               for n in record.notes), record.notes


def test_a_negative_step_beyond_int_is_a_join_of_slices_at_every_level() -> None:
    """SLICE1's strides are INT: a step of -(2**31 + 1) over [2**32 - 1] reads 2 elements
    (2**32 - 2 and 2**31 - 3) that no SLICE1 can stride between; it is a JOIN of two
    single-element SLICEs, at FL 6_4 as at 1_0. Before, it fell back from FL 2.1 on, as a
    planning error."""
    step = -(2**31 + 1)
    model = one_node_model("Slice", {"x": np.zeros((1,), np.float32)},
                           dict(starts=i64(-1), ends=i64(-(2**63)), axes=i64(0), steps=i64(step)))
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_value = 2**32 - 1
    for level in ("1_0", "2_1", "6_4"):
        lowered, record = lowered_one(model, level)
        assert record.status is Status.DECOMPOSED, (level, record.notes)
        slices = [d for d in descs(lowered) if isinstance(d, SliceDesc)]
        assert [d.offsets[-1] for d in slices] == [2**32 - 2, 2**31 - 3]
        assert isinstance(descs(lowered)[-1], JoinDesc)


def test_a_pad_past_the_size_limit_names_the_padding_descriptors_rule_too() -> None:
    """float32 [2**32 - 1] padded by 1 makes 2**32 elements, more than any DirectML size
    holds: the note named only the JOIN the decomposition tried, not why PADDING and
    PADDING1 did not fit."""
    model = pad_model(np.zeros((1,), np.float32), [1, 0], "constant")
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_value = 2**32 - 1
    for level in ("2_1", "6_4"):
        _, record = lowered_one(model, level)
        assert record.status is Status.FALLBACK
        (note,) = record.notes
        single, _, pieces = note.partition("; nor axis by axis: ")
        assert "DML_OPERATOR_PADDING: OutputTensor.Sizes" in single and "4294967296" in single
        assert "DML_OPERATOR_JOIN: OutputTensor.Sizes" in pieces


def test_empty_slice_is_an_empty_constant() -> None:
    lowered, record = lowered_one(slice_model(X, [3], [1], [1], [1]), "6_4")
    assert record.status is Status.FOLDED and not descs(lowered)
    assert lowered.constant("y").shape == (2, 0, 4)


def test_slice_sentinels_follow_slice_13_clamping() -> None:
    big, small = 2**63 - 1, -(2**63)
    lowered, _ = lowered_one(slice_model(X, [big], [small], [2], [-1]), "6_4")
    assert same_bits(run_lowered(lowered, {"x": X})[0], X[:, :, ::-1])
    # a start before the beginning clamps to 0 for a negative step (not Python's -1)
    lowered, record = lowered_one(slice_model(X, [-9], [small], [2], [-1]), "6_4")
    assert same_bits(run_lowered(lowered, {"x": X})[0], X[:, :, :1])


def test_int64_max_end_with_a_negative_step_is_a_declared_divergence() -> None:
    _, record = lowered_one(slice_model(X, [3], [2**63 - 1], [2], [-1]), "6_4")
    assert record.status is Status.FOLDED
    assert any(n.startswith("divergence:") and "INT64_MAX" in n for n in record.notes)


def test_a_slice_of_everything_is_eliminated() -> None:
    x = helper.make_node("Slice", ["a", "s", "e"], ["t"])
    neg = helper.make_node("Neg", ["t"], ["y"])
    graph = helper.make_graph(
        [x, neg], "g", [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2, 3, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None] * 3)],
        [numpy_helper.from_array(i64(0), "s"), numpy_helper.from_array(i64(9), "e")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=10)
    lowered = lower(load(model))
    (record,) = [r for r in lowered.report() if r.op_type == "Slice"]
    assert record.status is Status.ELIMINATED
    assert lowered.find_nodes("Neg")[0].inputs == ("a",)


def test_runtime_parameters_stay_onnx_with_the_reason() -> None:
    node = helper.make_node("Slice", ["x", "starts", "ends"], ["y"])
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4]),
         helper.make_tensor_value_info("starts", TensorProto.INT64, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None] * 3)],
        [numpy_helper.from_array(i64(3), "ends")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=10)
    lowered, record = lowered_one(model, "6_4")
    assert record.status is Status.FALLBACK
    assert "known only at run time" in record.notes[-1]
    assert lowered.find_nodes("Slice")[0].is_onnx


# ----------------------------------------------------------------------------- concat
def test_concat_drops_empty_inputs_and_aliases_a_single_one() -> None:
    empty = np.zeros((2, 0, 4), np.float32)
    model = one_node_model("Concat", {"a": X, "b": empty, "c": X}, axis=-2)
    lowered, record = lowered_one(model, "2_1")
    (desc,) = descs(lowered)
    assert isinstance(desc, JoinDesc) and desc.input_count == 2
    assert any("empty along axis 1" in n for n in record.notes)
    feeds = {"a": X, "b": empty, "c": X}
    assert same_bits(run_lowered(lowered, feeds)[0], np.concatenate([X, X], axis=1))
    # one non-empty input whose result is a graph output: a one-input JOIN, a copy
    lowered, record = lowered_one(one_node_model("Concat", {"a": X, "b": empty}, axis=1), "6_4")
    assert [d.input_count for d in descs(lowered)] == [1]


def test_concat_of_empties_is_an_empty_constant() -> None:
    empty = np.zeros((2, 0, 4), np.float32)
    lowered, record = lowered_one(one_node_model("Concat", {"a": empty, "b": empty}, axis=1), "6_4")
    assert record.status is Status.FOLDED and lowered.constant("y").shape == (2, 0, 4)


def test_bool_concat_joins_uint8() -> None:
    a = np.array([[True, False]]), np.array([[False, True]])
    lowered, record = lowered_one(one_node_model("Concat", {"a": a[0], "b": a[1]}, axis=0), "6_4")
    assert descs(lowered)[0].output_tensor.data_type is TensorDataType.UINT8
    assert same_bits(run_lowered(lowered, {"a": a[0], "b": a[1]})[0], np.concatenate(a))


def test_eight_bit_data_at_fl_1_0_moves_as_uint16_or_stays_onnx_naming_the_row() -> None:
    a = np.arange(8, dtype=np.int8).reshape(2, 4)
    lowered, record = lowered_one(one_node_model("Concat", {"a": a, "b": a}, axis=0), "1_0")
    (desc,) = descs(lowered)
    assert desc.output_tensor.data_type is TensorDataType.UINT16
    assert same_bits(run_lowered(lowered, {"a": a, "b": a})[0], np.concatenate([a, a]))
    odd = np.arange(3, dtype=np.int8).reshape(1, 3)
    _, record = lowered_one(one_node_model("Concat", {"a": odd, "b": odd}, axis=1), "1_0")
    assert record.status is Status.FALLBACK
    assert "DML_OPERATOR_JOIN at DML_FEATURE_LEVEL_1_0 accepts 4 dimensions" in record.notes[-1]


# ----------------------------------------------------------------------------- pad
def pad_model(x: np.ndarray, pads: list[int], mode: str, value: Any = 0) -> onnx.ModelProto:
    params = {"pads": i64(*pads), "value": np.array(value, dtype=x.dtype)}
    return one_node_model("Pad", {"x": x}, params, mode=mode)


def test_constant_fill_uses_padding_when_its_float_is_exact() -> None:
    lowered, record = lowered_one(pad_model(X, [0, 1, 1, 0, 1, 1], "constant", 0.1), "2_1")
    (desc,) = descs(lowered)
    assert isinstance(desc, PaddingDesc) and desc.padding_value == float(np.float32(0.1))
    expected = pad_oracle(X, [0, 1, 1, 0, 1, 1], "constant", np.float32(0.1))
    assert same_bits(run_lowered(lowered, {"x": X})[0], expected)


def test_an_inexact_fill_needs_padding1_or_a_join_of_constant_blocks() -> None:
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    model = pad_model(x, [0, 1, 0, 2], "constant", 16_777_217)  # not a float32
    lowered, record = lowered_one(model, "5_0")
    (desc,) = descs(lowered)
    assert isinstance(desc, Padding1Desc) and desc.padding_value == 16_777_217
    expected = pad_oracle(x, [0, 1, 0, 2], "constant", np.int32(16_777_217))
    assert same_bits(run_lowered(lowered, {"x": x})[0], expected)
    lowered, record = lowered_one(model, "3_1")
    assert record.status is Status.DECOMPOSED and record.dml_ops == ("DML_OPERATOR_JOIN",)
    assert same_bits(run_lowered(lowered, {"x": x})[0], expected)


@pytest.mark.parametrize("bits, dtype, bits_dtype", [
    (0x7F800001, np.float32, np.uint32),  # signalling NaNs
    (0x7FA00000, np.float32, np.uint32),
    (0x7C01, np.float16, np.uint16),
    (0xFFC00123, np.float32, np.uint32),  # quiet, with a sign and a payload
])
@pytest.mark.parametrize("level", ["1_0", "4_0", "6_4"])
def test_a_nan_fill_keeps_its_bits(bits: int, dtype: type, bits_dtype: type, level: str) -> None:
    """Pad moves bits: the padded elements are constant_value's own bits (the oracle). A
    descriptor holding the value as a float (a Python float quiets a signalling NaN; JSON
    writes every NaN as "nan") may not claim them: blocks of constants, or an integer view,
    fill them instead. Before, PADDING's value made 0x7f800001 0x7fc00001."""
    value = np.array(bits, bits_dtype).view(dtype).reshape(())
    x = np.arange(3, dtype=dtype).reshape(1, 3)
    lowered, _ = lowered_one(pad_model(x, [0, 1, 0, 1], "constant", value), level)
    y = run_lowered(lowered, {"x": x})[0].view(bits_dtype)
    assert y[0, 0] == y[0, -1] == bits and (y[0, 1:-1] == x.view(bits_dtype)).all()
    for desc in descs(lowered):
        if isinstance(desc, (PaddingDesc, Padding1Desc)) and isinstance(desc.padding_value, float):
            assert not math.isnan(desc.padding_value)  # a NaN value would be quiet


def test_a_nan_fill_no_padding_value_holds_is_named_by_its_bits() -> None:
    """PADDING's FLOAT holds only the quiet NaN; the note said "cannot hold the fill value nan
    of float32", which the reader sees PADDING can hold. It names the NaN's bits."""
    value = np.array(0xFFC00000, np.uint32).view(np.float32).reshape(())  # -nan
    x = np.ones((1, 1, 1, 2), np.float32)  # FL 1_0: PADDING of FLOAT32, no integer view
    lowered, record = lowered_one(pad_model(x, [0, 0, 0, 1, 0, 0, 0, 0], "constant", value), "1_0")
    assert record.status is Status.DECOMPOSED
    assert any("cannot hold the fill value nan(0xffc00000) of float32" in n for n in record.notes)


def _pad2_model(x: np.ndarray, value_bits: int) -> onnx.ModelProto:
    """A Pad-2 (opset 10) whose FLOAT ``value`` holds these bits: written as its wire form,
    since protobuf's Python API takes doubles and would quiet a signalling NaN."""
    attr = onnx.AttributeProto()
    attr.ParseFromString(  # name "value", f (fixed32), type FLOAT
        b"\x0a\x05value\x15" + np.array(value_bits, "<u4").tobytes() + b"\xa0\x01\x01"
    )
    node = helper.make_node("Pad", ["x"], ["y"], mode="constant", pads=[0, 1, 0, 1])
    node.attribute.append(attr)
    elem = helper.np_dtype_to_tensor_dtype(x.dtype)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", elem, list(x.shape))],
        [helper.make_tensor_value_info("y", elem, None)],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 10)], ir_version=10)


@pytest.mark.parametrize("value_bits, filled", [
    (0x7F800001, 0x7E00),  # signalling: quiet in float16 too
    (0xFF802000, 0xFE01),  # signalling, with a sign and a payload float16 holds
    (0x7FC02000, 0x7E01),  # quiet: as it was
])
@pytest.mark.parametrize("level", ["1_0", "6_4"])
def test_a_pad_2_nan_value_fills_float16_with_a_quiet_nan(
    value_bits: int, filled: int, level: str
) -> None:
    """Pad-2's value is a FLOAT; for float16 data it is converted as C (onnxruntime) and
    onnx.reference convert a float, a signalling NaN coming out quiet (onnx.reference's bits;
    onnxruntime drops the payload, 0x7e00). Before, NumPy's float16 cast kept it signalling:
    0x7f800001 filled 0x7c01, neither oracle's NaN."""
    x = np.array([[1.0, -0.0]], np.float16)
    model = _pad2_model(x, value_bits)
    expected = ReferenceEvaluator(model).run(None, {"x": x})[0].view(np.uint16)
    assert expected[0, 0] == expected[0, -1] == filled
    lowered, _ = lowered_one(model, level)
    assert same_bits(run_lowered(lowered, {"x": x})[0].view(np.uint16), expected)


def test_int64_zero_fill_below_5_0_pads_uint32_pairs() -> None:
    x = np.arange(6, dtype=np.int64).reshape(2, 3) - 3
    lowered, _ = lowered_one(pad_model(x, [1, 0, 0, 1], "constant", 0), "3_1")
    (desc,) = descs(lowered)
    assert isinstance(desc, PaddingDesc) and desc.input_tensor.data_type in (
        TensorDataType.UINT32, TensorDataType.INT32,
    )
    expected = pad_oracle(x, [1, 0, 0, 1], "constant", np.int64(0))
    assert same_bits(run_lowered(lowered, {"x": x})[0], expected)


@pytest.mark.parametrize("level,native", [("6_4", True), ("5_0", False), ("1_0", False)])
def test_wrap_is_native_from_6_4_and_slices_plus_join_below(level: str, native: bool) -> None:
    pads = [0, 2, 5, 0, 1, 3]
    lowered, record = lowered_one(pad_model(X, pads, "wrap"), level)
    if native:
        (desc,) = descs(lowered)
        assert desc.padding_mode is PaddingMode.WRAP
    else:
        assert record.status is Status.DECOMPOSED
        assert {type(d) for d in descs(lowered)} == {SliceDesc, JoinDesc}
    assert same_bits(run_lowered(lowered, {"x": X})[0], pad_oracle(X, pads, "wrap", None))


def test_negative_pads_crop_first_then_pad() -> None:
    pads = [0, -1, 2, 0, 1, -1]
    lowered, record = lowered_one(pad_model(X, pads, "reflect"), "6_4")
    assert record.status is Status.DECOMPOSED
    assert [type(d) for d in descs(lowered)] == [SliceDesc, PaddingDesc]
    assert same_bits(run_lowered(lowered, {"x": X})[0], pad_oracle(X, pads, "reflect", None))


def test_reflect_beyond_the_dimension_is_periodic_and_declared() -> None:
    pads = [0, 0, 5, 0, 0, 4]
    lowered, record = lowered_one(pad_model(X, pads, "reflect"), "6_4")
    assert any(n.startswith("divergence:") for n in record.notes)
    # DML_SPEC.md's map: period 2 * (4 - 1) = 6 over [0, 1, 2, 3]
    row = [1, 2, 3, 2, 1, 0, 1, 2, 3, 2, 1, 0, 1]
    assert run_lowered(lowered, {"x": X})[0][0, 0].tolist() == row


def test_reflect_on_a_single_element_pads_as_edge() -> None:
    x = X[:, :1, :]
    lowered, record = lowered_one(pad_model(x, [0, 2, 1, 0, 1, 1], "reflect"), "6_4")
    modes = [d.padding_mode for d in descs(lowered)]
    assert modes == [PaddingMode.EDGE, PaddingMode.REFLECTION]
    assert same_bits(
        run_lowered(lowered, {"x": x})[0], pad_oracle(x, [0, 2, 1, 0, 1, 1], "reflect", None)
    )


def test_all_padding_of_an_empty_crop_is_a_constant() -> None:
    lowered, record = lowered_one(pad_model(X, [0, 0, -4, 0, 0, 2], "constant", 7), "6_4")
    assert record.status is Status.FOLDED
    assert (lowered.constant("y") == 7).all() and lowered.constant("y").shape == (2, 3, 2)


def test_all_padding_larger_than_the_constant_bound_stays_onnx() -> None:
    """A crop to nothing padded back by 2**26 rows would be an 805 MB constant (2**40 rows:
    12 TiB, a MemoryError before): above folding's bound on added constant data, the node
    falls back, and nothing of that size is made."""
    x = np.zeros((1, 3), np.float32)
    for rows in (2**26, 2**40):
        lowered, record = lowered_one(pad_model(x, [-1, 0, rows, 0], "constant", 1), "6_4")
        assert record.status is Status.FALLBACK
        assert any(f"a constant of shape [{rows}, 3]" in n and "1048576 bytes" in n
                   for n in record.notes)
        assert sum(lowered.constant(n).nbytes for n in lowered.constants) < 1024


@pytest.mark.parametrize("mode, dtype, value, level, message", [
    ("wrap", np.float32, 0, "5_0", "at least 4294967297 JOIN inputs (limit 1024)"),
    ("edge", np.int32, 0, "1_0", "at least 4294967297 JOIN inputs (limit 1024)"),
    ("constant", np.int64, 2**40 + 1, "2_1", "68719476736 bytes of fill constants"),
])
def test_a_long_pad_by_pieces_is_refused_before_its_pieces_are_made(
    mode: str, dtype: type, value: int, level: str, message: str
) -> None:
    """Pads no descriptor takes at the level are split into pieces: a pad of 2**33 would
    need billions of slices, or 64 GiB of fill, and is refused by arithmetic before any
    index or block is made (before, it listed them: a MemoryError)."""
    x = np.zeros((1, 2), dtype)
    lowered, record = lowered_one(pad_model(x, [0, 0, 0, 2**33], mode, value), level)
    assert record.status is Status.FALLBACK
    assert any(message in n for n in record.notes), record.notes


def test_a_border_of_many_periods_of_a_long_axis_is_refused_before_it_is_listed() -> None:
    """Wrap by 2**31 on an axis of 2**24 at FL 5_0: 129 pieces pass the JOIN bound, but the
    border's 2**31 positions would be listed (16 GiB of indices): refused by their count."""
    model = pad_model(np.zeros((1, 1), np.float32), [0, 0, 0, 2**31], "wrap")
    model.graph.input[0].type.tensor_type.shape.dim[1].dim_value = 2**24
    _, record = lowered_one(model, "5_0")
    assert record.status is Status.FALLBACK
    assert any(f"would list {2**31} border positions (limit 8388608)" in n for n in record.notes)


def test_a_constant_pads_crop_may_reach_into_the_other_sides_padding() -> None:
    """[5] padded by [3, -2] with 9: onnxruntime (the oracle) pads, then crops, giving
    [9, 9]; the crop of 2 from an axis of 1 reaches into the padding. Other modes have no
    element left to repeat there, and stay refused."""
    x = np.array([5], np.float32)
    model = pad_model(x, [3, -2], "constant", 9)
    import onnxruntime as ort

    (expected,) = ort.InferenceSession(model.SerializeToString(),
                                       providers=["CPUExecutionProvider"]).run(None, {"x": x})
    assert expected.tolist() == [9, 9]
    lowered, record = lowered_one(model, "6_4")
    assert record.status is Status.FOLDED
    assert same_bits(run_lowered(lowered, {"x": x})[0], expected)
    with pytest.raises(ModelValidationError, match="remove 2 elements from axis 0, which has 1"):
        lower(load(pad_model(x, [3, -2], "edge")))


def test_a_crop_of_one_element_says_element() -> None:
    """"remove 1 elements" said the plural of one."""
    with pytest.raises(ModelValidationError, match=r"remove 1 element from axis 0, which has 0$"):
        lower(load(pad_model(np.zeros([0], np.float32), [0, -1], "edge")))


@pytest.mark.parametrize(
    "pads,mode,message",
    [
        ([0, 0, -5, 0, 0, 0], "constant", "remove 5 elements from axis 2, which has 4"),
        ([0, 0, -4, 0, 0, 2], "edge", r"mode 'edge' cannot pad axis 2: it is empty after "
         r"the crop of pads \[0, 0, -4, 0, 0, 2\], with no elements to repeat"),
    ],
)
def test_bad_pads_name_the_node_and_the_rule(pads: list[int], mode: str, message: str) -> None:
    with pytest.raises(ModelValidationError, match=message):
        lower(load(pad_model(X, pads, mode)))


@pytest.mark.parametrize("mode", ["reflect", "edge", "wrap"])
def test_an_axis_empty_as_given_is_not_said_to_be_cropped(mode: str) -> None:
    """A repeating Pad of an axis that is empty to begin with, by positive pads: the message
    said "after the crop of pads [2, 1]" where nothing was cropped (a helper's sweep)."""
    x = np.zeros((0, 3), np.float32)
    with pytest.raises(ModelValidationError, match=rf"mode '{mode}' cannot pad axis 0: it is "
                       "empty, with no elements to repeat") as caught:
        lower(load(pad_model(x, [2, 0, 1, 0], mode)))
    assert "crop" not in str(caught.value)


# ----------------------------------------------------------------------------- whole models
@pytest.mark.parametrize("level", ["6_4", "2_1"])
@pytest.mark.parametrize("name", REAL_MODELS)
def test_real_models_lower_every_slice_concat_and_pad(name: str, level: str, onnx_models_dir) -> None:
    graph = load(onnx_models_dir / f"{name}.onnx")
    lowered = lower(graph, level)
    records = [r for r in lowered.report() if r.op_type in TARGETS]
    assert records
    for record in records:
        assert record.status is not Status.FALLBACK, record
        for note in record.notes:  # sentences, not reprs
            assert " " in note and "<" not in note and "Traceback" not in note, note
    assert all(n.is_onnx for n in graph.nodes)  # the input graph is untouched


def test_lowering_is_deterministic(onnx_models_dir) -> None:
    graph = load(onnx_models_dir / "encodec_encoder_reflect.onnx")

    def snapshot() -> list:
        lowered = lower(graph, "2_1")
        return [
            (n.op.to_json() if not n.is_onnx else n.op, n.inputs, n.outputs)
            for n in lowered.topological_order()
        ]

    assert snapshot() == snapshot()


def test_lowering_an_already_lowered_graph_is_refused() -> None:
    lowered = lower(load(pad_model(X, [0, 0, 1, 0, 0, 1], "edge")))
    with pytest.raises(UnsupportedError, match="already lowered"):
        lower(lowered)


def test_an_unknown_feature_level_is_one_clear_error() -> None:
    with pytest.raises(DmlgraphError, match="feature level"):
        lower(load(pad_model(X, [0, 0, 1, 0, 0, 1], "edge")), "9_9")


def test_the_pass_manager_names_the_pass_that_broke_an_invariant() -> None:
    class Vandal(Pass):
        name = "vandal"

        def run(self, graph: LoweredGraph, ctx: Context) -> None:
            graph.outputs.append("nowhere")

    graph = LoweredGraph.from_graph(load(pad_model(X, [0, 0, 1, 0, 0, 1], "edge")), "6_4")
    ctx = Context()
    for node in graph.nodes:
        ctx.origins[node.id], ctx.origin_of[node.id] = Origin(node), node.id
    passes = tuple(p() for p in DEFAULT_PASSES[:2]) + (Vandal(),)
    with pytest.raises(GraphInvariantError, match="pass 'vandal' broke an invariant .*fold, lower"):
        PassManager(passes, verify_each=True).run(graph, ctx)


def test_without_verify_each_the_invariants_are_checked_after_the_last_pass() -> None:
    """By default the IR is validated once, after all passes: a broken invariant is still one
    clear error, naming the passes that ran and how to find the culprit."""

    class Vandal(Pass):
        name = "vandal"

        def run(self, graph: LoweredGraph, ctx: Context) -> None:
            if "nowhere" not in graph.outputs:
                graph.outputs.append("nowhere")

    graph = LoweredGraph.from_graph(load(pad_model(X, [0, 0, 1, 0, 0, 1], "edge")), "6_4")
    ctx = Context(folded=True)  # as ``lower`` makes it for a graph fresh from ``load``
    for node in graph.nodes:
        ctx.origins[node.id], ctx.origin_of[node.id] = Origin(node), node.id
    passes = (Vandal(),) + tuple(p() for p in DEFAULT_PASSES[:2])
    with pytest.raises(GraphInvariantError,
                       match=r"passes \(vandal, fold, lower\) broke an invariant .*verify_each"):
        PassManager(passes).run(graph, ctx)


def test_every_emitted_descriptor_validates_and_no_slice_or_concat_stays_onnx(
    onnx_models_dir,
) -> None:
    lowered = lower(load(onnx_models_dir / "shufflenet_v2_x0_5.onnx"), "2_1")
    descriptors = [node.op for node in lowered.nodes if not isinstance(node.op, OnnxOp)]
    assert len(descriptors) >= 42  # its 26 Slices and 16 Concats, each one or more
    for desc in descriptors:
        desc.validate("2_1")
    left = {node.op.op_type for node in lowered.nodes if isinstance(node.op, OnnxOp)}
    assert not left & {"Slice", "Concat", "Pad"}


def test_eight_bit_data_at_fl_1_0_moves_whole_uint16_pairs_along_the_innermost_axis() -> None:
    x = np.arange(16, dtype=np.uint8).reshape(2, 8)
    lowered, record = lowered_one(slice_model(x, [2], [6], [1], [1]), "1_0")
    (desc,) = descs(lowered)  # bytes 2..5 of each row are UINT16 elements 1..2
    assert desc.input_tensor.data_type is TensorDataType.UINT16
    assert desc.offsets[-1] == 1 and desc.sizes[-1] == 2
    assert same_bits(run_lowered(lowered, {"x": x})[0], x[:, 2:6])
    odd, record = lowered_one(slice_model(x, [1], [5], [1], [1]), "1_0")
    assert record.status is Status.FALLBACK  # byte 1 starts mid-element: nothing fits
    pads = [0, 2, 0, 2]
    lowered, record = lowered_one(pad_model(x, pads, "constant", 3), "1_0")
    assert record.status is Status.DECOMPOSED and record.dml_ops == ("DML_OPERATOR_JOIN",)
    expected = pad_oracle(x, pads, "constant", np.uint8(3))
    assert same_bits(run_lowered(lowered, {"x": x})[0], expected)


def test_an_odd_block_folded_into_the_changed_axis_is_noted() -> None:
    """uint8 [4, 3] rows 2:4 at FL 1_0 are bytes 6..11: UINT16 elements 3..5 of a [6] view.
    The note only spoke of leading 1s ("shape [4, 3] viewed as [1, 1, 1, 6]"), which hides
    that the rows' odd block of 3 went into the sliced axis."""
    x = np.arange(12, dtype=np.uint8).reshape(4, 3)
    lowered, record = lowered_one(slice_model(x, [2], [4], [0], [1]), "1_0")
    (desc,) = descs(lowered)
    assert desc.input_tensor.data_type is TensorDataType.UINT16
    assert list(desc.input_tensor.sizes) == [1, 1, 1, 6]
    assert desc.offsets[-1] == 3 and desc.sizes[-1] == 3
    assert same_bits(run_lowered(lowered, {"x": x})[0], x[2:4])
    folded = [n for n in record.notes if n.startswith("axis 0 ")]
    assert folded and "6 UINT16 elements" in folded[0] and "[4, 3] as [6]" in folded[0]
    assert "shape [6] viewed as [1, 1, 1, 6]" in " ".join(record.notes)


def test_the_report_has_one_record_per_node_of_the_model(onnx_models_dir) -> None:
    """Every ONNX node of a real model is accounted for once: the nodes lowering saw, then
    those the importer folded (whose records are made on first use), in a copy too."""
    path = onnx_models_dir / "encodec_encoder_reflect.onnx"
    proto = onnx.load(path)
    # without folding at import, lowering folds the shape chains: each was listed twice
    # (691 records for 632 nodes), once as folded at import
    unfolded = lower(load(path, fold=False), "6_4").report()
    assert sorted((r.name, r.op_type) for r in unfolded) == sorted(
        (n.name, n.op_type) for n in proto.graph.node
    )
    assert {r.op_type for r in unfolded if r.at_import} == {"Constant"}  # as ``prepare`` does
    lowered = lower(load(path), "6_4")
    for graph in (lowered, lowered.copy()):
        records = graph.report()
        assert sorted((r.name, r.op_type) for r in records) == sorted(
            (n.name, n.op_type) for n in proto.graph.node
        )
        folded = [r for r in records if r.at_import]
        assert len(folded) == len(lowered.removed) > 300
        assert {r.status for r in folded} <= {Status.FOLDED, Status.ELIMINATED}


def test_nodes_of_one_form_lower_as_each_would_alone() -> None:
    """Legalization plans a form (op, input shapes, dtype) once per lowering: three Concats
    of one form (one stays ONNX at 1_0, an odd int8 join), two of another, and the Slices
    behind them each get what a model of just that node gets, over their own tensors."""
    odd = np.zeros((1, 3), dtype=np.int8)
    even = np.zeros((2, 4), dtype=np.int8)
    nodes, inputs = [], []
    for k in range(3):
        nodes.append(
            helper.make_node("Concat", [f"p{k}", f"q{k}"], [f"odd{k}"], f"odd{k}", axis=1)
        )
        inputs += [(f"p{k}", odd), (f"q{k}", odd)]
    for k in range(2):
        nodes.append(
            helper.make_node("Concat", [f"r{k}", f"s{k}"], [f"even{k}"], f"even{k}", axis=0)
        )
        nodes.append(helper.make_node("Slice", [f"even{k}", "b", "e"], [f"cut{k}"], f"cut{k}"))
        inputs += [(f"r{k}", even), (f"s{k}", even)]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info(n, TensorProto.INT8, list(a.shape)) for n, a in inputs],
        [helper.make_tensor_value_info(n.output[0], TensorProto.INT8, [None, None]) for n in nodes],
        [numpy_helper.from_array(i64(1, 2), "b"), numpy_helper.from_array(i64(3, 4), "e")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    lowered = lower(load(model), "1_0")
    records = {r.name: r for r in lowered.report()}
    alone_odd = lowered_one(one_node_model("Concat", {"a": odd, "b": odd}, axis=1), "1_0")[1]
    alone_even, even_record = lowered_one(
        one_node_model("Concat", {"a": even, "b": even}, axis=0), "1_0"
    )
    alone_cut, _ = lowered_one(
        one_node_model("Slice", {"x": np.zeros((4, 4), np.int8)}, {"b": i64(1, 2), "e": i64(3, 4)}),
        "1_0",
    )
    by_output = {n.outputs[0]: n for n in lowered.nodes}
    for k in range(3):
        node = by_output[f"odd{k}"]
        assert isinstance(node.op, OnnxOp) and node.inputs == (f"p{k}", f"q{k}")
        assert records[f"odd{k}"].notes == alone_odd.notes
    for k in range(2):
        join, cut = by_output[f"even{k}"], by_output[f"cut{k}"]
        assert (join.op, join.inputs) == (descs(alone_even)[0], (f"r{k}", f"s{k}"))
        assert (cut.op, cut.inputs) == (descs(alone_cut)[0], (f"even{k}",))
        assert records[f"even{k}"].notes == even_record.notes
    statuses = [records[n.name].status for n in nodes]
    assert statuses[:3] == [Status.FALLBACK] * 3 and set(statuses[3:]) == {Status.LOWERED}
    x = {n: np.arange(a.size, dtype=np.int8).reshape(a.shape) + i for i, (n, a) in enumerate(inputs)}
    results = dict(zip([n.output[0] for n in nodes], run_lowered(lowered, x)))
    for k in range(2):
        joined = np.concatenate([x[f"r{k}"], x[f"s{k}"]])
        assert same_bits(results[f"cut{k}"], joined[1:3, 2:4])


@pytest.mark.parametrize("level", ["1_0", "6_4"])
def test_a_node_lowered_to_one_descriptor_or_left_onnx_keeps_its_id(
    level: str, onnx_models_dir
) -> None:
    """docs/DECISIONS.md: the lowered graph's node for a LOWERED or FALLBACK record is the
    imported graph's node of that name, under the same id."""
    graph = load(onnx_models_dir / "shufflenet_v2_x0_5.onnx")
    lowered = lower(graph, level)
    imported = {node.name: node.id for node in graph.nodes}
    status = {record.name: record.status for record in lowered.report()}
    kept = [
        (node.name, node.id)
        for node in lowered.nodes
        if status[node.name] in (Status.LOWERED, Status.FALLBACK)
    ]
    assert set(status.values()) >= {Status.LOWERED, Status.FALLBACK}
    assert kept == [(name, imported[name]) for name, _ in kept]
    assert len(kept) == len(graph.nodes)


_SCALAR_NODES = {  # (node, its empty parameters, opset, the start of its divergence note)
    "Pad": (helper.make_node("Pad", ["x", "p", "v"], ["y"], mode="constant", name="pad"),
            [numpy_helper.from_array(np.zeros(0, np.int64), "p"),
             numpy_helper.from_array(np.array(1.0, np.float32), "v")], 19, "to pad"),
    "Slice": (helper.make_node("Slice", ["x", "st", "en"], ["y"], name="slice"),
              [numpy_helper.from_array(np.zeros(0, np.int64), "st"),
               numpy_helper.from_array(np.zeros(0, np.int64), "en")], 13, "to slice"),
}


@pytest.mark.parametrize("graph_output", [True, False])
@pytest.mark.parametrize("op", sorted(_SCALAR_NODES))
def test_a_pad_or_slice_of_a_scalar_is_the_scalar_and_a_declared_divergence(
    op, graph_output
) -> None:
    """Their parameters of a rank-0 tensor are empty: the result is the input; onnxruntime fails on it at run time ("Cannot slice scalars"). The Pad used to
    raise a ValueError out of the lowering; check stopped on the Slice's onnxruntime error,
    where the Pad was named a known divergence."""
    node, params, opset, what = _SCALAR_NODES[op]
    nodes = [node] + ([] if graph_output else [helper.make_node("Neg", ["y"], ["z"])])
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [])],
        [helper.make_tensor_value_info("y" if graph_output else "z", TensorProto.FLOAT, [])],
        params)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              ir_version=8)
    lowered = lower(load(model), "6_4")
    (record,) = [r for r in lowered.report() if r.op_type == op]
    assert any(n.startswith(f"divergence: a scalar has no axis {what}") for n in record.notes)
    x = np.array(2.5, np.float32)
    result = run_lowered(lowered, {"x": x})[0]
    assert result.shape == () and result.dtype == x.dtype
    assert result == (x if graph_output else -x)
    report = check(model, inputs={"x": x})
    # onnxruntime cannot run it: compared with onnx.reference, which computes it
    assert report.passed and report.compared == 1


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "wrap"])
@pytest.mark.parametrize("shape, pads, expected", [
    ((0,), [1, -1], (0,)),
    ((2, 1, 0, 6), [1, 2, 0, 3, 2, -2, 0, 0], (5, 1, 0, 9)),
])
def test_a_pad_of_an_empty_tensor_into_an_empty_result_is_empty(mode, shape, pads,
                                                               expected) -> None:
    """No element to pad and none in the result: onnxruntime gives the empty result in every
    mode, though the crops remove more than an axis holds (refused in edge and reflect)."""
    graph = helper.make_graph(
        [helper.make_node("Pad", ["x", "p"], ["y"], mode=mode, name="pad")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.array(pads, np.int64), "p")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)], ir_version=10)
    (y,) = run_lowered(lower(load(model), "6_4"), {"x": np.zeros(shape, np.float32)})
    assert y.shape == expected and y.dtype == np.float32


@pytest.mark.parametrize("pads", [[2**63 - 1, 0], [2**62, 2**62]])
def test_pads_beyond_an_int64_dimension_are_one_clear_error(pads) -> None:
    graph = helper.make_graph(
        [helper.make_node("Pad", ["x", "p"], ["y"], name="pad")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.array(pads, np.int64), "p")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)], ir_version=10)
    with pytest.raises(ModelValidationError, match=r"make axis 0 of size \d+, beyond the int64"):
        lower(load(model))


@pytest.mark.parametrize("sizes", [[2**63 - 1, 1], [2**62, 2**62]])
def test_a_concat_beyond_an_int64_dimension_is_one_clear_error(sizes) -> None:
    """As Pad's: onnx's inference gave up (a shape with a made-up name), and the lowered
    graph's output was of size 2^64 - 2, past the int64 an ONNX dimension is."""
    graph = helper.make_graph(
        [helper.make_node("Concat", ["a", "b"], ["y"], axis=0, name="join")], "g",
        [helper.make_tensor_value_info(name, TensorProto.FLOAT, [size])
         for name, size in zip("ab", sizes)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=10)
    with pytest.raises(ModelValidationError,
                       match=rf"'join' .*make it of size {sum(sizes)}, beyond the int64"):
        lower(load(model))


@pytest.mark.parametrize("shape", [[2**63 - 1, 4], [2**62, 2]])
def test_an_input_of_more_elements_than_an_int64_counts_is_one_clear_error(shape) -> None:
    """A tensor's element count is an int64 (onnxruntime's TensorShape::Size): a Flatten of
    [2^63 - 1, 4] was imported with a wrapped size."""
    graph = helper.make_graph(
        [helper.make_node("Flatten", ["x"], ["y"], axis=0)], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["a", "b"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=10)
    count = shape[0] * shape[1]
    with pytest.raises(ModelValidationError,
                       match=rf"graph input 'x' .* holds {count} elements, beyond the int64"):
        load(model, input_shapes={"x": shape})
    declared = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                                 ir_version=10)
    declared.graph.input[0].CopyFrom(helper.make_tensor_value_info("x", TensorProto.FLOAT, shape))
    with pytest.raises(ModelValidationError, match=rf"holds {count} elements"):
        load(declared)


def test_a_string_pad_fills_with_the_empty_string_by_default() -> None:
    """ONNX's default constant_value is 0, False or "": the IR's default for strings was the
    integer 0 in an object array, which onnx cannot serialize for the fallback."""
    from backends import get_backend

    graph = helper.make_graph(
        [helper.make_node("Pad", ["x", "p"], ["y"], name="pad")], "g",
        [helper.make_tensor_value_info("x", TensorProto.STRING, [2])],
        [helper.make_tensor_value_info("y", TensorProto.STRING, None)],
        [numpy_helper.from_array(np.array([1, 1], np.int64), "p")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=8)
    lowered = lower(load(model))
    y = get_backend("numpy", fallback="reference").run(
        lowered, {"x": np.array(["a", "b"], dtype=object)})["y"]
    assert y.tolist() == ["", "a", "b", ""]


@pytest.mark.parametrize("op", ["Slice", "Pad"])
def test_a_string_nodes_reason_is_said_once(op) -> None:
    """SLICE and SLICE1 (PADDING and PADDING1) fail a string tensor for the same reason: the
    note said it once per operator."""
    params = {"Slice": [i64(1), i64(2)], "Pad": [i64(1, 1)]}[op]
    names = [f"p{k}" for k in range(len(params))]
    graph = helper.make_graph(
        [helper.make_node(op, ["x", *names], ["y"], name="n")], "g",
        [helper.make_tensor_value_info("x", TensorProto.STRING, [3])],
        [helper.make_tensor_value_info("y", TensorProto.STRING, None)],
        [numpy_helper.from_array(p, n) for p, n in zip(params, names)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=8)
    (record,) = [r for r in lower(load(model), "6_4").report() if r.name == "n"]
    assert record.status is Status.FALLBACK
    assert " ".join(record.notes).count("DirectML has no STRING tensors") == 1


@pytest.mark.parametrize("elem", [TensorProto.INT4, TensorProto.UINT4])
def test_a_sub_byte_pad_s_reason_names_the_tables_operators(elem) -> None:
    """A 4-bit Pad stays ONNX at every level (DML_SPEC: INT4 and UINT4 came with FL 6.3, in
    no row of these operators' tables); its note said "Slice, JOIN and PADDING", an ONNX op
    name among DML ones, leaving SLICE1 and PADDING1 out."""
    graph = helper.make_graph(
        [helper.make_node("Pad", ["x", "p"], ["y"], mode="edge", name="n")], "g",
        [helper.make_tensor_value_info("x", elem, [3, 4])],
        [helper.make_tensor_value_info("y", elem, None)],
        [numpy_helper.from_array(i64(1, 0, 1, 2), "p")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    for level in ("1_0", "6_3", "6_4"):
        (record,) = [r for r in lower(load(model), level).report() if r.name == "n"]
        assert record.status is Status.FALLBACK
        assert "is a sub-byte type, which no table row of DML_OPERATOR_SLICE, " \
            "DML_OPERATOR_SLICE1, DML_OPERATOR_JOIN, DML_OPERATOR_PADDING, " \
            "DML_OPERATOR_PADDING1 accepts" in " ".join(record.notes)


def test_a_pad_2_value_beyond_float16_is_inf_without_a_warning() -> None:
    import warnings

    graph = helper.make_graph(
        [helper.make_node("Pad", ["x"], ["y"], pads=[1, 1], value=1e5, name="pad")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [5])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 10)], ir_version=8)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (y,) = run_lowered(lower(load(model)), {"x": np.arange(3, dtype=np.float16)})
    assert y.tolist() == [np.inf, 0, 1, 2, np.inf]


@pytest.mark.parametrize("level", ["2_1", "6_4"])  # DML_PADDING, and PADDING1
def test_pads_filling_zero_and_minus_zero_stay_two_descriptors(level: str) -> None:
    """Descriptors compare by their fields' bits: Simplify merged a PADDING filling -0.0 into
    one filling 0.0 of the same input, and the JOIN of both showed +0.0 (onnxruntime: -0.0)."""
    import onnxruntime as ort

    fills = [numpy_helper.from_array(np.array(v, np.float32), n) for n, v in (("c0", 0.0),
                                                                             ("c1", -0.0))]
    model = helper.make_model(helper.make_graph(
        [helper.make_node("Pad", ["x", "p", "c0"], ["a"], name="plus"),
         helper.make_node("Pad", ["x", "p", "c1"], ["b"], name="minus"),
         helper.make_node("Concat", ["a", "b"], ["y"], axis=0)], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [8])],
        [numpy_helper.from_array(np.array([1, 1], np.int64), "p"), *fills]),
        opset_imports=[helper.make_opsetid("", 19)], ir_version=9)
    x = np.array([1, 2], np.float32)
    (expected,) = ort.InferenceSession(model.SerializeToString(),
                                       providers=["CPUExecutionProvider"]).run(None, {"x": x})
    lowered = lower(load(model), level)
    assert sum(n.op.name.startswith("DML_OPERATOR_PADDING") for n in lowered.nodes) == 2
    assert same_bits(run_lowered(lowered, {"x": x})[0], expected)


def test_ops_differing_in_the_sign_of_a_zero_are_exported_apart() -> None:
    """The exporter caches protos per op: LeakyRelu(alpha=-0.0) was written with the alpha of
    an earlier LeakyRelu(alpha=0.0), and its fallback computed other signs of zero."""
    model = helper.make_model(helper.make_graph(
        [helper.make_node("LeakyRelu", ["x"], ["y0"], alpha=0.0),
         helper.make_node("LeakyRelu", ["x"], ["y1"], alpha=-0.0)], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1]) for n in ("y0", "y1")]),
        opset_imports=[helper.make_opsetid("", 16)], ir_version=8)
    exported = load(model).to_onnx()
    alphas = [n.attribute[0].f for n in exported.graph.node]
    assert [math.copysign(1, a) for a in alphas] == [1, -1]


# ----------------------------------------------------------------------------- folding skipped
def test_lowering_does_not_fold_again_what_the_importer_folded(
    monkeypatch: pytest.MonkeyPatch, onnx_models_dir
) -> None:
    """A graph as ``load`` left it is at folding's fixed point, so lowering skips its own
    search for constants (an eighth of lowering time on shufflenet); what it makes is what
    the search would have made."""
    import dmlgraph.folding

    for name in REAL_MODELS:
        graph = load(onnx_models_dir / f"{name}.onnx")
        assert graph.is_folded
        searched = graph.copy()
        searched._folded = None  # as if never marked
        expected = lower(searched, "6_4")
        with monkeypatch.context() as m:
            m.setattr(dmlgraph.folding, "fold_constants", _must_not_run)
            got = lower(graph, "6_4", verify_each=False)
        assert [(r.name, r.status, r.dml_ops, r.notes) for r in got.report()] == [
            (r.name, r.status, r.dml_ops, r.notes) for r in expected.report()
        ], name
        assert [n.op for n in got.topological_order()] == [
            n.op for n in expected.topological_order()
        ], name


def _must_not_run(*args: object, **kwargs: object) -> list[str]:
    raise AssertionError("lowering searched for constants to fold in a folded graph")


def test_lowering_folds_what_became_constant_after_import() -> None:
    """An input made a constant after ``load``: lowering folds the Slice reading it."""
    from dmlgraph.ir import TensorInfo

    graph = load(_slice_then_neg())
    graph.inputs.remove("x")
    graph.set_tensor(TensorInfo("x", data=X))
    assert not graph.is_folded
    lowered = lower(graph, "6_4")
    # one record per node: the Slice was also listed as "computed from constants at import"
    assert [r.op_type for r in lowered.report()] == ["Slice", "Neg"]
    record = lowered.report()[0]
    assert record.status is Status.FOLDED and not record.at_import
    assert record.notes == ("computed from constants before lowering",)
    assert same_bits(lowered.constant("s"), X[:, :, 1:3])


def _slice_then_neg() -> onnx.ModelProto:
    """x -> Slice(x[:, :, 1:3]) -> s -> Neg -> y."""
    nodes = [helper.make_node("Slice", ["x", "b", "e", "a"], ["s"]),
             helper.make_node("Neg", ["s"], ["y"])]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(X.shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(i64(1), "b"), numpy_helper.from_array(i64(3), "e"),
         numpy_helper.from_array(i64(2), "a")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])


def test_lowering_folds_a_node_that_no_longer_computes_a_graph_output() -> None:
    """A node computing a graph output is not folded; once the output is dropped, it is."""
    nodes = [helper.make_node("Neg", ["c"], ["n"]), helper.make_node("Add", ["x", "n"], ["y"])]
    graph_proto = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2]),
         helper.make_tensor_value_info("n", TensorProto.FLOAT, [2])],
        [numpy_helper.from_array(np.array([1.0, 2.0], np.float32), "c")])
    model = helper.make_model(graph_proto, opset_imports=[helper.make_opsetid("", 21)])
    graph = load(model)
    assert [n.op_type for n in graph.nodes] == ["Neg", "Add"]  # n is a graph output
    graph.outputs = ["y"]
    assert not graph.is_folded
    lowered = lower(graph, "6_4")
    assert [n.op_type for n in lowered.nodes] == ["Add"]
    assert same_bits(lowered.constant("n"), np.array([-1.0, -2.0], np.float32))


def test_a_graph_marked_folded_that_is_not_fails_verification() -> None:
    """With ``verify_each``, lowering checks the mark it trusts: nothing left would fold."""
    from dmlgraph.ir import TensorInfo

    graph = load(_slice_then_neg())
    graph.inputs.remove("x")
    graph.set_tensor(TensorInfo("x", data=X))
    graph.mark_folded()  # wrongly: the Slice now reads only constants
    with pytest.raises(GraphInvariantError, match="marked folded, but these nodes fold"):
        lower(graph, "6_4", verify_each=True)


# ----------------------------------------------------------------------------- lowering folds
# Graphs loaded with fold=False, built by hand, or edited after ``load`` reach lowering with
# constants still to fold: lowering folds them as the importer does (canonical forms, shapes
# evaluation corrects, dead nodes). Oracles: onnxruntime on the same model, and NumPy.
def _onnxruntime(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> np.ndarray:
    import onnxruntime

    model.ir_version = min(model.ir_version, 10)
    session = onnxruntime.InferenceSession(model.SerializeToString(),
                                           providers=["CPUExecutionProvider"])
    return session.run(None, feeds)[0]


def _pad_with_computed_pads(shape, begin, end, axes) -> onnx.ModelProto:
    """Pad-21 with ``axes``, its pads a Concat of two initializers."""
    nodes = [helper.make_node("Concat", ["pb", "pe"], ["pads"], axis=0),
             helper.make_node("Pad", ["x", "pads", "", "axes"], ["y"], mode="constant")]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(i64(*begin), "pb"), numpy_helper.from_array(i64(*end), "pe"),
         numpy_helper.from_array(i64(*axes), "axes")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])


@pytest.mark.parametrize("fold", [True, False])
@pytest.mark.parametrize(
    "shape, begin, end, axes",
    [([2, 3], [1, 0], [2, 0], [1, 0]),  # axes out of order: was (5, 3) for (2, 6)
     ([2, 3, 4], [1], [2], [2])],  # some axes: was an IndexError
)
def test_a_pad_whose_pads_lowering_folds_reads_them_by_its_axes(fold, shape, begin, end, axes):
    model = _pad_with_computed_pads(shape, begin, end, axes)
    x = np.arange(math.prod(shape), dtype=np.float32).reshape(shape)
    got = run_lowered(lower(load(model, fold=fold), "6_4"), {"x": x})[0]
    assert same_bits(got, _onnxruntime(model, {"x": x}))


@pytest.mark.parametrize("fold", [True, False])
def test_a_pad_whose_pads_become_constant_after_load_reads_them_by_its_axes(fold) -> None:
    from dmlgraph.ir import TensorInfo

    graph_proto = helper.make_graph(
        [helper.make_node("Pad", ["x", "pads", "", "axes"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
         helper.make_tensor_value_info("pads", TensorProto.INT64, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(i64(1, 0), "axes")])
    graph = load(helper.make_model(graph_proto, opset_imports=[helper.make_opsetid("", 21)]),
                 fold=fold)
    graph.inputs.remove("pads")
    graph.set_tensor(TensorInfo("pads", data=i64(1, 0, 2, 0)))  # axis 1: (1, 2); axis 0: none
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    got = run_lowered(lower(graph, "6_4"), {"x": x})[0]
    assert same_bits(got, np.pad(x, [(0, 0), (1, 2)]))


def test_a_slice_whose_parameters_lowering_folds_is_canonical_first() -> None:
    """Without folding at import, starts/ends of a length inference cannot tell (a NonZero
    chain) leave the Slice without axes/steps: lowering raised a TypeError."""
    nodes = [helper.make_node("NonZero", ["c"], ["nz"]),
             helper.make_node("Squeeze", ["nz", "zero"], ["st"]),
             helper.make_node("Add", ["st", "two"], ["en"]),
             helper.make_node("Slice", ["x", "st", "en"], ["y"])]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(i64(0, 5), "c"), numpy_helper.from_array(i64(0), "zero"),
         numpy_helper.from_array(i64(2), "two")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    got = run_lowered(lower(load(model, fold=False), "6_4"), {"x": x})[0]
    assert same_bits(got, x[1:3])


def test_a_zero_step_lowering_folds_is_refused_clearly() -> None:
    """A computed step of 0: a ZeroDivisionError without folding at import."""
    nodes = [helper.make_node("Mul", ["one", "zero"], ["step"]),
             helper.make_node("Slice", ["x", "st", "en", "ax", "step"], ["y"], name="s")]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(i64(v), n)
         for n, v in (("st", 1), ("en", 3), ("ax", 1), ("one", 1), ("zero", 0))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    with pytest.raises(ModelValidationError, match=r"node 's' \(Slice\).*a step must not be 0"):
        lower(load(model, fold=False), "6_4")


def test_a_float_range_shape_lowering_folds_is_the_evaluated_one() -> None:
    """onnx infers 69 elements for this Range; it makes 68. Lowering's folding adopted the
    inferred length for Shape without folding at import: a silently wrong [69]."""
    nodes = [helper.make_node("Range", ["s", "l", "d"], ["r"]),
             helper.make_node("Shape", ["r"], ["sr"]),
             helper.make_node("Identity", ["sr"], ["y"])]
    inits = [numpy_helper.from_array(np.array(v, np.float32), n)
             for n, v in (("s", -7.2131205), ("l", 6.3868794), ("d", 0.2))]
    graph = helper.make_graph(nodes, "g", [], [helper.make_tensor_value_info(
        "y", TensorProto.INT64, [1])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    expected = _onnxruntime(model, {})
    assert expected.tolist() == [68]
    for fold in (True, False):
        assert run_lowered(lower(load(model, fold=fold), "6_4"), {})[0].tolist() == [68]


def test_hand_built_slices_and_pads_are_made_canonical_by_lowering() -> None:
    """A Slice without axes/steps (TypeError) and a Pad-25 with axes (IndexError), built with
    the Graph API."""
    from dmlgraph.ir import Graph, Provenance, TensorInfo

    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    sliced = Graph(opset_imports={"": 13})
    sliced.add_input(TensorInfo("x", np.float32, (4, 6)))
    sliced.set_tensor(TensorInfo("st", data=i64(1)))
    sliced.set_tensor(TensorInfo("en", data=i64(3)))
    sliced.add_node(OnnxOp("Slice", 13), ["x", "st", "en"], ["y"],
                    Provenance("s", "Slice", "", 13))
    sliced.outputs = ["y"]
    assert same_bits(run_lowered(lower(sliced, "6_4"), {"x": x})[0], x[1:3])
    padded = Graph(opset_imports={"": 21})
    padded.add_input(TensorInfo("x", np.float32, (4, 6)))
    padded.set_tensor(TensorInfo("p", data=i64(1, 2)))
    padded.set_tensor(TensorInfo("a", data=i64(1)))
    padded.add_node(OnnxOp("Pad", 21, attrs={"mode": "constant"}), ["x", "p", "", "a"], ["y"],
                    Provenance("p", "Pad", "", 21))
    padded.outputs = ["y"]
    assert same_bits(run_lowered(lower(padded, "6_4"), {"x": x})[0],
                     np.pad(x, [(0, 0), (1, 2)]))


@pytest.mark.parametrize("fold", [True, False])
def test_nodes_nothing_needs_are_reported_eliminated(fold) -> None:
    """Dropped outputs and a node nothing reads: each "eliminated", not "folded: computed from
    constants" (a Concat of the graph input), "decomposed" into nothing, or "fallback"."""
    x_info = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 6])
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="relu"),
             helper.make_node("Concat", ["x", "x"], ["z"], name="concat", axis=0),
             helper.make_node("Neg", ["c"], ["n"], name="neg_c"),
             helper.make_node("Neg", ["x"], ["unused"], name="neg_x")]
    graph_proto = helper.make_graph(
        nodes, "g", [x_info], [helper.make_tensor_value_info(n, TensorProto.FLOAT, None)
                               for n in ("y", "z", "n")],
        [numpy_helper.from_array(np.full((4, 6), 2, np.float32), "c")])
    graph = load(helper.make_model(graph_proto, opset_imports=[helper.make_opsetid("", 21)]),
                 fold=fold)
    graph.outputs = ["y"]
    report = {r.name: (r.status, r.notes, r.at_import) for r in lower(graph, "6_4").report()}
    unused = ("nothing reads its result",)
    assert report["concat"] == (Status.ELIMINATED, unused, False)
    assert report["neg_x"] == (Status.ELIMINATED, unused, fold)  # fold: gone at import
    assert report["neg_c"] == (Status.FOLDED, ("computed from constants before lowering",),
                               False)
    assert report["relu"][0] is Status.FALLBACK


def test_simplify_reports_the_nodes_it_drops_as_eliminated() -> None:
    """Simplify drops what nothing reads: their origins say so, not what an earlier pass made
    of them (a JOIN reported "decomposed" into no operator, a Neg "fallback")."""
    x_info = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 6])
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="relu"),
             helper.make_node("Concat", ["x", "x"], ["z"], name="concat", axis=0),
             helper.make_node("Neg", ["x"], ["n"], name="neg")]
    graph_proto = helper.make_graph(
        nodes, "g", [x_info], [helper.make_tensor_value_info(n, TensorProto.FLOAT, None)
                               for n in ("y", "z", "n")])
    graph = LoweredGraph.from_graph(
        load(helper.make_model(graph_proto, opset_imports=[helper.make_opsetid("", 21)])),
        FeatureLevel.parse("6_4"))
    graph.outputs = ["y"]  # concat and neg are dead from here on
    ctx = Context(folded=True)  # the fold pass would drop them first
    for node in graph.nodes:
        ctx.origins[node.id], ctx.origin_of[node.id] = Origin(node), node.id
    PassManager(tuple(p() for p in DEFAULT_PASSES)).run(graph, ctx)
    by_name = {o.node.name: o for o in ctx.origins.values()}
    assert [n.name for n in graph.nodes] == ["relu"]
    for name in ("concat", "neg"):
        assert by_name[name].status is Status.ELIMINATED, name
        assert by_name[name].notes == ["nothing reads its result"], name


def test_a_node_only_folded_nodes_read_is_reported_folded_with_them() -> None:
    """Relu(x) read only by a Shape that folds: gone with it, "folded" (not "eliminated")."""
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
             helper.make_node("Shape", ["r"], ["s"], name="shape"),
             helper.make_node("Reshape", ["x", "s"], ["y"], name="reshape")]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    report = {r.name: (r.status, r.notes) for r in lower(load(model), "6_4").report()}
    assert report["relu"] == (Status.FOLDED, ("its result was only needed by folded nodes",))
    assert report["shape"][0] is Status.FOLDED


def test_a_graph_folding_finished_with_is_not_folded_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """``folding.fold`` marks the fixed point it reaches (the numpy backend folds the graph
    of a Slice/Pad lowered at run time, then lowers it: unmarked, lowering would fold it
    again, whole-graph inference included)."""
    import dmlgraph.folding

    graph = load(_slice_then_neg(), fold=False)
    assert not graph.is_folded
    dmlgraph.folding.fold(graph)
    assert graph.is_folded
    monkeypatch.setattr(dmlgraph.folding, "fold", _must_not_run)
    lower(graph, "6_4")


@pytest.mark.parametrize("mode", ["edge", "reflect", "wrap"])
def test_a_crop_to_no_elements_with_an_empty_result_is_a_noted_divergence(mode) -> None:
    """Pads [-2, 0, 0, 1] on [2, 3]: the result is empty, (0, 4), as ONNX defines it, but
    onnxruntime refuses every non-constant mode ("zero effective input extent"): noted."""
    model = pad_model(np.ones((2, 3), np.float32), [-2, 0, 0, 1], mode)
    lowered, record = lowered_one(model, "6_4")
    assert record.status is Status.FOLDED
    assert lowered.constant("y").shape == (0, 4)
    assert any(n.startswith("divergence:") and "zero effective input extent" in n
               for n in record.notes)
    with pytest.raises(Exception, match="zero effective input extent"):
        _onnxruntime(model, {"x": np.ones((2, 3), np.float32)})
    _, constant = lowered_one(pad_model(np.ones((2, 3), np.float32), [-2, 0, 0, 1],
                                        "constant"), "6_4")
    assert not any(n.startswith("divergence:") for n in constant.notes)


# ----------------------------------------------------------------------------- edits after load
# An edit to a loaded graph can change the shapes of everything downstream: lowering must
# derive them anew, not lower the readers for the shapes ``load`` inferred. Oracles: NumPy,
# and onnxruntime on the edited graph's export.
def _relu_then_concat() -> onnx.ModelProto:
    """x [4, 6] -> Relu (a) -> Concat(a, a) on axis 0 (y); z [2, 3] is a second input."""
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="relu"),
             helper.make_node("Concat", ["a", "a"], ["y"], axis=0, name="cat")]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 6]),
                     helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


@pytest.mark.parametrize("fold", [True, False])
def test_a_node_rewired_after_load_has_its_readers_lowered_for_the_new_shape(fold) -> None:
    graph = load(_relu_then_concat(), fold=fold)
    relu = graph.find_nodes("Relu")[0]
    graph.set_input(relu.id, 0, "z")
    x = np.ones((4, 6), np.float32)
    z = np.arange(-3, 3, dtype=np.float32).reshape(2, 3)
    lowered = lower(graph, "6_4")
    assert lowered.tensors["y"].shape == (4, 3)  # was (8, 6): the JOIN made for x's shape
    got = run_lowered(lowered, {"x": x, "z": z})[0]
    assert same_bits(got, np.concatenate([np.maximum(z, 0)] * 2))
    assert graph.tensors["y"].shape == (8, 6)  # the user's graph is left as it was
    exported = _onnxruntime(graph.to_onnx(), {"x": x, "z": z})  # no stale value infos
    assert same_bits(exported, got)
    extracted = graph.extract([node.id for node in graph.nodes])  # the marks go with it
    assert lower(extracted, "6_4").tensors["y"].shape == (4, 3)


def test_to_onnx_of_an_edited_or_built_graph_types_its_outputs() -> None:
    """An output an edit made stale, or a node's output in a graph built by hand, was
    written with no type at all: onnx's checker refused the export, and so did
    dmlgraph's own load and check. Its type is inferred anew, the edit's (int32 here)."""
    from dmlgraph import Graph, Provenance, TensorInfo

    graph = load(_relu_then_concat())
    relu = graph.find_nodes("Relu")[0]
    graph.replace_node(relu.id, op=OnnxOp("Cast", 13, attrs={"to": TensorProto.INT32}))
    built = Graph("b", opset_imports={"": 18})
    built.add_input(TensorInfo("x", np.float32, (4, 6)))
    built.add_node(OnnxOp("Concat", 13, attrs={"axis": 1}), ["x", "x"], ["y"],
                   Provenance("cat", "Concat", "", 13))
    built.outputs = ["y"]
    x = np.arange(-12, 12, dtype=np.float32).reshape(4, 6) / 4
    for edited, expected in ((graph, np.concatenate([x.astype(np.int32)] * 2)),
                             (built, np.concatenate([x, x], axis=1))):
        model = edited.to_onnx()
        onnx.checker.check_model(model)
        assert same_bits(_onnxruntime(model, {"x": x, "z": np.zeros((2, 3), np.float32)}
                                      if edited is graph else {"x": x}), expected)
        assert load(model).tensors["y"].dtype == expected.dtype
        assert check(model).passed
    assert graph.tensors["y"].dtype == np.float32  # the graph given keeps its infos
    assert built.tensors["y"].dtype is None


def test_a_graph_input_given_another_shape_after_load_reshapes_what_reads_it() -> None:
    from dmlgraph.ir import TensorInfo

    graph = load(_relu_then_concat())
    graph.set_tensor(TensorInfo("x", np.float32, (3, 5)))
    x = np.arange(15, dtype=np.float32).reshape(3, 5) - 7
    lowered = lower(graph, "6_4")
    assert lowered.tensors["y"].shape == (6, 5)
    got = run_lowered(lowered, {"x": x, "z": np.zeros((2, 3), np.float32)})[0]
    assert same_bits(got, np.concatenate([np.maximum(x, 0)] * 2))


def _pad_of_rank_3(axes: bool) -> onnx.ModelProto:
    """x [2, 3, 4] -> Pad (pads of 6 values, so 2 * rank; with ``axes``, [0, 1, 2] given);
    z [2, 3] is a second input."""
    inits = [numpy_helper.from_array(i64(0, 1, 0, 0, 1, 0), "p")]
    if axes:
        inits.append(numpy_helper.from_array(i64(0, 1, 2), "axes"))
    graph = helper.make_graph(
        [helper.make_node("Pad", ["x", "p", "", "axes"] if axes else ["x", "p"], ["y"],
                          name="pad")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4]),
         helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


@pytest.mark.parametrize("edit", ["set_input", "set_tensor"])
def test_a_pad_an_edit_gives_data_of_another_rank_is_refused_naming_its_rule(edit) -> None:
    """A Pad of rank 3 (axes [0, 1, 2] once loaded) whose data an edit makes rank 2
    (set_input to z [2, 3], or x given [2, 3]): ``check`` of the graph said only "the ONNX
    checker refuses the model: Field 'type' of 'value_info' is required but missing" (its
    export left the Pad's output untyped), and ``to_onnx`` wrote that model. Each use of
    the edited graph now names the node, the field, its value and the rule, as ``lower``
    did; the edit itself stays allowed (an edit of a Pad's rank takes several steps: its data
    and its pads, each alone breaking the rule). Oracle: onnxruntime refuses the same Pad."""
    from backends import get_backend
    from dmlgraph.ir import TensorInfo

    with pytest.raises(Exception, match="Unexpected axis value: 2"):
        _onnxruntime(_z_padded(), {"x": np.ones((2, 3, 4), np.float32),
                                   "z": np.ones((2, 3), np.float32)})
    graph = load(_pad_of_rank_3(axes=False))
    if edit == "set_input":
        graph.set_input(graph.find_nodes("Pad")[0].id, 0, "z")
    else:
        graph.set_tensor(TensorInfo("x", np.float32, (2, 3)))
    said = "node 'pad' (Pad): axes = [0, 1, 2]: [2] out of range [-2, 1]"
    feeds = {"x": np.ones((2, 3, 4) if edit == "set_input" else (2, 3), np.float32),
             "z": np.ones((2, 3), np.float32)}
    for use in (graph.to_onnx, lambda: check(graph, inputs=feeds),
                lambda: get_backend("onnxruntime").run(graph, feeds),
                lambda: lower(graph, "6_4")):
        with pytest.raises(ModelValidationError) as raised:
            use()
        assert str(raised.value).endswith(said) and "\n" not in str(raised.value)
    assert graph.tensors["y"].shape == (2, 5, 4)  # the graph given keeps its infos


def test_a_built_concat_breaking_its_rule_is_refused_naming_it_at_every_use() -> None:
    """A graph built with the ``Graph`` API whose Concat joins x [2, 3] and a Pad's [3, 4]
    on axis 0: its output untyped, ``to_onnx`` wrote it so and ``check`` said only "the ONNX
    checker refuses the model: Field 'type' of 'value_info' is required but missing", and
    onnxruntime's backend that "Inferred=4 Declared=3". Each use now names the node and rule
    as ``lower`` does. Oracle: onnxruntime refuses the same Concat in a model file."""
    from backends import get_backend
    from dmlgraph import Graph, Provenance, TensorInfo

    model = helper.make_model(helper.make_graph(
        [helper.make_node("Pad", ["x", "p"], ["padded"], name="pad", mode="reflect"),
         helper.make_node("Concat", ["x", "padded"], ["y"], name="cat", axis=0)], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(i64(0, 1, 1, 0), "p")]),
        opset_imports=[helper.make_opsetid("", 18)])
    x = np.ones((2, 3), np.float32)
    with pytest.raises(Exception, match="cat"):
        _onnxruntime(model, {"x": x})
    built = Graph("b", opset_imports={"": 18})
    built.add_input(TensorInfo("x", np.float32, (2, 3)))
    pads = built.add_constant("p", i64(0, 1, 1, 0))
    built.add_node(OnnxOp("Pad", 18, attrs={"mode": "reflect"}), ["x", pads], ["padded"],
                   Provenance("pad", "Pad", "", 18))
    built.add_node(OnnxOp("Concat", 13, attrs={"axis": 0}), ["x", "padded"], ["y"],
                   Provenance("cat", "Concat", "", 13))
    built.outputs = ["y"]
    said = "node 'cat' (Concat): inputs differ in dimension 1, which is not the concat axis 0"
    for use in (built.to_onnx, lambda: check(built, inputs={"x": x}),
                lambda: get_backend("onnxruntime").run(built, {"x": x}),
                lambda: lower(built, "6_4")):
        with pytest.raises(ModelValidationError) as raised:
            use()
        assert said in str(raised.value) and "\n" not in str(raised.value)
    assert built.tensors["y"].dtype is None  # the graph given keeps its infos


def _z_padded() -> onnx.ModelProto:
    """The Pad of ``_pad_of_rank_3(axes=True)`` reading z [2, 3]: ONNX's own form of the edit."""
    model = _pad_of_rank_3(axes=True)
    model.graph.node[0].input[0] = "z"
    return model


def test_a_slice_given_other_ends_after_load_is_lowered_for_them() -> None:
    nodes = [helper.make_node("Slice", ["x", "s", "e"], ["a"], name="slice"),
             helper.make_node("Pad", ["a", "p"], ["y"], name="pad")]
    graph_proto = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(i64(1), "s"), numpy_helper.from_array(i64(7), "e"),
         numpy_helper.from_array(i64(1, 2), "p")])
    graph = load(helper.make_model(graph_proto, opset_imports=[helper.make_opsetid("", 18)]))
    node = graph.find_nodes("Slice")[0]
    ends = graph.add_constant("new_ends", i64(3))
    graph.set_input(node.id, 2, ends)
    x = np.arange(8, dtype=np.float32)
    lowered = lower(graph, "6_4")
    got = run_lowered(lowered, {"x": x})[0]
    assert same_bits(got, np.pad(x[1:3], (1, 2)))


# ----------------------------------------------------------------------------- built by hand
# A Slice, Concat or Pad built with the Graph API as ONNX writes it, attributes left to their
# defaults. Oracles: NumPy, and onnxruntime's refusals.
def _hand_built(op: OnnxOp, inputs, provenance_version: int | None = None):
    from dmlgraph.ir import Graph, Provenance, TensorInfo

    graph = Graph(opset_imports={"": 21})
    graph.add_input(TensorInfo("x", np.float32, (2, 3)))
    graph.add_constant("p", i64(0, 1, 0, 2))
    version = op.since_version if provenance_version is None else provenance_version
    graph.add_node(op, inputs, ["y"], Provenance("n", op.op_type, "", version))
    graph.outputs = ["y"]
    return graph


X23 = np.arange(6, dtype=np.float32).reshape(2, 3)


def test_a_hand_built_pad_without_mode_pads_with_constants() -> None:
    graph = _hand_built(OnnxOp("Pad", 19), ["x", "p"])  # ONNX's default mode: "constant"
    assert same_bits(run_lowered(lower(graph, "6_4"), {"x": X23})[0], np.pad(X23, [(0, 0), (1, 2)]))
    from backends import get_backend  # and as ONNX, on onnxruntime (it was a KeyError)

    y = get_backend("onnxruntime").run(graph, {"x": X23})["y"]
    assert same_bits(y, np.pad(X23, [(0, 0), (1, 2)]))


def test_a_hand_built_concat_1_without_axis_joins_on_axis_1_and_later_ones_are_refused():
    graph = _hand_built(OnnxOp("Concat", 1), ["x", "x"])
    got = run_lowered(lower(graph, "6_4"), {"x": X23})[0]
    assert same_bits(got, np.concatenate([X23, X23], axis=1))  # Concat-1's default axis
    with pytest.raises(ModelValidationError, match="attribute axis is missing; Concat-13"):
        lower(_hand_built(OnnxOp("Concat", 13), ["x", "x"]), "6_4")


def test_a_hand_built_op_of_a_version_onnx_lacks_is_refused_by_name() -> None:
    graph = _hand_built(OnnxOp("Pad", 20, attrs={"mode": "constant"}), ["x", "p"])
    with pytest.raises(UnsupportedError, match=r"node 'n' \(Pad\): Pad since_version 20 is "
                                               r"not supported \(dmlgraph knows Pad 2, 11"):
        lower(graph, "6_4")  # was a KeyError: 20


def test_a_hand_built_node_naming_no_model_version_is_lowered_by_its_op() -> None:
    graph = _hand_built(OnnxOp("Concat", 13, attrs={"axis": 0}), ["x", "x"],
                        provenance_version=0)  # Provenance's default
    got = run_lowered(lower(graph, "6_4"), {"x": X23})[0]  # was "since_version 0 has no rule"
    assert same_bits(got, np.concatenate([X23, X23]))


@pytest.mark.parametrize("level, joined, backwards", [("1_0", 7, 0), ("2_1", 5, 2)])
def test_reflect_by_pieces_reads_mirrored_runs_backwards_from_2_1(
    level: str, joined: int, backwards: int
) -> None:
    """An axis of 4 reflected by 5 before and 4 after, by pieces: DML_SPEC.md's map reads
    [1, 2, 3, 2, 1] before the input and [2, 1, 0, 1] after it. From FL 2.1 (SLICE1) a run
    read backwards is one piece: [1 2 3][2 1] x [2 1 0][1], 5 JOIN inputs, 2 of them strided
    -1; below, a backward step ends a run: [1 2 3][2][1] x [2][1][0 1], 7 inputs. (No ONNX
    model reaches this at 2.1: PADDING takes every reflect there; the count is the rule.)"""
    from lowering.emit import Plan, _pad_by_pieces
    from lowering.logical import LogicalPad

    plan = Plan(FeatureLevel.parse(level), np.dtype(np.float32), lambda _: False)
    op = LogicalPad(PaddingMode.REFLECTION, np.array(0, np.float32), (0, 5), (0, 4))
    _pad_by_pieces(plan, "x", (2, 4), 1, op, "y")
    (join,) = [step.desc for step in plan.steps if isinstance(step.desc, JoinDesc)]
    assert join.input_count == joined
    strides = [
        step.desc.input_window_strides[-1] for step in plan.steps
        if isinstance(step.desc, Slice1Desc)
    ]
    assert sum(s < 0 for s in strides) == backwards


def test_a_node_whose_descriptors_another_computes_is_eliminated_not_decomposed() -> None:
    """Two identical Slices of one input: Simplify keeps the first's SLICE and reads it for
    the second, which is left with no descriptor. It was reported "decomposed" into nothing
    (DirectML column empty); its output is the first's, as an eliminated node's is its input."""
    params = [numpy_helper.from_array(np.array(v, np.int64), n)
              for n, v in (("s", [1]), ("e", [3]), ("a", [0]))]
    nodes = [helper.make_node("Slice", ["x", "s", "e", "a"], ["y1"], name="first"),
             helper.make_node("Slice", ["x", "s", "e", "a"], ["y2"], name="second"),
             helper.make_node("Concat", ["y1", "y2"], ["y"], name="join", axis=0)]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 2])], params)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    lowered = lower(load(model), "6_4")
    report = {r.name: r for r in lowered.report()}
    assert report["first"].status is Status.LOWERED
    assert report["first"].dml_ops == ("DML_OPERATOR_SLICE",)
    second = report["second"]
    assert (second.status, second.dml_ops) == (Status.ELIMINATED, ())
    assert any("computed once there" in note and "'first'" in note for note in second.notes)
    assert [n.op.name for n in lowered.topological_order()] == [
        "DML_OPERATOR_SLICE", "DML_OPERATOR_JOIN"]


def _one_tensor_joined_twice(rank: int) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """uint8 x of shape [1, .., 1, 2] joined with itself along axes 0 and 1: the same bytes in
    two shapes, a [2, 1, ..] and b [1, 2, ..]. ONNX nodes read b: an Identity, and a Concat
    along the last axis that the fallback runs at FL 1_0 (2 + 1 elements: DML_JOIN's UINT16
    view of uint8 would split one). Its feeds."""
    feeds = {"x": np.array([7, 9], np.uint8).reshape([1] * (rank - 1) + [2]),
             "z": np.array([5, 6], np.uint8).reshape([1, 2] + [1] * (rank - 2))}
    nodes = [helper.make_node("Concat", ["x", "x"], ["a"], name="first", axis=0),
             helper.make_node("Concat", ["x", "x"], ["b"], name="second", axis=1),
             helper.make_node("Identity", ["b"], ["y"], name="copy"),
             helper.make_node("Concat", ["b", "z"], ["w"], name="reader", axis=-1)]
    graph = helper.make_graph(
        nodes, "joined_twice",
        [helper.make_tensor_value_info(n, TensorProto.UINT8, v.shape) for n, v in feeds.items()],
        [helper.make_tensor_value_info(n, TensorProto.UINT8, None) for n in ("a", "y", "w")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), feeds


# coalesced to DML_JOIN's rank (4 at FL 1_0 and 2_1, 8 at 3_0), or (rank 3) viewed as UINT16
@pytest.mark.parametrize("rank, level", [(3, "1_0"), (5, "1_0"), (5, "2_1"), (9, "3_0"),
                                         (5, "6_4")])
def test_descriptors_alike_making_other_shapes_are_not_merged(rank: int, level: str) -> None:
    """Simplify merged the second JOIN into the first (one descriptor on the same bytes), and
    b's ONNX readers read a [2, 1, ..] for b's [1, 2, ..]: the Identity's output came out
    [2, 1, ..], and onnxruntime refused the fallback Concat's segment ("Inferred=1 Declared=2
    Dimension=0"; graph fuzz seed 360553). Oracles: onnxruntime and onnx.reference."""
    import onnxruntime as ort

    from backends import get_backend

    model, feeds = _one_tensor_joined_twice(rank)
    expected = ort.InferenceSession(model.SerializeToString(),
                                    providers=["CPUExecutionProvider"]).run(None, feeds)
    spec = ReferenceEvaluator(model).run(None, feeds)
    lowered = lower(load(model), level)
    for fallback in ("onnxruntime", "reference"):
        outputs = get_backend("numpy", fallback=fallback).run(lowered, feeds)
        for name, want, also in zip(("a", "y", "w"), expected, spec):
            assert outputs[name].shape == want.shape == also.shape, (fallback, name)
            assert np.array_equal(outputs[name], want) and np.array_equal(want, also)


def _fan_in_model(slices: int, identity: bool) -> onnx.ModelProto:
    """A Concat of ``slices`` Slices of one tensor: the same slice each (descriptors Simplify
    merges) or the whole tensor (Slices LowerOnnx eliminates as aliases of it)."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])
    end = 4 if identity else 3
    nodes = [
        helper.make_node("Slice", ["x", "s", "e", "ax"], [f"t{i}"], name=f"slice{i}")
        for i in range(slices)
    ]
    nodes.append(helper.make_node("Concat", [f"t{i}" for i in range(slices)], ["y"], axis=0))
    width = end - 1 if not identity else 4
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2 * slices, width])
    init = [numpy_helper.from_array(np.array([v], np.int64), n)
            for n, v in (("s", 0 if identity else 1), ("e", end), ("ax", 1))]
    graph = helper.make_graph(nodes, "fan_in", [x], [y], init)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


@pytest.mark.parametrize("identity", [False, True], ids=["merged", "eliminated"])
def test_concat_reading_many_renamed_tensors_is_rewired_once(
    identity: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Concat reading N merged (or eliminated) Slices is rewired in one edit, not once per
    Slice: each edit rebuilds its N inputs, so lowering a Concat of 4,000 identical Slices
    took 6.9 s, quadratic in N."""
    from dmlgraph.ir import Graph

    slices = 24
    graph = load(_fan_in_model(slices, identity))
    edits: dict[int, int] = {}
    replace_node = Graph.replace_node

    def counted(self: Graph, node_id: int, **changes: Any) -> Any:
        if "inputs" in changes:
            edits[node_id] = edits.get(node_id, 0) + 1
        return replace_node(self, node_id, **changes)

    monkeypatch.setattr(Graph, "replace_node", counted)
    lowered = lower(graph, "6_4")
    (concat,) = [n for n in lowered.nodes if isinstance(n.op, JoinDesc)]
    assert max(edits.values()) <= 2, edits
    expected = {False: 1, True: 0}[identity]  # one kept SLICE, or none: x itself, N times
    assert sum(isinstance(n.op, SliceDesc) for n in lowered.nodes) == expected
    assert len(concat.inputs) == slices and len(set(concat.inputs)) == 1
    statuses = {r.name: r.status for r in lowered.report() if r.op_type == "Slice"}
    assert len(statuses) == slices
    feeds = {"x": np.arange(8, dtype=np.float32).reshape(2, 4)}
    (want,) = ReferenceEvaluator(_fan_in_model(slices, identity)).run(None, feeds)
    assert same_bits(run_lowered(lowered, feeds)[0], want)


def _after_slice1_out_of_order(second: onnx.NodeProto) -> onnx.ModelProto:
    """x [4, 59] -> Slice-1 of axes [1, 0] (onnx's inference sizes no output of axes out of
    order: the next node's data has no rank at import) -> ``second``, at opset 9."""
    first = helper.make_node("Slice", ["x"], ["s"], axes=[1, 0], starts=[-25, -2],
                             ends=[2**63 - 1, 4])
    graph = helper.make_graph(
        [first, second], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 59])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 9)], ir_version=8)


@pytest.mark.parametrize("level", ["6_4", "1_0"])
def test_a_slice_or_pad_of_data_of_a_rank_known_only_when_lowered_takes_its_defaults(level):
    """Import writes a Slice's default axes/steps and a Pad's default axes once the data's
    rank is known; a rank known only when lowering sized the node making it (graph_fuzz seed
    600180) left the Slice without them: a TypeError. Oracle: NumPy slicing and np.pad."""
    x = np.arange(4 * 59, dtype=np.float32).reshape(4, 59)
    made = x[-2:4, -25:]
    cases = [
        (helper.make_node("Slice", ["s"], ["y"], starts=[-1, -(2**63)], ends=[3, 16]),
         made[-1:3, :16]),
        (helper.make_node("Pad", ["s"], ["y"], pads=[1, 0, 0, 2], mode="edge"),
         np.pad(made, [(1, 0), (0, 2)], mode="edge")),
        (helper.make_node("Slice", ["s"], ["y"], axes=[-1], starts=[1], ends=[3]),
         made[:, 1:3]),
        (helper.make_node("Concat", ["s", "s"], ["y"], axis=-1),
         np.concatenate([made, made], axis=-1)),
    ]
    for second, expected in cases:
        got = run_lowered(lower(load(_after_slice1_out_of_order(second)), level), {"x": x})[0]
        assert same_bits(got, expected)


@pytest.mark.parametrize("second, rule", [
    # not read as 3 begins and 3 ends of a rank-3 tensor
    (helper.make_node("Pad", ["s"], ["y"], pads=[1, 0, 0, 2, 0, 0]), "pads has 6 values"),
    # IndexError, ValueError
    (helper.make_node("Concat", ["s", "s"], ["y"], axis=3), "axis = 3 is out of range"),
    (helper.make_node("Concat", ["s", "s"], ["y"], axis=-3), "axis = -3 is out of range"),
    (helper.make_node("Slice", ["s"], ["y"], axes=[5], starts=[0], ends=[1]), "out of range"),
    # axis 1 twice, not read as two axes
    (helper.make_node("Slice", ["s"], ["y"], axes=[1, -1], starts=[0, 0], ends=[1, 1]),
     "an axis appears twice"),
])
def test_a_node_of_data_of_a_rank_known_only_when_lowered_is_held_to_its_rules(second, rule):
    """The rank-2 data a Slice-1 of axes out of order makes breaks these nodes' rules: each
    is refused by its rule, as import refuses it where the rank is known."""
    with pytest.raises(DmlgraphError, match=rule):
        lower(load(_after_slice1_out_of_order(second)), "6_4")
