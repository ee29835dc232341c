"""onnxruntime 1.32 kills the process running a Split that omits an output (named ""):
``run`` and ``check`` of one died, exit 139 and no word. Each runs in a subprocess here, as a
regression would kill the test process."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
import pytest
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
    output named, equal to NumPy's split. ``check``'s reference, onnxruntime's session over
    the model file, runs it named in a copy too."""
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
    # the reference is onnxruntime on the model, its omitted output named in a copy (it was
    # onnx.reference, onnxruntime having died of the model in a forked child)
    assert "vs onnxruntime on the original model (CPUExecutionProvider)" in out


# -- every op whose omitted output onnxruntime 1.32 dies of, and every public entry point ---

_F = TensorProto.FLOAT


def _info(name: str, elem: int = _F, shape: list[int] | None = None) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem, shape)


def _model(nodes: list[onnx.NodeProto], inputs: list[onnx.ValueInfoProto], outputs: list[str],
           inits: tuple[np.ndarray, ...] = (), names: str = "", opset: int = 18,
           functions: tuple[onnx.FunctionProto, ...] = ()) -> onnx.ModelProto:
    """A model of ``nodes``; ``inits`` named by ``names`` (space-separated); ``functions``
    of the domain "local"."""
    graph = helper.make_graph(
        nodes, "g", inputs, [_info(o) for o in outputs],
        [onnx.numpy_helper.from_array(a, n) for n, a in zip(names.split(), inits)])
    imports = [helper.make_opsetid("", opset)]
    imports += [helper.make_opsetid("local", 1)] if functions else []
    return helper.make_model(graph, opset_imports=imports, ir_version=8,
                             functions=list(functions))


#: A BatchNormalization's scale, bias, mean and variance, per channel of x[1, 2, 3, 3].
_STATS = tuple(np.array(v, np.float32) for v in ([1.5, 0.5], [0.1, -0.2], [0.3, 1.0],
                                                 [2.0, 0.5]))


def _batch_norm(opset: int, outputs: list[str], **attrs: int) -> onnx.ModelProto:
    """x[1, 2, 3, 3] normalized per channel (``_STATS``), some statistics omitted."""
    node = helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], outputs)
    node.attribute.extend(helper.make_attribute(k, v) for k, v in attrs.items())
    return _model([node], [_info("x", _F, [1, 2, 3, 3])], [o for o in outputs if o], _STATS,
                  "s b m v", opset)


def _loop() -> onnx.ModelProto:
    """A Loop of 3 iterations over x[2, 4]: its final carried value omitted, its scan output
    (x, x + 1, x + 2) kept."""
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond"], ["cond_out"]),
         helper.make_node("Add", ["c", "one"], ["c_out"]),
         helper.make_node("Identity", ["c"], ["s"])], "body",
        [_info("i", TensorProto.INT64, []), _info("cond", TensorProto.BOOL, []),
         _info("c", _F, [2, 4])],
        [_info("cond_out", TensorProto.BOOL, []), _info("c_out", _F, [2, 4]),
         _info("s", _F, [2, 4])],
        [onnx.numpy_helper.from_array(np.array(1, np.float32), "one")])
    node = helper.make_node("Loop", ["n", "", "x"], ["", "scan"], body=body)
    return _model([node], [_info("x", _F, [2, 4])], ["scan"], (np.array(3, np.int64),), "n")


def _if() -> onnx.ModelProto:
    """An If whose first output (each branch's first half of x[2, 4]) is omitted."""
    def branch(name: str, op: str) -> onnx.GraphProto:
        return helper.make_graph(
            [helper.make_node(op, ["x"], ["t"]),
             helper.make_node("Split", ["t"], ["a", "b"], axis=1, num_outputs=2)],
            name, [], [_info("a"), _info("b")])
    node = helper.make_node("If", ["c"], ["", "o"], then_branch=branch("then", "Neg"),
                            else_branch=branch("else", "Abs"))
    return _model([node], [_info("x", _F, [2, 4])], ["o"], (np.array(True),), "c")


def _split_in_function() -> onnx.ModelProto:
    """A model-local function whose Split omits its first output."""
    function = helper.make_function(
        "local", "SecondHalf", ["x"], ["b"],
        [helper.make_node("Split", ["x"], ["", "b"], axis=1, num_outputs=2)],
        opset_imports=[helper.make_opsetid("", 18)])
    node = helper.make_node("SecondHalf", ["x"], ["y"], domain="local")
    return _model([node], [_info("x", _F, [2, 4])], ["y"], functions=(function,))


def _normalized(x: np.ndarray) -> list[np.ndarray]:
    """BatchNormalization-9's Y in training mode (five outputs, the spec's "Output case #1"),
    by NumPy: x normalized by its own per-channel mean and (biased) variance. onnx.reference
    cannot run it: its opset-9 BatchNormalization makes Y alone, in test mode."""
    scale, bias = (v.reshape(1, 2, 1, 1) for v in _STATS[:2])
    mean, var = x.mean(axis=(0, 2, 3), keepdims=True), x.var(axis=(0, 2, 3), keepdims=True)
    return [(x - mean) / np.sqrt(var + 1e-5) * scale + bias]


#: Models onnxruntime 1.32 dies of as given (SIGSEGV), each with an output omitted: x's shape.
FATAL: dict[str, tuple[onnx.ModelProto, tuple[int, ...]]] = {
    "split": (_model([helper.make_node("Split", ["x"], ["", "b"], axis=1, num_outputs=2)],
                     [_info("x", _F, [2, 4])], ["b"]), (2, 4)),
    "split-11-last": (_model([helper.make_node("Split", ["x"], ["a", ""], axis=1)],
                             [_info("x", _F, [2, 4])], ["a"], opset=11), (2, 4)),
    "batchnorm-training-15": (_batch_norm(15, ["y", "", "var"], training_mode=1), (1, 2, 3, 3)),
    "batchnorm-9": (_batch_norm(9, ["y", "", "", "", ""]), (1, 2, 3, 3)),
    "loop": (_loop(), (2, 4)),
    "if": (_if(), (2, 4)),
    "split-in-function": (_split_in_function(), (2, 4)),
}
#: The outputs of the ``FATAL`` models onnx.reference cannot run, by NumPy (its Loop cannot
#: make an output named "").
ORACLES: dict[str, Callable[[np.ndarray], list[np.ndarray]]] = {
    "batchnorm-9": _normalized,
    "loop": lambda x: [np.stack([x, x + 1, x + 2])],
}

#: Runs the model file argv[1] on onnxruntime as given (argv[2] "plain") or through the
#: onnxruntime backend's public entry points (argv[2] one of them), and prints the result.
_ENTRY = """
import sys, numpy as np, onnx, onnxruntime as ort
from backends.base import BackendError
from backends.onnxruntime import OnnxruntimeBackend
path, how, shape = sys.argv[1], sys.argv[2], tuple(map(int, sys.argv[3].split(",")))
feeds = {"x": (np.arange(np.prod(shape), dtype=np.float32).reshape(shape) - 3) / 4}
backend = OnnxruntimeBackend(["CPU"])
if how == "plain":
    outputs = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feeds)
elif how == "foreign-session":
    try:
        backend.execute_session(ort.InferenceSession(path, providers=["CPUExecutionProvider"]),
                                feeds, "m.onnx")
    except BackendError as exc:
        print("refused:", exc)
    sys.exit(0)
else:
    model = {"path": path, "proto": onnx.load(path), "bytes": open(path, "rb").read()}[how]
    first = backend.execute_model(model, feeds).outputs
    session = backend.session(model, optimize=False)
    second = backend.execute_session(session, feeds).outputs
    assert first.keys() == second.keys()
    assert all(np.array_equal(first[k], second[k]) for k in first)
    outputs = list(first.values())
np.savez(sys.argv[4], *outputs)
"""


def _entry(path: Path, how: str, shape: tuple[int, ...]
           ) -> tuple[subprocess.CompletedProcess[str], Path]:
    """``_ENTRY`` of the model file ``path`` in a subprocess, and where its outputs lie."""
    out = path.with_name(f"{path.stem}-{how}.npz")
    done = subprocess.run(
        [sys.executable, "-c", _ENTRY, str(path), how, ",".join(map(str, shape)), str(out)],
        capture_output=True, text=True, timeout=300, cwd=ROOT)
    return done, out


def _saved(tmp_path: Path, case: str) -> Path:
    path = tmp_path / f"{case}.onnx"
    onnx.save(FATAL[case][0], path)
    return path


@pytest.mark.parametrize("case", sorted(FATAL))
def test_onnxruntime_dies_of_each_fatal_omission(tmp_path: Path, case: str) -> None:
    """The facts ``OMITTED_OUTPUT_KILLS`` rests on: onnxruntime's own session over each
    model dies of SIGSEGV; each is refused by execute_session with one line, as it cannot
    be renamed (it died there too)."""
    path, shape = _saved(tmp_path, case), FATAL[case][1]
    died, _ = _entry(path, "plain", shape)
    assert died.returncode == -11, (died.returncode, died.stderr[-1000:])
    refused, _ = _entry(path, "foreign-session", shape)
    assert refused.returncode == 0, (refused.returncode, refused.stderr[-1000:])
    words = refused.stdout.strip()
    assert words.count("\n") == 0 and words.startswith("refused: m.onnx: the session's model "
                                                       "has node ''"), words
    assert "make the session with OnnxruntimeBackend.session" in words


@pytest.mark.parametrize("how", ["path", "proto", "bytes"])
@pytest.mark.parametrize("case", sorted(FATAL))
def test_session_and_execute_model_name_the_omitted_output(tmp_path: Path, case: str,
                                                           how: str) -> None:
    """``session`` / ``execute_model`` of each model, given as a path, a ModelProto or bytes,
    killed the process (exit -11): they run it, its omitted outputs named in a copy, equal to
    onnx.reference; the file is untouched."""
    from onnx.reference import ReferenceEvaluator

    model, shape = FATAL[case]
    path = _saved(tmp_path, case)
    done, out = _entry(path, how, shape)
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    assert onnx.load(path) == model
    x = (np.arange(np.prod(shape), dtype=np.float32).reshape(shape) - 3) / 4
    oracle = ORACLES.get(case)
    want = oracle(x) if oracle else ReferenceEvaluator(model).run(None, {"x": x})
    got = np.load(out)
    assert len(got.files) == len(want)
    for i, value in enumerate(want):
        np.testing.assert_allclose(got[f"arr_{i}"], value, rtol=1e-5, atol=1e-6)


def test_session_of_a_file_with_external_data(tmp_path: Path) -> None:
    """A file whose weight lies in external data, named in a serialized copy, still finds it
    (by the file's folder); the file and its data are untouched."""
    weight = np.arange(8, dtype=np.float32).reshape(2, 4) * 10
    model = _model([helper.make_node("Add", ["x", "w"], ["s"]),
                    helper.make_node("Split", ["s"], ["", "b"], axis=1, num_outputs=2)],
                   [_info("x", _F, [2, 4])], ["b"], (weight,), "w")
    path = tmp_path / "m.onnx"
    onnx.save(model, path, save_as_external_data=True, location="w.bin", size_threshold=0)
    before = path.read_bytes(), (tmp_path / "w.bin").read_bytes()
    done, out = _entry(path, "path", (2, 4))
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    assert (path.read_bytes(), (tmp_path / "w.bin").read_bytes()) == before
    x = (np.arange(8, dtype=np.float32).reshape(2, 4) - 3) / 4
    np.testing.assert_array_equal(np.load(out)["arr_0"], (x + weight)[:, 2:])


def test_name_omitted_names_every_fatal_case() -> None:
    """Each ``FATAL`` model is found, and named in a copy (the model itself unchanged)."""
    for case, (model, _) in FATAL.items():
        before = model.SerializeToString()
        named = name_omitted(model)
        assert omits_fatally(model) and not omits_fatally(named), case
        assert model.SerializeToString() == before, case


@pytest.mark.parametrize("case", ["batchnorm-training-15", "loop", "if", "split-in-function"])
def test_run_and_check_of_each_fatal_omission(tmp_path: Path, case: str) -> None:
    """``run --backend onnxruntime`` and ``check`` of a BatchNormalization, Loop or If
    omitting an output (or a function's Split) died with onnxruntime (exit -11, no word):
    ``run`` agrees with onnx.reference (NumPy for the Loop), ``check`` with onnxruntime's
    session over the file."""
    from onnx.reference import ReferenceEvaluator

    model, shape = FATAL[case]
    path = _saved(tmp_path, case)
    x = (np.arange(np.prod(shape), dtype=np.float32).reshape(shape) - 3) / 4
    np.savez(tmp_path / "in.npz", x=x)
    oracle = ORACLES.get(case)
    want = oracle(x) if oracle else ReferenceEvaluator(model).run(None, {"x": x})
    done = _dmlgraph("run", str(path), "--backend", "onnxruntime", "--inputs",
                     str(tmp_path / "in.npz"), "--output", str(tmp_path / "out.npz"))
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    got = np.load(tmp_path / "out.npz")
    names = [o.name for o in model.graph.output]
    for name, value in zip(names, want):
        np.testing.assert_allclose(got[name], value, rtol=1e-5, atol=1e-6)
    done = _dmlgraph("check", str(path), "--inputs", str(tmp_path / "in.npz"))
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    out = " ".join(done.stdout.split())
    assert "parity holds" in out and "vs onnxruntime on the original model" in out
