"""Overhead: what a node costs beyond moving its bytes, from chains of 1,000 tiny nodes.

Each chain (``cases.chain_cases``) moves a few hundred bytes to a few KB per node, so a run's
time over its node count is the per-node cost of the engine: dispatch, binding, allocation.
The three engines run in turns; each is checked bit for bit before timing and again after,
on new values in the same feed arrays. onnxruntime is measured at
ORT_ENABLE_ALL (its default, which may rewrite the graph) and ORT_DISABLE_ALL (every node runs
as written); the target is against both. ``lowered nodes`` says how many nodes dmlgraph
actually ran, in case lowering merged some.
"""

from __future__ import annotations

import gc
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import onnxruntime as ort

from benchmarks.cases import chain_cases
from benchmarks.engines import Ours, change_in_place, session, verify
from benchmarks.results import Progress, Section, Target
from benchmarks.settings import Settings
from benchmarks.timing import Timing, measure_together, ratio

#: ours / onnxruntime per-node time may be at most this.
LIMIT = 2.0


@dataclass(frozen=True)
class OverheadRow:
    chain: str
    nodes: int
    lowered_nodes: int
    joined_in_place: int  # JOIN inputs the plan writes in place: copies it does not make
    lowered_as: str
    verified: tuple[str, ...]  # the runs compared bit for bit with ORT_DISABLE_ALL's
    ours: Timing  # one run of the whole chain
    ort_all: Timing  # ORT_ENABLE_ALL
    ort_none: Timing  # ORT_DISABLE_ALL
    us_per_node: dict[str, float]
    ratios: dict[str, float | None]


def _verify(what: str, feeds: Mapping[str, np.ndarray], names: list[str], ours: Ours,
            ort_all: ort.InferenceSession, ort_none: ort.InferenceSession) -> tuple[str, ...]:
    """Ours and ORT_ENABLE_ALL bit for bit against ORT_DISABLE_ALL; the runs compared."""
    expected = dict(zip(names, ort_none.run(None, feeds)))
    verify(f"{what}: dmlgraph", ours.run(feeds), expected)
    verify(f"{what}: onnxruntime ORT_ENABLE_ALL",
           dict(zip(expected, ort_all.run(None, feeds))), expected)
    return ("ours", "ort_all")


def run(settings: Settings, progress: Progress = lambda _: None) -> Section:
    rows = []
    for case in chain_cases(settings.chain_length):
        progress(f"overhead: {case.name}")
        feeds = case.feeds()
        ours = Ours(case.model, settings.threads)
        ort_all = session(case.model, settings.threads, optimize=True)
        ort_none = session(case.model, settings.threads, optimize=False)
        names = [o.name for o in ort_none.get_outputs()]
        verified = _verify(case.name, feeds, names, ours, ort_all, ort_none)
        n, w = settings.chain_repeats, settings.warmup
        timings = measure_together({  # in turns, as the other sections: drift falls alike
            "ours": lambda: ours.run(feeds),
            "ort_all": lambda: ort_all.run(None, feeds),
            "ort_none": lambda: ort_none.run(None, feeds),
        }, n, w)
        change_in_place(feeds)  # a timed run must have computed: new values, new answers
        _verify(case.name + " (after timing)", feeds, names, ours, ort_all, ort_none)
        nodes = settings.chain_length
        rows.append(OverheadRow(
            chain=case.name,
            nodes=nodes,
            lowered_nodes=len(ours.graph.nodes),
            joined_in_place=ours.joined_in_place(),
            lowered_as=ours.lowered_as(),
            verified=verified,
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
    ) + tuple(
        f"{r.chain}: the plan writes {r.joined_in_place} JOIN inputs in place (their copies "
        "are gone; onnxruntime makes them), so its time per node is below the others'"
        for r in rows if r.joined_in_place
    )
    return Section("overhead", {"chains": tuple(rows)}, found, notes)
