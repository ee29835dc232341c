"""The graph fuzzer's oracle (tests/fuzz/graph_fuzz.py) on float16: onnxruntime's CPU provider
computes chains of float16 ops in float32 and rounds once (its InsertCastTransformer), where
the spec rounds each op's output; the fuzzer must tell that from a wrong value."""

from __future__ import annotations

import collections
import os
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fuzz"))
import graph_fuzz  # noqa: E402

F16 = TensorProto.FLOAT16


def _model(nodes, inputs, outputs, inits, opset: int) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes, "m", [helper.make_tensor_value_info(n, F16, s) for n, s in inputs],
        [helper.make_tensor_value_info(n, F16, None) for n in outputs],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _chain() -> tuple[onnx.ModelProto, dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Seed 401047 cut down: a = x + c; j = Concat(x, a); s = j + d; t = j + s. The spec
    rounds a and s to float16; onnxruntime keeps both in float32; dmlgraph's onnxruntime
    fallback rounds a (its segment ends at the Concat) but keeps s in float32."""
    rng = np.random.default_rng(5)
    inits = {"c": np.array(-1.434, np.float16),
             "d": (rng.standard_normal([1, 8]) * 6).astype(np.float16)}
    model = _model(
        [helper.make_node("Add", ["x", "c"], ["a"]),
         helper.make_node("Concat", ["x", "a"], ["j"], axis=0),
         helper.make_node("Add", ["j", "d"], ["s"]),
         helper.make_node("Add", ["j", "s"], ["t"])],
        [("x", [64, 8])], ["s", "t"], inits, 13)
    feeds = {"x": (rng.standard_normal([64, 8]) * 6).astype(np.float16)}
    return model, feeds, inits


def _case(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> graph_fuzz.Case:
    from backends.numpy import threads as t

    knobs = {"native": t.native, "parallel_bytes": t.PARALLEL_BYTES,
             "block_bytes": t.BLOCK_BYTES, "slab_bytes": t.SLAB_BYTES,
             "piece_bytes": t.PIECE_BYTES, "threads": 1, "fallback": "onnxruntime"}
    return graph_fuzz.Case(1, model, [feeds, feeds], collections.Counter(), "float16", 13,
                           False, knobs)


def test_the_chain_is_rounded_three_ways() -> None:
    """The premise, by hand in NumPy: onnxruntime's t is the sum kept in float32 (single
    rounding), the spec's rounds a and s; they differ, so the fuzzer's oracles disagree."""
    model, feeds, inits = _chain()
    x, c, d = (v.astype(np.float32) for v in (feeds["x"], inits["c"], inits["d"]))

    def t(rounded: bool) -> np.ndarray:
        r = (lambda v: v.astype(np.float16).astype(np.float32)) if rounded else (lambda v: v)
        j = np.concatenate([x, r(x + c)])
        return (j + r(j + d)).astype(np.float16)

    ort_values = graph_fuzz.ort_run(model, feeds, optimize=False)
    assert not isinstance(ort_values, Exception)
    assert np.array_equal(ort_values[1], t(False))
    assert np.array_equal(graph_fuzz.numpy_eval(model, feeds)[1], t(True))
    assert not np.array_equal(t(False), t(True))


def test_the_fuzzer_takes_the_onnxruntime_fallbacks_float32_chains() -> None:
    """Seeds 401047 and its like were reported as mismatches on the onnxruntime fallback,
    whose values match neither onnxruntime (a rounded at the segment's end) nor the spec (s
    kept in float32): they are within the bounds of rounding anywhere."""
    from backends.numpy import threads as t

    saved = (t.native, t.PARALLEL_BYTES, t.BLOCK_BYTES, t.SLAB_BYTES, t.PIECE_BYTES)
    try:
        model, feeds, _ = _chain()
        assert graph_fuzz.run_case(_case(model, feeds), collections.Counter()) == []
    finally:
        t.native, t.PARALLEL_BYTES, t.BLOCK_BYTES, t.SLAB_BYTES, t.PIECE_BYTES = saved


@pytest.mark.parametrize("spacings", [4, -4])
def test_a_float16_value_past_the_rounding_bounds_is_still_reported(spacings: int) -> None:
    """One element of t moved 4 float16 spacings off onnxruntime's value (which is within
    half a spacing of the exact sum): in the x half, t = x + s rounds twice (s and t), each
    within one spacing of t's where |t| >= |s|, so 3.5 spacings is past any rounding."""
    model, feeds, _ = _chain()
    expected = graph_fuzz.ort_run(model, feeds, optimize=False)
    assert not isinstance(expected, Exception)
    got = [np.array(v) for v in expected]
    s, t = got
    at = int(np.argmax((np.abs(t[:64]) >= np.abs(s[:64])).reshape(-1)))
    assert abs(t.reshape(-1)[at]) >= abs(s.reshape(-1)[at])
    t.reshape(-1).view(np.int16)[at] += spacings
    problem = graph_fuzz.compare(model, feeds, ["s", "t"], got, (expected, expected),
                                 collections.Counter(), ort_fallback=True)
    assert problem is not None and [o["output"] for o in problem["outputs"]] == ["t"]
    assert problem["outputs"][0]["mismatches"] == 1


def test_numpy_eval_takes_an_if_branch() -> None:
    """Seed 390569 cut down: an If's outputs read an outer float16 chain. onnx.reference
    failed on that model (a Pad elsewhere) and numpy_eval gave no value for control flow, so
    onnxruntime's float32 chain was the only oracle left; numpy_eval now runs the branch the
    condition takes, rounding each op as the spec does."""
    x = np.array([1.0, 2.0, 3.0, 2048.0], np.float16)
    s1, s2 = np.array(0.5, np.float16), np.array(0.75, np.float16)
    then = helper.make_graph([helper.make_node("Relu", ["b"], ["r"])], "then", [],
                             [helper.make_tensor_value_info("r", F16, None)])
    other = helper.make_graph([helper.make_node("Identity", ["a"], ["i"])], "else", [],
                              [helper.make_tensor_value_info("i", F16, None)])
    model = _model(
        [helper.make_node("Add", ["x", "s1"], ["a"]),
         helper.make_node("Add", ["a", "s2"], ["b"]),
         helper.make_node("If", ["k"], ["y"], then_branch=then, else_branch=other)],
        [("x", [4])], ["y"], {"s1": s1, "s2": s2}, 14)
    model.graph.input.append(helper.make_tensor_value_info("k", TensorProto.BOOL, []))
    a = (x.astype(np.float32) + 0.5).astype(np.float16)
    b = (a.astype(np.float32) + 0.75).astype(np.float16)
    assert b[3] == 2048  # 2048.5 rounds to 2048, and 2048.75 too; 2049.25 once: 2050
    for k, want in ((True, b), (False, a)):
        (y,) = graph_fuzz.numpy_eval(model, {"x": x, "k": np.array(k)})
        assert y is not None and np.array_equal(y, want), k


def _loop_model(trips: int | None, cond: bool | None, declare: bool = True) -> onnx.ModelProto:
    """Seed 454734 cut down: b = (x + c) + d, a float16 chain, carried by a Loop whose body
    passes it on (and its condition) and makes it a scan output too. ``trips`` and ``cond``
    None: the Loop's M or cond left out."""
    body = helper.make_graph(
        [helper.make_node("Identity", ["cin"], ["cout"]),
         helper.make_node("Identity", ["v"], ["v2"]),
         helper.make_node("Identity", ["v2"], ["v3"])],
        "body",
        [helper.make_tensor_value_info("it", TensorProto.INT64, []),
         helper.make_tensor_value_info("cin", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v", F16, [6, 13])],
        [helper.make_tensor_value_info("cout", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v2", F16, [6, 13] if declare else None),
         helper.make_tensor_value_info("v3", F16, [6, 13] if declare else None)])
    inits = {"c": np.array(-4.293, np.float16), "d": np.array([12.82], np.float16)}
    model = _model(
        [helper.make_node("Add", ["c", "x"], ["a"]),
         helper.make_node("Add", ["a", "d"], ["b"]),
         helper.make_node("Loop", ["m" if trips is not None else "",
                                   "k" if cond is not None else "", "b"], ["lf", "ls"],
                          body=body)],
        [("x", [6, 13])], ["b", "lf", "ls"], inits, 18)
    if trips is not None:
        model.graph.initializer.append(numpy_helper.from_array(np.array(trips, np.int64), "m"))
    if cond is not None:
        model.graph.initializer.append(numpy_helper.from_array(np.array(cond), "k"))
    return model


def _loop_feeds() -> dict[str, np.ndarray]:
    return {"x": (np.random.default_rng(454734).standard_normal([6, 13]) * 8).astype(np.float16)}


def test_a_loop_over_a_float16_chain_is_rounded_two_ways() -> None:
    """The premise of seed 454734, by hand in NumPy: onnxruntime (even unoptimized: its
    InsertCastTransformer) keeps b = (x + c) + d in float32 and rounds once, the spec rounds
    a too, and the Loop passes on whichever b it got; onnx.reference gives no third opinion,
    its Loop (onnx 1.23) running no trip without a ``cond`` input and then failing to stack
    no scan output."""
    model, feeds = _loop_model(3, None), _loop_feeds()
    x, c, d = (np.asarray(v, np.float32) for v in (feeds["x"], np.float16(-4.293),
                                                     np.float16(12.82)))
    once = ((x + c) + d).astype(np.float16)
    each = ((x + c).astype(np.float16).astype(np.float32) + d).astype(np.float16)
    assert not np.array_equal(once, each)
    for optimize in (False, True):
        got = graph_fuzz.ort_run(model, feeds, optimize=optimize)
        assert not isinstance(got, Exception)
        b, lf, ls = got
        assert np.array_equal(b, once) and np.array_equal(lf, once)
        assert np.array_equal(ls, np.stack([once] * 3))
    ref = graph_fuzz.reference_run(model, feeds)
    assert isinstance(ref, ValueError) and "need at least one array" in str(ref)


def test_numpy_eval_runs_a_loop() -> None:
    """numpy_eval gave no value for a Loop's outputs, so on seed 454734 (reference fallback,
    rounding each Add as the spec does) no oracle agreed with dmlgraph's Loop outputs; it now
    runs the Loop by its text, each Add rounded."""
    model, feeds = _loop_model(3, None), _loop_feeds()
    x = feeds["x"]
    each = ((np.float16(-4.293) + x).astype(np.float16) + np.float16(12.82)).astype(np.float16)
    b, lf, ls = graph_fuzz.numpy_eval(model, feeds)
    assert np.array_equal(b, each) and lf is not None and np.array_equal(lf, each)
    assert ls is not None and np.array_equal(ls, np.stack([each] * 3))


@pytest.mark.parametrize(("trips", "cond", "declare"), [
    (0, None, True), (2, None, False), (3, True, True), (2, False, True), (None, False, True),
    (4, True, False)])
def test_numpy_eval_loops_as_onnxruntime_counts_trips(
    trips: int | None, cond: bool | None, declare: bool
) -> None:
    """The Loop's trips, its carried value after none and its scan output's shape after none
    (the body's declared one after a 0 axis), as onnxruntime gives them; its values in
    float32 (onnxruntime's float16 chain aside): the Adds cast to float32."""
    model = _loop_model(trips, cond, declare)
    for t in model.graph.initializer:
        if t.data_type == F16:
            t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float32),
                                               t.name))
    for v in [*model.graph.input, *model.graph.output, *model.graph.node[2].attribute[0].g.input,
              *model.graph.node[2].attribute[0].g.output]:
        if v.type.tensor_type.elem_type == F16:
            v.type.tensor_type.elem_type = TensorProto.FLOAT
    feeds = {"x": _loop_feeds()["x"].astype(np.float32)}
    want = graph_fuzz.ort_run(model, feeds, optimize=False)
    assert not isinstance(want, Exception)
    got = graph_fuzz.numpy_eval(model, feeds)
    if trips == 0 and not declare:
        assert got[2] is None
        got[2] = want[2]
    for g, w in zip(got, want):
        assert g is not None and g.shape == w.shape and np.array_equal(g, w)


def test_the_fuzzer_takes_onnxruntimes_float32_chain_through_a_loop() -> None:
    """Seed 454734 was reported on the reference fallback: dmlgraph's b, lf and ls round
    each Add as the spec does, onnxruntime's keep b in float32; numpy_eval now agrees with
    dmlgraph on all three."""
    from backends.numpy import threads as t

    saved = (t.native, t.PARALLEL_BYTES, t.BLOCK_BYTES, t.SLAB_BYTES, t.PIECE_BYTES)
    try:
        case = _case(_loop_model(3, None), _loop_feeds())
        case.knobs["fallback"] = "reference"
        stats: collections.Counter = collections.Counter()
        assert graph_fuzz.run_case(case, stats) == []
        assert stats["ort_divergence_numpy"] > 0
    finally:
        t.native, t.PARALLEL_BYTES, t.BLOCK_BYTES, t.SLAB_BYTES, t.PIECE_BYTES = saved


def test_a_loop_output_off_the_spec_is_still_reported() -> None:
    """One element of the Loop's scan output moved a spacing off the spec's (and so off
    onnxruntime's, which only b's rounding parts from the spec's): a mismatch, naming ls."""
    model, feeds = _loop_model(3, None), _loop_feeds()
    expected = graph_fuzz.ort_run(model, feeds, optimize=False)
    assert not isinstance(expected, Exception)
    got = [np.array(v) for v in graph_fuzz.numpy_eval(model, feeds)]
    same = int(np.argmax((got[2][0] == expected[2][0]).reshape(-1)))
    got[2][1].reshape(-1).view(np.int16)[same] += 1
    problem = graph_fuzz.compare(model, feeds, ["b", "lf", "ls"], got, (expected, expected),
                                 collections.Counter())
    assert problem is not None and "ls" in [o["output"] for o in problem["outputs"]]
