"""The IR's invariants: immutable tensor infos and ops, ports as the one source of truth for
edges, deterministic ids and order, validate(), extract/copy, and to_onnx."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import ml_dtypes
import networkx as nx
import numpy as np
import onnx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper

import dmlgraph
from dmlgraph import folding
from dmlgraph.dtypes import ELEM_TYPE_TO_DTYPE, to_elem_type, to_numpy_dtype
from dmlgraph.errors import GraphInvariantError, UnsupportedError
from dmlgraph.ir import Attributes, Graph, OnnxOp, Provenance, TensorInfo


def _prov(name: str, op_type: str = "Relu") -> Provenance:
    return Provenance(name, op_type, "", 14)


def _chain() -> Graph:
    """x -> Relu (a) -> Add(a, c) (b) -> Neg (y), with constant c."""
    graph = Graph("chain", opset_imports={"": 17}, source="chain.onnx")
    graph.add_input(TensorInfo("x", np.float32, (2, "N")))
    c = graph.add_constant("c", np.ones((2, 1), dtype=np.float32))
    graph.add_node(OnnxOp("Relu", 14), ["x"], ["a"], _prov("relu"))
    graph.add_node(OnnxOp("Add", 14), ["a", c], ["b"], _prov("add", "Add"))
    graph.add_node(OnnxOp("Neg", 13), ["b"], ["y"], _prov("neg", "Neg"))
    graph.outputs = ["y"]
    return graph


# ----------------------------------------------------------------------------- values


def test_tensor_info_freezes_a_copy_of_constant_data() -> None:
    source = np.arange(6, dtype=np.int32).reshape(2, 3)
    info = TensorInfo("t", data=source)
    source[0, 0] = 100
    assert info.data[0, 0] == 0
    assert not info.data.flags.writeable
    with pytest.raises(ValueError):
        info.data[0, 0] = 5
    assert (info.dtype, info.shape, info.is_constant, info.is_static, info.size) == (
        np.dtype(np.int32),
        (2, 3),
        True,
        True,
        6,
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        info.shape = (6,)  # type: ignore[misc]


def test_read_only_views_of_writeable_arrays_are_copied() -> None:
    """A read-only view of the caller's writeable array was kept as it was: writing the
    array later changed the constant (or attribute) under the graph, silently."""
    owner = np.arange(6, dtype=np.float32)
    view = owner.view()
    view.flags.writeable = False
    graph = Graph("g")
    infos = [
        TensorInfo("v", data=view),
        TensorInfo("b", data=np.broadcast_to(owner, (2, 6))),
        graph.tensor(graph.add_constant("c", np.broadcast_to(owner, (2, 6)))),
    ]
    attr = OnnxOp("Constant", 13, attrs={"value": view}).attrs["value"]
    owner[:] = -1
    for held in (*[info.data for info in infos], attr):
        assert held.ravel()[:6].tolist() == [0, 1, 2, 3, 4, 5] and not held.flags.writeable
    sealed = np.frombuffer(np.arange(3, dtype=np.int64).tobytes(), np.int64)
    assert TensorInfo("f", data=sealed).data is sealed  # over an immutable bytes: kept


def test_tensor_info_refuses_data_that_contradicts_dtype_or_shape() -> None:
    with pytest.raises(GraphInvariantError, match="dtype"):
        TensorInfo("t", np.float32, data=np.zeros(2, dtype=np.int64))
    with pytest.raises(GraphInvariantError, match="shape"):
        TensorInfo("t", shape=(3,), data=np.zeros(2))
    assert TensorInfo("t", shape=("N",), data=np.zeros(2)).shape == (2,)
    with pytest.raises(GraphInvariantError, match="dimension"):
        TensorInfo("t", shape=(-1,))


def test_tensor_info_equality_compares_data() -> None:
    a = TensorInfo("t", data=np.array([1.0, np.nan]))
    assert a == TensorInfo("t", data=np.array([1.0, np.nan]))
    assert a != TensorInfo("t", data=np.array([1.0, 2.0]))
    assert a != TensorInfo("t", data=np.array([1.0, np.nan], dtype=np.float32))
    assert (
        TensorInfo("t", np.float32, ("N", None)).rank == 2
        and not TensorInfo("t", np.float32, ("N", 3)).is_static
    )


def test_attributes_are_immutable_hashable_and_order_free() -> None:
    a = Attributes({"b": [1, 2], "a": np.array([1.5], dtype=np.float32), "m": "reflect"})
    b = Attributes([("m", "reflect"), ("a", np.array([1.5], dtype=np.float32)), ("b", (1, 2))])
    assert a == b and hash(a) == hash(b)
    assert list(a) == ["a", "b", "m"] and a["b"] == (1, 2)
    assert a != Attributes({"b": (1, 2), "a": np.array([1.5], dtype=np.float64), "m": "reflect"})
    assert not a["a"].flags.writeable
    op = OnnxOp("Pad", 25, attrs={"mode": "edge"})
    assert op == OnnxOp("Pad", 25, attrs=Attributes({"mode": "edge"})) and hash(op) == hash(
        OnnxOp("Pad", 25, attrs={"mode": "edge"})
    )
    assert (
        len(
            {
                op,
                OnnxOp("Pad", 25, attrs={"mode": "edge"}),
                OnnxOp("Pad", 25, attrs={"mode": "wrap"}),
            }
        )
        == 2
    )


def test_attributes_compare_floats_by_their_bits() -> None:
    """-0.0 is not 0.0 (a LeakyRelu of alpha -0.0 computes other signs of zero, and took the
    other's proto from the exporter's cache), a NaN is the same NaN, and strings hash by
    value, so equal attributes hash alike."""
    nan = np.frombuffer(np.uint32(0x7FC00001).tobytes(), np.float32)
    pairs = [
        ({"alpha": 0.0}, {"alpha": -0.0}),
        ({"v": (1.0, 0.0)}, {"v": (1.0, -0.0)}),
        ({"t": np.zeros(1, np.float32)}, {"t": -np.zeros(1, np.float32)}),
        ({"t": np.zeros(1, ml_dtypes.bfloat16)}, {"t": -np.zeros(1, ml_dtypes.bfloat16)}),
        ({"t": nan}, {"t": np.full(1, np.nan, np.float32)}),
    ]
    for a, b in pairs:
        assert Attributes(a) != Attributes(b)
    from dmlgraph.dml import BufferTensorDesc, Padding1Desc

    def fill(value):
        return Padding1Desc(
            input_tensor=BufferTensorDesc("FLOAT64", (2,)),
            output_tensor=BufferTensorDesc("FLOAT64", (4,)), padding_mode="CONSTANT",
            padding_value_data_type="FLOAT64", padding_value=value, start_padding=(1,),
            end_padding=(1,))

    assert fill(np.float64(-0.0)) != fill(np.float64(0.0))  # NumPy's floats too
    assert fill(np.float64(-0.0)) == fill(-0.0) and hash(fill(np.float64(-0.0))) == hash(fill(-0.0))
    for same in ({"alpha": float("nan")}, {"t": nan}, {"s": np.array(["ab", "c"], object)}):
        assert Attributes(same) == Attributes(dict(same))
        assert hash(Attributes(same)) == hash(Attributes({k: (v.copy() if isinstance(
            v, np.ndarray) else float(str(v))) for k, v in same.items()}))


@pytest.mark.parametrize("elem", sorted(ELEM_TYPE_TO_DTYPE))
def test_dtype_table_round_trips_and_agrees_with_onnx(elem: int) -> None:
    dtype = to_numpy_dtype(elem)
    assert to_elem_type(dtype) == elem
    assert dtype == helper.tensor_dtype_to_np_dtype(elem)


def test_dtype_table_errors_name_the_place() -> None:
    assert to_numpy_dtype(TensorProto.BFLOAT16) == np.dtype(ml_dtypes.bfloat16)
    with pytest.raises(UnsupportedError, match="tensor 'w': element type 999"):
        to_numpy_dtype(999, "tensor 'w'")
    with pytest.raises(UnsupportedError, match="dtype"):
        to_elem_type(np.dtype([("a", np.int8)]))


# ----------------------------------------------------------------------------- graph structure


def test_ports_and_networkx_edges_agree() -> None:
    graph = _chain()
    relu, add, neg = graph.nodes
    assert (relu.id, add.id, neg.id) == (0, 1, 2)
    assert (
        graph.producer("a") is relu and graph.producer("x") is None and graph.producer("c") is None
    )
    assert graph.consumers("a") == [(add, 0)] and graph.consumers("c") == [(add, 1)]
    edges = sorted(
        (u, v, k, d["tensor"], d["src_port"]) for u, v, k, d in graph.nx.edges(keys=True, data=True)
    )
    assert edges == [(0, 1, 0, "a", 0), (1, 2, 0, "b", 0)]
    graph.validate()

    # Rewire Add's port 1 to read the Relu output too: both edges exist, keyed by port.
    add = graph.set_input(add.id, 1, "a")
    assert graph.consumers("a") == [(add, 0), (add, 1)] and graph.consumers("c") == []
    assert sorted(k for _, _, k in graph.nx.out_edges(relu.id, keys=True)) == [0, 1]
    graph.validate()
    with pytest.raises(dataclasses.FrozenInstanceError):
        add.inputs = ("x", "x")  # type: ignore[misc]


def test_replace_uses_remove_dead_and_prune() -> None:
    graph = _chain()
    graph.replace_uses("b", "a")  # Neg now reads Relu; Add is dead
    removed = graph.remove_dead_nodes()
    assert [n.name for n in removed] == ["add"]
    assert graph.prune_tensors() == ["c", "b"]
    assert [n.name for n in graph.topological_order()] == ["relu", "neg"]
    graph.validate()


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["add", "remove", "rewire", "retype", "note"]),
                          st.integers(0, 50), st.integers(0, 50)), max_size=25))
def test_topological_order_follows_every_change(changes) -> None:
    """The order is cached by the count of node and edge changes: after each of a sequence
    of adds, removals, rewirings and op or tensor changes (which keep the cache), it is
    networkx's lexicographical topological order of the graph as it is, with the nodes as
    they are now (a replaced node is the new one)."""
    graph = Graph("g", opset_imports={"": 17})
    graph.add_input(TensorInfo("x", np.float32, (2,)))
    made = ["x"]
    for kind, a, b in changes:
        order = graph.topological_order()  # fills the cache before each change
        assert [n.id for n in order] == list(nx.lexicographical_topological_sort(graph.nx))
        assert all(n is graph.node(n.id) for n in order)
        nodes = graph.nodes
        if kind == "add" or not nodes:
            name = f"t{len(made)}"
            graph.add_node(OnnxOp("Add", 14), [made[a % len(made)], made[b % len(made)]],
                           [name], _prov(name, "Add"))
            made.append(name)
            continue
        node = nodes[a % len(nodes)]
        if kind == "remove":
            graph.remove_node(node.id)
        elif kind == "rewire":  # to any tensor whose maker does not read this node's result
            target = made[b % len(made)]
            maker = graph.producer(target)
            if maker is None or not nx.has_path(graph.nx, node.id, maker.id):
                graph.set_input(node.id, b % 2, target)
        elif kind == "retype":
            graph.replace_node(node.id, op=OnnxOp("Mul", 14))
        else:
            graph.set_tensor(TensorInfo(node.outputs[0], np.float32, (2,)))
    order = graph.topological_order()
    assert [n.id for n in order] == list(nx.lexicographical_topological_sort(graph.nx))
    assert all(n is graph.node(n.id) for n in order)


def test_replace_node_keeps_id_and_rewires() -> None:
    graph = _chain()
    neg = graph.find_nodes("Neg")[0]
    new = graph.replace_node(neg.id, op=OnnxOp("Abs", 13), inputs=("a",))
    assert new.id == neg.id and graph.node(neg.id).op_type == "Abs"
    assert graph.consumers("b") == [] and graph.consumers("a")[-1] == (new, 0)
    graph.validate()


@pytest.mark.parametrize("changes", [
    {}, {"name": "z"}, {"dtype": np.int64}, {"shape": (2, "n")}, {"shape": None},
    {"data": np.arange(3.0)}, {"dtype": np.float64, "shape": (3,), "data": np.arange(3.0)},
])
def test_tensor_info_replace_is_dataclasses_replace(changes) -> None:
    """The spelled-out replace gives what the generic one gives, and refuses what it refuses."""
    for info in (TensorInfo("t", np.float32, (2, 3)), TensorInfo("c", data=np.ones(3))):
        try:
            expected = dataclasses.replace(info, **changes)
        except GraphInvariantError as exc:
            with pytest.raises(GraphInvariantError, match=str(exc)[:20]):
                info.replace(**changes)
            continue
        assert info.replace(**changes) == expected
    with pytest.raises(TypeError, match="no field 'size'"):
        TensorInfo("t").replace(size=3)


def test_replace_node_matches_dataclasses_replace_and_refuses_unknown_fields() -> None:
    graph = _chain()
    add = graph.find_nodes("Add")[0]
    changes = {"inputs": ("c", "x"), "notes": ["swapped"], "provenance": _prov("plus", "Add")}
    expected = dataclasses.replace(add, **changes)
    new = graph.replace_node(add.id, **changes)
    assert (new.id, new.op, new.inputs, new.outputs, new.provenance, new.notes) == (
        expected.id, expected.op, expected.inputs, expected.outputs, expected.provenance,
        expected.notes,
    )
    assert graph.consumers("a") == [] and (new, 1) in graph.consumers("x")
    graph.validate()
    with pytest.raises(TypeError, match="no field 'label'"):
        graph.replace_node(add.id, label="x")
    with pytest.raises(GraphInvariantError, match="cannot change a node's id"):
        graph.replace_node(add.id, id=99)


def test_a_tensor_has_one_producer() -> None:
    graph = _chain()
    with pytest.raises(GraphInvariantError, match="already produced by node 'relu'"):
        graph.add_node(OnnxOp("Relu", 14), ["x"], ["a"], _prov("again"))
    with pytest.raises(GraphInvariantError, match="cannot produce constant 'c'"):
        graph.add_node(OnnxOp("Relu", 14), ["x"], ["c"], _prov("again"))
    with pytest.raises(GraphInvariantError, match="produced by node 'relu'"):
        graph.set_tensor(TensorInfo("a", data=np.zeros(1)))
    graph.validate()


@pytest.mark.parametrize(
    ("breakage", "message"),
    [
        (
            lambda g: g.outputs.append("nowhere"),
            "graph output 'nowhere' is not a registered tensor",
        ),
        (
            lambda g: g.set_tensor(TensorInfo("dangling")) and g.outputs.append("dangling"),
            "'dangling' has no producer",
        ),
        (lambda g: g.inputs.append("c"), "graph input 'c' carries constant data"),
        (lambda g: g.replace_node(0, inputs=("y",)), "cycle"),
        (
            lambda g: g.add_node(OnnxOp("Relu", 14), ["ghost"], ["z"], _prov("z")),
            "input 'ghost' is not a registered tensor",
        ),
        (lambda g: g.nx.remove_edge(0, 1, key=0), "networkx edges disagree"),
        (
            lambda g: g.nx.add_edge(0, 1, key=5, tensor="a", src_port=0),
            "networkx edges disagree.*1 not matching a port",
        ),
        (
            lambda g: g.nx.add_edge(0, 1, key=0, tensor="other", src_port=0),
            "networkx edges disagree.*missing \\[\\(0, 1, 0, 'a'\\)\\]",
        ),
        (lambda g: g._consumers["a"].clear(), "consumer index disagrees"),
        (lambda g: g._consumers.setdefault("x", {}).update({(1, 7): None}), "consumer index"),
        (lambda g: g.nx.add_node(99, node=None), "node index disagrees"),
    ],
)
def test_validate_reports_broken_invariants(breakage, message: str) -> None:
    graph = _chain()
    breakage(graph)
    with pytest.raises(GraphInvariantError, match=message) as info:
        graph.validate()
    assert str(info.value).startswith("chain.onnx: IR invariants broken")


def test_copy_is_independent() -> None:
    graph = _chain()
    other = graph.copy()
    other.nodes[0].notes.append("only in the copy")
    other.set_input(1, 1, "x")
    other.outputs.append("a")
    assert (
        graph.nodes[0].notes == []
        and graph.nodes[1].inputs == ("a", "c")
        and graph.outputs == ["y"]
    )
    graph.validate()
    other.validate()


def test_tensor_views_show_their_own_graph() -> None:
    """``tensors`` is one view kept per graph: a copy's shows the copy's table, live."""
    graph = _chain()
    view = graph.tensors
    other = graph.copy()
    other.set_tensor(TensorInfo("only_in_copy", np.float32, (1,)))
    graph.set_tensor(TensorInfo("only_in_graph", np.float32, (1,)))
    assert "only_in_copy" in other.tensors and "only_in_copy" not in graph.tensors
    assert "only_in_graph" in view and "only_in_graph" not in other.tensors
    assert list(other.tensors)[:-1] == list(graph.tensors)[:-1]
    with pytest.raises(TypeError):
        graph.tensors["x"] = TensorInfo("x")  # type: ignore[index]


@pytest.mark.parametrize("duplicate", ["pickle", "deepcopy"])
def test_a_graph_pickles_and_deep_copies_with_its_own_tensor_view(duplicate: str) -> None:
    """Pickling and ``copy.deepcopy`` of a graph work (the kept view of its tensor table, a
    mappingproxy, does not pickle: both raised TypeError), and the duplicate's view shows
    the duplicate's table, not the original's."""
    import copy
    import pickle

    graph = _chain()
    other = (pickle.loads(pickle.dumps(graph)) if duplicate == "pickle"
             else copy.deepcopy(graph))
    assert list(other.tensors) == list(graph.tensors)
    other.set_tensor(TensorInfo("only_in_duplicate", np.float32, (1,)))
    assert "only_in_duplicate" in other.tensors
    assert "only_in_duplicate" not in graph.tensors
    assert [n.op_type for n in other.nodes] == [n.op_type for n in graph.nodes]


def test_extract_makes_outside_tensors_inputs() -> None:
    graph = _chain()
    sub = graph.extract([1, 2])
    assert sub.inputs == ["a", "c"] and sub.outputs == ["b", "y"]
    assert sub.tensors["c"].data is None and sub.tensors["c"].shape == (2, 1)
    assert [n.id for n in sub.nodes] == [0, 1] and [n.name for n in sub.nodes] == ["add", "neg"]
    sub.validate()


@dataclass(frozen=True)
class FakeJoinDesc:
    """Stands in for a DirectML descriptor: any frozen object may be a node's op."""

    axis: int


def test_non_onnx_ops_are_allowed_but_not_exported() -> None:
    graph = _chain()
    node = graph.add_node(FakeJoinDesc(axis=1), ["a", "a"], ["j"], _prov("relu", "Concat"))
    graph.outputs.append("j")
    graph.validate()
    assert node.op_type == "FakeJoinDesc" and not node.is_onnx
    with pytest.raises(
        UnsupportedError, match="chain.onnx: node 'relu' .*FakeJoinDesc, not an ONNX op"
    ):
        graph.to_onnx()


def test_to_onnx_of_a_built_graph_runs(onnx_run) -> None:
    graph = _chain()
    x = np.array([[-1, 2, 3], [4, -5, 6]], dtype=np.float32)
    assert np.array_equal(onnx_run(graph.to_onnx(), {"x": x})[0], -(np.maximum(x, 0) + 1))
    # The checker wants graph outputs' shapes: known once inferred.
    assert folding.infer_shapes(graph) == 3 and graph.tensors["y"].shape == (2, "N")
    model = graph.to_onnx()
    onnx.checker.check_model(model)
    assert model.ir_version == 8 and [n.name for n in model.graph.node] == ["relu", "add", "neg"]
    assert np.array_equal(onnx_run(model, {"x": x})[0], -(np.maximum(x, 0) + 1))


def test_loading_twice_gives_identical_ir(onnx_models_dir) -> None:
    first = dmlgraph.load(onnx_models_dir / "encodec_encoder_reflect.onnx")
    second = dmlgraph.load(onnx_models_dir / "encodec_encoder_reflect.onnx")
    assert [(n.id, n.op, n.inputs, n.outputs, n.provenance) for n in first.nodes] == [
        (n.id, n.op, n.inputs, n.outputs, n.provenance) for n in second.nodes
    ]
    assert list(first.tensors.items()) == list(second.tensors.items())
    assert first.to_onnx().SerializeToString() == second.to_onnx().SerializeToString()


# ----------------------------------------------------------------------------- property


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_property_random_edits_keep_edges_consistent_with_ports(data) -> None:
    """Any sequence of add / rewire / remove-dead keeps validate() passing, and the networkx
    graph equals one rebuilt from the ports alone."""
    graph = Graph("random", opset_imports={"": 17})
    graph.add_input(TensorInfo("x", np.float32, (3,)))
    graph.add_constant("k", np.ones(3, dtype=np.float32))
    for step in range(data.draw(st.integers(1, 25), label="steps")):
        names = sorted(graph.tensors)
        action = data.draw(st.sampled_from(["add", "add", "rewire", "dead"]), label="action")
        if action == "add":
            inputs = data.draw(
                st.lists(st.sampled_from(names + [""]), min_size=1, max_size=3), label="inputs"
            )
            if inputs[0] == "":
                inputs[0] = "x"
            graph.add_node(OnnxOp("Sum", 13), inputs, [f"t{step}"], _prov(f"n{step}", "Sum"))
            graph.outputs = [f"t{step}"]
        elif action == "rewire" and len(graph):
            node = data.draw(st.sampled_from(graph.nodes), label="node")
            upstream = {node.id} | nx.descendants(graph.nx, node.id)
            allowed = [
                n
                for n in names
                if graph.producer(n) is None or graph.producer(n).id not in upstream
            ]
            port = data.draw(st.integers(0, len(node.inputs)), label="port")
            graph.set_input(node.id, port, data.draw(st.sampled_from(allowed), label="tensor"))
        elif action == "dead":
            graph.remove_dead_nodes()
            graph.prune_tensors()
        graph.validate()
        rebuilt = {
            (graph.producer(t).id, node.id, port, t)
            for node in graph.nodes
            for port, t in enumerate(node.inputs)
            if t and graph.producer(t) is not None
        }
        assert {
            (u, v, k, d["tensor"]) for u, v, k, d in graph.nx.edges(keys=True, data=True)
        } == rebuilt


def test_a_dropped_graph_needs_no_collector(onnx_models_dir) -> None:
    """Graph never caches networkx's views (each refers back to its graph): a graph that is
    dropped, after import, lowering, copies, rewiring and validation, is freed by reference
    counting alone, not left for a collection of thousands of objects."""
    import gc
    import weakref

    from lowering import lower

    enabled = gc.isenabled()
    gc.disable()
    try:
        graph = dmlgraph.load(onnx_models_dir / "shufflenet_v2_x0_5.onnx")
        lowered = lower(graph, "5_0")
        copy = lowered.copy()
        node = copy.nodes[-1]
        copy.replace_node(node.id, notes=["rewired"])
        copy.validate()
        held = [weakref.ref(g._nx) for g in (graph, lowered, copy)]
        del graph, lowered, copy, node
        assert [ref() for ref in held] == [None, None, None]
    finally:
        if enabled:
            gc.enable()


def test_a_copy_shares_no_metadata_with_its_original() -> None:
    graph = _chain()
    graph.model_info = {"producer_name": "p", "metadata_props": {"author": "alice"}}
    other = graph.copy()
    other.model_info["metadata_props"]["author"] = "bob"  # the dict inside was shared
    assert graph.model_info["metadata_props"] == {"author": "alice"}


def test_copy_module_copies_are_independent_graphs() -> None:
    """copy.copy shared the node and tensor tables: an edit of the copy changed the original
    too, whose version stood still, so a backend ran its cached plan of the old op."""
    import copy

    from backends import get_backend
    from lowering import lower

    graph = _chain()
    x = np.array([[-1, 2, 3], [4, -5, 6]], dtype=np.float32)
    numpy = get_backend("numpy")
    before = numpy.run(graph, {"x": x})["y"]
    other = copy.copy(graph)
    other.replace_node(0, op=OnnxOp("Neg", 13))
    assert graph.nodes[0].op.op_type == "Relu" and other.nodes[0].op.op_type == "Neg"
    assert np.array_equal(numpy.run(graph, {"x": x})["y"], before)
    assert np.array_equal(numpy.run(other, {"x": x})["y"], -(-x + 1))
    lowered = lower(graph)
    twin = copy.copy(lowered)
    assert type(twin) is type(lowered) and twin.report() == lowered.report()
    twin.outputs.append("a")
    assert lowered.outputs == ["y"]
    for made in (graph, other, lowered, twin):
        made.validate()


def test_replace_node_holds_any_sequence_as_a_tuple() -> None:
    """A list given to replace_node was stored as it was: lower and to_onnx then failed
    with "unhashable type: 'list'"."""
    graph = _chain()
    (neg,) = graph.find_nodes("Neg")
    node = graph.replace_node(neg.id, inputs=["a"], outputs=["y"])
    assert node.inputs == ("a",) and node.outputs == ("y",)
    graph.validate()
    graph.to_onnx()


# ----------------------------------------------------------------------------- graph inputs/outputs


_MUTATIONS = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.sampled_from("abcd")),
        st.tuples(st.just("extend"), st.lists(st.sampled_from("abcd"), max_size=3)),
        st.tuples(st.just("insert"), st.integers(-3, 3), st.sampled_from("abcd")),
        st.tuples(st.just("remove"), st.sampled_from("abcd")),
        st.tuples(st.just("pop"), st.integers(-2, 2)),
        st.tuples(st.just("setitem"), st.integers(-2, 2), st.sampled_from("abcd")),
        st.tuples(st.just("setslice"), st.lists(st.sampled_from("abcd"), max_size=3)),
        st.tuples(st.just("delitem"), st.integers(-2, 2)),
        st.tuples(st.just("iadd"), st.lists(st.sampled_from("abcd"), max_size=2)),
        st.tuples(st.just("imul"), st.integers(0, 2)),
        st.tuples(st.just("clear")),
        st.tuples(st.just("assign"), st.lists(st.sampled_from("abcd"), max_size=3)),
    ),
    max_size=12,
)


def _mutate(target: list[str], step: tuple) -> list[str]:
    kind, *args = step
    if kind == "append":
        target.append(args[0])
    elif kind == "extend":
        target.extend(args[0])
    elif kind == "insert":
        target.insert(args[0], args[1])
    elif kind == "remove" and args[0] in list(target):
        target.remove(args[0])
    elif kind == "pop" and target:
        target.pop(args[0] % len(target))
    elif kind == "setitem" and target:
        target[args[0] % len(target)] = args[1]
    elif kind == "setslice":
        target[1:] = args[0]
    elif kind == "delitem" and target:
        del target[args[0] % len(target)]
    elif kind == "iadd":
        target += args[0]
    elif kind == "imul":
        target *= args[0]
    elif kind == "clear":
        target.clear()
    return target


@settings(max_examples=200, deadline=None)
@given(_MUTATIONS)
def test_graph_inputs_membership_follows_every_list_mutation(steps: list[tuple]) -> None:
    """``name in graph.inputs`` is a set look-up (a list scan made a graph of thousands of
    inputs load in quadratic time); it must answer as the plain list would after any edit."""
    graph = Graph()
    plain: list[str] = []
    for step in steps:
        if step[0] == "assign":
            graph.inputs = list(step[1])
            plain = list(step[1])
        else:
            _mutate(graph.inputs, step)
            _mutate(plain, step)
        assert graph.inputs == plain
        for name in "abcde":
            assert (name in graph.inputs) == (name in plain)


def test_adding_nodes_does_not_scan_the_graph_inputs() -> None:
    """Each node added asks whether its outputs are graph inputs: by a set look-up, not by
    comparing against every input (counted through names that count their comparisons)."""
    compared = [0]

    class Counted(str):
        __hash__ = str.__hash__

        def __eq__(self, other: object) -> bool:
            compared[0] += 1
            return str.__eq__(self, other)

    graph = Graph(opset_imports={"": 17})
    for i in range(200):
        graph.add_input(TensorInfo(Counted(f"x{i}"), np.float32, (2,)))
    compared[0] = 0
    for i in range(200):
        graph.add_node(OnnxOp("Relu", 14), [f"x{i}"], [f"y{i}"], _prov(f"relu{i}"))
    graph.outputs = [f"y{i}" for i in range(200)]
    graph.validate()
    # a scan compares each of 200 outputs with each of 200 inputs: 40,000 comparisons
    assert compared[0] < 2_000
