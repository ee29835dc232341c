"""Execution and parity at the edges an audit found: results the reference fallback hands
back as views, outputs listed twice, divergences of unnamed nodes, strings, bound outputs of
another shape, .npz names, stored byte orders and stored files without outputs. Oracles:
onnxruntime on the model, and each case's own arithmetic."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from backends import BackendError, get_backend
from dmlgraph import check, load, tensorio
from dmlgraph.cli import main
from dmlgraph.errors import DmlgraphError
from dmlgraph.parity import Verdict
from lowering import lower


def _model(nodes, inputs, outputs, inits=(), opset: int = 19) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    return model


def _info(name: str, shape, elem: int = TensorProto.FLOAT) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem, shape)


def _ints(name: str, values) -> onnx.TensorProto:
    return numpy_helper.from_array(np.array(values, np.int64), name)


def _on_onnx_reference(report, *nodes: str) -> bool:
    """Whether the first comparison says onnxruntime failed at a divergence of these nodes,
    and its outputs there were compared with onnx.reference (``parity._on_onnx_reference``)."""
    at = f"node{'s' if len(nodes) > 1 else ''} {', '.join(map(repr, nodes))}"
    return f"compared with onnx.reference on the model (pruned to the outputs compared): it " \
        f"computes what ONNX says at {at}" in report.comparisons[0].note


def _ort(model: onnx.ModelProto, feeds) -> list[np.ndarray]:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def test_the_reference_fallback_results_are_not_views_of_the_plans_memory() -> None:
    """onnx.reference's Reshape returns a view of its input, a view of the plan's arena:
    kept, the next run overwrote an output the caller held (and within a run, a later step
    could overwrite a result still to be read)."""
    model = _model([helper.make_node("Pad", ["X", "pads"], ["P"], mode="constant"),
                    helper.make_node("Reshape", ["P", "shp"], ["R"])],
                   [_info("X", [2, 2])], [_info("R", [None])],
                   [_ints("pads", [1, 1, 1, 1]), _ints("shp", [16])])
    lowered = lower(load(model), "6_4")
    backend = get_backend("numpy", fallback="reference")
    x = np.ones((2, 2), np.float32)
    first = backend.run(lowered, {"X": x})["R"]
    kept = first.copy()
    second = backend.run(lowered, {"X": 5 * x})["R"]
    np.testing.assert_array_equal(first, kept)
    np.testing.assert_array_equal(first, _ort(model, {"X": x})[0])
    np.testing.assert_array_equal(second, _ort(model, {"X": 5 * x})[0])


def test_an_output_listed_twice_is_compared_by_name() -> None:
    model = _model([helper.make_node("Slice", ["X", "s", "e"], ["A"]),
                    helper.make_node("Neg", ["X"], ["B"])],
                   [_info("X", [4])], [_info("A", [None]), _info("A", [None]), _info("B", [None])],
                   [_ints("s", [1]), _ints("e", [3])])
    assert [o.shape for o in _ort(model, {"X": np.arange(4, dtype=np.float32)})] == [
        (2,), (2,), (4,)]
    (comparison,) = check(model).comparisons
    assert [(o.name, o.verdict) for o in comparison.outputs] == [
        ("A", Verdict.PASS), ("A", Verdict.PASS), ("B", Verdict.PASS)]


def test_an_unnamed_divergent_node_reaches_only_its_own_outputs() -> None:
    """Two unnamed nodes: a Slice whose INT64_MAX end diverges (reaching Y1) and a Neg (Y2).
    Divergences are traced by node id: matched by the empty name, the Slice's divergence
    reached Y2 too and excused its mismatch with the stored Y2."""
    model = _model([helper.make_node("Slice", ["X", "s", "e", "a", "t"], ["Y1"]),
                    helper.make_node("Neg", ["X"], ["Y2"])],
                   [_info("X", [4])], [_info("Y1", [None]), _info("Y2", [None])],
                   [_ints("s", [-1]), _ints("e", [2**63 - 1]), _ints("a", [0]), _ints("t", [-1])])
    x = np.arange(4, dtype=np.float32)
    wrong = {"Y1": np.zeros(0, np.float32), "Y2": np.full(4, 100, np.float32)}
    report = check(model, inputs={"X": x}, expected=wrong)
    against_ort, against_stored = report.comparisons
    # (Y1 onnxruntime reads through index 0: compared with onnx.reference, empty as ONNX says)
    assert [o.verdict for o in against_ort.outputs] == [Verdict.PASS, Verdict.PASS]
    assert _on_onnx_reference(report, "Slice_0")
    assert [o.verdict for o in against_stored.outputs] == [Verdict.PASS, Verdict.FAIL]
    assert report.exit_code == 1


def test_an_unnamed_concat_1_is_a_known_divergence_like_a_named_one() -> None:
    """onnxruntime has no Concat before opset 4 and names an unnamed node "Concat_0" in its
    error: the divergence is matched by the node's op then (and the output compared with
    onnx.reference, which computes what ONNX says there)."""
    for name in ("cat", ""):
        model = _model([helper.make_node("Concat", ["X", "X"], ["Y"], axis=1, name=name)],
                       [_info("X", [2, 3])], [_info("Y", [None, None])], opset=3)
        model.ir_version = 3
        report = check(model, inputs={"X": np.ones((2, 3), np.float32)})
        assert report.comparisons[0].outputs[0].verdict is Verdict.PASS, name
        assert _on_onnx_reference(report, name or "Concat_0"), name
        assert report.exit_code == 0


@pytest.mark.parametrize("name", ["wrap", ""])
def test_a_wrap_pad_of_an_empty_input_is_a_known_divergence(name: str, capsys) -> None:
    """onnxruntime's CPU Pad fails on any wrap Pad of an empty input, at run time, where ONNX
    gives the empty result. Unnamed, onnxruntime's error says Name:'': the reference is run
    again on ``to_onnx``, which names the node, and the divergence is matched."""
    model = _model([helper.make_node("Pad", ["X", "p"], ["Y"], mode="wrap", name=name),
                    helper.make_node("Neg", ["Z"], ["W"])],
                   [_info("X", [0, 3]), _info("Z", [2])], [_info("Y", None), _info("W", None)],
                   [_ints("p", [0, 1, 0, 1])])
    feeds = {"X": np.zeros((0, 3), np.float32), "Z": np.array([1, -2], np.float32)}
    with pytest.raises(Exception, match="Unexpected mode"):
        _ort(model, feeds)
    report = check(model, inputs=feeds)
    assert [o.verdict for o in report.comparisons[0].outputs] == [Verdict.PASS, Verdict.PASS]
    assert _on_onnx_reference(report, name or "Pad_0")
    assert report.exit_code == 0
    (y,) = [v for k, v in get_backend("numpy").run(lower(load(model)), feeds).items() if k == "Y"]
    assert y.shape == (0, 5)


@pytest.mark.parametrize("mode", ["edge", "reflect"])
@pytest.mark.parametrize("dynamic", [False, True])
def test_an_edge_or_reflect_pad_growing_an_empty_axis_into_an_empty_result_is_named(
    mode: str, dynamic: bool
) -> None:
    """onnxruntime's CPU Pad refuses an edge or reflect Pad that grows an axis of size 0
    (numpy's rule: "Cannot use 'edge' mode to pad dimension with a value of 0"), even where
    another axis of size 0 leaves the result empty, as ONNX's result then is. ``check``
    exited 2 with onnxruntime's error (a helper's sweep); a Pad that grows no empty axis
    ([2, 0] padded on axis 0) onnxruntime runs, and is compared."""
    x = np.zeros((0, 0), np.float32)
    shape = ["N", "M"] if dynamic else [0, 0]
    model = _model([helper.make_node("Pad", ["X", "p"], ["Y"], mode=mode, name="pad")],
                   [_info("X", shape)], [_info("Y", None)], [_ints("p", [0, 3, 0, 0])])
    with pytest.raises(Exception, match=f"Cannot use '{mode}' mode"):
        _ort(model, {"X": x})
    report = check(model, inputs={"X": x})
    assert [o.verdict for o in report.comparisons[0].outputs] == [Verdict.PASS]
    assert _on_onnx_reference(report, "pad")
    assert report.exit_code == 0
    (y,) = get_backend("numpy").run(lower(load(model)), {"X": x}).values()
    assert y.shape == (0, 3)
    runs = _model([helper.make_node("Pad", ["X", "p"], ["Y"], mode=mode, name="pad")],
                  [_info("X", [2, 0])], [_info("Y", None)], [_ints("p", [1, 0, 1, 0])])
    x = np.zeros((2, 0), np.float32)
    assert _ort(runs, {"X": x})[0].shape == (4, 0)
    report = check(runs, inputs={"X": x})
    assert [o.verdict for o in report.comparisons[0].outputs] == [Verdict.PASS]


def test_onnxruntime_failing_on_a_node_no_output_reads_is_no_parity_failure() -> None:
    """onnxruntime runs every node; the import drops those no output reads. A wrap Pad of an
    empty input that nothing reads failed the check ("Unexpected mode of 3"): the reference
    is then the file without such nodes, and the note says why. A node that a live output
    reads is no such case: a first version of this retry, on ``to_onnx()``, passed a reflect
    Pad by more than its size that the import had folded (found by a review). Such a Pad is
    no longer folded (onnxruntime refuses it) but lowered, its divergence named."""
    model = _model([helper.make_node("Pad", ["X", "p"], ["dead"], mode="wrap", name="unused"),
                    helper.make_node("Neg", ["Z"], ["W"])],
                   [_info("X", [0, 3]), _info("Z", [2])], [_info("W", None)],
                   [_ints("p", [0, 1, 0, 1])])
    feeds = {"X": np.zeros((0, 3), np.float32), "Z": np.array([1, -2], np.float32)}
    with pytest.raises(Exception, match="Unexpected mode"):
        _ort(model, feeds)
    report = check(model, inputs=feeds)
    assert [o.verdict for o in report.comparisons[0].outputs] == [Verdict.PASS]
    assert report.exit_code == 0
    assert any("the file without the nodes no output reads" in n for n in report.notes)
    live = _model([helper.make_node("Pad", ["c", "p"], ["padded"], mode="reflect", name="big"),
                   helper.make_node("Add", ["padded", "Z"], ["W"])],
                  [_info("Z", [13])], [_info("W", None)],
                  [numpy_helper.from_array(np.array([1, 2, 3], np.float32), "c"),
                   _ints("p", [5, 5])])
    report = check(live, inputs={"Z": np.zeros(13, np.float32)})  # live: no retry hides it
    assert [o.verdict for o in report.comparisons[0].outputs] == [Verdict.KNOWN_DIVERGENCE]
    assert not any("without the nodes no output reads" in n for n in report.notes)


def test_string_outputs_are_compared_exactly(tmp_path: Path) -> None:
    model = _model([helper.make_node("Slice", ["X", "s", "e"], ["Y"])],
                   [_info("X", [3], TensorProto.STRING)], [_info("Y", [None], TensorProto.STRING)],
                   [_ints("s", [1]), _ints("e", [3])])
    x = np.array(["a", "b", "c"], dtype=object)
    report = check(model, inputs={"X": x}, expected={"Y": np.array(["b", "z"], dtype=object)})
    against_ort, against_stored = report.comparisons
    assert against_ort.outputs[0].verdict is Verdict.PASS
    assert against_stored.outputs[0].verdict is Verdict.FAIL
    assert against_stored.outputs[0].mismatches == 1
    # named as ONNX's STRING, not as the NumPy container holding it ("object")
    assert against_ort.outputs[0].actual_dtype == against_ort.outputs[0].expected_dtype == (
        "string")


def test_a_bound_output_of_another_shape_is_refused_not_broadcast() -> None:
    """onnx infers STFT(frame_length=5) of 16 samples, step 3, as [1, 4, 5, 2]; onnxruntime
    makes [1, 4, 3, 2]. An array bound for the inferred shape cannot take the result: it was
    filled by broadcasting, or half left as it was."""
    model = _model([helper.make_node("STFT", ["X", "st", "", "fl"], ["Y"])],
                   [_info("X", [1, 16, 1])], [_info("Y", [None] * 4)],
                   [_ints("st", 3), _ints("fl", 5)])
    graph = load(model)
    x = np.random.default_rng(0).standard_normal((1, 16, 1)).astype(np.float32)
    assert graph.tensor("Y").shape == (1, 4, 5, 2) and _ort(model, {"X": x})[0].shape == (
        1, 4, 3, 2)
    with pytest.raises(BackendError, match=r"output 'Y' is float32\[1, 4, 3, 2\] in this run; "
                                           r"the array bound to it is float32\[1, 4, 5, 2\]"):
        get_backend("numpy").run(lower(graph), {"X": x},
                                 outputs={"Y": np.zeros((1, 4, 5, 2), np.float32)})


def test_a_bound_output_of_the_shape_the_run_makes_takes_it_where_inference_errs() -> None:
    """The STFT above: an array of onnxruntime's [1, 4, 3, 2] takes the result on both
    backends (it was refused: "shape [1, 4, 3, 2] (expected [1, 4, 5, 2])"); one of another
    rank is refused before the run, the rank being sure. Oracle: onnxruntime."""
    model = _model([helper.make_node("STFT", ["X", "st", "", "fl"], ["Y"])],
                   [_info("X", [1, 16, 1])], [_info("Y", [None] * 4)],
                   [_ints("st", 3), _ints("fl", 5)])
    graph = load(model)
    x = np.random.default_rng(0).standard_normal((1, 16, 1)).astype(np.float32)
    (want,) = _ort(model, {"X": x})
    for backend, target in (("numpy", lower(graph)), ("onnxruntime", graph)):
        out = np.full(want.shape, np.nan, np.float32)
        assert get_backend(backend).run(target, {"X": x}, outputs={"Y": out})["Y"] is out
        np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)
        with pytest.raises(BackendError, match=r"bound output 'Y' cannot take the result: "
                                               r"shape \[4, 3, 2\] \(expected rank 4\)"):
            get_backend(backend).run(target, {"X": x},
                                     outputs={"Y": np.zeros((4, 3, 2), np.float32)})


@pytest.mark.parametrize("name", ["file", "allow_pickle"])
def test_npz_files_keep_tensors_named_as_savez_arguments(name: str, tmp_path: Path) -> None:
    model = _model([helper.make_node("Neg", [name], ["Y"])], [_info(name, [2])], [_info("Y", [2])])
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    feeds = tmp_path / "in.npz"
    tensorio.save_npz(feeds, {name: np.array([1, 2], np.float32)})
    out = tmp_path / "io.npz"
    assert main(["run", str(path), "--inputs", str(feeds), "-o", str(out)]) == 0
    with np.load(out) as saved:
        assert sorted(saved.files) == sorted([name, "Y"])
        assert saved["Y"].tolist() == [-1, -2]


def test_npz_keys_that_name_inputs_bind_by_name_not_position(tmp_path: Path) -> None:
    """Inputs named arr_1 and arr_0 (np.savez's positional keys) in the other order."""
    model = _model([helper.make_node("Concat", ["arr_1", "arr_0"], ["Y"], axis=0)],
                   [_info("arr_1", [2]), _info("arr_0", [2])], [_info("Y", [4])])
    path = tmp_path / "io.npz"
    a1, a0 = np.array([1, 2], np.float32), np.array([3, 4], np.float32)
    tensorio.save_npz(path, {"arr_1": a1, "arr_0": a0})
    feeds = tensorio.read(path, load(model)).inputs
    assert feeds["arr_1"].tolist() == [1, 2] and feeds["arr_0"].tolist() == [3, 4]


def test_stored_outputs_in_another_byte_order_are_the_same_values() -> None:
    model = _model([helper.make_node("Neg", ["X"], ["Y"])], [_info("X", [3])], [_info("Y", [3])])
    x = np.arange(3, dtype=np.float32)
    big_endian = (-x).astype(">f4")
    report = check(model, inputs={"X": x}, expected={"Y": big_endian})
    assert report.passed and report.comparisons[1].outputs[0].verdict is Verdict.PASS


def test_an_expected_file_without_the_graph_outputs_is_an_error(tmp_path: Path) -> None:
    model = _model([helper.make_node("Neg", ["X"], ["Y"])], [_info("X", [3])], [_info("Y", [3])])
    path = tmp_path / "exp.npz"
    tensorio.save_npz(path, {"X": np.zeros(3, np.float32)})  # an input, no output
    with pytest.raises(DmlgraphError, match=r"holds none of the graph's outputs \['Y'\]"):
        check(model, inputs={"X": np.zeros(3, np.float32)}, expected=path)


def test_string_tensors_are_saved_to_npz_as_np_savez_saves_them(tmp_path: Path) -> None:
    """Object arrays pickled, as ``np.savez`` writes them; a path without ``.npz`` gets it."""
    written = tensorio.save_npz(tmp_path / "s", {"X": np.array(["a", "bc"], dtype=object)})
    assert written == tmp_path / "s.npz"
    with np.load(written, allow_pickle=True) as saved:
        assert saved["X"].tolist() == ["a", "bc"]


def test_running_out_of_memory_is_a_one_line_error(monkeypatch, capsys) -> None:
    import dmlgraph.cli as cli

    def exhausted(args):
        raise MemoryError()

    monkeypatch.setattr(cli, "cmd_inspect", exhausted)
    assert cli.main(["inspect", "m.onnx"]) == 2
    err = capsys.readouterr().err
    assert err == "dmlgraph: error: out of memory (the tensors are too large for this machine)\n"


def test_a_named_node_failing_is_not_excused_by_an_unnamed_divergent_one() -> None:
    """An unnamed Concat-1 (a known divergence: onnxruntime has no Concat before opset 4)
    beside a named one: the reference's error names "cat", not the unnamed node's "Concat_1"
    that to_onnx gives it, so only the unnamed node's outputs may be excused, and the
    named node's failure is not excused."""
    model = _model([helper.make_node("Concat", ["X", "X"], ["Y"], axis=1, name="cat"),
                    helper.make_node("Concat", ["X", "X"], ["Z"], axis=0)],
                   [_info("X", [2, 3])], [_info("Y", [None, None]), _info("Z", [None, None])],
                   opset=3)
    model.ir_version = 3
    from dmlgraph.parity import known_divergences

    graph = load(model)
    found = {(d.node, d.node_id) for d in known_divergences(graph, lower(graph))}
    assert found == {("cat", 0), ("", 1)}
    from dmlgraph.parity import KnownDivergence

    unnamed = KnownDivergence("", "divergence: x", frozenset({1}), "Concat", 1)
    assert unnamed.named_in("Concat(1) node with name 'Concat_1'")
    assert not unnamed.named_in("Concat(1) node with name 'cat'")


def test_a_failure_at_each_of_two_divergent_nodes_prunes_both() -> None:
    """Two Concat-1s (onnxruntime has none), one named: the reference fails at one, then, on
    the graph pruned of its output, at the other; both outputs are known divergences."""
    model = _model([helper.make_node("Concat", ["X", "X"], ["Y"], axis=1, name="cat"),
                    helper.make_node("Concat", ["X", "X"], ["Z"], axis=0),
                    helper.make_node("Identity", ["X"], ["W"])],
                   [_info("X", [2, 3])],
                   [_info("Y", [None, None]), _info("Z", [None, None]), _info("W", [2, 3])],
                   opset=3)
    model.ir_version = 3
    report = check(model, inputs={"X": np.ones((2, 3), np.float32)})
    assert [o.verdict for o in report.comparisons[0].outputs] == [
        Verdict.PASS, Verdict.PASS, Verdict.PASS]
    assert _on_onnx_reference(report, "cat", "Concat_1")
    assert report.exit_code == 0


def test_the_reference_fallback_never_hands_back_the_callers_array() -> None:
    """onnx.reference's Dropout (inference) returns its input itself: the result must be a
    copy, or writing to it would write to the caller's feed."""
    model = _model([helper.make_node("Dropout", ["X"], ["Y"])], [_info("X", [3])],
                   [_info("Y", [3])])
    x = np.arange(3, dtype=np.float32)
    y = get_backend("numpy", fallback="reference").run(lower(load(model)), {"X": x})["Y"]
    assert not np.may_share_memory(x, y)
    y[:] = 7
    assert x.tolist() == [0, 1, 2]


# ----------------------------------------------------------------------------- report numbers
# The verdicts were right; the numbers shown with them were not (each case's own arithmetic).


def test_an_integer_outputs_error_is_exact_beyond_float64s_precision() -> None:
    from dmlgraph.parity import Tolerance, compare_output

    big = 2**62
    o = compare_output(
        "y", np.array([big + 1, 5], np.int64), np.array([big, 5], np.int64), Tolerance(0, 0)
    )
    assert (o.mismatches, o.max_abs_error) == (1, 1)  # through float64 it read 0.0
    lo, hi = np.iinfo(np.int64).min, np.iinfo(np.int64).max
    o = compare_output("y", np.array([lo]), np.array([hi]), Tolerance(0, 0))
    assert o.max_abs_error == 2**64 - 1  # the widest gap two int64s have, exact
    o = compare_output(
        "y", np.array([2**64 - 1], np.uint64), np.array([-1], np.int64), Tolerance(0, 0)
    )
    assert o.max_abs_error == 2**64 and o.mismatches == 1


def test_a_complex_outputs_imaginary_part_counts() -> None:
    from dmlgraph.parity import Tolerance, compare_output

    o = compare_output(
        "y", np.array([1 + 3j], np.complex64), np.array([1 + 0j], np.complex64),
        Tolerance(1e-5, 1e-5),
    )
    assert o.verdict is Verdict.FAIL and o.max_abs_error == 3.0 and o.mismatches == 1
    o = compare_output(
        "y", np.array([1 + np.nan * 1j], np.complex64), np.array([1 + 0j], np.complex64),
        Tolerance(1e-5, 1e-5),
    )
    assert (o.mismatches, o.nan_mismatches) == (1, 1)


def test_a_shape_mismatch_counts_no_elements_even_against_an_empty_output(capsys) -> None:
    from dmlgraph.cli import _cells
    from dmlgraph.parity import Tolerance, compare_output

    o = compare_output("y", np.zeros(2), np.zeros(0), Tolerance(1e-5, 1e-5))
    assert o.verdict is Verdict.FAIL and o.mismatches is None  # was "0/0": nothing failing
    assert "shapes differ" in _cells(o)


def test_signalling_nans_compare_without_a_warning() -> None:
    """Widening a signalling NaN to float64 printed "invalid value encountered in cast" on
    every check of such data; the verdict was right."""
    import warnings

    from dmlgraph.parity import Tolerance, compare_output

    snan = np.array([0x7F800001, 0x3F800000], np.uint32).view(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert compare_output("y", snan, snan.copy(), Tolerance(1e-5, 1e-5)).verdict is (
            Verdict.PASS)


@pytest.mark.parametrize("op", ["Pad", "Slice"])
def test_a_scalar_slice_or_pad_left_to_the_fallback_runs_as_the_identity(op: str) -> None:
    """A Slice or Pad of a scalar (empty parameters) is its input, ONNX says, and onnxruntime
    fails on it ("Cannot slice scalars", "data_rank > 0"). Where a level has no copy for its
    type (int8 at FL 1_0) it went to the fallback as it was, and the run failed in
    onnxruntime (a helper's sweep); it runs as an Identity now, and ``check`` names the
    divergence."""
    x = np.array(7, np.int8)
    node = (helper.make_node("Pad", ["X", "e"], ["Y"], name="n") if op == "Pad"
            else helper.make_node("Slice", ["X", "e", "e"], ["Y"], name="n"))
    model = _model([node], [helper.make_tensor_value_info("X", TensorProto.INT8, [])],
                   [helper.make_tensor_value_info("Y", TensorProto.INT8, None)],
                   [_ints("e", [])], opset=13)
    with pytest.raises(Exception, match="Cannot slice scalars|data_rank > 0"):
        _ort(model, {"X": x})
    lowered = lower(load(model), "1_0")
    (row,) = lowered.report()
    assert row.status.value == "fallback"
    assert [n.op_type for n in lowered.nodes] == ["Identity"]
    (y,) = get_backend("numpy").run(lowered, {"X": x}).values()
    assert y.dtype == np.int8 and y.shape == () and y == 7
    report = check(model, inputs={"X": x}, feature_level="1_0", cross_check=True)
    assert [o.verdict for o in report.comparisons[0].outputs] == [Verdict.PASS]
    assert _on_onnx_reference(report, "n")  # onnxruntime fails; onnx.reference computes it
    assert report.exit_code == 0


def test_onnxruntime_failing_downstream_of_a_divergence_is_that_divergence() -> None:
    """A Slice with a negative step and an end of INT64_MAX (ONNX: empty; onnxruntime: four
    elements) added to an empty input: valid by ONNX, and onnxruntime's Add fails on [4] +
    [0]. Its failure names the Add, not the Slice, and failed ``check`` (exit 2; a helper's
    sweep); a failure at a node a divergence reaches is that divergence's."""
    model = _model([helper.make_node("Slice", ["X", "s", "e", "a", "t"], ["S"], name="slice"),
                    helper.make_node("Add", ["S", "Z"], ["Y"], name="add")],
                   [_info("X", [5]), _info("Z", [0])], [_info("Y", None)],
                   [_ints("s", [3]), _ints("e", [2**63 - 1]), _ints("a", [0]), _ints("t", [-1])],
                   opset=13)
    feeds = {"X": np.arange(5, dtype=np.float32), "Z": np.zeros(0, np.float32)}
    with pytest.raises(Exception, match="Name:'add'"):
        _ort(model, feeds)
    (y,) = get_backend("numpy").run(lower(load(model)), feeds).values()
    assert y.shape == (0,)
    report = check(model, inputs=feeds)
    (output,) = report.comparisons[0].outputs
    assert output.verdict is Verdict.PASS and output.expected_shape == (0,)
    assert _on_onnx_reference(report, "slice")  # the Slice's divergence, not the Add
    assert report.exit_code == 0


def test_a_reflect_pad_of_single_elements_left_to_the_fallback_runs_in_edge_mode() -> None:
    """uint8 [6] cropped to one element and reflected by 3: the lowering pads it in EDGE
    mode (nothing to mirror), but FL 1_0 has no copy for uint8, and the fallback ran the
    reflect Pad, which onnxruntime refuses ("Pad reflect requires axis length >= 2 after
    slicing"; a helper's sweep). It runs as an edge Pad there now."""
    model = _model([helper.make_node("Pad", ["X", "p"], ["Y"], name="pad", mode="reflect")],
                   [_info("X", [6], TensorProto.UINT8)], [_info("Y", None, TensorProto.UINT8)],
                   [_ints("p", [3, -5])], opset=13)
    x = np.arange(6, dtype=np.uint8)
    with pytest.raises(Exception, match="reflect requires axis length >= 2"):
        _ort(model, {"X": x})
    lowered = lower(load(model), "1_0")
    (node,) = lowered.nodes
    assert node.op_type == "Pad" and node.op.attrs["mode"] == "edge"
    (y,) = get_backend("numpy").run(lowered, {"X": x}).values()
    assert y.tolist() == [0, 0, 0, 0]
    report = check(model, inputs={"X": x}, feature_level="1_0", cross_check=True)
    assert [o.verdict for o in report.comparisons[0].outputs] == [Verdict.KNOWN_DIVERGENCE]
    assert report.exit_code == 0


def test_a_dead_divergent_node_excuses_no_output() -> None:
    """A reflect Pad by its size (a divergence) that only a Slice to nothing reads is dropped
    as dead. Its note, kept for a while, was traced through the model's graph to the Concat
    the empty Slice joins, and excused a wrong value elsewhere in that output (a reviewer's
    reproducer: ``check`` passed it). A dead node's divergence reaches no output."""
    from dmlgraph.parity import known_divergences

    model = _model([helper.make_node("Pad", ["X", "p"], ["P"], name="pad", mode="reflect"),
                    helper.make_node("Slice", ["P", "s", "e"], ["S"], name="slice"),
                    helper.make_node("Concat", ["X", "S"], ["Y"], axis=0, name="cat")],
                   [_info("X", [3])], [_info("Y", None)],
                   [_ints("p", [3, 3]), _ints("s", [0]), _ints("e", [0])], opset=13)
    imported = load(model)
    lowered = lower(imported)
    (pad,) = [r for r in lowered.report() if r.name == "pad"]
    assert pad.status.value == "eliminated"
    assert not any(n.startswith("divergence:") for n in pad.notes)
    assert not [d for d in known_divergences(imported, lowered) if d.node == "pad"]


def _no_outputs(tmp_path: Path) -> Path:
    """A model whose graph declares no outputs: onnx's checker takes it, onnxruntime loads
    it and then refuses every run ("At least one output should be requested")."""
    model = _model([helper.make_node("Relu", ["X"], ["Y"])], [_info("X", [2, 3])], [])
    onnx.checker.check_model(model)
    path = tmp_path / "no_outputs.onnx"
    onnx.save(model, path)
    return path


def test_a_graph_without_outputs_runs_to_nothing_on_both_backends(tmp_path: Path) -> None:
    """Both backends give a graph that computes nothing no outputs; onnxruntime's backend
    failed on the lowered (empty) graph with a message about its initializers."""
    graph = load(_no_outputs(tmp_path))
    feeds = {"X": np.ones((2, 3), np.float32)}
    assert get_backend("numpy").run(lower(graph), feeds) == {}
    assert get_backend("onnxruntime").run(graph, feeds) == {}
    assert get_backend("onnxruntime").run(lower(graph), feeds) == {}


def test_check_refuses_a_graph_without_outputs(tmp_path: Path, capsys) -> None:
    """Nothing to compare is said as such (exit 2), not as onnxruntime's refusal to run."""
    path = _no_outputs(tmp_path)
    with pytest.raises(DmlgraphError, match="declares no outputs: there is nothing to compare"):
        check(path)
    assert main(["check", str(path)]) == 2
    err = capsys.readouterr().err
    assert "declares no outputs" in err and "onnxruntime" not in err
    assert main(["run", str(path), "--backend", "onnxruntime"]) == 0
    assert "the graph declares no outputs" in capsys.readouterr().out


def test_the_html_reports_needs_atol_rounded_up() -> None:
    """viz's parity table showed the tolerance that would pass rounded to the nearest 3
    digits too (0.00123 for 0.0012345), which given back failed."""
    from dmlgraph.viz.html import parity_sections

    model = _model([helper.make_node("Identity", ["X"], ["Y"])], [_info("X", [2])],
                   [_info("Y", [2])])
    x = np.array([1, 2], np.float32)
    wrong = np.array([1, 2.0012345678], np.float32)
    report = check(model, inputs={"X": x}, expected={"Y": wrong})
    needed = report.comparisons[1].outputs[0].required_atol
    assert needed == float(np.float64(wrong[1]) - 2)  # the oracle: the one error
    cells = dict(parity_sections(report)[1].rows[0].cells)
    assert float(cells["needs atol"]) >= needed
    assert check(model, inputs={"X": x}, expected={"Y": wrong},
                 atol=float(cells["needs atol"])).passed


def test_an_output_the_stored_file_lacks_is_said_to_be_left_out() -> None:
    """Stored outputs holding one of two outputs: the other was left out of their table
    with no word, a comparison that looked complete."""
    model = _model([helper.make_node("Identity", ["X"], ["A"]),
                    helper.make_node("Neg", ["X"], ["B"])],
                   [_info("X", [2])], [_info("A", [2]), _info("B", [2])])
    x = np.array([1, 2], np.float32)
    report = check(model, inputs={"X": x}, expected={"A": x})
    stored = report.comparisons[1]
    assert [o.name for o in stored.outputs] == ["A"] and report.passed
    assert "'B'" in stored.note and "'A'" not in stored.note
    assert report.comparisons[0].note == ""


def test_an_expected_mapping_naming_no_input_or_output_is_refused() -> None:
    """A misspelt output in ``expected=`` (a mapping) was ignored without a word, the
    comparison made on the others; a file holding that name is refused (tensorio.read)."""
    model = _model([helper.make_node("Identity", ["X"], ["A"]),
                    helper.make_node("Neg", ["X"], ["B"])],
                   [_info("X", [2])], [_info("A", [2]), _info("B", [2])])
    x = np.array([1, 2], np.float32)
    with pytest.raises(tensorio.TensorIOError,
                       match="'b' is neither a graph input nor a graph output"):
        check(model, inputs={"X": x}, expected={"A": x, "b": -x})


BUNDLE = Path(__file__).resolve().parent.parent / "models" / "reference_io.npz"


def test_an_expected_mapping_of_the_bundle_s_keys_says_the_keys_taken_and_how_to_map() -> None:
    """check(model, expected=dict(np.load("models/reference_io.npz"))) said its first key
    "is neither a graph input nor a graph output", with no word of the keys given nor of
    their MODEL__in<k> / MODEL__out<k> scheme (models/MANIFEST.md): it names the keys taken
    (the model's tensor names, read here from the file), those given, and the mapping."""
    path = BUNDLE.parent / "squeezenet1_1.onnx"
    proto = onnx.load(path, load_external_data=False)
    (x,), (y,) = [i.name for i in proto.graph.input], [o.name for o in proto.graph.output]
    bundle = dict(np.load(BUNDLE))
    with pytest.raises(tensorio.TensorIOError) as raised:
        check(path, expected=bundle)
    said = str(raised.value)
    assert "\n" not in said
    assert said.startswith("the expected arrays: holds none of the keys taken, the graph's "
                           f"tensor names (inputs [{x!r}]; outputs [{y!r}]); given: [")
    assert all(repr(key) in said for key in bundle)
    assert (f"map them, as {{{x!r}: d['squeezenet1_1__in0'], {y!r}: d['squeezenet1_1__out0']}}"
            in said)


def _negation() -> tuple[onnx.ModelProto, np.ndarray]:
    model = _model([helper.make_node("Neg", ["X"], ["Y"])], [_info("X", [2, 3])],
                   [_info("Y", [2, 3])])
    return model, np.arange(6, dtype=np.float32).reshape(2, 3) - 2


def test_bundle_keys_in_a_mapping_say_how_to_map_them_and_the_mapping_checks(
    tmp_path: Path
) -> None:
    """A bundle of the MODEL__in<k> / MODEL__out<k> scheme for a model m.onnx: its keys in
    ``expected=`` (one beside a tensor name) or in ``inputs=`` are refused naming the keys
    taken and given and the mapping; that mapping checks, as does the .npz's path."""
    model, x = _negation()
    path, bundle = tmp_path / "m.onnx", tmp_path / "bundle.npz"
    onnx.save(model, path)
    np.savez(bundle, m__in0=x, m__out0=-x)
    d = dict(np.load(bundle))
    with pytest.raises(tensorio.TensorIOError, match=re.escape(
            "'m__in0' is neither a graph input nor a graph output (the keys taken are the "
            "graph's tensor names: inputs ['X']; outputs ['Y']); given: ['Y', 'm__in0']; keys "
            "MODEL__in<k> / MODEL__out<k> (models ['m'], as models/reference_io.npz holds "
            "them) name graph input / output k of model MODEL by position, which a mapping of "
            "tensor names does not read: map them, as {'X': d['m__in0'], 'Y': d['m__out0']}")):
        check(path, expected={"Y": d["m__out0"], "m__in0": d["m__in0"]})
    with pytest.raises(BackendError, match=re.escape(
            "unknown ['m__in0']; keys MODEL__in<k> / MODEL__out<k> (models ['m'], as "
            "models/reference_io.npz holds them) name graph input / output k of model MODEL "
            "by position, which a mapping of tensor names does not read: map them, as "
            "{'X': d['m__in0']}")):
        check(path, inputs={"m__in0": d["m__in0"]})
    for report in (check(path, inputs={"X": d["m__in0"]}, expected={"Y": d["m__out0"]}),
                   check(path, inputs=bundle, expected=bundle)):
        assert report.exit_code == 0 and len(report.comparisons) == 2
        assert all(c.passed for c in report.comparisons)


@pytest.mark.parametrize("given, said", [
    (None, "holds NoneType None at []"),
    (np.array([1.0, None], object), "holds float 1.0 at [0]"),
    ({"a": 1}, "holds dict {'a': 1} at []"),
])
def test_an_expected_value_no_tensor_holds_is_refused(given, said) -> None:
    """``expected={"A": None}`` was read as a STRING output of shape [] and compared: the
    report said A failed, its dtype "string" and shape [] unlike [2], not that None is no
    array. An object array holding anything but str is refused as a STRING input is."""
    model = _model([helper.make_node("Identity", ["X"], ["A"])], [_info("X", [2])],
                   [_info("A", [2])])
    x = np.array([1, 2], np.float32)
    with pytest.raises(tensorio.TensorIOError, match=re.escape(
            f"output 'A' {said}, where a STRING tensor holds only str")):
        check(model, inputs={"X": x}, expected={"A": given})


def test_check_passes_nan_payloads_onnxruntime_rewrites_and_lowering_keeps() -> None:
    """onnxruntime's float16 Pad rewrites NaNs, as its CPU converts them (docs/LOWERING.md:
    0x7d01 -> 0x7f01 on one machine, 0x7e00 on an AVX-512 Xeon); DirectML moves bits, and so does
    the lowering. ``check`` compares NaN with NaN whatever the payload (parity's documented rule):
    the outputs differ in bits and pass, with no mismatch, and no divergence is claimed for it.
    Oracles: onnxruntime's own bits, and the model's bits moved by NumPy."""
    bits = np.array([0x7D01, 0x8000, 0xFC03, 0x0001], np.uint16)
    x = bits.view(np.float16).reshape(1, 4)
    fill = np.array(0x7C01, np.uint16).view(np.float16).reshape(())
    model = _model([helper.make_node("Pad", ["X", "pads", "v"], ["Y"], mode="constant")],
                   [_info("X", [1, 4], TensorProto.FLOAT16)],
                   [_info("Y", [1, 6], TensorProto.FLOAT16)],
                   [_ints("pads", [0, 1, 0, 1]), numpy_helper.from_array(fill, "v")])
    theirs = _ort(model, {"X": x})[0]
    ours = get_backend("numpy").run(lower(load(model), "6_4"), {"X": x})["Y"]
    assert ours.view(np.uint16).tolist() == [[0x7C01, *bits.tolist(), 0x7C01]]
    nan = np.isnan(ours)
    assert (np.isnan(theirs) == nan).all()
    assert (theirs.view(np.uint16)[~nan] == ours.view(np.uint16)[~nan]).all()
    assert (theirs.view(np.uint16)[nan] != ours.view(np.uint16)[nan]).all()
    report = check(model, inputs={"X": x})
    (against_ort,) = [c for c in report.comparisons if c.outputs]
    (y,) = against_ort.outputs
    assert report.passed and y.verdict is Verdict.PASS and y.mismatches == 0
    assert y.nan_mismatches == 0 and not y.divergences
