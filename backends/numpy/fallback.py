"""Fallbacks: the engines that run the ONNX nodes a lowering left (Conv, MatMul, ...).

A fallback prepares a graph of ONNX nodes once (a segment of the lowered graph, its constants
kept as initializers) and returns a runner from feeds to outputs. Two are offered, as a table:
``onnxruntime`` (fast, the default) and ``reference`` (onnx's ReferenceEvaluator: slow, but
independent of onnxruntime).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import networkx as nx
import numpy as np
import onnx

from backends.base import BackendError, engine_hint, first_line
from backends.numpy.control import inferred_ranks, other_rank, scan_body_divergence
from backends.onnxruntime import values
from backends.onnxruntime.old_axes import count_old_axes
from backends.onnxruntime.providers import (
    cannot_run,
    fails_when_run,
    make_session,
    select_providers,
)
from dmlgraph import folding
from dmlgraph.canonical import default_pad_value, empty_axis_refusal, known_since_version
from dmlgraph.dml.enums import PaddingMode
from dmlgraph.dml.indexmaps import source_indices
from dmlgraph.dtypes import DTYPE_TO_ELEM_TYPE, ELEM_TYPE_TO_DTYPE
from dmlgraph.ir import Graph, Node, OnnxOp, Subgraph, split_inputs, subgraphs
from dmlgraph.parity import DIVERGENCE, REFUSES, UNINITIALIZED, failed_at, failed_nodes
from dmlgraph.reach import (
    Scope,
    Value,
    output_values,
    reach,
    reached_outputs,
    scan_body_wrong,
    scoped_graphs,
)
from dmlgraph.reference_ops import DIVERGENT_DOMAINS, label_divergence, spec_ops
from dmlgraph.shape_kernels import KERNELS
from dmlgraph.subgraphs import (
    attribute_graphs,
    defined_names,
    holder_label,
    loop_divergence,
    outer_names,
    scan_form,
    scan_slice,
)

Runner = Callable[[Mapping[str, np.ndarray]], dict[str, np.ndarray]]


class Fallback(Protocol):
    """Prepares a graph of ONNX nodes for repeated runs. A runner's results that share memory
    with its feeds are copied by the plan (``plan._apart``); memory the runner keeps across
    runs (its initializers) it must not hand back, as the caller may write a result."""

    #: How run records name the engine ("onnxruntime:CPUExecutionProvider", ...).
    engine: str

    def prepare(self, graph: Graph) -> Runner: ...


class ReferenceFallback:
    """onnx.reference.ReferenceEvaluator: onnx's own executable specification."""

    engine = "onnx.reference"

    def prepare(self, graph: Graph) -> Runner:
        try:
            evaluator = reference_evaluator(graph.to_onnx())
        except Exception as exc:
            raise BackendError(
                f"{graph.source}: onnx.reference cannot load {_nodes(graph)}: {first_line(exc)}"
            ) from None
        return ReferenceRun(evaluator, graph)


#: How a Squeeze's divergence note says onnxruntime makes another shape than ONNX, which a
#: node past it may fail on (``reference_hint``).
_SQUEEZES_ALL = "onnxruntime squeezes every axis of size 1"


def _squeeze_divergence(op: OnnxOp, values: Sequence[Any]) -> str:
    """A Squeeze-13+ by an empty axes list of data with an axis of size 1."""
    data, axes = (*values, None, None)[:2]
    if op.since_version < 13 or axes is None or np.size(axes) or data is None:
        return ""
    shape = list(np.shape(data))
    if 1 not in shape:
        return ""
    return (f"{DIVERGENCE} a Squeeze of a {shape} tensor by an empty axes list: ONNX squeezes "
            f"nothing, as onnx.reference does ({shape}); {_SQUEEZES_ALL} "
            f"({[d for d in shape if d != 1]})")


#: The phrases of the run divergences onnxruntime fails at (``parity.REFUSES``), or past
#: (``reference_hint``).
_FAILS_AT = (REFUSES, _SQUEEZES_ALL)


def _scan_8_divergence(op: OnnxOp, values: Sequence[Any]) -> str:
    """A Scan-8 some batch entry of which runs no step: by a sequence length of 0 (which
    onnxruntime refuses), or of empty scan inputs, sequence_lens left out (onnxruntime's
    final states are then uninitialized: zeros in fresh memory, else an earlier run's)."""
    if op.since_version >= 9 or not values:
        return ""
    lengths = None if isinstance(values[0], _Sized) and np.size(values[0]) else values[0]
    if lengths is not None and np.size(lengths) and not np.asarray(lengths).all():
        return (f"{DIVERGENCE} a Scan-8 whose sequence_lens "
                f"{np.asarray(lengths).reshape(-1).tolist()} holds a sequence length of 0, "
                "which ONNX allows (that batch entry runs no step: its final states are its "
                "initial ones, its scan outputs padding), as onnx.reference's Scan-8 "
                f"(reference_ops) computes; {REFUSES} (\"Invalid entries in sequence_lens\")")
    return _scan_8_no_step(op, values)


#: How ``_scan_8_no_step``'s note begins, after ``DIVERGENCE``: it concerns the final states.
_NO_STEP = "a Scan-8 of empty scan inputs"


def _scan_8_no_step(op: OnnxOp, values: Sequence[Any]) -> str:
    """A Scan-8 of state variables and empty scan inputs, sequence_lens left out: no step
    runs, and onnxruntime leaves the final states uninitialized (``UNINITIALIZED``)."""
    if op.since_version >= 9 or not values or values[0] is not None:
        return ""
    scanned = values[len(values) - int(op.attrs.get("num_scan_inputs", 0)):]
    states = len(values) - 1 - len(scanned)
    empty = any(x is not None and np.ndim(x) > 1 and np.shape(x)[1] == 0 for x in scanned)
    if not (empty and states):
        return ""
    return (f"{DIVERGENCE} {_NO_STEP} (sequence length 0, sequence_lens "
            "left out): ONNX runs no step, so its final states are its initial ones, as "
            f"onnx.reference's Scan-8 (reference_ops) computes; {UNINITIALIZED} (zeros in "
            "fresh memory, else what its buffers held: an earlier run's values)")


def _scan_run_divergence(op: OnnxOp, values: Sequence[Any]) -> str:
    """A Scan-8's divergence by its values (``_scan_8_divergence``), else by its body: one
    making its inputs or a tensor twice its outputs (``control.scan_body_divergence``), which
    onnxruntime gets wrong (a Scan-8 run whole on the fallback: nothing noted it, check on
    --fallback reference failed naming nothing, and on onnxruntime's compared its buffers)."""
    return _scan_8_divergence(op, values) or _scan_body_note(op)


def _scan_body_note(op: OnnxOp) -> str:
    """``control.scan_body_divergence`` of a Scan's body ("" where it has none here)."""
    body = op.attrs.get("body")
    return _body_divergence(body.data) if isinstance(body, Subgraph) else ""


@functools.lru_cache(maxsize=64)
def _body_divergence(data: bytes) -> str:
    """``control.scan_body_divergence`` of a serialized body, read once (asked each run)."""
    return scan_body_divergence(onnx.GraphProto.FromString(data))


def _scan_ort_no_value(op: OnnxOp, values: Sequence[Any]) -> str:
    """Where onnxruntime's Scan gives its buffers: a Scan-8 of no step's final states
    (``_scan_8_no_step``), or the outputs its body makes wrong (``_scan_body_note``)."""
    note = _scan_8_no_step(op, values)
    body = "" if note else _scan_body_note(op)
    return note or (f"{body}; {UNINITIALIZED}" if body else "")


def _scan_body_wrong(op: OnnxOp, outputs: Sequence[str]) -> tuple[str, ...]:
    """The outputs of a Scan (``outputs``, by position its body's) that onnxruntime gets
    wrong where its body passes inputs through or makes a tensor twice (``_scan_body_note``):
    those, and each its body computes from a state fed back from one of them (``reach``).
    The others onnxruntime computes: marked uninitialized with them, check compared none of
    a Scan-8's outputs (a Relu of each step's input beside a state passed through)."""
    body, scans = op.attrs.get("body"), op.attrs.get("num_scan_inputs")
    if not isinstance(body, Subgraph) or not isinstance(scans, int):
        return tuple(outputs)
    proto = onnx.GraphProto.FromString(body.data)
    return tuple(outputs[j] for j in scan_body_wrong(proto, len(proto.input) - scans)
                 if j < len(outputs) and outputs[j])


def _ort_wrong(op: OnnxOp, outputs: Sequence[str], note: str) -> tuple[str, ...] | None:
    """The outputs (``outputs``, the node's) a note of a watched node concerns (as
    ``NodeRun.wrong``): a Scan's body's (``_scan_body_wrong``); a Scan-8 of no step's final
    states (``_scan_8_no_step``: its scan outputs of no row onnxruntime makes as ONNX does,
    [1, 0, 6] for x [1, 0, 6], measured; every output was left "not compared"); None (all)
    for another note, a refusal among them (onnxruntime then fails the node: ``REFUSES``)."""
    if op.op_type != "Scan" or REFUSES in note:
        return None
    body = _scan_body_note(op)
    if body and note.startswith(body):
        return _scan_body_wrong(op, outputs)
    return _final_states(op, outputs) if note.startswith(f"{DIVERGENCE} {_NO_STEP}") else None


def _final_states(op: OnnxOp, outputs: Sequence[str]) -> tuple[str, ...] | None:
    """The outputs of a Scan (``outputs``) that are its final states, those named; None where
    its body or num_scan_inputs does not say which (all)."""
    body, scans = op.attrs.get("body"), op.attrs.get("num_scan_inputs")
    if not isinstance(body, Subgraph) or not isinstance(scans, int):
        return None
    states = len(onnx.GraphProto.FromString(body.data).input) - scans
    return tuple(name for name in outputs[:max(states, 0)] if name)


def _label_divergence(op: OnnxOp, values: Sequence[Any]) -> str:
    """A LabelEncoder fed a value onnxruntime maps otherwise than ``reference_ops`` does."""
    found = label_divergence(op.since_version, op.attrs, values[0] if values else None)
    return f"{DIVERGENCE} {found}" if found else ""


#: A node's run-time divergence test: its op and the values of its explicit inputs (None: left
#: out, or not known), the note or "".
RunCheck = Callable[[OnnxOp, Sequence[Any]], str]

#: Where onnxruntime (1.32, measured) computes otherwise than ONNX, or refuses, by the values
#: a node runs with, and onnx.reference computes what ONNX says: each op's test of its node's
#: explicit inputs (None: left out), the divergence note or "". The reference fallback notes
#: it on the node's run record (``ReferenceRun.said``) only where those values make it
#: diverge, and ``check`` names it for the outputs the node reaches. The onnxruntime fallback
#: computes what onnxruntime does, so notes only where that is no value (``_ORT_NO_VALUE``).
_RUN_DIVERGENCES: Mapping[str, RunCheck] = {
    "Squeeze": _squeeze_divergence,
    "Scan": _scan_run_divergence,
    "LabelEncoder": _label_divergence,
}


#: Where onnxruntime's result is no value but its uninitialized memory (``UNINITIALIZED``),
#: by the values a node runs with: the onnxruntime fallback's run says so on the node's
#: record (``OrtRun.said``), as ``check`` then compares nothing there with onnxruntime. Each
#: op's static test first (cheap, asked once of each segment: which nodes to watch), then its
#: run-time one.
_ORT_NO_VALUE: Mapping[str, tuple[Callable[[Node], bool], RunCheck]] = {
    "Scan": (lambda node: isinstance(node.op, OnnxOp) and (
        node.op.since_version < 9 and split_inputs(node)[0][:1] == ("",)
        or bool(_scan_body_note(node.op))), _scan_ort_no_value),
}

#: What the onnxruntime fallback adds to an ``_ORT_NO_VALUE`` note: what its run gave.
_ORT_GAVE = "; this run's values there are that memory (--fallback reference computes ONNX's)"

#: How ``_nested_scans`` names an input its subgraph makes: no value is read of it.
_MADE_INSIDE = "\0made inside"


@dataclass(frozen=True)
class _HeldScan:
    """A Scan a segment's node holds in a subgraph (``_nested_scans``)."""

    #: the holding node's outputs: its run record carries the note
    key: tuple[str, ...]
    #: the Scan as an op (its version, num_scan_inputs and body)
    op: OnnxOp
    #: a Scan-8's explicit inputs by the segment's names where they are the enclosing
    #: graph's (the engine runs the node whole and gives none of its subgraphs' values),
    #: ``_MADE_INSIDE`` where a subgraph makes them; a Scan-9+'s none (its note is its
    #: body's, whatever it is fed)
    inputs: tuple[str, ...]
    #: the holder's outputs its outputs that onnxruntime gets wrong by its body reach
    #: (``_scan_body_wrong``), and those its final states reach (``_final_states``: what a
    #: Scan-8 of no step gets wrong); (): none, so the note says nothing; None where not
    #: known: all
    body_wrong: tuple[str, ...] | None = None
    states: tuple[str, ...] | None = None
    #: where it is in a branch of the If holding it: the If's condition (the segment's name)
    #: and the value that runs that branch; it runs only then
    cond: str = ""
    when: bool = True

    def note(self, check: RunCheck, value: Callable[[str], Any]) -> str:
        """``check``'s note of it by ``value`` (a name's value, None: not known); "" where its
        branch is not taken. A sequence_lens made inside is given, its values not known."""
        flag = value(self.cond) if self.cond else None
        if flag is not None and np.size(flag) == 1 and bool(
                np.asarray(flag).reshape(-1)[0]) != self.when:
            return ""
        values = [value(name) if name else None for name in self.inputs]
        if self.op.since_version < 9 and self.inputs[:1] == (_MADE_INSIDE,):  # given
            values[0] = _sized(np.dtype(np.int64), (1,))
        return check(self.op, values)

    def wrong(self, note: str) -> tuple[str, ...] | None:
        """The holder's outputs ``note`` (of its body, or of its values) concerns: () none
        (no note is said), None all: every one where onnxruntime refuses the Scan, as it
        then fails the holder (check's onnxruntime run pruned to a Loop's carried value the
        Scan-8 does not reach ran the Loop, failed again, and exited 2 naming nothing)."""
        if REFUSES in note:
            return None
        body = _scan_body_note(self.op)
        if body and note.startswith(body):
            return self.body_wrong
        return self.states if note.startswith(f"{DIVERGENCE} {_NO_STEP}") else None


def _nested_scans(graph: Graph) -> list[_HeldScan]:
    """The Scans a segment's nodes hold in their subgraphs, at any depth (an If's or Loop's
    run whole on the fallback), watched as top-level ones are (``_RUN_DIVERGENCES``,
    ``_ORT_NO_VALUE``): every Scan-8, by the values it is fed, and each Scan-9+ whose body
    onnxruntime gets wrong (``_scan_body_note``: a state passed through by its own name,
    inside a Loop run whole, compared onnxruntime's buffers with themselves and passed).
    The holder's outputs each note concerns are those its outputs reach
    (``reach.reached_outputs``, from its own scope: a Scan-8 in an If's branch in a Loop's
    body left every output of the Loop uncompared), and an If's branch not taken is passed
    (the Scan at any depth in it runs only there)."""
    opset = graph.opset_imports.get("", 1)
    version = known_since_version("Scan", "", opset) or 8
    found = []
    for node in graph.nodes:
        if not isinstance(node.op, OnnxOp) or not any(
                "Scan" in sub.ops for sub in subgraphs(node.op)):
            continue
        explicit, outer = split_inputs(node)
        for attr, sub in node.op.attrs.items():
            if not isinstance(sub, Subgraph) or "Scan" not in sub.ops:
                continue
            body = onnx.GraphProto.FromString(sub.data)
            scoped = list(scoped_graphs(body))
            defined = {scope: set(defined_names(g)) for scope, g in scoped}
            reached = functools.partial(_concerned, node, body)
            branch = node.op_type == "If" and bool(explicit) and explicit[0] != ""
            for scope, g in scoped:
                for scan in g.node:
                    if scan.op_type != "Scan" or scan.domain not in ("", "ai.onnx"):
                        continue
                    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in scan.attribute
                             if a.name == "num_scan_inputs"}
                    attrs.update((a.name, Subgraph(a.g.SerializeToString(), (), ()))
                                 for a in scan.attribute if a.name == "body")
                    op = OnnxOp("Scan", version, attrs=attrs)
                    if version >= 9 and not _scan_body_note(op):
                        continue  # (a Scan-9+'s values onnxruntime computes)
                    # the names its scope sees defined: its own graph's and those enclosing
                    # it in the holder's subgraph, not a sibling branch's or body's
                    inner = set().union(*(defined.get(scope[:k], set())
                                          for k in range(len(scope) + 1)))
                    inputs = () if version >= 9 else tuple(
                        name if not name else _MADE_INSIDE if name in inner
                        else outer.get(name, _MADE_INSIDE) for name in scan.input)
                    # (at any depth: it runs only where its If's branch does, and its wrong
                    # outputs reach the holder's through what holds it between)
                    found.append(_HeldScan(
                        tuple(node.outputs), op, inputs,
                        reached(scope, _scan_body_wrong(op, scan.output)),
                        reached(scope, _final_states(op, scan.output)),
                        explicit[0] if branch else "", attr == "then_branch"))
    return found


def _concerned(node: Node, proto: onnx.GraphProto, scope: Scope,
               names: Sequence[str] | None) -> tuple[str, ...] | None:
    """The outputs of ``node`` that the tensors ``names`` of its subgraph ``proto`` at
    ``scope`` reach (``_reached_by``): () where none is named, None where not known."""
    if names is None:
        return None
    return _reached_by(node, proto, [(scope, name) for name in names]) if names else ()


def _reached_by(node: Node, proto: onnx.GraphProto,
                made: Collection[Value]) -> tuple[str, ...] | None:
    """The outputs of ``node`` (an If, Loop or Scan) that the values ``made`` of its subgraph
    ``proto`` reach (``reach.reached_outputs``); () none, None where not known: all."""
    explicit = split_inputs(node)[0]
    op = node.op
    scans = int(op.attrs.get("num_scan_inputs", 0) or 0) if isinstance(op, OnnxOp) else 0
    lengths = int(node.op_type == "Scan" and isinstance(op, OnnxOp) and op.since_version < 9)
    return reached_outputs(node.op_type, len(explicit), len(explicit) - lengths - scans, proto,
                           made, node.outputs)


def reference_hint(graph: Graph, feeds: Mapping[str, np.ndarray],
                   nodes: Sequence[Node] | None = None, failure: str = "",
                   toward: Collection[str] | None = None,
                   providers: Sequence[str] = ()) -> str:
    """What onnxruntime's ``failure`` on a segment (or on ``graph`` past its ``nodes``) adds
    where a node of it diverges (``run_divergence``): what diverges, and that onnx.reference
    runs it; "" where none does."""
    found = run_divergence(graph, feeds, nodes, failure, toward, providers)
    return "" if found is None else _hint(*found)


@dataclass(frozen=True)
class RunDivergence:
    """A node ``run_divergence`` finds: its note, how hints name it ("node 'squeeze'
    (Squeeze)"), and its id in the graph (a holder's, where a subgraph of it diverges)."""

    note: str
    where: str
    node_id: int

    @property
    def other_sizes(self) -> bool:
        """Whether onnxruntime makes other sizes there than ONNX says (a Squeeze by an empty
        axes list), rather than refusing the node."""
        return _SQUEEZES_ALL in self.note


def run_divergence(graph: Graph, feeds: Mapping[str, np.ndarray],
                   nodes: Sequence[Node] | None = None, failure: str = "",
                   toward: Collection[str] | None = None,
                   providers: Sequence[str] = ()) -> tuple[str, str] | None:
    """``run_divergence_at``'s note and node, as hints say them."""
    found = run_divergence_at(graph, feeds, nodes, failure, toward, providers)
    return None if found is None else (found.note, found.where)


def run_divergence_at(graph: Graph, feeds: Mapping[str, np.ndarray],
                      nodes: Sequence[Node] | None = None, failure: str = "",
                      toward: Collection[str] | None = None,
                      providers: Sequence[str] = ()) -> RunDivergence | None:
    """The note of the first node of ``graph`` (or of its ``nodes``) that, by the values it
    was fed (or holds as constants, or the sizes inference gives), diverges as onnxruntime
    refuses and ONNX allows (``_RUN_DIVERGENCES``: a Scan-8's sequence length of 0, at top
    level or held by a node run whole: ``_nested_scans``), or as onnxruntime makes other
    sizes that a node past it fails on (a Squeeze by an empty axes list), and the node
    ("node 'squeeze' (Squeeze)"); None where none does. A node onnxruntime's ``failure``
    provably fails apart from is passed (``_apart``): onnx.reference fails there too. Of
    ``nodes`` (those before a rule broken past them, ``toward`` the tensors on the way to
    it), an If, Loop or Scan whose subgraph makes such sizes is one too where they reach an
    output of it among ``toward`` (``_held_toward``): a Squeeze in a Scan's body in an If's
    branch, whose rows a Concat there joined, ended with the Concat's rule alone.
    ``providers``: those the failing run was on, which ``_arrived`` runs again on."""
    arrived = functools.cache(lambda: _arrived(graph, failure, feeds, providers))
    for node in graph.nodes if nodes is None else nodes:
        check = _RUN_DIVERGENCES.get(node.op_type)
        if check is None or not isinstance(node.op, OnnxOp) or node.op.domain != "":
            continue
        note = check(node.op, [_known(graph, feeds, name) for name in split_inputs(node)[0]])
        if any(phrase in note for phrase in _FAILS_AT) and not _apart(
                graph, node, failure, arrived):
            return RunDivergence(
                note, f"node {holder_label(node.name, node.outputs)} ({node.op_type})", node.id)
    if nodes is None:  # a segment: its If, Loop and Scan nodes' subgraphs too
        holders = {tuple(node.outputs): node for node in graph.nodes}
        for held in _nested_scans(graph):  # by the values the segment is fed
            note = held.note(_scan_8_divergence, lambda name: feeds.get(
                name, graph.constant(name)))
            if REFUSES in note and not _apart(graph, holders[held.key], failure, arrived):
                node = holders[held.key]
                return RunDivergence(note, f"node {holder_label(node.name, node.outputs)} "
                                           f"({node.op_type}) holds a Scan-8 that", node.id)
        for node in graph.nodes:
            # a Loop onnxruntime fails on by its body's declarations, or one held at any depth
            note = loop_divergence(node.op, split_inputs(node)[0]) if subgraphs(node.op) else ""
            if note and not _apart(graph, node, failure, arrived):
                return RunDivergence(note, f"node {holder_label(node.name, node.outputs)} "
                                           f"({node.op_type})", node.id)
    for node, proto in _holders(graph, nodes):
        if _apart(graph, node, failure, arrived):
            continue
        at = node.id in {f.id for f in failed_nodes(graph, failure)}  # (its inner node too)
        for note, where, made in _held_divergences(
                _first_run(graph, node, proto, feeds), graph.opset_imports.get("", 1), {},
                lambda name: _known(graph, feeds, name)):
            if any(phrase in note for phrase in _FAILS_AT) and not (
                    at and _held_apart(proto, made, failure)) and (
                    nodes is None or _held_toward(node, proto, made, toward)):
                return RunDivergence(note, f"{where} in a subgraph of node "
                                           f"{holder_label(node.name, node.outputs)} "
                                           f"({node.op_type})", node.id)
    return None


def _first_run(graph: Graph, node: Node, proto: onnx.GraphProto,
               feeds: Mapping[str, np.ndarray]) -> onnx.GraphProto:
    """A subgraph of ``node`` as its first run (a Loop's first trip, a Scan's first step)
    takes it, as far as what the node is fed shows: its inputs declared without all their
    sizes typed as they arrive (``_arrivals``), and the sizes onnx's inference then gives its
    tensors declared (value_info), for ``_held_divergences`` to read. A Squeeze by an empty
    axes list of a Loop body's carried value declared without a shape, or of an If branch's
    Identity of X, got no hint where the same, declared, got one. The enclosing tensors it
    reads stay read through ``outer`` (their values, not only sizes); the subgraph as it is
    where inference fails."""
    from onnx import numpy_helper

    explicit, outer = split_inputs(node)
    arrivals = _arrivals(node, proto, [_known(graph, feeds, name) for name in explicit])
    model = onnx.helper.make_model(proto, opset_imports=[
        onnx.helper.make_opsetid(domain, version)
        for domain, version in graph.opset_imports.items()])
    model.ir_version = graph.ir_version
    typed = model.graph
    for value in typed.input:
        if not _all_sizes(value.type) and value.name in arrivals:
            value.type.CopyFrom(arrivals[value.name])
    for name in outer_names(proto):  # typed by their sizes, constants by their values
        found = _known(graph, feeds, outer.get(name, name))
        elem = None if found is None else DTYPE_TO_ELEM_TYPE.get(np.asarray(found).dtype)
        if elem is None:  # (not known, or of a type ONNX has none for: left open)
            continue
        if isinstance(found, _Sized) or np.size(found) > folding.INFERENCE_CONSTANT_LIMIT:
            typed.input.append(onnx.helper.make_tensor_value_info(
                name, elem, list(np.shape(found))))
        else:
            typed.initializer.append(numpy_helper.from_array(np.asarray(found), name))
    try:
        inferred = onnx.shape_inference.infer_shapes(model).graph
    except Exception:  # (inference refuses it: the subgraph as it declares itself)
        return proto
    own = {value.name for value in proto.input}
    first = onnx.GraphProto()
    first.CopyFrom(inferred)
    del first.input[:], first.initializer[:]
    first.input.extend(value for value in inferred.input if value.name in own)
    first.initializer.extend(proto.initializer)
    return first


def _all_sizes(declared: onnx.TypeProto) -> bool:
    """Whether a declared type is a tensor's of every size given."""
    tensor = declared.tensor_type
    return declared.HasField("tensor_type") and tensor.HasField("shape") and all(
        d.HasField("dim_value") for d in tensor.shape.dim)


def _arrivals(node: Node, proto: onnx.GraphProto, fed: Sequence[Any]) -> dict[str, onnx.TypeProto]:
    """The types the inputs of ``node``'s subgraph ``proto`` arrive in on its first run, by
    ``fed`` (its explicit inputs' values or stand-ins of their sizes, None: not known): a
    Loop body's iteration number and condition, and its carried values as fed; a Scan-9+
    body's state variables as fed and one slice of each scan input. An If's branches take
    none, a Scan-8's are left as declared (batches: its body takes one entry's slices)."""
    names = [value.name for value in proto.input]
    op = node.op
    if not isinstance(op, OnnxOp) or op.op_type not in ("Loop", "Scan") or (
            op.op_type == "Scan" and op.since_version < 9):
        return {}
    shapes: list[tuple[np.dtype, Sequence[Any]] | None] = [
        None if value is None else (np.asarray(value).dtype, np.shape(value)) for value in fed]
    if op.op_type == "Loop":
        shapes = [(np.dtype(np.int64), ()), (np.dtype(np.bool_), ()), *shapes[2:]]
    else:
        try:
            form = scan_form(op.attrs, len(fed), len(node.outputs), len(names),
                             len(proto.output))
            shapes = shapes[:form.states] + [
                None if found is None else (found[0], scan_slice(tuple(found[1]), axis, k))
                for k, (found, axis) in enumerate(zip(shapes[form.states:], form.input_axes))]
        except ValueError:  # (its node fails on it: nothing arrives)
            return {}
    return {name: onnx.helper.make_tensor_type_proto(DTYPE_TO_ELEM_TYPE[found[0]],
                                                     list(found[1]))
            for name, found in zip(names, shapes)
            if found is not None and found[0] in DTYPE_TO_ELEM_TYPE}


def _holders(graph: Graph, nodes: Sequence[Node] | None = None
             ) -> Iterator[tuple[Node, onnx.GraphProto]]:
    """The graph's If, Loop and Scan nodes (of ``nodes`` where given) with each subgraph of
    theirs that holds, at any depth, an op ``_RUN_DIVERGENCES`` tests."""
    for node in graph.nodes if nodes is None else nodes:
        for sub in subgraphs(node.op):
            if any(op in _RUN_DIVERGENCES for op in sub.ops):
                yield node, onnx.GraphProto.FromString(sub.data)


def _apart(graph: Graph, node: Node, failure: str,
           arrived: Callable[[], Mapping[str, np.ndarray]]) -> bool:
    """Whether onnxruntime's run ``failure`` names a node of ``graph`` neither ``node`` nor
    one it reaches through a read that arrived otherwise than ONNX infers it (``parity.
    failed_nodes``, ``diverged_reads`` by what onnxruntime made: ``arrived``): there the
    node's divergence is not the cause. An If branch's Squeeze by an empty axes list beside
    a Reshape of 3 elements to [5] that fails on both engines got the hint to use
    onnx.reference, which fails too; so did a Reshape to [5] of a sum of the Squeeze's
    result (a scalar on either engine)."""
    failed = failed_nodes(graph, failure)
    return bool(failed) and not any(_reaches(graph, node, f, arrived) for f in failed)


def _reaches(graph: Graph, node: Node, failed: Node,
             arrived: Callable[[], Mapping[str, np.ndarray]]) -> bool:
    """Whether ``node``'s divergence of sizes reaches the ``failed`` node: it is the node,
    or makes (or is before the maker of) a read of it that ``diverged_reads`` keeps."""
    if failed.id == node.id:
        return True
    if not any(nx.has_path(graph.nx, node.id, maker.id) for name in failed.inputs
               if (maker := graph.producer(name))):
        return False  # (no path at all: no onnxruntime run to fetch the reads by)
    reads: Sequence[str] = failed.inputs
    if failed.op_type not in _VALUE_RULES and any(_may_arrive_as_inferred(graph, name)
                                                   for name in reads if name):
        reads = diverged_reads(graph, reads, arrived())  # (else every read counts anyway:
        # no onnxruntime run again, which on a 200 MB model took 1.1 s of a failing check)
    return any(nx.has_path(graph.nx, node.id, maker.id) for name in reads
               if (maker := graph.producer(name)))


#: The ops whose rules onnxruntime checks on floating-point values (1.32, measured): a Range's
#: delta of 0, a Resize's or Upsample's scale below its bound, a OneHot's negative depth, a
#: Dropout's ratio outside [0, 1). Every read of a failing one counts (``_reaches``), not
#: only those ``diverged_reads`` keeps: a float that arrived of the sizes ONNX infers may
#: still carry a divergence of sizes in its values (a Range's delta, a Cast of a Shape's
#: dimension of the Squeeze's result less 3: 0 on onnxruntime, -2 on onnx.reference, lost
#: the hint that onnx.reference runs the Squeeze).
_VALUE_RULES = frozenset({"Range", "Resize", "Upsample", "OneHot", "Dropout"})


def _arrived(graph: Graph, failure: str, feeds: Mapping[str, np.ndarray],
             providers: Sequence[str]) -> dict[str, np.ndarray]:
    """What the nodes onnxruntime's ``failure`` names read that ``graph`` makes, as
    onnxruntime made it: the nodes before them run again on ``feeds``, on the ``providers``
    the failing run was on (the fallback's or the onnxruntime backend's: the user's
    ``--provider``), whose kernels made the reads (the default providers ran it again, CUDA
    where the user chose CPU). {} where that fails too, or none are given (every read then
    counts: ``diverged_reads``)."""
    failed = failed_nodes(graph, failure)
    reads = list(dict.fromkeys(name for f in failed for name in f.inputs
                               if name and graph.producer(name) is not None))
    makers = {maker.id for name in reads if (maker := graph.producer(name))}
    before = makers.union(*(nx.ancestors(graph.nx, m) for m in makers))
    if not reads or not providers or any(f.id in before for f in failed):
        return {}  # (a node the failure names is before another: the run fails there)
    try:
        cut = graph.extract(before, reads, keep_constants=True)
        session = make_session(cut.to_onnx(), list(providers), graph.source,
                               spin=False, shape_rewrites=False)
        found = values.run(session, reads, {name: feeds[name] for name in cut.inputs
                                                     if name in feeds})
    except Exception:  # (not run again: the reads as inference foresaw none of them)
        return {}
    return dict(zip(reads, found))


def _may_arrive_as_inferred(graph: Graph, name: str) -> bool:
    """Whether ONNX infers ``name`` a floating-point tensor of static sizes: the only read
    ``as_inferred`` may pass, whatever arrives."""
    info = graph.tensors.get(name)
    return (info is not None and info.static_shape is not None and info.dtype is not None
            and np.issubdtype(np.dtype(info.dtype), np.floating))


def as_inferred(graph: Graph, name: str, arrived: Mapping[str, np.ndarray],
                sized: bool = False) -> bool:
    """Whether ``name`` arrived as a floating-point array (of any type where ``sized``: a
    read whose values the rule does not read) of the dtype and static sizes ONNX infers for
    it (``diverged_reads``)."""
    value, info = arrived.get(name), graph.tensors.get(name)
    return (value is not None and info is not None and info.static_shape is not None
            and (sized or np.issubdtype(value.dtype, np.floating)) and info.dtype is not None
            and np.dtype(info.dtype) == value.dtype and value.shape == tuple(info.static_shape))


def diverged_reads(graph: Graph, reads: Sequence[str], arrived: Mapping[str, np.ndarray],
                   sized: Collection[str] = ()) -> list[str]:
    """The ``reads`` of a node onnxruntime failed at (or of a rule that a subgraph broke)
    through which a divergence of sizes before them may reach it: all but a floating-point
    read that ``arrived`` of the dtype and sizes ONNX infers (``as_inferred``), or one of
    ``sized`` (whose values the rule does not read: ``plan.SIZED_READS``) of any type. The
    divergence did not reach its sizes, and a rule reads no float's values (but those of
    ``_VALUE_RULES``, whose every read ``_reaches`` counts): a sum of a Squeeze's result (a
    scalar either way) read by a Concat or a Reshape failing on onnx.reference too got the
    hint to run --fallback reference, as did an int64 Reshape of it to [-1] ([3] either
    way) that a run-time Concat joined with a [2, 2]. One rule for a main graph's failure
    (``_apart``) and a subgraph's (``plan._ControlStep._hint``)."""
    return [name for name in reads
            if name and not as_inferred(graph, name, arrived, name in sized)]


def _held_apart(proto: onnx.GraphProto, made: Sequence[Value], failure: str) -> bool:
    """``_apart`` inside the subgraph ``proto`` of the node the failure names first, of the
    node there making ``made`` (its values, by scope): whether the innermost node the failure
    names, by its name and op type, is one of ``proto``'s (at any depth) and every such node
    is one that nothing ``made`` reaches, found by what it makes, in its own scope (names may
    be empty or shared: an unnamed Reshape failing apart from a Squeeze was taken as the
    unnamed node reading its result, and got the hint to run --fallback reference, where it
    fails too; a sibling branch's node making a name the Squeeze's branch reaches too)."""
    found = failed_at(failure)[-1:]
    if not found:
        return False
    op_type, name = found[0]
    failed = [(scope, node) for scope, graph in scoped_graphs(proto) for node in graph.node
              if node.name == name and node.op_type == op_type]
    if not failed:
        return False
    reached = reach(proto, made)  # (every output of a node reached is among them)
    return not any((scope, out) in reached for scope, node in failed for out in node.output
                   if out)


def _held_toward(node: Node, proto: onnx.GraphProto, made: Collection[Value],
                 toward: Collection[str] | None) -> bool:
    """Whether the values ``made`` in ``node``'s subgraph ``proto`` (at any depth, by scope:
    ``reach.Value``) reach an
    output of ``node`` among ``toward`` (any, None; ``reached_outputs``, which says () both
    where it cannot tell, every one then, and where they reach no output of ``proto``, told
    apart first): only such an output carries their sizes past it. A Squeeze summed into a
    Scan's other output got the hint where a Concat of its rows failed on both engines."""
    reached = reach(proto, made)
    if not any(value in reached for value in output_values(proto)):
        return False
    explicit = len(split_inputs(node)[0])
    states = 0  # (a Scan's: its explicit inputs but its scan inputs and a Scan-8's lengths)
    if node.op_type == "Scan" and isinstance(node.op, OnnxOp):
        states = len(proto.input) - int(node.op.attrs.get("num_scan_inputs", 0) or 0)
    found = reached_outputs(node.op_type, explicit, states, proto, made, node.outputs)
    return toward is None or not found or any(name in toward for name in found)


#: How ``reference_hint``'s hint says onnx.reference runs the node (``hinted``).
_RUNS_AS_ONNX_SAYS = "is a known divergence onnx.reference runs as ONNX says"


def _hint(note: str, node: str) -> str:
    """The note and the hint that onnx.reference runs the node (``reference_hint``)."""
    return f"; {note}" + engine_hint(f"{node} {_RUNS_AS_ONNX_SAYS}", "--fallback reference",
                                     "fallback='reference'")


def hinted(message: str) -> bool:
    """Whether an error's ``message`` already holds ``reference_hint``'s hint: a rule a
    run-time Slice/Concat/Pad broke by the sizes a Squeeze made got it there, and the run
    lowered again by those sizes, failing with it, added it again."""
    return _RUNS_AS_ONNX_SAYS in message


def _held_divergences(proto: onnx.GraphProto, opset: int, known: Mapping[str, Any],
                      outer: Callable[[str], Any],
                      at: Scope = ()) -> Iterator[tuple[str, str, Sequence[Value]]]:
    """The ``_RUN_DIVERGENCES`` notes of a subgraph's nodes (at any depth), each with the node
    ("node 'squeeze' (Squeeze)") and its outputs (by scope, ``at`` the subgraph's: as
    ``reach.scoped_graphs`` paths it), by what its scope fixes: its constants,
    and the sizes it declares (``known``: the enclosing subgraphs' names, ``outer``: the
    segment's value of a name); the values that arrive there are not at hand, so a node of
    sizes not declared is passed (None: not known; a name here hides an enclosing one)."""
    from onnx import numpy_helper

    scope = dict(known)
    for value in (*proto.input, *proto.value_info):
        tensor = value.type.tensor_type
        dtype = ELEM_TYPE_TO_DTYPE.get(tensor.elem_type)  # (None: no type, or none numpy has)
        static = tensor.HasField("shape") and all(
            d.HasField("dim_value") for d in tensor.shape.dim)
        scope[value.name] = _sized(dtype, [d.dim_value for d in tensor.shape.dim]) if (
            static and dtype is not None) else None
    scope.update((t.name, numpy_helper.to_array(t)) for t in proto.initializer)
    declared = {value.name for value in proto.value_info}
    for k, node in enumerate(proto.node):
        scope.update((out, None) for out in node.output if out not in declared)
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute
                 if a.type not in _GRAPH_ATTRIBUTES}
        if node.op_type == "Constant" and "value" in attrs:
            scope[node.output[0]] = numpy_helper.to_array(attrs["value"])
        check = _RUN_DIVERGENCES.get(node.op_type) if node.domain in ("", "ai.onnx") else None
        version = known_since_version(node.op_type, "", opset) if check else None
        if check and version:
            read = [scope[name] if name in scope else outer(name) if name else None
                    for name in node.input]
            op = OnnxOp(node.op_type, version, "", attrs)
            note = check(op, read)
            if note:  # (the outputs it concerns: a Scan-8 of no step's final states)
                bodies = {a.name: Subgraph(a.g.SerializeToString(), (), ())
                          for a in node.attribute if a.name == "body" and a.HasField("g")}
                concerned = _ort_wrong(OnnxOp(node.op_type, version, "", {**attrs, **bodies}),
                                       node.output, note)
                yield (note, f"node {holder_label(node.name, node.output)} ({node.op_type})",
                       [(at, out) for out in (node.output if concerned is None else concerned)
                        if out])
        for attr in node.attribute:
            for j, held in enumerate(attribute_graphs(attr)):
                yield from _held_divergences(held, opset, scope, outer, (*at, (k, attr.name, j)))


#: The attribute types that hold subgraphs.
_GRAPH_ATTRIBUTES = (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)


def _known(graph: Graph, feeds: Mapping[str, np.ndarray], name: str) -> Any:
    """A tensor's value as fed or held as a constant; else, where inference gives its
    sizes, a stand-in of them (a run check reads no more of a tensor it is not fed); None."""
    value = feeds.get(name, graph.constant(name)) if name else None
    info = graph.tensors.get(name) if value is None and name else None
    if info is None or info.dtype is None or info.static_shape is None:
        return value
    return _sized(info.dtype, info.static_shape)


class _Sized(np.ndarray):
    """A stand-in of a tensor's sizes (``_sized``): its values, zeros, are not the tensor's,
    so a run check reading values (a Scan-8's sequence_lens) takes it as not known, unless
    it has no element."""


def _sized(dtype: np.dtype, shape: Sequence[int]) -> np.ndarray:
    """A stand-in of a tensor of these sizes (one element, broadcast: nothing allocated)."""
    return np.broadcast_to(np.zeros((), dtype), tuple(shape)).view(_Sized)


class ReferenceRun:
    """A segment's runner on onnx.reference. ``said``: the divergence notes of its last run,
    by the outputs of the node each is of (``_RUN_DIVERGENCES``); where the segment holds
    such a node, the run keeps every value it made, to read that node's inputs. An If, Loop
    or Scan holding one in a subgraph (at any depth) is said of by what the subgraph declares
    (``_held_divergences``)."""

    def __init__(self, evaluator: Any, graph: Graph) -> None:
        self.evaluator, self.source, self.what = evaluator, graph.source, _nodes(graph)
        self.outputs = list(graph.outputs)
        self.watched = [
            (tuple(node.outputs), node.op, split_inputs(node)[0], check)
            for node in graph.nodes
            if isinstance(node.op, OnnxOp)
            and node.op.domain == DIVERGENT_DOMAINS.get(node.op_type, "")
            and (check := _RUN_DIVERGENCES.get(node.op_type)) is not None
        ]
        #: the Scans its nodes hold, noted as they run whole here (``_scan_run_divergence``)
        self.held_scans = _nested_scans(graph)
        self.watching = bool(self.watched or self.held_scans)  # (it keeps every value made)
        #: its Scan-8s' inputs, by where each is and their inferred ranks (``other_rank``)
        self.ranked = [
            (graph.describe(node), inputs, inferred_ranks(graph, inputs))
            for node in graph.nodes if node.op_type == "Scan" and isinstance(node.op, OnnxOp)
            and node.op.domain == "" and (inputs := split_inputs(node)[0])
        ]
        # If, Loop and Scan nodes whose subgraphs hold such a node: the node runs whole here
        # (the numpy backend, which notes what it runs of them, left it to the fallback)
        self.held = list(_holders(graph))
        # and those holding a Loop onnxruntime fails on when it runs (lowering notes it only
        # where onnxruntime refuses the model at load): noted as they run here
        self.loops = [(tuple(node.outputs), note) for node in graph.nodes if subgraphs(node.op)
                      and (note := loop_divergence(node.op, split_inputs(node)[0]))]
        self.graph, self.opset = graph, graph.opset_imports.get("", 1)
        self.said: dict[tuple[str, ...], str] = {}
        #: the outputs a holder's note concerns, by its key (as ``OrtRun.wrong``): those its
        #: subgraph's divergent node reaches; None, or a key not here, all of its node's
        self.wrong: dict[tuple[str, ...], tuple[str, ...] | None] = {}

    def __call__(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        try:
            made = self.evaluator.run(None, dict(feeds), intermediate=self.watching)
        except Exception as exc:
            raise BackendError(
                f"{self.source}: onnx.reference fails on {self.what}: {first_line(exc)}"
            ) from None
        if self.watching:  # every value it made, by name
            results = {name: made[name] for name in self.outputs if name in made}
            for where, inputs, ranks in self.ranked:  # as onnxruntime fails on them
                values = [made.get(name) if name else None for name in inputs]
                if (problem := other_rank(where, inputs, ranks, values)) is not None:
                    raise BackendError(problem)
            self.said, self.wrong = {}, {}
            for key, op, inputs, check in self.watched:
                if key not in self.said and (note := check(
                        op, [made.get(name) if name else None for name in inputs])):
                    self.said[key] = note  # (a node's first: one note a node)
                    self.wrong[key] = _ort_wrong(op, key, note)
            for held in self.held_scans:
                if held.key not in self.said and (note := held.note(
                        _scan_run_divergence, lambda name: made.get(name, feeds.get(name)))) and (
                        wrong := held.wrong(note)) != ():  # (): it reaches none of them
                    self.said[held.key] = note
                    self.wrong[held.key] = wrong
        else:
            results = dict(zip(self.outputs, made))
            self.said, self.wrong = {}, {}
        if self.held:  # by what the subgraphs declare, as ``reference_hint`` reads them
            known = {**(made if self.watching else results), **feeds}
            for node, proto in self.held:  # (as its first run takes it: ``_first_run``)
                found = next(_held_divergences(
                    _first_run(self.graph, node, proto, known), self.opset, {},
                    lambda name: _known(self.graph, known, name)), None)
                if found:  # (its note said, what another note of the node reached kept)
                    key = tuple(node.outputs)
                    # (a refusal fails the holder on onnxruntime: every output of it; so may
                    # a node past a Squeeze's other sizes, reaching none of its outputs)
                    reached = None if REFUSES in found[0] else _reached_by(
                        node, proto, found[2]) if found[2] else ()
                    if _SQUEEZES_ALL in found[0]:
                        reached = reached or None
                    before = self.wrong.get(key) if key in self.said else ()
                    self.said[key] = found[0]
                    self.wrong[key] = None if before is None or reached is None else tuple(
                        dict.fromkeys((*before, *reached)))
        for key, note in self.loops:
            self.said.setdefault(key, note)
        # copies: onnx.reference's Reshape, Slice, Transpose... return views of their
        # inputs, and Dropout or Identity the input itself, which may be the caller's
        # array or the plan's memory, reused by later steps and runs
        return {name: np.array(value) for name, value in results.items()}


def reference_evaluator(model: onnx.ModelProto) -> Any:
    """onnx.reference's evaluator of a model, its ops computed as the spec says
    (``_spec_ops``): the one oracle ``--fallback reference`` and ``check`` run."""
    from onnx.reference import ReferenceEvaluator  # slow to import; most never use it

    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 1)
    return ReferenceEvaluator(model, new_ops=_spec_ops(opset))


def _spec_ops(opset: int) -> list[type]:
    """onnx.reference's ops replaced, for a model of this default-domain opset, where it
    computes otherwise than the ONNX spec: its Slice slices Python's way, so a start before
    the beginning with a negative step gave nothing where Slice-10..13 clamp it to index 0
    (docs/DECISIONS.md: "Folding follows the ONNX spec"). The replacement is folding's kernel
    (``shape_kernels``), which onnxruntime agrees with; what the kernel declines stays the
    reference's. Its Pad hands the pads to ``np.pad``, which
    refuses a negative one ("index can't contain negative values"), where ONNX removes
    elements: the replacement crops first (``_crop_negative_pads``), as onnxruntime does,
    and fills by ONNX's default in the data's type where constant_value is absent.
    Ops the reference computes otherwise than the spec are replaced (``reference_ops``:
    Softmax-11 over a matrix, BatchNormalization-9 in test mode, LRN over every channel)."""
    from onnx.reference.op_run import OpRun

    class Pad(OpRun):  # every version's inputs and attributes (Pad-1's paddings, Pad-2's value)
        op_domain = ""

        def _run(  # type: ignore[no-untyped-def]
            self, data, pads=None, constant_value=None, axes=None, mode=None, value=None,
            paddings=None,
        ):
            widths = pads if pads is not None else paddings
            fill = constant_value if constant_value is not None else value
            return (_spec_pad(data, widths, mode or "constant", fill, axes),)

    extra = spec_ops(opset)  # where the reference computes otherwise than the spec
    if opset < 10:
        return [Pad, *extra]  # Slice-1 takes its parameters as attributes: the reference's own
    from onnx.reference.ops.op_slice import SliceCommon

    kernel = KERNELS["Slice"]

    class Slice(SliceCommon):  # the op's name: the evaluator finds the class by it
        op_domain = ""

        def _run(self, data, starts, ends, axes=None, steps=None):  # type: ignore[no-untyped-def]
            made = kernel.fn((data, starts, ends, axes, steps), {}, kernel.last)
            return made if made is not None else super()._run(data, starts, ends, axes, steps)

    return [Slice, Pad, *extra]


def _spec_pad(data: np.ndarray, pads: Any, mode: str, fill: Any, axes: Any) -> np.ndarray:
    """ONNX's Pad, negative pads cropped first; edge, reflect and wrap by DirectML's index
    maps (``dml.indexmaps``, the emulator's: ``np.pad``'s reflect by more than an axis
    differs between NumPy versions), reflect over an axis of one element as edge (nothing to
    mirror: what ``np.pad``, and so onnx.reference, gives)."""
    given = data.shape
    data, widths = _crop_negative_pads(data, pads, axes)
    if not widths:  # a scalar, whose pads are empty, is itself (np.pad refused the empty
        return data.copy()  # widths: "`pad_width` must be of integral type")
    shape = [start + size + end for size, (start, end) in zip(data.shape, widths)]
    if 0 in shape:  # an empty result, in every mode, whatever axis of size 0 it pads: its
        # shape alone (an index map of a 2^31 pad took 16 GiB for an empty result, and one
        # of an axis of size 0 failed, "index 0 is out of bounds")
        return np.empty(shape, data.dtype)
    if mode == "constant":  # ONNX's default fill in the data's type: e8m0's 0 is 0x00, as
        # ONNX's Cast makes it (np.pad's 0 made NaN there), a string's is "" (np.pad's was 0)
        fill = default_pad_value(data.dtype) if fill is None else np.asarray(fill).reshape(-1)[0]
        return np.pad(data, widths, mode="constant", constant_values=fill).astype(data.dtype)
    if data.size == 0:  # padded to elements, with none to repeat: np.pad refuses it too
        axis = data.shape.index(0)  # empty as given, or by the crop, as lowering says it
        flat = [int(p) for p in np.asarray(pads).reshape(-1)]
        empty = "is empty" if given[axis] == 0 else f"is empty after the crop of pads {flat}"
        raise ValueError(empty_axis_refusal(mode, axis, empty))
    made = data
    for axis, (start, end) in enumerate(widths):
        if start or end:
            size = made.shape[axis]
            kind = _PAD_MODES[mode] if size > 1 or mode != "reflect" else PaddingMode.EDGE
            made = np.take(made, source_indices(kind, size, start, end), axis=axis)
    return made


#: ONNX's Pad modes other than constant, as DirectML's.
_PAD_MODES = {"edge": PaddingMode.EDGE, "reflect": PaddingMode.REFLECTION,
              "wrap": PaddingMode.WRAP}


def _crop_negative_pads(
    data: np.ndarray, pads: Any, axes: Any
) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """The data with each negative pad's elements removed, and the pads left to add (none
    negative). Where one side's crop reaches past the other side (a constant Pad that keeps
    nothing of an axis), the axis is cropped empty and padded to its size, all fill.
    ValueError where the pads are not two per padded axis, as onnx.reference's Pad refuses
    them (8 pads for rank 3 were read as 3 begins and 3 ends, the last two dropped)."""
    rank = data.ndim
    flat = [int(p) for p in np.asarray(pads).reshape(-1)]
    chosen = list(range(rank)) if axes is None else [
        int(a) + rank if int(a) < 0 else int(a) for a in np.asarray(axes).reshape(-1)
    ]
    if len(flat) != 2 * len(chosen):
        counted = f"data of rank {rank}" if axes is None else f"{len(chosen)} axes"
        twice = "2 * rank" if axes is None else "2 * len(axes)"
        raise ValueError(f"pads has {len(flat)} values for {counted}; it must have {twice}")
    index: list[slice] = [slice(None)] * rank
    widths = [(0, 0)] * rank
    for n, axis in enumerate(chosen):
        begin, end = flat[n], flat[n + len(chosen)]
        size = data.shape[axis]
        low, high = max(0, -begin), size - max(0, -end)
        if low > high:
            index[axis], widths[axis] = slice(0, 0), (0, size + begin + end)
        else:
            index[axis], widths[axis] = slice(low, high), (max(begin, 0), max(end, 0))
    return data[tuple(index)], widths


class OnnxruntimeFallback:
    """onnxruntime sessions on the chosen providers (default: the preferred available one).

    A lowered graph leaves one segment per run of ONNX nodes between DML nodes, each its own
    session. They allocate from one CPU arena (``providers.share_cpu_arena``), not one each.
    ``shared_threads`` puts them all on onnxruntime's process-wide thread pools
    (``providers.share_global_thread_pools``: faster with many segments, but it binds the
    whole process, so it is not the default)."""

    def __init__(
        self, providers: Sequence[str] | None = None, *, shared_threads: bool = False
    ) -> None:
        self.providers = select_providers(providers)
        self.engine = f"onnxruntime:{self.providers[0]}"
        self.shared_threads = shared_threads

    def prepare(self, graph: Graph, layout: bool | None = None) -> Runner:
        """``layout``: whether the session may use onnxruntime's NCHWc rewrite, as decided
        for the whole model (``providers.layout_rewrite_safe``); None decides by ``graph``.
        A segment holding a node whose result onnxruntime may leave uninitialized
        (``_ORT_NO_VALUE``) runs as an ``OrtRun``, which says so where it does."""
        watched = _watched(graph, _ORT_NO_VALUE)
        held = [scan for scan in _nested_scans(graph)
                if scan.inputs[:1] == ("",) or _scan_body_note(scan.op)]  # (``_ORT_NO_VALUE``)
        fetched = _fetched(graph, watched + [
            (scan.key, scan.op, scan.inputs, _scan_ort_no_value) for scan in held])
        ran = graph
        if fetched:  # tensors the tests read that the segment makes: fetched as outputs
            ran = graph.copy()
            ran.outputs = [*graph.outputs, *fetched]
        try:
            session = make_session(
                # (its omitted outputs onnxruntime dies of named there; a Scan body's old
                # axes written as onnxruntime's inference sizes them: ``old_axes``)
                count_old_axes(ran.to_onnx()),
                self.providers,
                f"{graph.source}: {_nodes(graph)}",
                shared_threads=self.shared_threads,
                shared_arena=True,
                # a model's fallback is many sessions, each with its own pool: spinning after
                # each run, they took both cores from everything else in the process (load +
                # lower of shufflenet right after a run: 0.80 s instead of 0.04)
                spin=False,
                # what dmlgraph left unfolded computes at run time, as the segment's tensors
                # are (``providers.SHAPE_REWRITES``)
                shape_rewrites=False,
                layout=layout,
            )
        except BackendError as exc:
            if cannot_run(exc) is None:
                raise
            # said, not done: the user chooses the engine (an int16 Einsum had no hint)
            raise exc.with_hint(_MAY_RUN) from None
        outputs = list(ran.outputs)
        fetch_values = values.needs_values(session)
        providers = self.providers  # (those the failure is on: ``_arrived`` runs again on them)

        def run(feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
            try:
                results = values.run(session, outputs, feeds, fetch_values)
            except BackendError:
                raise
            except Exception as exc:
                hint = reference_hint(graph, feeds, failure=str(exc), providers=providers) or (
                    _MAY_RUN if fails_when_run(str(exc)) else "")
                raise BackendError(
                    f"{graph.source}: onnxruntime fails on {_nodes(graph)}: {first_line(exc)}"
                    f"{hint}"
                ) from None
            return dict(zip(outputs, results))

        return OrtRun(run, graph, watched, held) if watched or held else run


#: What a segment onnxruntime cannot run (``providers.CANNOT_RUN``, ``FAILS_WHEN_RUN``) adds.
_MAY_RUN = engine_hint("onnx.reference may run them", "--fallback reference",
                       "fallback='reference'")


#: A watched node: its outputs (how run records find it), op, explicit inputs, and test.
Watched = tuple[tuple[str, ...], OnnxOp, Sequence[str], RunCheck]


def _watched(graph: Graph, table: Mapping[str, tuple[Callable[[Node], bool], RunCheck]]
             ) -> list[Watched]:
    """The segment's nodes a ``table`` watches (by op, then its static test)."""
    return [
        (tuple(node.outputs), node.op, split_inputs(node)[0], tests[1])
        for node in graph.nodes
        if (tests := table.get(node.op_type)) is not None and isinstance(node.op, OnnxOp)
        and node.op.domain == "" and tests[0](node)
    ]


def _fetched(graph: Graph, watched: Sequence[Watched]) -> list[str]:
    """What watched nodes read that the segment makes and does not hand out."""
    if not watched:  # most segments: no walk of their nodes
        return []
    inside = {out for node in graph.nodes for out in node.outputs if out}
    given = set(graph.outputs)
    return list(dict.fromkeys(
        name for _, _, inputs, _ in watched for name in inputs
        if name in inside and name not in given
    ))


class OrtRun:
    """A segment's runner on onnxruntime that watches nodes whose result onnxruntime may
    leave uninitialized (``_ORT_NO_VALUE``). ``said``: the notes of its last run, by the
    outputs of the node each is of, as ``ReferenceRun.said``; the plan puts them on the
    nodes' run records, and ``check`` compares nothing they reach with onnxruntime (of
    ``wrong``'s outputs only, where it holds the node's: ``_ort_wrong``)."""

    def __init__(self, run: Runner, graph: Graph, watched: Sequence[Watched],
                 held: Sequence[_HeldScan] = ()) -> None:
        self.run, self.graph, self.watched, self.held = run, graph, watched, held
        self.outputs = list(graph.outputs)
        self.said: dict[tuple[str, ...], str] = {}
        self.wrong: dict[tuple[str, ...], tuple[str, ...] | None] = {}

    def __call__(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        made = self.run(feeds)

        def value(name: str) -> Any:
            if not name:
                return None
            found = feeds.get(name, made.get(name))
            return found if found is not None else self.graph.constant(name)

        self.said, self.wrong = {}, {}
        for key, op, inputs, check in self.watched:
            if (note := check(op, [value(name) for name in inputs])) and key not in self.said:
                self.said[key] = note + _ORT_GAVE
                self.wrong[key] = _ort_wrong(op, key, note)
        for scan in self.held:  # Scans its nodes hold (``_nested_scans``)
            if scan.key not in self.said and (note := scan.note(_scan_ort_no_value, value)) and (
                    wrong := scan.wrong(note)) != ():  # (): it reaches none of them
                self.said[scan.key] = note + _ORT_GAVE
                self.wrong[scan.key] = wrong
        return {name: made[name] for name in self.outputs}


#: Fallback name -> factory (taking the onnxruntime providers, ignored by ``reference``).
FALLBACKS: Mapping[str, Callable[[Sequence[str] | None], Fallback]] = {
    "onnxruntime": lambda providers: OnnxruntimeFallback(providers),
    "reference": lambda providers: ReferenceFallback(),
}


def get_fallback(fallback: str | Fallback, providers: Sequence[str] | None = None) -> Fallback:
    if not isinstance(fallback, str):
        if not isinstance(getattr(fallback, "engine", None), str) or not callable(
            getattr(fallback, "prepare", None)
        ):
            raise BackendError(
                f"fallback {fallback!r} is neither a name ({', '.join(FALLBACKS)}) nor a "
                "Fallback (an engine name and a prepare(graph) method)"
            )
        return fallback
    if fallback not in FALLBACKS:
        raise BackendError(f"unknown fallback {fallback!r} (known: {', '.join(FALLBACKS)})")
    return FALLBACKS[fallback](providers)


def _nodes(graph: Graph) -> str:
    """A short description of a segment for messages: its first nodes by name and op."""
    nodes = graph.nodes
    # an unnamed node by the first tensor it makes (it was "?")
    listed = ", ".join(
        f"{n.name or holder_label('', n.outputs)} ({n.op_type})" for n in nodes[:3]
    )
    more = f" and {len(nodes) - 3} more" if len(nodes) > 3 else ""
    return f"node(s) {listed}{more}"
