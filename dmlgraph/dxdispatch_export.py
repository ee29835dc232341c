"""Write a lowered graph as a DxDispatch model (``dmlgraph lower MODEL --format dxdispatch``).

DxDispatch (microsoft/DirectML, DxDispatch/) runs JSON models of buffer ``resources``, DML
operator ``dispatchables`` and ``commands``; ``models/dxdispatch/model.schema.json`` is its
schema. A fully lowered graph maps onto it one to one:

- every IR tensor a DML node reads or writes, and every graph input and output, is a buffer
  resource named after the tensor. Graph inputs hold the given input values (zeros when none
  are given), constants their data, intermediates and outputs zeros; the buffer is the
  tensor's packed bytes, which is what each tensor desc views (``dmlgraph.dml.binding``);
- every DML node is a dispatchable named after the ONNX node it came from (``NAME.k`` for the
  k-th of several; an unnamed node ``OP_ID``, as ``to_onnx`` names it), in the form
  ``descriptor.to_json()`` gives;
- the commands dispatch the nodes in topological order, binding each tensor field (by its C
  name: "InputTensor", "InputTensors" as a list, "OutputTensor") to its resource, then print
  every graph output.

Initial values are written so DxDispatch reproduces the bytes exactly: integers in their own
type (never as floats), bool as UINT8, finite floats in their own type (JSON keeps a float64
exactly, and a float32 or float16 value converts back exactly), floats holding NaN or
infinity, and dtypes DirectML has no type for (bfloat16, ...), as unsigned integers of the
same width carrying their bits. A buffer whose elements are all equal is written in the
compact ``{"value", "valueCount"}`` form.

DxDispatch runs DML operators, not ONNX ones: a graph with nodes left for the ONNX fallback
is refused with one error naming them (lower at a higher feature level, or export only graphs
that lower completely). Its JSON parser predates DML_PADDING_MODE_WRAP (DML_SPEC.md §6), so a
WRAP padding is refused too (``jsonio.DXDISPATCH_UNKNOWN_VALUES``, which ``dmlgraph
dxdispatch`` refuses alike): below FL 6.4 the lowering makes wrap of SLICEs and a JOIN.
(dmlgraph's own JSON takes WRAP, so the JSON ``lower -o`` writes reads back.)
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from dmlgraph import files
from dmlgraph.canonical import LOWERED_OPS
from dmlgraph.dml.binding import binds, buffer_size, from_buffer
from dmlgraph.dml.enums import TensorDataType
from dmlgraph.dml.jsonio import dxdispatch_unknown_value
from dmlgraph.dml.operators import OperatorDesc
from dmlgraph.dml.schema import FieldKind
from dmlgraph.errors import DmlValidationError, UnsupportedError, counted
from dmlgraph.ir import Graph, Node
from dmlgraph.tensorio import feed_array

#: How many fallback nodes the refusal names before it counts the rest.
NAMED_NODES = 5


class DxDispatchExportError(UnsupportedError):
    """The graph cannot be written as a DxDispatch model; the message says which part."""


def initial_values_type(dtype: np.dtype, data: np.ndarray | None = None) -> TensorDataType:
    """The initialValuesDataType that carries a tensor's bytes exactly (see the module doc)."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return TensorDataType.UINT8
    try:
        native = TensorDataType.from_numpy(dtype)
    except ValueError:
        native = None
    if native is not None and not (
        native.is_float and data is not None and not np.isfinite(data).all()
    ):
        return native
    width = dtype.itemsize if dtype.itemsize in (1, 2, 4, 8) else 8
    if dtype.itemsize % width:
        raise DxDispatchExportError(f"no DirectML element type holds {dtype} values")
    return TensorDataType.from_numpy(np.dtype(f"u{width}"))


def _values(array: np.ndarray, data_type: TensorDataType) -> list[int | float]:
    """The array's bytes as a flat list of ``data_type`` numbers."""
    flat = np.ascontiguousarray(array).reshape(-1).view(data_type.numpy_dtype)
    if data_type.is_float:
        return [float(v) for v in flat]
    return [int(v) for v in flat]


def _resource(info_dtype: np.dtype, shape: tuple[int, ...], data: np.ndarray | None,
              size: int) -> dict[str, Any]:
    """A buffer resource of ``size`` bytes holding ``data`` (zeros when None)."""
    data_type = initial_values_type(info_dtype, data)
    element = data_type.numpy_dtype.itemsize
    count = max(1, (int(np.prod(shape)) * np.dtype(info_dtype).itemsize) // element)
    spec: dict[str, Any] = {"initialValuesDataType": data_type.name}
    if data is None:
        spec["initialValues"] = {"valueCount": count, "value": 0}
    else:
        bits = np.ascontiguousarray(data).reshape(-1).view(data_type.bits_dtype)
        values = _values(data, data_type)
        if bits.size and (bits == bits[0]).all():
            spec["initialValues"] = {"valueCount": len(values), "value": values[0]}
        else:
            spec["initialValues"] = values
    if size != count * element:  # padding to 4 bytes or more: said, not left to defaults
        spec["sizeInBytes"] = size
    return spec


def _unsized_inputs_read(graph: Graph, names: list[str]) -> list[str]:
    """The graph inputs of unknown sizes that ``names`` are computed from, in the graph's
    order: the sizes to give. Not every unsized input: one that no Slice/Concat/Pad waiting
    for its sizes reads, directly or through other nodes, sizes none of them (a NonZero's
    output stays dynamic whatever the inputs' sizes), and naming it sent the user to size
    it in vain."""
    seen: set[str] = set()
    todo = [name for name in names if graph.tensor(name).static_shape is None]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        node = graph.producer(name)
        if node is not None:
            todo.extend(x for x in node.inputs if x and x not in seen)
    return [name for name in graph.inputs
            if name in seen and graph.tensor(name).static_shape is None]


def _fallback_error(graph: Graph, onnx_nodes: list[Node]) -> DxDispatchExportError:
    named = ", ".join(f"{n.name or '(unnamed)'!r} ({n.op_type})" for n in onnx_nodes[:NAMED_NODES])
    more = len(onnx_nodes) - NAMED_NODES
    if more > 0:
        named += f" and {more} more"
    kept = [n for n in onnx_nodes if n.op_type in LOWERED_OPS]
    sized_later = [n for n in kept if any(
        x and graph.tensor(x).static_shape is None for x in n.inputs)]
    unsized = _unsized_inputs_read(graph, [x for n in sized_later for x in n.inputs if x])
    if sized_later and unsized:  # lowered when they run, by the sizes that arrive
        hint = (
            f"{len(sized_later)} Slice/Concat/Pad node(s) read tensors of dynamic sizes, as "
            f"graph input(s) {', '.join(map(repr, unsized))} have: give their sizes "
            "(--input-shape NAME:D0,D1,.. or --inputs; input_shapes= in Python)"
        )
    elif kept:  # some other level may lower them: their reports say
        hint = (
            f"`dmlgraph lower` says why {len(kept)} Slice/Concat/Pad node(s) stayed ONNX at "
            "this feature level"
        )
    else:
        hint = "dmlgraph lowers only Slice, Concat and Pad, so only a graph of those exports"
    return DxDispatchExportError(
        f"{graph.source}: cannot write a DxDispatch model: {len(onnx_nodes)} node(s) stay ONNX "
        f"for the fallback and DxDispatch runs only DML operators: {named}; {hint}"
    )


def _dispatchable_names(graph: Graph, nodes: list[Node]) -> dict[int, str]:
    """Node id -> dispatchable name: the ONNX node's name, ``NAME.k`` for several pieces, an
    unnamed node as ``to_onnx`` of the import names it (``OP_ID``, its id there). Pieces are
    told apart by the node they came from (``origin_ids``), not by name, and a node lowered
    to one descriptor keeps its name exactly: the pieces' names avoid it (a piece of "w" took
    "w.1", and the node named "w.1" became "w.1_")."""
    origin_ids: Mapping[int, int] = getattr(graph, "origin_ids", {})
    groups: dict[tuple[str, str] | int, list[Node]] = {}
    for node in nodes:
        origin = origin_ids.get(node.id)
        groups.setdefault((node.name, node.provenance.op_type) if origin is None else origin,
                          []).append(node)
    names: dict[int, str] = {}
    taken: set[str] = set()
    for group in groups.values():  # names of the model's nodes first, as they are
        if len(group) == 1 and group[0].name and group[0].name not in taken:
            names[group[0].id] = group[0].name
            taken.add(group[0].name)
    for key, group in groups.items():
        if group[0].id in names:
            continue
        first = group[0]
        base = first.name or (
            f"{first.provenance.op_type}_{key if isinstance(key, int) else first.id}")
        for k, node in enumerate(group):
            name = base if len(group) == 1 else f"{base}.{k}"
            while name in taken:
                name += "_"
            taken.add(name)
            names[node.id] = name
    return names


def _static(graph: Graph, name: str, where: str) -> tuple[np.dtype, tuple[int, ...]]:
    info = graph.tensor(name)
    shape = info.static_shape
    if info.dtype is None or shape is None:
        raise DxDispatchExportError(
            f"{graph.source}: {where}: tensor {name!r} ({info!r}) has no static dtype and "
            "shape; fix the input shapes (--input-shape) before exporting"
        )
    if int(np.prod(shape)) == 0:
        raise DxDispatchExportError(
            f"{graph.source}: {where}: tensor {name!r} is empty {list(shape)}; a DxDispatch "
            "buffer holds at least one element"
        )
    return np.dtype(info.dtype), shape


def _bindings(node: Node, desc: OperatorDesc) -> dict[str, str | list[str]]:
    """Each tensor field's C name -> the resource (tensor) bound to it, in desc order."""
    ins, outs = iter(node.inputs), iter(node.outputs)
    bindings: dict[str, str | list[str]] = {}
    for spec in desc.SCHEMA:
        if spec.kind is FieldKind.INPUT_TENSOR_ARRAY:
            bindings[spec.c_name] = [next(ins) for _ in getattr(desc, spec.attr)]
        elif spec.kind is FieldKind.INPUT_TENSOR:
            bindings[spec.c_name] = next(ins)
        elif spec.kind is FieldKind.OUTPUT_TENSOR:
            bindings[spec.c_name] = next(outs)
    return bindings


def _dispatchable(graph: Graph, node: Node) -> dict[str, Any]:
    """The node's descriptor in its JSON form, or an error naming the node where that form
    cannot hold a value (a NaN other than the quiet one "nan" reads as)."""
    try:
        return node.op.to_json()
    except DmlValidationError as exc:
        raise DxDispatchExportError(f"{graph.describe(node)}: {exc}") from None


def to_dxdispatch(
    graph: Graph, inputs: Mapping[str, np.ndarray] | None = None
) -> dict[str, Any]:
    """The DxDispatch model (a JSON-ready dict) of a fully lowered graph.

    ``inputs``: values of graph inputs to put in their resources (others are zeros), taken
    as the backends take feeds (``tensorio.feed_array``: Python data in the input's type,
    another byte order as its values).
    """
    if not isinstance(graph, Graph):  # a ModelProto raised AttributeError from inside
        raise DxDispatchExportError(
            f"to_dxdispatch takes a lowered Graph (lowering.lower(dmlgraph.load(model))), not "
            f"{type(graph).__name__}"
        )
    if inputs is not None and not isinstance(inputs, Mapping):  # a list: dict()'s ValueError
        raise DxDispatchExportError(
            f"{graph.source}: inputs map graph input names to arrays, not a "
            f"{type(inputs).__name__}"
        )
    order = graph.topological_order()
    onnx_nodes = [node for node in order if not isinstance(node.op, OperatorDesc)]
    if onnx_nodes:
        raise _fallback_error(graph, onnx_nodes)
    inputs = dict(inputs or {})
    unknown = sorted(set(inputs) - set(graph.inputs))
    if unknown:
        raise DxDispatchExportError(
            f"{graph.source}: input values given for {unknown}, which are not graph inputs "
            f"(graph inputs: {graph.inputs})"
        )
    # tensor -> bytes its resource needs: the largest TotalTensorSizeInBytes bound to it
    sizes: dict[str, int] = {}
    where: dict[str, str] = {}
    for name in graph.inputs:
        sizes[name] = 0
        where[name] = "graph input"
    for node in order:
        desc: OperatorDesc = node.op
        unreadable = dxdispatch_unknown_value(desc)
        if unreadable is not None:
            error, way_out = unreadable
            raise DxDispatchExportError(f"{graph.describe(node)}: {error}; {way_out}")
        tensors = [(n, d, "input") for n, d in zip(node.inputs, desc.inputs)]
        tensors += [(n, d, "output") for n, d in zip(node.outputs, desc.outputs)]
        for port, (name, view, kind) in enumerate(tensors):
            label = f"{graph.describe(node)} {kind} {name!r}"
            dtype, shape = _static(graph, name, label)
            reason = binds(view, dtype, shape)
            if reason:
                raise DxDispatchExportError(f"{label}: {reason}")
            sizes[name] = max(sizes.get(name, 0), view.total_tensor_size_in_bytes)
            where.setdefault(name, label)
    for name in graph.outputs:
        sizes.setdefault(name, 0)
        where.setdefault(name, "graph output")

    resources: dict[str, Any] = {}
    for name, size in sizes.items():
        dtype, shape = _static(graph, name, where[name])
        data = graph.constant(name)
        if name in inputs:
            data = feed_array(name, inputs[name], dtype, f"{graph.source}: input {name!r}",
                              DxDispatchExportError)
            if data.dtype != dtype or data.shape != shape:
                raise DxDispatchExportError(
                    f"{graph.source}: input {name!r} is {data.dtype}{list(data.shape)}, the "
                    f"graph wants {dtype}{list(shape)}"
                )
        size = max(size, buffer_size(dtype, shape))
        resources[name] = _resource(dtype, shape, data, size)

    names = _dispatchable_names(graph, order)
    dispatchables = {names[node.id]: _dispatchable(graph, node) for node in order}
    commands: list[dict[str, Any]] = [
        {"type": "dispatch", "dispatchable": names[node.id], "bindings": _bindings(node, node.op)}
        for node in order
    ]
    commands += [{"type": "print", "resource": name} for name in dict.fromkeys(graph.outputs)]
    return {"resources": resources, "dispatchables": dispatchables, "commands": commands}


def write_dxdispatch(
    graph: Graph, path: str | Path, inputs: Mapping[str, np.ndarray] | None = None
) -> str:
    """Write ``to_dxdispatch(graph, inputs)`` to ``path``; returns one line saying what."""
    model = to_dxdispatch(graph, inputs)
    path = Path(path)
    try:
        files.write_text(path, json.dumps(model, indent=2) + "\n")
    except OSError as exc:  # a missing folder, a folder's name: said as tensorio says it
        raise DxDispatchExportError(f"{path}: cannot write: {exc.strerror or exc}") from None
    counts = ", ".join(
        counted(n, what)
        for what, n in (("resource", len(model["resources"])),
                        ("dispatchable", len(model["dispatchables"])),
                        ("command", len(model["commands"])))
    )
    zeros = "" if inputs is not None else "; the graph inputs hold zeros (give --inputs)"
    return f"wrote {path}: {counts}{zeros}"


def read_outputs(model: Any, graph: Graph) -> dict[str, np.ndarray]:
    """The graph outputs held by a run DxDispatch model's resources (``dmlgraph.dxdispatch``
    ``DxDispatchModel``), as arrays of the graph's dtypes and shapes."""
    outputs = {}
    for name in graph.outputs:
        dtype, shape = _static(graph, name, "graph output")
        raw = np.frombuffer(bytes(model.resources[name].data), dtype=np.uint8)
        outputs[name] = from_buffer(raw, dtype, shape)
    return outputs
