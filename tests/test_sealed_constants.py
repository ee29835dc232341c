"""The arrays a graph holds (constants, attribute arrays) can be neither written nor made
writeable: NumPy itself refuses ``flags.writeable = True`` ("cannot set WRITEABLE flag to
True of this array"), so no caller changes a constant under the plan a backend cached from
it. And nothing the caller gave (a ModelProto, feeds, a constant's array) is modified."""

from __future__ import annotations

import contextlib
import copy
import pickle
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from backends import get_backend
from dmlgraph import check, load
from dmlgraph.ir import Attributes, Graph, OnnxOp, TensorInfo
from lowering import lower

MODELS = Path(__file__).resolve().parent.parent / "models"
MODEL_FILES = sorted(
    path for folder in ("", "torch", "seeds", "control_flow")
    for path in (MODELS / folder).glob("*.onnx")
)
SEALED = "cannot set WRITEABLE flag to True of this array"  # NumPy's own words


def _held_arrays(graph: Graph) -> Iterator[tuple[str, np.ndarray]]:
    """Every array the graph holds: constants' data and ONNX nodes' attribute arrays."""
    for name in graph.constants:
        data = graph.constant(name)
        assert data is not None
        yield f"constant {name!r}", data
    for node in graph.nodes:
        if isinstance(node.op, OnnxOp):
            for key, value in node.op.attrs.items():
                for item in value if isinstance(value, tuple) else (value,):
                    if isinstance(item, np.ndarray):
                        yield f"node {node.id} attribute {key!r}", item


def _assert_sealed(graph: Graph) -> int:
    """Asserts NumPy refuses to make any held array writeable; returns how many there are."""
    count = 0
    for where, array in _held_arrays(graph):
        with pytest.raises(ValueError, match=SEALED):
            array.flags.writeable = True
        assert not array.flags.writeable, where
        count += 1
    return count


@pytest.mark.parametrize("path", MODEL_FILES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_no_array_of_a_model_can_be_made_writeable(path: Path) -> None:
    """Whatever made the array: the importer (raw and typed-field initializers, Constant
    nodes, attributes), folding, lowering, a copy or a pickle of the graph."""
    graph = load(path)
    copies = (copy.deepcopy(graph), pickle.loads(pickle.dumps(graph)), graph.copy())
    held = [_assert_sealed(g) for g in (graph, lower(graph), lower(graph, "1_0"), *copies)]
    assert held[0] > 0 or path.parent.name == "seeds", "a model holding no array proves nothing"


def _typed_field_model() -> onnx.ModelProto:
    """x -> Concat(x, c) -> Pad(pads, value) -> z, and ConstantOfShape(s) -> f: every constant
    in a typed field (float_data, int64_data), not raw_data, so the importer's array owned
    its memory (a read-only array owning it can be made writeable again)."""
    c = helper.make_tensor("c", TensorProto.FLOAT, [2, 3], [0, 1, 2, 3, 4, 5])
    pads = helper.make_tensor("pads", TensorProto.INT64, [4], [1, 0, 1, 0])
    value = helper.make_tensor("value", TensorProto.FLOAT, [], [7.0])
    fill = helper.make_tensor("fill", TensorProto.FLOAT, [1], [5.0])
    graph = helper.make_graph(
        [
            helper.make_node("Concat", ["x", "c"], ["y"], axis=0),
            helper.make_node("Pad", ["y", "pads", "value"], ["z"], mode="constant"),
            helper.make_node("ConstantOfShape", ["s"], ["f"], value=fill),
        ],
        "typed_fields",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
         helper.make_tensor_value_info("s", TensorProto.INT64, [2])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [6, 3]),
         helper.make_tensor_value_info("f", TensorProto.FLOAT, None)],
        [c, pads, value],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def test_a_run_after_trying_to_change_a_constant_gives_the_models_result() -> None:
    """A constant read from float_data was read-only over memory of its own: after the plan
    was cached, ``flags.writeable = True`` and a write changed it, and the next run computed
    from 100s (the Concat's constant, the ConstantOfShape's value read at run)."""
    model = _typed_field_model()
    feeds = {"x": np.full((2, 3), -1, np.float32), "s": np.array([2, 2], np.int64)}
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    want = dict(zip(("z", "f"), session.run(None, feeds)))
    graph = load(model)
    lowered = lower(graph)
    backend = get_backend("numpy")
    first = backend.run(lowered, feeds)  # the plan built and cached
    for g in (graph, lowered):
        for _, array in _held_arrays(g):
            with contextlib.suppress(ValueError):
                array.flags.writeable = True
            with contextlib.suppress(ValueError):
                array[...] = 100
    second = backend.run(lowered, feeds)
    for name, expected in want.items():
        np.testing.assert_array_equal(first[name], expected)
        np.testing.assert_array_equal(second[name], expected)
    assert _assert_sealed(graph) >= 3 and _assert_sealed(lowered) >= 2


def test_arrays_the_caller_gives_are_copied_and_stay_theirs() -> None:
    """A read-only array owning its memory was kept as it was: its owner made it writeable
    again and wrote the constant. It is copied now; the caller's array keeps its values and
    flags. STRING (object) arrays too, which no ``bytes`` can hold."""
    frozen = np.arange(3, dtype=np.int64)
    frozen.flags.writeable = False
    words = np.array(["a", "b"], dtype=object)
    graph = Graph("g")
    held = [
        TensorInfo("f", data=frozen).data,
        graph.constant(graph.add_constant("c", frozen)),
        Attributes({"value": frozen})["value"],
        TensorInfo("s", data=words).data,
        Attributes({"strings": words})["strings"],
    ]
    frozen.flags.writeable = True  # the caller's array: theirs to write
    frozen[:] = -1
    words[0] = "changed"
    assert all(array is not None and not np.shares_memory(array, frozen) for array in held)
    for array in held:
        assert array is not None
        with pytest.raises(ValueError, match=SEALED):
            array.flags.writeable = True
    assert [a.tolist() for a in held[:3]] == [[0, 1, 2]] * 3  # type: ignore[union-attr]
    assert [a.tolist() for a in held[3:]] == [["a", "b"]] * 2  # type: ignore[union-attr]


@pytest.mark.parametrize("writeable", [True, False])
def test_load_lower_run_and_check_modify_nothing_the_caller_gave(writeable: bool) -> None:
    """The ModelProto stays byte for byte what it was, and the feeds keep values and flags,
    through load, lower, both backends' runs and check."""
    model = _typed_field_model()
    before = model.SerializeToString()
    feeds = {"x": np.arange(6, dtype=np.float32).reshape(2, 3), "s": np.array([1, 3], np.int64)}
    for array in feeds.values():
        array.flags.writeable = writeable
    kept = {name: array.copy() for name, array in feeds.items()}
    lowered = lower(load(model))
    for backend in ("numpy", "onnxruntime"):
        get_backend(backend).run(lowered, feeds)
    assert check(model, inputs=feeds).passed
    assert model.SerializeToString() == before
    for name, array in feeds.items():
        np.testing.assert_array_equal(array, kept[name])
        assert array.flags.writeable is writeable
