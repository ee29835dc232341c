"""Memory: the peak RSS a run adds, dmlgraph against onnxruntime, one fresh process each.

Method: a child process (``python -m benchmarks.memory ENGINE KIND NAME BYTES RUNS THREADS``)
makes the inputs, collects garbage and reads its resident set (VmRSS), resets the kernel's
high-water mark and builds the engine (load + lower + backend, or an onnxruntime session):
build increase = the high-water mark after it - the resident set before it. It then collects
garbage, reads the resident set, resets the high-water mark
(writing "5" to /proc/self/clear_refs; where that is refused, ``ru_maxrss`` is read instead,
which may include the setup's own peak) and runs the model once: first-run increase = the
high-water mark after it - the resident set before it (the output, every intermediate, and
whatever the engine prepares on first use: dmlgraph's fallback sessions, onnxruntime's arena).
The output is dropped and the same is measured over ``RUNS`` more runs (each output dropped
before the next run): the steady-state increase. A fresh process per engine keeps one engine's
freed-but-retained memory from hiding the other's.

The first-run increase alone does not compare like with like: dmlgraph makes its fallback
sessions on first use, onnxruntime its session while building. "Build + first run" (the higher
of the two high-water marks - the resident set before the build) is all an engine needs to give
its first output, whenever it makes it.
"""

from __future__ import annotations

import gc
import json
import resource
import subprocess
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.cases import execution_case, real_model_feeds, real_model_path
from benchmarks.engines import Ours, session
from benchmarks.execution import size_label
from benchmarks.results import Progress, Section, Target
from benchmarks.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
MB = 1 << 20


@dataclass(frozen=True)
class Probe:
    """One child's measurement, in MB: the first run (which may prepare what the engine
    prepares lazily) and the runs after it (steady state)."""

    engine: str
    prepared_mb: float  # RSS before the build (inputs made)
    build_peak_mb: float
    build_increase_mb: float
    before_mb: float
    first_peak_mb: float
    first_increase_mb: float
    steady_before_mb: float
    steady_peak_mb: float
    steady_increase_mb: float
    output_mb: float
    method: str
    build_first_increase_mb: float  # the peak from the build through the first run - prepared


@dataclass(frozen=True)
class MemoryRow:
    case: str
    input_mb: float
    output_mb: float
    ours: Probe
    ort: Probe
    build_first_ratio: float | None  # ours build + first-run increase / ORT's (like for like)
    first_ratio: float | None  # ours first-run increase / ORT's
    steady_ratio: float | None  # ours steady-state increase / ORT's


def _status_kb(field: str) -> int | None:
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:  # no /proc here: the probe reports nothing
        return None
    return None


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as refs:
            refs.write("5")
    except OSError:
        return False
    return _status_kb("VmHWM") is not None


def probe(engine: str, kind: str, name: str, nbytes: int, runs: int, threads: int) -> Probe:
    """Measure in this process (the child's side): see the module docstring."""
    if kind == "case":
        case = execution_case(name, nbytes)
        model: object = case.model
        feeds = case.feeds()
    else:
        model = real_model_path(name)
        feeds = real_model_feeds(name)
    gc.collect()
    prepared_kb = _status_kb("VmRSS") or 0
    exact = _reset_peak()
    run: Callable[[dict[str, np.ndarray]], Any]
    if engine == "ours":
        run = Ours(model, threads).run  # type: ignore[arg-type]
    else:
        sess = session(model, threads)  # type: ignore[arg-type]

        def run(f: dict[str, np.ndarray]) -> Any:
            return sess.run(None, f)

    build_peak_kb = (
        (_status_kb("VmHWM") or 0) if exact else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    )

    def peak_during(runs: int) -> tuple[int, int, str, list[np.ndarray]]:
        """RSS before, high-water mark after ``runs`` runs (KB), method, the last outputs."""
        gc.collect()
        before_kb = _status_kb("VmRSS") or 0
        exact = _reset_peak()
        out: Any = None
        for _ in range(runs):
            out = None
            out = run(feeds)
        if exact:
            peak_kb, method = _status_kb("VmHWM") or 0, "VmHWM after clear_refs"
        else:
            peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            method = "ru_maxrss (includes setup peak)"
        values = list(out.values() if isinstance(out, dict) else out)
        return before_kb, peak_kb, method, values

    before, first_peak, method, outputs = peak_during(1)
    output_mb = sum(np.asarray(v).nbytes for v in outputs) / MB
    del outputs
    steady_before, steady_peak, _, _ = peak_during(max(1, runs))
    return Probe(engine, prepared_kb / 1024, build_peak_kb / 1024,
                 (build_peak_kb - prepared_kb) / 1024,
                 before / 1024, first_peak / 1024, (first_peak - before) / 1024,
                 steady_before / 1024, steady_peak / 1024, (steady_peak - steady_before) / 1024,
                 output_mb, method, (max(build_peak_kb, first_peak) - prepared_kb) / 1024)


def run_child(engine: str, kind: str, name: str, nbytes: int, runs: int, threads: int) -> Probe:
    """``probe`` in a fresh interpreter."""
    command = [sys.executable, "-m", "benchmarks.memory", engine, kind, name, str(nbytes),
               str(runs), str(threads)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"memory probe {' '.join(command[2:])} failed:\n{done.stderr}")
    return Probe(**json.loads(done.stdout.strip().splitlines()[-1]))


def run(settings: Settings, progress: Progress = lambda _: None) -> Section:
    jobs = [("case", name, f"{name} {size_label(settings.memory_bytes)}")
            for name in settings.memory_cases]
    jobs += [("model", name, name) for name in settings.memory_models]
    rows = []
    for kind, name, label in jobs:
        if kind == "case":
            case = execution_case(name, settings.memory_bytes)
            input_mb = case.input_bytes / MB
        else:
            input_mb = sum(a.nbytes for a in real_model_feeds(name).values()) / MB
        probes = {}
        for engine in ("ours", "ort"):
            progress(f"memory: {label} on {engine}")
            probes[engine] = run_child(engine, kind, name, settings.memory_bytes,
                                       settings.memory_runs, settings.threads)
        ours, ort = probes["ours"], probes["ort"]
        rows.append(MemoryRow(
            case=label,
            input_mb=input_mb,
            output_mb=ours.output_mb,
            ours=ours,
            ort=ort,
            build_first_ratio=_ratio(ours.build_first_increase_mb, ort.build_first_increase_mb),
            first_ratio=_ratio(ours.first_increase_mb, ort.first_increase_mb),
            steady_ratio=_ratio(ours.steady_increase_mb, ort.steady_increase_mb),
        ))
    found = (
        Target.worst_of("memory: ours/ORT peak RSS increase, build + first run",
                        [(r.case, r.build_first_ratio) for r in rows]),
        Target.worst_of("memory: ours/ORT peak RSS increase, first run",
                        [(r.case, r.first_ratio) for r in rows]),
        Target.worst_of("memory: ours/ORT peak RSS increase, later runs",
                        [(r.case, r.steady_ratio) for r in rows]),
    )
    return Section("memory", {"runs": tuple(rows)}, found)


def _ratio(ours: float, theirs: float) -> float | None:
    """None when onnxruntime's increase is too small (< 0.5 MB) to divide by."""
    return ours / theirs if theirs >= 0.5 else None


def main(argv: list[str]) -> None:
    engine, kind, name, nbytes, runs, threads = argv
    print(json.dumps(asdict(probe(engine, kind, name, int(nbytes), int(runs), int(threads)))))


if __name__ == "__main__":
    main(sys.argv[1:])
