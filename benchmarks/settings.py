"""How big and how often: the full run, ``--quick`` and the tiny mode the smoke test uses."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from benchmarks.cases import REAL_MODELS
from benchmarks.engines import default_threads

KB = 1 << 10
MB = 1 << 20


@dataclass(frozen=True)
class Settings:
    """Every size and repeat count of a run; the JSON records it next to the results."""

    mode: str
    #: execution: output sizes in bytes, and the timed repeats at each size
    sizes: tuple[int, ...]
    repeats: tuple[int, ...]
    warmup: int = 2
    #: overhead: nodes per chain and timed runs of each chain
    chain_length: int = 1000
    chain_repeats: int = 10
    #: lowering: real models (file stems under models/) and repeats; synthetic graph sizes
    models: tuple[str, ...] = REAL_MODELS
    model_repeats: int = 15
    synthetic_nodes: tuple[int, ...] = (1_000, 10_000, 100_000)
    synthetic_repeats: tuple[int, ...] = (3, 1, 1)
    #: lowering: a synthetic size whose load+lower exceeds this many seconds is profiled
    profile_over_s: float = 120.0
    #: memory: execution cases (by name) at ``memory_bytes``, and real models
    memory_cases: tuple[str, ...] = ("concat2_last", "pad_reflect")
    memory_bytes: int = 128 * MB
    memory_models: tuple[str, ...] = ("squeezenet1_1",)
    memory_runs: int = 3
    #: onnxruntime intra-op threads and memcpy-bound workers
    threads: int = field(default_factory=default_threads)

    def repeats_for(self, size: int) -> int:
        return self.repeats[self.sizes.index(size)]


FULL = Settings(mode="full", sizes=(1 * MB, 16 * MB, 128 * MB), repeats=(51, 21, 6))

QUICK = replace(
    FULL,
    mode="quick",
    sizes=(64 * KB, 256 * KB),
    repeats=(3, 3),
    chain_length=200,
    chain_repeats=3,
    model_repeats=1,
    synthetic_nodes=(100, 1_000, 2_000),
    synthetic_repeats=(1, 1, 1),
    memory_bytes=16 * MB,
)

#: For the smoke test: every section runs end to end, in seconds, measuring nothing useful.
TINY = replace(
    FULL,
    mode="tiny",
    sizes=(16 * KB,),
    repeats=(1,),
    warmup=1,
    chain_length=10,
    chain_repeats=1,
    models=("squeezenet1_1",),
    model_repeats=1,
    synthetic_nodes=(20, 40),
    synthetic_repeats=(1, 1),
    profile_over_s=0.0,  # always profile, so the profiling runs too
    memory_cases=("concat2_last",),
    memory_bytes=64 * KB,
    memory_models=(),
    memory_runs=1,
)

PRESETS = {s.mode: s for s in (FULL, QUICK, TINY)}
