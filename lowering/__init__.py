"""Lowering of ONNX Slice, Concat and Pad to DirectML descriptors at a target feature level.

``lower(graph, feature_level)`` runs the passes of ``lowering.passes`` on a copy of the graph
and returns a ``LoweredGraph`` whose ``report()`` says, for every node of the model, what it
became and why.
"""

from __future__ import annotations

import os

from dmlgraph import collector
from dmlgraph.dml.enums import FeatureLevel
from dmlgraph.errors import DmlgraphError, UnsupportedError
from dmlgraph.ir import Graph, OnnxOp
from lowering.passes import DEFAULT_PASSES, Context, Origin, PassManager
from lowering.report import LoweredGraph, NodeReport, Status

__all__ = ["LoweredGraph", "NodeReport", "Status", "lower"]


#: Set to 1 to check the IR invariants after every lowering pass by default (the tests do).
VERIFY_EACH_VARIABLE = "DMLGRAPH_VERIFY_EACH"


def lower(
    graph: Graph,
    feature_level: FeatureLevel | str | int = "6_4",
    *,
    verify_each: bool | None = None,
) -> LoweredGraph:
    """Lower every Slice, Concat and Pad that DirectML can express at ``feature_level``.

    The input graph is not modified. Every descriptor in the result validates at the level;
    nodes that cannot be lowered stay ONNX nodes, with the reason in the report.
    ``verify_each``: check the IR invariants after every pass, not only after the last (see
    ``PassManager``); None reads ``DMLGRAPH_VERIFY_EACH``.
    """
    if not isinstance(graph, Graph):
        raise DmlgraphError(
            f"lower takes a Graph (dmlgraph.load(model) makes one), not {type(graph).__name__}"
        )
    if verify_each is None:
        verify_each = os.environ.get(VERIFY_EACH_VARIABLE, "") == "1"
    elif not isinstance(verify_each, bool):  # "no" is true
        raise DmlgraphError(f"verify_each is True, False or None, not {verify_each!r}")
    with collector.paused():  # first: an allocation here would scan all of load's objects
        try:
            level = FeatureLevel.parse(feature_level)
        except ValueError as exc:
            raise UnsupportedError(f"feature level: {exc}") from None
        return _lower(graph, level, verify_each)


def _lower(graph: Graph, level: FeatureLevel, verify_each: bool) -> LoweredGraph:
    folded = graph.is_folded
    if not folded:  # built by hand or edited since ``load``: folding reads it whole first
        graph.validate()
    lowered = LoweredGraph.from_graph(graph, level)
    ctx = Context(folded=folded, verify=verify_each)
    for node in lowered.nodes:
        if type(node.op) is not OnnxOp and not isinstance(node.op, OnnxOp):  # (no call: most)
            raise UnsupportedError(
                f"{graph.describe(node)}: the graph is already lowered; lower the imported graph"
            )
        ctx.origins[node.id] = Origin(node)
        ctx.origin_of[node.id] = node.id
    PassManager(tuple(p() for p in DEFAULT_PASSES), verify_each).run(lowered, ctx)
    lowered.mark_validated()  # the passes end with Verify: every descriptor at ``level``
    lowered.set_lowered_records(_records(lowered, ctx))
    lowered.origin_ids = dict(ctx.origin_of)
    lowered.merged_origin_ids = {
        node_id: frozenset(origins) for node_id, origins in ctx.computes_for.items()
    }
    lowered.lowered_from_source()
    return lowered


def _records(lowered: LoweredGraph, ctx: Context) -> list[NodeReport]:
    made: dict[int, list[str]] = {}
    for node in lowered.topological_order():
        if type(node.op) is not OnnxOp and not isinstance(node.op, OnnxOp):  # (no call: most)
            made.setdefault(ctx.origin_of[node.id], []).append(node.op.name)
    records = []
    for origin_id, origin in ctx.origins.items():
        ops = tuple(made.get(origin_id, ()))
        status = origin.status or Status.FALLBACK
        if status in (Status.LOWERED, Status.DECOMPOSED) and not ops:
            # Simplify merged every descriptor it had into another node's, which computes
            # its output: nothing of its own is left (its notes name that node)
            status = Status.ELIMINATED
        elif status is Status.LOWERED and len(ops) != 1:
            status = Status.DECOMPOSED
        records.append(
            NodeReport(
                origin.node.name,
                origin.node.op_type,
                status,
                ops,
                tuple(dict.fromkeys(origin.notes)),
                node_id=origin_id,
            )
        )
    return records
