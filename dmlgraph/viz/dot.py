"""Graphviz DOT of a graph, written by hand: deterministic, every id quoted, HTML-like labels.

Each operation is a table: the DirectML operator (or ONNX op type), the original node, the
descriptor's fields (window offsets, sizes and strides, padding mode and amounts, join axis),
each tensor as the IR tensor it binds and the tensor desc viewing it (sizes before and after
legalization), and the notes. Fill and border say the status (``describe.DRAWN_STYLES``).
Graph inputs and outputs are ellipses, constants read by DML nodes are notes; constants read
by ONNX nodes (weights) appear as rows of their node, so large models stay readable.

The same graph gives byte-identical text: nodes in topological order with ties broken by
node id, constants in order of first use, no timestamps, no absolute paths.
"""

from __future__ import annotations

import shutil
import subprocess
import textwrap
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dmlgraph import files
from dmlgraph.errors import DmlgraphError
from dmlgraph.ir import Graph, Node
from dmlgraph.printable import CONTROL, code, shown, shown_note, visible
from dmlgraph.viz.describe import (
    DRAWN_STYLES,
    NodeView,
    describe_graph,
    display_name,
    never_lowered,
    report_of,
    sentence,
    status_counts,
    tensor_text,
)

if TYPE_CHECKING:
    from dmlgraph.viz.focus import Focus

FONT = "Helvetica"
NOTE_WIDTH = 60  # characters per line of a wrapped note
ARROW = "&#8594;"


class VizError(DmlgraphError):
    """A drawing cannot be written or rendered."""


def quote(text: str) -> str:
    """A DOT escString in double quotes (a tooltip, an edge label): backslash, quote and
    newline escaped, control characters written as ``\\xNN`` (Graphviz fails on NUL, and
    XML allows none of them), a very long text shortened (``shown``). Ids are never user
    text: DOT does not unescape them, so no quoting could show every name as it is."""
    text = shown(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return '"' + CONTROL.sub(lambda m: "\\\\" + code(m.group()), text) + '"'


def escape(text: str) -> str:
    """Text for an HTML-like label (also turns non-ASCII into character references), control
    characters written as ``\\xNN`` (``visible``); a very long text is shortened (``shown``)."""
    text = (
        shown(text)
        .replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
    )
    return visible(text).encode("ascii", "xmlcharrefreplace").decode("ascii")


def _wrapped(text: str, width: int = NOTE_WIDTH) -> str:
    text = shown_note(text)
    lines = textwrap.wrap(text, width, break_long_words=True, break_on_hyphens=False) or [""]
    return '<BR ALIGN="LEFT"/>'.join(escape(line) for line in lines) + '<BR ALIGN="LEFT"/>'


def _row(left: str, right: str) -> str:
    return f'<TR><TD ALIGN="LEFT">{left}</TD><TD ALIGN="LEFT">{right}</TD></TR>'


def _wide(content: str, align: str = "LEFT") -> str:
    return f'<TR><TD COLSPAN="2" ALIGN="{align}" BALIGN="LEFT">{content}</TD></TR>'


def node_label(view: NodeView, max_attrs: int = 8) -> str:
    """The HTML-like table of one node."""
    style = DRAWN_STYLES[view.status]
    border = "#c62828" if view.lowering_target_fallback else style.border
    dashed = ' STYLE="dashed"' if style.dashed else ""
    rows = [_wide(f"<B>{escape(view.title)}</B>", "CENTER")]
    if view.origin:
        rows.append(_wide(f'<FONT POINT-SIZE="9">from {escape(view.origin)}</FONT>', "CENTER"))
    elif view.name:
        rows.append(_wide(f'<FONT POINT-SIZE="9">{escape(view.name)}</FONT>', "CENTER"))
    fields = view.fields if view.is_dml else view.fields[:max_attrs]
    for key, value in fields:
        rows.append(_row(escape(key), escape(value)))
    if len(view.fields) > len(fields):
        rows.append(_wide(f"<I>{len(view.fields) - len(fields)} more attributes</I>"))
    for tensor in view.tensors:
        if view.is_dml:
            text = f"{escape(tensor.ir_type)} {ARROW} {escape(tensor.view)}"
            if tensor.constant:
                text += " (constant)"
            rows.append(_row(escape(tensor.port), text))
        elif tensor.constant:
            rows.append(_row(escape(tensor.port), f"constant {escape(tensor.ir_type)}"))
    if view.divergent:
        rows.append(_wide("<B>known divergence from onnxruntime</B>"))
    for note in view.notes if view.shows_notes else ():
        rows.append(_wide(f'<FONT POINT-SIZE="9">{_wrapped(sentence(note))}</FONT>'))
    return (
        f'<<TABLE BORDER="1" CELLBORDER="0" CELLSPACING="0" CELLPADDING="2" '
        f'BGCOLOR="{style.fill}" COLOR="{border}"{dashed}>' + "".join(rows) + "</TABLE>>"
    )


def _legend(used: Sequence[str]) -> str:
    rows = "".join(
        f'<TR><TD BGCOLOR="{DRAWN_STYLES[s].fill}" WIDTH="14"> </TD>'
        f'<TD ALIGN="LEFT">{escape(s)}: {escape(DRAWN_STYLES[s].legend)}</TD></TR>'
        for s in used
    )
    return (
        '<<TABLE BORDER="0" CELLBORDER="1" CELLSPACING="0" CELLPADDING="3">'
        f'<TR><TD COLSPAN="2"><B>status</B></TD></TR>{rows}</TABLE>>'
    )


def focus_shows(graph: Graph, name: str, kept: Collection[int]) -> bool:
    """Whether a focus keeping the nodes ``kept`` draws ``name``, a graph input or a
    constant (or a graph output that is one): where a node it keeps reads it."""
    return any(node.id in kept for node, _ in graph.consumers(name))


def focus_draws_output(graph: Graph, name: str, kept: Collection[int]) -> bool:
    """Whether a focus keeping the nodes ``kept`` draws the graph output ``name``: made by a
    node it keeps, or made by none (a graph input, a constant) and drawn (``focus_shows``).
    The drawings and the HTML's parity rows read it: the rows left out as "made outside the
    focus" the outputs the focused panels drew."""
    node = graph.producer(name)
    return node.id in kept if node is not None else focus_shows(graph, name, kept)


def to_dot(
    graph: Graph, records: Sequence[Any] | None = None, *, title: str | None = None,
    focus: Focus | None = None,
) -> str:
    """The DOT text of ``graph``. ``records``: the lowering report (default: the graph's own
    when it is a LoweredGraph); it decides each node's status. ``focus`` (``focus_on`` of
    the graph given to ``lower``): only the nodes it keeps, each edge to a node left out
    drawn to a dashed stub box."""
    check_drawable("to_dot", {"graph": graph}, title)
    check_focus("to_dot", focus)
    records = report_of(graph) if records is None else list(records)
    if not all(hasattr(r, "status") and hasattr(r, "dml_ops") for r in records):
        raise VizError("to_dot: records are the lowering report's (LoweredGraph.report())")
    kept = None if focus is None else focus.kept(graph)
    views = describe_graph(graph, records, only=kept)
    level = getattr(graph, "feature_level", None)
    heading = title or display_name(graph)
    if level is not None:
        heading += f" - lowered at {level.full_name}"
    elif never_lowered(graph, records):
        heading += " - not lowered"
    counts = status_counts(records if focus is None else filter(focus.keeps_record, records))
    summary = ", ".join(f"{n} {s}" for s, n in counts.items())
    lines = [
        'digraph "dmlgraph" {',
        f"  graph [label=<<B>{escape(heading)}</B>"
        + (f"<BR/>{escape(summary)}" if summary else "")
        + (f"<BR/>{escape(focus.heading)}" if focus is not None else "")
        + f'>, labelloc="t", fontname={quote(FONT)}, rankdir="TB", nodesep="0.3", '
        'ranksep="0.45"];',
        f'  node [shape="plaintext", fontname={quote(FONT)}, fontsize="10"];',
        f'  edge [fontname={quote(FONT)}, fontsize="8", color="#555555", arrowsize="0.6"];',
    ]
    node_lines: list[str] = []
    edge_lines: list[str] = []
    drawn_constants: set[str] = set()
    producers = {out: view.node_id for view in views for out in graph.node(view.node_id).outputs}
    ids: dict[tuple[str, str], str] = {}  # (kind, tensor) -> "input0", "const3", ...

    def tensor_id(kind: str, name: str) -> str:
        key = (kind, name)
        if key not in ids:
            ids[key] = f"{kind}{len(ids)}"
        return ids[key]

    def tensor_node(kind: str, name: str) -> str:
        info = graph.tensor(name)
        label = f"<B>{escape(name)}</B><BR/>{escape(tensor_text(info))}"
        if kind == "input":
            attrs = 'shape="ellipse", style="filled", fillcolor="#ffffff"'
        elif kind == "output":
            attrs = 'shape="ellipse", style="filled,bold", fillcolor="#ffffff"'
        else:
            attrs = 'shape="note", style="filled", fillcolor="#fafafa"'
            label = f"constant {label}"
        tooltip = quote(f"{'constant' if kind == 'const' else kind} {name}")
        return f'  "{tensor_id(kind, name)}" [{attrs}, label=<{label}>, tooltip={tooltip}];'

    def source_of(name: str) -> str | None:
        if name in producers:
            return f"n{producers[name]}"
        if name in graph.inputs:
            return tensor_id("input", name)
        if graph.is_constant(name):
            if name not in drawn_constants:
                drawn_constants.add(name)
                node_lines.append(tensor_node("const", name))
            return tensor_id("const", name)
        return None

    def edge_label(port: int, name: str, ports: int) -> str:
        text = tensor_text(graph.tensor(name))
        return f"{port}: {text}" if ports > 1 else text

    def stub(kind: str, key: str, label: str, tooltip: str) -> str:
        """A dashed box standing for what a focus left out, drawn once."""
        stub_id = tensor_id(kind, key)
        if (kind, key) not in drawn_stubs:
            drawn_stubs.add((kind, key))
            node_lines.append(
                f'  "{stub_id}" [shape="box", style="dashed", color="#9e9e9e", '
                f'fontcolor="#555555", label=<{label}>, tooltip={quote(tooltip)}];'
            )
        return stub_id

    def cut_lines(node: Node, ports: int) -> None:
        """The edges of ``node`` that a focus cut, each to or from a stub."""
        from dmlgraph.viz.focus import cut_edges, more_inputs_text, producer_text, readers_text

        assert kept is not None
        cut = cut_edges(graph, node, kept)
        for port, name in cut.inputs:
            label = f"<B>{escape(name)}</B><BR/>{escape(tensor_text(graph.tensor(name)))}"
            source = stub("cut", name, label, f"{name}: {producer_text(graph, name)}")
            edge_lines.append(
                f'  "{source}" -> "n{node.id}" [label={quote(edge_label(port, name, ports))}, '
                f'tooltip={quote(name)}, style="dashed"];'
            )
        if cut.more:
            names = ", ".join(name for _, name in cut.more)
            source = stub("more", str(node.id), escape(more_inputs_text(len(cut.more))),
                          f"made outside the focus: {names}")
            edge_lines.append(f'  "{source}" -> "n{node.id}" [style="dashed"];')
        for name, count in cut.readers:
            label = f"<B>{escape(name)}</B><BR/>{escape(readers_text(count))}"
            target = stub("readers", name, label, f"{name}: {readers_text(count)}, outside "
                          "the focus")
            edge_lines.append(
                f'  "n{node.id}" -> "{target}" [tooltip={quote(name)}, style="dashed"];'
            )

    drawn_stubs: set[tuple[str, str]] = set()
    for name in graph.inputs:
        if kept is None or focus_shows(graph, name, kept):
            node_lines.append(tensor_node("input", name))
    for view in views:
        node = graph.node(view.node_id)
        tooltip = f"{view.title} {view.name}".strip()
        node_lines.append(
            f'  "n{view.node_id}" [label={node_label(view)}, tooltip={quote(tooltip)}];'
        )
        inputs = [(port, name) for port, name in enumerate(node.inputs) if name]
        for port, name in inputs:
            if not view.is_dml and graph.is_constant(name):
                continue  # weights: a row of the node's table
            source = source_of(name)
            if source is None:
                continue  # made by a node a focus left out: cut_lines draws it
            edge_lines.append(
                f'  "{source}" -> "n{view.node_id}" '
                f"[label={quote(edge_label(port, name, len(inputs)))}, tooltip={quote(name)}];"
            )
        if kept is not None:
            cut_lines(node, len(inputs))
    for name in dict.fromkeys(graph.outputs):
        if kept is not None and not focus_draws_output(graph, name, kept):
            continue  # made outside the focus
        node_lines.append(tensor_node("output", name))
        source = source_of(name)
        if source is not None:
            edge_lines.append(
                f'  "{source}" -> "{tensor_id("output", name)}" [tooltip={quote(name)}];'
            )
    used = [s for s in DRAWN_STYLES if any(v.status == s for v in views)]
    if used:
        node_lines.append(f'  "legend" [label={_legend(used)}];')
    return "\n".join(lines + node_lines + edge_lines + ["}"]) + "\n"


def graphviz() -> str | None:
    """The path of Graphviz's ``dot``, or None when it is not installed."""
    return shutil.which("dot")


def check_drawable(what: str, graphs: Mapping[str, object], title: object) -> None:
    """Graphs where a drawing takes graphs, and a title of text: a path given for a graph
    met an AttributeError deep inside ("'str' object has no attribute ...")."""
    for name, graph in graphs.items():
        if not isinstance(graph, Graph):
            raise VizError(f"{what}: {name} is a Graph (dmlgraph.load, lowering.lower), not "
                           f"{type(graph).__name__}")
    if title is not None and not isinstance(title, str):
        raise VizError(f"{what}: title is text, not {type(title).__name__}")


def check_pair(what: str, original: object, lowered: object, title: object) -> None:
    """``original`` (the graph given to ``lower``) and ``lowered`` (its result), as a drawing
    of both takes them: the two swapped drew the lowered graph as the ONNX one; a graph
    ``lower`` did not make as ``lowered`` (the loaded one, twice) drew a page "Lowered at ?"
    whose every node was a fallback, though nothing was lowered: refused, saying to lower."""
    from lowering.report import LoweredGraph

    check_drawable(what, {"original": original, "lowered": lowered}, title)
    if isinstance(original, Graph) and any(not node.is_onnx for node in original.nodes):
        # the two swapped: a page of nonsense
        raise VizError(f"{what}: original holds DML operators, so it is lower()'s result; "
                       "give the graph given to lower() first, then its result")
    if not isinstance(lowered, LoweredGraph):
        raise VizError(
            f"{what}: lowered is not lower()'s result (a graph load() made, or one built), so "
            "nothing says what its nodes became nor at which feature level; lower it first: "
            f"{what}(..., graph, lowering.lower(graph, feature_level))"
        )
    stray = _stray_record(original, lowered)
    if stray:
        raise VizError(f"{what}: lowered was not lowered from original: {stray}; give the "
                       "graph given to lower() and its result")


def _stray_record(original: Any, lowered: Any) -> str:
    """How ``lowered``'s report fails to describe ``original`` ("" where it does): each
    record names the id, name and op type of the node of the graph given to ``lower``, and
    the drawing joins the two by id, so squeezenet beside shufflenet's lowering drew
    squeezenet's nodes with shufflenet's statuses, silently."""
    nodes = {node.id: node for node in original.nodes}
    for record in lowered.report():
        node_id = getattr(record, "node_id", None)
        if node_id is None:  # folded at import, or made by hand: found by name
            continue
        node = nodes.get(node_id)
        if node is None or (node.provenance.name, node.provenance.op_type) != (
            record.name, record.op_type
        ):
            had = "no node" if node is None else node.label
            return (f"its report's {record.op_type} {record.name!r} is node {node_id}, where "
                    f"original has {had}")
    return ""


def check_focus(what: str, focus: object) -> None:
    """A Focus where a drawing takes one: names given there met an AttributeError."""
    from dmlgraph.viz.focus import Focus

    if focus is not None and not isinstance(focus, Focus):
        raise VizError(f"{what}: focus is a Focus (dmlgraph.viz.focus_on(graph, names, depth)), "
                       f"not {type(focus).__name__}")


def write_dot(dot: str, path: str | Path) -> Path:
    path = Path(path)
    files.write_text(path, dot)
    return path


def no_graphviz(path: Path) -> VizError:
    return VizError(
        f"{path}: Graphviz's dot is not installed (looked for 'dot' on PATH), so no SVG; "
        f"install graphviz, or write {path.with_suffix('.dot').name} (render it with "
        "dot -Tsvg) or a self-contained .html"
    )


def render_svg(dot: str, path: str | Path, *, dot_binary: str | None = None) -> str:
    """Write ``path`` (.svg) through Graphviz's ``dot``; without it, a VizError saying what
    to write instead. Returns one line saying what was written."""
    path = Path(path)
    binary = dot_binary or graphviz()
    if binary is None:
        raise no_graphviz(path)
    with files.replacing(path) as temporary:
        try:
            done = subprocess.run(
                [binary, "-Tsvg", "-o", str(temporary)],
                input=dot.encode("utf-8"),
                capture_output=True,
                check=False,
                timeout=120,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise VizError(f"{path}: running {binary} failed: {exc}") from None
        if done.returncode != 0:
            message = done.stderr.decode("utf-8", "replace").strip().splitlines()
            raise VizError(
                f"{path}: {binary} -Tsvg failed (exit {done.returncode}): "
                f"{message[0] if message else 'no message'}"
            )
    return f"wrote {path}"
