"""DxDispatch export: a fully lowered graph written as a DxDispatch model validates against
DxDispatch's schema and, run back through ``dmlgraph.dxdispatch``, reproduces the NumPy
backend's outputs and onnxruntime's outputs of the original model, bit for bit.

Cases: the seed models (``models/seeds``, outputs as the seed pages show them) and small
synthetic models covering every descriptor the lowering emits (SLICE, SLICE1, JOIN, PADDING,
PADDING1), every padding mode it emits, the type views (bool as UINT8, int64 as UINT32 pairs,
bfloat16 as UINT16, float16, float64) and rank views (rank 1, rank 6), constants feeding DML
nodes, chains with intermediates, and outputs that are inputs or folded constants; each at
every feature level where it lowers completely.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import ml_dtypes
import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import helper, numpy_helper

from backends import get_backend
from dmlgraph import load
from dmlgraph.cli import main
from dmlgraph.dml import BufferTensorDesc as T
from dmlgraph.dml import OperatorDesc, PaddingDesc, PaddingMode, TensorDataType
from dmlgraph.dxdispatch import load_model, run_model
from dmlgraph.dxdispatch_export import (
    DxDispatchExportError,
    initial_values_type,
    read_outputs,
    to_dxdispatch,
    write_dxdispatch,
)
from dmlgraph.ir import Graph, Provenance, TensorInfo
from lowering import lower

MODELS = Path(__file__).resolve().parent.parent / "models"
SCHEMA_PATH = MODELS / "dxdispatch" / "model.schema.json"
SEEDS = MODELS / "seeds"
LEVELS = ("1_0", "2_1", "3_0", "4_1", "5_0", "6_4")


# ----------------------------------------------------------------------------- the schema


def dxdispatch_validator() -> jsonschema.protocols.Validator:
    """A validator for DxDispatch's model.schema.json (draft 2020-12).

    DxDispatch's schema writes the array initializer's items as ``["number", "string"]``,
    which draft 2020-12 rejects (``items`` is one schema) and jsonschema cannot apply; it
    means "every element is a number or a string", which is what is checked here.
    """
    schema = json.loads(SCHEMA_PATH.read_text())
    array = schema["$defs"]["arrayInitializer"]
    assert array["items"] == ["number", "string"], "the shipped schema changed: revisit this"
    array["items"] = {"type": ["number", "string"]}
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


VALIDATOR = dxdispatch_validator()


def test_the_validator_accepts_the_examples_and_rejects_broken_models() -> None:
    for example in ("example_join.json", "example_slice.json"):
        VALIDATOR.validate(json.loads((MODELS / "dxdispatch" / example).read_text()))
    broken = json.loads((MODELS / "dxdispatch" / "example_slice.json").read_text())
    broken["resources"]["input"]["initialValues"] = [[1.0]]
    broken["commands"][0].pop("bindings")
    assert len(list(VALIDATOR.iter_errors(broken))) == 2


# ----------------------------------------------------------------------------- the cases


def ints(name: str, values: list[int]) -> onnx.TensorProto:
    return helper.make_tensor(name, onnx.TensorProto.INT64, [len(values)], values)


def onnx_type(dtype: Any) -> int:
    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


def model(nodes, inputs, outputs, initializers=()) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes, "case",
        [helper.make_tensor_value_info(n, onnx_type(t), s) for n, t, s in inputs],
        [helper.make_tensor_value_info(n, onnx_type(t), s) for n, t, s in outputs],
        list(initializers),
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)], ir_version=10)


def pad(mode: str, dtype: Any, shape: list[int], pads: list[int], value: Any = None):
    initializers = [ints("pads", pads)]
    names = ["X", "pads"]
    if value is not None:
        initializers.append(numpy_helper.from_array(np.array(value, dtype=dtype), "value"))
        names.append("value")
    rank = len(shape)
    out = [shape[i] + pads[i] + pads[i + rank] for i in range(rank)]
    node = helper.make_node("Pad", names, ["Y"], mode=mode, name="pad")
    return model([node], [("X", dtype, shape)], [("Y", dtype, out)], initializers)


def slice_(dtype, shape, starts, ends, axes, steps, out):
    node = helper.make_node("Slice", ["X", "s", "e", "a", "st"], ["Y"], name="slice")
    params = [ints("s", starts), ints("e", ends), ints("a", axes), ints("st", steps)]
    return model([node], [("X", dtype, shape)], [("Y", dtype, out)], params)


def concat(dtype, shapes, axis, constant=None):
    names = [f"X{i}" for i in range(len(shapes))]
    out = list(shapes[0])
    out[axis] = sum(s[axis] for s in shapes)
    initializers = []
    if constant is not None:
        initializers.append(numpy_helper.from_array(constant, "C"))
        out[axis] += constant.shape[axis]
    node = helper.make_node("Concat", names + ["C"] * (constant is not None), ["Y"], axis=axis,
                            name="concat")
    return model([node], [(n, dtype, s) for n, s in zip(names, shapes)], [("Y", dtype, out)],
                 initializers)


def chain() -> onnx.ModelProto:
    """Slice -> Pad -> Concat with the input: two intermediates, one of them also an output."""
    f32 = np.float32
    nodes = [
        helper.make_node("Slice", ["X", "s", "e", "a"], ["S"], name="head"),
        helper.make_node("Pad", ["S", "pads"], ["P"], mode="edge", name="widen"),
        helper.make_node("Concat", ["P", "X"], ["Y"], axis=0, name="stack"),
    ]
    params = [ints("s", [1]), ints("e", [3]), ints("a", [1]), ints("pads", [0, 1, 0, 1])]
    return model(nodes, [("X", f32, [3, 4])], [("S", f32, [3, 2]), ("Y", f32, [6, 4])], params)


def passthrough_and_folded() -> onnx.ModelProto:
    """An output that is the input (a Slice taking everything) and one folded at import."""
    nodes = [
        helper.make_node("Slice", ["X", "s", "e"], ["Y"], name="everything"),
        helper.make_node("Slice", ["K", "s1", "e1"], ["Z"], name="constant_slice"),
        helper.make_node("Concat", ["X", "X"], ["W"], axis=0, name="twice"),
    ]
    params = [ints("s", [0]), ints("e", [9]), ints("s1", [1]), ints("e1", [3]),
              numpy_helper.from_array(np.array([5, 6, 7, 8], np.int32), "K")]
    i32 = np.int32
    return model(nodes, [("X", i32, [2, 3])],
                 [("Y", i32, [2, 3]), ("Z", i32, [2]), ("W", i32, [4, 3])], params)


NONFINITE = np.array([np.nan, np.inf, -0.0], np.float32)

#: name -> (ONNX model, oracle): the oracle computes the expected outputs from the inputs;
#: None means onnxruntime on the model.
SYNTHETIC: dict[str, tuple[Callable[[], onnx.ModelProto], Callable | None]] = {
    "pad_constant_int64_beyond_2_53": (
        lambda: pad("constant", np.int64, [2, 3], [1, 0, 0, 2], value=2**53 + 1), None),
    "pad_constant_float64": (lambda: pad("constant", np.float64, [2, 3], [1, 1, 1, 1], 0.1), None),
    "pad_wrap": (lambda: pad("wrap", np.float32, [1, 2, 3], [0, 1, 2, 0, 1, 1]), None),
    "pad_negative": (lambda: pad("constant", np.float32, [4, 5], [-1, 2, 1, -2], 0.5), None),
    "pad_reflect_int8": (lambda: pad("reflect", np.int8, [3, 4], [1, 2, 2, 1]), None),
    "pad_edge_float16": (lambda: pad("edge", np.float16, [2, 2, 3], [0, 1, 1, 0, 1, 2]), None),
    "slice_int64_reversed": (
        lambda: slice_(np.int64, [4, 6], [1, 5], [4, 0], [0, 1], [1, -2], [3, 3]), None),
    "slice_rank6": (
        lambda: slice_(np.float32, [2, 2, 2, 2, 2, 3], [1, 0], [2, 3], [0, 5], [1, 2],
                       [1, 2, 2, 2, 2, 2]), None),
    "concat_bool": (lambda: concat(np.bool_, [[2, 3], [2, 1]], 1), None),
    "concat_rank1_with_constant": (
        lambda: concat(np.int32, [[3], [2]], 0, np.array([7, 8, 9], np.int32)), None),
    "concat_bfloat16": (
        lambda: concat(ml_dtypes.bfloat16, [[2, 2], [1, 2]], 0),
        lambda feeds: [np.concatenate([feeds["X0"], feeds["X1"]], 0)]),
    "concat_uint64": (lambda: concat(np.uint64, [[2, 2], [2, 1]], 1), None),
    "concat_nonfinite_constant": (lambda: concat(np.float32, [[2]], 0, NONFINITE), None),
    "chain_with_intermediates": (chain, None),
    "passthrough_and_folded_outputs": (passthrough_and_folded, None),
}
SEED_NAMES = sorted(p.stem for p in SEEDS.glob("*.onnx"))


def random_inputs(graph: Graph, seed: int = 0) -> dict[str, np.ndarray]:
    """Values that exercise bits: NaN and -0.0 in floats, int64 beyond 2^53, both bools."""
    rng = np.random.default_rng(seed)
    feeds = {}
    for name in graph.inputs:
        info = graph.tensor(name)
        dtype, shape = np.dtype(info.dtype), info.static_shape
        if dtype == np.bool_:
            value = rng.random(shape) < 0.5
        elif dtype.kind in "iu":
            bits = min(62, dtype.itemsize * 8 - 2)
            low = 0 if dtype.kind == "u" else -(2**bits)
            value = rng.integers(low, 2**bits, shape, dtype=np.int64 if bits < 63 else None)
            value = value.astype(dtype)
        else:
            value = rng.standard_normal(shape).astype(np.float32).astype(dtype)
            flat = value.reshape(-1)
            if flat.size >= 3:
                flat[0], flat[1] = np.nan, -0.0
        feeds[name] = value
    return feeds


def onnxruntime_outputs(proto: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(proto.SerializeToString(), options,
                                   providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def same_bits(actual: np.ndarray, expected: np.ndarray) -> bool:
    actual, expected = np.asarray(actual), np.asarray(expected)
    if actual.dtype != expected.dtype or actual.shape != expected.shape:
        return False
    width = np.uint8 if actual.dtype == np.bool_ else np.dtype(f"u{actual.dtype.itemsize}")
    return bool(np.array_equal(actual.view(width), expected.view(width)))


def case(name: str) -> tuple[Graph, dict[str, np.ndarray], list[np.ndarray]]:
    """The imported graph, its inputs and the expected outputs (the oracle's)."""
    if name in SYNTHETIC:
        build, oracle = SYNTHETIC[name]
        proto = build()
        graph = load(proto)
        feeds = random_inputs(graph)
        expected = oracle(feeds) if oracle else onnxruntime_outputs(proto, feeds)
        return graph, feeds, expected
    graph = load(SEEDS / f"{name}.onnx")
    with np.load(SEEDS / "seed_io.npz") as io:
        feeds = {n: io[f"{name}__in{k}"] for k, n in enumerate(graph.inputs)}
        expected = [io[f"{name}__out{k}"] for k in range(len(graph.outputs))]
    return graph, feeds, expected


def exported_run(lowered: Graph, feeds: dict[str, np.ndarray], level: str):
    """Export, validate, serialise, read back and run: the outputs and the run model."""
    document = to_dxdispatch(lowered, feeds)
    VALIDATOR.validate(document)
    text = json.dumps(document)
    run = run_model(load_model(json.loads(text)), level)
    return read_outputs(run, lowered), run


# ----------------------------------------------------------------------------- round trips


@pytest.mark.parametrize("name", SEED_NAMES + sorted(SYNTHETIC))
def test_export_round_trip_matches_numpy_backend_and_oracle(name: str) -> None:
    graph, feeds, expected = case(name)
    backend = get_backend("numpy", fallback="reference")
    exported_levels = []
    for level in LEVELS:
        lowered = lower(graph, level)
        left = [n for n in lowered.nodes if n.is_onnx]
        if left:
            with pytest.raises(DxDispatchExportError, match="DxDispatch runs only DML"):
                to_dxdispatch(lowered, feeds)
            continue
        if any(getattr(n.op, "padding_mode", None) is PaddingMode.WRAP for n in lowered.nodes):
            with pytest.raises(DxDispatchExportError, match="PaddingMode = \"DML_PADDING_MODE_"
                               "WRAP\": newer than DxDispatch's JSON parser, which cannot read"):
                to_dxdispatch(lowered, feeds)
            continue
        exported_levels.append(level)
        outputs, _ = exported_run(lowered, feeds, level)
        reference = backend.run(lowered, feeds)
        for k, (out_name, want) in enumerate(zip(lowered.outputs, expected)):
            got = outputs[out_name]
            assert same_bits(got, reference[out_name]), (level, out_name, got, reference[out_name])
            assert same_bits(got, np.asarray(want)), (level, out_name, got, want)
    assert exported_levels, f"{name} lowers completely at no level"


def test_cases_cover_every_descriptor_and_padding_mode() -> None:
    """The round-trip cases reach every descriptor the lowering emits and every mode ONNX
    can ask for (SYMMETRIC has no ONNX Pad mode: see the hand-built graph below)."""
    kinds: set[str] = set()
    modes: set[PaddingMode] = set()
    types: set[TensorDataType] = set()
    ranks: set[int] = set()
    for name in SEED_NAMES + sorted(SYNTHETIC):
        graph = case(name)[0]
        for level in LEVELS:
            lowered = lower(graph, level)
            if any(n.is_onnx for n in lowered.nodes):
                continue
            for node in lowered.nodes:
                desc: OperatorDesc = node.op
                kinds.add(desc.OPERATOR.name)
                if hasattr(desc, "padding_mode"):
                    modes.add(desc.padding_mode)
                types.update(t.data_type for t in desc.inputs)
            ranks.update(len(lowered.tensor(t).shape) for n in lowered.nodes for t in n.inputs)
    assert kinds == {"SLICE", "SLICE1", "JOIN", "PADDING", "PADDING1"}
    assert modes >= {PaddingMode.CONSTANT, PaddingMode.EDGE, PaddingMode.REFLECTION,
                     PaddingMode.WRAP}
    assert types >= {TensorDataType.UINT8, TensorDataType.UINT16, TensorDataType.UINT32,
                     TensorDataType.INT64, TensorDataType.FLOAT16, TensorDataType.FLOAT64}
    assert {1, 6} <= ranks


def test_hand_built_symmetric_padding_round_trips() -> None:
    """A DML graph built directly (SYMMETRIC, seed 003 example 4) exports and runs too."""
    x = np.array([[1, 2, 3, 4], [5, 6, 7, 8], [1, 2, 3, 4], [5, 6, 7, 8]], np.float32)
    graph = Graph("symmetric")
    graph.add_input(TensorInfo("x", np.float32, (4, 4)))
    desc = PaddingDesc(input_tensor=T("FLOAT32", (1, 1, 4, 4)),
                       output_tensor=T("FLOAT32", (1, 1, 8, 10)), padding_mode="SYMMETRIC",
                       start_padding=(0, 0, 1, 2), end_padding=(0, 0, 3, 4))
    graph.add_node(desc, ["x"], ["y"], Provenance("pad", "Pad"))
    graph.set_tensor(TensorInfo("y", np.float32, (8, 10)))
    graph.outputs = ["y"]
    outputs, run = exported_run(graph, {"x": x}, "3_0")
    expected = get_backend("numpy").run(graph, {"x": x})["y"]
    assert same_bits(outputs["y"], expected)
    assert outputs["y"][0].tolist() == [2, 1, 1, 2, 3, 4, 4, 3, 2, 1]
    assert run.printed[0].startswith("Resource 'y': 2, 1, 1, 2, 3, 4, 4, 3, 2, 1, 2, 1, ")


def test_a_fill_dxdispatch_cannot_write_is_refused_naming_the_node() -> None:
    """A hand-built PADDING filling -NaN (0xffc00001): DxDispatch's JSON writes every NaN as
    "nan", its quiet NaN, so the model filled other bits than the graph does, silently."""
    graph = Graph("negative_nan")
    graph.add_input(TensorInfo("x", np.float32, (2,)))
    fill = float(np.array(0xFFC00001, np.uint32).view(np.float32))
    desc = PaddingDesc(input_tensor=T("FLOAT32", (2,)), output_tensor=T("FLOAT32", (3,)),
                       padding_mode="CONSTANT", padding_value=fill, start_padding=(0,),
                       end_padding=(1,))
    graph.add_node(desc, ["x"], ["y"], Provenance("pad", "Pad"))
    graph.set_tensor(TensorInfo("y", np.float32, (3,)))
    graph.outputs = ["y"]
    with pytest.raises(DxDispatchExportError, match=r"'pad'.*PaddingValue = nan: a NaN of bits "
                       r"0xffc00001 .*quiet NaN 0x7fc00000"):
        to_dxdispatch(graph)


# ----------------------------------------------------------------------------- the document


def test_seed_export_is_what_dxdispatch_expects() -> None:
    graph, feeds, _ = case("slice1_example2")
    document = to_dxdispatch(lower(graph, "6_4"), feeds)
    assert document["resources"]["X"] == {
        "initialValuesDataType": "FLOAT32", "initialValues": [float(v) for v in range(1, 17)]}
    assert document["resources"]["Y"] == {
        "initialValuesDataType": "FLOAT32", "initialValues": {"valueCount": 4, "value": 0}}
    assert document["dispatchables"]["slice"]["type"] == "DML_OPERATOR_SLICE1"
    assert document["dispatchables"]["slice"]["desc"]["InputWindowStrides"][-2:] == [-2, 2]
    assert document["commands"] == [
        {"type": "dispatch", "dispatchable": "slice",
         "bindings": {"InputTensor": "X", "OutputTensor": "Y"}},
        {"type": "print", "resource": "Y"},
    ]


def test_join_binds_a_list_and_decomposed_nodes_dispatch_in_order() -> None:
    graph, feeds, _ = case("padding_symmetric")
    document = to_dxdispatch(lower(graph, "1_0"), feeds)
    dispatches = [c for c in document["commands"] if c["type"] == "dispatch"]
    assert [c["dispatchable"] for c in dispatches][:4] == ["top", "bottom.0", "bottom.1",
                                                           "bottom.2"]
    join = document["dispatchables"]["bottom.3"]
    assert join["type"] == "DML_OPERATOR_JOIN"
    bindings = next(c for c in dispatches if c["dispatchable"] == "bottom.3")["bindings"]
    assert isinstance(bindings["InputTensors"], list) and len(bindings["InputTensors"]) == 3
    produced = set(feeds)
    for command in dispatches:  # every dispatch reads only what earlier ones wrote
        for key, bound in command["bindings"].items():
            if key != "OutputTensor":
                assert set(bound if isinstance(bound, list) else [bound]) <= produced
        produced.add(command["bindings"]["OutputTensor"])


def _reversed_then_sliced(names: tuple[str, str, str]) -> Graph:
    """x [6, 3] reversed along axis 1 (a JOIN of 3 slices below FL 2.1), then rows 1:4 of
    it, and rows 1:4 of x: nodes named ``names``."""
    big = np.iinfo(np.int64).max
    ints = {"a0": [0], "a1": [1], "s1": [1], "e4": [4], "m1": [-1], "mn": [-big - 1]}
    nodes = [
        helper.make_node("Slice", ["x", "m1", "mn", "a1", "m1"], ["t"], name=names[0]),
        helper.make_node("Slice", ["t", "s1", "e4", "a0"], ["y"], name=names[1]),
        helper.make_node("Slice", ["x", "s1", "e4", "a0"], ["y2"], name=names[2]),
    ]
    model = helper.make_model(helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [6, 3])],
        [helper.make_tensor_value_info(o, onnx.TensorProto.FLOAT, None) for o in ("y", "y2")],
        [numpy_helper.from_array(np.array(v, np.int64), k) for k, v in ints.items()],
    ), opset_imports=[helper.make_opsetid("", 19)])
    return load(model)


def test_a_node_keeps_its_name_where_another_node_s_piece_would_take_it() -> None:
    """The node named "w.1" is dispatched as "w.1", never a piece of "w" (the pieces of "w"
    came first in dispatch order and took "w.1", leaving the node "w.1_")."""
    document = to_dxdispatch(lower(_reversed_then_sliced(("w", "w.1", "other")), "1_0"))
    outputs = {c["dispatchable"]: c["bindings"]["OutputTensor"]
               for c in document["commands"] if c["type"] == "dispatch"}
    assert outputs["w.1"] == "y" and outputs["other"] == "y2"  # what the model's nodes write
    pieces = [name for name, written in outputs.items() if name not in ("w.1", "other")]
    assert len(pieces) == 4 and all(name.startswith("w.") for name in pieces)
    assert outputs[pieces[-1]] == "t"


def test_unnamed_nodes_are_dispatched_as_to_onnx_names_them_pieces_grouped() -> None:
    """Unnamed nodes: ``OP_ID`` with the id of the imported node, as ``to_onnx`` names it
    (the descriptor class and the lowered graph's id, "SliceDesc_5", named nothing the user
    sees), and the pieces of one node ``OP_ID.k``."""
    graph = _reversed_then_sliced(("", "", ""))
    exported = {n.name: n.output[0] for n in graph.to_onnx().graph.node}
    document = to_dxdispatch(lower(graph, "1_0"))
    outputs = {c["dispatchable"]: c["bindings"]["OutputTensor"]
               for c in document["commands"] if c["type"] == "dispatch"}
    reversing = next(name for name, out in exported.items() if out == "t")
    assert {name: out for name, out in outputs.items() if out in ("y", "y2")} == {
        name: out for name, out in exported.items() if out in ("y", "y2")}
    assert [outputs[f"{reversing}.{k}"] for k in range(4)][-1] == "t"
    assert len(outputs) == 6


def test_export_is_deterministic(tmp_path: Path) -> None:
    graph, feeds, _ = case("chain_with_intermediates")
    texts = []
    for i in range(2):
        path = tmp_path / f"m{i}.json"
        message = write_dxdispatch(lower(graph, "6_4"), path, feeds)
        assert message.startswith(f"wrote {path}: ")
        texts.append(path.read_bytes())
    assert texts[0] == texts[1]


def test_cli_runs_an_exported_model(tmp_path: Path, capsys) -> None:
    graph, feeds, _ = case("join_example1")
    path = tmp_path / "join.json"
    write_dxdispatch(lower(graph, "6_4"), path, feeds)
    assert main(["dxdispatch", str(path)]) == 0
    assert capsys.readouterr().out.strip() == (
        "Resource 'Y': 1, 2, 3, 7, 8, 9, 10, 4, 5, 6, 11, 12, 13, 14")


@pytest.mark.parametrize("dtype, data, expected", [
    (np.float32, np.array([1.5, -0.0], np.float32), TensorDataType.FLOAT32),
    (np.float32, NONFINITE, TensorDataType.UINT32),
    (np.float16, None, TensorDataType.FLOAT16),
    (np.float64, np.array([0.1]), TensorDataType.FLOAT64),
    (np.int64, np.array([2**62]), TensorDataType.INT64),
    (np.uint8, None, TensorDataType.UINT8),
    (np.bool_, np.array([True]), TensorDataType.UINT8),
    (ml_dtypes.bfloat16, None, TensorDataType.UINT16),
    (np.complex64, None, TensorDataType.UINT64),
])
def test_initial_values_type_keeps_bytes_exact(dtype, data, expected) -> None:
    assert initial_values_type(np.dtype(dtype), data) is expected


def test_nonfinite_constants_travel_as_bits() -> None:
    graph, feeds, _ = case("concat_nonfinite_constant")
    document = to_dxdispatch(lower(graph, "6_4"), feeds)
    constant = document["resources"]["C"]
    assert constant["initialValuesDataType"] == "UINT32"
    assert constant["initialValues"] == NONFINITE.view(np.uint32).tolist()
    assert "NaN" not in json.dumps(document, allow_nan=False)


# ----------------------------------------------------------------------------- refusals


def test_graph_with_fallback_nodes_is_refused_naming_them() -> None:
    lowered = lower(load(MODELS / "squeezenet1_1.onnx"), "6_4")
    with pytest.raises(DxDispatchExportError) as info:
        to_dxdispatch(lowered)
    message = str(info.value)
    assert "\n" not in message
    assert "57 node(s) stay ONNX" in message and "(Conv)" in message and "and 52 more" in message


def test_nodes_left_for_dynamic_sizes_are_refused_saying_to_size_the_inputs() -> None:
    """A Concat of a [N, 3] and b [N, K], then a Pad: both stay ONNX, lowered when they run,
    and the refusal sent the user to `dmlgraph lower`, whose notes then said to size them;
    it says so itself, naming the inputs. Sized, the same model exports."""
    pads = numpy_helper.from_array(np.array([1, 1, 1, 1], np.int64), "p")
    graph = helper.make_graph(
        [helper.make_node("Concat", ["a", "b"], ["y"], axis=1, name="c"),
         helper.make_node("Pad", ["y", "p"], ["z"], mode="reflect", name="pd")], "g",
        [helper.make_tensor_value_info("a", onnx.TensorProto.FLOAT, ["N", 3]),
         helper.make_tensor_value_info("b", onnx.TensorProto.FLOAT, ["N", "K"])],
        [helper.make_tensor_value_info("z", onnx.TensorProto.FLOAT, None)], [pads])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=8)
    with pytest.raises(DxDispatchExportError) as info:
        to_dxdispatch(lower(load(model), "6_4"))
    message = str(info.value)
    assert "\n" not in message and "'c' (Concat), 'pd' (Pad)" in message
    assert "graph input(s) 'a', 'b'" in message and "--input-shape NAME:D0,D1,.." in message
    sized = load(model, input_shapes={"a": [2, 3], "b": [2, 4]})
    assert len(to_dxdispatch(lower(sized, "6_4"))["dispatchables"]) == 2


def test_the_refusal_names_only_the_unsized_inputs_the_waiting_nodes_read() -> None:
    """A Slice of NonZero's output (dynamic whatever the inputs' sizes) beside u [U], an
    input passed through that no node reads: the refusal told the user to size 'u'. Oracle:
    the model's wiring (no node reads u), and sizing u changes nothing, the export still
    refused."""
    params = [numpy_helper.from_array(np.array([v], np.int64), n) for n, v in (("s", 0),
                                                                             ("e", 1))]
    graph = helper.make_graph(
        [helper.make_node("NonZero", ["a"], ["nz"], name="nz"),
         helper.make_node("Slice", ["nz", "s", "e"], ["y"], name="sl")], "g",
        [helper.make_tensor_value_info("a", onnx.TensorProto.FLOAT, [3]),
         helper.make_tensor_value_info("u", onnx.TensorProto.FLOAT, ["U"])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.INT64, None),
         helper.make_tensor_value_info("u", onnx.TensorProto.FLOAT, None)], params)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    assert not any("u" in node.input for node in model.graph.node)
    for shapes in (None, {"u": [2]}):
        with pytest.raises(DxDispatchExportError) as info:
            to_dxdispatch(lower(load(model, input_shapes=shapes), "6_4"))
        message = str(info.value)
        assert "'u'" not in message and "--input-shape" not in message
        assert "'sl' (Slice)" in message and "`dmlgraph lower` says why" in message


def test_wrong_input_values_are_refused() -> None:
    graph, _, _ = case("slice_example1")
    lowered = lower(graph, "6_4")
    with pytest.raises(DxDispatchExportError, match="not graph inputs"):
        to_dxdispatch(lowered, {"nope": np.zeros(1)})
    with pytest.raises(DxDispatchExportError, match=r"float64\[1, 1, 4, 4\], the graph wants"):
        to_dxdispatch(lowered, {"X": np.zeros((1, 1, 4, 4))})


def test_wrap_padding_is_not_written_for_a_parser_that_predates_it() -> None:
    """DML_SPEC.md §6: DxDispatch's JSON parser predates DML_PADDING_MODE_WRAP. At FL 6.4 the
    wrap Pad is one WRAP padding, refused with the way out; at 6.3 it is SLICEs and a JOIN,
    which export and round-trip."""
    graph, feeds, expected = case("pad_wrap")
    with pytest.raises(DxDispatchExportError, match="lower at FL 6_3 or below"):
        to_dxdispatch(lower(graph, "6_4"), feeds)
    outputs, _ = exported_run(lower(graph, "6_3"), feeds, "6_3")
    assert same_bits(outputs[graph.outputs[0]], expected[0])


def test_misused_api_is_one_export_error(tmp_path: Path) -> None:
    """A ModelProto for the graph, a list for the inputs and an unwritable path were an
    AttributeError, dict()'s ValueError and a bare OSError from inside."""
    graph, feeds, _ = case("slice_example1")
    lowered = lower(graph, "6_4")
    with pytest.raises(DxDispatchExportError, match="takes a lowered Graph .*not ModelProto"):
        to_dxdispatch(onnx.load(SEEDS / "slice_example1.onnx"))
    with pytest.raises(DxDispatchExportError, match="inputs map graph input names to arrays"):
        to_dxdispatch(lowered, [feeds["X"]])  # type: ignore[arg-type]
    for where in (tmp_path / "no-folder" / "m.json", tmp_path):
        with pytest.raises(DxDispatchExportError, match=r"cannot write: "):
            write_dxdispatch(lowered, where, feeds)


def test_input_values_are_taken_as_the_backends_take_feeds() -> None:
    """Another byte order and Python lists are values, as a backend's feeds are (they were
    refused as '>f4' and float64); the model holds the same bytes as for the native array."""
    graph, feeds, _ = case("slice_example1")
    lowered = lower(graph, "6_4")
    x = feeds["X"]
    native = to_dxdispatch(lowered, {"X": x})
    assert to_dxdispatch(lowered, {"X": x.astype(x.dtype.newbyteorder(">"))}) == native
    assert to_dxdispatch(lowered, {"X": x.tolist()}) == native
    with pytest.raises(DxDispatchExportError, match="mask hides 1"):
        to_dxdispatch(lowered, {"X": np.ma.masked_array(x, mask=x == x.flat[0])})
