"""Tensors of types NumPy lacks (ml_dtypes' bfloat16 and float8) through onnxruntime: as feeds
of the onnxruntime backend and of a parity check, and as results of the NumPy backend's
fallback segments. onnxruntime's Python API refuses such feeds, cannot fetch bfloat16 or
float8e5m2 outputs, and gives float8e4m3fn ones as uint8. Oracle: NumPy slicing of the same
values."""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import dmlgraph
from backends import get_backend
from backends.base import BackendError
from backends.onnxruntime import values
from lowering import lower

TYPES = [
    (TensorProto.BFLOAT16, ml_dtypes.bfloat16),
    (TensorProto.FLOAT8E4M3FN, ml_dtypes.float8_e4m3fn),
    (TensorProto.FLOAT8E5M2, ml_dtypes.float8_e5m2),
]
X = np.array([[1.5, -2.0, 3.0, 0.25], [-0.5, 4.0, -6.0, 8.0], [0.0, 1.0, 2.0, -1.0]],
             np.float32)


def _slice_of(elem_type: int) -> onnx.ModelProto:
    """x[3, 4] of ``elem_type`` -> Slice(x, rows 1.., columns reversed) -> y."""
    graph = helper.make_graph(
        [helper.make_node("Slice", ["x", "st", "en", "ax", "sp"], ["y"], name="s")], "g",
        [helper.make_tensor_value_info("x", elem_type, [3, 4])],
        [helper.make_tensor_value_info("y", elem_type, [2, 4])],
        [numpy_helper.from_array(np.array(v, np.int64), n) for n, v in
         (("st", [1, -1]), ("en", [3, -5]), ("ax", [0, 1]), ("sp", [1, -1]))])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)


def _through(elem_type: int) -> onnx.ModelProto:
    """x (float) -> Cast to ``elem_type`` -> Pad -> Cast to float -> y: the Casts run on
    onnxruntime, the Pad between them (edge, one column each side) on the emulator."""
    graph = helper.make_graph(
        [helper.make_node("Cast", ["x"], ["c"], to=elem_type, name="c1"),
         helper.make_node("Pad", ["c", "p"], ["s"], mode="edge", name="pad"),
         helper.make_node("Cast", ["s"], ["y"], to=TensorProto.FLOAT, name="c2")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 6])],
        [numpy_helper.from_array(np.array([0, 1, 0, 1], np.int64), "p")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)


@pytest.mark.parametrize("elem_type, dtype", TYPES[:1])  # onnxruntime's CPU Slice: bfloat16
def test_the_onnxruntime_backend_takes_and_gives_bfloat16(elem_type, dtype) -> None:
    x = X.astype(dtype)
    y = get_backend("onnxruntime").run(dmlgraph.load(_slice_of(elem_type)), {"x": x})["y"]
    assert y.dtype == np.dtype(dtype)
    assert y.tobytes() == np.ascontiguousarray(x[1:, ::-1]).tobytes()


@pytest.mark.parametrize("elem_type, dtype", TYPES)
@pytest.mark.parametrize("level", ["2_1", "6_4"])
def test_fallback_segments_give_ml_dtypes_results(elem_type, dtype, level) -> None:
    lowered = lower(dmlgraph.load(_through(elem_type)), level)
    assert [n.op_type for n in lowered.nodes if not n.is_onnx]  # the Slice runs on the emulator
    y = get_backend("numpy").run(lowered, {"x": X})["y"]
    expected = np.pad(X.astype(dtype).astype(np.float32), ((0, 0), (1, 1)), "edge")
    assert y.tobytes() == expected.tobytes()


def test_check_holds_for_bfloat16_inside_the_graph() -> None:
    """(onnxruntime's CPU Pad has no float8 kernel, so only bfloat16 runs whole there.)"""
    report = dmlgraph.check(_through(TensorProto.BFLOAT16), inputs={"x": X})
    assert report.passed and report.compared == 1


def test_check_of_a_bfloat16_model_feeds_onnxruntime_bfloat16(tmp_path: Path) -> None:
    path = tmp_path / "bf16.onnx"
    onnx.save(_slice_of(TensorProto.BFLOAT16), path)
    report = dmlgraph.check(path, inputs={"x": X.astype(ml_dtypes.bfloat16)})
    assert report.passed and report.compared == 1


def test_packed_types_are_refused_in_one_clear_error() -> None:
    with pytest.raises(BackendError, match="cannot take int4 tensors"):
        values._ort_value("x", np.zeros(4, ml_dtypes.int4))


@pytest.mark.parametrize("engine", ["onnxruntime", "numpy"])
def test_a_scalar_feed_stays_a_scalar(engine) -> None:
    """np.ascontiguousarray makes a rank-0 array a 1-element vector: onnxruntime then ran Neg
    of shape [1], and both the backend and the numpy fallback returned shape (1,)."""
    graph = helper.make_graph(
        [helper.make_node("Neg", ["x"], ["z"], name="neg")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)], ir_version=9)
    graph_ir = dmlgraph.load(model)
    target = lower(graph_ir) if engine == "numpy" else graph_ir
    z = get_backend(engine).run(target, {"x": np.array(2.5, np.float32)})["z"]
    assert z.shape == () and z == -2.5
