"""What ``dmlgraph lower`` prints: the per-node report as a table, and the lowered graph as JSON.

The JSON form is for machines: the feature level, the report records, and every node in
topological order, DirectML nodes as their DxDispatch dispatchable (``desc.to_json()``), ONNX
nodes by op type, each with its tensors (name, dtype, shape) and notes.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from dmlgraph.canonical import LOWERED_OPS
from dmlgraph.ir import Graph, OnnxOp
from dmlgraph.printable import visible
from dmlgraph.subgraphs import HOLDS
from lowering.report import LoweredGraph, Status

#: The op types the report lists unless every node is asked for.
TARGETS = LOWERED_OPS
_STYLE = {
    Status.LOWERED: "green",
    Status.DECOMPOSED: "cyan",
    Status.FOLDED: "blue",
    Status.ELIMINATED: "magenta",
    Status.FALLBACK: "yellow",
}


def _tensor(graph: Graph, name: str) -> dict[str, Any]:
    info = graph.tensor(name)
    return {
        "name": name,
        "dtype": None if info.dtype is None else str(info.dtype),
        "shape": None if info.shape is None else list(info.shape),
        "constant": info.is_constant,
    }


def lowered_to_json(lowered: LoweredGraph) -> dict[str, Any]:
    nodes = []
    for node in lowered.topological_order():
        entry: dict[str, Any] = {
            "name": node.name,
            "from": node.provenance.op_type,
            "inputs": [_tensor(lowered, x) for x in node.inputs if x],
            "outputs": [_tensor(lowered, y) for y in node.outputs if y],
            "notes": list(node.notes),
        }
        if isinstance(node.op, OnnxOp):
            entry["onnx"] = node.op.op_type
        else:
            entry["dml"] = node.op.to_json()
        nodes.append(entry)
    return {
        "feature_level": lowered.feature_level.full_name,
        "inputs": [_tensor(lowered, x) for x in lowered.inputs],
        "outputs": [_tensor(lowered, y) for y in lowered.outputs],
        "report": [
            {
                "name": r.name,
                "op_type": r.op_type,
                "status": r.status.value,
                "dml_ops": list(r.dml_ops),
                "notes": list(r.notes),
                "at_import": r.at_import,
            }
            for r in lowered.report()
        ],
        "nodes": nodes,
    }


def print_report(lowered: LoweredGraph, console: Console, *, every_node: bool = False) -> None:
    """A status summary, then one row per Slice/Concat/Pad (or per node) with its notes."""
    records = [r for r in lowered.report() if every_node or r.op_type in TARGETS]
    counts = Counter(r.status for r in records)
    summary = ", ".join(f"{counts[s]} {s.value}" for s in Status if counts[s])
    scope = "nodes" if every_node else "Slice/Concat/Pad nodes"
    console.print(  # a model with none says so, not "0 ... nodes: " and nothing
        f"[bold]{lowered.feature_level.full_name}[/bold]: {len(records)} {scope}"
        + (f": {summary}" if summary else "")
    )
    if not every_node:  # control flow holding some: its row says they run with it
        holders = [r for r in lowered.report() if r.op_type not in TARGETS
                   and any(note.startswith(HOLDS) for note in r.notes)]
        if holders:
            console.print(f"(and {len(holders)} control-flow node(s) holding more, listed)")
            records += holders
    hidden = [r for r in records if r.at_import]
    if hidden and not every_node:
        console.print(f"({len(hidden)} folded at import are not listed; --all lists every node)")
        records = [r for r in records if not r.at_import]
    table = Table(show_lines=False, expand=False)
    for column in ("node", "op", "status", "DirectML", "notes"):
        table.add_column(column, overflow="fold")
    for r in records:
        ops = Counter(op.removeprefix("DML_OPERATOR_") for op in r.dml_ops)
        made = ", ".join(f"{op} x{n}" if n > 1 else op for op, n in ops.items())
        style = _STYLE[r.status]
        table.add_row(  # names and notes are the model's text: not markup, nor control codes
            escape(visible(r.name or "(unnamed)")), escape(visible(r.op_type)),
            f"[{style}]{r.status.value}[/{style}]", made,
            escape("\n".join(visible(note) for note in r.notes)),
        )
    if records:  # every node folded at import: no rows, so no empty table's frame
        console.print(table)
    dml = Counter(n.op.name for n in lowered.nodes if not isinstance(n.op, OnnxOp))
    if dml:
        listed = ", ".join(f"{n} {op}" for op, n in sorted(dml.items()))
        console.print(f"descriptors: {listed}")
