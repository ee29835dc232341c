"""``dmlgraph run`` and ``dmlgraph check`` as a user types them: exit codes 0, 1 and 2."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from dmlgraph.cli import main

MODELS = Path(__file__).parent.parent / "models"
REFERENCE = MODELS / "reference_io.npz"


def dynamic_pad_model(path: Path) -> Path:
    """x[N, 4] -> reflect Pad -> y: a graph input with a dynamic dimension."""
    graph = helper.make_graph(
        [helper.make_node("Pad", ["x", "p"], ["y"], mode="reflect", name="pad")], "dyn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, None])],
        [numpy_helper.from_array(np.array([0, 1, 0, 2], np.int64), "p")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8),
              path)
    return path


@pytest.mark.parametrize("level", ["6_4", "2.1", "DML_FEATURE_LEVEL_2_1", "0x6400"])
def test_check_passes_on_a_real_model_at_any_level_spelling(level, capsys) -> None:
    args = ["check", str(MODELS / "shufflenet_v2_x0_5.onnx"), "--inputs", str(REFERENCE),
            "--feature-level", level]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "parity holds" in out and "Slice" in out and "stored outputs" in out


def test_check_json_is_machine_readable(capsys) -> None:
    args = ["check", str(MODELS / "tf_mobilenetv3_small_minimal.onnx"), "--inputs",
            str(REFERENCE), "--json", "--atol", "1e-4", "--rtol", "1e-4"]
    assert main(args) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["passed"] and report["exit_code"] == 0
    assert report["lowering"]["summary"]["Pad"] == {"lowered": 5}
    assert report["comparisons"][0]["outputs"][0]["atol"] == 1e-4
    # the level spelled as `lower --json` spells it (check wrote "6_4"): one reader for both
    assert main(["lower", str(MODELS / "tf_mobilenetv3_small_minimal.onnx"), "--json"]) == 0
    lowered = json.loads(capsys.readouterr().out)
    assert report["feature_level"] == lowered["feature_level"] == "DML_FEATURE_LEVEL_6_4"


def test_check_json_keys_are_the_ones_commands_md_documents(tmp_path, capsys) -> None:
    """A script reading `check --json` had only the key names to go by (a new user's
    walkthrough): docs/COMMANDS.md now lists them. Every key the report writes, at every
    level, must be named there as `key` (a key added without its words fails here)."""
    import re

    model = dynamic_pad_model(tmp_path / "dyn.onnx")
    assert main(["check", str(model), "--input-shape", "x:3,4", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    (comparison,) = report["comparisons"]
    (output,) = comparison["outputs"]
    (record, *_) = report["lowering"]["nodes"]
    (run, *_) = report["runs"]
    written = {*report, *comparison, *output, *output["actual"], *report["lowering"],
               *record, *run}
    text = (Path(__file__).parent.parent / "docs" / "COMMANDS.md").read_text(encoding="utf-8")
    section = text.split("### `check --json`, for scripts", 1)[1].split("\n## ", 1)[0]
    documented = set(re.findall(r"`([a-z_]+)`", section))
    assert written - documented == set()


def test_check_fails_with_exit_1_when_outputs_differ(tmp_path, capsys) -> None:
    model = dynamic_pad_model(tmp_path / "dyn.onnx")
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    wrong = np.pad(x, ((0, 0), (1, 2)), mode="reflect")
    wrong[1, 1] += 1.0
    np.savez(tmp_path / "in.npz", x=x)
    np.savez(tmp_path / "expected.npz", y=wrong)
    args = ["check", str(model), "--inputs", str(tmp_path / "in.npz"), "--expected",
            str(tmp_path / "expected.npz")]
    assert main(args) == 1
    out = capsys.readouterr().out
    assert "parity FAILS" in out
    assert "1 of 21 elements exceeds both atol=1e-05 and rtol=1e-05" in out
    assert main(args + ["--atol", "y:1.0"]) == 0  # a per-output tolerance that covers it


@pytest.mark.parametrize("args, fragment", [
    (["check", "no/such/model.onnx"], "no/such/model.onnx"),
    (["check", str(MODELS / "squeezenet1_1.onnx"), "--inputs", "missing.npz"], "missing.npz"),
    (["run", str(MODELS / "squeezenet1_1.onnx"), "--provider", "NoSuchExecutionProvider"],
     "NoSuchExecutionProvider"),
])
def test_bad_input_is_one_line_and_exit_2(args, fragment, capsys) -> None:
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("dmlgraph: error:") and err.count("\n") == 1 and fragment in err


def test_inputs_of_the_wrong_dtype_are_exit_2(tmp_path, capsys) -> None:
    model = dynamic_pad_model(tmp_path / "dyn.onnx")
    np.savez(tmp_path / "in.npz", x=np.zeros((2, 4), np.float64))
    assert main(["check", str(model), "--inputs", str(tmp_path / "in.npz")]) == 2
    assert "input 'x' is float64; the graph expects float32" in capsys.readouterr().err


def test_dynamic_inputs_need_a_shape_to_generate(tmp_path, capsys) -> None:
    model = dynamic_pad_model(tmp_path / "dyn.onnx")
    assert main(["check", str(model)]) == 2
    assert "--input-shape x:D0,D1" in capsys.readouterr().err
    assert main(["check", str(model), "--input-shape", "x:5,4", "--seed", "7"]) == 0
    assert "generated (seed 7)" in capsys.readouterr().out


@pytest.mark.parametrize("bad", ["x", "-1", "y:abc", "1_0", "y:1_0.5",  # float("1_0") is 10
                                 "inf", "1e400"])  # every float element would pass
def test_malformed_tolerance_is_a_usage_error(bad, capsys) -> None:
    with pytest.raises(SystemExit) as info:
        main(["check", str(MODELS / "squeezenet1_1.onnx"), "--atol", bad])
    assert info.value.code == 2 and "[NAME:]VALUE" in capsys.readouterr().err


@pytest.mark.parametrize("text, value", [("1e-3", 1e-3), (".5", 0.5), ("5.", 5.0),
                                         ("+2", 2.0), ("1e300", 1e300), ("0", 0.0)])
def test_tolerances_are_read_as_decimal_numbers(text, value) -> None:
    from dmlgraph.cli import _tolerance

    assert _tolerance(text) == ("", value) and _tolerance(f"y:{text}") == ("y", value)


@pytest.mark.parametrize("target", ["out.npz", "out_folder"])
def test_run_saves_a_case_that_check_replays(target, tmp_path, capsys) -> None:
    model = dynamic_pad_model(tmp_path / "dyn.onnx")
    out = tmp_path / target
    assert main(["run", str(model), "--input-shape", "x:3,4", "--seed", "2", "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "numpy DirectML emulator" in printed and "output y: float32[3, 7]" in printed
    assert main(["check", str(model), "--inputs", str(out), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [c["passed"] for c in report["comparisons"]] == [True, True]
    assert report["comparisons"][1]["expected"].startswith("stored outputs")


@pytest.mark.parametrize("extra", [[], ["--lowered"]])
def test_run_on_onnxruntime(extra, tmp_path, capsys) -> None:
    model = dynamic_pad_model(tmp_path / "dyn.onnx")
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    np.savez(tmp_path / "in.npz", x=x)
    args = ["run", str(model), "--backend", "onnxruntime", "--inputs", str(tmp_path / "in.npz"),
            "-o", str(tmp_path / "out.npz"), *extra]
    assert main(args) == 0
    assert "onnxruntime (CPUExecutionProvider)" in capsys.readouterr().out
    with np.load(tmp_path / "out.npz") as saved:
        np.testing.assert_array_equal(saved["y"], np.pad(x, ((0, 0), (1, 2)), mode="reflect"))


def test_run_and_check_lower_again_where_a_size_proves_inference_wrong(tmp_path, capsys) -> None:
    """A Slice of a MaxPool whose SAME padding over a dilation onnx sizes 5 columns and
    onnxruntime 3: ``run`` and ``check`` exited 2 ("onnx infers this node's output wrongly").
    They lower the graph again with that size left to run time, say so, and parity holds."""
    graph = helper.make_graph(
        [helper.make_node("MaxPool", ["x"], ["p"], kernel_shape=[3], dilations=[2],
                          auto_pad="SAME_UPPER", name="pool"),
         helper.make_node("Slice", ["p", "s", "e", "a"], ["y"], name="slice")],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 5])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.array([v], np.int64), n)
         for n, v in (("s", 1), ("e", 100), ("a", 2))])
    path = tmp_path / "pool.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)],
                                ir_version=9), path)
    said = "node 'pool' (MaxPool) made 'p' as float32[1, 1, 3], where onnx infers " \
        "float32[1, 1, 5]"
    assert main(["run", str(path)]) == 0
    out = capsys.readouterr().out
    assert "output y: float32[1, 1, 2]" in out and said in out
    assert main(["check", str(path)]) == 0
    out = capsys.readouterr().out
    assert "parity holds" in out and said in " ".join(out.split())
    assert main(["check", str(path), "--json"]) == 0
    (first, _) = json.loads(capsys.readouterr().out)["runs"]
    assert said in first["notes"][0]


def _identity_model(path: Path, elem: int, shape: list[int]) -> Path:
    """y = Identity(x): the numpy run gives back x, so a stored y sets the difference."""
    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"])], "identity",
        [helper.make_tensor_value_info("x", elem, shape)],
        [helper.make_tensor_value_info("y", elem, shape)])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)],
                                ir_version=9), path)
    return path


def _needs(out: str) -> tuple[str, str]:
    """The "needs atol" and "needs rtol" cells of the stored outputs' table (its last row)."""
    rows = [line for line in out.splitlines() if line.startswith("│ y ")]
    cells = [cell.strip() for cell in rows[-1].strip("│").split("│")]
    return cells[-2], cells[-1]


@pytest.mark.parametrize("dtype, elem", [(np.float32, TensorProto.FLOAT),
                                         (np.float64, TensorProto.DOUBLE),
                                         (np.float16, TensorProto.FLOAT16)])
def test_check_needs_atol_and_rtol_given_back_pass(dtype, elem, tmp_path, capsys) -> None:
    """The tolerance the table says would pass passes when given back: shown to 3 digits
    rounded to the nearest, 0.0012345 was 0.00123, under which that element still failed."""
    model = _identity_model(tmp_path / "m.onnx", elem, [4])
    x = np.array([1, 2, 3, 4], dtype)
    wrong = x.copy()
    wrong[1] = dtype(2.0012345678)
    wrong[3] = dtype(4.0077777)
    np.savez(tmp_path / "io.npz", x=x, y=wrong)
    args = ["check", str(model), "--expected", str(tmp_path / "io.npz")]
    assert main(args) == 1
    atol, rtol = _needs(capsys.readouterr().out)
    # the oracle: the needed atol is the largest error (every error is beyond the rtol)
    error = np.abs(x.astype(np.float64) - wrong.astype(np.float64))
    assert float(atol) >= error.max() and float(atol) <= error.max() * 1.01
    for given in (["--atol", f"y:{atol}"], ["--rtol", f"y:{rtol}"]):
        assert main([*args, *given]) == 0, given
        assert "parity holds" in capsys.readouterr().out


@pytest.mark.parametrize("given", [[], ["--atol", "5", "--rtol", "y:2"]])
def test_check_json_gives_integer_outputs_the_tolerance_applied(given, tmp_path, capsys) -> None:
    """Integers compare exactly; the JSON (and the HTML report, which reads it) said atol 0.1
    and rtol 0.1, the default of no float dtype, or the --atol given, which never applied:
    1 against 3 differs, whatever --atol says."""
    model = _identity_model(tmp_path / "m.onnx", TensorProto.INT64, [3])
    x = np.array([1, 2, 3], np.int64)
    np.savez(tmp_path / "io.npz", x=x, y=np.array([3, 2, 3], np.int64))
    assert main(["check", str(model), "--expected", str(tmp_path / "io.npz"), "--json",
                 *given]) == 1
    stored = json.loads(capsys.readouterr().out)["comparisons"][1]["outputs"][0]
    assert stored["exact"] and stored["mismatches"] == 1 and stored["max_abs_error"] == 2
    assert (stored["atol"], stored["rtol"]) == (0.0, 0.0)


# ----------------------------------------------------------------- onnxruntime cannot run it
def _pad_model(path: Path, elem: int, mode: str, opset: int) -> Path:
    """y = Pad(x[2, 3]) by 1 on each side; Pad-2's pads an attribute before opset 11."""
    if opset < 11:
        node = helper.make_node("Pad", ["x"], ["y"], mode=mode, pads=[1] * 4, name="pad")
        initializers = []
    else:
        node = helper.make_node("Pad", ["x", "p"], ["y"], mode=mode, name="pad")
        initializers = [numpy_helper.from_array(np.ones(4, np.int64), "p")]
    graph = helper.make_graph([node], "pad", [helper.make_tensor_value_info("x", elem, [2, 3])],
                              [helper.make_tensor_value_info("y", elem, [4, 5])], initializers)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                                ir_version=8), path)
    return path


#: onnxruntime 1.32 cannot run these: its CPU provider has no int16 Pad (DirectML has),
#: before a float16 Pad-2 of opset 2..5 it inserts a Cast-6 its own checker refuses, and it
#: loads no model with a complex tensor (ONNX's Pad-13 takes them; DirectML pads their bytes).
UNRUNNABLE = {
    "int16 edge": (TensorProto.INT16, np.int16, "edge", 18, "Could not find an implementation"),
    "float16 Pad-2 reflect": (TensorProto.FLOAT16, np.float16, "reflect", 5,
                              "InsertedPrecisionFreeCast_x"),
    "complex64 constant": (TensorProto.COMPLEX64, np.complex64, "constant", 13,
                           "tensor(complex64) is not currently registered or supported"),
}


@pytest.mark.parametrize("case", UNRUNNABLE)
def test_check_compares_against_onnx_reference_where_onnxruntime_cannot_run_it(
    case, tmp_path, capsys
) -> None:
    """onnxruntime refusing the model for want of a kernel stopped check with exit 2 and no
    proof either way; onnx.reference on the model is the reference then, and named so. The
    stored outputs, NumPy's np.pad, are an oracle of their own."""
    elem, dtype, mode, opset, said = UNRUNNABLE[case]
    model = _pad_model(tmp_path / "m.onnx", elem, mode, opset)
    x = np.array([[1, -2, 3], [400, -500, 6]], dtype)
    if np.iscomplexobj(x):  # imaginary parts a run dropping them would lose
        x += 1j * np.array([[3, 0, -7], [2.5, -1, 5]], dtype)
    np.savez(tmp_path / "io.npz", x=x, y=np.pad(x, 1, mode=mode))
    args = ["check", str(model), "--inputs", str(tmp_path / "io.npz")]
    assert main(args) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "parity holds" in out and "vs onnx.reference on the original model (onnxruntime " \
        "cannot run it: " in out and said in out and "stored outputs" in out
    assert main([*args, "--json"]) == 0
    first, stored = json.loads(capsys.readouterr().out)["comparisons"]
    assert first["expected"].startswith("onnx.reference on the original model (onnxruntime "
                                        "cannot run it: ") and said in first["expected"]
    assert first["passed"] and stored["passed"]


# (inputs generated: dmlgraph generates no complex values, read only from --inputs)
@pytest.mark.parametrize("case", [c for c in UNRUNNABLE if "complex" not in c])
def test_run_on_onnxruntime_that_cannot_run_the_model_says_what_runs_it(
    case, tmp_path, capsys
) -> None:
    """``run --backend onnxruntime`` of a model onnxruntime cannot run at all gave its words
    alone; it now says that the numpy backend runs it (a node left as ONNX on onnx.reference)
    and check compares it with onnx.reference, and that command runs."""
    elem, _, mode, opset, said = UNRUNNABLE[case]
    model = str(_pad_model(tmp_path / "m.onnx", elem, mode, opset))
    assert main(["run", model, "--backend", "onnxruntime"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and said in err
    assert err.rstrip().endswith(
        "(onnxruntime cannot run the model; the numpy backend runs it lowered, any ONNX node "
        "left on onnx.reference, and check compares it with onnx.reference: --backend numpy "
        "--fallback reference, get_backend('numpy', fallback='reference') in Python)")
    assert main(["run", model, "--backend", "numpy", "--fallback", "reference"]) == 0


#: onnxruntime-gpu 1.31.1's refusal, with CUDA's provider first (an H200), of the int16 edge
#: Pad and the int16 Einsum above, where the CPU provider says "Could not find an
#: implementation": its memcpy pass asserts that every node has a provider.
CUDA_REFUSAL = (
    "[ONNXRuntimeError] : 1 : FAIL : Exception during initialization: /onnxruntime_src/"
    "onnxruntime/core/optimizer/transformer_memcpy.cc:253 bool onnxruntime::"
    "TransformerMemcpyImpl::IsNodeCompatibleWithProvider(const onnxruntime::Node&) const "
    "!node_provider_type.empty() was false. Provider type for {op} node with name '{name}' "
    "is not set."
)


@pytest.fixture
def refused_as_on_cuda(monkeypatch):
    """onnxruntime's sessions refuse a model it has no kernel for in CUDA's words."""
    import re

    import onnxruntime

    real = onnxruntime.InferenceSession

    def session(*args, **kwargs):
        try:
            return real(*args, **kwargs)
        except Exception as exc:
            found = re.search(r"implementation for (\w+)\(\d+\) node with name '([^']*)'",
                              str(exc))
            if found is None:
                raise
            raise RuntimeError(CUDA_REFUSAL.format(op=found[1], name=found[2])) from None

    monkeypatch.setattr(onnxruntime, "InferenceSession", session)


def test_a_model_no_provider_has_a_kernel_for_is_told_in_cuda_s_words_too(
    tmp_path, capsys, refused_as_on_cuda
) -> None:
    """With CUDA's provider, onnxruntime refuses a node no provider runs in other words than
    the CPU provider's (``CUDA_REFUSAL``): check stopped with exit 2 there (measured on an
    H200), where it compares with onnx.reference on the CPU; run and a fallback segment said
    nothing of what runs it."""
    elem, dtype, mode, opset, _ = UNRUNNABLE["int16 edge"]
    model = _pad_model(tmp_path / "m.onnx", elem, mode, opset)
    x = np.array([[1, -2, 3], [400, -500, 6]], dtype)
    np.savez(tmp_path / "io.npz", x=x, y=np.pad(x, 1, mode=mode))
    assert main(["check", str(model), "--inputs", str(tmp_path / "io.npz")]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "parity holds" in out and "Provider type for Pad node with name 'pad' is not " \
        "set" in out and "vs onnx.reference on the original model" in out
    assert main(["run", str(model), "--backend", "onnxruntime"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--fallback reference" in err
    graph = helper.make_graph(
        [helper.make_node("Einsum", ["a", "b"], ["y"], equation="ij,jk->ik", name="e")], "e",
        [helper.make_tensor_value_info(n, TensorProto.INT16, [2, 2]) for n in "ab"],
        [helper.make_tensor_value_info("y", TensorProto.INT16, [2, 2])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)],
                                ir_version=8), tmp_path / "e.onnx")
    assert main(["run", str(tmp_path / "e.onnx")]) == 2
    err = capsys.readouterr().err
    assert "Provider type for Einsum" in err and "--fallback reference" in err


def test_check_fails_a_wrong_emulator_against_onnx_reference(tmp_path, capsys,
                                                              monkeypatch) -> None:
    """onnx.reference is an oracle like onnxruntime: an emulator result off by one fails."""
    import dataclasses

    import backends.numpy.backend as numpy_backend

    execute = numpy_backend.NumpyBackend.execute

    def wrong(self, graph, feeds, outputs=None):
        result = execute(self, graph, feeds, outputs)
        return dataclasses.replace(result, outputs={"y": result.outputs["y"] + np.int16(1)})

    monkeypatch.setattr(numpy_backend.NumpyBackend, "execute", wrong)
    model = _pad_model(tmp_path / "m.onnx", TensorProto.INT16, "edge", 18)
    assert main(["check", str(model), "--json"]) == 1
    (first,) = json.loads(capsys.readouterr().out)["comparisons"]
    assert first["expected"].startswith("onnx.reference on the original model")
    assert first["outputs"][0]["mismatches"] == 20


def test_check_keeps_other_onnxruntime_refusals_and_a_failing_onnx_reference_exit_2(
    tmp_path, capsys, monkeypatch
) -> None:
    """Only the refusals ``providers.CANNOT_RUN`` lists send check to onnx.reference; where
    onnx.reference fails too, onnxruntime's error stands, saying so."""
    import onnx.reference

    from backends import BackendError
    from backends.onnxruntime.backend import OnnxruntimeBackend

    model = _pad_model(tmp_path / "m.onnx", TensorProto.INT16, "edge", 18)

    def refuse(self, model, where="", *, optimize=True):
        raise BackendError(f"{where}: onnxruntime cannot load the model: Fail: "
                           "[ONNXRuntimeError] : 1 : FAIL : Load model failed (not a kernel)")

    with monkeypatch.context() as patch:
        patch.setattr(OnnxruntimeBackend, "session", refuse)
        assert main(["check", str(model)]) == 2
    err = capsys.readouterr().err
    assert "not a kernel" in err and "onnx.reference" not in err

    def fail(self, *args, **kwargs):
        raise RuntimeError("no evaluator today\nsecond line")

    monkeypatch.setattr(onnx.reference.ReferenceEvaluator, "run", fail)
    assert main(["check", str(model)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Could not find an implementation for Pad(18)" in err
    assert "onnx.reference failed as well: RuntimeError: no evaluator today" in err


def test_a_fallback_segment_onnxruntime_cannot_run_suggests_the_reference(tmp_path,
                                                                          capsys) -> None:
    """An int16 Einsum (left to the fallback) has no onnxruntime kernel: the error said
    nothing of --fallback reference, which runs it; the engine is not switched silently."""
    graph = helper.make_graph(
        [helper.make_node("Einsum", ["a", "b"], ["y"], equation="ij,jk->ik", name="e")], "e",
        [helper.make_tensor_value_info(n, TensorProto.INT16, [2, 2]) for n in "ab"],
        [helper.make_tensor_value_info("y", TensorProto.INT16, [2, 2])])
    path = tmp_path / "e.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)],
                                ir_version=8), path)
    for command in ("run", "check"):
        assert main([command, str(path)]) == 2
        err = capsys.readouterr().err
        assert "Einsum" in err and "--fallback reference" in err, command
    a = np.array([[1, 2], [3, 4]], np.int16)
    np.savez(tmp_path / "io.npz", a=a, b=a, y=a @ a)
    assert main(["check", str(path), "--fallback", "reference", "--inputs",
                 str(tmp_path / "io.npz")]) == 0
    assert "parity holds" in capsys.readouterr().out


def test_check_says_when_no_dml_operator_ran(tmp_path, capsys) -> None:
    """A Pad of zero pads is eliminated: no DML operator runs, so "parity holds" compares the
    fallback with the reference alone, and check says so beside the verdict (and --json
    counts the operators run: 0, where the seed's one Pad runs one PADDING)."""
    graph = helper.make_graph(
        [helper.make_node("Pad", ["x", "p"], ["y"], name="pad"),
         helper.make_node("Relu", ["y"], ["z"], name="relu")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, 3])],
        [numpy_helper.from_array(np.zeros(4, np.int64), "p")])
    path = tmp_path / "nothing.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)],
                                ir_version=8), path)
    assert main(["check", str(path)]) == 0
    out = capsys.readouterr().out
    assert "parity holds" in out and "note: no DML operator ran" in out
    assert main(["check", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["descriptors_run"] == 0
    seed = MODELS / "seeds" / "padding_constant.onnx"
    assert main(["check", str(seed)]) == 0
    assert "no DML operator ran" not in capsys.readouterr().out
    assert main(["check", str(seed), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["descriptors_run"] == 1


def _held_in_subgraphs(graph: onnx.GraphProto, depth: int = 0) -> dict[str, int]:
    """Slice/Concat/Pad nodes in the subgraphs of ``graph``'s nodes, at any depth, counted
    from the ONNX file itself (onnx's protos, not dmlgraph's import)."""
    counts: dict[str, int] = {}
    for node in graph.node:
        if depth and node.op_type in ("Slice", "Concat", "Pad"):
            counts[node.op_type] = counts.get(node.op_type, 0) + 1
        for attr in node.attribute:
            for sub in [attr.g] if attr.HasField("g") else list(attr.graphs):
                for op, n in _held_in_subgraphs(sub, depth + 1).items():
                    counts[op] = counts.get(op, 0) + n
    return counts


def test_check_counts_the_slice_concat_pad_in_control_flow_subgraphs(capsys) -> None:
    """The summary counted the main graph's only: a Loop whose body (and the If in it) holds
    Pads showed no Pad at all, where ``inspect`` and ``lower`` list them."""
    path = MODELS / "control_flow" / "nested_loop_if.onnx"
    held = _held_in_subgraphs(onnx.load(path).graph)
    assert held.get("Pad")  # the model's point: a Pad only a subgraph holds
    args = ["check", str(path), "--input-shape", "x:3,4"]
    assert main([*args, "--json"]) == 0
    lowering = json.loads(capsys.readouterr().out)["lowering"]
    assert lowering["summary"]["Pad"] == {}  # the main graph's, as it was
    assert lowering["held"] == [{"node": "/Loop", "op_type": "Loop", "ops": held}]
    assert main(args) == 0
    out = " ".join(capsys.readouterr().out.split())  # rich folds long lines
    listed = ", ".join(f"{n} {op}" for op, n in sorted(held.items()))
    assert (f"(and {sum(held.values())} in the subgraphs of 1 control-flow node(s), "
            f"Loop '/Loop': {listed};") in out


def test_a_comparison_of_many_outputs_prints_as_plain_aligned_lines(tmp_path, capsys) -> None:
    """A model whose every tensor is an output (the usual way to debug one) had its comparison
    laid out by rich at about 1 ms a row: 3,000 outputs spent 3.4 s of check's 7.3 there (a
    new user's walkthrough). Past PLAIN_ROWS_ABOVE rows it is plain text, as lower's report
    is. The oracle: each output is the last negated or with x appended, as NumPy makes it."""
    from dmlgraph.reporting import PLAIN_ROWS_ABOVE

    count = PLAIN_ROWS_ABOVE + 1
    nodes = [helper.make_node("Concat", [f"t{k - 1}", "x"], [f"t{k}"], axis=0,
                              name=f"c{k}") if k % 2 else
             helper.make_node("Neg", [f"t{k - 1}" if k else "x"], [f"t{k}"], name=f"n{k}")
             for k in range(count)]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2])],
        [helper.make_tensor_value_info(f"t{k}", TensorProto.FLOAT, None) for k in range(count)])
    model = tmp_path / "outputs.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), model)
    x = np.array([[1.0, -2.0]], np.float32)
    expected, value = {}, x
    for k in range(count):
        value = np.concatenate([value, x]) if k % 2 else -value
        expected[f"t{k}"] = value
    np.savez(tmp_path / "in.npz", x=x, **expected)
    assert main(["check", str(model), "--inputs", str(tmp_path / "in.npz")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert not any(box in line for line in lines[lines.index(
        "  vs onnxruntime on the original model (CPUExecutionProvider)"):] for box in "│┃━─")
    for title in ("onnxruntime on the original model (CPUExecutionProvider)",
                  f"stored outputs ({tmp_path / 'in.npz'})"):
        at = lines.index(f"  vs {title}")
        assert lines[at + 1].split()[:2] == ["output", "verdict"]
        rows = [line.split() for line in lines[at + 2:at + 2 + count]]
        assert [row[:2] for row in rows] == [[f"t{k}", "pass"] for k in range(count)]
        assert f" {list(expected[f't{count - 1}'].shape)} " in lines[at + 1 + count]
    assert lines[-1] == "parity holds"


def _long_name(length: int, k: int) -> str:
    """A name of ``length`` characters, distinct letters so its two shown ends tell the cut."""
    return "".join(chr(ord("a") + (i * 7 + k) % 26) for i in range(length - 4)) + f"{k:04d}"


def _cut(name: str) -> str:
    """A name past 300 characters as viz shows it: its first and last 130, and its length."""
    return f"{name[:130]}\u2026{name[-130:]} ({len(name)} characters)"


@pytest.mark.parametrize("count", [1, 501])
def test_a_very_long_output_name_is_shortened_in_the_comparison(tmp_path, capsys, count):
    """A 5,000-character output name folded check's comparison row into 51 lines; it is shown
    by its two ends and its length, as viz and lower show a long name, in the rich table and
    past PLAIN_ROWS_ABOVE (500) rows in the plain lines; --json keeps it whole. The oracle:
    NumPy's negation of x for every output."""
    names = [_long_name(2000 if count > 1 else 5000, k) for k in range(count)]
    graph = helper.make_graph(
        [helper.make_node("Neg", ["x"], [name], name=f"n{k}") for k, name in enumerate(names)],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info(name, TensorProto.FLOAT, [2]) for name in names])
    model = tmp_path / "long.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), model)
    x = np.array([1.0, -2.0], np.float32)
    np.savez(tmp_path / "in.npz", x=x)
    np.savez(tmp_path / "out.npz", x=x, **{name: -x for name in names})
    args = ["check", str(model), "--inputs", str(tmp_path / "in.npz")]
    assert main(args) == 0
    lines = capsys.readouterr().out.splitlines()
    at = [line.strip() for line in lines].index(
        "vs onnxruntime on the original model (CPUExecutionProvider)")
    if count == 1:  # the rich table: the output column's folded lines joined back
        rows = [line.split("│") for line in lines[at:] if line.startswith("│")]
        folded = "".join(cells[1].strip() for cells in rows)  # a fold may drop a space
        assert folded == _cut(names[0]).replace(" (", "(") or folded == _cut(names[0])
        assert len(rows) < 10
    else:
        verdict_at = lines[at + 1].index("verdict")
        assert [line[:verdict_at].rstrip() for line in lines[at + 2:at + 2 + count]] == [
            _cut(name) for name in names]
    assert main([*args, "--expected", str(tmp_path / "out.npz"), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [[o["name"] for o in c["outputs"]] for c in report["comparisons"]] == [names] * 2


def test_run_and_check_count_nodes_and_descriptors_apart(tmp_path, capsys) -> None:
    """"ran: ... 11 on numpy DirectML emulator" counted descriptors where the fallback's count
    beside it counted nodes: at FL 1_0 each of two reversed Slices of 4 is a JOIN of 4 single-
    element SLICEs, and a Concat a JOIN. The text says "3 nodes as 11 descriptors", --json
    keeps ``engines`` (descriptors) and adds ``engine_nodes``. Oracles: the model's own nodes,
    and the descriptors ``lower --json`` lists."""
    nodes = [helper.make_node("Slice", [f"x{k}", "st", "en", "ax", "sp"], [f"r{k}"],
                              name=f"rev{k}") for k in range(2)]
    nodes += [helper.make_node("Concat", ["r0", "r1"], ["c"], axis=0, name="cat"),
              helper.make_node("Neg", ["c"], ["y"], name="neg")]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info(f"x{k}", TensorProto.FLOAT, [4])
                     for k in range(2)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.array(v, np.int64), n) for n, v in
         {"st": [-1], "en": [-5], "ax": [0], "sp": [-1]}.items()])
    model = tmp_path / "rev.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), model)
    lowered = tmp_path / "lowered.json"
    assert main(["lower", str(model), "--feature-level", "1_0", "-o", str(lowered)]) == 0
    descriptors = sum("dml" in n for n in json.loads(lowered.read_text())["nodes"])
    lowerable = sum(n.op_type in ("Slice", "Concat") for n in onnx.load(model).graph.node)
    assert (lowerable, descriptors) == (3, 11)
    said = (f"{lowerable} nodes as {descriptors} descriptors on numpy DirectML emulator, "
            "1 node on onnxruntime:CPUExecutionProvider")
    capsys.readouterr()
    assert main(["run", str(model), "--feature-level", "1_0"]) == 0
    assert f"; ran: {said}\n" in capsys.readouterr().out
    assert main(["check", str(model), "--feature-level", "1_0"]) == 0
    out = " ".join(capsys.readouterr().out.split())  # rich folds long lines
    assert f"ran: numpy (onnxruntime:CPUExecutionProvider): {said} ran: " in out
    assert ("ran: onnxruntime (CPUExecutionProvider): 4 nodes on "
            "onnxruntime:CPUExecutionProvider Slice / Concat") in out
    assert main(["check", str(model), "--feature-level", "1_0", "--json"]) == 0
    numpy_run = json.loads(capsys.readouterr().out)["runs"][0]
    assert numpy_run["engines"]["numpy DirectML emulator"] == descriptors
    assert numpy_run["engine_nodes"] == {"numpy DirectML emulator": lowerable,
                                         "onnxruntime:CPUExecutionProvider": 1}
