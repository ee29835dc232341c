"""Drawings of a lowered graph: DOT (and SVG through Graphviz) and a self-contained HTML report.

``write_viz(path, original, lowered, parity=None)`` picks the format from the file suffix and
returns one line for the user; ``to_dot`` and ``html_report`` return the text itself. With
``focus=NAMES`` (and ``depth``), or a ``Focus`` from ``focus_on`` given to those two, only
the nodes near the named ones are drawn.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from dmlgraph.ir import Graph
from dmlgraph.viz.describe import STATUS_STYLES, NodeView, describe_graph
from dmlgraph.viz import dot as _dot
from dmlgraph.viz.dot import VizError, graphviz, render_svg, to_dot, write_dot
from dmlgraph.viz.focus import DEFAULT_DEPTH, Focus, focus_on
from dmlgraph.viz.html import html_report, parity_sections, write_html

#: Output suffix -> what ``write_viz`` writes.
FORMATS = {".dot": "Graphviz DOT", ".gv": "Graphviz DOT", ".svg": "SVG (through Graphviz)",
           ".html": "HTML report", ".htm": "HTML report"}


def check_target(path: str | Path) -> None:
    """Refuse a drawing that could not be written, before any work: an unknown suffix, or
    .svg without Graphviz's ``dot``."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in FORMATS:
        known = ", ".join(FORMATS)
        if not suffix and path.name.lower() in FORMATS:  # Path(".html").suffix is ""
            raise VizError(f"{path}: {path.name!r} names a hidden file with no suffix, not a "
                           f"format; give the file a name, as 'graph{path.name}'")
        told = f"from {suffix!r}" if suffix else "without a suffix"  # not from "'no suffix'"
        raise VizError(f"{path}: cannot tell the format {told} (use one of {known})")
    if suffix == ".svg" and _dot.graphviz() is None:  # read where tests replace it
        raise _dot.no_graphviz(path)


def write_viz(
    path: str | Path,
    original: Graph,
    lowered: Graph,
    parity: Any = None,
    *,
    title: str | None = None,
    focus: str | Iterable[str] | None = None,
    depth: int = DEFAULT_DEPTH,
) -> str:
    """Write the drawing ``path`` asks for by its suffix; returns one line saying what was
    written (.svg needs Graphviz's ``dot``: without it, a VizError says what to write).

    ``original`` is the graph given to ``lower`` and ``lowered`` its result (a graph not
    lowered is refused: nothing says what its nodes became); DOT and SVG draw the lowered
    graph, HTML both. ``parity`` (a ParityReport, its JSON form or a list of
    per-output records) adds a parity section to the HTML report. ``focus`` (a name or
    names of nodes or tensors of ``original``) draws only the nodes within ``depth`` edges
    of them and what they became (``focus_on``); an unknown name is a VizError offering the
    closest names.
    """
    path = Path(path)
    check_target(path)
    _dot.check_pair("write_viz", original, lowered, title)
    if focus is None and depth != DEFAULT_DEPTH:
        raise VizError(f"depth {depth!r} says how far a focus reaches; give focus too")
    selected = None if focus is None else focus_on(original, focus, depth)
    suffix = path.suffix.lower()
    try:
        if suffix in (".html", ".htm"):
            return write_html(original, lowered, path, parity, title=title, focus=selected)
        dot = to_dot(lowered, title=title, focus=selected)
        if suffix == ".svg":
            return render_svg(dot, path)
        write_dot(dot, path)
    except OSError as exc:  # a missing folder, no permission: as tensorio says it
        raise VizError(f"{path}: cannot write: {exc.strerror or exc}") from None
    return f"wrote {path}"


__all__ = [
    "FORMATS",
    "STATUS_STYLES",
    "Focus",
    "NodeView",
    "VizError",
    "describe_graph",
    "check_target",
    "focus_on",
    "graphviz",
    "html_report",
    "parity_sections",
    "render_svg",
    "to_dot",
    "write_dot",
    "write_html",
    "write_viz",
]
