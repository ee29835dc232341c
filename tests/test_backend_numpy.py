"""The NumPy backend on lowered graphs: DML nodes through their views, ONNX nodes through both
fallbacks, run-time Slice/Pad parameters. Oracles: NumPy indexing and onnxruntime."""

from __future__ import annotations

import re

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from backends import BackendError, get_backend
from backends.numpy import NumpyBackend, OnnxruntimeFallback, ReferenceFallback
from dmlgraph import check, load
from dmlgraph.errors import ModelValidationError
from dmlgraph.dml import BufferTensorDesc as T
from dmlgraph.dml import JoinDesc, Padding1Desc, PaddingDesc, Slice1Desc, SliceDesc
from dmlgraph.ir import Graph, OnnxOp, Provenance, TensorInfo
from lowering import lower

INT64_MAX = 2**63 - 1


def make_graph(inputs, nodes, tensors, outputs, constants=None, opset=19) -> Graph:
    """inputs/tensors: name -> (dtype, shape); nodes: (op, inputs, outputs, name)."""
    graph = Graph(opset_imports={"": opset}, ir_version=9)
    for name, (dtype, shape) in inputs.items():
        graph.add_input(TensorInfo(name, dtype, shape))
    for name, value in (constants or {}).items():
        graph.set_tensor(TensorInfo(name, data=np.asarray(value)))
    for op, ins, outs, name in nodes:
        op_type = op.op_type if isinstance(op, OnnxOp) else type(op).__name__
        graph.add_node(op, ins, outs, Provenance(name, op_type))
    for name, (dtype, shape) in tensors.items():
        graph.set_tensor(TensorInfo(name, dtype, shape))
    graph.outputs = list(outputs)
    graph.validate()
    return graph


def assert_same_bits(actual: np.ndarray, expected: np.ndarray) -> None:
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    width = f"u{actual.dtype.itemsize}" if actual.dtype != np.bool_ else np.uint8
    np.testing.assert_array_equal(actual.view(width), expected.view(width))


# ----------------------------------------------------------------------------- DML nodes


def test_dml_chain_matches_numpy_indexing() -> None:
    x = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
    block = np.full((2, 2, 2), 7.5, np.float32)
    graph = make_graph(
        {"x": (np.float32, (2, 3, 4))},
        [
            (Slice1Desc(input_tensor=T("FLOAT32", (2, 3, 4)),
                        output_tensor=T("FLOAT32", (2, 2, 2)),
                        input_window_offsets=(0, 1, 0), input_window_sizes=(2, 2, 4),
                        input_window_strides=(-1, 1, 2)), ["x"], ["y"], "slice"),
            (JoinDesc(input_tensors=(T("FLOAT32", (2, 2, 2)), T("FLOAT32", (2, 2, 2))),
                      output_tensor=T("FLOAT32", (2, 4, 2)), axis=1), ["y", "block"], ["z"],
             "concat"),
            # the pad views z as 4-D with a leading 1, as a lowering at FL 1.0 would
            (PaddingDesc(input_tensor=T("FLOAT32", (1, 2, 4, 2)),
                         output_tensor=T("FLOAT32", (1, 2, 7, 3)), padding_mode="EDGE",
                         start_padding=(0, 0, 1, 0), end_padding=(0, 0, 2, 1)),
             ["z"], ["w"], "pad"),
        ],
        {"y": (np.float32, (2, 2, 2)), "z": (np.float32, (2, 4, 2)),
         "w": (np.float32, (2, 7, 3))},
        ["y", "z", "w"],
        constants={"block": block},
    )
    result = NumpyBackend().execute(graph, {"x": x})
    y = x[::-1, 1:3, ::2]
    z = np.concatenate([y, block], axis=1)
    np.testing.assert_array_equal(result.outputs["y"], y)
    np.testing.assert_array_equal(result.outputs["z"], z)
    np.testing.assert_array_equal(result.outputs["w"], np.pad(z, ((0, 0), (1, 2), (0, 1)), "edge"))
    assert [(r.node, r.op, r.engine) for r in result.record.nodes] == [
        ("slice", "DML_OPERATOR_SLICE1", "numpy DirectML emulator"),
        ("concat", "DML_OPERATOR_JOIN", "numpy DirectML emulator"),
        ("pad", "DML_OPERATOR_PADDING", "numpy DirectML emulator"),
    ]


@pytest.mark.parametrize("case", ["int64 as UINT32 pairs", "bool as UINT8", "uint8 pairs as UINT16",
                                  "float16 with a leading 1"])
def test_views_move_the_ir_elements(case: str) -> None:
    rng = np.random.default_rng(1)
    if case == "int64 as UINT32 pairs":
        x = rng.integers(-2**62, 2**62, size=(3, 4))
        desc = Slice1Desc(input_tensor=T("UINT32", (3, 4, 2)), output_tensor=T("UINT32", (2, 4, 2)),
                          input_window_offsets=(1, 0, 0), input_window_sizes=(2, 4, 2),
                          input_window_strides=(1, -1, 1))
        expected = x[1:3, ::-1]
    elif case == "bool as UINT8":
        x = rng.integers(0, 2, size=(4, 6)).astype(bool)
        desc = JoinDesc(input_tensors=(T("UINT8", (4, 6)),) * 2, output_tensor=T("UINT8", (8, 6)),
                        axis=0)
        expected = np.concatenate([x, x])
    elif case == "uint8 pairs as UINT16":
        x = rng.integers(0, 256, size=(2, 6)).astype(np.uint8)
        desc = PaddingDesc(input_tensor=T("UINT16", (2, 3)), output_tensor=T("UINT16", (2, 4)),
                           padding_mode="CONSTANT", padding_value=0.0,
                           start_padding=(0, 1), end_padding=(0, 0))
        expected = np.pad(x, ((0, 0), (2, 0)))
    else:
        x = rng.standard_normal(5).astype(np.float16)
        desc = SliceDesc(input_tensor=T("FLOAT16", (1, 5)), output_tensor=T("FLOAT16", (1, 2)),
                         offsets=(0, 1), sizes=(1, 2), strides=(1, 3))
        expected = x[1::3]
    inputs = [("x", x)] * (2 if isinstance(desc, JoinDesc) else 1)
    graph = make_graph({"x": (x.dtype, x.shape)}, [(desc, [n for n, _ in inputs], ["y"], "n")],
                       {"y": (x.dtype, expected.shape)}, ["y"])
    assert_same_bits(NumpyBackend().run(graph, {"x": x})["y"], expected)


def test_padding1_fills_exact_int64_values() -> None:
    x = np.arange(6, dtype=np.int64).reshape(2, 3)
    desc = Padding1Desc(input_tensor=T("INT64", (2, 3)), output_tensor=T("INT64", (3, 3)),
                        padding_mode="CONSTANT", padding_value_data_type="INT64",
                        padding_value=2**62 + 1, start_padding=(1, 0), end_padding=(0, 0))
    graph = make_graph({"x": (np.int64, (2, 3))}, [(desc, ["x"], ["y"], "pad")],
                       {"y": (np.int64, (3, 3))}, ["y"])
    y = NumpyBackend().run(graph, {"x": x})["y"]
    np.testing.assert_array_equal(y, np.pad(x, ((1, 0), (0, 0)), constant_values=2**62 + 1))


# ----------------------------------------------------------------------------- fallbacks


@pytest.mark.parametrize("fallback", ["reference", "onnxruntime"])
def test_onnx_nodes_run_on_either_fallback(fallback: str) -> None:
    rng = np.random.default_rng(2)
    x = rng.standard_normal((3, 4)).astype(np.float32)
    w = rng.standard_normal((4, 5)).astype(np.float32)
    b = rng.standard_normal((3, 2)).astype(np.float32)
    graph = make_graph(
        {"x": (np.float32, (3, 4))},
        [
            (OnnxOp("MatMul", 13), ["x", "w"], ["m"], "matmul"),
            (OnnxOp("Relu", 14), ["m"], ["r"], "relu"),
            (SliceDesc(input_tensor=T("FLOAT32", (3, 5)), output_tensor=T("FLOAT32", (3, 2)),
                       offsets=(0, 1), sizes=(3, 2), strides=(1, 2)), ["r"], ["s"], "slice"),
            (OnnxOp("Add", 14), ["s", "b"], ["y"], "add"),
        ],
        {"m": (np.float32, (3, 5)), "r": (np.float32, (3, 5)), "s": (np.float32, (3, 2)),
         "y": (np.float32, (3, 2))},
        ["y"],
        constants={"w": w, "b": b},
    )
    backend = get_backend("numpy", fallback=fallback)
    result = backend.execute(graph, {"x": x})
    expected = np.maximum(x @ w, 0)[:, 1::2] + b
    np.testing.assert_allclose(result.outputs["y"], expected, rtol=1e-6, atol=1e-6)
    engine = "onnx.reference" if fallback == "reference" else "onnxruntime:CPUExecutionProvider"
    assert {r.node: r.engine for r in result.record.nodes} == {
        "matmul": engine, "relu": engine, "slice": "numpy DirectML emulator", "add": engine,
    }
    assert result.record.provider == engine
    assert isinstance(backend.fallback, ReferenceFallback if fallback == "reference"
                      else OnnxruntimeFallback)


@pytest.mark.parametrize("fallback", ["reference", ReferenceFallback(), OnnxruntimeFallback()])
def test_providers_for_a_fallback_that_takes_none_are_refused(fallback) -> None:
    """``providers`` choose the onnxruntime fallback's; with the reference fallback (or a
    Fallback object, which has its own) they were ignored, silently, where ``run --provider
    --fallback reference`` is refused. ``check`` still takes both: its providers are the
    reference's."""
    from dmlgraph import check

    with pytest.raises(BackendError, match=r"providers=\['CPU'\] would be ignored"):
        get_backend("numpy", fallback=fallback, providers=["CPU"])
    assert get_backend("numpy", providers=["CPU"]).fallback.engine.endswith("CPUExecutionProvider")
    model = helper.make_model(helper.make_graph(
        [helper.make_node("Pad", ["x", "p"], ["y"], name="pad")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])],
        [numpy_helper.from_array(np.array([1, 1], np.int64), "p")]),
        opset_imports=[helper.make_opsetid("", 18)])
    assert check(model, fallback="reference", providers=["CPU"]).passed

@pytest.mark.parametrize("start", [-8, -100, -(2**63)])
def test_a_slice_left_to_the_reference_clamps_as_onnx_says(start: int) -> None:
    """A reversed uint8 Slice is left ONNX at FL 1.0 and ran on onnx.reference, which slices
    Python's way: a start before the beginning with a negative step gave nothing, where
    Slice-13's text clamps it to index 0 (one element), as onnxruntime does."""
    model = helper.make_model(helper.make_graph(
        [helper.make_node("Slice", ["x", "s", "e", "a", "p"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.UINT8, [3, 7])],
        [helper.make_tensor_value_info("y", TensorProto.UINT8, None)],
        [numpy_helper.from_array(np.array(v, np.int64), n)
         for n, v in (("s", [start]), ("e", [-8]), ("a", [1]), ("p", [-1]))],
    ), opset_imports=[helper.make_opsetid("", 13)])
    lowered = lower(load(model), "1_0")
    x = np.arange(21, dtype=np.uint8).reshape(3, 7)
    result = NumpyBackend("reference").execute(lowered, {"x": x})
    assert {r.engine for r in result.record.nodes} == {"onnx.reference"}
    assert_same_bits(result.outputs["y"], x[:, :1])  # index 0 down to -1 (exclusive)


#: (mode, pads, axes, opset): pads removing elements (negative), with and without axes.
PADS_LEFT_TO_THE_REFERENCE = [
    ("constant", [0, -1, 0, 2], None, 13),
    ("edge", [0, -1, 0, 2], None, 13),
    ("reflect", [-1, -2, 0, 3], None, 18),
    ("wrap", [0, -3, 1, 2], None, 19),
    ("constant", [-3, 2], [-1], 18),
]


@pytest.mark.parametrize(("mode", "pads", "axes", "opset"), PADS_LEFT_TO_THE_REFERENCE)
def test_a_pad_left_to_the_reference_crops_as_onnx_says(
    mode: str, pads: list[int], axes: list[int] | None, opset: int
) -> None:
    """A uint8 Pad cropping an odd number of columns is left ONNX at FL 1.0 (UINT16 pairs
    cannot split) and ran on onnx.reference, whose Pad hands its pads to ``np.pad``: a
    negative one, which removes elements (ONNX), failed the run ("index can't contain
    negative values"), where onnxruntime crops and pads."""
    import onnxruntime as ort

    inputs, initializers = ["x", "p"], [numpy_helper.from_array(np.array(pads, np.int64), "p")]
    if axes is not None:
        inputs += ["", "a"]
        initializers.append(numpy_helper.from_array(np.array(axes, np.int64), "a"))
    model = helper.make_model(helper.make_graph(
        [helper.make_node("Pad", inputs, ["y"], mode=mode)], "g",
        [helper.make_tensor_value_info("x", TensorProto.UINT8, [3, 7])],
        [helper.make_tensor_value_info("y", TensorProto.UINT8, None)],
        initializers,
    ), opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 9
    x = np.arange(1, 22, dtype=np.uint8).reshape(3, 7)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    expected = session.run(None, {"x": x})[0]
    lowered = lower(load(model), "1_0")
    result = NumpyBackend("reference").execute(lowered, {"x": x})
    assert {r.engine for r in result.record.nodes} == {"onnx.reference"}
    assert_same_bits(result.outputs["y"], expected)


@pytest.mark.parametrize("opset", [7, 9, 12, 13])
def test_a_batch_normalization_left_to_the_reference_runs_in_test_mode(opset: int) -> None:
    """BatchNormalization-7/9 with Y alone normalizes by the running mean and variance given
    (the spec's test mode, onnxruntime's). onnx.reference's took the default momentum as
    training and normalized by the batch's statistics (0.39 off at opset 12), and at opsets 7
    and 8 failed. Oracle: the spec's formula in NumPy, and onnxruntime."""
    import onnxruntime as ort

    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    scale, bias, mean = (rng.standard_normal(3).astype(np.float32) for _ in range(3))
    var = np.array([0.5, 1.5, 3.0], np.float32)
    model = helper.make_model(helper.make_graph(
        [helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], epsilon=1e-3)],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4, 5])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(a, n) for n, a in
         [("s", scale), ("b", bias), ("m", mean), ("v", var)]],
    ), opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 7
    axis = (-1, 1, 1)
    expected = (x - mean.reshape(axis)) / np.sqrt(var.reshape(axis) + np.float32(1e-3))
    expected = expected * scale.reshape(axis) + bias.reshape(axis)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(session.run(None, {"x": x})[0], expected, rtol=1e-5, atol=1e-5)
    result = NumpyBackend("reference").execute(load(model), {"x": x})
    assert {r.engine for r in result.record.nodes} == {"onnx.reference"}
    np.testing.assert_allclose(result.outputs["y"], expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax", "Hardmax"])
@pytest.mark.parametrize("opset", [1, 11])
def test_a_softmax_left_to_the_reference_works_as_its_opset_says(op: str, opset: int) -> None:
    """Softmax-1/11 (LogSoftmax, Hardmax) normalize the rows of the input made a matrix at
    ``axis`` (default 1); onnx.reference has Softmax-13's kernel alone, which normalized
    along axis 1 only (0.39 off). Oracle: the spec's matrix in NumPy."""
    x = np.linspace(-3, 4, 24, dtype=np.float32).reshape(2, 3, 4)
    rows = x.reshape(2, 12).astype(np.float64)
    if op == "Hardmax":
        expected = np.eye(12, dtype=np.float32)[rows.argmax(axis=1)].reshape(x.shape)
    else:
        soft = np.exp(rows - rows.max(axis=1, keepdims=True))
        soft /= soft.sum(axis=1, keepdims=True)
        expected = (np.log(soft) if op == "LogSoftmax" else soft).reshape(x.shape)
    graph = make_graph(
        {"x": (np.float32, (2, 3, 4))},
        [(OnnxOp(op, opset), ["x"], ["y"], "softmax")],
        {"y": (np.float32, (2, 3, 4))},
        ["y"],
        opset=opset,
    )
    result = NumpyBackend("reference").execute(graph, {"x": x})
    assert {r.engine for r in result.record.nodes} == {"onnx.reference"}
    np.testing.assert_allclose(result.outputs["y"], expected, rtol=1e-6, atol=1e-6)


def lrn_by_the_spec(x: np.ndarray, size: int, alpha: float, beta: float,
                    bias: float) -> np.ndarray:
    """ONNX's LRN in float64: each channel over its window of ``size`` channels."""
    squares, channels = x.astype(np.float64) ** 2, x.shape[1]
    total = np.stack([
        squares[:, max(0, c - (size - 1) // 2) : c + size // 2 + 1].sum(axis=1)
        for c in range(channels)
    ], axis=1)
    return x / (bias + alpha / size * total) ** beta


@pytest.mark.parametrize("fold", [False, True])
def test_an_lrn_on_the_reference_or_folded_sums_every_channel(fold: bool) -> None:
    """onnx.reference's LRN summed the squares for the first channels alone (as many as the
    batch has): the others were divided by ``bias ** beta`` only. It ran so on
    ``--fallback reference`` and when folding an LRN of a constant. Oracle: the spec."""
    x = (np.arange(96, dtype=np.float32).reshape(2, 3, 4, 4) % 7 - 3) * 20
    expected = lrn_by_the_spec(x, 3, 1e-3, 0.75, 2.0)
    inputs, initializers = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4, 4])], []
    if fold:  # the LRN's input a constant: folded at import
        inputs, initializers = [], [numpy_helper.from_array(x, "x")]
    model = helper.make_model(helper.make_graph(
        [helper.make_node("LRN", ["x"], ["l"], size=3, alpha=1e-3, bias=2.0),
         helper.make_node("Identity", ["l"], ["y"])],
        "g", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], initializers,
    ), opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    graph = load(model)
    assert [n.op_type for n in graph.nodes] == (["Identity"] if fold else ["LRN", "Identity"])
    y = NumpyBackend("reference").run(graph, {} if fold else {"x": x})["y"]
    np.testing.assert_allclose(y, expected, rtol=1e-5)


def test_an_lp_normalization_on_the_reference_sums_absolute_values() -> None:
    """LpNormalization with p=1 divides by the sum of |x|; onnx.reference summed x, so signs
    cancelled ([1, -2, 3] divided by 2, not 6). Oracle: the spec in NumPy."""
    x = np.array([[1, -2, 3], [0, 0, 0], [-4, 0.5, 2]], np.float32)
    graph = make_graph(
        {"x": (np.float32, (3, 3))},
        [(OnnxOp("LpNormalization", 1, attrs={"axis": 1, "p": 1}), ["x"], ["y"], "norm")],
        {"y": (np.float32, (3, 3))},
        ["y"],
    )
    norm = np.abs(x).sum(axis=1, keepdims=True)
    expected = np.divide(x, norm, out=np.zeros_like(x), where=norm != 0)
    y = NumpyBackend("reference").run(graph, {"x": x})["y"]
    np.testing.assert_allclose(y, expected, rtol=1e-6)


def test_a_roi_align_10_on_the_reference_samples_without_the_half_pixel_shift() -> None:
    """RoiAlign-10 samples as RoiAlign-16's output_half_pixel; onnx.reference read it by
    RoiAlign-16's default, half_pixel. Oracles: onnxruntime, and the reference's own
    RoiAlign-16 told output_half_pixel."""
    import onnxruntime as ort

    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 3, 5, 6)).astype(np.float32)

    def model(opset: int, **mode: str) -> onnx.ModelProto:
        made = helper.make_model(helper.make_graph(
            [helper.make_node("RoiAlign", ["x", "r", "b"], ["y"], output_height=2,
                              output_width=3, sampling_ratio=2, spatial_scale=0.5, **mode)],
            "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 5, 6])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
            [numpy_helper.from_array(np.array([[0, 0, 6, 6], [1, 2, 8, 10]], np.float32), "r"),
             numpy_helper.from_array(np.array([0, 1], np.int64), "b")],
        ), opset_imports=[helper.make_opsetid("", opset)])
        made.ir_version = 8
        return made

    session = ort.InferenceSession(model(10).SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    expected = session.run(None, {"x": x})[0]
    told = NumpyBackend("reference").run(
        load(model(16, coordinate_transformation_mode="output_half_pixel")), {"x": x})["y"]
    np.testing.assert_allclose(told, expected, rtol=1e-5, atol=1e-6)
    y = NumpyBackend("reference").run(load(model(10)), {"x": x})["y"]
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(("norm", "elem"), [("MAX", TensorProto.FLOAT),
                                             ("MAX", TensorProto.INT64),
                                             ("L2", TensorProto.INT64)])
def test_a_normalizer_on_the_reference_works_as_the_spec_and_onnxruntime(norm, elem) -> None:
    """ai.onnx.ml's Normalizer: MAX divides each row by its largest element (``X / max(X)``;
    a row whose largest is 0 stays), where onnx.reference divided by the largest absolute
    value; its output is float whatever the input, where the reference's was float64 for
    integers, and its L2 of integers failed. Oracles: the spec in NumPy, onnxruntime."""
    import onnxruntime as ort

    x = np.array([[1, -4, 2], [-1, -2, -6], [0, -1, 0], [3, 1, -4]])
    model = helper.make_model(helper.make_graph(
        [helper.make_node("Normalizer", ["x"], ["y"], domain="ai.onnx.ml", norm=norm)], "g",
        [helper.make_tensor_value_info("x", elem, [4, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 3])],
    ), opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("ai.onnx.ml", 1)])
    model.ir_version = 8
    x = x.astype(np.float32 if elem == TensorProto.FLOAT else np.int64)
    wide = x.astype(np.float64)
    if norm == "MAX":
        top = wide.max(axis=1, keepdims=True)
        expected = np.where(top == 0, wide, wide / np.where(top == 0, 1, top))
    else:
        expected = wide / np.sqrt((wide**2).sum(axis=1, keepdims=True))
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(session.run(None, {"x": x})[0], expected, rtol=1e-6)
    y = NumpyBackend("reference").run(load(model), {"x": x})["y"]
    assert y.dtype == np.float32
    np.testing.assert_allclose(y, expected, rtol=1e-6)


@pytest.mark.parametrize(("opset", "axis"), [(10, None), (13, 0), (18, 2)])
def test_a_dequantize_linear_before_opset_19_runs_on_the_reference(opset, axis) -> None:
    """onnx.reference implements DequantizeLinear from opset 19 only: at 10-18 it refused
    the model ("No implementation for operator 'DequantizeLinear'"), where onnxruntime runs
    it. Oracle: the spec, (x - zero_point) * scale, per channel along ``axis``."""
    x = np.arange(24, dtype=np.uint8).reshape(2, 3, 4) * 9
    count = 1 if axis is None else x.shape[axis]
    scale = np.linspace(0.5, 2, count).astype(np.float32).reshape(() if axis is None else -1)
    zero = np.arange(count, dtype=np.uint8).reshape(scale.shape) * 7
    model = helper.make_model(helper.make_graph(
        [helper.make_node("DequantizeLinear", ["x", "s", "z"], ["y"],
                          **({} if axis is None else {"axis": axis}))], "g",
        [helper.make_tensor_value_info("x", TensorProto.UINT8, [2, 3, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3, 4])],
        [numpy_helper.from_array(scale, "s"), numpy_helper.from_array(zero, "z")],
    ), opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 7
    along = [1, 1, 1]
    if axis is not None:
        along[axis] = count
    expected = (x.astype(np.float32) - zero.reshape(along)) * scale.reshape(along)
    y = NumpyBackend("reference").run(load(model), {"x": x})["y"]
    np.testing.assert_allclose(y, expected, rtol=1e-6)


@pytest.mark.parametrize("opset", [1, 3])
def test_a_concat_1_without_axis_on_the_reference_joins_along_axis_1(opset) -> None:
    """Concat-1's ``axis`` is optional, default 1; onnx.reference read the node by the
    newest schema, which requires it, and failed ("Attribute 'axis' is expected"). Oracle:
    NumPy's concatenate along axis 1."""
    from backends.numpy.fallback import reference_evaluator

    model = helper.make_model(helper.make_graph(
        [helper.make_node("Concat", ["a", "b"], ["y"])], "g",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2, 3, 2]),
         helper.make_tensor_value_info("b", TensorProto.FLOAT, [2, 1, 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    ), opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 3
    a = np.arange(12, dtype=np.float32).reshape(2, 3, 2)
    b = -np.arange(4, dtype=np.float32).reshape(2, 1, 2)
    (y,) = reference_evaluator(model).run(None, {"a": a, "b": b})
    assert np.array_equal(y, np.concatenate([a, b], axis=1))


@pytest.mark.parametrize("opset", [1, 4])
def test_a_reshape_1_on_the_reference_reads_its_shape_attribute(opset) -> None:
    """Reshape-1 (opsets 1-4) takes ``shape`` as an attribute; onnx.reference implements
    Reshape from version 5 only, so ``--fallback reference`` failed on it ("No
    implementation for operator 'Reshape' ... version 4, found 5, 14"). Oracles:
    onnxruntime (which runs Reshape-1) and NumPy's reshape (0 copies the input's size)."""
    import onnxruntime as ort

    from backends.numpy.fallback import reference_evaluator

    model = helper.make_model(helper.make_graph(
        [helper.make_node("Reshape", ["x"], ["y"], shape=[0, -1, 2])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    ), opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 3
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    (y,) = reference_evaluator(model).run(None, {"x": x})
    (want,) = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"]).run(None, {"x": x})
    assert np.array_equal(y, x.reshape(2, 6, 2)) and np.array_equal(y, want)


def _reference_loop(cond: bool) -> onnx.ModelProto:
    """A Loop of 3 trips (with ``cond``, a ``go`` input true) negating x [2, 6], scanning
    each trip's x [2, 6] and its iteration number (a scalar)."""
    vi = helper.make_tensor_value_info
    body = helper.make_graph(
        [helper.make_node("Identity", ["c"], ["c_out"]),
         helper.make_node("Neg", ["acc"], ["acc_out"]),
         helper.make_node("Identity", ["acc"], ["seen"]),
         helper.make_node("Identity", ["i"], ["trips"])], "body",
        [vi("i", TensorProto.INT64, []), vi("c", TensorProto.BOOL, []),
         vi("acc", TensorProto.FLOAT, [2, 6])],
        [vi("c_out", TensorProto.BOOL, []), vi("acc_out", TensorProto.FLOAT, None),
         vi("seen", TensorProto.FLOAT, None), vi("trips", TensorProto.INT64, None)])
    model = helper.make_model(helper.make_graph(
        [helper.make_node("Loop", ["M", "go" if cond else "", "x"], ["y", "seen_all", "ks"],
                          body=body)], "g",
        [vi("x", TensorProto.FLOAT, [2, 6]), *([vi("go", TensorProto.BOOL, [])] if cond else [])],
        [vi(n, TensorProto.FLOAT, None) for n in ("y", "seen_all")]
        + [vi("ks", TensorProto.INT64, None)],
        [numpy_helper.from_array(np.array(3, np.int64), "M")],
    ), opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 9
    return model


@pytest.mark.parametrize("cond", [True, False])
def test_a_loop_on_the_reference_iterates_and_stacks_as_onnx_says(cond) -> None:
    """onnx.reference's Loop ran no iteration without a ``cond`` input, and stacked scan
    outputs with ``np.vstack``: three [2, 6] values made [6, 6], three scalars [3, 1].
    Oracles: onnxruntime, and the spec's values written out (x, -x, x; 0, 1, 2)."""
    import onnxruntime as ort

    from backends.numpy.fallback import reference_evaluator

    model = _reference_loop(cond)
    x = np.arange(12, dtype=np.float32).reshape(2, 6)
    feeds = {"x": x, **({"go": np.array(True)} if cond else {})}
    want = [-x, np.stack([x, -x, x]), np.arange(3, dtype=np.int64)]
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    got = reference_evaluator(model).run(None, feeds)
    for expected, theirs, ours in zip(want, session.run(None, feeds), got):
        assert np.array_equal(theirs, expected) and theirs.dtype == expected.dtype
        assert np.array_equal(ours, expected) and ours.dtype == expected.dtype


@pytest.mark.parametrize("known", [True, False])
def test_a_loop_of_no_trip_on_the_reference_stacks_nothing_as_the_body_makes(known) -> None:
    """A Loop of 0 trips making scan outputs (a case of the fuzzer's): the reference Loop's
    ``np.stack`` of no value raised "need at least one array to stack". Where the body's
    declared or inferred types fix an output's shape it is empty along axis 0, each element
    of that shape, as onnxruntime gives it ([0, 2, 6]; the iteration numbers [0]); where
    nothing does (a NonZero's, whose size only data tells), one error naming the output."""
    import onnxruntime as ort

    from backends.numpy.fallback import reference_evaluator

    model = _reference_loop(cond=False)
    model.graph.initializer[0].CopyFrom(numpy_helper.from_array(np.array(0, np.int64), "M"))
    body = model.graph.node[0].attribute[0].g
    body.output[2].CopyFrom(helper.make_tensor_value_info("seen", TensorProto.FLOAT, ["n", 6]))
    if not known:
        body.node[2].CopyFrom(helper.make_node("NonZero", ["acc"], ["seen"]))
        body.output[2].CopyFrom(helper.make_tensor_value_info("seen", TensorProto.INT64, None))
        model.graph.output[1].CopyFrom(
            helper.make_tensor_value_info("seen_all", TensorProto.INT64, None))
    x = np.arange(12, dtype=np.float32).reshape(2, 6)
    evaluator = reference_evaluator(model)
    if not known:
        with pytest.raises(ValueError, match="ran no iteration, so its scan output 'seen' "
                                             "has no element shape"):
            evaluator.run(None, {"x": x})
        return
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    theirs = session.run(None, {"x": x})
    ours = evaluator.run(None, {"x": x})
    assert np.array_equal(ours[0], x) and np.array_equal(theirs[0], x)
    for made, want in zip(ours[1:], theirs[1:]):  # seen [0, 2, 6]; trips, scalars: [0]
        assert made.shape == want.shape and made.dtype == want.dtype
    assert ours[1].shape == (0, 2, 6) and ours[2].shape == (0,)


def test_a_loop_run_whole_on_the_reference_fallback_runs_its_trips() -> None:
    """A Loop whose body the NumPy backend cannot lower (a sequence) runs whole on the
    fallback: on ``--fallback reference`` it carried x through no iteration ([2, 6], where
    onnxruntime's 2 trips of doubling rows make [8, 6])."""
    import onnxruntime as ort

    vi = helper.make_tensor_value_info
    body = helper.make_graph(
        [helper.make_node("SequenceConstruct", ["acc", "acc"], ["seq"]),
         helper.make_node("ConcatFromSequence", ["seq"], ["acc_out"], axis=0),
         helper.make_node("Identity", ["c"], ["c_out"])], "body",
        [vi("i", TensorProto.INT64, []), vi("c", TensorProto.BOOL, []),
         vi("acc", TensorProto.FLOAT, [None, 6])],
        [vi("c_out", TensorProto.BOOL, []), vi("acc_out", TensorProto.FLOAT, [None, 6])])
    model = helper.make_model(helper.make_graph(
        [helper.make_node("Loop", ["M", "", "x"], ["y"], body=body)], "g",
        [vi("x", TensorProto.FLOAT, [2, 6])], [vi("y", TensorProto.FLOAT, [None, 6])],
        [numpy_helper.from_array(np.array(2, np.int64), "M")],
    ), opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 9
    x = np.arange(12, dtype=np.float32).reshape(2, 6)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (want,) = session.run(None, {"x": x})
    assert want.shape == (8, 6)
    y = NumpyBackend("reference").run(lower(load(model), "6_4"), {"x": x})["y"]
    assert np.array_equal(y, want)


@pytest.mark.parametrize("attrs", [
    {"kernel_shape": [2, 2], "pads": [0, 0, 1, 1]},  # YOLOv3-tiny's stride-1 pool
    {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "ceil_mode": 1},  # GoogLeNet's branch 4
    {"kernel_shape": [2, 3], "auto_pad": "SAME_LOWER"},
    {"kernel_shape": [2, 2], "auto_pad": "SAME_UPPER", "storage_order": 1},
])
def test_a_max_pool_on_the_reference_sizes_and_pads_as_onnx_says(attrs) -> None:
    """onnx.reference's MaxPool, where strides and dilations are 1, read pads as (begin,
    end) pairs (ONNX lists the begins, then the ends: 5x6 came out 4x7), sized a ceil_mode
    pool 6x6 for 4x4, and put SAME_LOWER's odd pad at the end. Oracle: the spec's sizes
    and NumPy maxima over the explicitly padded input (values), onnxruntime (indices)."""
    import onnxruntime as ort

    x = np.random.default_rng(6).standard_normal((1, 2, 5, 6)).astype(np.float32)
    if attrs["kernel_shape"] == [3, 3]:
        x = x[:, :, :4, :4].copy()
    model = helper.make_model(helper.make_graph(
        [helper.make_node("MaxPool", ["x"], ["y", "i"], **attrs)], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("i", TensorProto.INT64, None)],
    ), opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    kh, kw = attrs["kernel_shape"]
    height, width = x.shape[2:]
    if "pads" in attrs:
        top, left, bottom, right = attrs["pads"]
    else:  # SAME: the output is the input's size; the odd pad at the end (UPPER) or start
        extra_h, extra_w = kh - 1, kw - 1
        lower_first = attrs["auto_pad"] == "SAME_LOWER"
        top, left = [(e + 1) // 2 if lower_first else e // 2 for e in (extra_h, extra_w)]
        bottom, right = extra_h - top, extra_w - left
    padded = np.pad(x, [(0, 0), (0, 0), (top, bottom), (left, right)], constant_values=-np.inf)
    rows = padded.shape[2] - kh + 1
    cols = padded.shape[3] - kw + 1
    if attrs.get("ceil_mode"):  # stride 1: ceiling changes nothing
        rows, cols = height + top + bottom - kh + 1, width + left + right - kw + 1
    expected = np.stack([
        np.stack([padded[:, :, r:r + kh, c:c + kw].max(axis=(2, 3)) for c in range(cols)], -1)
        for r in range(rows)
    ], -2)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    want_y, want_i = session.run(None, {"x": x})
    np.testing.assert_array_equal(want_y, expected)
    made = NumpyBackend("reference").run(load(model), {"x": x})
    np.testing.assert_array_equal(made["y"], expected)
    np.testing.assert_array_equal(made["i"], want_i)


def one_node_model(node: onnx.NodeProto, x: np.ndarray, initializers=(), opset: int = 13,
                   ml: int | None = None, out_type: int = TensorProto.FLOAT) -> onnx.ModelProto:
    """A model of ``node`` alone, its input ``x`` (typed as the array), its output ``y``."""
    opsets = [helper.make_opsetid("", opset)]
    if ml is not None:
        opsets.append(helper.make_opsetid("ai.onnx.ml", ml))
    made = helper.make_model(helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info("x", helper.np_dtype_to_tensor_dtype(x.dtype), x.shape)],
        [helper.make_tensor_value_info("y", out_type, None)], list(initializers),
    ), opset_imports=opsets)
    made.ir_version = 7
    return made


def onnxruntime_runs(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    import onnxruntime as ort

    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {"x": x})[0]


@pytest.mark.parametrize(("opset", "length", "scale", "attrs"), [
    (13, 5, 0.75, {"mode": "linear", "coordinate_transformation_mode": "align_corners"}),
    (13, 5, 2.5, {"mode": "nearest", "coordinate_transformation_mode": "align_corners"}),
    (13, 5, 1.3, {"mode": "cubic", "coordinate_transformation_mode": "align_corners"}),
    (13, 3, 0.4, {"mode": "linear", "coordinate_transformation_mode": "pytorch_half_pixel"}),
    (13, 4, 0.6, {"mode": "nearest", "coordinate_transformation_mode": "half_pixel",
                  "nearest_mode": "floor"}),
    (13, 6, 1.3, {"mode": "nearest", "coordinate_transformation_mode": "half_pixel"}),
    (19, 7, 0.5, {"mode": "nearest", "coordinate_transformation_mode": "half_pixel_symmetric"}),
    (10, 7, 0.6, {"mode": "nearest"}),
    (10, 7, 1.5, {"mode": "linear"}),
])
def test_a_resize_on_the_reference_maps_coordinates_as_onnx_says(opset, length, scale,
                                                                  attrs) -> None:
    """onnx.reference's Resize took align_corners' and pytorch_half_pixel's lengths before
    flooring (0.75 of 5: 6.5 off), picked a nearest element one off at coordinates within
    rounding of an integer or a tie, and failed on Resize-10. Oracle: onnxruntime, whose
    coordinates follow the spec's formulas (in float32)."""
    x = np.random.default_rng(7).standard_normal((1, 2, 3, length)).astype(np.float32)
    inputs = ["x", "s"] if opset < 11 else ["x", "", "s"]
    model = one_node_model(
        helper.make_node("Resize", inputs, ["y"], **attrs), x,
        [numpy_helper.from_array(np.array([1, 1, 1, scale], np.float32), "s")], opset)
    expected = onnxruntime_runs(model, x)
    y = NumpyBackend("reference").run(load(model), {"x": x})["y"]
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-5)


def test_a_resize_to_the_same_shape_still_resamples() -> None:
    """1.2 of 3 is 3 long, but its half_pixel coordinates are -1/12, 3/4, 19/12, not 0, 1,
    2: the spec interpolates there; onnxruntime copies the input (a known divergence,
    docs/DECISIONS.md). Oracle: the spec's formula in NumPy."""
    x = np.array([[[[1.5, 3.0, 4.5]]]], np.float32)
    model = one_node_model(
        helper.make_node("Resize", ["x", "", "s"], ["y"], mode="linear"), x,
        [numpy_helper.from_array(np.array([1, 1, 1, 1.2], np.float32), "s")])
    at = (np.arange(3) + 0.5) / np.float32(1.2) - 0.5
    expected = np.interp(at, [0, 1, 2], x.ravel()).reshape(x.shape)
    y = NumpyBackend("reference").run(load(model), {"x": x})["y"]
    np.testing.assert_allclose(y, expected, rtol=1e-6)
    np.testing.assert_array_equal(onnxruntime_runs(model, x), x)  # the divergence


@pytest.mark.parametrize("count_include_pad", [0, 1, None])  # None: LpPool, p=2
@pytest.mark.parametrize(("shape", "attrs"), [
    ((1, 1, 7), {"kernel_shape": [3], "strides": [3]}),
    ((1, 2, 4, 6), {"kernel_shape": [3, 3], "strides": [3, 1]}),
    ((1, 2, 7, 7), {"kernel_shape": [1, 3], "strides": [1, 3], "pads": [0, 1, 0, 1]}),
])
def test_a_pool_with_ceil_mode_on_the_reference_keeps_its_windows(
    count_include_pad, shape, attrs
) -> None:
    """AveragePool and LpPool with ceil_mode: a last window reaching past the input takes
    what it holds. onnx.reference padded the input on both sides to fit its windows, so
    they started early ([1..7] by 3, stride 3: 1.5, 4, 6), and its LpPool scaled a short
    window's mean by the kernel's size. Oracles: onnxruntime, and the means (Euclidean
    norms) of [1, 2, 3], [4, 5, 6], [7]."""
    x = np.random.default_rng(8).standard_normal(shape).astype(np.float32)
    if shape == (1, 1, 7):
        x = np.arange(1, 8, dtype=np.float32).reshape(shape)
    if count_include_pad is None:
        node = helper.make_node("LpPool", ["x"], ["y"], ceil_mode=1, p=2, **attrs)
    else:
        node = helper.make_node("AveragePool", ["x"], ["y"], ceil_mode=1,
                                count_include_pad=count_include_pad, **attrs)
    model = one_node_model(node, x, opset=18)
    expected = onnxruntime_runs(model, x)
    if shape == (1, 1, 7):
        windows = [[1, 2, 3], [4, 5, 6], [7]]
        pooled = np.linalg.norm if count_include_pad is None else np.mean
        np.testing.assert_allclose(expected.ravel(), [pooled(w) for w in windows], rtol=1e-6)
    y = NumpyBackend("reference").run(load(model), {"x": x})["y"]
    np.testing.assert_allclose(y, expected, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize(("attrs", "x", "out_type"), [
    ({"keys_int64s": [1, 2], "values_floats": [10.0, 20.0],
      "default_tensor": numpy_helper.from_array(np.array([-7], np.float32))},
     np.array([1, 5, 2], np.int64), TensorProto.FLOAT),
    ({"keys_strings": ["a", "b"], "values_int64s": [1, 2],
      "default_tensor": numpy_helper.from_array(np.array([-9], np.int64))},
     np.array(["a", "z", "b"], object), TensorProto.INT64),
    ({"keys_int64s": [1, 2], "values_strings": ["a", "b"],
      "default_tensor": helper.make_tensor("d", TensorProto.STRING, [1], [b"zz"])},
     np.array([1, 5, 2], np.int64), TensorProto.STRING),
    ({"keys_floats": [float("nan"), 1.0], "values_int64s": [5, 6]},
     np.array([np.nan, 1, 2], np.float32), TensorProto.INT64),
    ({"keys_tensor": numpy_helper.from_array(np.array([1, 2], np.int64)),
      "values_tensor": numpy_helper.from_array(np.array([1.5, 2.5], np.float32))},
     np.array([1, 5, 2], np.int64), TensorProto.FLOAT),
])
def test_a_label_encoder_4_on_the_reference_works_as_its_schema_says(attrs, x, out_type) -> None:
    """LabelEncoder-4: ``default_tensor`` is the default whichever ``values_*`` is given
    (onnx.reference read it with ``values_tensor`` alone: -0, -1, "_Unused" for -7, -9,
    "zz"), NaN keys match any NaN, ``values_tensor`` without a default takes the schema's
    (the reference failed), and strings come out as objects. Oracle: onnxruntime."""
    model = one_node_model(
        helper.make_node("LabelEncoder", ["x"], ["y"], domain="ai.onnx.ml", **attrs),
        x, opset=19, ml=4, out_type=out_type)
    expected = onnxruntime_runs(model, x)
    y = NumpyBackend("reference").run(load(model), {"x": x})["y"]
    assert y.dtype == expected.dtype
    np.testing.assert_array_equal(y, expected)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.bool_, np.int64])
@pytest.mark.parametrize("like", [False, True])
def test_a_cast_to_string_on_the_reference_writes_numbers_as_onnxruntime(dtype, like) -> None:
    """Cast (and CastLike) to STRING: onnx.reference wrote NumPy's str ("-2.0", "nan",
    "True") into NumPy ``<U`` arrays; onnxruntime writes C's %.8g, "NaN", "INF", "1" into
    objects, as dmlgraph's STRING tensors. Oracles: onnxruntime, and the strings spelled
    out."""
    values = [-2.0, 0.1, 1e20, np.nan, np.inf, -np.inf, -0.0, 1 / 3, 65504.0, 1234567.0]
    with np.errstate(over="ignore"):  # 1e20 and 1234567 are inf as float16
        x = np.array([1, 0, 1] if dtype is np.bool_ else [-2, 0, 12345678901]
                     if dtype is np.int64 else values).astype(dtype)
    if like:
        node = helper.make_node("CastLike", ["x", "l"], ["y"])
        initializers = [helper.make_tensor("l", TensorProto.STRING, [1], [b"z"])]
    else:
        node = helper.make_node("Cast", ["x"], ["y"], to=TensorProto.STRING)
        initializers = []
    model = one_node_model(node, x, initializers, opset=19, out_type=TensorProto.STRING)
    expected = onnxruntime_runs(model, x)
    spelled = {
        np.float32: ["-2", "0.1", "1e+20", "NaN", "INF", "-INF", "-0", "0.33333334", "65504",
                     "1234567"],
        np.float64: ["-2", "0.1", "1e+20", "NaN", "INF", "-INF", "-0", "0.33333333", "65504",
                     "1234567"],
        np.float16: ["-2", "0.099975586", "INF", "NaN", "INF", "-INF", "-0", "0.33325195",
                     "65504", "INF"],
        np.bool_: ["1", "0", "1"],
        np.int64: ["-2", "0", "12345678901"],
    }[dtype]
    assert expected.tolist() == spelled
    y = NumpyBackend("reference").run(load(model), {"x": x})["y"]
    assert y.dtype == object and y.tolist() == spelled


def test_a_cast_of_a_constant_to_string_folds_as_onnxruntime_writes_it() -> None:
    """Folding refused a Cast of a constant to STRING (the reference's ``<U`` result was not
    the STRING tensor inference declares); it folds to onnxruntime's strings. Oracle: the
    strings spelled out (onnxruntime's, as in the test above)."""
    c = np.array([-2.0, 0.5, np.nan], np.float32)
    model = helper.make_model(helper.make_graph(
        [helper.make_node("Cast", ["c"], ["s"], to=TensorProto.STRING),
         helper.make_node("Identity", ["s"], ["y"])], "g", [],
        [helper.make_tensor_value_info("y", TensorProto.STRING, None)],
        [numpy_helper.from_array(c, "c")],
    ), opset_imports=[helper.make_opsetid("", 19)])
    model.ir_version = 9
    graph = load(model)
    assert [n.op_type for n in graph.nodes] == ["Identity"]
    folded = graph.constant("s")
    assert folded is not None and folded.dtype == object
    assert folded.tolist() == ["-2", "0.5", "NaN"]


@pytest.mark.parametrize("length", [7, 8, 9, 10])
def test_a_conv_transpose_to_an_output_shape_on_the_reference_pads_as_onnx_says(length) -> None:
    """ConvTranspose with ``output_shape`` (auto_pad NOTSET) takes its pads from the shape,
    the odd one at the start; a shape one past the full output extends it at the end.
    onnx.reference took the pads as zeros and failed on every length but the full 9.
    Oracles: the full output in NumPy, cropped (start first) or extended by the bias; and
    onnxruntime."""
    x = np.arange(1, 5, dtype=np.float32).reshape(1, 1, 4)
    w = np.array([[[1, 10, 100]]], np.float32)
    model = one_node_model(
        helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], kernel_shape=[3], strides=[2],
                         output_shape=[length]), x,
        [numpy_helper.from_array(w, "w"),
         numpy_helper.from_array(np.array([0.5], np.float32), "b")])
    full = np.zeros(10, np.float32)
    for i, value in enumerate(x.ravel()):
        full[2 * i : 2 * i + 3] += value * w.ravel()
    full += 0.5
    crop = 9 - length
    expected = full[crop - crop // 2 : crop - crop // 2 + length].reshape(1, 1, length)
    np.testing.assert_array_equal(onnxruntime_runs(model, x), expected)
    y = NumpyBackend("reference").run(load(model), {"x": x})["y"]
    np.testing.assert_array_equal(y, expected)


@pytest.mark.parametrize("auto_pad", ["SAME_UPPER", "SAME_LOWER"])
def test_an_average_pool_whose_same_padding_is_negative_runs_on_the_reference(auto_pad) -> None:
    """A SAME AveragePool whose windows fit without padding (kernel 1, stride 2 over 4):
    the spec's pad formula goes negative, which onnx.reference handed to ``np.pad`` ("index
    can't contain negative values"); it pads nothing, as TensorFlow's SAME (ONNX's model)
    and MaxPool's replacement. onnxruntime refuses it ("padding values must be
    non-negative"). Oracle: every other element, the spec's ceil(4 / 2) of them."""
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    model = one_node_model(helper.make_node(
        "AveragePool", ["x"], ["y"], kernel_shape=[1, 1], strides=[2, 2], auto_pad=auto_pad), x)
    expected = x[:, :, ::2, ::2]
    y = NumpyBackend("reference").run(load(model), {"x": x})["y"]
    np.testing.assert_array_equal(y, expected)


def test_a_dilated_same_pool_on_the_reference_is_sized_by_the_dilated_window() -> None:
    """A SAME_LOWER MaxPool, kernel 3 dilated by 2, stride 1, over 3: ONNX's output is
    ceil(3 / 1) = 3 long, padded by (3 - 1) + 5 - 3 = 4, each element the largest of x[r -
    2], x[r], x[r + 2]; onnxruntime pads by the undilated kernel and gives 1 (a known
    divergence, docs/DECISIONS.md). Oracle: the spec's windows in NumPy."""
    x = np.array([[[3.0, 1.0, 5.0]]], np.float32)
    model = one_node_model(helper.make_node(
        "MaxPool", ["x"], ["y"], kernel_shape=[3], dilations=[2], auto_pad="SAME_LOWER"), x)
    y = NumpyBackend("reference").run(load(model), {"x": x})["y"]
    np.testing.assert_array_equal(y, [[[5.0, 1.0, 5.0]]])
    assert onnxruntime_runs(model, x).shape == (1, 1, 1)  # the divergence


@pytest.mark.parametrize("opset", [7, 9])
@pytest.mark.parametrize(("mode", "scales"), [("nearest", [1.0, 1.0, 1.5, 2.5]),
                                              ("linear", [1.0, 1.0, 2.0, 2.0]),
                                              ("linear", [1.0, 1.0, 3.0, 1.7])])
def test_an_upsample_on_the_reference_runs_as_resize_10(opset, mode, scales) -> None:
    """Upsample resamples as Resize-10 (asymmetric, floor(input * scale) long).
    onnx.reference repeated elements for whole nearest scales and failed otherwise ("Not
    implemented for mode='linear'"). Oracle: onnxruntime."""
    x = np.random.default_rng(9).standard_normal((1, 2, 3, 5)).astype(np.float32)
    if opset < 9:  # Upsample-7: scales an attribute
        node, initializers = helper.make_node("Upsample", ["x"], ["y"], mode=mode,
                                              scales=scales), []
    else:
        node = helper.make_node("Upsample", ["x", "s"], ["y"], mode=mode)
        initializers = [numpy_helper.from_array(np.array(scales, np.float32), "s")]
    model = one_node_model(node, x, initializers, opset=opset)
    expected = onnxruntime_runs(model, x)
    y = NumpyBackend("reference").run(load(model), {"x": x})["y"]
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-6)


def test_consecutive_onnx_nodes_form_one_segment() -> None:
    """Two independent ONNX chains around one DML node: the schedule runs each kind while it
    can, so the fallback prepares two models, not one per node."""
    prepared: list[list[str]] = []

    class Counting(ReferenceFallback):
        def prepare(self, graph):  # type: ignore[override]
            prepared.append([n.name for n in graph.nodes])
            return super().prepare(graph)

    x = np.arange(4, dtype=np.float32)
    graph = make_graph(
        {"x": (np.float32, (4,))},
        [
            (OnnxOp("Neg", 13), ["x"], ["a"], "neg"),
            (SliceDesc(input_tensor=T("FLOAT32", (4,)), output_tensor=T("FLOAT32", (2,)),
                       offsets=(0,), sizes=(2,), strides=(2,)), ["a"], ["s"], "slice"),
            (OnnxOp("Abs", 13), ["x"], ["b"], "abs"),
            (OnnxOp("Relu", 14), ["b"], ["c"], "relu"),
            (OnnxOp("Exp", 13), ["s"], ["e"], "exp"),
        ],
        {"a": (np.float32, (4,)), "s": (np.float32, (2,)), "b": (np.float32, (4,)),
         "c": (np.float32, (4,)), "e": (np.float32, (2,))},
        ["c", "e"],
    )
    out = NumpyBackend(Counting()).run(graph, {"x": x})
    np.testing.assert_allclose(out["e"], np.exp(-x[::2]), rtol=1e-6)
    np.testing.assert_array_equal(out["c"], x)
    assert prepared == [["neg", "abs", "relu"], ["exp"]]


# ----------------------------------------------------------------------------- graph I/O


def test_outputs_may_be_inputs_or_constants_and_come_back_as_copies() -> None:
    c = np.array([1, 2, 3], np.int32)
    graph = make_graph({"x": (np.int32, (3,))}, [], {}, ["x", "c"], constants={"c": c})
    x = np.array([4, 5, 6], np.int32)
    out = NumpyBackend().run(graph, {"x": x})
    np.testing.assert_array_equal(out["x"], x)
    np.testing.assert_array_equal(out["c"], c)
    out["c"][0] = 99
    out["x"][0] = 99
    assert graph.constant("c")[0] == 1 and x[0] == 4


@pytest.mark.parametrize("feeds, fragment", [
    ({}, "missing ['x']"),
    ({"x": np.zeros((2, 3), np.float32), "z": np.zeros(1)}, "unknown ['z']"),
    ({"x": np.zeros((2, 3), np.float64)}, "is float64; the graph expects float32"),
    ({"x": np.zeros((3, 3), np.float32)}, "has shape [3, 3]"),
])
def test_feeds_are_checked(feeds, fragment) -> None:
    graph = make_graph({"x": (np.float32, (2, 3))}, [(OnnxOp("Neg", 13), ["x"], ["y"], "neg")],
                       {"y": (np.float32, (2, 3))}, ["y"])
    with pytest.raises(BackendError, match=None) as info:
        NumpyBackend().run(graph, feeds)
    assert fragment in str(info.value)


def test_symbolic_dims_must_agree_across_inputs() -> None:
    graph = make_graph({"a": (np.float32, ("N", 2)), "b": (np.float32, ("N",))},
                       [(OnnxOp("Neg", 13), ["b"], ["y"], "neg")], {"y": (np.float32, ("N",))},
                       ["y"])
    with pytest.raises(BackendError, match=r"dimension 'N' is 3 in input 'a' \(axis 0\) but 4 "
                       r"in input 'b' \(axis 0\)"):
        NumpyBackend().run(graph, {"a": np.zeros((3, 2), np.float32),
                                   "b": np.zeros(4, np.float32)})
    # one input naming one dimension twice: the axes tell them apart
    square = make_graph({"a": (np.float32, ("N", "N"))}, [(OnnxOp("Neg", 13), ["a"], ["y"], "neg")],
                        {"y": (np.float32, ("N", "N"))}, ["y"])
    with pytest.raises(BackendError, match=r"is 2 in input 'a' \(axis 0\) but 3 in input 'a' "
                       r"\(axis 1\)"):
        NumpyBackend().run(square, {"a": np.zeros((2, 3), np.float32)})


def test_a_view_that_does_not_bind_its_tensor_is_refused() -> None:
    desc = SliceDesc(input_tensor=T("FLOAT32", (2, 4)), output_tensor=T("FLOAT32", (2, 2)),
                     offsets=(0, 0), sizes=(2, 2), strides=(1, 1))
    graph = make_graph({"x": (np.float32, (2, 3))}, [(desc, ["x"], ["y"], "slice")],
                       {"y": (np.float32, (2, 2))}, ["y"])
    with pytest.raises(BackendError, match="node 'slice'.*TotalTensorSizeInBytes 32 differs"):
        NumpyBackend().run(graph, {"x": np.zeros((2, 3), np.float32)})


def test_the_plan_follows_changes_to_the_graph() -> None:
    graph = make_graph({"x": (np.float32, (3,))}, [(OnnxOp("Neg", 13), ["x"], ["y"], "n")],
                       {"y": (np.float32, (3,))}, ["y"])
    backend, x = NumpyBackend("reference"), np.array([1.0, -2.0, 3.0], np.float32)
    np.testing.assert_array_equal(backend.run(graph, {"x": x})["y"], -x)
    graph.replace_node(graph.nodes[0].id, op=OnnxOp("Abs", 13))
    np.testing.assert_array_equal(backend.run(graph, {"x": x})["y"], np.abs(x))


# ----------------------------------------------------------------------------- run-time parameters
# In the style of onnx's backend node tests (onnx/backend/test/case/node/slice.py, pad.py), with
# every parameter fed as a graph input; onnxruntime on the same model is the oracle.

SLICE_CASES = {
    "slice": ((20, 10, 5), [0, 0], [3, 10], [0, 1], [1, 1]),
    "slice_neg": ((20, 10, 5), [0], [-1], [1], [1]),
    "slice_neg_steps": ((20, 10, 5), [20, 10, 4], [0, 0, 1], [0, 1, 2], [-1, -3, -2]),
    "slice_negative_axes": ((20, 10, 5), [0, 0, 3], [20, 10, 4], [0, -2, -1], [1, 1, 1]),
    "slice_start_out_of_bounds": ((20, 10, 5), [1000], [1000], [1], [1]),
    "slice_end_out_of_bounds": ((20, 10, 5), [1], [1000], [1], [1]),
    "slice_int64_min_end": ((20, 10, 5), [-1], [-(2**63)], [0], [-4]),
}
PAD_CASES = {
    "constant_pad": ("constant", (1, 3, 4, 5), [0, 0, 1, 3, 0, 0, 2, 4], 1.2, None),
    "constant_pad_axes": ("constant", (1, 3, 4, 5), [0, 3, 0, 4], 1.2, [1, 3]),
    "constant_pad_negative_axes": ("constant", (1, 3, 4, 5), [0, 3, 0, 4], 1.2, [-3, -1]),
    "edge_pad": ("edge", (1, 3, 4, 5), [0, 0, 1, 1, 0, 0, 1, 1], None, None),
    "reflect_pad": ("reflect", (1, 3, 4, 5), [0, 0, 1, 1, 0, 0, 1, 1], None, None),
    "wrap_pad": ("wrap", (1, 3, 4, 5), [0, 0, 1, 1, 0, 0, 1, 1], None, None),
    "negative_pads_crop": ("constant", (1, 3, 4, 5), [0, -1, 2, -2, 0, 1, -1, 3], 0.5, None),
}


def _input(name: str, elem: int, shape) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem, shape)


def slice_model(shape, length: int) -> onnx.ModelProto:
    params = ["starts", "ends", "axes", "steps"]
    graph = helper.make_graph(
        [helper.make_node("Slice", ["x"] + params, ["y"], name="slice")], "slice",
        [_input("x", TensorProto.FLOAT, shape)] + [_input(p, TensorProto.INT64, [length])
                                                   for p in params],
        [_input("y", TensorProto.FLOAT, [None] * len(shape))])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


def pad_model(mode: str, shape, pads: int, value: bool, axes: int | None) -> onnx.ModelProto:
    names = ["x", "pads", "value" if value else "", "axes" if axes else ""]
    while names[-1] == "":
        names.pop()
    inputs = [_input("x", TensorProto.FLOAT, shape), _input("pads", TensorProto.INT64, [pads])]
    if value:
        inputs.append(_input("value", TensorProto.FLOAT, []))
    if axes:
        inputs.append(_input("axes", TensorProto.INT64, [axes]))
    graph = helper.make_graph([helper.make_node("Pad", names, ["y"], mode=mode, name="pad")],
                              "pad", inputs, [_input("y", TensorProto.FLOAT, [None] * len(shape))])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)], ir_version=9)


@pytest.mark.parametrize("case", sorted(SLICE_CASES))
def test_slice_with_parameters_fed_as_inputs(case: str, onnx_run) -> None:
    shape, starts, ends, axes, steps = SLICE_CASES[case]
    model = slice_model(shape, len(starts))
    feeds = {"x": np.random.default_rng(3).standard_normal(shape).astype(np.float32)}
    feeds.update({name: np.array(v, np.int64) for name, v in
                  zip(["starts", "ends", "axes", "steps"], [starts, ends, axes, steps])})
    lowered = lower(load(model), "6_4")
    assert lowered.nodes[0].is_onnx  # nothing to lower before the values arrive
    result = NumpyBackend().execute(lowered, feeds)
    (expected,) = onnx_run(model, feeds)
    assert_same_bits(result.outputs["y"], expected)
    assert all(r.via == "lowered at run time" for r in result.record.nodes)


@pytest.mark.parametrize("case", sorted(PAD_CASES))
def test_pad_with_parameters_fed_as_inputs(case: str, onnx_run) -> None:
    mode, shape, pads, value, axes = PAD_CASES[case]
    axes_length = None if axes is None else len(axes)
    model = pad_model(mode, shape, len(pads), value is not None, axes_length)
    feeds = {"x": np.random.default_rng(4).standard_normal(shape).astype(np.float32),
             "pads": np.array(pads, np.int64)}
    if value is not None:
        feeds["value"] = np.array(value, np.float32)
    if axes is not None:
        feeds["axes"] = np.array(axes, np.int64)
    lowered = lower(load(model), "6_4")
    result = NumpyBackend().execute(lowered, feeds)
    (expected,) = onnx_run(model, feeds)
    assert_same_bits(result.outputs["y"], expected)
    assert any(r.engine == "numpy DirectML emulator" for r in result.record.nodes)


@pytest.mark.parametrize("op", ["Slice", "Pad"])
def test_a_tensor_read_as_data_and_as_a_run_time_parameter(op: str, onnx_run) -> None:
    """Slice(x, x, e), Pad(x, x): one tensor is the data and a parameter. The one-node graph
    lowered at run time needs it as an input and as a constant, so the constant gets a name
    of its own; before, the parameter stayed a run-time value and each lowering lowered
    again, without end (RecursionError)."""
    if op == "Slice":
        node = helper.make_node("Slice", ["x", "x", "e"], ["y"], name="s")
        inits = [helper.make_tensor("e", TensorProto.INT64, [1], [2])]
        x = np.array([1], np.int64)
    else:
        node = helper.make_node("Pad", ["x", "x"], ["y"], name="p", mode="edge")
        inits = []
        x = np.array([1, 2], np.int64)
    graph = helper.make_graph([node], "g", [_input("x", TensorProto.INT64, list(x.shape))],
                              [_input("y", TensorProto.INT64, [None])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)], ir_version=9)
    lowered = lower(load(model), "6_4")
    result = NumpyBackend().execute(lowered, {"x": x})
    (expected,) = onnx_run(model, {"x": x})
    assert_same_bits(result.outputs["y"], expected)
    assert result.record.nodes[0].via == "lowered at run time"


def test_run_time_lowering_is_cached_per_parameter_values(onnx_run) -> None:
    model = slice_model((4, 6), 1)
    lowered = lower(load(model), "2_1")
    backend = NumpyBackend()
    x = np.arange(24, dtype=np.float32).reshape(4, 6)

    def run(start: int, end: int, step: int) -> str:
        feeds = {"x": x, "starts": np.array([start]), "ends": np.array([end]),
                 "axes": np.array([1]), "steps": np.array([step])}
        result = backend.execute(lowered, feeds)
        np.testing.assert_array_equal(result.outputs["y"], onnx_run(model, feeds)[0])
        return result.record.nodes[0].via

    assert run(5, 0, -2) == "lowered at run time"
    assert run(5, 0, -2) == "lowered at run time (cached)"
    assert run(1, 4, 1) == "lowered at run time"
    assert run(5, 0, -2) == "lowered at run time (cached)"


def test_dynamic_data_shape_is_lowered_when_it_runs(onnx_run) -> None:
    """Constant parameters, but a data input of unknown length: the Concat and Pad can be
    lowered only once the shape is known, and again for each new shape."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "T"])
    pads = helper.make_tensor("pads", TensorProto.INT64, [4], [0, 2, 0, 1])
    graph = helper.make_graph(
        [helper.make_node("Pad", ["x", "pads"], ["p"], mode="reflect", name="pad"),
         helper.make_node("Concat", ["p", "x"], ["y"], axis=1, name="concat")],
        "dyn", [x], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, None])], [pads])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    lowered = lower(load(model), "6_4")
    backend = NumpyBackend()
    for length in (5, 9, 5):
        feeds = {"x": np.arange(length, dtype=np.float32).reshape(1, length)}
        result = backend.execute(lowered, feeds)
        np.testing.assert_array_equal(result.outputs["y"], onnx_run(model, feeds)[0])
        assert {r.op for r in result.record.nodes} == {"DML_OPERATOR_PADDING", "DML_OPERATOR_JOIN"}


def test_fallback_sessions_do_not_spin(monkeypatch) -> None:
    """A model's fallback is many sessions, each with its own thread pool; spinning after
    each run, they took both cores from the rest of the process (measured: load + lower of
    shufflenet right after a run, 0.80 s instead of 0.04)."""
    from backends.numpy import fallback as fallback_module
    from backends.onnxruntime.providers import make_session

    made = []

    def recording(*args, **kwargs):
        session = make_session(*args, **kwargs)
        made.append(session)
        return session

    monkeypatch.setattr(fallback_module, "make_session", recording)
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    x = np.array([-1, 0, 2], np.float32)
    (y,) = NumpyBackend().run(lower(load(model)), {"x": x}).values()
    np.testing.assert_array_equal(y, np.maximum(x, 0))
    (session,) = made
    entry = session.get_session_options().get_session_config_entry(
        "session.intra_op.allow_spinning")
    assert entry == "0"


@pytest.mark.parametrize("pads_as_input", [False, True])
def test_a_pad_without_axes_on_data_of_unknown_rank_pads_every_axis(pads_as_input) -> None:
    """Without axes, Pad's pads cover every axis: 4 pads suit only rank-2 data (onnxruntime
    refuses rank 3). Import wrote axes [0, 1] from the pads' length, and data of rank 3 came
    out padded on its leading two axes, shape (4, 3, 2); 6 pads on rank-2 data were refused
    for axes the model never gave."""
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, None)]  # rank unknown
    inits = []
    if pads_as_input:
        inputs.append(helper.make_tensor_value_info("p", TensorProto.INT64, [4]))
    else:
        inits.append(numpy_helper.from_array(np.array([1, 0, 0, 1], np.int64), "p"))
    graph = helper.make_graph([helper.make_node("Pad", ["x", "p"], ["y"], mode="edge")], "g",
                              inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    lowered = lower(load(model), "6_4")
    backend = NumpyBackend()
    pads = {"p": np.array([1, 0, 0, 1], np.int64)} if pads_as_input else {}
    x2 = np.arange(6, dtype=np.float32).reshape(3, 2)
    assert_same_bits(backend.run(lowered, {"x": x2, **pads})["y"],
                     np.pad(x2, [(1, 0), (0, 1)], mode="edge"))
    x3 = np.arange(12, dtype=np.float32).reshape(3, 2, 2)
    with pytest.raises(ModelValidationError, match="pads has 4 values for data of rank 3"):
        backend.run(lowered, {"x": x3, **pads})


def _big_pad(pads, mode: str = "constant") -> onnx.ModelProto:
    graph = helper.make_graph(
        [helper.make_node("Pad", ["X", "p"], ["Y"], name="bigpad", mode=mode)], "g",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 1, 4, 4])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.array(pads, np.int64), "p")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=8)


@pytest.mark.parametrize("backend", ["numpy", "onnxruntime"])
def test_a_run_beyond_the_free_memory_is_refused_naming_the_node(backend, monkeypatch) -> None:
    """A Pad to 10^12 elements (4 TB; it falls back, past DirectML's sizes) failed in
    onnxruntime's arena with its C++ message ("bfc_arena.cc:360 ... Failed to allocate
    memory"); a lowered one of 15.7 GB was allocated outright, and under a limit NumPy's
    MemoryError named no node (a helper's reproducers). Both are refused before anything is
    allocated, naming the node, the tensor, its type, shape and size."""
    from dmlgraph import tensorio

    x = {"X": np.ones((1, 1, 4, 4), np.float32)}
    huge = lower(load(_big_pad([0, 0, 0, 0, 0, 0, 999996, 999996])))
    with pytest.raises(BackendError, match=r"node 'bigpad' \(Pad\) makes 'Y', float32 "
                       r"\[1, 1, 1000000, 1000000\]: 4.0 TB, more than this machine has free"):
        get_backend(backend).run(huge, x)
    monkeypatch.setattr(tensorio, "available_memory", lambda: 50e6)
    lowered = lower(load(_big_pad([0, 0, 0, 0, 0, 0, 4000, 4000])))  # 64 MB, a DML PADDING
    assert [n.op_type for n in lowered.nodes] == ["PaddingDesc"]
    with pytest.raises(BackendError, match=r"node 'bigpad' \(DML_OPERATOR_PADDING\) makes 'Y', "
                       r"float32 \[1, 1, 4004, 4004\]: 64.1 MB, more than this machine has free "
                       r"\(50.0 MB\)"):
        get_backend(backend).run(lowered, x)


@pytest.mark.parametrize("backend", ["numpy", "onnxruntime"])
def test_outputs_beyond_the_free_memory_that_no_node_makes_are_named(backend, monkeypatch) -> None:
    """Outputs that no node makes (a graph input and a weight given back) beyond the free
    memory: the refusal names the largest of them; it said "(the largest tensor: )", naming
    nothing (the fuzzer, while another process held the machine's memory)."""
    from dmlgraph import tensorio

    graph = helper.make_graph(
        [], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1000, 1000]),
         helper.make_tensor_value_info("v", TensorProto.FLOAT, [500, 1000])],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("v", "x", "w")],
        [numpy_helper.from_array(np.zeros((10, 10), np.float32), "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=10)
    monkeypatch.setattr(tensorio, "available_memory", lambda: 5e6)
    feeds = {"x": np.ones((1000, 1000), np.float32), "v": np.ones((500, 1000), np.float32)}
    with pytest.raises(BackendError, match=r"its outputs take 6.0 MB at once \(the largest "
                       r"tensor: 'x', float32 \[1000, 1000\]: 4.0 MB\), more than this machine "
                       r"has free \(5.0 MB\)"):
        get_backend(backend).run(lower(load(model)), feeds)


def test_a_declared_output_size_the_node_does_not_make_is_not_refused() -> None:
    """A Reshape to a shape given at run time, its output declared [10^6, 10^6]: the memory
    check took the declaration for the size and refused a run that makes [2, 2] (a
    reviewer's reproducer). A declared size the node may not make is not counted."""
    graph = helper.make_graph(
        [helper.make_node("Reshape", ["x", "s"], ["y"], name="rs")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4]),
         helper.make_tensor_value_info("s", TensorProto.INT64, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [10**6, 10**6])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=10)
    feeds = {"x": np.arange(4, dtype=np.float32), "s": np.array([2, 2], np.int64)}
    for backend in ("numpy", "onnxruntime"):
        (y,) = get_backend(backend).run(lower(load(model)), feeds).values()
        np.testing.assert_array_equal(y, feeds["x"].reshape(2, 2))


def _reshaped_to_rank(rank: int, then_flat: bool) -> onnx.ModelProto:
    """x[2] reshaped to [1] * (rank - 1) + [2], concatenated with itself (a JOIN), and, with
    ``then_flat``, reshaped back to [4] (onnxruntime runs both)."""
    nodes = [helper.make_node("Reshape", ["x", "s"], ["r"]),
             helper.make_node("Concat", ["r", "r"], ["c" if then_flat else "y"], axis=0)]
    inits = [numpy_helper.from_array(np.array([1] * (rank - 1) + [2], np.int64), "s")]
    if then_flat:
        nodes.append(helper.make_node("Reshape", ["c", "f"], ["y"]))
        inits.append(numpy_helper.from_array(np.array([4], np.int64), "f"))
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                         [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def test_tensors_of_more_dimensions_than_numpy_holds_are_named() -> None:
    # NumPy 2 arrays have at most 64 dimensions, and the plan views an element's bytes as
    # one more: an output of 65 escaped as NumPy's ValueError, a JOIN's output of 64 read by
    # the fallback "cannot be read in IR form", naming no reason
    x = np.array([1.0, 2.0], np.float32)
    backend = get_backend("numpy")
    with pytest.raises(BackendError, match="'y' has rank 65, more than 64: .* graph output"):
        backend.run(lower(load(_reshaped_to_rank(65, False)), "6_4"), {"x": x})
    with pytest.raises(BackendError, match="tensor 'c' has rank 64, more than 63: "):
        backend.run(lower(load(_reshaped_to_rank(64, True)), "6_4"), {"x": x})
    # rank 63 runs: NumPy's oracle
    out = backend.run(lower(load(_reshaped_to_rank(63, True)), "6_4"), {"x": x})
    np.testing.assert_array_equal(out["y"], np.concatenate([x, x]))


def test_execute_returns_its_own_runs_record_when_another_run_comes_between() -> None:
    """``execute`` read ``last_record`` after its run, so another thread's run of another
    graph on the same backend, landing between the two, gave the caller that run's record.
    Here the other run is made the moment a record is stored, as a thread switch could."""
    relu = make_graph({"x": (np.float32, (4,))}, [(OnnxOp("Relu", 14), ["x"], ["y"], "relu")],
                      {"y": (np.float32, (4,))}, ["y"])
    sliced = make_graph(
        {"a": (np.float32, (4,))},
        [(SliceDesc(input_tensor=T("FLOAT32", (4,)), output_tensor=T("FLOAT32", (2,)),
                    offsets=(1,), sizes=(2,), strides=(1,)), ["a"], ["b"], "cut")],
        {"b": (np.float32, (2,))}, ["b"],
    )

    class Interrupted(NumpyBackend):
        """Runs ``sliced`` right after a run of ``relu`` stores its record."""

        def __setattr__(self, name: str, value: object) -> None:
            super().__setattr__(name, value)
            if name == "last_record" and value is not None and value.nodes[0].node == "relu":
                self.run(sliced, {"a": np.arange(4, dtype=np.float32)})

    backend = Interrupted("reference")
    x = np.array([-1, 2, -3, 4], np.float32)
    result = backend.execute(relu, {"x": x})
    np.testing.assert_array_equal(result.outputs["y"], np.maximum(x, 0))
    assert [run.node for run in result.record.nodes] == ["relu"]


def _passes_named_on_reference_only(model, x: np.ndarray, words: str) -> None:
    """``check`` of ``model(False)`` passes on either fallback, naming a divergence (its note
    holding ``words``) on the reference fallback alone; ``model(True)`` passes too."""
    from dmlgraph import check

    for fallback in ("onnxruntime", "reference"):
        report = check(model(False), inputs={"x": x}, fallback=fallback)
        assert report.passed
        assert bool(report.divergences) == (fallback == "reference")
        assert all(words in d.note for d in report.divergences)
        assert check(model(True), inputs={"x": x}, fallback=fallback).passed


def test_a_label_encoder_2_on_the_reference_compares_float_keys_bit_by_bit() -> None:
    """LabelEncoder-2's spec: "bit-wise comparison is used so even a float NaN can be mapped
    to a value": a NaN of the NaN key's bits takes its value, another NaN and -0 (not the key
    0's bits) the default. onnx.reference (and so the reference fallback) compared as floats,
    as onnxruntime does: [5, 5, -1, -1, -1]. Oracle: the spec's look-up spelled out."""
    nan = np.float32(np.nan)
    x = np.array([0.0, -0.0, nan, 1.0, 2.0], np.float32)
    x.view(np.uint32)[3] = nan.view(np.uint32) | 1  # another NaN
    node = helper.make_node("LabelEncoder", ["x"], ["y"], domain="ai.onnx.ml",
                            keys_floats=[0.0, float("nan"), 2.0], values_int64s=[5, 7, 9],
                            default_int64=-1)
    model = one_node_model(node, x, opset=13, ml=2, out_type=TensorProto.INT64)
    y = NumpyBackend("reference").run(load(model), {"x": x})["y"]
    assert y.tolist() == [5, -1, 7, -1, 9]
    assert onnxruntime_runs(model, x).tolist() == [5, 5, -1, -1, 9]  # its divergence


def test_check_names_a_label_encoder_2_nan_key_and_does_not_fold_its_constant() -> None:
    """With --fallback reference, the spec's value at a NaN key differs from onnxruntime's
    default, named as a known divergence; on the onnxruntime fallback both agree (before,
    nothing was named: the reference gave onnxruntime's default). A constant input is left
    unfolded, for the fallback to compute: folded by the reference, the spec's 7 would fail
    check against onnxruntime, naming nothing."""

    def model(constant: bool) -> onnx.ModelProto:
        x = np.array([1.0, np.nan, 2.0], np.float32)
        node = helper.make_node("LabelEncoder", ["c" if constant else "x"], ["l"],
                                domain="ai.onnx.ml", keys_floats=[1.0, float("nan")],
                                values_int64s=[5, 7], default_int64=-1)
        made = one_node_model(node, x, [numpy_helper.from_array(x, "c")] if constant else [],
                              opset=13, ml=2, out_type=TensorProto.INT64)
        made.graph.node.append(helper.make_node("Add", ["l", "l"], ["y"]))
        made.graph.output[0].name = "y"
        return made

    x = np.array([1.0, np.nan, 2.0], np.float32)
    _passes_named_on_reference_only(model, x, "ONNX compares keys bit by bit")


@pytest.mark.parametrize("fold", [True, False])
def test_a_label_encoder_4_of_a_constant_input_maps_as_its_schema_says(fold: bool) -> None:
    """A LabelEncoder-4 (ai.onnx.ml 4) of float keys compares them as floats: -0 takes key
    0's value, any NaN a NaN key's. Of a constant input (folded at load, or run on the
    reference fallback), its evaluator of the node alone read the ml opset as 1 (onnx's
    opsets of a lone NodeProto) and compared bit by bit as LabelEncoder-2 does: -0 came out
    the default, -1 where onnxruntime gives 20, silently."""
    c = np.array([np.nan, -0.0, 0.0, 1.0], np.float32)
    c.view(np.uint32)[0] |= 1  # a NaN of other bits than the key's
    node = helper.make_node("LabelEncoder", ["c"], ["l"], domain="ai.onnx.ml",
                            keys_floats=[float("nan"), 0.0, 1.0],
                            values_floats=[10.0, 20.0, 30.0], default_float=-1.0)
    x = np.zeros(4, np.float32)
    model = one_node_model(node, x, [numpy_helper.from_array(c, "c")], opset=18, ml=4)
    model.graph.node.append(helper.make_node("Add", ["l", "x"], ["y"]))
    want = onnxruntime_runs(model, x)
    assert want.tolist() == [10, 20, 20, 30]
    got = NumpyBackend("reference").run(lower(load(model, fold=fold)), {"x": x})["y"]
    assert got.tolist() == want.tolist()


@pytest.mark.parametrize("keys", [[-0.0, 0.0], [0.0, -0.0]])
def test_check_names_a_label_encoder_2_of_keys_0_and_minus_0(keys: list[float]) -> None:
    """Keys 0 and -0 are two keys to LabelEncoder-2's bit-wise look-up; onnxruntime compares
    as floats and maps both zeros to the first's value. No NaN key and no -0 missing a key,
    so no divergence was named: check --fallback reference failed on a bare mismatch, and a
    constant input was folded to the spec's values, failing check on the onnxruntime
    fallback too."""
    from dmlgraph import check

    x = np.array([-0.0, 0.0, 1.0], np.float32)

    def model(constant: bool) -> onnx.ModelProto:
        node = helper.make_node("LabelEncoder", ["c" if constant else "x"], ["l"],
                                domain="ai.onnx.ml", keys_floats=keys, values_int64s=[5, 7],
                                default_int64=-1)
        made = one_node_model(node, x, [numpy_helper.from_array(x, "c")] if constant else [],
                              opset=13, ml=2, out_type=TensorProto.INT64)
        made.graph.node.append(helper.make_node("Add", ["l", "l"], ["y"]))
        made.graph.output[0].name = "y"
        return made

    for fallback in ("onnxruntime", "reference"):
        report = check(model(False), inputs={"x": x}, fallback=fallback)
        assert report.passed
        assert bool(report.divergences) == (fallback == "reference")
        assert check(model(True), inputs={"x": x}, fallback=fallback).passed


@pytest.mark.parametrize(("ml", "attrs", "x"), [
    (2, {"keys_floats": [1.0, 1.0]}, np.array([1.0, 2.0], np.float32)),
    (4, {"keys_floats": [0.0, -0.0]}, np.array([-0.0, 2.0], np.float32)),
    (4, {"keys_floats": [float("nan"), float("nan")]}, np.array([np.nan, 2.0], np.float32)),
    (2, {"keys_int64s": [3, 3]}, np.array([3, 2], np.int64)),
    (2, {"keys_strings": ["a", "a"]}, np.array(["a", "b"], object)),
])
def test_check_names_a_label_encoder_of_repeated_keys(ml: int, attrs: dict, x: np.ndarray) -> None:
    """A key given twice with other values: onnxruntime maps an input equal to it to the
    first one's value, onnx.reference (and reference_ops) to the last one's. Nothing was
    named: check --fallback reference failed on a bare mismatch, and a constant input was
    folded to the last one's value, failing check on the onnxruntime fallback too (`run`
    gave another value than onnxruntime, silently)."""

    def model(constant: bool) -> onnx.ModelProto:
        node = helper.make_node("LabelEncoder", ["c" if constant else "x"], ["l"],
                                domain="ai.onnx.ml", values_int64s=[5, 7], default_int64=-1,
                                **attrs)
        made = one_node_model(node, x, [numpy_helper.from_array(x, "c")] if constant else [],
                              opset=13, ml=ml, out_type=TensorProto.INT64)
        made.graph.node.append(helper.make_node("Add", ["l", "l"], ["y"]))
        made.graph.output[0].name = "y"
        return made

    assert onnxruntime_runs(model(False), x).tolist() == [10, -2]  # the first key's 5, twice
    _passes_named_on_reference_only(model, x, "repeated")


def test_a_run_time_rule_broken_by_this_run_s_values_keeps_the_node_s_outputs() -> None:
    """A Pad whose pads arrive as an input breaks its rule when lowered as it runs: the error
    says this run's values and still tells the node by what it makes
    (``NodeRuleError.outputs``), by which a subgraph's holder finds the inputs reaching it
    (``ControlFlow._reads``); saying the run's values dropped them (None: every input)."""
    from dmlgraph.errors import NodeRuleError

    graph = helper.make_graph(
        [helper.make_node("Pad", ["x", "p"], ["y"], mode="edge")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("p", TensorProto.INT64, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    with pytest.raises(NodeRuleError, match="pads has 4 values for data of rank 3.*this run's "
                       "pads from 'p'") as raised:
        NumpyBackend().run(lower(load(model), "6_4"),
                           {"x": np.zeros((3, 2, 2), np.float32),
                            "p": np.array([1, 0, 0, 1], np.int64)})
    assert raised.value.outputs == ("y",)


@pytest.mark.parametrize("opset", [1, 10, 13])
def test_a_slice_without_axes_of_data_of_unknown_rank_is_blamed_for_its_starts(opset) -> None:
    """A Slice without axes whose constant starts and ends outnumber the axes of data whose
    rank import does not know: its default axes 0..3 were written in at import, and the
    run, by rank 3, blamed them ("axes = [0, 1, 2, 3]: [3] out of range"), axes the model
    never gave. It now says the rule the model broke, as for data of a known rank.
    Oracle: ONNX's rule (without axes, starts slice the leading axes); onnxruntime refuses
    the model too."""
    import onnxruntime as ort

    x = np.zeros((2, 3, 4), np.float32)
    starts, ends = [0, 0, 0, 0], [1, 1, 1, 1]
    if opset == 1:
        node = helper.make_node("Slice", ["x"], ["y"], starts=starts, ends=ends)
        inits = []
    else:
        node = helper.make_node("Slice", ["x", "s", "e"], ["y"])
        inits = [numpy_helper.from_array(np.array(v, np.int64), n)
                 for n, v in (("s", starts), ("e", ends))]
    model = helper.make_model(helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, None)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits),
        opset_imports=[helper.make_opsetid("", opset)], ir_version=10)
    with pytest.raises(Exception):
        ort.InferenceSession(model.SerializeToString(),
                             providers=["CPUExecutionProvider"]).run(None, {"x": x})
    with pytest.raises(ModelValidationError,
                       match="starts and ends have 4 values for data of rank 3") as raised:
        NumpyBackend().run(lower(load(model), "6_4"), {"x": x})
    assert "axes =" not in str(raised.value)


@pytest.mark.parametrize(("op", "feeds", "says"), [
    ("Slice", {"e": np.ones(3, np.int64)},
     "got starts=2, ends=3; axes and steps are not given (this run's ends from 'e')"),
    ("Pad", {"p": np.ones(4, np.int64)},
     "pads has 4 values for data of rank 3; it must have 2 * rank (this run's pads from 'p')"),
])
def test_a_run_time_length_error_blames_only_what_the_model_gave(op, feeds, says) -> None:
    """A Slice's ends or a Pad's pads arriving at run time with a length breaking the rule,
    for data of a known rank: import had written the default axes (and a Slice's steps) by
    the lengths it knew, and the run blamed them as the model's ("got starts=2, ends=3,
    axes=2, steps=2"; "pads has 4 values for 3 axes; it must have 2 * len(axes)"). It now
    says what the same model with those lengths fixed says ahead of time. Oracle: the
    model's own inputs (it gives no axes or steps); onnxruntime refuses the run too."""
    import onnxruntime as ort

    x = np.zeros((2, 3, 4), np.float32)
    name, length = next(iter(feeds)), "K"
    if op == "Slice":
        node = helper.make_node("Slice", ["x", "s", "e"], ["y"])
        inits = [numpy_helper.from_array(np.zeros(2, np.int64), "s")]
    else:
        node = helper.make_node("Pad", ["x", "p"], ["y"])
        inits = []
    model = helper.make_model(helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4]),
                      helper.make_tensor_value_info(name, TensorProto.INT64, [length])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits),
        opset_imports=[helper.make_opsetid("", 13)], ir_version=10)
    with pytest.raises(Exception):
        ort.InferenceSession(model.SerializeToString(),
                             providers=["CPUExecutionProvider"]).run(None, {"x": x, **feeds})
    with pytest.raises(ModelValidationError) as raised:
        NumpyBackend().run(lower(load(model), "6_4"), {"x": x, **feeds})
    assert says in str(raised.value)


@pytest.mark.parametrize("fallback", ["reference", "onnxruntime"])
def test_results_come_back_c_contiguous_so_empty_like_binds(fallback: str) -> None:
    """onnx.reference's Transpose made a strided view, which came back as the output (and a
    graph input read as an output in its own order): ``np.empty_like`` of it, the README's
    way to bind an output array, was refused as "not C-contiguous". Results are now
    C-contiguous, as onnxruntime's are. Oracle: NumPy's transpose."""
    model = helper.make_model(helper.make_graph(
        [helper.make_node("Transpose", ["x"], ["t"], perm=[1, 0], name="transpose"),
         helper.make_node("Pad", ["t", "p"], ["y"], name="pad")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4])],
        [helper.make_tensor_value_info("t", TensorProto.FLOAT, [4, 3]),
         helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 5]),
         helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4])],
        [numpy_helper.from_array(np.array([0, 1, 0, 1], np.int64), "p")]),
        opset_imports=[helper.make_opsetid("", 18)])
    lowered = lower(load(model), "6_4")
    backend = get_backend("numpy", fallback=fallback)
    x = np.asfortranarray(np.arange(12, dtype=np.float32).reshape(3, 4))
    results = backend.run(lowered, {"x": x})
    expected = {"t": x.T, "y": np.pad(x.T, ((0, 0), (1, 1))), "x": x}
    for name, value in results.items():
        assert value.flags.c_contiguous, name
        np.testing.assert_array_equal(value, expected[name])
    bound = {name: np.empty_like(value) for name, value in results.items()}
    backend.run(lowered, {"x": x}, outputs=bound)
    for name, value in bound.items():
        np.testing.assert_array_equal(value, expected[name])


@pytest.mark.parametrize("backend", ["numpy", "onnxruntime"])
def test_bytes_not_utf8_fed_to_a_string_input_are_refused_naming_the_model(backend) -> None:
    """NumPy bytes fed to a STRING input run as their UTF-8 text; bytes that are not UTF-8
    were refused as "tensor 'x': a string is not UTF-8" (a TensorIOError, as for a file),
    naming neither the model nor the input, where every other bad feed names both. Oracle:
    Python's own decoding of b"\\xff" fails."""
    with pytest.raises(UnicodeDecodeError):
        b"\xff".decode("utf-8")
    model = helper.make_model(helper.make_graph(
        [helper.make_node("Concat", ["x", "x"], ["y"], axis=0, name="cat")], "g",
        [helper.make_tensor_value_info("x", TensorProto.STRING, [2])],
        [helper.make_tensor_value_info("y", TensorProto.STRING, [4])]),
        opset_imports=[helper.make_opsetid("", 18)])
    graph = load(model)
    target = lower(graph, "6_4") if backend == "numpy" else graph
    run = get_backend(backend).run
    assert run(target, {"x": np.array([b"a", "é".encode()])})["y"].tolist() == ["a", "é"] * 2
    with pytest.raises(BackendError, match=r"^<ModelProto g>: input 'x': a string is not UTF-8"):
        run(target, {"x": np.array([b"a", b"\xff"])})


@pytest.mark.parametrize("backend", ["numpy", "onnxruntime"])
def test_python_integers_past_int64_are_fed_exactly(backend) -> None:
    """NumPy reads [2**63 + 1, 0] as float64 (a list mixing integers past int64 with others),
    so a uint64 input ran 2**63, silently, [2**64 - 1, 0] was refused as beyond uint64, and
    [2**64, 0] for a float32 input as "values that are not float32's". They are read from
    Python's own numbers now. Oracle: onnxruntime's session, fed the same list, and Python."""
    import onnxruntime as ort

    def concat(elem: int) -> onnx.ModelProto:
        return helper.make_model(helper.make_graph(
            [helper.make_node("Concat", ["x", "x"], ["y"], axis=0, name="cat")], "g",
            [helper.make_tensor_value_info("x", elem, [2])],
            [helper.make_tensor_value_info("y", elem, [4])]),
            opset_imports=[helper.make_opsetid("", 18)])

    run = get_backend(backend).run
    for elem, values, want in ((TensorProto.UINT64, [2**63 + 1, 0], [2**63 + 1, 0]),
                               (TensorProto.UINT64, [2**64 - 1, 7], [2**64 - 1, 7]),
                               (TensorProto.FLOAT, [2**64, 0], [float(2**64), 0.0])):
        model = concat(elem)
        session = ort.InferenceSession(model.SerializeToString(),
                                       providers=["CPUExecutionProvider"])
        assert session.run(None, {"x": values})[0].tolist() == want * 2
        graph = load(model)
        target = lower(graph, "6_4") if backend == "numpy" else graph
        assert run(target, {"x": values})["y"].tolist() == want * 2
    graph = load(concat(TensorProto.UINT64))
    target = lower(graph, "6_4") if backend == "numpy" else graph
    for beyond in ([2**64, 0], [-1, 2**63], [2**63 + 0.5, 1.5]):
        with pytest.raises(BackendError, match="a value uint64 cannot hold"):
            run(target, {"x": beyond})


@pytest.mark.parametrize("backend", ["numpy", "onnxruntime"])
def test_python_zeros_and_ones_feed_a_bool_input_as_onnxruntime_reads_them(backend) -> None:
    """[1, 0, 1] for a bool input was refused ("values that are not bool's") where
    onnxruntime's session reads it as [True, False, True]; it runs so now. [2, 0, 1], which
    onnxruntime reads as True too, is refused as a fraction is for an integer input (bool
    does not hold 2). Oracle: onnxruntime's session fed the same lists."""
    import onnxruntime as ort

    model = helper.make_model(helper.make_graph(
        [helper.make_node("Concat", ["x", "x"], ["y"], axis=0, name="cat")], "g",
        [helper.make_tensor_value_info("x", TensorProto.BOOL, [3])],
        [helper.make_tensor_value_info("y", TensorProto.BOOL, [6])]),
        opset_imports=[helper.make_opsetid("", 18)])
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    graph = load(model)
    target = lower(graph, "6_4") if backend == "numpy" else graph
    run = get_backend(backend).run
    for values in ([1, 0, 1], [0.0, 1.0, 1.0], [True, 0, 1]):
        want = session.run(None, {"x": values})[0].tolist()
        assert run(target, {"x": values})["y"].tolist() == want
    assert session.run(None, {"x": [2, 0, 1]})[0].tolist() == [True, False, True] * 2
    with pytest.raises(BackendError, match="holding values other than 0 and 1"):
        run(target, {"x": [2, 0, 1]})


def test_an_unknown_bound_output_is_named_with_a_few_of_the_outputs() -> None:
    """"bound output 'q' is not a graph output [...]" printed every output of the graph; it
    says there is no output of that name and lists the first 12, counting the rest, as the
    tolerance and tensor-file errors do (``tensorio.listed_names``)."""
    names = [f"y{i}" for i in range(14)]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], [name]) for name in names], "g", [x],
        [helper.make_tensor_value_info(name, TensorProto.FLOAT, [2]) for name in names])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=10)
    listed = ", ".join(repr(name) for name in names[:12])
    with pytest.raises(BackendError) as raised:
        get_backend("numpy").run(lower(load(model)), {"x": np.ones(2, np.float32)},
                                 outputs={"q": np.zeros(2, np.float32)})
    assert str(raised.value).endswith(
        f": no output named 'q' to bind an array to (outputs: [{listed}, ... (2 more)])")


@pytest.mark.parametrize(("elem", "x", "fill"), [
    # ONNX's Cast of 0 to FLOAT8E8M0 (saturate, round up: its defaults) is 0x00, 2^-127;
    # ml_dtypes' conversion, which np.pad's 0 took, is NaN (0xFF)
    (TensorProto.FLOAT8E8M0, numpy_helper.to_float8e8m0(np.array([1.0, 2.0, 0.5], np.float32)),
     numpy_helper.to_float8e8m0(np.zeros(1, np.float32))),
    (TensorProto.STRING, np.array(["a", "bb", "c"], dtype=object), np.array([""], dtype=object)),
])
def test_the_reference_pads_by_onnx_default_constant_value(elem, x, fill) -> None:
    """A constant Pad without constant_value fills with ONNX's 0 (or "" for strings, Pad's
    text). onnx.reference, the oracle of `check`, ran the model as given and handed np.pad
    the literal 0: e8m0's NaN and the string "0" failed `check` on a Pad that was right."""
    from backends.numpy.fallback import reference_evaluator

    model = helper.make_model(helper.make_graph(
        [helper.make_node("Pad", ["x", "p"], ["y"], mode="constant", name="pd")], "g",
        [helper.make_tensor_value_info("x", elem, [3])],
        [helper.make_tensor_value_info("y", elem, None)],
        [numpy_helper.from_array(np.array([1, 2], np.int64), "p")],
    ), opset_imports=[helper.make_opsetid("", 25)])
    (made,) = reference_evaluator(model).run(None, {"x": x})
    expected = np.concatenate([fill, x, fill, fill])
    assert made.dtype == x.dtype
    if made.dtype == object:
        assert made.tolist() == expected.tolist()
    else:
        assert_same_bits(made, expected)
        assert check(model, inputs={"x": x}).passed  # the lowered Pad's 0x00 fill, compared


@pytest.mark.parametrize("mode", ["edge", "reflect", "wrap"])
def test_the_reference_pads_an_empty_tensor_by_its_shape_alone(mode, monkeypatch) -> None:
    """An edge Pad cropping axis 0 to nothing and adding 2^31 on axis 2 (mutfuzz): its result
    is empty, but the reference built the 2^31-long index map of axis 2 first, 16 GiB, and
    `check` (onnxruntime refuses the node, so the reference is onnx.reference with this Pad)
    was killed for memory. Oracle: ONNX's shape rule, dims plus pads."""
    import backends.numpy.fallback as fallback
    from backends.numpy.fallback import reference_evaluator

    def no_map(*args: object) -> None:
        raise AssertionError(f"an index map was built for an empty tensor: {args}")

    monkeypatch.setattr(fallback, "source_indices", no_map)
    pads = [0, 0, 0, 0, -1, 0, 2**31, 0]
    model = helper.make_model(helper.make_graph(
        [helper.make_node("Pad", ["x", "p"], ["y"], mode=mode, name="pd")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.array(pads, np.int64), "p")],
    ), opset_imports=[helper.make_opsetid("", 19)])
    (made,) = reference_evaluator(model).run(None, {"x": np.ones((1, 1, 4, 3), np.float32)})
    assert made.shape == tuple(d + b + e for d, b, e in zip([1, 1, 4, 3], pads[:4], pads[4:]))
    assert made.dtype == np.float32


def _pad_model(mode: str, shape: list[int], pads: list[int]) -> onnx.ModelProto:
    return helper.make_model(helper.make_graph(
        [helper.make_node("Pad", ["x", "p"], ["y"], mode=mode, name="pd")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.array(pads, np.int64), "p")],
    ), opset_imports=[helper.make_opsetid("", 19)])


@pytest.mark.parametrize(("mode", "shape", "pads"), [
    ("wrap", [0, 0], [1, 0, 1, 0]),  # axis 0 of size 0 padded, axis 1 stays 0
    ("edge", [2, 0, 0], [0, 1, 0, 0, 1, 0]),
    ("reflect", [0, 0, 3], [0, 1, 0, 0, 1, 0]),
])
def test_the_reference_pads_an_empty_axis_into_an_empty_result(mode, shape, pads) -> None:
    """A Pad whose result is empty though it pads an axis of size 0 (another axis stays 0):
    ONNX's result is the empty tensor (lowering's rule, and the divergence `check` names
    onnxruntime's refusal by), but the reference took an index map of the empty axis
    ("IndexError: index 0 is out of bounds", after NumPy's "divide by zero" warning), so
    `check` left the output not compared. Oracle: ONNX's shape rule, dims plus pads."""
    import warnings

    from backends.numpy.fallback import reference_evaluator

    model = _pad_model(mode, shape, pads)
    x = np.ones(shape, np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        (made,) = reference_evaluator(model).run(None, {"x": x})
    rank = len(shape)
    assert made.shape == tuple(d + b + e for d, b, e in zip(shape, pads[:rank], pads[rank:]))
    assert made.size == 0 and made.dtype == np.float32
    report = check(model, inputs={"x": x})
    (output,) = report.comparisons[0].outputs
    assert report.passed and output.compared, output.message


@pytest.mark.parametrize("mode", ["edge", "reflect", "wrap"])
def test_the_reference_refuses_to_pad_an_empty_axis_into_elements(mode) -> None:
    """An axis of size 0 padded to 2 elements in a mode that repeats elements: there is none
    to repeat (np.pad, onnx.reference's own Pad, refuses it; lowering refuses it too). The
    reference said "IndexError: cannot do a non-empty take from an empty axes", after
    NumPy's "divide by zero" warning; now the rule, naming mode and axis."""
    import warnings

    from backends.numpy.fallback import reference_evaluator

    model = _pad_model(mode, [3, 0], [0, 1, 0, 1])
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with pytest.raises(ValueError, match=rf"^mode '{mode}' cannot pad axis 1: it is empty, "
                           "with no elements to repeat"):
            reference_evaluator(model).run(None, {"x": np.ones((3, 0), np.float32)})


def test_the_reference_says_an_axis_emptied_by_negative_pads_is_so_not_empty() -> None:
    """x [2, 3] edge-padded by [-2, 0, 1, 0]: the crop empties axis 0, then pads it. The
    reference said "axis 0: it is empty", of an axis of 2 elements. Oracle: the input's own
    shape (axis 0 holds 2) and lowering's words for the same model."""
    from backends.numpy.fallback import reference_evaluator

    model = _pad_model("edge", [2, 3], [-2, 0, 1, 0])
    x = np.ones((2, 3), np.float32)
    assert x.shape[0] == 2
    said = "mode 'edge' cannot pad axis 0: it is empty after the crop of pads [-2, 0, 1, 0]"
    with pytest.raises(ValueError, match=re.escape(said)):
        reference_evaluator(model).run(None, {"x": x})
    with pytest.raises(Exception, match=re.escape(said)):
        lower(load(model), "6_4")
