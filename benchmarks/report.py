"""Tables for the terminal (rich) and the JSON document of a run."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
from rich.table import Table

from benchmarks.execution import size_label
from benchmarks.results import Section, Target
from benchmarks.settings import Settings

ROOT = Path(__file__).resolve().parent.parent


def machine() -> dict[str, Any]:
    """What the numbers were measured on and with."""
    try:
        commit = subprocess.run(["git", "describe", "--always", "--dirty"], cwd=ROOT,
                                capture_output=True, text=True, check=False).stdout.strip()
    except OSError:
        commit = ""
    return {
        "cpu_count": os.cpu_count(),
        "processor": platform.processor() or platform.machine(),
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "numpy": np.__version__,
        "onnx": onnx.__version__,
        "onnxruntime": ort.__version__,
        "commit": commit,
    }


def document(settings: Settings, sections: list[Section], seconds: float) -> dict[str, Any]:
    """The JSON of a run: machine, settings, every section's rows and targets, the summary."""
    return {
        "machine": machine(),
        "settings": asdict(settings),
        "seconds": seconds,
        "sections": {s.name: s.to_json() for s in sections},
        "summary": [t.to_json() for s in sections for t in s.targets],
    }


def write_json(doc: dict[str, Any], path: Path) -> None:
    path.write_text(json.dumps(doc, indent=2, default=str) + "\n")


# ----------------------------------------------------------------------------- formatting


def x(value: float | None) -> str:
    """A ratio as "1.23x", or "n/a"."""
    return "n/a" if value is None else f"{value:.2f}x"


def num(value: float | None, digits: int = 2) -> str:
    return "n/a" if value is None else f"{value:,.{digits}f}"


def _short_ops(lowered_as: str) -> str:
    return lowered_as.replace("DML_OPERATOR_", "").replace("lowered: ", "")


def tables(section: Section) -> list[Table]:
    return _RENDERERS[section.name](section)


def _execution(section: Section) -> list[Table]:
    table = Table(
        title="execution: single nodes, GB/s (input bytes read + output bytes written per "
        "median run)",
        caption="alloc: engines return fresh outputs; bound: both write into caller arrays "
        "(numpy outputs=, ORT IOBinding). Ratios are of speed (theirs' median time / ours; "
        "> 1: ours faster). memcpy: the same bytes copied into a preallocated buffer, the "
        "fastest of np.copyto and the native copier on 1 or N threads (how, in brackets). DML: "
        "the descriptors, and how our native copies wrote after timing (their stores, "
        "chosen by timing both ways in their first calls). Every row was checked "
        "bit-identical against onnxruntime.",
    )
    for name in ("case", "size", "DML", "ours alloc", "ORT alloc", "ours bound", "ORT bound",
                 "memcpy", "ours/ORT alloc", "ours/ORT bound", "ours/memcpy alloc",
                 "ours/memcpy bound"):
        table.add_column(name, justify="left" if name in ("case", "DML") else "right")
    for r in section.tables["cases"]:
        g, q = r.gbps, r.ratios
        table.add_row(
            r.case, size_label(r.output_bytes), f"{_short_ops(r.lowered_as)} ({r.stores})",
            num(g["ours_alloc"]), num(g["ort_alloc"]), num(g["ours_bound"]),
            num(g["ort_bound"]), f"{num(g['memcpy'])} ({r.memcpy_threads})",
            x(q["ours/ort alloc"]), x(q["ours/ort bound"]),
            x(q["ours/memcpy alloc"]), x(q["ours/memcpy bound"]),
        )
    return [table]


def _overhead(section: Section) -> list[Table]:
    table = Table(
        title="overhead: per-node time of chains (µs per node, median run / nodes)",
        caption="ORT all: ORT_ENABLE_ALL (default graph optimizations); ORT none: "
        "ORT_DISABLE_ALL. Ratios ours/ORT; target <= 2x.",
    )
    for name in ("chain", "nodes", "lowered nodes", "ours", "ORT all", "ORT none",
                 "ours/ORT all", "ours/ORT none"):
        table.add_column(name, justify="left" if name == "chain" else "right")
    for r in section.tables["chains"]:
        u = r.us_per_node
        table.add_row(r.chain, str(r.nodes), str(r.lowered_nodes), num(u["ours"]),
                      num(u["ort_all"]), num(u["ort_none"]), x(r.ratios["ours/ort_all"]),
                      x(r.ratios["ours/ort_none"]))
    return [table]


def _lowering(section: Section) -> list[Table]:
    models = Table(
        title="lowering: real models, median ms",
        caption="ours = load(path) + lower(graph, 6_4); ORT = InferenceSession(path), CPU "
        "provider, default optimizations. Target ours/ORT <= 1x. ready (informational): the "
        "same plus a first run, where dmlgraph compiles its plan and makes its fallback "
        "sessions (onnxruntime's session has planned already). fallbacks: Slice/Concat/Pad "
        "left as ONNX nodes.",
    )
    for name in ("model", "ONNX nodes", "after folding", "load", "lower", "ours", "ORT",
                 "ours/ORT", "ours ready", "ORT ready", "ours/ORT ready", "fallbacks"):
        models.add_column(name, justify="left" if name == "model" else "right")
    for r in section.tables["models"]:
        models.add_row(r.model, str(r.onnx_nodes), str(r.imported_nodes),
                       num(r.load.median * 1e3, 1), num(r.lower.median * 1e3, 1),
                       num(r.ours.median * 1e3, 1), num(r.ort_session.median * 1e3, 1),
                       x(r.ratio), num(r.ours_ready.median * 1e3, 1),
                       num(r.ort_ready.median * 1e3, 1), x(r.ready_ratio),
                       str(len(r.fallbacks)))
    synthetic = Table(
        title="lowering: synthetic Slice/Concat/Pad graphs",
        caption="µs/node = load+lower median / nodes; without gc: fastest run minus time in "
        "the garbage collector; user, system: the fastest run's CPU time per node in each mode, "
        "and faults: its page faults per node (a graph larger than the memory earlier runs "
        "freed faults in fresh pages, billed to system time). scaling = µs/node / the smallest "
        "graph's, timed right before and after it; target 0.75..1.25. user scaling: the same "
        "of user time (informational).",
    )
    for name in ("nodes", "ours s", "load s", "lower s", "gc s", "µs/node",
                 "µs/node without gc", "user", "system", "faults", "scaling", "user scaling",
                 "ORT s", "ORT µs/node", "ours/ORT"):
        synthetic.add_column(name, justify="right")
    for r in section.tables["synthetic"]:
        synthetic.add_row(f"{r.nodes:,}", num(r.ours.median), num(r.load_s), num(r.lower_s),
                          num(r.gc_s), num(r.us_per_node, 1), num(r.us_per_node_without_gc, 1),
                          num(r.user_us_per_node, 1), num(r.system_us_per_node, 1),
                          num(r.faults_per_node), x(r.scaling), x(r.user_scaling),
                          num(r.ort_session.median), num(r.ort_us_per_node, 1), x(r.ratio))
    result = [models, synthetic]
    profile = section.extra.get("profile")
    if profile:
        for key, title, header in (
            ("top_by_cumulative", "top by cumulative time",
             "cumulative s | own s | calls | function"),
            ("growth_per_node", f"own time per node, {profile['baseline_nodes']:,} -> "
             f"{profile['nodes']:,} nodes, largest growth first", "µs/node | function"),
        ):
            table = Table(title=f"lowering: profile of load+lower, {profile['nodes']:,} "
                          f"nodes: {title}")
            table.add_column(header)
            for line in profile[key]:
                table.add_row(line)
            result.append(table)
    return result


def _memory(section: Section) -> list[Table]:
    runs = section.tables["runs"]
    method = {r.ours.method for r in runs} | {r.ort.method for r in runs}
    table = Table(
        title="memory: peak RSS increase, MB",
        caption="A fresh process per engine: after input creation, RSS is read, the peak reset "
        "(/proc/self/clear_refs) and the engine built; then the same around the first run "
        "(first: includes what the engine prepares on first use: dmlgraph's fallback sessions; "
        "onnxruntime makes its session while building, so compare build + first), then over "
        "later runs (later: beyond what the process kept from the first run); increase = peak "
        f"- RSS before (method: {', '.join(sorted(method))}). Ideal: about the output size.",
    )
    for name in ("case", "input MB", "output MB", "ours build+first", "ORT build+first",
                 "ours/ORT build+first", "ours first", "ORT first", "ours/ORT first",
                 "ours later", "ORT later", "ours/ORT later"):
        table.add_column(name, justify="left" if name == "case" else "right")
    for r in runs:
        table.add_row(r.case, num(r.input_mb, 1), num(r.output_mb, 1),
                      num(r.ours.build_first_increase_mb, 1),
                      num(r.ort.build_first_increase_mb, 1), x(r.build_first_ratio),
                      num(r.ours.first_increase_mb, 1), num(r.ort.first_increase_mb, 1),
                      x(r.first_ratio), num(r.ours.steady_increase_mb, 1),
                      num(r.ort.steady_increase_mb, 1), x(r.steady_ratio))
    return [table]


_RENDERERS = {
    "execution": _execution,
    "overhead": _overhead,
    "lowering": _lowering,
    "memory": _memory,
}


def summary(targets: list[Target]) -> Table:
    table = Table(
        title="summary: worst ratio per target",
        caption="execution: speed ratios (theirs' time / ours, must reach the limit); "
        "the rest: time ratios (ours / theirs, must stay under it) or growth of time per node",
    )
    for name in ("target", "limit", "worst", "where", "met"):
        table.add_column(name, justify="right" if name == "worst" else "left")
    for t in targets:
        met = {True: "[green]yes[/]", False: "[red]no[/]", None: "-"}[t.met]
        table.add_row(t.name, t.limit, x(t.worst), t.worst_case, met)
    return table
