"""What a user types and reads, at the edges an audit found: names that look like markup or
hold control characters, external data in local functions and behind symlinks, nodes that
share a name, output types, input shapes the checker needs, JSON numbers, malformed
DxDispatch parts, usage errors, and opsets of other domains."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import dmlgraph
from dmlgraph.cli import main
from dmlgraph.errors import ModelLoadError, ModelValidationError, UnsupportedError
from lowering import lower

MODELS = Path(__file__).parent.parent / "models"
FLOAT = TensorProto.FLOAT


def _slice_model(name: str = "s", data: str = "x", ends: str = "en", opset: int = 13,
                 output_type: int = FLOAT) -> onnx.ModelProto:
    graph = helper.make_graph(
        [helper.make_node("Slice", [data, "st", ends], ["y"], name=name)], "g",
        [helper.make_tensor_value_info(data, FLOAT, [4, 6])],
        [helper.make_tensor_value_info("y", output_type, [None, None])],
        [numpy_helper.from_array(np.array([1], np.int64), "st"),
         numpy_helper.from_array(np.array([3], np.int64), "en")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)


def _saved(tmp_path: Path, model: onnx.ModelProto, name: str = "m.onnx") -> str:
    path = tmp_path / name
    onnx.save(model, path)
    return str(path)


@pytest.mark.parametrize("name", ["[/]", "[bold]s", "a[/e]b"])
def test_lower_prints_names_as_given_not_as_markup(name: str, tmp_path: Path, capsys) -> None:
    assert main(["lower", _saved(tmp_path, _slice_model(name))]) == 0
    assert f"│ {name} " in capsys.readouterr().out


def test_external_data_of_a_local_function_is_held_to_the_models_folder(tmp_path: Path):
    """A Constant inside a model-local function naming a file beside the model's folder:
    refused like any other tensor's (it was read from the working directory)."""
    folder = tmp_path / "model"
    folder.mkdir()
    np.array([3], np.int64).tofile(tmp_path / "secret.bin")
    ends = numpy_helper.from_array(np.array([0], np.int64), "en_t")
    ends.ClearField("raw_data")
    ends.ClearField("int64_data")
    ends.data_location = TensorProto.EXTERNAL
    entry = ends.external_data.add()
    entry.key, entry.value = "location", "../secret.bin"
    function = helper.make_function(
        "local", "F", ["a"], ["b"],
        [helper.make_node("Constant", [], ["st"], value_ints=[1]),
         helper.make_node("Constant", [], ["en"], value=ends),
         helper.make_node("Slice", ["a", "st", "en"], ["b"])],
        opset_imports=[helper.make_opsetid("", 13)])
    graph = helper.make_graph(
        [helper.make_node("F", ["x"], ["y"], domain="local")], "g",
        [helper.make_tensor_value_info("x", FLOAT, [4, 6])],
        [helper.make_tensor_value_info("y", FLOAT, [None, None])])
    model = helper.make_model(graph, functions=[function], ir_version=10, opset_imports=[
        helper.make_opsetid("", 13), helper.make_opsetid("local", 1)])
    path = folder / "m.onnx"
    onnx.save(model, path)
    with pytest.raises(ModelLoadError, match="escapes the model's folder"):
        dmlgraph.load(path)


def test_a_symlinked_model_reads_the_external_data_beside_the_link(tmp_path: Path) -> None:
    """onnx and onnxruntime read a linked model's external data from the link's folder."""
    real, link = tmp_path / "real", tmp_path / "link"
    real.mkdir()
    link.mkdir()
    model = _slice_model()
    weights = numpy_helper.from_array(np.zeros(6, np.float32), "c")
    weights.ClearField("raw_data")
    weights.data_location = TensorProto.EXTERNAL
    entry = weights.external_data.add()
    entry.key, entry.value = "location", "w.bin"
    model.graph.initializer.append(weights)
    model.graph.node.append(helper.make_node("Add", ["y", "c"], ["z"]))
    model.graph.output.append(helper.make_tensor_value_info("z", FLOAT, [None, None]))
    onnx.save(model, real / "m.onnx")
    (real / "w.bin").write_bytes(np.full(6, 1, np.float32).tobytes())
    (link / "w.bin").write_bytes(np.full(6, 2, np.float32).tobytes())
    os.symlink(real / "m.onnx", link / "m.onnx")
    expected = onnx.load(str(link / "m.onnx"))  # the oracle: onnx's own reading
    (c,) = [numpy_helper.to_array(t) for t in expected.graph.initializer if t.name == "c"]
    assert c.tolist() == [2] * 6
    assert dmlgraph.load(link / "m.onnx").constant("c").tolist() == c.tolist()


def test_html_draws_nodes_of_one_name_each_with_its_own_status(tmp_path: Path) -> None:
    """Two unnamed Slices, one lowered and one left ONNX (its ends are an input): the ONNX
    panel shows each as it is, in groups of their own."""
    model = _slice_model(name="")
    model.graph.node.append(helper.make_node("Slice", ["x", "st", "e"], ["y2"]))
    model.graph.input.append(helper.make_tensor_value_info("e", TensorProto.INT64, [1]))
    model.graph.output.append(helper.make_tensor_value_info("y2", FLOAT, [None, None]))
    out = tmp_path / "r.html"
    assert main(["viz", _saved(tmp_path, model), "-o", str(out)]) == 0
    found = re.findall(r'class="node k-op (st-\w+)[^"]*" data-key="(o-n\d+)" data-groups="(\w+)"',
                       out.read_text())
    assert sorted(found) == [("st-fallback", "o-n1", "g1"), ("st-lowered", "o-n0", "g0")]


def test_an_output_declared_of_another_type_than_its_producer_is_refused() -> None:
    with pytest.raises(ModelValidationError, match=r"data has dtype float32 and output \('y'\) "
                                                   r"int32; Slice-13 gives them one type"):
        dmlgraph.load(_slice_model(output_type=TensorProto.INT32))


def test_graph_inputs_and_outputs_without_a_shape_are_imported(tmp_path: Path) -> None:
    """ONNX lets a tensor type omit its shape, and onnxruntime (the oracle) runs such a
    model; onnx's checker requires the field on graph inputs and outputs, so it checks a
    copy that has an empty one. The input's rank stays unknown (run-time lowering), unless
    --input-shape gives it; the output takes the computed shape. The user's model is not
    changed."""
    import onnxruntime as ort

    model = _slice_model()
    model.graph.input[0].type.tensor_type.ClearField("shape")
    model.graph.output[0].type.tensor_type.ClearField("shape")
    before = model.SerializeToString()
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    (expected,) = ort.InferenceSession(before, providers=["CPUExecutionProvider"]).run(
        None, {"x": x})
    graph = dmlgraph.load(model)
    assert graph.tensor("x").shape is None and model.SerializeToString() == before
    report = dmlgraph.check(model, inputs={"x": x})
    assert report.passed and report.comparisons[0].outputs[0].expected_shape == expected.shape
    shaped = dmlgraph.load(_saved(tmp_path, model), {"x": [4, 6]})
    assert shaped.tensor("y").shape == (2, 6)


def test_an_infinite_tolerance_is_refused_with_json_too(tmp_path: Path, capsys) -> None:
    """--atol inf passed every float output (fix-small9 refuses it): with --json as well,
    one line on stderr, nothing on stdout, exit 2."""
    path = _saved(tmp_path, _slice_model())
    with pytest.raises(SystemExit) as exited:  # (argparse's refusal)
        main(["check", path, "--atol", "inf", "--json"])
    assert exited.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "a tolerance is a finite number >= 0" in captured.err
    assert len(captured.err.strip().splitlines()) == 1


@pytest.mark.parametrize("edit, message", [
    (lambda m: m["commands"][0].update(dispatchable=["join"]), 'unknown dispatchable ["join"]'),
    (lambda m: m["commands"][0].update(bindings="InputTensors"), "bindings must be an object"),
    (lambda m: m["commands"][0]["bindings"].update(OutputTensor={"name": ["Out"]}),
     'a binding is a resource name or an object with a "name", not {"name": ["Out"]}'),
    (lambda m: m["commands"][0]["bindings"].update(OutputTensor={"name": "Outt"}),
     'binds unknown resource "Outt"'),
    (lambda m: m["commands"][0]["bindings"].update(OutputTensor={"name": "Out", "ofset": 1}),
     'unknown binding field "ofset"'),
    (lambda m: m["commands"][0].update(bindngs={}), 'command 0: unknown dispatch field "bindngs"'),
    (lambda m: m["commands"].append({"type": "print", "resource": "Out", "x": 1}),
     'unknown print field "x"'),
    (lambda m: m["resources"]["Out"].update(sizeInByte=64), 'unknown resource field "sizeInByte"'),
    (lambda m: m.update(extra=1), 'the model: unknown model field "extra"'),
    (lambda m: m["commands"].append({"type": "print", "resource": ["Out"]}),
     'print of unknown resource ["Out"]'),
])
def test_dxdispatch_parts_of_the_wrong_kind_are_one_line_errors(tmp_path, capsys, edit, message):
    model = json.loads((MODELS / "dxdispatch" / "example_join.json").read_text())
    edit(model)
    path = tmp_path / "m.json"
    path.write_text(json.dumps(model))
    assert main(["dxdispatch", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and f"error: {path}: " in err


@pytest.mark.parametrize("args", [
    ["lower", "m.onnx", "--feature-level", "6_5"],
    ["lower", "m.onnx", "--input-shape", "x:-1,6"],
    ["check", "m.onnx", "--atol", "nan"],
    ["viz", "m.onnx"],
    ["run", "m.onnx", "--backend", "cuda"],
])
def test_usage_errors_are_one_line(args: list[str], capsys) -> None:
    with pytest.raises(SystemExit) as info:
        main(args)
    err = capsys.readouterr().err
    assert info.value.code == 2 and err.count("\n") == 1
    assert err.startswith(f"dmlgraph {args[0]}: error:") and "--help" in err


def test_an_ml_opset_newer_than_onnx_knows_is_refused() -> None:
    model = _slice_model()
    model.opset_import.append(helper.make_opsetid("ai.onnx.ml", 99))
    with pytest.raises(UnsupportedError, match=r"ai.onnx.ml opset 99 is newer than the newest "
                                                r"this onnx knows"):
        dmlgraph.load(model)


def test_dot_labels_hold_no_control_characters(tmp_path: Path) -> None:
    """XML, and so Graphviz's HTML-like labels, allows C0 control characters in no form."""
    from dmlgraph.viz.dot import to_dot

    model = _slice_model(data="x\x01y")
    text = to_dot(lower(dmlgraph.load(model)))
    labels = re.findall(r"label=<(.*?)>(?:\];|, tooltip=)", text)
    assert labels and not any(re.search(r"[\x00-\x08\x0b\x0c\x0e-\x1f]", label)
                              for label in labels)
    assert any("x\\x01y" in label for label in labels)


_RAGGED = [[1.0, 2.0], [3.0]]


@pytest.mark.parametrize("call, fragment", [
    (lambda g, l, x: lower("model.onnx"), "lower takes a Graph"),
    (lambda g, l, x: _backend("numpy").run(l, None), "feeds map tensor names to arrays"),
    (lambda g, l, x: _backend("numpy").run(l, [x]), "feeds map tensor names to arrays"),
    (lambda g, l, x: _backend("onnxruntime").run(g, [x]), "feeds map tensor names to arrays"),
    (lambda g, l, x: _backend("numpy").run(l, {"x": _RAGGED}), "cannot be read as an array"),
    (lambda g, l, x: _backend("onnxruntime").run(None, {"x": x}), "run takes a Graph"),
    (lambda g, l, x: _backend("numpy").run(l, {"x": x}, outputs=[x]),
     "outputs map tensor names to arrays"),
    (lambda g, l, x: _backend(["numpy"]), "unknown backend"),
    (lambda g, l, x: _backend("numpy", threads="4"), "threads must be an integer"),
    (lambda g, l, x: _backend("numpy", fallback=3), "neither a name"),
    (lambda g, l, x: dmlgraph.check(_slice_model(), inputs=[x]), "inputs is an .npz"),
    (lambda g, l, x: dmlgraph.check(_slice_model(), inputs={"x": _RAGGED}),
     "cannot be read as an array"),
    (lambda g, l, x: dmlgraph.check(_slice_model(), atol={"y": None}),
     "atol for 'y': None is not a number"),
    (lambda g, l, x: _backend("numpy", thread=2),
     "the numpy backend's options are fallback, feature_level, providers, threads"),
    (lambda g, l, x: _backend("onnxruntime", fallback="reference"),
     "the onnxruntime backend's options are providers"),
    (lambda g, l, x: _backend("onnxruntime", providers=5), "providers = 5: give onnxruntime"),
    (lambda g, l, x: _backend("numpy", providers=[None]), "providers = [None]: give"),
    (lambda g, l, x: g.set_input(g.nodes[0].id, -1, "x"), "input port -1 is not an int from 0"),
    (lambda g, l, x: g.update_tensor("x", shape="46"),
     "tensor 'x': shape '46' is not a sequence of dimensions"),
    (lambda g, l, x: dmlgraph.TensorInfo("t", dtype="foo"), "tensor 't': dtype 'foo' is not one"),
    (lambda g, l, x: dmlgraph.TensorInfo("t", data=_RAGGED), "tensor 't': data is no array"),
    (lambda g, l, x: g.add_input("q"), "add_input takes a TensorInfo"),
    (lambda g, l, x: dmlgraph.check(_slice_model(), cross_check="no"),
     "cross_check is True or False, not 'no'"),
    (lambda g, l, x: dmlgraph.load(_slice_model(), fold="no"), "fold is True or False, not 'no'"),
    (lambda g, l, x: g.to_onnx(ir_version=-1), "ir_version -1 is not an ONNX IR version"),
    (lambda g, l, x: g.to_onnx(ir_version="8"), "ir_version '8' is not an ONNX IR version"),
    (lambda g, l, x: __import__("dmlgraph.viz").viz.to_dot("model.onnx"),
     "to_dot: graph is a Graph (dmlgraph.load, lowering.lower), not str"),
    (lambda g, l, x: __import__("dmlgraph.viz").viz.html_report(g, None),
     "html_report: lowered is a Graph"),
    (lambda g, l, x: __import__("dmlgraph.viz").viz.to_dot(l, title=5),
     "to_dot: title is text, not int"),
    (lambda g, l, x: __import__("dmlgraph.viz").viz.to_dot(l, records=[1, 2]),
     "to_dot: records are the lowering report's"),
    (lambda g, l, x: __import__("dmlgraph.viz").viz.html_report(g, l, parity=5),
     "parity: a ParityReport, its JSON form or a list of per-output records (dicts), not int"),
    (lambda g, l, x: _descriptor("slice", offsets=None).to_json(),
     "Offsets = None: must be a sequence of integers"),
    (lambda g, l, x: _descriptor("padding1", padding_value="x").to_json(),
     "PaddingValue = 'x': must be a number"),
    (lambda g, l, x: hash(_descriptor("slice", offsets=[[0], 0])),
     "DML_OPERATOR_SLICE: Offsets[0] = [0]: must be an integer"),
    (lambda g, l, x: hash(_descriptor("padding1", padding_value=[0.0])),
     "PaddingValue = [0.0]: must be a number"),
    (lambda g, l, x: hash(_descriptor("slice", input_tensor=_tensor_desc([[4], 4]))),
     "DML_OPERATOR_SLICE: InputTensor.Sizes[0] = [4]: must be an integer"),
    (lambda g, l, x: hash(_tensor_desc([4, [4]])),
     "DML_BUFFER_TENSOR_DESC: Sizes[1] = [4]: must be an integer"),
    (lambda g, l, x: dmlgraph.OnnxOp("Relu", "14"), "since_version '14' is not an integer"),
    (lambda g, l, x: dmlgraph.OnnxOp("Relu", 14.5), "since_version 14.5 is not an integer"),
    (lambda g, l, x: dmlgraph.OnnxOp("Relu", True), "since_version True is not an integer"),
    (lambda g, l, x: dmlgraph.OnnxOp("Relu", None), "since_version None is not an integer"),
    (lambda g, l, x: dmlgraph.OnnxOp("Relu", 0), "since_version 0 is not an opset version"),
    (lambda g, l, x: dmlgraph.OnnxOp("Relu", 2**63), "is not an opset version (1 to 2^63 - 1)"),
    (lambda g, l, x: dmlgraph.OnnxOp(None, 14), "op_type None is not an op's name"),
    (lambda g, l, x: dmlgraph.OnnxOp("Relu", 14, None), "domain None is not text"),
    (lambda g, l, x: _tensorio().read(None, g), "read takes a path, not NoneType"),
    (lambda g, l, x: _tensorio().read("x.npz", "model.onnx"), "read takes a Graph"),
    (lambda g, l, x: _tensorio().generate("model.onnx"), "generate takes a Graph"),
    (lambda g, l, x: _tensorio().generate(g, 0, shapes={"x": [7]}),
     "shape [7] for input 'x': give sizes from 0 for its dimensions [4,6]"),
    (lambda g, l, x: _tensorio().write("/tmp/never_written.npz", g, {}, {}),
     "no input array for ['x'] to write"),
    (lambda g, l, x: _tensorio().write("/tmp/never_written.npz", g, [x], [x]),
     "write: inputs map tensor names to arrays, not a list"),
    (lambda g, l, x: __import__("dmlgraph.dxdispatch").dxdispatch.load_model(None),
     "load_model takes a path or a parsed dict, not NoneType"),
    (lambda g, l, x: _backend("onnxruntime").execute_model(g.to_onnx(), [x]),
     "feeds map tensor names to arrays, not a list"),
    (lambda g, l, x: _backend("onnxruntime").execute_model(g.to_onnx(), {"x": _RAGGED}),
     "input 'x' cannot be read as an array"),
    (lambda g, l, x: (g.outputs.append("zz"), g.to_onnx()), "graph output 'zz'"),
    (lambda g, l, x: l.to_onnx(),  # which named no way to get the lowered graph's ONNX
     "to_onnx() writes graphs of ONNX ops only (backends.onnxruntime.translate writes a "
     "lowered graph's DML nodes as ONNX ops)"),
    (lambda g, l, x: __import__("dmlgraph.viz").viz.write_viz("/no/such/folder/x.html", g, l),
     "/no/such/folder/x.html: cannot write: No such file or directory"),
    # a str where a sequence of names goes was read one name per character, silently
    (lambda g, l, x: _add_relu(g, outputs="yy"), "add_node: outputs: 'yy' is not a sequence"),
    (lambda g, l, x: _add_relu(g, inputs="x"), "add_node: inputs: 'x' is not a sequence"),
    (lambda g, l, x: _add_relu(g, inputs=[1]), "add_node: inputs: 1 is not a tensor name"),
    (lambda g, l, x: _add_relu(g, notes="checked"), "notes 'checked' is not a sequence of str"),
    (lambda g, l, x: _add_relu(g, op="Relu"), "op 'Relu' is an OnnxOp (OnnxOp('Relu', 14))"),
    (lambda g, l, x: _add_relu(g, provenance="relu"), "provenance is a Provenance"),
    (lambda g, l, x: g.replace_node(g.nodes[0].id, outputs="yy"),
     "replace_node: outputs: 'yy' is not a sequence of tensor names"),
    (lambda g, l, x: g.set_input(g.nodes[0].id, 0, 3), "input 3 is not a tensor name"),
    (lambda g, l, x: setattr(g, "outputs", "y"), "graph outputs: 'y' is not a sequence"),
    (lambda g, l, x: setattr(g, "outputs", None), "graph outputs: None is not a sequence"),
    (lambda g, l, x: g.add_input(dmlgraph.TensorInfo("x", np.float32, [4, 6])),
     "add_input: 'x' is already a graph input"),
    (lambda g, l, x: g.add_input(dmlgraph.TensorInfo(g.constants[0], np.int64, [1])),
     "is already a graph input, a constant or a node's output"),
    (lambda g, l, x: g.set_tensor("x"), "set_tensor takes a TensorInfo"),
    (lambda g, l, x: g.add_constant("k", _RAGGED), "constant 'k': data is no array"),
    (lambda g, l, x: g.add_constant("k", [1], dtype="foo"), "dtype 'foo' is not one"),
    (lambda g, l, x: g.add_constant("k", [None]), "data of dtype object holds something"),
    (lambda g, l, x: dmlgraph.TensorInfo(5, np.float32), "TensorInfo: name 5 is not text"),
    (lambda g, l, x: lower(g, verify_each="no"), "verify_each is True, False or None, not 'no'"),
    (lambda g, l, x: g.node("0"), "no node with id '0'"),  # said "id 0", which exists
    # an attribute value no ONNX attribute holds met "unhashable type" or an AssertionError
    (lambda g, l, x: dmlgraph.OnnxOp("LeakyRelu", 16, attrs={"alpha": {"a": 1}}),
     "attribute 'alpha': {'a': 1} is not a value ONNX attributes hold"),
    (lambda g, l, x: dmlgraph.OnnxOp("LeakyRelu", 16, attrs={"alpha": {0.5}}),
     "attribute 'alpha': {0.5} is not a value"),
    (lambda g, l, x: dmlgraph.OnnxOp("LeakyRelu", 16, attrs={"alpha": None}),
     "attribute 'alpha': None is not a value"),
    (lambda g, l, x: dmlgraph.OnnxOp("Transpose", 13, attrs={"perm": [[1, 0]]}),
     "attribute 'perm': [1, 0] is not a value"),
    (lambda g, l, x: dmlgraph.OnnxOp("LeakyRelu", 16, attrs={1: 0.5}),
     "attribute name 1 is not text"),
    (lambda g, l, x: dmlgraph.OnnxOp("LeakyRelu", 16, attrs="alpha"),
     "attributes 'alpha' are not a mapping of names to values"),
    (lambda g, l, x: dmlgraph.OnnxOp("LeakyRelu", 16, attrs=None),
     "attributes None are not a mapping"),
    (lambda g, l, x: dmlgraph.Provenance(5, "Relu"), "Provenance: name 5, op_type 'Relu'"),
    (lambda g, l, x: dmlgraph.Provenance("r", "Relu", None), "and domain None are text"),
    (lambda g, l, x: dmlgraph.Provenance("r", "Relu", "", "14"),
     "Provenance 'r': since_version '14' is not an integer"),
    (lambda g, l, x: dmlgraph.Graph(opset_imports={"": "18"}),
     "opset_imports '': '18' is not a domain and an opset version"),
    (lambda g, l, x: dmlgraph.Graph(opset_imports=[("", 18)]), "opset_imports [('', 18)]"),
    (lambda g, l, x: dmlgraph.Graph(ir_version="8"), "ir_version '8' is not an ONNX IR"),
    (lambda g, l, x: dmlgraph.Graph(5), "Graph: name 5 is not text"),
])
def test_api_misuse_is_one_clear_dmlgraph_error(call, fragment) -> None:
    """Arguments of the wrong kind met an AttributeError, a TypeError or NumPy's "truth value
    of an array is ambiguous" from deep inside."""
    graph = dmlgraph.load(_slice_model())
    lowered = lower(graph)
    x = np.zeros((4, 6), np.float32)
    with pytest.raises(dmlgraph.DmlgraphError, match=re.escape(fragment)):
        call(graph, lowered, x)


@pytest.mark.parametrize("op, canonical", [
    (dmlgraph.OnnxOp("Slice", 1, attrs={"starts": [1], "ends": [3], "axes": [0]}), "Slice-13"),
    (dmlgraph.OnnxOp("Pad", 2, attrs={"pads": [1, 0, 0, 2]}), "Pad-25"),
])
@pytest.mark.parametrize("opset", [9, 18])
@pytest.mark.parametrize("use", ["to_onnx", "lower"])
def test_a_slice_or_pad_built_in_its_attribute_form_is_named(op, canonical, opset, use):
    """The IR holds Slice's and Pad's parameters as inputs; a Slice-1 or Pad-2 built with the
    Graph API was read as one without them: to_onnx asked for constants it was never
    given, and lowering a Slice-1 in an opset-18 graph raised a TypeError from its rule."""
    graph = dmlgraph.Graph(opset_imports={"": opset})
    graph.add_input(dmlgraph.TensorInfo("x", np.float32, [4, 6]))
    graph.add_node(op, ["x"], ["y"], dmlgraph.Provenance("n", op.op_type, "", op.since_version))
    graph.outputs = ["y"]
    message = f"{op.op_type}-{op.since_version} holds its parameters as attributes; the IR"
    with pytest.raises(ModelValidationError, match=re.escape(message)) as caught:
        graph.to_onnx() if use == "to_onnx" else lower(graph)
    assert f"build it as {canonical} reading (data, " in str(caught.value)


@pytest.mark.parametrize("use", ["to_onnx", "lower"])
@pytest.mark.parametrize("op", [dmlgraph.OnnxOp("Relu", 6), dmlgraph.OnnxOp("Relu", 99),
                                dmlgraph.OnnxOp("Squeeze", 1, attrs={"axes": [0]})])
def test_a_version_the_opset_does_not_select_is_named(op, use) -> None:
    """A plain op's since_version other than the one the graph's opset selects was written
    as the opset's op: Relu-99 ran as Relu-14, silently, and a Squeeze-1's attribute form
    reached onnxruntime, whose "invalid model" at run time named no version."""
    graph = dmlgraph.Graph(opset_imports={"": 18})
    graph.add_input(dmlgraph.TensorInfo("x", np.float32, [1, 6]))
    graph.add_node(op, ["x"], ["y"], dmlgraph.Provenance("n", op.op_type, "", op.since_version))
    graph.outputs = ["y"]
    selected = {"Relu": 14, "Squeeze": 13}[op.op_type]
    with pytest.raises(ModelValidationError, match=re.escape(
            f"node 'n' ({op.op_type}): since_version {op.since_version} is not the version of "
            f"{op.op_type} that the graph's opset 18 selects ({selected})")):
        graph.to_onnx() if use == "to_onnx" else lower(graph)


@pytest.mark.parametrize("use", ["to_onnx", "lower"])
def test_an_attribute_a_pad_lacks_is_refused_not_dropped(use) -> None:
    """A misspelt "mode" on a Pad built with the Graph API was read by no rule and dropped by
    to_onnx: the reflect padding the user asked for padded with zeros, silently (onnx's
    checker and onnxruntime refuse an unknown attribute)."""
    graph = dmlgraph.Graph(opset_imports={"": 18})
    graph.add_input(dmlgraph.TensorInfo("x", np.float32, [4, 6]))
    pads = graph.add_constant("pads", np.array([1, 0, 0, 2]))
    graph.add_node(dmlgraph.OnnxOp("Pad", 18, attrs={"mdoe": "reflect"}), ["x", pads], ["y"],
                   dmlgraph.Provenance("p", "Pad", "", 18))
    graph.outputs = ["y"]
    with pytest.raises(ModelValidationError,
                       match=re.escape("node 'p' (Pad): attribute 'mdoe' is not Pad's (its "
                                       "attributes: mode)")):
        graph.to_onnx() if use == "to_onnx" else lower(graph)


@pytest.mark.parametrize("op, fragment", [
    (dmlgraph.OnnxOp("LeakyRelu", 16, attrs={"alpha": 1}), "alpha = 1 is not of ONNX type FLOAT"),
    (dmlgraph.OnnxOp("LeakyRelu", 16, attrs={"alpha": np.array(0.5, np.float32)}),
     "alpha = array(0.5, dtype=float32) is not of ONNX type FLOAT"),
    (dmlgraph.OnnxOp("Transpose", 13, attrs={"perm": [1.0, 0.0]}),
     "perm = (1.0, 0.0) is not of ONNX type INTS"),
    (dmlgraph.OnnxOp("Transpose", 13, attrs={"perm": [True, False]}),
     "perm = (True, False) is not of ONNX type INTS"),
    (dmlgraph.OnnxOp("Transpose", 13, attrs={"perm": np.array([1, 0])}),
     "perm = array([1, 0]) is not of ONNX type INTS"),
    (dmlgraph.OnnxOp("Cast", 13, attrs={"to": 6.0}), "to = 6.0 is not of ONNX type INT"),
    (dmlgraph.OnnxOp("LeakyRelu", 16, attrs={"alpha": [0.5]}),  # onnx's bare AssertionError
     "alpha = (0.5,) is not of ONNX type FLOAT"),
])
@pytest.mark.parametrize("use", ["to_onnx", "lower"])
def test_an_attribute_of_another_type_is_named(op, fragment, use) -> None:
    """A value onnx cannot write as the attribute's type met onnx's TypeError from deep
    inside the exporter (to_onnx, and lower, whose inference exports the graph)."""
    graph = dmlgraph.Graph(opset_imports={"": 18})
    graph.add_input(dmlgraph.TensorInfo("x", np.float32, [4, 6]))
    graph.add_node(op, ["x"], ["y"], dmlgraph.Provenance("n", op.op_type, "", op.since_version))
    graph.outputs = ["y"]
    with pytest.raises(ModelValidationError, match=re.escape(f"node 'n' ({op.op_type}): "
                                                             f"attribute {fragment}")):
        graph.to_onnx() if use == "to_onnx" else lower(graph)


def _add_relu(graph, **changes):
    """``graph.add_node`` of a Relu reading 'x', with ``changes`` to its arguments."""
    arguments = dict(op=dmlgraph.OnnxOp("Relu", 14), inputs=["x"], outputs=["r"],
                     provenance=dmlgraph.Provenance("relu", "Relu", "", 14))
    return graph.add_node(**{**arguments, **changes})


def _descriptor(kind: str, **fields):
    """A 2x2 <-> 4x4 SLICE or PADDING1 with ``fields`` replaced."""
    from dmlgraph.dml import BufferTensorDesc, Padding1Desc, SliceDesc, TensorDataType

    small, large = (BufferTensorDesc(TensorDataType.FLOAT32, s) for s in ((2, 2), (4, 4)))
    if kind == "slice":
        base = dict(input_tensor=large, output_tensor=small, offsets=(0, 0), sizes=(2, 2),
                    strides=(1, 1))
        return SliceDesc(**{**base, **fields})
    base = dict(input_tensor=small, output_tensor=large, padding_mode="CONSTANT",
                padding_value_data_type="FLOAT32", padding_value=0.0, start_padding=(1, 1),
                end_padding=(1, 1))
    return Padding1Desc(**{**base, **fields})


def _tensor_desc(sizes):
    from dmlgraph.dml import BufferTensorDesc, TensorDataType

    return BufferTensorDesc(TensorDataType.FLOAT32, sizes)


def _tensorio():
    from dmlgraph import tensorio

    return tensorio


def _backend(name, **options):
    from backends import get_backend

    return get_backend(name, **options)


def test_descriptors_merged_with_another_nodes_are_named_in_the_notes() -> None:
    """Simplify computes identical descriptors once: at FL 1_0 padding_symmetric's 'right'
    said it takes 5 descriptors while 2 of its slices are 'left''s, and its report listed 3."""
    (right,) = [r for r in lower(dmlgraph.load(MODELS / "seeds" / "padding_symmetric.onnx"),
                                 "1_0").report() if r.name == "right"]
    assert any("2 of its descriptors" in note and "'left'" in note for note in right.notes)


SLICE1 = str(MODELS / "seeds" / "slice_example1.onnx")


@pytest.mark.parametrize("args, fragment", [
    (["run", SLICE1, "-o", "{tmp}/missing/o.npz"], "the folder '{tmp}/missing' does not exist"),
    (["run", SLICE1, "-o", "{tmp}/missing/o"], "the folder '{tmp}/missing' does not exist"),
    (["lower", SLICE1, "-o", "{tmp}/missing/x.json"], "does not exist"),
    (["viz", SLICE1, "-o", "{tmp}/missing/x.html"], "does not exist"),
    (["lower", SLICE1, "-o", "{tmp}/folder.json"], "is a folder; name a file"),
    (["dxdispatch", str(MODELS / "dxdispatch" / "example_join.json"), "-o",
      "{tmp}/folder.json.npz"], "is a folder; name a file"),
])
def test_an_output_that_cannot_be_written_is_refused_before_any_work(args, fragment, tmp_path,
                                                                    capsys) -> None:
    """It ran (and printed its results) first, then failed; a folder's missing parents were
    made, a file's were not."""
    (tmp_path / "folder.json").mkdir()
    (tmp_path / "folder.json.npz").mkdir()
    assert main([a.replace("{tmp}", str(tmp_path)) for a in args]) == 2
    out, err = capsys.readouterr()
    assert out == "" and fragment.replace("{tmp}", str(tmp_path)) in err
    assert not (tmp_path / "missing").exists()


@pytest.mark.parametrize("args, fragment", [
    (["run", SLICE1, "--inputs", ""], "an empty path names no file"),  # it read "."
    (["lower", SLICE1, "--feature-level", "0x2101"], "feature level '0x2101'"),  # said 8449
    (["check", SLICE1, "--atol", "Y:1", "--atol", "Y:0"], "--atol gives 'Y' two tolerances"),
    # before the model is read: a missing model must not be what they say
    (["lower", "missing.onnx", "--format", "dxdispatch"], "needs -o OUT.json"),
    (["viz", "missing.onnx", "-o", "out.png"], "cannot tell the format from '.png'"),
    # a suffix alone is a hidden file's name: it was "cannot tell the format from 'no suffix'"
    (["viz", "missing.onnx", "-o", ".html"], "'.html' names a hidden file with no suffix"),
])
def test_usage_errors_name_what_was_typed(args, fragment, capsys) -> None:
    try:
        code = main(args)
    except SystemExit as exc:  # argparse's own errors
        code = exc.code
    assert code == 2 and fragment in capsys.readouterr().err


def test_an_input_no_values_can_be_generated_for_is_named_with_a_hint(tmp_path, capsys) -> None:
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.STRING, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.STRING, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    assert main(["run", _saved(tmp_path, model)]) == 2
    err = capsys.readouterr().err
    assert "input 'x'" in err and "give its value with --inputs" in err


def test_run_shows_a_string_output_s_elements_as_strings(tmp_path, capsys) -> None:
    """A STRING Pad run on onnx.reference (onnxruntime has no string Pad) printed its fill as
    NumPy 2's repr of np.str_ ("np.str_('ab')"), its other elements as 'ab'."""
    graph = helper.make_graph(
        [helper.make_node("Pad", ["x", "p", "v"], ["y"], mode="constant", name="pad")], "g",
        [helper.make_tensor_value_info("x", TensorProto.STRING, [2])],
        [helper.make_tensor_value_info("y", TensorProto.STRING, [5])],
        [numpy_helper.from_array(np.array([1, 2], np.int64), "p"),
         helper.make_tensor("v", TensorProto.STRING, [], [b"ab"])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    np.savez(tmp_path / "in.npz", x=np.array(["s0", "s1"]))
    assert main(["run", _saved(tmp_path, model), "--fallback", "reference", "--inputs",
                 str(tmp_path / "in.npz")]) == 0
    assert "output y: object[5] ['ab', 's0', 's1', 'ab', 'ab']" in capsys.readouterr().out


@pytest.mark.parametrize("backend", ["numpy", "onnxruntime"])
def test_numpys_own_strings_feed_a_string_input(backend) -> None:
    """onnxruntime takes np.array(["a", "bc"]) (dtype <U2) for a STRING input; both backends
    refused it ("input 'x' is <U2; the graph expects object"). The caller's array stays as
    it was."""
    import onnxruntime as ort

    from backends import get_backend

    graph = helper.make_graph([helper.make_node("Concat", ["x", "x"], ["y"], axis=0)], "g",
                              [helper.make_tensor_value_info("x", TensorProto.STRING, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.STRING, [4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    given = np.array(["a", "bc"])
    (expected,) = ort.InferenceSession(model.SerializeToString(),
                                       providers=["CPUExecutionProvider"]).run(None, {"x": given})
    out = get_backend(backend).run(lower(dmlgraph.load(model), "6_4"), {"x": given})["y"]
    assert out.dtype == object and out.tolist() == expected.tolist() == ["a", "bc", "a", "bc"]
    assert given.dtype == np.dtype("<U2") and given.tolist() == ["a", "bc"]


def _runtime_slice_model(dtype: int = FLOAT) -> onnx.ModelProto:
    """y = x[s:] of a [4, 6] x, its start an int64 input, and a Pad whose constant is a
    rank-0 input c of x's type."""
    graph = helper.make_graph(
        [helper.make_node("Slice", ["x", "s", "e"], ["t"], name="sl"),
         helper.make_node("Pad", ["t", "p", "c"], ["y"], name="pad")], "g",
        [helper.make_tensor_value_info("x", dtype, [4, 6]),
         helper.make_tensor_value_info("s", TensorProto.INT64, [1]),
         helper.make_tensor_value_info("c", dtype, [])],
        [helper.make_tensor_value_info("y", dtype, None)],
        [numpy_helper.from_array(np.array([100], np.int64), "e"),
         numpy_helper.from_array(np.array([0, 1, 0, 1], np.int64), "p")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)


def _ort_outputs(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    import onnxruntime as ort

    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


@pytest.mark.parametrize("backend", ["numpy", "onnxruntime"])
def test_python_data_feeds_an_input_as_its_type(backend) -> None:
    """A list or a Python number has no dtype: onnxruntime reads a list as its input's type,
    where both backends refused it as the float64 or int64 NumPy made of it ("input 'x' is
    float64; the graph expects float32", of a list). The values come out as the arrays'."""
    from backends import get_backend

    model = _runtime_slice_model()
    x = (np.arange(24, dtype=np.float32).reshape(4, 6) / 10)
    arrays = {"x": x, "s": np.array([1], np.int64), "c": np.array(0.1, np.float32)}
    (expected,) = _ort_outputs(model, arrays)
    lowered = lower(dmlgraph.load(model), "6_4")
    for c in (0.1, np.float32(0.1)):
        out = get_backend(backend).run(lowered, {"x": x.tolist(), "s": (1.0,), "c": c})["y"]
        assert out.dtype == np.float32 and out.tobytes() == expected.tobytes()
    report = dmlgraph.check(model, inputs={"x": x.tolist(), "s": [1], "c": 0.1})
    assert report.passed


@pytest.mark.parametrize("feeds, fragment", [
    ({"s": [1.5]}, "input 's' is Python data (NumPy reads it as float64) holding a value "
                   "int64 cannot hold (a fraction, or beyond its range)"),
    ({"s": [2**70]}, "input 's' is Python data (NumPy reads it as object) holding a value "
                     "int64 cannot hold (a fraction, or beyond its range)"),
    ({"c": 1e6}, "input 'c' is Python data (NumPy reads it as float64) holding a finite value "
                 "beyond float16's range: the graph expects float16; give an array of float16"),
    ({"c": np.float64(0.5)}, "input 'c' is float64; the graph expects float16"),
    ({"x": np.zeros((4, 6))}, "input 'x' is float64; the graph expects float16"),
])
def test_python_data_its_input_cannot_hold_is_refused(feeds, fragment) -> None:
    """onnxruntime truncates 1.5 to 1 and makes 1e6 an inf of float16, silently; an array
    (or NumPy scalar) of another dtype is refused as it always was, naming both."""
    from backends import get_backend
    from backends.base import BackendError

    lowered = lower(dmlgraph.load(_runtime_slice_model(TensorProto.FLOAT16)), "6_4")
    given = {"x": np.zeros((4, 6), np.float16), "s": [1], "c": 0.0, **feeds}
    for backend in ("numpy", "onnxruntime"):
        with pytest.raises(BackendError, match=re.escape(fragment)):
            get_backend(backend).run(lowered, given)


@pytest.mark.parametrize("backend", ["numpy", "onnxruntime", "execute_model", "check"])
def test_feeds_of_another_byte_order_run_as_their_values(backend) -> None:
    """A big-endian array holds the same values: `run --inputs` read them so from a file,
    while the Python API refused them ("input 'x' is >f4"; onnxruntime's ``execute_model``
    said "onnxruntime's Python API cannot take >f4 tensors"). onnxruntime itself takes one
    and reads its bytes as little-endian, silently: a '>i8' start of 1 is 2^56 there, an
    empty slice. UTF-8 bytes feed a STRING input as files give them."""
    from backends import get_backend

    model = _runtime_slice_model()
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    native = {"x": x, "s": np.array([1], np.int64), "c": np.array(-1, np.float32)}
    swapped = {k: v.astype(v.dtype.newbyteorder(">")) for k, v in native.items()}
    kept = {k: v.copy() for k, v in swapped.items()}
    (expected,) = _ort_outputs(model, native)
    assert _ort_outputs(model, swapped)[0].shape == (0, 8)  # onnxruntime's misreading
    if backend == "check":
        assert dmlgraph.check(model, inputs=swapped, cross_check=True).passed
    elif backend == "execute_model":
        out = get_backend("onnxruntime").execute_model(model, swapped).outputs["y"]
        assert out.tobytes() == expected.tobytes()
    else:
        out = get_backend(backend).run(lower(dmlgraph.load(model), "6_4"), swapped)["y"]
        assert out.dtype == np.float32 and out.tobytes() == expected.tobytes()
    for name, value in swapped.items():  # the caller's arrays stay as they were
        assert value.dtype == kept[name].dtype and value.tobytes() == kept[name].tobytes()


@pytest.mark.parametrize("backend", ["numpy", "onnxruntime"])
def test_utf8_bytes_feed_a_string_input(backend) -> None:
    """np.array([b"a", b"bc"]) (dtype S2) for a STRING input: an .npz read by ``--inputs``
    gives its strings, and onnxruntime takes it; the API refused it ("input 'x' is |S2").
    (onnxruntime reads an element that fills its width past its end: b"bc\xc3\xa9" of S4
    failed as invalid UTF-8 there, so its oracle is fed the decoded strings.)"""
    from backends import get_backend

    graph = helper.make_graph([helper.make_node("Concat", ["x", "x"], ["y"], axis=0)], "g",
                              [helper.make_tensor_value_info("x", TensorProto.STRING, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.STRING, [4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    given = np.array([b"a", "bc\u00e9".encode()])
    (expected,) = _ort_outputs(model, {"x": np.array([b.decode() for b in given], object)})
    out = get_backend(backend).run(lower(dmlgraph.load(model), "6_4"), {"x": given})["y"]
    assert out.dtype == object and out.tolist() == expected.tolist()
    assert out.tolist() == ["a", "bc\u00e9", "a", "bc\u00e9"]


@pytest.mark.parametrize("backend", ["numpy", "onnxruntime", "check"])
@pytest.mark.parametrize("held, said", [
    (None, "holds NoneType None at [1]"),
    (b"bc", "holds bytes b'bc' at [1]"),
    (7, "holds int 7 at [1]"),
])
def test_a_string_input_holding_other_objects_is_refused(backend, held, said) -> None:
    """An object array for a STRING input holding None, bytes or a number: onnxruntime
    writes str() of each, so [\"a\", None] ran as "a", "None" and b"bc" as "b'bc'", on both
    backends and in check's oracle alike (so parity held). A constant's data is refused
    so (``ir.not_a_string``); str_ elements, NumPy's, are strings."""
    from backends import get_backend
    from backends.base import BackendError

    graph = helper.make_graph([helper.make_node("Concat", ["x", "x"], ["y"], axis=0)], "g",
                              [helper.make_tensor_value_info("x", TensorProto.STRING, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.STRING, [4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    given = np.array(["a", held], dtype=object)
    lowered = lower(dmlgraph.load(model), "6_4")
    with pytest.raises(BackendError, match=re.escape(f"input 'x' {said}, where a STRING tensor "
                                                     "holds only str")):
        if backend == "check":
            dmlgraph.check(model, inputs={"x": given})
        else:
            get_backend(backend).run(lowered, {"x": given})
    fine = np.array([np.str_("a"), "b"], dtype=object)
    assert get_backend("numpy").run(lowered, {"x": fine})["y"].tolist() == ["a", "b"] * 2


@pytest.mark.parametrize("backend", ["numpy", "onnxruntime", "execute_operator"])
def test_a_masked_input_hiding_elements_is_refused(backend) -> None:
    """NumPy reads a masked array's data under its mask: [1, --, 3] ran as [1, 99, 3] on
    both backends and in execute_operator, where a bound masked output is refused. One
    with nothing masked is an array like any other."""
    from backends import get_backend
    from backends.numpy import execute_operator
    from dmlgraph.dml import operator_from_json
    from dmlgraph.errors import DmlgraphError

    hidden = np.ma.masked_array(np.array([1, 99, 3], np.float32), mask=[0, 1, 0])
    clear = np.ma.masked_array(np.array([1, 2, 3], np.float32), mask=[0, 0, 0])
    if backend == "execute_operator":
        desc = operator_from_json({"type": "DML_OPERATOR_SLICE", "desc": {
            "InputTensor": {"DataType": "DML_TENSOR_DATA_TYPE_FLOAT32", "Sizes": [1, 1, 1, 3]},
            "OutputTensor": {"DataType": "DML_TENSOR_DATA_TYPE_FLOAT32", "Sizes": [1, 1, 1, 2]},
            "DimensionCount": 4, "Offsets": [0, 0, 0, 1], "Sizes": [1, 1, 1, 2],
            "Strides": [1, 1, 1, 1]}})
        run = lambda x: execute_operator(desc, [x.reshape(1, 1, 1, 3)], "6_4")[0].reshape(-1)  # noqa: E731
    else:
        graph = helper.make_graph([helper.make_node("Concat", ["x", "x"], ["y"], axis=0)], "g",
                                  [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [6])])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                                  ir_version=8)
        lowered = lower(dmlgraph.load(model), "6_4")
        run = lambda x: get_backend(backend).run(lowered, {"x": x})["y"]  # noqa: E731
    with pytest.raises(DmlgraphError, match="masked array whose mask hides 1 of its elements"):
        run(hidden)
    assert np.array_equal(run(clear), [2, 3] if backend == "execute_operator" else [1, 2, 3] * 2)


def test_check_reads_on_a_narrow_terminal(tmp_path, capsys, monkeypatch) -> None:
    """At 40 columns every cell of the ten-column table was cut to "…", verdict and all."""
    import sys

    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    np.savez(tmp_path / "wrong.npz", X=x, Y=x[:, :, 1:4, 2:4] + 1)
    monkeypatch.setenv("COLUMNS", "40")
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    assert main(["check", SLICE1, "--expected", str(tmp_path / "wrong.npz")]) == 1
    out = re.sub(r"\x1b\[[0-9;]*m", "", capsys.readouterr().out)  # a terminal's colours
    assert "…" not in out
    assert re.search(r"│ verdict +│ fail +│", out)


@pytest.mark.parametrize("axis", [3.7, "x", (1,), 2**70])
def test_a_concat_axis_that_is_not_an_int64_is_refused(axis) -> None:
    """An axis set by hand: 3.7 was truncated and lowered to a JOIN on axis 3; the others
    raised Python's or onnx's own errors."""
    graph = dmlgraph.load(_two_input_concat())
    node = graph.find_nodes("Concat")[0]
    graph.replace_node(node.id, op=dmlgraph.OnnxOp("Concat", node.op.since_version, "",
                                                   {"axis": axis}))
    with pytest.raises(ModelValidationError, match=re.escape(f"attribute axis = {axis!r} is not "
                                                             "an int64")):
        lower(graph)


def test_a_descriptor_field_of_another_enum_is_refused_not_read_by_its_number() -> None:
    """IntEnum members are ints: TensorDataType.FLOAT32 (1) was taken for PaddingMode.EDGE,
    PaddingMode.REFLECTION (2) for FLOAT16, PaddingMode.EDGE for a tensor flag."""
    from dmlgraph.dml import BufferTensorDesc, FeatureLevel, PaddingDesc, PaddingMode
    from dmlgraph.dml import TensorDataType
    from dmlgraph.errors import EnumValueError

    def tensor(*sizes):
        return BufferTensorDesc(TensorDataType.FLOAT32, sizes)

    with pytest.raises(EnumValueError, match="TensorDataType.FLOAT32: 1> is not a PaddingMode"):
        PaddingDesc(input_tensor=tensor(2, 2), output_tensor=tensor(4, 4),
                    padding_mode=TensorDataType.FLOAT32, start_padding=(1, 1),
                    end_padding=(1, 1)).validate("6_4")
    with pytest.raises(EnumValueError, match="is not a TensorDataType"):
        BufferTensorDesc(PaddingMode.REFLECTION, (4,))
    with pytest.raises(EnumValueError, match="is not a TensorFlags"):
        BufferTensorDesc(TensorDataType.FLOAT32, (4,), flags=PaddingMode.EDGE)
    with pytest.raises(EnumValueError):
        FeatureLevel.parse(TensorDataType.FLOAT32)
    assert PaddingMode.parse(1) is PaddingMode.EDGE  # a plain number still names a member


def _two_input_concat() -> onnx.ModelProto:
    graph = helper.make_graph(
        [helper.make_node("Concat", ["a", "b"], ["y"], axis=0)], "g",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 3]) for n in "ab"],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 3])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


@pytest.mark.parametrize("backend", ["numpy", "onnxruntime"])
def test_a_lowered_graph_whose_tensors_no_longer_fit_its_descriptors_is_refused(backend) -> None:
    """An input of a lowered graph given another shape after lower(): its JOIN was sized for
    [4, 6]. onnxruntime's translation ran it on [6, 6] inputs and made [8, 6], silently;
    the numpy backend blamed onnx's inference. Both now refuse before running, naming the
    descriptor, the tensor and the sizes, and say to lower again."""
    from backends import get_backend
    from dmlgraph.errors import DmlgraphError

    graph = helper.make_graph([helper.make_node("Concat", ["x", "x"], ["y"], axis=0,
                                                name="cat")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [8, 6])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    lowered = lower(dmlgraph.load(model), "6_4")
    x = np.ones((4, 6), np.float32)
    assert get_backend(backend).run(lowered, {"x": x})["y"].shape == (8, 6)
    lowered.update_tensor("x", shape=(6, 6))
    with pytest.raises(DmlgraphError, match=r"no longer fit its descriptors .*node 'cat' "
                                            r"\(DML_OPERATOR_JOIN\): tensor 'x'"):
        get_backend(backend).run(lowered, {"x": np.ones((6, 6), np.float32)})


def test_check_from_python_names_its_own_arguments_for_a_missing_shape() -> None:
    """check(graph) of a graph with a dynamic input said to give its shape with
    --input-shape or --inputs, options of a command the caller never ran."""
    from dmlgraph.errors import DmlgraphError

    graph = helper.make_graph([helper.make_node("Concat", ["x", "x"], ["y"], axis=0)], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N"])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    with pytest.raises(DmlgraphError) as info:
        dmlgraph.check(model)
    message = str(info.value)
    assert "--input-shape x:D0,D1,.. (input_shapes= in Python)" in message
    assert "--inputs (inputs= in Python)" in message


def test_an_input_of_unknown_rank_is_not_shown_as_a_vector() -> None:
    """An input declared with no shape was shown as float32[?], as a rank-1 input of unknown
    size is in pictures: the message says its rank is unknown, and pictures show [...]."""
    from dmlgraph.errors import DmlgraphError
    from dmlgraph.ir import dims_text

    graph = helper.make_graph([helper.make_node("Concat", ["x", "x"], ["y"], axis=0)], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, None)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    with pytest.raises(DmlgraphError, match=r"input 'x' is float32 of unknown rank; give its "
                                            r"shape with"):
        dmlgraph.check(model)
    assert (dims_text(None), dims_text((None,)), dims_text((1, "N"))) == ("[...]", "[?]", "[1,N]")
