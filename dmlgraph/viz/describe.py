"""What a drawing shows of each node: its status, its fields, its tensors and its notes.

DOT and HTML both draw from these records, so the two never disagree. Descriptor fields come
from each descriptor's ``SCHEMA`` (one loop for every operator, as DxDispatch prints them);
a DML node's tensors show the IR tensor it binds (before legalization) beside the tensor desc
that views it (after: another rank or type, see ``dmlgraph.dml.binding``).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dmlgraph.canonical import LOWERED_OPS
from dmlgraph.dml.operators import OperatorDesc
from dmlgraph.dml.schema import FieldKind
from dmlgraph.dml.tensor import BufferTensorDesc
from dmlgraph.ir import Graph, Node, OnnxOp, TensorInfo, dims_text

#: A note starting with this marks a known DirectML / onnxruntime divergence (dmlgraph.parity).
DIVERGENCE = "divergence:"


@dataclass(frozen=True)
class StatusStyle:
    """How one status is drawn: fill, border and dash, and what the legend says."""

    fill: str
    border: str
    dashed: bool
    legend: str


#: Drawing status -> style. The report's statuses, with "notes" split off from "lowered" so
#: legalization that changed something stands out (not from "decomposed": every decomposed
#: node has a note saying why, so "decomposed" was never drawn and its filter counted 0).
STATUS_STYLES: Mapping[str, StatusStyle] = {
    "lowered": StatusStyle("#c8e6c9", "#2e7d32", False, "lowered to one DML operator"),
    "decomposed": StatusStyle("#b2dfdb", "#00695c", False, "lowered to several DML operators"),
    "notes": StatusStyle("#fff3bf", "#b7791f", False, "lowered, with legalization notes"),
    "fallback": StatusStyle("#e9ecef", "#6c757d", False, "left to the ONNX fallback"),
    "folded": StatusStyle("#dbe9f6", "#5b7fa6", True, "folded to a constant"),
    "eliminated": StatusStyle("#f1e4f3", "#8e5b95", True, "eliminated (a no-op, or unused)"),
}
STATUSES: tuple[str, ...] = tuple(STATUS_STYLES)

#: The status of a node of a graph never lowered (``to_dot`` of a loaded graph): a plain ONNX
#: node. Every one was drawn "left to the ONNX fallback", each Slice, Concat and Pad as a
#: lowering target that fell back (red), though nothing had been lowered.
NOT_LOWERED = "onnx"

#: What a drawing colours by: the report's statuses, and a graph's never lowered.
DRAWN_STYLES: Mapping[str, StatusStyle] = {
    **STATUS_STYLES,
    NOT_LOWERED: StatusStyle("#ffffff", "#343a40", False, "an ONNX node (the graph was not "
                             "lowered)"),
}

#: ONNX ops dmlgraph lowers: when one of these falls back, the drawing says so louder.
LOWERING_TARGETS = frozenset(LOWERED_OPS)


@dataclass(frozen=True)
class TensorRow:
    """One port: its label, the IR tensor (name and type) and, for DML nodes, the desc view."""

    port: str
    tensor: str
    ir_type: str
    view: str = ""
    constant: bool = False


@dataclass(frozen=True)
class NodeView:
    """Everything a drawing shows of one node."""

    node_id: int
    title: str  # DML_OPERATOR_SLICE1, or the ONNX op type
    name: str  # the ONNX node it came from
    origin: str  # "Slice 'name'": the original node, for DML nodes; "" for ONNX nodes
    status: str  # a key of STATUS_STYLES
    group: str  # shared by an original node and every node it became
    fields: tuple[tuple[str, str], ...]
    tensors: tuple[TensorRow, ...]
    notes: tuple[str, ...]
    is_dml: bool
    part: tuple[int, int] | None = None  # (k, n): the k-th of n DML nodes of one original node

    @property
    def shows_notes(self) -> bool:
        """Whether a label repeats the notes: the pieces of a decomposed node share them, so
        only the last piece (the one writing the original's output) shows them."""
        return self.part is None or self.part[0] == self.part[1]

    @property
    def divergent(self) -> bool:
        return any(note.startswith(DIVERGENCE) for note in self.notes)

    @property
    def lowering_target_fallback(self) -> bool:
        return self.status == "fallback" and not self.is_dml and self.title in LOWERING_TARGETS


# ----------------------------------------------------------------------------- text


def tensor_text(info: TensorInfo) -> str:
    """``float32[1,3,224,224]``: the IR tensor's dtype and shape."""
    dtype = "?" if info.dtype is None else str(info.dtype)
    return dtype + dims_text(info.shape)


def desc_text(desc: BufferTensorDesc) -> str:
    """``FLOAT32 [1,1,4,4]``, plus strides, flags and a padded size when they are set."""
    text = f"{desc.data_type.name} {dims_text(desc.sizes)}"
    if desc.strides is not None:
        text += f" strides {dims_text(desc.strides)}"
    if desc.flags:
        text += f" {desc.flags.name}"
    if desc.total_tensor_size_in_bytes != desc.minimum_size_in_bytes:
        text += f" ({desc.total_tensor_size_in_bytes} bytes)"
    return text


def number_text(value: float | int) -> str:
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return str(value)
        return repr(value)  # as to_json() writes it: a float64 PADDING1 value in full
    return str(value)


def value_text(value: Any, limit: int = 8) -> str:
    """An attribute or field value in a line: lists shortened past ``limit`` items."""
    if isinstance(value, np.ndarray):
        return f"{value.dtype}{dims_text(value.shape)} array"
    if isinstance(value, (tuple, list)):
        items = [value_text(v, limit) for v in value[:limit]]
        more = f", ... ({len(value)} items)" if len(value) > limit else ""
        return "[" + ", ".join(items) + more + "]"
    if isinstance(value, bytes):
        return repr(value.decode("utf-8", "replace"))
    if isinstance(value, str):
        return repr(value)
    if hasattr(value, "name") and hasattr(value, "full_name"):  # a DirectML enum
        return value.name
    if isinstance(value, (int, float)):
        return number_text(value)
    return str(value)


def sentence(note: str) -> str:
    """A note as a sentence: capitalised, ending with a full stop."""
    text = note.strip()
    if not text:
        return text
    text = text[0].upper() + text[1:]
    return text if text[-1] in ".!?" else text + "."


def descriptor_fields(desc: OperatorDesc) -> tuple[tuple[str, str], ...]:
    """The descriptor's non-tensor fields by C name, in directml.h order. Counts are left
    out: they are the lengths of the arrays shown."""
    rows = []
    for spec in desc.SCHEMA:
        if spec.is_tensor or spec.kind is FieldKind.COUNT:
            continue
        rows.append((spec.c_name, value_text(getattr(desc, spec.attr), limit=16)))
    return tuple(rows)


# ----------------------------------------------------------------------------- status


class ReportIndex:
    """The lowering report by original node, so a node's status is one lookup.

    Records are found by the id of the original node (a lowered graph's ``origin_ids`` lead
    a lowered node there): names may be empty or repeated. Records without ids (made by
    hand) are found by provenance, name and op type.
    """

    def __init__(self, records: Iterable[Any], origin_ids: Mapping[int, int] | None = None):
        self._origin_ids = origin_ids
        self._by_id: dict[int, Any] = {}
        self._by_key: dict[tuple[str, str], Any] = {}
        for record in records:
            node_id = getattr(record, "node_id", None)
            if node_id is not None:
                self._by_id.setdefault(node_id, record)
            else:
                self._by_key.setdefault((record.name, record.op_type), record)

    def origin(self, node: Node) -> int | None:
        """The id of the original node ``node`` came from (itself, in the original graph)."""
        return node.id if self._origin_ids is None else self._origin_ids.get(node.id)

    def get(self, node: Node) -> Any | None:
        origin = self.origin(node)
        if origin is not None and origin in self._by_id:
            return self._by_id[origin]
        return self._by_key.get((node.provenance.name, node.provenance.op_type))


def display_name(graph: Graph) -> str:
    """How a drawing titles a graph: its model file's name (not the path, so drawings do not
    depend on where the model lies), else the graph's name."""
    source = graph.source
    if source and not source.startswith("<"):
        return source.replace("\\", "/").rsplit("/", 1)[-1]
    return graph.name


def report_of(graph: Graph) -> list[Any]:
    """The lowering report of a LoweredGraph; empty for any other graph."""
    report = getattr(graph, "report", None)
    return list(report()) if callable(report) else []


def never_lowered(graph: Graph, records: Sequence[Any]) -> bool:
    """Whether ``graph`` was never lowered: no report (not ``lower``'s result, none given)
    and no DML node."""
    return not records and not callable(getattr(graph, "report", None)) and not any(
        isinstance(node.op, OperatorDesc) for node in graph.nodes)


def drawn_status(status: str, has_notes: bool) -> str:
    """The drawing status of a report status: "notes" for a node lowered to one operator
    with notes, the status itself where it is drawn, else "fallback"."""
    if status == "lowered" and has_notes:
        return "notes"
    return status if status in STATUS_STYLES else "fallback"


def status_for(record: Any | None, *, is_dml: bool, has_notes: bool) -> str:
    """The drawing status of a node whose original node has ``record`` in the report."""
    if record is None:
        return "lowered" if is_dml else "fallback"
    status = str(record.status)
    if not is_dml and status in ("lowered", "decomposed"):
        return "fallback"  # an ONNX node of a graph that has a report runs on the fallback
    return drawn_status(status, has_notes or bool(record.notes))


def group_key(op_type: str, name: str, node_id: int | None = None) -> str:
    """What ties an original node to the nodes it became: its id, where known, else its op
    type and name."""
    return f"n{node_id}" if node_id is not None else f"{op_type}\x1f{name}"


def record_group(record: Any) -> str:
    """``group_key`` of a report record."""
    return group_key(record.op_type, record.name, getattr(record, "node_id", None))


# ----------------------------------------------------------------------------- nodes


def describe_node(
    graph: Graph, node: Node, index: ReportIndex, *, original: bool = False
) -> NodeView:
    """The view of one node. ``original``: the node is in the graph given to ``lower``, so
    its status is what became of it, not how it runs."""
    record = index.get(node)
    is_dml = isinstance(node.op, OperatorDesc)
    notes = tuple(dict.fromkeys([*node.notes, *(record.notes if record is not None else ())]))
    if original and record is not None:
        status = drawn_status(str(record.status), bool(record.notes))
    elif original:
        status = "fallback"
    else:
        status = status_for(record, is_dml=is_dml, has_notes=bool(node.notes))
    if is_dml:
        desc: OperatorDesc = node.op
        title = desc.name
        origin = f"{node.provenance.op_type} {node.provenance.name!r}"
        fields = descriptor_fields(desc)
        tensors = tuple(_dml_tensor_rows(graph, node, desc))
    else:
        op = node.op
        title = op.name if isinstance(op, OnnxOp) else type(op).__name__
        origin = ""
        attrs = op.attrs if isinstance(op, OnnxOp) else {}
        fields = tuple((key, value_text(value)) for key, value in attrs.items())
        tensors = tuple(_onnx_tensor_rows(graph, node))
    return NodeView(
        node_id=node.id,
        title=title,
        name=node.name,
        origin=origin,
        status=status,
        group=group_key(node.provenance.op_type, node.provenance.name,
                        getattr(record, "node_id", None)),
        fields=fields,
        tensors=tensors,
        notes=notes,
        is_dml=is_dml,
    )


def _dml_tensor_rows(graph: Graph, node: Node, desc: OperatorDesc) -> Iterable[TensorRow]:
    ins, outs = iter(node.inputs), iter(node.outputs)
    for label, view, is_output in desc.tensor_fields():
        name = next(outs if is_output else ins, "")
        info = graph.tensors.get(name) if name else None
        yield TensorRow(
            port=label,
            tensor=name,
            ir_type=tensor_text(info) if info is not None else "?",
            view=desc_text(view),
            constant=info is not None and info.is_constant,
        )


def _onnx_tensor_rows(graph: Graph, node: Node) -> Iterable[TensorRow]:
    for kind, names in (("in", node.inputs), ("out", node.outputs)):
        for port, name in enumerate(names):
            if not name:
                continue
            info = graph.tensors.get(name)
            yield TensorRow(
                port=f"{kind}{port}",
                tensor=name,
                ir_type=tensor_text(info) if info is not None else "?",
                constant=info is not None and info.is_constant,
            )


def describe_graph(
    graph: Graph, records: Sequence[Any] | None = None, *, original: bool = False,
    only: Collection[int] | None = None,
) -> list[NodeView]:
    """Views of every node (or of the nodes whose ids are in ``only``: a focused drawing
    describes no other) in topological order (deterministic: ties broken by node id). A
    graph never lowered (``never_lowered``) has its ONNX nodes ``NOT_LOWERED``."""
    origins = None if original else getattr(graph, "origin_ids", None)
    records = report_of(graph) if records is None else records
    index = ReportIndex(records, origins)
    plain = not original and never_lowered(graph, records)
    views = [dataclasses.replace(view, status=NOT_LOWERED) if plain and not view.is_dml else view
             for view in (describe_node(graph, node, index, original=original)
                          for node in graph.topological_order()
                          if only is None or node.id in only)]
    pieces: dict[str, list[int]] = {}
    for position, view in enumerate(views):
        if view.is_dml:
            pieces.setdefault(view.group, []).append(position)
    for positions in pieces.values():
        if len(positions) > 1:
            n = len(positions)
            for k, position in enumerate(positions, 1):
                view = views[position]
                views[position] = dataclasses.replace(
                    view, part=(k, n), origin=f"{view.origin} ({k} of {n})"
                )
    return views


def status_counts(records: Iterable[Any]) -> dict[str, int]:
    """Original nodes per report status, in STATUSES order, zeros left out."""
    counts: dict[str, int] = {}
    for record in records:
        status = str(record.status)
        counts[status] = counts.get(status, 0) + 1
    return {s: counts[s] for s in STATUSES if s in counts} | {
        s: n for s, n in counts.items() if s not in STATUSES
    }
