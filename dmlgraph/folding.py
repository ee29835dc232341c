"""Shape inference and constant folding, so computed Slice/Pad parameters become constants.

Exporters compute Slice starts and Pad pads at run time (Shape -> Gather -> Unsqueeze ->
Concat -> Cast chains). Once input shapes are static those chains are constant, and DirectML
needs them as constants. ``fold`` alternates two steps until nothing changes:

1. onnx's shape inference with data propagation (on ``to_onnx`` of the graph), merged into the
   tensor registry;
2. evaluation, with ``onnx.reference.ReferenceEvaluator``, of every node whose inputs are all
   constants, or whose only input is a tensor of static shape read by Shape/Size (fed as a
   zero-strided dummy, so no real data is allocated). All such nodes run as one model; if that
   fails, node by node, and a node that fails keeps a "not folded" note with the reason.

Folding a node replaces its outputs by constants and removes it; dead nodes and unreferenced
tensors go last. Nodes that compute a graph output, random ops, non-ONNX ops, results that
disagree with inferred types, and results that would grow the model by more than
``FOLD_GROWTH_LIMIT_BYTES`` are not folded. Finally each Slice/Pad parameter that is still a
run-time value gets a note naming the reason (``runtime_parameters``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from itertools import chain

import numpy as np
import onnx
from onnx.reference import ReferenceEvaluator

from dmlgraph import canonical
from dmlgraph.errors import ModelValidationError
from dmlgraph.exporter import to_onnx
from dmlgraph.ir import Graph, Node, NodeId, RemovedNode, TensorInfo
from dmlgraph.value_info import tensor_info

#: Ops whose results differ from run to run: never folded.
NONDETERMINISTIC_OPS: frozenset[str] = frozenset(
    {
        "RandomNormal",
        "RandomUniform",
        "RandomNormalLike",
        "RandomUniformLike",
        "Multinomial",
        "Bernoulli",
    }
)
#: Ops that read only their input's shape: foldable once that shape is static.
SHAPE_ONLY_OPS: frozenset[str] = frozenset({"Shape", "Size"})
#: Domains whose ops onnx.reference evaluates.
FOLDABLE_DOMAINS: frozenset[str] = frozenset({"", "ai.onnx.ml"})
#: A folded result may exceed the bytes of its constant inputs by at most this much.
FOLD_GROWTH_LIMIT_BYTES = 1 << 20
#: During shape inference, constants with more elements than this travel as typed inputs
#: (weights need not be serialized; shape-carrying tensors are small).
INFERENCE_CONSTANT_LIMIT = 4096

#: Note prefixes this module writes (and replaces when it runs again).
NOT_FOLDED = "not folded"
RUNTIME_PARAMETER = "runtime parameter"


@dataclass
class FoldReport:
    """What ``fold`` did: rounds run, nodes folded away and removed as dead (by label)."""

    rounds: int = 0
    folded: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    runtime_parameters: dict[NodeId, dict[str, str]] = field(default_factory=dict)


def fold(graph: Graph, *, max_rounds: int = 1000, inferred: bool = False) -> FoldReport:
    """Infer shapes and fold constants to a fixed point, then mark run-time Slice/Pad parameters.

    For graphs of ONNX ops (before lowering): shape inference runs on ``to_onnx`` of the graph.
    ``inferred``: the graph's shapes are already inferred (the importer's), so the first
    round skips inference.
    """
    report = FoldReport()
    while report.rounds < max_rounds:
        report.rounds += 1
        if report.rounds > 1 or not inferred:
            infer_shapes(graph)
        canonicalize(graph)
        folded = fold_constants(graph)
        report.folded.extend(folded)
        if not folded:
            break
        report.removed.extend(_remove_dead(graph))
    report.removed.extend(_remove_dead(graph))
    graph.prune_tensors()
    canonicalize(graph)
    report.runtime_parameters = mark_runtime_parameters(graph)
    return report


def _remove_dead(graph: Graph) -> list[str]:
    """Remove nodes whose results nothing reads any more; record them as folded."""
    dead = graph.remove_dead_nodes()
    for node in dead:
        graph.removed.append(
            RemovedNode(node.provenance, "folded", "its result was only needed by folded nodes")
        )
    return [n.label for n in dead]


def prepare(graph: Graph) -> None:
    """Without folding: turn Constant nodes into constants, canonicalize, mark parameters."""
    fold_constants(graph, select=lambda node: node.op_type == "Constant")
    graph.prune_tensors()
    canonicalize(graph)
    mark_runtime_parameters(graph)


def canonicalize(graph: Graph) -> None:
    """``canonical.normalize`` then ``canonical.check`` every Slice, Concat and Pad."""
    for node in graph.topological_order():
        if canonical.is_canonical(node.op):
            canonical.check(graph, canonical.normalize(graph, node))


# ----------------------------------------------------------------------------- shapes


def infer_shapes(graph: Graph) -> int:
    """Run onnx shape inference (data propagation on) and merge it in; returns tensors changed."""
    model = to_onnx(graph, value_info=False, declare_constants_above=INFERENCE_CONSTANT_LIMIT)
    try:
        inferred = onnx.shape_inference.infer_shapes(
            model, check_type=False, strict_mode=False, data_prop=True
        )
    except Exception as exc:
        raise ModelValidationError(f"{graph.source}: ONNX shape inference fails: {exc}") from None
    changed = 0
    for value_info in chain(inferred.graph.value_info, inferred.graph.output):
        old = graph.tensors.get(value_info.name)
        if old is None or old.data is not None or value_info.name in graph.inputs:
            continue
        if old.dtype is not None and old.is_static:
            continue  # nothing inference says can make it more specific
        merged = _merge(old, tensor_info(value_info, graph.source))
        if merged != old:
            graph.set_tensor(merged)
            changed += 1
    return changed


def _merge(old: TensorInfo, new: TensorInfo) -> TensorInfo:
    """The more specific of two descriptions: known beats unknown, a size beats a name."""
    dtype = new.dtype if new.dtype is not None else old.dtype
    if new.shape is None or old.shape is None or len(new.shape) != len(old.shape):
        shape = new.shape if new.shape is not None else old.shape
    else:
        shape = tuple(
            n if isinstance(n, int) else o if o is not None else n
            for o, n in zip(old.shape, new.shape)
        )
    return old.replace(dtype=dtype, shape=shape)


# ----------------------------------------------------------------------------- folding


def fold_constants(graph: Graph, select: Callable[[Node], bool] | None = None) -> list[str]:
    """One folding round; returns the labels of the nodes folded away."""
    known = set(graph.constants)
    candidates: list[Node] = []
    for node in graph.topological_order():
        if (select is None or select(node)) and _foldable(graph, node, known):
            candidates.append(node)
            known.update(o for o in node.outputs if o)
    if not candidates:
        return []
    values = _evaluate(graph, candidates)
    constant = set(graph.constants)
    accepted: list[Node] = []
    for node in candidates:
        if any(o not in values for o in node.outputs if o):
            continue
        if not all(
            _input_available(graph, node, port, constant) for port in range(len(node.inputs))
        ):
            continue
        reason = _rejection(graph, node, values)
        if reason:
            _note(node, NOT_FOLDED, reason)
            continue
        accepted.append(node)
        constant.update(o for o in node.outputs if o)
    for node in accepted:
        graph.remove_node(node.id)
        graph.removed.append(
            RemovedNode(node.provenance, "folded", "computed from constants at import")
        )
    for node in accepted:
        for out in node.outputs:
            if out:
                graph.set_tensor(TensorInfo(out, data=values[out]))
    return [node.label for node in accepted]


def _foldable(graph: Graph, node: Node, known: set[str]) -> bool:
    if (
        not node.is_onnx
        or node.op.domain not in FOLDABLE_DOMAINS
        or node.op_type in NONDETERMINISTIC_OPS
    ):
        return False
    if any(n.startswith(NOT_FOLDED) for n in node.notes) or any(
        o in graph.outputs for o in node.outputs
    ):
        return False
    return all(_input_available(graph, node, port, known) for port in range(len(node.inputs)))


def _input_available(graph: Graph, node: Node, port: int, known: set[str]) -> bool:
    name = node.inputs[port]
    if not name or name in known:
        return True
    info = graph.tensors.get(name)
    return (
        node.op_type in SHAPE_ONLY_OPS
        and port == 0
        and info is not None
        and info.is_static
        and info.dtype is not None
    )


def _evaluate(graph: Graph, nodes: list[Node]) -> dict[str, np.ndarray]:
    """Values of the nodes' outputs: all in one run, else node by node, noting failures."""
    try:
        return _run_reference(graph, nodes, {})
    except Exception:  # one bad node fails the whole run: find it by running them one by one
        values: dict[str, np.ndarray] = {}
    for node in nodes:
        if not all(
            not n or graph.is_constant(n) or n in values or node.op_type in SHAPE_ONLY_OPS
            for n in node.inputs
        ):
            continue
        try:
            values.update(_run_reference(graph, [node], values))
        except Exception as exc:
            _note(node, NOT_FOLDED, f"onnx.reference failed: {type(exc).__name__}: {exc}")
    return values


def _run_reference(
    graph: Graph, nodes: list[Node], values: Mapping[str, np.ndarray]
) -> dict[str, np.ndarray]:
    sub = graph.extract(node.id for node in nodes)
    feeds: dict[str, np.ndarray] = {}
    for name in sub.inputs:
        data = graph.constant(name)
        if data is None:
            data = values.get(name)
        if data is None:  # the input of a Shape/Size: only its static shape is read
            info = graph.tensors[name]
            data = np.broadcast_to(np.zeros((), dtype=info.dtype), info.static_shape or ())
        feeds[name] = data
    results = ReferenceEvaluator(to_onnx(sub, value_info=False)).run(None, feeds)
    return {
        name: np.asarray(result) if isinstance(result, np.generic) else result
        for name, result in zip(sub.outputs, results)
    }


def _rejection(graph: Graph, node: Node, values: Mapping[str, np.ndarray]) -> str:
    """Why a computed node must not be folded ("" when it may be)."""
    constants = (graph.constant(n) for n in node.inputs)
    budget = FOLD_GROWTH_LIMIT_BYTES + sum(c.nbytes for c in constants if c is not None)
    for out in node.outputs:
        if not out:
            continue
        value = values[out]
        if not isinstance(value, np.ndarray):
            return f"output {out!r} is a {type(value).__name__}, not a tensor"
        info = graph.tensors[out]
        if info.dtype is not None and value.dtype != info.dtype:
            return (
                f"onnx.reference gave output {out!r} dtype {value.dtype}; "
                f"inference says {info.dtype}"
            )
        if info.shape is not None and (
            len(info.shape) != value.ndim
            or any(isinstance(d, int) and d != s for d, s in zip(info.shape, value.shape))
        ):
            return (
                f"onnx.reference gave output {out!r} shape {list(value.shape)}; "
                f"inference says {list(info.shape)}"
            )
        if value.nbytes > budget:
            return (
                f"output {out!r} would add {value.nbytes} bytes of constant data (limit {budget})"
            )
    return ""


def _note(node: Node, prefix: str, text: str) -> None:
    node.notes.append(f"{prefix}: {text}")


# ----------------------------------------------------------------------------- run-time parameters


def runtime_parameters(graph: Graph, node: Node) -> dict[str, str]:
    """For a canonical Slice/Pad: parameter field -> why its input is not a constant."""
    if not canonical.is_canonical(node.op) or node.op_type not in canonical.PARAMETER_PORTS:
        return {}
    return {
        field: why_not_constant(graph, node.input(port))
        for field, port in canonical.PARAMETER_PORTS[node.op_type].items()
        if node.input(port) and not graph.is_constant(node.input(port))
    }


def mark_runtime_parameters(graph: Graph) -> dict[NodeId, dict[str, str]]:
    """Replace each Slice/Pad's run-time-parameter notes with current ones; returns them all."""
    marked: dict[NodeId, dict[str, str]] = {}
    for node in graph.nodes:
        params = runtime_parameters(graph, node)
        node.notes[:] = [n for n in node.notes if not n.startswith(RUNTIME_PARAMETER)]
        for field_name, reason in params.items():
            port = canonical.PARAMETER_PORTS[node.op_type][field_name]
            _note(
                node,
                RUNTIME_PARAMETER,
                f"{field_name} ({node.input(port)!r}) is not constant: {reason}",
            )
        if params:
            marked[node.id] = params
    return marked


def why_not_constant(graph: Graph, tensor: str, limit: int = 3) -> str:
    """The root causes that keep ``tensor`` from being constant, found walking producers back."""
    causes: list[str] = []
    seen: set[str] = set()
    stack = [tensor]
    while stack:
        name = stack.pop()
        if not name or name in seen or graph.is_constant(name):
            continue
        seen.add(name)
        producer = graph.producer(name)
        cause = _root_cause(graph, name, producer)
        if cause:
            if cause not in causes:
                causes.append(cause)
        elif producer is not None:
            stack.extend(reversed(producer.inputs))
    if not causes:
        return "no cause found"
    more = f" (and {len(causes) - limit} more)" if len(causes) > limit else ""
    return "; ".join(causes[:limit]) + more


def _root_cause(graph: Graph, name: str, producer: Node | None) -> str:
    if producer is None:
        return (
            f"depends on the data of graph input {name!r}"
            if name in graph.inputs
            else f"{name!r} has no value"
        )
    failed = next((n for n in producer.notes if n.startswith(NOT_FOLDED)), None)
    if failed:
        return f"{producer.label} was {failed}"
    if not producer.is_onnx or producer.op.domain not in FOLDABLE_DOMAINS:
        return f"{producer.label} cannot be evaluated by dmlgraph's folding"
    if producer.op_type in NONDETERMINISTIC_OPS:
        return f"{producer.label} is random"
    if producer.op_type in SHAPE_ONLY_OPS:
        info = graph.tensors.get(producer.inputs[0])
        if info is None or not info.is_static:
            shape = "unknown" if info is None or info.shape is None else list(info.shape)
            return f"depends on the shape of {producer.inputs[0]!r}, which is not static ({shape})"
    outputs = [o for o in producer.outputs if o in graph.outputs]
    if outputs and all(
        _input_available(graph, producer, p, set(graph.constants))
        for p in range(len(producer.inputs))
    ):
        return f"{producer.label} computes graph output {outputs[0]!r}, which is never folded"
    return ""
