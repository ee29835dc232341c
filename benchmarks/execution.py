"""Execution: one Slice, Concat or Pad node at 1/16/128 MB, against onnxruntime and memcpy.

Two modes compare like with like. "alloc": both engines return fresh outputs
(``backend.run(graph, feeds)`` against ``sess.run(None, feeds)``). "bound": both write into
arrays the caller allocated once (``backend.run(..., outputs=...)`` against an onnxruntime
IOBinding); "n/a" where the backend does not take ``outputs=`` yet. The memcpy bound copies the
same number of bytes into a preallocated buffer, on one thread or on ``threads`` workers,
whichever is faster: an engine that reads its input once and writes its output once can at
best match it. Bytes moved = input bytes the node needs
(a slice's selected elements, all of a concat's or pad's inputs) + output bytes written.

Ratios here are of speed, as the targets are stated (theirs' median time / ours: above 1, ours
is faster): at 16 MB and up, ours must be at least as fast as onnxruntime and reach 0.8 of the
memcpy bound. All are timed alike, as groups of calls that read one source and write two
destinations in turns: an engine's two modes over the case's inputs, one call each per round
in a shuffled order (``measure_together``), and each memcpy way on its own, alternating between
two destinations of its own; the groups alternate ``SEGMENTS`` times with a pause between
(``measure_alternating``). Groups are never timed in turns with each other: onnxruntime's idle
intra-op threads spin for a while after each run and would take a core from dmlgraph's copy
threads on a small machine; and a call finds in cache what the call before it left there, so
at 16 MB (this VM's last-level cache is 32 MB) a group whose calls share their source runs
faster than one mixed with calls over other memory (measured on an 8-input Concat at 16 MB,
outputs bound: 0.57-0.73x onnxruntime with dmlgraph's two modes timed in turns with four memcpy
ways over buffers of their own, and onnxruntime's with each other only; 0.89-1.18x timed alike,
in five runs). This VM's memory bandwidth drifts within a minute; so timed, the drift cannot
favour one side of a ratio either.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial

import numpy as np

from backends.numpy.threads import PIECE_BYTES, Batch, Program, cut
from benchmarks.cases import Case, execution_cases
from benchmarks.engines import Ours, OrtBound, change_in_place, fallbacks, session, verify
from benchmarks.results import Progress, Section, Target
from benchmarks.settings import Settings
from benchmarks.timing import Timing, measure_alternating, ratio



@dataclass(frozen=True)
class ExecutionRow:
    case: str
    op: str
    output_bytes: int
    bytes_moved: int
    lowered_as: str
    fallbacks: tuple[str, ...]  # Slice/Concat/Pad nodes left as ONNX nodes (expected: none)
    verified: tuple[str, ...]  # the outputs compared bit for bit with onnxruntime's alloc run
    ours_alloc: Timing
    ort_alloc: Timing
    ours_bound: Timing | None  # None: the backend takes no ``outputs=``
    ort_bound: Timing
    memcpy: Timing
    memcpy_threads: str  # how the bound was reached: threads, "native" for the native copier
    stores: str  # how our native copies wrote after the timed runs (``Ours.stores``)
    gbps: dict[str, float | None]
    ratios: dict[str, float | None]


#: Segments of a case's timing, ours and onnxruntime alternating (``measure_alternating``).
SEGMENTS = 3
#: Seconds to wait after onnxruntime's runs, for its idle threads to stop spinning.
SETTLE_S = 0.05


class MemcpyBound:
    """A copy of half the moved bytes (each byte is read once and written once) into a
    preallocated buffer, every way this machine can make it: ``np.copyto`` on one thread or
    split across ``workers`` threads (the calling thread copies the first part, copy threads the
    rest, handed over as the backend's own NumPy copies are, ``threads.Batch``), and the
    native copier (``threads.Program``, where it is built) on one thread, and on ``workers``
    in fixed shares or in pieces of ``threads.PIECE_BYTES`` taken as the threads free up (as
    the backend's own native copies are). The fastest is the bound: below a few hundred KB a
    hand-over costs more than the copy.

    Each way reads one source and writes two destinations in turns, as an engine's two modes
    read one case's inputs and write two outputs (see the module's docstring)."""

    def __init__(self, workers: int, bytes_moved: int) -> None:
        self.elements = max(workers, bytes_moved // 2 // 4)
        self.workers = workers
        self.pieces = max(workers, self.elements * 4 // PIECE_BYTES)
        self.source = np.ones(self.elements, dtype=np.float32)
        makers: dict[str, Callable[[np.ndarray], Callable[[], object]]] = {
            "1": lambda dst: partial(np.copyto, dst, self.source),
            f"{workers}": lambda dst: Batch([[part] for part in self._parts(dst)]),
        }
        if Program is not None:
            makers["1 native"] = lambda dst: Program([[(dst, self.source)]])
            makers[f"{workers} native"] = lambda dst: Program(
                [[part] for part in self._parts(dst)])
            makers[f"{workers} native pieces"] = lambda dst: Program(
                [[piece] for piece in cut(dst, self.source, self.pieces)], threads=workers)
        #: way -> its two destinations, every page touched before timing
        self.destinations: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self.ways: dict[str, Callable[[], None]] = {}
        for name, make in makers.items():
            pair = (np.full(self.elements, 2.0, dtype=np.float32),
                    np.full(self.elements, 2.0, dtype=np.float32))
            self.destinations[name] = pair
            self.ways[name] = _InTurns(make(pair[0]), make(pair[1]))

    def _parts(self, dst: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
        bounds = np.linspace(0, self.elements, self.workers + 1).astype(int)
        return [(dst[a:b], self.source[a:b]) for a, b in zip(bounds[:-1], bounds[1:])]

    def timed(self) -> dict[str, Callable[[], None]]:
        """The ways, named for timing ("memcpy 2 native"...)."""
        return {f"memcpy {name}": way for name, way in self.ways.items()}

    def groups(self) -> list[dict[str, Callable[[], None]]]:
        """Each way a timing group of its own (``measure_alternating``)."""
        return [{name: way} for name, way in self.timed().items()]

    def best(self, timings: Mapping[str, Timing]) -> tuple[Timing, str]:
        """The fastest way by median, and how it copied (threads, "native" for the native
        copier), among ``timings``, which hold every way as ``timed`` names it."""
        name = min(self.timed(), key=lambda n: timings[n].median)
        return timings[name], name.removeprefix("memcpy ")


class _InTurns:
    """Two calls made in turns, one per call: a way's copies into its two destinations."""

    def __init__(self, first: Callable[[], object], second: Callable[[], object]) -> None:
        self.calls = (first, second)
        self.turn = 0

    def __call__(self) -> None:
        self.calls[self.turn]()
        self.turn ^= 1


def _gbps(timing: Timing | None, nbytes: int) -> float | None:
    return None if timing is None else timing.gbps(nbytes)


def _median(timing: Timing | None) -> float | None:
    return None if timing is None else timing.median


def measure_case(case: Case, settings: Settings, repeats: int, label: str = "") -> ExecutionRow:
    """Every engine and mode on one case; then both engines' results compared bit for bit."""
    feeds = case.feeds()
    what = f"{case.name} {label}".strip()
    w = settings.warmup
    ours = Ours(case.model, settings.threads)
    ours_result = {k: v.copy() for k, v in ours.run(feeds).items()}
    ours_fns: dict[str, Callable[[], object]] = {"ours_alloc": lambda: ours.run(feeds)}
    ours_bound: Callable[[], None] | None = None
    ours_out: dict[str, np.ndarray] = {}
    if ours.can_bind:
        ours_out = {n: np.full_like(a, np.nan) for n, a in ours_result.items()}
        ours_bound = partial(ours.run_into, feeds, ours_out)
        ours_fns["ours_bound"] = ours_bound
    moved = case.bytes_moved
    bound = MemcpyBound(settings.threads, moved)
    sess = session(case.model, settings.threads)
    names = [o.name for o in sess.get_outputs()]
    expected = dict(zip(names, sess.run(None, feeds)))
    verify(f"{what}: dmlgraph (alloc)", ours_result, expected)
    verified = ["ours_alloc"]
    if ours_bound is not None:
        ours_bound()
        verify(f"{what}: dmlgraph (outputs=)", ours_out, expected)
        verified.append("ours_bound")
    ort_out = {n: np.full_like(a, np.nan) for n, a in expected.items()}
    ort_bound = OrtBound(sess, feeds, ort_out)
    ort_bound.run()
    verify(f"{what}: onnxruntime (IOBinding)", ort_out, expected)
    verified.append("ort_bound")
    del expected, ours_result
    time.sleep(SETTLE_S)

    measured = measure_alternating(
        [
            ours_fns,
            *bound.groups(),
            {"ort_alloc": partial(sess.run, None, feeds), "ort_bound": ort_bound.run},
        ],
        repeats, w, SEGMENTS, SETTLE_S,
    )
    stores = ours.stores()
    # every mode again on new values over poisoned outputs: the timed calls computed
    change_in_place(feeds, [*ours_out.values(), *ort_out.values()])
    expected = dict(zip(names, sess.run(None, feeds)))
    verify(f"{what}: dmlgraph (alloc), after timing", ours.run(feeds), expected)
    if ours_bound is not None:
        ours_bound()
        verify(f"{what}: dmlgraph (outputs=), after timing", ours_out, expected)
    OrtBound(sess, feeds, ort_out).run()
    verify(f"{what}: onnxruntime (IOBinding), after timing", ort_out, expected)
    del sess, ort_bound, expected  # its threads go with it
    memcpy, memcpy_threads = bound.best(measured)
    timings: dict[str, Timing | None] = {
        "ours_alloc": measured["ours_alloc"],
        "ort_alloc": measured["ort_alloc"],
        "ours_bound": measured.get("ours_bound"),
        "ort_bound": measured["ort_bound"],
        "memcpy": memcpy,
    }
    med = {k: _median(t) for k, t in timings.items()}
    return ExecutionRow(
        case=case.name,
        op=case.op,
        output_bytes=case.output_bytes,
        bytes_moved=moved,
        lowered_as=ours.lowered_as(),
        fallbacks=fallbacks(ours.graph),
        verified=tuple(verified),
        memcpy_threads=memcpy_threads,
        stores=stores,
        gbps={k: _gbps(t, moved) for k, t in timings.items()},
        ratios=speed_ratios(med),
        **timings,  # type: ignore[arg-type]
    )


def speed_ratios(median: Mapping[str, float | None]) -> dict[str, float | None]:
    """Speed ratios of a case's median times: theirs' time / ours (above 1: ours is faster)."""
    return {
        "ours/ort alloc": ratio(median["ort_alloc"], median["ours_alloc"]),
        "ours/ort bound": ratio(median["ort_bound"], median["ours_bound"]),
        "ours/memcpy alloc": ratio(median["memcpy"], median["ours_alloc"]),
        "ours/memcpy bound": ratio(median["memcpy"], median["ours_bound"]),
        "ort/memcpy bound": ratio(median["memcpy"], median["ort_bound"]),
    }


def run(settings: Settings, progress: Progress = lambda _: None) -> Section:
    rows: list[ExecutionRow] = []
    notes: list[str] = []
    for size in settings.sizes:
        for case in execution_cases(size):
            progress(f"execution: {case.name} at {size_label(size)}")
            row = measure_case(case, settings, settings.repeats_for(size), size_label(size))
            rows.append(row)
            notes += [f"{case.name}: {f}" for f in row.fallbacks]
            gc.collect()
    if rows and rows[0].ours_bound is None:
        notes.append("bound mode: the numpy backend's run() takes no outputs= yet (n/a)")
    return Section("execution", {"cases": tuple(rows)}, targets(rows), tuple(notes))


#: At these output sizes and up the targets apply; smaller cases are reported for information.
TARGET_FROM_BYTES = 16 << 20
#: ours / onnxruntime speed, and ours / memcpy-bound speed, must be at least these.
ORT_LIMIT, MEMCPY_LIMIT = 1.0, 0.8


def targets(rows: list[ExecutionRow]) -> tuple[Target, ...]:
    """Speed against onnxruntime (both modes) and against the memcpy bound, from 16 MB."""
    large = [r for r in rows if r.output_bytes >= TARGET_FROM_BYTES]

    def worst(key: str) -> list[tuple[str, float | None]]:
        return [(f"{r.case} {size_label(r.output_bytes)}", r.ratios[key]) for r in large]

    return (
        Target.worst_of("execution >=16 MB: ours/ORT speed, alloc", worst("ours/ort alloc"),
                        low=ORT_LIMIT),
        Target.worst_of("execution >=16 MB: ours/ORT speed, bound", worst("ours/ort bound"),
                        low=ORT_LIMIT),
        Target.worst_of("execution >=16 MB: ours/memcpy-bound speed, alloc",
                        worst("ours/memcpy alloc"), low=MEMCPY_LIMIT),
        Target.worst_of("execution >=16 MB: ours/memcpy-bound speed, bound",
                        worst("ours/memcpy bound"), low=MEMCPY_LIMIT),
    )


def size_label(nbytes: int) -> str:
    if nbytes >= 1 << 20:
        return f"{nbytes / (1 << 20):g} MB"
    return f"{nbytes / (1 << 10):g} KB"
