"""What a known divergence reaches (``dmlgraph.reach``): which outputs ``check`` leaves
uncompared, and which it compares with onnxruntime (the oracle), where the divergence sits
in a subgraph. The models hold a Scan-8 passing its state through (onnxruntime leaves that
output uninitialized memory: the known divergence), in a Loop's body beside other nodes; each
output onnxruntime computes must be compared, and match."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

FLOAT = TensorProto.FLOAT


def _vi(name: str, shape, elem: int = FLOAT) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem, shape)


def _branch(name: str, nodes: list[onnx.NodeProto], outputs: list[str]) -> onnx.GraphProto:
    return helper.make_graph(nodes, name, [], [_vi(n, None) for n in outputs])


def _constant(name: str, value: np.ndarray) -> onnx.NodeProto:
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(value, name))


def _scan_8() -> onnx.NodeProto:
    """A Scan-8 of sequence_lens L, state init [1, 2] (passed through: onnxruntime's final is
    uninitialized memory) and x [1, 4, 6], its rows Relu(x) (onnxruntime computes them)."""
    body = helper.make_graph([helper.make_node("Relu", ["row"], ["relu"])], "scan_body",
                             [_vi("acc", [2]), _vi("row", [6])],
                             [_vi("acc", [2]), _vi("relu", [6])])
    return helper.make_node("Scan", ["L", "init", "x"], ["final", "rows"], body=body,
                            num_scan_inputs=1)


def _loop(nodes: list[onnx.NodeProto], made: list[str], outputs: list[str], holder: str,
          inputs: tuple[onnx.ValueInfoProto, ...] = ()) -> onnx.ModelProto:
    """A Loop carrying init through an Identity (V), its body ``nodes`` making ``made``,
    stacked as its outputs ``outputs``: of 2 trips (``holder`` 'trips', which the NumPy
    backend runs itself, each node of the body noted apart) or of neither trip count nor
    condition, its body stopping after one trip ('whole': run whole on the fallback)."""
    stop = (_constant("c2", np.array(False)) if holder == "whole"
            else helper.make_node("Identity", ["c"], ["c2"]))
    body = helper.make_graph(
        [*nodes, stop, helper.make_node("Identity", ["v"], ["v2"])], "loop",
        [_vi("i", [], TensorProto.INT64), _vi("c", [], TensorProto.BOOL), _vi("v", [1, 2])],
        [_vi("c2", [], TensorProto.BOOL), _vi("v2", None), *(_vi(n, None) for n in made)])
    trips = "" if holder == "whole" else "T"
    node = helper.make_node("Loop", [trips, "", "init"], ["V", *outputs], name="holder",
                            body=body)
    inits = [] if holder == "whole" else [numpy_helper.from_array(np.array(2, np.int64), "T")]
    graph = helper.make_graph(
        [node], "m", [_vi("L", [1], TensorProto.INT64), _vi("init", [1, 2]),
                      _vi("x", [1, 4, 6]), _vi("B", [], TensorProto.BOOL), *inputs],
        [_vi(n, None) for n in node.output], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 8)], ir_version=10)


def _subgraphs_held(holder: str) -> onnx.ModelProto:
    """Beside the Scan-8: an If making (Relu(final), Abs(x)) (A, Bo); a Loop of 2 trips
    carrying final and stacking x's rows through an If (K, Q); a Scan-8 of final's elements
    (a reached scan input) whose state, fed v, passes through an Identity, and its rows
    Relu(final) (S, O)."""
    first = helper.make_node("If", ["B"], ["a", "b"], then_branch=_branch(
        "then", [helper.make_node("Relu", ["final"], ["ta"]),
                 helper.make_node("Abs", ["x"], ["tb"])], ["ta", "tb"]),
        else_branch=_branch("else", [helper.make_node("Neg", ["final"], ["ea"]),
                                     helper.make_node("Neg", ["x"], ["eb"])], ["ea", "eb"]))
    inner_if = helper.make_node("If", ["B"], ["q"], then_branch=_branch(
        "then", [helper.make_node("Relu", ["p"], ["tq"])], ["tq"]),
        else_branch=_branch("else", [helper.make_node("Neg", ["p"], ["eq"])], ["eq"]))
    inner_body = helper.make_graph(
        [helper.make_node("Identity", ["ic"], ["ic2"]), inner_if,
         helper.make_node("Add", ["k", "k"], ["k2"])], "inner_body",
        [_vi("ii", [], TensorProto.INT64), _vi("ic", [], TensorProto.BOOL), _vi("k", None),
         _vi("p", None)], [_vi("ic2", [], TensorProto.BOOL), _vi("k2", None), _vi("q", None)])
    inner = helper.make_node("Loop", ["two", "", "final", "x"], ["kf", "qf"], body=inner_body)
    scan_body = helper.make_graph(
        [helper.make_node("Identity", ["acc"], ["acc2"]), helper.make_node("Relu", ["e"], ["o"])],
        "scan_body", [_vi("acc", [2]), _vi("e", [])], [_vi("acc2", [2]), _vi("o", [])])
    scan = helper.make_node("Scan", ["L2", "v", "final"], ["sf", "so"], body=scan_body,
                            num_scan_inputs=1)
    return _loop([_scan_8(), first, _constant("two", np.array(2, np.int64)), inner, scan],
                 ["a", "b", "kf", "qf", "rows", "sf", "so"], ["A", "Bo", "K", "Q", "R", "S", "O"],
                 holder, (_vi("L2", [1], TensorProto.INT64),))


def _deeper(holder: str) -> onnx.ModelProto:
    """The Scan-8 in an If's then branch in the body (F, R)."""
    then = _branch("then", [_scan_8()], ["final", "rows"])
    other = _branch("else", [helper.make_node("Identity", ["init"], ["e1"]),
                             helper.make_node("Identity", ["x"], ["e2"])], ["e1", "e2"])
    node = helper.make_node("If", ["B"], ["f", "r"], then_branch=then, else_branch=other)
    return _loop([node], ["f", "r"], ["F", "R"], holder)


def _names_reused(holder: str) -> onnx.ModelProto:
    """Beside the Scan-8, two Ifs whose branches each make a ``t``: the first's of final
    (A), the second's of x (Bo)."""
    ifs = [helper.make_node("If", ["B"], [out], then_branch=_branch(
        "then", [helper.make_node("Relu", [read], ["t"])], ["t"]),
        else_branch=_branch("else", [helper.make_node("Neg", [read], ["t"])], ["t"]))
        for out, read in (("a", "final"), ("b", "x"))]
    return _loop([_scan_8(), *ifs], ["a", "b", "rows"], ["A", "Bo", "R"], holder)


def _no_trip(holder: str) -> onnx.ModelProto:
    """Beside the Scan-8, a Loop of no trip carrying final, its body making its carried
    value of x alone: its output (K) is final as fed."""
    inner_body = helper.make_graph(
        [helper.make_node("Identity", ["ic"], ["ic2"]),
         helper.make_node("ReduceMax", ["x"], ["k2"], axes=[2], keepdims=0)], "inner_body",
        [_vi("ii", [], TensorProto.INT64), _vi("ic", [], TensorProto.BOOL), _vi("k", None)],
        [_vi("ic2", [], TensorProto.BOOL), _vi("k2", None)])
    inner = helper.make_node("Loop", ["zero", "", "final"], ["kf"], body=inner_body)
    return _loop([_scan_8(), _constant("zero", np.array(0, np.int64)), inner], ["kf", "rows"],
                 ["K", "R"], holder)


_FEEDS = {"L": np.array([4], np.int64), "L2": np.array([2], np.int64),
          "init": np.array([[1, 2]], np.float32),
          "x": np.arange(-12, 12, dtype=np.float32).reshape(1, 4, 6), "B": np.array(True)}


@pytest.mark.parametrize("build, holder, wrong", [
    # an If, a Loop whose body holds an If, and a Scan of a reached scan input, in the body:
    # every output of each was reached (of the body too, run whole: 'whole')
    (_subgraphs_held, "trips", {"A", "K", "O"}),
    (_subgraphs_held, "whole", {"A", "K", "O"}),
    # the Scan-8 in an If's branch in the body, the Loop run whole: all three were
    (_deeper, "whole", {"F"}),
    (_deeper, "trips", {"F"}),
    # a t made of final in one If's branches reached the other If's t, made of x
    (_names_reused, "trips", {"A"}),
    (_names_reused, "whole", {"A"}),
])
def test_check_compares_what_a_held_divergence_does_not_reach(build, holder, wrong,
                                                              onnx_run) -> None:
    """``check`` (onnxruntime's fallback) leaves uncompared exactly the outputs the Scan-8's
    uninitialized final state reaches; the others are compared with onnxruntime, and match.
    Before, ``reach`` counted every output of an If reading a reached tensor, of a Loop or
    Scan whose body holds subgraphs, of a Scan of a reached scan input; every output of a
    holder whose Scan-8 sat deeper than its own subgraph; and a name reached in one subgraph
    reached in its siblings too (all 'not compared' beyond ``wrong``)."""
    from dmlgraph import check
    from dmlgraph.parity import UNINITIALIZED_MESSAGE

    model = build(holder)
    feeds = {name: _FEEDS[name] for name in (v.name for v in model.graph.input)}
    onnx_run(model, feeds)  # onnxruntime runs it
    report = check(model, inputs=feeds)
    got = {o.name: o for c in report.comparisons for o in c.outputs}
    assert {name for name, o in got.items() if o.message == UNINITIALIZED_MESSAGE} == wrong
    assert all(o.compared and o.mismatches == 0 for name, o in got.items()
               if name not in wrong), {n: (o.compared, o.mismatches) for n, o in got.items()}
    assert report.exit_code == 0


@pytest.mark.parametrize("build, wrong", [
    (_subgraphs_held, ("A", "K", "O")), (_deeper, ("F",)), (_names_reused, ("A",)),
    (_no_trip, ("K",)),
])
@pytest.mark.parametrize("fallback", ["onnxruntime", "reference"])
def test_a_held_scan_8_s_record_names_the_outputs_it_reaches(build, wrong, fallback) -> None:
    """The Loop run whole on either fallback: its record's ``wrong`` (the outputs ``check``
    counts the divergence's) is what the Scan-8's final state reaches. onnx.reference's
    record named none (all of them: a mismatch elsewhere taken for the divergence's), and
    onnxruntime's all where the Scan-8 was deeper or what held it left ``reach`` unsure."""
    import dmlgraph
    from backends import get_backend
    from lowering import lower

    model = build("whole")
    feeds = {name: _FEEDS[name] for name in (v.name for v in model.graph.input)}
    run = get_backend("numpy", fallback=fallback).execute(
        lower(dmlgraph.load(model), "6_4"), feeds)
    noted = [r for r in run.record.nodes if r.notes]
    assert [(r.node, r.wrong) for r in noted] == [("holder", wrong)]


def test_a_loop_of_no_trip_passes_its_reached_carried_value_on(onnx_run) -> None:
    """An inner Loop of no trip carrying the Scan-8's final state, its body making the
    carried value of x alone: its output is the state as fed, uninitialized on onnxruntime.
    ``reach`` counted it unreached (its body output reads no reached tensor), so the holder
    ran by the NumPy backend on onnx.reference named nothing for it and ``check`` failed on
    the mismatch (on onnxruntime's fallback, every output was left uncompared)."""
    from dmlgraph import check
    from dmlgraph.parity import UNINITIALIZED_MESSAGE, Verdict

    model = _no_trip("trips")
    feeds = {name: _FEEDS[name] for name in (v.name for v in model.graph.input)}
    onnx_run(model, feeds)
    for fallback in ("onnxruntime", "reference"):
        report = check(model, inputs=feeds, fallback=fallback)
        got = {o.name: o for c in report.comparisons for o in c.outputs}
        assert report.exit_code == 0, fallback
        assert got["K"].verdict is not Verdict.FAIL
        assert got["K"].message == UNINITIALIZED_MESSAGE or fallback == "reference"
        assert all(got[n].compared and got[n].mismatches == 0 for n in ("V", "R"))


def _top_level() -> onnx.ModelProto:
    """The Scan-8 at top level (rows), an If making (Relu(final), Abs(x)) (A, Bo) and a
    Loop of 2 trips carrying final and x, doubling the one and taking Relu of the other
    (K, P), past it."""
    first = helper.make_node("If", ["B"], ["A", "Bo"], name="if", then_branch=_branch(
        "then", [helper.make_node("Relu", ["final"], ["ta"]),
                 helper.make_node("Abs", ["x"], ["tb"])], ["ta", "tb"]),
        else_branch=_branch("else", [helper.make_node("Neg", ["final"], ["ea"]),
                                     helper.make_node("Neg", ["x"], ["eb"])], ["ea", "eb"]))
    body = helper.make_graph(
        [helper.make_node("Identity", ["c"], ["c2"]), helper.make_node("Add", ["k", "k"], ["k2"]),
         helper.make_node("Relu", ["p"], ["p2"])], "body",
        [_vi("i", [], TensorProto.INT64), _vi("c", [], TensorProto.BOOL), _vi("k", None),
         _vi("p", None)], [_vi("c2", [], TensorProto.BOOL), _vi("k2", None), _vi("p2", None)])
    loop = helper.make_node("Loop", ["T", "", "final", "x"], ["K", "P"], name="loop", body=body)
    graph = helper.make_graph(
        [_scan_8(), first, loop], "m",
        [_vi("L", [1], TensorProto.INT64), _vi("init", [1, 2]), _vi("x", [1, 4, 6]),
         _vi("B", [], TensorProto.BOOL)], [_vi(n, None) for n in ("rows", "A", "Bo", "K", "P")],
        [numpy_helper.from_array(np.array(2, np.int64), "T")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 8)], ir_version=10)


def test_an_if_or_loop_past_a_divergence_reaches_only_what_its_subgraph_carries(
        onnx_run) -> None:
    """The top-level Scan-8's final state read by an If's branches and a Loop's body beside
    x: ``check`` leaves uncompared only the outputs made of it (A, K); Abs(x) and the Loop's
    Relu of x are compared with onnxruntime, and match. ``parity._reached`` took every
    output of a node past the divergence: all four were "not compared"."""
    from dmlgraph import check
    from dmlgraph.parity import UNINITIALIZED_MESSAGE

    model = _top_level()
    feeds = {name: _FEEDS[name] for name in ("L", "init", "x", "B")}
    onnx_run(model, feeds)
    report = check(model, inputs=feeds)
    got = {o.name: o for c in report.comparisons for o in c.outputs}
    assert {name for name, o in got.items() if o.message == UNINITIALIZED_MESSAGE} == {"A", "K"}
    assert all(got[n].compared and got[n].mismatches == 0 for n in ("rows", "Bo", "P"))
    assert report.exit_code == 0


# ------------------------------------------------------------- reach itself, by scope
def _body(nodes: list[onnx.NodeProto], carried: list[str], made: list[str],
          condition: str = "c2") -> onnx.GraphProto:
    """A Loop body of carried values ``carried`` (v, w, ...), outputs ``made`` after its
    condition ``condition`` (c2: the Identity of its condition input)."""
    return helper.make_graph(
        [helper.make_node("Identity", ["c"], ["c2"]), *nodes], "body",
        [_vi("i", [], TensorProto.INT64), _vi("c", [], TensorProto.BOOL),
         *(_vi(n, [2]) for n in carried)],
        [_vi(condition, [], TensorProto.BOOL), *(_vi(n, None) for n in made)])


def _reached_names(graph: onnx.GraphProto, seeds: set[str]) -> set[str]:
    """The names of ``graph``'s own values that its enclosing graph's ``seeds`` reach."""
    from dmlgraph.reach import ENCLOSING, reach

    return {name for scope, name in reach(graph, {(ENCLOSING, s) for s in seeds})
            if scope == ()}


@pytest.mark.parametrize("seed", ["M", "C"])
def test_a_reached_trip_count_or_condition_leaves_a_carried_value_passed_through(seed) -> None:
    """A Loop whose trip count (M) or condition (C) is reached runs another number of trips:
    its carried value made in the body (v: Relu) and its scan output (s) are reached; one
    passed through, by name (w) or an Identity (u), is what it was fed, and is reached only
    where that is (W0 is, U0 not). Before, all were."""
    body = _body([helper.make_node("Relu", ["v"], ["v2"]),
                  helper.make_node("Identity", ["u"], ["u2"]),
                  helper.make_node("Neg", ["X"], ["s"])], ["v", "w", "u"], ["v2", "w", "u2", "s"])
    loop = helper.make_node("Loop", ["M", "C", "V0", "W0", "U0"], ["V", "W", "U", "S"],
                            body=body)
    graph = helper.make_graph([loop], "g", [], [])
    reached = _reached_names(graph, {seed, "W0"})
    assert {"V", "W", "S"} <= reached and "U" not in reached


def test_a_reached_condition_made_in_the_body_reaches_every_trip() -> None:
    """The body's condition read from a reached tensor (X): every output but those passed
    through (w, fed W0 not reached)."""
    body = _body([helper.make_node("Greater", ["X", "Y"], ["c3"]),
                  helper.make_node("Relu", ["v"], ["v2"])], ["v", "w"], ["v2", "w"],
                 condition="c3")
    loop = helper.make_node("Loop", ["M", "", "V0", "W0"], ["V", "W"], body=body)
    reached = _reached_names(helper.make_graph([loop], "g", [], []), {"X"})
    assert "V" in reached and "W" not in reached


def test_a_scan_of_a_reached_scan_input_leaves_a_state_passed_through() -> None:
    """A Scan-9 of a reached scan input runs another number of steps: its scan output and a
    state it makes (a) are reached, a state passed on by an Identity (b) is not. One its
    body outputs by its own name (c) is, as onnxruntime gets that output wrong (its buffers,
    ``control.scan_body_divergence``), which only a watch of that Scan would say."""
    body = helper.make_graph(
        [helper.make_node("Add", ["a", "row"], ["a2"]), helper.make_node("Identity", ["b"], ["b2"]),
         helper.make_node("Neg", ["row"], ["o"])],
        "body", [_vi("a", [2]), _vi("b", [2]), _vi("c", [2]), _vi("row", [2])],
        [_vi("a2", [2]), _vi("b2", [2]), _vi("c", [2]), _vi("o", [2])])
    scan = helper.make_node("Scan", ["A0", "B0", "C0", "X"], ["A", "B", "C", "O"], body=body,
                            num_scan_inputs=1)
    reached = _reached_names(helper.make_graph([scan], "g", [], []), {"X"})
    assert {"A", "C", "O"} <= reached and "B" not in reached


def test_a_loop_of_no_trip_gives_its_carried_value_as_fed() -> None:
    """A carried value fed a reached tensor is reached, though the body makes it of nothing
    reached: a Loop of no trip gives it as fed. Before, it was not."""
    body = _body([helper.make_node("Neg", ["X"], ["v2"])], ["v"], ["v2"])
    loop = helper.make_node("Loop", ["M", "", "V0"], ["V"], body=body)
    assert "V" in _reached_names(helper.make_graph([loop], "g", [], []), {"V0"})


def test_an_if_s_outputs_are_reached_each_by_its_branches_own() -> None:
    """An If reading a reached tensor (X) in its branches: only the output a branch makes
    from it is reached; all are where its condition is."""
    branches = {f"{side}_branch": _branch(side, [helper.make_node("Neg", ["X"], [f"{side}x"]),
                                                 helper.make_node("Neg", ["Y"], [f"{side}y"])],
                                          [f"{side}x", f"{side}y"])
                for side in ("then", "else")}
    graph = helper.make_graph([helper.make_node("If", ["B"], ["P", "Q"], **branches)], "g",
                              [], [])
    assert {"P", "Q"} & _reached_names(graph, {"X"}) == {"P"}
    assert {"P", "Q"} <= _reached_names(graph, {"B"})


def test_a_name_reached_in_one_branch_is_not_its_sibling_s() -> None:
    """Both branches of an If, and a Loop's body beside it, make a t; the then branch's is
    reached (its Squeeze's result, as ``fallback._held_apart`` seeds it): the else branch's
    t, the Loop's t and their outputs are not. ``reach`` took names for values: all were."""
    from dmlgraph.reach import reach

    branch = {side: _branch(side, [helper.make_node("Neg", [read], ["t"])], ["t"])
              for side, read in (("then", "X"), ("else", "Y"))}
    body = _body([helper.make_node("Neg", ["Y"], ["t"]), helper.make_node("Add", ["t", "v"],
                                                                          ["v2"])],
                 ["v"], ["v2"])
    graph = helper.make_graph(
        [helper.make_node("If", ["B"], ["P"], then_branch=branch["then"],
                          else_branch=branch["else"]),
         helper.make_node("Loop", ["M", "", "V0"], ["V"], body=body)], "g", [], [])
    then_t = (((0, "then_branch", 0),), "t")
    reached = reach(graph, {then_t})
    assert ((), "P") in reached
    assert {(((0, "else_branch", 0),), "t"), (((1, "body", 0),), "t"), ((), "V")}.isdisjoint(
        reached)


def test_a_held_failure_in_a_sibling_branch_is_apart_from_the_squeeze() -> None:
    """In an If's branch, one inner If's then branch squeezes X into t, another's reshapes
    its own t (an Identity of Z) to [5], which fails on either engine: the failure is apart
    from the Squeeze (no hint to run --fallback reference). The Squeeze's t, by name, reached
    the other t and the Reshape reading it: not apart."""
    from backends.numpy.fallback import _held_apart

    def branch(name: str, nodes: list[onnx.NodeProto], out: str) -> onnx.GraphProto:
        return helper.make_graph(nodes, name, [], [_vi(out, None)])

    squeezed = helper.make_node("If", ["B"], ["P"], then_branch=branch(
        "then", [helper.make_node("Squeeze", ["X", "e"], ["t"], name="squeeze")], "t"),
        else_branch=branch("else", [helper.make_node("Identity", ["X"], ["t"])], "t"))
    reshaped = helper.make_node("If", ["B"], ["W"], then_branch=branch(
        "then", [helper.make_node("Identity", ["Z"], ["t"]),
                 helper.make_node("Reshape", ["t", "five"], ["w"], name="reshape")], "w"),
        else_branch=branch("else", [helper.make_node("Identity", ["Z"], ["t"])], "t"))
    proto = helper.make_graph([squeezed, reshaped], "then", [], [_vi("P", None), _vi("W", None)])
    failure = ("Non-zero status code returned while running If node. Name:'if' Status Message: "
               "Non-zero status code returned while running Reshape node. Name:'reshape' "
               "Status Message: The input tensor cannot be reshaped to the requested shape.")
    squeeze_t = (((0, "then_branch", 0),), "t")
    assert _held_apart(proto, [squeeze_t], failure)
    # the Squeeze's own branch reshaping its t: reached, not apart
    next(a.g for a in proto.node[0].attribute if a.name == "then_branch").node.append(
        helper.make_node("Reshape", ["t", "five"], ["w2"], name="reshape"))
    assert not _held_apart(proto, [squeeze_t], failure)


# ------------------------------------------------------------- planted values: none excused
def _check_planted(monkeypatch, model: onnx.ModelProto, feeds: dict[str, np.ndarray],
                   planted: dict[str, np.ndarray], fallback: str = "onnxruntime"):
    """``check`` of ``model`` with the numpy backend's outputs ``planted`` (wrong values)."""
    import dataclasses

    import backends.numpy.backend as numpy_backend
    from dmlgraph import check

    monkeypatch.undo()  # (an earlier plant's patch: the backend's own execute)
    execute = numpy_backend.NumpyBackend.execute

    def wrong(self, graph, feeds, outputs=None):
        result = execute(self, graph, feeds, outputs)
        return dataclasses.replace(result, outputs={**result.outputs, **{
            name: value for name, value in planted.items() if name in result.outputs}})

    monkeypatch.setattr(numpy_backend.NumpyBackend, "execute", wrong)
    return check(model, inputs=feeds, fallback=fallback)


def _int64(name: str, value) -> onnx.TensorProto:
    return numpy_helper.from_array(np.array(value, np.int64), name)


def _loop_of_a_reversing_slice() -> onnx.ModelProto:
    """Opset 18: a Loop of 2 trips (its body lowered as it runs) carrying Relu(v) (V) and
    stacking Relu(x) (R) and Neg(x[:, -1:INT64_MAX:-1]) (T): ONNX clamps that end, so the
    slice is empty ([2, 0]), onnxruntime's CPU kernel reads it through index 0 ([2, 6]): the
    known divergence lowering notes on the body's Slice, which reaches T alone."""
    body = helper.make_graph(
        [helper.make_node("Identity", ["c"], ["c2"]), helper.make_node("Relu", ["v"], ["v2"]),
         helper.make_node("Slice", ["x", "st", "en", "ax", "neg"], ["t"]),
         helper.make_node("Neg", ["t"], ["nt"]), helper.make_node("Relu", ["x"], ["r"])],
        "body", [_vi("i", [], TensorProto.INT64), _vi("c", [], TensorProto.BOOL), _vi("v", [2])],
        [_vi("c2", [], TensorProto.BOOL), _vi("v2", None), _vi("r", None), _vi("nt", None)],
        [_int64("st", [-1]), _int64("en", [2**63 - 1]), _int64("ax", [1]),
         _int64("neg", [-1])])
    loop = helper.make_node("Loop", ["T", "", "init"], ["V", "R", "TT"], name="loop", body=body)
    graph = helper.make_graph([loop], "m", [_vi("init", [2]), _vi("x", [2, 6])],
                              [_vi(n, None) for n in loop.output], [_int64("T", 2)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=10)


_SLICED = {"init": np.array([1, -2], np.float32),
           "x": np.arange(-6, 6, dtype=np.float32).reshape(2, 6)}


@pytest.mark.parametrize("fallback", ["onnxruntime", "reference"])
def test_a_lowered_body_s_divergence_leaves_only_what_it_reaches_uncompared(
        fallback, onnx_run, monkeypatch) -> None:
    """The body's Slice note, said of every node the body's lowering ran, counted every
    output of the Loop (its records' ``wrong`` all): a wrong V or R passed as the known
    divergence. Now the records name TT alone: V and R are compared (a wrong V fails), and
    TT, which onnxruntime computes otherwise, is compared with onnx.reference, which computes
    what ONNX says there: a wrong TT passed as the divergence (exit 0), and now fails."""
    import dmlgraph
    from backends import get_backend
    from dmlgraph.parity import Verdict
    from lowering import lower

    model = _loop_of_a_reversing_slice()
    x = _SLICED["x"]
    v, r, t = onnx_run(model, _SLICED)
    assert np.array_equal(v, np.maximum(_SLICED["init"], 0))
    assert np.array_equal(r, np.stack([np.maximum(x, 0)] * 2))
    assert t.shape == (2, 2, 6) and x[:, -1:2**63 - 1:-1].shape == (2, 0)  # ONNX: empty
    run = get_backend("numpy", fallback=fallback).execute(
        lower(dmlgraph.load(model), "6_4"), _SLICED)
    noted = [r for r in run.record.nodes if any(n.startswith("divergence:") for n in r.notes)]
    assert noted and all(r.wrong == ("TT",) for r in noted)
    report = dmlgraph.check(model, inputs=_SLICED, fallback=fallback)
    got = {o.name: o for c in report.comparisons for o in c.outputs}
    assert [(d.node, d.outputs) for d in report.divergences] == [("loop", {2})]
    assert all(got[n].verdict is Verdict.PASS and got[n].compared for n in ("V", "R"))
    assert got["TT"].verdict is Verdict.PASS and got["TT"].compared and report.exit_code == 0
    assert got["TT"].message.startswith("compared with onnx.reference")

    planted = _check_planted(monkeypatch, model, _SLICED, {"V": v + 1}, fallback)
    got = {o.name: o for c in planted.comparisons for o in c.outputs}
    assert got["V"].verdict is Verdict.FAIL and planted.exit_code == 1
    assert got["R"].verdict is Verdict.PASS
    # (onnxruntime's TT plus one, and one element more than ONNX's empty rows: each fails)
    for wrong in (t + 1, np.ones((2, 2, 1), np.float32)):
        planted = _check_planted(monkeypatch, model, _SLICED, {"TT": wrong}, fallback)
        got = {o.name: o for c in planted.comparisons for o in c.outputs}
        assert got["TT"].verdict is Verdict.FAIL and planted.exit_code == 1


def _scan_8_of_no_step(holder: str) -> onnx.ModelProto:
    """A Scan-8 of empty scan inputs x [1, n, 6], sequence_lens left out, its state init
    doubled each step (final: init where no step runs, onnxruntime's uninitialized memory)
    and its rows Relu(x) ([1, 0, 6]): at top level ('top'), or in a Loop of neither trip
    count nor condition that the NumPy backend runs whole on the fallback ('whole'), beside
    its carried value (V)."""
    body = helper.make_graph(
        [helper.make_node("Add", ["acc", "acc"], ["acc2"]),
         helper.make_node("Relu", ["row"], ["relu"])], "scan_body",
        [_vi("acc", [2]), _vi("row", [6])], [_vi("acc2", [2]), _vi("relu", [6])])
    scan = helper.make_node("Scan", ["", "init", "x"], ["final", "rows"], body=body,
                            num_scan_inputs=1)
    inputs = [_vi("init", [1, 2]), _vi("x", [1, "n", 6])]
    if holder == "top":
        graph = helper.make_graph([scan], "m", inputs, [_vi("final", None), _vi("rows", None)])
    else:
        model = _loop([scan], ["final", "rows"], ["F", "R"], "whole")
        graph = helper.make_graph(model.graph.node, "m", inputs,
                                  [_vi(n, None) for n in ("V", "F", "R")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 8)], ir_version=10)


@pytest.mark.parametrize("holder", ["top", "whole"])
@pytest.mark.parametrize("fallback", ["onnxruntime", "reference"])
def test_a_scan_8_of_no_step_leaves_only_its_final_states_uncompared(
        holder, fallback, onnx_run, monkeypatch) -> None:
    """A Scan-8 of no step: onnxruntime leaves its final state uninitialized, and makes its
    rows [1, 0, 6] as ONNX does (measured). The note named no output (all of them, top
    level) or every output the Scan's reach (held): its rows were "not compared", a wrong
    shape of them passed. Now only the final state (and what it reaches) is; the rows are
    compared, and a wrong one fails."""
    from dmlgraph.parity import UNINITIALIZED_MESSAGE, Verdict

    model = _scan_8_of_no_step(holder)
    feeds = {"init": np.array([[1, 2]], np.float32), "x": np.zeros((1, 0, 6), np.float32)}
    made = onnx_run(model, feeds, optimize=False)
    # the rows as ONNX makes them (stacked by the Loop's one trip, held)
    assert made[-1].shape == ((1, 0, 6) if holder == "top" else (1, 1, 0, 6))
    state, rows = ("final", "rows") if holder == "top" else ("F", "R")
    report = _check_planted(monkeypatch, model, feeds, {}, fallback)
    got = {o.name: o for c in report.comparisons for o in c.outputs}
    assert got[state].verdict is Verdict.KNOWN_DIVERGENCE and not got[state].compared
    assert got[state].message == UNINITIALIZED_MESSAGE
    assert all(o.compared and o.verdict is Verdict.PASS for n, o in got.items() if n != state)
    assert report.exit_code == 0

    planted = _check_planted(monkeypatch, model, feeds,
                             {rows: np.zeros((*made[-1].shape[:-2], 1, 6), np.float32)},
                             fallback)
    got = {o.name: o for c in planted.comparisons for o in c.outputs}
    assert got[rows].verdict is Verdict.FAIL and planted.exit_code == 1
    assert all(o.verdict is not Verdict.FAIL for n, o in got.items() if n != rows)
    planted = _check_planted(monkeypatch, model, feeds,
                             {state: np.full((1, 2), 7, np.float32)}, fallback)
    got = {o.name: o for c in planted.comparisons for o in c.outputs}
    assert got[state].verdict is not Verdict.FAIL and planted.exit_code == 0


def test_a_scan_input_beside_one_not_reached_reaches_only_what_the_body_makes_of_it() -> None:
    """A Scan-16 of two scan inputs, X reached, Y not: every scan input must be as long as
    the others (onnxruntime fails otherwise: "Scan inputs have inconsistent sequence
    lengths", measured), so Y fixes how many steps run, and X's rows reach only what the
    body makes of them (O, and the state A adding them), not Y's rows (P) nor a state made
    of Y (B). Before, any reached scan input counted every output reached (but a state passed
    on). Both reached, or the one scan input, decide how many steps run: all are."""
    body = helper.make_graph(
        [helper.make_node("Add", ["a", "x"], ["a2"]), helper.make_node("Add", ["b", "y"], ["b2"]),
         helper.make_node("Neg", ["x"], ["o"]), helper.make_node("Neg", ["y"], ["p"])],
        "body", [_vi("a", [2]), _vi("b", [2]), _vi("x", [2]), _vi("y", [2])],
        [_vi("a2", [2]), _vi("b2", [2]), _vi("o", [2]), _vi("p", [2])])
    scan = helper.make_node("Scan", ["A0", "B0", "X", "Y"], ["A", "B", "O", "P"], body=body,
                            num_scan_inputs=2)
    graph = helper.make_graph([scan], "g", [], [])
    outputs = {"A", "B", "O", "P"}
    assert outputs & _reached_names(graph, {"X"}) == {"A", "O"}
    assert outputs & _reached_names(graph, {"Y"}) == {"B", "P"}
    assert outputs & _reached_names(graph, {"X", "Y"}) == outputs
    (single,) = _reached_names(helper.make_graph([helper.make_node(
        "Scan", ["A0", "X"], ["S"], body=helper.make_graph(
            [helper.make_node("Add", ["a", "x"], ["a2"])], "one", [_vi("a", [2]), _vi("x", [2])],
            [_vi("a2", [2])]), num_scan_inputs=1)], "g", [], []), {"X"}) - {"X"}
    assert single == "S"


def _scans_in_a_row() -> onnx.ModelProto:
    """Opset 18: a Scan-16 ('first') passing its state s0 [2, 3] by its own name
    (onnxruntime's final state S is its buffers: zeros, measured; ONNX: s0) beside Relu of
    z's rows (R1), then a Scan ('second') of S's rows and y's (as many: y fixes how many
    steps run) making B (B0 plus y's rows), O (-S's rows) and P (-y's rows)."""
    first = helper.make_graph([helper.make_node("Relu", ["zr"], ["r"])], "first",
                              [_vi("s", [2, 3]), _vi("zr", [1])], [_vi("s", [2, 3]), _vi("r", [1])])
    second = helper.make_graph(
        [helper.make_node("Add", ["b", "yr"], ["b2"]), helper.make_node("Neg", ["sr"], ["o"]),
         helper.make_node("Neg", ["yr"], ["p"])], "second",
        [_vi("b", [3]), _vi("sr", [3]), _vi("yr", [3])],
        [_vi("b2", [3]), _vi("o", [3]), _vi("p", [3])])
    graph = helper.make_graph(
        [helper.make_node("Scan", ["s0", "z"], ["S", "R1"], body=first, num_scan_inputs=1,
                          name="first"),
         helper.make_node("Scan", ["B0", "S", "y"], ["B", "O", "P"], body=second,
                          num_scan_inputs=2, name="second")], "m",
        [_vi("s0", [2, 3]), _vi("z", [4, 1]), _vi("B0", [3]), _vi("y", [2, 3])],
        [_vi(n, None) for n in ("S", "R1", "B", "O", "P")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=10)


@pytest.mark.parametrize("fallback", ["onnxruntime", "reference"])
def test_a_scan_s_passed_state_leaves_only_what_it_reaches_uncompared(
        fallback, onnx_run, monkeypatch) -> None:
    """The first Scan's note (its body passes s by name) counted every output of it, and
    its final state, a scan input of the second, every output of that: R1, B and P, which
    onnxruntime computes, were excused, a wrong one passing. Now S and O (made of S's rows)
    alone are the divergence; R1, B and P are compared, and a wrong one fails. S and O,
    which the numpy backend's Scan computes as ONNX says, are compared with onnx.reference (a
    wrong one was excused as the divergence)."""
    from dmlgraph.parity import Verdict

    model = _scans_in_a_row()
    y = np.arange(6, dtype=np.float32).reshape(2, 3)
    feeds = {"s0": y + 1, "z": np.arange(-2, 2, dtype=np.float32).reshape(4, 1),
             "B0": np.ones(3, np.float32), "y": y}
    s, r1, b, o, p = onnx_run(model, feeds)
    assert not np.array_equal(s, feeds["s0"])  # onnxruntime's buffers, not s0
    assert np.array_equal(r1, np.maximum(feeds["z"], 0)) and np.array_equal(b, 1 + y.sum(0))
    assert np.array_equal(p, -y)
    report = _check_planted(monkeypatch, model, feeds, {}, fallback)
    got = {o.name: o for c in report.comparisons for o in c.outputs}
    assert [(d.node, d.outputs) for d in report.divergences] == [("first", {0, 3})]
    assert all(got[n].verdict is Verdict.PASS and got[n].compared for n in ("R1", "B", "P"))
    assert report.exit_code == 0
    for name, wrong in (("R1", r1 + 1), ("B", b + 1), ("P", p + 1)):
        planted = _check_planted(monkeypatch, model, feeds, {name: wrong}, fallback)
        got = {o.name: o for c in planted.comparisons for o in c.outputs}
        assert got[name].verdict is Verdict.FAIL and planted.exit_code == 1, name
    assert all(got[n].verdict is Verdict.PASS and got[n].message.startswith(
        "compared with onnx.reference") for n in ("S", "O"))
    planted = _check_planted(monkeypatch, model, feeds, {"O": o + 1, "S": s + 1}, fallback)
    got = {o.name: o for c in planted.comparisons for o in c.outputs}
    assert planted.exit_code == 1 and got["O"].verdict is got["S"].verdict is Verdict.FAIL


@pytest.mark.parametrize("fallback", ["onnxruntime", "reference"])
def test_what_needs_a_node_onnxruntime_refuses_is_compared_with_onnx_reference(
        fallback, monkeypatch) -> None:
    """A reflect Pad beyond its input's size (onnxruntime refuses it: "exceeds maximum
    allowed", measured) feeding a Scan beside y: its values reach A and O alone, but B and P
    still need the Scan, and so the Pad, to run. The run pruned to B and P failed again at
    the Pad and check ended naming nothing (exit 2); then what needs the node it fails at
    was the divergence's too, not compared, and a wrong B or P passed (exit 0). B and P read
    none of the Pad's values (undefined by ONNX there): they are compared with onnx.reference,
    and a wrong one fails; A and O stay not compared."""
    from dmlgraph.parity import Verdict

    body = helper.make_graph(
        [helper.make_node("Add", ["a", "xr"], ["a2"]), helper.make_node("Add", ["b", "yr"], ["b2"]),
         helper.make_node("Neg", ["xr"], ["o"]), helper.make_node("Neg", ["yr"], ["p"])],
        "body", [_vi("a", [9]), _vi("b", [9]), _vi("xr", [9]), _vi("yr", [9])],
        [_vi("a2", [9]), _vi("b2", [9]), _vi("o", [9]), _vi("p", [9])])
    graph = helper.make_graph(
        [helper.make_node("Pad", ["x", "pads"], ["X"], mode="reflect", name="pad"),
         helper.make_node("Scan", ["A0", "B0", "X", "y"], ["A", "B", "O", "P"], body=body,
                          num_scan_inputs=2, name="scan")], "m",
        [_vi("x", [2, 3]), _vi("y", [2, 9]), _vi("A0", [9]), _vi("B0", [9])],
        [_vi(n, None) for n in "ABOP"], [_int64("pads", [0, 3, 0, 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=10)
    y = np.arange(18, dtype=np.float32).reshape(2, 9)
    feeds = {"x": np.arange(6, dtype=np.float32).reshape(2, 3), "y": y,
             "A0": np.zeros(9, np.float32), "B0": np.ones(9, np.float32)}
    report = _check_planted(monkeypatch, model, feeds, {}, fallback)
    got = {o.name: o for c in report.comparisons for o in c.outputs}
    assert report.exit_code == 0 and [d.node for d in report.divergences] == ["pad"]
    assert all(got[n].verdict is Verdict.KNOWN_DIVERGENCE and not got[n].compared for n in "AO")
    for name in "BP":
        assert got[name].compared and got[name].verdict is Verdict.PASS, name
        assert got[name].message.startswith("compared with onnx.reference: it needs a node")
    assert ("'B', 'P' compared with onnx.reference on the model (pruned to the outputs "
            "compared): they need node 'pad' to run, and read none of its values"
            ) in report.comparisons[0].note
    for name, right in (("B", 1 + y.sum(0)), ("P", -y)):
        planted = _check_planted(monkeypatch, model, feeds, {name: right + 1}, fallback)
        got = {o.name: o for c in planted.comparisons for o in c.outputs}
        assert got[name].verdict is Verdict.FAIL and planted.exit_code == 1, name


def test_a_branch_making_one_tensor_two_outputs_leaves_only_those_uncompared(
        onnx_run, monkeypatch) -> None:
    """Opset 18: an If whose then branch makes Relu(x) its outputs A and B (onnxruntime gives
    A its buffer, measured) and Neg(x) its output N. The branch's note counted every output
    of the If: a wrong N passed. Now A and B alone are the divergence; N is compared, and a
    wrong N fails."""
    from dmlgraph.parity import Verdict

    then = _branch("then", [helper.make_node("Relu", ["x"], ["r"]),
                            helper.make_node("Neg", ["x"], ["n"])], ["r", "r", "n"])
    other = _branch("else", [helper.make_node("Identity", ["x"], [f"e{k}"]) for k in range(3)],
                    ["e0", "e1", "e2"])
    graph = helper.make_graph(
        [helper.make_node("If", ["c"], ["A", "B", "N"], name="if", then_branch=then,
                          else_branch=other)], "m",
        [_vi("x", [3, 4]), _vi("c", [], TensorProto.BOOL)], [_vi(n, None) for n in "ABN"])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=10)
    x = np.arange(-6, 6, dtype=np.float32).reshape(3, 4)
    feeds = {"x": x, "c": np.array(True)}
    a, b, n = onnx_run(model, feeds)
    assert np.array_equal(b, np.maximum(x, 0)) and np.array_equal(n, -x)
    assert not np.array_equal(a, np.maximum(x, 0))  # its buffer
    report = _check_planted(monkeypatch, model, feeds, {})
    got = {o.name: o for c in report.comparisons for o in c.outputs}
    assert [(d.node, d.outputs) for d in report.divergences] == [("if", {0, 1})]
    assert got["N"].compared and got["N"].verdict is Verdict.PASS and report.exit_code == 0
    planted = _check_planted(monkeypatch, model, feeds, {"N": n + 1})
    got = {o.name: o for c in planted.comparisons for o in c.outputs}
    assert got["N"].verdict is Verdict.FAIL and planted.exit_code == 1
    # (A, onnxruntime's buffer, is compared with onnx.reference, which gives ONNX's Relu(x):
    # a wrong A passed as the divergence)
    assert got["A"].compared and got["A"].message.startswith("compared with onnx.reference")
    planted = _check_planted(monkeypatch, model, feeds, {"A": np.maximum(x, 0) + 1})
    assert planted.exit_code == 1


def test_a_loop_s_counter_notes_leave_only_what_they_reach_uncompared(
        onnx_run, monkeypatch) -> None:
    """Opset 18: a Loop of 4 trips whose body makes its iteration number i its carried
    value's next value (V) and a scan output (IS), stacking v + 0 (S, reading the carried
    value) and 2 * i (D). onnxruntime gives V 4 (ONNX: 3), IS [4, 4, 4, 4] and, as it feeds
    its counter's buffer back, S [7, 1, 2, 3] (ONNX: [7, 0, 1, 2]); D it computes. Both notes
    counted every output of the Loop: a wrong D passed. Now D is compared, and fails wrong."""
    from dmlgraph.parity import Verdict

    int64 = TensorProto.INT64
    body = helper.make_graph(
        [helper.make_node("Identity", ["c"], ["c2"]), helper.make_node("Add", ["v", "zero"], ["s"]),
         helper.make_node("Mul", ["i", "two"], ["d"])], "body",
        [_vi("i", [], int64), _vi("c", [], TensorProto.BOOL), _vi("v", [], int64)],
        [_vi("c2", [], TensorProto.BOOL), _vi("i", [], int64), _vi("s", [], int64),
         _vi("d", [], int64), _vi("i", [], int64)], [_int64("zero", 0), _int64("two", 2)])
    graph = helper.make_graph(
        [helper.make_node("Loop", ["T", "", "v0"], ["V", "S", "D", "IS"], name="loop",
                          body=body)], "m", [_vi("T", [], int64), _vi("v0", [], int64)],
        [_vi(n, None, int64) for n in ("V", "S", "D", "IS")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=10)
    feeds = {"T": np.array(4, np.int64), "v0": np.array(7, np.int64)}
    v, s, d, counted = onnx_run(model, feeds)
    assert v == 4 and s.tolist() == [7, 1, 2, 3] and counted.tolist() == [4] * 4
    assert d.tolist() == [0, 2, 4, 6]  # as ONNX gives it
    report = _check_planted(monkeypatch, model, feeds, {})
    got = {o.name: o for c in report.comparisons for o in c.outputs}
    # (each note its own: the carried value's V and S, the scan output's IS)
    assert {d.outputs for d in report.divergences} == {frozenset({0, 1}), frozenset({3})}
    assert got["D"].compared and got["D"].verdict is Verdict.PASS and report.exit_code == 0
    planted = _check_planted(monkeypatch, model, feeds, {"D": d + 1})
    assert planted.exit_code == 1
    # (V, S and IS, onnxruntime's own reading, are compared with onnx.reference, whose Loop
    # gives ONNX's: a wrong one passed as the divergence)
    got = {o.name: o for c in report.comparisons for o in c.outputs}
    assert all(got[n].message.startswith("compared with onnx.reference") for n in ("V", "S", "IS"))
    for name, right in (("V", 3), ("S", np.array([7, 0, 1, 2])), ("IS", np.arange(4))):
        # (2 off: V 1 off is onnxruntime's, which a comparison with it passes)
        planted = _check_planted(monkeypatch, model, feeds, {name: np.asarray(right) + 2})
        assert planted.exit_code == 1, name


def _loop_of_a_slice_and_a_passing_scan() -> onnx.ModelProto:
    """Opset 18: a Loop of 2 trips whose body holds a Scan over x's rows passing its state v
    by its own name (V: onnxruntime gives its buffers, zeros, measured; ONNX: init) and
    stacking Relu of them (RR), and Neg(x[:, -1:INT64_MAX:-1]) (TT: ONNX's slice is empty,
    onnxruntime reads it through index 0, as in ``_loop_of_a_reversing_slice``)."""
    scan_body = helper.make_graph([helper.make_node("Relu", ["row"], ["rr"])], "scan_body",
                                  [_vi("s", [2]), _vi("row", [6])], [_vi("s", [2]), _vi("rr", [6])])
    body = helper.make_graph(
        [helper.make_node("Identity", ["c"], ["c2"]),
         helper.make_node("Scan", ["v", "x"], ["v2", "rows"], body=scan_body, num_scan_inputs=1,
                          name="inner"),
         helper.make_node("Slice", ["x", "st", "en", "ax", "neg"], ["t"]),
         helper.make_node("Neg", ["t"], ["nt"])],
        "body", [_vi("i", [], TensorProto.INT64), _vi("c", [], TensorProto.BOOL), _vi("v", [2])],
        [_vi("c2", [], TensorProto.BOOL), _vi("v2", [2]), _vi("nt", None), _vi("rows", None)],
        [_int64("st", [-1]), _int64("en", [2**63 - 1]), _int64("ax", [1]), _int64("neg", [-1])])
    loop = helper.make_node("Loop", ["T", "", "init"], ["V", "TT", "RR"], name="loop", body=body)
    graph = helper.make_graph([loop], "m", [_vi("init", [2]), _vi("x", [2, 6])],
                              [_vi(n, None) for n in loop.output], [_int64("T", 2)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=10)


@pytest.mark.parametrize("fallback", ["onnxruntime", "reference"])
def test_a_record_s_several_notes_each_concern_their_own_outputs(
        fallback, onnx_run, monkeypatch) -> None:
    """The records of the Scan's body carry both its note (its state passed by name: V, no
    oracle) and the body's Slice's (TT). Each counted the union of what they concern for
    each: the Scan's note reached TT too, so TT was not compared with onnx.reference
    (``parity._excused_by_spec``), and a wrong TT passed (exit 0). Now each note concerns its
    own: TT is compared with onnx.reference, and a wrong one fails; V is the Scan's, which
    the numpy backend runs as ONNX says: compared with onnx.reference too (ONNX's V: init)."""
    from dmlgraph.parity import Verdict

    model = _loop_of_a_slice_and_a_passing_scan()
    v, t, rr = onnx_run(model, _SLICED)
    assert not np.array_equal(v, _SLICED["init"]) and t.shape == (2, 2, 6)  # ONNX: [2, 2, 0]
    report = _check_planted(monkeypatch, model, _SLICED, {}, fallback)
    got = {o.name: o for c in report.comparisons for o in c.outputs}
    assert sorted(sorted(d.outputs) for d in report.divergences) == [[0], [1]]
    assert all(got[n].verdict is Verdict.PASS and got[n].compared for n in ("TT", "RR"))
    assert got["TT"].message.startswith("compared with onnx.reference")
    assert got["V"].verdict is Verdict.PASS and report.exit_code == 0
    assert got["V"].message.startswith("compared with onnx.reference")
    planted = _check_planted(monkeypatch, model, _SLICED, {"TT": np.ones((2, 2, 1), np.float32)},
                             fallback)
    got = {o.name: o for c in planted.comparisons for o in c.outputs}
    assert got["TT"].verdict is Verdict.FAIL and planted.exit_code == 1
    planted = _check_planted(monkeypatch, model, _SLICED, {"V": _SLICED["init"] + 1}, fallback)
    got = {o.name: o for c in planted.comparisons for o in c.outputs}
    assert got["V"].verdict is Verdict.FAIL and planted.exit_code == 1
