"""Overhead: what a node costs beyond moving its bytes, from chains of 1,000 tiny nodes.

Each chain (``cases.chain_cases``) moves a few KB per node, so a run's time over its node count
is the per-node cost of the engine: dispatch, binding, allocation. onnxruntime is measured at
ORT_ENABLE_ALL (its default, which may rewrite the graph) and ORT_DISABLE_ALL (every node runs
as written); the target is against both. ``lowered nodes`` says how many nodes dmlgraph
actually ran, in case lowering merged some.
"""

from __future__ import annotations

import gc
from dataclasses import dataclass

from benchmarks.cases import chain_cases
from benchmarks.engines import Ours, session, verify
from benchmarks.results import Progress, Section, Target
from benchmarks.settings import Settings
from benchmarks.timing import Timing, measure, ratio

#: ours / onnxruntime per-node time may be at most this.
LIMIT = 2.0


@dataclass(frozen=True)
class OverheadRow:
    chain: str
    nodes: int
    lowered_nodes: int
    lowered_as: str
    verified: tuple[str, ...]  # the runs compared bit for bit with ORT_DISABLE_ALL's
    ours: Timing  # one run of the whole chain
    ort_all: Timing  # ORT_ENABLE_ALL
    ort_none: Timing  # ORT_DISABLE_ALL
    us_per_node: dict[str, float]
    ratios: dict[str, float | None]


def run(settings: Settings, progress: Progress = lambda _: None) -> Section:
    rows = []
    for case in chain_cases(settings.chain_length):
        progress(f"overhead: {case.name}")
        feeds = case.feeds()
        ours = Ours(case.model, settings.threads)
        ort_all = session(case.model, settings.threads, optimize=True)
        ort_none = session(case.model, settings.threads, optimize=False)
        expected = dict(zip([o.name for o in ort_none.get_outputs()], ort_none.run(None, feeds)))
        verify(f"{case.name}: dmlgraph", ours.run(feeds), expected)
        verify(f"{case.name}: onnxruntime ORT_ENABLE_ALL",
               dict(zip(expected, ort_all.run(None, feeds))), expected)
        n, w = settings.chain_repeats, settings.warmup
        timings = {
            "ours": measure(lambda: ours.run(feeds), n, w),
            "ort_all": measure(lambda: ort_all.run(None, feeds), n, w),
            "ort_none": measure(lambda: ort_none.run(None, feeds), n, w),
        }
        nodes = settings.chain_length
        rows.append(OverheadRow(
            chain=case.name,
            nodes=nodes,
            lowered_nodes=len(ours.graph.nodes),
            lowered_as=ours.lowered_as(),
            verified=("ours", "ort_all"),
            us_per_node={k: t.median / nodes * 1e6 for k, t in timings.items()},
            ratios={
                "ours/ort_all": ratio(timings["ours"].median, timings["ort_all"].median),
                "ours/ort_none": ratio(timings["ours"].median, timings["ort_none"].median),
            },
            **timings,  # type: ignore[arg-type]
        ))
        gc.collect()
    found = (
        Target.worst_of("overhead: ours/ORT per node (ORT_ENABLE_ALL)",
                        [(r.chain, r.ratios["ours/ort_all"]) for r in rows], high=LIMIT),
        Target.worst_of("overhead: ours/ORT per node (ORT_DISABLE_ALL)",
                        [(r.chain, r.ratios["ours/ort_none"]) for r in rows], high=LIMIT),
    )
    notes = tuple(
        f"{r.chain}: lowering left {r.lowered_nodes} nodes of {r.nodes}"
        for r in rows if r.lowered_nodes != r.nodes
    )
    return Section("overhead", {"chains": tuple(rows)}, found, notes)
