"""onnxruntime 1.32 kills the process running a Split that omits an output (named ""):
``run`` and ``check`` of one died, exit 139 and no word. Each runs in a subprocess here, as a
regression would kill the test process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper

from backends.onnxruntime.providers import name_omitted, omits_fatally

ROOT = Path(__file__).resolve().parent.parent


def _split(outputs: list[str], path: Path) -> Path:
    """A Split of x[2, 4] on axis 1 into ``outputs`` (opset 18, ir_version 10)."""
    graph = helper.make_graph(
        [helper.make_node("Split", ["x"], outputs, axis=1, num_outputs=len(outputs))], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs if o])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)],
                                ir_version=10), path)
    return path


def _dmlgraph(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "dmlgraph", *args], capture_output=True,
                          text=True, timeout=300, cwd=ROOT)


def test_onnxruntime_still_dies_of_a_split_omitting_an_output(tmp_path: Path) -> None:
    """The fact the fix rests on (if a newer onnxruntime runs it, ``OMITTED_OUTPUT_KILLS``
    may go): a session over the model as given dies of SIGSEGV; named, it runs."""
    code = ("import numpy as np, onnxruntime as ort, sys\n"
            "s = ort.InferenceSession(sys.argv[1], providers=['CPUExecutionProvider'])\n"
            "print(s.run(None, {'x': np.ones((2, 4), np.float32)})[0].shape)\n")
    path = _split(["", "b"], tmp_path / "m.onnx")
    died = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True)
    assert died.returncode == -11
    named = tmp_path / "named.onnx"
    onnx.save(name_omitted(onnx.load(path)), named)
    ran = subprocess.run([sys.executable, "-c", code, str(named)], capture_output=True,
                         text=True)
    assert ran.returncode == 0 and ran.stdout.strip() == "(2, 2)"


def test_name_omitted_names_each_omitted_output_afresh() -> None:
    graph = helper.make_graph(
        [helper.make_node("Split", ["x"], ["", "omitted_0", ""], axis=0, num_outputs=3)],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [6])],
        [helper.make_tensor_value_info("omitted_0", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    named = name_omitted(model)
    outputs = list(named.graph.node[0].output)
    assert outputs[1] == "omitted_0" and all(outputs) and len(set(outputs)) == 3
    assert omits_fatally(model.graph) and not omits_fatally(named.graph)
    assert list(model.graph.node[0].output) == ["", "omitted_0", ""]  # (a copy)


def test_run_and_check_of_a_split_omitting_its_first_output(tmp_path: Path) -> None:
    """``run`` (the numpy backend's onnxruntime segment, and ``--backend onnxruntime``) ran
    the Split on onnxruntime and died (exit 139, no word): they run it with the omitted
    output named, equal to NumPy's split. ``check``'s reference on the model file as given
    dies in its forked child, and it compares with onnx.reference, saying so."""
    path = _split(["", "b"], tmp_path / "m.onnx")
    x = np.arange(8, dtype=np.float32).reshape(2, 4) - 3
    np.savez(tmp_path / "in.npz", x=x)
    want = np.split(x, 2, axis=1)[1]
    for backend in ("numpy", "onnxruntime"):
        done = _dmlgraph("run", str(path), "--backend", backend, "--inputs",
                         str(tmp_path / "in.npz"), "--output", str(tmp_path / f"{backend}.npz"))
        assert done.returncode == 0, done.stderr[-2000:]
        np.testing.assert_array_equal(np.load(tmp_path / f"{backend}.npz")["b"], want)
    done = _dmlgraph("check", str(path), "--inputs", str(tmp_path / "in.npz"))
    assert done.returncode == 0, done.stderr[-2000:]
    out = " ".join(done.stdout.split())
    assert "parity holds" in out
    assert "vs onnx.reference on the original model (onnxruntime cannot run it: it died of " \
        "SIGSEGV (signal 11) on it)" in out
