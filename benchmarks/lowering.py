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

try:
    import resource
except ImportError:  # Windows: no CPU split or page faults
    resource = None  # type: ignore[assignment]

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
class Run:
    """One load + lower, and where its time went."""

    seconds: float
    load_s: float
    lower_s: float
    gc_s: float  # inside the garbage collector
    gc_full_collections: int
    # the process's CPU time in user and kernel mode, and the page faults it took (None where
    # the platform has no ``resource``): a graph larger than the memory freed by earlier runs
    # faults in fresh pages, whose cost the kernel bills to system time
    user_s: float | None
    system_s: float | None
    faults: int | None


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
    # the fastest run's CPU time per node, in user and in kernel mode, and its page faults
    # per node (None without ``resource``); user_scaling is the user time per node against
    # the smallest size's, timed around it as ``scaling`` is: what the code's own work does
    # as the graph grows, apart from the kernel's cost of fresh memory
    user_us_per_node: float | None = None
    system_us_per_node: float | None = None
    faults_per_node: float | None = None
    user_scaling: float | None = None


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
    runs = [_load_and_lower(data) for _ in range(max(1, repeats))]
    ours = Timing.of([run.seconds for run in runs])
    fastest = min(runs, key=lambda run: run.seconds)
    gc.collect()
    ort_session = measure(lambda: session(data, settings.threads), repeats, warmup=0,
                          pause_gc=False)
    return SyntheticRow(
        nodes=count,
        ours=ours,
        load_s=fastest.load_s,
        lower_s=fastest.lower_s,
        gc_s=fastest.gc_s,
        gc_full_collections=fastest.gc_full_collections,
        ort_session=ort_session,
        us_per_node=ours.median / count * 1e6,
        us_per_node_without_gc=(ours.min - fastest.gc_s) / count * 1e6,
        ort_us_per_node=ort_session.median / count * 1e6,
        scaling=None,
        ratio=ratio(ours.median, ort_session.median),
        user_us_per_node=_per_node(fastest.user_s, count),
        system_us_per_node=_per_node(fastest.system_s, count),
        faults_per_node=None if fastest.faults is None else fastest.faults / count,
    )


def _per_node(seconds: float | None, nodes: int) -> float | None:
    return None if seconds is None else seconds / nodes * 1e6


def _load_and_lower(data: bytes) -> Run:
    """One load + lower of a serialized model, after a collection."""
    gc.collect()
    with gc_watch() as collected:
        used = _usage()
        start = time.perf_counter()
        graph = load(data)
        loaded = time.perf_counter()
        lower(graph, FEATURE_LEVEL)
        done = time.perf_counter()
        after = _usage()
    user = system = faults = None
    if used is not None and after is not None:
        user, system = after[0] - used[0], after[1] - used[1]
        faults = int(after[2] - used[2])
    return Run(done - start, loaded - start, done - loaded, collected["seconds"],
               int(collected["full"]), user, system, faults)


def _usage() -> tuple[float, float, int] | None:
    """The process's user and system CPU seconds and minor page faults so far."""
    if resource is None:
        return None
    used = resource.getrusage(resource.RUSAGE_SELF)
    return used.ru_utime, used.ru_stime, used.ru_minflt


def _per_node_run(nodes: int) -> tuple[float, float | None]:
    """One load + lower of the synthetic graph of ``nodes`` nodes: µs per node, and user
    CPU µs per node (None without ``resource``)."""
    model = synthetic_graph(nodes).model
    run = _load_and_lower(model.SerializeToString())
    count = len(model.graph.node)
    return run.seconds / count * 1e6, _per_node(run.user_s, count)


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
        before = _per_node_run(small)
        row = measure_synthetic(nodes, repeats, settings)
        after = _per_node_run(small)
        base = (before[0] + after[0]) / 2
        user_base = None
        if before[1] is not None and after[1] is not None:
            user_base = (before[1] + after[1]) / 2
        synthetic.append(replace(
            row,
            scaling=row.us_per_node / base,
            user_scaling=ratio(row.user_us_per_node, user_base),
        ))
        gc.collect()

    notes = [f"{m.model}: {f}" for m in models for f in m.fallbacks]
    notes += scaling_notes(synthetic)
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
            "lowering: user CPU time per node vs smallest synthetic graph",
            [(f"{r.nodes:,} nodes", r.user_scaling) for r in synthetic[1:]],
        ),
        Target.worst_of(
            "lowering: ours / ORT session, synthetic graphs",
            [(f"{r.nodes:,} nodes", r.ratio) for r in synthetic],
        ),
    )


def scaling_notes(synthetic: list[SyntheticRow]) -> list[str]:
    """Where the time per node went, for each graph past the scaling band: its user and
    system CPU time and page faults per node against the smallest graph's (informational:
    the smallest graph reuses memory freed by earlier runs, a large one faults in fresh
    pages, whose cost the kernel bills to system time)."""
    low, high = SCALING_BAND
    if not synthetic:
        return []
    small = synthetic[0]

    def split(r: SyntheticRow) -> str:
        if r.user_us_per_node is None or r.system_us_per_node is None:
            return f"{r.us_per_node:.1f} µs/node"
        return (f"{r.us_per_node:.1f} µs/node (user {r.user_us_per_node:.1f}, system "
                f"{r.system_us_per_node:.1f}, {r.faults_per_node:.2f} page faults/node)")

    return [
        f"scaling at {r.nodes:,} nodes is {r.scaling:.2f}x: {split(r)} against {small.nodes:,} "
        f"nodes' {split(small)}; user time alone scales "
        + ("n/a" if r.user_scaling is None else f"{r.user_scaling:.2f}x")
        for r in synthetic[1:]
        if r.scaling is not None and not low <= r.scaling <= high
    ]
