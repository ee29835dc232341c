"""IR -> onnx.ModelProto, for onnxruntime parity runs, shape inference and constant folding.

Canonical Slice/Concat/Pad nodes are written back in the syntax of the version the graph's
opset imports select (``canonical.emit``), so opset imports are preserved as they were.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from dmlgraph import canonical
from dmlgraph.errors import ModelValidationError, UnsupportedError
from dmlgraph.ir import Graph, Node, OnnxOp, Shape, Subgraph, TensorInfo, implicit_inputs
from dmlgraph.subgraphs import graph_proto
from dmlgraph.value_info import value_info as value_info_proto

#: The newest IR version written for models whose opsets an IR-10 reader understands: what
#: onnxruntime >= 1.20 (this project's floor) loads. Newer opsets get the IR they require.
ORT_SAFE_IR_VERSION = 10


def ir_version_for_opset(opset: int) -> int:
    """The lowest IR version onnx pairs with a default-domain opset (from helper.VERSION_TABLE)."""
    candidates = [row[1] for row in helper.VERSION_TABLE if row[2] >= opset]
    return min(candidates) if candidates else onnx.IR_VERSION


def target_ir_version(graph: Graph) -> int:
    """``min(graph's IR version, max(ORT_SAFE_IR_VERSION, IR its opset requires))``, and at
    least 4.

    onnx >= 1.23 stamps IR 14, which onnxruntime 1.31 refuses. Lowering the stamp changes no
    meaning: later IR versions add element types and fields, and a graph that uses them fails
    in an older runtime whatever its stamp says. Before IR 4 every initializer had to be
    listed as a graph input as well, which the IR's constants are not.
    """
    needed = ir_version_for_opset(graph.opset_imports.get("", 1))
    return max(4, min(graph.ir_version, max(ORT_SAFE_IR_VERSION, needed)))


def to_onnx(
    graph: Graph,
    *,
    ir_version: int | None = None,
    value_info: bool = True,
    declare_constants_above: int | None = None,
) -> onnx.ModelProto:
    """The graph as a ModelProto.

    ``value_info`` writes what is known of intermediate tensors. ``declare_constants_above``
    (for shape inference) turns constants with more elements than that into typed graph inputs
    instead of initializers, to skip serializing weights nobody reads.
    Raises UnsupportedError for a non-ONNX (DirectML) node or a form a version cannot express.
    """
    nodes: list[onnx.NodeProto] = []
    extra_initializers: list[onnx.TensorProto] = []
    used_names: set[str] = set()
    order = graph.topological_order()
    for node in order:
        try:
            proto, new_constants = node_proto(graph, node, used_names)
        except _NodeOpError as exc:  # the attribute or version alone, not the node
            raise ModelValidationError(f"{graph.describe(node)}: {exc}") from None
        nodes.append(proto)
        extra_initializers.extend(numpy_helper.from_array(v, k) for k, v in new_constants.items())

    # a subgraph reads the enclosing graph's tensors by name: its node's implicit inputs
    referenced = {name for node in order for name in node.inputs if name} | set(graph.outputs)
    initializers: list[onnx.TensorProto] = []
    inputs = [_value_info(graph.tensors[n]) for n in graph.inputs]
    for name in graph.constants:
        constant = graph.tensors[name]
        if name not in referenced or constant.data is None:
            continue
        if declare_constants_above is not None and constant.data.size > declare_constants_above:
            inputs.append(_value_info(constant))
        else:
            initializers.append(numpy_helper.from_array(constant.data, name))
    stale = graph.stale_tensors()  # an edit may have made these wrong: left to inference
    outputs = [
        _value_info(TensorInfo(n) if n in stale else graph.tensors[n]) for n in graph.outputs
    ]
    infos: list[onnx.ValueInfoProto] = []
    if value_info:
        io = set(graph.inputs) | set(graph.outputs)
        for node in order:
            for out in node.outputs:
                info = graph.tensors.get(out)
                if (
                    out and out not in io and out not in stale
                    and info is not None and info.dtype is not None
                ):
                    infos.append(_value_info(info))

    body = helper.make_graph(
        nodes, graph.name, inputs, outputs, initializers + extra_initializers, value_info=infos
    )
    opsets = [
        helper.make_opsetid(domain, version)
        for domain, version in sorted(graph.opset_imports.items())
    ]
    model = helper.make_model(body, opset_imports=opsets)
    model.ir_version = target_ir_version(graph) if ir_version is None else ir_version
    meta = graph.model_info
    for key in ("producer_name", "producer_version", "domain", "doc_string"):
        if key in meta:
            setattr(model, key, meta[key])
    if "model_version" in meta:
        model.model_version = int(meta["model_version"])
    for key, value in meta.get("metadata_props", {}).items():
        model.metadata_props.add(key=key, value=value)
    return model


def _value_info(info: TensorInfo) -> onnx.ValueInfoProto:
    """``value_info.value_info`` with its type built once per (dtype, shape): a model's
    tensors share few types, and building each dim by dim was a quarter of exporting its
    fallback segments."""
    if info.dtype is None:
        return value_info_proto(info)
    try:
        tensor_type = _tensor_type(info.dtype, info.shape)
    except UnsupportedError:
        return value_info_proto(info)  # raises, naming the tensor
    proto = onnx.ValueInfoProto(name=info.name)
    proto.type.CopyFrom(tensor_type)
    return proto


@lru_cache(maxsize=4096)
def _tensor_type(dtype: np.dtype, shape: Shape | None) -> onnx.TypeProto:
    """The TypeProto ``value_info`` writes for a dtype and shape (copied where it is used)."""
    return value_info_proto(TensorInfo("", dtype=dtype, shape=shape)).type


#: NodeProtos of plain (non-canonical) ops by (inputs, outputs, name, opset), with the op
#: each was built for: folding exports the graph once per round, and building protos
#: attribute by attribute is slow. Keyed by ports, not by the op, whose attributes are slow
#: to hash: a node's op is checked by identity first, then by value. Protos are copied when
#: added to a graph, so sharing them is safe.
_PROTOS: dict[tuple[Any, ...], tuple[OnnxOp, onnx.NodeProto]] = {}
_PROTO_CACHE_SIZE = 100_000
#: AttributeProtos of plain ops by (op, opset), for the nodes ``_PROTOS`` lacks: a model has
#: few ops (shufflenet: 144 ONNX nodes, 14 ops), and exporting its fallback segments built
#: 338 attributes one by one the first time (protos 4.3 ms then, 1.9 ms now).
_ATTRIBUTES: dict[tuple[Any, ...], tuple[onnx.AttributeProto, ...]] = {}


def node_proto(
    graph: Graph, node: Node, used_names: set[str]
) -> tuple[onnx.NodeProto, dict[str, np.ndarray]]:
    """The node as a NodeProto in the syntax of the graph's opset, and the constants its
    emitted form adds (Pad-2's attributes as inputs...); the proto may be shared: copy it
    before changing it."""
    op = node.op
    if not isinstance(op, OnnxOp):
        raise UnsupportedError(
            f"{graph.describe(node)} holds a {type(op).__name__}, not an ONNX op; "
            "to_onnx() writes graphs of ONNX ops only (backends.onnxruntime.translate writes a "
            "lowered graph's DML nodes as ONNX ops)"
        )
    if op.domain not in graph.opset_imports:
        raise UnsupportedError(
            f"{graph.describe(node)}: the graph imports no opset for domain {op.domain!r}"
        )
    name = node.name or f"{op.op_type}_{node.id}"
    if name in used_names:
        name = f"{name}_{node.id}"
    used_names.add(name)
    opset = graph.opset_imports[op.domain]
    if op.holds_subgraphs:
        return _control_flow_proto(op, opset, node, name), {}
    if not canonical.is_canonical(op):  # a plain op's proto depends only on these
        return _plain_proto(op, opset, node, name), {}
    op_type, inputs, attrs, new_constants = op.op_type, node.inputs, dict(op.attrs), {}
    if canonical.is_canonical(op):
        version = canonical.since_version(
            op.op_type, op.domain, graph.opset_imports[op.domain], graph.describe(node)
        )
        emitted = canonical.emit(graph, node, version)
        op_type, inputs, attrs, new_constants = (
            emitted.op_type,
            emitted.inputs,
            dict(emitted.attrs),
            dict(emitted.new_constants),
        )
    schema = op_schema(op_type, op.domain, graph.opset_imports[op.domain])
    proto = helper.make_node(
        op_type, list(inputs), list(node.outputs), name=name, domain=op.domain or None
    )
    proto.attribute.extend(_attribute(key, value, schema) for key, value in sorted(attrs.items()))
    return proto, new_constants


def _plain_proto(op: OnnxOp, opset: int, node: Node, name: str) -> onnx.NodeProto:
    """A plain op's node proto, from ``_PROTOS`` (built on first use)."""
    key = (node.inputs, node.outputs, name, opset)
    cached = _PROTOS.get(key)
    if cached is not None and (cached[0] is op or cached[0] == op):
        return cached[1]
    if len(_PROTOS) >= _PROTO_CACHE_SIZE or len(_ATTRIBUTES) >= _PROTO_CACHE_SIZE:
        _PROTOS.clear()  # an op changed on the same ports adds to _ATTRIBUTES alone
        _ATTRIBUTES.clear()
    proto = helper.make_node(
        op.op_type, list(node.inputs), list(node.outputs), name=name, domain=op.domain or None
    )
    proto.attribute.extend(_plain_attributes(op, opset))
    _PROTOS[key] = (op, proto)
    return proto


def _control_flow_proto(op: OnnxOp, opset: int, node: Node, name: str) -> onnx.NodeProto:
    """A node holding subgraphs: its explicit inputs only (the implicit ones, which the IR
    lists after them, are read by name inside), its subgraphs reading the enclosing graph's
    tensors by the names the node's inputs have now (a pass may have renamed one)."""
    implicit = implicit_inputs(op)
    explicit = len(node.inputs) - len(implicit)
    renamed = dict(zip(implicit, node.inputs[explicit:]))
    proto = helper.make_node(
        op.op_type, list(node.inputs[:explicit]), list(node.outputs), name=name,
        domain=op.domain or None,
    )
    schema = op_schema(op.op_type, op.domain, opset)
    for key, value in sorted(op.attrs.items()):
        if isinstance(value, Subgraph):
            proto.attribute.append(helper.make_attribute(key, graph_proto(value, renamed)))
        elif isinstance(value, tuple) and value and isinstance(value[0], Subgraph):
            proto.attribute.append(
                helper.make_attribute(key, [graph_proto(v, renamed) for v in value])
            )
        else:
            proto.attribute.append(_attribute(key, value, schema))
    return proto


def _plain_attributes(op: OnnxOp, opset: int) -> tuple[onnx.AttributeProto, ...]:
    """A plain op's attributes as protos, built once per (op, opset) (``_ATTRIBUTES``)."""
    key = (op, opset)
    found = _ATTRIBUTES.get(key)
    if found is None:
        schema = op_schema(op.op_type, op.domain, opset)
        if schema is not None and schema.since_version != op.since_version:
            # written as the opset's op: a Relu-99 ran as Relu-14, silently, and a
            # Squeeze-1's axes attribute met onnxruntime's "invalid model" at run time
            raise _NodeOpError(
                f"since_version {op.since_version} is not the version of {op.op_type} that "
                f"the graph's opset {opset} selects ({schema.since_version})"
            )
        found = tuple(_attribute(k, v, schema) for k, v in sorted(op.attrs.items()))
        _ATTRIBUTES[key] = found
    return found


@lru_cache(maxsize=4096)
def op_schema(op_type: str, domain: str, opset: int) -> onnx.defs.OpSchema | None:
    """The op's schema at the opset, None when onnx has none (cached: asked for per node)."""
    try:
        return onnx.defs.get_schema(op_type, opset, domain)
    except onnx.defs.SchemaError:
        return None


class _NodeOpError(ModelValidationError):
    """An op onnx cannot write as it is (an attribute value of another type, a version its
    opset does not select); ``to_onnx`` names the node."""


def _attribute(key: str, value: Any, schema: onnx.defs.OpSchema | None) -> onnx.AttributeProto:
    """``_attribute_proto``, or an ``_NodeOpError`` naming the attribute, its value
    and its type: a value of another type (alpha=1 for a FLOAT, perm=[1.0, 0.0] or an array
    for INTS) met onnx's TypeError from deep inside, in ``to_onnx`` and ``lower``."""
    try:
        return _attribute_proto(key, value, schema)
    except (TypeError, ValueError, AssertionError) as exc:  # onnx asserts a list's type
        declared = schema.attributes.get(key) if schema is not None else None
        kind = "a value onnx writes as an attribute"
        if declared is not None:
            type_id = int(declared.type)  # type: ignore[call-overload]
            kind = f"of ONNX type {onnx.AttributeProto.AttributeType.Name(type_id)}"
        detail = f": {exc}" if str(exc) else ""
        raise _NodeOpError(f"attribute {key} = {value!r} is not {kind}{detail}") from None


def _attribute_proto(
    key: str, value: Any, schema: onnx.defs.OpSchema | None
) -> onnx.AttributeProto:
    declared = schema.attributes.get(key) if schema is not None else None
    # OpSchema.AttrType values are AttributeProto types; the onnx stubs miss its __int__.
    attr_type: int | None = int(declared.type) if declared is not None else None  # type: ignore[call-overload]
    if isinstance(value, np.ndarray):
        value = numpy_helper.from_array(value)
    elif isinstance(value, tuple):
        value = [numpy_helper.from_array(v) if isinstance(v, np.ndarray) else v for v in value]
        if not value and attr_type is None:
            attr_type = onnx.AttributeProto.INTS
    if attr_type == onnx.AttributeProto.UNDEFINED:
        attr_type = None
    if isinstance(value, np.float32) and value != value:
        return _float_attribute_bits(key, [value], onnx.AttributeProto.FLOAT)
    if isinstance(value, list) and any(isinstance(v, np.float32) and v != v for v in value):
        return _float_attribute_bits(key, value, onnx.AttributeProto.FLOATS)
    return helper.make_attribute(key, value, attr_type=attr_type)


def _float_attribute_bits(
    key: str, values: Sequence[Any], kind: onnx.AttributeProto.AttributeType
) -> onnx.AttributeProto:
    """A FLOAT or FLOATS attribute of the float32s' own bits: protobuf's Python API takes
    doubles, and their conversion to float sets a signalling NaN's quiet bit
    (``importer.wire_floats`` reads them back). Written in the wire form: each a fixed32 of
    field 2 (``f``) or 7 (``floats``)."""
    tag = b"\x15" if kind == onnx.AttributeProto.FLOAT else b"\x3d"
    attr = onnx.AttributeProto(name=key, type=kind)
    bits = np.asarray(values, np.float32).astype("<f4")
    attr.MergeFromString(b"".join(tag + bits[i : i + 1].tobytes() for i in range(bits.size)))
    return attr
