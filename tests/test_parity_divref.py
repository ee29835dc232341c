"""Outputs onnxruntime fails on at a known divergence, compared with onnx.reference where it
computes what ONNX says at the divergent node (``parity.SPEC_REFERENCE_DIVERGENCES``), and
``run --backend onnxruntime``'s hint there. Oracles: onnxruntime's own failure, asserted
first, and onnx.reference (each case's ONNX result written out too)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from dmlgraph import check, load
from dmlgraph.cli import main
from dmlgraph.parity import (
    SPEC_REFERENCE_DIVERGENCES,
    ParityReport,
    Verdict,
    known_divergences,
)
from lowering import lower


def _model(nodes, inputs, outputs, inits=(), opset: int = 19, ir: int = 10) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = ir
    return model


def _info(name: str, shape, elem: int = TensorProto.FLOAT) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem, shape)


def _ints(name: str, values) -> onnx.TensorProto:
    return numpy_helper.from_array(np.array(values, np.int64), name)


def _ort_fails(model: onnx.ModelProto, feeds, match: str) -> None:
    with pytest.raises(Exception, match=match):
        session = ort.InferenceSession(model.SerializeToString(),
                                       providers=["CPUExecutionProvider"])
        session.run(None, feeds)


def _fails_on_both_without_hint(model: onnx.ModelProto, feeds, at: str, reference: str,
                                said: str) -> None:
    """onnxruntime fails (``at``) and onnx.reference fails too (``reference``): check's error
    (``said``) names no divergence, since the fallback it would send to fails as well."""
    from onnx.reference import ReferenceEvaluator

    from dmlgraph.errors import DmlgraphError

    _ort_fails(model, feeds, at)
    with pytest.raises(Exception, match=reference):
        ReferenceEvaluator(model).run(None, feeds)
    with pytest.raises(DmlgraphError, match=said) as raised:
        check(model, inputs=feeds)
    assert "divergence" not in str(raised.value)


def _run_on_onnxruntime_names_no_divergence(tmp_path: Path, capsys, model: onnx.ModelProto,
                                            feeds, said: str) -> None:
    """``run --backend onnxruntime`` fails (exit 2) with ``said`` and names no divergence."""
    path, inputs = tmp_path / "m.onnx", tmp_path / "in.npz"
    onnx.save(model, path)
    np.savez(inputs, **feeds)
    assert main(["run", str(path), "--backend", "onnxruntime", "--inputs", str(inputs)]) == 2
    error = capsys.readouterr().err
    assert said in error and "divergence" not in error


def _wrap_of_empty() -> tuple[onnx.ModelProto, dict, str]:
    """A wrap Pad of an empty input (ONNX: empty, [0, 5]) beside a Neg onnxruntime runs."""
    model = _model([helper.make_node("Pad", ["X", "p"], ["Y"], mode="wrap", name="wrap"),
                    helper.make_node("Neg", ["Z"], ["W"], name="neg")],
                   [_info("X", [0, 3]), _info("Z", [2])], [_info("Y", None), _info("W", None)],
                   [_ints("p", [0, 1, 0, 1])])
    feeds = {"X": np.zeros((0, 3), np.float32), "Z": np.array([1, -2], np.float32)}
    return model, feeds, "Unexpected mode of 3"


def _reversed_slice_into_add() -> tuple[onnx.ModelProto, dict, str]:
    """A Slice whose INT64_MAX end with step -1 ONNX clamps (empty) and onnxruntime reads as
    'through index 0' ([4]), added to a [0]: onnxruntime fails at the Add, downstream."""
    model = _model([helper.make_node("Slice", ["X", "s", "e", "a", "t"], ["S"], name="slice"),
                    helper.make_node("Add", ["S", "Z"], ["Y"], name="add")],
                   [_info("X", [5]), _info("Z", [0])], [_info("Y", None)],
                   [_ints("s", [3]), _ints("e", [2**63 - 1]), _ints("a", [0]),
                    _ints("t", [-1])], opset=13)
    feeds = {"X": np.arange(5, dtype=np.float32), "Z": np.zeros(0, np.float32)}
    return model, feeds, "Name:'add'"


def _concat_1(axis: bool = True) -> tuple[onnx.ModelProto, dict, str]:
    """A Concat-1 (onnxruntime has no kernel before opset 4) of X with itself along axis 1."""
    attrs = {"axis": 1} if axis else {}
    model = _model([helper.make_node("Concat", ["X", "X"], ["Y"], name="cat", **attrs)],
                   [_info("X", [2, 3])], [_info("Y", None)], opset=3, ir=3)
    return model, {"X": np.arange(6, dtype=np.float32).reshape(2, 3)}, "Concat\\(1\\)"


def _scalar_pad() -> tuple[onnx.ModelProto, dict, str]:
    """A Pad of a scalar (empty pads): ONNX's result is the input; onnx.reference's Pad (as
    ``fallback`` replaces it) handed np.pad the empty widths, which it refused."""
    model = _model([helper.make_node("Pad", ["X", "e"], ["Y"], name="pad")],
                   [_info("X", [], TensorProto.INT8)], [_info("Y", None, TensorProto.INT8)],
                   [_ints("e", [])], opset=13)
    return model, {"X": np.array(7, np.int8)}, "Pad"


def _scalar_slice() -> tuple[onnx.ModelProto, dict, str]:
    """A Slice of a scalar (empty starts and ends): ONNX's result is the input."""
    model = _model([helper.make_node("Slice", ["X", "e", "e"], ["Y"], name="slice")],
                   [_info("X", [], TensorProto.INT8)], [_info("Y", None, TensorProto.INT8)],
                   [_ints("e", [])], opset=13)
    return model, {"X": np.array(7, np.int8)}, "Cannot slice scalars"


def _loop(counter: onnx.ValueInfoProto | None = None, cond: onnx.ValueInfoProto | None = None,
          trips: int = 3) -> tuple[onnx.ModelProto, dict, str]:
    """A Loop adding 1 to X each trip whose body declares its iteration number with no type
    (``counter``: else as given), as ONNX allows: onnxruntime fails when it runs it."""
    body = helper.make_graph(
        [helper.make_node("Add", ["v", "one"], ["v2"]),
         helper.make_node("Identity", ["c"], ["c2"])],
        "body",
        [counter or onnx.ValueInfoProto(name="i"),
         cond or _info("c", [], TensorProto.BOOL), _info("v", [2])],
        [_info("c2", [], TensorProto.BOOL), _info("v2", [2])],
        [numpy_helper.from_array(np.ones(2, np.float32), "one")])
    model = _model([helper.make_node("Loop", ["M", "", "X"], ["Y"], body=body, name="loop")],
                   [_info("X", [2])], [_info("Y", [2])], [_ints("M", trips)], opset=13)
    return model, {"X": np.array([1, -2], np.float32)}, "Loop subgraph input 0 has unknown shape"


def _squeeze_into_concat() -> tuple[onnx.ModelProto, dict, str]:
    """A Squeeze of X [1, 3, 1] by an empty axes list (ONNX: nothing squeezed; onnxruntime:
    [3]) joined with X on axis 0: onnxruntime fails at the Concat, downstream."""
    model = _model([helper.make_node("Squeeze", ["X", "e"], ["S"], name="squeeze"),
                    helper.make_node("Concat", ["S", "X"], ["Y"], axis=0, name="cat")],
                   [_info("X", [1, 3, 1])], [_info("Y", None)], [_ints("e", [])], opset=13)
    return model, {"X": np.arange(3, dtype=np.float32).reshape(1, 3, 1)}, "Name:'cat'"


def _scan_8(lengths: list[int] | None, steps: int = 3) -> tuple[onnx.ModelProto, dict, str]:
    """A Scan-8 summing each batch entry's steps into its state (initial [1, 1] and [2, 2]),
    ``lengths`` its sequence_lens (None: left out)."""
    body = helper.make_graph([helper.make_node("Add", ["s", "x"], ["s2"])], "body",
                             [_info("s", [2]), _info("x", [2])], [_info("s2", [2])])
    inits = [] if lengths is None else [_ints("L", lengths)]
    model = _model([helper.make_node("Scan", ["" if lengths is None else "L", "S", "X"], ["Y"],
                                     body=body, num_scan_inputs=1, name="scan")],
                   [_info("S", [2, 2]), _info("X", [2, steps, 2])], [_info("Y", [2, 2])],
                   inits, opset=8, ir=8)
    feeds = {"S": np.array([[1, 1], [2, 2]], np.float32),
             "X": np.ones((2, steps, 2), np.float32)}
    return model, feeds, "Invalid entries in sequence_lens"


def _scan_9_of_no_step() -> tuple[onnx.ModelProto, dict, str]:
    """A Scan-9+ of empty scan inputs and no scan outputs: ONNX's final state is the initial
    one; onnxruntime fails."""
    body = helper.make_graph([helper.make_node("Add", ["s", "x"], ["s2"])], "body",
                             [_info("s", [2]), _info("x", [2])], [_info("s2", [2])])
    model = _model([helper.make_node("Scan", ["S", "X"], ["Y"], body=body, num_scan_inputs=1,
                                     name="scan")],
                   [_info("S", [2]), _info("X", [0, 2])], [_info("Y", [2])], opset=13)
    return model, {"S": np.array([1, 2], np.float32), "X": np.zeros((0, 2), np.float32)}, (
        "Invalid dim0_offset of 0")


@pytest.mark.parametrize("case, node, onnx_result, fallback", [
    (_loop, "loop", np.array([4, 1], np.float32), "onnxruntime"),
    (_loop, "loop", np.array([4, 1], np.float32), "reference"),
    (lambda: _loop(trips=0), "loop", np.array([1, -2], np.float32), "onnxruntime"),
    (_squeeze_into_concat, "squeeze",
     np.tile(np.arange(3, dtype=np.float32).reshape(1, 3, 1), (2, 1, 1)), "reference"),
    (_scan_9_of_no_step, "scan", np.array([1, 2], np.float32), "onnxruntime"),
    (_scan_9_of_no_step, "scan", np.array([1, 2], np.float32), "reference"),
])
def test_an_output_onnxruntime_fails_on_past_these_divergences_is_compared_with_onnx_reference(
    case, node: str, onnx_result: np.ndarray, fallback: str
) -> None:
    """``check`` stopped with onnxruntime's error (exit 2): a Loop body's untyped iteration
    number, a Squeeze by an empty axes list (with ``--fallback reference``, which squeezes as
    ONNX says, as the lowering sizes what follows), a Scan-9+ of no step."""
    model, feeds, words = case()
    _ort_fails(model, feeds, words)
    report = check(model, inputs=feeds, fallback=fallback)
    (comparison,) = report.comparisons
    (y,) = comparison.outputs
    assert y.compared and y.verdict is Verdict.PASS
    assert y.expected_shape == onnx_result.shape
    assert y.message.startswith("compared with onnx.reference: onnxruntime fails at a known "
                                "divergence")
    assert comparison.expected == "onnx.reference on the original model for 'Y'"
    assert f"it computes what ONNX says at node '{node}'" in comparison.note
    (divergence,) = report.divergences
    assert divergence.node == node and divergence.reference_follows_spec
    assert report.exit_code == 0


@pytest.mark.parametrize("lengths, steps", [([3, 0], 3), ([0, 0], 0)])
def test_a_scan_8_sequence_length_of_0_is_named_but_not_compared(lengths, steps) -> None:
    """onnxruntime refuses a Scan-8's sequence length of 0, which ONNX allows; onnx has no
    Scan-8, so its evaluator runs ``reference_ops``' own, the code ``--fallback reference``
    runs: compared with it, a wrong final state passed (a reviewer planted +100 in the empty
    entry's state, and ``check`` said parity holds). The output is the divergence named, not
    compared."""
    model, feeds, words = _scan_8(lengths, steps)
    _ort_fails(model, feeds, words)
    report = check(model, inputs=feeds, fallback="reference")
    (comparison,) = report.comparisons
    (y,) = comparison.outputs
    assert not y.compared and y.verdict is Verdict.KNOWN_DIVERGENCE
    assert "onnx.reference" not in comparison.expected
    (divergence,) = report.divergences
    assert "a sequence length of 0" in divergence.note and not divergence.reference_follows_spec
    assert report.exit_code == 0


@pytest.mark.parametrize("case, words", [
    (lambda: _model([helper.make_node("Squeeze", ["X", "e"], ["S"], name="squeeze"),
                     helper.make_node("Relu", ["S"], ["Y"], name="relu")],
                    [_info("X", [1, 3, 1])], [_info("Y", None)], [_ints("e", [])], opset=13),
     "ONNX squeezes nothing, as onnx.reference does ([1, 3, 1]); onnxruntime squeezes every "
     "axis of size 1 ([3])"),
    (lambda: _scan_8(None, steps=0)[0],
     "ONNX runs no step, so its final states are its initial ones"),
])
def test_where_onnxruntime_computes_otherwise_the_mismatch_is_the_divergence_named(
    case, words: str
) -> None:
    """With ``--fallback reference``: a bare mismatch (shapes [1, 3, 1] and [3]; zeros, or
    what its buffers held, for the initial states) failed the check; onnxruntime gives no
    error to compare past."""
    model = case()
    feeds = ({"X": np.ones((1, 3, 1), np.float32)} if model.opset_import[0].version > 8
             else _scan_8(None, steps=0)[1])
    report = check(model, inputs=feeds, fallback="reference")
    (y,) = report.comparisons[0].outputs
    (divergence,) = report.divergences
    assert words in divergence.note and report.exit_code == 0
    if divergence.reference_follows_spec:  # (the Squeeze's: compared with onnx.reference)
        assert y.verdict is Verdict.PASS and y.compared
        assert y.message.startswith("compared with onnx.reference: onnxruntime computes it "
                                    "otherwise at a known divergence")
        return
    assert y.verdict is Verdict.KNOWN_DIVERGENCE and len(y.divergences) == 1
    assert words in y.divergences[0] and y.divergences[0].startswith("node ")


def test_the_scan_8_of_no_step_note_says_onnxruntime_leaves_its_states_uninitialized() -> None:
    """onnxruntime 1.32's final states of a Scan-8 of empty scan inputs (sequence_lens left
    out) are not zeros, as the note said: they are its buffers as an earlier run left them
    (in one session, a run of 3 steps then one of none gave [[16, 16], [17, 17]] twice in a
    script, [[6, 6], [0, 0]] after it here; zeros only where the memory was fresh)."""
    model, feeds = _scan_8(None, steps=0)[:2]
    model.graph.input[1].type.tensor_type.shape.dim[1].dim_param = "steps"
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(model.SerializeToString(), options,
                                   providers=["CPUExecutionProvider"])
    (ran,) = session.run(None, {**feeds, "X": np.full((2, 3, 2), 5, np.float32)})
    (none,) = session.run(None, feeds)
    assert ran.tolist() == [[16, 16], [17, 17]] and not np.array_equal(none, feeds["S"])
    report = check(model, inputs=feeds, fallback="reference")
    (divergence,) = report.divergences
    assert "onnxruntime 1.32 leaves them uninitialized" in divergence.note
    assert "zeros for them" not in divergence.note


def _scan_8_of_made_input() -> tuple[onnx.ModelProto, dict, str]:
    """``_scan_8`` of no step whose scan input a Neg makes, in the Scan's fallback segment."""
    model, feeds, words = _scan_8(None, steps=0)
    model.graph.node[0].input[2] = "negX"
    model.graph.node.insert(0, helper.make_node("Neg", ["X"], ["negX"], name="neg"))
    return model, feeds, words


@pytest.mark.parametrize("case", [lambda: _scan_8(None, steps=0), _scan_8_of_made_input])
@pytest.mark.parametrize("fallback", ["onnxruntime", "reference"])
def test_a_scan_8_of_no_step_is_noted_on_either_fallback_and_not_compared(case, fallback) -> None:
    """onnxruntime leaves a Scan-8's final states uninitialized where no step runs: the
    onnxruntime fallback printed its leftovers with no note, and ``check`` compared them with
    another session's (zeros with zeros passed; in one process, other leftovers failed and
    were blamed on onnxruntime's graph optimizations). The run record names the divergence,
    and no output it reaches is compared with onnxruntime, on either fallback."""
    from backends import get_backend
    from dmlgraph.parity import UNINITIALIZED_MESSAGE

    model, feeds, _ = case()
    graph = load(model)
    record = get_backend("numpy", fallback=fallback).execute(lower(graph), feeds).record
    (note,) = [n for run in record.nodes if run.node == "scan" for n in run.notes
               if n.startswith("divergence:")]
    assert "onnxruntime 1.32 leaves them uninitialized" in note
    assert ("this run's values there are that memory" in note) == (fallback == "onnxruntime")
    report = check(model, inputs=feeds, fallback=fallback)
    (y,) = report.comparisons[0].outputs
    assert y.verdict is Verdict.KNOWN_DIVERGENCE and not y.compared
    assert y.message == UNINITIALIZED_MESSAGE and "leaves them uninitialized" in y.divergences[0]
    assert not any("graph optimizations" in n for n in report.notes)
    assert report.exit_code == 0


def test_the_onnxruntime_fallback_notes_a_scan_8_only_in_the_runs_of_no_step() -> None:
    """One backend, a scan input of dynamic length: its run of 3 steps carries no note, its
    run of none does, the next of 2 steps none again."""
    from backends import get_backend

    model, feeds, _ = _scan_8(None, steps=0)
    model.graph.input[1].type.tensor_type.shape.dim[1].dim_param = "steps"
    lowered = lower(load(model))
    backend = get_backend("numpy", fallback="onnxruntime")
    for steps, noted in ((3, False), (0, True), (2, False)):
        fed = {**feeds, "X": np.ones((2, steps, 2), np.float32)}
        result = backend.execute(lowered, fed)
        notes = [n for run in result.record.nodes for n in run.notes if "uninitialized" in n]
        assert bool(notes) == noted
        if steps:
            assert result.outputs["Y"].tolist() == [[1 + steps] * 2, [2 + steps] * 2]


@pytest.mark.parametrize("case, fallback", [
    # no axis of size 1: nothing for onnxruntime to squeeze
    (lambda: _model([helper.make_node("Squeeze", ["X", "e"], ["Y"], name="squeeze")],
                    [_info("X", [2, 3])], [_info("Y", None)], [_ints("e", [])], opset=13),
     "reference"),
    # the onnxruntime fallback squeezes as onnxruntime does: no divergence to excuse
    (lambda: _model([helper.make_node("Squeeze", ["X", "e"], ["Y"], name="squeeze")],
                    [_info("X", [1, 3])], [_info("Y", None)], [_ints("e", [])], opset=13),
     "onnxruntime"),
    (lambda: _scan_8([3, 2])[0], "reference"),  # every sequence runs a step
    (lambda: _loop(_info("i", [], TensorProto.INT64))[0], "onnxruntime"),  # a scalar, declared
])
def test_the_notes_are_only_where_the_divergence_can_occur(case, fallback: str) -> None:
    model = case()
    graph = load(model)
    report = check(model, fallback=fallback)
    assert report.divergences == () and report.exit_code == 0
    assert all(o.verdict is Verdict.PASS for o in report.comparisons[0].outputs)
    assert not known_divergences(graph, lower(graph))


def test_a_loop_condition_declared_without_a_shape_is_named_too() -> None:
    cond = onnx.ValueInfoProto(name="c")
    cond.type.tensor_type.elem_type = TensorProto.BOOL
    model, feeds, _ = _loop(_info("i", [], TensorProto.INT64), cond)
    _ort_fails(model, feeds, "Loop subgraph input 1 has unknown shape")
    report = check(model, inputs=feeds)
    (divergence,) = report.divergences
    assert "declares its condition 'c' without a shape" in divergence.note
    assert report.comparisons[0].outputs[0].verdict is Verdict.PASS


def _loop_of_untyped_condition(given: bool = False, read: bool = True, name: str = "loop"
                               ) -> tuple[onnx.ModelProto, dict]:
    """``_loop`` whose body declares its condition 'c' with no type at all, which the body
    reads (an Identity) or not (a Constant true), the Loop's condition input ``given`` (true)
    or left out."""
    model, feeds, _ = _loop(_info("i", [], TensorProto.INT64), onnx.ValueInfoProto(name="c"))
    loop = model.graph.node[0]
    loop.name = name
    if not read:
        true = numpy_helper.from_array(np.array(True))
        loop.attribute[0].g.node[1].CopyFrom(helper.make_node("Constant", [], ["c2"], value=true))
    if given:
        loop.input[1] = "T"
        model.graph.initializer.append(numpy_helper.from_array(np.array(True), "T"))
    return model, feeds


@pytest.mark.parametrize("read", [True, False])
@pytest.mark.parametrize("name", ["loop", ""])
def test_a_loop_condition_of_no_type_left_out_of_the_loop_is_compared_with_onnx_reference(
    read: bool, name: str
) -> None:
    """ONNX lets a subgraph input leave its type out (the IR requires types of the main
    graph's inputs and outputs only), and onnx's checker passes it (with full_check too where
    the body does not read it: onnx's inference types the body's condition by the Loop's, none
    here); onnxruntime 1.32 refuses the model at load, and check exited 2 with its error where
    dmlgraph and onnx.reference run it ([1, -2] + 3 trips of 1)."""
    model, feeds = _loop_of_untyped_condition(read=read, name=name)
    onnx.checker.check_model(model, full_check=not read)
    _ort_fails(model, feeds, r"Model input \(c\) does not have type information")
    report = check(model, inputs=feeds)
    (y,) = report.comparisons[0].outputs
    assert y.compared and y.verdict is Verdict.PASS
    assert y.message.startswith("compared with onnx.reference: onnxruntime fails at a known")
    assert report.comparisons[0].expected == "onnx.reference on the original model for 'Y'"
    (divergence,) = report.divergences
    assert ("declares its condition 'c' with no type and the Loop leaves its condition input "
            "out" in divergence.note) and divergence.reference_follows_spec
    assert report.exit_code == 0


def test_a_loop_condition_of_no_type_is_no_divergence_where_the_loop_is_given_one() -> None:
    """onnxruntime types the body's condition by the Loop's and runs it."""
    model, feeds = _loop_of_untyped_condition(given=True)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    assert session.run(None, feeds)[0].tolist() == [4, 1]
    report = check(model, inputs=feeds)
    assert report.divergences == () and report.comparisons[0].outputs[0].verdict is Verdict.PASS


def test_run_on_onnxruntime_refusing_a_loop_condition_of_no_type_says_numpy_runs_it(
    tmp_path: Path, capsys
) -> None:
    path = tmp_path / "loop.onnx"
    onnx.save(_loop_of_untyped_condition()[0], path)
    assert main(["run", str(path), "--backend", "onnxruntime"]) == 2
    error = capsys.readouterr().err
    assert "Model input (c) does not have type information" in error
    assert error.rstrip().endswith("(a known divergence at node 'loop', which the numpy backend "
                                   "runs and check names: --backend numpy, "
                                   "get_backend('numpy') in Python)")
    assert main(["run", str(path)]) == 0
    assert "output Y: float32[2]" in capsys.readouterr().out


def test_a_scan_8_sequence_length_of_0_on_the_onnxruntime_fallback_says_reference_runs_it(
) -> None:
    """dmlgraph's run fails as onnxruntime does (its fallback), with onnxruntime's words only."""
    from dmlgraph.errors import DmlgraphError

    model, feeds, words = _scan_8([3, 0])
    with pytest.raises(DmlgraphError, match=words) as raised:
        check(model, inputs=feeds)
    assert str(raised.value).endswith(
        "(node 'scan' (Scan) is a known divergence onnx.reference runs as ONNX says: "
        "--fallback reference, fallback='reference' in Python)")
    model, feeds, _ = _scan_8([3, 5])  # past the scan inputs' 3 steps: no divergence
    with pytest.raises(DmlgraphError, match=words) as raised:
        check(model, inputs=feeds)
    assert "known divergence" not in str(raised.value)


@pytest.mark.parametrize("case, fallback", [
    (_reversed_slice_into_add, "onnxruntime"), (_squeeze_into_concat, "reference")])
def test_a_failure_downstream_of_an_unnamed_divergent_node_is_traced_to_it(
    case, fallback: str
) -> None:
    """onnxruntime names unnamed nodes '' in the file, and ``to_onnx``'s names (``OP_ID``)
    in the import, where the failing node was looked up by name alone: exit 2."""
    model, feeds, _ = case()
    for node in model.graph.node:
        node.name = ""
    report = check(model, inputs=feeds, fallback=fallback)
    (y,) = report.comparisons[0].outputs
    assert y.compared and y.verdict is Verdict.PASS
    assert y.message.startswith("compared with onnx.reference: onnxruntime fails at a known")
    assert "the reference is to_onnx() of the imported graph" in report.notes[0]
    assert report.exit_code == 0


def _plant_wrong_values(monkeypatch, planted: dict[str, np.ndarray] | None = None) -> None:
    """Every output the numpy backend returns 1 off (or those ``planted``, as given): a
    dmlgraph bug ``check`` must fail."""
    import backends.numpy.backend as numpy_backend

    execute = numpy_backend.NumpyBackend.execute

    def wrong(self, graph, feeds, outputs=None):
        result = execute(self, graph, feeds, outputs)
        return dataclasses.replace(result, outputs={
            k: v + 1 for k, v in result.outputs.items()} if planted is None else {
            **result.outputs, **planted})

    monkeypatch.setattr(numpy_backend.NumpyBackend, "execute", wrong)


def test_a_wrong_value_past_a_squeeze_divergence_is_a_failure(monkeypatch) -> None:
    """The Squeeze's note excuses nothing where onnx.reference is the reference."""
    _plant_wrong_values(monkeypatch)
    model, feeds, _ = _squeeze_into_concat()
    report = check(model, inputs=feeds, fallback="reference")
    (y,) = report.comparisons[0].outputs
    assert y.verdict is Verdict.FAIL and y.divergences == () and report.exit_code == 1


def test_check_of_these_models_on_the_command_line(tmp_path: Path, capsys) -> None:
    """Exit 2 (onnxruntime's error) or 1 (a bare mismatch) before; each divergence named."""
    import json

    cases = [(_loop()[0], "onnxruntime", "declares its iteration number 'i' without a shape"),
             (_loop()[0], "reference", "declares its iteration number 'i' without a shape"),
             (_squeeze_into_concat()[0], "reference", "ONNX squeezes nothing"),
             (_scan_8(None, steps=0)[0], "reference", "leaves them uninitialized"),
             (_scan_8(None, steps=0)[0], "onnxruntime", "leaves them uninitialized")]
    for model, fallback, words in cases:
        path = tmp_path / "m.onnx"
        onnx.save(model, path)
        capsys.readouterr()
        assert main(["check", str(path), "--fallback", fallback, "--json"]) == 0
        made = json.loads(capsys.readouterr().out)
        # onnxruntime's final states of a Scan-8 of no step are its leftovers: not compared
        leftovers = "uninitialized" in words
        assert made["passed"] and made["compared"] == (0 if leftovers else 1)
        (divergence,) = made["divergences"]
        assert divergence["note"].startswith("divergence: ") and words in divergence["note"]
        assert divergence["outputs"] == ["Y"]
        assert main(["check", str(path), "--fallback", fallback]) == 0
        out = capsys.readouterr().out
        assert ("nothing compared" if leftovers else "parity holds") in out
        assert divergence["node"] in out


@pytest.mark.parametrize("case, node, onnx_result", [
    (_wrap_of_empty, "wrap", np.zeros((0, 5), np.float32)),
    (_reversed_slice_into_add, "slice", np.zeros(0, np.float32)),
    (_concat_1, "cat", np.tile(np.arange(6, dtype=np.float32).reshape(2, 3), (1, 2))),
    (lambda: _concat_1(axis=False), "cat",  # Concat-1's axis defaults to 1
     np.tile(np.arange(6, dtype=np.float32).reshape(2, 3), (1, 2))),
    (_scalar_slice, "slice", np.array(7, np.int8)),
    (_scalar_pad, "pad", np.array(7, np.int8)),
])
def test_an_output_onnxruntime_fails_on_where_onnx_defines_it_is_compared_with_onnx_reference(
    case, node: str, onnx_result: np.ndarray
) -> None:
    """These were "not compared": onnxruntime fails at (or downstream of) the divergent node,
    where ONNX says the result, as onnx.reference computes it."""
    model, feeds, words = case()
    _ort_fails(model, feeds, words)
    report = check(model, inputs=feeds)
    (comparison,) = report.comparisons
    y = comparison.outputs[0]
    assert y.name == "Y" and y.compared and y.verdict is Verdict.PASS
    assert y.expected_shape == onnx_result.shape and y.expected_dtype == str(onnx_result.dtype)
    assert y.message.startswith("compared with onnx.reference: onnxruntime fails at a known "
                                "divergence")
    # onnxruntime named only where it computed an output (W beside the wrap Pad): with none,
    # "onnxruntime on the original model; onnx.reference ... for 'Y'" named it a reference
    ran = "onnxruntime on the original model; " if len(comparison.outputs) > 1 else ""
    assert comparison.expected == f"{ran}onnx.reference on the original model for 'Y'"
    assert (f"'Y' compared with onnx.reference on the model (pruned to the outputs compared): "
            f"it computes what ONNX says at node '{node}'") in comparison.note
    assert [r.backend for r in report.runs][-1] == "onnx.reference"
    assert report.exit_code == 0 and report.compared == len(comparison.outputs)
    assert all(o.verdict is Verdict.PASS for o in comparison.outputs)  # W: onnxruntime's


def test_a_wrong_value_there_is_a_failure_no_divergence_excuses(monkeypatch) -> None:
    """onnx.reference computes what ONNX says at the node, as dmlgraph claims to: a mismatch
    there is dmlgraph's, not the divergence's."""
    _plant_wrong_values(monkeypatch)
    model, feeds, _ = _concat_1()
    report = check(model, inputs=feeds)
    (y,) = report.comparisons[0].outputs
    assert y.verdict is Verdict.FAIL and y.divergences == () and y.mismatches == 12
    assert "compared with onnx.reference" in y.message and "12 of 12 elements" in y.message
    assert report.exit_code == 1


def _reversed_slice(direction: int | None = None) -> tuple[onnx.ModelProto, dict]:
    """Opset 18: the sum (ReduceSum, keepdims) of a Slice of x [2, 6] by step -1 from -1 to
    INT64_MAX along axis 1 (y [1, 1]): ONNX clamps that end, so the slice is empty and y 0,
    where onnxruntime's CPU kernel reads it "through index 0" (y 21) and gives no error;
    beside Relu(x) (r). With ``direction``, the same of each row of X [2, 6] in the body of a
    Scan whose scan_input_directions says it (y [2, 1] its scan output), which onnx.reference
    runs only forward."""
    sliced = [helper.make_node("Slice", ["x", "s", "e", "a", "t"], ["sl"], name="slice"),
              helper.make_node("ReduceSum", ["sl"], ["y"]), helper.make_node("Relu", ["x"], ["r"])]
    ends = [_ints("s", [-1]), _ints("e", [2**63 - 1]), _ints("t", [-1])]
    if direction is None:
        graph = helper.make_graph(sliced, "m", [_info("x", [2, 6])],
                                  [_info("y", None), _info("r", None)], [*ends, _ints("a", [1])])
    else:
        body = helper.make_graph(sliced, "body", [_info("x", [6])],
                                 [_info("y", [1]), _info("r", [6])], [*ends, _ints("a", [0])])
        graph = helper.make_graph(
            [helper.make_node("Scan", ["X"], ["y", "r"], name="scan", body=body,
                              num_scan_inputs=1, scan_input_directions=[direction])], "m",
            [_info("X", [2, 6])], [_info("y", None), _info("r", None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=10)
    name = "x" if direction is None else "X"
    return model, {name: np.arange(1, 13, dtype=np.float32).reshape(2, 6)}


@pytest.mark.parametrize("direction", [None, 0])
@pytest.mark.parametrize("fallback", ["onnxruntime", "reference"])
def test_a_wrong_value_where_onnxruntime_computes_otherwise_is_a_failure(
    direction, fallback, monkeypatch
) -> None:
    """Where onnxruntime runs the divergent node and computes it otherwise (a Slice "through
    index 0"), its value excused any of dmlgraph's as the known divergence: a wrong Y, even
    of onnxruntime's shape, passed (exit 0, "parity holds"). onnx.reference computes what
    ONNX says there, so the output is compared with it: ONNX's empty Y passes, a wrong one
    fails."""
    model, feeds = _reversed_slice(direction)
    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    made = session.run(None, feeds)[0]
    assert made.all()  # onnxruntime's sums: ONNX's of an empty slice are 0
    report = check(model, inputs=feeds, fallback=fallback)
    y, r = report.comparisons[0].outputs
    assert [d.outputs for d in report.divergences] == [{0}]
    assert y.compared and y.verdict is Verdict.PASS and y.max_abs_error == 0
    assert y.message.startswith("compared with onnx.reference: onnxruntime computes it "
                                "otherwise at a known divergence")
    assert r.verdict is Verdict.PASS and report.exit_code == 0
    _plant_wrong_values(monkeypatch, {"y": made + 1})  # (onnxruntime's, but 1 off)
    report = check(model, inputs=feeds, fallback=fallback)
    y, r = report.comparisons[0].outputs
    assert y.verdict is Verdict.FAIL and r.verdict is Verdict.PASS and report.exit_code == 1


@pytest.mark.parametrize("fallback", ["onnxruntime", "reference"])
def test_where_onnx_reference_cannot_run_it_the_divergence_stands(fallback,
                                                                  monkeypatch) -> None:
    """A Scan run backwards, which onnx.reference refuses ("not implemented"): y is the known
    divergence, not compared, both reasons said (it was "compared", its mismatch with
    onnxruntime's value excused, and a y equal to onnxruntime's, wrong by ONNX, passed)."""
    model, feeds = _reversed_slice(1)
    made = ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    for planted, why in ((None, "otherwise"), (made, "as dmlgraph does, but")):
        if planted is not None:
            _plant_wrong_values(monkeypatch, {"y": planted})
        report = check(model, inputs=feeds, fallback=fallback)
        y, r = report.comparisons[0].outputs
        assert y.verdict is Verdict.KNOWN_DIVERGENCE and r.verdict is Verdict.PASS
        assert not y.compared and y.divergences[0].startswith("node ")
        assert y.message.startswith(f"not compared: onnxruntime computes it {why} at a known "
                                    "divergence, nor can onnx.reference (")
        assert "onnx.reference failed on 'y' as well" in report.comparisons[0].note
        assert report.exit_code == 0 and report.compared == 1


def test_where_onnx_reference_fails_too_the_output_stays_not_compared_with_both_reasons(
    monkeypatch,
) -> None:
    """Concat-1's axis is optional (default 1); onnx.reference's own Concat requires it (the
    evaluator's spec fix, ``reference_ops``, taken out here, it fails as it did before)."""
    import backends.numpy.fallback as fallback

    spec_ops = fallback.spec_ops
    monkeypatch.setattr(fallback, "spec_ops", lambda opset: [
        op for op in spec_ops(opset) if op.__name__ != "Concat"])
    failure = "Attribute 'axis' is expected"
    model, feeds, words = _concat_1(axis=False)
    _ort_fails(model, feeds, words)
    report = check(model, inputs=feeds)
    (comparison,) = report.comparisons
    (y,) = comparison.outputs
    assert not y.compared and y.verdict is Verdict.KNOWN_DIVERGENCE
    assert y.divergences and y.divergences[0].startswith("node ")  # onnxruntime's reason
    assert y.message.startswith("not compared: the reference cannot compute it, nor can "
                                "onnx.reference (") and failure in y.message
    assert "onnx.reference failed on 'Y' as well: " in comparison.note
    assert "onnx.reference on the original model for" not in comparison.expected
    assert report.exit_code == 0 and report.compared == 0


@pytest.mark.parametrize("pads, shape", [
    ([0, 3, 0, 4], [2, 3]),  # reflect by the size or more: ONNX leaves it undefined
    ([0, 2, 0, 2], [2, 1]),  # reflect of one element: nothing to mirror
])
def test_a_divergence_onnx_reference_is_not_known_to_follow_onnx_at_stays_not_compared(
    pads, shape
) -> None:
    model = _model([helper.make_node("Pad", ["X", "p"], ["Y"], mode="reflect", name="pad"),
                    helper.make_node("Neg", ["X"], ["Z"], name="neg")],
                   [_info("X", shape)], [_info("Y", None), _info("Z", None)], [_ints("p", pads)])
    feeds = {"X": np.arange(np.prod(shape), dtype=np.float32).reshape(shape)}
    _ort_fails(model, feeds, "Pad reflect")
    report = check(model, inputs=feeds)
    (comparison,) = report.comparisons
    y, z = comparison.outputs
    assert not y.compared and y.verdict is Verdict.KNOWN_DIVERGENCE
    assert y.message == "not compared: the reference cannot compute it"
    assert z.verdict is Verdict.PASS
    assert ("'Y' not compared with onnx.reference either: it is not known to compute what "
            "ONNX says at node 'pad'") in comparison.note
    assert "onnx.reference" not in [r.backend for r in report.runs]


def _counter_loop() -> tuple[onnx.ModelProto, dict]:
    """A Loop of 3 trips carrying and stacking its iteration number itself (V, IS):
    onnxruntime gives V 3 and IS [3, 3, 3]; ONNX, and reference_ops' Loop, 2 and [0, 1, 2]."""
    int64 = TensorProto.INT64
    body = helper.make_graph(
        [helper.make_node("Identity", ["c"], ["c2"])], "body",
        [_info("i", [], int64), _info("c", [], TensorProto.BOOL), _info("v", [], int64)],
        [_info("c2", [], TensorProto.BOOL), _info("i", [], int64), _info("i", [], int64)])
    model = _model([helper.make_node("Loop", ["T", "", "v0"], ["V", "IS"], name="loop",
                                     body=body)],
                   [_info("v0", [], int64)], [_info("V", None, int64), _info("IS", None, int64)],
                   [_ints("T", 3)], opset=18)
    return model, {"v0": np.array(7, np.int64)}


def _repeating_if() -> tuple[onnx.ModelProto, dict]:
    """An If whose then branch makes Relu(X) both its outputs (A, B): onnxruntime gives A
    its buffer, ONNX and onnx.reference Relu(X)."""
    then = helper.make_graph([helper.make_node("Relu", ["X"], ["r"])], "then", [],
                             [_info("r", None), _info("r", None)])
    other = helper.make_graph([helper.make_node("Neg", ["X"], ["a"]),
                               helper.make_node("Abs", ["X"], ["b"])], "else", [],
                              [_info("a", None), _info("b", None)])
    model = _model([helper.make_node("If", ["C"], ["A", "B"], name="if", then_branch=then,
                                     else_branch=other)],
                   [_info("X", [2, 3]), _info("C", [], TensorProto.BOOL)],
                   [_info("A", None), _info("B", None)], opset=18)
    return model, {"X": np.arange(1, 7, dtype=np.float32).reshape(2, 3), "C": np.array(True)}


@pytest.mark.parametrize("case, right", [
    (_counter_loop, {"V": np.array(2), "IS": np.arange(3)}),
    (_repeating_if, {"A": np.arange(1, 7, dtype=np.float32).reshape(2, 3)}),
])
@pytest.mark.parametrize("fallback", ["onnxruntime", "reference"])
def test_a_wrong_value_at_a_control_flow_divergence_is_a_failure(
    case, right: dict, fallback: str, monkeypatch
) -> None:
    """onnxruntime's own reading of a Loop's iteration number or an If's repeated output
    excused any value of dmlgraph's (exit 0); onnx.reference computes ONNX's there, so those
    outputs are compared with it: ONNX's pass, a wrong one fails."""
    model, feeds = case()
    report = check(model, inputs=feeds, fallback=fallback)
    got = {o.name: o for o in report.comparisons[0].outputs}
    assert report.divergences and all(d.reference_follows_spec for d in report.divergences)
    for name in right:
        assert got[name].compared and got[name].verdict is Verdict.PASS, name
        assert got[name].message.startswith("compared with onnx.reference: onnxruntime "
                                            "computes it otherwise"), name
    assert report.exit_code == 0
    for name, value in right.items():
        # (2 off: V 1 off is onnxruntime's, which a comparison with it passes)
        _plant_wrong_values(monkeypatch, {name: np.asarray(value) + 2})
        report = check(model, inputs=feeds, fallback=fallback)
        got = {o.name: o for o in report.comparisons[0].outputs}
        assert got[name].verdict is Verdict.FAIL and report.exit_code == 1, name
        monkeypatch.undo()


def _stored(model: onnx.ModelProto, feeds: dict, y: np.ndarray) -> dict:
    """``feeds`` and ``_reversed_slice``'s outputs: ``y`` and Relu(x) (NumPy's)."""
    return {**feeds, "y": y, "r": np.maximum(feeds["x"], 0)}


@pytest.mark.parametrize("given", ["expected", "inputs", "--expected", "--inputs"])
def test_stored_outputs_are_compared_whatever_divergence_reaches_them(
    given: str, tmp_path: Path, capsys
) -> None:
    """Stored outputs are the user's: a wrong y there (onnxruntime's "through index 0" sums)
    past the divergent Slice was excused as the known divergence (exit 0). ONNX's y (NumPy's
    slice: x[:, 5:5:-1] is empty, its sum 0) passes."""
    model, feeds = _reversed_slice()
    x = feeds["x"]
    right = x[:, 5:5:-1].sum(keepdims=True)
    wrong = ort.InferenceSession(model.SerializeToString(),
                                 providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    assert right.shape == wrong.shape == (1, 1) and right[0, 0] == 0 and wrong[0, 0] != 0
    for y, code in ((wrong, 1), (right, 0)):
        stored = _stored(model, feeds, y)
        if given.startswith("--"):
            path, npz = tmp_path / "m.onnx", tmp_path / "io.npz"
            onnx.save(model, path)
            np.savez(npz, **stored)
            assert main(["check", str(path), given, str(npz), "--json"]) == code
            import json

            table = json.loads(capsys.readouterr().out)["comparisons"][1]["outputs"]
            assert [o["verdict"] for o in table] == ["fail" if code else "pass", "pass"]
            assert table[0]["divergences"] == []
            continue
        if given == "inputs":
            path = tmp_path / "io.npz"
            np.savez(path, **stored)
            report = check(model, inputs=path)
        else:
            report = check(model, expected=stored)
        ours, theirs = report.comparisons
        assert theirs.expected.startswith("stored outputs")
        y_stored, r_stored = theirs.outputs
        assert y_stored.verdict is (Verdict.FAIL if code else Verdict.PASS)
        assert y_stored.divergences == () and r_stored.verdict is Verdict.PASS
        assert ours.passed and report.exit_code == code


def _onnxruntime_s(model: onnx.ModelProto, feeds: dict) -> dict[str, np.ndarray]:
    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in session.get_outputs()], session.run(None, feeds)))


def _squeeze_relu() -> tuple[onnx.ModelProto, dict]:
    """Relu of a Squeeze of X [1, 3, 1] by an empty axes list: ONNX's Y [1, 3, 1]."""
    model = _model([helper.make_node("Squeeze", ["X", "e"], ["S"], name="squeeze"),
                    helper.make_node("Relu", ["S"], ["Y"], name="relu")],
                   [_info("X", [1, 3, 1])], [_info("Y", None)], [_ints("e", [])], opset=13)
    return model, {"X": np.arange(-1, 2, dtype=np.float32).reshape(1, 3, 1)}


@pytest.mark.parametrize("case, fallback, right", [
    (_reversed_slice, "onnxruntime", {"y": np.zeros((1, 1), np.float32)}),
    (_reversed_slice, "reference", {"y": np.zeros((1, 1), np.float32)}),
    (_counter_loop, "onnxruntime", {"V": np.array(2), "IS": np.arange(3)}),
    (_counter_loop, "reference", {"V": np.array(2), "IS": np.arange(3)}),
    (_squeeze_relu, "reference", {"Y": np.array([[[0], [0], [1]]], np.float32)}),
])
def test_a_value_equal_to_onnxruntime_s_where_it_computes_otherwise_is_a_failure(
    case, fallback: str, right: dict, monkeypatch
) -> None:
    """dmlgraph's output equal to onnxruntime's, where onnxruntime computes otherwise than
    ONNX (a Slice "through index 0", a Loop's iteration number, a Squeeze of every 1), passed
    (exit 0): it is compared with onnx.reference, and fails. ``right``: ONNX's values (NumPy's
    slice and ReLU, the Loop's 0, 1, 2)."""
    model, feeds = case()
    made = _onnxruntime_s(model, feeds)
    for name, value in right.items():
        assert not np.array_equal(made[name], value), name  # onnxruntime computes otherwise
    _plant_wrong_values(monkeypatch, {name: made[name] for name in right})
    report = check(model, inputs=feeds, fallback=fallback)
    got = {o.name: o for o in report.comparisons[0].outputs}
    for name in right:
        assert got[name].verdict is Verdict.FAIL and got[name].divergences == (), name
        assert got[name].message.startswith("compared with onnx.reference: onnxruntime "
                                            "computes it as dmlgraph does, but at a known "
                                            "divergence"), name
    assert report.exit_code == 1
    monkeypatch.undo()
    report = check(model, inputs=feeds, fallback=fallback)
    got = {o.name: o for o in report.comparisons[0].outputs}
    for name, value in right.items():
        assert got[name].verdict is Verdict.PASS and got[name].max_abs_error == 0, name
        assert got[name].expected_shape == np.shape(value), name
    assert report.exit_code == 0


def _reversed_slice_beside(node: onnx.NodeProto, given: onnx.ValueInfoProto,
                           made: onnx.ValueInfoProto, feed: np.ndarray
                           ) -> tuple[onnx.ModelProto, dict]:
    """``_reversed_slice``'s y (ONNX's: 0) beside ``node``, of input ``given`` (fed ``feed``)
    and output ``made``, padded by [0, 1, 0, 1]."""
    model, feeds = _reversed_slice()
    graph = model.graph
    del graph.output[1:]  # (r)
    graph.node.remove(graph.node[2])
    graph.node.append(node)
    graph.input.append(given)
    graph.output.append(made)
    graph.initializer.append(_ints("p", [0, 1, 0, 1]))
    model.opset_import[0].version = 19
    return model, {**feeds, given.name: feed}


@pytest.mark.parametrize("beside", ["wrap of empty", "int16 pad"])
def test_a_wrong_value_past_a_divergence_beside_one_onnxruntime_cannot_run_is_a_failure(
    beside: str, monkeypatch
) -> None:
    """Beside a wrap Pad of an empty input (onnxruntime fails at it: y compared with
    onnxruntime on the graph pruned to it) or an int16 Pad (onnxruntime cannot run the model:
    onnx.reference is the reference), a wrong y past the divergent Slice was excused as the
    Slice's divergence (exit 0)."""
    if beside == "wrap of empty":
        model, feeds = _reversed_slice_beside(
            helper.make_node("Pad", ["P", "p"], ["Q"], mode="wrap", name="wrap"),
            _info("P", [0, 3]), _info("Q", None), np.zeros((0, 3), np.float32))
        _ort_fails(model, feeds, "Unexpected mode of 3")
    else:
        model, feeds = _reversed_slice_beside(
            helper.make_node("Pad", ["P", "p"], ["Q"], name="pad"),
            _info("P", [2, 3], TensorProto.INT16), _info("Q", None, TensorProto.INT16),
            np.arange(6, dtype=np.int16).reshape(2, 3))
        _ort_fails(model, feeds, "Could not find an implementation for Pad")
    report = check(model, inputs=feeds)
    y, q = report.comparisons[0].outputs
    assert y.verdict is Verdict.PASS and q.verdict is Verdict.PASS and report.exit_code == 0
    assert y.expected_shape == (1, 1) and y.max_abs_error == 0  # ONNX's: the empty sum, 0
    _plant_wrong_values(monkeypatch, {"y": np.ones((1, 1), np.float32)})
    report = check(model, inputs=feeds)
    y, q = report.comparisons[0].outputs
    assert y.verdict is Verdict.FAIL and y.divergences == () and q.verdict is Verdict.PASS
    assert report.exit_code == 1


def _scan_of(repeated: bool) -> tuple[onnx.ModelProto, dict, dict[str, np.ndarray]]:
    """A Scan-18 of state s0 [3] and the rows of x [4, 3] whose body passes its state through
    beside y = s + row (F, Y), or (``repeated``) makes s + row both its next state and its
    scan output; with ONNX's values (NumPy's)."""
    outputs = ["s2", "s2"] if repeated else ["s", "y"]
    body = helper.make_graph(
        [helper.make_node("Add", ["s", "r"], ["s2" if repeated else "y"])], "body",
        [_info("s", [3]), _info("r", [3])], [_info(n, [3]) for n in outputs])
    model = _model([helper.make_node("Scan", ["s0", "x"], ["F", "Y"], name="scan", body=body,
                                     num_scan_inputs=1)],
                   [_info("s0", [3]), _info("x", [4, 3])], [_info("F", None), _info("Y", None)],
                   opset=18)
    s0, x = np.array([1, 2, 3], np.float32), np.arange(12, dtype=np.float32).reshape(4, 3)
    sums = s0 + np.cumsum(x, axis=0)
    right = {"F": sums[-1], "Y": sums} if repeated else {"F": s0, "Y": x + s0}
    return model, {"s0": s0, "x": x}, right


@pytest.mark.parametrize("repeated", [False, True])
@pytest.mark.parametrize("fallback", ["onnxruntime", "reference"])
def test_a_wrong_value_of_a_scan_run_here_past_its_body_s_divergence_is_a_failure(
    repeated: bool, fallback: str, monkeypatch
) -> None:
    """A Scan-9+ the numpy backend runs, whose body passes its state through or makes one
    tensor two outputs (onnxruntime gives its buffers there): its outputs were the known
    divergence, any value excused (exit 0). onnx.reference's Scan computes ONNX's values,
    so they are compared with it: NumPy's pass, a wrong one fails."""
    model, feeds, right = _scan_of(repeated)
    report = check(model, inputs=feeds, fallback=fallback)
    (divergence,) = report.divergences
    assert divergence.node == "scan" and divergence.reference_follows_spec
    for o in report.comparisons[0].outputs:
        assert o.compared and o.verdict is Verdict.PASS and o.max_abs_error == 0, o.name
        assert o.expected_shape == right[o.name].shape, o.name
    assert report.exit_code == 0
    for name in divergence.outputs:
        wrong = right[report.outputs[name]] + 1
        _plant_wrong_values(monkeypatch, {report.outputs[name]: wrong})
        report = check(model, inputs=feeds, fallback=fallback)
        got = report.comparisons[0].outputs[name]
        assert got.verdict is Verdict.FAIL and got.message.startswith(
            "compared with onnx.reference: onnxruntime computes it"), got.name
        assert report.exit_code == 1
        monkeypatch.undo()


def test_each_phrase_of_the_table_names_a_divergence_noted() -> None:
    """The table reads the notes' text: a reworded note would drop out silently."""
    pad_crop = _model([helper.make_node("Pad", ["X", "p"], ["Y"], mode="edge", name="pad")],
                      [_info("X", [2, 3])], [_info("Y", None)], [_ints("p", [0, -2, 0, -1])])
    notes = []
    for model in (_wrap_of_empty()[0], _reversed_slice_into_add()[0], _concat_1()[0],
                  _scalar_slice()[0], _scalar_pad()[0], pad_crop, _loop()[0]):
        graph = load(model)
        notes += [d for d in known_divergences(graph, lower(graph))]
    # and those the reference fallback notes as a node runs
    for model, feeds, _ in (_squeeze_into_concat(), _scan_9_of_no_step()):
        notes += check(model, inputs=feeds, fallback="reference").divergences
    # and those the numpy backend's control flow notes (onnxruntime computes them otherwise)
    for model, feeds in (_counter_loop(), _repeating_if(), _scan_of(False)[:2]):
        notes += check(model, inputs=feeds).divergences
    assert all(d.reference_follows_spec for d in notes)
    for phrase in SPEC_REFERENCE_DIVERGENCES:
        assert any(phrase in d.note for d in notes), phrase


def test_the_pruned_model_keeps_what_a_subgraph_reads_of_the_outer_graph() -> None:
    """An If whose branch reads 'c' by name (no input of the If): pruned by node inputs alone,
    the Neg making 'c' was dropped."""
    from dmlgraph.parity import _pruned_to

    branch = helper.make_graph([helper.make_node("Identity", ["c"], ["o"])], "b", [],
                               [_info("o", [2])])
    model = _model([helper.make_node("Neg", ["X"], ["c"]),
                    helper.make_node("Abs", ["X"], ["unread"]),
                    helper.make_node("If", ["cond"], ["Y"], then_branch=branch,
                                     else_branch=branch)],
                   [_info("X", [2]), _info("cond", [], TensorProto.BOOL)],
                   [_info("Y", [2]), _info("unread", [2])])
    pruned = _pruned_to(model, ["Y"])
    assert [n.op_type for n in pruned.graph.node] == ["Neg", "If"]
    assert [o.name for o in pruned.graph.output] == ["Y"]


def test_run_on_onnxruntime_failing_at_a_divergence_says_the_numpy_backend_runs_it(
    tmp_path: Path, capsys
) -> None:
    model, feeds, _ = _wrap_of_empty()
    path = tmp_path / "wrap.onnx"
    onnx.save(model, path)
    assert main(["run", str(path), "--backend", "onnxruntime"]) == 2
    error = capsys.readouterr().err
    assert "Unexpected mode of 3" in error  # onnxruntime's words, then the hint
    assert error.rstrip().endswith(
        "(a known divergence at node 'wrap', which the numpy backend runs and check names: "
        "--backend numpy, get_backend('numpy') in Python)")
    assert main(["run", str(path), "--backend", "numpy"]) == 0
    plain = _model([helper.make_node("Pad", ["X", "p"], ["Y"], mode="reflect", name="pad")],
                   [_info("X", [2, 1])], [_info("Y", None)], [_ints("p", [0, 2, 0, 2])])
    onnx.save(plain, path)
    capsys.readouterr()
    assert main(["run", str(path), "--backend", "onnxruntime"]) == 2
    assert "known divergence at node 'pad'" in capsys.readouterr().err


@pytest.mark.parametrize("holders", ["", "L"])
def test_run_on_onnxruntime_failing_past_a_squeeze_divergence_says_what_runs_it(
    tmp_path: Path, capsys, holders: str
) -> None:
    """A Squeeze by an empty axes list, which onnxruntime squeezes whole, fails the Concat
    past it (at top level, or in a Loop's body): ``run --backend onnxruntime`` said only
    onnxruntime's words; it says what diverges and that the numpy backend runs it on
    onnx.reference, which then runs it."""
    model, feeds, at = _squeeze_into_concat()
    if holders:
        model, at = _nested(model, holders, (1, 3, 1), None), "Ranks of input data are different"
    path, inputs = tmp_path / "sq.onnx", tmp_path / "in.npz"
    onnx.save(model, path)
    np.savez(inputs, **feeds)
    assert main(["run", str(path), "--backend", "onnxruntime", "--inputs", str(inputs)]) == 2
    error = capsys.readouterr().err
    assert at in error  # onnxruntime's words, then the hint
    where = "node 'squeeze' (Squeeze)" + (" in a subgraph of node 'h0' (Loop)" if holders else "")
    assert error.rstrip().endswith(
        "; divergence: a Squeeze of a [1, 3, 1] tensor by an empty axes list: ONNX squeezes "
        "nothing, as onnx.reference does ([1, 3, 1]); onnxruntime squeezes every axis of size 1 "
        f"([3]) ({where} is a known divergence onnx.reference runs as ONNX says, which the "
        "numpy backend runs there and check names: --backend numpy --fallback reference, "
        "get_backend('numpy', fallback='reference') in Python)")
    assert main(["run", str(path), "--backend", "numpy", "--fallback", "reference",
                 "--inputs", str(inputs)]) == 0


def _scan_of_an_unsized_read() -> tuple[onnx.ModelProto, dict]:
    """An If of B holding a Scan-9 over U, which its body adds: U is an If's result of rank
    4 or 3 by a Squeeze by an empty axes list (onnx infers no shape; onnxruntime runs the
    model by its graph optimizations, failing as below without them). On the onnxruntime
    fallback, the If of B runs whole with U fed and declared without a shape, and
    onnxruntime refuses the Scan's body ("Subgraph must have the shape set for all
    outputs"), which onnx.reference runs."""
    x = _info("X", [1, 3, 1])
    scan = helper.make_graph([helper.make_node("Identity", ["s"], ["s2"]),
                              helper.make_node("Relu", ["s"], ["r"])],
                             "rows", [_info("s", None), _info("x", None)],
                             [_info("s2", None), _info("r", None)])
    added = helper.make_graph([helper.make_node("Add", ["u", "U"], ["t"]),
                               helper.make_node("Identity", ["t"], ["t2"]),
                               helper.make_node("Relu", ["t"], ["t3"])],
                              "add", [_info("v", None), _info("u", None)],
                              [_info("t2", None), _info("t3", None)])
    unsized = helper.make_node(
        "If", ["one_axis"], ["U"], name="unsized",
        then_branch=helper.make_graph([helper.make_node(
            "Scan", ["X", "X"], ["s0", "rows"], body=scan, num_scan_inputs=1)], "then", [],
            [_info("rows", None)]),
        else_branch=helper.make_graph([helper.make_node("Identity", ["X"], ["x0"])], "else",
                                      [], [_info("x0", None)]))
    holder = helper.make_node(
        "If", ["B"], ["Y"], name="holder",
        then_branch=helper.make_graph([helper.make_node(
            "Scan", ["X", "U"], ["v0", "sums"], body=added, num_scan_inputs=1, name="scan")],
            "then", [], [_info("sums", None)]),
        else_branch=helper.make_graph([helper.make_node("Identity", ["X"], ["x1"])], "else",
                                      [], [_info("x1", None)]))
    model = _model([helper.make_node("Squeeze", ["X", "e"], ["S"], name="squeeze"),
                    helper.make_node("Shape", ["S"], ["shape"]),
                    helper.make_node("Size", ["shape"], ["rank"]),
                    helper.make_node("Equal", ["rank", "one"], ["one_axis"]), unsized, holder],
                   [x, _info("B", [], TensorProto.BOOL)], [_info("Y", None)],
                   [_ints("e", []), _ints("one", 1)], opset=13, ir=8)
    return model, {"X": np.array([1, -2, 3], np.float32).reshape(1, 3, 1), "B": np.array(True)}


def test_a_segment_onnxruntime_fails_to_run_by_a_shapeless_scan_output_says_what_runs_it(
    tmp_path: Path, capsys
) -> None:
    """``check --fallback onnxruntime`` exited 2 with onnxruntime's words alone ("Subgraph
    must have the shape set for all outputs"); it names the node and that ``--fallback
    reference`` may run it, as for a segment onnxruntime refuses at load
    (``providers.FAILS_WHEN_RUN``), which then runs it (the reviewer's fuzzer, seed 64)."""
    model, feeds = _scan_of_an_unsized_read()
    want = ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    path, inputs, out = tmp_path / "m.onnx", tmp_path / "in.npz", tmp_path / "out.npz"
    onnx.save(model, path)
    np.savez(inputs, **feeds)
    capsys.readouterr()
    assert main(["check", str(path), "--fallback", "onnxruntime", "--inputs", str(inputs)]) == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1
    assert "onnxruntime fails on node(s) holder (If)" in error
    assert "Subgraph must have the shape set for all outputs" in error
    assert error.endswith("(onnx.reference may run them: --fallback reference, "
                          "fallback='reference' in Python)")
    assert main(["check", str(path), "--fallback", "reference", "--inputs", str(inputs)]) == 0
    assert main(["run", str(path), "--fallback", "reference", "--inputs", str(inputs),
                 "-o", str(out)]) == 0
    assert np.array_equal(np.load(out)["Y"], want)


def _scan_of_an_unordered_slice() -> tuple[onnx.ModelProto, dict, np.ndarray]:
    """A Scan-9 whose body's Slice-1 takes axes out of order ([1, 0]): onnx infers no shape
    for the body's output, which ONNX allows, and onnxruntime fails at every run ("Subgraph
    must have the shape set for all outputs"); dmlgraph lowers the Scan. Each row r [3, 4]
    becomes r[0:1, 0:2] (the spec: starts [0, 0], ends [2, 1] on axes 1, then 0)."""
    body = helper.make_graph(
        [helper.make_node("Slice", ["row"], ["out"], starts=[0, 0], ends=[2, 1], axes=[1, 0])],
        "body", [_info("row", [3, 4])], [_info("out", None)])
    model = _model([helper.make_node("Scan", ["X"], ["Y"], name="scan", body=body,
                                     num_scan_inputs=1)],
                   [_info("X", [2, 3, 4])], [_info("Y", None)], opset=9, ir=8)
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4) - 7
    return model, {"X": x}, x[:, 0:1, 0:2]


def _scan_of_an_unknown_rank() -> tuple[onnx.ModelProto, dict, np.ndarray]:
    """A Scan-9 whose body reshapes each row r [3, 4] by the graph input ``shape``, of a length
    no inference knows: onnx infers no rank for the body's output, and onnxruntime fails at
    every run ("Subgraph must have the shape set for all outputs"), a model dmlgraph's
    sessions cannot help it run (``_scan_of_an_unordered_slice``'s axes they write in
    order: ``old_axes``). Each row becomes r.reshape(12)."""
    body = helper.make_graph([helper.make_node("Reshape", ["row", "shape"], ["out"])],
                             "body", [_info("row", [3, 4])], [_info("out", None)])
    model = _model([helper.make_node("Scan", ["X"], ["Y"], name="scan", body=body,
                                     num_scan_inputs=1)],
                   [_info("X", [2, 3, 4]), _info("shape", ["k"], TensorProto.INT64)],
                   [_info("Y", None)], opset=9, ir=8)
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4) - 7
    return model, {"X": x, "shape": np.array([12])}, x.reshape(2, 12)


#: What a whole model onnxruntime cannot run ends with (``providers.MAY_RUN``), CLI and Python.
_MAY_RUN_SAID = ("(onnxruntime cannot run the model; the numpy backend runs it lowered, any "
                 "ONNX node left on onnx.reference, and check compares it with onnx.reference: "
                 "--backend numpy --fallback reference, get_backend('numpy', "
                 "fallback='reference') in Python)")


def test_a_whole_model_onnxruntime_fails_to_run_by_a_shapeless_scan_output_says_what_runs_it(
    tmp_path: Path, capsys
) -> None:
    """``run --backend onnxruntime`` exited 2 with onnxruntime's words alone ("Subgraph must
    have the shape set for all outputs"), and ``get_backend('onnxruntime').run`` raised them
    alone, where a fallback segment failing so names ``--fallback reference``: both now say
    what runs it, as for a model onnxruntime refuses at load (``providers.MAY_RUN``), and
    that runs it, equal to the spec's values."""
    from backends import get_backend
    from dmlgraph.errors import DmlgraphError

    model, feeds, want = _scan_of_an_unknown_rank()
    _ort_fails(model, feeds, "Subgraph must have the shape set for all outputs")
    path, inputs, out = tmp_path / "m.onnx", tmp_path / "in.npz", tmp_path / "out.npz"
    onnx.save(model, path)
    np.savez(inputs, **feeds)
    capsys.readouterr()
    assert main(["run", str(path), "--backend", "onnxruntime", "--inputs", str(inputs)]) == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1 and "Traceback" not in error
    assert "Name:'scan'" in error and "Subgraph must have the shape set for all outputs" in error
    assert error.endswith(_MAY_RUN_SAID)
    with pytest.raises(DmlgraphError) as raised:
        get_backend("onnxruntime").run(load(model), feeds)
    assert str(raised.value).endswith(_MAY_RUN_SAID)
    assert str(raised.value).count(_MAY_RUN_SAID) == 1
    assert main(["run", str(path), "--backend", "numpy", "--fallback", "reference", "--inputs",
                 str(inputs), "-o", str(out)]) == 0
    assert np.array_equal(np.load(out)["Y"], want)


def test_check_of_a_model_onnxruntime_fails_to_run_by_a_shapeless_scan_output_uses_the_spec(
    tmp_path: Path, capsys
) -> None:
    """``check`` exited 2 with onnxruntime's words alone; it compares with onnx.reference
    instead, as for a model onnxruntime refuses at load, and says so (CLI and Python)."""
    from onnx.reference import ReferenceEvaluator

    model, feeds, want = _scan_of_an_unordered_slice()
    assert np.array_equal(ReferenceEvaluator(model).run(None, feeds)[0], want)
    report = check(model, inputs=feeds)
    (comparison,) = report.comparisons
    assert comparison.expected.startswith("onnx.reference on the original model (onnxruntime "
                                          "cannot run it: ")
    assert "Subgraph must have the shape set for all outputs" in comparison.expected
    assert report.exit_code == 0 and comparison.passed
    path, inputs = tmp_path / "m.onnx", tmp_path / "in.npz"
    onnx.save(model, path)
    np.savez(inputs, **feeds, Y=want)
    capsys.readouterr()
    assert main(["check", str(path), "--inputs", str(inputs)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "vs onnx.reference on the original model (onnxruntime cannot run it: " in out
    assert "parity holds" in out


def test_a_node_named_as_onnxruntime_s_shapeless_scan_failure_is_not_taken_for_one(
    tmp_path: Path, capsys
) -> None:
    """A Split whose split sizes (fed) pass its axis, which ONNX forbids and onnxruntime's run
    refuses ("Invalid value in 'split'"), named "Subgraph must have the shape set for all
    outputs": onnxruntime's words quote the name, and ``check --fallback reference`` took the
    failure for a shapeless Scan output's, compared with onnx.reference (which truncates the
    last part) and said "parity holds", exit 0; ``run --backend onnxruntime`` said
    onnxruntime cannot run the model. Both say onnxruntime's words, as for a Split named
    otherwise (exit 2)."""
    model = _model([helper.make_node("Split", ["X", "sp"], ["A", "B"], axis=1,
                                     name="Subgraph must have the shape set for all outputs")],
                   [_info("X", ["N", 3]), _info("sp", [2], TensorProto.INT64)],
                   [_info("A", None), _info("B", None)], opset=18)
    feeds = {"X": np.arange(6, dtype=np.float32).reshape(2, 3), "sp": np.array([2, 2])}
    _ort_fails(model, feeds, "Invalid value in 'split'")
    path, inputs = tmp_path / "m.onnx", tmp_path / "in.npz"
    onnx.save(model, path)
    np.savez(inputs, **feeds)
    for command in (["check", "--fallback", "reference"], ["run", "--backend", "onnxruntime"]):
        capsys.readouterr()
        assert main([command[0], str(path), *command[1:], "--inputs", str(inputs)]) == 2
        error = capsys.readouterr().err.strip()
        assert len(error.splitlines()) == 1 and "Invalid value in 'split'" in error
        assert not error.endswith(_MAY_RUN_SAID)


def test_check_cross_check_of_a_model_onnxruntime_fails_to_run_skips_without_run_s_hint(
    tmp_path: Path, capsys
) -> None:
    """``check --cross-check`` of a model onnxruntime fails to run (a shapeless Scan output):
    its note that the cross-check was skipped ended in the hint for ``run`` ("... and check
    compares it with onnx.reference: --backend numpy --fallback reference"), options check
    lacks, in the table of a check that compared with onnx.reference; onnxruntime's words."""
    model, feeds, want = _scan_of_an_unknown_rank()
    _ort_fails(model, feeds, "Subgraph must have the shape set for all outputs")
    report = check(model, inputs=feeds, cross_check=True)
    (note,) = [n for n in report.notes if n.startswith("cross-check skipped: ")]
    assert note.endswith("Subgraph must have the shape set for all outputs but out did not.")
    assert "--backend" not in note and report.exit_code == 0


@pytest.mark.parametrize("name", ["numpy", "reference"])
def test_the_hint_a_model_onnxruntime_cannot_run_gets_names_no_divergent_node_by_its_words(
    tmp_path: Path, capsys, name: str
) -> None:
    """A model onnxruntime cannot load (an int16 Pad: no kernel) beside a reflect Pad by its
    input's size, a known divergence, named 'numpy' or 'reference': ``run --backend
    onnxruntime`` said "a known divergence at node 'numpy'" (the backend's own hint, which
    ends "get_backend('numpy', fallback='reference')", was read as onnxruntime's words, which
    quote the node failing), though onnxruntime names the int16 Pad alone; it says what
    runs the model, as for that Pad alone."""
    model = _model([
        helper.make_node("Pad", ["X", "two"], ["Y"], mode="reflect", name=name),
        helper.make_node("Pad", ["I", "one"], ["J"], mode="constant", name="p16"),
    ], [_info("X", [1, 2]), _info("I", [1, 2], TensorProto.INT16)],
        [_info("Y", None), _info("J", None, TensorProto.INT16)],
        [_ints("two", [0, 2, 0, 2]), _ints("one", [0, 1, 0, 1])], opset=18)
    with pytest.raises(Exception, match="Could not find an implementation for Pad.* 'p16'"):
        ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    capsys.readouterr()
    assert main(["run", str(path), "--backend", "onnxruntime"]) == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1 and "'p16'" in error
    assert "known divergence" not in error and error.endswith(_MAY_RUN_SAID)


@pytest.mark.parametrize("command", ["run", "check"])
def test_the_squeeze_hint_on_the_onnxruntime_fallback_is_said_once(
    tmp_path: Path, capsys, command: str
) -> None:
    """A Squeeze by an empty axes list whose result a Concat reads, on the onnxruntime
    fallback: the Concat's rule, broken at run time by the sizes onnxruntime made, got the
    hint, and the run lowered again by those sizes, failing with it, added it again: the
    whole "divergence: ... --fallback reference ..." text twice in one line."""
    model, feeds, _ = _squeeze_into_concat()
    path, inputs = tmp_path / "sq.onnx", tmp_path / "in.npz"
    onnx.save(model, path)
    np.savez(inputs, **feeds)
    capsys.readouterr()
    assert main([command, str(path), "--fallback", "onnxruntime", "--inputs", str(inputs)]) == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1
    assert error.count("divergence: a Squeeze of a [1, 3, 1] tensor by an empty axes list") == 1
    assert error.endswith(
        "(node 'squeeze' (Squeeze) is a known divergence onnx.reference runs as ONNX says: "
        "--fallback reference, fallback='reference' in Python)")
    assert error.count("--fallback reference") == 1


@pytest.mark.parametrize("fallback", ["onnxruntime", "reference"])
def test_run_says_the_divergence_a_node_ran_at(tmp_path: Path, capsys, fallback: str) -> None:
    """``run`` printed a Scan-8's final states of no step (onnxruntime's uninitialized memory
    on the onnxruntime fallback) with no word; its record's note is printed, once."""
    model, feeds, _ = _scan_8(None, steps=0)
    path, inputs = tmp_path / "scan.onnx", tmp_path / "in.npz"
    onnx.save(model, path)
    np.savez(inputs, **feeds)
    assert main(["run", str(path), "--inputs", str(inputs), "--fallback", fallback]) == 0
    notes = [line for line in capsys.readouterr().out.splitlines() if "note:" in line]
    (note,) = notes
    assert note.startswith("  note: node 'scan': divergence: a Scan-8 of empty scan inputs")
    assert ("this run's values there are that memory" in note) == (fallback == "onnxruntime")
    model, feeds, _ = _scan_8(None, steps=3)  # steps run: nothing to say
    onnx.save(model, path)
    np.savez(inputs, **feeds)
    assert main(["run", str(path), "--inputs", str(inputs), "--fallback", fallback]) == 0
    assert "note:" not in capsys.readouterr().out


def _nested(model: onnx.ModelProto, holders: str, given: tuple[int, ...] = (2,),
            made: tuple[int, ...] | None = (2,)) -> onnx.ModelProto:
    """The model's nodes (X -> Y, ``given`` and ``made`` their shapes: [2] unless given) inside
    one holder a letter, innermost first: 'L' a Loop of one trip carrying X, 'S' a Scan
    carrying X as a state over one step, 'I' an If of a constant true whose else branch is X;
    named 'h0', 'h1', ... from the inside out."""
    nodes, inits = list(model.graph.node), list(model.graph.initializer)
    for depth, kind in enumerate(holders):
        x, y = f"x{depth}", f"y{depth}"
        inner = []
        for node in nodes:
            copy = onnx.NodeProto()
            copy.CopyFrom(node)
            if kind != "I":  # a branch reads X itself
                copy.input[:] = [x if n == "X" else n for n in copy.input]
            copy.output[:] = [y if n == "Y" else n for n in copy.output]
            inner.append(copy)
        name = f"h{depth}"
        if kind == "L":
            inner.append(helper.make_node("Identity", ["c"], [f"c{depth}"]))
            body = helper.make_graph(inner, "body", [
                _info(f"i{depth}", [], TensorProto.INT64), _info("c", [], TensorProto.BOOL),
                _info(x, given)], [_info(f"c{depth}", [], TensorProto.BOOL), _info(y, made)],
                inits)
            nodes, inits = [helper.make_node("Loop", ["T", "", "X"], ["Y"], body=body,
                                             name=name)], [_ints("T", 1)]
        elif kind == "S":
            inner.append(helper.make_node("Identity", ["s"], [f"s{depth}"]))
            body = helper.make_graph(inner, "body", [_info(x, given), _info("s", [1])],
                                     [_info(y, made), _info(f"s{depth}", [1])], inits)
            nodes = [helper.make_node("Scan", ["X", "steps"], ["Y", f"scanned{depth}"],
                                      body=body, num_scan_inputs=1, name=name)]
            inits = [numpy_helper.from_array(np.ones((1, 1), np.float32), "steps")]
        else:
            other = helper.make_graph([helper.make_node("Identity", ["X"], [f"e{depth}"])],
                                      "else", [], [_info(f"e{depth}", given)])
            then = helper.make_graph(inner, "then", [], [_info(y, made)], inits)
            nodes = [helper.make_node("If", ["B"], ["Y"], then_branch=then, else_branch=other,
                                      name=name)]
            inits = [numpy_helper.from_array(np.array(True), "B")]
    return _model(nodes, [_info("X", given)], [_info("Y", made)], inits, opset=13)


def _shapeless_condition() -> tuple[onnx.ModelProto, dict, str]:
    cond = onnx.ValueInfoProto(name="c")
    cond.type.tensor_type.elem_type = TensorProto.BOOL
    return _loop(_info("i", [], TensorProto.INT64), cond)


@pytest.mark.parametrize("named", [True, False])
@pytest.mark.parametrize("case, holders, words", [
    (_loop, "L", "Name:'h0'"), (_loop, "LL", "Name:'h1'"), (_loop, "S", "Name:'h0'"),
    (_shapeless_condition, "LS", "Name:'h1'"),
    (lambda: (_loop_of_untyped_condition()[0], {}, ""), "SL", r"Node \(h1\) Op \(Loop\)"),
    # onnxruntime inlines an If of a constant condition, its nodes renamed: its error named
    # neither the If nor the Loop, and check exited 2
    (_loop, "I", "_if_then_branch_Loop"), (_loop, "IL", "_if_then_branch_Loop"),
    (_loop, "LI", "_if_then_branch_Loop"), (_shapeless_condition, "I", "_if_then_branch_Loop"),
])
def test_a_divergence_in_a_nested_subgraph_is_compared_with_onnx_reference(
    case, holders: str, words: str, named: bool
) -> None:
    """A divergent Loop at depth 2 and 3 (in Loop and Scan bodies, If branches) is named and
    its output compared with onnx.reference, as at the top level."""
    model = _nested(case()[0], holders)
    if not named:
        def unname(graph: onnx.GraphProto) -> None:
            for node in graph.node:
                node.name = ""
                for attr in node.attribute:
                    if attr.HasField("g"):
                        unname(attr.g)
        unname(model.graph)
    feeds = {"X": np.array([1, -2], np.float32)}
    if named:
        _ort_fails(model, feeds, words)
    report = check(model, inputs=feeds)
    (y,) = report.comparisons[0].outputs
    assert y.compared and y.verdict is Verdict.PASS and y.expected_shape == (2,)
    assert y.message.startswith("compared with onnx.reference: onnxruntime fails at a known")
    (divergence,) = report.divergences
    assert divergence.node == (f"h{len(holders) - 1}" if named else "")
    assert divergence.reference_follows_spec and report.exit_code == 0


def _squeeze_into_transpose() -> tuple[onnx.ModelProto, dict, str]:
    """A Squeeze of X [1, 3, 1] by an empty axes list into a Transpose of rank 3, one
    onnxruntime segment: onnxruntime fails at the Transpose, its input of rank 1."""
    model = _model([helper.make_node("Squeeze", ["X", "e"], ["S"], name="squeeze"),
                    helper.make_node("Transpose", ["S"], ["Y"], perm=[2, 1, 0], name="t")],
                   [_info("X", [1, 3, 1])], [_info("Y", None)], [_ints("e", [])], opset=13)
    return model, {"X": np.arange(3, dtype=np.float32).reshape(1, 3, 1)}, "Name:'t'"


@pytest.mark.parametrize("case, words", [
    # the Concat lowered, which the Squeeze's sizes break when lowered again
    (_squeeze_into_concat, "lowered again by the sizes made, the graph fails: node 'cat'"),
    (_squeeze_into_transpose, "perm size: 3 does not match input rank: 1"),
])
def test_a_squeeze_divergence_on_the_onnxruntime_fallback_says_reference_runs_it(
    case, words: str
) -> None:
    """dmlgraph's run fails where onnxruntime does past the Squeeze, its error saying nothing
    of the Squeeze: it says what diverges there and that --fallback reference runs it."""
    from dmlgraph.errors import DmlgraphError

    model, feeds, at = case()
    _ort_fails(model, feeds, at)
    with pytest.raises(DmlgraphError, match=words) as raised:
        check(model, inputs=feeds)
    assert str(raised.value).endswith(
        "; divergence: a Squeeze of a [1, 3, 1] tensor by an empty axes list: ONNX squeezes "
        "nothing, as onnx.reference does ([1, 3, 1]); onnxruntime squeezes every axis of size 1 "
        "([3]) (node 'squeeze' (Squeeze) is a known divergence onnx.reference runs as ONNX "
        "says: --fallback reference, fallback='reference' in Python)")
    assert check(model, inputs=feeds, fallback="reference").exit_code == 0


@pytest.mark.parametrize("holders, holder, whole", [
    ("L", "Loop", False), ("I", "If", False), ("LL", "Loop", False), ("L", "Loop", True)])
def test_a_squeeze_divergence_in_a_subgraph_on_the_onnxruntime_fallback_says_reference_runs_it(
    holders: str, holder: str, whole: bool
) -> None:
    """The Loop or If holding the Squeeze runs whole on onnxruntime, which fails at the
    Concat inside: its error said nothing of the Squeeze. ``whole``: it runs whole on either
    fallback, where on onnx.reference nothing noted the Squeeze, and check exited 2."""
    from dmlgraph.errors import DmlgraphError

    model = _nested(_squeeze_into_concat()[0], holders, (1, 3, 1), None)
    model = _run_whole(model) if whole else model
    feeds = _squeeze_into_concat()[1]
    _ort_fails(model, feeds, "Ranks of input data are different")
    with pytest.raises(DmlgraphError, match="Ranks of input data are different") as raised:
        check(model, inputs=feeds)
    message = str(raised.value)
    assert "; divergence: a Squeeze of a [1, 3, 1] tensor by an empty axes list" in message
    assert message.endswith(
        f"(node 'squeeze' (Squeeze) in a subgraph of node 'h0' ({holder}) is a known divergence "
        "onnx.reference runs as ONNX says: --fallback reference, fallback='reference' in Python)")
    assert check(model, inputs=feeds, fallback="reference").exit_code == 0


def _run_whole(model: onnx.ModelProto) -> onnx.ModelProto:
    """The model of one Loop 'h0' (``_nested``), its body passing its result through a
    sequence, which the numpy backend leaves to its fallback: 'h0' runs whole there, and
    nothing ran what it holds to note it."""
    body = model.graph.node[0].attribute[0].g
    body.node.extend([helper.make_node("SequenceConstruct", ["y0"], ["seq"]),
                      helper.make_node("SequenceAt", ["seq", "zero"], ["y0b"])])
    body.initializer.append(numpy_helper.from_array(np.array(0, np.int64), "zero"))
    body.output[1].name = "y0b"
    return model


def test_a_divergent_loop_held_by_a_node_run_whole_on_the_fallback_is_named() -> None:
    """With --fallback reference check exited 2 with onnxruntime's error (no note reached
    'h0'); with the onnxruntime fallback dmlgraph's run failed with onnxruntime's words only."""
    from dmlgraph.errors import DmlgraphError

    model, feeds = _run_whole(_nested(_loop()[0], "L")), {"X": np.array([1, -2], np.float32)}
    _ort_fails(model, feeds, "Loop subgraph input 0 has unknown shape")
    report = check(model, inputs=feeds, fallback="reference")
    (y,) = report.comparisons[0].outputs
    assert y.compared and y.verdict is Verdict.PASS
    assert y.message.startswith("compared with onnx.reference: onnxruntime fails at a known")
    (divergence,) = report.divergences
    assert divergence.node == "h0" and "declares its iteration number 'i'" in divergence.note
    with pytest.raises(DmlgraphError, match="unknown shape") as raised:
        check(model, inputs=feeds)
    assert str(raised.value).endswith(
        "(node 'h0' (Loop) is a known divergence onnx.reference runs as ONNX says: "
        "--fallback reference, fallback='reference' in Python)")


def test_run_on_onnxruntime_failing_at_a_nested_divergent_loop_says_numpy_runs_it(
    tmp_path: Path, capsys
) -> None:
    path = tmp_path / "nested.onnx"
    onnx.save(_nested(_loop_of_untyped_condition()[0], "L"), path)
    assert main(["run", str(path), "--backend", "onnxruntime"]) == 2
    assert capsys.readouterr().err.rstrip().endswith(
        "(a known divergence at node 'h0', which the numpy backend runs and check names: "
        "--backend numpy, get_backend('numpy') in Python)")


def test_a_held_value_of_an_element_type_numpy_lacks_is_passed_over() -> None:
    """An If run whole on --fallback reference (its branch makes a sequence) holding a
    Squeeze, its branch declaring a value of an element type numpy has no dtype for (99,
    which the ONNX checker and onnxruntime let by): reading the branch's declared sizes
    raised KeyError, a traceback where onnxruntime's fallback ran the model."""
    from backends import get_backend

    then = helper.make_graph(
        [helper.make_node("Squeeze", ["X", "ax"], ["y0"]),
         helper.make_node("SequenceConstruct", ["y0"], ["seq"]),
         helper.make_node("SequenceAt", ["seq", "zero"], ["y"])],
        "then", [], [_info("y", None)], [_ints("ax", np.zeros(0, np.int64)), _ints("zero", 0)])
    then.value_info.append(_info("q", [1, 3], 99))
    other = helper.make_graph([helper.make_node("Identity", ["X"], ["e"])], "else", [],
                              [_info("e", None)])
    model = _model([helper.make_node("If", ["B"], ["Y"], then_branch=then, else_branch=other,
                                     name="if")],
                   [_info("X", [1, 3]), _info("B", [], TensorProto.BOOL)], [_info("Y", None)],
                   opset=13, ir=8)
    feeds = {"X": np.ones((1, 3), np.float32), "B": np.array(True)}
    got = get_backend("numpy", fallback="reference").run(lower(load(model), "6_4"), feeds)
    assert got["Y"].shape == (1, 3)


def test_a_divergent_loop_in_a_branch_not_taken_is_no_divergence(tmp_path: Path,
                                                                 capsys) -> None:
    """An If whose then branch holds a Loop onnxruntime fails on when it runs (its counter
    declared without a shape), its condition false: onnxruntime runs the model, and check
    named a divergence at the If (noted when lowered, whether the branch ran or not), which
    would excuse any mismatch of its outputs. Now a held Loop of that kind is noted where it
    runs; onnxruntime's failure where one runs still says the numpy backend runs it."""
    model = _nested(_loop()[0], "I")
    (flag,) = [t for t in model.graph.initializer if t.name == "B"]
    flag.CopyFrom(numpy_helper.from_array(np.array(False), "B"))
    feeds = {"X": np.array([1, -2], np.float32)}
    for fallback in ("onnxruntime", "reference"):
        report = check(model, inputs=feeds, fallback=fallback)
        assert report.divergences == (), fallback
        assert report.comparisons[0].outputs[0].verdict is Verdict.PASS
    path = tmp_path / "scan.onnx"
    onnx.save(_nested(_loop()[0], "S"), path)
    assert main(["run", str(path), "--backend", "onnxruntime"]) == 2
    assert capsys.readouterr().err.rstrip().endswith(
        "(a known divergence at node 'h0', which the numpy backend runs and check names: "
        "--backend numpy, get_backend('numpy') in Python)")


def _squeeze_beside_bad_reshape(holder: bool) -> tuple[onnx.ModelProto, dict, str]:
    """A Squeeze of X [1, 3, 1] by an empty axes list beside a Reshape of Z [3] to [5], which
    fails on either engine: at top level, or in the branch of an If (of a condition fed) run
    whole on the fallback, its Squeeze's result passed through a sequence."""
    nodes = [helper.make_node("Squeeze", ["X", "e"], ["S"], name="squeeze"),
             helper.make_node("Reshape", ["Z", "five"], ["W"], name="reshape")]
    inits = [_ints("e", []), _ints("five", [5])]
    outputs = [_info("S", None), _info("W", None)]
    feeds = {"X": np.arange(3, dtype=np.float32).reshape(1, 3, 1),
             "Z": np.arange(3, dtype=np.float32)}
    if not holder:
        return _model(nodes, [_info("X", [1, 3, 1]), _info("Z", [3])], outputs, inits,
                      opset=13), feeds, "Name:'reshape'"
    nodes += [helper.make_node("SequenceConstruct", ["S"], ["seq"]),
              helper.make_node("SequenceAt", ["seq", "zero"], ["S2"])]
    then = helper.make_graph(nodes, "then", [], [_info("S2", None), outputs[1]],
                             [*inits, _ints("zero", 0)])
    other = helper.make_graph([helper.make_node("Identity", ["X"], ["S3"]),
                               helper.make_node("Identity", ["Z"], ["W3"])], "else", [],
                              [_info("S3", None), _info("W3", None)])
    model = _model([helper.make_node("If", ["B"], ["Y", "W"], then_branch=then,
                                     else_branch=other, name="if")],
                   [_info("X", [1, 3, 1]), _info("Z", [3]), _info("B", [], TensorProto.BOOL)],
                   [_info("Y", None), _info("W", None)], opset=13)
    return model, {**feeds, "B": np.array(True)}, "Name:'if'.*Name:'reshape'"


@pytest.mark.parametrize("holder", [False, True])
def test_a_failure_apart_from_a_squeeze_divergence_gets_no_hint(
    tmp_path: Path, capsys, holder: bool
) -> None:
    """onnxruntime fails at a Reshape the Squeeze does not reach, as onnx.reference does: its
    error said the Squeeze is a divergence --fallback reference runs, which failed too."""
    model, feeds, at = _squeeze_beside_bad_reshape(holder)
    # one onnxruntime segment of both nodes, or the If run whole on the onnxruntime fallback
    _fails_on_both_without_hint(model, feeds, at, "cannot reshape array of size 3",
                                "requested shape:.5.")
    _run_on_onnxruntime_names_no_divergence(tmp_path, capsys, model, feeds,
                                            "requested shape:{5}")


def _squeeze_read_in_a_branch(apart: bool = False) -> tuple[onnx.ModelProto, dict, str]:
    """A top-level Squeeze of X [1, 3, 1] by an empty axes list whose result S an If's then
    branch (its condition fed true) joins with X on axis 0: onnxruntime fails at the Concat
    in the branch. ``apart``: the branch joins Z (fed [3], declared of no shape) with X
    instead, a Concat that fails on either engine, beside a sum of S (the same sum on either
    engine), which the Concat does not read."""
    cat = (helper.make_node("Concat", ["Z", "X"], ["y"], axis=0, name="cat") if apart
           else helper.make_node("Concat", ["S", "X"], ["y"], axis=0, name="cat"))
    then = helper.make_graph([cat, helper.make_node("ReduceSum", ["S"], ["s2"], keepdims=0,
                                                    name="sum")],
                             "then", [], [_info("y", None), _info("s2", None)])
    other = helper.make_graph([helper.make_node("Identity", ["X"], ["e1"]),
                               helper.make_node("ReduceSum", ["S"], ["e2"], keepdims=0)],
                              "else", [],
                              [_info("e1", None), _info("e2", None)])
    model = _model([helper.make_node("Squeeze", ["X", "e"], ["S"], name="squeeze"),
                    helper.make_node("If", ["B"], ["Y", "W"], then_branch=then,
                                     else_branch=other, name="if")],
                   [_info("X", [1, 3, 1]), _info("Z", None), _info("B", [], TensorProto.BOOL)],
                   [_info("Y", None), _info("W", None)], [_ints("e", [])], opset=13, ir=8)
    feeds = {"X": np.arange(3, dtype=np.float32).reshape(1, 3, 1),
             "Z": np.arange(3, dtype=np.float32), "B": np.array(True)}
    return model, feeds, "Name:'cat'"


_SQUEEZE_NOTE = (
    "; divergence: a Squeeze of a [1, 3, 1] tensor by an empty axes list: ONNX squeezes "
    "nothing, as onnx.reference does ([1, 3, 1]); onnxruntime squeezes every axis of size 1 "
    "([3]) ")


def test_a_squeeze_divergence_read_in_a_branch_says_reference_runs_it(tmp_path: Path,
                                                                      capsys) -> None:
    """The Squeeze runs on the onnxruntime fallback, and the If's branch, lowered by the
    sizes that arrive, breaks the Concat's rule by its [3]: check ended with that rule alone,
    where ``run --backend onnxruntime`` and --fallback reference named the Squeeze."""
    from dmlgraph.errors import DmlgraphError

    model, feeds, at = _squeeze_read_in_a_branch()
    _ort_fails(model, feeds, at)
    hint = (_SQUEEZE_NOTE + "(node 'squeeze' (Squeeze) is a known divergence onnx.reference "
            "runs as ONNX says: --fallback reference, fallback='reference' in Python)")
    with pytest.raises(DmlgraphError, match="its then_branch, run with .* breaks a rule: "
                       "node 'cat' \\(Concat\\)") as raised:
        check(model, inputs=feeds)
    assert str(raised.value).endswith(hint)
    assert check(model, inputs=feeds, fallback="reference").exit_code == 0
    path, inputs = tmp_path / "sq.onnx", tmp_path / "in.npz"
    onnx.save(model, path)
    np.savez(inputs, **feeds)
    assert main(["check", str(path), "--inputs", str(inputs)]) == 2
    assert capsys.readouterr().err.rstrip().endswith(hint)


def test_a_branch_rule_apart_from_a_squeeze_divergence_gets_no_hint() -> None:
    """The branch breaks a Concat's rule that the Squeeze's result does not reach (Z [3]
    with X [1, 3, 1]), on either engine: no hint to run what fails there too."""
    model, feeds, at = _squeeze_read_in_a_branch(apart=True)
    _fails_on_both_without_hint(model, feeds, at, "must have same number of dimensions",
                                "breaks a rule: node 'cat'")


def _undeclared(holder: str) -> onnx.ModelProto:
    """``_squeeze_into_concat`` in a subgraph whose sizes at the Squeeze are not declared:
    'L' a Loop body's carried input declared without a shape, 'U' the same without a type,
    'I' an If branch squeezing an Identity of X (its result undeclared)."""
    model = _nested(_squeeze_into_concat()[0], "I" if holder == "I" else "L", (1, 3, 1), None)
    held = model.graph.node[0]
    if holder == "I":
        then = next(a.g for a in held.attribute if a.name == "then_branch")
        then.node.insert(0, helper.make_node("Identity", ["X"], ["Xi"], name="copy"))
        next(n for n in then.node if n.op_type == "Squeeze").input[0] = "Xi"
        return model
    carried = held.attribute[0].g.input[2]
    if holder == "U":
        carried.ClearField("type")
    else:
        carried.type.tensor_type.ClearField("shape")
    return model


@pytest.mark.parametrize("holder, kind, whole", [
    ("L", "Loop", False), ("U", "Loop", False), ("I", "If", False), ("L", "Loop", True),
    ("U", "Loop", True)])
def test_a_squeeze_divergence_in_a_subgraph_of_sizes_not_declared_says_reference_runs_it(
    tmp_path: Path, capsys, holder: str, kind: str, whole: bool
) -> None:
    """The Squeeze's sizes are not declared where it is, but the values fed show them: its
    holder's first run (a Loop's first trip) takes them. No hint was given, where the same
    declared got one. ``whole``: the Loop runs whole on either fallback (``_run_whole``),
    where on --fallback reference nothing noted the Squeeze, and check exited 2."""
    from dmlgraph.errors import DmlgraphError

    model, feeds = _undeclared(holder), _squeeze_into_concat()[1]
    model = _run_whole(model) if whole else model
    _ort_fails(model, feeds, "Ranks of input data are different")
    where = f"(node 'squeeze' (Squeeze) in a subgraph of node 'h0' ({kind}) is a known divergence"
    with pytest.raises(DmlgraphError, match="Ranks of input data are different") as raised:
        check(model, inputs=feeds)
    assert str(raised.value).endswith(
        f"{_SQUEEZE_NOTE}{where} onnx.reference runs as ONNX says: --fallback reference, "
        "fallback='reference' in Python)")
    assert check(model, inputs=feeds, fallback="reference").exit_code == 0
    path, inputs = tmp_path / "sq.onnx", tmp_path / "in.npz"
    onnx.save(model, path)
    np.savez(inputs, **feeds)
    assert main(["run", str(path), "--backend", "onnxruntime", "--inputs", str(inputs)]) == 2
    assert capsys.readouterr().err.rstrip().endswith(
        f"{_SQUEEZE_NOTE}{where} onnx.reference runs as ONNX says, which the numpy backend "
        "runs there and check names: --backend numpy --fallback reference, "
        "get_backend('numpy', fallback='reference') in Python)")


def test_a_failure_apart_from_an_undeclared_squeeze_divergence_gets_no_hint() -> None:
    """``_squeeze_beside_bad_reshape``'s If, its branch squeezing an Identity of X (sizes
    not declared, shown by the values fed): the Reshape fails apart from it, no hint."""
    from dmlgraph.errors import DmlgraphError

    model, feeds, at = _squeeze_beside_bad_reshape(True)
    then = next(a.g for a in model.graph.node[0].attribute if a.name == "then_branch")
    then.node.insert(0, helper.make_node("Identity", ["X"], ["Xi"], name="copy"))
    next(n for n in then.node if n.op_type == "Squeeze").input[0] = "Xi"
    _ort_fails(model, feeds, at)
    with pytest.raises(DmlgraphError, match="requested shape:.5.") as raised:
        check(model, inputs=feeds)
    assert "divergence" not in str(raised.value)


def _squeeze_read_two_deep(apart: bool) -> tuple[onnx.ModelProto, dict]:
    """A top-level Squeeze of X [1, 3, 1] by an empty axes list carried into a Loop of one
    trip, whose body's If (condition fed true) joins it with X in its then branch, beside a
    sum of it; ``apart``: the branch joins Z (fed [3], declared of no shape) with X instead."""
    cat = helper.make_node("Concat", ["Z" if apart else "v", "X"], ["y"], axis=0, name="cat")
    then = helper.make_graph([cat, helper.make_node("ReduceSum", ["v"], ["s"], keepdims=0)],
                             "then", [], [_info("y", None), _info("s", None)])
    other = helper.make_graph([helper.make_node("Identity", ["X"], ["e1"]),
                               helper.make_node("ReduceSum", ["v"], ["e2"], keepdims=0)],
                              "else", [], [_info("e1", None), _info("e2", None)])
    body = helper.make_graph(
        [helper.make_node("If", ["B"], ["w", "ws"], then_branch=then, else_branch=other,
                          name="if"),
         helper.make_node("Identity", ["c"], ["c2"]), helper.make_node("Identity", ["v"], ["v2"])],
        "body", [_info("i", [], TensorProto.INT64), _info("c", [], TensorProto.BOOL),
                 _info("v", None)],
        [_info("c2", [], TensorProto.BOOL), _info("v2", None), _info("w", None)])
    model = _model([helper.make_node("Squeeze", ["X", "e"], ["S"], name="squeeze"),
                    helper.make_node("Loop", ["T", "", "S"], ["V", "W"], body=body,
                                     name="loop")],
                   [_info("X", [1, 3, 1]), _info("Z", None), _info("B", [], TensorProto.BOOL)],
                   [_info("V", None), _info("W", None)], [_ints("e", []), _ints("T", 1)],
                   opset=13, ir=8)
    return model, {"X": np.arange(3, dtype=np.float32).reshape(1, 3, 1),
                   "Z": np.arange(3, dtype=np.float32), "B": np.array(True)}


@pytest.mark.parametrize("apart", [False, True])
def test_a_squeeze_divergence_read_two_subgraphs_deep_is_named_unless_apart(apart: bool) -> None:
    """The If breaking the rule is in the Loop's body: the divergence is found through what
    the Loop carries into it (the body's plan knows no maker of its input), not where the
    Concat reads Z alone."""
    from dmlgraph.errors import DmlgraphError

    model, feeds = _squeeze_read_two_deep(apart)
    _ort_fails(model, feeds, "Name:'cat'")
    with pytest.raises(DmlgraphError, match="its body: node 'if' \\(If\\): its then_branch, "
                       "run with .* breaks a rule: node 'cat'") as raised:
        check(model, inputs=feeds)
    if apart:
        assert "divergence" not in str(raised.value)
        return
    assert str(raised.value).endswith(
        _SQUEEZE_NOTE + "(node 'squeeze' (Squeeze) is a known divergence onnx.reference runs "
        "as ONNX says: --fallback reference, fallback='reference' in Python)")
    assert check(model, inputs=feeds, fallback="reference").exit_code == 0


def _unnamed(graph: onnx.GraphProto) -> None:
    """Each node of ``graph`` but the Squeeze (at any depth) unnamed."""
    for node in graph.node:
        for attribute in node.attribute:
            if attribute.type == onnx.AttributeProto.GRAPH:
                _unnamed(attribute.g)
        if node.op_type != "Squeeze":
            node.name = ""


def _sum_named_cat(graph: onnx.GraphProto) -> None:
    """The sum of the Squeeze's result beside the Concat 'cat' (at any depth of ``graph``)
    made in an If's branches (condition B), by a ReduceSum named 'cat' there too."""
    for node in graph.node:
        for attribute in node.attribute:
            if attribute.type == onnx.AttributeProto.GRAPH:
                _sum_named_cat(attribute.g)
    if not any(node.name == "cat" for node in graph.node):
        return
    k, total = next((k, n) for k, n in enumerate(graph.node) if n.op_type == "ReduceSum")

    def branch(made: str) -> onnx.GraphProto:
        return helper.make_graph([helper.make_node("ReduceSum", total.input, [made],
                                                   keepdims=0, name="cat")],
                                 made, [], [_info(made, None)])

    graph.node[k].CopyFrom(helper.make_node("If", ["B"], total.output, name="wrap",
                                            then_branch=branch("sum_t"),
                                            else_branch=branch("sum_e")))


@pytest.mark.parametrize("names", ["unnamed", "shared"])
@pytest.mark.parametrize("deep", [False, True])
@pytest.mark.parametrize("apart", [False, True])
def test_a_branch_rule_is_told_apart_from_a_squeeze_by_what_its_node_makes(
        names: str, deep: bool, apart: bool) -> None:
    """``_squeeze_read_in_a_branch`` and ``_squeeze_read_two_deep`` with every node but the
    Squeeze unnamed, or with the Squeeze's result summed by a node named 'cat' as the Concat
    is, in a branch within the Concat's: the Concat breaking the rule is found by what it
    makes. Found by its name, an unnamed or shared one was taken as reading every input, and
    the Concat of Z, apart from the Squeeze, got the hint to run --fallback reference, where
    it fails as well."""
    from dmlgraph.errors import DmlgraphError

    model, feeds = (_squeeze_read_two_deep(apart) if deep
                    else _squeeze_read_in_a_branch(apart)[:2])
    if names == "unnamed":
        _unnamed(model.graph)
    else:
        _sum_named_cat(model.graph)
    _ort_fails(model, feeds, "Concat|Name:'cat'")
    told = r"breaks a rule: (unnamed node making 'y'|node 'cat') \(Concat\)"
    with pytest.raises(DmlgraphError, match=told) as raised:
        check(model, inputs=feeds)
    if apart:
        assert "divergence" not in str(raised.value)
        with pytest.raises(DmlgraphError, match=told):
            check(model, inputs=feeds, fallback="reference")
        return
    assert str(raised.value).endswith(
        _SQUEEZE_NOTE + "(node 'squeeze' (Squeeze) is a known divergence onnx.reference runs "
        "as ONNX says: --fallback reference, fallback='reference' in Python)")
    assert check(model, inputs=feeds, fallback="reference").exit_code == 0


def test_a_squeeze_divergence_failing_an_unnamed_node_downstream_checks_on_reference() -> None:
    """``_squeeze_into_concat`` with its Concat unnamed: onnxruntime's failure names the
    node '', so the reference is ``to_onnx``'s graph, which names it, and the Concat is
    found downstream of the Squeeze as where named. Only an unnamed divergent node was
    looked for: --fallback reference, which the hint names, exited 2 with onnxruntime's
    error."""
    model, feeds, _ = _squeeze_into_concat()
    model.graph.node[1].name = ""
    _ort_fails(model, feeds, "Name:''")
    result = check(model, inputs=feeds, fallback="reference")
    assert result.exit_code == 0


@pytest.mark.parametrize("apart", [False, True])
def test_a_held_squeeze_s_hint_tells_an_unnamed_failing_node_by_what_it_makes(
        apart: bool) -> None:
    """A branch run whole on the fallback, every node but the Squeeze unnamed: onnxruntime's
    failure names the node failing inside '' and its op type. ``apart``: the Reshape of Z
    (``_squeeze_beside_bad_reshape``), beside the unnamed nodes passing the Squeeze's result
    through a sequence, which was taken for one of them: the hint to run --fallback
    reference, where it fails too. Else a Concat of the Squeeze's result there instead:
    named, as where named."""
    from dmlgraph.errors import DmlgraphError

    model, feeds, _ = _squeeze_beside_bad_reshape(True)
    if not apart:  # the branch's Reshape of Z a Concat of S and X, the else's of X twice
        branches = {a.name: a.g for a in model.graph.node[0].attribute}
        joined = next(n for n in branches["then_branch"].node if n.op_type == "Reshape")
        joined.CopyFrom(helper.make_node("Concat", ["S", "X"], ["W"], axis=0))
        branches["else_branch"].node[1].CopyFrom(
            helper.make_node("Concat", ["X", "X"], ["W3"], axis=0))
    _unnamed(model.graph)
    _ort_fails(model, feeds, "Name:''")
    with pytest.raises(DmlgraphError, match="Reshape|Concat") as raised:
        check(model, inputs=feeds)
    if apart:
        assert "divergence" not in str(raised.value)
        return
    assert "(node 'squeeze' (Squeeze) in a subgraph of node (unnamed" in str(raised.value)
    assert check(model, inputs=feeds, fallback="reference").exit_code == 0


def test_a_branch_rule_reached_by_a_sum_of_a_squeeze_s_result_gets_no_hint() -> None:
    """The branch joins T (an Unsqueeze of a sum of the Squeeze's result: [1] on either
    engine) with Z [1, 1]: the Concat fails on onnx.reference too, the divergence of sizes
    not reaching T's. It got the hint to run --fallback reference, the Squeeze being among
    the nodes before T."""
    from onnx.reference import ReferenceEvaluator

    from dmlgraph.errors import DmlgraphError

    then = helper.make_graph([helper.make_node("Concat", ["T", "Z"], ["y"], axis=0,
                                               name="cat")], "then", [], [_info("y", None)])
    other = helper.make_graph([helper.make_node("Identity", ["Z"], ["e1"])], "else", [],
                              [_info("e1", None)])
    model = _model([helper.make_node("Squeeze", ["X", "e"], ["S"], name="squeeze"),
                    helper.make_node("ReduceSum", ["S"], ["T0"], keepdims=0, name="sum"),
                    helper.make_node("Unsqueeze", ["T0", "zero"], ["T"], name="unsqueeze"),
                    helper.make_node("If", ["B"], ["Y"], then_branch=then, else_branch=other,
                                     name="if")],
                   [_info("X", [1, 3, 1]), _info("Z", None), _info("B", [], TensorProto.BOOL)],
                   [_info("Y", None)], [_ints("e", []), _ints("zero", [0])], opset=13, ir=8)
    feeds = {"X": np.ones((1, 3, 1), np.float32), "Z": np.ones((1, 1), np.float32),
             "B": np.array(True)}
    _ort_fails(model, feeds, "Name:'cat'")
    with pytest.raises(Exception, match="same number of dimensions"):
        ReferenceEvaluator(model).run(None, feeds)
    with pytest.raises(DmlgraphError, match="breaks a rule: node 'cat'") as raised:
        check(model, inputs=feeds)
    assert "divergence" not in str(raised.value)


def test_a_main_graph_failure_reached_by_a_sum_of_a_squeeze_s_result_gets_no_hint(
    tmp_path: Path, capsys
) -> None:
    """A Reshape to [5] of a sum of the Squeeze's result (a scalar on either engine) fails on
    both engines: the divergence of sizes does not reach the sum's, as for a branch's rule
    (``fallback.diverged_reads``, one rule for both). check on the onnxruntime fallback, and
    ``run --backend onnxruntime``, said the Squeeze is a divergence onnx.reference runs; it
    fails there too."""
    model = _model([helper.make_node("Squeeze", ["X", "e"], ["S"], name="squeeze"),
                    helper.make_node("ReduceSum", ["S"], ["T0"], keepdims=0, name="sum"),
                    helper.make_node("Reshape", ["T0", "five"], ["Y"], name="reshape")],
                   [_info("X", [1, 3, 1])], [_info("Y", None)],
                   [_ints("e", []), _ints("five", [5])], opset=13, ir=8)
    feeds = {"X": np.ones((1, 3, 1), np.float32)}
    _fails_on_both_without_hint(model, feeds, "Name:'reshape'", "cannot reshape",
                                "onnxruntime fails on node.*Name:'reshape'")
    _run_on_onnxruntime_names_no_divergence(tmp_path, capsys, model, feeds, "Name:'reshape'")


def test_a_main_graph_failure_reached_by_the_squeeze_s_result_itself_keeps_its_hint() -> None:
    """The same Reshape of the Squeeze's result itself ([3] on onnxruntime, [1, 3, 1] as ONNX
    infers it), to [1, 3]: onnxruntime fails where onnx.reference runs, and the hint stays."""
    from onnx.reference import ReferenceEvaluator

    from dmlgraph.errors import DmlgraphError

    model = _model([helper.make_node("Squeeze", ["X", "e"], ["S"], name="squeeze"),
                    helper.make_node("Neg", ["S"], ["T"], name="neg"),
                    helper.make_node("Reshape", ["T", "shape"], ["Y"], name="reshape",
                                     allowzero=0)],
                   [_info("X", [1, 3, 1])], [_info("Y", None)],
                   [_ints("e", []), _ints("shape", [0, 3])], opset=14, ir=8)
    feeds = {"X": np.ones((1, 3, 1), np.float32)}
    _ort_fails(model, feeds, "Name:'reshape'")
    assert ReferenceEvaluator(model).run(None, feeds)[0].shape == (1, 3)
    with pytest.raises(DmlgraphError, match="Name:'reshape'") as raised:
        check(model, inputs=feeds, fallback="onnxruntime")
    assert "(node 'squeeze' (Squeeze) is a known divergence" in str(raised.value)
    assert check(model, inputs=feeds, fallback="reference").exit_code == 0


def test_a_failure_whose_reads_no_float_arrives_in_keeps_its_hint_without_a_rerun(
        monkeypatch) -> None:
    """An int64 Squeeze's result reshaped to [0, 3]: onnxruntime fails where onnx.reference
    runs, and the hint stays. No read of the Reshape can arrive as a float of the inferred
    sizes (the one kind ``diverged_reads`` passes), so onnxruntime does not run the nodes
    before it again to see what arrived (``_arrived``: 1.1 s of a failing check of 200 MB)."""
    from onnx.reference import ReferenceEvaluator

    from backends.numpy import fallback
    from dmlgraph.errors import DmlgraphError

    model = _model([helper.make_node("Squeeze", ["X", "e"], ["S"], name="squeeze"),
                    helper.make_node("Reshape", ["S", "shape"], ["Y"], name="reshape",
                                     allowzero=0)],
                   [_info("X", [1, 3, 1], TensorProto.INT64)],
                   [_info("Y", None, TensorProto.INT64)],
                   [_ints("e", []), _ints("shape", [0, 3])], opset=14, ir=8)
    feeds = {"X": np.arange(3, dtype=np.int64).reshape(1, 3, 1)}
    _ort_fails(model, feeds, "Name:'reshape'")
    assert ReferenceEvaluator(model).run(None, feeds)[0].shape == (1, 3)
    reruns = []
    arrived = fallback._arrived
    monkeypatch.setattr(fallback, "_arrived", lambda *a: reruns.append(a) or arrived(*a))
    with pytest.raises(DmlgraphError, match="Name:'reshape'") as raised:
        check(model, inputs=feeds, fallback="onnxruntime")
    assert "(node 'squeeze' (Squeeze) is a known divergence" in str(raised.value)
    assert reruns == []


def test_a_main_graph_failure_at_a_rule_on_float_values_the_squeeze_reaches_keeps_its_hint(
) -> None:
    """A Range whose delta is a float scalar (of the sizes ONNX infers on either engine) made
    of the Squeeze's result's first dimension less 3: 0 on onnxruntime, which refuses it, -2
    on onnx.reference, which runs it. A rule reading float values (``fallback._VALUE_RULES``)
    keeps the hint: the float read was passed as a divergence of sizes could not reach it."""
    from onnx.reference import ReferenceEvaluator

    from dmlgraph.errors import DmlgraphError

    def floats(name: str, value: float) -> onnx.TensorProto:
        return numpy_helper.from_array(np.array(value, np.float32), name)

    model = _model([helper.make_node("Squeeze", ["X", "e"], ["S"], name="squeeze"),
                    helper.make_node("Shape", ["S"], ["shape"], name="shape"),
                    helper.make_node("Gather", ["shape", "zero"], ["d0"], name="gather"),
                    helper.make_node("Cast", ["d0"], ["d"], to=TensorProto.FLOAT, name="cast"),
                    helper.make_node("Sub", ["d", "three"], ["delta"], name="sub"),
                    helper.make_node("Range", ["start", "limit", "delta"], ["Y"],
                                     name="range")],
                   [_info("X", [1, 3, 1])], [_info("Y", None)],
                   [_ints("e", []), _ints("zero", 0), floats("three", 3.0),
                    floats("start", 0.0), floats("limit", 5.0)], opset=13, ir=8)
    feeds = {"X": np.ones((1, 3, 1), np.float32)}
    assert ReferenceEvaluator(model).run(None, feeds)[0].shape == (0,)
    with pytest.raises(DmlgraphError, match="delta in Range operator can not be zero") as raised:
        check(model, inputs=feeds, fallback="onnxruntime")
    assert "(node 'squeeze' (Squeeze) is a known divergence" in str(raised.value)
    assert check(model, inputs=feeds, fallback="reference").exit_code == 0


def test_run_on_onnxruntime_failing_past_a_squeeze_in_a_scan_of_a_branch_says_what_runs_it(
    tmp_path: Path, capsys
) -> None:
    """An If's then branch Scans X [1, 3, 1] (rows [3, 1]), its body a Relu of a Squeeze of
    each row by an empty axes list, and joins the rows with X: onnxruntime fails there
    (rows [1, 3]), onnx.reference runs it ([2, 3, 1]). ``reach`` from the Squeeze's result,
    made in the Scan's body, dropped it as a name of the body's own: nothing past the Scan
    was reached, the failure was taken for apart from the Squeeze, and the hint was lost."""
    from onnx.reference import ReferenceEvaluator

    body = helper.make_graph([helper.make_node("Squeeze", ["x", "e"], ["S"], name="squeeze"),
                              helper.make_node("Relu", ["S"], ["R"], name="relu")],
                             "body", [_info("x", [3, 1])], [_info("R", None)])
    then = helper.make_graph(
        [helper.make_node("Scan", ["X"], ["rows"], body=body, num_scan_inputs=1, name="scan"),
         helper.make_node("Concat", ["rows", "X"], ["y"], axis=0, name="cat")],
        "then", [], [_info("y", None)])
    other = helper.make_graph([helper.make_node("Identity", ["X"], ["x2"])], "else", [],
                              [_info("x2", None)])
    model = _model([helper.make_node("If", ["B"], ["Y"], then_branch=then, else_branch=other,
                                     name="if")],
                   [_info("X", [1, 3, 1]), _info("B", [], TensorProto.BOOL)],
                   [_info("Y", None)], [_ints("e", [])], opset=13, ir=8)
    feeds = {"X": np.arange(3, dtype=np.float32).reshape(1, 3, 1), "B": np.array(True)}
    assert ReferenceEvaluator(model).run(None, feeds)[0].shape == (2, 3, 1)
    path, inputs = tmp_path / "scan.onnx", tmp_path / "in.npz"
    onnx.save(model, path)
    np.savez(inputs, **feeds)
    assert main(["run", str(path), "--backend", "onnxruntime", "--inputs", str(inputs)]) == 2
    assert ("(node 'squeeze' (Squeeze) in a subgraph of node 'if' (If) is a known divergence "
            "onnx.reference runs as ONNX says") in capsys.readouterr().err
    assert main(["run", str(path), "--backend", "numpy", "--fallback", "reference",
                 "--inputs", str(inputs)]) == 0


def _squeeze_in_a_held_body(holder: str, branch: bool = True,
                            apart: bool = False) -> tuple[onnx.ModelProto, dict]:
    """A Squeeze by an empty axes list in a Scan's body (each row [3, 1] of X [1, 3, 1], a
    Relu of it made its rows) or a Loop's of one trip (of X carried, its result carried
    out), the holder's result joined with X by a Concat: in an If's then branch
    (``branch``, condition B fed true) or at top level. onnxruntime squeezes the 1s (the
    Concat's ranks differ), onnx.reference nothing. ``apart`` (Scan): the Squeeze's result
    only summed into the Scan's other output, its rows a NonZero of each row (int64
    [1, 2, 3]) joined with Z (int64 [3]): ranks differing on both engines."""
    squeeze = helper.make_node("Squeeze", ["x", "e"], ["S"], name="squeeze")
    if holder == "Loop":
        body = helper.make_graph(
            [helper.make_node("Identity", ["c"], ["c2"]), squeeze],
            "body", [_info("i", [], TensorProto.INT64), _info("c", [], TensorProto.BOOL),
                     _info("x", [1, 3, 1])], [_info("c2", [], TensorProto.BOOL), _info("S", None)])
        held = helper.make_node("Loop", ["T", "C", "X"], ["rows"], body=body, name="h")
    elif apart:
        body = helper.make_graph(
            [squeeze, helper.make_node("ReduceSum", ["S"], ["s"], keepdims=0),
             helper.make_node("NonZero", ["x"], ["R"])],
            "body", [_info("x", [3, 1])], [_info("R", None, TensorProto.INT64), _info("s", None)])
        held = helper.make_node("Scan", ["X"], ["rows", "sums"], body=body, num_scan_inputs=1,
                                name="h")
    else:
        body = helper.make_graph([squeeze, helper.make_node("Relu", ["S"], ["R"])],
                                 "body", [_info("x", [3, 1])], [_info("R", None)])
        held = helper.make_node("Scan", ["X"], ["rows"], body=body, num_scan_inputs=1, name="h")
    joined = helper.make_node("Concat", ["rows", "Z" if apart else "X"], ["y"], axis=0,
                              name="cat")
    elem = TensorProto.INT64 if apart else TensorProto.FLOAT
    inputs = [_info("X", [1, 3, 1]), *([_info("Z", None, elem)] if apart else [])]
    feeds = {"X": np.arange(3, dtype=np.float32).reshape(1, 3, 1),
             **({"Z": np.arange(3)} if apart else {})}
    inits = [_ints("e", []), _ints("T", 1),
             numpy_helper.from_array(np.array(True), "C")]
    if not branch:
        return _model([held, joined], inputs, [_info("y", None, elem)], inits, opset=13), feeds
    then = helper.make_graph([held, joined], "then", [], [_info("y", None, elem)])
    other = helper.make_graph([helper.make_node("Identity", ["Z" if apart else "X"], ["x2"])],
                              "else", [], [_info("x2", None, elem)])
    node = helper.make_node("If", ["B"], ["Y"], then_branch=then, else_branch=other, name="if")
    return (_model([node], [*inputs, _info("B", [], TensorProto.BOOL)], [_info("Y", None, elem)],
                   inits, opset=13),
            {**feeds, "B": np.array(True)})


@pytest.mark.parametrize("holder, branch", [("Scan", True), ("Loop", True), ("Scan", False)])
def test_a_rule_broken_past_a_squeeze_in_a_held_body_says_reference_runs_it(
        tmp_path: Path, capsys, holder: str, branch: bool) -> None:
    """The Concat, lowered when it runs (the holder's result of sizes not known before),
    breaks its rule by the ranks onnxruntime's Squeeze made: check ended with that rule
    alone, where ``run --backend onnxruntime`` named the Squeeze and --fallback reference
    passes (onnx.reference: a [2, 3, 1])."""
    from onnx.reference import ReferenceEvaluator

    model, feeds = _squeeze_in_a_held_body(holder, branch)
    _ort_fails(model, feeds, "Relu|Concat")
    assert ReferenceEvaluator(model).run(None, feeds)[0].shape == (2, 3, 1)
    path, inputs = tmp_path / "held.onnx", tmp_path / "in.npz"
    onnx.save(model, path)
    np.savez(inputs, **feeds)
    assert main(["check", str(path), "--inputs", str(inputs)]) == 2
    error = capsys.readouterr().err.rstrip()
    # the Scan's body inferred with the branch's constants (its rows' sizes known), the If
    # runs on onnxruntime's fallback whole, which fails inside it: the holder it names
    failed_whole = holder == "Scan" and branch
    assert ("onnxruntime fails on node(s) if (If)" if failed_whole
            else "node 'cat' (Concat): inputs have different ranks") in error
    assert "; divergence: a Squeeze of a " in error
    assert error.endswith(
        f"(node 'squeeze' (Squeeze) in a subgraph of node "
        f"{'if' if failed_whole else 'h'!r} ({'If' if failed_whole else holder}) is a known "
        "divergence onnx.reference runs as ONNX says: --fallback reference, "
        "fallback='reference' in Python)")
    assert main(["check", str(path), "--inputs", str(inputs), "--fallback", "reference"]) == 0


def test_a_rule_broken_apart_from_a_squeeze_in_a_held_body_gets_no_hint() -> None:
    """The Squeeze's result reaches only the Scan's sums, not the rows the Concat joins with
    Z: it fails on onnx.reference too, so no hint to run it there."""
    model, feeds = _squeeze_in_a_held_body("Scan", apart=True)
    _fails_on_both_without_hint(model, feeds, "Concat", "same number of dimensions",
                                "node 'cat' \\(Concat\\): inputs have different ranks")


def _squeeze_negated_reshaped() -> tuple[onnx.ModelProto, dict]:
    """A Reshape to [0, 3] of a Neg of the Squeeze's result ([3] on onnxruntime, which fails
    there; [1, 3, 1] as ONNX infers it): the Neg's result, a float of static inferred sizes,
    is what onnxruntime made only when the nodes before it run again (``_arrived``)."""
    model = _model([helper.make_node("Squeeze", ["X", "e"], ["S"], name="squeeze"),
                    helper.make_node("Neg", ["S"], ["T"], name="neg"),
                    helper.make_node("Reshape", ["T", "shape"], ["Y"], name="reshape")],
                   [_info("X", [1, 3, 1])], [_info("Y", None)],
                   [_ints("e", []), _ints("shape", [0, 3])], opset=14)
    return model, {"X": np.ones((1, 3, 1), np.float32)}


def _sessions_made_on(monkeypatch) -> list[list[str]]:
    """The providers of each session the numpy backend's fallback module makes (its segments
    and ``_arrived``'s run again), where this build's default is CUDA (then CPU): a user's
    ``--provider cpu`` is then another list than the default."""
    from backends.numpy import fallback
    from backends.onnxruntime import providers

    made: list[list[str]] = []
    real = fallback.make_session

    def spy(model, asked, *args, **kwargs):
        made.append(list(asked))
        return real(model, ["CPUExecutionProvider"], *args, **kwargs)

    monkeypatch.setattr(providers, "available_providers",
                        lambda: ["CUDAExecutionProvider", "CPUExecutionProvider"])
    monkeypatch.setattr(fallback, "make_session", spy)
    return made


def test_a_failure_s_reads_run_again_on_the_fallback_s_providers(tmp_path: Path, capsys,
                                                                  monkeypatch) -> None:
    """check --provider cpu: the onnxruntime fallback fails at the Reshape, and what the
    Reshape read is run again to tell the divergence's reach (``_arrived``): on the
    fallback's providers, those the failure was on, not the default ones (CUDA here), as it
    was. The hint stays."""
    model, feeds = _squeeze_negated_reshaped()
    _ort_fails(model, feeds, "Name:'reshape'")
    made = _sessions_made_on(monkeypatch)
    path, inputs = tmp_path / "sq.onnx", tmp_path / "in.npz"
    onnx.save(model, path)
    np.savez(inputs, **feeds)
    assert main(["check", str(path), "--inputs", str(inputs), "--provider", "cpu"]) == 2
    assert "(node 'squeeze' (Squeeze) is a known divergence" in capsys.readouterr().err
    assert len(made) >= 2  # (the segment's session, and the one run again)
    assert made == [["CPUExecutionProvider"]] * len(made)


def test_run_on_onnxruntime_runs_a_failure_s_reads_again_on_its_providers(
        tmp_path: Path, capsys, monkeypatch) -> None:
    """run --backend onnxruntime --provider cpu fails at the Reshape: what it read is run
    again (``_arrived``) on the backend's providers, not the default ones (CUDA here)."""
    model, feeds = _squeeze_negated_reshaped()
    made = _sessions_made_on(monkeypatch)
    path, inputs = tmp_path / "sq.onnx", tmp_path / "in.npz"
    onnx.save(model, path)
    np.savez(inputs, **feeds)
    assert main(["run", str(path), "--backend", "onnxruntime", "--provider", "cpu",
                 "--inputs", str(inputs)]) == 2
    assert "(node 'squeeze' (Squeeze) is a known divergence" in capsys.readouterr().err
    assert made == [["CPUExecutionProvider"]]


def _squeeze_through_a_branch_s_loop(apart: bool) -> tuple[onnx.ModelProto, dict]:
    """A top-level Squeeze of X [1, 3, 1] by an empty axes list carried through a Loop of one
    trip (its body's carried value declared without a shape) in an If's then branch
    (condition fed true), whose result a Concat there joins with X, beside a sum of the
    Squeeze's result; ``apart``: the Loop carries Z (fed [3], declared of no shape)."""
    body = helper.make_graph(
        [helper.make_node("Identity", ["c"], ["c2"]), helper.make_node("Identity", ["v"], ["v2"])],
        "body", [_info("i", [], TensorProto.INT64), _info("c", [], TensorProto.BOOL),
                 _info("v", None)], [_info("c2", [], TensorProto.BOOL), _info("v2", None)])
    then = helper.make_graph(
        [helper.make_node("Loop", ["T", "C", "Z" if apart else "S"], ["V"], body=body,
                          name="loop"),
         helper.make_node("Concat", ["V", "X"], ["y"], axis=0, name="cat"),
         helper.make_node("ReduceSum", ["S"], ["s"], keepdims=0)],
        "then", [], [_info("y", None), _info("s", None)])
    other = helper.make_graph([helper.make_node("Identity", ["X"], ["x2"]),
                               helper.make_node("ReduceSum", ["S"], ["s2"], keepdims=0)],
                              "else", [], [_info("x2", None), _info("s2", None)])
    model = _model([helper.make_node("Squeeze", ["X", "e"], ["S"], name="squeeze"),
                    helper.make_node("If", ["B"], ["Y", "U"], then_branch=then,
                                     else_branch=other, name="if")],
                   [_info("X", [1, 3, 1]), _info("Z", None), _info("B", [], TensorProto.BOOL)],
                   [_info("Y", None), _info("U", None)],
                   [_ints("e", []), _ints("T", 1), numpy_helper.from_array(np.array(True), "C")],
                   opset=13)
    return model, {"X": np.arange(3, dtype=np.float32).reshape(1, 3, 1),
                   "Z": np.arange(3, dtype=np.float32), "B": np.array(True)}


@pytest.mark.parametrize("apart", [False, True])
def test_a_run_time_rule_in_a_branch_broken_by_a_top_level_squeeze_says_reference_runs_it(
        apart: bool) -> None:
    """The Concat in the branch, lowered when it runs (the Loop's result of sizes not known
    before), breaks its rule by the [3] onnxruntime's Squeeze made: its error went out of the
    branch as it was, so the If's plan, which knows the Squeeze, did not name it (as it does
    where the branch's lowering breaks the rule: ``SubgraphRuleError``). ``apart``: the Loop
    carries Z, the Concat fails on onnx.reference too, no hint."""
    from onnx.reference import ReferenceEvaluator

    from dmlgraph.errors import DmlgraphError

    model, feeds = _squeeze_through_a_branch_s_loop(apart)
    if apart:
        _fails_on_both_without_hint(model, feeds, "Name:'cat'", "same number of dimensions",
                                    "node 'cat' \\(Concat\\): inputs have different ranks")
        return
    _ort_fails(model, feeds, "Name:'cat'")
    assert ReferenceEvaluator(model).run(None, feeds)[0].shape == (2, 3, 1)
    with pytest.raises(DmlgraphError, match="node 'cat' \\(Concat\\): inputs have different "
                       "ranks") as raised:
        check(model, inputs=feeds)
    assert str(raised.value).endswith(
        _SQUEEZE_NOTE + "(node 'squeeze' (Squeeze) is a known divergence onnx.reference runs "
        "as ONNX says: --fallback reference, fallback='reference' in Python)")
    assert check(model, inputs=feeds, fallback="reference").exit_code == 0


def _squeeze_cast_joined(flat: bool) -> tuple[onnx.ModelProto, dict]:
    """A Squeeze of X [1, 3, 1] by an empty axes list, Cast to int64 (``flat``: Reshaped to
    [-1] first, a [3] on either engine), joined by a Concat with Y (int64, declared of no
    shape: the Concat is lowered when it runs) fed a [2, 2] (``flat``) or a [2, 3, 1]."""
    nodes = [helper.make_node("Squeeze", ["X", "e"], ["S"], name="squeeze")]
    if flat:
        nodes.append(helper.make_node("Reshape", ["S", "flat"], ["R"], name="reshape"))
    nodes += [helper.make_node("Cast", ["R" if flat else "S"], ["I"], to=TensorProto.INT64),
              helper.make_node("Concat", ["I", "Y"], ["Z"], axis=0, name="cat")]
    model = _model(nodes, [_info("X", [1, 3, 1]), _info("Y", None, TensorProto.INT64)],
                   [_info("Z", None, TensorProto.INT64)], [_ints("e", []), _ints("flat", [-1])],
                   opset=13)
    return model, {"X": np.ones((1, 3, 1), np.float32),
                   "Y": np.arange(4).reshape(2, 2) if flat else np.arange(6).reshape(2, 3, 1)}


def test_a_run_time_rule_broken_by_an_int_read_as_onnx_infers_it_gets_no_hint() -> None:
    """The run-time Concat's rule (ranks 1 and 2) breaks on both engines: its int64 read
    arrived a [3], as ONNX infers it, and a Concat reads no values, only sizes. An int read
    was always counted reached, so the error said --fallback reference runs the Squeeze,
    where the Concat fails too."""
    model, feeds = _squeeze_cast_joined(flat=True)
    _fails_on_both_without_hint(model, feeds, "Name:'cat'", "same number of dimensions",
                                "node 'cat' \\(Concat\\): inputs have different ranks")


def test_a_run_time_rule_broken_by_an_int_read_a_squeeze_sized_keeps_its_hint() -> None:
    """The int64 read arrived a [3] where ONNX infers [1, 3, 1]: the Squeeze broke the rule,
    and is named; onnx.reference joins the [1, 3, 1] with the [2, 3, 1]."""
    from onnx.reference import ReferenceEvaluator

    from dmlgraph.errors import DmlgraphError

    model, feeds = _squeeze_cast_joined(flat=False)
    _ort_fails(model, feeds, "Name:'cat'")
    assert ReferenceEvaluator(model).run(None, feeds)[0].shape == (3, 3, 1)
    with pytest.raises(DmlgraphError, match="node 'cat' \\(Concat\\): inputs have different "
                       "ranks") as raised:
        check(model, inputs=feeds)
    assert "(node 'squeeze' (Squeeze) is a known divergence" in str(raised.value)
    assert check(model, inputs=feeds, fallback="reference").exit_code == 0


def _squeeze_rank_picks_a_branch_holding_an_if(z_reads: str = "X"
                                                ) -> tuple[onnx.ModelProto, dict]:
    """Y = If(Size(Shape(Squeeze(X [1, 3, 1], []))) == 1): its then branch holds an inner
    If(B) of Identity(S) in either branch (unused), and a Scan stacking Relu(X) once, [1, 1,
    3, 1]; its else branch is X. Z = Neg(X), which the Squeeze does not reach. onnxruntime's
    optimized run folds the Shape by ONNX's [1, 3, 1] (else: X); its kernel squeezes to [3]
    (then), and its run without graph optimizations fails at the inner If's declared [1, 3,
    1]."""
    def branch(name: str, out: str) -> onnx.GraphProto:
        return helper.make_graph([helper.make_node("Identity", ["S"], [out])], name, [],
                                 [_info(out, None)])

    body = helper.make_graph([helper.make_node("Identity", ["si"], ["sid"]),
                              helper.make_node("Relu", ["si"], ["sso"])],
                             "scan", [_info("si", None), _info("se", None)],
                             [_info("sid", None), _info("sso", None)])
    then = helper.make_graph(
        [helper.make_node("If", ["B"], ["inner"], then_branch=branch("t", "b4"),
                          else_branch=branch("e", "b6"), name="inner"),
         helper.make_node("Scan", ["X", "X"], ["so1", "so2"], body=body, num_scan_inputs=1)],
        "then", [], [_info("so2", None)])
    other = helper.make_graph([helper.make_node("Identity", ["X"], ["t2"])], "else", [],
                              [_info("t2", None)])
    model = _model([helper.make_node("Squeeze", ["X", "e"], ["S"], name="squeeze"),
                    helper.make_node("Shape", ["S"], ["sh"]),
                    helper.make_node("Size", ["sh"], ["n"]),
                    helper.make_node("Equal", ["n", "one"], ["cond"]),
                    helper.make_node("If", ["cond"], ["Y"], then_branch=then,
                                     else_branch=other, name="if"),
                    helper.make_node("Neg", [z_reads], ["Z"], name="neg")],
                   [_info("X", [1, 3, 1]), _info("B", [], TensorProto.BOOL)],
                   [_info("Y", None), _info("Z", None)], [_ints("e", []), _ints("one", 1)],
                   opset=13)
    return model, {"X": np.array([1, -2, 3], np.float32).reshape(1, 3, 1),
                   "B": np.array(False)}


def test_a_squeeze_s_output_onnxruntime_fails_on_unoptimized_is_the_divergence_named(
        monkeypatch) -> None:
    """On the onnxruntime fallback (which squeezes as onnxruntime's kernel does) Y is the then
    branch's [1, 1, 3, 1]; onnxruntime's optimized run gives [1, 3, 1], and its plain run,
    which explained that for the same model without the inner If (an optimizer divergence),
    fails. ``check`` failed Y (exit 1) naming no divergence; Y is now the Squeeze's known
    divergence, not compared, and Z, which the Squeeze does not reach, is still compared:
    a wrong Z fails."""
    from onnx.reference import ReferenceEvaluator

    model, feeds = _squeeze_rank_picks_a_branch_holding_an_if()
    x = feeds["X"]
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    assert session.run(["Y"], feeds)[0].shape == (1, 3, 1)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 4
    plain = ort.InferenceSession(model.SerializeToString(), options,
                                 providers=["CPUExecutionProvider"])
    with pytest.raises(Exception, match=r"has shape \{1,3,1\} but the computed output shape "
                       r"for this run is \{3\}"):
        plain.run(None, feeds)
    assert ReferenceEvaluator(model).run(["Y"], feeds)[0].shape == (1, 3, 1)

    report = check(model, inputs=feeds)
    y, z = report.comparisons[0].outputs
    assert y.actual_shape == np.stack([np.maximum(x, 0)]).shape == (1, 1, 3, 1)
    assert y.verdict is Verdict.KNOWN_DIVERGENCE and not y.compared
    assert "onnxruntime squeezes every axis of size 1 ([3])" in y.divergences[0]
    assert y.divergences[0].startswith("node 'squeeze': divergence: a Squeeze")
    assert "without graph optimizations (ORT_DISABLE_ALL) fails past it" in y.message
    assert z.verdict is Verdict.PASS and z.compared
    (divergence,) = report.divergences
    assert divergence.node == "squeeze" and divergence.outputs == {0}
    assert any("past node 'squeeze' (Squeeze), a known divergence: 'Y' not compared" in n
               for n in report.notes)
    assert report.exit_code == 0
    assert check(model, inputs=feeds, fallback="reference").exit_code == 0

    report = _check_with_z_negated(monkeypatch, model, feeds)
    y, z = report.comparisons[0].outputs
    assert y.verdict is Verdict.KNOWN_DIVERGENCE and z.verdict is Verdict.FAIL
    assert report.exit_code == 1


def _check_with_z_negated(monkeypatch, model: onnx.ModelProto,
                          feeds: dict[str, np.ndarray]) -> ParityReport:
    """``check`` of ``model`` with the numpy backend's output Z planted wrong (negated)."""
    import backends.numpy.backend as numpy_backend

    execute = numpy_backend.NumpyBackend.execute

    def wrong_z(self, graph, feeds, outputs=None):
        result = execute(self, graph, feeds, outputs)
        return dataclasses.replace(result, outputs={**result.outputs, "Z": -result.outputs["Z"]})

    monkeypatch.setattr(numpy_backend.NumpyBackend, "execute", wrong_z)
    return check(model, inputs=feeds)


def test_a_squeeze_s_value_read_past_the_unoptimized_failure_is_still_compared(
        monkeypatch) -> None:
    """Z = Neg(S), the Squeeze's own result: onnxruntime's optimized run computes it by its
    kernel ([3]), as the onnxruntime fallback does (they agree), so only what reads sizes
    past the Squeeze (Shape, Size, a node holding subgraphs) is excused when the plain run
    fails. A wrong Z was not compared (exit 0); it fails now, Y stays the divergence."""
    model, feeds = _squeeze_rank_picks_a_branch_holding_an_if(z_reads="S")
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    expected_z = session.run(["Z"], feeds)[0]
    np.testing.assert_array_equal(expected_z, -feeds["X"].reshape(3))
    report = check(model, inputs=feeds)
    y, z = report.comparisons[0].outputs
    assert y.verdict is Verdict.KNOWN_DIVERGENCE and z.verdict is Verdict.PASS and z.compared
    assert report.divergences[0].outputs == {0} and report.exit_code == 0

    report = _check_with_z_negated(monkeypatch, model, feeds)
    y, z = report.comparisons[0].outputs
    assert y.verdict is Verdict.KNOWN_DIVERGENCE and z.verdict is Verdict.FAIL and z.compared
    assert report.exit_code == 1
