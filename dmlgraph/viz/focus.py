"""A focused drawing: the nodes near a few named ones, and the edges that cross its border.

A whole drawing of a 100k-node graph takes most of a minute and makes an HTML page no browser
shows usefully; an engineer debugging one Pad wants it and what it became. ``focus_on``
selects the nodes of the imported graph within ``depth`` edges of the named nodes (or of the
nodes making and reading a named tensor), direction ignored; a drawing keeps the nodes whose
origin (``LoweredGraph.origin_ids``; a plain graph's node is its own) is selected, and draws
each edge to or from a node left out to a stub box (``cut_edges``), so the cut shows.
"""

from __future__ import annotations

import difflib
import numbers
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import onnx

from dmlgraph.errors import counted
from dmlgraph.ir import Graph, Node, OnnxOp, Subgraph
from dmlgraph.subgraphs import holder_label
from dmlgraph.viz.dot import VizError, check_drawable

#: How far a focus reaches when no depth is given, in edges.
DEFAULT_DEPTH = 2
#: The most close names an unknown name's error offers.
SUGGESTIONS = 5
#: Cut inputs of one node drawn as a box each; the rest share one "... N more inputs" box.
STUB_INPUTS = 3


@dataclass(frozen=True)
class Focus:
    """What a focused drawing keeps: ``nodes``, ids of the imported graph's nodes, selected
    by ``names`` and ``depth`` out of ``total``."""

    names: tuple[str, ...]
    depth: int
    nodes: frozenset[int]
    total: int

    @property
    def heading(self) -> str:
        """What a focused page and drawing say at the top."""
        named = ", ".join(self.names)
        return f"focus: {named}, depth {self.depth}: {len(self.nodes)} of {self.total} nodes"

    def kept(self, graph: Graph) -> frozenset[int]:
        """The ids of ``graph``'s nodes whose origin is selected: a lowered graph's by its
        ``origin_ids``, and by ``merged_origin_ids`` (a selected node whose descriptors
        Simplify merged into another's has no node of its own: the other computes its
        output); the imported graph's (or any other plain graph's) by their own ids."""
        origins = getattr(graph, "origin_ids", None)
        if origins is None:
            return frozenset(node.id for node in graph.nodes if node.id in self.nodes)
        merged: dict[int, frozenset[int]] = getattr(graph, "merged_origin_ids", {})
        return frozenset(
            node.id for node in graph.nodes
            if origins.get(node.id) in self.nodes
            or not self.nodes.isdisjoint(merged.get(node.id, ()))
        )

    def keeps_record(self, record: Any) -> bool:
        """Whether a lowering report's record is of a selected node (one folded at import,
        with no id, is of none)."""
        return getattr(record, "node_id", None) in self.nodes


def focus_on(graph: Graph, names: str | Iterable[str], depth: int = DEFAULT_DEPTH) -> Focus:
    """The nodes of ``graph`` (the imported graph, as given to ``lower``) named by ``names``
    (node names or tensor names: a tensor names its producer and its readers) and every node
    within ``depth`` edges of them, direction ignored. An unknown name is a VizError naming
    it and the closest names the graph has."""
    check_drawable("focus_on", {"graph": graph}, None)
    wanted = _names(names)
    depth = _depth(depth)
    by_name: dict[str, list[int]] = {}
    for node in graph.nodes:
        by_name.setdefault(node.name, []).append(node.id)
    seeds: set[int] = set()
    for name in wanted:
        seeds |= _named(graph, by_name, name)
    return Focus(wanted, depth, frozenset(_within(graph, seeds, depth)), len(graph))


def _names(names: object) -> tuple[str, ...]:
    if isinstance(names, str):
        names = (names,)
    if isinstance(names, (bytes, bytearray)) or not isinstance(names, Iterable):
        raise VizError(f"focus: names of nodes or tensors, not {type(names).__name__}")
    given = tuple(names)
    for name in given:
        if not isinstance(name, str):
            raise VizError(f"focus: names of nodes or tensors are text, not "
                           f"{type(name).__name__} ({name!r})")
    if not given:
        raise VizError("focus names no node or tensor; name one, or leave focus out to draw "
                       "every node")
    return tuple(dict.fromkeys(given))


def _depth(depth: object) -> int:
    if isinstance(depth, bool) or not isinstance(depth, numbers.Integral) or depth < 0:
        raise VizError(f"depth: a whole number of edges >= 0, not {depth!r}")
    return int(depth)


def _named(graph: Graph, by_name: dict[str, list[int]], name: str) -> set[int]:
    """The nodes ``name`` selects: the nodes so named, the tensor's producer and readers."""
    found = set(by_name.get(name, ())) if name else set()
    if name in graph.tensors:
        producer = graph.producer(name)
        if producer is not None:
            found.add(producer.id)
        found.update(node.id for node, _ in graph.consumers(name))
        if not found:
            raise VizError(f"focus {name!r}: no node of the imported graph makes or reads "
                           "this tensor, so it selects nothing; name a node or a tensor a "
                           "node reads")
    if not found:
        raise VizError(_unknown(graph, by_name, name))
    return found


def _unknown(graph: Graph, by_name: dict[str, list[int]], name: str) -> str:
    """Why ``name`` names nothing: folded at import, inside a subgraph, or unknown (with
    the closest names)."""
    start = f"focus {name!r}: "
    for removed in graph.removed:
        if removed.provenance.name == name and name:
            return (start + f"that node ({removed.provenance.op_type}) was {removed.status} at "
                    "import, so the imported graph no longer holds it (the report lists it); "
                    "focus on a node that reads its result")
    holder = _holder_of(graph, name)
    if holder is not None:
        return (start + f"it is inside {holder}, which a drawing shows as one node; focus on "
                "that node")
    close = _close_names(name, [n for n in by_name if n] + list(graph.tensors))
    offered = (f"close matches: {', '.join(map(repr, close))}" if close
               else "no name of it is close (`dmlgraph lower --all` lists the nodes)")
    return start + f"no node or tensor of the imported graph has this name; {offered}"


def _close_names(name: str, known: Iterable[str]) -> list[str]:
    """Up to ``SUGGESTIONS`` names of ``known`` like ``name``, case ignored: those holding
    it first, shortest first ("pad" finds "/e/layers.0/Pad", which difflib's measure finds
    too unlike it, as an exporter's paths are), then the best by difflib's measure ("pad_1"
    finds "/Pad_1"); ties in name order."""
    folded: dict[str, list[str]] = {}
    for candidate in known:
        folded.setdefault(candidate.casefold(), []).append(candidate)
    wanted = name.casefold()
    holding = sorted((c for c in folded if wanted in c), key=lambda c: (len(c), c))
    close = sorted(
        difflib.get_close_matches(wanted, folded, n=SUGGESTIONS),
        key=lambda c: (-difflib.SequenceMatcher(None, c, wanted).ratio(), c),
    )
    found = dict.fromkeys(n for c in holding[:SUGGESTIONS] + close for n in folded[c])
    return list(found)[:SUGGESTIONS]


def _holder_of(graph: Graph, name: str) -> str | None:
    """"If '/If' then_branch" where a node or tensor of that subgraph (at any depth) is
    called ``name``: a name only its subgraph knows."""
    for node in graph.nodes:
        if not isinstance(node.op, OnnxOp) or not node.op.holds_subgraphs:
            continue
        for attr, sub in _subgraph_attrs(node.op):
            if name in _proto_names(onnx.GraphProto.FromString(sub.data)):
                return f"{node.op_type} {holder_label(node.name, node.outputs)} {attr}"
    return None


def _subgraph_attrs(op: OnnxOp) -> Iterator[tuple[str, Subgraph]]:
    for attr, value in op.attrs.items():
        for sub in value if isinstance(value, tuple) else (value,):
            if isinstance(sub, Subgraph):
                yield attr, sub


def _proto_names(body: onnx.GraphProto) -> set[str]:
    names: set[str] = set()
    for node in body.node:
        names.add(node.name)
        names.update(node.output)
        for attribute in node.attribute:
            subs = [*attribute.graphs, *([attribute.g] if attribute.HasField("g") else [])]
            for sub in subs:
                names |= _proto_names(sub)
    names.discard("")
    return names


def _within(graph: Graph, seeds: set[int], depth: int) -> set[int]:
    """``seeds`` and every node at most ``depth`` edges from one, direction ignored."""
    succ, pred = graph.nx.succ, graph.nx.pred
    seen = set(seeds)
    frontier = seeds
    for _ in range(depth):
        reached = {m for n in frontier for near in (succ[n], pred[n]) for m in near} - seen
        if not reached:
            break
        seen |= reached
        frontier = reached
    return seen


# ----------------------------------------------------------------------------- the cut


@dataclass(frozen=True)
class Cut:
    """The edges of one drawn node that cross the focus's border: ``inputs`` (port, tensor)
    made by nodes left out, each drawn as a box naming the tensor; ``more`` the rest of
    them, drawn as one "... N more inputs" box; ``readers`` (tensor, count): outputs read by
    nodes left out."""

    inputs: tuple[tuple[int, str], ...]
    more: tuple[tuple[int, str], ...]
    readers: tuple[tuple[str, int], ...]


def cut_edges(graph: Graph, node: Node, kept: Collection[int]) -> Cut:
    """The edges of ``node`` (drawn) to and from nodes of ``graph`` not in ``kept``."""
    cut = []
    for port, name in enumerate(node.inputs):
        producer = graph.producer(name) if name else None
        if producer is not None and producer.id not in kept:
            cut.append((port, name))
    readers = []
    for name in dict.fromkeys(out for out in node.outputs if out):
        outside = {reader.id for reader, _ in graph.consumers(name) if reader.id not in kept}
        if outside:
            readers.append((name, len(outside)))
    shown = STUB_INPUTS if len(cut) > STUB_INPUTS + 1 else len(cut)  # never "1 more input"
    return Cut(tuple(cut[:shown]), tuple(cut[shown:]), tuple(readers))


def more_inputs_text(count: int) -> str:
    return f"\u2026 {count} more inputs"


def readers_text(count: int) -> str:
    return f"read by {counted(count, 'more node')}"


def producer_text(graph: Graph, name: str) -> str:
    """Who makes a cut input, for its box's tooltip."""
    producer = graph.producer(name)
    return f"made by {producer.label}, outside the focus" if producer else "outside the focus"
