"""Control flow (If, Loop, Scan): imported whole, the main graph's Slice/Concat/Pad lowered
around it; the NumPy backend runs If and Loop with their subgraphs lowered when they run (Scan
too: ``test_scan.py``). Oracle: onnxruntime on the original model.

Before, a model with any subgraph was refused at load ("dmlgraph does not import control
flow"), whatever else it held."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import dmlgraph
from backends import get_backend
from backends.base import BackendError
from dmlgraph import folding
from dmlgraph.cli import main
from dmlgraph.errors import ModelValidationError
from dmlgraph.ir import Subgraph, implicit_inputs
from dmlgraph.subgraphs import outer_names, subgraph_of
from lowering import Status, lower

FLOAT, INT64, BOOL = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL


def _i64(name: str, values) -> onnx.TensorProto:
    return numpy_helper.from_array(np.array(values, np.int64), name)


def _vi(name: str, elem: int, shape) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem, shape)


def _model(nodes, inputs, outputs, initializers=(), *, checked=True) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "cf", inputs, outputs, list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 9
    if checked:  # (onnx's checker wants a shape field on every graph output)
        onnx.checker.check_model(model)
    return model


def _ort(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(model.SerializeToString(), options,
                                   providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def _if_model() -> onnx.ModelProto:
    """A Slice lowered ahead of an If whose branches read its output by name: a Concat of
    it, or a reflect Pad of it; a Concat of the If's result after it."""
    then_branch = helper.make_graph(
        [helper.make_node("Concat", ["s", "s"], ["t"], axis=1)], "then", [],
        [_vi("t", FLOAT, [None, None])])
    else_branch = helper.make_graph(
        [helper.make_node("Pad", ["s", "inner_pads"], ["e"], mode="reflect")], "else", [],
        [_vi("e", FLOAT, [None, None])], [_i64("inner_pads", [0, 1, 0, 1])])
    return _model(
        [helper.make_node("Slice", ["x", "st", "en", "ax"], ["s"], name="slice"),
         helper.make_node("If", ["c"], ["r"], name="branch", then_branch=then_branch,
                          else_branch=else_branch),
         helper.make_node("Concat", ["r", "r"], ["y"], axis=0, name="cat")],
        [_vi("x", FLOAT, [2, 6]), _vi("c", BOOL, [])],
        [_vi("y", FLOAT, [None, None])],
        [_i64("st", [1]), _i64("en", [5]), _i64("ax", [1])],
    )


def _loop_model() -> onnx.ModelProto:
    """A Loop whose body slices the graph input x by the main graph's initializers and
    concatenates the piece to what it carries; an edge Pad of its result after it."""
    body = helper.make_graph(
        [helper.make_node("Slice", ["x", "st", "en", "ax"], ["piece"]),
         helper.make_node("Concat", ["acc", "piece"], ["acc_out"], axis=0),
         helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Identity", ["piece"], ["scan_out"])],
        "body",
        [_vi("i", INT64, []), _vi("cond_in", BOOL, []), _vi("acc", FLOAT, [None, None])],
        [_vi("cond_out", BOOL, []), _vi("acc_out", FLOAT, [None, None]),
         _vi("scan_out", FLOAT, [None, None])])
    return _model(
        [helper.make_node("Slice", ["x", "st", "en", "ax"], ["init"], name="first"),
         helper.make_node("Loop", ["trip", "", "init"], ["acc_final", "scans"], name="loop",
                          body=body),
         helper.make_node("Pad", ["acc_final", "pads"], ["y"], mode="edge", name="pad")],
        [_vi("x", FLOAT, [2, 6])],
        [_vi("y", FLOAT, [None, None]), _vi("scans", FLOAT, [None, None, None])],
        [_i64("st", [1]), _i64("en", [5]), _i64("ax", [1]), _i64("trip", 3),
         _i64("pads", [1, 0, 0, 2])],
    )


X = np.arange(12, dtype=np.float32).reshape(2, 6)


@pytest.mark.parametrize("cond", [True, False])
@pytest.mark.parametrize("fallback", ["onnxruntime", "reference"])
def test_an_if_reading_a_lowered_slice_runs_as_onnxruntime_runs_it(cond, fallback) -> None:
    model = _if_model()
    feeds = {"x": X, "c": np.array(cond)}
    (want,) = _ort(model, feeds)
    graph = dmlgraph.load(model)
    (branch,) = graph.find_nodes("If")
    assert branch.inputs == ("c", "s")  # its explicit input, then what its branches read
    lowered = lower(graph, "6_4")
    rows = {r.name: r for r in lowered.report()}
    assert rows["slice"].status is Status.LOWERED and rows["slice"].dml_ops == (
        "DML_OPERATOR_SLICE",)
    assert rows["branch"].status is Status.FALLBACK
    assert any(note.startswith("its subgraphs hold 1 Concat, 1 Pad: the numpy backend lowers "
                               "them when it runs the branch taken")
               for note in rows["branch"].notes)
    result = get_backend("numpy", fallback=fallback).execute(lowered, feeds)
    assert np.array_equal(result.outputs["y"], want)
    engines = {(run.node, run.op): run for run in result.record.nodes}
    assert engines["cat", "DML_OPERATOR_JOIN"].engine == "numpy DirectML emulator"
    # the branch taken ran lowered, the node's own Concat or Pad as a DirectML operator
    taken, op = (
        ("then_branch", "DML_OPERATOR_JOIN") if cond else ("else_branch", "DML_OPERATOR_PADDING")
    )
    (ran,) = [r for r in result.record.nodes if r.via.startswith(f"If 'branch' {taken}")]
    assert ran.op == op and ran.engine == "numpy DirectML emulator"
    assert ran.node_id == branch.id
    report = dmlgraph.check(model, inputs=feeds, cross_check=True)
    assert report.passed and len(report.comparisons) == 2


def test_a_loop_reading_the_main_graph_s_tensors_runs_as_onnxruntime_runs_it() -> None:
    """The body reads x and the initializers st, en, ax by name. A fallback segment made of
    the Loop declared only its explicit inputs, and onnxruntime refused the segment ("input
    'st' ... must be topologically sorted"): they are its implicit inputs now."""
    model = _loop_model()
    want = _ort(model, {"x": X})
    graph = dmlgraph.load(model)
    (loop,) = graph.find_nodes("Loop")
    assert loop.inputs == ("trip", "", "init", "x", "st", "en", "ax")
    got = get_backend("numpy").run(lower(graph, "6_4"), {"x": X})
    assert np.array_equal(got["y"], want[0]) and np.array_equal(got["scans"], want[1])
    assert dmlgraph.check(model, inputs={"x": X}).passed


@pytest.mark.parametrize("cond", [True, False])
def test_a_subgraph_reads_the_tensor_an_eliminated_slice_became(cond) -> None:
    """A Slice of everything is eliminated: its output becomes its input, x, in every
    reader, the If's implicit input too. The branches still read 's' by name: written back,
    they read 'x'."""
    then_branch = helper.make_graph(
        [helper.make_node("Pad", ["s", "inner"], ["t"], mode="reflect")], "then", [],
        [_vi("t", FLOAT, [None, None])], [_i64("inner", [0, 1, 0, 1])])
    else_branch = helper.make_graph(
        [helper.make_node("Identity", ["s"], ["e"])], "else", [],
        [_vi("e", FLOAT, [None, None])])
    model = _model(
        [helper.make_node("Slice", ["x", "st", "en", "ax"], ["s"], name="all"),
         helper.make_node("If", ["c"], ["r"], name="branch", then_branch=then_branch,
                          else_branch=else_branch)],
        [_vi("x", FLOAT, [2, 6]), _vi("c", BOOL, [])],
        [_vi("r", FLOAT, [None, None])],
        [_i64("st", [0]), _i64("en", [2**63 - 1]), _i64("ax", [1])],
    )
    feeds = {"x": X, "c": np.array(cond)}
    (want,) = _ort(model, feeds)
    lowered = lower(dmlgraph.load(model), "6_4")
    (branch,) = lowered.find_nodes("If")
    assert branch.inputs == ("c", "x") and "s" not in lowered.tensors
    assert np.array_equal(get_backend("numpy").run(lowered, feeds)["r"], want)
    assert dmlgraph.check(model, inputs=feeds, cross_check=True).passed


def test_a_scan_and_a_nested_subgraph_read_the_outermost_graph() -> None:
    """A Scan whose body holds an If whose branch reads the main graph's w: w is an implicit
    input of the Scan (the If's body names it two scopes down); the body's own state and
    scan input are not."""
    inner = helper.make_graph(
        [helper.make_node("Concat", ["row", "w"], ["joined"], axis=0)], "inner", [],
        [_vi("joined", FLOAT, [None])])
    other = helper.make_graph(
        [helper.make_node("Concat", ["w", "row"], ["joined2"], axis=0)], "other", [],
        [_vi("joined2", FLOAT, [None])])
    body = helper.make_graph(
        [helper.make_node("If", ["flag"], ["picked"], then_branch=inner, else_branch=other),
         helper.make_node("Identity", ["flag"], ["flag_out"])],
        "body", [_vi("flag", BOOL, []), _vi("row", FLOAT, [3])],
        [_vi("flag_out", BOOL, []), _vi("picked", FLOAT, [None])])
    model = _model(
        [helper.make_node("Scan", ["f", "x"], ["f_final", "ys"], name="scan", body=body,
                          num_scan_inputs=1),
         helper.make_node("Pad", ["ys", "pads"], ["y"], mode="constant", name="pad")],
        [_vi("x", FLOAT, [4, 3]), _vi("f", BOOL, [])],
        [_vi("y", FLOAT, [None, None]), _vi("f_final", BOOL, [])],
        [numpy_helper.from_array(np.array([9, 8], np.float32), "w"),
         _i64("pads", [0, 1, 0, 1])],
    )
    feeds = {"x": np.arange(12, dtype=np.float32).reshape(4, 3), "f": np.array(False)}
    want = _ort(model, feeds)
    graph = dmlgraph.load(model)
    (scan,) = graph.find_nodes("Scan")
    assert scan.inputs == ("f", "x", "w")
    got = get_backend("numpy").run(lower(graph, "6_4"), feeds)
    assert np.array_equal(got["y"], want[0]) and got["f_final"] == want[1]


def test_outer_names_leave_out_what_a_scope_defines() -> None:
    """A subgraph's own inputs, initializers and node outputs (before or after a nested
    subgraph reads them) are not the enclosing graph's; names read twice count once."""
    nested = helper.make_graph(
        [helper.make_node("Add", ["a", "local"], ["n_out"])], "nested", [],
        [_vi("n_out", FLOAT, [1])])
    graph = helper.make_graph(
        [helper.make_node("Mul", ["own_input", "outer_1"], ["local"]),
         helper.make_node("If", ["outer_2"], ["a_out"], then_branch=nested,
                          else_branch=nested),
         helper.make_node("Add", ["outer_1", "own_init"], ["b"])],
        "g", [_vi("own_input", FLOAT, [1])], [_vi("b", FLOAT, [1])],
        [numpy_helper.from_array(np.zeros(1, np.float32), "own_init")])
    assert outer_names(graph) == ["outer_1", "outer_2", "a"]
    sub = subgraph_of(graph)
    # the If's two branches are one graph, counted in each
    assert sub.outer == ("outer_1", "outer_2", "a")
    assert sub.ops == ("Mul", "If", "Add", "Add", "Add")
    assert sub == subgraph_of(graph) and hash(sub) == hash(subgraph_of(graph))
    op = dmlgraph.ir.OnnxOp("If", 16, attrs={"then_branch": sub, "else_branch": sub})
    assert op.holds_subgraphs and implicit_inputs(op) == ("outer_1", "outer_2", "a")
    assert not dmlgraph.ir.OnnxOp("Relu", 14).holds_subgraphs
    assert isinstance(op.attrs["then_branch"], Subgraph)


def test_control_flow_is_not_folded_and_says_why() -> None:
    """An If on a constant condition whose branches read constants computes the Pad's pads:
    onnx.reference would fold it, computing its subgraphs' Slices otherwise than the spec;
    it runs on the fallback, and the Pad, lowered when it runs, says why."""
    then_branch = helper.make_graph(
        [helper.make_node("Concat", ["k", "k"], ["t"], axis=0)], "then", [],
        [_vi("t", INT64, [None])])
    else_branch = helper.make_graph(
        [helper.make_node("Identity", ["k"], ["e"])], "else", [], [_vi("e", INT64, [None])])
    model = _model(
        [helper.make_node("If", ["c"], ["pads"], name="branch", then_branch=then_branch,
                          else_branch=else_branch),
         helper.make_node("Pad", ["x", "pads"], ["y"], name="pad")],
        [_vi("x", FLOAT, [2, 6])], [_vi("y", FLOAT, [None, None])],
        [_i64("k", [1, 2]), numpy_helper.from_array(np.array(True), "c")],
    )
    (want,) = _ort(model, {"x": X})
    lowered = lower(dmlgraph.load(model), "6_4")
    (row,) = [r for r in lowered.report() if r.name == "pad"]
    assert row.status is Status.FALLBACK
    assert any("node 'branch' (If) is control flow, which runs on the fallback (never folded)"
               in note for note in row.notes)
    assert np.array_equal(get_backend("numpy").run(lowered, {"x": X})["y"], want)


def test_the_cli_lowers_runs_checks_and_draws_a_model_with_control_flow(
    tmp_path, capsys
) -> None:
    path = tmp_path / "loop.onnx"
    onnx.save(_loop_model(), path)
    assert main(["lower", str(path)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert ("(and 1 control-flow node(s) holding more, listed; their subgraphs' lowering "
            "follows the table)") in out
    assert "its subgraphs hold 1 Concat, 1 Slice" in out
    assert main(["lower", str(path), "-o", str(tmp_path / "loop.json")]) == 0
    written = json.loads((tmp_path / "loop.json").read_text())
    assert [r["op_type"] for r in written["report"]] == ["Slice", "Loop", "Pad"]
    assert main(["check", str(path)]) == 0
    assert "parity holds" in capsys.readouterr().out
    assert main(["viz", str(path), "-o", str(tmp_path / "loop.html")]) == 0
    assert "Loop" in (tmp_path / "loop.html").read_text()


CONTROL_FLOW = Path(__file__).resolve().parent.parent / "models" / "control_flow"
with np.load(CONTROL_FLOW / "control_flow_io.npz") as _data:
    IO = {key: _data[key] for key in _data.files}
CASES = sorted({tuple(key.split("__")[:2]) for key in IO})


@pytest.mark.parametrize("model, case", CASES)
@pytest.mark.parametrize("level", ["6_4", "1_0"])
def test_torch_s_scripted_control_flow_computes_what_torch_does(model, case, level) -> None:
    """torch.jit.script exports (If on a tensor's sign, a Loop over a dynamic row count with
    an If inside): the lowered graph's outputs are torch's own, bit for bit (the models only
    move data), and ``check`` holds."""
    path = CONTROL_FLOW / f"{model}.onnx"
    x, want = IO[f"{model}__{case}__in__x"], IO[f"{model}__{case}__eager__y"]
    lowered = lower(dmlgraph.load(path), level)
    assert any(n.op_type in ("If", "Loop") for n in lowered.nodes)
    (y,) = get_backend("numpy").run(lowered, {"x": x}).values()
    assert y.shape == want.shape and np.array_equal(y, want)
    assert dmlgraph.check(path, feature_level=level, inputs={"x": x}).passed


def test_a_renamed_outer_read_is_not_captured_by_a_subgraph_s_own_name() -> None:
    """A Loop body whose carried input is named x, as the graph input is, reads s, a Slice
    of all of x that lowering eliminates (s becomes x). Written back, the body read x: its
    own carried value, not the graph input, and ``run`` gave zeros where onnxruntime gives
    multiples of 3 (a reviewer's reproducer). The body's own x is renamed first now."""
    body = helper.make_graph(
        [helper.make_node("Add", ["x", "s"], ["x_out"]),
         helper.make_node("Identity", ["cin"], ["cout"])],
        "body", [_vi("i", INT64, []), _vi("cin", BOOL, []), _vi("x", FLOAT, [2, 6])],
        [_vi("cout", BOOL, []), _vi("x_out", FLOAT, [2, 6])])
    model = _model(
        [helper.make_node("Slice", ["x", "z", "big", "ax"], ["s"], name="all"),
         helper.make_node("Loop", ["trip", "", "init"], ["y"], body=body, name="loop")],
        [_vi("x", FLOAT, [2, 6]), _vi("init", FLOAT, [2, 6])], [_vi("y", FLOAT, [2, 6])],
        [_i64("z", [0]), _i64("big", [2**62]), _i64("ax", [1]), _i64("trip", 3)],
    )
    feeds = {"x": X, "init": np.zeros((2, 6), np.float32)}
    (want,) = _ort(model, feeds)
    assert np.array_equal(want, 3 * X)
    lowered = lower(dmlgraph.load(model), "6_4")
    (loop,) = lowered.find_nodes("Loop")
    assert loop.inputs == ("trip", "", "init", "x")  # s became x
    assert np.array_equal(get_backend("numpy").run(lowered, feeds)["y"], want)
    assert dmlgraph.check(model, inputs=feeds, cross_check=True).passed


def test_rewritten_subgraphs_rename_only_what_reads_the_enclosing_graph() -> None:
    """``graph_proto``'s renaming, scope by scope: a nested If reads the outer s (renamed to
    x) and defines its own s (kept, and what reads it after keeps reading it); the body's
    own x, and a nested x, become fresh names."""
    from dmlgraph.subgraphs import graph_proto

    nested = helper.make_graph(
        [helper.make_node("Neg", ["s"], ["x"]),  # reads the outer s, defines an x
         helper.make_node("Identity", ["x"], ["n_out"])],
        "nested", [], [_vi("n_out", FLOAT, [1])])
    body = helper.make_graph(
        [helper.make_node("If", ["c"], ["from_if"], then_branch=nested, else_branch=nested),
         helper.make_node("Abs", ["x"], ["s"]),  # the body's own s from here on
         helper.make_node("Add", ["s", "from_if"], ["out"])],
        "body", [_vi("x", FLOAT, [1])], [_vi("out", FLOAT, [1])])
    written = graph_proto(subgraph_of(body), {"s": "x"})
    assert [v.name for v in written.input] == ["x__local"]
    if_node, abs_node, add_node = written.node
    then = next(a.g for a in if_node.attribute if a.name == "then_branch")
    (fresh,) = then.node[0].output  # each branch's x its own fresh name
    assert list(then.node[0].input) == ["x"] and fresh.startswith("x__local")
    assert fresh != "x__local" and list(then.node[1].input) == [fresh]
    assert list(abs_node.input) == ["x__local"] and list(abs_node.output) == ["s"]
    assert list(add_node.input) == ["s", "from_if"]


@pytest.mark.parametrize("consumer", ["Slice", "Concat"])
def test_an_axis_from_the_end_of_a_control_flow_output_stays_so(consumer) -> None:
    """An If branch declares its output [2, 6] and makes [1, 2, 6]: onnxruntime merges the
    two leniently and runs it. Axis -1 of the If's output was counted by onnx's rank 2 (axis
    1): the run lowered the graph again for the size that arrived, but along the wrong axis,
    silently (a reviewer's reproducer). A control-flow output's rank is unsure now
    (``folding._RANK_DIVERGENT_WHEN``): the axis stays -1."""
    then_branch = helper.make_graph(
        [helper.make_node("Unsqueeze", ["x", "zero"], ["t"])], "then", [],
        [_vi("t", FLOAT, [2, 6])])
    else_branch = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["e"])], "else", [], [_vi("e", FLOAT, [2, 6])])
    after = (helper.make_node("Slice", ["r", "st", "en", "ax"], ["y"], name="after")
             if consumer == "Slice" else
             helper.make_node("Concat", ["r", "r"], ["y"], axis=-1, name="after"))
    model = _model(
        [helper.make_node("If", ["c"], ["r"], then_branch=then_branch,
                          else_branch=else_branch, name="if"), after],
        [_vi("x", FLOAT, [2, 6]), _vi("c", BOOL, [])], [_vi("y", FLOAT, None)],
        [_i64("st", [1]), _i64("en", [3]), _i64("ax", [-1]), _i64("zero", [0])],
        checked=False,
    )
    feeds = {"x": X, "c": np.array(True)}
    (want,) = _ort(model, feeds)
    assert want.shape == ((1, 2, 2) if consumer == "Slice" else (1, 2, 12))
    graph = dmlgraph.load(model)
    assert folding.PartialShapes(graph.declared_sizes).rank_unsure(graph, "r")
    result = get_backend("numpy").execute(lower(graph, "6_4"), feeds)
    assert np.array_equal(result.outputs["y"], want)


@pytest.mark.parametrize("where", ["later node", "subgraph"])
def test_an_invented_constant_name_avoids_the_model_s_own(where) -> None:
    """The importer names a canonical Slice's constants after the node ('sl:starts' for an
    opset-9 Slice's attributes, 'sl:axes' for the axes it fills in). A later node's output
    of that name, not yet a tensor when the Slice was read, took it over: "the graph has a
    cycle". One an If branch defines was written beside it in a fallback segment, which
    onnxruntime refused ("Graph must be in single static assignment (SSA) form"; a
    reviewer's reproducers). Names the model uses anywhere are reserved now."""
    if where == "later node":
        x = np.array([-1, 2, -3, 4, 5], np.float32)
        graph = helper.make_graph(
            [helper.make_node("Slice", ["x"], ["s"], name="sl", starts=[1], ends=[4], axes=[0]),
             helper.make_node("Relu", ["s"], ["sl:starts"])],
            "g", [_vi("x", FLOAT, [5])], [_vi("sl:starts", FLOAT, [3])])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 9)])
        model.ir_version = 7
        feeds = {"x": x}
    else:
        then_branch = helper.make_graph(
            [helper.make_node("Neg", ["x"], ["sl:axes"]),
             helper.make_node("Neg", ["sl:axes"], ["t"])], "then", [], [_vi("t", FLOAT, [2, 6])])
        else_branch = helper.make_graph(
            [helper.make_node("Identity", ["x"], ["e"])], "else", [], [_vi("e", FLOAT, [2, 6])])
        model = _model(
            [helper.make_node("If", ["c"], ["y"], then_branch=then_branch,
                              else_branch=else_branch, name="if"),
             helper.make_node("Slice", ["y", "z", "big"], ["s"], name="sl"),
             helper.make_node("Relu", ["s"], ["out"])],
            [_vi("x", FLOAT, [2, 6]), _vi("c", BOOL, [])], [_vi("out", FLOAT, None)],
            [_i64("z", [0]), _i64("big", [99])], checked=False)
        feeds = {"x": X, "c": np.array(True)}
    (want,) = _ort(model, feeds)
    graph = dmlgraph.load(model)
    (slice_node,) = graph.find_nodes("Slice")
    own = "sl:starts" if where == "later node" else "sl:axes"  # the model's own tensor
    assert own not in slice_node.inputs and f"{own}_1" in slice_node.inputs
    (got,) = get_backend("numpy").run(lower(graph, "6_4"), feeds).values()
    assert np.array_equal(got, want)


@pytest.mark.parametrize("inner", ["s.piece", "/view"])
def test_names_lowering_and_its_translation_invent_avoid_a_subgraph_s(inner) -> None:
    """At FL 1_0 a reversed Slice 's' becomes pieces written to 's.piece', 's.piece_1'...,
    and translating the lowered graph back to ONNX (``run --lowered``, ``check
    --cross-check``) views tensors as '/view'. Beside an If branch defining either name, the
    translated model was refused by onnxruntime ("Graph must be in single static assignment
    (SSA) form"; a reviewer's reproducers): only subgraph names with a colon were reserved,
    and lowering and translation asked only the graph's own tensors."""
    then_branch = helper.make_graph(
        [helper.make_node("Neg", ["s"], [inner]), helper.make_node("Abs", [inner], ["t"])],
        "then", [], [_vi("t", FLOAT, None)])
    else_branch = helper.make_graph(
        [helper.make_node("Abs", ["s"], ["e"])], "else", [], [_vi("e", FLOAT, None)])
    model = _model(
        [helper.make_node("Slice", ["x", "st", "en", "ax", "stp"], ["s"]),
         helper.make_node("If", ["c"], ["y"], then_branch=then_branch, else_branch=else_branch)],
        [_vi("x", FLOAT, [2, 3]), _vi("c", BOOL, [])], [_vi("y", FLOAT, None)],
        [_i64("st", [-1]), _i64("en", [-100]), _i64("ax", [1]), _i64("stp", [-1])],
        checked=False)
    feeds = {"x": np.arange(6, dtype=np.float32).reshape(2, 3), "c": np.array(True)}
    (want,) = _ort(model, feeds)
    lowered = lower(dmlgraph.load(model), "1_0")
    assert inner not in lowered.tensors
    for backend in ("numpy", "onnxruntime"):
        (got,) = get_backend(backend).run(lowered, feeds).values()
        assert np.array_equal(got, want), backend


def test_a_graph_loaded_without_folding_is_lowered_again_too() -> None:
    """With ``load(model, fold=False)`` the run's lowering again folded the copy, and
    folding infers the whole graph anew: it gave back the size it had just forgotten, and
    the run refused the Squeeze's [2, 3] as before (a reviewer's reproducer). The copy is
    folded first, then its unsure sizes forgotten."""
    model = _model(
        [helper.make_node("Squeeze", ["x", "noaxes"], ["q"]),
         helper.make_node("Concat", ["q", "q"], ["y"], axis=0, name="cat")],
        [_vi("x", FLOAT, [2, 1, 3])], [_vi("y", FLOAT, None)],
        [numpy_helper.from_array(np.zeros(0, np.int64), "noaxes")], checked=False)
    feeds = {"x": np.arange(6, dtype=np.float32).reshape(2, 1, 3)}
    (want,) = _ort(model, feeds)
    assert want.shape == (4, 3)
    result = get_backend("numpy").execute(lower(dmlgraph.load(model, fold=False), "6_4"), feeds)
    assert np.array_equal(result.outputs["y"], want) and result.record.relowered


def _lowered_runs(record, op_type: str, name: str) -> dict[str, str]:
    """DML operator -> engine, of the runs made inside the control-flow node ``name``."""
    return {r.op: r.engine for r in record.nodes if r.via.startswith(f"{op_type} '{name}'")}


def test_a_loop_body_s_slice_and_concat_run_as_directml_operators() -> None:
    """The body's Slice and Concat are lowered when the Loop runs (their sizes are known
    only then) and run on the emulator, as onnxruntime's DirectML provider runs a body's
    nodes; before, the whole Loop ran on the fallback, and nothing proved them."""
    model = _loop_model()
    want = _ort(model, {"x": X})
    lowered = lower(dmlgraph.load(model), "6_4")
    result = get_backend("numpy").execute(lowered, {"x": X})
    assert np.array_equal(result.outputs["y"], want[0])
    assert np.array_equal(result.outputs["scans"], want[1])
    ran = _lowered_runs(result.record, "Loop", "loop")
    assert ran["DML_OPERATOR_SLICE"] == ran["DML_OPERATOR_JOIN"] == "numpy DirectML emulator"


def _while_model(trip: int | None, steps: int) -> onnx.ModelProto:
    """A Loop that concatenates a reversed slice of x to what it carries while i < steps
    (its body's condition), at most ``trip`` times, and stacks each iteration's piece padded
    by i-independent pads; the carried tensor grows every iteration."""
    body = helper.make_graph(
        [helper.make_node("Slice", ["x", "st", "en", "ax", "neg"], ["piece"]),
         helper.make_node("Concat", ["acc", "piece"], ["acc_out"], axis=1),
         helper.make_node("Add", ["i", "one"], ["next"]),
         helper.make_node("Less", ["next", "limit"], ["cond_out"]),
         helper.make_node("Pad", ["piece", "pads"], ["scan_out"], mode="reflect")],
        "body",
        [_vi("i", INT64, []), _vi("cond_in", BOOL, []), _vi("acc", FLOAT, [2, None])],
        [_vi("cond_out", BOOL, []), _vi("acc_out", FLOAT, [2, None]),
         _vi("scan_out", FLOAT, [None, None])],
        [_i64("one", 1), _i64("limit", steps), _i64("neg", [-1]), _i64("pads", [0, 2, 0, 1])])
    trip_name = "" if trip is None else "trip"
    inits = [_i64("st", [4]), _i64("en", [1]), _i64("ax", [1])]
    if trip is not None:
        inits.append(_i64("trip", trip))
    return _model(
        [helper.make_node("Loop", [trip_name, "go", "x"], ["acc_final", "scans"], name="loop",
                          body=body)],
        [_vi("x", FLOAT, [2, 6]), _vi("go", BOOL, [])],
        [_vi("acc_final", FLOAT, [2, None]), _vi("scans", FLOAT, [None, None, None])],
        inits,
    )


@pytest.mark.parametrize("trip, steps", [(None, 20), (5, 20), (30, 20)])
def test_a_loop_runs_while_its_body_s_condition_holds(trip, steps) -> None:
    """The body's condition ends the loop (steps), or the trip count does, whichever comes
    first; the carried tensor grows each iteration, so the body is lowered for 20 sizes,
    more than the 16 a node keeps (the least recently run go)."""
    model = _while_model(trip, steps)
    feeds = {"x": X, "go": np.array(True)}
    want = _ort(model, feeds)
    result = get_backend("numpy").execute(lower(dmlgraph.load(model), "6_4"), feeds)
    assert want[0].shape == (2, 6 + 3 * min(steps, trip or steps))
    assert np.array_equal(result.outputs["acc_final"], want[0])
    assert np.array_equal(result.outputs["scans"], want[1])
    ran = _lowered_runs(result.record, "Loop", "loop")
    assert ran["DML_OPERATOR_SLICE1"] == ran["DML_OPERATOR_PADDING"] == "numpy DirectML emulator"


@pytest.mark.parametrize("feeds", [{"go": False}, {"go": True, "trip": 0}])
def test_a_loop_that_makes_scan_outputs_in_no_iteration_makes_them_as_onnxruntime(feeds) -> None:
    """No iteration says what shape a scan output's elements have (ONNX leaves it open): the
    NumPy backend makes it empty, as onnxruntime does, of the shape inference gives the body's
    output (here [0, 2, 6]), and its record says so."""
    model = _while_model(None if "trip" not in feeds else 5, 20)
    if "trip" in feeds:  # the trip count as an input, 0 this run
        del model.graph.initializer[-1]
        model.graph.input.append(_vi("trip", INT64, []))
    feeds = {"x": X, **{k: np.array(v) for k, v in feeds.items()}}
    want = _ort(model, feeds)
    result = get_backend("numpy").execute(lower(dmlgraph.load(model), "6_4"), feeds)
    assert np.array_equal(result.outputs["acc_final"], want[0])
    assert result.outputs["scans"].shape == want[1].shape == (0, 2, 6)
    (record,) = [r for r in result.record.nodes if r.node == "loop"]
    assert record.notes[-1].startswith("the Loop ran no iteration: its carried values are the "
                                       "initial ones, and each scan output is empty")


def _no_trip_model() -> onnx.ModelProto:
    """A Loop (of ``trip`` trips, ``go`` holding) whose body reads t = Concat(x, c) [4, 6] (x
    [2, "w"], c a [2, 6] constant: inference says [4, 6], onnxruntime checks it only as it
    runs, so the Loop's fallback segment declares t without its sizes), and makes scan
    outputs: a Slice of t by the main graph's initializers (rows 1 to 3), undeclared; a
    Concat of t and t declared [4, "n"]; a Reshape of t to a shape fed at run time (rank
    unknown); its carried value (x) as the body declares it, [2, None]."""
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Identity", ["acc"], ["acc_out"]),
         helper.make_node("Slice", ["t", "st", "en"], ["rows"]),
         helper.make_node("Concat", ["t", "t"], ["wide"], axis=1),
         helper.make_node("Reshape", ["t", "to"], ["any"]),
         helper.make_node("Identity", ["acc"], ["seen"])],
        "body",
        [_vi("i", INT64, []), _vi("cond_in", BOOL, []), _vi("acc", FLOAT, [2, None])],
        [_vi("cond_out", BOOL, []), _vi("acc_out", FLOAT, [2, None]),
         helper.make_value_info("rows", onnx.TypeProto()), _vi("wide", FLOAT, [4, "n"]),
         helper.make_value_info("any", onnx.TypeProto()), _vi("seen", FLOAT, None)])
    outputs = ["acc_final", "rows_all", "wide_all", "any_all", "seen_all"]
    return _model(
        [helper.make_node("Concat", ["x", "c"], ["t"], axis=0, name="twice"),
         helper.make_node("Loop", ["trip", "go", "x"], outputs, name="loop", body=body)],
        [_vi("x", FLOAT, [2, "w"]), _vi("trip", INT64, []), _vi("go", BOOL, []),
         _vi("to", INT64, [None])],
        [_vi("t", FLOAT, [None, None]), *(_vi(name, FLOAT, None) for name in outputs)],
        [_i64("st", [1]), _i64("en", [3]), numpy_helper.from_array(-X, "c")], checked=False)


@pytest.mark.parametrize("trip, go", [(0, True), (3, False)])
@pytest.mark.parametrize("fallback", ["onnxruntime", "reference"])
def test_a_loop_of_no_iteration_makes_its_scan_outputs_of_onnxruntime_s_shapes(
    trip, go, fallback
) -> None:
    """A Loop of no iteration (a fuzzer's cases, made small): onnxruntime on the model makes
    each scan output empty along axis 0, its elements of the shape its inference of the model
    gives the body's output, an unknown size 0. dmlgraph ran it whole on the fallback as a
    segment that knows the enclosing t only as it runs, whose onnxruntime inferred less: the
    Slice's rows as [0, 0, 0] where onnxruntime gives [0, 2, 6], the Concat's [0, 4, 0] where
    it gives [0, 4, 12]. Now every output has onnxruntime's shape and dtype, whichever
    fallback: an unknown rank [0], a carried value's elements as the body declares it
    ([2, None]: onnxruntime reads no shape from the value fed)."""
    model = _no_trip_model()
    feeds = {"x": X, "trip": np.array(trip), "go": np.array(go), "to": np.array([24])}
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    want = dict(zip([o.name for o in session.get_outputs()], session.run(None, feeds)))
    backend = get_backend("numpy", fallback=fallback)
    got = backend.execute(lower(dmlgraph.load(model), "6_4"), feeds).outputs
    shapes = {name: (value.shape, value.dtype) for name, value in got.items()}
    assert shapes == {name: (value.shape, value.dtype) for name, value in want.items()}
    assert shapes["rows_all"][0] == (0, 2, 6) and shapes["wide_all"][0] == (0, 4, 12)
    assert shapes["any_all"][0] == (0,) and shapes["seen_all"][0] == (0, 2, 0)
    assert np.array_equal(got["acc_final"], X) and np.array_equal(got["t"], want["t"])


@pytest.mark.parametrize(
    ("name", "named"), [("outer", "node 'outer'"), ("", "unnamed node making 'all' (Loop)")]
)
def test_a_nested_loop_of_no_iteration_is_a_known_divergence_where_sizes_arrived(
    tmp_path, capsys, name: str, named: str
) -> None:
    """A Loop of no iteration within a Loop's body: dmlgraph types that body by the sizes that
    arrive (x [2, 6]), so its inference knows the width onnxruntime's inference of the model
    (x [2, "w"]) does not: [1, 0, 2, 6] against [1, 0, 2, 0], both empty, a shape ONNX leaves
    open. ``check`` failed on a bare shape mismatch; now it names it a known divergence, an
    unnamed Loop by the tensor it makes (it said "node ''")."""
    inner = helper.make_graph(
        [helper.make_node("Identity", ["c2"], ["c2o"]), helper.make_node("Identity", ["x"], ["s"])],
        "inner", [_vi("j", INT64, []), _vi("c2", BOOL, [])],
        [_vi("c2o", BOOL, []), _vi("s", FLOAT, None)])
    outer = helper.make_graph(
        [helper.make_node("Identity", ["c"], ["co"]),
         helper.make_node("Loop", ["zero", ""], ["ss"], name="inner", body=inner)],
        "outer", [_vi("i", INT64, []), _vi("c", BOOL, [])],
        [_vi("co", BOOL, []), _vi("ss", FLOAT, None)])
    model = _model([helper.make_node("Loop", ["one", ""], ["all"], name=name, body=outer)],
                   [_vi("x", FLOAT, [2, "w"])], [_vi("all", FLOAT, None)],
                   [_i64("one", 1), _i64("zero", 0)], checked=False)
    path, inputs = tmp_path / "nested.onnx", tmp_path / "in.npz"
    onnx.save(model, path)
    np.savez(inputs, x=X)
    assert _ort(model, {"x": X})[0].shape == (1, 0, 2, 0)
    assert main(["check", str(path), "--inputs", str(inputs)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "shape [1, 0, 2, 6] differs from [1, 0, 2, 0]" in out
    assert (f"known divergence at {named}: divergence: the Loop ran no iteration") in out
    assert "sizes that arrived in a subgraph" in out and "ONNX leaves that shape open" in out


def _shape_of_width_loop(in_body: bool) -> onnx.ModelProto:
    """A Loop of ``trip`` trips whose body makes, as a scan output, z + z: z x [N, 3] Reshaped
    to [-1] and dimension 1 of its Shape (dmlgraph: [N, 3]), made in the main graph, or in
    the body (``in_body``)."""
    width = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Slice", ["s", "one", "two"], ["s1"]),
             helper.make_node("Concat", ["minus", "s1"], ["to"], axis=0),
             helper.make_node("Reshape", ["x", "to"], ["z"])]
    body = helper.make_graph(
        [helper.make_node("Identity", ["c"], ["co"]), *(width if in_body else []),
         helper.make_node("Add", ["z", "z"], ["y"])],
        "body", [_vi("i", INT64, []), _vi("c", BOOL, [])],
        [_vi("co", BOOL, []), _vi("y", FLOAT, None)])
    loop = helper.make_node("Loop", ["trip", ""], ["ys"], body=body)
    return _model([*([] if in_body else width), loop],
                  [_vi("x", FLOAT, ["N", 3]), _vi("trip", INT64, [])], [_vi("ys", FLOAT, None)],
                  [_i64("one", [1]), _i64("two", [2]), _i64("minus", [-1])], checked=False)


@pytest.mark.parametrize("in_body", [False, True])
def test_a_loop_of_no_iteration_whose_shape_onnxruntime_may_not_know_is_a_known_divergence(
    tmp_path, capsys, in_body: bool
) -> None:
    """A Loop of no iteration at the main graph whose scan output's elements are z + z, z x
    [N, 3] Reshaped to [-1] and dimension 1 of its Shape: dmlgraph's types (folding, onnx's
    propagation over a shape partly known) know z [N, 3], onnxruntime's inference of the
    model does not (it gives [0, 0, 0]); ONNX leaves that shape open. ``check`` failed ("parity
    FAILS", exit 1); now it names a known divergence. A Loop whose element shape only
    declared inputs give is not one (``test_a_loop_that_makes_scan_outputs_in_no_...``)."""
    model = _shape_of_width_loop(in_body)
    feeds = {"x": X[:, :3].copy(), "trip": np.array(0)}
    assert _ort(model, feeds)[0].shape == (0, 0, 0)
    path, inputs = tmp_path / "width.onnx", tmp_path / "in.npz"
    onnx.save(model, path)
    np.savez(inputs, **feeds)
    assert main(["check", str(path), "--inputs", str(inputs)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "shape [0, 0, 3] differs from [0, 0, 0]" in out and "known divergence" in out


def _folded_zeros_loop() -> onnx.ModelProto:
    """A Loop of ``trip`` trips whose body makes, as a scan output, z + z: z the main graph's
    ConstantOfShape of x [N, 3]'s Shape from dimension 1 (a [3] of ones, which folding makes
    a constant)."""
    zeros = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Slice", ["s", "one", "two"], ["s1"]),
             helper.make_node("ConstantOfShape", ["s1"], ["z"],
                              value=numpy_helper.from_array(np.ones(1, np.float32)))]
    body = helper.make_graph(
        [helper.make_node("Identity", ["c"], ["co"]), helper.make_node("Add", ["z", "z"], ["y"])],
        "body", [_vi("i", INT64, []), _vi("c", BOOL, [])],
        [_vi("co", BOOL, []), _vi("y", FLOAT, None)])
    loop = helper.make_node("Loop", ["trip", ""], ["ys"], body=body)
    return _model([*zeros, loop], [_vi("x", FLOAT, ["N", 3]), _vi("trip", INT64, [])],
                  [_vi("ys", FLOAT, None)], [_i64("one", [1]), _i64("two", [2])], checked=False)


def test_a_loop_of_no_iteration_reading_a_tensor_folding_made_constant_is_a_known_divergence(
    tmp_path, capsys
) -> None:
    """A Loop of no iteration whose body reads z, a ConstantOfShape of x [N, 3]'s Shape that
    folding made a constant: dmlgraph's inference took it for an initializer, of values
    onnxruntime's inference of the model knows ([0, 3]), but onnxruntime does not know them
    ([0, 0]; ONNX leaves that shape open). ``check`` failed ("parity FAILS", exit 1); now it
    names a known divergence, as only the model's own constants are taken for initializers
    (``Graph.given_constants``)."""
    model = _folded_zeros_loop()
    feeds = {"x": X[:, :3].copy(), "trip": np.array(0)}
    assert _ort(model, feeds)[0].shape == (0, 0)
    path, inputs = tmp_path / "zeros.onnx", tmp_path / "in.npz"
    onnx.save(model, path)
    np.savez(inputs, **feeds)
    assert main(["check", str(path), "--inputs", str(inputs)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "shape [0, 3] differs from [0, 0]" in out
    assert "known divergence at unnamed node making 'ys' (Loop): divergence: the Loop ran no " \
        "iteration" in out


def _no_trip_carrying_loop(held: bool, read: str = "x") -> onnx.ModelProto:
    """A Loop of ``trip`` trips carrying v0 [2] (its body negates it: V) and stacking z + z
    (YS), z as in ``_folded_zeros_loop`` (its no-trip note: onnxruntime's element shape [0]
    where dmlgraph's is [3]). ``held``: that Loop, stacking ``read`` + ``read`` (x [N, 3]:
    [0, 0, 3] on onnxruntime, [0, 2, 3] by the sizes that arrive; or z), in the body of a
    Loop of one trip whose carried value is the inner V, beside Relu(x) (R)."""
    zeros = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Slice", ["s", "one", "two"], ["s1"]),
             helper.make_node("ConstantOfShape", ["s1"], ["z"],
                              value=numpy_helper.from_array(np.ones(1, np.float32)))]
    body = helper.make_graph(
        [helper.make_node("Identity", ["c"], ["co"]),
         helper.make_node("Add", [read, read] if held else ["z", "z"], ["y"]),
         helper.make_node("Neg", ["v"], ["v2"])],
        "body", [_vi("i", INT64, []), _vi("c", BOOL, []), _vi("v", FLOAT, [2])],
        [_vi("co", BOOL, []), _vi("v2", FLOAT, [2]), _vi("y", FLOAT, None)])
    loop = helper.make_node("Loop", ["trip", "", "v0" if not held else "w"], ["V", "YS"],
                            name="loop", body=body)
    outputs = ["V", "YS"]
    if held:
        outer = helper.make_graph(
            [helper.make_node("Identity", ["c"], ["oc"]), loop,
             helper.make_node("Relu", ["x"], ["r"])],
            "outer", [_vi("j", INT64, []), _vi("c", BOOL, []), _vi("w", FLOAT, [2])],
            [_vi("oc", BOOL, []), _vi("V", FLOAT, [2]), _vi("YS", FLOAT, None),
             _vi("r", FLOAT, None)])
        loop = helper.make_node("Loop", ["once", "", "v0"], ["OV", "OYS", "R"], name="outer",
                                body=outer)
        outputs = ["OV", "OYS", "R"]
    return _model([*zeros, loop] if not held or read == "z" else [loop],
                  [_vi("x", FLOAT, ["N", 3]), _vi("trip", INT64, []), _vi("v0", FLOAT, [2])],
                  [_vi(n, FLOAT, None) for n in outputs],
                  [_i64("one", [1]), _i64("two", [2]), _i64("once", 1)], checked=False)


@pytest.mark.parametrize("held", [False, True])
@pytest.mark.parametrize("fallback", ["onnxruntime", "reference"])
def test_a_loop_of_no_iteration_s_note_leaves_its_carried_values_compared(
    fallback: str, held: bool, monkeypatch
) -> None:
    """The no-trip note (each scan output's element shape onnxruntime may not know) counted
    every output of the Loop: a wrong carried value, which a Loop of no trip gives as its
    initial one on onnxruntime as in ONNX, passed as the known divergence (exit 0). Now the
    note concerns the scan outputs alone: the carried value is compared, and a wrong one
    fails; the scan output stays the divergence."""
    import dataclasses

    import backends.numpy.backend as numpy_backend
    from dmlgraph.parity import Verdict

    model = _no_trip_carrying_loop(held)
    v0 = np.array([1, 2], np.float32)
    feeds = {"x": np.ones((2, 3), np.float32), "trip": np.array(0), "v0": v0}
    made = _ort(model, feeds)
    assert np.array_equal(made[0], v0) and made[1].size == 0  # (ONNX: their element shape open)
    carried, scanned = ("OV", "OYS") if held else ("V", "YS")
    execute = numpy_backend.NumpyBackend.execute

    def checked(planted: dict[str, np.ndarray]) -> dict:
        def wrong(self, graph, feeds, outputs=None):
            result = execute(self, graph, feeds, outputs)
            return dataclasses.replace(result, outputs={**result.outputs, **planted})

        monkeypatch.setattr(numpy_backend.NumpyBackend, "execute", wrong)
        report = dmlgraph.check(model, inputs=feeds, fallback=fallback)
        got = {o.name: o for c in report.comparisons for o in c.outputs}
        assert got[scanned].verdict is Verdict.KNOWN_DIVERGENCE
        return {"exit": report.exit_code, **{n: o.verdict for n, o in got.items()}}

    assert checked({}) == {"exit": 0, carried: Verdict.PASS, scanned: Verdict.KNOWN_DIVERGENCE,
                           **({"R": Verdict.PASS} if held else {})}
    assert checked({carried: v0 + 1})[carried] is Verdict.FAIL
    assert checked({carried: v0 + 1})["exit"] == 1


def test_a_held_loop_of_no_iteration_reading_a_tensor_folding_made_constant_is_noted(
) -> None:
    """The Loop of ``_no_trip_carrying_loop`` reading z (which folding makes a constant of
    the main graph) held in a Loop's body: the body's model took z for an initializer, so
    the inner Loop counted its values known to onnxruntime ([1, 0, 3]), which does not know
    them ([1, 0, 0]), and ``check`` failed (exit 1, no divergence named). An enclosing
    constant folding made is not the model's in the subgraph either: the inner Loop notes
    its scan output, as at the main graph."""
    from dmlgraph.parity import Verdict

    model = _no_trip_carrying_loop(True, "z")
    feeds = {"x": np.ones((2, 3), np.float32), "trip": np.array(0),
             "v0": np.array([1, 2], np.float32)}
    assert _ort(model, feeds)[1].shape == (1, 0, 0)
    for fallback in ("onnxruntime", "reference"):
        report = dmlgraph.check(model, inputs=feeds, fallback=fallback)
        got = {o.name: o.verdict for o in report.comparisons[0].outputs}
        assert got == {"OV": Verdict.PASS, "OYS": Verdict.KNOWN_DIVERGENCE, "R": Verdict.PASS}
        assert [d.outputs for d in report.divergences] == [{1}] and report.exit_code == 0


def _outer_slice_loop(given: str) -> onnx.ModelProto:
    """A Loop of ``trip`` trips whose body makes, as a scan output, a Slice of x [2, 6] by the
    main graph's st, en (rows 1 to 2), given as ``given`` says: initializers, initializers a
    feed may override (listed as graph inputs too), or Constant nodes (a tensor value, or
    ``value_ints``, which folding evaluates)."""
    body = helper.make_graph(
        [helper.make_node("Identity", ["c"], ["co"]),
         helper.make_node("Slice", ["x", "st", "en"], ["y"])],
        "body", [_vi("i", INT64, []), _vi("c", BOOL, [])],
        [_vi("co", BOOL, []), _vi("y", FLOAT, None)])
    bounds = {"st": [1], "en": [2]}
    nodes = [helper.make_node("Loop", ["trip", ""], ["ys"], name="loop", body=body)]
    inputs = [_vi("x", FLOAT, [2, 6]), _vi("trip", INT64, [])]
    inits = []
    if given in ("initializer", "overridable"):
        inits = [_i64(name, value) for name, value in bounds.items()]
        if given == "overridable":
            inputs += [_vi(name, INT64, [1]) for name in bounds]
    else:
        nodes[:0] = [
            helper.make_node("Constant", [], [name], value=_i64(name, value))
            if given == "constant" else helper.make_node("Constant", [], [name], value_ints=value)
            for name, value in bounds.items()
        ]
    return _model(nodes, inputs, [_vi("ys", FLOAT, None)], inits, checked=False)


@pytest.mark.parametrize(
    ("given", "shape", "noted"),
    [("initializer", (0, 1, 6), False), ("constant", (0, 1, 6), False),
     ("constant_ints", (0, 1, 6), False), ("overridable", (0, 0, 0), True)],
)
def test_a_loop_of_no_iteration_knows_the_values_of_the_model_s_own_constants(
    given: str, shape: tuple[int, ...], noted: bool
) -> None:
    """A Loop of no iteration whose body Slices x [2, 6] by the main graph's constants: an
    initializer's or a Constant node's values are known to onnxruntime's inference of the
    model (rows 1 to 2: [0, 1, 6]), and the record notes no divergence; an initializer a feed
    may override is not constant to onnxruntime ("will not be treated as constant": [0, 0,
    0]), a known divergence. dmlgraph folds it, so gives [0, 1, 6] (``check`` said "parity
    FAILS")."""
    model = _outer_slice_loop(given)
    feeds = {"x": X, "trip": np.array(0)}
    assert _ort(model, feeds)[0].shape == shape
    result = get_backend("numpy").execute(lower(dmlgraph.load(model), "6_4"), feeds)
    assert result.outputs["ys"].shape == (0, 1, 6)
    (record,) = [r for r in result.record.nodes if r.node == "loop"]
    assert record.notes[-1].startswith("divergence: the Loop ran no iteration") == noted


def test_a_body_the_importer_refuses_runs_whole_on_the_fallback() -> None:
    """A body holding a sequence (which dmlgraph does not import) runs whole on the fallback
    as before, and its record says why."""
    body = helper.make_graph(
        [helper.make_node("SequenceConstruct", ["acc", "acc"], ["seq"]),
         helper.make_node("ConcatFromSequence", ["seq"], ["acc_out"], axis=0),
         helper.make_node("Identity", ["cond_in"], ["cond_out"])],
        "body",
        [_vi("i", INT64, []), _vi("cond_in", BOOL, []), _vi("acc", FLOAT, [None, 6])],
        [_vi("cond_out", BOOL, []), _vi("acc_out", FLOAT, [None, 6])])
    model = _model(
        [helper.make_node("Loop", ["trip", "", "x"], ["y"], name="loop", body=body)],
        [_vi("x", FLOAT, [2, 6])], [_vi("y", FLOAT, [None, 6])], [_i64("trip", 2)])
    (want,) = _ort(model, {"x": X})
    result = get_backend("numpy").execute(lower(dmlgraph.load(model), "6_4"), {"x": X})
    assert np.array_equal(result.outputs["y"], want)
    (whole,) = [r for r in result.record.nodes if r.node == "loop"]
    assert whole.notes[-1].startswith(
        "ran whole on the fallback, not lowered: its body cannot be lowered on its own: ")


def test_a_divergence_inside_a_branch_is_named_for_what_the_if_reaches() -> None:
    """A then branch slicing x[:, -1:INT64_MAX:-1]: ONNX makes [2, 0], onnxruntime's CPU
    kernel [2, 6] (a known divergence). Lowered when the If runs, the branch's note goes with
    its run, and ``check`` names it at the If for the output it reaches."""
    then_branch = helper.make_graph(
        [helper.make_node("Slice", ["x", "st", "en", "ax", "neg"], ["t"])], "then", [],
        [_vi("t", FLOAT, None)],
        [_i64("st", [-1]), _i64("en", [2**63 - 1]), _i64("ax", [1]), _i64("neg", [-1])])
    else_branch = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["e"])], "else", [], [_vi("e", FLOAT, None)])
    model = _model(
        [helper.make_node("If", ["c"], ["y"], then_branch=then_branch, else_branch=else_branch,
                          name="if")],
        [_vi("x", FLOAT, [2, "n"]), _vi("c", BOOL, [])], [_vi("y", FLOAT, None)],
        checked=False)
    feeds = {"x": X, "c": np.array(True)}
    assert _ort(model, feeds)[0].shape == (2, 6)
    assert get_backend("numpy").run(lower(dmlgraph.load(model), "6_4"), feeds)["y"].shape == (2, 0)
    report = dmlgraph.check(model, inputs=feeds)
    assert report.passed
    (divergence,) = report.divergences
    assert divergence.node == "if" and "end INT64_MAX" in divergence.note


@pytest.mark.parametrize("trip, steps", [(5, 2), (5, 1), (3, 20)])
def test_a_loop_without_a_cond_input_stops_where_its_body_s_condition_says(trip, steps) -> None:
    """The spec's pseudo-code says a Loop with a trip count and no ``cond`` input ignores its
    body's condition (a for loop); onnxruntime and onnx.reference stop when it goes false
    all the same, so the backend does (it ran the whole trip count before)."""
    model = _while_model(trip, steps)
    model.graph.node[0].input[1] = ""
    del model.graph.input[1]  # go
    want = _ort(model, {"x": X})
    assert want[0].shape == (2, 6 + 3 * min(steps, trip))
    result = get_backend("numpy").execute(lower(dmlgraph.load(model), "6_4"), {"x": X})
    assert np.array_equal(result.outputs["acc_final"], want[0])
    assert np.array_equal(result.outputs["scans"], want[1])
    assert "DML_OPERATOR_JOIN" in _lowered_runs(result.record, "Loop", "loop")


def test_an_if_s_condition_of_no_element_is_one_clear_error_naming_the_file_once(
    tmp_path, capsys
) -> None:
    """onnxruntime refuses an If whose condition is not one element ("must have exactly one
    element"); the CLI says so once, exit code 2, the file named once (it was named twice:
    the node's description already holds it)."""
    then_branch = helper.make_graph(
        [helper.make_node("Neg", ["x"], ["t"])], "then", [], [_vi("t", FLOAT, [2, 6])])
    else_branch = helper.make_graph(
        [helper.make_node("Abs", ["x"], ["e"])], "else", [], [_vi("e", FLOAT, [2, 6])])
    model = _model(
        [helper.make_node("If", ["c"], ["y"], name="branch", then_branch=then_branch,
                          else_branch=else_branch)],
        [_vi("x", FLOAT, [2, 6]), _vi("c", BOOL, [0])], [_vi("y", FLOAT, [2, 6])])
    path = tmp_path / "if.onnx"
    onnx.save(model, path)
    np.savez(tmp_path / "in.npz", x=X, c=np.zeros(0, bool))
    assert main(["run", str(path), "--inputs", str(tmp_path / "in.npz")]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert err.count(str(path)) == 1, err
    assert "node 'branch' (If): its condition holds 0 elements; If takes one" in err
    assert "Traceback" not in err


def _misfit(case: str) -> onnx.ModelProto:
    """An If or Loop whose subgraphs do not fit it, which onnxruntime refuses at load."""
    neg = helper.make_graph([helper.make_node("Neg", ["x"], ["n"])], "neg", [],
                            [_vi("n", FLOAT, [2, 6])])
    two = helper.make_graph([helper.make_node("Neg", ["x"], ["n"]),
                             helper.make_node("Abs", ["x"], ["a"])], "two", [],
                            [_vi("n", FLOAT, [2, 6]), _vi("a", FLOAT, [2, 6])])
    wide = helper.make_graph([helper.make_node("Cast", ["x"], ["d"], to=TensorProto.DOUBLE)],
                             "wide", [], [_vi("d", TensorProto.DOUBLE, [2, 6])])
    fed = helper.make_graph([helper.make_node("Neg", ["z"], ["n"])], "fed",
                            [_vi("z", FLOAT, [2, 6])], [_vi("n", FLOAT, [2, 6])])
    if case.startswith("if"):
        then, other, outputs = {"if branch counts": (two, neg, ["y"]),
                                "if node outputs": (two, two, ["y"]),
                                "if branch types": (neg, wide, ["y"]),
                                "if branch inputs": (neg, fed, ["y"])}[case]
        return _model([helper.make_node("If", ["c"], outputs, then_branch=then,
                                        else_branch=other)],
                      [_vi("x", FLOAT, [2, 6]), _vi("c", BOOL, [])],
                      [_vi("y", FLOAT, None)], checked=False)
    carried = [_vi("i", INT64, []), _vi("cond_in", BOOL, []), _vi("acc", FLOAT, [2, 6])]
    made = {"loop body inputs": ("Neg", carried[:2], FLOAT, ["y"]),
            "loop body outputs": ("Neg", carried, FLOAT, ["y", "extra"]),
            "loop carried type": ("Cast", carried, TensorProto.DOUBLE, ["y"])}
    op, inputs, elem, outputs = made[case]
    attrs = {"to": TensorProto.DOUBLE} if op == "Cast" else {}
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node(op, ["x"], ["acc_out"], **attrs)],
        "body", inputs, [_vi("cond_out", BOOL, []), _vi("acc_out", elem, [2, 6])])
    return _model([helper.make_node("Loop", ["trip", "", "x"], outputs, body=body)],
                  [_vi("x", FLOAT, [2, 6])], [_vi(name, FLOAT, None) for name in outputs],
                  [_i64("trip", 2)], checked=False)


@pytest.mark.parametrize("case, says", [
    ("if branch counts", "then_branch makes 2 outputs and else_branch 1"),
    ("if node outputs", "it has 1 outputs and its branches make 2"),
    ("if branch types", "output 0 is tensor(float32) in then_branch ('n') and "
                        "tensor(float64) in else_branch ('d')"),
    ("if branch inputs", "else_branch takes 1 input(s) ('z' first); If's branches take none"),
    ("loop body inputs", "its body takes 2 inputs and it has 3"),
    ("loop body outputs", "its body makes 2 outputs and it has 2"),
    ("loop carried type", "its body takes carried value 'acc' as tensor(float32) and makes "
                          "it ('acc_out') tensor(float64)"),
])
def test_subgraphs_that_do_not_fit_their_node_are_refused_at_load(case, says) -> None:
    """onnxruntime refuses these at load (onnx's type inference: "If node has 1 but
    subgraphs produce 2"); the NumPy backend, running If and Loop itself, paired what did
    not match and gave a result, or "tensor 'extra' has no value when read"."""
    model = _misfit(case)
    with pytest.raises(Exception, match="TypeInferenceError"):
        _ort(model, {"x": X, "c": np.array(True)} if case.startswith("if") else {"x": X})
    with pytest.raises(ModelValidationError, match=re.escape(says)):
        dmlgraph.load(model)


def test_run_and_check_list_what_a_body_s_nodes_became(tmp_path, capsys) -> None:
    """``run`` and ``check`` list what each of a body's nodes became when it ran (``lower``
    lists them as the body's first trip is typed), and ``check --json`` too; an unnamed node
    is named by the first tensor it makes (two unnamed Slices were one "(unnamed)" record)."""
    path = tmp_path / "loop.onnx"
    onnx.save(_loop_model(), path)
    inputs = tmp_path / "in.npz"
    np.savez(inputs, x=X)
    assert main(["run", str(path), "--inputs", str(inputs)]) == 0
    out = capsys.readouterr().out
    assert ("lowered when it ran: (unnamed, making 'acc_out') -> DML_OPERATOR_JOIN (Loop 'loop' "
            "body, lowered at run time)") in out
    assert main(["check", str(path), "--inputs", str(inputs), "--json"]) == 0
    (numpy_run, _) = json.loads(capsys.readouterr().out)["runs"]
    assert {"node": "(unnamed, making 'piece')", "op": "DML_OPERATOR_SLICE",
            "engine": "numpy DirectML emulator",
            "via": "Loop 'loop' body, lowered at run time"} in numpy_run["lowered_when_run"]


def test_a_body_s_unnamed_run_time_slices_have_a_record_each() -> None:
    """Two unnamed Slices of a Loop body whose starts come from the iteration number are
    lowered when they run; each record is named by the tensor its node makes. Before, both
    were named "" and merged into one "(unnamed) -> DML_OPERATOR_SLICE" record."""
    body = helper.make_graph(
        [helper.make_node("Unsqueeze", ["i", "zero"], ["st"]),
         helper.make_node("Add", ["st", "one"], ["en"]),
         helper.make_node("Slice", ["x", "st", "en", "one"], ["col"]),
         helper.make_node("Slice", ["x", "st", "en", "zero"], ["row"]),
         helper.make_node("Identity", ["c"], ["co"])],
        "body", [_vi("i", INT64, []), _vi("c", BOOL, [])],
        [_vi("co", BOOL, []), _vi("col", FLOAT, [2, 1]), _vi("row", FLOAT, [1, 6])],
        [_i64("zero", [0]), _i64("one", [1])])
    model = _model(
        [helper.make_node("Loop", ["M", ""], ["cols", "rows"], body=body, name="loop")],
        [_vi("x", FLOAT, [2, 6])], [_vi("cols", FLOAT, [2, 2, 1]), _vi("rows", FLOAT, [2, 1, 6])],
        [_i64("M", 2)])
    want = _ort(model, {"x": X})
    result = get_backend("numpy").execute(lower(dmlgraph.load(model), "6_4"), {"x": X})
    assert all(np.array_equal(result.outputs[n], w) for n, w in zip(("cols", "rows"), want))
    slices = sorted(r.node for r in result.record.nodes if r.op == "DML_OPERATOR_SLICE")
    assert slices == ["(unnamed, making 'col')", "(unnamed, making 'row')"]


def _counter_model(direct: bool) -> onnx.ModelProto:
    """A Loop of 4 trips carrying x and scanning its iteration number: the body's input i
    itself (``direct``) or an Identity of it."""
    nodes = [helper.make_node("Identity", ["c"], ["co"]),
             helper.make_node("Identity", ["x"], ["xo"])]
    if not direct:
        nodes.append(helper.make_node("Identity", ["i"], ["k"]))
    body = helper.make_graph(
        nodes, "body",
        [_vi("i", INT64, []), _vi("c", BOOL, []), _vi("x", FLOAT, [2])],
        [_vi("co", BOOL, []), _vi("xo", FLOAT, [2]), _vi("i" if direct else "k", INT64, [])])
    return _model(
        [helper.make_node("Loop", ["M", "", "x0"], ["xf", "ks"], body=body, name="loop")],
        [_vi("x0", FLOAT, [2])], [_vi("xf", FLOAT, [2]), _vi("ks", INT64, [None])],
        [_i64("M", 4)])


def test_a_loop_s_outputs_of_other_types_than_its_carried_values_load() -> None:
    """A Loop carrying a float and scanning an int64: its outputs are typed one by one (a
    heterogeneous variadic), and the float was taken for all, so the model's int64 'ks' was
    refused ("the model declares 'ks' INT64, but the node makes float32"), though
    onnxruntime runs it."""
    model = _counter_model(direct=False)
    feeds = {"x0": np.zeros(2, np.float32)}
    want = _ort(model, feeds)
    assert want[1].tolist() == [0, 1, 2, 3]
    got = get_backend("numpy").run(lower(dmlgraph.load(model), "6_4"), feeds)
    assert got["ks"].tolist() == [0, 1, 2, 3] and got["ks"].dtype == np.int64


def test_a_scanned_iteration_number_is_onnxruntime_s_known_divergence() -> None:
    """onnxruntime 1.32 fills a scan output that is the body's iteration number itself with
    the trip count reached ([4, 4, 4, 4]); ONNX stacks 0, 1, 2, 3, as dmlgraph does. ``check``
    names it at the Loop."""
    model = _counter_model(direct=True)
    feeds = {"x0": np.zeros(2, np.float32)}
    assert _ort(model, feeds)[1].tolist() == [4, 4, 4, 4]
    got = get_backend("numpy").run(lower(dmlgraph.load(model), "6_4"), feeds)
    assert got["ks"].tolist() == [0, 1, 2, 3]
    report = dmlgraph.check(model, inputs=feeds)
    assert report.passed
    (divergence,) = report.divergences
    assert divergence.node == "loop" and "iteration number itself" in divergence.note


def test_a_dropped_backend_frees_its_plans_and_sub_plans_without_the_collector() -> None:
    """The graph lives on; the backend that ran it is dropped. Its plan and the Loop body's
    sub-plans (each with onnxruntime sessions and an arena) go by reference counting: the
    backend's cache of plans held a cycle (its last graph's weak reference called back a
    method bound to the cache), and they waited for a full collection."""
    import gc
    import weakref

    from backends.numpy.plan import _ControlStep

    model = _loop_model()
    lowered = lower(dmlgraph.load(model), "6_4")
    enabled = gc.isenabled()
    gc.disable()
    try:
        backend = get_backend("numpy")
        got = backend.run(lowered, {"x": X})
        assert np.array_equal(got["y"], _ort(model, {"x": X})[0])
        plan = backend.plan(lowered)
        (step,) = [s for s in plan._steps if isinstance(s, _ControlStep)]
        held = [weakref.ref(plan), weakref.ref(step)]
        held += [weakref.ref(sub) for _, sub, _ in step.control.cache.values()]
        assert len(held) > 2  # the body ran lowered, by a sub-plan
        del backend, plan, step
        assert [ref() for ref in held] == [None] * len(held)
    finally:
        if enabled:
            gc.enable()


def _fixed_loop_model() -> onnx.ModelProto:
    """A Loop whose carried [2, 4] keeps its shape (a slice of it rotated by a Concat with
    the graph input x) and whose scan output is an Add the fallback runs: one body key."""
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Slice", ["acc", "st", "en", "ax"], ["piece"]),
         helper.make_node("Concat", ["piece", "x"], ["acc_out"], axis=1),
         helper.make_node("Add", ["piece", "x"], ["scan_out"])],
        "body",
        [_vi("i", INT64, []), _vi("cond_in", BOOL, []), _vi("acc", FLOAT, [2, 4])],
        [_vi("cond_out", BOOL, []), _vi("acc_out", FLOAT, [2, 4]),
         _vi("scan_out", FLOAT, [2, 2])],
        [_i64("st", [2]), _i64("en", [4]), _i64("ax", [1])])
    return _model(
        [helper.make_node("Loop", ["trip", "", "a"], ["acc_final", "scans"], name="loop",
                          body=body)],
        [_vi("trip", INT64, []), _vi("a", FLOAT, [2, 4]), _vi("x", FLOAT, [2, 2])],
        [_vi("acc_final", FLOAT, [2, 4]), _vi("scans", FLOAT, [None, 2, 2])],
    )


def test_a_loop_s_records_are_worded_once_not_every_iteration(monkeypatch) -> None:
    """Every iteration of a body run by one sub-plan gives the same records: they are said
    as the Loop's once, not rebuilt (and merged again) each trip, 15% of a fixed-shape
    body's time per iteration. 3 and 60 trips make as many records, and the same."""
    from backends.numpy import control

    made = []
    node_run = control.NodeRun

    def counted(*args, **kwargs):
        made.append(args)
        return node_run(*args, **kwargs)

    monkeypatch.setattr(control, "NodeRun", counted)
    model = _fixed_loop_model()
    lowered = lower(dmlgraph.load(model), "6_4")
    a = np.arange(8, dtype=np.float32).reshape(2, 4)
    x = np.full((2, 2), 0.5, np.float32)
    records, counts = [], []
    for trips in (3, 60):
        feeds = {"trip": np.array(trips, np.int64), "a": a, "x": x}
        want = _ort(model, feeds)
        del made[:]
        result = get_backend("numpy").execute(lowered, feeds)
        counts.append(len(made))
        assert np.array_equal(result.outputs["acc_final"], want[0])
        assert np.array_equal(result.outputs["scans"], want[1])
        records.append(result.record.nodes)
    assert counts[0] == counts[1] > 0
    assert records[0] == records[1]
    assert {(r.op, r.via) for r in records[0]} >= {
        ("DML_OPERATOR_SLICE", "Loop 'loop' body, lowered at run time"),
        ("DML_OPERATOR_JOIN", "Loop 'loop' body, lowered at run time"),
    }


def test_a_failure_inside_the_branch_taken_names_the_file_and_the_if(tmp_path, capsys) -> None:
    """onnxruntime fails on the then_branch's Reshape (4 elements to [5]), on the original
    model too (the oracle). The error named the model the backend made of the branch,
    "<ModelProto if.then_branch>", not the file or the If; it names both now, once."""
    then_branch = helper.make_graph(
        [helper.make_node("Reshape", ["x", "bad"], ["t0"]),
         helper.make_node("Slice", ["t0", "s0", "s1"], ["t"])],
        "then", [], [_vi("t", FLOAT, [None])], [_i64("bad", [5]), _i64("s0", [0]), _i64("s1", [2])])
    else_branch = helper.make_graph(
        [helper.make_node("Slice", ["x", "s0", "s1"], ["e"])],
        "else", [], [_vi("e", FLOAT, [None])], [_i64("s0", [0]), _i64("s1", [3])])
    model = _model(
        [helper.make_node("If", ["c"], ["y"], name="if", then_branch=then_branch,
                          else_branch=else_branch)],
        [_vi("c", BOOL, []), _vi("x", FLOAT, [4])], [_vi("y", FLOAT, [None])])
    x = np.arange(4, dtype=np.float32)
    with pytest.raises(Exception, match="Reshape"):
        _ort(model, {"c": np.array(True), "x": x})
    path = tmp_path / "ifbad.onnx"
    onnx.save(model, path)
    np.savez(tmp_path / "t.npz", c=np.array(True), x=x)
    capsys.readouterr()
    assert main(["check", str(path), "--inputs", str(tmp_path / "t.npz")]) == 2
    err = capsys.readouterr().err
    assert f"error: {path}: node 'if' (If), its then_branch: onnxruntime fails" in err
    assert "ModelProto" not in err and err.count(str(path)) == 1
    assert "Traceback" not in err


def test_a_body_s_large_enclosing_constant_is_fed_not_copied_into_each_model() -> None:
    """The body reads a weight of the main graph (5000 elements, above the 4096 that shape
    inference keeps as values) and the small Slice parameters st, en. The carried value grows,
    so the body is made a model for each of 6 input types: the weight was an initializer of
    each (and of each plan's onnxruntime sessions: 1.1 GB for a 16 MB weight, 16 keys); it
    is fed now, the small parameters still folded in. Oracle: onnxruntime."""
    weight = np.linspace(-1, 1, 5000, dtype=np.float32)
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Slice", ["w", "st", "en"], ["piece"]),
         helper.make_node("Concat", ["acc", "piece"], ["acc_out"], axis=0),
         helper.make_node("ReduceSum", ["w"], ["scan_out"], keepdims=0)],
        "body",
        [_vi("i", INT64, []), _vi("cond_in", BOOL, []), _vi("acc", FLOAT, [None])],
        [_vi("cond_out", BOOL, []), _vi("acc_out", FLOAT, [None]), _vi("scan_out", FLOAT, [])])
    model = _model(
        [helper.make_node("Loop", ["trip", "", "a"], ["acc_final", "sums"], name="loop",
                          body=body)],
        [_vi("trip", INT64, []), _vi("a", FLOAT, [None])],
        [_vi("acc_final", FLOAT, [None]), _vi("sums", FLOAT, [None])],
        [numpy_helper.from_array(weight, "w"), _i64("st", [3]), _i64("en", [5])])
    feeds = {"trip": np.array(6, np.int64), "a": np.zeros(1, np.float32)}
    want = _ort(model, feeds)
    backend = get_backend("numpy")
    lowered = lower(dmlgraph.load(model), "6_4")
    got = backend.run(lowered, feeds)
    assert np.array_equal(got["acc_final"], want[0])
    np.testing.assert_allclose(got["sums"], want[1], rtol=1e-5, atol=1e-5)
    from backends.numpy.plan import _ControlStep

    (step,) = [s for s in backend.plan(lowered)._steps if isinstance(s, _ControlStep)]
    bodies = [graph for graph, _, _ in step.control.cache.values()]
    assert len(bodies) == 6
    for graph in bodies:
        assert "w" in graph.inputs
        assert sum(graph.constant(name).size for name in graph.constants) < weight.size
    # the body's Slice of the weight runs as a DirectML operator on what is fed
    ran = _lowered_runs(backend.last_record, "Loop", "loop")
    assert ran["DML_OPERATOR_SLICE"] == "numpy DirectML emulator"


@pytest.mark.parametrize("cond", [True, False])
def test_lower_lists_each_branch_s_descriptors_as_the_enclosing_graph_types_them(
    cond, tmp_path, capsys
) -> None:
    """Before any run, each branch is lowered by itself with what it reads typed as the main
    graph types it (the lowered Slice's [2, 4] output): the then branch's Concat is a JOIN,
    the else branch's reflect Pad a PADDING. Run on the emulator from x[:, 1:5] (NumPy's
    slicing), each branch gives what onnxruntime's If gives; and the branch taken ran as the
    same operators when the model ran. Before, ``lower`` listed neither."""
    from lowering.held import held_lowerings

    model = _if_model()
    lowered = lower(dmlgraph.load(model), "6_4")
    held = {h.attribute: h for h in held_lowerings(lowered)}
    assert set(held) == {"then_branch", "else_branch"}
    attr, op = ("then_branch", "DML_OPERATOR_JOIN") if cond else (
        "else_branch", "DML_OPERATOR_PADDING")
    branch = held[attr]
    assert branch.path == f"If 'branch' {attr}" and branch.problem == ""
    assert [(i.name, str(i.dtype), i.shape) for i in branch.typed_as] == [("s", "float32", (2, 4))]
    assert [r.dml_ops for r in branch.lowered.report() if not r.at_import] == [(op,)]
    (want,) = _ort(model, {"x": X, "c": np.array(cond)})
    run = get_backend("numpy").execute(branch.lowered, {"s": X[:, 1:5]})
    (out,) = run.outputs.values()
    assert np.array_equal(out, want[:2])
    ran = get_backend("numpy").execute(lowered, {"x": X, "c": np.array(cond)})
    assert [r.op for r in ran.record.nodes if r.via.startswith(f"If 'branch' {attr}")] == [op]

    path = tmp_path / "if.onnx"
    onnx.save(model, path)
    assert main(["lower", str(path)]) == 0
    text = capsys.readouterr().out
    assert (f"If 'branch' {attr}, lowered by itself, its inputs typed as the enclosing graph "
            "types them: s float32[2,4]") in text
    assert f"descriptors: 1 {op}" in text
    assert main(["lower", str(path), "--json"]) == 0
    listed = {e["attribute"]: e for e in json.loads(capsys.readouterr().out)["subgraphs"]}
    entry = listed[attr]
    assert entry["inputs"] == [{"name": "s", "dtype": "float32", "shape": [2, 4]}]
    (dml,) = [n["dml"] for n in entry["lowered"]["nodes"] if "dml" in n]
    assert dml["type"] == op


def test_lower_lists_a_loop_body_as_its_first_trip_is_typed() -> None:
    """A body's carried value is typed as the Loop's initial value (the lowered Slice's
    [2, 4]), its iteration number and condition as int64 and bool scalars, the main graph's
    small initializers it reads by value: its Slice of x is a SLICE and its Concat a JOIN of
    [2, 4] and [2, 4]. Run on the emulator, the body's first trip gives onnxruntime's Loop
    of one trip."""
    from lowering.held import held_lowerings

    model = _loop_model()
    (body,) = held_lowerings(lower(dmlgraph.load(model), "6_4"))
    assert body.path == "Loop 'loop' body" and body.problem == ""
    assert [(i.name, str(i.dtype), i.shape) for i in body.typed_as] == [
        ("i", "int64", ()), ("cond_in", "bool", ()), ("acc", "float32", (2, 4)),
        ("x", "float32", (2, 6))]
    made = sorted(op for r in body.lowered.report() for op in r.dml_ops)
    assert made == ["DML_OPERATOR_JOIN", "DML_OPERATOR_SLICE"]
    (join,) = [n for n in body.lowered.nodes if n.op.name == "DML_OPERATOR_JOIN"]
    assert [d.sizes for d in join.op.input_tensors] == [(2, 4), (2, 4)]
    once = onnx.ModelProto()
    once.CopyFrom(model)
    once.graph.initializer[3].CopyFrom(_i64("trip", 1))
    want = _ort(once, {"x": X})
    feeds = {"i": np.array(0, np.int64), "cond_in": np.array(True), "acc": X[:, 1:5], "x": X}
    outs = get_backend("numpy").execute(body.lowered, feeds).outputs
    assert np.array_equal(outs["acc_out"], np.concatenate([X[:, 1:5], X[:, 1:5]]))
    assert np.array_equal(np.pad(outs["acc_out"], [(1, 0), (0, 2)], mode="edge"), want[0])
    assert np.array_equal(outs["scan_out"], want[1][0])


def test_lower_says_why_a_subgraph_it_cannot_lower_by_itself_is_not_listed(capsys) -> None:
    """A body holding a sequence (which dmlgraph does not import) beside its Slice: listed
    with the importer's reason, not left out in silence nor failing the command."""
    from lowering.held import held_lowerings

    body = helper.make_graph(
        [helper.make_node("SequenceConstruct", ["acc", "acc"], ["seq"]),
         helper.make_node("ConcatFromSequence", ["seq"], ["joined"], axis=0),
         helper.make_node("Slice", ["joined", "st", "en"], ["acc_out"]),
         helper.make_node("Identity", ["cond_in"], ["cond_out"])],
        "body",
        [_vi("i", INT64, []), _vi("cond_in", BOOL, []), _vi("acc", FLOAT, [None, 6])],
        [_vi("cond_out", BOOL, []), _vi("acc_out", FLOAT, [None, 6])],
        [_i64("st", [0]), _i64("en", [2])])
    model = _model(
        [helper.make_node("Loop", ["trip", "", "x"], ["y"], name="loop", body=body)],
        [_vi("x", FLOAT, [2, 6])], [_vi("y", FLOAT, [None, 6])], [_i64("trip", 2)])
    (body_held,) = held_lowerings(lower(dmlgraph.load(model), "6_4"))
    assert body_held.lowered is None
    assert body_held.problem.startswith("it cannot be lowered by itself: ")
    assert body_held.problem.endswith("unnamed node making 'seq' (SequenceConstruct, #0): 'seq' has type "
                                      "sequence_type; dmlgraph handles tensors only")


def test_a_body_s_carried_value_of_unknown_shape_is_listed_as_the_body_declares_it() -> None:
    """The Loop's initial value of unknown rank (a graph input without a shape) leaves the
    body's own declaration ([2, 6]) to type the carried value: its Slice is listed as a
    SLICE of [2, 6]; an unknown type where the body declares none either says so."""
    from lowering.held import held_lowerings

    def model(declared):
        body = helper.make_graph(
            [helper.make_node("Slice", ["acc", "st", "en"], ["acc_out"]),
             helper.make_node("Identity", ["cond_in"], ["cond_out"])],
            "body",
            [_vi("i", INT64, []), _vi("cond_in", BOOL, []), _vi("acc", FLOAT, declared)],
            [_vi("cond_out", BOOL, []), _vi("acc_out", FLOAT, None)],
            [_i64("st", [0]), _i64("en", [2])])
        return _model(
            [helper.make_node("Loop", ["trip", "", "x"], ["y"], name="loop", body=body)],
            [_vi("x", FLOAT, None)], [_vi("y", FLOAT, None)], [_i64("trip", 2)],
            checked=False)

    (held,) = held_lowerings(lower(dmlgraph.load(model([2, 6])), "6_4"))
    assert [(i.name, i.shape) for i in held.typed_as][2] == ("acc", (2, 6))
    (made,) = [n for n in held.lowered.nodes if n.op.name == "DML_OPERATOR_SLICE"]
    assert made.op.input_tensor.sizes == (2, 6)
    (held,) = held_lowerings(lower(dmlgraph.load(model(None)), "6_4"))
    assert [(i.name, i.shape) for i in held.typed_as][2] == ("acc", None)
    assert held.problem == "" and not [n for n in held.lowered.nodes if not n.is_onnx]


def test_unnamed_ifs_are_told_apart_by_what_they_make(capsys) -> None:
    """Two unnamed Ifs: each path names the first tensor its node makes, in ``lower``'s
    listing and in the run record's ``via``; both were "If 'If'" before, so neither could be
    tied to its node."""
    from lowering.held import held_lowerings

    def branch(name: str, op: str) -> onnx.GraphProto:
        node = (helper.make_node("Concat", ["x", "x"], [name], axis=0) if op == "Concat"
                else helper.make_node("Neg", ["x"], [name]))
        return helper.make_graph([node], name, [], [_vi(name, FLOAT, None)])

    model = _model(
        [helper.make_node("If", ["c"], ["r1"], then_branch=branch("a", "Concat"),
                          else_branch=branch("b", "Neg")),
         helper.make_node("If", ["c"], ["r2"], then_branch=branch("d", "Concat"),
                          else_branch=branch("e", "Neg"))],
        [_vi("x", FLOAT, [2, 6]), _vi("c", BOOL, [])],
        [_vi("r1", FLOAT, None), _vi("r2", FLOAT, None)], checked=False)
    lowered = lower(dmlgraph.load(model), "6_4")
    assert [h.path for h in held_lowerings(lowered)] == [
        "If (unnamed, making 'r1') then_branch", "If (unnamed, making 'r2') then_branch"]
    result = get_backend("numpy").execute(lowered, {"x": X, "c": np.array(True)})
    vias = sorted(r.via for r in result.record.nodes if r.op == "DML_OPERATOR_JOIN")
    assert vias == ["If (unnamed, making 'r1') then_branch, lowered at run time",
                    "If (unnamed, making 'r2') then_branch, lowered at run time"]


def test_a_carried_iteration_number_is_onnxruntime_s_known_divergence() -> None:
    """A body making its iteration number itself a carried value's next value: ONNX (and
    onnx.reference) give the last iteration's number, 5 after 6 trips, as dmlgraph does;
    onnxruntime 1.32 gives the number of trips, 6 (its counter's buffer, counted on). ``check``
    failed on it with no word; it names it at the Loop now. No trip: the initial value."""
    body = helper.make_graph(
        [helper.make_node("Identity", ["c"], ["co"])], "body",
        [_vi("i", INT64, []), _vi("c", BOOL, []), _vi("k", INT64, [])],
        [_vi("co", BOOL, []), _vi("i", INT64, [])])
    model = _model(
        [helper.make_node("Loop", ["M", "", "k0"], ["kf"], body=body, name="loop")],
        [_vi("M", INT64, []), _vi("k0", INT64, [])], [_vi("kf", INT64, [])])
    feeds = {"M": np.array(6), "k0": np.array(-7)}
    assert _ort(model, feeds)[0] == 6
    lowered = lower(dmlgraph.load(model), "6_4")
    assert get_backend("numpy").run(lowered, feeds)["kf"] == 5
    report = dmlgraph.check(model, inputs=feeds)
    assert report.passed
    (divergence,) = report.divergences
    assert divergence.node == "loop" and "iteration number itself" in divergence.note
    none = {"M": np.array(0), "k0": np.array(-7)}  # no trip: both give k0
    assert _ort(model, none)[0] == -7 == get_backend("numpy").run(lowered, none)["kf"]
    assert not dmlgraph.check(model, inputs=none).divergences


def test_a_branch_making_one_tensor_two_outputs_is_onnxruntime_s_known_divergence() -> None:
    """A then_branch making its Slice's result both of the If's outputs: ONNX gives each the
    slice, as dmlgraph does; onnxruntime 1.32 gives the first whatever its buffer held (zeros,
    uninitialized values). ``check`` failed on it with no word; it names it at the If now,
    when that branch is taken (the else_branch makes two tensors: no divergence)."""
    then_branch = helper.make_graph(
        [helper.make_node("Slice", ["x", "s", "e"], ["y"])], "then", [],
        [_vi("y", FLOAT, None), _vi("y", FLOAT, None)], [_i64("s", [1]), _i64("e", [3])])
    else_branch = helper.make_graph(
        [helper.make_node("Neg", ["x"], ["y"]), helper.make_node("Identity", ["x"], ["z"])],
        "else", [], [_vi("y", FLOAT, None), _vi("z", FLOAT, None)])
    model = _model(
        [helper.make_node("If", ["c"], ["o1", "o2"], then_branch=then_branch,
                          else_branch=else_branch, name="if")],
        [_vi("x", FLOAT, [3, 4]), _vi("c", BOOL, [])],
        [_vi("o1", FLOAT, None), _vi("o2", FLOAT, None)], checked=False)
    x = np.arange(12, dtype=np.float32).reshape(3, 4) + 1
    feeds = {"x": x, "c": np.array(True)}
    want = _ort(model, feeds)
    assert np.array_equal(want[1], x[1:3]) and not np.array_equal(want[0], x[1:3])
    got = get_backend("numpy").run(lower(dmlgraph.load(model), "6_4"), feeds)
    assert np.array_equal(got["o1"], x[1:3]) and np.array_equal(got["o2"], x[1:3])
    report = dmlgraph.check(model, inputs=feeds)
    assert report.passed
    (divergence,) = report.divergences
    assert divergence.node == "if" and "more than one of its outputs" in divergence.note
    assert "then_branch" in divergence.note
    other = {"x": x, "c": np.array(False)}
    report = dmlgraph.check(model, inputs=other)
    assert report.passed and not report.divergences


def _growing_loop(named: bool) -> onnx.ModelProto:
    """A Loop whose carried value grows a row a trip (a Slice of it concatenated), scanned as
    it is: [2, 6], then [3, 6]."""
    body = helper.make_graph(
        [helper.make_node("Slice", ["v", "s0", "s1"], ["p"]),
         helper.make_node("Concat", ["v", "p"], ["v2"], axis=0),
         helper.make_node("Identity", ["c"], ["co"]),
         helper.make_node("Identity", ["v"], ["sc"])], "body",
        [_vi("i", INT64, []), _vi("c", BOOL, []), _vi("v", FLOAT, None)],
        [_vi("co", BOOL, []), _vi("v2", FLOAT, None), _vi("sc", FLOAT, None)],
        [_i64("s0", [0]), _i64("s1", [1])])
    return _model(
        [helper.make_node("Loop", ["M", "", "x"], ["vf", "scans"], body=body,
                          name="loop" if named else "")],
        [_vi("M", INT64, []), _vi("x", FLOAT, [2, 6])],
        [_vi("vf", FLOAT, None), _vi("scans", FLOAT, None)], checked=False)


def test_a_scan_output_changing_shape_is_one_error_saying_where(tmp_path, capsys) -> None:
    """A scan output [2, 6] in iteration 0 and [3, 6] in 1 (onnxruntime fails: "Inconsistent
    shape in loop output"): the error names the output, the shapes and the iterations, and
    exits 2; it said NumPy's "all input arrays must have the same shape" with no output or
    shape."""
    model = _growing_loop(named=True)
    feeds = {"M": np.array(3), "x": X}
    with pytest.raises(Exception, match="Inconsistent shape"):
        _ort(model, feeds)
    path, inputs = tmp_path / "m.onnx", tmp_path / "in.npz"
    onnx.save(model, path)
    np.savez(inputs, **feeds)
    assert main(["check", str(path), "--inputs", str(inputs)]) == 2
    err = capsys.readouterr().err
    assert ("node 'loop' (Loop): its scan output 0 ('scans') is float32[3, 6] in iteration 1, "
            "float32[2, 6] in iteration 0") in err
    assert "all input arrays" not in err


def test_a_body_breaking_a_rule_by_the_sizes_that_arrive_is_an_error_not_run_whole() -> None:
    """A body's Concat of the carried [1, 0] and x [1, 2] on axis 0 breaks ONNX's rule, as
    it would in the main graph: it ran whole on the fallback, where onnxruntime made a
    [2, 2] of memory it never wrote (onnx.reference a [1, 0]); it is one error naming the
    Loop, the sizes and the Concat."""
    body = helper.make_graph(
        [helper.make_node("Concat", ["acc", "x"], ["acc_out"], axis=0, name="join"),
         helper.make_node("Identity", ["c"], ["co"])], "body",
        [_vi("i", INT64, []), _vi("c", BOOL, []), _vi("acc", FLOAT, None)],
        [_vi("co", BOOL, []), _vi("acc_out", FLOAT, None)])
    model = _model(
        [helper.make_node("Loop", ["trip", "", "a0"], ["y"], name="loop", body=body)],
        [_vi("x", FLOAT, [1, 2]), _vi("a0", FLOAT, [1, None])], [_vi("y", FLOAT, None)],
        [_i64("trip", 3)], checked=False)
    feeds = {"x": np.ones((1, 2), np.float32), "a0": np.zeros((1, 0), np.float32)}
    lowered = lower(dmlgraph.load(model), "6_4")
    for fallback in ("onnxruntime", "reference"):
        with pytest.raises(dmlgraph.DmlgraphError) as caught:
            get_backend("numpy", fallback=fallback).run(lowered, feeds)
        assert ("node 'loop' (Loop): its body, run with 'x': [1, 2], 'i': [], 'c': [], "
                "'acc': [1, 0], breaks a rule: node 'join' (Concat): inputs differ in "
                "dimension 1") in str(caught.value)


def test_a_segment_onnxruntime_fails_on_names_an_unnamed_node_by_what_it_makes() -> None:
    """A body (of a sequence, which dmlgraph does not import) whose ConcatFromSequence
    cannot join its inputs runs on the fallback, which fails: its message named the unnamed
    Loop "?"; it names it by the first tensor it makes."""
    body = helper.make_graph(
        [helper.make_node("Slice", ["v", "s0", "s1"], ["p"]),
         helper.make_node("SequenceConstruct", ["p", "v"], ["seq"]),
         helper.make_node("ConcatFromSequence", ["seq"], ["q"], axis=1),
         helper.make_node("Identity", ["c"], ["co"])], "body",
        [_vi("i", INT64, []), _vi("c", BOOL, []), _vi("v", FLOAT, None)],
        [_vi("co", BOOL, []), _vi("q", FLOAT, None)], [_i64("s0", [0]), _i64("s1", [1])])
    model = _model(
        [helper.make_node("Loop", ["M", "", "x"], ["vf"], body=body)],
        [_vi("M", INT64, []), _vi("x", FLOAT, [2, 6])], [_vi("vf", FLOAT, None)],
        checked=False)
    with pytest.raises(dmlgraph.DmlgraphError) as caught:
        get_backend("numpy").run(lower(dmlgraph.load(model), "6_4"),
                                 {"M": np.array(2), "x": X})
    assert "onnxruntime fails on node(s) (unnamed, making 'vf') (Loop)" in str(caught.value)


@pytest.mark.parametrize("axis", [0, 1])
def test_a_scan_of_empty_inputs_making_scan_outputs_is_one_error_not_a_crash(
    axis, tmp_path
) -> None:
    """A Scan of sequence length 0 with a scan output (a generated case of the fuzzer's, made
    small): no iteration tells the output's shape, so it ran whole on the fallback, where
    onnxruntime 1.32 fails on it along axis 0 and kills the process with SIGFPE along any
    other (`run` exited 136 with no word). Now it is one error naming the node, whichever
    fallback; run in a child process, as the crash would end this one."""
    body = helper.make_graph(
        [helper.make_node("Concat", ["row", "row"], ["twice"], axis=0)], "body",
        [_vi("row", FLOAT, [2])], [_vi("twice", FLOAT, [4])])
    shape = [2, 0] if axis else [0, 2]
    model = _model(
        [helper.make_node("Scan", ["x"], ["rows"], name="scan", body=body, num_scan_inputs=1,
                          scan_input_axes=[axis])],
        [_vi("x", FLOAT, shape)], [_vi("rows", FLOAT, [0, 4])])
    path = tmp_path / "scan.onnx"
    onnx.save(model, path)
    for fallback in ("onnxruntime", "reference"):
        done = subprocess.run(
            [sys.executable, "-m", "dmlgraph", "run", str(path), "--fallback", fallback],
            capture_output=True, text=True, cwd=Path(__file__).parent.parent)
        assert done.returncode == 2, (done.returncode, done.stderr)
        assert done.stderr.count("dmlgraph: error: ") == 1
        assert "node 'scan' (Scan): its scan inputs are empty" in done.stderr


def _declaring(**declared: onnx.ValueInfoProto) -> onnx.ModelProto:
    """A Loop of 3 trips negating x [2, 6] (carried as acc), whose body declares its inputs
    i, cond_in and acc as int64[], bool[] and float32[2, 6] but where ``declared`` says."""
    inputs = {"i": _vi("i", INT64, []), "cond_in": _vi("cond_in", BOOL, []),
              "acc": _vi("acc", FLOAT, [2, 6]), **declared}
    elem = inputs["acc"].type.tensor_type.elem_type or FLOAT  # (a carried value keeps it)
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Neg", ["acc"], ["acc_out"])],
        "body", list(inputs.values()), [_vi("cond_out", BOOL, []), _vi("acc_out", elem, None)])
    return _model([helper.make_node("Loop", ["trip", "", "x"], ["y"], name="loop", body=body)],
                  [_vi("x", FLOAT, [2, "n"])], [_vi("y", FLOAT, None)], [_i64("trip", 3)],
                  checked=False)


@pytest.mark.parametrize("declared, says", [
    (_vi("i", INT64, [2]), "its body declares its iteration number 'i' as int64[2]; a Loop "
                           "feeds it a scalar, int64[], as ONNX says"),
    (_vi("i", FLOAT, []), "its body declares its iteration number 'i' as float32[]"),
    (_vi("cond_in", INT64, []), "its body declares its condition 'cond_in' as int64[]; a Loop "
                                "feeds it a scalar, bool[], as ONNX says"),
    (_vi("cond_in", BOOL, [3]), "its body declares its condition 'cond_in' as bool[3]"),
    (helper.make_tensor_sequence_value_info("acc", FLOAT, None),
     "its body declares carried value 'acc' as a sequence, and the Loop feeds it 'x', a "
     "float32 tensor; a Loop's body takes each carried value as the Loop is given it"),
    (_vi("acc", INT64, None), "its body declares carried value 'acc' as int64 of any shape, "
                              "and the Loop feeds it 'x', a float32 tensor"),
])
def test_a_loop_body_declaring_an_input_against_what_onnx_feeds_it_is_refused_at_load(
    declared, says
) -> None:
    """ONNX feeds a Loop's body a scalar int64 iteration number, a scalar bool condition and
    each carried value as the Loop is given it. A body declaring otherwise is one error at
    load naming the node, the body's input, the declared and the fed type: onnxruntime
    refuses the element types and kinds at load and runs an int64[2] iteration number (or a
    bool[3] condition) by a reading of its own; dmlgraph ran each, retyping the body's
    inputs to what arrived (the int64 carried value was refused only for the Loop's output,
    "the model declares 'y' FLOAT, but the node makes int64")."""
    model = _declaring(**{declared.name: declared})
    with pytest.raises(ModelValidationError, match=re.escape(f"node 'loop' (Loop, #0): {says}")):
        dmlgraph.load(model)


def _undefined(name: str, shape=None) -> onnx.ValueInfoProto:
    """A value typed a tensor of element type 0 (UNDEFINED), of ``shape`` where given."""
    value = onnx.ValueInfoProto(name=name)
    value.type.tensor_type.SetInParent()
    for size in shape or ():
        value.type.tensor_type.shape.dim.add().dim_value = size
    return value


def _made_untyped(where: str) -> onnx.ModelProto:
    """A Loop negating x (``_declaring``) whose body declares what a node makes (its
    output acc_out, or t = Neg(acc) in its value_info) of element type 0, or an If whose
    then_branch does."""
    if where == "if output":
        then = helper.make_graph([helper.make_node("Neg", ["x"], ["a"])], "then", [],
                                 [_undefined("a")])
        other = helper.make_graph([helper.make_node("Identity", ["x"], ["b"])], "else", [],
                                  [_vi("b", FLOAT, [2, 6])])
        return _model([helper.make_node("If", ["c"], ["y"], name="if", then_branch=then,
                                        else_branch=other)],
                      [_vi("x", FLOAT, [2, 6]), _vi("c", BOOL, [])], [_vi("y", FLOAT, None)],
                      checked=False)
    model = _declaring()
    body = model.graph.node[0].attribute[0].g
    if where == "loop output":
        body.output[1].CopyFrom(_undefined("acc_out"))
    else:
        body.node[1].output[0] = "t"
        body.node.append(helper.make_node("Identity", ["t"], ["acc_out"]))
        body.value_info.append(_undefined("t"))
    return model


@pytest.mark.parametrize("case, says", [
    ("i", "its body declares input 'i' a tensor of element type 0 (UNDEFINED)"),
    ("cond_in", "its body declares input 'cond_in' a tensor of element type 0 (UNDEFINED)"),
    ("acc", "its body declares input 'acc' a tensor of element type 0 (UNDEFINED)"),
    ("acc [2, 6]", "its body declares input 'acc' a tensor of element type 0 (UNDEFINED)"),
    ("loop output", "its body declares output 'acc_out' a tensor of element type 0"),
    ("loop value_info", "its body declares value_info entry 't' a tensor of element type 0"),
    ("if output", "its then_branch declares output 'a' a tensor of element type 0"),
])
def test_a_subgraph_declaring_a_tensor_of_element_type_0_is_refused_at_load(case, says) -> None:
    """A body input declared a tensor whose element type is 0 (UNDEFINED; with or without a
    shape), or an output or value_info entry a node of the subgraph makes: ONNX requires a
    tensor type's element type (a subgraph's value may leave its whole type out instead, and
    onnxruntime runs that), and onnxruntime refuses the model at load ("Invalid tensor data
    type 0"), where onnx's checker and onnx.reference pass it. dmlgraph ran it, the body
    typed by what arrived; it is now one error at load naming the node and the value."""
    if case in ("loop output", "loop value_info", "if output"):
        model, feeds = _made_untyped(case), {"x": X, "c": np.array(True)}
    else:
        name, _, shape = case.partition(" ")
        model, feeds = _declaring(**{name: _undefined(name, [2, 6] if shape else None)}), {"x": X}
    feeds = {k: v for k, v in feeds.items() if k in {i.name for i in model.graph.input}}
    with pytest.raises(Exception, match="Invalid tensor data type 0"):
        _ort(model, feeds)
    node = "'if' (If, #0)" if case == "if output" else "'loop' (Loop, #0)"
    with pytest.raises(ModelValidationError, match=re.escape(f"node {node}: {says}")):
        dmlgraph.load(model)


def test_a_body_output_of_element_type_0_naming_its_input_runs() -> None:
    """A body output of element type 0 naming the body's own input (its carried value passed
    through) is typed by that input, as a main graph's output naming a graph input is:
    onnxruntime runs the model, and so does dmlgraph."""
    body = helper.make_graph(
        [], "body", [_vi("i", INT64, []), _vi("cond_in", BOOL, []), _vi("acc", FLOAT, [2, 6])],
        [_vi("cond_in", BOOL, []), _undefined("acc")])
    model = _model([helper.make_node("Loop", ["trip", "c", "x"], ["y"], name="loop", body=body)],
                   [_vi("x", FLOAT, [2, 6]), _vi("c", BOOL, [])], [_vi("y", FLOAT, None)],
                   [_i64("trip", 3)], checked=False)
    feeds = {"x": X, "c": np.array(True)}
    (want,) = _ort(model, feeds)
    got = get_backend("numpy").run(lower(dmlgraph.load(model), "6_4"), feeds)["y"]
    assert np.array_equal(got, want) and np.array_equal(got, X)


def test_a_loop_body_declaring_no_type_or_shape_for_its_counter_loads_and_runs() -> None:
    """A body's input declared of no shape takes what the Loop feeds it, as ONNX
    says (onnxruntime 1.32 fails on an iteration number of unknown shape: "Loop subgraph
    input 0 has unknown shape"). Oracle: x negated 3 times."""
    model = _declaring(i=_vi("i", INT64, None), cond_in=_vi("cond_in", BOOL, None),
                       acc=_vi("acc", FLOAT, None))
    result = get_backend("numpy").run(lower(dmlgraph.load(model), "6_4"), {"x": X})
    assert np.array_equal(result["y"], -X)


def test_a_body_input_of_another_size_than_it_declares_is_one_error_at_run(
    tmp_path, capsys
) -> None:
    """x declared [2, n], fed [2, 5]: the body's acc, declared [2, 6], gets [2, 5]. As a main
    graph's input declared [2, 6] fed [2, 5] is refused, it is one error naming the Loop, the
    body's input and both shapes, exit 2 (onnxruntime runs the body by what arrives, as
    dmlgraph did)."""
    feeds = {"x": np.zeros((2, 5), np.float32)}
    _ort(_declaring(), feeds)  # (runs)
    path, inputs = tmp_path / "m.onnx", tmp_path / "in.npz"
    onnx.save(_declaring(), path)
    np.savez(inputs, **feeds)
    assert main(["run", str(path), "--inputs", str(inputs)]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert ("node 'loop' (Loop): its body's input 'acc' is float32[2,5] as it arrives; the "
            "body declares it float32[2,6]") in err
    assert "Traceback" not in err
    result = get_backend("numpy").run(lower(dmlgraph.load(_declaring()), "6_4"), {"x": X})
    assert np.array_equal(result["y"], -X)  # [2, 6] as declared: runs


def _growing(acc_out) -> onnx.ModelProto:
    """A Loop of 2 trips appending 7 to x [2] (carried as acc), its body declaring acc
    float32[2] and the value it makes ``acc_out``."""
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Concat", ["acc", "seven"], ["acc_out"], axis=0)],
        "body", [_vi("i", INT64, []), _vi("cond_in", BOOL, []), _vi("acc", FLOAT, [2])],
        [_vi("cond_out", BOOL, []), _vi("acc_out", FLOAT, acc_out)],
        [numpy_helper.from_array(np.array([7], np.float32), "seven")])
    return _model([helper.make_node("Loop", ["trip", "", "x"], ["y"], name="loop", body=body)],
                  [_vi("x", FLOAT, [2])], [_vi("y", FLOAT, None)], [_i64("trip", 2)],
                  checked=False)


@pytest.mark.parametrize("fallback", ["onnxruntime", "reference"])
@pytest.mark.parametrize("acc_out", [None, [3], [2], ["n"]])
def test_a_carried_value_growing_past_its_body_s_declaration_runs_as_onnxruntime_does(
    acc_out, fallback
) -> None:
    """x [2] given as acc, which the body declares float32[2] and makes [3], then [4]: ONNX
    lets a Loop's carried values change shape from trip to trip (onnx's inference clears
    their shapes before it infers the body), and onnxruntime loads and runs the model, [0,
    1, 7, 7]. dmlgraph held the second trip's [3] to the body's [2] ("its body's input 'acc'
    is float32[3] as it arrives"); it holds carried values to the declarations as the Loop is
    given them, as before, and runs the later trips by what the body made."""
    model = _growing(acc_out)
    feeds = {"x": np.array([0, 1], np.float32)}
    (want,) = _ort(model, feeds)
    assert want.tolist() == [0, 1, 7, 7]
    result = get_backend("numpy", fallback=fallback).run(lower(dmlgraph.load(model), "6_4"),
                                                         feeds)
    assert result["y"].dtype == want.dtype and np.array_equal(result["y"], want)


def test_a_body_s_named_dimension_of_two_sizes_is_one_error_at_run() -> None:
    """A Scan body declaring its state s and its slice r both [n], fed a state of 4 and
    slices of 5, breaks its own declaration, as a main graph's two inputs of one named
    dimension fed two sizes do: one error naming both (the body ran, passing both on)."""
    body = helper.make_graph(
        [helper.make_node("Identity", ["s"], ["s_out"]),
         helper.make_node("Identity", ["r"], ["r_out"])], "body",
        [_vi("s", FLOAT, ["n"]), _vi("r", FLOAT, ["n"])],
        [_vi("s_out", FLOAT, None), _vi("r_out", FLOAT, None)])
    model = _model(
        [helper.make_node("Scan", ["s0", "x"], ["sf", "rs"], name="scan", body=body,
                          num_scan_inputs=1)],
        [_vi("s0", FLOAT, ["a"]), _vi("x", FLOAT, [3, "b"])],
        [_vi("sf", FLOAT, None), _vi("rs", FLOAT, None)], checked=False)
    lowered = lower(dmlgraph.load(model), "6_4")
    feeds = {"s0": np.zeros(4, np.float32), "x": np.ones((3, 5), np.float32)}
    with pytest.raises(BackendError, match=re.escape(
            "node 'scan' (Scan): its body's dimension 'n' is 4 in input 's' (axis 0) but 5 in "
            "input 'r' (axis 0) as they arrive")):
        get_backend("numpy").run(lowered, feeds)


def test_a_misfit_loop_inside_a_branch_is_refused_at_load_as_the_main_graph_s() -> None:
    """An If whose then branch holds a Loop whose body declares its iteration number
    int64[2]: the branch, imported when it ran, was refused, so the If ran whole on
    onnxruntime, which ran the body by its own reading; it is the main graph's error,
    naming the If, the branch and the Loop."""
    inner = _declaring(i=_vi("i", INT64, [2]))
    then = helper.make_graph(list(inner.graph.node), "then", [], [_vi("y", FLOAT, None)],
                             list(inner.graph.initializer))
    other = helper.make_graph([helper.make_node("Identity", ["x"], ["z"])], "else", [],
                              [_vi("z", FLOAT, None)])
    model = _model(
        [helper.make_node("If", ["c"], ["out"], name="if", then_branch=then, else_branch=other)],
        [_vi("x", FLOAT, [2, 6]), _vi("c", BOOL, [])], [_vi("out", FLOAT, None)],
        checked=False)
    with pytest.raises(ModelValidationError, match=re.escape(
            "node 'if' (If, #0): attribute 'then_branch' holds a subgraph whose node 'loop' "
            "(Loop): its body declares its iteration number 'i' as int64[2]")):
        dmlgraph.load(model)


def test_a_loop_in_a_branch_fed_another_type_than_its_body_declares_is_one_error_at_run(
    tmp_path, capsys
) -> None:
    """A branch's Loop whose body declares its carried value int64 while x, from the main
    graph, is float32: no load sees what the branch feeds it, and the branch, imported when
    it ran, was refused, so the If ran whole on onnxruntime, whose words were "Tensor element
    type mismatch. 1 != 7". It is one error naming the If, the branch, the Loop, the body's
    input and both types, exit 2."""
    inner = _declaring(acc=_vi("acc", INT64, None))
    then = helper.make_graph(list(inner.graph.node), "then", [], [_vi("y", INT64, None)],
                             list(inner.graph.initializer))
    other = helper.make_graph([helper.make_node("Cast", ["x"], ["z"], to=INT64)], "else", [],
                              [_vi("z", INT64, None)])
    model = _model(
        [helper.make_node("If", ["c"], ["out"], name="if", then_branch=then, else_branch=other)],
        [_vi("x", FLOAT, [2, 6]), _vi("c", BOOL, [])], [_vi("out", INT64, None)],
        checked=False)
    path, inputs = tmp_path / "m.onnx", tmp_path / "in.npz"
    onnx.save(model, path)
    np.savez(inputs, x=X, c=np.array(True))
    assert main(["run", str(path), "--inputs", str(inputs)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "node 'if' (If): its then_branch" in err and (
        "node 'loop' (Loop, #0): its body declares carried value 'acc' as int64 of any shape, "
        "and the Loop feeds it 'x', a float32 tensor") in err, err


def _sliced_at_half_its_shape(kind: str, width: int, where: str) -> onnx.ModelProto:
    """A Loop of 2 trips (or a Scan over e[2, 1]) whose body Slices x float[2, width] on
    axis 1 from Shape(x)[1] // 2, that start computed in the main graph from x (``where``
    "outer": the body reads it from the enclosing graph) or in the body from the outer x
    ("body"); y stacks each trip's slice."""
    def chain(pre: str) -> list[onnx.NodeProto]:
        return [helper.make_node("Shape", ["x"], [f"{pre}shape"]),
                helper.make_node("Gather", [f"{pre}shape", "one"], [f"{pre}d1"], axis=0),
                helper.make_node("Div", [f"{pre}d1", "two"], [f"{pre}half"]),
                helper.make_node("Unsqueeze", [f"{pre}half", "axis"], [f"{pre}starts"])]

    pre = "" if where == "outer" else "b_"
    nodes = [*(chain(pre) if where == "body" else []),
             helper.make_node("Slice", ["x", f"{pre}starts", "end", "axis1"], ["sl"])]
    if kind == "Loop":
        body = helper.make_graph(
            [*nodes, helper.make_node("Identity", ["c"], ["co"])], "body",
            [_vi("i", INT64, []), _vi("c", BOOL, [])],
            [_vi("co", BOOL, []), _vi("sl", FLOAT, None)])
        node = helper.make_node("Loop", ["trip", ""], ["y"], body=body, name="loop")
        extra = []
    else:
        body = helper.make_graph(
            [*nodes, helper.make_node("Identity", ["s"], ["so"])], "body",
            [_vi("s", FLOAT, [1]), _vi("e", FLOAT, [1])],
            [_vi("so", FLOAT, [1]), _vi("sl", FLOAT, None)])
        node = helper.make_node("Scan", ["s0", "e0"], ["s_last", "y"], body=body, name="scan",
                                num_scan_inputs=1)
        extra = [_vi("s0", FLOAT, [1]), _vi("e0", FLOAT, [2, 1])]
    return _model(
        [*(chain(pre) if where == "outer" else []), node],
        [_vi("x", FLOAT, [2, width]), *extra], [_vi("y", FLOAT, None)],
        [_i64("one", 1), _i64("two", 2), _i64("axis", [0]), _i64("end", [2**62]),
         _i64("axis1", [1]), _i64("trip", 2)], checked=False)


@pytest.mark.parametrize("width", [6, folding.LONG_VECTOR + 904])
@pytest.mark.parametrize("where", ["outer", "body"])
@pytest.mark.parametrize("kind", ["Loop", "Scan"])
def test_a_body_s_slice_at_a_start_an_outer_shape_computes_is_a_directml_slice(
    kind: str, where: str, width: int
) -> None:
    """A body's Slice whose start a Shape chain of the main graph's x computes (in the main
    graph, or in the body from the outer x; x long enough that its length is hidden from
    onnx's propagation, or not) is known statically: ``lower`` lists it as a SLICE of the
    body, the numpy backend runs it as one, and ``check`` holds against onnxruntime, whose
    outputs the run gives. (The main graph's Shape a body reads stays unknown in onnx's
    inference of the body; dmlgraph's own import of the body, typed as the enclosing graph
    types it with its constants, folds the chain.)"""
    from dmlgraph import check
    from lowering.held import held_lowerings

    model = _sliced_at_half_its_shape(kind, width, where)
    feeds = {"x": np.arange(2 * width, dtype=np.float32).reshape(2, width) / 7}
    if kind == "Scan":
        feeds |= {"s0": np.zeros(1, np.float32), "e0": np.ones((2, 1), np.float32)}
    lowered = lower(dmlgraph.load(model), "6_4")
    (held,) = held_lowerings(lowered)
    assert held.problem == ""
    (made,) = [n for n in held.lowered.nodes if not n.is_onnx]
    assert made.op.name == "DML_OPERATOR_SLICE"
    assert made.op.input_tensor.sizes[-2:] == (2, width)
    assert made.op.output_tensor.sizes[-2:] == (2, width - width // 2)
    result = get_backend("numpy").execute(lowered, feeds)
    (want,) = _ort(model, feeds)[-1:]
    assert want.shape == (2, 2, width - width // 2)
    assert np.array_equal(result.outputs["y"], want)
    assert [r.op for r in result.record.nodes if r.node == "(unnamed, making 'sl')"] == [
        "DML_OPERATOR_SLICE"]
    report = check(model, inputs=feeds)
    assert report.exit_code == 0


def test_a_loop_of_no_trip_is_recorded_as_running_no_iteration(capsys, tmp_path) -> None:
    """A Loop whose trip count is 0 at run time ran no body, and its record named the engine
    "nothing (folded or eliminated when lowered at run time)": `run` printed "1 nothing
    (folded or eliminated ...)" of a Loop that was neither (a new user's walkthrough).
    Oracle: onnxruntime's result is the Loop's initial value, so no trip ran."""
    from backends.base import NO_ITERATION

    body = helper.make_graph(
        [helper.make_node("Concat", ["acc", "x"], ["acc2"], axis=0, name="grow"),
         helper.make_node("Identity", ["cond"], ["cond2"], name="keep")], "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc", TensorProto.FLOAT, None)],
        [helper.make_tensor_value_info("cond2", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc2", TensorProto.FLOAT, None)])
    graph = helper.make_graph(
        [helper.make_node("Loop", ["trip", "", "acc0"], ["out"], body=body, name="loop")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4]),
         helper.make_tensor_value_info("trip", TensorProto.INT64, []),
         helper.make_tensor_value_info("acc0", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    acc0 = np.arange(4, dtype=np.float32).reshape(1, 4)
    feeds = {"x": np.ones((3, 4), np.float32), "acc0": acc0}
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    lowered = lower(dmlgraph.load(model), "6_4")
    for trip, engines in ((0, {NO_ITERATION: 1}), (2, {"numpy DirectML emulator": 1,
                                                       "onnxruntime:CPUExecutionProvider": 1})):
        feeds["trip"] = np.array(trip, np.int64)
        (want,) = session.run(None, feeds)
        assert want.shape == (1 + 3 * trip, 4) and np.array_equal(want[:1], acc0)
        result = get_backend("numpy").execute(lowered, feeds)
        assert np.array_equal(result.outputs["out"], want)
        assert result.record.engines() == engines
    path, inputs = tmp_path / "loop.onnx", tmp_path / "in.npz"
    onnx.save(model, path)
    np.savez(inputs, **{**feeds, "trip": np.array(0, np.int64)})
    assert main(["run", str(path), "--inputs", str(inputs)]) == 0
    assert "ran: 1 node: nothing (its body ran no iteration)" in capsys.readouterr().out
