"""The NumPy backend: runs a lowered graph, DML nodes on the DirectML emulator, the rest on a
fallback.

A run follows a plan made once per graph (and remade if the graph changes):

- a DML node reads its IR tensors through its descs' views (``dmlgraph.dml.binding``) and runs
  on ``execute_operator`` at the graph's feature level;
- consecutive ONNX nodes form one segment run by the fallback (the schedule stays on one kind
  of node while it can, so segments are long and a fallback prepares few models);
- a Slice or Pad whose parameters are run-time values, and a Slice, Concat or Pad whose data
  shapes are not static, is lowered when it runs, with the actual values, as onnxruntime's
  DirectML provider re-creates its kernels; the lowered node is cached per parameter values
  and input shapes (``runtime.py``).
"""

from __future__ import annotations

import heapq
import weakref
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from backends.base import BackendError, GraphCache, NodeRun, RunRecord, RunResult, check_feeds
from backends.numpy.dml_executor import execute_operator
from backends.numpy.fallback import Fallback, Runner, get_fallback
from backends.numpy.runtime import RuntimeLowering, needs_runtime_lowering
from dmlgraph.dml.binding import binds, from_buffer, to_buffer
from dmlgraph.dml.enums import FeatureLevel
from dmlgraph.errors import DmlgraphError
from dmlgraph.ir import Graph, Node
from lowering.report import LoweredGraph

#: How run records name the engine of DML nodes.
DML_ENGINE = "numpy DirectML emulator"

Values = dict[str, np.ndarray]


class NumpyBackend:
    """``run(graph, feeds)`` for lowered graphs (and plain ONNX graphs: all fallback).

    ``fallback``: "onnxruntime" (default), "reference" or a ``Fallback``; ``providers``: the
    onnxruntime fallback's providers. ``feature_level`` overrides the graph's own (a
    LoweredGraph's) for validation and run-time lowering.
    """

    name = "numpy"

    def __init__(
        self,
        fallback: str | Fallback = "onnxruntime",
        *,
        feature_level: FeatureLevel | str | int | None = None,
        providers: Sequence[str] | None = None,
    ) -> None:
        self.fallback = get_fallback(fallback, providers)
        self.feature_level = None if feature_level is None else FeatureLevel.parse(feature_level)
        self._plans: GraphCache[Executable] = GraphCache()
        self.last_record: RunRecord | None = None

    def level_for(self, graph: Graph) -> FeatureLevel:
        return self.feature_level or getattr(graph, "feature_level", None) or FeatureLevel.L6_4

    def execute(self, graph: Graph, feeds: Mapping[str, Any]) -> RunResult:
        arrays = check_feeds(graph, feeds)
        plan = self._plans.get(graph, lambda: Executable(graph, self.level_for(graph), self))
        outputs, runs = plan.run(arrays)
        record = RunRecord(self.name, self.fallback.engine, tuple(runs))
        self.last_record = record
        return RunResult(outputs, record)

    def run(self, graph: Graph, feeds: Mapping[str, Any]) -> dict[str, np.ndarray]:
        return self.execute(graph, feeds).outputs


class Executable:
    """A graph's plan: its steps in execution order, with their caches."""

    def __init__(self, graph: Graph, level: FeatureLevel, backend: NumpyBackend) -> None:
        # a proxy: the backend's cache holds plans weakly keyed by their graphs
        self.graph = weakref.proxy(graph)
        self.level = level
        self.backend = backend
        self.steps = [self._step(kind, nodes) for kind, nodes in _schedule(graph)]

    def _step(self, kind: str, nodes: list[Node]) -> Step:
        if kind == "dml":
            return DmlStep(self, nodes[0])
        if kind == "runtime":
            return RuntimeStep(self, nodes[0])
        return FallbackStep(self, nodes)

    def read(self, values: Values, name: str) -> np.ndarray:
        value = values.get(name)
        if value is None:
            value = self.graph.constant(name)
        if value is None:
            raise BackendError(f"{self.graph.source}: tensor {name!r} has no value when read")
        return value

    def run(self, feeds: Mapping[str, np.ndarray]) -> tuple[dict[str, np.ndarray], list[NodeRun]]:
        values: Values = dict(feeds)
        runs: list[NodeRun] = []
        for step in self.steps:
            step.run(values, runs)
        outputs = {}
        for name in self.graph.outputs:
            value = self.read(values, name)
            if name in feeds or name not in values:  # a graph input or a constant: a copy
                value = np.array(value)
            outputs[name] = value
        return outputs, runs


class Step(ABC):
    """One unit of a plan: reads its inputs from ``values``, adds its outputs and runs."""

    @abstractmethod
    def run(self, values: Values, runs: list[NodeRun]) -> None: ...


class DmlStep(Step):
    """One DirectML descriptor over the bytes of its IR tensors."""

    def __init__(self, plan: Executable, node: Node) -> None:
        self.plan, self.node = plan, node

    def run(self, values: Values, runs: list[NodeRun]) -> None:
        graph, node, desc = self.plan.graph, self.node, self.node.op
        buffers = []
        for port, (name, view) in enumerate(zip(node.inputs, desc.inputs)):
            array = self.plan.read(values, name)
            reason = binds(view, array.dtype, array.shape)
            if reason:
                raise BackendError(
                    f"{graph.describe(node)}: input {port} ({name!r}, {array.dtype}"
                    f"{list(array.shape)}): {reason}"
                )
            buffers.append(to_buffer(array, view))
        try:
            results = execute_operator(desc, buffers, self.plan.level)
        except DmlgraphError as exc:
            raise BackendError(f"{graph.describe(node)}: {exc}") from None
        for name, result in zip(node.outputs, results):
            info = graph.tensor(name)
            if info.dtype is None or info.static_shape is None:
                raise BackendError(
                    f"{graph.describe(node)}: output {name!r} has no static dtype and shape "
                    f"({info!r}); a DML node's tensors must have them"
                )
            values[name] = from_buffer(result, info.dtype, info.static_shape)
        runs.append(NodeRun(node.name, desc.name, DML_ENGINE, notes=tuple(node.notes)))


class FallbackStep(Step):
    """Consecutive ONNX nodes, run as one model by the fallback (prepared on first use)."""

    def __init__(self, plan: Executable, nodes: list[Node]) -> None:
        self.plan, self.nodes = plan, nodes
        self.segment = segment_graph(plan.graph, nodes)
        self.runner: Runner | None = None

    def run(self, values: Values, runs: list[NodeRun]) -> None:
        fallback = self.plan.backend.fallback
        if self.runner is None:
            self.runner = fallback.prepare(self.segment)
        feeds = {name: self.plan.read(values, name) for name in self.segment.inputs}
        values.update(self.runner(feeds))
        runs.extend(
            NodeRun(n.name, n.op_type, fallback.engine, notes=tuple(n.notes)) for n in self.nodes
        )


class RuntimeStep(Step):
    """A Slice/Concat/Pad lowered when it runs, with the actual parameters and shapes."""

    def __init__(self, plan: Executable, node: Node) -> None:
        self.plan, self.node = plan, node
        self.lowering = RuntimeLowering(plan.graph, node)
        self.cache: dict[tuple[Any, ...], tuple[LoweredGraph, Executable]] = {}

    def run(self, values: Values, runs: list[NodeRun]) -> None:
        node, plan = self.node, self.plan
        arrays = {name: plan.read(values, name) for name in node.inputs if name}
        key = self.lowering.key(arrays)
        via = "lowered at run time (cached)"
        if key not in self.cache:
            sub = self.lowering.lower(arrays, plan.level)
            self.cache[key] = (sub, Executable(sub, plan.level, plan.backend))
            via = "lowered at run time"
        sub, executable = self.cache[key]
        outputs, sub_runs = executable.run({name: arrays[name] for name in sub.inputs})
        for name, sub_name in zip([o for o in node.outputs if o], sub.outputs):
            values[name] = outputs[sub_name]
        # what the lowering said of the node (divergences included) goes with every run of it
        said = tuple(note for record in sub.report() for note in record.notes)
        if not sub_runs:  # lowered to a constant or to its input: nothing ran
            runs.append(NodeRun(node.name, node.op_type, "none", via, said))
        runs.extend(
            NodeRun(r.node, r.op, r.engine, via, tuple(dict.fromkeys(said + r.notes)))
            for r in sub_runs
        )


# ----------------------------------------------------------------------------- planning


def _kind(graph: Graph, node: Node) -> str:
    if not node.is_onnx:
        return "dml"
    return "runtime" if needs_runtime_lowering(graph, node) else "onnx"


def _schedule(graph: Graph) -> list[tuple[str, list[Node]]]:
    """Topological order in runs of one kind: DML and run-time nodes one per step, ONNX nodes
    grouped. Among ready nodes the current kind goes first, lowest id first."""
    nxg = graph.nx
    kinds = {node.id: _kind(graph, node) for node in graph.nodes}
    indegree = {n: nxg.in_degree(n) for n in nxg.nodes}
    ready: dict[str, list[int]] = {"dml": [], "runtime": [], "onnx": []}
    for n, degree in indegree.items():
        if degree == 0:
            heapq.heappush(ready[kinds[n]], n)
    steps: list[tuple[str, list[Node]]] = []
    current = ""
    while any(ready.values()):
        switched = not ready.get(current)
        if switched:
            current = min((heap[0], kind) for kind, heap in ready.items() if heap)[1]
        if switched or current != "onnx":
            steps.append((current, []))
        n = heapq.heappop(ready[current])
        steps[-1][1].append(graph.node(n))
        for _, successor, _ in nxg.out_edges(n, keys=True):
            indegree[successor] -= 1
            if indegree[successor] == 0:
                heapq.heappush(ready[kinds[successor]], successor)
    return steps


def segment_graph(graph: Graph, nodes: list[Node]) -> Graph:
    """The nodes as a graph of their own: outside tensors they read become inputs, except
    constants (kept, so an engine can fold them); outputs are what anything else reads."""
    inside = {node.id for node in nodes}
    outputs = [
        out
        for node in nodes
        for out in node.outputs
        if out
        and (
            out in graph.outputs
            or any(consumer.id not in inside for consumer, _ in graph.consumers(out))
        )
    ]
    segment = graph.extract(inside, outputs)
    for name in list(segment.inputs):
        if graph.is_constant(name):
            segment.inputs.remove(name)
            segment.set_tensor(graph.tensor(name))
    return segment
