"""The nodes onnxruntime's errors say it failed at, read from its own words alone and matched
whole against the graph's names (``parity.failure_names``, ``providers.failed_chain``): never
from the model's path dmlgraph writes before them, never cut at a quote a name holds. Oracles:
onnxruntime's real texts (asserted first) and onnx.reference; a wrong value is planted in the
numpy backend's outputs to prove check does not excuse it."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from dmlgraph import load
from dmlgraph.cli import main
from dmlgraph.parity import failed_names, failed_nodes

CPU = ["CPUExecutionProvider"]


def _info(name: str, shape, elem: int = TensorProto.FLOAT) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem, shape)


def _ints(name: str, values) -> onnx.TensorProto:
    return numpy_helper.from_array(np.array(values, np.int64), name)


def _model(nodes, inputs, outputs, inits=(), opset: int = 18) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                             ir_version=8)


def _run_error(model: onnx.ModelProto, feeds) -> str:
    """onnxruntime's own words running ``model`` (the first line, as dmlgraph keeps them)."""
    session = ort.InferenceSession(model.SerializeToString(), providers=CPU)
    with pytest.raises(Exception) as failure:
        session.run(None, feeds)
    return str(failure.value).splitlines()[0]


def _reflect_pad_beside_an_int16_pad(name: str) -> onnx.ModelProto:
    """A reflect Pad 'pad' by more than its input's size (a known divergence, undefined in
    ONNX: its output is not compared) and, apart from it, an int16 edge Pad named ``name``,
    which onnxruntime has no kernel for (``CANNOT_RUN``): check compares J with
    onnx.reference."""
    return _model([
        helper.make_node("Pad", ["X", "p"], ["Y"], mode="reflect", name="pad"),
        helper.make_node("Cast", ["X"], ["I"], to=TensorProto.INT16, name="n2"),
        helper.make_node("Pad", ["I", "one"], ["J"], mode="edge", name=name),
    ], [_info("X", [2, 3])], [_info("Y", None), _info("J", None, TensorProto.INT16)],
        [_ints("p", [0, 3, 0, 4]), _ints("one", [1, 1, 1, 1])])


def _plant_wrong_values(monkeypatch) -> None:
    """Every output the numpy backend returns 1 off: a dmlgraph bug ``check`` must fail."""
    import backends.numpy.backend as numpy_backend

    execute = numpy_backend.NumpyBackend.execute

    def wrong(self, graph, feeds, outputs=None):
        result = execute(self, graph, feeds, outputs)
        return dataclasses.replace(result, outputs={
            k: v + 1 for k, v in result.outputs.items()})

    monkeypatch.setattr(numpy_backend.NumpyBackend, "execute", wrong)


#: (folder, the int16 Pad's name): a quoted divergent name, and a run's words naming the
#: Cast before the int16 Pad, in the path or in the refused node's name.
NAMED_ELSEWHERE = [
    ("'pad' running Cast node. Name:'n2'", "p16"),
    ("m", "running Cast node. Name:'n2' 'pad'"),
    ("m", "x'pad'"),
]


@pytest.mark.parametrize("folder, name", NAMED_ELSEWHERE)
def test_a_wrong_output_is_not_excused_by_a_divergent_name_in_a_path_or_another_name(
    folder: str, name: str, tmp_path: Path, capsys, monkeypatch
) -> None:
    """onnxruntime refuses the int16 Pad (whose J the reflect Pad does not reach): J is
    compared with onnx.reference, and a wrong J fails check. With "'pad'" in the folder (or in
    the refused Pad's name) the refusal was taken for one at the divergent 'pad', and with
    "running Cast node. Name:'n2'" there J was taken to need the node failed at: J went not
    compared, "nothing compared", exit 0, its values wrong (named x'pad': exit 2)."""
    model = _reflect_pad_beside_an_int16_pad(name)
    with pytest.raises(Exception, match="Could not find an implementation for Pad"):
        ort.InferenceSession(model.SerializeToString(), providers=CPU)
    folder_path = tmp_path / folder
    folder_path.mkdir()
    onnx.save(model, folder_path / "m.onnx")
    np.savez(folder_path / "in.npz", X=np.arange(6, dtype=np.float32).reshape(2, 3))
    args = ["check", str(folder_path / "m.onnx"), "--fallback", "reference", "--inputs",
            str(folder_path / "in.npz")]
    assert main(args) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "vs onnx.reference on the original model (onnxruntime cannot run it" in out
    assert "parity holds" in out
    _plant_wrong_values(monkeypatch)
    assert main(args) == 1
    out = " ".join(capsys.readouterr().out.split())
    assert "│ J │ fail │" in out and "parity FAILS" in out


@pytest.mark.parametrize("folder", ["'pad'", "running Pad node. Name:'pad'"])
def test_run_on_onnxruntime_names_no_divergence_by_the_path(folder: str, tmp_path: Path,
                                                            capsys) -> None:
    """``run --backend onnxruntime`` of the model above from a folder named "'pad'" said "a
    known divergence at node 'pad', which the numpy backend runs", where onnxruntime
    refused the int16 Pad: it says what runs a model onnxruntime cannot run."""
    folder_path = tmp_path / folder
    folder_path.mkdir()
    onnx.save(_reflect_pad_beside_an_int16_pad("p16"), folder_path / "m.onnx")
    assert main(["run", str(folder_path / "m.onnx"), "--backend", "onnxruntime"]) == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1 and "'p16'" in error
    assert "known divergence" not in error
    assert error.endswith("--backend numpy --fallback reference, get_backend('numpy', "
                          "fallback='reference') in Python)")


def _loop_of_a_failing_reshape(loop: str, inner: str) -> tuple[onnx.ModelProto, dict]:
    """A Loop whose body reshapes [2] to [5]: onnxruntime fails at the body's Reshape."""
    body = helper.make_graph(
        [helper.make_node("Reshape", ["v", "sh"], ["v2"], name=inner),
         helper.make_node("Identity", ["c"], ["c2"], name="id")], "body",
        [_info("i", [], TensorProto.INT64), _info("c", [], TensorProto.BOOL), _info("v", None)],
        [_info("c2", [], TensorProto.BOOL), _info("v2", None)], [_ints("sh", [5])])
    model = _model([helper.make_node("Loop", ["M", "", "X"], ["Y"], body=body, name=loop),
                    helper.make_node("Neg", ["X"], ["Z"], name=loop.partition("'")[0])],
                   [_info("X", [2])], [_info("Y", None), _info("Z", None)], [_ints("M", 2)],
                   opset=13)
    return model, {"X": np.ones(2, np.float32)}


@pytest.mark.parametrize("loop, inner", [
    ("lo'op", "in'ner"),
    ("lo' Status Message: x", "in' Status Message: y"),
])
def test_the_nodes_a_run_failed_at_are_read_whole(loop: str, inner: str) -> None:
    """onnxruntime quotes names as they are: a regex's ``[^']*`` read the Loop "lo'op" as
    'lo', another node (a Neg) so named, and the failure was that Neg's."""
    model, feeds = _loop_of_a_failing_reshape(loop, inner)
    text = _run_error(model, feeds)
    assert f"Loop node. Name:'{loop}' Status Message: " in text
    graph = load(model)
    (node,) = failed_nodes(graph, text)
    assert node.op_type == "Loop" and node.name == loop
    assert failed_names(text, {loop, inner, "id", loop.partition("'")[0]}) == [loop, inner]


@pytest.mark.parametrize("level", ["1_0", "6_4"])
def test_a_group_onnxruntime_cannot_load_is_named_in_the_model_s_order(tmp_path, capsys, level):
    """Four STRING Pads onnxruntime has no kernel for, left to the fallback as one group; the
    first crops one axis and pads another, which the lowering splits into a Slice and a Pad
    before giving it back to ONNX, with a new id: the error named "constant_pad, reflect_pad,
    edge_pad and 1 more", leaving out the model's first node. Oracles: the model's node list,
    and onnxruntime's own words, which name its first node."""
    modes = ["wrap", "constant", "reflect", "edge"]
    model = _model([helper.make_node("Pad", ["S", "crop" if m == "wrap" else "one"], [f"Y{m}"],
                                     mode=m, name=f"{m}_pad") for m in modes],
                   [_info("S", [2, 3], TensorProto.STRING)],
                   [_info(f"Y{m}", None, TensorProto.STRING) for m in modes],
                   [_ints("crop", [0, -1, 0, 1]), _ints("one", [0, 1, 0, 1])], opset=19)
    feeds = {"S": np.array([list("abc"), list("def")])}
    with pytest.raises(Exception, match="implementation for Pad.* 'wrap_pad'"):
        ort.InferenceSession(model.SerializeToString(), providers=CPU)
    path, inputs = tmp_path / "pads.onnx", tmp_path / "in.npz"
    onnx.save(model, path)
    np.savez(inputs, **feeds)
    assert main(["run", str(path), "--inputs", str(inputs), "--feature-level", level]) == 2
    first = ", ".join(f"{n.name} ({n.op_type})" for n in model.graph.node[:3])
    assert f"node(s) {first} and 1 more: onnxruntime cannot load" in capsys.readouterr().err
