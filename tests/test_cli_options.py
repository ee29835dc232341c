"""The command line at the edges a new user's walkthrough found: options that do nothing with
the others given, outputs that would overwrite what the command reads, stored inputs and
outputs that belong together, tolerances for outputs that do not exist, pipes that close
early, and the wording of a failure."""

from __future__ import annotations

import hashlib
import io
import json
import os
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
from dmlgraph.cli import main
from dmlgraph.errors import ModelValidationError
from lowering import lower

MODELS = Path(__file__).parent.parent / "models"
SEED = MODELS / "seeds" / "padding_edge.onnx"
SEED_IO = MODELS / "seeds" / "seed_io.npz"
SQUEEZENET = MODELS / "squeezenet1_1.onnx"
REFERENCE = MODELS / "reference_io.npz"


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _one_line_error(capsys: pytest.CaptureFixture[str], *fragments: str) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    for fragment in fragments:
        assert fragment in err, err
    return err


def _model(tmp_path: Path, name: str = "m.onnx") -> Path:
    """x[2, 3] -> Pad (edge, 1 each side of axis 1) -> y."""
    graph = helper.make_graph(
        [helper.make_node("Pad", ["x", "p"], ["y"], mode="edge", name="pad")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 5])],
        [numpy_helper.from_array(np.array([0, 1, 0, 1], np.int64), "p")])
    path = tmp_path / name
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                                ir_version=8), path)
    return path


@pytest.mark.parametrize("seed", ["-1", "1_0"])  # int("1_0") is 10
@pytest.mark.parametrize("command", ["run", "check", "viz"])
def test_a_negative_seed_is_a_usage_error(command, seed, tmp_path, capsys) -> None:
    args = [command, str(SEED), "--seed", seed] + (["-o", str(tmp_path / "v.html")]
                                                   if command == "viz" else [])
    with pytest.raises(SystemExit) as info:
        main(args)
    assert info.value.code == 2
    _one_line_error(capsys, "--seed", f"{seed!r} is not an integer >= 0")


@pytest.mark.parametrize("args, help_of", [
    (["viz", str(SEED), "-o", "v.html", "--atol", "1"], "dmlgraph viz"),  # check's option
    (["lower", str(SEED), "extra"], "dmlgraph lower"),
    (["--bogus", "inspect", str(SEED)], "dmlgraph"),  # before the command: the top's own
])
def test_an_unknown_argument_points_at_the_help_that_lists_the_options(args, help_of,
                                                                       capsys) -> None:
    """It said "see dmlgraph --help", whose help lists no command's options."""
    with pytest.raises(SystemExit) as info:
        main(args)
    assert info.value.code == 2
    _one_line_error(capsys, f"{help_of}: error: unrecognized arguments: ",
                    f"; see {help_of} --help")


def test_a_negative_seed_through_the_api_is_a_dmlgraph_error() -> None:
    with pytest.raises(dmlgraph.DmlgraphError, match="a seed is an integer >= 0"):
        dmlgraph.check(SEED, seed=-1)


@pytest.mark.parametrize("make_args, fragment", [
    (lambda m, d: ["lower", str(m), "-o", str(m)], "lower writes JSON"),
    (lambda m, d: ["lower", str(m), "-o", str(d / "out.txt")], "name the output *.json"),
    (lambda m, d: ["run", str(m), "--inputs", str(d / "in.npz"), "-o", str(d / "in.npz")],
     "in.npz: this command reads it; write the output elsewhere"),
    (lambda m, d: ["run", str(m), "-o", str(m)], ".onnx: this command reads it"),
    (lambda m, d: ["viz", str(m), "-o", str(m)], ".onnx: this command reads it"),
])
def test_no_output_overwrites_what_the_command_reads(make_args, fragment, tmp_path,
                                                     capsys) -> None:
    model = _model(tmp_path)
    np.savez(tmp_path / "in.npz", x=np.ones((2, 3), np.float32))
    before = {p.name: _digest(p) for p in tmp_path.iterdir()}
    assert main(make_args(model, tmp_path)) == 2
    _one_line_error(capsys, fragment)
    assert {p.name: _digest(p) for p in tmp_path.iterdir()} == before


def test_run_refuses_a_folder_that_already_holds_test_data(tmp_path, capsys) -> None:
    folder = tmp_path / "td"
    assert main(["run", str(MODELS / "seeds" / "join_example2.onnx"), "--inputs", str(SEED_IO),
                 "-o", str(folder)]) == 0
    held = {p.name: _digest(p) for p in folder.iterdir()}
    assert main(["run", str(_model(tmp_path)), "-o", str(folder)]) == 2
    _one_line_error(capsys, "holds test data this model does not write", "input_1.pb")
    assert {p.name: _digest(p) for p in folder.iterdir()} == held
    # the same model again replaces every file it wrote: nothing stale stays
    assert main(["run", str(MODELS / "seeds" / "join_example2.onnx"), "--inputs", str(SEED_IO),
                 "-o", str(folder)]) == 0
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["run", str(_model(tmp_path)), "-o", str(empty)]) == 0


@pytest.mark.parametrize("args, fragment", [
    (["lower", "{m}", "--format", "dxdispatch", "--json", "-o", "{d}/x.json"],
     "--json prints the lowering report"),
    (["lower", "{m}", "--format", "dxdispatch", "--all", "-o", "{d}/x.json"], "--all lists"),
    (["lower", "{m}", "--json", "--all"], "--all lists every node in the printed table; --json"),
    (["lower", "{m}", "--inputs", "{d}/nowhere.npz"], "--inputs gives a DxDispatch model"),
    (["viz", "{m}", "--inputs", "{d}/nowhere.npz", "-o", "{d}/v.html"], "add --check"),
    (["viz", "{m}", "--check", "-o", "{d}/v.dot"], "--check shows its results in the HTML"),
    (["run", "{m}", "--lowered"], "--lowered is for --backend onnxruntime"),
    (["run", "{m}", "--backend", "onnxruntime", "--fallback", "reference"],
     "--fallback is for --backend numpy"),
    (["run", "{m}", "--fallback", "reference", "--provider", "CPU"], "--provider chooses"),
    (["run", "{m}", "--seed", "3", "--inputs", "{d}/nowhere.npz"], "--seed draws generated"),
    (["check", "{m}", "--seed", "3", "--inputs", "{d}/nowhere.npz"], "--seed draws generated"),
    (["check", "{m}", "--seed", "3", "--expected", "{d}/nowhere.npz"],
     "--seed draws generated inputs; it does nothing with --expected"),
    (["viz", "{m}", "--seed", "3", "-o", "{d}/v.html"], "--seed gives the inputs of --check"),
    (["viz", "{m}", "--fallback", "reference", "-o", "{d}/v.html"],
     "--fallback chooses an engine of --check; add --check"),
    (["viz", "{m}", "--provider", "CPU", "-o", "{d}/v.html"],
     "--provider chooses an engine of --check; add --check"),
    (["viz", "{m}", "--check", "--seed", "3", "--inputs", "{d}/nowhere.npz", "-o", "{d}/v.html"],
     "--seed draws generated"),
])
def test_options_that_would_do_nothing_are_errors(args, fragment, tmp_path, capsys) -> None:
    model = _model(tmp_path)
    argv = [a.format(m=model, d=tmp_path) for a in args]
    assert main(argv) == 2
    _one_line_error(capsys, fragment)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.onnx"]  # nothing written


def test_viz_check_takes_the_engines_check_takes(tmp_path, capsys) -> None:
    """README lists --fallback and --provider for ``viz --check`` as for ``check``: viz
    refused both ("unrecognized arguments"). They reach the check viz runs."""
    page = tmp_path / "v.html"
    assert main(["viz", str(SEED), "--check", "--fallback", "reference", "-o", str(page)]) == 0
    assert "fallback onnx.reference)" in page.read_text()  # the comparison's own label
    assert main(["viz", str(SEED), "--check", "--provider", "Nope", "-o", str(page)]) == 2
    _one_line_error(capsys, "provider(s) ['Nope'] not available")


def test_check_expected_alone_runs_the_inputs_stored_with_the_outputs(capsys) -> None:
    """reference_io.npz holds squeezenet's input and output (MODEL__in0 / __out0 keys): the
    stored output is onnxruntime's for that input, not for generated ones."""
    assert main(["check", str(SQUEEZENET), "--expected", str(REFERENCE)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "the inputs stored with the expected outputs" in out and "parity holds" in out


def test_check_expected_without_inputs_in_it_is_refused(tmp_path, capsys) -> None:
    model = _model(tmp_path)
    np.savez(tmp_path / "out.npz", y=np.zeros((2, 5), np.float32))
    assert main(["check", str(model), "--expected", str(tmp_path / "out.npz")]) == 2
    _one_line_error(capsys, "holds no value for graph input(s) ['x']", "--inputs")


def test_check_expected_of_other_inputs_is_refused(tmp_path, capsys) -> None:
    model = _model(tmp_path)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.savez(tmp_path / "in.npz", x=x)
    np.savez(tmp_path / "expected.npz", x=x + 1, y=np.pad(x + 1, ((0, 0), (1, 1)), "edge"))
    args = ["check", str(model), "--inputs", str(tmp_path / "in.npz"), "--expected",
            str(tmp_path / "expected.npz")]
    assert main(args) == 2
    _one_line_error(capsys, "holds input 'x' unlike the one given")
    np.savez(tmp_path / "expected.npz", x=x, y=np.pad(x, ((0, 0), (1, 1)), "edge"))
    assert main(args) == 0


@pytest.mark.parametrize("flag", ["--atol", "--rtol"])
def test_a_tolerance_for_no_output_is_an_error(flag, tmp_path, capsys) -> None:
    assert main(["check", str(_model(tmp_path)), flag, "nosuch:1e-3"]) == 2
    _one_line_error(capsys, "'nosuch': the graph has no output of that name", "['y']")
    assert main(["check", str(_model(tmp_path)), flag, "y:1e-3"]) == 0


@pytest.mark.parametrize("flag", ["--atol", "--rtol"])
def test_a_tolerance_with_an_empty_name_is_a_usage_error(flag, capsys) -> None:
    """":1" was taken for every output's tolerance, as "1" is."""
    with pytest.raises(SystemExit) as info:
        main(["check", str(SEED), flag, ":1"])
    assert info.value.code == 2
    _one_line_error(capsys, flag, "':1' names no output before ':'")


@pytest.mark.parametrize("kind", ["atol", "rtol"])
@pytest.mark.parametrize("value", [-1.0, float("inf"), float("nan"), {"": float("inf")}])
def test_a_negative_or_non_finite_tolerance_through_the_api_is_a_dmlgraph_error(
    kind, value
) -> None:
    """An infinite tolerance passed every float element: a "parity holds" saying nothing."""
    with pytest.raises(dmlgraph.DmlgraphError, match=f"^{kind} .*a tolerance is a finite number"):
        dmlgraph.check(SEED, **{kind: value})


@pytest.mark.parametrize("flag", ["--atol", "--rtol"])
@pytest.mark.parametrize("value", ["inf", "1e400", "y:Infinity", "nan", "-1"])
def test_a_negative_or_non_finite_tolerance_is_a_usage_error(flag, value, capsys) -> None:
    """--atol inf and --atol 1e400 (a double's overflow) made every float output pass."""
    with pytest.raises(SystemExit) as info:
        main(["check", str(SEED), flag, value])
    assert info.value.code == 2
    _one_line_error(capsys, flag, repr(value), "a tolerance is a finite number >= 0")


class _ClosedPipe(io.StringIO):
    """stdout whose reader has gone (``| head``): every write and flush fails."""

    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")

    def flush(self) -> None:
        raise BrokenPipeError(32, "Broken pipe")

    def fileno(self) -> int:
        raise io.UnsupportedOperation("no file descriptor")


def test_a_closed_pipe_after_an_error_keeps_exit_code_2(tmp_path, monkeypatch, capsys) -> None:
    """A command that printed, then failed: Python's own flush at exit met the closed pipe
    (exit 120 and an "Exception ignored" message)."""
    model = json.loads((MODELS / "dxdispatch" / "example_join.json").read_text())
    model["commands"].append({"type": "bogus"})
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(model))
    monkeypatch.setattr("sys.stdout", _ClosedPipe())
    assert main(["dxdispatch", str(path)]) == 2
    _one_line_error(capsys, 'unknown command type "bogus"')


@pytest.mark.parametrize("ok", [True, False])
def test_a_real_closed_pipe_ends_with_the_commands_exit_code(ok, tmp_path) -> None:
    """Through a real pipe whose reader has gone, as ``| head`` leaves it: the process's
    exit code and stderr, including what Python does at exit."""
    model = json.loads((MODELS / "dxdispatch" / "example_join.json").read_text())
    if not ok:
        model["commands"].append({"type": "bogus"})
    path = tmp_path / "m.json"
    path.write_text(json.dumps(model))
    reader, writer = os.pipe()
    os.close(reader)  # gone before the command writes
    try:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # buffered
        done = subprocess.run([sys.executable, "-m", "dmlgraph.cli", "dxdispatch", str(path)],
                              stdout=writer, stderr=subprocess.PIPE, text=True, timeout=120,
                              env=env)
    finally:
        os.close(writer)
    assert done.returncode == (0 if ok else 2), done.stderr
    assert done.stderr.count("\n") == (0 if ok else 1) and "Exception" not in done.stderr


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_FSIZE as on Linux")
def test_output_that_cannot_be_written_is_one_error_line(tmp_path) -> None:
    """A file size limit (or a full disk) met when the buffered output is flushed at the end:
    one line and exit 2, not a traceback from the flush."""
    import resource

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (3, 3))

    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # buffered
    with open(tmp_path / "out.txt", "w") as out:
        done = subprocess.run([sys.executable, "-m", "dmlgraph.cli", "inspect", str(SEED)],
                              stdout=out, stderr=subprocess.PIPE, text=True, timeout=120,
                              preexec_fn=limit, env=env)
    assert done.returncode == 2
    assert done.stderr == "dmlgraph: error: cannot write the output: File too large\n"


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("command", [["lower"], ["lower", "--json"], ["check"], ["inspect"]])
def test_a_full_disk_met_while_printing_says_what_it_could_not_write(command) -> None:
    """stdout on a full disk (/dev/full) failed inside the command, whose error line was a
    bare "No space left on device", naming nothing (found by a new user's walkthrough); it
    now says what the end's flush says."""
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "dmlgraph.cli", command[0], str(SEED),
                               *command[1:]], stdout=full, stderr=subprocess.PIPE, text=True,
                              timeout=120)
    assert done.returncode == 2
    assert done.stderr == "dmlgraph: error: cannot write the output: No space left on device\n"


def test_no_stdout_at_all_is_not_an_error(monkeypatch) -> None:
    """fd 1 closed (``>&-``): sys.stdout is None and print() writes nowhere."""
    monkeypatch.setattr("sys.stdout", None)
    assert main(["inspect", str(SEED)]) == 0


@pytest.mark.parametrize("args, code", [
    (["lower", str(SQUEEZENET), "--json"], 0),
    (["lower", str(SQUEEZENET), "--all"], 0),
    (["check", str(SEED), "--json"], 0),
])
def test_a_closed_pipe_ends_quietly_with_the_commands_own_exit_code(args, code, monkeypatch,
                                                                     capsys) -> None:
    monkeypatch.setattr("sys.stdout", _ClosedPipe())
    assert main(args) == code
    assert capsys.readouterr().err == ""


def test_a_mismatch_is_worded_as_what_it_is(tmp_path, capsys) -> None:
    model = _model(tmp_path)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    wrong = np.pad(x, ((0, 0), (1, 1)), "edge")
    wrong[0, 0] = np.nan
    wrong[1, 1] += 1
    np.savez(tmp_path / "in.npz", x=x)
    np.savez(tmp_path / "expected.npz", y=wrong)
    assert main(["check", str(model), "--inputs", str(tmp_path / "in.npz"), "--expected",
                 str(tmp_path / "expected.npz")]) == 1
    out = capsys.readouterr().out
    assert ("2 of 10 elements exceed both atol=1e-05 and rtol=1e-05 or are NaN against a "
            "number (1)") in out


def _pad_file(path: Path, elem: int, mode: str, shape: list[int], pads: list[int]) -> Path:
    """A one-Pad model (opset 17: pads an input, x -> y, node 'pad') saved at ``path``."""
    rank = len(shape)
    out = [n + pads[a] + pads[a + rank] for a, n in enumerate(shape)]
    graph = helper.make_graph(
        [helper.make_node("Pad", ["x", "p"], ["y"], mode=mode, name="pad")], "g",
        [helper.make_tensor_value_info("x", elem, shape)],
        [helper.make_tensor_value_info("y", elem, out)],
        [numpy_helper.from_array(np.array(pads, np.int64), "p")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                                ir_version=8), path)
    return path


def test_a_check_that_compares_nothing_does_not_say_parity_holds(tmp_path, capsys) -> None:
    """onnxruntime refuses a reflect pad of the dimension's size or more (a documented
    divergence); with no output compared, check says so instead of "parity holds"."""
    path = _pad_file(tmp_path / "big.onnx", TensorProto.FLOAT, "reflect", [1, 3], [0, 4, 0, 4])
    assert main(["check", str(path)]) == 0
    out = capsys.readouterr().out
    assert "nothing compared" in out and "parity holds" not in out


def test_a_type_no_schema_allows_is_refused_at_load() -> None:
    """Reciprocal of int16: onnxruntime refuses the model; the reference fallback used to
    run it into zeros with NumPy warnings."""
    graph = helper.make_graph(
        [helper.make_node("Reciprocal", ["x"], ["y"], name="r")], "g",
        [helper.make_tensor_value_info("x", TensorProto.INT16, [3])],
        [helper.make_tensor_value_info("y", TensorProto.INT16, [3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    with pytest.raises(ModelValidationError,
                       match=r"node 'r' \(Reciprocal, #0\): input 0 \(X\) is tensor\(int16\); "
                             r"Reciprocal-13 takes tensor\(bfloat16\), tensor\(double\)"):
        dmlgraph.load(model)


def test_dxdispatch_export_of_ops_dmlgraph_never_lowers_says_so(tmp_path, capsys) -> None:
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])])
    path = tmp_path / "relu.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                                ir_version=8), path)
    assert main(["lower", str(path), "--format", "dxdispatch", "-o", str(tmp_path / "x.json")]) == 2
    err = _one_line_error(capsys, "dmlgraph lowers only Slice, Concat and Pad")
    assert "higher feature level" not in err


def test_provider_short_names(capsys) -> None:
    assert main(["run", str(SEED), "--backend", "onnxruntime", "--provider", "CPU"]) == 0
    assert "CPUExecutionProvider" in capsys.readouterr().out


def test_a_constant_1_of_integers_is_accepted_as_onnxruntime_runs_it() -> None:
    """Constant-1's schema allows floats only, but onnxruntime makes Constant nodes
    initializers before it checks types: a Concat-4 of an int64 Constant runs there. Another
    node's type error behind it is still found."""
    constant = helper.make_node("Constant", [], ["c"],
                                value=numpy_helper.from_array(np.array([[1, 2]], np.int64)))
    concat = helper.make_node("Concat", ["x", "c"], ["y"], axis=0, name="cat")
    graph = helper.make_graph(
        [constant, concat], "g", [helper.make_tensor_value_info("x", TensorProto.INT64, [1, 2])],
        [helper.make_tensor_value_info("y", TensorProto.INT64, [2, 2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 8)], ir_version=3)
    report = dmlgraph.check(model, inputs={"x": np.array([[3, 4]], np.int64)})
    assert report.passed and report.compared == 1
    model.graph.node.append(helper.make_node("Reciprocal", ["w"], ["z"], name="r"))
    model.graph.input.append(helper.make_tensor_value_info("w", TensorProto.INT16, [3]))
    model.graph.output.append(helper.make_tensor_value_info("z", TensorProto.INT16, [3]))
    with pytest.raises(ModelValidationError, match=r"\(Reciprocal, #2\): input 0 \(X\)"):
        dmlgraph.load(model)


@pytest.mark.parametrize("opset, node, out_type", [
    (9, helper.make_node("Cast", ["x"], ["y"], to=TensorProto.BFLOAT16), TensorProto.BFLOAT16),
    (11, helper.make_node("Cast", ["x"], ["y"], to=TensorProto.FLOAT8E4M3FN),
     TensorProto.FLOAT8E4M3FN),
])
def test_an_output_typed_by_an_attribute_outside_the_schemas_list_is_accepted(
    opset, node, out_type
) -> None:
    """Cast-9 lists no bfloat16 output, but onnxruntime checks inputs only and runs it;
    onnx's check_type refused it. Oracle: the same cast by NumPy (ml_dtypes)."""
    import ml_dtypes

    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
        [helper.make_tensor_value_info("y", out_type, [3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              ir_version=8)
    x = np.array([1.5, -2.0, 3.25], np.float32)
    y = get_backend("numpy").run(lower(dmlgraph.load(model)), {"x": x})["y"]
    dtype = ml_dtypes.bfloat16 if out_type == TensorProto.BFLOAT16 else ml_dtypes.float8_e4m3fn
    assert y.tobytes() == x.astype(dtype).tobytes()


def test_inputs_of_one_type_parameter_in_two_types_are_refused() -> None:
    graph = helper.make_graph(
        [helper.make_node("Add", ["a", "b"], ["c"], name="add")], "g",
        [helper.make_tensor_value_info("a", TensorProto.INT32, [2]),
         helper.make_tensor_value_info("b", TensorProto.INT64, [2])],
        [helper.make_tensor_value_info("c", TensorProto.INT64, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    with pytest.raises(ModelValidationError,
                       match=r"input 1 \(B\) is tensor\(int64\) and input 0 tensor\(int32\)"):
        dmlgraph.load(model)


def _refused_by_both(model: onnx.ModelProto, fragment: str) -> None:
    """onnxruntime (the oracle) refuses the model at load, and so does dmlgraph."""
    import onnxruntime as ort

    with pytest.raises(Exception):  # noqa: B017  (onnxruntime's own exception types)
        ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    with pytest.raises(ModelValidationError, match=fragment):
        dmlgraph.load(model)


def test_an_int32_shape_read_as_data_is_refused() -> None:
    """onnx's check_type missed it (its inference failed to read the int32 shape first)."""
    graph = helper.make_graph(
        [helper.make_node("Reshape", ["x", "s"], ["y"], name="reshape")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.array([3, 2], np.int32), "s")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    _refused_by_both(model, r"\(Reshape, #0\): input 1 \(shape\) is tensor\(int32\)")


@pytest.mark.parametrize("where", ["output", "value_info"])
def test_a_declared_type_the_node_does_not_make_is_refused(where) -> None:
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="relu")]
    outputs = [helper.make_tensor_value_info("a", TensorProto.INT32, [3])]
    if where == "value_info":
        nodes.append(helper.make_node("Neg", ["a"], ["y"], name="neg"))
        outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])]
    graph = helper.make_graph(nodes, "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
                              outputs)
    if where == "value_info":
        graph.value_info.append(helper.make_tensor_value_info("a", TensorProto.INT32, [3]))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    _refused_by_both(model, r"declares 'a' INT32, but the node makes float32")


@pytest.mark.parametrize("case", ["shape", "topk", "split", "elem0"])
def test_graph_output_types_onnxruntime_refuses_are_refused(case) -> None:
    """A type a single-type parameter fixes (Shape's int64, TopK's indices), each output of
    a variadic one (Split), and element type 0."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])
    if case == "shape":
        nodes = [helper.make_node("Shape", ["x"], ["y"])]
        outputs = [helper.make_tensor_value_info("y", TensorProto.INT32, [1])]
        fragment = r"declares 'y' INT32, but the node makes int64"
    elif case == "topk":
        nodes = [helper.make_node("TopK", ["x", "k"], ["v", "i"])]
        outputs = [helper.make_tensor_value_info("v", TensorProto.FLOAT, [2]),
                   helper.make_tensor_value_info("i", TensorProto.INT32, [2])]
        fragment = r"declares 'i' INT32, but the node makes int64"
    elif case == "split":
        nodes = [helper.make_node("Split", ["x"], ["a", "b"], axis=0)]
        outputs = [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2]),
                   helper.make_tensor_value_info("b", TensorProto.DOUBLE, [2])]
        fragment = r"declares 'b' DOUBLE, but the node makes float32"
    else:
        nodes = [helper.make_node("Relu", ["x"], ["y"])]
        outputs = [helper.make_tensor_value_info("y", TensorProto.UNDEFINED, [4])]
        fragment = r"graph output 'y' is a tensor of element type 0"
    graph = helper.make_graph(nodes, "g", [x], outputs,
                              [numpy_helper.from_array(np.array([2], np.int64), "k")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    _refused_by_both(model, fragment)


def _untyped_output_model(case: str) -> onnx.ModelProto:
    """A graph output "y" declared by name alone (a ValueInfoProto without ``type``)."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = onnx.ValueInfoProto(name="y")
    opsets = [helper.make_opsetid("", 13)]
    if case == "slice":  # inference types it: float32 [2, 2]
        node = helper.make_node("Slice", ["x", "starts", "ends", "axes"], ["y"], name="s")
    else:  # onnx infers nothing for Scaler; onnxruntime has its own inference
        node = helper.make_node("Scaler", ["x"], ["y"], name="s", domain="ai.onnx.ml",
                                scale=[2.0, 3.0, 4.0], offset=[0.5, 0.0, -1.0])
        opsets.append(helper.make_opsetid("ai.onnx.ml", 1))
    constants = [numpy_helper.from_array(np.array([v], np.int64), n)
                 for n, v in (("starts", 1), ("ends", 3), ("axes", 1))]
    graph = helper.make_graph([node], "g", [x], [y], constants if case == "slice" else [])
    return helper.make_model(graph, opset_imports=opsets, ir_version=10)


@pytest.mark.parametrize("case", ["slice", "scaler"])
def test_a_graph_output_without_a_type_runs_as_onnxruntime_runs_it(case, tmp_path, capsys):
    """onnxruntime (the oracle) runs a model whose graph output has no type, taking the one
    inference gives; the ONNX checker refused it ("Field 'type' of 'value_info' is required
    but missing"), naming no tensor. The import takes inference's type, or, where onnx infers
    none (Scaler), leaves it to the run, as for any tensor inference leaves untyped."""
    import onnxruntime as ort

    model = _untyped_output_model(case)
    x = np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (expected,) = session.run(None, {"x": x})
    graph = dmlgraph.load(model)
    info = graph.tensors["y"]
    if case == "slice":
        assert (info.dtype, info.shape) == (np.dtype(np.float32), (2, 2))
    assert not model.graph.output[0].HasField("type")  # the model given is left as it was
    (got,) = get_backend("numpy").run(lower(graph), {"x": x}).values()
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    assert main(["check", str(path)]) == 0
    assert "parity holds" in capsys.readouterr().out


def test_node_names_onnxruntime_requires_unique_are_refused() -> None:
    """Two Relus named "n": onnxruntime refuses the model ("two nodes with same node name"),
    so its DirectML provider never lowers it, and neither does dmlgraph."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="n"),
             helper.make_node("Relu", ["a"], ["y"], name="n")]
    graph = helper.make_graph(nodes, "g", [x], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    _refused_by_both(model, r"node 'n' \(Relu, #1\): node #0 has the same name")


@pytest.mark.parametrize("names", [("", ""), ("c", "c")])
def test_node_names_onnxruntime_lets_repeat_are_accepted(names: tuple[str, str]) -> None:
    """Unnamed nodes, and a Constant named as another node (onnxruntime makes Constants
    initializers before it looks): onnxruntime (the oracle) runs both."""
    import onnxruntime as ort

    value = numpy_helper.from_array(np.array([1, 2], np.float32), "v")
    nodes = [helper.make_node("Constant", [], ["k"], name=names[0], value=value),
             helper.make_node("Add", ["x", "k"], ["y"], name=names[1])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    x = np.array([3, 4], np.float32)
    (want,) = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"]).run(None, {"x": x})
    got = get_backend("numpy").run(lower(dmlgraph.load(model), "6_4"), {"x": x})["y"]
    assert np.array_equal(got, want)


@pytest.mark.parametrize("listed", ["x", "k", "c"])
def test_an_input_or_initializer_listed_as_an_output_of_element_type_0_runs(listed: str) -> None:
    """Element type 0 is refused on what a node makes (above); on a graph input, an
    initializer or a Constant's output (onnxruntime makes Constants initializers first)
    listed as an output, onnxruntime (the oracle) runs the model, typed by the tensor
    itself."""
    import onnxruntime as ort

    untyped = onnx.ValueInfoProto(name=listed)
    untyped.type.tensor_type.elem_type = TensorProto.UNDEFINED
    value = numpy_helper.from_array(np.array([5, 6], np.float32), "v")
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "k"], ["y"]),
         helper.make_node("Constant", [], ["c"], value=value)], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2]), untyped],
        [numpy_helper.from_array(np.array([1, 2], np.float32), "k")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    x = np.array([3, 4], np.float32)
    want = ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, {"x": x})
    got = get_backend("numpy").run(lower(dmlgraph.load(model), "6_4"), {"x": x})
    assert all(np.array_equal(got[name], w) for name, w in zip(["y", listed], want))


def test_dropout_7s_float_mask_is_accepted() -> None:
    """Dropout-7's mask is its input's type (T), not bool as from Dropout-12."""
    graph = helper.make_graph(
        [helper.make_node("Dropout", ["x"], ["y", "mask"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("mask", TensorProto.FLOAT, [4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 7)], ir_version=8)
    assert [n.op_type for n in dmlgraph.load(model).nodes] == ["Dropout"]


# ----------------------------------------------------------------------------- unwritable
@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
@pytest.mark.parametrize("command, name", [("lower", "x.json"), ("run", "x.npz"),
                                           ("viz", "x.html")])
def test_an_output_in_a_folder_nothing_can_be_made_in_is_refused_first(
    command, name, tmp_path, capsys
) -> None:
    """/proc takes no new file, even from root: refused before the work (``run`` printed its
    outputs first), as one line naming the path and why (``lower`` printed "[Errno 2] ...";
    then "No such file or directory", of a folder that is there)."""
    assert main([command, str(_model(tmp_path)), "-o", f"/proc/{name}"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1 and (
        f"/proc/{name}: cannot write in '/proc': it takes no new files\n") in captured.err


@pytest.mark.parametrize("command, name", [("lower", "x.json"), ("run", "x.npz"),
                                           ("viz", "x.html"), ("dxdispatch", "x.npz")])
def test_a_read_only_output_file_is_refused_first(
    command, name, monkeypatch, tmp_path, capsys
) -> None:
    """A read-only file to write over: refused before the work, as "cannot write" with the
    fix, and left as it was. ``run`` and ``dxdispatch`` printed their outputs first, and
    ``lower`` and ``dxdispatch`` said only "x.json: Permission denied" (found by a new user's
    walkthrough)."""
    model = _model(tmp_path)
    if command == "dxdispatch":
        assert main(["lower", str(model), "--format", "dxdispatch", "-o",
                     str(tmp_path / "m.json")]) == 0
        model = tmp_path / "m.json"
    target = tmp_path / name
    target.write_bytes(b"old")
    target.chmod(0o444)
    if hasattr(os, "geteuid") and os.geteuid() == 0:  # root may write any mode: as a user
        real_access = os.access
        monkeypatch.setattr(os, "access", lambda path, mode, **kw: (
            False if mode & os.W_OK and Path(path) == target else real_access(path, mode, **kw)))
    capsys.readouterr()
    assert main([command, str(model), "-o", str(target)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1 and "Traceback" not in captured.err
    assert f"{target}: cannot write: the file is read-only" in captured.err, captured.err
    assert target.read_bytes() == b"old"


def test_an_os_error_is_said_as_its_path_and_reason(monkeypatch, tmp_path, capsys) -> None:
    from dmlgraph import cli

    def fail(args) -> int:
        raise FileNotFoundError(2, "No such file or directory", "/some/where.json")

    monkeypatch.setattr(cli, "cmd_lower", fail)
    assert main(["lower", str(_model(tmp_path))]) == 2
    err = _one_line_error(capsys)
    assert err == "dmlgraph: error: /some/where.json: No such file or directory\n"


# ----------------------------------------------------------------------------- the wrong file
@pytest.mark.parametrize("command", ["lower", "inspect", "run", "check"])
def test_a_file_of_another_kind_given_as_a_model_is_named_as_what_it_is(command, tmp_path,
                                                                        capsys) -> None:
    """Each was "not a valid ONNX protobuf (...; truncated or corrupt?)"."""
    dxdispatch = MODELS / "dxdispatch" / "example_join.json"
    empty = tmp_path / "empty.onnx"
    empty.write_bytes(b"")
    for path, kind in ((dxdispatch, "is a JSON file (a DxDispatch model runs with `dmlgraph "
                                    "dxdispatch MODEL.json`), not an ONNX model"),
                       (REFERENCE, "is a zip archive (an .npz of tensors goes to --inputs or "
                                   "--expected), not an ONNX model"),
                       (MODELS / "MANIFEST.md", "is a text file, not an ONNX model"),
                       (empty, "is an empty file, not an ONNX model")):
        assert main([command, str(path)]) == 2
        _one_line_error(capsys, f"{path}: {kind}")


@pytest.mark.parametrize("command", ["run", "check", "lower", "dxdispatch"])
def test_lower_s_own_json_given_back_is_named_as_what_it_is(command, tmp_path, capsys) -> None:
    """``lower -o``'s JSON given to ``run`` was "a JSON file (a DxDispatch model runs with
    `dmlgraph dxdispatch MODEL.json`)", and ``dxdispatch`` then refused its 'feature_level'
    (a helper's try as a new user): no command reads it back."""
    lowered = tmp_path / "lowered.json"
    assert main(["lower", str(SEED), "-o", str(lowered)]) == 0
    capsys.readouterr()
    assert main([command, str(lowered)]) == 2
    err = _one_line_error(capsys, f"{lowered}: is dmlgraph's lowered-graph JSON (`dmlgraph "
                                  "lower -o`), which no command reads back", "--format dxdispatch")
    assert "feature_level'" not in err


def test_an_onnx_model_given_to_dxdispatch_says_how_to_make_one(capsys) -> None:
    """It was "cannot read a JSON model: 'utf-8' codec can't decode byte 0xee"."""
    assert main(["dxdispatch", str(SEED)]) == 2
    _one_line_error(capsys, f"{SEED}: is an ONNX model (make a DxDispatch model of it with "
                            "`dmlgraph lower MODEL --format dxdispatch -o MODEL.json`)")
    assert main(["dxdispatch", str(SEED.with_name("nope.json"))]) == 2
    _one_line_error(capsys, "nope.json: cannot read the model file: No such file or directory")


def test_a_dxdispatch_model_with_a_byte_order_mark_is_refused_naming_it(tmp_path,
                                                                       capsys) -> None:
    """DxDispatch parses the file's bytes with RapidJSON, which skips no BOM: it refuses the
    model, and so does dmlgraph, saying why (it said "Expecting value: line 1 column 1")."""
    path = tmp_path / "bom.json"
    path.write_bytes(b"\xef\xbb\xbf" + (MODELS / "dxdispatch" / "example_join.json").read_bytes())
    assert main(["dxdispatch", str(path)]) == 2
    _one_line_error(capsys, f"{path}: starts with a UTF-8 byte-order mark, which DxDispatch "
                            "refuses")


def test_dxdispatch_saves_only_to_an_npz_name(tmp_path, capsys) -> None:
    """-o x.json wrote x.json.npz, and -o MODEL.json wrote MODEL.json.npz beside it."""
    model = MODELS / "dxdispatch" / "example_join.json"
    assert main(["dxdispatch", str(model), "-o", str(tmp_path / "x.json")]) == 2
    _one_line_error(capsys, "name the output *.npz")
    assert not list(tmp_path.iterdir())


def test_a_dxdispatch_export_without_inputs_says_they_are_zeros(tmp_path, capsys) -> None:
    out = tmp_path / "m.json"
    assert main(["lower", str(SEED), "--format", "dxdispatch", "-o", str(out)]) == 0
    assert "the graph inputs hold zeros (give --inputs)" in capsys.readouterr().out
    assert main(["lower", str(SEED), "--format", "dxdispatch", "--inputs", str(SEED_IO),
                 "-o", str(out)]) == 0
    assert "zeros" not in capsys.readouterr().out


def test_run_says_a_name_without_npz_is_a_test_data_folder(tmp_path, capsys) -> None:
    assert main(["run", str(SEED), "-o", str(tmp_path / "out.txt")]) == 0
    assert f"to the test-data folder {tmp_path / 'out.txt'}{os.sep}" in capsys.readouterr().out
    assert (tmp_path / "out.txt").is_dir()


def test_version_names_what_it_checks_against(capsys) -> None:
    import onnxruntime

    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("dmlgraph ") and f"onnxruntime {onnxruntime.__version__}" in out


def test_a_test_data_file_without_a_graph_input_is_named(tmp_path, capsys) -> None:
    """It said "input #1 has no graph input to bind to": which file?"""
    model = _model(tmp_path)
    folder = tmp_path / "td"
    folder.mkdir()
    for index in range(2):
        (folder / f"input_{index}.pb").write_bytes(
            numpy_helper.from_array(np.zeros((2, 3), np.float32)).SerializeToString())
    assert main(["run", str(model), "--inputs", str(folder)]) == 2
    _one_line_error(capsys, "input #1 (file 'input_1.pb') has no graph input to bind to")


def test_run_on_onnxruntime_at_a_feature_level_runs_that_lowering(tmp_path, capsys) -> None:
    """ARCHITECTURE.md lists --feature-level for run beside --backend: it was refused with
    the onnxruntime backend unless --lowered was given too. A level names a lowering, so that
    lowering runs, translated back (the line says so)."""
    model = _model(tmp_path)
    assert main(["run", str(model), "--backend", "onnxruntime", "--feature-level", "1_0"]) == 0
    out = capsys.readouterr().out
    assert "lowered at FL 1_0" in out


@pytest.mark.parametrize("args, name", [
    (["run", str(SEED), "-o", "{tmp}/x.npz/"], "x.npz"),
    (["lower", str(SEED), "-o", "{tmp}/out.json/"], "out.json"),
    (["viz", str(SEED), "-o", "{tmp}/v.html/"], "v.html"),
])
def test_a_file_output_ending_in_a_slash_is_a_usage_error(args, name, tmp_path, capsys) -> None:
    """``Path`` drops a trailing slash: ``run -o x.npz/`` and ``lower -o out.json/`` wrote
    files, where the slash names a folder (a helper's try as a new user). A test-data
    folder's name may end in one."""
    with pytest.raises(SystemExit) as info:
        main([a.format(tmp=tmp_path) for a in args])
    assert info.value.code == 2
    _one_line_error(capsys, "ends with a slash, so it names a folder")
    assert not (tmp_path / name).exists()
    assert main(["run", str(SEED), "-o", f"{tmp_path}/td/"]) == 0
    assert (tmp_path / "td" / "input_0.pb").is_file()


@pytest.mark.parametrize("command", ["run", "lower", "viz"])
def test_a_file_name_typed_on_the_command_line_is_shown_escaped(command, tmp_path,
                                                                capsys) -> None:
    """A file name is anyone's text: ``run``, ``lower`` and ``viz`` printed the names they
    read and wrote raw ("saved ... to", "wrote ..."), so an ESC in one recoloured the
    terminal (a helper's try as a new user)."""
    model = tmp_path / "m\x1b[31m.onnx"
    model.write_bytes(SEED.read_bytes())
    out = {"run": "o\x1b[31m.npz", "lower": "o\x1b[31m.json", "viz": "o\x1b[31m.html"}[command]
    assert main([command, str(model), "-o", str(tmp_path / out)]) == 0
    printed = capsys.readouterr().out
    assert "\x1b" not in printed and "\\x1b[31m" in printed


def test_check_shows_the_expected_file_s_name_escaped(tmp_path, capsys) -> None:
    """``check --expected`` printed the file's name raw in its table's title (a reviewer's
    reproducer): an ESC in it recoloured the terminal."""
    stored = tmp_path / "a\x1b[31mred.npz"
    assert main(["run", str(SEED), "-o", str(stored)]) == 0
    capsys.readouterr()
    assert main(["check", str(SEED), "--expected", str(stored)]) == 0
    printed = capsys.readouterr().out
    assert "\x1b" not in printed and "\\x1b[31mred.npz" in printed


@pytest.mark.parametrize("make_args, option", [
    (lambda d: ["lower", str(SEED), "-o", str(d / "a.json"), "-o", str(d / "b.json")],
     "-o/--output"),
    (lambda d: ["lower", str(SEED), "--feature-level", "2_1", "--feature-level", "1_0"],
     "--feature-level"),
    (lambda d: ["check", str(SEED), "--inputs", str(SEED_IO), "--inputs", str(d / "in.npz")],
     "--inputs"),
    (lambda d: ["run", str(SEED), "--seed", "1", "--seed", "2"], "--seed"),
    (lambda d: ["run", str(SEED), "--backend", "numpy", "--backend", "onnxruntime"],
     "--backend"),
])
def test_an_option_given_twice_with_two_values_is_refused(make_args, option, tmp_path,
                                                          capsys) -> None:
    """argparse keeps the last value: ``lower -o a.json -o b.json`` wrote b.json alone, and
    two --inputs checked the second, without a word (a helper's try as a new user)."""
    np.savez(tmp_path / "in.npz", X=np.ones((1, 1, 4, 4), np.float32))
    with pytest.raises(SystemExit) as info:
        main(make_args(tmp_path))
    assert info.value.code == 2
    _one_line_error(capsys, f"argument {option}: given twice", "give it once")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.npz"]


def test_an_option_given_twice_with_one_value_is_taken(tmp_path) -> None:
    """The same value again, in any spelling, asks for nothing else."""
    out = tmp_path / "a.json"
    assert main(["lower", str(SEED), "--feature-level", "2_1", "--feature-level", "2.1",
                 "-o", str(out), "-o", str(out)]) == 0
    assert json.loads(out.read_text())["feature_level"] == "DML_FEATURE_LEVEL_2_1"


def _float16_model(tmp_path: Path) -> Path:
    """x[2, 3] float16 -> Pad (edge, 1 each side of axis 1) -> y."""
    return _pad_file(tmp_path / "f16.onnx", TensorProto.FLOAT16, "edge", [2, 3], [0, 1, 0, 1])


def test_check_help_states_the_tolerances_check_applies_by_default(tmp_path, capsys) -> None:
    """--atol and --rtol said nothing of their defaults, which differ by dtype (a helper's
    try as a new user): the help names those a run records."""
    with pytest.raises(SystemExit):
        main(["check", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    atol_help, rtol_help = text.split("--rtol [NAME:]VALUE ")[-2:]
    for model, dtype in ((_model(tmp_path), "float32"), (_float16_model(tmp_path), "float16")):
        assert main(["check", str(model), "--json"]) == 0
        used = json.loads(capsys.readouterr().out)["comparisons"][0]["outputs"][0]
        assert used["actual"]["dtype"] == dtype
        for kind, help_text in (("atol", atol_help), ("rtol", rtol_help)):
            named = re.search(rf"{dtype}(?: and \w+)? ([0-9.e+-]+)[,;]", help_text)
            assert named is not None and float(named.group(1)) == used[kind], help_text


@pytest.mark.parametrize("command, name", [("lower", "x.json"), ("viz", "x.html"),
                                           ("run", "x.npz"), ("run", "td")])
def test_an_output_under_a_file_says_the_file_is_no_folder(command, name, tmp_path,
                                                           capsys) -> None:
    """``-o FILE/x.json`` said the folder FILE "does not exist", where it does, as a file (a
    helper's try as a new user)."""
    (tmp_path / "f").write_text("")
    assert main([command, str(SEED), "-o", str(tmp_path / "f" / name)]) == 2
    _one_line_error(capsys, f"the folder '{tmp_path / 'f'}' is a file, not a folder")
    assert (tmp_path / "f").read_text() == ""


def _help(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    with pytest.raises(SystemExit) as info:
        main([*args, "--help"])
    assert info.value.code == 0
    return " ".join(capsys.readouterr().out.split())  # argparse wraps by the terminal


def test_run_help_says_a_feature_level_runs_onnxruntime_on_the_lowered_graph(
        tmp_path, capsys) -> None:
    """``run --backend onnxruntime --feature-level L`` runs the lowered graph (docs/COMMANDS.md),
    but the help said onnxruntime runs "the imported graph, or the lowered one with
    --lowered"."""
    text = _help(capsys, "run")
    assert "the lowered one with --lowered or --feature-level" in text
    assert main(["run", str(_model(tmp_path)), "--backend", "onnxruntime",
                 "--feature-level", "1_0"]) == 0
    assert "(lowered at FL 1_0)" in capsys.readouterr().out


def test_dxdispatch_help_names_its_output_an_npz(capsys) -> None:
    """README: ``dxdispatch MODEL.json [-o OUT.npz]``; the help said ``-o OUTPUT``, and an
    output not named *.npz is refused."""
    assert "-o OUT.npz, --output OUT.npz" in _help(capsys, "dxdispatch")
