"""Scan run by the NumPy backend, its body lowered when it runs (as If and Loop are), and
listed by ``lower`` ahead of a run. Oracle: onnxruntime on the original model (and, where it
fails, onnx.reference); a body's first step, run by itself, against a one-step Scan.

Before, a Scan ran whole on the fallback: nothing proved the Slice, Concat and Pad nodes of
its body, ``lower`` did not list them, and a Scan whose attributes onnxruntime refuses at
load was imported and failed only when run."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import dmlgraph
from backends import get_backend
from backends.base import BackendError
from dmlgraph.cli import main
from dmlgraph.errors import ModelValidationError
from lowering import lower

FLOAT = TensorProto.FLOAT
X = np.arange(24, dtype=np.float32).reshape(4, 6)
Y = np.arange(12, dtype=np.float32).reshape(3, 4) + 100
INIT = np.array([7, 8], np.float32)


def _vi(name: str, shape, elem: int = FLOAT) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem, shape)


def _i64(name: str, values) -> onnx.TensorProto:
    return numpy_helper.from_array(np.array(values, np.int64), name)


def _body(*, second: bool = True, state_elem: int = FLOAT) -> onnx.GraphProto:
    """State acc [2] shifts in each row's first element (Slice, Slice, Concat); scan output
    ``padded`` is row[1:4] reflect-padded by (1, 2) (Slice, Pad); with ``second``, a second
    scan input's slice col [3] joined with the main graph's w [2] (Concat) is a second scan
    output."""
    nodes = [
        helper.make_node("Slice", ["acc", "one", "two", "zero"], ["kept"]),
        helper.make_node("Slice", ["row", "zero", "one", "zero"], ["first"]),
        helper.make_node("Concat", ["kept", "first"], ["acc_out"], axis=0),
        helper.make_node("Slice", ["row", "one", "four", "zero"], ["piece"]),
        helper.make_node("Pad", ["piece", "pads"], ["padded"], mode="reflect"),
    ]
    inputs = [_vi("acc", [2], state_elem), _vi("row", [6])]
    outputs = [_vi("acc_out", [2]), _vi("padded", [6])]
    if second:
        nodes.append(helper.make_node("Concat", ["col", "w"], ["joined"], axis=0))
        inputs.append(_vi("col", [3]))
        outputs.append(_vi("joined", [5]))
    constants = [_i64(n, [v]) for n, v in (("zero", 0), ("one", 1), ("two", 2), ("four", 4))]
    constants.append(_i64("pads", [1, 2]))
    return helper.make_graph(nodes, "body", inputs, outputs, constants)


def _scan_model(x_shape=(4, 6), *, opset: int = 18, second: bool = True, body=None,
                **attrs) -> onnx.ModelProto:
    """A Scan of x (and with ``second``, of y [3, 4] along axis 1) by ``_body``, then a
    Concat of its first scan output with itself after it (so the main graph lowers too)."""
    inputs = ["init", "x", "y"] if second else ["init", "x"]
    outputs = ["final", "ys", "zs"] if second else ["final", "ys"]
    graph = helper.make_graph(
        [helper.make_node("Scan", inputs, outputs, name="scan",
                          body=body or _body(second=second),
                          num_scan_inputs=len(inputs) - 1, **attrs),
         helper.make_node("Concat", ["ys", "ys"], ["twice"], axis=0, name="cat")],
        "m",
        [_vi("init", [2]), _vi("x", list(x_shape)), *([_vi("y", [3, 4])] if second else [])],
        [_vi("final", None), _vi("twice", None), *([_vi("zs", None)] if second else [])],
        [numpy_helper.from_array(np.array([9, 8], np.float32), "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 9 if opset > 8 else 4
    return model


def _feeds(x: np.ndarray = X, second: bool = True) -> dict[str, np.ndarray]:
    return {"init": INIT, "x": x, **({"y": Y} if second else {})}


def _ran_in_body(record) -> dict[str, str]:
    return {r.op: r.engine for r in record.nodes if r.via.startswith("Scan 'scan' body")}


def test_each_unnamed_body_node_has_a_record_of_its_own() -> None:
    """The body's three unnamed Slices ran as three DML_OPERATOR_SLICE records, each named by
    the tensor it makes; before, they were one record, "(unnamed)"."""
    model = _scan_model(scan_input_axes=[0, 1])
    result = get_backend("numpy").execute(lower(dmlgraph.load(model), "6_4"), _feeds())
    slices = sorted(r.node for r in result.record.nodes if r.op == "DML_OPERATOR_SLICE")
    assert slices == ["(unnamed, making 'first')", "(unnamed, making 'kept')",
                      "(unnamed, making 'piece')"]


#: y [3, 4] is scanned along its 4 columns (axis 1 or -1) in each, as x along its 4 rows
#: (x [4, 6] on axis 0, its transpose on axis 1); the rest as given or by default.
ATTRIBUTES = [
    {"scan_input_axes": [0, 1]},
    {"scan_input_axes": [0, 1], "scan_input_directions": [1, 0]},
    {"scan_input_axes": [1, -1], "scan_input_directions": [0, 1]},
    {"scan_input_axes": [0, 1], "scan_output_axes": [1, 0], "scan_output_directions": [1, 0]},
    {"scan_input_axes": [-1, 1], "scan_input_directions": [1, 1],
     "scan_output_axes": [-1, -2], "scan_output_directions": [1, 1]},
]


@pytest.mark.parametrize("attrs", ATTRIBUTES, ids=lambda a: ",".join(
    f"{k.removeprefix('scan_')}={v}" for k, v in a.items()))
def test_a_scan_body_s_slice_concat_and_pad_run_as_directml_operators(attrs, onnx_run) -> None:
    """Each axis and direction (negative axes too), two scan inputs and two scan outputs, a
    state variable and a read of the main graph's w: the outputs are onnxruntime's, and the
    body's Slice, Concat and Pad ran on the emulator as DirectML operators."""
    x = X if attrs["scan_input_axes"][0] == 0 else np.ascontiguousarray(X.T)
    model = _scan_model(x.shape, **attrs)
    want = onnx_run(model, _feeds(x), optimize=False)
    result = get_backend("numpy").execute(lower(dmlgraph.load(model), "6_4"), _feeds(x))
    for name, expected in zip(("final", "twice", "zs"), want):
        assert np.array_equal(result.outputs[name], expected), name
    ran = _ran_in_body(result.record)
    assert set(ran) == {"DML_OPERATOR_SLICE", "DML_OPERATOR_JOIN", "DML_OPERATOR_PADDING"}
    assert set(ran.values()) == {"numpy DirectML emulator"}


def test_a_scan_of_one_step_is_its_body_s_first_step_as_lower_lists_it(onnx_run) -> None:
    """``lower`` lists the body typed as its first step sees it: the state variable as the
    initial value ([2]), each scan input's slice without its scan axis (x [4, 6] scanned on
    axis 0 gives [6]; y [3, 4] on axis 1 gives [3]), the main graph's small w by value. That
    body, run by itself on the emulator from x[0] and y[:, 0] (NumPy's slicing), gives what
    onnxruntime's Scan of one step gives."""
    from lowering.held import held_lowerings

    model = _scan_model(scan_input_axes=[0, 1])
    (body,) = held_lowerings(lower(dmlgraph.load(model), "6_4"))
    assert body.path == "Scan 'scan' body" and body.problem == ""
    assert [(i.name, str(i.dtype), i.shape) for i in body.typed_as] == [
        ("acc", "float32", (2,)), ("row", "float32", (6,)), ("col", "float32", (3,))]
    made = sorted(op for r in body.lowered.report() for op in r.dml_ops)
    assert made == ["DML_OPERATOR_JOIN", "DML_OPERATOR_JOIN", "DML_OPERATOR_PADDING",
                    "DML_OPERATOR_SLICE", "DML_OPERATOR_SLICE", "DML_OPERATOR_SLICE"]
    step = get_backend("numpy").execute(
        body.lowered, {"acc": INIT, "row": X[0], "col": Y[:, 0]}).outputs
    model.graph.input[1].CopyFrom(_vi("x", [1, 6]))
    model.graph.input[2].CopyFrom(_vi("y", [3, 1]))
    final, twice, zs = onnx_run(model, {"init": INIT, "x": X[:1], "y": Y[:, :1]},
                                optimize=False)
    assert np.array_equal(step["acc_out"], final)
    assert np.array_equal(step["padded"], twice[0])
    assert np.array_equal(step["joined"], zs[0])


def test_lower_prints_and_nests_a_scan_body_s_listing(tmp_path, capsys) -> None:
    """The text, the JSON and the viz page list a Scan body, as they list an If's branches
    and a Loop's body; the main graph's Concat of the Scan's output is lowered."""
    from dmlgraph.viz.html import html_report

    path = tmp_path / "scan.onnx"
    model = _scan_model(scan_input_axes=[0, 1])
    onnx.save(model, path)
    assert main(["lower", str(path)]) == 0
    text = capsys.readouterr().out
    assert "1 Slice/Concat/Pad nodes: 1 lowered" in text
    assert ("Scan is run by the numpy backend itself, its subgraphs lowered as it runs them "
            "(the onnxruntime backend runs it whole)") in " ".join(text.replace("│", " ").split())
    assert ("Scan 'scan' body, lowered by itself, its inputs typed as the enclosing graph "
            "types them, state variables as the initial ones and each scan input's slice "
            "without its scan axis (its first step): acc float32[2], row float32[6], "
            "col float32[3]") in " ".join(text.split())
    assert main(["lower", str(path), "--json"]) == 0
    (entry,) = json.loads(capsys.readouterr().out)["subgraphs"]
    assert entry["op_type"] == "Scan" and entry["attribute"] == "body"
    assert {n["dml"]["type"] for n in entry["lowered"]["nodes"] if "dml" in n} == {
        "DML_OPERATOR_SLICE", "DML_OPERATOR_JOIN", "DML_OPERATOR_PADDING"}
    graph = dmlgraph.load(model)
    page = html_report(graph, lower(graph, "6_4"))
    assert '<section id="subgraphs">' in page
    assert ("<h3>Scan &#x27;scan&#x27; body</h3><p>inputs, as the enclosing graph types them: "
            "acc float32[2], row float32[6], col float32[3]</p>") in page


def test_a_scan_of_empty_inputs_gives_its_initial_states_as_onnx_says(onnx_run) -> None:
    """Sequence length 0 and no scan outputs: no iteration runs and the final state is the
    initial one, as onnx.reference gives it; onnxruntime 1.32 fails on it ("Invalid
    dim0_offset of 0"), and the record says so. With scan outputs, whose shape no iteration
    tells, it is an error naming the node: it ran whole on the fallback, which failed as
    onnxruntime does (or, along another axis, died of SIGFPE)."""
    from onnx.reference import ReferenceEvaluator

    body = _body(second=False)
    del body.output[1:]
    del body.node[3:]
    model = _scan_model((None, 6), second=False, body=body)
    del model.graph.node[1:]
    model.graph.output[1].CopyFrom(_vi("ys", None))
    del model.graph.output[1:]
    model.graph.node[0].output[:] = ["final"]
    empty = np.zeros((0, 6), np.float32)
    (want,) = ReferenceEvaluator(model).run(None, _feeds(empty, second=False))
    with pytest.raises(Exception, match="Invalid dim0_offset of 0"):
        onnx_run(model, _feeds(empty, second=False), optimize=False)
    result = get_backend("numpy").execute(lower(dmlgraph.load(model), "6_4"),
                                          _feeds(empty, second=False))
    assert np.array_equal(result.outputs["final"], want) and np.array_equal(want, INIT)
    (record,) = result.record.nodes
    assert record.node == "scan" and "the body ran no iteration" in record.notes[-1]
    assert not result.record.lowered_when_run()  # nothing was lowered: no body ran

    with_outputs = _scan_model((None, 6), second=False)
    with pytest.raises(Exception, match="Scan node"):
        onnx_run(with_outputs, _feeds(empty, second=False), optimize=False)
    with pytest.raises(dmlgraph.DmlgraphError, match="its scan inputs are empty"):
        get_backend("numpy").run(lower(dmlgraph.load(with_outputs), "6_4"),
                                 _feeds(empty, second=False))


def _both_refuse(model: onnx.ModelProto, says: str, onnx_run) -> None:
    """onnxruntime refuses ``model`` at load, and so does dmlgraph, saying ``says``."""
    with pytest.raises(Exception, match="ONNXRuntimeError"):
        onnx_run(model, _feeds(), optimize=False)
    with pytest.raises(ModelValidationError, match=re.escape(says)):
        dmlgraph.load(model)


def _misfit(case: str) -> onnx.ModelProto:
    attrs = {
        "input axes count": {"scan_input_axes": [0]},
        "input direction value": {"scan_input_directions": [0, 2]},
        "output directions count": {"scan_output_directions": [0, 1, 0]},
        "input axis rank": {"scan_input_axes": [0, 2]},
        "output axis rank": {"scan_output_axes": [0, -3]},
    }.get(case, {})
    model = _scan_model(**{"scan_input_axes": [0, 1], **attrs})
    scan = model.graph.node[0]
    if case == "no scan inputs":
        scan.attribute[1].i = 0
    elif case == "body inputs":
        scan.attribute[1].i = 1
        del scan.input[2]
    elif case == "state type":
        scan.attribute[0].g.CopyFrom(_body(state_elem=TensorProto.DOUBLE))
    return model


@pytest.mark.parametrize("case, says", [
    ("input axes count", "scan_input_axes has 1 entries; it has 2 scan inputs, one entry each"),
    ("input direction value", "scan_input_directions is [0, 2]; a direction is 0 (forward) or "
                              "1 (reverse)"),
    ("output directions count", "scan_output_directions has 3 entries; it has 2 scan outputs"),
    ("input axis rank", "scan_input_axes[1] is 2, not an axis of a tensor of rank 2 (-2 to 1): "
                        "its body's 'col' is of rank 1"),
    ("output axis rank", "scan_output_axes[1] is -3, not an axis of a tensor of rank 2"),
    ("no scan inputs", "num_scan_inputs is 0; it has 3 inputs, and Scan scans at least one"),
    ("body inputs", "its body takes 3 inputs and it has 2"),
    ("state type", "its body takes state variable 'acc' as tensor(float64) and makes it "
                   "('acc_out') tensor(float32)"),
])
def test_a_scan_that_onnxruntime_refuses_at_load_is_refused_at_load(case, says, onnx_run) -> None:
    """Before, these loaded and failed only when the fallback ran them."""
    _both_refuse(_misfit(case), says, onnx_run)


def test_scan_inputs_of_different_lengths_are_one_clear_error(onnx_run) -> None:
    """x scanned along its 4 rows and y along its 4 columns, then y of 5 columns: onnxruntime
    fails, and so does the run, naming the node and the lengths."""
    model = _scan_model(scan_input_axes=[0, 1])
    model.graph.input[2].CopyFrom(_vi("y", [3, None]))
    y5 = np.zeros((3, 5), np.float32)
    with pytest.raises(Exception, match="ONNXRuntimeError"):
        onnx_run(model, {"init": INIT, "x": X, "y": y5}, optimize=False)
    with pytest.raises(dmlgraph.DmlgraphError, match=re.escape(
            "node 'scan' (Scan): its scan inputs are [4, 5] long along their scan axes")):
        get_backend("numpy").run(lower(dmlgraph.load(model), "6_4"),
                                 {"init": INIT, "x": X, "y": y5})


def test_a_scan_8_runs_whole_on_the_fallback_and_says_so(onnx_run) -> None:
    """Scan-8 scans batches (sequence_lens, a batch axis): its node runs whole on the
    fallback, as before, and ``lower`` does not list its body."""
    from lowering.held import held_lowerings

    body = helper.make_graph(  # Scan-8's opset: Slice-1 and Pad-2 take attributes
        [helper.make_node("Concat", ["acc", "row"], ["joined"], axis=0),
         helper.make_node("Identity", ["acc"], ["acc_out"])],
        "body", [_vi("acc", [2]), _vi("row", [6])], [_vi("acc_out", [2]), _vi("joined", [8])])
    model = _scan_model((1, 4, 6), opset=8, second=False, body=body)
    model.graph.node[0].input.insert(0, "")  # no sequence_lens
    model.graph.input[0].CopyFrom(_vi("init", [1, 2]))
    del model.graph.node[1:]
    model.graph.node[0].output[:] = ["final", "twice"]
    feeds = {"init": INIT[None], "x": X[None]}
    want = onnx_run(model, feeds, optimize=False)
    lowered = lower(dmlgraph.load(model), "6_4")
    assert held_lowerings(lowered) == []
    (row,) = [r for r in lowered.report() if r.op_type == "Scan"]
    assert "Scan runs on the backend's fallback" in " ".join(row.notes)
    assert "they run on the fallback with it" in " ".join(row.notes)
    result = get_backend("numpy").execute(lowered, feeds)
    assert all(np.array_equal(result.outputs[n], w) for n, w in zip(("final", "twice"), want))
    (record,) = result.record.nodes
    assert record.op == "Scan" and record.engine.startswith("onnxruntime")


def _scan_8_concat_from_end(nodes: list, state: list[int], batch: int = 1) -> onnx.ModelProto:
    """An opset-8 Scan-8 of state acc (``state``; fed init [batch, *state]) and x
    [batch, 4, 3], whose body makes acc_out (the state's next value) and ys by ``nodes``,
    declaring neither's shape: onnx's inference alone sizes them."""
    body = helper.make_graph(nodes, "body", [_vi("acc", state), _vi("row", [3])],
                             [_vi("acc_out", None), _vi("ys", None)])
    graph = helper.make_graph(
        [helper.make_node("Scan", ["", "init", "x"], ["final", "rows"], name="scan",
                          body=body, num_scan_inputs=1)],
        "m", [_vi("init", [batch, *state]), _vi("x", [batch, 4, 3])],
        [_vi("final", None), _vi("rows", None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 8)], ir_version=4)


@pytest.mark.parametrize("backend", ["numpy", "onnxruntime"])
def test_a_scan_8_body_concat_on_a_negative_axis_runs_as_onnxruntime_runs_the_model(
    backend: str, onnx_run
) -> None:
    """Concat-4 defines only non-negative axes; onnxruntime's kernel counts -1 from the end,
    but onnx's inference (onnxruntime's) sizes nothing by it, nor what the body makes of it,
    and onnxruntime's Scan fails where a body output has no shape. It ran this model (the
    fuzzer's seed 440734, cut down) only as its TransposeOptimizer rewrote the body; the
    NumPy backend's onnxruntime fallback, and the onnxruntime backend, run without it, and
    failed ("Subgraph must have the shape set for all outputs but acc_out did not"). The
    axis is counted from the end for them (``old_axes.count_old_axes``)."""
    nodes = [helper.make_node("Transpose", ["acc"], ["t"], perm=[1, 2, 0]),
             helper.make_node("Concat", ["t"] * 6, ["c"], axis=-1),  # [3, 1, 6]
             helper.make_node("Slice", ["c"], ["s"], starts=[2, 0, 4], ends=[3, 1, 5]),
             helper.make_node("Pad", ["s"], ["acc_out"], pads=[0, 2, 0, 0, 0, 0], value=0.5),
             helper.make_node("Relu", ["row"], ["ys"])]
    model = _scan_8_concat_from_end(nodes, [1, 3, 1])
    feeds = {"init": np.array([1, 2, 3], np.float32).reshape(1, 1, 3, 1),
             "x": np.arange(-6, 6, dtype=np.float32).reshape(1, 4, 3)}
    want = onnx_run(model, feeds)  # onnxruntime's own session runs the model
    got = get_backend(backend).run(lower(dmlgraph.load(model), "6_4"), feeds)
    assert all(np.array_equal(got[n], w) for n, w in zip(("final", "rows"), want))


def test_a_scan_8_body_concat_of_such_a_concat_runs_as_onnx_says() -> None:
    """A Concat on axis -1 of a Concat on axis -1: the second's inputs are ranked only once
    the first is counted, by inference again. onnxruntime fails on this model whatever its
    optimizations; counted, both engines run it as ONNX says (NumPy's concatenate)."""
    nodes = [helper.make_node("Concat", ["acc", "acc"], ["c1"], axis=-1),  # [2, 6]
             helper.make_node("Concat", ["c1", "c1"], ["c2"], axis=-2),  # [4, 6]
             helper.make_node("Slice", ["c2"], ["s"], starts=[1, 2], ends=[3, 4]),
             helper.make_node("Pad", ["s"], ["acc_out"], pads=[0, 1, 0, 0], value=0.5),
             helper.make_node("Concat", ["row", "row"], ["ys"], axis=-1)]
    model = _scan_8_concat_from_end(nodes, [2, 3], batch=2)
    feeds = {"init": np.arange(12, dtype=np.float32).reshape(2, 2, 3),
             "x": np.arange(-12, 12, dtype=np.float32).reshape(2, 4, 3)}
    finals, rows = [], []
    for acc, xs in zip(feeds["init"], feeds["x"]):
        for row in xs:
            c1 = np.concatenate([acc, acc], axis=1)
            acc = np.pad(np.concatenate([c1, c1], axis=0)[1:3, 2:4], [(0, 0), (1, 0)],
                         constant_values=0.5)
        finals.append(acc)
        rows.append(np.concatenate([xs, xs], axis=1))
    for backend in ("numpy", "onnxruntime"):
        got = get_backend(backend).run(lower(dmlgraph.load(model), "6_4"), feeds)
        assert np.array_equal(got["final"], np.stack(finals))
        assert np.array_equal(got["rows"], np.stack(rows))


@pytest.mark.parametrize("axes, starts, ends", [
    ([1, 0], [1, 0], [3, 1]),  # not increasing
    ([2, -3], [1, 0], [3, 1]),  # a negative axis among others
    ([2, 1, -3], [-4, -9223372036854775808, -5], [9223372036854775807, 3, 12]),  # extremes
])
def test_a_scan_8_body_slice_1_of_such_axes_runs_as_onnx_says(axes, starts, ends) -> None:
    """onnx's inference of Slice-1 walks its axes in increasing order, each from 0 (Slice-10
    defines negative ones, counted from the end), and sized nothing otherwise: onnxruntime
    failed on the model, and so did both engines (the fuzzer's seeds 500291, 500872, 503343,
    left as failing alike). Its axes are put in order, counted, with their starts and ends:
    both run it as ONNX says (NumPy's slicing, each axis once)."""
    nodes = [helper.make_node("Slice", ["acc"], ["ys"], axes=axes, starts=starts, ends=ends),
             helper.make_node("Add", ["acc", "one"], ["acc_out"])]
    model = _scan_8_concat_from_end(nodes, [3, 4, 5], batch=2)
    body = model.graph.node[0].attribute[0].g
    body.initializer.append(numpy_helper.from_array(np.ones(1, np.float32), "one"))
    feeds = {"init": np.arange(120, dtype=np.float32).reshape(2, 3, 4, 5),
             "x": np.arange(-12, 12, dtype=np.float32).reshape(2, 4, 3)}
    index = [slice(None)] * 3
    for axis, start, end in zip(axes, starts, ends):
        index[axis] = slice(start, end)
    want = np.stack([np.stack([(acc + step)[tuple(index)] for step in range(4)])
                     for acc in feeds["init"]])
    for backend in ("numpy", "onnxruntime"):
        got = get_backend(backend).run(lower(dmlgraph.load(model), "6_4"), feeds)
        assert np.array_equal(got["final"], feeds["init"] + 4)
        assert np.array_equal(got["rows"], want)


def test_a_scan_inside_a_loop_body_runs_lowered_at_both_depths(onnx_run) -> None:
    """A Loop whose body scans the main graph's int64 ks [4, 5] by rows, the Scan's body
    slicing each row and joining it with the main graph's ``extra`` (read two scopes down):
    onnxruntime's outputs, the Scan body's Slice and Concat run as DirectML operators under
    the nested path, and ``lower`` lists both bodies, the inner one typed as the outer types
    it (a row of ks: int64 [5])."""
    from lowering.held import every_held

    inner = helper.make_graph(
        [helper.make_node("Slice", ["k", "zero", "two", "zero"], ["k2"]),
         helper.make_node("Concat", ["k2", "extra"], ["kout"], axis=0),
         helper.make_node("Identity", ["s"], ["s_out"])],
        "inner", [_vi("s", [3]), _vi("k", [5], TensorProto.INT64)],
        [_vi("s_out", [3]), _vi("kout", [3], TensorProto.INT64)],
        [_i64("zero", [0]), _i64("two", [2])])
    outer = helper.make_graph(
        [helper.make_node("Scan", ["acc", "ks"], ["acc_out", "kk"], name="inner_scan",
                          body=inner, num_scan_inputs=1),
         helper.make_node("Identity", ["c"], ["c_out"])],
        "outer", [_vi("i", [], TensorProto.INT64), _vi("c", [], TensorProto.BOOL), _vi("acc", [3])],
        [_vi("c_out", [], TensorProto.BOOL), _vi("acc_out", [3]),
         _vi("kk", [4, 3], TensorProto.INT64)])
    graph = helper.make_graph(
        [helper.make_node("Loop", ["trip", "", "a0"], ["a_final", "kks"], name="loop",
                          body=outer)],
        "m", [_vi("a0", [3]), _vi("ks", [4, 5], TensorProto.INT64)],
        [_vi("a_final", None), _vi("kks", None, TensorProto.INT64)],
        [_i64("trip", 2), _i64("extra", [42])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 9
    feeds = {"a0": np.array([1, 2, 3], np.float32),
             "ks": np.arange(20, dtype=np.int64).reshape(4, 5)}
    want = onnx_run(model, feeds, optimize=False)
    lowered = lower(dmlgraph.load(model), "6_4")
    held = {h.path: h for h in every_held(lowered)}
    scanned = held["Loop 'loop' body: Scan 'inner_scan' body"]
    assert [(i.name, str(i.dtype), i.shape) for i in scanned.typed_as] == [
        ("s", "float32", (3,)), ("k", "int64", (5,))]
    result = get_backend("numpy").execute(lowered, feeds)
    assert all(np.array_equal(result.outputs[n], w) for n, w in zip(("a_final", "kks"), want))
    ran = {r.op: r.engine for r in result.record.nodes
           if r.via.startswith("Loop 'loop' body: Scan 'inner_scan' body")}
    assert ran["DML_OPERATOR_SLICE"] == ran["DML_OPERATOR_JOIN"] == "numpy DirectML emulator"


def _passing_through() -> onnx.ModelProto:
    """A Scan whose body makes its state variable ``s`` and its slice ``r`` outputs as they
    are, beside ``y2``, a Slice of s + r."""
    body = helper.make_graph(
        [helper.make_node("Add", ["s", "r"], ["y"]),
         helper.make_node("Slice", ["y", "zero", "two"], ["y2"])],
        "body", [_vi("s", [3]), _vi("r", [3])],
        [_vi("s", [3]), _vi("y2", [2]), _vi("r", [3])], [_i64("zero", [0]), _i64("two", [2])])
    return _state_and_rows(body, ("sf", "ys", "rs"))


def _state_and_rows(body: onnx.GraphProto, outputs: tuple[str, ...]) -> onnx.ModelProto:
    """A Scan named "scan" of ``body`` over a state s0: float32[3] and the rows of
    x: float32[4, 3], making ``outputs``."""
    graph = helper.make_graph(
        [helper.make_node("Scan", ["s0", "x"], list(outputs), name="scan", body=body,
                          num_scan_inputs=1)],
        "m", [_vi("s0", [3]), _vi("x", [4, 3])], [_vi(n, None) for n in outputs])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 9
    return model


def test_a_body_passing_its_inputs_through_is_onnx_s_and_a_known_divergence() -> None:
    """ONNX passes a body input made an output as it is through (NumPy's values here);
    onnxruntime 1.32 gives such outputs, and the state variables fed back from them, whatever
    their buffers held (measured: zeros, stale rows, uninitialized memory), so the run names
    the divergence and ``check`` reports the Scan's outputs as known divergences, not
    failures. Before, nothing named it and ``check`` failed."""
    from dmlgraph.parity import Verdict, check

    model = _passing_through()
    s0 = np.array([1, 2, 3], np.float32)
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    result = get_backend("numpy").execute(lower(dmlgraph.load(model), "6_4"),
                                          {"s0": s0, "x": x})
    assert np.array_equal(result.outputs["sf"], s0)
    assert np.array_equal(result.outputs["ys"], (x + s0)[:, :2])
    assert np.array_equal(result.outputs["rs"], x)
    notes = {note for r in result.record.nodes for note in r.notes}
    assert ("divergence: the Scan's body makes its input(s) ['s', 'r'] output(s) as they are, "
            "which onnxruntime gets wrong") in " ".join(notes)
    report = check(model, inputs={"s0": s0, "x": x})
    (compared,) = report.comparisons
    assert all(o.verdict is not Verdict.FAIL for o in compared.outputs)


def _declared(case: str) -> onnx.ModelProto:
    """``_scan_model`` (x [4, 6] by rows, y [3, 4] by columns) with one body input declared
    otherwise than it is fed."""
    body = _body()
    if case == "state size":
        body.input[0].CopyFrom(_vi("acc", [3]))
    elif case == "slice size":
        body.input[2].CopyFrom(_vi("col", [4]))  # y's row, not its column
    elif case == "slice rank":
        body.input[1].CopyFrom(_vi("row", [1, 6]))
    elif case == "slice type":
        body.input[1].CopyFrom(_vi("row", None, TensorProto.DOUBLE))
    elif case == "symbolic":
        body.input[0].CopyFrom(_vi("acc", ["n"]))
        body.input[2].CopyFrom(_vi("col", None))
    return _scan_model(body=body, scan_input_axes=[0, 1])


@pytest.mark.parametrize("case, says", [
    ("state size", "its body declares state variable 'acc' as float32[3], and the Scan feeds "
                   "it float32[2]"),
    ("slice size", "its body declares scan input's slice 'col' as float32[4], and the Scan "
                   "feeds it float32[3]"),
    ("slice rank", "its body declares scan input's slice 'row' as float32[1,6], and the Scan "
                   "feeds it float32[6]"),
    ("slice type", "its body declares scan input's slice 'row' as float64 of any shape, and "
                   "the Scan feeds it 'x', a float32 tensor"),
])
def test_a_scan_body_declaring_another_input_type_than_fed_is_refused_at_load(
    case, says, onnx_run
) -> None:
    """onnxruntime's load infers the body from the types fed (a state variable's, a scan
    input's without its scan axis) and refuses a declared input of another element type,
    rank or size ("Can't merge shape info"). Before, the import took these, and the run gave
    values from sizes the body does not declare (or failed only when it ran)."""
    _both_refuse(_declared(case), says, onnx_run)


def test_a_scan_body_state_of_another_element_type_is_blamed_on_the_body_not_the_output(
    onnx_run,
) -> None:
    """A body declaring its state variable int32 (in and out) fed float32, the model's
    output declaring it float32: onnxruntime refuses the body's input. Before, the error
    blamed the model's output ("the model declares 'final' FLOAT, but the node makes
    int32"), which the model declares as the Scan is fed."""
    body = _body(state_elem=TensorProto.INT32)
    body.output[0].CopyFrom(_vi("acc_out", [2], TensorProto.INT32))
    model = _scan_model(body=body, scan_input_axes=[0, 1])
    model.graph.output[0].CopyFrom(_vi("final", [2]))
    _both_refuse(model, "node 'scan' (Scan, #0): its body declares state variable 'acc' as "
                        "int32[2], and the Scan feeds it 'init', a float32 tensor", onnx_run)


def test_a_scan_body_declaring_symbolic_or_no_shapes_loads_and_runs(onnx_run) -> None:
    """A body input of a named dimension or of no shape takes what is fed, as onnxruntime's
    load does."""
    model = _declared("symbolic")
    want = onnx_run(model, _feeds(), optimize=False)
    result = get_backend("numpy").execute(lower(dmlgraph.load(model), "6_4"), _feeds())
    for name, expected in zip(("final", "twice", "zs"), want):
        assert np.array_equal(result.outputs[name], expected), name


def test_a_size_only_input_shapes_gives_does_not_refuse_a_scan_at_load(onnx_run) -> None:
    """x declared [4, m], its body's row [6]: onnxruntime loads the model as declared, so
    ``input_shapes`` fixing m to 7 is no reason to refuse it at load; a size the model
    itself declares still is. Before, the load with input_shapes said onnxruntime refuses
    it. Run on x [4, 7], the row that arrives is [7], which the body's declaration forbids:
    one error naming it, as a main graph's input declared [6] fed 7 is (onnxruntime runs the
    body by the 7 columns that arrive; dmlgraph did too, before)."""
    model = _scan_model((4, "m"), scan_input_axes=[0, 1])
    x = np.arange(28, dtype=np.float32).reshape(4, 7)
    onnx_run(model, _feeds(x), optimize=False)  # (runs)
    graph = dmlgraph.load(model, {"x": [4, 7]})
    with pytest.raises(BackendError, match=re.escape(
            "node 'scan' (Scan): its body's input 'row' is float32[7] as it arrives; the body "
            "declares it float32[6]")):
        get_backend("numpy").execute(lower(graph, "6_4"), _feeds(x))
    with pytest.raises(ModelValidationError, match=re.escape(
            "its body declares scan input's slice 'col' as float32[4], and the Scan feeds it "
            "float32[3]")):
        dmlgraph.load(_declared("slice size"), {"x": [4, 6]})


@pytest.mark.parametrize("declared", [["n - 1"], ["n", 1]])
def test_a_scan_over_a_long_input_is_refused_with_input_shapes_as_declared(declared) -> None:
    """x declared [b, n] (n above ``folding.LONG_VECTOR``), its body's row [n - 1] or
    [n, 1]: onnxruntime refuses the model (the row arrives [n]), and so does the load with
    ``input_shapes`` fixing b, as the one without does. Before, the types inferred from the
    inputs as declared read x after its long dimension was hidden: [n - 1] loaded, [n, 1]
    was refused saying the Scan feeds 'float32[dmlgraph::hidden-length::0]'."""
    import onnxruntime

    from dmlgraph import folding

    n = folding.LONG_VECTOR + 4
    row = [n - 1 if dim == "n - 1" else n if dim == "n" else dim for dim in declared]
    body = helper.make_graph([helper.make_node("Identity", ["row"], ["out"])], "body",
                             [_vi("row", row)], [_vi("out", None)])
    model = helper.make_model(helper.make_graph(
        [helper.make_node("Scan", ["x"], ["y"], body=body, num_scan_inputs=1)], "g",
        [_vi("x", ["b", n])], [_vi("y", None)]), opset_imports=[helper.make_opsetid("", 18)])
    with pytest.raises(Exception, match="ShapeInferenceError"):
        onnxruntime.InferenceSession(model.SerializeToString(),
                                     providers=["CPUExecutionProvider"])
    says = (f"its body declares scan input's slice 'row' as float32[{','.join(map(str, row))}]"
            f", and the Scan feeds it float32[{n}]")
    with pytest.raises(ModelValidationError, match=re.escape(says)):
        dmlgraph.load(model)
    with pytest.raises(ModelValidationError, match=re.escape(says)):
        dmlgraph.load(model, {"x": [3, n]})


def test_a_scan_output_made_from_a_long_outer_input_is_named_by_its_size() -> None:
    """A body's scan output, a Neg of the graph input x float[n] (n above
    ``folding.LONG_VECTOR``), declared [n, 1]: onnxruntime loads the model and its run fails
    ("Subgraph must have the shape set for all outputs"), and the load refuses it saying the
    node makes float32[n]. Before, it said 'float32[dmlgraph::hidden-length::0]': the inferred
    graph's inputs were the ones its data propagation was given, x's length named."""
    import onnxruntime

    from dmlgraph import folding

    n = folding.LONG_VECTOR + 4
    body = helper.make_graph([helper.make_node("Neg", ["x"], ["o"])], "body",
                             [_vi("row", [2])], [_vi("o", [n, 1])])
    model = helper.make_model(helper.make_graph(
        [helper.make_node("Scan", ["xs"], ["y"], body=body, num_scan_inputs=1)], "g",
        [_vi("x", [n]), _vi("xs", [3, 2])], [_vi("y", None)]),
        opset_imports=[helper.make_opsetid("", 18)])
    session = onnxruntime.InferenceSession(model.SerializeToString(),
                                           providers=["CPUExecutionProvider"])
    with pytest.raises(Exception, match="Subgraph must have the shape set for all outputs"):
        session.run(None, {"x": np.zeros(n, np.float32), "xs": np.zeros((3, 2), np.float32)})
    with pytest.raises(ModelValidationError, match=re.escape(
            f"its body declares scan output 0 ('o') float32[{n},1], and its node makes "
            f"float32[{n}]: a Scan's body makes its outputs as declared")):
        dmlgraph.load(model)


def _repeating(outputs: list[str]) -> onnx.ModelProto:
    """A Scan whose body makes acc_out (Concat of a Slice of acc + row, and 1) and sq (row
    squared) its outputs as ``outputs`` lists them, one of them twice."""
    body = helper.make_graph(
        [helper.make_node("Add", ["acc", "row"], ["a2"]),
         helper.make_node("Slice", ["a2", "zero", "two"], ["s2"]),
         helper.make_node("Concat", ["s2", "one"], ["acc_out"], axis=0),
         helper.make_node("Mul", ["row", "row"], ["sq"])],
        "body", [_vi("acc", [3]), _vi("row", [3])], [_vi(n, [3]) for n in outputs],
        [_i64("zero", [0]), _i64("two", [2]),
         numpy_helper.from_array(np.array([1], np.float32), "one")])
    return _state_and_rows(body, ("sf", "y1", "y2"))


@pytest.mark.parametrize("outputs", [["acc_out", "acc_out", "sq"], ["acc_out", "sq", "sq"],
                                     ["acc_out", "sq", "acc_out"]])
def test_a_body_making_one_tensor_two_outputs_is_onnx_s_and_a_known_divergence(
    outputs, onnx_run
) -> None:
    """Each output the tensor's value, as onnx.reference gives them; onnxruntime 1.32 gives
    all but the last of a repeated output, and the state fed back from it, whatever its
    buffer held (zeros), so ``check`` reports them as known divergences, not failures. Before,
    nothing named it and ``check`` failed."""
    from onnx.reference import ReferenceEvaluator

    from dmlgraph.parity import Verdict, check

    model = _repeating(outputs)
    feeds = {"s0": np.ones(3, np.float32), "x": np.arange(12, dtype=np.float32).reshape(4, 3)}
    want = ReferenceEvaluator(model).run(None, feeds)
    assert not all(np.array_equal(g, w) for g, w in zip(onnx_run(model, feeds), want))
    result = get_backend("numpy").execute(lower(dmlgraph.load(model), "6_4"), feeds)
    for name, expected in zip(("sf", "y1", "y2"), want):
        assert np.array_equal(result.outputs[name], expected), name
    notes = " ".join(note for r in result.record.nodes for note in r.notes)
    assert "divergence: the Scan's body makes ['" in notes
    (compared,) = check(model, inputs=feeds).comparisons
    assert all(o.verdict is not Verdict.FAIL for o in compared.outputs)


def _growing(acc_out: list) -> onnx.ModelProto:
    """A Scan of x [4, 6] whose body joins each row to its state acc (fed [2]), declaring
    the state it makes ``acc_out``."""
    body = helper.make_graph(
        [helper.make_node("Concat", ["acc", "row"], ["acc_out"], axis=0)],
        "body", [_vi("acc", [None]), _vi("row", [6])], [_vi("acc_out", acc_out)])
    graph = helper.make_graph(
        [helper.make_node("Scan", ["init", "x"], ["final"], name="scan", body=body,
                          num_scan_inputs=1)],
        "m", [_vi("init", [2]), _vi("x", [4, 6])], [_vi("final", None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 9
    return model


@pytest.mark.parametrize("acc_out", [[None], ["n"], None])
def test_a_state_variable_inference_sees_change_shape_is_refused_at_load(
    acc_out, onnx_run
) -> None:
    """ONNX requires a Scan's outputs "to have the same shape in each iteration"; a body
    joining each row to its state grows it, [2] to [8], which onnx's inference sees where
    the body declares no size for it: onnxruntime refuses the model at load ("Can't merge
    shape info ... Inferred=8 Declared=2"), and so does dmlgraph now, naming the state
    (before, its run stopped at the first step)."""
    model = _growing(acc_out)
    with pytest.raises(Exception, match="Inferred=8 Declared=2"):
        onnx_run(model, _feeds(second=False), optimize=False)
    with pytest.raises(ModelValidationError, match=re.escape(
            "node 'scan' (Scan): its body makes state variable 0 ('acc_out') float32[8] from "
            "float32[2], as onnx infers it; a Scan's state variables keep their shape")):
        dmlgraph.load(model)


def _refused_at_load_alike(onnx_run, model: onnx.ModelProto, feeds: dict, pattern: str) -> None:
    """onnxruntime refuses the model at load, its Scan's inference merging the size the body
    makes into the declared one ("Inferred=3 Declared=2"), and so does ``dmlgraph.load``,
    saying ``pattern`` (a regular expression)."""
    with pytest.raises(Exception, match="Inferred=3 Declared=2"):
        onnx_run(model, feeds, optimize=False)
    with pytest.raises(ModelValidationError, match=pattern):
        dmlgraph.load(model)


def test_a_scan_8_state_variable_inference_sees_change_shape_is_refused_at_load(
    onnx_run
) -> None:
    """The same of a Scan-8 (its states batched): a body appending 7 to each batch entry's
    state [2] is refused by onnxruntime at load ("Inferred=3 Declared=2"); dmlgraph ran the
    Scan on the fallback, which refused it there (onnxruntime's load, or reference_ops' run,
    "its body made state variable 0 ('sin') float32[3] from float32[2] in step 0")."""
    body = helper.make_graph(
        [helper.make_node("Concat", ["acc", "seven"], ["acc_out"], axis=0),
         helper.make_node("Identity", ["row"], ["row_out"])],
        "body", [_vi("acc", None), _vi("row", [1])], [_vi("acc_out", None), _vi("row_out", [1])],
        [numpy_helper.from_array(np.array([7], np.float32), "seven")])
    graph = helper.make_graph(
        [helper.make_node("Scan", ["", "init", "x"], ["final", "rows"], name="scan", body=body,
                          num_scan_inputs=1)],
        "m", [_vi("init", [1, 2]), _vi("x", [1, 3, 1])], [_vi("final", None), _vi("rows", None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 8)])
    model.ir_version = 9
    feeds = {"init": np.array([[0, 1]], np.float32), "x": np.ones((1, 3, 1), np.float32)}
    _refused_at_load_alike(onnx_run, model, feeds, re.escape(
        "node 'scan' (Scan): its body makes state variable 0 ('acc_out') float32[3] from "
        "float32[2] (a batch entry of float32[1,2]), as onnx infers it"))


def _declaring(opset: int, declared: list, length: int) -> onnx.ModelProto:
    """A Scan (a Scan-8 at opset 8, its state batched) of x whose body joins the first
    ``length`` elements of each row to its state acc (fed [2]), declaring the state it
    makes ``declared``."""
    body = helper.make_graph(
        [helper.make_node("Slice", ["row"], ["head"], starts=[0], ends=[length], axes=[0])
         if opset < 10 else helper.make_node("Slice", ["row", "zero", "end"], ["head"]),
         helper.make_node("Concat" if length != 2 else "Add", ["acc", "head"], ["acc_out"],
                          **({"axis": 0} if length != 2 else {}))],
        "body", [_vi("acc", [2]), _vi("row", [6])], [_vi("acc_out", declared)],
        [] if opset < 10 else [_i64("zero", [0]), _i64("end", [length])])
    batch = [] if opset >= 9 else [1]
    graph = helper.make_graph(
        [helper.make_node("Scan", ([] if opset >= 9 else [""]) + ["init", "x"], ["final"],
                          name="scan", body=body, num_scan_inputs=1)],
        "m", [_vi("init", batch + [2]), _vi("x", batch + [4, 6])], [_vi("final", None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 9
    return model


@pytest.mark.parametrize("opset", [18, 8])
def test_a_state_declared_and_made_of_another_size_than_fed_is_refused_at_load(
    opset, onnx_run
) -> None:
    """A body declaring the state it makes [3], and making [3], from a state fed [2]:
    onnxruntime merges the node's [3] into the declaration and the Scan's inference refuses
    it at load ("Inferred=3 Declared=2"); dmlgraph read only undeclared sizes, and stopped at
    the run's first step (a Scan-8's fallback: onnxruntime cannot load the model)."""
    model = _declaring(opset, [3], 1)
    batch = (1,) if opset < 9 else ()
    feeds = {"init": np.zeros(batch + (2,), np.float32), "x": np.ones(batch + (4, 6), np.float32)}
    _refused_at_load_alike(onnx_run, model, feeds, re.escape(
        "node 'scan' (Scan): its body makes state variable 0 ('acc_out') float32[3] from "
        "float32[2]") + ".* as declared; .*onnxruntime refuses the model at load")


def test_a_state_declared_of_another_size_than_fed_and_made_of_unknown_size_is_refused(
    onnx_run
) -> None:
    """A body declaring the state [3] from a state fed [2], its node a Slice by an end the
    graph is fed (of a size inference does not know): onnxruntime keeps the declaration and
    refuses the model at load, and so does dmlgraph (only a size the node gives contradicts
    a declaration)."""
    body = helper.make_graph(
        [helper.make_node("Slice", ["row", "zero", "end"], ["acc_out"])], "body",
        [_vi("acc", [2]), _vi("row", [6])], [_vi("acc_out", [3])], [_i64("zero", [0])])
    graph = helper.make_graph(
        [helper.make_node("Scan", ["init", "x"], ["final"], name="scan", body=body,
                          num_scan_inputs=1)],
        "m", [_vi("init", [2]), _vi("x", [4, 6]), _vi("end", [1], TensorProto.INT64)],
        [_vi("final", None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 9
    feeds = {"init": INIT, "x": X, "end": np.array([2], np.int64)}
    _refused_at_load_alike(onnx_run, model, feeds, re.escape(
        "its body makes state variable 0 ('acc_out') float32[3] from float32[2], as "
        "declared"))


@pytest.mark.parametrize("opset", [18, 8])
def test_a_state_declared_of_another_size_than_fed_and_made_runs(opset, onnx_run) -> None:
    """A body declaring the state [3] where its node makes [2], as fed: onnxruntime's lenient
    merge drops the size the two differ on, loads the model and runs it, and so does dmlgraph
    (a state declared [3] made [4] loads too, and both refuse it at its run)."""
    model = _declaring(opset, [3], 2)
    batch = (1,) if opset < 9 else ()
    feeds = {"init": np.zeros(batch + (2,), np.float32),
             "x": np.arange(24, dtype=np.float32).reshape(batch + (4, 6))}
    (want,) = onnx_run(model, feeds, optimize=False)
    got = get_backend("numpy").run(lower(dmlgraph.load(model), "6_4"), feeds)
    assert np.array_equal(got["final"], want)
    dmlgraph.load(_declaring(opset, [3], 4))


def test_a_state_declared_of_another_rank_than_made_says_onnxruntime_fails_at_run(
    onnx_run
) -> None:
    """A body declaring the state [2, 1] where it makes [2], as fed: onnxruntime's lenient
    merge drops the output's shape, loads the model and fails at every run ("Subgraph must
    have the shape set for all outputs"). dmlgraph refuses it at load still, now saying so
    (it said onnxruntime refused the model at load)."""
    model = _declaring(18, [2, 1], 2)
    feeds = {"init": np.zeros(2, np.float32), "x": np.ones((4, 6), np.float32)}
    with pytest.raises(Exception, match="Subgraph must have the shape set"):
        onnx_run(model, feeds, optimize=False)
    with pytest.raises(ModelValidationError, match=re.escape(
            "float32[2,1] from float32[2], as declared; a Scan's state variables keep their "
            "shape from step to step (onnxruntime loads the model and fails at its run: "
            "\"Subgraph must have the shape set for all outputs\")")):
        dmlgraph.load(model)


def _scan_output_declared(opset: int, declared: list | None) -> onnx.ModelProto:
    """A Scan (a Scan-8 at opset 8) of x [4, 6] whose body's Relu makes scan output
    'row_out' [6], declaring it ``declared``."""
    body = helper.make_graph(
        [helper.make_node("Identity", ["acc"], ["acc_out"]),
         helper.make_node("Relu", ["row"], ["row_out"])],
        "body", [_vi("acc", [2]), _vi("row", [6])], [_vi("acc_out", [2]), _vi("row_out", declared)])
    batch = [] if opset >= 9 else [1]
    graph = helper.make_graph(
        [helper.make_node("Scan", ([] if opset >= 9 else [""]) + ["init", "x"],
                          ["final", "rows"], name="scan", body=body, num_scan_inputs=1)],
        "m", [_vi("init", batch + [2]), _vi("x", batch + [4, 6])],
        [_vi("final", None), _vi("rows", None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 9
    return model


@pytest.mark.parametrize("opset", [18, 8])
@pytest.mark.parametrize("declared", [[6, 1], [], ["n", 1]])
def test_a_scan_output_declared_of_another_rank_than_made_is_refused_at_load(
    opset, declared, onnx_run
) -> None:
    """A body declaring scan output 'row_out' of another rank than its Relu makes ([6]):
    onnxruntime's merge keeps no shape, it loads the model and every run fails ("Subgraph
    must have the shape set for all outputs"), as for a state so declared, which dmlgraph
    refuses at load; it ran this one, and check exited 2 on onnxruntime's failure. Now the
    same rule refuses both."""
    model = _scan_output_declared(opset, declared)
    batch = (1,) if opset < 9 else ()
    feeds = {"init": np.zeros(batch + (2,), np.float32), "x": np.ones(batch + (4, 6), np.float32)}
    with pytest.raises(Exception, match="Subgraph must have the shape set"):
        onnx_run(model, feeds, optimize=False)
    with pytest.raises(ModelValidationError, match=re.escape(
            "node 'scan' (Scan): its body declares scan output 0 ('row_out') ") + ".*"
            + re.escape(", and its node makes float32[6]: a Scan's body makes its outputs as "
                        "declared (onnxruntime loads the model and fails at its run")):
        dmlgraph.load(model)


@pytest.mark.parametrize("opset", [18, 8])
@pytest.mark.parametrize("declared", [[6], [7], ["n"], None])
def test_a_scan_output_declared_of_its_node_s_rank_runs(opset, declared, onnx_run) -> None:
    """The same declared of the node's rank (a size it contradicts too: onnxruntime's
    lenient merge drops that size) or of no shape: onnxruntime runs it, and so does
    dmlgraph."""
    model = _scan_output_declared(opset, declared)
    batch = (1,) if opset < 9 else ()
    feeds = {"init": np.zeros(batch + (2,), np.float32),
             "x": np.arange(24, dtype=np.float32).reshape(batch + (4, 6)) - 12}
    want = onnx_run(model, feeds, optimize=False)
    got = get_backend("numpy").run(lower(dmlgraph.load(model), "6_4"), feeds)
    assert all(np.array_equal(got[name], w) for name, w in zip(("final", "rows"), want))


def _passed_through_declared(opset: int, state: list, row: list) -> onnx.ModelProto:
    """A Scan (a Scan-8 at opset 8) of x [4, 6] whose body passes its state acc [2] and its
    row [6] through as they are (no node makes them), declaring them ``state`` and ``row``,
    beside a Relu of the row."""
    body = helper.make_graph(
        [helper.make_node("Relu", ["row"], ["relu"])], "body",
        [_vi("acc", [2]), _vi("row", [6])],
        [_vi("acc", state), _vi("row", row), _vi("relu", [6])])
    batch = [] if opset >= 9 else [1]
    graph = helper.make_graph(
        [helper.make_node("Scan", ([] if opset >= 9 else [""]) + ["init", "x"],
                          ["final", "rows", "relus"], name="scan", body=body,
                          num_scan_inputs=1)],
        "m", [_vi("init", batch + [2]), _vi("x", batch + [4, 6])],
        [_vi("final", None), _vi("rows", None), _vi("relus", None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 9
    return model


@pytest.mark.parametrize("opset", [18, 8])
@pytest.mark.parametrize("state, row", [([2, 1], [6]), ([], [6, 1]), ([1, 2], []),
                                        ([2], [6, 1])])
def test_a_body_input_passed_through_runs_whatever_it_is_declared(
    opset, state, row, onnx_run
) -> None:
    """A body output that is a body input as it is, declared of another rank: onnxruntime
    (1.32) takes it as the input is, loads the model and runs it (its values there are its
    known divergence: what its buffers held). ONNX's results: the state fed, the rows, their
    Relu. dmlgraph refused a state so passed through ("onnxruntime refuses the model at
    load"). A Scan-8 runs on the fallback: onnx.reference's here (onnxruntime's gives its
    buffers' values there, a known divergence)."""
    model = _passed_through_declared(opset, state, row)
    batch = (1,) if opset < 9 else ()
    feeds = {"init": np.arange(2, dtype=np.float32).reshape(batch + (2,)),
             "x": np.arange(24, dtype=np.float32).reshape(batch + (4, 6)) - 12}
    want = [feeds["init"], feeds["x"], np.maximum(feeds["x"], 0)]
    assert [w.shape for w in onnx_run(model, feeds, optimize=False)] == [w.shape for w in want]
    backend = get_backend("numpy", fallback="reference" if opset < 9 else "onnxruntime")
    got = backend.run(lower(dmlgraph.load(model), "6_4"), feeds)
    assert all(np.array_equal(got[name], w) and got[name].shape == w.shape
               for name, w in zip(("final", "rows", "relus"), want))


def _scan_8_repeating() -> onnx.ModelProto:
    """A Scan-8 of x [1, 4, 6] whose body makes its Relu of the row two scan outputs."""
    body = helper.make_graph(
        [helper.make_node("Identity", ["acc"], ["a2"]), helper.make_node("Relu", ["row"], ["r"])],
        "body", [_vi("acc", [2]), _vi("row", [6])], [_vi("a2", [2]), _vi("r", [6]), _vi("r", [6])])
    graph = helper.make_graph(
        [helper.make_node("Scan", ["", "init", "x"], ["final", "r1", "r2"], name="scan",
                          body=body, num_scan_inputs=1)],
        "m", [_vi("init", [1, 2]), _vi("x", [1, 4, 6])],
        [_vi("final", None), _vi("r1", None), _vi("r2", None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 8)])
    model.ir_version = 9
    return model


@pytest.mark.parametrize("fallback", ["onnxruntime", "reference"])
def test_a_scan_8_repeating_an_output_on_the_fallback_is_a_known_divergence(
    fallback: str, onnx_run
) -> None:
    """The same of a body making one tensor two scan outputs: onnxruntime's first holds what
    its buffers held (zeros in fresh memory, else stale values: not asserted)."""
    from dmlgraph import check

    model = _scan_8_repeating()
    feeds = {"init": np.ones((1, 2), np.float32),
             "x": np.arange(-12, 12, dtype=np.float32).reshape(1, 4, 6)}
    assert np.array_equal(onnx_run(model, feeds, optimize=False)[2], np.maximum(feeds["x"], 0))
    got = get_backend("numpy", fallback="reference").run(lower(dmlgraph.load(model), "6_4"),
                                                         feeds)
    assert np.array_equal(got["r1"], np.maximum(feeds["x"], 0))  # ONNX's, spelled out
    report = check(model, inputs=feeds, fallback=fallback)
    assert report.exit_code == 0
    (divergence,) = report.divergences
    assert divergence.note.startswith("divergence: the Scan's body makes ['r'] more than one")


@pytest.mark.parametrize("fallback", ["onnxruntime", "reference"])
def test_a_scan_8_passing_its_inputs_through_on_the_fallback_is_a_known_divergence(
    fallback: str, onnx_run
) -> None:
    """A Scan-8 runs whole on the fallback; its body passing its inputs through, onnxruntime
    gives its buffers there (zeros in fresh memory). Nothing noted it: check on the onnxruntime
    fallback compared those buffers with themselves and passed, on --fallback reference it
    failed naming nothing (its values ONNX's). Now both name the divergence, the onnxruntime
    fallback's outputs not compared."""
    from dmlgraph import check
    from dmlgraph.parity import UNINITIALIZED_MESSAGE

    model = _passed_through_declared(8, [2], [6])
    feeds = {"init": np.array([[1, 2]], np.float32),
             "x": np.arange(1, 25, dtype=np.float32).reshape(1, 4, 6)}
    report = check(model, inputs=feeds, fallback=fallback)
    assert report.exit_code == 0
    (divergence,) = report.divergences
    assert divergence.note.startswith(
        "divergence: the Scan's body makes its input(s) ['acc', 'row'] output(s) as they are")
    compared = {o.name: o.message for c in report.comparisons for o in c.outputs}
    if fallback == "onnxruntime":  # its values there are its buffers (zeros, or stale ones)
        assert compared["final"] == compared["rows"] == UNINITIALIZED_MESSAGE


def _scan_8_of(nodes: list, outputs: list[str]) -> onnx.ModelProto:
    """A Scan-8 of x [1, 4, 6], state acc [2] (fed [1, 2]), whose body makes ``outputs``
    (the state's next value first, then the scan outputs, each [2] or [6]) by ``nodes``."""
    shapes = {"acc": [2], "a2": [2], "row": [6], "relu": [6], "sum": [6]}
    body = helper.make_graph(nodes, "body", [_vi("acc", [2]), _vi("row", [6])],
                             [_vi(name, shapes[name]) for name in outputs])
    made = ["final", *(f"y{i}" for i in range(1, len(outputs)))]
    graph = helper.make_graph(
        [helper.make_node("Scan", ["", "init", "x"], made, name="scan", body=body,
                          num_scan_inputs=1)],
        "m", [_vi("init", [1, 2]), _vi("x", [1, 4, 6])], [_vi(name, None) for name in made])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 8)])
    model.ir_version = 9
    return model


@pytest.mark.parametrize("nodes, outputs, wrong", [
    # the state passed through: its Relu of each row onnxruntime computes
    ([helper.make_node("Relu", ["row"], ["relu"])], ["acc", "relu"], {"final"}),
    # the row passed through: the state's next value onnxruntime computes
    ([helper.make_node("Identity", ["acc"], ["a2"])], ["a2", "row"], {"y1"}),
    # the state passed through, fed back into a sum: that sum is wrong too
    ([helper.make_node("Relu", ["row"], ["relu"]),
      helper.make_node("ReduceSum", ["acc"], ["total"], keepdims=1),
      helper.make_node("Add", ["total", "row"], ["sum"])],
     ["acc", "relu", "sum"], {"final", "y2"}),
])
def test_a_scan_8_on_the_onnxruntime_fallback_compares_the_outputs_it_computes(
    nodes: list, outputs: list[str], wrong: set[str], onnx_run
) -> None:
    """A Scan-8 whose body passes an input through, run whole on the onnxruntime fallback:
    onnxruntime gives its buffers at that output (and at what its state, fed back, reaches)
    and computes the others. All its outputs were "not compared" (uninitialized memory): a
    Relu of each row beside a state passed through was not checked at all."""
    from dmlgraph import check
    from dmlgraph.parity import UNINITIALIZED_MESSAGE

    model = _scan_8_of(nodes, outputs)
    feeds = {"init": np.array([[1, 2]], np.float32),
             "x": np.arange(-12, 12, dtype=np.float32).reshape(1, 4, 6)}
    onnx_run(model, feeds, optimize=False)  # onnxruntime runs it
    report = check(model, inputs=feeds)
    assert report.exit_code == 0
    got = {o.name: o for c in report.comparisons for o in c.outputs}
    assert {name for name, o in got.items() if o.message == UNINITIALIZED_MESSAGE} == wrong
    assert all(o.compared and o.mismatches == 0 for name, o in got.items() if name not in wrong)


def _held_scan_8(holder: str, state: str = "init") -> onnx.ModelProto:
    """A Scan-8 of sequence_lens L [1], state ``state`` (fed init [1, 2]) and x [1, 4, 6],
    whose body passes the state through and makes a Relu of each row, held by ``holder``:
    'If' (the then branch, of a condition fed true, its outputs F and R), 'Loop' (a Loop of
    2 trips carrying init through an Identity beside it: V, then F and R stacked) or
    'whole' (the same Loop of neither trip count nor condition, its body stopping after one
    trip, which the NumPy backend runs whole on the fallback). ``state`` 'v': the Loop's
    carried value is the Scan's state, fed back."""
    body = helper.make_graph([helper.make_node("Relu", ["row"], ["relu"])], "body",
                             [_vi("acc", [2]), _vi("row", [6])],
                             [_vi("acc", [2]), _vi("relu", [6])])
    scan = helper.make_node("Scan", ["L", state, "x"], ["final", "rows"], body=body,
                            num_scan_inputs=1)
    inputs = [_vi("L", [1], TensorProto.INT64), _vi("init", [1, 2]), _vi("x", [1, 4, 6])]
    inits = []
    if holder == "If":
        then = helper.make_graph([scan], "then", [], [_vi("final", None), _vi("rows", None)])
        other = helper.make_graph([helper.make_node("Identity", ["init"], ["e1"]),
                                   helper.make_node("Identity", ["x"], ["e2"])], "else", [],
                                  [_vi("e1", None), _vi("e2", None)])
        node = helper.make_node("If", ["B"], ["F", "R"], name="holder", then_branch=then,
                                else_branch=other)
        inputs.append(_vi("B", [], TensorProto.BOOL))
    else:
        stop = (helper.make_node("Constant", [], ["c2"],
                                 value=numpy_helper.from_array(np.array(False), "s"))
                if holder == "whole" else helper.make_node("Identity", ["c"], ["c2"]))
        # the carried value: the Identity's, or the Scan's final state (``state`` 'v')
        carried = ["final"] if state == "v" else ["v2", "final"]
        loop = helper.make_graph(
            [scan, stop, helper.make_node("Identity", ["v"], ["v2"])], "loop",
            [_vi("i", [], TensorProto.INT64), _vi("c", [], TensorProto.BOOL), _vi("v", [1, 2])],
            [_vi("c2", [], TensorProto.BOOL), *(_vi(n, None) for n in carried),
             _vi("rows", None)])
        trips = "" if holder == "whole" else "T"
        made = ["F", "R"] if state == "v" else ["V", "F", "R"]
        node = helper.make_node("Loop", [trips, "", "init"], made, name="holder", body=loop)
        inits = [] if holder == "whole" else [numpy_helper.from_array(np.array(2, np.int64), "T")]
    graph = helper.make_graph([node], "m", inputs, [_vi(n, None) for n in node.output], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 8)], ir_version=8)


@pytest.mark.parametrize("holder, fallback, wrong", [
    ("If", "onnxruntime", {"F"}), ("Loop", "onnxruntime", {"F"}),
    ("whole", "onnxruntime", {"F"}),
    # on onnx.reference the Scan-8 computes ONNX's state, where onnxruntime gives its buffers:
    # run whole there, nothing said so, and check failed naming nothing
    ("whole", "reference", set()),
])
def test_a_held_scan_8_on_the_fallback_compares_the_outputs_onnxruntime_computes(
    holder: str, fallback: str, wrong: set[str], onnx_run
) -> None:
    """A Scan-8 passing its state through, held by an If or a Loop: every output of the
    holder was "not compared", the branch's or body's Relu of the rows (and, in the Loop, a
    carried value beside it) too; run whole on the onnxruntime fallback, nothing was said,
    and check compared onnxruntime's buffers with themselves. Now, as for a top-level Scan-8,
    only the outputs the passed-through state reaches are left uncompared, named."""
    from dmlgraph import check
    from dmlgraph.parity import UNINITIALIZED_MESSAGE, Verdict

    model = _held_scan_8(holder)
    feeds = {"L": np.array([4], np.int64), "init": np.array([[1, 2]], np.float32),
             "x": np.arange(-12, 12, dtype=np.float32).reshape(1, 4, 6)}
    if holder == "If":
        feeds["B"] = np.array(True)
    onnx_run(model, feeds)  # onnxruntime runs it
    report = check(model, inputs=feeds, fallback=fallback)
    assert report.exit_code == 0
    got = {o.name: o for c in report.comparisons for o in c.outputs}
    assert {name for name, o in got.items() if o.message == UNINITIALIZED_MESSAGE} == wrong
    assert all(o.compared and o.mismatches == 0 for name, o in got.items()
               if name not in wrong and name != "F")
    f = got["F"]  # onnxruntime's buffers: not compared, or a named divergence
    assert f.verdict is Verdict.KNOWN_DIVERGENCE
    assert any("passes" in r or "as they are" in r for r in f.divergences) or not f.compared


def test_a_held_scan_8_s_state_fed_back_leaves_what_it_reaches_uncompared(onnx_run) -> None:
    """The Loop's carried value is the Scan-8's state, passed through: fed back, the next
    trip's Scan reads onnxruntime's buffers as its state, so its final state (F) is not
    onnxruntime's to compare. Its rows (each trip's Relu of x, stacked: R) read no state:
    onnxruntime computes them, and they are compared (``subgraphs.reach`` follows the
    Scan's body; it counted every output of the Scan reached by its state)."""
    from dmlgraph import check
    from dmlgraph.parity import UNINITIALIZED_MESSAGE

    model = _held_scan_8("Loop", state="v")
    feeds = {"L": np.array([4], np.int64), "init": np.array([[1, 2]], np.float32),
             "x": np.arange(-12, 12, dtype=np.float32).reshape(1, 4, 6)}
    rows = np.maximum(feeds["x"], 0)
    assert np.array_equal(onnx_run(model, feeds)[1], np.stack([rows, rows]))
    report = check(model, inputs=feeds)
    got = {o.name: o for c in report.comparisons for o in c.outputs}
    assert {name for name, o in got.items() if o.message == UNINITIALIZED_MESSAGE} == {"F"}
    assert got["R"].compared and got["R"].mismatches == 0
    assert report.exit_code == 0


def _held_scan_9(passed: bool, nested: bool = False, opset: int = 16) -> onnx.ModelProto:
    """A Scan-9+ of init [2] and x [4, 6] whose body makes a Relu of each row beside its
    state: passed through by its own name (``passed``) or by an Identity, held by a Loop of
    neither trip count nor condition, its body stopping after one trip (the NumPy backend
    runs it whole on the fallback), carrying v through an Identity: V, then F and R stacked.
    ``nested``: the Scan sits in the then branch of an If in the Loop's body, its condition
    made there (true)."""
    made = [helper.make_node("Relu", ["row"], ["relu"])]
    if not passed:
        made.append(helper.make_node("Identity", ["acc"], ["acc2"]))
    body = helper.make_graph(made, "body", [_vi("acc", [2]), _vi("row", [6])],
                             [_vi("acc" if passed else "acc2", [2]), _vi("relu", [6])])
    scan = helper.make_node("Scan", ["v", "x"], ["final", "rows"], body=body,
                            num_scan_inputs=1)
    held = [scan]
    if nested:
        then = helper.make_graph([scan], "then", [], [_vi("final", None), _vi("rows", None)])
        other = helper.make_graph([helper.make_node("Identity", ["v"], ["e1"]),
                                   helper.make_node("Relu", ["x"], ["e2"])], "else", [],
                                  [_vi("e1", None), _vi("e2", None)])
        held = [helper.make_node("Constant", [], ["b"],
                                 value=numpy_helper.from_array(np.array(True), "b")),
                helper.make_node("If", ["b"], ["final", "rows"], then_branch=then,
                                 else_branch=other)]
    stop = helper.make_node("Constant", [], ["c2"],
                            value=numpy_helper.from_array(np.array(False), "s"))
    loop = helper.make_graph(
        [*held, stop, helper.make_node("Identity", ["v"], ["v2"])], "loop",
        [_vi("i", [], TensorProto.INT64), _vi("c", [], TensorProto.BOOL), _vi("v", [2])],
        [_vi("c2", [], TensorProto.BOOL), _vi("v2", None), _vi("final", None),
         _vi("rows", None)])
    node = helper.make_node("Loop", ["", "", "init"], ["V", "F", "R"], name="holder",
                            body=loop)
    graph = helper.make_graph([node], "m", [_vi("init", [2]), _vi("x", [4, 6])],
                              [_vi(n, None) for n in node.output])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                             ir_version=8)


@pytest.mark.parametrize("nested", [False, True])
@pytest.mark.parametrize("fallback", ["onnxruntime", "reference"])
def test_a_held_scan_9_passing_its_state_by_name_is_a_known_divergence(
    fallback: str, nested: bool, onnx_run
) -> None:
    """A Scan-16 passing its state through by its own name, in a Loop run whole on the
    fallback (directly, or in an If's branch there): onnxruntime's CPU provider gives its
    buffers as the final state (zeros, measured, where ONNX gives init [1, 2]). Nothing
    watched a Scan-9+ held so (only Scan-8s): on the onnxruntime fallback check compared
    onnxruntime's buffers with themselves and said "parity holds"; on --fallback reference
    it failed naming nothing. Now F is the divergence named (not compared on onnxruntime's
    fallback), and V and R, which the state does not reach, are compared."""
    from dmlgraph import check
    from dmlgraph.parity import UNINITIALIZED_MESSAGE, Verdict

    model = _held_scan_9(passed=True, nested=nested)
    feeds = {"init": np.array([1, 2], np.float32),
             "x": np.arange(-12, 12, dtype=np.float32).reshape(4, 6)}
    rows = np.maximum(feeds["x"], 0)
    v, _, r = onnx_run(model, feeds, optimize=False)  # onnxruntime runs it
    assert np.array_equal(v, feeds["init"]) and np.array_equal(r, rows[None])
    if fallback == "reference":  # ONNX's state, as NumPy spells it out
        got = get_backend("numpy", fallback="reference").run(
            lower(dmlgraph.load(model), "6_4"), feeds)
        assert np.array_equal(got["F"], feeds["init"][None])
    report = check(model, inputs=feeds, fallback=fallback)
    assert report.exit_code == 0
    got = {o.name: o for c in report.comparisons for o in c.outputs}
    assert got["F"].verdict is Verdict.KNOWN_DIVERGENCE
    assert any("makes its input(s) ['acc'] output(s) as they are" in d
               for d in got["F"].divergences)
    if fallback == "onnxruntime":  # dmlgraph's F is onnxruntime's buffers too
        assert not got["F"].compared and got["F"].message == UNINITIALIZED_MESSAGE
    assert all(got[name].compared and got[name].mismatches == 0 for name in ("V", "R"))


@pytest.mark.parametrize("taken", [True, False])
@pytest.mark.parametrize("fallback", ["onnxruntime", "reference"])
def test_a_scan_9_in_an_if_run_whole_is_watched_by_its_branch(
    fallback: str, taken: bool, onnx_run
) -> None:
    """A Scan-16 passing its state by name in an If's then branch that reads a sequence (the
    NumPy backend runs the If whole on the fallback). Taken, onnxruntime gives zeros for F
    where ONNX gives init: check compared them with the onnxruntime fallback's zeros and
    passed, and on --fallback reference failed naming nothing; now F is the divergence. Not
    taken (the else branch's Identity of init), nothing is noted and F is compared."""
    from dmlgraph import check
    from dmlgraph.parity import Verdict

    body = helper.make_graph([helper.make_node("Relu", ["row"], ["relu"])], "body",
                             [_vi("acc", [2]), _vi("row", [6])],
                             [_vi("acc", [2]), _vi("relu", [6])])
    then = helper.make_graph(
        [helper.make_node("Scan", ["init", "x"], ["final", "rows"], body=body,
                          num_scan_inputs=1),
         helper.make_node("SequenceConstruct", ["rows"], ["sq"]),
         helper.make_node("Constant", [], ["z"],
                          value=numpy_helper.from_array(np.array(0, np.int64), "z")),
         helper.make_node("SequenceAt", ["sq", "z"], ["rows2"])],
        "then", [], [_vi("final", None), _vi("rows2", None)])
    other = helper.make_graph([helper.make_node("Identity", ["init"], ["e1"]),
                               helper.make_node("Relu", ["x"], ["e2"])], "else", [],
                              [_vi("e1", None), _vi("e2", None)])
    node = helper.make_node("If", ["B"], ["F", "R"], name="holder", then_branch=then,
                            else_branch=other)
    graph = helper.make_graph(
        [node], "m", [_vi("init", [2]), _vi("x", [4, 6]), _vi("B", [], TensorProto.BOOL)],
        [_vi("F", None), _vi("R", None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)], ir_version=8)
    feeds = {"init": np.array([1, 2], np.float32),
             "x": np.arange(-12, 12, dtype=np.float32).reshape(4, 6), "B": np.array(taken)}
    assert np.array_equal(onnx_run(model, feeds, optimize=False)[1], np.maximum(feeds["x"], 0))
    report = check(model, inputs=feeds, fallback=fallback)
    assert report.exit_code == 0
    got = {o.name: o for c in report.comparisons for o in c.outputs}
    assert got["R"].compared and got["R"].mismatches == 0
    if not taken:
        assert not report.divergences and got["F"].compared and got["F"].mismatches == 0
        return
    # F is the divergence's, said so whatever onnxruntime's buffer held
    assert any(d.node == "holder" and 0 in d.outputs for d in report.divergences)
    assert got["F"].compared == (fallback == "reference")
    if got["F"].verdict is Verdict.PASS:  # onnxruntime's uninitialized F happened to hold
        assert fallback == "reference"  # init (a freed buffer reused): values agree
        return
    assert got["F"].verdict is Verdict.KNOWN_DIVERGENCE


def test_a_held_scan_9_passing_its_state_by_an_identity_is_compared(onnx_run) -> None:
    """The same Scan passing its state on by an Identity: onnxruntime computes it (init),
    nothing is noted, and every output is compared."""
    from dmlgraph import check

    model = _held_scan_9(passed=False)
    feeds = {"init": np.array([1, 2], np.float32),
             "x": np.arange(-12, 12, dtype=np.float32).reshape(4, 6)}
    assert np.array_equal(onnx_run(model, feeds, optimize=False)[1], feeds["init"][None])
    report = check(model, inputs=feeds)
    assert report.exit_code == 0 and not report.divergences
    assert all(o.compared and o.mismatches == 0 for c in report.comparisons for o in c.outputs)


def test_a_held_scan_8_s_input_is_read_by_its_own_scope(onnx_run) -> None:
    """A Scan-8 of empty scan inputs x [1, 0, 6], sequence_lens left out, in a Loop run whole
    on the fallback, its body passing its state on by an Identity: onnxruntime leaves the
    final state uninitialized (1.4e-45, measured, where ONNX gives init). Beside it a nested
    Loop's body declares an input named x too, a scope the Scan does not see. Any name
    defined anywhere in the holder counted as made inside, its value not known: nothing was
    noted, and check compared onnxruntime's leftovers with the fallback's and passed. The
    Scan's x is the model's, read as the segment is fed: F is the divergence, not compared."""
    from dmlgraph import check
    from dmlgraph.parity import UNINITIALIZED_MESSAGE

    model = _held_scan_8("whole")
    del model.graph.input[0]  # no sequence_lens
    model.graph.input[1].type.tensor_type.shape.dim[1].dim_param = "n"
    loop = model.graph.node[0]
    body = loop.attribute[0].g
    scan = body.node[0]
    scan.input[0] = ""
    inner = scan.attribute[0].g
    inner.node.append(helper.make_node("Identity", ["acc"], ["acc2"]))
    inner.output[0].name = "acc2"
    sibling = helper.make_graph(
        [helper.make_node("Identity", ["c"], ["c3"]), helper.make_node("Identity", ["w"], ["w2"])],
        "sibling", [_vi("x", [], TensorProto.INT64), _vi("c", [], TensorProto.BOOL),
                    _vi("w", [1, 2])], [_vi("c3", [], TensorProto.BOOL), _vi("w2", [1, 2])])
    body.node.extend([
        helper.make_node("Constant", [], ["T1"],
                         value=numpy_helper.from_array(np.array(1, np.int64), "t")),
        helper.make_node("Loop", ["T1", "", "v"], ["sib"], body=sibling)])
    body.output.append(_vi("sib", None))
    loop.output.append("S")
    model.graph.output.append(_vi("S", None))
    feeds = {"init": np.array([[1, 2]], np.float32), "x": np.zeros((1, 0, 6), np.float32)}
    onnx_run(model, feeds, optimize=False)  # onnxruntime runs it
    report = check(model, inputs=feeds)
    assert report.exit_code == 0
    got = {o.name: o for c in report.comparisons for o in c.outputs}
    assert got["F"].message == UNINITIALIZED_MESSAGE and not got["F"].compared
    assert any("a Scan-8 of empty scan inputs" in d for d in got["F"].divergences)
    assert got["V"].compared and got["V"].mismatches == 0

@pytest.mark.parametrize("fallback", ["onnxruntime", "reference"])
def test_a_held_scan_s_divergence_reaching_no_output_leaves_every_output_compared(
    fallback: str, onnx_run
) -> None:
    """The held Scan-16 passing its state by name, its final state dropped by the Loop's
    body (outputs V, R: the state carried by an Identity, the Scan's rows): what onnxruntime
    gets wrong reaches none of the Loop's outputs. ``reach`` said "not known" for none, so
    every output was "not compared" on the onnxruntime fallback ("nothing compared"), the
    rows never checked. Now nothing is noted and both are compared, with values NumPy gives."""
    from dmlgraph import check

    model = _held_scan_9(passed=True)
    loop = model.graph.node[0]
    del loop.attribute[0].g.output[2], loop.output[1], model.graph.output[1]
    feeds = {"init": np.array([1, 2], np.float32),
             "x": np.arange(-12, 12, dtype=np.float32).reshape(4, 6)}
    v, r = onnx_run(model, feeds, optimize=False)
    assert np.array_equal(v, feeds["init"]) and np.array_equal(r, np.maximum(feeds["x"], 0)[None])
    report = check(model, inputs=feeds, fallback=fallback)
    assert report.exit_code == 0 and not report.divergences
    got = {o.name: o for c in report.comparisons for o in c.outputs}
    assert set(got) == {"V", "R"}
    assert all(o.compared and o.mismatches == 0 for o in got.values())


def test_reach_tells_none_reached_from_not_known() -> None:
    """``reached_outputs`` of a Loop whose body makes F from a state s it drops and R from
    the rows: s reaches none of its outputs, (), where it said () for "not known" too (read
    as all); a value the body does not define is not known, None."""
    from dmlgraph.reach import reached_outputs

    body = helper.make_graph(
        [helper.make_node("Identity", ["c"], ["c2"]), helper.make_node("Relu", ["v"], ["s"]),
         helper.make_node("Relu", ["x"], ["r"])],
        "loop", [_vi("i", [], TensorProto.INT64), _vi("c", [], TensorProto.BOOL),
                 _vi("v", [2])], [_vi("c2", [], TensorProto.BOOL), _vi("v", None), _vi("r", None)])
    assert reached_outputs("Loop", 3, 0, body, [((), "s")], ["V", "R"]) == ()
    assert reached_outputs("Loop", 3, 0, body, [((), "r")], ["V", "R"]) == ("R",)
    assert reached_outputs("Loop", 3, 0, body, [((), "nowhere")], ["V", "R"]) is None


@pytest.mark.parametrize("holder", ["whole", "Loop"])
def test_a_held_scan_8_refused_leaves_every_output_of_its_holder_uncompared(holder) -> None:
    """A Scan-8 of sequence length 0 in a Loop (run whole, or its body lowered) beside a
    carried value V the Scan does not reach: onnxruntime refuses the Scan ("Invalid entries
    in sequence_lens") and so fails the Loop. Its note concerned only F and R, so check on
    --fallback reference ran onnxruntime on the graph pruned to V, which still runs the
    Loop, failed again, and exited 2 with onnxruntime's words alone. Now every output of the
    Loop is the divergence's, named, not compared (onnx has no Scan-8 to compare with)."""
    from dmlgraph import check
    from dmlgraph.parity import Verdict

    model = _held_scan_8(holder)
    feeds = {"L": np.array([0], np.int64), "init": np.array([[1, 2]], np.float32),
             "x": np.arange(-12, 12, dtype=np.float32).reshape(1, 4, 6)}
    got = get_backend("numpy", fallback="reference").run(lower(dmlgraph.load(model), "6_4"),
                                                         feeds)
    assert np.array_equal(got["F"][-1], feeds["init"])  # ONNX: no step, the initial state
    report = check(model, inputs=feeds, fallback="reference")
    assert report.exit_code == 0
    outputs = [o for c in report.comparisons for o in c.outputs]
    assert {o.name for o in outputs} == {"V", "F", "R"}
    assert all(o.verdict is Verdict.KNOWN_DIVERGENCE and not o.compared for o in outputs)
    assert any("sequence_lens [0]" in d.note for d in report.divergences)


def _loop_of_scan(scan_out: str, read: str) -> onnx.GraphProto:
    """A Loop body carrying v into a Scan-9's state (passed through) beside x, a scan input
    read from outside, whose scan output is ``scan_out`` of (``read``, row)."""
    scan_body = helper.make_graph(
        [helper.make_node("Identity", ["acc"], ["acc2"]),
         helper.make_node(scan_out, [read, "row"], ["out"])],
        "sb", [_vi("acc", [6]), _vi("row", [6])], [_vi("acc2", [6]), _vi("out", [6])])
    return helper.make_graph(
        [helper.make_node("Identity", ["c"], ["c2"]),
         helper.make_node("Scan", ["v", "x"], ["final", "rows"], body=scan_body,
                          num_scan_inputs=1)],
        "loop", [_vi("i", [], TensorProto.INT64), _vi("c", [], TensorProto.BOOL),
                 _vi("v", [6])],
        [_vi("c2", [], TensorProto.BOOL), _vi("final", None), _vi("rows", None)])


@pytest.mark.parametrize("scan_out, read, made, reached", [
    # the rows read no state: only the state carried (and so the final one) is reached
    ("Add", "row", ["v"], ("F",)),
    # the rows read the state: reached too
    ("Add", "acc", ["v"], ("F", "R")),
    # a scan input decides how many steps run: every output of the Scan is reached but the
    # state its body passes on (an Identity), which stays as fed (before: F too)
    ("Add", "row", ["x"], ("R",)),
])
def test_reach_follows_a_held_scan_s_body(scan_out, read, made, reached) -> None:
    """``reached_outputs`` of a Loop (outputs F, R) by tensors ``made`` of its body, which
    holds a Scan: a Scan's output is reached only where its body's comes from a reached
    input, states fed back (as the Loop's carried value is) to a fixed point."""
    from dmlgraph.reach import reached_outputs

    body = _loop_of_scan(scan_out, read)
    if made == ["x"]:  # x made in the body: an Identity of an enclosing tensor
        body.node.insert(0, helper.make_node("Identity", ["X"], ["x"]))
    seeds = [((), name) for name in made]
    assert reached_outputs("Loop", 3, 0, body, seeds, ["F", "R"]) == reached


def test_reach_follows_a_held_scan_s_states_fed_back_to_a_fixed_point() -> None:
    """A Scan of states a and b, its body swapping them (a' = b, b' = a) and making rows of
    b: reached a reaches b only on the next step, fed back, and so the rows; reached
    neither, nothing is (the Loop's carried v feeds a; w, beside it, feeds b)."""
    from dmlgraph.reach import reached_outputs

    scan_body = helper.make_graph(
        [helper.make_node("Identity", ["b"], ["a2"]), helper.make_node("Identity", ["a"], ["b2"]),
         helper.make_node("Add", ["b", "row"], ["out"])],
        "sb", [_vi("a", [6]), _vi("b", [6]), _vi("row", [6])],
        [_vi("a2", [6]), _vi("b2", [6]), _vi("out", [6])])
    body = helper.make_graph(
        [helper.make_node("Identity", ["c"], ["c2"]),
         helper.make_node("Scan", ["v", "w", "x"], ["fa", "fb", "rows"], body=scan_body,
                          num_scan_inputs=1),
         helper.make_node("Identity", ["w"], ["w2"])],
        "loop", [_vi("i", [], TensorProto.INT64), _vi("c", [], TensorProto.BOOL),
                 _vi("v", [6]), _vi("w", [6])],
        [_vi("c2", [], TensorProto.BOOL), _vi("fa", None), _vi("w2", None), _vi("rows", None)])
    outputs = ["V", "W", "R"]
    assert reached_outputs("Loop", 4, 0, body, [((), "v")], outputs) == ("V", "R")
    assert reached_outputs("Loop", 4, 0, body, [((), "w")], outputs) == ("V", "W", "R")
    assert reached_outputs("Loop", 4, 0, body, [((), "w2")], outputs) == ("V", "W", "R")


@pytest.mark.parametrize("op", ["Loop", "Scan"])
def test_reach_from_a_tensor_made_in_a_followed_body_reaches_past_its_holder(op) -> None:
    """A tensor made in a Loop's or Scan's body (s, a Squeeze's result that onnxruntime
    squeezes otherwise, as ``fallback._held_apart`` seeds it), read there by a Relu the body
    outputs as rows: the rows, and the node past the holder reading them, are reached. The
    body's own names were dropped as shadowing the enclosing ones: nothing past it was, and
    a failure there was taken for apart from the Squeeze (no hint)."""
    from dmlgraph.reach import reach

    made = [helper.make_node("Squeeze", ["x", "e"], ["s"]),
            helper.make_node("Relu", ["s"], ["r"])]
    if op == "Loop":
        body = helper.make_graph(
            [helper.make_node("Identity", ["c"], ["c2"]), *made],
            "body", [_vi("i", [], TensorProto.INT64), _vi("c", [], TensorProto.BOOL),
                     _vi("x", [1, 3])], [_vi("c2", [], TensorProto.BOOL), _vi("x", [1, 3]),
                                         _vi("r", None)])
        holder = helper.make_node("Loop", ["T", "", "X"], ["XF", "R"], body=body)
    else:
        body = helper.make_graph(made, "body", [_vi("x", [1, 3]), _vi("row", [3])],
                                 [_vi("x", [1, 3]), _vi("r", None)])
        holder = helper.make_node("Scan", ["X", "rows"], ["XF", "R"], body=body,
                                  num_scan_inputs=1)
    graph = helper.make_graph([holder, helper.make_node("Neg", ["R"], ["Y"])], "g", [], [])
    names = {name for _, name in reach(graph, {(((0, "body", 0),), "s")})}
    assert {"r", "R", "Y"} <= names and "XF" not in names


def test_reach_from_a_branch_s_output_made_there_reaches_the_if_s_output() -> None:
    """An If's then branch outputs a Squeeze's result s itself (read by no node there), and
    a Concat past the If reads the If's output: reached from s, both are. Only a node of
    the branch reading a reached tensor counted: nothing past the If was reached."""
    from dmlgraph.reach import reach

    then = helper.make_graph([helper.make_node("Squeeze", ["X", "e"], ["s"])], "then", [],
                             [_vi("s", None)])
    other = helper.make_graph([helper.make_node("Identity", ["X"], ["x2"])], "else", [],
                              [_vi("x2", None)])
    graph = helper.make_graph(
        [helper.make_node("If", ["B"], ["Y"], then_branch=then, else_branch=other),
         helper.make_node("Concat", ["Y", "X"], ["Z"], axis=0)], "g", [], [])
    reached = reach(graph, {(((0, "then_branch", 0),), "s")})
    assert {((), "Y"), ((), "Z")} <= reached


def test_a_state_variable_that_changes_shape_is_one_clear_error(onnx_run) -> None:
    """The same body declaring the state it makes [2]: onnx's inference keeps the
    declaration, so onnxruntime loads the model and fails when it runs it; the run says
    which state variable changed, where it ran and stacked it before."""
    model = _growing([2])
    with pytest.raises(Exception, match="ONNXRuntimeError"):
        onnx_run(model, _feeds(second=False), optimize=False)
    with pytest.raises(dmlgraph.DmlgraphError, match=re.escape(
            "its body made state variable 0 ('acc') float32[8] from float32[2] in step 0; "
            "a Scan's state variables keep their shape")):
        get_backend("numpy").run(lower(dmlgraph.load(model), "6_4"), _feeds(second=False))


def test_a_state_variable_its_node_keeps_runs_whatever_the_body_declares(onnx_run) -> None:
    """A body passing its state on by Identity, declaring what it makes [3] where the state
    is [2]: onnxruntime's merge drops the declared size the node contradicts, loads the
    model and runs it; so does dmlgraph (the declaration is no reason to refuse at load)."""
    body = helper.make_graph(
        [helper.make_node("Identity", ["acc"], ["acc_out"]),
         helper.make_node("Identity", ["row"], ["row_out"])],
        "body", [_vi("acc", [2]), _vi("row", [6])], [_vi("acc_out", [3]), _vi("row_out", [6])])
    graph = helper.make_graph(
        [helper.make_node("Scan", ["init", "x"], ["final", "rows"], name="scan", body=body,
                          num_scan_inputs=1)],
        "m", [_vi("init", [2]), _vi("x", [4, 6])], [_vi("final", None), _vi("rows", None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 9
    want = onnx_run(model, _feeds(second=False), optimize=False)
    got = get_backend("numpy").run(lower(dmlgraph.load(model), "6_4"), _feeds(second=False))
    assert all(np.array_equal(got[name], w) for name, w in zip(("final", "rows"), want))


# ------------------------------------------------------- a reference onnxruntime dies of
def _stacked(x_shape: list[int], out_axis: int, *, pad: bool = False) -> onnx.ModelProto:
    """A Scan over x along axis 0 whose body passes each slice on (a Pad of nothing with
    ``pad``, as the fuzzer made it), stacked along ``out_axis``."""
    op = (helper.make_node("Pad", ["sx", "p"], ["y"], mode="constant") if pad
          else helper.make_node("Identity", ["sx"], ["y"]))
    inner = [helper.make_node("Constant", [], ["p"], value=numpy_helper.from_array(
        np.zeros(2 * (len(x_shape) - 1), np.int64)))] if pad else []
    body = helper.make_graph([*inner, op], "body", [_vi("sx", x_shape[1:])], [_vi("y", None)])
    graph = helper.make_graph(
        [helper.make_node("Scan", ["x"], ["ys"], name="scan", body=body, num_scan_inputs=1,
                          scan_output_axes=[out_axis])],
        "g", [_vi("x", x_shape)], [_vi("ys", None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 9
    return model


def test_check_of_a_scan_onnxruntime_dies_of_is_one_error(tmp_path) -> None:
    """The fuzzer's model: a Scan over x [2, 0] whose body pads each empty row by nothing,
    stacked along axis 1 (ONNX and dmlgraph: float32[0, 2]). onnxruntime 1.32 dies of SIGFPE
    running it, and `check` died with it (exit 136, no word; with -X faulthandler a trace of
    onnxruntime's frames). Now the reference runs in a forked child, and its death is one
    error naming the signal; onnx.reference, which `check` tries next, refuses axis 1."""
    path = tmp_path / "scan.onnx"
    onnx.save(_stacked([2, 0], 1, pad=True), path)
    done = subprocess.run(
        [sys.executable, "-X", "faulthandler", "-m", "dmlgraph", "check", str(path)],
        capture_output=True, text=True, cwd=Path(__file__).parent.parent, timeout=120)
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert done.stderr.startswith("dmlgraph: error: ") and done.stderr.count("\n") == 1, (
        done.stderr)
    assert ("onnxruntime died of SIGFPE (signal 8) running the model as the reference (as "
            "onnxruntime 1.32 does on some Scans making empty scan outputs); onnx.reference "
            "failed as well: RuntimeError: Scan is not implemented for other output axes "
            "than 0") in done.stderr


def test_run_on_onnxruntime_of_a_scan_onnxruntime_dies_of_is_one_error(tmp_path) -> None:
    """The same model run with `run --backend onnxruntime` (imported or --lowered) died with
    onnxruntime (exit 136, no word): its run goes to a forked child as check's reference
    does, and the child's death is one error naming the signal. The numpy backend runs it."""
    path = tmp_path / "scan.onnx"
    onnx.save(_stacked([2, 0], 1, pad=True), path)
    for extra in ([], ["--lowered"]):
        done = subprocess.run(
            [sys.executable, "-m", "dmlgraph", "run", str(path), "--backend", "onnxruntime",
             *extra], capture_output=True, text=True, cwd=Path(__file__).parent.parent,
            timeout=120)
        assert done.returncode == 2, (extra, done.returncode, done.stderr)
        assert done.stderr.startswith("dmlgraph: error: ") and done.stderr.count("\n") == 1
        assert ("onnxruntime died of SIGFPE (signal 8) running the model (as onnxruntime 1.32 "
                "does on some Scans making empty scan outputs)") in done.stderr, done.stderr
    assert main(["run", str(path)]) == 0


def _run_forked_calls(monkeypatch) -> list[int]:
    """Counts ``run_forked``'s calls (``check`` reaches it through ``backends.base``)."""
    import backends.base

    calls: list[int] = []
    real = backends.base.run_forked

    def counted(work):
        calls.append(1)
        return real(work)

    monkeypatch.setattr(backends.base, "run_forked", counted)
    return calls


def test_check_runs_a_reference_making_scan_outputs_in_a_child_as_in_process(
    monkeypatch,
) -> None:
    """A Scan stacking along axis 1 outputs onnxruntime runs (x [3, 256, 128], 384 KiB out,
    past a pipe's buffer): its reference runs in a forked child, and the child's outputs and
    record are the in-process run's, bit for bit; parity holds. A model with no Scan making
    scan outputs does not pay for a child."""
    from backends.base import can_fork
    from backends.onnxruntime import OnnxruntimeBackend
    from dmlgraph.parity import _ForkedReference, check

    if not can_fork():
        pytest.skip("no fork on this platform")
    model = _stacked([3, 256, 128], 1)
    feeds = {"x": np.random.default_rng(0).standard_normal((3, 256, 128)).astype(np.float32)}
    ort_backend = OnnxruntimeBackend(["CPUExecutionProvider"])
    here = ort_backend.execute_session(ort_backend.session(model.SerializeToString()), feeds)
    forked = _ForkedReference(ort_backend)
    there = forked.execute_session(forked.session(model.SerializeToString()), feeds)
    assert there.record == here.record
    assert there.outputs["ys"].shape == (256, 3, 128)
    assert there.outputs["ys"].tobytes() == here.outputs["ys"].tobytes()

    calls = _run_forked_calls(monkeypatch)
    report = check(model, inputs=feeds)
    assert report.passed and len(calls) == 1
    assert report.comparisons[0].expected.startswith("onnxruntime on the original model (")
    body = helper.make_graph([helper.make_node("Identity", ["s"], ["s_out"])], "body",
                             [_vi("s", [4]), _vi("sx", [4])], [_vi("s_out", [4])])
    states_only = helper.make_model(helper.make_graph(
        [helper.make_node("Scan", ["init", "x"], ["final"], body=body, num_scan_inputs=1)],
        "g", [_vi("init", [4]), _vi("x", [3, 4])], [_vi("final", [4])]),
        opset_imports=[helper.make_opsetid("", 18)], ir_version=9)
    assert check(states_only).passed and len(calls) == 1


def _nested(scan_outputs: bool) -> onnx.ModelProto:
    """A Scan in an If's branch in a Loop's body: with ``scan_outputs``, of x's rows passed
    on (scan output ys); else of state s alone (s = s, for each row)."""
    states = [] if scan_outputs else ["s"]
    body = helper.make_graph(
        [helper.make_node("Identity", ["s" if states else "sx"], ["y"])], "body",
        [*[_vi(n, [3]) for n in states], _vi("sx", [3])], [_vi("y", None)])
    scan = helper.make_node("Scan", [*states, "x"], ["ys"], body=body, num_scan_inputs=1)
    then = helper.make_graph([scan], "then", [], [_vi("ys", None)])
    other = helper.make_graph([helper.make_node("Identity", ["x"], ["z"])], "else", [],
                              [_vi("z", None)])
    loop_body = helper.make_graph(
        [helper.make_node("If", ["c"], ["r"], then_branch=then, else_branch=other),
         helper.make_node("Identity", ["c"], ["c_out"])],
        "loop", [_vi("i", [], TensorProto.INT64), _vi("c", [], TensorProto.BOOL)],
        [_vi("c_out", [], TensorProto.BOOL), _vi("r", None)])
    graph = helper.make_graph(
        [helper.make_node("Loop", ["m", "go"], ["rs"], body=loop_body)], "g",
        [_vi("m", [], TensorProto.INT64), _vi("go", [], TensorProto.BOOL), _vi("x", [2, 3]),
         *[_vi(n, [3]) for n in states]],
        [_vi("rs", None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 9
    return model


def test_a_scan_making_scan_outputs_in_a_loop_body_runs_its_reference_in_a_child() -> None:
    """A Scan two subgraphs deep is found; one with state variables only is not, nor a
    model without control flow."""
    from dmlgraph.parity import _scans_out

    assert _scans_out(dmlgraph.load(_nested(True)))
    assert not _scans_out(dmlgraph.load(_nested(False)))
    assert _scans_out(dmlgraph.load(_scan_model(second=False)))
    assert not _scans_out(dmlgraph.load(_plain()))


def _plain() -> onnx.ModelProto:
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                              [_vi("x", [2])], [_vi("y", [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 9
    return model


def test_onnx_reference_is_the_reference_where_onnxruntime_dies(monkeypatch) -> None:
    """Where onnxruntime dies running the reference and onnx.reference can run the model
    (along axis 0; no such model of onnxruntime 1.32's was found, so the child is made to die
    of SIGFPE as onnxruntime does), the comparison is against onnx.reference, saying why."""
    import os
    import signal

    from backends.base import can_fork
    from backends.onnxruntime import OnnxruntimeBackend
    from dmlgraph.parity import Verdict, check

    if not can_fork():
        pytest.skip("no fork on this platform")
    parent = os.getpid()
    real = OnnxruntimeBackend.execute_session

    def dies(self, session, feeds, where="<model>"):
        if os.getpid() == parent:  # never this process: the reference runs in a child
            raise AssertionError("the reference ran in check's own process")
        os.kill(os.getpid(), signal.SIGFPE)
        return real(self, session, feeds, where)

    monkeypatch.setattr(OnnxruntimeBackend, "execute_session", dies)
    report = check(_stacked([3, 4], 0))
    (comparison,) = report.comparisons
    assert comparison.expected == (
        "onnx.reference on the original model (onnxruntime cannot run it: it died of SIGFPE "
        "(signal 8) on it (as onnxruntime 1.32 does on some Scans making empty scan outputs))")
    assert [o.verdict for o in comparison.outputs] == [Verdict.PASS]


def test_an_onnxruntime_error_in_the_child_is_the_error_it_is_in_process(monkeypatch) -> None:
    """Other onnxruntime failures come back from the child as they are raised in process
    (the fallbacks of ``_against_reference`` read their words), an exception that does not
    unpickle by its words kept; ``run_forked`` hands back large results and signals."""
    import os
    import signal

    from backends.base import BackendError, ChildKilled, SizeMismatch, can_fork, run_forked
    from backends.onnxruntime import OnnxruntimeBackend
    from dmlgraph import parity
    from dmlgraph.parity import check

    if not can_fork():
        pytest.skip("no fork on this platform")

    def fails(self, session, feeds, where="<model>"):
        raise BackendError(f"{where}: onnxruntime fails: RuntimeException: node 'scan' broke")

    monkeypatch.setattr(OnnxruntimeBackend, "execute_session", fails)
    model = _stacked([3, 4], 1)
    with pytest.raises(dmlgraph.DmlgraphError) as forked:
        check(model)
    monkeypatch.setattr(parity, "_scans_out", lambda graph: False)
    with pytest.raises(dmlgraph.DmlgraphError) as here:
        check(model)
    assert type(forked.value) is type(here.value) and str(forked.value) == str(here.value)
    assert "node 'scan' broke" in str(here.value)

    def mismatch():
        raise SizeMismatch("t: made float32[2]", "t", "node 'n'", (np.dtype(np.float32), (2,)),
                           (np.dtype(np.float32), (3,)))

    with pytest.raises(BackendError, match=r"^t: made float32\[2\]$"):
        run_forked(mismatch)
    big = run_forked(lambda: np.arange(1 << 21, dtype=np.int64))
    assert np.array_equal(big, np.arange(1 << 21, dtype=np.int64))
    with pytest.raises(ChildKilled, match=r"died of SIGSEGV \(signal 11\)"):
        run_forked(lambda: os.kill(os.getpid(), signal.SIGSEGV))


# ------------------------------------------------ Scan-8 on onnx.reference (--fallback reference)
def _scan_8(states: int, scans: int, *, lens: bool, directions=None) -> onnx.ModelProto:
    """An opset-8 Scan (batch axis 0, scan axis 1) of ``scans`` inputs x0.. [B, T, 3] with
    ``states`` state variables s0.. [B, 3]: the body adds every slice to each state (s1 then
    doubled) and makes two scan outputs, the first state times the last slice and the first
    slice as it came. ``lens``: sequence_lens L is given."""
    adds = [helper.make_node("Sum", [f"s{i}", *[f"x{k}" for k in range(scans)]], [f"t{i}"])
            for i in range(states)]
    if states > 1:
        adds.append(helper.make_node("Add", ["t1", "t1"], ["u1"]))
    outs = ["t0", *(["u1"] if states > 1 else [])]
    nodes = [*adds, helper.make_node("Mul", ["t0", f"x{scans - 1}"], ["o0"]),
             helper.make_node("Identity", ["x0"], ["o1"])]
    body = helper.make_graph(
        nodes, "body", [_vi(f"s{i}", [3]) for i in range(states)]
        + [_vi(f"x{k}", [3]) for k in range(scans)],
        [_vi(n, [3]) for n in (*outs, "o0", "o1")])
    attrs = {} if directions is None else {"directions": directions}
    inputs = ["L" if lens else "", *[f"i{i}" for i in range(states)],
              *[f"X{k}" for k in range(scans)]]
    outputs = [*[f"S{i}" for i in range(states)], "O0", "O1"]
    graph = helper.make_graph(
        [helper.make_node("Scan", inputs, outputs, name="scan8", body=body,
                          num_scan_inputs=scans, **attrs)],
        "m", [*([_vi("L", [None], TensorProto.INT64)] if lens else []),
              *[_vi(f"i{i}", [None, 3]) for i in range(states)],
              *[_vi(f"X{k}", [None, None, 3]) for k in range(scans)]],
        [_vi(n, None) for n in outputs])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 8)], ir_version=4)


def _scan_8_feeds(states: int, scans: int, batch: int, lengths=None) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(batch * 10 + scans)
    feeds = {f"i{i}": rng.standard_normal((batch, 3)).astype(np.float32)
             for i in range(states)}
    feeds |= {f"X{k}": rng.standard_normal((batch, 4, 3)).astype(np.float32)
              for k in range(scans)}
    return feeds if lengths is None else {"L": np.array(lengths, np.int64), **feeds}


def _on_reference(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    result = get_backend("numpy", fallback="reference").execute(
        lower(dmlgraph.load(model), "6_4"), feeds)
    (record,) = result.record.nodes
    assert record.engine == "onnx.reference"
    return [result.outputs[o.name] for o in model.graph.output]


@pytest.mark.parametrize("states, scans, batch, directions, lengths", [
    (1, 1, 2, None, None),
    (2, 1, 3, [1], None),
    (1, 2, 2, [0, 1], None),
    (2, 2, 3, [1, 0], [4, 2, 3]),  # shorter sequences: their scan outputs end in zeros
    (1, 1, 2, [1], [1, 4]),
])
def test_a_scan_8_on_onnx_reference_is_onnxruntime_s(states, scans, batch, directions, lengths,
                                                     onnx_run) -> None:
    """onnx.reference implements Scan from version 9: a Scan-8 (sequence_lens first, a batch
    axis, ``directions``) under --fallback reference failed ("x and y have different dtype",
    or "Issues with types"). Now each batch entry runs its own loop, reversed where
    directions says 1, its short sequence's outputs padded with zeros, as onnxruntime runs
    it, bit for bit."""
    model = _scan_8(states, scans, lens=lengths is not None, directions=directions)
    feeds = _scan_8_feeds(states, scans, batch, lengths)
    want = onnx_run(model, feeds)
    got = _on_reference(model, feeds)
    for name, w, g in zip([o.name for o in model.graph.output], want, got):
        assert g.shape == w.shape and g.tobytes() == w.tobytes(), name
    if lengths is not None:
        assert not got[-1][1, lengths[1]:].any()


def _looped_scan_8(lens: bool) -> onnx.ModelProto:
    """``_scan_8(1, 1)`` inside the body of a Loop of neither trip count nor condition
    (which the backend runs whole on the fallback), its state the Loop's carried value, the
    body stopping after one iteration."""
    inner = _scan_8(1, 1, lens=lens)
    scan = onnx.NodeProto()
    scan.CopyFrom(inner.graph.node[0])
    scan.input[1] = "v"
    stop = helper.make_node("Constant", [], ["stop"],
                            value=numpy_helper.from_array(np.array(False), "s"))
    body = helper.make_graph(
        [scan, stop], "body", [_vi("it", [], TensorProto.INT64),
                               _vi("c", [], TensorProto.BOOL), _vi("v", None)],
        [_vi("stop", [], TensorProto.BOOL), _vi("S0", None)])
    graph = helper.make_graph(
        [helper.make_node("Loop", ["", "", "i0"], ["V"], name="loop", body=body)],
        "m", list(inner.graph.input), [_vi("V", None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 8)], ir_version=4)


def test_a_scan_8_inside_a_node_run_whole_is_watched_as_a_top_level_one() -> None:
    """A Scan-8 in a Loop body the fallback runs whole: its sequence length of 0 and its
    no step (empty scan inputs, sequence_lens left out) went unnoted, as only the segment's
    own nodes were watched (``check`` compared onnxruntime's uninitialized final states, and
    onnxruntime's failure gave no hint of --fallback reference). Now the Loop's record
    carries the Scan-8's note, read from the values the segment is fed."""
    lowered = lower(dmlgraph.load(_looped_scan_8(True)), "6_4")
    feeds = _scan_8_feeds(1, 1, 2, [0, 4])
    result = get_backend("numpy", fallback="reference").execute(lowered, feeds)
    (record,) = result.record.nodes
    assert any("holds a sequence length of 0" in note for note in record.notes)
    with pytest.raises(BackendError, match="node 'loop' \\(Loop\\) holds a Scan-8 that is a "
                       "known divergence onnx.reference runs as ONNX says: --fallback reference"):
        get_backend("numpy").execute(lowered, feeds)
    lowered = lower(dmlgraph.load(_looped_scan_8(False)), "6_4")
    feeds = {**_scan_8_feeds(1, 1, 2), "X0": np.zeros((2, 0, 3), np.float32)}
    for fallback in ("reference", "onnxruntime"):
        result = get_backend("numpy", fallback=fallback).execute(lowered, feeds)
        (record,) = result.record.nodes
        assert any("a Scan-8 of empty scan inputs" in note for note in record.notes), fallback


def test_a_scan_8_s_lengths_of_declared_sizes_only_are_not_read_as_zeros() -> None:
    """A Scan-8 whose sequence_lens (all of them non-zero) is made by a node, its sizes
    declared or inferred, its values not at hand: the hint and the held note read a stand-in
    of those sizes, zeros, as its lengths, and said "sequence_lens [0, 0] holds a sequence
    length of 0" (a Loop's record on --fallback reference; onnxruntime's failure sent the
    user to --fallback reference). A stand-in's values are not known."""
    from backends.numpy.fallback import reference_hint

    model = _looped_scan_8(True)
    body = model.graph.node[0].attribute[0].g
    next(n for n in body.node if n.op_type == "Scan").input[0] = "lens"
    body.node.insert(0, helper.make_node("Identity", ["L"], ["lens"]))
    body.value_info.append(_vi("lens", [2], TensorProto.INT64))
    feeds = _scan_8_feeds(1, 1, 2, [3, 4])
    result = get_backend("numpy", fallback="reference").execute(
        lower(dmlgraph.load(model), "6_4"), feeds)
    assert not any("sequence length of 0" in n for r in result.record.nodes for n in r.notes)
    model = _scan_8(1, 1, lens=True)
    model.graph.node[0].input[0] = "lens"
    model.graph.node.insert(0, helper.make_node("Identity", ["L"], ["lens"]))
    model.graph.input[0].CopyFrom(_vi("L", [2], TensorProto.INT64))
    assert reference_hint(dmlgraph.load(model), {}) == ""


def test_a_scan_8_of_no_step_keeps_its_initial_states_as_onnx_says() -> None:
    """A sequence of length 0 (allowed by ONNX; onnxruntime refuses such a sequence_lens
    entry, and where every sequence is empty it makes zeros of the final states): its final
    states are its initial ones and its scan outputs all padding; empty scan inputs make
    scan outputs [B, 0, 3], their element shape the body's."""
    model = _scan_8(1, 1, lens=True)
    feeds = _scan_8_feeds(1, 1, 2, [0, 4])
    final, first, _ = _on_reference(model, feeds)
    assert np.array_equal(final[0], feeds["i0"][0])
    state = feeds["i0"][1]
    for row in feeds["X0"][1]:  # step by step, as the body adds
        state = state + row
    assert np.array_equal(final[1], state)
    assert not first[0].any() and first.shape == (2, 4, 3)
    feeds = {"i0": feeds["i0"], "X0": np.zeros((2, 0, 3), np.float32)}
    final, first, second = _on_reference(_scan_8(1, 1, lens=False), feeds)
    assert np.array_equal(final, feeds["i0"])
    assert first.shape == second.shape == (2, 0, 3) and first.dtype == np.float32


@pytest.mark.parametrize("feeds, says", [
    ({"L": [5, 4]}, "sequence_lens is [5, 4]; a Scan-8's holds one length per batch entry "
                    "(2), each from 0 to its scan inputs' length 4 (axis 1)"),
    ({"L": [4]}, "sequence_lens is [4]; a Scan-8's holds one length per batch entry (2)"),
    ({"i0": np.zeros((3, 3), np.float32)},
     "its inputs' batch sizes (axis 0) are [3, 2] and its scan inputs' lengths (axis 1) [4]; "
     "a Scan-8's inputs share one batch size"),
])
def test_what_scan_8_forbids_is_one_error_naming_the_node(feeds, says, tmp_path,
                                                          capsys) -> None:
    """Inputs onnxruntime refuses (a length past the scan inputs', a batch size of two
    values): one line, exit 2, naming the node."""
    given = _scan_8_feeds(1, 1, 2, [4, 4])
    given |= {k: np.asarray(v, given[k].dtype) for k, v in feeds.items()}
    model_path, inputs = tmp_path / "m.onnx", tmp_path / "in.npz"
    onnx.save(_scan_8(1, 1, lens=True), model_path)
    np.savez(inputs, **given)
    assert main(["run", str(model_path), "--fallback", "reference", "--inputs",
                 str(inputs)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("dmlgraph: error: ") and err.count("\n") == 1, err
    assert "onnx.reference fails on node(s) scan8 (Scan): ValueError: " + says in err


@pytest.mark.parametrize("directions, says", [
    ([2], "directions is [2]; a direction is 0 (forward) or 1 (reverse)"),
    ([0, 1], "directions has 2 entries; it has 1 scan input, one entry each"),
])
def test_a_scan_8_s_directions_onnxruntime_refuses_are_refused_at_load(directions, says,
                                                                       onnx_run) -> None:
    """onnxruntime refuses them at load ("Invalid values in 'directions'"); dmlgraph loaded
    them and failed when run, on either fallback in its own words."""
    model = _scan_8(1, 1, lens=False, directions=directions)
    with pytest.raises(Exception, match="directions"):
        onnx_run(model, _scan_8_feeds(1, 1, 2))
    with pytest.raises(ModelValidationError, match=re.escape(f"node 'scan8' (Scan, #0): {says}")):
        dmlgraph.load(model)


def test_check_compares_a_scan_8_with_onnx_reference_where_onnxruntime_cannot_run_it(
    monkeypatch,
) -> None:
    """Where onnxruntime cannot run a model (``providers.CANNOT_RUN``; no opset-8 model of
    onnxruntime 1.32's was found, so its session is made to refuse as it refuses an int16
    Pad), ``check`` compares with onnx.reference: of a Scan-8, it failed too."""
    from backends.onnxruntime import OnnxruntimeBackend
    from backends.onnxruntime.providers import refused
    from dmlgraph.parity import Verdict, check

    def refuses(self, model, where="", *, optimize=True):
        raise refused(where, "NOT_IMPLEMENTED : Could not find an implementation for "
                             "Scan(8) node with name 'scan8'")

    monkeypatch.setattr(OnnxruntimeBackend, "session", refuses)
    model = _scan_8(2, 2, lens=True, directions=[1, 0])
    report = check(model, inputs=_scan_8_feeds(2, 2, 3, [4, 2, 3]), fallback="reference")
    (comparison,) = report.comparisons
    assert comparison.expected.startswith(
        "onnx.reference on the original model (onnxruntime cannot run it: ")
    assert [o.verdict for o in comparison.outputs] == [Verdict.PASS] * 4


def test_run_on_the_reference_fallback_writes_onnxruntime_s_scan_8_outputs(tmp_path,
                                                                            onnx_run) -> None:
    """`dmlgraph run --backend numpy --fallback reference` of a Scan-8 exited 2 with
    onnx.reference's "Issues with types"; now it writes onnxruntime's outputs."""
    model = _scan_8(2, 1, lens=True, directions=[1])
    feeds = _scan_8_feeds(2, 1, 2, [3, 4])
    model_path, inputs, out = tmp_path / "m.onnx", tmp_path / "in.npz", tmp_path / "out.npz"
    onnx.save(model, model_path)
    np.savez(inputs, **feeds)
    assert main(["run", str(model_path), "--backend", "numpy", "--fallback", "reference",
                 "--inputs", str(inputs), "-o", str(out)]) == 0
    saved = np.load(out)
    for output, want in zip(model.graph.output, onnx_run(model, feeds)):
        assert np.array_equal(saved[output.name], want), output.name


def test_a_scan_8_body_reading_a_graph_output_runs_on_the_onnxruntime_fallback(onnx_run) -> None:
    """A Scan-8's body reading a tensor the graph also declares as an output, of sizes
    inference left open (lowered, so the fallback's segment takes it as an input): the
    segment declared it with no shape (its rank unsure: a declared output's), and
    onnxruntime's Scan refused the body ("Subgraph must have the shape set for all
    outputs"), where it runs the model itself. A segment holding a Scan keeps its inputs'
    ranks (found by tests/fuzz/graph_fuzz.py, seed 71892)."""
    body = helper.make_graph(
        [helper.make_node("Transpose", ["cut"], ["turned"], perm=[1, 2, 0])],
        "body", [_vi("row", [4])], [_vi("turned", None)])
    graph = helper.make_graph(
        [helper.make_node("Slice", ["x"], ["cut"], starts=[0], ends=[2], axes=[2]),
         helper.make_node("Scan", ["", "x"], ["stacked"], name="scan8", body=body,
                          num_scan_inputs=1)],
        "m", [_vi("x", ["batch", 3, 4])], [_vi("cut", [2, 3, 2]), _vi("stacked", None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 8)], ir_version=4)
    feeds = {"x": np.arange(24, dtype=np.float32).reshape(2, 3, 4)}
    want = onnx_run(model, feeds)
    got = get_backend("numpy").run(lower(dmlgraph.load(model), "6_4"), feeds)
    for output, w in zip(("cut", "stacked"), want):
        assert got[output].shape == w.shape and np.array_equal(got[output], w), output


def _after_scan_8(tail: onnx.NodeProto, static: bool) -> onnx.ModelProto:
    """A Scan-8 (run whole on the fallback: onnxruntime may make its output's rank otherwise
    than onnx infers, [2, 4, 3]) whose scan output O0 feeds ``tail``, making ``p``;
    ``static``: its inputs declared [2, 3] and [2, 4, 3] (else batch and length named)."""
    model = _scan_8(1, 1, lens=False)
    model.graph.node.append(tail)
    model.graph.output.append(_vi("p", None))
    if static:
        for value, dims in zip(model.graph.input, ([2, 3], [2, 4, 3])):
            value.CopyFrom(_vi(value.name, dims))
    return model


@pytest.mark.parametrize(("tail", "says"), [
    (helper.make_node("Pad", ["O0"], ["p"], pads=[0, 1, 0, 0, 0, 1, 0, 0]),
     "pads has 8 values for data of rank 3; it must have 2 * rank"),
    (helper.make_node("Pad", ["O0"], ["p"], pads=[0, 1, 0, 1]),
     "pads has 4 values for data of rank 3; it must have 2 * rank"),
    (helper.make_node("Slice", ["O0"], ["p"], starts=[0], ends=[1], axes=[3]),
     "out of range"),
    (helper.make_node("Slice", ["O0"], ["p"], starts=[0, 0, 0, 0], ends=[1, 1, 1, 1]),
     "starts and ends have 4 values for data of rank 3"),
])
@pytest.mark.parametrize("fallback", ["onnxruntime", "reference"])
@pytest.mark.parametrize("static", [True, False])
def test_a_rule_broken_by_a_rank_onnxruntime_may_make_otherwise_is_no_silent_result(
    tail, says, fallback, static, tmp_path, capsys
) -> None:
    """A Slice or Pad reading a tensor whose rank import could not trust (a Scan-8's
    output) was not checked against its op's rules at import, and lowering read its
    parameters by the rank onnx infers: 8 pads for rank 3 gave a [2, 5, 4] result (the last
    two dropped), 4 pads, an axis 3 or 4 starts raised IndexError or TypeError from deep
    inside lowering. The rule is now checked by that rank when the node is lowered, and
    broken there, the node is left to the fallback, which refuses it (onnxruntime refuses
    the model too)."""
    model = _after_scan_8(tail, static)
    with pytest.raises(Exception):  # the independent oracle: onnxruntime refuses it
        import onnxruntime as ort
        ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(
            None, _scan_8_feeds(1, 1, 2))
    lowered = lower(dmlgraph.load(model), "6_4")
    (report,) = [r for r in lowered.report() if r.op_type == tail.op_type]
    assert report.status.value == "fallback"
    if static:  # lowered at import, by the rank onnx infers
        assert says in " ".join(report.notes)
    path, inputs = tmp_path / "m.onnx", tmp_path / "in.npz"
    onnx.save(model, path)
    np.savez(inputs, **_scan_8_feeds(1, 1, 2))
    assert main(["run", str(path), "--fallback", fallback, "--inputs", str(inputs)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "error:" in err


def _grown_by_prelu(
    fed: str, batched: bool = False
) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """A Scan-16 whose input ``fed`` ("state" or "scanned") a PRelu makes of a slope with one
    more axis than X: onnxruntime's PRelu broadcasts both ways (ONNX's broadcasts the slope to
    X), so it arrives of rank one more than onnx infers. The body is typed but unshaped: it
    adds the scanned row to a grown state and makes the sum its scan output, or passes a
    grown row on as its scan output (the state kept). ``batched``: a Scan-8 of one batch
    entry (each shape led by 1, sequence_lens left out; the grown axis of size 1)."""
    def typed(name: str) -> onnx.ValueInfoProto:
        value = onnx.ValueInfoProto(name=name)
        value.type.tensor_type.elem_type = FLOAT
        return value

    state = fed == "state"
    nodes = ([helper.make_node("Add", ["s", "x"], ["s2"]),
              helper.make_node("Identity", ["s2"], ["o"])] if state else
             [helper.make_node("Identity", ["s"], ["s2"]),
              helper.make_node("Identity", ["x"], ["o"])])
    body = helper.make_graph(nodes, "body", [typed("s"), typed("x")], [typed("s2"), typed("o")])
    lead = [1] if batched else []
    x_shape = lead + ([3] if state else [4, 3])
    slope_shape = [1 if batched else 2, *x_shape]
    other = ("rows", lead + [4, 3]) if state else ("init", lead + [3])
    scan_inputs = [*([""] if batched else []), *(["P", "rows"] if state else ["init", "P"])]
    model = helper.make_model(helper.make_graph(
        [helper.make_node("PRelu", ["X", "slope"], ["P"], name="prelu"),
         helper.make_node("Scan", scan_inputs, ["S", "O"], body=body, num_scan_inputs=1,
                          name="scan")],
        "g", [_vi("X", x_shape), _vi(*other)], [_vi("S", None), _vi("O", None)],
        [numpy_helper.from_array(np.full(slope_shape, 0.5, np.float32), "slope")]),
        opset_imports=[helper.make_opsetid("", 8 if batched else 16)])
    model.ir_version = 4 if batched else 8
    x = -np.ones(x_shape, np.float32)
    return model, {"X": x, other[0]: np.ones(other[1], np.float32)}


@pytest.mark.parametrize("fed", ["state", "scanned"])
@pytest.mark.parametrize("fallback", ["onnxruntime", "reference"])
def test_a_scan_input_of_another_rank_than_inferred_is_refused_as_onnxruntime_fails(
    fed: str, fallback: str, onnx_run
) -> None:
    """onnxruntime sizes the body's outputs by onnx's inference ([3]) and fails on the [2, 3]
    its own PRelu made; the run exited 0 with a state [2, 3] and rows [4, 2, 3], the body
    declaring no shape to hold them to."""
    model, feeds = _grown_by_prelu(fed)
    with pytest.raises(Exception, match="computed output shape for this run"):
        onnx_run(model, feeds)
    rank = 1 if fed == "state" else 2
    with pytest.raises(dmlgraph.DmlgraphError, match=re.escape(
            f"node 'scan' (Scan): its input {0 if fed == 'state' else 1} ('P') arrives "
            f"float32[2, {'' if fed == 'state' else '4, '}3], where onnx's inference gives it "
            f"rank {rank}: onnxruntime 1.32 sizes")):
        get_backend("numpy", fallback=fallback).run(lower(dmlgraph.load(model), "6_4"), feeds)


@pytest.mark.parametrize("fed", ["state", "scanned"])
def test_a_scan_8_input_of_another_rank_than_inferred_is_refused_as_onnxruntime_fails(
    fed: str, onnx_run
) -> None:
    """The same of a Scan-8, which the fallback runs whole with the PRelu: onnxruntime fails
    as on a Scan-16 ("computed output shape for this run"); on --fallback reference the run
    exited 0, a state [1, 1, 3] and rows [1, 4, 1, 3] (onnx.reference's PRelu broadcasts both
    ways too). ONNX allows no such slope, and onnxruntime runs no such Scan: one error."""
    model, feeds = _grown_by_prelu(fed, batched=True)
    with pytest.raises(Exception, match="computed output shape for this run"):
        onnx_run(model, feeds)
    with pytest.raises(dmlgraph.DmlgraphError, match=re.escape(
            f"node 'scan' (Scan): its input {1 if fed == 'state' else 2} ('P') arrives "
            f"float32[1, 1, {'' if fed == 'state' else '4, '}3], where onnx's inference gives "
            f"it rank {2 if fed == 'state' else 3}: onnxruntime 1.32 sizes")):
        get_backend("numpy", fallback="reference").run(lower(dmlgraph.load(model), "6_4"), feeds)
