"""Shape inference and constant folding: computed Slice/Pad parameters become constants when
shapes are static, stay run-time values with a reason otherwise, and results never change.
Oracles: onnxruntime on the original model, NumPy."""

from __future__ import annotations

import re

import numpy as np
import onnx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

import dmlgraph
from dmlgraph import canonical, folding
from dmlgraph.ir import TensorInfo

INT64 = TensorProto.INT64
FLOAT = TensorProto.FLOAT


def _i64(name: str, values) -> onnx.TensorProto:
    values = list(np.atleast_1d(values))
    return helper.make_tensor(name, INT64, [len(values)], values)


def _scalar(name: str, value, elem=INT64) -> onnx.TensorProto:
    return helper.make_tensor(name, elem, [], [value])


def _computed_slice_and_pad(onnx_make_model, shape, opset: int = 17) -> onnx.ModelProto:
    """y = Pad(x[..., :ceil(L / 2)], last axis by (1, L // 4)) with L = x.shape[-1], every
    parameter computed the way exporters do (Shape, Gather, Cast, Div, Ceil, Unsqueeze, Concat)."""
    rank = len(shape)
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Gather", ["shape", "last"], ["length"], axis=0),
        helper.make_node("Cast", ["length"], ["length_f"], to=FLOAT),
        helper.make_node("Div", ["length_f", "two_f"], ["half_f"]),
        helper.make_node("Ceil", ["half_f"], ["half_up_f"]),
        helper.make_node("Cast", ["half_up_f"], ["half"], to=INT64),
        helper.make_node("Unsqueeze", ["half", "zero"], ["ends"]),
        helper.make_node("Slice", ["x", "starts", "ends", "axes"], ["sliced"], name="the_slice"),
        helper.make_node("Div", ["length", "four"], ["quarter"]),
        helper.make_node("Unsqueeze", ["quarter", "zero"], ["quarter_1d"]),
        helper.make_node(
            "Concat", ["zeros_before", "one", "zeros_after", "quarter_1d"], ["pads"], axis=0
        ),
        helper.make_node("Pad", ["sliced", "pads"], ["y"], name="the_pad", mode="constant"),
    ]
    inits = [
        _scalar("last", rank - 1),
        _scalar("two_f", 2.0, FLOAT),
        _scalar("four", 4),
        _i64("zero", 0),
        _i64("starts", 0),
        _i64("axes", rank - 1),
        _i64("one", 1),
        helper.make_tensor("zeros_before", INT64, [rank - 1], [0] * (rank - 1)),
        helper.make_tensor("zeros_after", INT64, [rank - 1], [0] * (rank - 1)),
    ]
    return onnx_make_model(
        nodes,
        [("x", FLOAT, list(shape))],
        [("y", FLOAT, [None] * rank)],
        opset=opset,
        initializers=inits,
    )


def _numpy_run_all(graph: dmlgraph.Graph, feeds) -> dict[str, np.ndarray]:
    """The NumPy backend's outputs of the graph lowered at 6_4, by name."""
    from backends import get_backend
    from lowering import lower

    return dict(get_backend("numpy").run(lower(graph, "6_4"), feeds))


def _expected(x: np.ndarray) -> np.ndarray:
    length = x.shape[-1]
    sliced = x[..., : -(-length // 2)]
    return np.pad(sliced, [(0, 0)] * (x.ndim - 1) + [(1, length // 4)])


def _all_parameters_constant(graph: dmlgraph.Graph) -> bool:
    return all(
        not node.input(port) or graph.is_constant(node.input(port))
        for node in graph.nodes
        if node.op_type in canonical.PARAMETER_PORTS
        for port in canonical.PARAMETER_PORTS[node.op_type].values()
    )


def test_static_shape_folds_every_computed_parameter(onnx_make_model, onnx_run) -> None:
    model = _computed_slice_and_pad(onnx_make_model, (2, 3, 9))
    graph = dmlgraph.load(model)
    assert [n.op_type for n in graph.topological_order()] == ["Slice", "Pad"]
    assert _all_parameters_constant(graph)
    (slice_node,) = graph.find_nodes("Slice")
    (pad_node,) = graph.find_nodes("Pad")
    assert graph.constant(slice_node.input(2)).tolist() == [5]  # ceil(9 / 2)
    assert graph.constant(pad_node.input(1)).tolist() == [0, 0, 1, 0, 0, 2]  # 9 // 4
    assert not slice_node.notes and not pad_node.notes
    x = np.arange(54, dtype=np.float32).reshape(2, 3, 9)
    expected = onnx_run(model, {"x": x})[0]
    assert np.array_equal(expected, _expected(x))
    assert np.array_equal(onnx_run(graph.to_onnx(), {"x": x})[0], expected)
    # The shapes after folding are inferred again: the output's is now static.
    assert graph.tensors["y"].shape == expected.shape


def test_dynamic_dim_leaves_parameters_at_run_time_with_the_reason(
    onnx_make_model, onnx_run
) -> None:
    model = _computed_slice_and_pad(onnx_make_model, (2, 3, "L"))
    graph = dmlgraph.load(model)
    (slice_node,) = graph.find_nodes("Slice")
    (pad_node,) = graph.find_nodes("Pad")
    for node, field in ((slice_node, "ends"), (pad_node, "pads")):
        reasons = folding.runtime_parameters(graph, node)
        assert list(reasons) == [field]
        assert reasons[field] == "depends on the shape of 'x', which is not static ([2, 3, 'L'])"
        tensor = node.input(canonical.PARAMETER_PORTS[node.op_type][field])
        assert node.notes == [
            f"{folding.RUNTIME_PARAMETER}: {field} ({tensor!r}) is not constant: {reasons[field]}"
        ]
    # Constant parts still fold: the Shape chain stays, its constant operands are constants.
    assert graph.find_nodes("Shape") and not graph.find_nodes("Constant")
    for length in (7, 8):
        x = np.linspace(-1, 1, 6 * length, dtype=np.float32).reshape(2, 3, length)
        assert np.array_equal(onnx_run(graph.to_onnx(), {"x": x})[0], onnx_run(model, {"x": x})[0])
        assert np.array_equal(onnx_run(model, {"x": x})[0], _expected(x))

    fixed = dmlgraph.load(model, input_shapes={"x": [2, 3, 8]})
    assert _all_parameters_constant(fixed) and not any(n.notes for n in fixed.nodes)
    x = np.linspace(-1, 1, 48, dtype=np.float32).reshape(2, 3, 8)
    assert np.array_equal(onnx_run(fixed.to_onnx(), {"x": x})[0], _expected(x))


def test_parameters_from_input_data_say_so(onnx_make_model, onnx_run) -> None:
    nodes = [
        helper.make_node("Cast", ["p"], ["pads"], to=INT64),
        helper.make_node("Pad", ["x", "pads"], ["y"], name="data_pad", mode="edge"),
    ]
    model = onnx_make_model(
        nodes,
        [("x", FLOAT, [2, 3]), ("p", TensorProto.INT32, [4])],
        [("y", FLOAT, [None, None])],
        opset=17,
    )
    graph = dmlgraph.load(model)
    (pad,) = graph.find_nodes("Pad")
    assert folding.runtime_parameters(graph, pad) == {
        "pads": "depends on the data of graph input 'p'"
    }
    feeds = {
        "x": np.arange(6, dtype=np.float32).reshape(2, 3),
        "p": np.array([1, 0, 0, 2], dtype=np.int32),
    }
    assert np.array_equal(
        onnx_run(graph.to_onnx(), feeds)[0], np.pad(feeds["x"], [(1, 0), (0, 2)], mode="edge")
    )


def test_random_ops_are_never_folded(onnx_make_model, onnx_run) -> None:
    """RandomUniform * 0 is always 0, but folding must not evaluate a random op."""
    nodes = [
        helper.make_node("RandomUniform", [], ["r"], shape=[4], dtype=FLOAT, seed=1.0),
        helper.make_node("Mul", ["r", "zero_f"], ["z"]),
        helper.make_node("Cast", ["z"], ["pads"], to=INT64),
        helper.make_node("Pad", ["x", "pads"], ["y"], name="random_pad"),
    ]
    model = onnx_make_model(
        nodes,
        [("x", FLOAT, [2, 3])],
        [("y", FLOAT, [None, None])],
        opset=17,
        initializers=[_scalar("zero_f", 0.0, FLOAT)],
    )
    graph = dmlgraph.load(model)
    (pad,) = graph.find_nodes("Pad")
    assert folding.runtime_parameters(graph, pad) == {"pads": "unnamed node making 'r' (RandomUniform) is random"}
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert np.array_equal(onnx_run(graph.to_onnx(), {"x": x})[0], x)


def test_results_that_would_bloat_the_model_are_not_folded(
    onnx_make_model, onnx_run, monkeypatch
) -> None:
    monkeypatch.setattr(folding, "FOLD_GROWTH_LIMIT_BYTES", 64)
    nodes = [
        helper.make_node(
            "ConstantOfShape",
            ["big_shape"],
            ["ones"],
            name="filler",
            value=helper.make_tensor("v", FLOAT, [1], [1.0]),
        ),
        helper.make_node("Add", ["x", "ones"], ["y"]),
    ]
    model = onnx_make_model(
        nodes,
        [("x", FLOAT, [4, 8])],
        [("y", FLOAT, [4, 8])],
        opset=17,
        initializers=[_i64("big_shape", [4, 8])],
    )
    graph = dmlgraph.load(model)
    (filler,) = graph.find_nodes("ConstantOfShape")
    assert filler.notes == [
        f"{folding.NOT_FOLDED}: output 'ones' would add 128 bytes of constant data (limit 80)"
    ]
    x = np.arange(32, dtype=np.float32).reshape(4, 8)
    assert np.array_equal(onnx_run(graph.to_onnx(), {"x": x})[0], x + 1)


def _grown(case: str) -> onnx.ModelProto:
    """``c`` of 256 MiB (or, for "fill", 2^64 bytes) made from small constants; y = c."""
    f = numpy_helper.from_array
    if case == "gather":  # [1, 2^16] floats by 1024 repeated indices
        nodes = [helper.make_node("Gather", ["d", "i"], ["c"], axis=0)]
        inits = [f(np.zeros((1, 1 << 16), np.float32), "d"), f(np.zeros(1024, np.int64), "i")]
    elif case == "add":  # [2^13, 1] + [1, 2^13], broadcast
        nodes = [helper.make_node("Add", ["a", "b"], ["c"])]
        inits = [f(np.zeros((1 << 13, 1), np.float32), "a"),
                 f(np.zeros((1, 1 << 13), np.float32), "b")]
    elif case == "cast":  # an int8 weight of 16 MiB as doubles: 128 MiB
        nodes = [helper.make_node("Cast", ["w"], ["c"], to=TensorProto.DOUBLE)]
        inits = [f(np.zeros(1 << 24, np.int8), "w")]
    else:  # a shape that Floor and Cast make, which onnx's data propagation does not size
        nodes = [helper.make_node("Floor", ["s"], ["fl"]),
                 helper.make_node("Cast", ["fl"], ["shape"], to=INT64),
                 helper.make_node("ConstantOfShape", ["shape"], ["c"])]
        inits = [f(np.array([2.0**31, 2.0**31], np.float32), "s")]
    out = TensorProto.DOUBLE if case == "cast" else FLOAT
    graph = helper.make_graph(nodes + [helper.make_node("Identity", ["c"], ["y"])], "g", [],
                              [helper.make_tensor_value_info("y", out, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=9)


@pytest.mark.parametrize("case", ["gather", "add", "fill", "cast"])
def test_a_kernel_does_not_compute_at_import_what_is_too_large_to_fold(case: str) -> None:
    """The import-time kernels of ops whose results may outgrow their inputs are asked the
    growth limit first, by sizes inference gave: computed first, the Gather and the Add
    allocated 256 MiB each at import (a Gather by 4096 indices: 16 GiB, a MemoryError that
    failed the load), the ConstantOfShape, which inference did not size, failed it, and the
    Cast of an int8 weight to doubles allocated its 128 MiB."""
    import tracemalloc

    tracemalloc.start()
    try:
        graph = dmlgraph.load(_grown(case))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < folding.EVALUATION_LIMIT_BYTES
    (node,) = [n for n in graph.nodes if n.op_type != "Identity"]
    assert any("too many to compute" in note for note in node.notes), node.notes


def test_graph_outputs_stay_computed(onnx_make_model, onnx_run) -> None:
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"], name="the_shape"),
        helper.make_node("Slice", ["x", "zeros", "shape"], ["y"], name="uses_shape"),
    ]
    model = onnx_make_model(
        nodes,
        [("x", FLOAT, [3, 2])],
        [("shape", INT64, [2]), ("y", FLOAT, [None, None])],
        opset=17,
        initializers=[_i64("zeros", [0, 0])],
    )
    graph = dmlgraph.load(model)
    assert [n.op_type for n in graph.topological_order()] == ["Shape", "Slice"]
    (slice_node,) = graph.find_nodes("Slice")
    reason = folding.runtime_parameters(graph, slice_node)["ends"]
    assert reason == "node 'the_shape' (Shape) computes graph output 'shape', which is never folded"
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    expected = onnx_run(model, {"x": x})
    actual = onnx_run(graph.to_onnx(), {"x": x})
    assert all(np.array_equal(a, e) for a, e in zip(actual, expected))


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax", "Hardmax"])
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_a_softmax_before_opset_13_folds_over_a_matrix(op, axis, onnx_make_model,
                                                       onnx_run) -> None:
    """Softmax-11 (and LogSoftmax, Hardmax) coerce the input to a matrix at ``axis`` (default
    1); onnx.reference's node evaluator runs the newest op whatever the opset, and normalized
    along ``axis`` alone (-1 by default): a constant folded 0.99 off onnxruntime."""
    data = np.linspace(-3, 4, 24, dtype=np.float32).reshape(2, 3, 4)
    nodes = [
        helper.make_node(op, ["c"], ["s"], **({} if axis is None else {"axis": axis})),
        helper.make_node("Add", ["s", "x"], ["y"]),
    ]
    model = onnx_make_model(
        nodes, [("x", FLOAT, [2, 3, 4])], [("y", FLOAT, [2, 3, 4])], opset=11,
        initializers=[numpy_helper.from_array(data, "c")],
    )
    graph = dmlgraph.load(model)
    assert [n.op_type for n in graph.nodes] == ["Add"]
    x = np.zeros((2, 3, 4), np.float32)
    (expected,) = onnx_run(model, {"x": x}, optimize=False)
    (actual,) = onnx_run(graph.to_onnx(), {"x": x})
    np.testing.assert_allclose(actual, expected, rtol=1e-6, atol=1e-6)


def test_a_node_the_reference_evaluator_fails_on_is_kept_with_a_note(
    onnx_make_model, onnx_run, monkeypatch
) -> None:
    real = folding._run_reference

    def failing_on_neg(graph, nodes, values):
        if any(n.op_type == "Neg" for n in nodes):
            raise RuntimeError("no kernel")
        return real(graph, nodes, values)

    monkeypatch.setattr(folding, "_run_reference", failing_on_neg)
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Neg", ["shape"], ["negative"], name="the_neg"),
        helper.make_node("Abs", ["negative"], ["positive"]),
        helper.make_node("Concat", ["positive", "positive"], ["pads"], axis=0),
        helper.make_node("Pad", ["x", "pads"], ["y"], name="pad"),
        helper.make_node("Identity", ["x"], ["z"]),
    ]
    model = onnx_make_model(
        nodes, [("x", FLOAT, [1, 2])], [("y", FLOAT, [None, None]), ("z", FLOAT, [1, 2])], opset=17
    )
    graph = dmlgraph.load(model)
    (neg,) = graph.find_nodes("Neg")
    assert neg.notes == [f"{folding.NOT_FOLDED}: onnx.reference failed: RuntimeError: no kernel"]
    assert not graph.find_nodes("Shape")  # folded in the node-by-node retry
    (pad,) = graph.find_nodes("Pad")
    assert folding.runtime_parameters(graph, pad) == {
        "pads": f"node 'the_neg' (Neg) was {neg.notes[0]}"
    }
    x = np.array([[1.0, 2.0]], dtype=np.float32)
    expected = onnx_run(model, {"x": x})
    assert all(np.array_equal(a, e) for a, e in zip(onnx_run(graph.to_onnx(), {"x": x}), expected))


def test_fold_reaches_a_fixed_point(onnx_make_model) -> None:
    graph = dmlgraph.load(_computed_slice_and_pad(onnx_make_model, (2, 3, "L")))
    before = [(n.id, n.op, n.inputs, tuple(n.notes)) for n in graph.nodes], dict(graph.tensors)
    report = folding.fold(graph)
    assert report.folded == [] and report.removed == [] and report.rounds == 1
    assert (
        [(n.id, n.op, n.inputs, tuple(n.notes)) for n in graph.nodes],
        dict(graph.tensors),
    ) == before


def test_fold_report_and_no_dead_nodes_or_tensors(onnx_make_model) -> None:
    graph = dmlgraph.load(_computed_slice_and_pad(onnx_make_model, (2, 3, 9)), fold=False)
    assert graph.find_nodes("Shape") and not graph.find_nodes("Constant")
    report = folding.fold(graph)
    assert "unnamed node making 'shape' (Shape)" in report.folded and len(report.folded) == 10
    assert report.runtime_parameters == {}
    referenced = (
        set(graph.inputs)
        | set(graph.outputs)
        | {t for n in graph.nodes for t in n.inputs + n.outputs}
    )
    assert set(graph.tensors) == referenced - {""}
    graph.validate()


def test_infer_shapes_merges_without_losing_known_dims(onnx_make_model) -> None:
    graph = dmlgraph.load(
        onnx_make_model(
            [helper.make_node("Relu", ["x"], ["y"])],
            [("x", FLOAT, ["N", 3])],
            [("y", FLOAT, [None, None])],
            opset=17,
        ),
        fold=False,
    )
    assert graph.tensors["y"].shape == ("N", 3)
    graph.update_tensor("y", shape=("N", None))
    assert folding.infer_shapes(graph) == 1
    assert graph.tensors["y"].shape == ("N", 3) and graph.tensors["y"].dtype == np.float32


@settings(max_examples=25, deadline=None)
@given(
    shape=st.lists(st.integers(1, 9), min_size=1, max_size=4),
    opset=st.sampled_from([13, 17, 18, 21]),
)
def test_property_folding_never_changes_results(shape, opset, onnx_make_model, onnx_run) -> None:
    model = _computed_slice_and_pad(onnx_make_model, tuple(shape), opset)
    graph = dmlgraph.load(model)
    assert _all_parameters_constant(graph)
    x = np.random.default_rng(sum(shape)).standard_normal(shape).astype(np.float32)
    expected = onnx_run(model, {"x": x})[0]
    assert np.array_equal(expected, _expected(x))
    assert np.array_equal(onnx_run(graph.to_onnx(), {"x": x})[0], expected)


def test_one_pass_folds_through_a_reshape_that_inference_could_not_size(
    onnx_make_model, onnx_run
) -> None:
    """Abs is outside onnx's data propagation, so the Reshape's shape is unknown at import;
    the pass folds Abs, re-infers the Reshape from the new constant, and then folds the Shape
    chain behind it: one pass, and the same outputs as onnxruntime on the original model."""
    nodes = [
        helper.make_node("Abs", ["negative_target"], ["target"]),
        helper.make_node("Reshape", ["x", "target"], ["reshaped"]),
        helper.make_node("Shape", ["reshaped"], ["shape"]),
        helper.make_node("Gather", ["shape", "last"], ["length"], axis=0),
        helper.make_node("Sub", ["length", "one"], ["shorter"]),
        helper.make_node("Unsqueeze", ["shorter", "zero"], ["ends"]),
        helper.make_node("Slice", ["reshaped", "zero", "ends", "one_axis"], ["y"], name="cut"),
    ]
    inits = [
        _i64("negative_target", [-3, -4]),
        _scalar("last", 1),
        _scalar("one", 1),
        _i64("zero", 0),
        _i64("one_axis", 1),
    ]
    model = onnx_make_model(
        nodes, [("x", FLOAT, [2, 6])], [("y", FLOAT, [None, None])], opset=17, initializers=inits
    )
    before = dmlgraph.load(model, fold=False)
    assert not before.tensors["reshaped"].is_static  # what whole-graph inference left unknown
    report = folding.fold(before)
    assert report.rounds == 1
    assert [n.op_type for n in before.nodes] == ["Reshape", "Slice"]
    assert before.tensors["reshaped"].shape == (3, 4)
    (cut,) = before.find_nodes("Slice")
    assert before.constant(cut.inputs[2]).tolist() == [3]
    x = np.arange(12, dtype=np.float32).reshape(2, 6)
    expected = onnx_run(model, {"x": x})
    assert np.array_equal(expected[0], x.reshape(3, 4)[:, :3])
    (actual,) = onnx_run(before.to_onnx(), {"x": x})
    assert np.array_equal(actual, expected[0])


def test_constant_nodes_become_constants_unless_they_are_graph_outputs(
    onnx_make_model, onnx_run
) -> None:
    nodes = [
        helper.make_node(
            "Constant", [], ["bias"], value=helper.make_tensor("v", FLOAT, [2], [1.5, -2.0])
        ),
        helper.make_node("Add", ["x", "bias"], ["y"]),
        helper.make_node("Constant", [], ["starts"], value_ints=[1]),
        helper.make_node("Constant", [], ["ends"], value_ints=[2]),
        helper.make_node("Slice", ["y", "starts", "ends"], ["z"]),
        helper.make_node(
            "Constant", [], ["shown"], value=helper.make_tensor("w", INT64, [1], [7]),
            name="shown_constant",
        ),
    ]
    model = onnx_make_model(
        nodes,
        [("x", FLOAT, [3, 2])],
        [("z", FLOAT, [None, None]), ("shown", INT64, [1])],
        opset=17,
    )
    graph = dmlgraph.load(model)
    assert [n.name for n in graph.find_nodes("Constant")] == ["shown_constant"]
    assert graph.constant("bias").tolist() == [1.5, -2.0]
    (slice_node,) = graph.find_nodes("Slice")
    assert graph.constant(slice_node.inputs[1]).tolist() == [1]
    assert graph.constant(slice_node.inputs[2]).tolist() == [2]
    folded = [r.provenance.op_type for r in graph.removed if r.status == "folded"]
    assert folded.count("Constant") == 3
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    expected = onnx_run(model, {"x": x})
    assert np.array_equal(expected[0], (x + np.float32([1.5, -2.0]))[1:2])
    actual = onnx_run(graph.to_onnx(), {"x": x})
    assert all(np.array_equal(a, e) for a, e in zip(actual, expected))


def test_nodes_of_one_form_share_an_evaluator_but_not_their_values(onnx_make_model) -> None:
    """Two Gathers differ only in their index constant: the cached evaluator of their form
    must still give each its own value (NumPy indexing is the oracle)."""
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Gather", ["shape", "i0"], ["first"], axis=0),
        helper.make_node("Gather", ["shape", "i2"], ["third"], axis=0),
        helper.make_node("Unsqueeze", ["first", "zero"], ["ends_a"]),
        helper.make_node("Unsqueeze", ["third", "zero"], ["ends_b"]),
        helper.make_node("Slice", ["x", "zero", "ends_a", "zero"], ["a"], name="a"),
        helper.make_node("Slice", ["x", "zero", "ends_b", "two"], ["b"], name="b"),
    ]
    inits = [_scalar("i0", 0), _scalar("i2", 2), _i64("zero", 0), _i64("two", 2)]
    model = onnx_make_model(
        nodes,
        [("x", FLOAT, [5, 3, 4])],
        [("a", FLOAT, [None, None, None]), ("b", FLOAT, [None, None, None])],
        opset=17,
        initializers=inits,
    )
    graph = dmlgraph.load(model)
    ends = {n.name: graph.constant(n.inputs[2]).tolist() for n in graph.find_nodes("Slice")}
    shape = np.zeros((5, 3, 4)).shape
    assert ends == {"a": [shape[0]], "b": [shape[2]]}


def test_inference_memo_reuses_only_what_the_same_form_infers(onnx_models_dir, monkeypatch) -> None:
    """shufflenet re-infers its blocks after folding their shape chains; nodes of one form
    (op, attributes, input types and small constants) share one onnx inference. Every tensor
    comes out as it does with each node inferred on its own (the memo switched off)."""
    path = onnx_models_dir / "shufflenet_v2_x0_5.onnx"
    inferred_by_port = folding._inferred_by_port
    calls = {"asked": 0, "computed": 0}

    def counted(graph, schema, proto, opset, types, data, memo):  # type: ignore[no-untyped-def]
        before = len(memo)
        result = inferred_by_port(graph, schema, proto, opset, types, data, memo)
        calls["asked"] += 1
        calls["computed"] += len(memo) > before
        return result

    def unshared(graph, schema, proto, opset, types, data, memo):  # type: ignore[no-untyped-def]
        return inferred_by_port(graph, schema, proto, opset, types, data, None)

    monkeypatch.setattr(folding, "_inferred_by_port", counted)
    shared = dmlgraph.load(path)
    monkeypatch.setattr(folding, "_inferred_by_port", unshared)
    alone = dmlgraph.load(path)
    assert calls["asked"] > 100 and calls["computed"] < calls["asked"] * 3 // 4
    assert shared.tensors == alone.tensors
    assert [(n.op, n.inputs, n.outputs) for n in shared.nodes] == [
        (n.op, n.inputs, n.outputs) for n in alone.nodes
    ]


def test_nodes_whose_inference_reads_a_large_constant_do_not_share_it(onnx_make_model) -> None:
    """Two Splits of one input type into 100 parts by sizes of 100 elements (above
    ``WEIGHT_ELEMENTS``), inferred with one memo: types alone leave the parts' lengths open,
    so each Split is inferred from its own sizes."""
    even, uneven = [2] * 100, [1] * 99 + [101]
    splits = [
        helper.make_node("Split", ["x", sizes], [f"{sizes}{k}" for k in range(100)], axis=0)
        for sizes in ("even", "uneven")
    ]
    outputs = [(name, FLOAT, [None]) for split in splits for name in split.output]
    model = onnx_make_model(
        splits, [("x", FLOAT, [200])], outputs, opset=17,
        initializers=[_i64("even", even), _i64("uneven", uneven)],
    )
    graph = dmlgraph.load(model, fold=False)
    for split in splits:
        for name in split.output:
            graph.set_tensor(TensorInfo(name))  # as if nothing were known of them yet
    memo: folding.InferenceMemo = {}
    for split in splits:
        assert len(folding.infer_proto(graph, split, 17, memo=memo)) == 100
    assert [graph.tensors[f"even{k}"].shape for k in range(100)] == [(v,) for v in even]
    assert [graph.tensors[f"uneven{k}"].shape for k in range(100)] == [(v,) for v in uneven]


def test_a_shape_evaluation_proves_wrong_is_not_folded_into_a_shape(
    onnx_make_model, onnx_run
) -> None:
    """onnx infers this float Range as 69 elements; evaluated (onnx.reference, and
    onnxruntime, the oracle) it has 68. Shape(range) and Shape(Neg(range)) must fold to what
    the model computes, not to the inferred length; the Range itself stays (it disagrees with
    inference) with its evaluated shape noted."""
    inits = [onnx.numpy_helper.from_array(np.array(v, np.float32), k)
             for k, v in {"s": -7.2131205, "l": 6.3868794, "d": 0.2}.items()]
    model = onnx_make_model(
        [helper.make_node("Range", ["s", "l", "d"], ["r"], name="range"),
         helper.make_node("Neg", ["r"], ["n"]),
         helper.make_node("Shape", ["r"], ["sr"]),
         helper.make_node("Shape", ["n"], ["sn"]),
         helper.make_node("Identity", ["sr"], ["y"]),
         helper.make_node("Identity", ["sn"], ["z"]),
         helper.make_node("Concat", ["r", "n"], ["w"], axis=0)],
        [], [("y", TensorProto.INT64, [1]), ("z", TensorProto.INT64, [1]),
             ("w", TensorProto.FLOAT, [None])],
        opset=17, initializers=inits,
    )
    y, z, w = onnx_run(model, {})
    assert y.tolist() == z.tolist() == [68] and w.shape == (136,)
    graph = dmlgraph.load(model)
    # the Range stays for onnxruntime (``_is_float_range``), and so do the Shapes of it: its
    # length is onnxruntime's to compute (``SHAPE_EXACT_OPS`` has no Range)
    assert graph.constant("sr") is None and graph.constant("sn") is None
    outputs = _numpy_run_all(graph, {})
    assert outputs["y"].tolist() == outputs["z"].tolist() == [68]
    assert graph.tensor("r").shape == (68,) and graph.tensor("w").shape == (136,)
    (range_node,) = graph.find_nodes("Range")
    assert any(n.startswith(folding.SHAPE_EVALUATED) and "[68]" in n and "[69]" in n
               for n in range_node.notes)


def test_a_float_range_is_left_to_the_fallback(onnx_make_model, onnx_run) -> None:
    """onnxruntime (the oracle) computes a float Range by adding delta to a running value;
    ONNX's start + i * delta rounds otherwise (element 24 below: 23 on onnxruntime, 24 by
    ONNX). Folding must not decide it: the Range stays, with the reason, and runs on the
    fallback, so the lowered graph computes what onnxruntime does."""
    inits = [onnx.numpy_helper.from_array(np.array(v, np.float32), k)
             for k, v in {"s": 0.0, "l": 2.5, "d": 0.1, "ten": 10.0}.items()]
    model = onnx_make_model(
        [helper.make_node("Range", ["s", "l", "d"], ["r"], name="range"),
         helper.make_node("Mul", ["r", "ten"], ["m"]),
         helper.make_node("Cast", ["m"], ["y"], to=TensorProto.INT64)],
        [], [("y", TensorProto.INT64, [None])], opset=17, initializers=inits,
    )
    (expected,) = onnx_run(model, {})
    assert expected[24] == 23  # what makes the case
    graph = dmlgraph.load(model)
    (range_node,) = graph.find_nodes("Range")
    assert any(n.startswith(folding.NOT_FOLDED) and "float Range" in n for n in range_node.notes)
    from backends import get_backend
    from lowering import lower

    np.testing.assert_array_equal(get_backend("numpy").run(lower(graph), {})["y"], expected)


def _from_constants(node: onnx.NodeProto, constants, elem: int, opset: int) -> onnx.ModelProto:
    """``c = node(constants)``, ``y = Identity(c)``: c is folded if folding may (a float8
    ``c`` is cast to float: onnxruntime's Python API returns no float8 array)."""
    last = helper.make_node("Identity", ["c"], ["y"])
    if elem == TensorProto.FLOAT8E5M2:
        last, elem = helper.make_node("Cast", ["c"], ["y"], to=TensorProto.FLOAT), TensorProto.FLOAT
    graph = helper.make_graph(
        [node, last], "g", [],
        [helper.make_tensor_value_info("y", elem, None)],
        [numpy_helper.from_array(np.asarray(v), name) for name, v in constants],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=9)


_F32, _I64 = np.float32, np.int64
ORT_DIVERGENT = [
    # Clip-13 with a NaN bound: onnxruntime ignores it, NumPy's maximum gives NaN
    (helper.make_node("Clip", ["a", "lo", ""], ["c"]),
     [("a", np.array([1, -3], _F32)), ("lo", np.array(np.nan, _F32))], TensorProto.FLOAT, 13),
    # onnxruntime computes these through a double
    (helper.make_node("Pow", ["a", "b"], ["c"]),
     [("a", np.array([3], _I64)), ("b", np.array([39], _I64))], TensorProto.INT64, 13),
    (helper.make_node("ReduceSum", ["a"], ["c"], keepdims=0),
     [("a", np.array([2**53 + 1, 2], _I64))], TensorProto.INT64, 11),
    (helper.make_node("ReduceL1", ["a"], ["c"], keepdims=0),
     [("a", np.array([2**53 + 1, 0], _I64))], TensorProto.INT64, 13),
    (helper.make_node("ReduceProd", ["a"], ["c"], keepdims=0),
     [("a", np.array([2**30 + 1, 2**30 + 1], _I64))], TensorProto.INT64, 13),
    (helper.make_node("ReduceSumSquare", ["a"], ["c"], keepdims=0),
     [("a", np.array([2**30 + 1], _I64))], TensorProto.INT64, 13),
    # onnxruntime saturates int32 where NumPy wraps; ReduceMean sums first
    (helper.make_node("ReduceSum", ["a"], ["c"], keepdims=0),
     [("a", np.array([2**31 - 1, 1], np.int32))], TensorProto.INT32, 11),
    (helper.make_node("ReduceProd", ["a"], ["c"], keepdims=0),
     [("a", np.array([65536, 65536], np.int32))], TensorProto.INT32, 13),
    (helper.make_node("ReduceMean", ["a"], ["c"], keepdims=0),
     [("a", np.array([2**30, 2**30, 2**30], np.int32))], TensorProto.INT32, 13),
    # onnxruntime parses strings otherwise than Python ("0" to bool is False)
    (helper.make_node("Cast", ["a"], ["c"], to=TensorProto.BOOL),
     [("a", np.array(["1", "0"], object))], TensorProto.BOOL, 13),
    (helper.make_node("Cast", ["a"], ["c"], to=TensorProto.INT64),
     [("a", np.array(["1_000"], object))], TensorProto.INT64, 13),
    # saturate=0: onnxruntime gives NaN where ONNX gives inf
    (helper.make_node("Cast", ["a"], ["c"], to=TensorProto.FLOAT8E5M2, saturate=0),
     [("a", np.array([61440, -65504], _F32))], TensorProto.FLOAT8E5M2, 19),
    # ReduceMean over nothing, undefined in ONNX: onnxruntime gives 0, onnx.reference NaN
    # (INT64_MIN for integers, its NaN cast)
    (helper.make_node("ReduceMean", ["a"], ["c"], axes=[0], keepdims=0),
     [("a", np.zeros((0, 3), _F32))], TensorProto.FLOAT, 13),
    (helper.make_node("ReduceMean", ["a"], ["c"], keepdims=1),
     [("a", np.zeros((2, 0), _I64))], TensorProto.INT64, 13),
    # Clip-11 of float16 without a max: onnxruntime keeps inf, ONNX clips it to 65504
    (helper.make_node("Clip", ["a", "lo"], ["c"]),
     [("a", np.array([np.inf, -1], np.float16)), ("lo", np.array(0, np.float16))],
     TensorProto.FLOAT16, 11),
    # NonZero of a scalar: [0, 1] by ONNX's [rank, count], [1, 1] on onnxruntime
    (helper.make_node("NonZero", ["a"], ["c"]),
     [("a", np.array(3, _I64))], TensorProto.INT64, 13),
]
ORT_REFUSED = [
    (helper.make_node("Clip", ["a"], ["c"], min=float("nan")),
     [("a", np.array([1, -3], _F32))], TensorProto.FLOAT, 6),
    (helper.make_node("Clip", ["a"], ["c"], min=2.0, max=1.0),
     [("a", np.array([1, -3], _F32))], TensorProto.FLOAT, 6),
    (helper.make_node("Mod", ["a", "b"], ["c"]),
     [("a", np.array([5], _I64)), ("b", np.array([0], _I64))], TensorProto.INT64, 13),
    (helper.make_node("Div", ["a", "b"], ["c"]),
     [("a", np.array([5], _I64)), ("b", np.array([0], _I64))], TensorProto.INT64, 13),
    (helper.make_node("Mod", ["a", "b"], ["c"]),  # floats need fmod=1
     [("a", np.array([5.5], _F32)), ("b", np.array([2], _F32))], TensorProto.FLOAT, 13),
    (helper.make_node("Range", ["a", "b", "d"], ["c"]),
     [("a", np.array([0], _I64)), ("b", np.array([3], _I64)), ("d", np.array([1], _I64))],
     TensorProto.INT64, 13),
    # ONNX forbids these; onnx.reference (NumPy) computed them all the same
    (helper.make_node("Gather", ["a", "i"], ["c"]),  # data of rank 0
     [("a", np.array(7, _I64)), ("i", np.array(0, _I64))], TensorProto.INT64, 13),
    (helper.make_node("Squeeze", ["a"], ["c"], axes=[1]),  # an axis of size 3
     [("a", np.zeros((1, 3), _F32))], TensorProto.FLOAT, 11),
    (helper.make_node("Reshape", ["a", "s"], ["c"]),  # -2: NumPy reads any negative as -1
     [("a", np.zeros((2, 3), _F32)), ("s", np.array([-2, 3], _I64))], TensorProto.FLOAT, 13),
    (helper.make_node("Tile", ["a", "r"], ["c"]),  # repeats not one per axis
     [("a", np.zeros((2, 3), _F32)), ("r", np.array([2], _I64))], TensorProto.FLOAT, 13),
    (helper.make_node("Split", ["a", "s"], ["c"]),  # sizes not summing to the axis
     [("a", np.zeros(4, _F32)), ("s", np.array([3], _I64))], TensorProto.FLOAT, 13),
    (helper.make_node("Split", ["a"], ["c", "d"], split=[2, 2]),
     [("a", np.zeros(3, _F32))], TensorProto.FLOAT, 11),
    (helper.make_node("Split", ["a"], ["c", "d"]),  # 3 into 2 equal parts
     [("a", np.zeros(3, _F32))], TensorProto.FLOAT, 13),
    (helper.make_node("Split", ["a"], ["c"], num_outputs=2),  # 1 output of 2
     [("a", np.zeros(4, _F32))], TensorProto.FLOAT, 18),
    (helper.make_node("Split", ["a"], ["c", "d", "e", "f"], num_outputs=4),  # parts of 2, 2, 2
     [("a", np.zeros(5, _F32))], TensorProto.FLOAT, 18),                   # leave -1 for the 4th
    (helper.make_node("Flatten", ["a"], ["c"], axis=3),  # beyond the rank
     [("a", np.zeros((2, 3), _F32))], TensorProto.FLOAT, 13),
    (helper.make_node("ConstantOfShape", ["s"], ["c"],  # a value not of shape [1]
                      value=numpy_helper.from_array(np.array(7, _I64))),
     [("s", np.array([2, 2], _I64))], TensorProto.INT64, 20),
    (helper.make_node("Mod", ["a", "b"], ["c"], fmod=2),
     [("a", np.array([5], _I64)), ("b", np.array([3], _I64))], TensorProto.INT64, 13),
]


@pytest.mark.parametrize("node, constants, elem, opset", ORT_DIVERGENT,
                         ids=[f"{c[0].op_type}-{i}" for i, c in enumerate(ORT_DIVERGENT)])
def test_what_onnxruntime_computes_otherwise_is_not_folded(node, constants, elem, opset,
                                                           onnx_run) -> None:
    """Folding evaluates by ONNX; where onnxruntime computes otherwise, the node stays for
    the fallback, whose onnxruntime gives its own answer, bit for bit."""
    from backends import get_backend
    from lowering import lower

    model = _from_constants(node, constants, elem, opset)
    (expected,) = onnx_run(model, {})
    graph = dmlgraph.load(model)
    assert [n.op_type for n in graph.nodes][0] == node.op_type
    assert any(note.startswith(folding.NOT_FOLDED) for note in graph.nodes[0].notes)
    (actual,) = get_backend("numpy").run(lower(graph), {}).values()
    assert actual.dtype == expected.dtype
    assert actual.tobytes() == expected.tobytes()


@pytest.mark.parametrize("node, constants, elem, opset", ORT_REFUSED,
                         ids=[f"{c[0].op_type}-{i}" for i, c in enumerate(ORT_REFUSED)])
def test_what_onnxruntime_refuses_is_not_folded(node, constants, elem, opset,
                                                onnx_run) -> None:
    """Folded, these ran where onnxruntime refuses them; left to it, it refuses."""
    from backends import BackendError, get_backend
    from lowering import lower

    model = _from_constants(node, constants, elem, opset)
    with pytest.raises(Exception):
        onnx_run(model, {})
    graph = dmlgraph.load(model)
    assert [n.op_type for n in graph.nodes][0] == node.op_type
    with pytest.raises(BackendError, match="onnxruntime (cannot load|fails on)"):
        get_backend("numpy").run(lower(graph), {})


def test_a_float16_initializer_beyond_16_bits_is_refused() -> None:
    """onnxruntime: "data overflow"; onnx's reader truncated 0x13C00 to 1.0."""
    tensor = onnx.TensorProto(name="w", data_type=TensorProto.FLOAT16, dims=[1])
    tensor.int32_data.extend([0x13C00])
    model = _from_constants(helper.make_node("Identity", ["w"], ["c"]), [], TensorProto.FLOAT16,
                            13)
    model.graph.initializer.append(tensor)
    with pytest.raises(dmlgraph.DmlgraphError, match="does not fit in the 16 bits"):
        dmlgraph.load(model)


def test_what_onnxruntime_computes_alike_is_still_folded(onnx_run) -> None:
    """The divergence table declines only where onnxruntime differs: a small integer Pow, a
    float Mod with fmod=1 and an in-range int32 ReduceSum fold at import."""
    for node, constants, elem in (
        (helper.make_node("Pow", ["a", "b"], ["c"]),
         [("a", np.array([3], _I64)), ("b", np.array([5], _I64))], TensorProto.INT64),
        (helper.make_node("Mod", ["a", "b"], ["c"], fmod=1),
         [("a", np.array([5.5], _F32)), ("b", np.array([2], _F32))], TensorProto.FLOAT),
        (helper.make_node("ReduceSum", ["a"], ["c"], keepdims=0),
         [("a", np.array([2**30, 2**29], np.int32))], TensorProto.INT32),
    ):
        model = _from_constants(node, constants, elem, 13)
        graph = dmlgraph.load(model)
        assert [n.op_type for n in graph.nodes] == ["Identity"], node.op_type
        (expected,) = onnx_run(model, {})
        assert graph.constant(graph.nodes[0].inputs[0]).tobytes() == expected.tobytes()


@pytest.mark.parametrize("node, opset", [
    (helper.make_node("Pad", ["a"], ["c"], mode="reflect", pads=[5, 5]), 2),
    (helper.make_node("Pad", ["a", "p"], ["c"], mode="reflect"), 13),
    (helper.make_node("Pad", ["a", "p", "", "ax"], ["c"], mode="reflect"), 18),
], ids=["Pad-2", "Pad-13", "Pad-18 axes"])
def test_a_reflect_pad_by_its_size_or_more_is_lowered_not_folded(node, opset, onnx_run) -> None:
    """onnxruntime refuses it ("pre-pad (5) exceeds maximum allowed (2)"); folded by ONNX's
    reference, it hid that from ``check``, which then failed on the file (found by a review).
    Left unfolded, it is lowered with DirectML's periodic reflection, its divergence named;
    within the size, it still folds."""
    from backends import get_backend
    from lowering import lower

    from oracles import pad_oracle

    x = np.array([1, 2, 3], _F32)
    constants = [("a", x), ("p", np.array([5, 5], _I64)), ("ax", np.array([-1], _I64))]
    model = _from_constants(node, constants, TensorProto.FLOAT, opset)
    with pytest.raises(Exception, match="pre-pad"):
        onnx_run(model, {})
    graph = dmlgraph.load(model)
    (pad,) = graph.find_nodes("Pad")
    assert any(n.startswith(folding.NOT_FOLDED) and "reflect pads on axis [0] reach the dimension"
               in n for n in pad.notes)
    lowered = lower(graph)
    assert any(n.startswith("divergence:") for r in lowered.report() for n in r.notes)
    (y,) = get_backend("numpy").run(lowered, {}).values()
    assert y.tobytes() == pad_oracle(x, [5, 5], "reflect", np.float32(0)).tobytes()
    if opset >= 11:  # (onnx.reference runs no Pad-2: that one is never folded)
        within = _from_constants(node, [("a", x), ("p", np.array([2, 2], _I64)),
                                        ("ax", np.array([-1], _I64))], TensorProto.FLOAT, opset)
        assert not dmlgraph.load(within).find_nodes("Pad")  # folded


# ----------------------------------------------------------------------------- any dtype moves
def _bfloat16_slice_model(opset: int, starts: int, ends: int, step: int) -> onnx.ModelProto:
    """A bfloat16 constant sliced, its Shape and values read by float nodes."""
    import ml_dtypes

    data = numpy_helper.from_array(np.array([5, 6, 7, 8], dtype=ml_dtypes.bfloat16), "c")
    params = [numpy_helper.from_array(np.array([v], np.int64), n)
              for n, v in (("s", starts), ("e", ends), ("a", 0), ("st", step))]
    nodes = [helper.make_node("Slice", ["c", "s", "e", "a", "st"], ["y"], name="slice"),
             helper.make_node("Shape", ["y"], ["shape"]),
             helper.make_node("Cast", ["shape"], ["shape_f"], to=TensorProto.FLOAT),
             helper.make_node("Cast", ["y"], ["y_f"], to=TensorProto.FLOAT),
             helper.make_node("Concat", ["shape_f", "y_f"], ["cat"], axis=0),
             helper.make_node("Add", ["cat", "x"], ["out"])]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)], [data] + params)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                             ir_version=8)


@pytest.mark.parametrize("starts, ends, step", [(-10, -20, -1), (1, 3, 1), (3, -10, -2)])
def test_a_bfloat16_slice_folds_by_onnx_clamping(starts, ends, step) -> None:
    """Left to onnx.reference, which slices as Python does, [-10:-20:-1] of 4 elements was []
    (ONNX: [element 0]), and folding adopted that shape: Shape read [0] where onnxruntime
    reads [1]. The kernel now moves any dtype. Oracle: onnxruntime."""
    import onnxruntime as ort

    from backends import get_backend
    from lowering import lower

    model = _bfloat16_slice_model(13, starts, ends, step)
    x = np.zeros(1, np.float32)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    want = session.run(None, {"x": x})[0]
    graph = dmlgraph.load(model)
    assert not graph.find_nodes("Slice")  # folded by the kernel
    got = get_backend("numpy").run(lower(graph, "6_4"), {"x": x})["out"]
    assert np.array_equal(got, want)


def test_a_bfloat16_slice_of_a_version_without_bfloat16_is_refused_though_foldable() -> None:
    """bfloat16 came with Slice-13: onnxruntime refuses a Slice-11 of it, and a folded node
    never reaches canonical's type check, so the importer checks it before folding."""
    from dmlgraph.errors import ModelValidationError

    with pytest.raises(ModelValidationError, match=r"is tensor\(bfloat16\); Slice-11 takes"):
        dmlgraph.load(_bfloat16_slice_model(11, 1, 3, 1))


def test_a_constant_wrap_pad_of_an_empty_input_is_not_folded_but_named() -> None:
    """Folding knew one of onnxruntime's Pad departures (reflect by the size or more) and
    lowering five: a wrap Pad of an empty constant folded away, and check stopped on
    onnxruntime's "Unexpected mode of 3" where the same Pad fed at run time was named a known
    divergence. Both read ``ort_pad`` now."""
    data = numpy_helper.from_array(np.zeros((0, 2), _F32), "d")
    pads = numpy_helper.from_array(np.array([0, 1, 0, 1], _I64), "p")
    nodes = [helper.make_node("Pad", ["d", "p"], ["y"], mode="wrap", name="pad"),
             helper.make_node("ReduceSum", ["y"], ["s"], keepdims=0),
             helper.make_node("Add", ["s", "x"], ["out"])]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)], [data, pads])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)], ir_version=9)
    (pad,) = dmlgraph.load(model).find_nodes("Pad")
    assert any(n.startswith(folding.NOT_FOLDED) and "wrap Pad of an empty input" in n
               for n in pad.notes)
    report = dmlgraph.check(model, inputs={"x": np.array(1.5, _F32)})
    assert report.passed  # onnxruntime fails on it: a known divergence, not an error


# ----------------------------------------------------------------------------- partial shapes


def _shape_picks(onnx_make_model, shape, picks, *, shape_attrs=None, rows: bool = True):
    """``out = picks(Shape(x))`` as exporters write ``x.shape[i]``: ``picks`` is a list of
    (op, extra inputs, attributes) applied in turn to the Shape's output. With ``rows`` (a
    pick of one element) it also ends a Slice of a constant table, as
    ``pos_embedding[:, :x.shape[1]]`` does."""
    nodes = [helper.make_node("Shape", ["x"], ["v0"], **(shape_attrs or {}))]
    inits = []
    for k, (op, extra, attrs) in enumerate(picks):
        names = []
        for j, value in enumerate(extra):
            names.append(f"c{k}_{j}")
            inits.append(numpy_helper.from_array(np.asarray(value, dtype=np.int64), names[-1]))
        inputs = [f"v{k}", *names] if op != "Concat" else [*names, f"v{k}"]
        nodes.append(helper.make_node(op, inputs, [f"v{k + 1}"], **attrs))
    last = f"v{len(picks)}"
    nodes.append(helper.make_node("Identity", [last], ["out"]))
    outputs = [("out", INT64, None)]
    if rows:  # its output read by an Identity: a graph output itself would stay computed
        nodes += [
            helper.make_node("Slice", ["table", "zero", last, "zero"], ["rows"], name="rows"),
            helper.make_node("Identity", ["rows"], ["rows_out"]),
        ]
        inits += [
            numpy_helper.from_array(np.arange(64, dtype=np.float32).reshape(16, 4), "table"),
            numpy_helper.from_array(np.zeros(1, dtype=np.int64), "zero"),
        ]
        outputs.append(("rows_out", FLOAT, None))
    return onnx_make_model(
        nodes, [("x", FLOAT, list(shape))], outputs, opset=17, initializers=inits
    )


# (shape of x, Shape's attributes, picks, the value they give when it is known, else None)
PARTIAL_CASES = {
    "gather a static dim": (["B", 7, 3], {}, [("Gather", [[1]], {"axis": 0})], [7]),
    "gather from the back": (["B", 7, 3], {}, [("Gather", [[-1]], {"axis": 0})], [3]),
    "gather the dynamic dim": (["B", 7, 3], {}, [("Gather", [[0]], {"axis": 0})], None),
    "shape-15 end past the dynamic dims": (["B", "T", 5], {"start": -1}, [], [5]),
    "shape-15 range over a dynamic dim": (["B", "T", 5], {"start": 1}, [], None),
    "slice then gather": (
        ["B", 6, "T", 2], {},
        [("Slice", [[1], [4]], {}), ("Gather", [[0]], {"axis": 0})], [6],
    ),
    "slice keeps a dynamic dim": (["B", 6, "T", 2], {}, [("Slice", [[1], [3]], {})], None),
    "concat then gather": (
        ["B", 9], {},
        [("Concat", [[4]], {"axis": 0}), ("Gather", [[2]], {"axis": 0})], [9],
    ),
    "squeeze and unsqueeze": (
        ["B", 5], {},
        [("Gather", [[1]], {"axis": 0}), ("Squeeze", [[0]], {}), ("Unsqueeze", [[0]], {})],
        [5],
    ),
}


@pytest.mark.parametrize("case", PARTIAL_CASES)
def test_a_static_dim_of_a_partly_dynamic_tensor_folds(case, onnx_make_model, onnx_run) -> None:
    """``x.shape[1]`` of an ``x`` of shape [B, 7, 3] is 7 whatever B is: dmlgraph folds every
    pick of known dims (a Slice of a weight by it, as ``pos_embedding[:, :x.shape[1]]``, then
    folds away entirely). A pick that reaches a dynamic dim stays a run-time value, with the
    reason."""
    shape, shape_attrs, picks, expected = PARTIAL_CASES[case]
    rows = expected is not None or case == "gather the dynamic dim"
    model = _shape_picks(onnx_make_model, shape, picks, shape_attrs=shape_attrs, rows=rows)
    graphs = [dmlgraph.load(model), dmlgraph.load(model, fold=False)]
    folding.fold(graphs[1])  # as ``inspect`` folds: the same rule, after import
    for graph in graphs:
        remaining = {node.op_type for node in graph.nodes}
        out = graph.constant(graph.find_nodes("Identity")[0].input(0))
        if expected is None:
            assert "Shape" in remaining and out is None
            if rows:
                (slice_node,) = graph.find_nodes("Slice")
                assert "depends on the shape of 'x', which is not static" in " ".join(
                    slice_node.notes
                )
        else:  # the graph outputs' Identities stay (an output stays computed)
            assert remaining == {"Identity"}, remaining
            assert out is not None and out.tolist() == expected
            assert graph.constant("rows") is not None
    # the oracle: onnxruntime, on the model and on the folded graph, for several sizes
    for size in (1, 4):
        concrete = [size if isinstance(d, str) else d for d in shape]
        x = np.zeros(concrete, dtype=np.float32)
        want = onnx_run(model, {"x": x})
        if expected is not None:
            assert want[0].tolist() == expected
        for graph in graphs:
            got = onnx_run(graph.to_onnx(), {"x": x})
            assert all(np.array_equal(g, w) for g, w in zip(got, want, strict=True))


@settings(max_examples=40, deadline=None)
@given(
    dims=st.lists(st.one_of(st.integers(0, 6), st.sampled_from(["B", "T"])), min_size=1,
                  max_size=4),
    start=st.one_of(st.none(), st.integers(-5, 5)),
    end=st.one_of(st.none(), st.integers(-5, 5)),
    index=st.integers(-5, 4),
    sizes=st.tuples(st.integers(1, 3), st.integers(1, 3)),
)
def test_property_a_shape_pick_folds_exactly_when_it_reads_static_dims(
    dims, start, end, index, sizes, onnx_make_model, onnx_run
) -> None:
    attrs = {k: v for k, v in (("start", start), ("end", end)) if v is not None}
    rank = len(dims)
    picked = list(range(rank))[slice(*[min(max(v + rank if v < 0 else v, 0), rank)
                                       for v in (start or 0, rank if end is None else end)])]
    picks = []
    if picked:  # Gather one of them (an index outside is an error onnxruntime raises)
        index = index % len(picked) - (len(picked) if index < 0 else 0)
        picks = [("Gather", [[index]], {"axis": 0})]
        picked = [picked[index]]
    model = _shape_picks(onnx_make_model, dims, picks, shape_attrs=attrs, rows=len(picked) == 1)
    graph = dmlgraph.load(model)
    value = graph.constant(graph.find_nodes("Identity")[0].input(0))
    static = all(isinstance(dims[k], int) for k in picked)
    assert (value is not None) == static
    concrete = [dict(zip("BT", sizes)).get(d, d) if isinstance(d, str) else d for d in dims]
    if value is not None:  # NumPy's slicing of the concrete shape: the independent oracle
        assert value.tolist() == [concrete[k] for k in picked]
    x = np.zeros(concrete, dtype=np.float32)
    want = onnx_run(model, {"x": x})
    got = onnx_run(graph.to_onnx(), {"x": x})
    assert all(np.array_equal(g, w) for g, w in zip(got, want, strict=True))


@pytest.mark.parametrize("through", [0, 1, 3])
def test_a_declared_output_shape_is_not_folded_in_part(through, onnx_make_model, onnx_run) -> None:
    """A graph output's declared shape is not checked at run time (onnxruntime warns and
    goes on), so a Shape of that output, or of a tensor computed from it, gives nothing
    known in part: declared [B, 10, 16] over a computed [B, T, 16], ``y.shape[1]`` stays a
    run-time value (onnxruntime computes T there). Nor does a wholly static declaration,
    [2, 10, 16], fold it: onnxruntime's optimizer folds that one, but its kernels make the
    tensor the nodes compute, and a Shape left here runs on them."""
    relus = [helper.make_node("Relu", ["y" if k == 0 else f"r{k}"], [f"r{k + 1}"])
             for k in range(through)]
    read = f"r{through}" if through else "y"

    def model(declared):
        return onnx_make_model(
            [helper.make_node("Relu", ["x"], ["y"]), *relus,
             helper.make_node("Shape", [read], ["s"]),
             helper.make_node("Gather", ["s", "one"], ["t"], axis=0),
             helper.make_node("Unsqueeze", ["t", "zero"], ["tt"]),
             helper.make_node("Slice", ["pe", "zero", "tt", "zero"], ["p"]),
             helper.make_node("Add", [read, "p"], ["z"])],
            [("x", FLOAT, ["B", "T", 16])],
            [("y", FLOAT, declared), ("z", FLOAT, None)],
            opset=17,
            initializers=[
                numpy_helper.from_array(np.ones((64, 16), np.float32), "pe"),
                _scalar("one", 1), _i64("zero", 0),
            ],
        )

    partly = model(["B", 10, 16])
    for graph in (dmlgraph.load(partly), dmlgraph.load(partly, fold=False)):
        folding.fold(graph)
        assert graph.find_nodes("Shape") and graph.find_nodes("Gather")
        assert graph.constant("t") is None
    x = np.ones((2, 10, 16), np.float32)  # the declaration holds here: both agree
    assert np.array_equal(onnx_run(dmlgraph.load(partly).to_onnx(), {"x": x})[1],
                          onnx_run(partly, {"x": x})[1])
    wholly = model([2, 10, 16])
    graph = dmlgraph.load(wholly)
    assert graph.find_nodes("Shape") and graph.constant("t") is None
    assert np.array_equal(_numpy_run_all(graph, {"x": x})["z"], onnx_run(wholly, {"x": x})[1])


UNSURE_PRODUCERS = {
    # (the node making y from x of shape [B, 1, 5] and constants, whether y.shape[2] folds)
    "matmul": (helper.make_node("MatMul", ["x", "w"], ["y"]), True),
    "transpose": (helper.make_node("Transpose", ["x"], ["y"], perm=[0, 1, 2]), True),
    # onnx infers 4 columns, the spec and onnxruntime 3 (a window starting in the padding is
    # dropped): dmlgraph sizes it as the spec does (``folding.ceil_pool_infos``)
    "maxpool ceil_mode": (helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2],
                                           strides=[2], pads=[1, 1], ceil_mode=1), True),
    # onnx infers 0 columns, onnxruntime reads the end as "through index 0": 5
    "reversed slice to INT32_MAX": (helper.make_node("Slice", ["x", "m1", "big", "ax2", "m1"],
                                                     ["y"]), False),
    "reversed slice to INT64_MIN": (helper.make_node("Slice", ["x", "m1", "low", "ax2", "m1"],
                                                     ["y"]), True),
    # a Reshape to a shape computed from x's own: sure as x's sizes are
    "reshape by its own shape": ([helper.make_node("Shape", ["x"], ["xs"]),
                                  helper.make_node("Reshape", ["x", "xs"], ["y"])], True),
    "reshape by a pooled shape": ([helper.make_node("MaxPool", ["x"], ["p"], kernel_shape=[3],
                                                    dilations=[2], auto_pad="SAME_UPPER"),
                                   helper.make_node("Shape", ["p"], ["ps"]),
                                   helper.make_node("Reshape", ["p", "ps"], ["y"])], False),
    # y.shape[1] from here on. onnx sizes a PRelu as X, onnxruntime broadcasts its slope too:
    # [B, 4, 5]
    "prelu": (helper.make_node("PRelu", ["x", "slope"], ["y"]), False, 1),
    # a slope within X's sizes ([1, 1] against [B, 1, 5]): the output is X's shape
    "prelu within": (helper.make_node("PRelu", ["x", "slope11"], ["y"]), True, 1),
    # onnx squeezes nothing for an empty axes list, onnxruntime every size-1 axis: [B, 5]
    "squeeze by no axes": (helper.make_node("Squeeze", ["x", "none"], ["y"]), False, 1),
    "squeeze by axis 1": (helper.make_node("Squeeze", ["x", "one"], ["y"]), True, 1),
    # without ceil_mode, onnx and onnxruntime size a pool alike: (5 + 2 - 2) // 2 + 1 = 3
    "maxpool": (helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2], strides=[2],
                                 pads=[1, 1]), True),
    "averagepool": (helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[2],
                                     strides=[2], pads=[1, 1]), True),
    "reducesum": (helper.make_node("ReduceSum", ["x", "ax2"], ["y"], keepdims=1), True),
    "tile": (helper.make_node("Tile", ["x", "reps"], ["y"]), True),
    "split": (helper.make_node("Split", ["x", "split23"], ["y", "y2"], axis=2), True),
    "resize": (helper.make_node("Resize", ["x", "", "scales"], ["y"]), True),
    # 5 * 1.4 is 7 in float32 (onnxruntime's), 6.99999988 in double (onnx's): 6 columns
    "resize rounding apart": (helper.make_node("Resize", ["x", "", "scales14"], ["y"]), False),
    "resize by sizes": (helper.make_node("Resize", ["x", "", "", "sizes"], ["y"]), True),
    # onnx sizes i by the first operand (1), onnxruntime broadcasts it against 3
    "einsum broadcasting a 1": (helper.make_node("Einsum", ["x", "e3"], ["y"],
                                                 equation="bij,bij->bij"), False, 1),
    "einsum": (helper.make_node("Einsum", ["x", "e5"], ["y"], equation="bij,jk->bik"), True),
    "convtranspose": (helper.make_node("ConvTranspose", ["x", "wt"], ["y"], strides=[2],
                                       pads=[1, 0], output_padding=[1]), True),
    "trilu": (helper.make_node("Trilu", ["x"], ["y"]), True),
    "topk": ([helper.make_node("TopK", ["x", "k2"], ["y", "yi"], axis=2)], True),
    # onnxruntime sizes SAME padding by the undilated kernel: 3 columns, onnx infers 5
    "maxpool same dilated": (helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[3],
                                              dilations=[2], auto_pad="SAME_UPPER"), False),
}


@pytest.mark.parametrize("case", UNSURE_PRODUCERS)
def test_a_partly_dynamic_tensor_s_sizes_are_trusted_only_through_exact_ops(
    case, onnx_make_model, onnx_run
) -> None:
    """A Shape of a partly dynamic tensor folds only where onnxruntime gives the tensor the
    sizes onnx infers (``folding.SHAPE_EXACT_OPS``): onnxruntime computes such a Shape at
    run time, from the tensor it made, and onnx's inference of a MaxPool with ceil_mode or of
    a reversed Slice to INT32_MAX is not what its kernels make."""
    producer, folds, *index = UNSURE_PRODUCERS[case]
    model = onnx_make_model(
        [*(producer if isinstance(producer, list) else [producer]),
         helper.make_node("Shape", ["y"], ["s"]),
         helper.make_node("Gather", ["s", "one_0d" if index else "two"], ["t"], axis=0),
         helper.make_node("Identity", ["t"], ["out"])],
        [("x", FLOAT, ["B", 1, 5])],
        [("out", INT64, None)],
        opset=17,
        initializers=[
            numpy_helper.from_array(np.ones((5, 5), np.float32), "w"),
            _scalar("two", 2), _i64("ax2", 2), _i64("m1", -1), _i64("big", 2**31 - 1),
            _i64("low", -2**63), _scalar("one_0d", 1), _i64("one", 1),
            numpy_helper.from_array(np.ones((4, 1), np.float32), "slope"),
            numpy_helper.from_array(np.zeros(0, np.int64), "none"),
            _i64("reps", [1, 1, 2]), _i64("split23", [2, 3]), _i64("k2", [2]),
            numpy_helper.from_array(np.ones((1, 1), np.float32), "slope11"),
            numpy_helper.from_array(np.array([1, 1, 1.5], np.float32), "scales"),
            numpy_helper.from_array(np.array([1, 1, 1.4], np.float32), "scales14"),
            _i64("sizes", [3, 1, 7]),
            numpy_helper.from_array(np.ones((1, 3, 5), np.float32), "e3"),
            numpy_helper.from_array(np.ones((5, 4), np.float32), "e5"),
            numpy_helper.from_array(np.ones((1, 1, 3), np.float32), "wt"),
        ],
    )
    x = np.zeros((3, 1, 5), np.float32)
    (want,) = onnx_run(model, {"x": x})
    for graph in (dmlgraph.load(model), dmlgraph.load(model, fold=False)):
        folding.fold(graph)
        value = graph.constant(graph.find_nodes("Identity")[0].input(0))
        assert (value is not None) == folds
        if value is not None:
            assert value.tolist() == want.tolist()
    report = dmlgraph.check(model, inputs={"x": x})
    assert report.passed


def test_a_concat_of_an_empty_input_is_not_trusted_for_sizes(onnx_make_model, onnx_run) -> None:
    """onnx sizes [B, T] ++ [0, 1] on axis 0 as [?, 1], taking T from the empty input;
    onnxruntime skips that input, so the result is [B, T] and its Shape reads T at run time.
    Found by this stop's fuzzing: the partial fold gave 1. (Running it, dmlgraph refuses the
    Concat, whose inputs differ off the axis, as ONNX says they must not.)"""
    model = onnx_make_model(
        [helper.make_node("Concat", ["x", "empty"], ["c"], axis=0),
         helper.make_node("Shape", ["c"], ["s"]),
         helper.make_node("Gather", ["s", "one"], ["d"], axis=0),
         helper.make_node("Identity", ["d"], ["out"])],
        [("x", FLOAT, ["B", "T"])],
        [("out", INT64, None)],
        opset=18,
        initializers=[numpy_helper.from_array(np.zeros((0, 1), np.float32), "empty"),
                      _i64("one", 1)],
    )
    graph = dmlgraph.load(model)
    assert graph.constant(graph.find_nodes("Identity")[0].input(0)) is None
    x = np.ones((2, 3), np.float32)
    assert onnx_run(model, {"x": x})[0].tolist() == [3]
    with pytest.raises(dmlgraph.DmlgraphError, match="inputs differ in dimension 1"):
        dmlgraph.check(model, inputs={"x": x})


def test_a_concat_whose_off_axis_size_one_input_alone_gives_is_not_trusted(
    onnx_make_model, onnx_run
) -> None:
    """[T, S] ++ [B, 3] on axis 0: onnx infers [?, 3]; with B = 0 onnxruntime skips the empty
    input and makes [T, S]. Found by this stop's fuzzing (the fold gave 3, onnxruntime S).
    Inputs sized alike off the axis keep the trust: [B, 4] ++ [T, 4] folds dim 1."""
    def model(second):
        return onnx_make_model(
            [helper.make_node("Concat", ["x0", "x1"], ["c"], axis=0),
             helper.make_node("Shape", ["c"], ["s"]),
             helper.make_node("Gather", ["s", "one"], ["d"], axis=0),
             helper.make_node("Identity", ["d"], ["out"])],
            [("x0", FLOAT, ["T", "S"] if second == 3 else ["T", 4]), ("x1", FLOAT, ["B", second])],
            [("out", INT64, None)],
            opset=18,
            initializers=[_i64("one", 1)],
        )

    alone = model(3)
    graph = dmlgraph.load(alone)
    assert graph.constant(graph.find_nodes("Identity")[0].input(0)) is None
    feeds = {"x0": np.ones((2, 5), np.float32), "x1": np.ones((0, 3), np.float32)}
    assert onnx_run(alone, feeds)[0].tolist() == [5]
    alike = dmlgraph.load(model(4))
    assert alike.constant(alike.find_nodes("Identity")[0].input(0)).tolist() == [4]


#: (producer of p from x, which is [B, 1, 5] or [B, 5]): onnx's inference sizes p otherwise
#: than onnxruntime's kernel makes it. Each tensor's shape is static here, and not in
#: onnxruntime's session, where a Shape of p is computed at run time.
_UNSURE_STATIC = {
    # onnxruntime sizes SAME padding by the undilated kernel: 3 columns, onnx infers 5
    "maxpool same dilated": helper.make_node("MaxPool", ["z"], ["p"], kernel_shape=[3],
                                             dilations=[2], auto_pad="SAME_UPPER"),
    # onnx clamps the end to dim - 1 (0 elements), onnxruntime reads it as "through index 0"
    "reversed slice to INT64_MAX": helper.make_node("Slice", ["z", "m1", "big", "ax2", "m1"],
                                                    ["p"]),
}


def _numpy_run(graph: dmlgraph.Graph, feeds) -> np.ndarray:
    """The NumPy backend's one output of the graph lowered at 6_4."""
    (out,) = _numpy_run_all(graph, feeds).values()
    return out


def _unsure_static_model(onnx_make_model, case: str, how: str) -> onnx.ModelProto:
    """Shape(p) * 1, with p made from z by ``_UNSURE_STATIC[case]``. ``how`` makes z's shape
    wholly static here alone: "input shape" (x is [B, 1, 5], z is x, B fixed by
    ``input_shapes``), "folded reshape" (x is [N, 5]; z is x reshaped to a shape that folding
    computes, [1, 1] ++ x.shape[1:2], which onnxruntime computes at run time)."""
    nodes = [] if how == "input shape" else [
        helper.make_node("Shape", ["x"], ["xs"]),
        helper.make_node("Slice", ["xs", "one", "two"], ["w"]),
        helper.make_node("Concat", ["ones", "w"], ["t"], axis=0),
        helper.make_node("Reshape", ["x", "t"], ["z"]),
    ]
    if how == "input shape":
        nodes.append(helper.make_node("Identity", ["x"], ["z"]))
    return onnx_make_model(
        [*nodes, _UNSURE_STATIC[case],
         helper.make_node("Shape", ["p"], ["q"]),
         helper.make_node("Mul", ["q", "one"], ["y"])],
        [("x", FLOAT, ["B", 1, 5] if how == "input shape" else ["N", 5])],
        [("y", INT64, None)],
        opset=13,
        initializers=[_i64("one", 1), _i64("two", 2), _i64("ones", [1, 1]), _i64("m1", -1),
                      _i64("big", 2**63 - 1), _i64("ax2", 2)],
    )


@pytest.mark.parametrize("how", ["input shape", "folded reshape"])
@pytest.mark.parametrize("case", _UNSURE_STATIC)
def test_a_wholly_static_shape_is_folded_only_where_onnxruntime_makes_it_so(
    case, how, onnx_make_model, onnx_run
) -> None:
    """A Shape of a tensor whose shape is static here but not in onnxruntime's session (fixed
    by ``input_shapes``, or by dmlgraph's own folding) folds only through ops that onnx sizes
    as onnxruntime's kernels do: the fold took onnx's 4 columns of a MaxPool with ceil_mode
    where onnxruntime (and the spec, and onnx.reference) make 3 (such a pool is sized as the
    spec says now: ``test_a_shape_after_a_pool_with_ceil_mode_folds_...``), and 0 elements of
    a reversed Slice to INT64_MAX where onnxruntime makes 5; ``check`` failed, naming
    nothing. Now the Shape runs, and the fallback's session does not fold it either. (A
    MaxPool with SAME padding over a dilation: onnx and onnx.reference say 5 columns,
    onnxruntime makes 3, and dmlgraph runs it there.)"""

    model = _unsure_static_model(onnx_make_model, case, how)
    x = np.arange(5, dtype=np.float32).reshape((1, 1, 5) if how == "input shape" else (1, 5))
    shapes = {"x": list(x.shape)} if how == "input shape" else None
    graph = dmlgraph.load(model, shapes)
    assert graph.find_nodes("Shape"), "the Shape of p must not fold"
    (want,) = onnx_run(model, {"x": x})
    report = dmlgraph.check(model, inputs={"x": x}, input_shapes=shapes)
    assert report.passed
    if case != "reversed slice to INT64_MAX":  # there onnxruntime departs from the spec:
        # the Slice is lowered by ONNX's rule, and check names the divergence
        assert want.tolist() == [1, 1, 3]
        assert _numpy_run(dmlgraph.load(model, shapes), {"x": x}).tolist() == [1, 1, 3]
    else:
        assert want.tolist()[-1] == 5
        # (named, and the output compared with onnx.reference, which follows ONNX there)
        assert any("INT64_MAX" in d.note for d in report.divergences)
        (y,) = report.comparisons[0].outputs
        assert y.compared and y.message.startswith("compared with onnx.reference")


def test_a_shape_static_in_the_model_itself_is_computed_as_the_spec_says(
    onnx_make_model, onnx_run
) -> None:
    """A MaxPool with ceil_mode over a wholly static [1, 1, 5]: onnxruntime's optimized session
    folds the Shape from onnx's inference (4 columns), its kernel and the spec make 3.
    dmlgraph computes 3, and check names onnxruntime's optimizer as the one that departs."""
    model = onnx_make_model(
        [helper.make_node("MaxPool", ["z"], ["p"], kernel_shape=[2], strides=[2], pads=[1, 1],
                          ceil_mode=1),
         helper.make_node("Shape", ["p"], ["q"]),
         helper.make_node("Mul", ["q", "one"], ["y"])],
        [("z", FLOAT, [1, 1, 5])],
        [("y", INT64, None)],
        opset=13,
        initializers=[_i64("one", 1)],
    )
    z = np.arange(5, dtype=np.float32).reshape(1, 1, 5)
    assert onnx_run(model, {"z": z})[0].tolist() == [1, 1, 4]  # the optimizer's fold
    assert onnx_run(model, {"z": z}, optimize=False)[0].tolist() == [1, 1, 3]
    assert _numpy_run(dmlgraph.load(model), {"z": z}).tolist() == [1, 1, 3]
    from dmlgraph.parity import OPTIMIZER_DIVERGENCE

    report = dmlgraph.check(model, inputs={"z": z})
    assert report.passed
    assert report.comparisons[0].outputs[0].divergences == (OPTIMIZER_DIVERGENCE,)


def test_a_concat_with_an_input_folded_empty_is_refused_not_sized_by_inference(
    onnx_make_model,
) -> None:
    """a [2, K] ++ b, where b = ConstantOfShape([0] ++ x2.shape[1:2]) folds to [0, 3]: onnx
    merges K with 3 and sized the Concat [2, 3], and the Shape of it folded so (onnxruntime
    skips the empty input: [2, 5]). ONNX requires the inputs alike off the axis, so dmlgraph
    refuses the Concat, as it does when the Shape is the graph output."""
    model = onnx_make_model(
        [helper.make_node("Shape", ["x2"], ["s2"]),
         helper.make_node("Slice", ["s2", "one", "two"], ["w2"]),
         helper.make_node("Concat", ["zero", "w2"], ["t2"], axis=0),
         helper.make_node("ConstantOfShape", ["t2"], ["b"],
                          value=helper.make_tensor("v", FLOAT, [1], [0.0])),
         helper.make_node("Concat", ["a", "b"], ["c"], axis=0),
         helper.make_node("Shape", ["c"], ["q"]),
         helper.make_node("Mul", ["q", "one"], ["y"])],
        [("a", FLOAT, [2, "K"]), ("x2", FLOAT, ["M", 3])],
        [("y", INT64, None)],
        opset=13,
        initializers=[_i64("one", 1), _i64("two", 2), _i64("zero", 0)],
    )
    assert dmlgraph.load(model).find_nodes("Shape")
    feeds = {"a": np.ones((2, 5), np.float32), "x2": np.ones((1, 3), np.float32)}
    with pytest.raises(dmlgraph.DmlgraphError, match="inputs differ in dimension 1"):
        dmlgraph.check(model, inputs=feeds)


def test_a_slice_reading_an_unsure_static_shape_says_why_its_parameter_waits(
    onnx_make_model, onnx_run
) -> None:
    """pe[:pooled.shape[2]] with x's batch fixed by ``input_shapes``: the Slice's end stays a
    run-time value, and its note says the shape is static only through an op onnxruntime may
    size otherwise (so a user reading ``lower`` sees why it did not fold)."""
    model = onnx_make_model(
        [_UNSURE_STATIC["maxpool same dilated"],
         helper.make_node("Shape", ["p"], ["q"]),
         helper.make_node("Gather", ["q", "two"], ["n"], axis=0),
         helper.make_node("Unsqueeze", ["n", "zero"], ["e"]),
         helper.make_node("Slice", ["pe", "zero", "e", "zero"], ["y"])],
        [("z", FLOAT, ["B", 1, 5])],
        [("y", FLOAT, None)],
        opset=13,
        initializers=[numpy_helper.from_array(np.arange(8, dtype=np.float32), "pe"),
                      _scalar("two", 2), _i64("zero", 0)],
    )
    graph = dmlgraph.load(model, {"z": [1, 1, 5]})
    (slice_node,) = graph.find_nodes("Slice")
    reason = folding.runtime_parameters(graph, slice_node)["ends"]
    assert reason == (
        "depends on the shape of 'p', which onnx infers as [1, 1, 5] through "
        "unnamed node making 'p' (MaxPool), which onnxruntime may size otherwise at run time (folding.SHAPE_EXACT_OPS)"
    )
    z = np.zeros((1, 1, 5), np.float32)
    assert onnx_run(model, {"z": z})[0].tolist() == [0.0, 1.0, 2.0]
    assert _numpy_run(graph, {"z": z}).tolist() == [0.0, 1.0, 2.0]


def test_a_graph_output_sized_by_its_node_is_trusted_like_any_tensor(
    onnx_make_model, onnx_run
) -> None:
    """A Relu returned as an intermediate feature, and read on: its shape is its node's (the
    declaration adds nothing), so x.view(x.size(0), -1) of it folds, as it did before
    graph outputs stopped the trust; a declared size its node lacks still stops it
    (``test_a_declared_output_shape_is_not_folded_in_part``)."""
    model = onnx_make_model(
        [helper.make_node("Relu", ["x"], ["feat"]),
         helper.make_node("Shape", ["feat"], ["s"]),
         helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
         helper.make_node("Unsqueeze", ["n", "zero1"], ["n1"]),
         helper.make_node("Concat", ["n1", "m1"], ["t"], axis=0),
         helper.make_node("Reshape", ["feat", "t"], ["y"])],
        [("x", FLOAT, [2, 3, 4])],
        [("feat", FLOAT, [2, 3, 4]), ("y", FLOAT, None)],
        opset=17,
        initializers=[_scalar("zero", 0), _i64("zero1", 0), _i64("m1", -1)],
    )
    graph = dmlgraph.load(model)
    assert not graph.find_nodes("Shape") and graph.constant("t").tolist() == [2, -1]
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    assert np.array_equal(_numpy_run_all(graph, {"x": x})["y"], onnx_run(model, {"x": x})[1])


def test_a_pool_onnxruntime_refuses_is_not_folded_away(onnx_make_model) -> None:
    """An AveragePool whose pad is as large as its kernel, read only by a Shape: onnxruntime
    refuses it ("Pad should be smaller than kernel"). Folded from inference, the pool
    disappeared and check said parity holds on a model onnxruntime cannot load."""
    model = onnx_make_model(
        [helper.make_node("AveragePool", ["x"], ["p"], kernel_shape=[2], pads=[2, 2]),
         helper.make_node("Shape", ["p"], ["q"]),
         helper.make_node("Mul", ["q", "one"], ["y"])],
        [("x", FLOAT, ["B", 1, 5])],
        [("y", INT64, None)],
        opset=17,
        initializers=[_i64("one", 1)],
    )
    assert dmlgraph.load(model, {"x": [1, 1, 5]}).find_nodes("AveragePool")
    with pytest.raises(dmlgraph.DmlgraphError, match="Pad should be smaller than kernel"):
        dmlgraph.check(model, inputs={"x": np.zeros((1, 1, 5), np.float32)},
                       input_shapes={"x": [1, 1, 5]})


def test_a_conv_transpose_to_a_smaller_output_shape_is_not_trusted(
    onnx_make_model, onnx_run
) -> None:
    """output_shape [4] for an input of 5 columns: onnx gives up on the spatial dims and
    infers [N, 2], onnxruntime crops to [N, 2, 4] (found by a sweep of 2,352 such configs)."""
    model = onnx_make_model(
        [helper.make_node("ConvTranspose", ["x", "w"], ["p"], strides=[2], output_shape=[4]),
         helper.make_node("Shape", ["p"], ["q"]),
         helper.make_node("Mul", ["q", "one"], ["y"])],
        [("x", FLOAT, ["N", 2, 5])],
        [("y", INT64, None)],
        opset=17,
        initializers=[numpy_helper.from_array(np.ones((2, 2, 3), np.float32), "w"),
                      _i64("one", 1)],
    )
    x = np.ones((3, 2, 5), np.float32)
    shapes = {"x": [3, 2, 5]}
    assert dmlgraph.load(model, shapes).find_nodes("Shape")
    assert onnx_run(model, {"x": x})[0].tolist() == [3, 2, 4]
    assert dmlgraph.check(model, inputs={"x": x}, input_shapes=shapes).passed


def test_the_sessions_over_dmlgraph_s_graphs_do_not_rewrite_by_inferred_shapes(
    onnx_make_model, onnx_run
) -> None:
    """Two shapes onnx infers otherwise than onnxruntime's kernels make them, static here by
    ``input_shapes``: a Squeeze by an empty axes list after a Reshape to [1, 1, K] (onnx
    squeezes nothing, the kernel every 1), which the fallback's onnxruntime merged into a
    Reshape to onnx's [1, 1, K] (ReshapeFusion); and a Resize of 10 rows by 0.7 (onnx 6, the
    kernel 7), whose Shape the cross-check's session over the lowered graph folded
    (ConstantFolding). Found by a helper's sweep; both now compute the kernels' sizes."""
    squeeze = onnx_make_model(
        [helper.make_node("Shape", ["x"], ["s"]),
         helper.make_node("Slice", ["s", "one", "two"], ["w"]),
         helper.make_node("Concat", ["lead", "w"], ["t"], axis=0),
         helper.make_node("Reshape", ["x", "t"], ["z"]),
         helper.make_node("Squeeze", ["z", "none"], ["p"]),
         helper.make_node("Shape", ["p"], ["q"]),
         helper.make_node("Mul", ["q", "one"], ["y"])],
        [("x", FLOAT, ["N", "K"])],
        [("y", INT64, None)],
        opset=13,
        initializers=[_i64("one", 1), _i64("two", 2), _i64("lead", [1, 1]),
                      numpy_helper.from_array(np.zeros(0, np.int64), "none")],
    )
    x = np.arange(5, dtype=np.float32).reshape(1, 5)
    assert onnx_run(squeeze, {"x": x})[0].tolist() == [5]
    graph = dmlgraph.load(squeeze, {"x": [1, 5]})
    assert _numpy_run(graph, {"x": x}).tolist() == [5]
    assert dmlgraph.check(squeeze, inputs={"x": x}, input_shapes={"x": [1, 5]}).passed

    resize = onnx_make_model(
        [helper.make_node("Resize", ["x", "", "scales"], ["r"]),
         helper.make_node("Shape", ["r"], ["q"]),
         helper.make_node("Mul", ["q", "one"], ["y"])],
        [("x", FLOAT, ["N", 2, 10, 3])],
        [("y", INT64, None)],
        opset=13,
        initializers=[_i64("one", 1),
                      numpy_helper.from_array(np.array([1, 1, 0.7, 0.7], np.float32), "scales")],
    )
    x = np.ones((1, 2, 10, 3), np.float32)
    assert onnx_run(resize, {"x": x})[0].tolist() == [1, 2, 7, 2]
    report = dmlgraph.check(resize, inputs={"x": x}, input_shapes={"x": [1, 2, 10, 3]},
                            cross_check=True)
    assert report.passed and len(report.comparisons) >= 2


@pytest.mark.parametrize("tail", ["split", "slice"])
def test_lowering_drops_nothing_for_sizes_onnxruntime_may_not_give(
    tail, onnx_make_model, onnx_run
) -> None:
    """A PRelu whose slope grows X: onnx sizes [B, 1] -> [B, 1], onnxruntime makes [B, 4].
    Split in two, onnx sizes the halves [B, 1] and [B, 0], and the Concat of them dropped the
    'empty' one: run gave [2, 2] for onnxruntime's [2, 4]. Sliced from 1, both 'empty', it
    became an empty constant: [2, 0] for [2, 6]. Found by a helper's sweep (32 such models,
    each with its batch fixed); the Concat now stays for the fallback, with the reason."""
    middle = (
        [helper.make_node("Split", ["a"], ["p", "q"], axis=1, num_outputs=2),
         helper.make_node("Concat", ["p", "q"], ["c"], axis=1)]
        if tail == "split" else
        [helper.make_node("Slice", ["a", "one", "big", "one"], ["p"]),
         helper.make_node("Concat", ["p", "p"], ["c"], axis=1)]
    )
    model = onnx_make_model(
        [helper.make_node("PRelu", ["x", "slope"], ["a"]), *middle,
         helper.make_node("Identity", ["c"], ["y"])],
        [("x", FLOAT, ["B", 1])],
        [("y", FLOAT, None)],
        opset=18,
        initializers=[numpy_helper.from_array(np.ones((1, 4), np.float32), "slope"),
                      _i64("one", 1), _i64("big", 2**63 - 1)],
    )
    x = np.arange(1, 3, dtype=np.float32).reshape(2, 1)
    (want,) = onnx_run(model, {"x": x})
    assert want.shape == ((2, 4) if tail == "split" else (2, 6))
    graph = dmlgraph.load(model, {"x": [2, 1]})
    assert np.array_equal(_numpy_run(graph, {"x": x}), want)
    from lowering import lower

    (concat,) = [r for r in lower(graph, "6_4").report() if r.op_type == "Concat"]
    assert concat.status.value == "fallback"
    assert any("comes through unnamed node making 'a' (PRelu), which onnxruntime may size otherwise"
               in note for note in concat.notes)
    assert dmlgraph.check(model, inputs={"x": x}, input_shapes={"x": [2, 1]}).passed
    # under a dynamic batch the Concat ran on onnxruntime all along, but its segment declared
    # onnx's [B, 1] for the PRelu's [2, 4], which onnxruntime refused ("Got invalid
    # dimensions for input"): an unsure input is declared without a shape now
    assert np.array_equal(_numpy_run(dmlgraph.load(model), {"x": x}), want)
    assert dmlgraph.check(model, inputs={"x": x}).passed


def test_a_fallback_segment_reads_a_rank_onnx_infers_wrongly_as_onnxruntime_makes_it(
    onnx_make_model, onnx_run
) -> None:
    """A ConvTranspose to an output_shape smaller than its input: onnx infers [N, 2] (it gives
    up on the spatial dim), onnxruntime makes [N, 2, 3]. The reversed Slice on axis -1 of it
    was canonicalized to axis 1 of the inferred rank 2, so its segment reversed the wrong
    axis, and the segment after the JOIN, declaring its input's rank 2, made onnxruntime
    refuse the rank-3 tensor (found by a helper's re-run of its sweep). The axis now stays
    -1, and the segment's input is declared without a shape: the model runs as onnxruntime
    runs it."""
    rng = np.random.default_rng(0)
    model = onnx_make_model(
        [helper.make_node("ConvTranspose", ["x", "w"], ["a"], strides=[2], output_shape=[3]),
         helper.make_node("Slice", ["a", "m1", "low", "m1", "m1"], ["b"]),
         helper.make_node("Shape", ["b"], ["s"]),
         helper.make_node("Gather", ["s", "zero"], ["d"], axis=0),
         helper.make_node("Unsqueeze", ["d", "zero1"], ["du"]),
         helper.make_node("Concat", ["du", "m1"], ["shp"], axis=0),
         helper.make_node("Reshape", ["b", "shp"], ["y"])],
        [("x", FLOAT, ["N", 2, 5])],
        [("y", FLOAT, None)],
        opset=17,
        initializers=[numpy_helper.from_array(rng.standard_normal((2, 2, 3), np.float32), "w"),
                      _i64("m1", -1), _i64("low", -2**63), _scalar("zero", 0),
                      _i64("zero1", 0)],
    )
    x = rng.standard_normal((1, 2, 5), np.float32)
    (want,) = onnx_run(model, {"x": x})
    assert want.shape == (1, 6)
    assert np.array_equal(_numpy_run(dmlgraph.load(model), {"x": x}), want)
    assert dmlgraph.check(model, inputs={"x": x}).passed


_FROM_THE_END = {  # a node reading a, counting its axis from the end
    "slice": [helper.make_node("Slice", ["a", "m1", "low", "m1", "m1"], ["y"])],
    "pad": [helper.make_node("Pad", ["a", "pads", "", "m1"], ["y"], mode="reflect")],
    "concat": [helper.make_node("Concat", ["a", "a"], ["y"], axis=-1)],
}


def _rank_diverging(source: str, rng: np.random.Generator) -> tuple[onnx.NodeProto, ...]:
    """A node making a of another rank than onnx infers, with its weight: a ConvTranspose
    to an output_shape smaller than its input (onnx [N, 2], onnxruntime [N, 2, 3] from x of
    [N, 2, 5]), a PRelu whose slope has more axes than X (onnx [N, 2], onnxruntime
    [3, N, 2] from x of [N, 2]), or a Squeeze by an empty axes list."""
    if source == "squeeze":  # by an empty list: onnx [N, 1, 3], onnxruntime [3] for N = 1
        return (
            helper.make_node("Squeeze", ["x", "w"], ["a"]),
            numpy_helper.from_array(np.zeros(0, np.int64), "w"),
        )
    if source == "convtranspose":
        return (
            helper.make_node("ConvTranspose", ["x", "w"], ["a"], strides=[2], output_shape=[3]),
            numpy_helper.from_array(rng.standard_normal((2, 2, 3), np.float32), "w"),
        )
    return (
        helper.make_node("PRelu", ["x", "w"], ["a"]),
        numpy_helper.from_array(rng.standard_normal((3, 1, 1), np.float32), "w"),
    )


_X_SHAPES = {"convtranspose": [1, 2, 5], "prelu": [1, 2], "squeeze": [1, 1, 3]}


@pytest.mark.parametrize("source", sorted(_X_SHAPES))
@pytest.mark.parametrize("case", sorted(_FROM_THE_END))
@pytest.mark.parametrize("sized", [False, True])
def test_axes_counted_from_the_end_of_a_rank_onnx_may_infer_wrongly(
    source, case, sized, onnx_make_model, onnx_run
) -> None:
    """Axis -1 of a tensor onnx says is [N, 2] and onnxruntime makes of rank 3. Canonicalized
    by onnx's rank, the axis was 1: ``run`` gave the Slice's and the Pad's result along the
    wrong axis, silently, and a Concat of [N, 4] where onnxruntime makes rank 3 (after the
    Squeeze, onnxruntime refused axis 2 of its rank-1 tensor). It stays -1
    now (``PartialShapes.rank_unsure``): with the batch dynamic the node runs on onnxruntime
    as written; with it fixed, it is lowered by the inferred rank, and when the tensor
    arrives of another rank, the backend lowers the graph again with those sizes left to run
    time (before, it refused the run, exit 2)."""
    rng = np.random.default_rng(1)
    node, weight = _rank_diverging(source, rng)
    x_shape = _X_SHAPES[source]
    model = onnx_make_model(
        [node, *_FROM_THE_END[case]],
        [("x", FLOAT, ["N", *x_shape[1:]])],
        [("y", FLOAT, None)],
        opset=18,
        initializers=[weight, _i64("m1", -1), _i64("low", -2**63), _i64("pads", [1, 1])],
    )
    x = rng.standard_normal(x_shape, np.float32)
    (want,) = onnx_run(model, {"x": x})
    assert want.ndim == (1 if source == "squeeze" else 3)
    shapes = {"x": x_shape} if sized else None
    graph = dmlgraph.load(model, shapes)
    assert np.array_equal(_numpy_run(graph, {"x": x}), want)
    report = dmlgraph.check(model, input_shapes=shapes, inputs={"x": x})
    assert report.passed
    (record, _) = report.runs
    assert bool(record.notes) == sized  # the batch fixed: lowered by the inferred rank


def test_a_pad_by_an_axis_from_the_end_of_a_declared_output_is_lowered_by_its_rank(
    onnx_make_model, onnx_run
) -> None:
    """A graph output sized by its declaration may have another rank at run time, so a Pad
    reading it keeps its axes [-1] (``canonical.normalize``): lowering spreads its pads over
    the inferred rank itself, padding the last axis, where before it read the pads [1, 2] as
    the begins of two axes."""
    model = onnx_make_model(
        [helper.make_node("Relu", ["x"], ["a"]),
         helper.make_node("Pad", ["a", "pads", "", "m1"], ["y"], mode="edge")],
        [("x", FLOAT, ["N", 3])],
        [("a", FLOAT, [2, 3]), ("y", FLOAT, None)],
        opset=18,
        initializers=[_i64("pads", [1, 2]), _i64("m1", -1)],
    )
    graph = dmlgraph.load(model)
    (pad,) = graph.find_nodes("Pad")
    assert graph.constant(pad.input(3)).tolist() == [-1]
    from lowering import lower

    lowered = lower(graph, "6_4")
    assert [r.status.value for r in lowered.report() if r.op_type == "Pad"] == ["lowered"]
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    got = _numpy_run_all(graph, {"x": x})
    assert np.array_equal(got["y"], onnx_run(model, {"x": x})[1])
    assert got["y"].shape == (2, 6)


#: Pools with ceil_mode over 1 x 1 x size: (op, size, kernel, stride, dilation, pads). The
#: first four onnx sizes as onnxruntime does; in the last three onnx keeps a last window
#: that would start in the end padding.
_CEIL_POOLS = [
    ("MaxPool", 6, 3, 2, 1, [0, 0]),
    ("MaxPool", 7, 2, 2, 2, [1, 0]),
    ("AveragePool", 8, 3, 2, 1, [1, 1]),
    ("LpPool", 7, 3, 3, 1, [0, 2]),
    ("MaxPool", 5, 2, 2, 1, [1, 1]),
    ("AveragePool", 4, 3, 2, 1, [2, 2]),
    ("LpPool", 8, 2, 3, 1, [1, 1]),
]


@pytest.mark.parametrize("case", range(len(_CEIL_POOLS)))
@pytest.mark.parametrize("fold", [True, False])
def test_a_pool_with_ceil_mode_is_sized_as_the_spec_and_onnxruntime_size_it(
    case, fold, onnx_make_model, onnx_run
) -> None:
    """A pool with ceil_mode, then a Relu, a Pad and a Shape of the result. Where onnx's
    inference keeps a last window starting in the end padding (the last three configs), a
    descriptor read onnx's size, so the run was refused ("onnx infers this node's output
    wrongly"), and before the trust walk a Shape folded to it. dmlgraph sizes the pool as the
    spec does (``folding.ceil_pool_infos``), as onnxruntime and onnx.reference make it, and
    infers what follows from that: the Pad is lowered, and the Shape folds, whether folding
    runs at import or after (``folding.fold``: its whole-graph inference says onnx's size)."""
    from onnx.reference import ReferenceEvaluator

    op, size, kernel, stride, dilation, pads = _CEIL_POOLS[case]
    attrs = {"kernel_shape": [kernel], "strides": [stride], "pads": pads, "ceil_mode": 1}
    if dilation != 1:
        attrs["dilations"] = [dilation]
    model = onnx_make_model(
        [helper.make_node(op, ["x"], ["p"], **attrs),
         helper.make_node("Relu", ["p"], ["r"]),
         helper.make_node("Pad", ["r", "pads"], ["y"]),
         helper.make_node("Shape", ["y"], ["q"]),
         helper.make_node("Mul", ["q", "one"], ["s"])],
        [("x", FLOAT, ["B", 1, size])],
        [("y", FLOAT, None), ("s", INT64, None)],
        opset=19,
        initializers=[_i64("one", 1), _i64("pads", [0, 0, 1, 0, 0, 2])],
    )
    x = np.random.default_rng(case).standard_normal((1, 1, size)).astype(np.float32)
    want_y, want_s = onnx_run(model, {"x": x}, optimize=False)
    assert want_s.tolist() == ReferenceEvaluator(model).run(None, {"x": x})[1].tolist()
    inferred = onnx.shape_inference.infer_shapes(model).graph.value_info
    (pooled,) = [vi for vi in inferred if vi.name == "p"]
    assert (pooled.type.tensor_type.shape.dim[2].dim_value == want_s[2] - 3) == (case < 4)
    graph = dmlgraph.load(model, {"x": [1, 1, size]}, fold=fold)
    if not fold:
        folding.fold(graph)
    assert graph.tensors["p"].shape == (1, 1, want_s[2] - 3)
    assert not graph.find_nodes("Shape")
    got = _numpy_run_all(graph, {"x": x})
    assert np.array_equal(got["y"], want_y) and got["s"].tolist() == want_s.tolist()
    assert dmlgraph.check(model, inputs={"x": x}).passed


@pytest.mark.parametrize("dilated", [False, True])
def test_a_descriptor_sized_by_an_unsure_inference_says_so(
    dilated, onnx_make_model, onnx_run
) -> None:
    """A Slice of a MaxPool with SAME padding over a dilation, whose size onnx infers as 5
    where onnxruntime makes 3: lowered, its descriptor reads onnx's [1, 1, 5], and the report
    said nothing of it; it names the pool now. The run lowers the Slice again for the tensor
    of 3 (it refused it before, exit 2) and gives onnxruntime's result.
    Without the dilation, onnx sizes the pool as onnxruntime does: no note."""
    attrs = {"dilations": [2]} if dilated else {}
    model = onnx_make_model(
        [helper.make_node("MaxPool", ["x"], ["p"], kernel_shape=[3], auto_pad="SAME_UPPER",
                          **attrs),
         helper.make_node("Slice", ["p", "one", "big", "two"], ["y"])],
        [("x", FLOAT, [1, 1, 5])],
        [("y", FLOAT, None)],
        opset=19,
        initializers=[_i64("one", [1]), _i64("big", [100]), _i64("two", [2])],
    )
    from backends import get_backend
    from lowering import lower

    lowered = lower(dmlgraph.load(model), "6_4")
    (row,) = [r for r in lowered.report() if r.op_type == "Slice"]
    assert row.status.value == "lowered"
    said = [n for n in row.notes if "is described as onnx infers it" in n]
    x = np.arange(5, dtype=np.float32).reshape(1, 1, 5)
    (want,) = onnx_run(model, {"x": x})
    result = get_backend("numpy").execute(lowered, {"x": x})
    assert np.array_equal(result.outputs["y"], want)
    if not dilated:
        assert not said and not result.record.notes
        return
    assert said == [
        "input 'p' is described as onnx infers it, [1, 1, 5]; it comes through "
        "unnamed node making 'p' (MaxPool), which onnxruntime may size otherwise at run time: the backend checks its "
        "size at run time, and lowers the node again for another"
    ]
    assert want.shape == (1, 1, 2)  # columns 1 and 2 of the pool's [1, 1, 3]
    (note,) = result.record.notes
    assert "unnamed node making 'p' (MaxPool) made 'p' as float32[1, 1, 3], where onnx infers " \
        "float32[1, 1, 5]" in note
    assert result.record.relowered
    assert result.record.engines() == {
        "numpy DirectML emulator": 1, "onnxruntime:CPUExecutionProvider": 1
    }




def test_a_slice_on_an_axis_beyond_onnx_s_rank_is_not_refused(onnx_make_model, onnx_run) -> None:
    """A Slice on axis -3 of a ConvTranspose's output, which onnx says is [N, 1] and
    onnxruntime makes [N, 1, 4]: ``canonical.check`` refused it ("axes = [-3]: [-3] out of
    range [-2, 1]") by onnx's rank, blaming a model onnxruntime runs (found by a helper's
    sweep of 9,372 such models). It runs on the fallback now, as written."""
    model = onnx_make_model(
        [helper.make_node("ConvTranspose", ["x", "w"], ["y"], output_shape=[4]),
         helper.make_node("Shape", ["y"], ["s"]),
         helper.make_node("Gather", ["s", "m3"], ["e"], axis=0),
         helper.make_node("Slice", ["y", "zero", "e", "m3"], ["out"])],
        [("x", FLOAT, ["N", 1, 5])],
        [("out", FLOAT, None)],
        opset=17,
        initializers=[numpy_helper.from_array(np.ones((1, 1, 1), np.float32), "w"),
                      _i64("m3", [-3]), _i64("zero", [0])],
    )
    x = np.arange(5, dtype=np.float32).reshape(1, 1, 5)
    (want,) = onnx_run(model, {"x": x})
    assert want.shape == (1, 1, 4)
    for shapes in (None, {"x": [1, 1, 5]}):
        assert np.array_equal(_numpy_run(dmlgraph.load(model, shapes), {"x": x}), want)
        assert dmlgraph.check(model, inputs={"x": x}, input_shapes=shapes).passed


def test_a_pad_of_sizes_onnx_infers_otherwise_is_left_to_the_fallback(
    onnx_make_model, onnx_run
) -> None:
    """A Squeeze by an empty axes list (onnx: [1, 8, 1], onnxruntime: [8]), then an edge
    Pad of axis -1 by [1, -1]. Lowering refused the model ("mode 'edge' cannot pad axis 2:
    after the crop ... no elements to repeat") by onnx's sizes; it leaves the Pad to the
    fallback now, saying why, and the model runs as onnxruntime runs it."""
    model = onnx_make_model(
        [helper.make_node("Squeeze", ["x", "none"], ["y"]),
         helper.make_node("Pad", ["y", "pads", "", "m1"], ["out"], mode="edge")],
        [("x", FLOAT, ["N", 8, 1])],
        [("out", FLOAT, None)],
        opset=20,
        initializers=[numpy_helper.from_array(np.zeros(0, np.int64), "none"),
                      _i64("pads", [1, -1]), _i64("m1", [-1])],
    )
    x = np.arange(8, dtype=np.float32).reshape(1, 8, 1)
    (want,) = onnx_run(model, {"x": x})
    assert want.tolist() == [0, 0, 1, 2, 3, 4, 5, 6]
    graph = dmlgraph.load(model, {"x": [1, 8, 1]})
    from lowering import lower

    (row,) = [r for r in lower(graph, "6_4").report() if r.op_type == "Pad"]
    assert row.status.value == "fallback"
    assert any("by the sizes onnx infers, mode 'edge' cannot pad axis 2" in note
               and "unnamed node making 'y' (Squeeze), which onnxruntime may size otherwise" in note
               for note in row.notes)
    assert np.array_equal(_numpy_run(graph, {"x": x}), want)
    assert dmlgraph.check(model, inputs={"x": x}, input_shapes={"x": [1, 8, 1]}).passed


@pytest.mark.parametrize(
    ("axes", "shape", "folds"),
    [(None, [1, 3, 1], True),  # no axes: onnx squeezes the 1s of a static shape too
     ("empty", [2, 3, 4], True),  # an empty list, and no 1 to squeeze: alike
     ("empty", [1, 3, 1], False)],  # onnx squeezes nothing, onnxruntime both 1s
)
def test_a_squeeze_without_axes_is_trusted_where_onnx_squeezes_as_onnxruntime(
    axes, shape, folds, onnx_make_model, onnx_run
) -> None:
    """A Shape of a Squeeze without named axes, its input's sizes fixed by ``input_shapes``:
    it folds where onnx squeezes what onnxruntime does (before, no such Squeeze was trusted),
    and runs where they differ, giving onnxruntime's shape either way."""
    model = onnx_make_model(
        [helper.make_node("Squeeze", ["x"] + (["none"] if axes else []), ["p"]),
         helper.make_node("Shape", ["p"], ["q"]),
         helper.make_node("Mul", ["q", "one"], ["y"])],
        [("x", FLOAT, ["B", *shape[1:]])],
        [("y", INT64, None)],
        opset=13,
        initializers=[_i64("one", 1), numpy_helper.from_array(np.zeros(0, np.int64), "none")],
    )
    x = np.ones(shape, np.float32)
    (want,) = onnx_run(model, {"x": x})
    graph = dmlgraph.load(model, {"x": shape})
    assert (not graph.find_nodes("Shape")) == folds
    assert _numpy_run(graph, {"x": x}).tolist() == want.tolist()
    assert dmlgraph.check(model, inputs={"x": x}, input_shapes={"x": shape}).passed


@pytest.mark.parametrize("sized", [False, True])
def test_a_parameter_s_length_onnx_infers_otherwise_is_not_refused(
    sized, onnx_make_model, onnx_run
) -> None:
    """A PRelu whose slope has more axes than X (onnx [N, 3, 1, 3], onnxruntime
    [1, N, 3, 1, 3]); a Slice's ends are its shape sliced from -5 to -4: onnx's inference
    says 0 values (its shape has 4), onnxruntime's has 1. ``canonical.check`` refused the
    Slice ("starts, ends, axes and steps must have one length") by onnx's length (16 models
    of a helper's sweep); the length stands aside now, and the Slice runs as written."""
    model = onnx_make_model(
        [helper.make_node("PRelu", ["x", "slope"], ["a"]),
         helper.make_node("Shape", ["a"], ["s"]),
         helper.make_node("Slice", ["s", "m5", "m4"], ["e"]),
         helper.make_node("Slice", ["a", "zero", "e", "m5"], ["y"])],
        [("x", FLOAT, ["N", 3, 1, 3])],
        [("y", FLOAT, None)],
        opset=14,
        initializers=[numpy_helper.from_array(np.full((1, 1, 1, 1, 1), 0.5, np.float32), "slope"),
                      _i64("m5", [-5]), _i64("m4", [-4]), _i64("zero", [0])],
    )
    x = np.random.default_rng(3).standard_normal((1, 3, 1, 3)).astype(np.float32)
    (want,) = onnx_run(model, {"x": x})
    assert want.shape == (1, 1, 3, 1, 3)
    shapes = {"x": [1, 3, 1, 3]} if sized else None
    assert np.array_equal(_numpy_run(dmlgraph.load(model, shapes), {"x": x}), want)
    assert dmlgraph.check(model, inputs={"x": x}, input_shapes=shapes).passed


def _quantized(op: str) -> tuple[list[onnx.NodeProto], list[onnx.TensorProto]]:
    """x ([B, 2, 5] float) made uint8 by a QuantizeLinear, then ``op`` making p."""
    u8 = lambda name, v: numpy_helper.from_array(np.array(v, np.uint8), name)  # noqa: E731
    f32 = lambda name, v: numpy_helper.from_array(np.array(v, np.float32), name)  # noqa: E731
    quantize = helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["q"])
    common = [f32("xs", 0.1), u8("xz", 128)]
    if op == "QLinearConv":
        return [quantize, helper.make_node("QLinearConv", ["q", "xs", "xz", "w", "ws", "wz",
                                                           "xs", "xz"], ["p"])], [
            *common, u8("w", np.full((3, 2, 2), 130)), f32("ws", 0.05), u8("wz", 128)]
    if op == "MatMulInteger":
        return [quantize, helper.make_node("MatMulInteger", ["q", "w", "xz", "wz"], ["p"])], [
            *common, u8("w", np.full((5, 4), 3)), u8("wz", 1)]
    if op == "BitShift":
        return [quantize, helper.make_node("BitShift", ["q", "one8"], ["p"],
                                           direction="RIGHT")], [*common, u8("one8", 1)]
    return [helper.make_node("DynamicQuantizeLinear", ["x"], ["p", "ps", "pz"])], []


@pytest.mark.parametrize("op", ["QLinearConv", "MatMulInteger", "BitShift",
                                "DynamicQuantizeLinear"])
def test_a_shape_after_a_quantized_op_folds(op, onnx_make_model, onnx_run) -> None:
    """A Shape after a quantized product or a bitwise op, the batch fixed by
    ``input_shapes``: before, no such op was trusted, so the Shape ran; onnx sizes them as
    onnxruntime does (a helper's sweep), so it folds, to onnxruntime's value."""
    nodes, inits = _quantized(op)
    model = onnx_make_model(
        [*nodes, helper.make_node("Shape", ["p"], ["s"]),
         helper.make_node("Mul", ["s", "one"], ["y"])],
        [("x", FLOAT, ["B", 2, 5])],
        [("y", INT64, None)],
        opset=16,
        initializers=[*inits, _i64("one", 1)],
    )
    x = np.random.default_rng(5).standard_normal((3, 2, 5)).astype(np.float32)
    (want,) = onnx_run(model, {"x": x})
    graph = dmlgraph.load(model, {"x": [3, 2, 5]})
    assert not graph.find_nodes("Shape")
    assert _numpy_run(graph, {"x": x}).tolist() == want.tolist()


@pytest.mark.parametrize("op, attrs, data, opset", [
    ("LogSoftmax", {}, np.array([[-6.8, 1e30]], np.float32), 18),
    ("Hardmax", {}, np.array([[np.nan, 1.0]], np.float32), 18),
    ("Sign", {}, np.array([[np.nan, 1.0]], np.float16), 18),
    ("ReduceL2", {"keepdims": 1}, np.array([[2**62, 3]], np.int64), 13),
    ("ReduceL2", {"keepdims": 1}, np.array([[300, 400]], np.float16), 13),
    ("ArgMax", {"axis": 1}, np.array([[1, np.nan, 3]], np.float32), 13),
    ("ArgMin", {"axis": 1}, np.array([[3, np.nan, 1]], np.float32), 13),
    ("ReduceMax", {"keepdims": 1}, np.array([[1, np.nan]], np.float32), 13),
    ("ReduceLogSumExp", {"keepdims": 1}, np.array([[-np.inf, -np.inf]], np.float32), 13),
])
def test_constants_onnx_reference_computes_otherwise_are_left_to_onnxruntime(
    op, attrs, data, opset, onnx_run
) -> None:
    """Folded by onnx.reference, these constants differed from onnxruntime's (helpers'
    sweeps): LogSoftmax of [-6.8, 1e30] (-inf against -1e30), Hardmax of [NaN, 1] ([1, 0]
    against [0, 1]), Sign of a float16 NaN (NaN against 0), ReduceL2 of int64 [2^62, 3] (3,
    wrapped, against 2^62) and of float16 [300, 400] (inf against 500), ArgMax and ArgMin
    past a NaN, ReduceMax of a NaN, ReduceLogSumExp of -inf (NaN against -inf). They are
    left for onnxruntime to compute, as its session does."""
    graph = helper.make_graph(
        [helper.make_node(op, ["w"], ["c"], name="const", **attrs),
         helper.make_node("Identity", ["c"], ["y"], name="use")], "g", [],
        [helper.make_tensor_value_info("y", TensorProto.INT64 if op.startswith("Arg") else
                                       helper.np_dtype_to_tensor_dtype(data.dtype), None)],
        [numpy_helper.from_array(data, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              ir_version=10)
    (want,) = onnx_run(model, {})
    loaded = dmlgraph.load(model)
    (node,) = loaded.find_nodes(op)
    assert any(n.startswith(folding.NOT_FOLDED) for n in node.notes)
    got = _numpy_run(loaded, {})
    np.testing.assert_array_equal(got, want)
    assert dmlgraph.check(model, inputs={}).passed


def test_a_constant_of_shape_inference_leaves_unsized_folds_at_import(
    onnx_models_dir, monkeypatch
) -> None:
    """encodec's LSTM state is a ConstantOfShape of [2, 1, 32] that onnx's inference sizes
    [2, unk, 32]: its shape input gives the size the growth limit needs, so the import's
    kernel computes it as before. Left unsized, it went on as a node for folding to infer
    again and compute, a fifth more calls per load. The limit still holds
    (``test_a_kernel_does_not_compute_at_import_what_is_too_large_to_fold``)."""
    from dmlgraph import importer
    from lowering import lower

    computed: dict[str, bool] = {}
    kernel = importer._fold_at_import

    def spy(graph, node, *args, **kwargs):  # type: ignore[no-untyped-def]
        computed[node.name] = done = kernel(graph, node, *args, **kwargs)
        return done

    monkeypatch.setattr(importer, "_fold_at_import", spy)
    graph = dmlgraph.load(onnx_models_dir / "encodec_encoder_reflect.onnx")
    assert computed["/e/layers.7/lstm/ConstantOfShape"]
    (record,) = [r for r in lower(graph, "6_4").report()
                 if r.name == "/e/layers.7/lstm/ConstantOfShape"]
    assert record.at_import and record.notes == ("computed from constants at import",)


def test_a_node_reading_an_unknown_tensor_is_not_tried_at_import(
    onnx_make_model, monkeypatch
) -> None:
    """A node reading a tensor that is neither a constant, nor a vector known in part, nor
    the data of a Shape or Size cannot fold: the import no longer hands it to
    ``_fold_at_import`` (whose checks found so, for a third of a CNN's nodes). The Shape of
    the input and the Concat of its result are still asked (the Concat makes a graph output,
    so it stays a node)."""
    from dmlgraph import importer

    asked: list[str] = []
    real = importer._fold_at_import

    def spy(graph, node, *args, **kwargs):  # type: ignore[no-untyped-def]
        asked.append(node.name)
        return real(graph, node, *args, **kwargs)

    monkeypatch.setattr(importer, "_fold_at_import", spy)
    shape = numpy_helper.from_array(np.array([3, 2], np.int64), "shape")
    model = onnx_make_model(
        [helper.make_node("Shape", ["x"], ["s"], name="shape_of_x"),
         helper.make_node("Reshape", ["x", "shape"], ["r"], name="reshape_x"),
         helper.make_node("Concat", ["s", "s"], ["t"], name="concat_s", axis=0),
         helper.make_node("Add", ["r", "r"], ["y"], name="add")],
        [("x", TensorProto.FLOAT, [2, 3])],
        [("y", TensorProto.FLOAT, [3, 2]), ("t", TensorProto.INT64, [4])],
        opset=17,
        initializers=[shape],
    )
    graph = dmlgraph.load(model)
    assert asked == ["shape_of_x", "concat_s"]
    assert sorted(n.name for n in graph.nodes) == ["add", "concat_s", "reshape_x"]


def _concat_after(
    onnx_make_model, producer: str, static: bool, axis: int, other: str = "z"
) -> onnx.ModelProto:
    """u, which onnx infers [B, 3] and onnxruntime makes [1, B, 3] (an If whose branches
    declare [B, 3] and unsqueeze x; a PRelu whose slope [1, 1, 3] grows X), joined with
    ``other`` (z [1, 2, 3], or u itself) on ``axis``: valid by onnxruntime's rank alone."""
    dims = [2, 3] if static else ["B", 3]
    zero = numpy_helper.from_array(np.array([0], np.int64), "zero")
    slope = numpy_helper.from_array(np.full((1, 1, 3), 0.5, np.float32), "slope")

    def branch(name: str) -> onnx.GraphProto:
        return helper.make_graph([helper.make_node("Unsqueeze", ["x", "zero"], [name])], name,
                                 [], [helper.make_tensor_value_info(name, FLOAT, dims)])

    made = {"if": helper.make_node("If", ["c"], ["u"], then_branch=branch("t"),
                                   else_branch=branch("e")),
            "prelu": helper.make_node("PRelu", ["x", "slope"], ["u"])}[producer]
    return onnx_make_model(
        [made, helper.make_node("Concat", ["u", other], ["p"], axis=axis)],
        [("x", FLOAT, dims), ("c", TensorProto.BOOL, []), ("z", FLOAT, [1, 2, 3])],
        [("p", FLOAT, None)],
        opset=18,
        initializers=[zero, slope],
    )


@pytest.mark.parametrize("static", [True, False])
@pytest.mark.parametrize("axis", [0, 2, -3])
@pytest.mark.parametrize("other", ["z", "u"])
def test_a_concat_of_a_rank_onnxruntime_s_session_sees_otherwise_is_not_refused(
    static, axis, other, onnx_make_model, onnx_run
) -> None:
    """An If's output, which onnx infers [2, 3] from its branches' declarations and
    onnxruntime makes [1, 2, 3] (its session types it by what the branch makes), joined with
    a [1, 2, 3]: onnxruntime runs it, and ``canonical.check`` refused it by onnx's rank
    ("inputs have different ranks", "axis = 2 is out of range [-2, 1]"), standing aside for
    Slice and Pad but not for Concat. It runs now (on the fallback where lowering, by onnx's
    rank, holds it to the rules: joined with itself on axis 2, it raised IndexError there),
    as onnxruntime runs it."""
    model = _concat_after(onnx_make_model, "if", static, axis, other)
    feeds = {"x": np.arange(6, dtype=np.float32).reshape(2, 3), "c": np.array(True),
             "z": np.full((1, 2, 3), 7, np.float32)}
    (want,) = onnx_run(model, feeds)
    assert want.shape == {0: (2, 2, 3), 2: (1, 2, 6), -3: (2, 2, 3)}[axis]  # u is [1, 2, 3]
    got = _numpy_run(dmlgraph.load(model), feeds)
    assert got.shape == want.shape and np.array_equal(got, want)


@pytest.mark.parametrize("static", [True, False])
def test_a_concat_of_a_rank_only_onnxruntime_s_kernel_makes_otherwise_is_refused(
    static, onnx_make_model, onnx_run
) -> None:
    """A PRelu whose slope grows X: onnxruntime's kernel makes [1, 2, 3], but its session
    infers [2, 3] as onnx does and refuses the Concat with a [1, 2, 3] at load. So does
    import (``PartialShapes.session_rank_unsure``), rather than join by the rank that
    arrives."""
    from dmlgraph.errors import ModelValidationError

    model = _concat_after(onnx_make_model, "prelu", static, 0)
    feeds = {"x": np.ones((2, 3), np.float32), "c": np.array(True),
             "z": np.ones((1, 2, 3), np.float32)}
    with pytest.raises(Exception, match="same rank"):
        onnx_run(model, feeds)
    with pytest.raises(ModelValidationError, match="inputs have different ranks"):
        dmlgraph.load(model)


def _after_growing_prelu(
    onnx_make_model, tail: list[onnx.NodeProto], inputs=(), initializers=(), *, static: bool
) -> onnx.ModelProto:
    """A PRelu whose slope [1, 1, 3] grows X (onnx infers u as X, [B, 3]; onnxruntime's
    kernel makes [1, B, 3]), then ``tail`` reading u."""
    slope = numpy_helper.from_array(np.full((1, 1, 3), 0.5, np.float32), "slope")
    return onnx_make_model(
        [helper.make_node("PRelu", ["x", "slope"], ["u"]), *tail],
        [("x", FLOAT, [2, 3] if static else ["B", 3]), *inputs],
        [("p", FLOAT, None)],
        opset=18,
        initializers=[slope, *initializers],
    )


_BY_ONNX_RANK = {  # broken by onnx's rank 2 alone, their parameters the model's constants
    "slice axes [2]": ([helper.make_node("Slice", ["u", "zero", "one", "two"], ["p"])],
                       "axes = [2]: [2] out of range [-2, 1]"),
    "slice 3 starts": ([helper.make_node("Slice", ["u", "zeros", "ones3"], ["p"])],
                       "starts and ends have 3 values for data of rank 2"),
    "pad 6 pads": ([helper.make_node("Pad", ["u", "ones6"], ["p"])],
                   "pads has 6 values for data of rank 2"),
    "pad axes [2]": ([helper.make_node("Pad", ["u", "ones", "", "two"], ["p"])],
                     "axes = [2]: [2] out of range [-2, 1]"),
}


def _i64s() -> list[onnx.TensorProto]:
    return [_i64("zero", [0]), _i64("one", [1]), _i64("two", [2]), _i64("zeros", [0, 0, 0]),
            _i64("ones", [1, 1]), _i64("ones3", [1, 1, 1]), _i64("ones6", [1] * 6)]


@pytest.mark.parametrize("static", [True, False])
@pytest.mark.parametrize("case", sorted(_BY_ONNX_RANK))
def test_a_rule_onnxruntime_s_session_checks_by_onnx_s_rank_is_held_at_import(
    case, static, onnx_make_model, onnx_run
) -> None:
    """A Slice or Pad of a PRelu's output that onnx infers [B, 3] and the kernel makes
    [1, B, 3], by constant parameters valid for rank 3 alone: onnxruntime's session infers
    rank 2 as onnx does and refuses the model at load ("Unexpected axis value: 2", "Pads has
    incorrect number of values"). Import stood aside for the rank (the kernel may make
    another), so with dynamic sizes the node was lowered when it ran, by the rank that
    arrived, and `run` wrote a [1, 2, 1] (or a [3, 4, 5]) where onnxruntime has no result;
    static, `--fallback reference` did. Import now holds it to its rules by that rank
    (``canonical._session_rules``)."""
    from dmlgraph.errors import ModelValidationError

    tail, says = _BY_ONNX_RANK[case]
    model = _after_growing_prelu(onnx_make_model, tail, initializers=_i64s(), static=static)
    with pytest.raises(Exception, match="ShapeInferenceError"):
        onnx_run(model, {"x": np.ones((2, 3), np.float32)}, optimize=False)
    with pytest.raises(ModelValidationError, match=re.escape(says)):
        dmlgraph.load(model)


@pytest.mark.parametrize("static", [True, False])
def test_a_slice_onnxruntime_s_session_cannot_check_at_load_still_runs(
    static, onnx_make_model, onnx_run
) -> None:
    """The same Slice on axis 2 with its ends given at run time: onnx's inference cannot
    read them, so onnxruntime's session does not check the axes at load, and its kernel
    slices the [1, 2, 3] it makes. Import still stands aside, and the model runs so."""
    tail = [helper.make_node("Slice", ["u", "zero", "e", "two"], ["p"])]
    model = _after_growing_prelu(
        onnx_make_model, tail, [("e", TensorProto.INT64, [1])], _i64s(), static=static
    )
    feeds = {"x": np.arange(6, dtype=np.float32).reshape(2, 3) - 2, "e": np.array([1])}
    (want,) = onnx_run(model, feeds)
    assert want.shape == (1, 2, 1)
    got = _numpy_run(dmlgraph.load(model), feeds)
    assert got.shape == want.shape and np.array_equal(got, want)


_PADS_NOT_GIVEN = {  # pads onnx's inference cannot read: a graph input, or computed
    "pads an input": ([], [("q", TensorProto.INT64, [2])]),
    "pads computed": ([helper.make_node("Shape", ["x"], ["xs"]),
                       helper.make_node("Slice", ["xs", "zero", "one"], ["b"]),
                       helper.make_node("Concat", ["b", "b"], ["q"], axis=0)], []),
}


@pytest.mark.parametrize("static", [True, False])
@pytest.mark.parametrize("case", sorted(_PADS_NOT_GIVEN))
def test_a_pad_s_axes_onnxruntime_s_session_checks_alone_are_held_at_import(
    case, static, onnx_make_model, onnx_run
) -> None:
    """A Pad by constant axes [2] of the same PRelu's output, its pads not the model's
    constants: onnx's inference checks the axes' range before it reads the pads, so
    onnxruntime's session refuses the model at load ("Unexpected axis value: 2"). Import
    stood aside (not every parameter given), and `run` lowered the node when it ran, writing
    a [1, 2, 5] onnxruntime has no result for; import now refuses it by onnx's rank
    (``canonical._pad_axes_rank``)."""
    from dmlgraph.errors import ModelValidationError

    made, inputs = _PADS_NOT_GIVEN[case]
    tail = [*made, helper.make_node("Pad", ["u", "q", "", "two"], ["p"], name="pad")]
    model = _after_growing_prelu(onnx_make_model, tail, inputs, _i64s(), static=static)
    feeds = {"x": np.ones((2, 3), np.float32)} | ({"q": np.array([1, 1])} if inputs else {})
    with pytest.raises(Exception, match="Unexpected axis value: 2"):
        onnx_run(model, feeds, optimize=False)
    with pytest.raises(ModelValidationError,
                       match=re.escape("node 'pad' (Pad): axes = [2]: [2] out of range [-2, 1]")):
        dmlgraph.load(model)


@pytest.mark.parametrize("static", [True, False])
def test_a_pad_s_axes_in_range_with_pads_given_at_run_time_still_run(
    static, onnx_make_model, onnx_run
) -> None:
    """The same Pad on axis 1 (in range for onnx's rank 2 and the kernel's 3) with pads given
    at run time: the session loads it and pads the [1, 2, 3] its PRelu makes; so does
    dmlgraph."""
    tail = [helper.make_node("Pad", ["u", "q", "", "one"], ["p"])]
    model = _after_growing_prelu(
        onnx_make_model, tail, [("q", TensorProto.INT64, [2])], _i64s(), static=static
    )
    feeds = {"x": np.arange(6, dtype=np.float32).reshape(2, 3) - 2, "q": np.array([1, 2])}
    (want,) = onnx_run(model, feeds)
    assert want.shape == (1, 5, 3)
    got = _numpy_run(dmlgraph.load(model), feeds)
    assert got.shape == want.shape and np.array_equal(got, want)
