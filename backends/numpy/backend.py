"""The NumPy backend: runs a lowered graph, DML nodes on the DirectML emulator, the rest on a
fallback.

Each graph is compiled once into a ``Plan`` (``plan.py``: bound views, planned memory, JOINs
done in place, copies split across threads) and the plan is replayed per run; it is remade
when the graph changes. ONNX nodes the lowering left run on the fallback (onnxruntime or onnx's
reference evaluator); a Slice, Concat or Pad whose parameters or shapes are known only at run
time is lowered when it runs, with the actual values, as onnxruntime's DirectML provider
re-creates its kernels (``runtime.py``).
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from backends.base import (
    BackendError,
    GraphCache,
    RunRecord,
    RunResult,
    SizeMismatch,
    bind_outputs,
    check_arguments,
    check_feeds,
    refuse_unbound,
    write_all_bound,
)
from backends.numpy.fallback import (
    Fallback,
    OnnxruntimeFallback,
    get_fallback,
    hinted,
    reference_hint,
)
from backends.numpy.plan import DML_ENGINE, Plan
from backends.numpy.runtime import resized
from backends.numpy.threads import MOST_THREADS, default_threads
from dmlgraph.dml.enums import FeatureLevel
from dmlgraph.dml.scalars import is_integer
from dmlgraph.errors import DmlgraphError
from dmlgraph.ir import Graph
from lowering.report import LoweredGraph

__all__ = ["DML_ENGINE", "NumpyBackend"]


class NumpyBackend:
    """``run(graph, feeds)`` for lowered graphs (and plain ONNX graphs: all fallback).

    ``fallback``: "onnxruntime" (default), "reference" or a ``Fallback``; ``providers``: the
    onnxruntime fallback's providers. ``feature_level`` overrides the graph's own (a
    LoweredGraph's) for validation and run-time lowering. ``threads``: how many threads share
    a large copy (default: the CPUs this process may use, at most 8; never more than
    ``threads.MOST_THREADS``, 16; a native call runs on no more than the CPUs it may use).
    """

    name = "numpy"

    def __init__(
        self,
        fallback: str | Fallback = "onnxruntime",
        *,
        feature_level: FeatureLevel | str | int | None = None,
        providers: Sequence[str] | None = None,
        threads: int | None = None,
    ) -> None:
        self.fallback = get_fallback(fallback, providers)
        if providers is not None and fallback != "onnxruntime":  # as ``run --provider`` is
            raise BackendError(
                f"providers choose the onnxruntime fallback's execution providers; the fallback "
                f"{self.fallback.engine} takes none from here (providers={providers!r} would be "
                "ignored)"
            )
        self.feature_level = None if feature_level is None else FeatureLevel.parse(feature_level)
        if threads is not None and (not is_integer(threads) or threads < 1):
            raise BackendError(f"threads must be an integer of at least 1, not {threads!r}")
        self.threads = min(threads or default_threads(), MOST_THREADS)
        self._plans: GraphCache[Plan] = GraphCache()
        self.last_record: RunRecord | None = None
        self._last_ran: weakref.ref[Graph] | None = None

    @property
    def last_ran(self) -> Graph | None:
        """The graph the last run ran: the one given, or it lowered again where the run
        proved onnx's inference wrong (``_run_resized``), for a cross-check to translate;
        held weakly (None once it is gone), as plans are."""
        return self._last_ran() if self._last_ran is not None else None

    def level_for(self, graph: Graph) -> FeatureLevel:
        return self.feature_level or getattr(graph, "feature_level", None) or FeatureLevel.L6_4

    def plan(self, graph: Graph) -> Plan:
        """The graph's compiled plan (compiled on first use, recompiled if the graph changed)."""
        def build() -> Plan:
            refuse_unbound(graph)
            return Plan(graph, self.level_for(graph), self.fallback, self.threads)

        return self._plans.get(graph, build)

    def execute(
        self,
        graph: Graph,
        feeds: Mapping[str, Any],
        outputs: Mapping[str, np.ndarray] | None = None,
    ) -> RunResult:
        """Run and say what ran. ``outputs`` binds caller arrays (C-contiguous, writable, the
        output's dtype and shape) that the results are written into, as onnxruntime's
        IOBinding; other outputs come back in buffers reused once the caller drops them."""
        return RunResult(*self._execute(graph, feeds, outputs))

    def run(
        self,
        graph: Graph,
        feeds: Mapping[str, Any],
        outputs: Mapping[str, np.ndarray] | None = None,
    ) -> dict[str, np.ndarray]:
        """The outputs of ``execute`` (``last_record`` says what ran)."""
        return self._execute(graph, feeds, outputs)[0]

    def _execute(
        self,
        graph: Graph,
        feeds: Mapping[str, Any],
        outputs: Mapping[str, np.ndarray] | None,
    ) -> tuple[dict[str, np.ndarray], RunRecord]:
        """The outputs and the record of this run, which ``execute`` returns as they are:
        ``last_record`` may be another thread's run by the time it is read."""
        if type(feeds) is not dict or (outputs is not None and type(outputs) is not dict):
            check_arguments(graph, feeds, outputs)  # off the replay's path: 0.2-0.5 µs a run
        # (a graph of another kind is refused by ``fingerprint``, which reads it first)
        plan = self.plan(graph)
        if plan.replay is not None:  # the run in one native call, where nothing is unusual
            results = plan.replay(feeds, outputs)
            if results is not None:
                record = plan.replay_record
                if record is None:
                    assert plan.static_runs is not None  # a replay has only DML steps
                    record = RunRecord(self.name, self.fallback.engine, plan.static_runs)
                    plan.replay_record = record
                self.last_record, self._last_ran = record, weakref.ref(graph)
                return results, record
        arrays = check_feeds(graph, feeds)
        bound = bind_outputs(graph, arrays, outputs or {}, plan.trust)
        try:
            results, runs = plan.run(arrays, bound)
        except SizeMismatch as mismatch:
            return self._run_resized(graph, plan, arrays, bound, mismatch)
        record = RunRecord(self.name, self.fallback.engine, runs)
        self.last_record, self._last_ran = record, weakref.ref(graph)
        return results, record

    def _run_resized(
        self,
        graph: Graph,
        plan: Plan,
        arrays: dict[str, np.ndarray],
        bound: dict[str, np.ndarray],
        mismatch: SizeMismatch,
    ) -> tuple[dict[str, np.ndarray], RunRecord]:
        """A run where a node made a tensor of other sizes than onnx inferred, for which the
        descriptors were sized: the graph's source lowered again with the sizes onnxruntime
        may make otherwise (then every size) left to run time (``runtime.resized``), as
        onnxruntime's DirectML provider sizes its kernels by the shapes that arrive. The
        first such graph that runs gives the results; none: the mismatch is the error, with
        the rule a node broke by the sizes made, where one did."""
        if not isinstance(graph, LoweredGraph) or graph.source_graph is None:
            raise SizeMismatch(
                f"{mismatch}; nor can it be lowered again by the sizes made: the graph it "
                "was lowered from is not at hand (the lowered graph was built by hand, or it "
                "or its source has changed since it was lowered); lower it again",
                mismatch.tensor, mismatch.maker, mismatch.made, mismatch.inferred,
            )
        first, broken = mismatch, None
        for everything in (False, True):
            if everything not in plan.resized:
                plan.resized[everything] = resized(graph, self.level_for(graph), everything)
            again = plan.resized[everything]
            if again is None:
                continue
            try:
                made, runs = self.plan(again).run(arrays)
            except SizeMismatch as another:
                mismatch = another
                continue
            except DmlgraphError as exc:  # by the sizes made, a node breaks a rule
                broken = exc
                continue
            results = write_all_bound(
                bound, {name: made[twin] for name, twin in zip(graph.outputs, again.outputs)},
                graph,
            )
            (dtype, shape), (said, said_shape) = mismatch.made, mismatch.inferred
            left = "every tensor a node computes" if everything else (
                "the tensors onnxruntime may size otherwise (folding.SHAPE_EXACT_OPS)")
            note = (
                f"{mismatch.maker} made {mismatch.tensor!r} as {dtype}{list(shape)}, where "
                f"onnx infers {said}{list(said_shape)}: the descriptors sized by inference "
                f"could not run, so the graph was lowered again with the sizes of {left} "
                "left to run time, and its Slice/Concat/Pad nodes reading them lowered when "
                "they ran, by the sizes that arrived"
            )
            origins = again.origin_ids
            runs = tuple(
                run if run.node_id is None
                else replace(run, node_id=origins.get(run.node_id, run.node_id))
                for run in runs
            )
            record = RunRecord(self.name, self.fallback.engine, runs, (note,), relowered=True)
            self.last_record, self._last_ran = record, weakref.ref(again)
            return results, record
        if broken is not None:
            # the engine may be the one wrong (onnx.reference's MaxPool with ceil_mode): said
            # alone, "node 'cat' (Concat): inputs differ" blamed a model onnxruntime runs
            (dtype, shape), (said, said_shape) = first.made, first.inferred
            detail = str(broken).removeprefix(f"{graph.source}: ")
            maker = graph.producer(first.tensor)
            hint = reference_hint(graph, arrays, [maker], toward=[first.tensor]) if (
                maker is not None and isinstance(self.fallback, OnnxruntimeFallback)
                and not hinted(detail)) else ""  # its sizes are onnxruntime's; said once
            raise BackendError(
                f"{first.maker} made {first.tensor!r} as {dtype}{list(shape)}, "
                f"where onnx infers {said}{list(said_shape)} (fallback: "
                f"{self.fallback.engine}); lowered again by the sizes made, the graph fails: "
                f"{detail}{hint}"
            ) from None
        raise mismatch
