"""What ``dmlgraph lower`` prints: the per-node report as a table, and the lowered graph as JSON.

The JSON form is for machines: the feature level, the report records, and every node in
topological order, DirectML nodes as their DxDispatch dispatchable (``desc.to_json()``), ONNX
nodes by op type, each with its tensors (name, dtype, shape), notes and ``origin``: the
``node_id`` of the report record it came from (null for none).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from dmlgraph.canonical import LOWERED_OPS
from dmlgraph.ir import Graph, OnnxOp, TensorInfo, dims_text
from dmlgraph.printable import counted, shown, shown_note, visible
from dmlgraph.subgraphs import HOLDS
from lowering.held import every_held, held_lowerings
from lowering.report import LoweredGraph, Status, record_json

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
    return {**_typed(info), "name": name, "constant": info.is_constant}


def lowered_to_json(lowered: LoweredGraph, within: str = "") -> dict[str, Any]:
    """The lowered graph, and under ``subgraphs`` each If branch and Loop or Scan body
    holding a Slice, Concat or Pad lowered by itself (``lowering.held``), the same way."""
    nodes = []
    for node in lowered.topological_order():
        entry: dict[str, Any] = {
            "name": node.name,
            "from": node.provenance.op_type,
            "inputs": [_tensor(lowered, x) for x in node.inputs if x],
            "outputs": [_tensor(lowered, y) for y in node.outputs if y],
            "notes": list(node.notes),
            "origin": lowered.origin_ids.get(node.id),  # its report record's node_id
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
        "report": [record_json(r) for r in lowered.report()],
        "nodes": nodes,
        "subgraphs": [
            {
                "path": held.path,
                "node": held.node,
                "op_type": held.op_type,
                "attribute": held.attribute,
                "inputs": [_typed(info) for info in held.typed_as],
                "problem": held.problem or None,
                "lowered": None if held.lowered is None
                else lowered_to_json(held.lowered, f"{held.path}: "),
            }
            for held in held_lowerings(lowered, within)
        ],
    }


def _typed(info: TensorInfo) -> dict[str, Any]:
    return {
        "name": info.name,
        "dtype": None if info.dtype is None else str(info.dtype),
        "shape": None if info.shape is None else list(info.shape),
    }


def print_held(lowered: LoweredGraph, console: Console, *, every_node: bool = False) -> None:
    """Each If branch and Loop or Scan body holding a Slice, Concat or Pad, lowered by
    itself with its inputs typed as the enclosing graph types them (``lowering.held``),
    reported as the main graph is; the subgraphs within them after each."""
    for held in every_held(lowered):
        typed = ", ".join(
            f"{info.name} {info.dtype}" + ("" if info.shape is None else dims_text(info.shape))
            for info in held.typed_as
        )
        trip = {
            "Loop": ", carried values as the Loop's initial ones (its first trip)",
            "Scan": ", state variables as the initial ones and each scan input's slice "
                    "without its scan axis (its first step)",
        }.get(held.op_type, "")
        console.print()
        console.print(
            f"[bold]{escape(visible(held.path))}[/bold], lowered by itself, its inputs typed as "
            f"the enclosing graph types them{trip}: {escape(visible(typed or 'none'))}"
        )
        if held.lowered is None:
            console.print(f"not listed: {escape(visible(held.problem))}")
        else:
            print_report(held.lowered, console, every_node=every_node)


#: The report's columns, in order.
COLUMNS = ("node", "op", "status", "DirectML", "notes")
#: Rows past which the report prints as plain aligned text, not a rich table: rich lays a
#: table out at about 1.5 ms a row (a 5,000-node chain's took 9 of ``lower``'s 10 s; a
#: 100k-node graph's would take minutes), plain text at about 10 µs.
PLAIN_ROWS_ABOVE = 500


def _row(record: Any) -> tuple[str, str, str, str, tuple[str, ...]]:
    """One report row as text: name, op type, status, descriptors made (``SLICE x3, JOIN``)
    and note lines; names and notes are the model's text, their control codes shown, a very
    long one shortened as a drawing shortens it (``printable.shown``; the JSON keeps it)."""
    made = counted(op.removeprefix("DML_OPERATOR_") for op in record.dml_ops)
    notes = tuple(visible(shown_note(note)) for note in record.notes)  # a newline: \x0a
    return (visible(shown(record.name or "(unnamed)")), visible(shown(record.op_type)),
            record.status.value, made, notes)


def _plain_table(rows: list[tuple[str, str, str, str, tuple[str, ...]]]) -> str:
    """The rows as text in aligned columns, a note per line under the notes column."""
    widths = [max(len(column), *(len(row[k]) for row in rows))
              for k, column in enumerate(COLUMNS[:4])]
    indent = " " * (sum(widths) + 2 * len(widths))

    def line(cells: tuple[str, ...], note: str) -> str:
        return ("".join(c.ljust(w + 2) for c, w in zip(cells, widths)) + note).rstrip()

    lines = [line(COLUMNS[:4], COLUMNS[4])]
    for *cells, notes in rows:
        lines.append(line(tuple(cells), notes[0] if notes else ""))
        lines.extend((indent + note).rstrip() for note in notes[1:])
    return "\n".join(lines)


def aligned_text(columns: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A table past ``PLAIN_ROWS_ABOVE`` rows as plain text in aligned columns: ``check``'s
    comparison of 3,000 outputs (every tensor an output, to debug a model) spent 3.4 s of
    its 7.3 in rich's layout."""
    widths = [max(len(column), *(len(row[k]) for row in rows)) for k, column in
              enumerate(columns)]
    return "\n".join("".join(c.ljust(w + 2) for c, w in zip(cells, widths)).rstrip()
                     for cells in (columns, *rows))


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
            console.print(f"(and {len(holders)} control-flow node(s) holding more, listed; "
                          "their subgraphs' lowering follows the table)")
            records += holders
    hidden = [r for r in records if r.at_import]
    if hidden and not every_node:
        # as their rows say: a dead node the importer dropped is eliminated, not folded
        gone = Counter(r.status for r in hidden)
        what = " and ".join(f"{gone[s]} {s.value}" for s in Status if gone[s])
        console.print(f"({what} at import are not listed; --all lists every node)")
        records = [r for r in records if not r.at_import]
    rows = [_row(r) for r in records]
    if len(rows) > PLAIN_ROWS_ABOVE:
        console.print(_plain_table(rows), markup=False, highlight=False, emoji=False,
                      soft_wrap=True)
    elif rows:  # every node folded at import: no rows, so no empty table's frame
        table = Table(show_lines=False, expand=False)
        for column in COLUMNS:
            table.add_column(column, overflow="fold")
        for r, (name, op_type, status, made, notes) in zip(records, rows):
            style = _STYLE[r.status]
            table.add_row(  # names and notes are the model's text: not markup
                escape(name), escape(op_type), f"[{style}]{status}[/{style}]", made,
                escape("\n".join(notes)),
            )
        console.print(table)
    dml = Counter(n.op.name for n in lowered.nodes if not isinstance(n.op, OnnxOp))
    if dml:
        listed = ", ".join(f"{n} {op}" for op, n in sorted(dml.items()))
        console.print(f"descriptors: {listed}")
