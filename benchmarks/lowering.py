"""Lowering: ``load`` + ``lower`` against onnxruntime's session creation, and its scaling.

Real models: the repo's four ONNX files, each timed from its path (``load`` parses, checks,
infers shapes and folds; ``lower`` runs the passes) against ``InferenceSession(path)`` on the
CPU provider (which parses, optimizes and plans). Synthetic graphs of Slice/Concat/Pad blocks
of growing size show whether the time per node stays flat; the garbage collector's share is
measured too (``gc.callbacks``), since with many live objects each full collection walks them
all and makes import super-linear. When the per-node time grows beyond the target, or a graph
takes longer than ``profile_over_s``, the smallest and a larger size are profiled and the hot
spots recorded, with the functions whose time per node grows most.
"""

from __future__ import annotations

import cProfile
import gc
import pstats
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace

import onnx

from backends import get_backend
from benchmarks.cases import real_model_feeds, real_model_path, synthetic_graph
from benchmarks.engines import FEATURE_LEVEL, fallbacks, session
from benchmarks.results import Progress, Section, Target
from benchmarks.settings import Settings
from benchmarks.timing import Timing, collector_paused, measure, measure_together, ratio
from dmlgraph import load
from lowering import lower

#: Real models: ours (load + lower) may take at most this multiple of onnxruntime's session.
REAL_MODEL_LIMIT = 1.0
#: Synthetic graphs: time per node at each size within this band of the smallest size's.
SCALING_BAND = (0.75, 1.25)
PROFILE_MAX_NODES = 10_000
PROFILE_TOP = 15


@dataclass(frozen=True)
class ModelRow:
    model: str
    onnx_nodes: int
    imported_nodes: int  # after folding at import
    lowered_nodes: int  # DML and ONNX nodes of the lowered graph
    fallbacks: tuple[str, ...]  # Slice/Concat/Pad nodes left as ONNX nodes
    load: Timing
    lower: Timing
    ours: Timing  # load + lower, run together
    ort_session: Timing
    ratio: float | None  # ours / ort_session (medians)
    # informational: ready to answer, i.e. the above plus a first run: dmlgraph compiles its
    # plan and makes its fallback sessions on first use, where onnxruntime's session has
    # planned already
    ours_ready: Timing
    ort_ready: Timing
    ready_ratio: float | None


@dataclass(frozen=True)
class SyntheticRow:
    nodes: int
    ours: Timing  # load + lower
    load_s: float  # the split of the fastest run
    lower_s: float
    gc_s: float  # time inside the garbage collector during the fastest run
    gc_full_collections: int
    ort_session: Timing
    us_per_node: float  # ours median / nodes
    us_per_node_without_gc: float
    ort_us_per_node: float
    scaling: float | None  # us_per_node / the smallest size's, timed around it (None for it)
    ratio: float | None  # ours / ort_session


@contextmanager
def gc_watch() -> Iterator[dict[str, float]]:
    """Seconds spent collecting, and full (generation 2) collections, while the block runs."""
    stats = {"seconds": 0.0, "full": 0}
    started: list[float] = []

    def callback(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            started.append(time.perf_counter())
        elif started:
            stats["seconds"] += time.perf_counter() - started.pop()
            stats["full"] += info.get("generation") == 2

    gc.callbacks.append(callback)
    try:
        yield stats
    finally:
        gc.callbacks.remove(callback)


def measure_model(name: str, settings: Settings) -> ModelRow:
    path = real_model_path(name)
    onnx_nodes = len(onnx.load(path, load_external_data=False).graph.node)
    graph = load(path)
    lowered = lower(graph, FEATURE_LEVEL)
    n = settings.model_repeats
    together = measure_together(  # in turns: the VM's speed drifts (see timing.py)
        {
            "ours": lambda: lower(load(path), FEATURE_LEVEL),
            "ort": lambda: session(path, settings.threads),
        },
        n,
        warmup=1,
        pause_gc=False,
    )
    ours, ort_session = together["ours"], together["ort"]
    feeds = real_model_feeds(name)

    def ours_ready() -> None:
        get_backend("numpy", threads=settings.threads).run(
            lower(load(path), FEATURE_LEVEL), feeds
        )

    def ort_ready() -> None:
        session(path, settings.threads).run(None, feeds)

    ready = measure_together(
        {"ours": ours_ready, "ort": ort_ready}, n, warmup=1, pause_gc=False
    )
    return ModelRow(
        model=name,
        onnx_nodes=onnx_nodes,
        imported_nodes=len(graph.nodes),
        lowered_nodes=len(lowered.nodes),
        fallbacks=fallbacks(lowered),
        load=measure(lambda: load(path), n, warmup=0, pause_gc=False),
        lower=measure(lambda: lower(graph, FEATURE_LEVEL), n, warmup=0, pause_gc=False),
        ours=ours,
        ort_session=ort_session,
        ratio=ratio(ours.median, ort_session.median),
        ours_ready=ready["ours"],
        ort_ready=ready["ort"],
        ready_ratio=ratio(ready["ours"].median, ready["ort"].median),
    )


def measure_synthetic(nodes: int, repeats: int, settings: Settings) -> SyntheticRow:
    """Load + lower from serialized bytes (as onnxruntime gets them), fresh every repeat."""
    case = synthetic_graph(nodes)
    data = case.model.SerializeToString()
    count = len(case.model.graph.node)
    splits = [_load_and_lower(data) for _ in range(max(1, repeats))]
    samples = [total for total, *_ in splits]
    _, load_s, lower_s, collected = min(splits, key=lambda s: s[0])
    ours = Timing.of(samples)
    gc.collect()
    ort_session = measure(lambda: session(data, settings.threads), repeats, warmup=0,
                          pause_gc=False)
    return SyntheticRow(
        nodes=count,
        ours=ours,
        load_s=load_s,
        lower_s=lower_s,
        gc_s=collected["seconds"],
        gc_full_collections=int(collected["full"]),
        ort_session=ort_session,
        us_per_node=ours.median / count * 1e6,
        us_per_node_without_gc=(ours.min - collected["seconds"]) / count * 1e6,
        ort_us_per_node=ort_session.median / count * 1e6,
        scaling=None,
        ratio=ratio(ours.median, ort_session.median),
    )


def _load_and_lower(data: bytes) -> tuple[float, float, float, dict[str, float]]:
    """One load + lower of a serialized model, after a collection: (seconds in all, in
    ``load``, in ``lower``, the collector's share during it)."""
    gc.collect()
    with gc_watch() as collected:
        start = time.perf_counter()
        graph = load(data)
        loaded = time.perf_counter()
        lower(graph, FEATURE_LEVEL)
        done = time.perf_counter()
    return done - start, loaded - start, done - loaded, dict(collected)


def _us_per_node(nodes: int) -> float:
    """One load + lower of the synthetic graph of ``nodes`` nodes, in µs per node."""
    model = synthetic_graph(nodes).model
    return _load_and_lower(model.SerializeToString())[0] / len(model.graph.node) * 1e6


Profile = dict[str, tuple[int, float, float]]  # function -> (calls, own s, cumulative s)


def _profile(nodes: int) -> Profile:
    data = synthetic_graph(nodes).model.SerializeToString()
    profiler = cProfile.Profile()
    with collector_paused():  # a collection's pause would be billed to whatever function ran
        profiler.enable()
        lower(load(data), FEATURE_LEVEL)
        profiler.disable()
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    return {
        f"{'/'.join(file.split('/')[-2:])}:{line}({func})": (calls, own, cumulative)
        for (file, line, func), (_, calls, own, cumulative, _) in stats.items()
    }


def profile(small: int, large: int, top: int = PROFILE_TOP) -> dict[str, object]:
    """load + lower of two synthetic graphs under cProfile, the collector paused (its share is
    the ``gc_s`` column): the larger one's top functions by cumulative and by own time
    ("cumulative s | own s | calls | function"), and the functions whose own time per node
    grows most from the smaller to the larger ("µs/node small -> large | function"): where
    super-linear time comes from."""
    base, big = _profile(small), _profile(large)

    def line(name: str) -> str:
        calls, own, cumulative = big[name]
        return f"{cumulative:7.2f} s | {own:6.2f} s | {calls:8d} | {name}"

    def per_node(p: Profile, name: str, nodes: int) -> float:
        return p[name][1] / nodes * 1e6 if name in p else 0.0

    growth = sorted(big, key=lambda n: per_node(big, n, large) - per_node(base, n, small),
                    reverse=True)
    return {
        "nodes": large,
        "baseline_nodes": small,
        "top_by_cumulative": [line(n) for n in sorted(big, key=lambda n: -big[n][2])[:top]],
        "top_by_own": [line(n) for n in sorted(big, key=lambda n: -big[n][1])[:top]],
        "growth_per_node": [
            f"{per_node(base, n, small):6.1f} -> {per_node(big, n, large):6.1f} µs | {n}"
            for n in growth[:top]
        ],
    }


def run(settings: Settings, progress: Progress = lambda _: None) -> Section:
    models: list[ModelRow] = []
    for name in settings.models:
        progress(f"lowering: {name}")
        models.append(measure_model(name, settings))
    synthetic: list[SyntheticRow] = []
    for nodes, repeats in zip(settings.synthetic_nodes, settings.synthetic_repeats):
        progress(f"lowering: synthetic graph of {nodes:,} nodes")
        if not synthetic:
            synthetic.append(measure_synthetic(nodes, repeats, settings))
            continue
        # the smallest graph again right before and after: a large graph takes a minute, in
        # which this VM's speed can drift by 30%, so its time per node is compared with the
        # smallest's around it rather than with one taken minutes earlier
        small = synthetic[0].nodes
        before = _us_per_node(small)
        row = measure_synthetic(nodes, repeats, settings)
        base = (before + _us_per_node(small)) / 2
        synthetic.append(replace(row, scaling=row.us_per_node / base))
        gc.collect()

    notes = [f"{m.model}: {f}" for m in models for f in m.fallbacks]
    found = targets(models, synthetic)
    extra: dict[str, object] = {}
    slow = [r for r in synthetic if r.ours.median > settings.profile_over_s]
    if synthetic and (found[1].met is False or slow):
        small = synthetic[0].nodes
        large = max(small, min(PROFILE_MAX_NODES, max(r.nodes for r in synthetic)))
        progress(f"lowering: profiling synthetic graphs of {small:,} and {large:,} nodes")
        extra["profile"] = profile(small, large)
        notes.append(f"time per node grows with graph size; profiles of {small:,} and "
                     f"{large:,} nodes recorded")
    tables = {"models": tuple(models), "synthetic": tuple(synthetic)}
    return Section("lowering", tables, found, tuple(notes), extra=extra)


def targets(models: list[ModelRow], synthetic: list[SyntheticRow]) -> tuple[Target, ...]:
    low, high = SCALING_BAND
    return (
        Target.worst_of(
            "lowering: ours (load+lower) / ORT session, real models",
            [(m.model, m.ratio) for m in models],
            high=REAL_MODEL_LIMIT,
        ),
        Target.worst_of(
            "lowering: time per node vs smallest synthetic graph",
            [(f"{r.nodes:,} nodes", r.scaling) for r in synthetic[1:]],
            low=low,
            high=high,
        ),
        Target.worst_of(
            "lowering: ours / ORT session, synthetic graphs",
            [(f"{r.nodes:,} nodes", r.ratio) for r in synthetic],
        ),
    )
