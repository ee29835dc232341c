"""Parity: Polygraphy-style comparison semantics, known divergences, and ``check`` on the real
models with their reference inputs."""

from __future__ import annotations

import json
import math
import re

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import lowering
from backends import BackendError, NodeRun, RunRecord
from dmlgraph import DmlgraphError, load
from dmlgraph.ir import Graph, OnnxOp, Provenance, TensorInfo
from dmlgraph.parity import (
    KnownDivergence,
    Tolerance,
    Tolerances,
    Verdict,
    check,
    compare_output,
    compare_outputs,
    known_divergences,
)

TIGHT = Tolerance(1e-3, 1e-3)
MODELS = ["squeezenet1_1", "shufflenet_v2_x0_5", "tf_mobilenetv3_small_minimal",
          "encodec_encoder_reflect"]


def f32(*values: float) -> np.ndarray:
    return np.array(values, dtype=np.float32)


# ----------------------------------------------------------------------------- semantics


@pytest.mark.parametrize("expected, actual, message", [
    (f32(1.0), f32(2.0), "1 of 1 element exceeds both atol=0.001 and rtol=0.001"),
    (f32(1.0, 2.0), f32(2.0, 3.0), "2 of 2 elements exceed both atol=0.001 and rtol=0.001"),
    (f32(1.0), f32(np.nan), "1 of 1 element is NaN against a number"),
    (np.array([7], np.int8), np.array([8], np.int8), "1 of 1 element differs (compared exactly)"),
    (np.array([7, 8], np.int8), np.array([8, 8], np.int8),
     "1 of 2 elements differs (compared exactly)"),
])
def test_a_count_of_one_is_singular(expected, actual, message) -> None:
    """"1 of 1 elements differ" said the plural of one."""
    assert compare_output("y", actual, expected, TIGHT).message.startswith(message)


@pytest.mark.parametrize("expected, actual, verdict", [
    (f32(100.0), f32(100.01), Verdict.PASS),  # abs 0.01 > atol, rel 1e-4 <= rtol
    (f32(1e-6), f32(2e-6), Verdict.PASS),  # rel 1.0 > rtol, abs 1e-6 <= atol
    (f32(1.0), f32(1.1), Verdict.FAIL),  # both exceeded
])
def test_an_element_fails_only_when_both_tolerances_are_exceeded(expected, actual, verdict) -> None:
    result = compare_output("y", actual, expected, TIGHT)
    assert result.verdict is verdict
    assert result.mismatches == (verdict is Verdict.FAIL)


def test_the_atol_that_would_pass_ignores_errors_within_rtol() -> None:
    """The largest absolute error (1.0, at 1e6) is within rtol: the atol that would pass is
    the largest among the elements beyond rtol (0.1, at 1.0), not 1.0. A review's mutant that
    took the largest of all survived every test."""
    expected = np.array([1e6, 1.0])
    actual = np.array([1e6 + 1.0, 1.1])
    result = compare_output("y", actual, expected, Tolerance(1e-5, 1e-5))
    assert result.max_abs_error == pytest.approx(1.0)
    assert result.required_atol == pytest.approx(0.1)
    assert compare_output("y", actual, expected, Tolerance(0.1001, 1e-5)).verdict is Verdict.PASS


def test_errors_and_the_minimum_tolerance_that_would_pass() -> None:
    expected = np.array([1.0, 10.0, 0.0, -4.0])
    actual = np.array([1.5, 10.0, 1e-6, -4.002])
    result = compare_output("y", actual, expected, Tolerance(1e-5, 1e-5))
    # abs errors [0.5, 0, 1e-6, 0.002]; rel errors [0.5, 0, inf, 0.0005]
    assert result.mismatches == 2 and result.size == 4
    assert result.max_abs_error == pytest.approx(0.5)
    assert math.isinf(result.max_rel_error)
    # elements beyond rtol: 0, 2, 3 -> atol needed 0.5; beyond atol: 0, 3 -> rtol needed 0.5
    assert result.required_atol == pytest.approx(0.5)
    assert result.required_rtol == pytest.approx(0.5)
    assert compare_output("y", actual, expected, Tolerance(0.5, 1e-5)).verdict is Verdict.PASS
    assert compare_output("y", actual, expected, Tolerance(0.49, 1e-5)).verdict is Verdict.FAIL
    assert compare_output("y", actual, expected, Tolerance(1e-5, 0.5)).verdict is Verdict.PASS
    assert compare_output("y", actual, expected, Tolerance(1e-5, 0.49)).verdict is Verdict.FAIL


def test_nans_match_nans_and_nothing_else() -> None:
    nan = float("nan")
    same = compare_output("y", f32(nan, 1.0), f32(nan, 1.0), TIGHT)
    assert same.verdict is Verdict.PASS and same.nan_mismatches == 0
    one = compare_output("y", f32(nan, 1.0), f32(2.0, 1.0), TIGHT)
    assert one.verdict is Verdict.FAIL and one.nan_mismatches == 1 and one.mismatches == 1
    assert one.required_atol is None and one.required_rtol is None  # no tolerance passes
    strict = compare_output("y", f32(nan), f32(nan), TIGHT, nan_equal=False)
    assert strict.verdict is Verdict.FAIL


def test_infinities_match_only_themselves() -> None:
    inf = float("inf")
    assert compare_output("y", f32(inf, -inf), f32(inf, -inf), TIGHT).verdict is Verdict.PASS
    assert compare_output("y", f32(inf), f32(-inf), TIGHT).verdict is Verdict.FAIL
    assert compare_output("y", f32(inf), f32(3e38), TIGHT).verdict is Verdict.FAIL


def test_integers_and_bools_are_exact_whatever_the_tolerance() -> None:
    loose = Tolerance(100.0, 100.0)
    ints = compare_output("y", np.array([5, 7], np.int64), np.array([6, 7], np.int64), loose)
    assert ints.exact and ints.verdict is Verdict.FAIL and ints.mismatches == 1
    assert ints.max_abs_error == 1.0
    big = 2**62
    exact = compare_output("y", np.array([big + 1]), np.array([big]), loose)
    assert exact.verdict is Verdict.FAIL  # one apart, even where float64 cannot tell
    bools = compare_output("y", np.array([True, False]), np.array([True, True]), loose)
    assert bools.verdict is Verdict.FAIL and bools.mismatches == 1


@pytest.mark.parametrize("dtype", [ml_dtypes.int4, ml_dtypes.uint4, ml_dtypes.int2,
                                   ml_dtypes.uint2])
def test_sub_byte_integers_show_their_largest_error(dtype) -> None:
    """ml_dtypes' int4/uint4/int2/uint2 are NumPy kind "V": a mismatch showed its max abs
    error as "-" where uint8's showed a number (found by a new user's walkthrough of an int4
    Pad model). The oracle: each type's extremes, their distance in Python ints."""
    held = ml_dtypes.iinfo(dtype)
    low, high = int(held.min), int(held.max)
    result = compare_output("y", np.array([low, 1], dtype), np.array([high, 1], dtype),
                            Tolerance(100.0, 100.0))
    assert result.exact and result.verdict is Verdict.FAIL and result.mismatches == 1
    assert result.max_abs_error == high - low
    assert result.max_rel_error == (high - low) / abs(high)


def test_shape_and_dtype_must_match() -> None:
    shape = compare_output("y", np.zeros((2, 3), np.float32), np.zeros((3, 2), np.float32), TIGHT)
    assert shape.verdict is Verdict.FAIL and "shape [2, 3] differs from [3, 2]" in shape.message
    dtype = compare_output("y", np.zeros(3, np.float64), np.zeros(3, np.float32), TIGHT)
    assert dtype.verdict is Verdict.FAIL and "dtype float64 differs from float32" in dtype.message
    assert dtype.mismatches == 0  # the values agree; only the dtype fails


def test_tolerances_per_output_with_a_default_and_dtype_defaults() -> None:
    tolerances = Tolerances.of({"": 1e-4, "logits": 0.5}, 1e-6)
    assert tolerances.for_output("logits", np.float32) == Tolerance(0.5, 1e-6)
    assert tolerances.for_output("other", np.float32) == Tolerance(1e-4, 1e-6)
    defaults = Tolerances.of(None, None)
    assert defaults.for_output("y", np.float32) == Tolerance(1e-5, 1e-5)
    assert defaults.for_output("y", np.float16) == Tolerance(1e-3, 1e-3)
    a, e = f32(1.0, 1.0), f32(1.2, 1.0)
    tolerances = Tolerances.of({"loose": 0.3}, 0.0)
    results = compare_outputs(["loose", "tight"], [a, a], [e, e], tolerances)
    assert [r.verdict for r in results] == [Verdict.PASS, Verdict.FAIL]



def test_a_complex_output_takes_its_parts_default_tolerance() -> None:
    """complex64 took the 8-bit floats' 0.1 (its dtype name is in no row), so a complex64
    output 0.05 off passed; its parts are float32, held to 1e-5 as every float32 output."""
    defaults = Tolerances.of(None, None)
    assert defaults.for_output("y", np.complex64) == Tolerance(1e-5, 1e-5)
    assert defaults.for_output("y", np.complex128) == Tolerance(1e-5, 1e-5)
    expected = np.array([1 + 1j, 2, 3], np.complex64)
    results = compare_outputs(["y"], [expected + np.complex64(0.05)], [expected], defaults)
    assert results[0].verdict is Verdict.FAIL


def test_a_mismatch_a_known_divergence_reaches_is_labelled_so() -> None:
    divergence = KnownDivergence("pad", "divergence: reflect beyond the size", frozenset({0}))
    a, e = f32(1.0), f32(2.0)
    results = compare_outputs(["y", "z"], [a, a], [e, e], Tolerances(), [divergence])
    assert results[0].verdict is Verdict.KNOWN_DIVERGENCE
    assert results[0].divergences == ("node 'pad': divergence: reflect beyond the size",)
    assert results[1].verdict is Verdict.FAIL and results[1].divergences == ()


# ----------------------------------------------------------------------------- divergences


def _chain_graph() -> Graph:
    """x -> a (Neg) -> y ; x -> b (Abs) -> z."""
    graph = Graph(opset_imports={"": 19})
    graph.add_input(TensorInfo("x", np.float32, (2,)))
    graph.add_node(OnnxOp("Neg", 13), ["x"], ["y"], Provenance("a", "Neg"),
                   ["divergence: made up for the test"])
    graph.add_node(OnnxOp("Abs", 13), ["x"], ["z"], Provenance("b", "Abs"))
    graph.outputs = ["y", "z"]
    return graph


def test_divergence_notes_reach_only_the_outputs_downstream() -> None:
    graph = _chain_graph()
    runs = [RunRecord("numpy", "-", (NodeRun("b", "DML_OPERATOR_SLICE", "e", "lowered at run time",
                                             ("divergence: from a run-time lowering",)),))]
    found = {(d.node, d.note): d.outputs for d in known_divergences(graph, graph, runs)}
    assert found == {
        ("a", "divergence: made up for the test"): frozenset({0}),
        ("b", "divergence: from a run-time lowering"): frozenset({1}),
    }


def test_divergence_notes_of_a_relowered_run_name_the_imported_graph_s_nodes() -> None:
    """A run that lowered the graph again names its nodes by their ids in the imported graph
    (``RunRecord.relowered``): id 1 there is 'b', reaching z; read as an id of the lowered
    graph, where 1 is 'a', it reached y instead."""
    imported = _chain_graph()
    lowered = Graph(opset_imports={"": 19})  # ids of other nodes: 0 reads x, makes z
    lowered.add_input(TensorInfo("x", np.float32, (2,)))
    lowered.add_node(OnnxOp("Abs", 13), ["x"], ["z"], Provenance("b", "Abs"))
    lowered.add_node(OnnxOp("Neg", 13), ["x"], ["y"], Provenance("a", "Neg"))
    lowered.outputs = ["y", "z"]
    (b_id,) = [n.id for n in imported.nodes if n.name == "b"]
    runs = [RunRecord("numpy", "-", (NodeRun("b", "Abs", "e", "",
                                             ("divergence: relowered",), node_id=b_id),),
                      relowered=True)]
    found = {(d.node, d.note): d.outputs for d in known_divergences(imported, lowered, runs)
             if d.note == "divergence: relowered"}
    assert found == {("b", "divergence: relowered"): frozenset({1})}


def _model(nodes, inits, outputs=("y", "z"), shape=(2, 3), opset=17, ir=8) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes, "m", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, [None] * len(shape)) for o in outputs],
        inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=ir)


@pytest.mark.parametrize("end, dtype", [
    (2**63 - 1, np.int64), (2**31 - 1, np.int64), (2**31 - 1, np.int32),
])
def test_slice_through_index_0_is_a_known_divergence(end: int, dtype: type) -> None:
    """ONNX clamps end INT64_MAX or INT32_MAX to dim - 1 for a negative step (an empty slice
    here), while onnxruntime reads either as 'through index 0' and returns [[2, 1, 0], ...]
    (whatever the parameters' type). The divergence is named, and y compared with
    onnx.reference, which computes what ONNX says there."""
    inits = [numpy_helper.from_array(np.array(v, dtype), n)
             for n, v in [("s", [2]), ("e", [end]), ("a", [1]), ("st", [-1])]]
    model = _model([helper.make_node("Slice", ["x", "s", "e", "a", "st"], ["y"], name="rev"),
                    helper.make_node("Neg", ["x"], ["z"], name="neg")], inits)
    report = check(model)
    y, z = report.comparisons[0].outputs
    assert [(d.node, d.outputs) for d in report.divergences] == [("rev", {0})]
    assert y.verdict is Verdict.PASS and y.compared and y.actual_shape == (2, 0)
    assert y.expected_shape == (2, 0) and y.message.startswith("compared with onnx.reference")
    assert z.verdict is Verdict.PASS
    assert report.passed and report.exit_code == 0


def test_a_divergence_found_when_lowering_at_run_time_is_known_too() -> None:
    """The same slice with its parameters fed as inputs: lowered only when it runs, and the
    run-time lowering's note reaches the report."""
    params = ["starts", "ends", "axes", "steps"]
    graph = helper.make_graph(
        [helper.make_node("Slice", ["x"] + params, ["y"], name="rev")], "m",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])]
        + [helper.make_tensor_value_info(p, TensorProto.INT64, [1]) for p in params],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, None])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    feeds = {"x": np.zeros((2, 3), np.float32), "starts": np.array([2]),
             "ends": np.array([2**63 - 1]), "axes": np.array([1]), "steps": np.array([-1])}
    report = check(model, inputs=feeds)
    (y,) = report.comparisons[0].outputs
    assert [d.node for d in report.divergences] == ["rev"]
    assert y.verdict is Verdict.PASS and y.message.startswith("compared with onnx.reference")
    assert report.runs[0].nodes[0].via == "lowered at run time"


def test_reflect_beyond_the_size_is_a_known_divergence_and_the_rest_is_still_compared() -> None:
    """onnxruntime refuses reflect pads >= the dimension; the other output is compared on the
    graph pruned to it."""
    model = _model([helper.make_node("Pad", ["x", "p"], ["y"], mode="reflect", name="pad"),
                    helper.make_node("Neg", ["x"], ["z"], name="neg")],
                   [numpy_helper.from_array(np.array([0, 3, 0, 4], np.int64), "p")])
    report = check(model)
    (comparison,) = report.comparisons
    y, z = comparison.outputs
    assert "pre-pad (3) exceeds maximum allowed (2)" in comparison.note
    assert y.verdict is Verdict.KNOWN_DIVERGENCE and "not compared" in y.message
    assert z.verdict is Verdict.PASS and z.size == 6
    assert report.exit_code == 0


def test_a_reference_failure_no_divergence_explains_is_an_error(monkeypatch) -> None:
    """onnxruntime has no Concat-1 kernel: the lowering declares it, a divergence where
    onnx.reference computes what ONNX says, so parity compares the output with it; with the
    lowering's notes stripped, onnx.reference is the reference (the model has a node
    onnxruntime has no kernel for), and where it fails too, the same failure is an error."""
    import onnx.reference

    model = _model([helper.make_node("Concat", ["x", "x"], ["y"], axis=0, name="cat")], [],
                   outputs=("y",), opset=3, ir=3)
    report = check(model)
    assert report.comparisons[0].outputs[0].verdict is Verdict.PASS
    assert report.comparisons[0].expected.endswith("onnx.reference on the original model for 'y'")
    assert report.exit_code == 0

    real_lower = lowering.lower

    def silent_lower(graph, level):
        lowered = real_lower(graph, level)
        lowered.records = [
            r.__class__(r.name, r.op_type, r.status, r.dml_ops, ()) for r in lowered.records
        ]
        for node in lowered.nodes:
            node.notes.clear()
        return lowered

    monkeypatch.setattr(lowering, "lower", silent_lower)
    report = check(model)
    assert report.comparisons[0].expected.startswith("onnx.reference on the original model "
                                                     "(onnxruntime cannot run it: ")
    assert report.comparisons[0].outputs[0].verdict is Verdict.PASS

    def fail(self, *args, **kwargs):
        raise ValueError("unrunnable")

    monkeypatch.setattr(onnx.reference.ReferenceEvaluator, "run", fail)
    with pytest.raises(BackendError, match=r"Concat\(1\).*onnx.reference failed as well: "
                                           "ValueError: unrunnable"):
        check(model)


# ----------------------------------------------------------------------------- check


def test_check_takes_a_graph_built_or_edited_in_python() -> None:
    """A Graph, built with its API or edited after load, was refused ("load() takes a path,
    bytes or an onnx.ModelProto, not Graph", naming a function the user never called); it is
    checked as its to_onnx()."""
    from dmlgraph.errors import UnsupportedError

    graph = Graph("built", opset_imports={"": 18})
    graph.add_input(TensorInfo("x", np.float32, (3, 5)))
    starts = graph.add_constant("starts", np.array([4], np.int64))
    ends = graph.add_constant("ends", np.array([0], np.int64))
    axes = graph.add_constant("axes", np.array([1], np.int64))
    steps = graph.add_constant("steps", np.array([-2], np.int64))
    graph.add_node(OnnxOp("Slice", 13), ["x", starts, ends, axes, steps], ["s"],
                   Provenance("slice", "Slice", "", 13))
    pads = graph.add_constant("pads", np.array([1, 0, 0, 2], np.int64))
    graph.add_node(OnnxOp("Pad", 18, attrs={"mode": "edge"}), ["s", pads], ["y"],
                   Provenance("pad", "Pad", "", 18))
    graph.outputs = ["y"]
    x = np.arange(15, dtype=np.float32).reshape(3, 5)
    expected = np.pad(x[:, 4:0:-2], [(1, 0), (0, 2)], mode="edge")  # NumPy, the oracle
    report = check(graph, feature_level="1_0", inputs={"x": x}, expected={"y": expected})
    assert report.passed and len(report.comparisons) == 2
    # a lowered graph: check lowers what it is given, so it says what to give it (it said
    # only that to_onnx() writes ONNX ops)
    with pytest.raises(UnsupportedError, match=r"takes the model or the graph load\(\) made, "
                       r"not a lowered one: check\(load\(\.\.\.\), feature_level=\.\.\.\) "
                       r"\(this one was lowered at DML_FEATURE_LEVEL_6_4\)"):
        check(lowering.lower(graph))


@pytest.mark.parametrize("level", ["6_4", "2_1"])
@pytest.mark.parametrize("model", MODELS)
def test_check_holds_on_the_real_models(model, level, onnx_models_dir) -> None:
    report = check(onnx_models_dir / f"{model}.onnx", feature_level=level,
                   inputs=onnx_models_dir / "reference_io.npz")
    assert [c.expected.split(" (")[0] for c in report.comparisons] == [
        "onnxruntime on the original model", "stored outputs"]
    for comparison in report.comparisons:
        for output in comparison.outputs:
            assert output.verdict is Verdict.PASS, (comparison.expected, output)
    assert report.exit_code == 0
    for op, counts in report.lowering_summary().items():
        assert set(counts) <= {"lowered", "decomposed", "folded", "eliminated"}, (op, counts)
    assert any(r.engine == "numpy DirectML emulator" for r in report.runs[0].nodes)


def test_check_holds_with_a_dynamic_length(onnx_models_dir, onnx_reference_io) -> None:
    """With its length symbolic, encodec's Slice/Pad parameters stay run-time values: the
    NumPy backend lowers them as they run, and still matches onnxruntime bit for bit."""
    report = check(onnx_models_dir / "encodec_encoder_reflect.onnx",
                   input_shapes={"hidden_states.1": [1, 1, "T"]},
                   inputs={"hidden_states.1": onnx_reference_io["encodec_encoder_reflect__in0"]})
    (output,) = report.comparisons[0].outputs
    assert output.verdict is Verdict.PASS and output.max_abs_error == 0.0
    runtime = [r for r in report.runs[0].nodes if r.via == "lowered at run time"]
    assert {r.op for r in runtime} >= {"DML_OPERATOR_PADDING"} and len(runtime) >= 10


def test_a_wrong_stored_output_fails_parity(onnx_models_dir, onnx_reference_io) -> None:
    wrong = onnx_reference_io["squeezenet1_1__out0"].copy()
    wrong[0, 3] += 0.5
    report = check(onnx_models_dir / "squeezenet1_1.onnx",
                   inputs={"input.1": onnx_reference_io["squeezenet1_1__in0"]},
                   expected={"117": wrong})
    against_ort, against_stored = report.comparisons
    assert against_ort.passed and not against_stored.passed
    (output,) = against_stored.outputs
    assert output.mismatches == 1 and output.max_abs_error == pytest.approx(0.5, abs=1e-6)
    assert report.exit_code == 1


def test_generated_inputs_and_the_cross_check(onnx_models_dir) -> None:
    report = check(onnx_models_dir / "shufflenet_v2_x0_5.onnx",
                   feature_level="DML_FEATURE_LEVEL_2_1", seed=3, cross_check=True)
    assert report.inputs == "generated (seed 3)"
    assert [c.expected.split(" (")[0] for c in report.comparisons] == [
        "onnxruntime on the original model",
        "onnxruntime on the lowered graph translated to ONNX"]
    assert report.passed and report.feature_level.short == "2_1"
    assert json.loads(json.dumps(report.to_json(), allow_nan=False))["passed"] is True


def test_the_reference_fallback_gives_the_same_verdict() -> None:
    inits = [numpy_helper.from_array(np.array([1, 1, 0, 2], np.int64), "p")]
    model = _model([helper.make_node("Pad", ["x", "p"], ["p_out"], mode="edge", name="pad"),
                    helper.make_node("Sigmoid", ["p_out"], ["y"], name="sig"),
                    helper.make_node("Neg", ["x"], ["z"], name="neg")], inits)
    report = check(model, fallback="reference", seed=1)
    assert report.runs[0].provider == "onnx.reference" and report.passed


def test_report_json_writes_infinite_errors_as_text() -> None:
    inits = [numpy_helper.from_array(np.array([0, 1, 0, 0], np.int64), "p")]
    model = _model([helper.make_node("Pad", ["x", "p"], ["y"], mode="constant", name="pad"),
                    helper.make_node("Neg", ["x"], ["z"], name="neg")], inits)
    graph = load(model)
    ones = {"x": np.ones((2, 3), np.float32)}
    wrong = {"y": np.zeros((2, 4), np.float32), "z": -np.ones((2, 3), np.float32)}
    report = check(model, inputs=ones, expected=wrong, atol=0.0, rtol=0.0)
    stored = report.to_json()["comparisons"][1]
    assert stored["outputs"][0]["max_rel_error"] == "inf"
    assert stored["outputs"][0]["verdict"] == "fail" and graph.outputs == ["y", "z"]
    json.dumps(report.to_json(), allow_nan=False)


def test_expected_python_data_takes_its_outputs_type_as_inputs_do() -> None:
    """``expected={"y": list}`` was read as float64 and failed the float32 output ("dtype
    float32 differs from float64", exit 1) for the very values it makes, where a list given
    to ``inputs`` takes its input's type. Oracle: NumPy's pad of the same values; a list of
    other values still fails, and one a type cannot hold is refused."""
    inits = [numpy_helper.from_array(np.array([0, 1, 0, 0], np.int64), "p")]
    model = _model([helper.make_node("Pad", ["x", "p"], ["y"], mode="constant", name="pad"),
                    helper.make_node("Neg", ["x"], ["z"], name="neg")], inits)
    x = [[0.1, 0.2, 0.3], [1.5, -2.0, 7.25]]
    y = np.pad(np.array(x, np.float32), ((0, 0), (1, 0))).tolist()  # float32 values, as floats
    z = (-np.array(x, np.float32)).tolist()
    report = check(model, inputs={"x": x}, expected={"y": y, "z": z}, atol=0.0, rtol=0.0)
    assert report.passed and len(report.comparisons) == 2
    assert check(model, expected={"x": x, "y": y, "z": z}).passed  # inputs held with them
    y[0][1] += 1.0
    assert not check(model, inputs={"x": x}, expected={"y": y, "z": z}).passed
    with pytest.raises(DmlgraphError, match=r"expected\['z'\] is Python data .* beyond float32"):
        check(model, inputs={"x": x}, expected={"y": y, "z": [[1e300] * 3] * 2})


def test_slice_through_index_0_of_constant_data_is_not_folded_away_from_its_note() -> None:
    """The same Slice on constant data: folding would compute ONNX's empty result with no
    node left to carry the divergence; it is left to the lowering, which notes it."""
    inits = [numpy_helper.from_array(np.array(v, np.int64), n)
             for n, v in [("d", np.arange(5)), ("s", [3]), ("e", [2**63 - 1]), ("a", [0]),
                          ("st", [-1])]]
    graph = helper.make_graph(
        [helper.make_node("Slice", ["d", "s", "e", "a", "st"], ["t"], name="rev"),
         helper.make_node("Identity", ["t"], ["y"])],
        "m", [], [helper.make_tensor_value_info("y", TensorProto.INT64, [None])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=10)
    report = check(model)
    (y,) = report.comparisons[0].outputs
    assert [d.node for d in report.divergences] == ["rev"]  # (onnxruntime's y: [4])
    assert y.verdict is Verdict.PASS and y.expected_shape == (0,)
    assert y.message.startswith("compared with onnx.reference")
    assert report.exit_code == 0


def _slice_int64_max_end_reversed() -> onnx.ModelProto:
    """A static Slice onnxruntime reads otherwise than ONNX (a noted divergence): ends
    INT64_MAX with step -1 (ONNX: empty, [4, 0]; onnxruntime: through index 0)."""
    inits = [numpy_helper.from_array(np.array([v], np.int64), n)
             for n, v in (("s", 3), ("e", 2**63 - 1), ("a", 1), ("p", -1))]
    graph = helper.make_graph(
        [helper.make_node("Slice", ["x", "s", "e", "a", "p"], ["d"], name="div")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 6])],
        [helper.make_tensor_value_info("d", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 10
    return model


def test_the_cross_check_does_not_excuse_an_emulator_error_on_a_divergent_node(monkeypatch):
    """The divergence is between onnxruntime and ONNX on the original Slice; onnxruntime on the
    lowered graph runs its translation, with ONNX's meaning. An emulator wrong there was
    labelled "known divergence" and the check passed."""
    import dataclasses

    import backends.numpy.backend as numpy_backend

    execute = numpy_backend.NumpyBackend.execute

    def wrong(self, graph, feeds, outputs=None):
        result = execute(self, graph, feeds, outputs)
        return dataclasses.replace(result, outputs={"d": np.full((4, 4), 123.0, np.float32)})

    report = check(_slice_int64_max_end_reversed(), cross_check=True)
    assert report.passed  # the emulator itself is right
    monkeypatch.setattr(numpy_backend.NumpyBackend, "execute", wrong)
    report = check(_slice_int64_max_end_reversed(), cross_check=True)
    crossed = report.comparisons[-1]
    assert "translated" in crossed.expected
    assert crossed.outputs[0].verdict == "fail"
    assert not report.passed and report.exit_code != 0


def test_no_engine_can_write_into_the_inputs_the_report_names(monkeypatch) -> None:
    """The same feed arrays went to the emulator and then to onnxruntime: an emulator that
    wrote into them before computing passed, both sides computing from its values."""
    import backends.numpy.backend as numpy_backend

    execute = numpy_backend.NumpyBackend.execute

    def clobbering(self, graph, feeds, outputs=None):
        for array in feeds.values():
            array[...] = 7.0
        return execute(self, graph, feeds, outputs)

    monkeypatch.setattr(numpy_backend.NumpyBackend, "execute", clobbering)
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    with pytest.raises(ValueError, match="read-only"):
        check(_slice_int64_max_end_reversed(), inputs={"x": x})
    assert np.array_equal(x, np.arange(24, dtype=np.float32).reshape(4, 6))


# ----------------------------------------------------------------------------- in chunks
_VALUES = [0.0, -0.0, 1.0, -2.5, 1e-6, 3e38, float("inf"), float("-inf"), float("nan")]


@pytest.mark.parametrize("kind", ["float32", "complex64", "int64", "uint64 against int64",
                                  "str"])
@pytest.mark.parametrize("seed", range(6))
def test_a_comparison_in_chunks_gives_the_whole_arrays_numbers(kind, seed, monkeypatch) -> None:
    """Outputs are compared a chunk at a time, its counts added and its maxima taken: every
    number is the one the whole arrays give at once (the oracle: the same comparison with
    one chunk), NaNs in some chunks and not others included."""
    import dmlgraph.parity as parity

    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 60))
    with np.errstate(all="ignore"):  # past float32's range: inf; inf * 0: NaN (wanted)
        expected, actual = _pair(kind, rng, n)
    tolerance = Tolerance(1e-3, 1e-3)
    monkeypatch.setattr(parity, "COMPARE_CHUNK", 1 << 30)
    whole = compare_output("y", actual, expected, tolerance)
    monkeypatch.setattr(parity, "COMPARE_CHUNK", 7)
    chunked = compare_output("y", actual, expected, tolerance)
    assert repr(chunked) == repr(whole)  # NaN errors, as NaN, equal


def _pair(kind: str, rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    if kind in ("float32", "complex64"):
        def pick() -> np.ndarray:
            return rng.choice(_VALUES, n) * rng.choice([1.0, 1.0001, 2.0], n)

        expected, actual = pick().astype(np.float32), pick().astype(np.float32)
        if kind == "complex64":
            expected = (expected + 1j * pick()).astype(np.complex64)
            actual = (actual + 1j * pick()).astype(np.complex64)
    elif kind == "str":
        expected = rng.choice(["a", "b", ""], n)
        actual = rng.choice(["a", "b", ""], n)
    else:
        expected = rng.integers(-(2**62), 2**62, n)
        actual = rng.integers(0, 2**63, n, dtype=np.uint64) if "uint64" in kind else (
            expected + rng.integers(-2, 3, n))
    return expected, actual


def test_comparing_an_output_takes_less_memory_than_the_output() -> None:
    """Compared whole, a 16 MB float32 output took 11 times its size in float64 temporaries
    (a 256 MB output: 3.7 GB for ``check``); a chunk at a time, under its size."""
    import tracemalloc

    expected = np.random.default_rng(0).random(1 << 22, dtype=np.float32)
    actual = expected.copy()
    actual[::1000] += 1e-3
    tracemalloc.start()
    try:
        result = compare_output("y", actual, expected, Tolerance(1e-5, 1e-5))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.mismatches == len(range(0, 1 << 22, 1000))
    assert peak < expected.nbytes


# ----------------------------------------------------------------------------- optimizer


def _reversed_index_select() -> onnx.ModelProto:
    """``x.index_select(1, torch.arange(x.shape[1] - 1, -1, -1))`` as the TorchScript exporter
    writes it for a dynamic batch: Range(n - 1, -1, -1) feeding a Gather. onnxruntime 1.32's
    GatherToSliceFusion makes it a Slice ending at -1 (from the back: an empty result)."""
    ints = {"one": 1, "minus_one": -1}
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "one"], ["n"], axis=0),
        helper.make_node("Sub", ["n", "one"], ["last"]),
        helper.make_node("Range", ["last", "minus_one", "minus_one"], ["r"]),
        helper.make_node("Gather", ["x", "r"], ["y"], axis=1),
    ]
    graph = helper.make_graph(
        nodes, "reversed", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", 10, 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.array(v, np.int64), k) for k, v in ints.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def test_what_only_onnxruntime_s_optimizations_change_is_an_optimizer_divergence(
    onnx_run, monkeypatch
) -> None:
    """Where onnxruntime with its graph optimizations disagrees with itself without them, and
    dmlgraph agrees with the plain run (the model's nodes as written), the output is a known
    divergence naming the optimizations; an emulator that agrees with neither still fails."""
    import dataclasses

    import backends.numpy.backend as numpy_backend
    from dmlgraph.parity import OPTIMIZER_DIVERGENCE

    model = _reversed_index_select()
    x = np.arange(120, dtype=np.float32).reshape(2, 10, 6)
    plain = onnx_run(model, {"x": x}, optimize=False)[0]
    assert np.array_equal(plain, x[:, ::-1])  # the oracle: NumPy
    optimized = onnx_run(model, {"x": x})[0]
    report = check(model, inputs={"x": x})
    (output,) = report.comparisons[0].outputs
    if np.array_equal(optimized, plain):  # an onnxruntime without the bug: nothing to excuse
        assert output.verdict == Verdict.PASS
    else:
        assert optimized.shape == (2, 0, 6)  # the bug as measured with onnxruntime 1.32
        assert output.verdict == Verdict.KNOWN_DIVERGENCE
        assert output.divergences == (OPTIMIZER_DIVERGENCE,)
        assert any("graph optimizations change 'y'" in note for note in report.notes)
        assert any("graph optimizations off" in run.backend for run in report.runs)
    assert report.passed and report.exit_code == 0

    execute = numpy_backend.NumpyBackend.execute

    def wrong(self, graph, feeds, outputs=None):
        result = execute(self, graph, feeds, outputs)
        return dataclasses.replace(result, outputs={"y": result.outputs["y"] + 1})

    monkeypatch.setattr(numpy_backend.NumpyBackend, "execute", wrong)
    report = check(model, inputs={"x": x})
    assert report.comparisons[0].outputs[0].verdict == Verdict.FAIL
    assert not report.passed and report.exit_code == 1


def test_an_error_within_onnxruntime_s_own_rounding_is_not_excused_as_its_optimizations() -> None:
    """Only where onnxruntime's two runs differ beyond the tolerance is the optimized one
    discounted: an output of dmlgraph's just past the tolerance of the optimized run and
    within the plain run's, the two runs agreeing within it (as fusions round apart), fails."""
    from backends import RunResult
    from dmlgraph.parity import OPTIMIZER_DIVERGENCE, _optimizer_divergences

    class PlainRun:  # onnxruntime without graph optimizations, computing ``plain``
        def __init__(self, plain):
            self.plain = plain

        def session(self, model, where, optimize=True):
            assert optimize is False
            return "plain"

        def execute_session(self, session, feeds, where):
            return RunResult({"y": self.plain}, RunRecord("onnxruntime", "CPU", ()))

    tolerances = Tolerances.of(None, None)
    ours = f32(1.0 - 0.8e-5)
    for optimized, plain, excused in [
        (f32(1.0 + 0.8e-5), f32(1.0), False),  # the runs agree within 1e-5: no excuse
        (f32(2.0), f32(1.0), True),  # they differ, and ours is the plain run's
        (f32(2.0), f32(3.0), False),  # they differ, and ours is neither's
    ]:
        failing = compare_outputs(["y"], [ours], [optimized], tolerances)
        assert failing[0].verdict == Verdict.FAIL
        notes: list[str] = []
        runs: list = []
        (result,) = _optimizer_divergences(PlainRun(plain), b"", load(_doubled()), {},
                                           {"y": optimized}, [ours], tolerances, failing,
                                           runs, notes)
        assert (result.verdict == Verdict.KNOWN_DIVERGENCE) == excused
        assert (result.divergences == (OPTIMIZER_DIVERGENCE,)) == excused
        assert bool(notes) == excused and len(runs) == 1


def _doubled() -> onnx.ModelProto:
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "x"], ["y"])], "doubled",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@pytest.mark.parametrize("dtype", [np.float16, "bfloat16"])
def test_a_half_precision_output_failing_by_a_few_ulps_says_so(dtype) -> None:
    """onnxruntime's CPU provider computes chains of float16 ops in float32 and rounds once;
    dmlgraph's segments round at each lowered node, so a float16 model may fail by a few
    units in the last place: the message says how many (here each value's bits + 2, read by
    hand: 2 ulps), and says nothing of ulps where values are further apart."""
    from dmlgraph.parity import Tolerance, compare_output

    dtype = ml_dtypes.bfloat16 if dtype == "bfloat16" else dtype
    expected = np.linspace(8, 12, 50).astype(dtype)
    close = (expected.view(np.int16) + 2).view(dtype)
    result = compare_output("y", close, expected, Tolerance(1e-4, 1e-4))
    assert result.verdict.value == "fail"
    assert "at most 2 units in the last place apart" in result.message
    far = (expected.view(np.int16) + 40).view(dtype)
    assert "units in the last place" not in compare_output(
        "y", far, expected, Tolerance(1e-4, 1e-4)).message
    negative = -expected  # sign and magnitude: -8 and -8 - 2 ulps are 2 apart too
    assert "at most 2 units" in compare_output(
        "y", (negative.view(np.int16) + 2).view(dtype), negative, Tolerance(1e-4, 1e-4)).message


def test_a_float64_difference_past_the_double_range_keeps_its_relative_error() -> None:
    """1.5e308 against -1.5e308: a - e overflows to inf, and the relative error was inf too
    (so no rtol passed it), where it is 2 (exact: 3e308 / 1.5e308)."""
    from fractions import Fraction

    actual = np.array([1.5e308, np.finfo(np.float64).max, 1.0])
    expected = np.array([-1.5e308, -1e308, 1.0])
    exact = max(abs(Fraction(a) - Fraction(e)) / abs(Fraction(e))
                for a, e in zip(actual.tolist(), expected.tolist()))
    result = compare_output("y", actual, expected, Tolerance(1e-5, 1e-5))
    assert result.max_abs_error == math.inf  # 3e308 is no double
    assert result.max_rel_error == pytest.approx(float(exact), rel=1e-15)
    assert result.required_rtol == result.max_rel_error
    assert compare_output("y", actual, expected, Tolerance(0.0, float(exact) * 1.001)).verdict \
        is Verdict.PASS


@pytest.mark.parametrize("given", ["inputs", "expected"])
def test_a_seed_with_inputs_given_is_refused_as_the_command_line_refuses_it(given) -> None:
    """``check(model, inputs=..., seed=5)`` ran the inputs given and ignored the seed,
    silently, where ``dmlgraph check --inputs IN --seed 5`` is refused; so is the seed now,
    which still draws the inputs when none are given (seed 0 by default)."""
    inits = [numpy_helper.from_array(np.array([0, 1, 0, 0], np.int64), "p")]
    model = _model([helper.make_node("Pad", ["x", "p"], ["y"], name="pad"),
                    helper.make_node("Neg", ["x"], ["z"], name="neg")], inits)
    x = np.ones((2, 3), np.float32)
    tensors = {"x": x, "y": np.pad(x, ((0, 0), (1, 0))), "z": -x}
    with pytest.raises(DmlgraphError, match=f"seed 5 draws generated inputs; it does nothing "
                                            f"with {given}="):
        check(model, seed=5, **{given: tensors if given == "expected" else {"x": x}})
    assert check(model, **{given: tensors if given == "expected" else {"x": x}}).passed
    assert check(model, seed=5).to_json()["inputs"] == "generated (seed 5)"
    assert check(model).to_json()["inputs"] == "generated (seed 0)"


@pytest.mark.parametrize("model", [None, 5, ["model.onnx"]])
def test_check_of_no_model_names_check_and_what_it_takes(model) -> None:
    """``check(None)`` said "load() takes a path, bytes or an onnx.ModelProto", naming a
    function not called and leaving out the Graph check takes."""
    with pytest.raises(DmlgraphError, match=re.escape(
            "check() takes a path, bytes, an onnx.ModelProto or a Graph, not "
            f"{type(model).__name__}")):
        check(model)


def test_a_float_failure_on_the_reference_fallback_names_the_nodes_it_ran() -> None:
    """With --fallback reference, the ONNX nodes lowering leaves run on onnx.reference and
    the reference on onnxruntime: a float output they compute otherwise failed with "parity
    FAILS" and no word of why, every DML operator right (found by a new user's walkthrough
    of a U-Net, its Convs 63 of 6144 elements past 1e-5). A float Range (onnxruntime adds
    delta to a running value) differs by its algorithm, measured here first; the note names
    it and the way to compare like with like, which then passes."""
    import onnxruntime as ort
    from onnx.reference import ReferenceEvaluator

    graph = helper.make_graph(
        [helper.make_node("Range", ["s", "l", "d"], ["r"], name="range"),
         helper.make_node("Concat", ["r", "r"], ["y"], axis=0, name="cat")], "g",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, []) for n in "sld"],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    feeds = {"s": np.float32(0.1), "l": np.float32(1000), "d": np.float32(0.1)}
    feeds = {name: np.array(value) for name, value in feeds.items()}
    by_ort = ort.InferenceSession(model.SerializeToString(),
                                  providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    by_reference = ReferenceEvaluator(model).run(None, feeds)[0]
    assert np.abs(by_ort - by_reference).max() > 1e-3  # the engines differ, not DirectML

    apart = check(model, inputs=feeds, fallback="reference")
    assert not apart.passed and apart.descriptors_run == 1
    (note,) = [n for n in apart.notes if "onnx.reference" in n]
    assert note.startswith("the fallback ran 1 node(s) on onnx.reference (Range) that the "
                           "reference ran on onnxruntime")
    assert "--fallback onnxruntime" in note
    alike = check(model, inputs=feeds)
    assert alike.passed and not alike.notes
    # parity holding on the reference fallback says nothing of the engines
    feeds["l"] = np.array(1.0, np.float32)
    assert check(model, inputs=feeds, fallback="reference").notes == ()


def test_an_output_among_the_inputs_mapping_says_where_outputs_go() -> None:
    """check(model, inputs=dict(np.load(run -o's .npz))) holds the outputs too, which the
    file's path form compares with; the mapping form said only "unknown ['y']" (a new
    user's walkthrough). The message now says 'y' is a graph output and that expected=
    takes it, which the second call follows: the stored output is compared (and a wrong one
    fails)."""
    graph = helper.make_graph(
        [helper.make_node("Concat", ["x", "x"], ["y"], axis=0, name="cat")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    wrong = np.concatenate([x, x + 1])
    with pytest.raises(BackendError, match=re.escape(
            "unknown ['y']; ['y'] is a graph output, which a run makes (check's expected= "
            "takes outputs to compare with)")):
        check(model, inputs={"x": x, "y": wrong})
    report = check(model, inputs={"x": x}, expected={"y": wrong})
    assert not report.passed and report.comparisons[1].outputs[0].mismatches == 6
    assert check(model, inputs={"x": x}, expected={"y": np.concatenate([x, x])}).passed
