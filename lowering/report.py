"""The lowered graph and its report: what became of every node of the original model."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from dmlgraph.dml.enums import FeatureLevel
from dmlgraph.ir import Graph


class Status(str, enum.Enum):
    """What lowering did with one original ONNX node."""

    LOWERED = "lowered"  # became one DirectML operator
    DECOMPOSED = "decomposed"  # became several DirectML operators (and maybe constants)
    FOLDED = "folded"  # became a constant (folded at import, or an empty result)
    # a no-op (its output is its input), nothing reads its result, or another node's
    # descriptors compute its output (Simplify merged them)
    ELIMINATED = "eliminated"
    FALLBACK = "fallback"  # stays an ONNX node (in part or whole); the notes say why

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class NodeReport:
    """One original ONNX node: its name, op type, status, the DML operators it became (C
    names, in emission order) and the notes that explain the choice or the fallback."""

    name: str
    op_type: str
    status: Status
    dml_ops: tuple[str, ...]
    notes: tuple[str, ...]
    at_import: bool = False  # folded by the importer, before lowering
    node_id: int | None = None  # its id in the graph given to ``lower`` (None: folded at import)


def record_json(record: NodeReport) -> dict[str, Any]:
    """One report record as ``lower --json`` and ``check --json`` both write it (one form:
    ``check``'s lacked ``at_import``). ``node_id`` ties it to the lowered nodes whose
    ``origin`` it is, which names cannot where nodes are unnamed."""
    return {
        "name": record.name,
        "op_type": record.op_type,
        "status": str(record.status),
        "dml_ops": list(record.dml_ops),
        "notes": list(record.notes),
        "at_import": bool(getattr(record, "at_import", False)),  # records made by hand lack
        "node_id": getattr(record, "node_id", None),  # these two
    }


class LoweredGraph(Graph):
    """A Graph after ``lower``: DML descriptor nodes plus any ONNX nodes left for fallback.

    ``feature_level`` is the level every descriptor was validated at; ``report()`` has one
    record per node of the imported model, in model order.
    """

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.feature_level: FeatureLevel = FeatureLevel.L6_4
        self.set_lowered_records([])
        self.origin_ids: dict[int, int] = {}
        self.merged_origin_ids: dict[int, frozenset[int]] = {}
        self.validated_at: tuple[int, FeatureLevel] | None = None
        self._source: tuple[Graph, tuple[Any, ...], tuple[Any, ...] | None] | None = None
        #: the NCHWc decision of the model this graph lowers (``providers.
        #: layout_rewrite_safe``) where its source alone would not tell it: a graph a run
        #: lowered again, whose source has lost the sizes the decision reads
        self.layout_decided: bool | None = None
        #: whether this graph is an If's, Loop's or Scan's subgraph typed by the sizes that
        #: arrived as it ran (``backends.numpy.control``), not by inference of the model
        self.typed_on_arrival = False

    def mark_validated(self) -> None:
        """Record that every descriptor validates at ``feature_level`` now (``lower`` checked
        them): ``descriptors_valid`` holds until the graph changes."""
        self.validated_at = (self.version, self.feature_level)

    def descriptors_valid(self, level: FeatureLevel) -> bool:
        """Whether every descriptor is known to validate at ``level``: ``lower`` validated
        them there and the graph has not changed since (descriptors are frozen, and any
        change of a node bumps ``version``), so a backend need not validate them again."""
        return self.validated_at == (self.version, level)

    @classmethod
    def from_graph(cls, graph: Graph, feature_level: FeatureLevel) -> LoweredGraph:
        lowered = cls.__new__(cls)
        lowered.__dict__.update(graph.copy().__dict__)
        lowered.track_edits(False)  # the passes' rewrites keep values; stale marks stay
        lowered.feature_level = feature_level
        lowered.set_lowered_records([])
        lowered.validated_at = None
        #: lowered node id -> the id of the node of the given graph it came from
        lowered.origin_ids = {}
        #: lowered node id -> the ids of the other nodes of the given graph whose output it
        #: computes too: Simplify merged their descriptors into it (same operator, same
        #: tensors), so they have no node of their own
        lowered.merged_origin_ids = {}
        lowered._source = (graph, _state(graph), None)
        lowered.layout_decided = None
        lowered.typed_on_arrival = False
        return lowered

    def lowered_from_source(self) -> None:
        """Record that the graph is, as it is now, its source lowered (``lower``'s last
        step): ``source_graph`` holds until either changes."""
        if self._source is not None:
            self._source = (*self._source[:2], _state(self))

    @property
    def source_graph(self) -> Graph | None:
        """The graph this one was lowered from, as it was then; None once either has changed
        (or for a graph not made by ``lower``). A backend lowers it again where a tensor's
        size at run time proves onnx's inference wrong (``backends.numpy.runtime.resized``);
        the outputs of the two correspond by position, so an edit of this one's (outputs
        reordered) would have swapped them."""
        if self._source is None:
            return None
        graph, state, lowered = self._source
        return graph if _state(graph) == state and _state(self) == lowered else None

    def set_lowered_records(self, records: list[NodeReport]) -> None:
        """The records of the nodes ``lower`` saw; those of the nodes the importer folded
        follow them in ``records``, made on first use (a model's shape chains are hundreds of
        nodes, and most callers never ask)."""
        self._lowered_records = records
        self._records: list[NodeReport] | None = None

    @property
    def records(self) -> list[NodeReport]:
        if self._records is None:
            self._records = self._lowered_records + [
                NodeReport(r.provenance.name, r.provenance.op_type, Status(r.status), (),
                           (r.note,), at_import=True)
                for r in self.removed
            ]
        return self._records

    @records.setter
    def records(self, records: list[NodeReport]) -> None:
        self._records = list(records)

    def copy(self) -> LoweredGraph:
        other = LoweredGraph.from_graph(super().copy(), self.feature_level)
        other.set_lowered_records(list(self._lowered_records))
        other.origin_ids = dict(self.origin_ids)
        other.merged_origin_ids = dict(self.merged_origin_ids)
        if self._records is not None:  # made, or set by hand: keep them as they are
            other.records = self._records
        if self.descriptors_valid(self.feature_level):  # the same descriptors
            other.mark_validated()
        return other

    def report(self) -> list[NodeReport]:
        return list(self.records)


def _state(graph: Graph) -> tuple[Any, ...]:
    """What changes when a graph does: its version, inputs and outputs."""
    return (graph.version, tuple(graph.inputs), tuple(graph.outputs))
