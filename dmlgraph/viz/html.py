"""A self-contained HTML report: the ONNX graph and the lowered graph side by side.

One file, no network: CSS, script and the two drawings (inline SVG, laid out in Python by
``layout.layered``) are all inside. What it shows:

- both graphs, nodes coloured by status (``describe.STATUS_STYLES``); clicking a node
  highlights every node of the same original ONNX node in both panels (provenance links) and
  shows its fields, tensors and notes;
- filters by status, a search by name, and, for large graphs, long chains of fallback nodes
  collapsed into one box (on by default past ``COLLAPSE_ABOVE`` nodes);
- the lowering report, one row per original node with its notes as sentences (nodes folded at
  import included), and parity results when given;
- each If branch and Loop or Scan body holding a Slice, Concat or Pad, lowered by itself
  (``lowering.held``), drawn as a panel of its own with its report's rows; the details box
  moves beside the drawing whose node is selected.

``#select=KEY`` in the address selects a node on load (tests and links use it). The page sets
``data-ready="1"`` on <body> once its script has run and lists script errors in
``#js-errors``, so a headless browser can tell a clean load.
"""

from __future__ import annotations

import html
import json
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from dmlgraph import files
from dmlgraph.ir import Graph
from dmlgraph.viz.describe import (
    LOWERING_TARGETS,
    STATUS_STYLES,
    NodeView,
    describe_graph,
    display_name,
    drawn_status,
    record_group,
    report_of,
    sentence,
    status_counts,
    tensor_text,
)
from dmlgraph.printable import visible
from dmlgraph.viz.dot import (
    VizError,
    check_focus,
    check_pair,
    focus_draws_output,
    focus_shows,
)
from dmlgraph.viz.focus import (
    Focus,
    cut_edges,
    more_inputs_text,
    producer_text,
    readers_text,
)
from dmlgraph.viz.layout import Box, Layout, chains, layered

#: Past this many drawn nodes in a panel, fallback chains start collapsed.
COLLAPSE_ABOVE = 80
#: Characters of a node's name shown in its box (the start is cut; the tail says most).
NAME_CHARS = 27

def esc(text: str) -> str:
    """Text for HTML and its inline SVG: escaped, control characters as ``\\xNN``."""
    return html.escape(visible(text))


# ----------------------------------------------------------------------------- parity input


@dataclass(frozen=True)
class ParityRow:
    name: str
    verdict: str  # "pass", "fail", "known divergence", ...
    cells: tuple[tuple[str, str], ...]
    compared: bool = True  # False: a known divergence the reference could not compute


@dataclass(frozen=True)
class ParitySection:
    title: str
    passed: bool | None
    rows: tuple[ParityRow, ...]
    note: str = ""
    #: Whether any of the comparison's outputs was compared (where none was, "pass" said
    #: parity held over nothing; ``check`` says "nothing compared"): of every row, kept
    #: when a focus leaves rows out (a section whose rows a focus all left out said
    #: "nothing compared" of outputs check compared).
    compared: bool = True


_PARITY_COLUMNS = (
    ("max_abs_error", "max abs"),
    ("max_rel_error", "max rel"),
    ("mismatches", "mismatches"),
    ("size", "elements"),
    ("atol", "atol"),
    ("rtol", "rtol"),
    ("required_atol", "needs atol"),
    ("required_rtol", "needs rtol"),
    ("message", "message"),
)


def _parity_row(record: Mapping[str, Any]) -> ParityRow:
    if "verdict" in record:
        verdict = str(record["verdict"])
    elif "passed" in record:
        verdict = "pass" if record["passed"] else "fail"
    else:
        verdict = "-"
    if record.get("compared") is False:  # its counts and tolerances are of no comparison
        message = str(record.get("message") or "")
        cells = [("mismatches", "not compared")] + ([("message", message)] if message else [])
        return ParityRow(str(record.get("name", "?")), verdict, tuple(cells), compared=False)
    cells = []
    for key, label in _PARITY_COLUMNS:
        value = record.get(key)
        if value is None or value == "":
            continue
        if key in ("required_atol", "required_rtol") and isinstance(value, float):
            from dmlgraph.parity import passing_text  # rounded up: given back, it passes

            text = passing_text(value)
        else:
            text = f"{value:.3g}" if isinstance(value, float) else str(value)
        cells.append((label, text))
    return ParityRow(str(record.get("name", "?")), verdict, tuple(cells))


def _caveats(parity: Any) -> list[str]:
    """``parity.parity_caveats`` of a ParityReport or its JSON form (its notes, and that no
    DML operator ran where none did); none for a list of per-output records."""
    from dmlgraph.parity import parity_caveats

    if hasattr(parity, "to_json"):
        parity = parity.to_json()
    if not isinstance(parity, Mapping) or "comparisons" not in parity:
        return []
    notes, compared, ran = (parity.get(k) for k in ("notes", "compared", "descriptors_run"))
    return parity_caveats(  # a hand-made form's fields taken only as check writes them
        [str(n) for n in notes] if isinstance(notes, (list, tuple)) else [],
        parity.get("passed") is True, compared if isinstance(compared, int) else 0,
        ran if isinstance(ran, int) else 1)  # unknown: no claim that none ran


def parity_sections(parity: Any) -> list[ParitySection]:
    """Accepts a ParityReport (anything with ``to_json()``), its JSON form (a dict with
    "comparisons"), or a plain list of per-output records (dicts with "name" and "passed" or
    "verdict", and optionally "max_abs_error", "max_rel_error", "mismatches", ...)."""
    if parity is None:
        return []
    if hasattr(parity, "to_json"):
        parity = parity.to_json()
    if isinstance(parity, Mapping) and "comparisons" in parity:
        sections = []
        for c in parity["comparisons"]:
            title = f"{c.get('actual', 'actual')} vs {c.get('expected', 'expected')}"
            rows = tuple(_parity_row(o) for o in c.get("outputs", ()))
            sections.append(ParitySection(title, c.get("passed"), rows, str(c.get("note", "")),
                                          _any_compared(rows)))
        return sections
    if isinstance(parity, Mapping) and "outputs" in parity:
        parity = parity["outputs"]
    records = list(parity) if isinstance(parity, Iterable) and not isinstance(parity, str) else None
    if records is None or not all(isinstance(o, Mapping) for o in records):
        raise VizError(
            "parity: a ParityReport, its JSON form or a list of per-output records (dicts), "
            f"not {type(parity).__name__}"
        )
    rows = tuple(_parity_row(o) for o in records)
    passed = all(r.verdict not in FAILING for r in rows)
    return [ParitySection("parity", passed, rows, compared=_any_compared(rows))]


def _any_compared(rows: Sequence[ParityRow]) -> bool:
    """``ParitySection.compared`` of a section's rows, all of them."""
    return any(row.compared for row in rows)


# ----------------------------------------------------------------------------- panels


@dataclass(frozen=True)
class Item:
    """One box of a panel: an operation, a graph input or output, or a collapsed chain."""

    key: str
    kind: str  # "op", "input", "output", "chain"
    line1: str
    line2: str
    status: str
    groups: tuple[str, ...]
    tooltip: str
    flags: tuple[str, ...] = ()
    name: str = ""


@dataclass
class Panel:
    prefix: str
    items: list[Item]
    edges: list[tuple[str, str]]
    details: dict[str, dict[str, Any]]


def _short(text: str, limit: int = NAME_CHARS) -> str:
    return text if len(text) <= limit else "\u2026" + text[-(limit - 1):]


def _op_title(view: NodeView) -> str:
    return view.title.removeprefix("DML_OPERATOR_") if view.is_dml else view.title


def _build_panel(
    prefix: str, graph: Graph, views: list[NodeView], groups: dict[str, str],
    verdicts: Mapping[str, str], kept: Collection[int] | None = None,
) -> Panel:
    """The panel of ``views``; ``kept``, where a focus drew only these (the ids of
    ``views``' nodes): graph inputs and outputs of the drawn nodes only, and each edge to
    or from a node left out drawn to a stub (``_cut_stubs``)."""
    items: list[Item] = []
    edges: list[tuple[str, str]] = []
    details: dict[str, dict[str, Any]] = {}
    producer: dict[str, str] = {}
    for i, name in enumerate(graph.inputs):
        if kept is not None and not focus_shows(graph, name, kept):
            continue
        key = f"{prefix}-in{i}"
        info = graph.tensor(name)
        items.append(Item(key, "input", "input", _short(name), "io", (), name, (), name))
        producer[name] = key
        details[key] = {"title": f"graph input {name}", "fields": [["type", tensor_text(info)]]}
    for view in views:
        key = f"{prefix}-n{view.node_id}"
        node = graph.node(view.node_id)
        for out in node.outputs:
            if out:
                producer[out] = key
        marks = []
        if view.divergent:
            marks.append("divergent")
        if view.lowering_target_fallback:
            marks.append("target-fallback")
        group = groups.setdefault(view.group, f"g{len(groups)}")
        items.append(Item(
            key, "op", _op_title(view), _short(view.name or "(unnamed)"), view.status,
            (group,), f"{view.title} {view.name}".strip(), tuple(marks), view.name,
        ))
        details[key] = {
            "title": view.title,
            "name": view.name,
            "origin": view.origin,
            "status": view.status,
            "fields": [list(f) for f in view.fields],
            "tensors": [
                [t.port, t.tensor, t.ir_type, t.view, t.constant] for t in view.tensors
            ],
            "notes": [sentence(n) for n in view.notes],
        }
    for view in views:
        node = graph.node(view.node_id)
        key = f"{prefix}-n{view.node_id}"
        for name in node.inputs:
            if name and name in producer:
                edges.append((producer[name], key))
    if kept is not None:
        before, after, cut = _cut_stubs(prefix, graph, views, kept, details)
        first_op = len(items) - len(views)
        items[first_op:first_op] = before  # sources: ahead of every operation (layered)
        items += after
        edges += cut
    for i, name in enumerate(dict.fromkeys(graph.outputs)):
        if kept is not None and not focus_draws_output(graph, name, kept):
            continue  # made outside the focus
        key = f"{prefix}-out{i}"
        verdict = verdicts.get(name, "")
        flags = (f"verdict-{verdict.replace(' ', '-')}",) if verdict else ()
        items.append(Item(key, "output", "output", _short(name), "io", (), name, flags, name))
        details[key] = {
            "title": f"graph output {name}",
            "fields": [["type", tensor_text(graph.tensor(name))]]
            + ([["parity", verdict]] if verdict else []),
        }
        if name in producer:
            edges.append((producer[name], key))
    return Panel(prefix, items, edges, details)


def _cut_stubs(
    prefix: str, graph: Graph, views: Sequence[NodeView], kept: Collection[int],
    details: dict[str, dict[str, Any]],
) -> tuple[list[Item], list[Item], list[tuple[str, str]]]:
    """The stubs of a focused panel: boxes feeding the drawn nodes (one naming each tensor
    a node left out makes; "... N more inputs" past ``focus.STUB_INPUTS`` of one node),
    boxes fed by them (one naming each tensor nodes left out read), and their edges; their
    details join ``details``."""
    before: list[Item] = []
    after: list[Item] = []
    edges: list[tuple[str, str]] = []
    made: dict[str, str] = {}  # a cut tensor -> its stub's key

    def stub(key: str, line1: str, line2: str, tooltip: str, fields: list[list[str]]) -> Item:
        details[key] = {"title": tooltip, "fields": fields}
        return Item(key, "stub", _short(line1), _short(line2), "cut", (), tooltip)

    for view in views:
        node = graph.node(view.node_id)
        target = f"{prefix}-n{view.node_id}"
        cut = cut_edges(graph, node, kept)
        for _, name in cut.inputs:
            if name not in made:
                made[name] = key = f"{prefix}-cut{len(made)}"
                source = producer_text(graph, name)
                before.append(stub(key, name, "made outside the focus", f"{name}: {source}",
                                   [["type", tensor_text(graph.tensor(name))], ["from", source]]))
            edges.append((made[name], target))
        if cut.more:
            key = f"{prefix}-more{view.node_id}"
            text = more_inputs_text(len(cut.more))
            before.append(stub(key, text, "made outside the focus",
                               f"{text} of {view.title} {view.name}".strip(),
                               [["tensors", ", ".join(name for _, name in cut.more)]]))
            edges.append((key, target))
        for i, (name, count) in enumerate(cut.readers):
            key = f"{prefix}-rd{view.node_id}-{i}"
            after.append(stub(key, name, readers_text(count),
                              f"{name}: {readers_text(count)}, outside the focus",
                              [["type", tensor_text(graph.tensor(name))]]))
            edges.append((target, key))
    return before, after, list(dict.fromkeys(edges))


def _collapsed(panel: Panel) -> tuple[list[Item], list[tuple[str, str]]]:
    """The panel with each long chain of fallback nodes replaced by one box."""
    by_key = {item.key: item for item in panel.items}
    runs = chains(
        [item.key for item in panel.items], panel.edges,
        lambda key: by_key[key].kind == "op" and by_key[key].status == "fallback"
        and "target-fallback" not in by_key[key].flags,
    )
    replace: dict[str, str] = {}
    chain_items: dict[str, Item] = {}
    for run in runs:
        key = f"{run[0]}-chain"
        ops = [by_key[k].line1 for k in run]
        groups = tuple(g for k in run for g in by_key[k].groups)
        summary = ", ".join(dict.fromkeys(ops))
        chain_items[run[0]] = Item(
            key, "chain", f"{len(run)} fallback nodes", _short(summary), "fallback", groups,
            " \u2192 ".join(f"{by_key[k].line1} {by_key[k].name}" for k in run),
        )
        panel.details[key] = {
            "title": f"{len(run)} fallback nodes in a chain",
            "status": "fallback",
            "members": [[by_key[k].line1, by_key[k].name, k] for k in run],
        }
        for k in run:
            replace[k] = key
    items = []
    for item in panel.items:
        if item.key in chain_items:
            items.append(chain_items[item.key])
        elif item.key not in replace:
            items.append(item)
    edges = []
    for source, target in panel.edges:
        s, t = replace.get(source, source), replace.get(target, target)
        if s != t:
            edges.append((s, t))
    return items, list(dict.fromkeys(edges))


def _svg(
    svg_id: str, items: Sequence[Item], edges: Sequence[tuple[str, str]], layout: Layout
) -> str:
    """One drawing. Nodes carry ``data-key`` (not ids: a node is drawn in both the full and
    the collapsed variant) and ``data-groups``, the provenance groups they belong to."""
    marker = f"arrow-{svg_id}"
    parts = [
        f'<svg class="graph" width="{layout.width:.0f}" height="{layout.height:.0f}" '
        f'viewBox="0 0 {layout.width:.0f} {layout.height:.0f}" role="img">',
        f'<defs><marker id="{marker}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
        'markerHeight="7" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#777"/></marker>'
        "</defs><g class=\"edges\">",
    ]
    boxes = layout.boxes
    for source, target in edges:
        a, b = boxes[source], boxes[target]
        x1, y1, x2, y2 = a.cx, a.y + a.h, b.cx, b.y
        bend = max(12.0, (y2 - y1) / 2)
        parts.append(
            f'<path d="M{x1:.1f},{y1:.1f} C{x1:.1f},{y1 + bend:.1f} {x2:.1f},{y2 - bend:.1f} '
            f'{x2:.1f},{y2:.1f}" marker-end="url(#{marker})"/>'
        )
    parts.append("</g>")
    for item in items:
        box: Box = boxes[item.key]
        classes = esc(" ".join(["node", f"k-{item.kind}", f"st-{item.status}", *item.flags]))
        radius = 18 if item.kind in ("input", "output") else 4
        parts.append(
            f'<g class="{classes}" data-key="{esc(item.key)}" '
            f'data-groups="{" ".join(item.groups)}" data-status="{item.status}" '
            f'transform="translate({box.x:.1f},{box.y:.1f})" tabindex="0">'
            f"<title>{esc(item.tooltip)}</title>"
            f'<rect width="{box.w:.0f}" height="{box.h:.0f}" rx="{radius}"/>'
            f'<text x="{box.w / 2:.0f}" y="16" class="l1">{esc(item.line1)}</text>'
            f'<text x="{box.w / 2:.0f}" y="31" class="l2">{esc(item.line2)}</text></g>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _panel_html(panel: Panel, title: str) -> tuple[str, int]:
    keys = [item.key for item in panel.items]
    full = _svg(f"{panel.prefix}-full", panel.items, panel.edges, layered(keys, panel.edges))
    items, edges = _collapsed(panel)
    variants = [f'<div class="layout layout-full">{full}</div>']
    if len(items) < len(panel.items):
        small = _svg(f"{panel.prefix}-collapsed", items, edges,
                     layered([i.key for i in items], edges))
        variants.append(f'<div class="layout layout-collapsed">{small}</div>')
    ops = sum(1 for item in panel.items if item.kind == "op")
    return (
        f'<section class="panel" id="panel-{panel.prefix}"><h2>{esc(title)}</h2>'
        f'<div class="scroll">{"".join(variants)}</div></section>',
        ops,
    )


# ----------------------------------------------------------------------------- the page


def _status_tag(status: str) -> str:
    return f'<span class="tag st-{esc(status)}">{esc(status)}</span>'


def _report_table(records: Sequence[Any], groups: dict[str, str]) -> str:
    rows = []
    for record in records:
        status = str(record.status)
        shown = drawn_status(status, bool(record.notes))
        group = groups.get(record_group(record), "")
        notes = "".join(f"<li>{esc(sentence(n))}</li>" for n in record.notes)
        target = " target-fallback" if status == "fallback" and record.op_type in \
            LOWERING_TARGETS else ""
        rows.append(
            f'<tr class="st-{esc(shown)}{target}" data-groups="{group}" '
            f'data-status="{esc(shown)}"><td class="name">{esc(record.name or "(unnamed)")}</td>'
            f"<td>{esc(record.op_type)}</td><td>{_status_tag(status)}"
            f"{' <small>at import</small>' if getattr(record, 'at_import', False) else ''}</td>"
            f"<td>{esc(', '.join(op.removeprefix('DML_OPERATOR_') for op in record.dml_ops))}"
            f"</td><td><ul>{notes}</ul></td></tr>"
        )
    return (
        '<table class="report"><thead><tr><th>ONNX node</th><th>op</th><th>status</th>'
        "<th>DML operators</th><th>notes</th></tr></thead><tbody>"
        + "".join(rows) + "</tbody></table>"
    )


def _held_html(
    lowered: Graph, kept: Collection[int] | None = None
) -> tuple[str, dict[str, dict[str, Any]]]:
    """Each If branch and Loop or Scan body holding a Slice, Concat or Pad, lowered by
    itself with its inputs typed as the enclosing graph types them (``lowering.held``), as
    ``lower`` lists them: a heading, the types, its lowered graph drawn (a panel of its own,
    prefixed ``s0``, ``s1``...: its nodes' details join the page's) and its report's
    Slice/Concat/Pad rows, which select their nodes in that drawing; and those details.
    ``kept``: those of these nodes only (a focus's), the subgraphs within them included."""
    from lowering.held import every_held
    from lowering.report import LoweredGraph

    if not isinstance(lowered, LoweredGraph):
        return "", {}
    blocks: list[str] = []
    details: dict[str, dict[str, Any]] = {}
    for index, held in enumerate(every_held(lowered, only=kept)):
        typed = ", ".join(f"{info.name} {tensor_text(info)}" for info in held.typed_as)
        blocks.append(f"<h3>{esc(held.path)}</h3><p>inputs, as the enclosing graph types "
                      f"them: {esc(typed or 'none')}</p>")
        if held.lowered is None:
            blocks.append(f"<p>not listed: {esc(held.problem)}</p>")
            continue
        prefix = f"s{index}"
        records = report_of(held.lowered)
        groups: dict[str, str] = {}  # its own: a click links nodes of this subgraph only
        for record in records:
            groups.setdefault(record_group(record), f"{prefix}g{len(groups)}")
        views = describe_graph(held.lowered, records)
        panel = _build_panel(prefix, held.lowered, views, groups, {})
        dml_count = sum(1 for v in views if v.is_dml)
        drawn, _ = _panel_html(panel, f"{dml_count} DML operators, "
                                      f"{len(views) - dml_count} ONNX nodes left")
        blocks.append(f'<div class="held">{drawn}</div>')  # the details join it when used
        details.update(panel.details)
        rows = [r for r in records if r.op_type in LOWERING_TARGETS and not r.at_import]
        if rows:  # a body holding only an If: its branches follow
            blocks.append(_report_table(rows, groups))
    if not blocks:
        return "", {}
    return (
        '<section id="subgraphs"><h2>If branches and Loop and Scan bodies, lowered by '
        "themselves</h2><p>A body as its first trip sees it (a Loop's carried values typed "
        "as its initial ones; a Scan's state variables as the initial ones, each scan "
        "input's slice without its scan axis); a run lowers them again by the sizes that "
        "arrive.</p>"
        + "".join(blocks) + "</section>",
        details,
    )


def _parity_html(sections: Sequence[ParitySection], caveats: Sequence[str] = ()) -> str:
    if not sections:
        return ""
    blocks = []
    for section in sections:
        verdict = (
            "" if section.passed is None
            else NOTHING_COMPARED_TAG if section.passed and not section.compared
            else '<span class="tag verdict-pass">pass</span>' if section.passed
            else '<span class="tag verdict-fail">fail</span>'
        )
        columns = list(dict.fromkeys(label for row in section.rows for label, _ in row.cells))
        head = "".join(f"<th>{esc(c)}</th>" for c in columns)
        body = "".join(
            f'<tr class="verdict-{esc(row.verdict.replace(" ", "-"))}"><td>{esc(row.name)}</td>'
            f"<td>{esc(row.verdict)}</td>"
            + "".join(f"<td>{esc(dict(row.cells).get(c, ''))}</td>" for c in columns)
            + "</tr>"
            for row in section.rows
        )
        note = f'<p class="note">{esc(sentence(section.note))}</p>' if section.note else ""
        blocks.append(
            f"<h3>{esc(section.title)} {verdict}</h3>{note}<table class=\"parity\"><thead><tr>"
            f"<th>output</th><th>verdict</th>{head}</tr></thead><tbody>{body}</tbody></table>"
        )
    notes = "".join(f'<p class="note">{esc(sentence(c))}</p>' for c in caveats)
    return f'<section id="parity"><h2>Parity</h2>{notes}{"".join(blocks)}</section>'


def _legend(counts: Mapping[str, int]) -> str:
    boxes = []
    for status, style in STATUS_STYLES.items():
        n = counts.get(status, 0)
        boxes.append(
            f'<label class="filter st-{status}" title="{esc(style.legend)}">'
            f'<input type="checkbox" checked data-status="{status}"> '
            f"{esc(status)} <b>{n}</b></label>"
        )
    return "".join(boxes)


def _shown_data(value: Any) -> Any:
    """``value`` with each string ``visible``: the script shows these strings by textContent,
    as they are, so a name's U+202E would turn the rest of its line around there."""
    if isinstance(value, str):
        return visible(value)
    if isinstance(value, Mapping):
        return {key: _shown_data(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_shown_data(item) for item in value]
    return value


def _json_script(data: Any) -> str:
    """The details of every node for the page's script: text as the page shows it, and no
    ``<``, ``>`` or ``&`` that could end the script element."""
    text = json.dumps(_shown_data(data), ensure_ascii=True, separators=(",", ":"),
                      sort_keys=True)
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return f'<script type="application/json" id="details-data">{text}</script>'


#: The verdict of parity where every output was a known divergence, not compared: as
#: ``check`` says it, not "pass" over no element.
NOTHING_COMPARED_TAG = '<span class="tag verdict-known-divergence">nothing compared</span>'
#: Verdict words of a failed output (records from ``passed: False`` read "False").
FAILING = ("fail", "False")


def _severity(verdict: str) -> int:
    """Fail over known divergence over the rest (an output shows its worst verdict)."""
    if verdict in FAILING:
        return 3
    return {"": 0, "-": 0, "known divergence": 2}.get(verdict, 1)


def html_report(
    original: Graph, lowered: Graph, parity: Any = None, *, title: str | None = None,
    focus: Focus | None = None,
) -> str:
    """The report page for ``original`` (the graph given to ``lower``) and ``lowered``
    (its result). ``parity``: see ``parity_sections``. ``focus`` (``focus_on(original,
    ...)``): the selected nodes only, in the drawings (each edge to a node left out drawn
    to a stub), the tables and the subgraph panels, and the page says so at the top."""
    check_pair("html_report", original, lowered, title)
    check_focus("html_report", focus)
    if focus is not None and focus.total != len(original):  # its ids are another graph's
        raise VizError(f"html_report: the focus was selected in a graph of {focus.total} "
                       f"nodes, not in original ({len(original)}); focus_on(original, ...)")
    records = report_of(lowered)
    groups: dict[str, str] = {}
    for record in records:
        groups.setdefault(record_group(record), f"g{len(groups)}")
    sections = parity_sections(parity)
    verdicts: dict[str, str] = {}  # each output's worst verdict over the comparisons
    for section in sections:
        for row in section.rows:
            if _severity(row.verdict) > _severity(verdicts.get(row.name, "")):
                verdicts[row.name] = row.verdict
    onnx_kept = dml_kept = None
    if focus is not None:
        onnx_kept, dml_kept = focus.kept(original), focus.kept(lowered)
        records = [r for r in records if focus.keeps_record(r)]
    onnx_views = describe_graph(original, records, original=True, only=onnx_kept)
    dml_views = describe_graph(lowered, records, only=dml_kept)
    onnx_panel = _build_panel("o", original, onnx_views, groups, verdicts, onnx_kept)
    dml_panel = _build_panel("l", lowered, dml_views, groups, verdicts, dml_kept)
    level = getattr(lowered, "feature_level", None)
    level_text = level.full_name if level is not None else "?"
    drawn = max(len(onnx_panel.items), len(dml_panel.items))
    collapse = drawn > COLLAPSE_ABOVE
    imported = len(original.removed)
    onnx_title = f"ONNX graph: {len(original)} nodes after import" + (
        f" ({imported} folded at import, listed below)" if imported else "")
    if focus is not None:
        onnx_title = f"ONNX graph: {len(onnx_views)} of its {len(original)} nodes (the focus)"
    onnx_html, onnx_ops = _panel_html(onnx_panel, onnx_title)
    dml_count = sum(1 for v in dml_views if v.is_dml)
    dml_html, _ = _panel_html(
        dml_panel, f"Lowered at {level_text}: {dml_count} DML operators, "
        f"{len(dml_views) - dml_count} ONNX nodes left",
    )
    counts = status_counts(records)
    shown_counts = dict(counts)
    with_notes = sum(1 for r in records if drawn_status(str(r.status), bool(r.notes)) == "notes")
    if with_notes:
        shown_counts["notes"] = with_notes
        shown_counts["lowered"] -= with_notes
    name = title or display_name(original)
    overall = ""
    if sections:
        ok = all(s.passed is not False for s in sections)
        overall = NOTHING_COMPARED_TAG if ok and not any(s.compared for s in sections) else (
            f'<span class="tag verdict-{"pass" if ok else "fail"}">'
            f'parity {"holds" if ok else "FAILS"}</span>'
        )
    held_html, held_details = _held_html(lowered, dml_kept)
    if focus is not None:
        sections = _focused_sections(sections, original, focus)
    details = {**onnx_panel.details, **dml_panel.details, **held_details}
    body_class = "collapsed" if collapse else ""
    return "".join([
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">",
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>dmlgraph: {esc(name)}</title><style>{_status_css()}{_CSS}"
        + (_FOCUS_CSS if focus is not None else "") + "</style></head>",
        f'<body class="{body_class}" data-ready="0">',
        f"<header><h1>{esc(name)} <small>lowered at {esc(level_text)}</small> {overall}</h1>",
        _focus_line(focus),
        f'<div class="controls"><span class="label">show:</span>{_legend(shown_counts)}',
        '<label><input type="checkbox" id="collapse"'
        + (" checked" if collapse else "")
        + "> collapse fallback chains</label>",
        '<input type="search" id="search" placeholder="find a node by name or op">',
        "</div>",
        f'<p class="hint">{onnx_ops} ONNX nodes drawn on the left, {len(dml_views)} nodes on '
        "the right. Click a node to see its fields and notes and to highlight what it became "
        "(or came from) in the other panel.</p></header>",
        '<pre id="js-errors" hidden></pre>',
        f'<main class="panels">{onnx_html}{dml_html}',
        '<aside id="details"><h2>Details</h2><div id="details-body">'
        "<p>Select a node.</p></div></aside></main>",
        _parity_html(sections, _caveats(parity)),
        f'<section id="report"><h2>Lowering report: {len(records)} ONNX nodes</h2>',
        _report_table(records, groups),
        "</section>",
        held_html,
        _json_script(details),
        f"<script>{_JS}</script></body></html>\n",
    ])


def write_html(
    original: Graph, lowered: Graph, path: str | Path, parity: Any = None,
    *, title: str | None = None, focus: Focus | None = None,
) -> str:
    """Write the report to ``path``; returns one line saying so."""
    path = Path(path)
    files.write_text(path, html_report(original, lowered, parity, title=title, focus=focus))
    return f"wrote {path}"


def _focus_line(focus: Focus | None) -> str:
    """The top of a focused page: which nodes it shows, of how many."""
    if focus is None:
        return ""
    return (f'<p class="focus" id="focus">{esc(focus.heading)}; edges to the nodes left out '
            "end at dashed boxes</p>")


def _focused_sections(
    sections: Sequence[ParitySection], original: Graph, focus: Focus
) -> list[ParitySection]:
    """The parity rows of the outputs the focused panels draw (``focus_draws_output``);
    each section says how many it leaves out (the verdict at the top stays the whole
    model's)."""
    made = {name for name in original.outputs
            if focus_draws_output(original, name, focus.kept(original))}
    shown = []
    for section in sections:
        rows = tuple(row for row in section.rows if row.name in made)
        left = len(section.rows) - len(rows)
        note = section.note
        if left:
            said = f"{left} of {len(section.rows)} outputs, made outside the focus, not listed"
            note = f"{note.rstrip('.')}; {said}" if note else said
        shown.append(replace(section, rows=rows, note=note))
    return shown


def _status_css() -> str:
    rules = []
    for status, style in STATUS_STYLES.items():
        dash = "stroke-dasharray:5 3;" if style.dashed else ""
        rules.append(
            f".node.st-{status} rect{{fill:{style.fill};stroke:{style.border};{dash}}}"
            f".tag.st-{status},.filter.st-{status}{{background:{style.fill};"
            f"border-color:{style.border}}}"
            f"tr.st-{status} td:first-child{{border-left:6px solid {style.border}}}"
            f"body.hide-{status} .node.st-{status}{{opacity:.12}}"
            f"body.hide-{status} tr.st-{status}{{display:none}}"
        )
    return "".join(rules)


_CSS = """
*{box-sizing:border-box}
body{margin:0;font:13px/1.4 system-ui,-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;
color:#222;background:#fff}
header{padding:8px 14px;border-bottom:1px solid #ddd;position:sticky;top:0;background:#fff;
z-index:2}
h1{font-size:17px;margin:2px 0 6px}h1 small{font-weight:normal;color:#666}
h2{font-size:14px;margin:6px 0}h3{font-size:13px;margin:10px 0 4px}
.controls{display:flex;flex-wrap:wrap;gap:6px;align-items:center}
.controls .label{color:#666}
.filter,.tag{border:1px solid #bbb;border-radius:10px;padding:1px 8px;white-space:nowrap}
.filter{cursor:pointer}.filter input{margin:0 2px 0 0;vertical-align:-1px}
#search{margin-left:8px;padding:2px 6px;min-width:16em}
.hint{color:#666;margin:4px 0 0}
#js-errors{color:#b00020;padding:6px 14px;margin:0}
.panels{display:grid;grid-template-columns:minmax(0,1fr) minmax(0,1fr) 22em;gap:8px;
padding:8px}
.panel{border:1px solid #ddd;border-radius:6px;min-width:0}
.held{display:grid;grid-template-columns:minmax(0,1fr) 22em;gap:8px;margin:4px 0}
.held .scroll{max-height:70vh}
.panel h2{padding:4px 8px;margin:0;border-bottom:1px solid #eee;background:#fafafa}
.scroll{overflow:auto;max-height:calc(100vh - 170px);min-height:200px}
.layout-collapsed{display:none}
body.collapsed .layout-collapsed{display:block}
body.collapsed .layout:not(.layout-collapsed){display:none}
body:not(.collapsed) .layout-full{display:block}
.layout-full:only-child{display:block!important}
svg.graph .edges path{fill:none;stroke:#999;stroke-width:1.1}
.node{cursor:pointer}
.node rect{stroke-width:1.2}
.node text{text-anchor:middle;font-size:11px;fill:#222;pointer-events:none}
.node text.l1{font-weight:600}.node text.l2{fill:#555;font-size:10px}
.node.k-input rect,.node.k-output rect{fill:#fff;stroke:#555}
.node.k-chain rect{stroke-width:2;stroke-dasharray:2 2}
.node.target-fallback rect{stroke:#c62828;stroke-width:2.5}
.node.divergent rect{stroke:#d9480f;stroke-width:2.5}
.node.verdict-pass rect{stroke:#2e7d32;stroke-width:2.5}
.node.verdict-fail rect{stroke:#c62828;stroke-width:3}
.node.linked rect{stroke:#1565c0;stroke-width:3}
.node.sel rect{stroke:#0d47a1;stroke-width:4}
.node.match rect{stroke:#6a1b9a;stroke-width:3}
#details{border:1px solid #ddd;border-radius:6px;padding:4px 10px;overflow:auto;
max-height:calc(100vh - 150px)}
#details table{border-collapse:collapse;width:100%}
#details td{border-top:1px solid #eee;padding:2px 4px;vertical-align:top;word-break:break-all}
#details ul{padding-left:18px;margin:4px 0}
section#report,section#parity{padding:0 14px 14px}
table.report,table.parity{border-collapse:collapse;width:100%}
table.report th,table.report td,table.parity th,table.parity td{border-bottom:1px solid #eee;
padding:3px 6px;text-align:left;vertical-align:top}
table.report td.name{word-break:break-all}
table.report ul{margin:0;padding-left:16px}
tr.linked td{background:#e3f2fd}
tr.target-fallback td:nth-child(2){color:#c62828;font-weight:600}
.verdict-pass{background:#c8e6c9}.verdict-fail{background:#ffcdd2}
.verdict-known-divergence{background:#ffe8cc}
.tag.verdict-pass{border-color:#2e7d32}.tag.verdict-fail{border-color:#c62828}
"""

#: A focused page's own rules (stub boxes, the focus line): a page drawing every node is as it was.
_FOCUS_CSS = """
.node.k-stub rect{fill:#fff;stroke:#9e9e9e;stroke-dasharray:4 3}
.node.k-stub text{fill:#555}
p.focus{margin:2px 0 6px;font-weight:600}
"""

_JS = r"""
(function () {
  "use strict";
  var errors = document.getElementById("js-errors");
  window.addEventListener("error", function (e) {
    errors.hidden = false;
    errors.textContent += (e.message || "error") + "\n";
  });
  var data = JSON.parse(document.getElementById("details-data").textContent);
  var body = document.body;
  var detailsBody = document.getElementById("details-body");

  function el(tag, text, cls) {
    var e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = text;
    if (cls) e.className = cls;
    return e;
  }
  function table(rows) {
    var t = el("table");
    rows.forEach(function (r) {
      var tr = el("tr");
      r.forEach(function (c) { tr.appendChild(el("td", String(c))); });
      t.appendChild(tr);
    });
    return t;
  }
  function showDetails(key) {
    var d = data[key];
    detailsBody.textContent = "";
    if (!d) { detailsBody.appendChild(el("p", key)); return; }
    detailsBody.appendChild(el("h3", d.title));
    if (d.name) detailsBody.appendChild(el("p", "node: " + d.name));
    if (d.origin) detailsBody.appendChild(el("p", "from: " + d.origin));
    if (d.status) {
      var p = el("p", "status: ");
      p.appendChild(el("span", d.status, "tag st-" + d.status));
      detailsBody.appendChild(p);
    }
    if (d.fields && d.fields.length) {
      detailsBody.appendChild(el("h3", "fields"));
      detailsBody.appendChild(table(d.fields));
    }
    if (d.tensors && d.tensors.length) {
      detailsBody.appendChild(el("h3", "tensors (IR tensor \u2192 DML view)"));
      detailsBody.appendChild(table(d.tensors.map(function (t) {
        var type = t[3] ? t[2] + " \u2192 " + t[3] : t[2];
        return [t[0], t[1] + (t[4] ? " (constant)" : ""), type];
      })));
    }
    if (d.members) {
      detailsBody.appendChild(el("h3", "members"));
      detailsBody.appendChild(table(d.members.map(function (m) { return [m[0], m[1]]; })));
    }
    if (d.notes && d.notes.length) {
      detailsBody.appendChild(el("h3", "notes"));
      var ul = el("ul");
      d.notes.forEach(function (n) { ul.appendChild(el("li", n)); });
      detailsBody.appendChild(ul);
    }
  }
  function clear(cls) {
    Array.prototype.forEach.call(document.querySelectorAll("." + cls), function (e) {
      e.classList.remove(cls);
    });
  }
  function visible(e) { return e.offsetParent !== null || e.getClientRects().length > 0; }
  function byKey(key) {
    return Array.prototype.filter.call(document.querySelectorAll(".node[data-key]"),
      function (e) { return e.getAttribute("data-key") === key; });
  }
  // the details box beside the panel of the node selected: a subgraph's drawing (its
  // ".held" box) far down the page takes it, the main panels take it back
  var details = document.getElementById("details");
  var home = details.parentNode;
  function placeDetails(panel) {
    var held = panel ? panel.closest(".held") : null;
    var into = held || home;
    if (details.parentNode !== into) into.appendChild(details);
  }
  function select(key) {
    var copies = byKey(key);
    if (!copies.length) return false;
    clear("sel"); clear("linked");
    copies.forEach(function (e) { e.classList.add("sel"); });
    var node = copies.filter(visible)[0] || copies[0];
    var groups = (node.getAttribute("data-groups") || "").split(" ").filter(Boolean);
    var panel = node.closest(".panel");
    placeDetails(panel);
    var first = null;
    groups.forEach(function (g) {
      var sel = '[data-groups~="' + g + '"]';
      Array.prototype.forEach.call(document.querySelectorAll(sel), function (e) {
        if (e.classList.contains("sel")) return;
        e.classList.add("linked");
        if (!first && e.classList.contains("node") && e.closest(".panel") !== panel &&
            visible(e)) first = e;
      });
    });
    if (first && first.scrollIntoView) first.scrollIntoView({block: "center", inline: "center"});
    showDetails(key);
    return true;
  }
  document.addEventListener("click", function (e) {
    var node = e.target.closest ? e.target.closest(".node") : null;
    if (node) { select(node.getAttribute("data-key")); return; }
    var row = e.target.closest ? e.target.closest("tr[data-groups]") : null;
    if (row) {
      var g = row.getAttribute("data-groups");
      var target = g && document.querySelector('.panel .node[data-groups~="' + g + '"]');
      if (target) select(target.getAttribute("data-key"));
    }
  });
  document.addEventListener("keydown", function (e) {
    if (e.key === "Enter" && e.target.classList && e.target.classList.contains("node")) {
      select(e.target.getAttribute("data-key"));
    }
  });
  Array.prototype.forEach.call(document.querySelectorAll(".filter input"), function (box) {
    box.addEventListener("change", function () {
      body.classList.toggle("hide-" + box.getAttribute("data-status"), !box.checked);
    });
  });
  var collapse = document.getElementById("collapse");
  collapse.addEventListener("change", function () {
    body.classList.toggle("collapsed", collapse.checked);
  });
  var search = document.getElementById("search");
  search.addEventListener("input", function () {
    var q = search.value.trim().toLowerCase();
    clear("match");
    Array.prototype.forEach.call(document.querySelectorAll("table.report tbody tr"),
      function (tr) { tr.hidden = q !== "" && tr.textContent.toLowerCase().indexOf(q) < 0; });
    if (!q) return;
    var first = null;
    Array.prototype.forEach.call(document.querySelectorAll(".panel .node"), function (n) {
      var t = n.querySelector("title");
      if (t && t.textContent.toLowerCase().indexOf(q) >= 0) {
        n.classList.add("match");
        if (!first && visible(n)) first = n;
      }
    });
    if (first && first.scrollIntoView) first.scrollIntoView({block: "center"});
  });
  var m = /(?:^#|&)select=([^&]+)/.exec(location.hash);
  if (m) select(decodeURIComponent(m[1]));
  body.setAttribute("data-ready", "1");
})();
"""
