"""``dmlgraph inspect``: what the importer made of a model, in a few lines a person reads.

Graph inputs and outputs with their shapes, op counts before and after folding, and for every
Slice, Concat and Pad its canonical parameters (constants, or why they are run-time values),
and every If, Loop or Scan whose subgraphs hold some (``lower`` lowers and lists those).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from dmlgraph.canonical import LOWERED_OPS, PARAMETER_PORTS
from dmlgraph.folding import fold
from dmlgraph.importer import load
from dmlgraph.ir import Graph, Node, dims_text
from dmlgraph.printable import values_text, visible
from dmlgraph.subgraphs import held_counts, held_note


def _shape(graph: Graph, name: str) -> str:
    """``x: float32[N,?,4]`` as ``dims_text`` writes shapes: an unknown rank showed as
    ``[?]``, a rank-1 shape there, and a size without a name as ``None``."""
    info = graph.tensor(name)
    return f"{name}: {info.dtype}{dims_text(info.shape)}"


def _value(graph: Graph, tensor: str) -> str:
    if not tensor:
        return "-"
    data = graph.constant(tensor)
    if data is None:
        return "run-time"
    if data.size <= 16:  # as Python lists them: array2string pads "[-2, 2]" for the sign
        return values_text(np.asarray(data))
    return np.array2string(np.asarray(data), separator=", ", threshold=16).replace("\n", "")


def _parameters(graph: Graph, node: Node) -> str:
    ports = PARAMETER_PORTS.get(node.op_type, {})
    parts = [f"{field}={_value(graph, node.input(port))}" for field, port in ports.items()]
    if "mode" in node.op.attrs:
        parts.insert(0, f"mode={node.op.attrs['mode']}")
    if "axis" in node.op.attrs:
        parts.insert(0, f"axis={node.op.attrs['axis']}")
    return " ".join(parts)


def describe(model: str | Path, input_shapes: Mapping[str, Sequence[int]] | None = None) -> str:
    """The inspect report of a model file."""
    graph = load(model, input_shapes, fold=False)
    before = Counter(n.op_type for n in graph.nodes)
    fold(graph)  # the same graph, folded: read, check and infer once
    graph.validate()
    after = Counter(n.op_type for n in graph.nodes)
    lines = [f"model: {model}"]
    lines += [f"  input  {_shape(graph, name)}" for name in graph.inputs]
    lines += [f"  output {_shape(graph, name)}" for name in graph.outputs]
    lines.append(
        f"nodes: {sum(before.values())} after import (Constant nodes become constants), "
        f"{sum(after.values())} after folding"
    )
    for op in sorted(set(before) | set(after)):
        lines.append(f"  {op:<20} {before[op]:>5} -> {after[op]:>5}")
    order = graph.topological_order()
    targets = [n for n in order if n.op_type in LOWERED_OPS]
    # an If, Loop or Scan holding some: counted and named, as `lower` lists it, not hidden
    holders = [(n, note) for n in order if (note := held_note(n.op))]
    held = sum(held_counts(n.op).total() for n, _ in holders)
    lines.append(f"Slice/Concat/Pad after folding: {len(targets)}" + (
        f" (and {held} in the subgraphs of {len(holders)} control-flow node(s), listed)"
        if holders else ""))
    for node in targets:
        name = node.name or "(unnamed)"  # as lower and run name it
        lines.append(f"  {node.op_type:<6} {name}: {_parameters(graph, node)}")
        lines += [f"         note: {note}" for note in node.notes]
    for node, note in holders:
        lines.append(f"  {node.op_type:<6} {node.name or '(unnamed)'}: {note}")
    return "\n".join(visible(line) for line in lines)  # names are the model's text
