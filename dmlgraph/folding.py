"""Shape inference and constant folding, so computed Slice/Pad parameters become constants.

Exporters compute Slice starts and Pad pads at run time (Shape -> Gather -> Unsqueeze ->
Concat -> Cast chains). Once input shapes are static those chains are constant, and DirectML
needs them as constants. ``fold`` makes one pass over the nodes in topological order, which
carries every fact forward in a single sweep:

1. a node that reads a tensor made constant (or better known) earlier in the pass has its
   outputs re-inferred with ``onnx.shape_inference.infer_node_outputs``, given its inputs'
   types and small constants' values (Slice/Pad are re-normalized and re-checked first);
2. a node whose inputs are all constants, or whose only input is a tensor of static shape read
   by Shape/Size (fed as a zero-strided dummy, so no real data is allocated), is evaluated by
   ``onnx.reference`` (one cached ReferenceEvaluator per distinct node form) and replaced by
   constants. A node that fails keeps a "not folded" note with the reason.

After a pass that folded something, whole-graph shape inference with data propagation runs on
the (now smaller) graph; only if that learns something does another pass run, so the result is
the same fixed point as alternating whole-graph inference and folding, at a fraction of the
cost (real exporter graphs needed up to 17 such rounds).

Dead nodes and unreferenced tensors go last. Nodes that compute a graph output, random ops,
non-ONNX ops, results that disagree with inferred types, and results that would grow the model
by more than ``FOLD_GROWTH_LIMIT_BYTES`` are not folded. Finally each Slice/Pad parameter that
is still a run-time value gets a note naming the reason (``runtime_parameters``).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import chain
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import numpy as np
import onnx
from onnx import AttributeProto, TensorProto, numpy_helper

from dmlgraph import canonical, shape_kernels
from dmlgraph.errors import ModelValidationError
from dmlgraph.exporter import node_proto, op_schema, to_onnx
from dmlgraph.ir import (
    Graph,
    Node,
    NodeId,
    OnnxOp,
    RemovedNode,
    Shape,
    TensorInfo,
    frozen_array,
    normal_info,
    shape_matches,
)
from dmlgraph.ort_pad import pad_divergences
from dmlgraph.reference_ops import DIVERGENT_DOMAINS, label_divergence, spec_ops
from dmlgraph.subgraphs import attribute_graphs, nested_nodes, outer_names
from dmlgraph.value_info import tensor_info
from dmlgraph.value_info import described_type, raw_array, tensor_array, tensor_bytes, type_bytes

if TYPE_CHECKING:  # imported where first used: it builds every op's schema (20-40 ms), and
    from onnx.reference import ReferenceEvaluator  # most models fold with the kernels alone

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
#: A node whose inferred results take more bytes than this is not evaluated to learn whether
#: it may fold (``growth_rejection``). Below it, one past ``FOLD_GROWTH_LIMIT_BYTES`` is still
#: evaluated: its result corrects the sizes onnx infers (a float Range onnxruntime makes 287060
#: long, onnx 287059, was refused unevaluated and its Slice lowered one element off).
EVALUATION_LIMIT_BYTES = 1 << 26
#: During shape inference, constants with more elements than this travel as typed inputs
#: (weights need not be serialized; shape-carrying tensors are small).
INFERENCE_CONSTANT_LIMIT = 4096

#: The note of a node folded away (at import, or by ``fold``).
FOLDED = "computed from constants at import"
#: Note prefixes this module writes (and replaces when it runs again).
NOT_FOLDED = "not folded"
SHAPE_EVALUATED = "shape evaluated"
RUNTIME_PARAMETER = "runtime parameter"


@dataclass
class FoldReport:
    """What ``fold`` did: rounds run, nodes folded away and removed as dead (by label, and by
    id: labels repeat where nodes have no name)."""

    rounds: int = 0
    folded: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    runtime_parameters: dict[NodeId, dict[str, str]] = field(default_factory=dict)
    folded_ids: list[NodeId] = field(default_factory=list)
    #: the nodes removed as dead, by id, as ``graph.removed`` records them
    dead: dict[NodeId, RemovedNode] = field(default_factory=dict)


#: Why a node removed as dead is gone: nodes that were folded read its result, or none did.
ONLY_FOR_FOLDED = "its result was only needed by folded nodes"
UNUSED = "nothing reads its result"


def fold(
    graph: Graph,
    *,
    max_rounds: int = 1000,
    inferred: bool = False,
    read: Callable[[], Collection[str]] | None = None,
) -> FoldReport:
    """Infer shapes and fold constants to a fixed point, then mark run-time Slice/Pad parameters.

    For graphs of ONNX ops (before lowering). ``inferred``: the graph's shapes are already
    inferred (the importer's), so whole-graph inference does not run first. ``read``: the
    tensors the model's nodes read, asked for only when a node is dead (default: those the
    graph's nodes read now), which tells a node dead because folded nodes were its only
    readers from one nothing ever read.
    """
    report = FoldReport()
    if read is None:
        now = {name for node in graph.nodes for name in node.inputs if name}
        read = lambda: now  # noqa: E731
    read = functools.cache(read)  # made once, when a node is found dead
    if not inferred:
        infer_shapes(graph)  # first: it derives anew what an edit made stale
    with graph.untracked():  # folding keeps values: its edits make no info stale
        return _fold(graph, max_rounds, read, report)


def _fold(
    graph: Graph, max_rounds: int, read: Callable[[], Collection[str]], report: FoldReport
) -> FoldReport:
    canonicalize(graph)
    fixed = False
    while report.rounds < max_rounds:
        report.rounds += 1
        before = {node.id for node in graph.nodes}
        folded = fold_constants(graph, infer=True)
        report.folded.extend(folded)
        report.folded_ids.extend(sorted(before - {node.id for node in graph.nodes}))
        if not folded:
            fixed = True
            break
        _remove_dead(graph, read, report)
        if not infer_shapes(graph):
            fixed = True  # whole-graph inference learns nothing the pass did not
            break
        canonicalize(graph)
    # no canonicalize here: each round ends canonical (the pass re-normalizes the nodes whose
    # inputs it changed; a round whose inference changed more canonicalizes all)
    _remove_dead(graph, read, report)
    graph.prune_tensors()
    report.runtime_parameters = mark_runtime_parameters(graph)
    if fixed:  # ``lower`` need not look for constants to fold until the graph changes
        graph.mark_folded()
    return report


def _remove_dead(graph: Graph, read: Callable[[], Collection[str]], report: FoldReport) -> None:
    """Remove nodes whose results nothing reads any more: folded away with the nodes that
    read them, or eliminated where no node of the model ever read them."""
    for node in graph.remove_dead_nodes():
        if any(name in read() for name in node.outputs):
            record = RemovedNode(node.provenance, "folded", ONLY_FOR_FOLDED)
        else:
            record = RemovedNode(node.provenance, "eliminated", UNUSED)
        graph.removed.append(record)
        report.removed.append(node.label)
        report.dead[node.id] = record


def prepare(graph: Graph) -> None:
    """Without folding: turn Constant nodes into constants, canonicalize, mark parameters."""
    fold_constants(graph, select=lambda node: node.op_type == "Constant")
    graph.prune_tensors()
    canonicalize(graph)
    mark_runtime_parameters(graph)


def canonicalize(graph: Graph) -> None:
    """``canonical.check_types``, ``canonical.normalize`` then ``canonical.check`` every
    Slice, Concat and Pad (counting axes from the end by no rank onnxruntime may make
    otherwise: ``PartialShapes.rank_unsure``)."""
    trust = PartialShapes(graph.declared_sizes)
    for node in graph.topological_order():
        op = node.op
        if type(op) is OnnxOp:  # the exact type: no call for the other nodes, most of them
            if op.domain or op.op_type not in canonical.FORMS:
                continue
        elif not canonical.is_canonical(op):
            continue
        canonical.check_types(graph, node)
        canonical.check(graph, canonical.normalize(graph, node, trust), trust)


def check_edited(graph: Graph, made: Collection[str]) -> None:
    """``canonical.check_types`` and ``canonical.check`` every Slice, Concat and Pad making
    one of ``made`` (the tensors an edit made stale, ``Graph.stale_tensors``), by the infos
    inference derived anew: a Pad whose data an edit gave another rank (rank 2 under axes
    [0, 1, 2]) was written out by ``to_onnx`` with its output untyped, and ``check`` said
    only that onnx's checker refused a value_info without a type; ``lower`` checks alike."""
    trust = PartialShapes(graph.declared_sizes)
    for node in graph.topological_order():
        if canonical.is_canonical(node.op) and any(out in made for out in node.outputs):
            canonical.check_types(graph, node)
            canonical.check(graph, node, trust)


# ----------------------------------------------------------------------------- shapes


#: The largest Slice step onnx's data propagation takes (onnx 1.23): it computes in 32 bits,
#: and a step of 2^31 crashed the process, 2^32 looped allocating, and 2^31 - 1 crashed it
#: from a start above 0 (start + step overflows; found by a differential fuzz; 2^30 never
#: did in a probe of 250 start/end/step combinations). Any step past every dimension gives
#: the same shape.
_INFERENCE_STEP_LIMIT = 2**30


def _shape_parameters(graph: onnx.GraphProto, parameters: set[str]) -> None:
    """Slice parameters that are graph inputs (or outputs) declared without a shape,
    declared rank 1 (as ONNX makes them): onnx's Slice inference takes a parameter without a
    shape for an absent one (steps of 1, axes 0..n-1) and infers a wrong static shape."""
    for value_info in chain(graph.input, graph.output):
        if value_info.name in parameters and value_info.type.HasField("tensor_type"):
            tensor_type = value_info.type.tensor_type
            if not tensor_type.HasField("shape"):
                tensor_type.shape.dim.add()


def guard_slice_steps(graph: onnx.GraphProto, nodes: Sequence[Any] | None = None) -> None:
    """Keep Slice steps onnx's inference would misread out of a model made for inference
    (the IR keeps the model's): a constant step beyond ``_INFERENCE_STEP_LIMIT`` is read from
    a clipped copy (clipping keeps the sign, and any step past every dimension slices
    alike; a copy, as the constant may feed other nodes), and a computed step (Unsqueeze of a
    constant, a product...), which only data propagation would know, from a typed graph input
    it cannot know. Folding computes such a step at import and infers the Slice again.
    ``nodes``: the graph's nodes as read already (the importer's ``NodeFields``), the same
    in number and order, so the proto's fields are not read again."""
    slices = []  # (index, node) of every Slice
    makers: dict[str, Any] = {}  # Constant nodes by output
    for index, node in enumerate(graph.node if nodes is None else nodes):
        op_type = node.op_type  # one pass: each read of a proto field costs
        if op_type == "Slice" and node.domain in ("", "ai.onnx"):
            slices.append((index, node))
        elif op_type == "Constant" and node.output:
            makers[node.output[0]] = node
    if not slices:
        return
    _shape_parameters(graph, {name for _, node in slices for name in node.input[1:5]})
    slices = [(index, node) for index, node in slices if len(node.input) > 4 and node.input[4]]
    steps = {node.input[4] for _, node in slices}
    constants: dict[str, np.ndarray] = {}  # the steps' values, where constants give them
    for tensor in graph.initializer:
        if tensor.name in steps:
            constants[tensor.name] = tensor_array(tensor, graph.name)
    for name in steps:
        maker = makers.get(name)
        if maker is None or len(maker.attribute) != 1:
            continue
        attr = maker.attribute[0]
        if attr.type == AttributeProto.TENSOR:
            constants[name] = tensor_array(attr.t, graph.name)
        elif attr.type == AttributeProto.INTS:
            constants[name] = np.array(attr.ints, np.int64)
        elif attr.type == AttributeProto.INT:
            constants[name] = np.array(attr.i, np.int64)
    inputs = {value_info.name for value_info in graph.input}
    for index, node in slices:
        name = node.input[4]
        if name in inputs and name not in constants:  # an initializer listed as an input:
            continue  # inference reads its value
        values = constants.get(name)
        if values is not None and values.dtype.kind in "iu" and np.abs(
            values.astype(np.float64)
        ).max(initial=0) <= _INFERENCE_STEP_LIMIT:
            continue
        guarded = f"{name}::guarded-steps"
        if values is not None and values.dtype.kind in "iu":
            clipped = np.clip(values, -_INFERENCE_STEP_LIMIT, _INFERENCE_STEP_LIMIT)
            if guarded not in constants:
                tensor = numpy_helper.from_array(clipped.astype(values.dtype), guarded)
                graph.initializer.append(tensor)
                # listed as an input too: before IR 4, inference reads only initializers
                # that are (and from 4 one that is, is still read as the default)
                graph.input.append(onnx.helper.make_tensor_value_info(
                    guarded, tensor.data_type, tensor.dims
                ))
                constants[guarded] = clipped
        elif guarded not in inputs:
            # rank 1 of unknown length: an input with no shape at all, onnx's Slice takes
            # for absent steps (all 1)
            graph.input.append(onnx.helper.make_tensor_value_info(
                guarded, onnx.TensorProto.INT64, [None]
            ))
            inputs.add(guarded)
        graph.node[index].input[4] = guarded


#: onnx's data propagation takes any rank-1 tensor of static length for shape data: that many
#: unknown values, copied at every node reading it (a Slice of a [16M] input took 3.6 s to
#: infer, onnxruntime's session 9 ms). A vector longer than this is no shape, so inference
#: sees such an input's length as a name of its own (``infer_model``), and each dimension
#: that long of a declared input of higher rank (not a weight: a Shape of it, or a Reshape of
#: it to one dimension, makes a vector that long; a weight's size is in the file), and so of
#: each tensor a subgraph declares (``_long_dims``) and each a Scan reads (its body's input
#: is a slice of it: ``_inferred_long_vectors``).
LONG_VECTOR = INFERENCE_CONSTANT_LIMIT
_HIDDEN_LENGTH = "dmlgraph::hidden-length::"


_Found = TypeVar("_Found")
#: A tensor hidden as a graph input: (index of its node in graph.node, its name, element
#: type, dimensions: each longer than ``LONG_VECTOR`` named as a hidden length, None where
#: not known).
_Made = tuple[int, str, int, tuple[int | None, ...]]
#: One of a subgraph: (the subgraph, *``_Made``).
_InnerMade = tuple[onnx.GraphProto, int, str, int, tuple[int | None, ...]]


@dataclass(frozen=True)
class _LongVectors:
    """A model's vectors longer than ``LONG_VECTOR`` that inference would read: graph inputs
    that long, or not weights (a weight a Scan reads is none: ``_unscanned``) and with a
    dimension that long (by position and axis: float[1, 4e9], only declared, a Slice of its
    Shape a ConstantOfShape's shape, or it Reshaped to [-1], read by a Slice, ran out of
    memory in data propagation), and Constant nodes,
    vector makers and nodes only inference sizes (``_inferred_long_vectors``, as ``_Made``: of
    a vector, or of a tensor a Scan reads), of the graph or (``inner``) of a subgraph inference
    enters, and (``inner_declared``) the long dimensions a subgraph declares of its inputs
    and outputs (a Slice of a Scan's body input float[16M] took 4.4 s and 1.3 GB to load, of
    a body output float[16M] 2.3 s: onnx keeps a declared size over the unknown one a node
    feeds or makes; the skeleton drops the main graph's outputs' shapes)."""

    inputs: tuple[tuple[int, int, int], ...]  # (position in graph.input, axis, length)
    constants: tuple[_Made, ...]
    inner: tuple[_InnerMade, ...] = ()
    reshaped: tuple[tuple[int, str], ...] = ()  # (index in graph.node, output)
    inner_reshaped: tuple[tuple[onnx.GraphProto, int, str], ...] = ()  # of subgraphs
    #: (subgraph, its field: "input" or "output", position there, axis, length)
    inner_declared: tuple[tuple[onnx.GraphProto, str, int, int, int], ...] = ()

    def __bool__(self) -> bool:
        return bool(self.inputs or self.constants or self.inner or self.reshaped
                    or self.inner_reshaped or self.inner_declared)


def _long_dims(
    declared: Sequence[onnx.ValueInfoProto], is_weight: Callable[[str], bool]
) -> list[tuple[int, int, int]]:
    """The dimensions longer than ``LONG_VECTOR`` of tensors so ``declared`` (a graph's
    inputs), as ``_LongVectors.inputs``: each of a rank-1 tensor, or of one that is not a
    weight. A subgraph's are none (``_no_weights``): a body's inputs are fed at run time."""
    found: list[tuple[int, int, int]] = []
    for position, value_info in enumerate(declared):
        if value_info.type.HasField("tensor_type"):
            dims = value_info.type.tensor_type.shape.dim
            long = [axis for axis, dim in enumerate(dims) if dim.dim_value > LONG_VECTOR]
            if long and (len(dims) == 1 or not is_weight(value_info.name)):
                found += ((position, axis, dims[axis].dim_value) for axis in long)
    return found


def _no_weights(name: str) -> bool:
    return False


def _unscanned(
    graph: onnx.GraphProto, listed: Sequence[Any], is_weight: Callable[[str], bool]
) -> Callable[[str], bool]:
    """``is_weight``, but false of a weight a Scan reads, at any depth: onnx feeds its sizes
    to the body, over the body's hidden ones (a Slice in a Scan's body of a weight [1, 16M]
    scanned took 4-8 s and 1.5 GB to load). The Scans are looked for once asked (a long
    weight of rank above 1)."""
    scanned: frozenset[str] | None = None

    def weight(name: str) -> bool:
        nonlocal scanned
        if not is_weight(name):
            return False
        if scanned is None:
            scanned = _scan_reads(graph, listed)
        return name not in scanned

    return weight


def _scan_reads(graph: onnx.GraphProto, listed: Sequence[Any]) -> frozenset[str]:
    """The names the Scans of ``graph`` read as their inputs, at any depth: onnx's inference
    feeds each one's sizes to the Scan's body, over the body's declared ones, the scan axis
    dropped (of a tensor [1, n], a vector [n] there)."""
    held = (nested for index, node in enumerate(listed) if node.op_type in _CONTROL_FLOW
            for attr in graph.node[index].attribute for sub in attribute_graphs(attr)
            for nested in nested_nodes(sub))
    return frozenset(read for node in chain(listed, held) if node.op_type == "Scan"
                     for read in node.input)


#: The fields of a subgraph whose declared long dimensions are hidden
#: (``_LongVectors.inner_declared``); a body's value infos onnx's propagation does not read
#: (a Slice of a Neg declared float[16M] there loaded in 23 ms).
_DECLARING_FIELDS = ("input", "output")


def _long_vectors(
    graph: onnx.GraphProto, nodes: Sequence[Any] | None, is_weight: Callable[[str], bool]
) -> _LongVectors:
    listed = graph.node if nodes is None else nodes
    inputs = _long_dims(graph.input, _unscanned(graph, listed, is_weight))
    inner: _Inner = ([], [], [])
    reshaped: dict[str, tuple[int, str]] = {}
    constants = _graph_long_vectors(graph, listed, None, inner, reshaped)
    read = sorted(_read_ranges(listed, reshaped)) if reshaped else ()
    return _LongVectors(tuple(inputs), tuple(constants), tuple(inner[0]), tuple(read),
                        tuple(inner[1]), tuple(inner[2]))


#: Where ``_graph_long_vectors`` puts what it finds in subgraphs: their long vectors (as
#: ``_LongVectors.inner``), their ``_RESHAPERS`` found (``_LongVectors.inner_reshaped``) and
#: the long dimensions they declare (``_LongVectors.inner_declared``).
_Inner = tuple[
    list[_InnerMade], list[tuple[onnx.GraphProto, int, str]],
    list[tuple[onnx.GraphProto, str, int, int, int]],
]


def _graph_long_vectors(
    graph: onnx.GraphProto,
    listed: Sequence[Any],
    outer: _Constants | None,
    inner: _Inner,
    reshaped: dict[str, tuple[int, str]],
    outer_sizes: _DeclaredSizes | None = None,
) -> list[_Made]:
    """The long Constant nodes and vector makers of ``graph`` (``listed``: its nodes, or their
    ``NodeFields``); those of the subgraphs it holds go to ``inner``. ``outer`` and
    ``outer_sizes``: the constants and sizes a subgraph sees of the graphs holding it. Its
    nodes that may make a long vector (``_RESHAPERS``) go to ``reshaped``, by output:
    (index, output)."""
    found: list[_Made] = []
    ranges: dict[str, _Made] = {}  # long Ranges, hidden where read so
    values: _Constants | None = None  # the graph's small constants, read once if asked
    sizes: _DeclaredSizes | None = None
    for index, node in enumerate(listed):
        op_type = node.op_type
        if op_type not in _LOOKED_AT:  # first: each other read of a field costs
            continue
        if op_type in _CONTROL_FLOW:
            if values is None:
                values = _Constants(graph, listed, outer)
            if sizes is None:
                sizes = _DeclaredSizes(graph, listed, outer_sizes)
            _subgraph_long_vectors(graph.node[index], values, sizes, inner)
            continue
        if op_type in _RESHAPERS:
            if node.input and node.domain in ("", "ai.onnx"):
                if sizes is None:
                    sizes = _DeclaredSizes(graph, listed, outer_sizes)
                if _RESHAPERS[op_type](node, sizes):
                    reshaped[node.output[0]] = (index, node.output[0])
            continue
        if node.domain not in ("", "ai.onnx") or len(node.output) != 1:
            continue
        if op_type == "Constant" and (vector := _long_vector(node)) is not None:
            found.append((index, node.output[0], vector[0], (vector[1],)))
        elif op_type in _VECTOR_MAKERS:
            if values is None:
                values = _Constants(graph, listed, outer)
            made = _VECTOR_MAKERS[op_type](node, values)
            if made is not None and made[1] > LONG_VECTOR:
                found.append((index, node.output[0], made[0], (made[1],)))
        elif op_type == "Range":
            if values is None:
                values = _Constants(graph, listed, outer)
            made = _range_vector(node, values)
            if made is not None and made[1] > LONG_VECTOR:
                ranges[node.output[0]] = (index, node.output[0], made[0], (made[1],))
    if ranges:
        found += _read_ranges(listed, ranges)
        found.sort()
    return found


def _read_ranges(listed: Sequence[Any], ranges: Mapping[str, _Found]) -> list[_Found]:
    """The long Ranges (or Reshapes, ``_RESHAPERS``) an op other than Shape reads: one
    whose data propagation reads its value (``_PROPAGATED``'s ops and Size: onnx makes a
    static vector with no value that many unknown values; a Slice of Range(0, 2^33 + 4, 1)
    loaded for minutes), or one whose result such an op may read (a Slice of its Neg). One
    only Shapes read is not hidden: a Reshape to its Shape keeps the size only propagation
    gives it (``_VECTOR_MAKERS``). An If, Loop or Scan reads what its subgraphs read of the
    graphs holding them (``_reads``: a Slice in an If's branch of a vector of the main graph
    took 2.7 s and 1.3 GB to load at 16M elements)."""
    read = {
        name for node in listed if node.op_type != "Shape"
        for name in _reads(node) if name in ranges
    }
    return [ranges[name] for name in read]


def _reads(node: Any) -> Sequence[str]:
    """The names a node reads: its inputs, and for an If, Loop or Scan (``_CONTROL_FLOW``)
    those its subgraphs read of the graphs holding them, at any depth (by any op: a name
    only a subgraph's Shape reads is read so too)."""
    if node.op_type not in _CONTROL_FLOW:
        return node.input
    return [*node.input, *(name for attr in node.attribute for sub in attribute_graphs(attr)
                           for name in outer_names(sub))]


def _subgraph_long_vectors(
    node: onnx.NodeProto, outer: _Constants, outer_sizes: _DeclaredSizes, inner: _Inner
) -> None:
    """Into ``inner``, the long vectors, ``_RESHAPERS`` and declared long dimensions found of
    the subgraphs of ``node`` (of the model inference is given, not the user's: ``_hide``
    changes them there). onnx's inference enters them with data propagation on: a Constant
    [2^33 + 4] read by a ConstantOfShape and a Slice in an If branch loaded for minutes, a
    Slice of a row of an outer weight [2, 16M] Gathered in an If branch took 3.5 s and
    1.7 GB."""
    for attr in node.attribute:
        graphs = [attr.g] if attr.type == AttributeProto.GRAPH else attr.graphs
        for sub in graphs:
            reshaped: dict[str, tuple[int, str]] = {}
            found = _graph_long_vectors(sub, sub.node, outer, inner, reshaped, outer_sizes)
            inner[0].extend((sub, *vector) for vector in found)
            inner[2].extend((sub, part, *dim) for part in _DECLARING_FIELDS
                            for dim in _long_dims(getattr(sub, part), _no_weights))
            if reshaped:
                inner[1].extend((sub, *read) for read in _read_ranges(sub.node, reshaped))


#: Shape data onnx's propagators compute from their inputs' (``PartialDataPropagationFunction``
#: in onnx/defs/math/defs.cc and tensor/defs.cc: Add, Sub, Mul, Concat, Cast, Gather, Slice,
#: Squeeze, Unsqueeze). A length so computed from constants, a Mul of [2^31 + 1] and [4], is
#: one onnx knows: a ConstantOfShape of it is as long as one of [2^33 + 4]. Values are flat
#: int64 (onnx's shape data); op -> (node, the inputs' values) -> the value, None if onnx
#: computes none.
_PROPAGATED: Mapping[str, Callable[[Any, list[np.ndarray]], np.ndarray | None]] = {
    "Add": lambda node, v: _broadcast_data(v, np.add),
    "Sub": lambda node, v: _broadcast_data(v, np.subtract),
    "Mul": lambda node, v: _broadcast_data(v, np.multiply),
    "Concat": lambda node, v: np.concatenate(v) if _int_attribute(node, "axis", None) in (
        0, -1) else None,
    "Cast": lambda node, v: v[0],
    "Squeeze": lambda node, v: v[0],
    "Unsqueeze": lambda node, v: v[0],
    "Gather": lambda node, v: v[0][v[1]] if _int_attribute(node, "axis", 0) == 0 and len(
        v[1]) and np.all((v[1] >= -len(v[0])) & (v[1] < len(v[0]))) else None,
    "Slice": lambda node, v: v[0][slice(*(int(x[0]) for x in (v[1], v[2], *v[4:5])))]
    if all(len(x) == 1 for x in v[1:]) and (len(v) < 4 or v[3][0] in (0, -1)) and (
        len(v) < 5 or v[4][0]) else None,
}
#: The ops onnx's data propagation computes shape data through.
PROPAGATING_OPS = frozenset(_PROPAGATED)
#: Shape data is small: a value longer than this is not evaluated.
_SMALL_VALUE = 8


def _broadcast_data(values: list[np.ndarray], op: Any) -> np.ndarray | None:
    first, second = values
    if len(first) != len(second) and 1 not in (len(first), len(second)):
        return None
    with np.errstate(over="ignore"):  # onnx's int64 arithmetic wraps too
        return op(first, second)


def _int_attribute(node: Any, name: str, default: int | None) -> int | None:
    for attr in node.attribute:
        if attr.name == name and attr.type == AttributeProto.INT:
            return int(attr.i)
    return default


class _Constants:
    """The small integer values a graph's vector makers read, as onnx's data propagation
    knows them: initializers and Constant nodes (a ConstantOfShape of a Constant [2^33 + 4],
    as exporters write shapes, loaded for minutes), values ``_PROPAGATED`` ops compute from
    them, and, in a subgraph, those of the graphs holding it. Read on demand; one that cannot
    be read is unknown (the import says why)."""

    def __init__(self, graph: onnx.GraphProto, nodes: Sequence[Any], outer: _Constants | None):
        self._outer = outer
        self._tensors = {tensor.name: tensor for tensor in graph.initializer}
        self._made = {
            node.output[0]: node for node in nodes
            if node.output and (node.op_type == "Constant" or node.op_type in _PROPAGATED)
        }
        self._values: dict[str, np.ndarray | None] = {}

    def get(self, name: str, depth: int = 0) -> np.ndarray | None:
        """``name``'s value (flat int64; any other type, as onnx's propagation reads it, is
        None), or None where it is unknown or longer than ``_SMALL_VALUE``."""
        if name in self._values:
            return self._values[name]
        node = self._made.get(name) if name not in self._tensors else None
        if node is None and name not in self._tensors and self._outer is not None:
            return self._outer.get(name, depth)
        if node is None or node.op_type == "Constant":
            tensor = self.tensor(name)
            value = None if tensor is None else _small_value(tensor)
        elif depth < 64 and node.domain in ("", "ai.onnx"):  # a shape chain is a few nodes
            value = self._computed(node, depth)
        else:
            value = None
        self._values[name] = value
        return value

    def tensor(self, name: str) -> TensorProto | None:
        """The tensor of an initializer or a Constant node's value, where ``name`` is one."""
        tensor = self._tensors.get(name)
        if tensor is not None:
            return tensor
        node = self._made.get(name)
        if node is None:
            return self._outer.tensor(name) if self._outer is not None else None
        if node.op_type != "Constant" or node.domain not in ("", "ai.onnx"):
            return None
        return _constant_tensor(node)

    def _computed(self, node: Any, depth: int) -> np.ndarray | None:
        operands = []
        for name in node.input:
            value = self.get(name, depth + 1) if name else None
            if value is None:
                return None
            operands.append(value)
        try:
            value = _PROPAGATED[node.op_type](node, operands)
        except (IndexError, ValueError, TypeError):
            return None
        if value is None or value.size > _SMALL_VALUE:
            return None
        return value.astype(np.int64).reshape(-1)


def _constant_tensor(node: Any) -> TensorProto | None:
    """A Constant node's value: onnx's inference reads value_int(s) as it reads a tensor
    (``ProcessConstant``); a list longer than ``_SMALL_VALUE`` is not read."""
    if len(node.attribute) != 1:
        return None
    attr = node.attribute[0]
    if attr.name == "value" and attr.type == AttributeProto.TENSOR:
        return attr.t
    if attr.name == "value_ints" and attr.type == AttributeProto.INTS:
        short = len(attr.ints) <= _SMALL_VALUE
        return numpy_helper.from_array(np.array(attr.ints, np.int64)) if short else None
    if attr.name == "value_int" and attr.type == AttributeProto.INT:
        return numpy_helper.from_array(np.array(attr.i, np.int64))
    return None


def _small_value(tensor: TensorProto) -> np.ndarray | None:
    if tensor.data_type not in (TensorProto.INT64, TensorProto.INT32) or len(tensor.dims) > 1:
        return None  # onnx's propagation reads only these as shape data
    if math.prod(tensor.dims) > _SMALL_VALUE or tensor.data_location == TensorProto.EXTERNAL:
        return None
    try:
        # its raw bytes read as they are where they can be (``raw_array``, as the importer
        # reads the Constant again): onnx's ``to_array`` costs 10x that
        array = raw_array(tensor)
        if array is None:
            array = numpy_helper.to_array(tensor)
        return array.astype(np.int64).reshape(-1)
    except Exception:  # a corrupt tensor: not an operand this can read
        return None


def _constant_of_shape_vector(node: Any, values: _Constants) -> tuple[int, int] | None:
    length = values.get(node.input[0]) if node.input else None
    if length is None or length.size != 1:
        return None
    elem_type = TensorProto.FLOAT
    for attr in node.attribute:
        if attr.name == "value" and attr.type == AttributeProto.TENSOR:
            elem_type = attr.t.data_type
    return elem_type, int(length[0])


def _expand_vector(node: Any, values: _Constants) -> tuple[int, int] | None:
    """An Expand of a constant of at most one dimension to a shape of one element."""
    if len(node.input) < 2:
        return None
    shape, tensor = values.get(node.input[1]), values.tensor(node.input[0])
    if shape is None or shape.size != 1 or tensor is None or len(tensor.dims) > 1:
        return None
    length = int(shape[0])
    if tensor.dims and tensor.dims[0] not in (1, length):
        return None  # broadcast to 1, or a mismatch onnx refuses
    return tensor.data_type, length


def _tile_vector(node: Any, values: _Constants) -> tuple[int, int] | None:
    """A Tile of a constant vector (onnx reads repeats only from constants)."""
    if len(node.input) < 2:
        return None
    repeats, tensor = values.get(node.input[1]), values.tensor(node.input[0])
    if repeats is None or repeats.size != 1 or tensor is None or len(tensor.dims) != 1:
        return None
    return tensor.data_type, tensor.dims[0] * int(repeats[0])


def _range_vector(node: Any, values: _Constants) -> tuple[int, int] | None:
    """A Range of constant scalars (onnx reads its operands only from constants)."""
    read = [values.tensor(name) for name in node.input[:3]]
    tensors = [tensor for tensor in read if tensor is not None and math.prod(tensor.dims) == 1]
    if len(tensors) != 3:
        return None
    try:
        start, limit, delta = (float(numpy_helper.to_array(t).reshape(-1)[0]) for t in tensors)
        return tensors[0].data_type, max(math.ceil((limit - start) / delta), 0)
    except Exception:  # a zero or NaN delta, a corrupt tensor: onnx sizes none
        return None


#: Ops that make a vector of a length their small constant operands give, or compute as
#: onnx's data propagation does (``_Constants``): onnx's propagation walks a long one element
#: by element as it reads it (a Slice of ConstantOfShape([2^28]) took 21 GB and 75 s to load:
#: a helper's reproducer; a Slice of a Tile or an Expand to [2^33 + 4], or of a
#: ConstantOfShape of a Mul of constants giving it, loaded for minutes). They are hidden from
#: propagation as long Constant nodes are: a Shape of one folds, as the length is the
#: operand's. op -> (element type, length). A Range is only where an op other than Shape
#: reads it (``_read_ranges``): hidden, a Reshape to the Shape of one lost its size,
#: which only propagation knew (folding leaves a Range's Shape to run time, as onnx sizes a
#: float Range otherwise than onnxruntime).
_VECTOR_MAKERS: Mapping[str, Callable[[Any, _Constants], tuple[int, int] | None]] = {
    "ConstantOfShape": _constant_of_shape_vector,
    "Expand": _expand_vector,
    "Tile": _tile_vector,
}


def _reshapes_to_a_vector(node: Any, sizes: _DeclaredSizes) -> bool:
    """Whether a Reshape makes a long vector: to a constant shape of one element that is a
    length above ``LONG_VECTOR`` (of any tensor: an input of a dynamic size), or -1 or 0
    (dimension 0 of a vector) of a tensor of more elements than that. (Each Reshape asks:
    no call but one where the shape has not one element.)"""
    inputs = node.input
    if inputs[2:] or not inputs[1:]:
        return False
    if sizes.constant_dims(inputs[1]) != (1,):  # a constant: the pass without propagation
        made = sizes._made  # sizes it too; a computed one: folding does
        if inputs[1] not in made or made[inputs[1]].op_type != "Unsqueeze":
            return False
        size = sizes.get(inputs[0]) if _unsqueezed(made[inputs[1]], sizes) else None
        return size is not None and size > LONG_VECTOR
    length = sizes.scalar(inputs[1])
    if length is None or length > LONG_VECTOR:
        return length is not None
    size = sizes.get(inputs[0]) if length in (-1, 0) else None
    return size is not None and size > LONG_VECTOR


def _unsqueezed(maker: Any, sizes: _DeclaredSizes) -> bool:
    """Whether a Reshape's shape, made by Unsqueeze ``maker``, is so by one axis (of a scalar,
    as a shape is a vector): a length computed from Shapes (x[1, 1, 4096, 4096] Reshaped to
    its H * W took 2.3 s and 1.3 GB to load), which only propagation knows."""
    if maker.domain not in ("", "ai.onnx"):
        return False
    for attr in maker.attribute:
        if attr.name == "axes":
            return len(attr.ints) == 1
    return len(maker.input) == 2 and sizes.constant_dims(maker.input[1]) in ((1,), ())


def _squeezes_to_a_vector(node: Any, sizes: _DeclaredSizes) -> bool:
    """Whether a Squeeze of a tensor of more than ``LONG_VECTOR`` elements may make a vector
    of them (a Squeeze of a Flatten of a weight): by constant axes (inference without
    propagation sizes it too), or, of a tensor of dimensions known (``_DeclaredSizes.
    shape``), by an axes attribute (Squeeze-1, -11) or by none (every dimension of 1) to one
    dimension. (Hidden, a Squeeze of another rank lost the sizes only propagation gives
    its readers, where folding does not compute them.)"""
    size = sizes.get(node.input[0])
    if size is None or size <= LONG_VECTOR:
        return False
    inputs = node.input
    if inputs[1:]:
        return not inputs[2:] and sizes.constant_dims(inputs[1]) is not None
    shape = sizes.shape(inputs[0])
    if shape is None:
        return False
    for attr in node.attribute:
        if attr.name == "axes":
            return len(shape) - len(attr.ints) == 1
    return sum(dim != 1 for dim in shape) == 1


def _gathers_a_row(node: Any, sizes: _DeclaredSizes) -> bool:
    """Whether a Gather makes a vector longer than ``LONG_VECTOR``: a row (or column) of a
    declared matrix (a weight [2, 16M]) by one index, a constant scalar or a scalar graph
    input. (Each Gather asks: no call where it reads no graph input.)"""
    inputs = node.input
    if inputs[2:] or not inputs[1:]:
        return False
    if inputs[0] not in sizes.declared and (sizes.outer is None or not sizes.declares(inputs[0])):
        return False
    dims = sizes.dims(inputs[0])
    axis = _int_attribute(node, "axis", 0)
    if dims is None or len(dims) != 2 or axis not in (-2, -1, 0, 1):
        return False
    if dims[1 - axis % 2] <= LONG_VECTOR:
        return False
    index = sizes.dims(inputs[1]) if sizes.declares(inputs[1]) else None
    return (index if index is not None else sizes.constant_dims(inputs[1])) == ()


#: Ops that may make a vector of more than ``LONG_VECTOR`` elements where only inference
#: tells its length (each dimension of the tensor it reads may be at most that, or a
#: weight's): onnx's propagation takes such a vector for that many unknown values where an
#: op other than Shape reads it (a Slice of a weight [4000, 4000] Reshaped to [-1] took 6 s
#: and 1.3 GB to load, of an input [4096, 4096, 256] 25 s, then std::bad_alloc; a Reshape
#: of x[N, 4096] to [16M], a Squeeze-11 of a Flatten of a weight, a Gather of a row of a
#: weight [2, 16M]: 2-4 s and 1.3 GB at 16M). Each found (of a tensor whose size its graph
#: declares, at least, ``_DeclaredSizes``) reads its shape, axes or indices from an input
#: of unknown value in the propagating pass, or, by an axes attribute, is a Reshape so
#: (``_hide``). op -> (node, sizes) -> whether it may.
_RESHAPERS: Mapping[str, Callable[[Any, _DeclaredSizes], bool]] = {
    "Reshape": _reshapes_to_a_vector,
    "Squeeze": _squeezes_to_a_vector,
    "Gather": _gathers_a_row,
}
#: The ops ``_graph_long_vectors`` looks at.
_LOOKED_AT = frozenset({"Constant", "Range", *_VECTOR_MAKERS, *_RESHAPERS, "If", "Loop", "Scan"})


def _int64_scalar(tensor: TensorProto) -> int | None:
    """The value of an int64 tensor of one element stored in the model, read without
    ``numpy_helper`` (a dozen calls: shape chains Reshape to [-1] a lot)."""
    if tensor.data_type != TensorProto.INT64 or tensor.data_location == TensorProto.EXTERNAL:
        return None
    if tensor.int64_data:
        return int(tensor.int64_data[0])
    raw = tensor.raw_data
    return int.from_bytes(raw, "little", signed=True) if len(raw) == 8 else None


class _DeclaredSizes:
    """The number of elements, at least, of a tensor of ``graph`` that is a graph input (a
    weight above ``INFERENCE_CONSTANT_LIMIT`` is one) of static dimensions, or that
    ``_SIZE_KEEPING`` ops make of one (a Flatten of a weight), or a broadcasting op
    (``_BROADCASTING``: an Add of a weight and an input) of some; None where none is known.
    And the graph's constants' dimensions (initializers, Constant nodes). A subgraph's holds
    its own names and asks ``outer`` (the graphs holding it) for the others: each holding a
    copy of them, the look for long vectors in a main graph of 10,000 nodes and 1,000 Ifs
    took 8x longer, growing as nodes times subgraphs."""

    def __init__(
        self, graph: onnx.GraphProto, nodes: Sequence[Any], outer: _DeclaredSizes | None = None
    ):
        self.declared = {value_info.name: value_info for value_info in graph.input}
        self._made = {out: node for node in nodes for out in node.output}
        self._tensors = {tensor.name: tensor for tensor in graph.initializer}
        self.outer = outer

    def _owner(self, name: str) -> _DeclaredSizes:
        """The sizes of the innermost graph that names ``name`` (this one where none does)."""
        sizes: _DeclaredSizes | None = self
        while sizes is not None:
            if name in sizes.declared or name in sizes._made or name in sizes._tensors:
                return sizes
            sizes = sizes.outer
        return self

    def declares(self, name: str) -> bool:
        """Whether ``name`` is an input of this graph or of one holding it."""
        return name in self._owner(name).declared

    def get(self, name: str, depth: int = 0) -> int | None:
        declared, made, tensors, outer = self.declared, self._made, self._tensors, self.outer
        for _ in range(16):  # a chain of a few nodes; no call on the way
            if outer is not None and name not in declared and name not in tensors \
                    and name not in made:  # an outer name: the outer graph's chain
                return outer.get(name, depth)
            if name in declared:
                return _static_size(declared[name])
            if name in tensors:  # a subgraph's weight (the graph's are inputs)
                return math.prod(tensors[name].dims)
            maker = made[name] if name in made else None
            if maker is None or not maker.input or maker.domain not in ("", "ai.onnx"):
                return None
            if maker.op_type in _BROADCASTING and depth < 4:
                sizes = [self.get(operand, depth + 1) for operand in maker.input if operand]
                return max((size for size in sizes if size is not None), default=None)
            if maker.op_type not in _SIZE_KEEPING:
                return None
            name = maker.input[0]
        return None

    def shape(self, name: str, depth: int = 0) -> tuple[int, ...] | None:
        """The static dimensions of a graph input, or of a Flatten or an op of
        ``_SHAPE_KEEPING`` of one (a chain of a few); None where they are not known."""
        if self.outer is not None and (owner := self._owner(name)) is not self:
            return owner.shape(name, depth)
        maker = self._made[name] if name in self._made else None
        if maker is None:
            return self.dims(name) if name in self.declared else None
        if maker.op_type not in _SHAPE_KEEPING or maker.domain not in ("", "ai.onnx"):
            return None
        shape = self.shape(maker.input[0], depth + 1) if maker.input and depth < 16 else None
        if shape is None or maker.op_type != "Flatten":
            return shape
        axis = _int_attribute(maker, "axis", 1)
        axis = axis + len(shape) if axis is not None and axis < 0 else axis
        if axis is None or not 0 <= axis <= len(shape):
            return None
        return (math.prod(shape[:axis]), math.prod(shape[axis:]))

    def dims(self, name: str) -> tuple[int, ...] | None:
        """The static dimensions of a graph input (``declares`` says it is one)."""
        owner = self if self.outer is None else self._owner(name)
        value_info = owner.declared[name]
        if _static_size(value_info) is None:
            return None
        return tuple(dim.dim_value for dim in value_info.type.tensor_type.shape.dim)

    def constant_dims(self, name: str) -> tuple[int, ...] | None:
        """The dimensions of an initializer or a Constant node's value, where it is one (no
        call on the way but to the graph naming it)."""
        if self.outer is not None and (owner := self._owner(name)) is not self:
            return owner.constant_dims(name)
        tensor = self._tensors[name] if name in self._tensors else None
        if tensor is None:
            maker = self._made[name] if name in self._made else None
            if maker is None or maker.op_type != "Constant" or maker.attribute[1:]:
                return None
            attr = maker.attribute[0] if maker.attribute else None
            if attr is None or attr.name not in _CONSTANT_DIMS:
                return None
            if attr.name != "value":
                return _CONSTANT_DIMS[attr.name](attr)
            tensor = attr.t
        return tuple(tensor.dims)

    def rank(self, name: str) -> int | None:
        """The rank of a declared tensor or a constant, or of a Reshape to a constant shape,
        a Flatten or an op keeping its first input's rank (``_RANK_KEEPING``) of one; None
        where not known (a look for ``_may_make_long_vectors``, wrong at worst where
        broadcasting raises a rank: then inference decides)."""
        for _ in range(16):  # a chain of a few nodes; no call on the way but the last
            owner = self._owner(name) if self.outer is not None else self
            if name in owner.declared:
                value_info = owner.declared[name]
                if not value_info.type.tensor_type.HasField("shape"):
                    return None
                return len(value_info.type.tensor_type.shape.dim)
            if name in owner._tensors:
                return len(owner._tensors[name].dims)
            maker = owner._made[name] if name in owner._made else None
            if maker is None or not maker.input or maker.domain not in ("", "ai.onnx"):
                return None
            if maker.op_type == "Flatten":
                return 2
            if maker.op_type == "Reshape" and maker.input[1:]:
                dims = owner.constant_dims(maker.input[1])
                return dims[0] if dims is not None and len(dims) == 1 else None
            if maker.op_type not in _RANK_KEEPING:
                return None
            name = maker.input[0]
        return None

    def is_float(self, name: str) -> bool:
        """Whether a tensor is known of a non-integer type: by a chain of ops keeping their
        first input's type (``_TYPE_KEEPING``) from a declared input or a constant of one, a
        Cast to one, or an op making only floats (Conv). Unknown is False."""
        for _ in range(32):
            owner = self._owner(name) if self.outer is not None else self
            if name in owner.declared:
                elem_type = owner.declared[name].type.tensor_type.elem_type
                return elem_type in _FLOAT_TYPES
            if name in owner._tensors:
                return owner._tensors[name].data_type in _FLOAT_TYPES
            maker = owner._made[name] if name in owner._made else None
            if maker is None or maker.domain not in ("", "ai.onnx"):
                return False
            if maker.op_type in _FLOAT_MAKERS:
                return True
            if maker.op_type == "Cast":
                return _int_attribute(maker, "to", None) in _FLOAT_TYPES
            if maker.op_type not in _TYPE_KEEPING or not maker.input:
                return False
            name = maker.input[0]
        return False

    def scalar(self, name: str) -> int | None:
        """The value of a constant int64 of one element (``constant_dims`` says it is one)."""
        owner = self if self.outer is None else self._owner(name)
        if name in owner._tensors:
            return _int64_scalar(owner._tensors[name])
        attr = owner._made[name].attribute[0]
        if attr.name == "value":
            return _int64_scalar(attr.t)
        return int(attr.ints[0]) if attr.name == "value_ints" else int(attr.i)


#: A Constant node's attributes onnx's inference reads as an int64 tensor, but its
#: ``value`` tensor: name -> the dimensions of the tensor it makes.
_CONSTANT_DIMS: Mapping[str, Callable[[AttributeProto], tuple[int, ...]]] = {
    "value": lambda attr: tuple(attr.t.dims),
    "value_ints": lambda attr: (len(attr.ints),),
    "value_int": lambda attr: (),
}


def _static_size(value_info: onnx.ValueInfoProto) -> int | None:
    """The number of elements of a declared tensor, where its every dimension is a size."""
    if not value_info.type.HasField("tensor_type"):
        return None
    tensor_type = value_info.type.tensor_type
    if not tensor_type.HasField("shape"):
        return None
    dims = tensor_type.shape.dim
    if not all(dim.HasField("dim_value") for dim in dims):
        return None
    return math.prod(dim.dim_value for dim in dims)


#: Ops whose output has as many elements as their first input: ``_DeclaredSizes`` looks
#: through them.
_SIZE_KEEPING = frozenset({
    "Identity", "Cast", "CastLike", "Flatten", "Reshape", "Squeeze", "Unsqueeze", "Transpose",
    "Abs", "Neg", "Relu", "Sigmoid", "Tanh", "Exp", "Log", "Sqrt", "Reciprocal", "Floor",
    "Ceil", "Round", "Sign", "Not", "Erf", "Clip", "LeakyRelu", "Elu", "Softplus",
})
#: Ops whose output has the dimensions of their first input (and Flatten): ``_DeclaredSizes.
#: shape`` looks through them.
_SHAPE_KEEPING = _SIZE_KEEPING - {"Reshape", "Squeeze", "Unsqueeze", "Transpose"}
#: Broadcasting ops: their output has at least as many elements as each input of a static
#: size (or none: one of 0 elements, which hiding costs only what propagation would tell).
_BROADCASTING = frozenset({
    "Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Mod", "Where", "And", "Or", "Xor",
    "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual",
})


#: Ops whose output has their first input's rank (broadcasting aside): ``_DeclaredSizes.
#: rank`` looks through them.
_RANK_KEEPING = _SHAPE_KEEPING | _BROADCASTING | {
    "Transpose", "Conv", "ConvTranspose", "MaxPool", "AveragePool", "GlobalAveragePool",
    "GlobalMaxPool", "BatchNormalization", "InstanceNormalization", "LayerNormalization",
    "Softmax", "LogSoftmax", "HardSigmoid", "HardSwish", "Gelu", "Mish", "Selu", "PRelu",
    "Pad", "Resize", "Dropout",
}
#: Ops whose output has their first input's element type: ``_DeclaredSizes.is_float``
#: looks through them.
_TYPE_KEEPING = (_RANK_KEEPING - {"Cast", "CastLike", "Not", "Equal", "Less", "Greater",
                                   "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor",
                                   "Where"}) | {
    "Reshape", "Squeeze", "Unsqueeze", "Flatten", "Slice", "Gather", "Concat", "MatMul",
    "Gemm", "Einsum", "ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "Expand", "Tile",
}
#: Ops whose output is always of a non-integer type.
_FLOAT_MAKERS = frozenset({
    "Conv", "ConvTranspose", "BatchNormalization", "InstanceNormalization",
    "LayerNormalization", "Softmax", "LogSoftmax", "AveragePool", "GlobalAveragePool",
    "Sigmoid", "Tanh", "Exp", "Log", "Sqrt", "Erf", "Gelu", "RandomNormal", "RandomUniform",
})
_FLOAT_TYPES = frozenset({
    TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.BFLOAT16, TensorProto.DOUBLE,
})


def _long_vector(node: Any) -> tuple[int, int] | None:
    """(element type, length) of a Constant node's value when it is a vector longer than
    ``LONG_VECTOR``."""
    if len(node.attribute) != 1:
        return None
    attr = node.attribute[0]
    if attr.ByteSize() * 2 <= LONG_VECTOR:  # half a byte or more an element (int4): too short
        return None
    if attr.name == "value" and attr.type == AttributeProto.TENSOR and len(attr.t.dims) == 1:
        found = (attr.t.data_type, attr.t.dims[0])
    elif attr.name in _LIST_CONSTANTS and attr.type == _LIST_CONSTANTS[attr.name][1]:
        elem_type, field_name = _LIST_CONSTANTS[attr.name][0], _LIST_CONSTANTS[attr.name][2]
        found = (elem_type, len(getattr(attr, field_name)))
    else:
        return None
    return found if found[1] > LONG_VECTOR else None


#: Constant's list attributes: name -> (the element type it makes, its attribute type, the
#: attribute's field).
_LIST_CONSTANTS = {
    "value_ints": (TensorProto.INT64, AttributeProto.INTS, "ints"),
    "value_floats": (TensorProto.FLOAT, AttributeProto.FLOATS, "floats"),
    "value_strings": (TensorProto.STRING, AttributeProto.STRINGS, "strings"),
}


def _hide(
    graph: onnx.GraphProto, found: _LongVectors, opset: int
) -> tuple[frozenset[str], dict[str, int]]:
    """Give the long vectors' lengths names of their own (a Constant becomes an input so
    named; one in a subgraph, an Identity of a graph input named as its length, which the
    subgraph reads from its surroundings: a name both branches of an If make is each
    branch's own; a node of more outputs, a Split, keeps making the others: ``_drop_output``),
    or unknown (``_hide_reshaper``): onnx takes no named length for shape data, and
    propagates none through an Identity. Returns the graph's vectors' names and
    each name's length. ``opset``: the model's ai.onnx version."""
    names: list[str] = []
    lengths: dict[str, int] = {}
    for sub, index, _ in found.inner_reshaped:  # the subgraph reads it from its surroundings
        param = f"{_HIDDEN_LENGTH}{len(lengths)}"
        if _hide_reshaper(graph, sub.node[index], param, opset):
            lengths[param] = 1
    kept: list[tuple[onnx.GraphProto, int, onnx.NodeProto]] = []  # Identities to insert
    for sub, index, name, elem_type, dims in found.inner:  # no node moves: indexes hold
        param = f"{_HIDDEN_LENGTH}{len(lengths)}"  # its first long dimension's name too
        graph.input.append(_hidden_input(param, elem_type, dims, lengths))
        identity = onnx.helper.make_node("Identity", [param], [name])
        if _drop_output(sub.node[index], name):
            kept.append((sub, index + 1, identity))
        else:
            sub.node[index].CopyFrom(identity)
    for position, axis, length in found.inputs:
        _name_length(graph.input[position], axis, length, lengths)
        names.append(graph.input[position].name)
    for index, name in found.reshaped:  # before any node moves
        param = f"{_HIDDEN_LENGTH}{len(lengths)}"  # a shape (axes) of unknown value
        if _hide_reshaper(graph, graph.node[index], param, opset):
            lengths[param] = 1  # numbered as the others; no dimension is so named
            names.append(name)
    for index, name, elem_type, dims in reversed(found.constants):
        if not _drop_output(graph.node[index], name):
            del graph.node[index]
        graph.input.append(_hidden_input(name, elem_type, dims, lengths))
        names.append(name)
    for sub, part, position, axis, length in found.inner_declared:  # onnx's merges keep
        _name_length(getattr(sub, part)[position], axis, length, lengths)  # a name
    for sub, index, identity in sorted(kept, key=lambda held: -held[1]):  # last first
        sub.node.insert(index, identity)
    return frozenset(names), lengths


def _drop_output(node: onnx.NodeProto, name: str) -> bool:
    """``node`` made to omit its output ``name``; whether it still makes another (a Split of
    which one part is hidden makes the others as before; a node making none is to go)."""
    outputs = node.output
    outputs[list(outputs).index(name)] = ""
    return any(outputs)


def _hidden_input(
    name: str, elem_type: int, dims: Sequence[int | None], lengths: dict[str, int]
) -> onnx.ValueInfoProto:
    """A graph input ``name`` of ``dims``, each longer than ``LONG_VECTOR`` named as a hidden
    length."""
    value_info = onnx.helper.make_tensor_value_info(name, elem_type, dims)
    for axis, length in enumerate(dims):
        if length is not None and length > LONG_VECTOR:
            _name_length(value_info, axis, length, lengths)
    return value_info


def _name_length(
    value_info: onnx.ValueInfoProto, axis: int, length: int, lengths: dict[str, int]
) -> None:
    """A declared tensor's dimension ``axis`` (of ``length``) named as a hidden length."""
    dim = value_info.type.tensor_type.shape.dim[axis]
    dim.dim_param = f"{_HIDDEN_LENGTH}{len(lengths)}"  # clears dim_value
    lengths[dim.dim_param] = length


def _hide_reshaper(graph: onnx.GraphProto, node: onnx.NodeProto, param: str, opset: int) -> bool:
    """Make a ``_RESHAPERS`` node's output of unknown length to the propagating pass: its
    shape or axes (a [1] graph input ``param`` of unknown value) or indices (``param`` of
    unknown shape: the Gather's rank is unknown) read from ``param``; a Squeeze by an axes
    attribute or by none made a Reshape to ``param`` of unknown shape (of unknown rank, as
    the Squeeze's may be other than 1), from opset 5 on, where Reshape reads its shape as
    an input. Whether it hid it."""
    squeeze = len(node.input) == 1
    if squeeze and opset < 5:
        return False
    graph.input.append(onnx.helper.make_tensor_value_info(  # a Reshape by it: of any rank
        param, TensorProto.INT64, None if squeeze or node.op_type == "Gather" else [1]
    ))
    if len(node.input) == 1:
        node.CopyFrom(onnx.helper.make_node(
            "Reshape", [node.input[0], param], list(node.output), name=node.name
        ))
    else:
        node.input[1] = param
    return True


def infer_model(
    model: onnx.ModelProto,
    source: str,
    nodes: Sequence[Any] | None = None,
    is_weight: Callable[[str], bool] = lambda name: False,
) -> tuple[onnx.GraphProto, frozenset[str]]:
    """onnx's shape inference, data propagation on, of a model made for inference (after
    ``guard_slice_steps``; it is changed): the inferred graph, and the names of the vectors
    longer than ``LONG_VECTOR`` it hid from propagation (graph inputs, Constant nodes and
    vector makers; those of subgraphs are hidden too, not named).
    Where there are such vectors, inference runs twice: without propagation on the model as
    it is (cheap), and with it on the model with the vectors' lengths named; each name is
    then unknown, and of the two a dimension takes the more specific (a size, then a name
    the model gave, as ``_merge_type`` says). A Shape of a long tensor is read by value in
    the pass without propagation (``_long_shapes_read``: a Reshape of a Scan's body input
    to its own Shape); what else only propagation over a hidden length would tell (a Shape
    of it Gathered into a Reshape's shape) is left to folding, which computes the Shape and
    infers its readers again (in the main graph: a Scan's body is lowered as it runs). The
    inferred graph's inputs are the model's, as given: no name of a hidden length shows (a
    Scan's body output made from a graph input float[5000], declared [5000, 1], was said to
    be made float32[dmlgraph::hidden-length::0]). ``nodes`` as in ``guard_slice_steps``;
    ``is_weight``: whether a graph input is a constant declared as one, whose dimensions
    stay (a Shape of an embedding feeding a Reshape keeps its propagated size)."""
    _guard_inference_aborts(model.graph, source, nodes)
    found = _long_vectors(model.graph, nodes, is_weight)
    listed = model.graph.node if nodes is None else nodes
    suspected = not found and _may_make_long_vectors(model.graph, listed)
    # read once, from the nodes as given (no protobuf wrapper made for each node and its
    # attributes, as reading the model's graph made at each inference)
    subgraphs = _holds_subgraphs(listed)
    exact = (
        _inferred(model, source, propagate=False, subgraphs=subgraphs)
        if found or suspected else None
    )
    if exact is not None:
        inner: list[_InnerMade] = []
        made = _inferred_long_vectors(model.graph, listed, exact, found, inner)
        found = replace(found, constants=tuple(sorted((*found.constants, *made))),
                        inner=(*found.inner, *inner))
        # none long after all: the propagating pass as is
        exact = _long_shapes_read(model, exact, source, subgraphs) if found else None
    hidden, lengths = _hide(model.graph, found, _opset(model)) if found else (frozenset(), {})
    inferred = _inferred(model, source, propagate=True, subgraphs=subgraphs)
    if exact is not None:
        _merge_inferred(inferred, exact, lengths)
        del inferred.input[:]  # the inputs as the model declares them, none added
        inferred.input.extend(exact.input)
    return inferred, hidden


def _long_shapes_read(
    model: onnx.ModelProto, exact: onnx.GraphProto, source: str, subgraphs: bool
) -> onnx.GraphProto:
    """``exact`` (``model`` inferred without propagation), or, where a Shape reads a tensor it
    sizes with a dimension over ``LONG_VECTOR`` (hidden from propagation, which reads the
    Shape's value), ``model`` so inferred again with each such Shape a Constant of its value
    (a few numbers; the model is given back as it was): a Reshape of a Scan's body input
    [2, 5000] to its own Shape made its output, and the Scan's, of an unknown size (the body
    is lowered as it runs: no folding computes the Shape there); at 4000, onnx's
    propagation sized them. A body reading such a Constant of the main graph reads it as
    its own (``_inferred``)."""
    replaced = _shapes_as_constants(model.graph, exact, {})
    if not replaced:
        return exact
    try:
        return _inferred(model, source, propagate=False, subgraphs=subgraphs)
    finally:
        for graph, index, node in replaced:
            graph.node[index].CopyFrom(node)


def _shapes_as_constants(
    graph: onnx.GraphProto, exact: onnx.GraphProto, outer: Mapping[str, onnx.TypeProto]
) -> list[tuple[onnx.GraphProto, int, onnx.NodeProto]]:
    """Each Shape of ``graph`` (and of the subgraphs it holds, at any depth) whose value has
    a length over ``LONG_VECTOR``, by its input's type in ``exact`` (``graph`` inferred;
    ``outer``: the types of the graphs holding it), made a Constant of that value. Returns
    each one's graph, index and node as it was."""
    types = {**outer, **{value.name: value.type
                         for value in chain(exact.input, exact.value_info, exact.output)}}
    replaced: list[tuple[onnx.GraphProto, int, onnx.NodeProto]] = []
    for index, (node, typed) in enumerate(zip(graph.node, exact.node)):  # (nodes kept)
        if node.op_type in _CONTROL_FLOW:
            inferred = {attr.name: attribute_graphs(attr) for attr in typed.attribute}
            for attr in node.attribute:
                for sub, sub_exact in zip(attribute_graphs(attr), inferred.get(attr.name, ())):
                    replaced += _shapes_as_constants(sub, sub_exact, types)
        elif node.op_type == "Shape" and node.domain in ("", "ai.onnx") and node.input \
                and (value := _long_shape(node, types.get(node.input[0]))) is not None:
            was = onnx.NodeProto()
            was.CopyFrom(node)
            replaced.append((graph, index, was))
            node.CopyFrom(onnx.helper.make_node(
                "Constant", [], node.output[:1], name=node.name,
                value=numpy_helper.from_array(value)))
    return replaced


def _long_shape(node: onnx.NodeProto, typed: onnx.TypeProto | None) -> np.ndarray | None:
    """The value of a Shape (its start and end attributes: ``shape_kernels.shape_range``) of
    a tensor so ``typed``, where every dimension is a size and one it gives is longer than
    ``LONG_VECTOR``."""
    if typed is None or not typed.HasField("tensor_type") \
            or not typed.tensor_type.HasField("shape"):
        return None
    dims = typed.tensor_type.shape.dim
    if not all(dim.HasField("dim_value") for dim in dims):
        return None
    attrs = {a.name: a.i for a in node.attribute if a.name in ("start", "end")}
    value = np.array([dim.dim_value for dim in dims], np.int64)[
        shape_kernels.shape_range(len(dims), attrs)]
    return value if np.any(value > LONG_VECTOR) else None


def _may_make_long_vectors(
    graph: onnx.GraphProto, listed: Sequence[Any], outer: _DeclaredSizes | None = None
) -> bool:
    """Whether a node of ``graph`` may make a vector longer than ``LONG_VECTOR`` that an op
    with a data propagator reads (``_DATA_READERS``; onnx's propagation takes a static
    vector it has no value of for that many unknown values, ``DataPropagationContextImpl::
    getInputData``), itself or through ops keeping it a vector (``_VECTOR_KEEPING``: a
    Relu), its length only inference tells: a Reshape to [-1] of a Conv's or a
    MatMul's output (2.1 s and 1.3 GB at 16M elements), a Squeeze of a Transpose of a long
    declared tensor, a ReduceSum, MatMul or Einsum to one dimension, a Gather of a row of a
    weight [2, 16M] by a computed index (``_MAY_MAKE_VECTORS``).
    Where one may, ``infer_model`` infers without propagation first and hides the vectors
    that pass sizes (``_inferred_long_vectors``). Shape chains (integer, as exporters write
    pads) are not suspected: the bundled models infer once, as before.
    The subgraphs of an If, Loop or Scan are looked at so too (onnx propagates in them: such a
    Reshape in an If's branch, a Loop's or a Scan's body took 2.3-3.5 s and 1.3 GB to load
    at 16M elements), each with ``outer``, the sizes of the graphs holding it; an If, Loop or
    Scan reads what its subgraphs read of its graph (``_reads``). A Scan may feed its body
    a long vector of a tensor it reads (``_may_feed_long``)."""
    read = {name for node in listed if node.op_type in _DATA_READERS for name in node.input}
    sizes: _DeclaredSizes | None = None
    for index, node in enumerate(listed):
        if node.op_type in _CONTROL_FLOW:
            sizes = _DeclaredSizes(graph, listed, outer) if sizes is None else sizes
            if node.op_type == "Scan" and any(_may_feed_long(name, sizes) for name in node.input):
                return True
            read.update(_reads(graph.node[index])[len(node.input):])
            if any(_may_make_long_vectors(sub, sub.node, sizes)
                   for attr in graph.node[index].attribute for sub in attribute_graphs(attr)):
                return True
    if not read:
        return False
    reached: set[str] | None = None  # read through ``_VECTOR_KEEPING`` ops, once asked
    for node in listed:
        if node.op_type in _MAY_MAKE_VECTORS and node.output and node.input \
                and node.domain in ("", "ai.onnx"):
            if node.output[0] not in read:
                if reached is None:
                    reached = _read_through_vector_keeping(listed, read)
                if node.output[0] not in reached:
                    continue
            if sizes is None:
                sizes = _DeclaredSizes(graph, listed, outer)
            if node.op_type == "Gather" and not sizes.declares(node.input[0]):
                continue  # of a Shape, mostly
            if _MAY_MAKE_VECTORS[node.op_type](node, sizes):
                return True
    return False


def _may_feed_long(name: str, sizes: _DeclaredSizes) -> bool:
    """Whether a tensor a Scan reads may have a dimension longer than ``LONG_VECTOR`` only
    inference sizes (``_inferred_long_vectors`` hides it): one a node makes of a size not
    known, or a long Constant (a Scan of a Transpose of a weight [16M, 1], its body's input
    declared of no shape, took 2.1 s and 1.5 GB to load). Not a graph input's (``_long_dims``
    hides it)."""
    if not name or sizes.declares(name):
        return False
    dims = sizes.constant_dims(name)
    if dims is not None:
        return any(dim > LONG_VECTOR for dim in dims)
    size = sizes.get(name)
    return size is None or size > LONG_VECTOR


def _read_through_vector_keeping(listed: Sequence[Any], read: set[str]) -> set[str]:
    """``read``, grown by the tensors whose values reach it through ops keeping a vector a
    vector (``_VECTOR_KEEPING``): a Reshape to [-1] of a Conv's output, Relu'd and Sliced,
    took 2.2 s and 1.3 GB to load at 16M elements, the Relu's long output a vector with no
    value to the Slice's propagator. (A few calls, once, where a vector maker is read
    otherwise than by an op with a data propagator: a chain of n such ops, n + 2.)"""
    passing = {  # output -> the inputs it may be as long a vector as
        node.output[0]: node.input if node.op_type in _BROADCASTING else node.input[:1]
        for node in listed if node.op_type in _VECTOR_KEEPING and node.output
    }
    frontier = read
    while frontier:
        frontier = {name for out in frontier if out in passing for name in passing[out]
                    if name not in read}
        read |= frontier
    return read


def _inferred_long_vectors(
    graph: onnx.GraphProto,
    listed: Sequence[Any],
    exact: onnx.GraphProto,
    found: _LongVectors,
    inner: list[_InnerMade],
    outer_ranks: Mapping[str, int] | None = None,
) -> list[_Made]:
    """The nodes of ``graph`` (as ``_Made``) whose output inference without propagation
    (``exact``, ``graph`` so inferred) sizes as a vector longer than ``LONG_VECTOR``, read by
    an op other than Shape (``_read_ranges``), that ``found`` does not hide yet: ``_hide``
    makes each a graph input of a length of its own, as a long Constant. Not an op with a
    data propagator of a vector (a Concat of two): its value is its operands', each hidden
    where long. So too a tensor of higher rank with a dimension that long that a Scan reads
    (``_scan_reads``; a Constant too), its long dimensions each named: onnx feeds the Scan's
    body its static size (a Scan of a Transpose of a weight [16M, 1], or of a Constant
    [1, 16M], whose body Sliced its row, took 3.5 s and 1.7 GB to load), each output of a
    node of more than one as well (a part [1, 16M] a Split makes of a weight [2, 16M]: 5.2 s
    and 1.4 GB), but an If's, a Loop's or a Scan's. Those of the subgraphs ``graph`` holds go
    to ``inner`` (as ``_LongVectors.inner``: ``_hide`` makes each an Identity of a graph input
    of a length of its own), each looked for with ``outer_ranks``, the ranks of the graphs
    holding it."""
    long: dict[str, tuple[int, tuple[int | None, ...]]] = {}
    ranks: dict[str, int] = dict(outer_ranks or {})
    for value_info in chain(exact.input, exact.value_info):
        dims = value_info.type.tensor_type.shape.dim
        ranks[value_info.name] = len(dims)
        if any(dim.dim_value > LONG_VECTOR for dim in dims):
            long[value_info.name] = (value_info.type.tensor_type.elem_type, tuple(
                dim.dim_value if dim.HasField("dim_value") else None for dim in dims))
    for index, node in enumerate(listed):
        if node.op_type in _CONTROL_FLOW:  # inference keeps the nodes and their attributes
            inferred = {attr.name: attribute_graphs(attr) for attr in exact.node[index].attribute}
            for attr in graph.node[index].attribute:
                for sub, sub_exact in zip(attribute_graphs(attr), inferred.get(attr.name, ())):
                    inner.extend((sub, *vector) for vector in _inferred_long_vectors(
                        sub, sub.node, sub_exact, found, inner, ranks))
    if outer_ranks is None:
        taken = {name for _, name, *_ in (*found.constants, *found.reshaped)}
    else:
        taken = {name for sub, _, name, *_ in (*found.inner, *found.inner_reshaped)
                 if sub is graph}  # (protobuf hands out one object per subgraph held)
    if not long:
        return []
    made: dict[str, _Made] = {}  # vectors
    scanned: list[_Made] = []  # of higher rank
    scans: frozenset[str] | None = None  # the names Scans read, once asked
    for index, node in enumerate(listed):
        if node.op_type in _CONTROL_FLOW:
            continue
        for name in node.output:  # each of a Split's or a TopK's, as a Transpose's
            if name not in long or name in taken:
                continue
            elem_type, dims = long[name]
            if len(dims) > 1:
                scans = _scan_reads(graph, listed) if scans is None else scans
                if name in scans:
                    scanned.append((index, name, elem_type, dims))
            elif node.op_type != "Constant" and not (
                    node.op_type in _DATA_READERS and node.input
                    and ranks.get(node.input[0]) == 1):
                made[name] = (index, name, elem_type, dims)
    return [*_read_ranges(listed, made), *scanned] if made else scanned


def _vector_reshape(node: Any, sizes: _DeclaredSizes) -> bool:
    """A Reshape to [-1] (or [0]) of a non-integer tensor of a size not known."""
    inputs = node.input
    if inputs[2:] or not inputs[1:] or sizes.constant_dims(inputs[1]) != (1,):
        return False
    return sizes.is_float(inputs[0]) and sizes.scalar(inputs[1]) in (-1, 0) \
        and sizes.get(inputs[0]) is None


def _vector_squeeze(node: Any, sizes: _DeclaredSizes) -> bool:
    """A Squeeze of a tensor of more than ``LONG_VECTOR`` elements (of dimensions not known:
    a Transpose of a declared tensor; ``_squeezes_to_a_vector`` hides the others), or of a
    non-integer one of a size not known."""
    size = sizes.get(node.input[0])
    return size > LONG_VECTOR if size is not None else sizes.is_float(node.input[0])


def _vector_reduce(node: Any, sizes: _DeclaredSizes) -> bool:
    """A reduction, keepdims 0, of a tensor of rank one more than its axes."""
    if _int_attribute(node, "keepdims", 1) != 0:
        return False
    axes = next((len(attr.ints) for attr in node.attribute if attr.name == "axes"), None)
    if axes is None and node.input[1:]:
        dims = sizes.constant_dims(node.input[1])
        axes = dims[0] if dims is not None and len(dims) == 1 else None
    rank = sizes.rank(node.input[0])
    return axes is not None and rank is not None and rank - axes == 1


def _vector_matmul(node: Any, sizes: _DeclaredSizes) -> bool:
    """A MatMul of a vector and a matrix (or a matrix and a vector)."""
    return not node.input[2:] and len(node.input) == 2 and sorted(
        (sizes.rank(node.input[0]), sizes.rank(node.input[1])), key=str) == [1, 2]


def _vector_einsum(node: Any, sizes: _DeclaredSizes) -> bool:
    """An Einsum whose output has one subscript."""
    equation = next((attr.s for attr in node.attribute if attr.name == "equation"), b"")
    _, arrow, out = equation.replace(b" ", b"").partition(b"->")
    return bool(arrow) and len(out) == 1


def _vector_gather(node: Any, sizes: _DeclaredSizes) -> bool:
    """A Gather of a row (or column) longer than ``LONG_VECTOR`` of a declared matrix (a
    weight [2, 16M]) by an index of a rank not known (``_gathers_a_row`` hides one by a
    scalar the model declares: here an Identity of one)."""
    inputs = node.input
    if inputs[2:] or not inputs[1:] or not sizes.declares(inputs[0]):
        return False
    dims = sizes.dims(inputs[0])
    axis = _int_attribute(node, "axis", 0)
    return dims is not None and len(dims) == 2 and axis in (-2, -1, 0, 1) \
        and dims[1 - axis % 2] > LONG_VECTOR


#: Ops that may make a long vector only inference sizes (of an input whose value onnx's
#: propagation does not know): op -> (node, sizes) -> whether it may
#: (``_may_make_long_vectors``).
_MAY_MAKE_VECTORS: Mapping[str, Callable[[Any, _DeclaredSizes], bool]] = {
    "Reshape": _vector_reshape,
    "Gather": _vector_gather,
    "Squeeze": _vector_squeeze,
    "MatMul": _vector_matmul,
    "Einsum": _vector_einsum,
    **dict.fromkeys(("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd",
                     "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp",
                     "ReduceSumSquare"), _vector_reduce),
}
#: Ops with a data propagator in onnx (``PartialDataPropagationFunction``): each reads the
#: value of its rank-1 inputs, a static length of unknown values where none is known.
_DATA_READERS = PROPAGATING_OPS | {"Size", "CastLike"}
#: Ops without a data propagator whose output is a vector, as long or longer, where they
#: read one (as their first input, or any of a broadcasting op's): elementwise ops, Softmax,
#: Transpose, Pad, Resize (``_RANK_KEEPING`` but those of a rank above 1). A long vector
#: passes through them to the ops with one, unchanged to onnx's propagation.
_VECTOR_KEEPING = _RANK_KEEPING - _DATA_READERS - {
    "Flatten", "Conv", "ConvTranspose", "MaxPool", "AveragePool", "GlobalAveragePool",
    "GlobalMaxPool", "BatchNormalization", "InstanceNormalization",
}


def _opset(model: onnx.ModelProto) -> int:
    """The model's ai.onnx opset version (1 where it imports none)."""
    versions = [o.version for o in model.opset_import if o.domain in ("", "ai.onnx")]
    return versions[0] if versions else 1


#: Ops holding subgraphs that onnx's inference enters.
_CONTROL_FLOW = frozenset({"If", "Loop", "Scan"})


def _guard_inference_aborts(
    graph: onnx.GraphProto, source: str, nodes: Sequence[Any] | None = None
) -> None:
    """Refuse, with a message, or mend what onnx's shape inference (onnx 1.23) aborts the
    process on, in ``graph`` or a subgraph it enters: a Split with more outputs than its
    num_outputs (it indexes past its list of sizes; onnxruntime's copy of it aborts too) is
    refused; a negative declared dimension (Slice's and Pad's inference assert in
    std::clamp; onnxruntime runs such a model) is made unknown, as dmlgraph reads one
    (``value_info.shape_dim``)."""
    _forget_negative_dims(graph)
    for node in graph.node if nodes is None else nodes:
        op_type = node.op_type
        if op_type == "Split" and node.domain in ("", "ai.onnx"):
            for attr in node.attribute:
                if attr.name == "num_outputs" and len(node.output) > attr.i:
                    raise ModelValidationError(
                        f"{source}: Split node {node.name!r} has {len(node.output)} outputs "
                        f"for num_outputs={attr.i}; ONNX makes one output per part (onnx's "
                        "shape inference and onnxruntime abort the process on it)"
                    )
        elif op_type in _CONTROL_FLOW:
            for attr in node.attribute:
                graphs = [attr.g] if attr.type == AttributeProto.GRAPH else attr.graphs
                for sub in graphs:
                    _guard_inference_aborts(sub, source)


def _forget_negative_dims(graph: onnx.GraphProto) -> None:
    for value_info in chain(graph.input, graph.output, graph.value_info):
        if value_info.type.HasField("tensor_type"):
            for dim in value_info.type.tensor_type.shape.dim:
                if dim.dim_value < 0:
                    dim.Clear()


def _inferred(
    model: onnx.ModelProto, source: str, *, propagate: bool, subgraphs: bool = True
) -> onnx.GraphProto:
    """onnx's inference of ``model``, each subgraph given for it a copy of the shape data of
    its enclosing graphs it reads (``_copy_outer_shape_data``), taken out again of the model
    and of what comes back: onnx's inference of a subgraph reads no enclosing graph's
    values, so a body's Reshape to Concat(Gather(Shape(x), zero), ...) with ``zero`` an
    initializer of the main graph, or to the main graph's Shape of a long X made a Constant
    (``_long_shapes_read``), was of unknown sizes, and so was the Scan's output.
    ``subgraphs``: whether a node of the model may hold one (``_holds_subgraphs``)."""
    copied = subgraphs and _copy_outer_shape_data(model.graph, {})
    try:
        inferred = onnx.shape_inference.infer_shapes(
            model, check_type=False, strict_mode=False, data_prop=propagate
        ).graph
    except Exception as exc:
        raise ModelValidationError(f"{source}: ONNX shape inference fails: {exc}") from None
    finally:
        if copied:
            _drop_copies(model.graph, value_infos=False)
    if copied:
        _drop_copies(inferred, value_infos=True)
    return inferred


def _holds_subgraphs(nodes: Iterable[Any]) -> bool:
    """Whether a node of ``nodes`` has a graph attribute. A loop, not ``any`` of a
    generator: each item of one is a call, for each of the model's nodes."""
    for node in nodes:
        for attr in node.attribute:
            if attr.type in _GRAPH_KINDS:
                return True
    return False


#: The name of the Constant nodes ``_copy_outer_shape_data`` puts into subgraphs.
_OUTER_COPY = "dmlgraph::outer-shape-data"
_GRAPH_KINDS = (AttributeProto.GRAPH, AttributeProto.GRAPHS)


def _copy_outer_shape_data(graph: onnx.GraphProto, outer: Mapping[str, TensorProto]) -> bool:
    """Put at the start of each subgraph of ``graph`` (at any depth) a Constant
    (``_OUTER_COPY``) of each value of its enclosing graphs it reads that onnx's propagation
    reads as shape data (``_small_value``: an integer scalar or vector of a few elements, an
    initializer or a Constant's; ``outer``: the enclosing graphs', by name). Whether any."""
    if not any(attr.type in _GRAPH_KINDS for node in graph.node for attr in node.attribute):
        return False  # (no subgraph: the common case, a look at each node)
    inputs = {value.name for value in graph.input}
    known = {name: value for name, value in outer.items() if name not in inputs}  # (shadowed)
    known.update((tensor.name, tensor) for tensor in graph.initializer  # (not a feed's default)
                 if tensor.name not in inputs and _small_value(tensor) is not None)
    copied = False
    for node in graph.node:
        subs = [sub for attr in node.attribute for sub in attribute_graphs(attr)]
        for sub in subs:
            copied |= _copy_outer_shape_data(sub, known)
            read = [name for name in outer_names(sub) if name in known]
            for name in reversed(read):
                sub.node.insert(0, onnx.helper.make_node(
                    "Constant", [], [name], name=_OUTER_COPY, value=known[name]))
            copied |= bool(read)
        for name in node.output:  # a later tensor of that name is another
            known.pop(name, None)
        tensor = (_constant_tensor(node) if node.op_type == "Constant" and node.output
                  and node.domain in ("", "ai.onnx") else None)
        if tensor is not None and _small_value(tensor) is not None:
            known[node.output[0]] = tensor
    return copied


def _drop_copies(graph: onnx.GraphProto, *, value_infos: bool) -> None:
    """Take ``_copy_outer_shape_data``'s Constants out of ``graph``'s subgraphs, and, in the
    graph onnx's inference gave back (``value_infos``), the value infos it made of them."""
    for node in graph.node:
        for attr in node.attribute:
            for sub in attribute_graphs(attr):
                copies = [i for i, n in enumerate(sub.node) if n.name == _OUTER_COPY]
                names = {sub.node[i].output[0] for i in copies}
                for index in reversed(copies):
                    del sub.node[index]
                for index in reversed([i for i, v in enumerate(sub.value_info)
                                       if value_infos and v.name in names]):
                    del sub.value_info[index]
                _drop_copies(sub, value_infos=value_infos)


def _merge_inferred(
    propagated: onnx.GraphProto, exact: onnx.GraphProto, lengths: Mapping[str, int]
) -> None:
    """Into ``propagated`` (inferred with the lengths named): each named length unknown, and
    what ``exact`` (inferred without propagation, lengths as they are) knows better; so too
    in the subgraphs it holds, their inputs as well (a length a body declares is hidden
    there: ``_LongVectors.inner_declared``; the importer reads a Scan's body as inferred)."""
    by_name = {vi.name: vi for vi in chain(exact.value_info, exact.output)}
    seen = set()
    for value_info in chain(propagated.value_info, propagated.output):
        seen.add(value_info.name)
        _merge_value(value_info, by_name.get(value_info.name), lengths)
    propagated.value_info.extend(  # a Constant hidden: an input there, a node's output here
        vi for vi in exact.value_info if vi.name not in seen
    )
    held = {tuple(node.output): node for node in exact.node if node.op_type in _CONTROL_FLOW}
    for node in propagated.node:  # (a hidden Constant is no node here: by outputs)
        other = held.get(tuple(node.output)) if node.op_type in _CONTROL_FLOW else None
        if other is None:
            continue
        theirs = {attr.name: attribute_graphs(attr) for attr in other.attribute}
        for attr in node.attribute:
            for sub, sub_exact in zip(attribute_graphs(attr), theirs.get(attr.name, ())):
                for value_info, declared in zip(sub.input, sub_exact.input):
                    _merge_value(value_info, declared, lengths)
                _merge_inferred(sub, sub_exact, lengths)


def _merge_value(
    value_info: onnx.ValueInfoProto, other: onnx.ValueInfoProto | None,
    lengths: Mapping[str, int],
) -> None:
    """A type of the propagating pass, each named length unknown, merged with ``other``, the
    same tensor's of the pass without propagation."""
    _forget_lengths(value_info.type, lengths)
    # each pass numbers its own unknowns from unk__0: the same name in both is two dims
    _rename_made_up(value_info.type, _PROPAGATED_PASS)
    if other is not None:
        _merge_type(value_info.type, other.type)


#: What ``_merge_inferred`` puts after "unk__" in the names onnx made up in the propagated
#: pass, so that they cannot be taken for the other pass's.
_PROPAGATED_PASS = "p"


def _rename_made_up(type_proto: onnx.TypeProto, tag: str) -> None:
    """Each name onnx made up ("unk__3") as its own ("unk__p3")."""
    _rename_dims(type_proto, lambda name: (
        _MADE_UP + tag + name[len(_MADE_UP):] if name.startswith(_MADE_UP) else name
    ))


def _forget_made_up(type_proto: onnx.TypeProto) -> None:
    """Each name onnx made up ("unk__3") unknown."""
    _rename_dims(type_proto, lambda name: "" if name.startswith(_MADE_UP) else name)


def _forget_lengths(type_proto: onnx.TypeProto, lengths: Mapping[str, int]) -> None:
    """Each dimension named for a hidden length unknown. Not the length itself: onnx passes
    a name on where the dimension need not equal it (a Slice of ["L"] from 0 to INT64_MIN is
    ["L"], not [0])."""
    _rename_dims(type_proto, lambda name: "" if name in lengths else name)


def _rename_dims(type_proto: onnx.TypeProto, rename: Callable[[str], str]) -> None:
    """Each named dimension of a type (a tensor's, or those of the types a sequence, optional
    or map holds) renamed; to "", unknown."""
    kind = type_proto.WhichOneof("value")
    if kind in ("tensor_type", "sparse_tensor_type"):
        for dim in getattr(type_proto, kind).shape.dim:
            if dim.dim_param and (name := rename(dim.dim_param)) != dim.dim_param:
                if name:
                    dim.dim_param = name
                else:
                    dim.ClearField("dim_param")
    elif kind in ("sequence_type", "optional_type"):
        _rename_dims(getattr(type_proto, kind).elem_type, rename)
    elif kind == "map_type":
        _rename_dims(type_proto.map_type.value_type, rename)


def _merge_type(into: onnx.TypeProto, other: onnx.TypeProto) -> None:
    """``into`` made as specific as ``other`` where that is more: an element type it lacks, a
    shape it lacks, and per dimension a size over a name, a name the model gave over one
    onnx made up ("unk__3"), ``other``'s over ``into``'s at a tie. A different kind, or a
    shape of another rank (neither happens where both are right), yields to ``other``."""
    kind = into.WhichOneof("value")
    if kind != other.WhichOneof("value"):
        into.CopyFrom(other)
    elif kind in ("tensor_type", "sparse_tensor_type"):
        mine, theirs = getattr(into, kind), getattr(other, kind)
        if not mine.elem_type:
            mine.elem_type = theirs.elem_type
        if not theirs.HasField("shape"):
            return
        if not mine.HasField("shape") or len(mine.shape.dim) != len(theirs.shape.dim):
            mine.shape.CopyFrom(theirs.shape)
            return
        for dim, better in zip(mine.shape.dim, theirs.shape.dim):
            if _specificity(_dim_value(better)) <= _specificity(_dim_value(dim)):
                dim.CopyFrom(better)
    elif kind in ("sequence_type", "optional_type"):
        _merge_type(getattr(into, kind).elem_type, getattr(other, kind).elem_type)
    elif kind == "map_type":
        _merge_type(into.map_type.value_type, other.map_type.value_type)


def _dim_value(dim: onnx.TensorShapeProto.Dimension) -> int | str | None:
    return dim.dim_value if dim.HasField("dim_value") else dim.dim_param or None


def _specificity(dim: int | str | None) -> int:
    """How much a dimension says, less is more: 0 a size, 1 a name the model gave, 2 a name
    onnx made up ("unk__3": unknown, but the same as other dimensions so named), 3 none."""
    if isinstance(dim, int):
        return 0
    if dim is None:
        return 3
    return 2 if dim.startswith(_MADE_UP) else 1


#: How onnx's inference names a dimension it knows nothing of but its sameness to others.
_MADE_UP = "unk__"


def infer_shapes(graph: Graph) -> int:
    """Run onnx shape inference (data propagation on) and merge it in; returns tensors changed.
    Infos an edit made stale (``Graph.stale_tensors``) are forgotten first, so inference
    derives them anew rather than adding to them."""
    stale = graph.stale_tensors()
    with graph.untracked():  # its own merges are no edits
        for name in stale:
            graph.set_tensor(TensorInfo(name))
        graph.clear_stale()
        return _infer_and_merge(graph) + len(stale)


def _infer_and_merge(graph: Graph) -> int:
    model = to_onnx(graph, value_info=False, declare_constants_above=INFERENCE_CONSTANT_LIMIT)
    guard_slice_steps(model.graph)
    inferred, _ = infer_model(model, graph.source, is_weight=graph.is_constant)
    changed = 0
    for value_info in chain(inferred.value_info, inferred.output):
        old = graph.tensors.get(value_info.name)
        if old is None or old.data is not None or value_info.name in graph.inputs:
            continue
        if old.dtype is not None and old.is_static:
            continue  # nothing inference says can make it more specific
        # this pass numbers its unknowns from unk__0 too, knowing none of the graph's names
        # (tensor infos travel without value infos): its made-up names would alias those
        _forget_made_up(value_info.type)
        merged = _merge(old, tensor_info(value_info, graph.source))
        if merged != old:
            graph.set_tensor(merged)
            changed += 1
    return changed + correct_ceil_pools(graph)


def correct_ceil_pools(graph: Graph) -> int:
    """Size the pools with ceil_mode as the spec does where whole-graph inference gave onnx's
    sizes (``ceil_pool_infos``), and infer again what was inferred from them; returns the
    tensors changed."""
    pools = [
        node for node in graph.nodes
        if node.op_type in CEIL_POOL_OPS and node.is_onnx and node.op.attrs.get("ceil_mode")
    ]
    if not any(
        ceil_pool_infos(graph, n.op_type, n.op.domain, n.op.attrs, n.inputs, n.outputs)
        for n in pools
    ):
        return 0
    corrected: set[str] = set()
    for node in graph.topological_order():
        if corrected and any(name in corrected for name in node.inputs):
            corrected.update(forget_shapes(graph, node.outputs))
            infer_node(graph, node)
        if node.op_type in CEIL_POOL_OPS and node.is_onnx:
            for info in ceil_pool_infos(
                graph, node.op_type, node.op.domain, node.op.attrs, node.inputs, node.outputs
            ):
                graph.set_tensor(info)
                corrected.add(info.name)
    return len(corrected)


def _merge(old: TensorInfo, new: TensorInfo) -> TensorInfo:
    """The more specific of two descriptions: known beats unknown, a size beats a name, a
    name the model gave beats one onnx made up (``_specificity``)."""
    return _merged(old, new.dtype, new.shape)


def _merged(old: TensorInfo, dtype: np.dtype | None, shape: Shape | None) -> TensorInfo:
    """``_merge`` of ``old`` and a (dtype, shape); ``old`` itself when that adds nothing."""
    dtype = dtype if dtype is not None else old.dtype
    if shape is None or old.shape is None or len(shape) != len(old.shape):
        shape = shape if shape is not None else old.shape
    else:
        shape = tuple([  # a new size is the later word; else the more specific
            n if isinstance(n, int) or _specificity(n) < _specificity(o) else o
            for o, n in zip(old.shape, shape)
        ])
    if dtype == old.dtype and shape == old.shape:
        return old
    if old.data is None:  # dtype and shape are normal: an info's, or ``described_type``'s
        return normal_info(old.name, dtype, shape)
    return TensorInfo(old.name, dtype=dtype, shape=shape, data=old.data)


def infer_node(graph: Graph, node: Node, memo: InferenceMemo | None = None) -> list[str]:
    """Re-infer one ONNX node's outputs from its inputs' types and small constants' values
    (``infer_node_outputs``); returns the outputs whose info changed. A node inference cannot
    handle is left as it was, as non-strict whole-graph inference would."""
    if not node.is_onnx or not _to_infer(graph, node.outputs):
        return []
    try:
        proto, extra = node_proto(graph, node, set())
    except Exception:  # an attribute or input this op's form cannot express
        return []
    return infer_proto(graph, proto, graph.opset_imports[node.op.domain], extra, memo)


def _to_infer(graph: Graph, outputs: Iterable[str]) -> list[str]:
    """The outputs inference could still tell more about (not graph inputs, not static)."""
    return [
        o
        for o in outputs
        if o
        and o not in graph.inputs
        and not ((info := graph.tensors.get(o)) is not None and info.dtype is not None
                 and info.is_static)
    ]


def news_for_inference(before: TensorInfo | None, after: TensorInfo) -> bool:
    """Whether a tensor's new info can teach node inference anything: a constant inference
    reads by value (``INFERENCE_CONSTANT_LIMIT``), or a dtype or shape it lacked. A folded
    weight whose static shape was already known teaches nothing, so its readers need no
    re-inference."""
    if after.data is not None and after.data.size <= INFERENCE_CONSTANT_LIMIT:
        return True
    return before is None or before.dtype != after.dtype or before.shape != after.shape


#: One graph's inferences by what determines them: (op_type, domain, opset, the serialized
#: attributes, per input port its serialized type, the output count, and per input port the
#: bytes of a constant inference may read) -> per output port its serialized type or None.
#: Models repeat blocks, and each inference costs tens of µs in onnx's C++ and in serializing
#: its arguments. Kept per graph: its opsets and IR version are fixed.
InferenceMemo = dict[tuple[Any, ...], tuple[bytes | None, ...] | None]

#: Constants above this many elements are weights to the nodes that read them: such a node
#: is first inferred from types alone, and when that already gives every output a static
#: type, the constants' values cannot change it (they only refine what types leave open),
#: so the blocks of a model share one inference whatever their weights.
WEIGHT_ELEMENTS = 64


def _concat_1_axis() -> int:
    form = canonical.FORMS["Concat"][1]
    assert isinstance(form, canonical.ConcatForm) and form.default_axis is not None
    return form.default_axis


@dataclass(frozen=True)
class NewerForm:
    """The newer version an old one is inferred as: its since_version, the attributes it
    needs filled in when the node leaves them out, and the attributes that became inputs
    (appended, in order, as constants)."""

    since_version: int
    defaults: Mapping[str, Any] = field(default_factory=dict)
    as_inputs: tuple[str, ...] = ()


#: Old versions whose onnx schema has no inference function (their outputs, and all they
#: reach, stayed untyped), by the newer version that types them alike:
#: (op_type, since_version) -> NewerForm.
INFERRED_AS_NEWER: Mapping[tuple[str, int], NewerForm] = MappingProxyType({
    ("Concat", 1): NewerForm(4, defaults={"axis": _concat_1_axis()}),
    ("Reshape", 1): NewerForm(5, as_inputs=("shape",)),
})


def _as_newer(
    proto: NodeLike, schema: Any
) -> tuple[NodeLike, Any, dict[str, np.ndarray]]:
    """The node, schema and added constants inference reads: ``INFERRED_AS_NEWER``'s
    stand-in for an old version without an inference function (Concat-1 as Concat-4, its
    axis filled in; Reshape-1 as Reshape-5, its ``shape`` an input), else the node's own."""
    newer = INFERRED_AS_NEWER.get((proto.op_type, schema.since_version))
    if newer is None:
        return proto, schema, {}
    target = onnx.defs.get_schema(proto.op_type, newer.since_version, "")
    node = onnx.NodeProto()
    node.ParseFromString(proto.SerializeToString())
    attrs = {a.name: a for a in node.attribute}
    added: dict[str, np.ndarray] = {}
    for name in newer.as_inputs:
        if name not in attrs:  # a malformed node: inferred as it is (none)
            return proto, schema, {}
        const = f"{node.output[0]}::{name}"
        added[const] = np.array(onnx.helper.get_attribute_value(attrs[name]), np.int64)
        node.input.append(const)
    del node.attribute[:]
    node.attribute.extend(a for n, a in attrs.items() if n in target.attributes)
    node.attribute.extend(
        onnx.helper.make_attribute(k, v) for k, v in newer.defaults.items() if k not in attrs
    )
    return node, target, added


class NodeLike(Protocol):
    """What node inference reads: a NodeProto, or the importer's ``NodeFields``."""

    @property
    def op_type(self) -> str: ...
    @property
    def domain(self) -> str: ...
    @property
    def input(self) -> Sequence[str]: ...
    @property
    def output(self) -> Sequence[str]: ...
    @property
    def attribute(self) -> Sequence[onnx.AttributeProto]: ...
    def SerializeToString(self) -> bytes: ...  # noqa: N802  (protobuf's name)


def infer_proto(
    graph: Graph,
    proto: NodeLike,
    opset: int,
    extra: Mapping[str, np.ndarray] | None = None,
    memo: InferenceMemo | None = None,
) -> list[str]:
    """``infer_node``'s work on a NodeProto whose inputs are ``graph``'s tensors (or ``extra``
    constants): the importer uses it on the model's own nodes. ``memo`` reuses the inferences
    of this graph's earlier nodes of the same form (see ``InferenceMemo``)."""
    todo = _to_infer(graph, proto.output)
    if not todo:
        return []
    extra = extra or {}
    schema = op_schema(proto.op_type, proto.domain, opset)
    if schema is None:
        return []
    if (proto.op_type, schema.since_version) in INFERRED_AS_NEWER and not proto.domain:
        proto, schema, added = _as_newer(proto, schema)
        extra = {**extra, **added} if added else extra
    # onnx's infer_node_outputs, without its per-call protos: types travel serialized (cached
    # per dtype and shape), as the C++ side takes them, with the values of small constants
    types: dict[str, bytes] = {}
    values: dict[str, np.ndarray] = {}
    try:
        for name in proto.input:
            if not name or name in types:
                continue
            value = extra.get(name)
            if value is None:
                value = graph.constant(name)
            if value is None:
                info = graph.tensors[name]
                types[name] = type_bytes(info.dtype, info.shape)
            else:
                types[name] = type_bytes(value.dtype, value.shape)
                if value.size <= INFERENCE_CONSTANT_LIMIT:
                    values[name] = value
    except Exception:  # an input type onnx has no TypeProto for
        return []
    by_port = _inferred_by_port(graph, schema, proto, opset, types, values, memo)
    if by_port is None:
        return []
    inferred = {name: t for name, t in zip(proto.output, by_port) if name and t is not None}
    changed = []
    for name in todo:
        serialized = inferred.get(name)
        if serialized is None:
            continue
        old = graph.tensors.get(name) or TensorInfo(name)
        try:
            dtype, shape = described_type(serialized)
        except Exception:  # a non-tensor type: nothing dmlgraph can use
            continue
        merged = _merged(old, dtype, shape)
        if merged is not old:
            graph.set_tensor(merged)
            changed.append(name)
    if changed and proto.op_type in CEIL_POOL_OPS:
        attrs = {
            a.name: value.decode() if isinstance(value, bytes) else value
            for a in proto.attribute
            for value in (onnx.helper.get_attribute_value(a),)
        }
        for info in ceil_pool_infos(
            graph, proto.op_type, proto.domain, attrs, proto.input, proto.output
        ):
            graph.set_tensor(info)
    return changed


def _inferred_by_port(
    graph: Graph,
    schema: Any,
    proto: NodeLike,
    opset: int,
    types: Mapping[str, bytes],
    values: Mapping[str, np.ndarray],
    memo: InferenceMemo | None,
) -> tuple[bytes | None, ...] | None:
    """Per output port, the serialized type onnx infers (None where it infers none); None
    when inference fails: an unknown input type, a schema without inference, a bad node...
    With ``memo``, a node of a form inferred before reuses that inference (``InferenceMemo``,
    ``WEIGHT_ELEMENTS``)."""
    if memo is None:
        return _infer_call(graph, schema, proto, types, values)
    form = (
        proto.op_type,
        proto.domain,
        opset,
        tuple([a.SerializeToString() for a in proto.attribute]),  # (lists: a generator's
        tuple([types[name] if name else None for name in proto.input]),  # items are calls)
        len(proto.output),
    )
    weights = {name for name, value in values.items() if value.size > WEIGHT_ELEMENTS}
    key: tuple[Any, ...]
    if weights:
        key = (*form, None)
        if key not in memo:
            small = {name: v for name, v in values.items() if name not in weights}
            memo[key] = _infer_call(graph, schema, proto, types, small)
        by_port = memo[key]
        if by_port is not None and _all_static(proto.output, by_port):
            return by_port
    key = (
        *form,
        tuple([  # a list: a generator's every item is a call
            values[name].tobytes() if name in values else None for name in proto.input if name
        ]),
    )
    if key not in memo:
        memo[key] = _infer_call(graph, schema, proto, types, values)
    return memo[key]


def _infer_call(
    graph: Graph,
    schema: Any,
    proto: NodeLike,
    types: Mapping[str, bytes],
    values: Mapping[str, np.ndarray],
) -> tuple[bytes | None, ...] | None:
    try:
        data = {name: tensor_bytes(value, name) for name, value in values.items()}
        inferred = schema._infer_node_outputs(  # type: ignore[call-arg]  # onnx stubs lag C++
            proto.SerializeToString(), types, data, {}, dict(graph.opset_imports),
            graph.ir_version,
        )
        return tuple(inferred.get(name) if name else None for name in proto.output)
    except Exception:
        return None


def _all_static(outputs: Sequence[str], by_port: Sequence[bytes | None]) -> bool:
    """Whether inference gave every named output a dtype and a static shape."""
    for name, serialized in zip(outputs, by_port):
        if not name:
            continue
        if serialized is None:
            return False
        try:
            dtype, shape = described_type(serialized)
        except Exception:
            return False
        if dtype is None or shape is None:
            return False
        for d in shape:  # a loop: a generator's every item is a call
            if type(d) is not int:
                return False
    return True


# ----------------------------------------------------------------------------- folding


def fold_constants(
    graph: Graph, select: Callable[[Node], bool] | None = None, *, infer: bool = False
) -> list[str]:
    """One pass in topological order; returns the labels of the nodes folded away.

    A node is folded as soon as its inputs are known, so a chain folds in one pass. ``infer``:
    re-infer the outputs of nodes whose inputs changed during the pass first (step 1 of the
    module docstring), so a Shape of a newly static tensor folds in the same pass.
    """
    changed: set[str] = set()
    corrected: set[str] = set()  # shapes evaluation proved wrong, and those inferred from them
    folded: list[str] = []
    memo: InferenceMemo = {}
    partial = PartialShapes(graph.declared_sizes)  # shape vectors known in part (``partial_fold``)
    outputs = graph.outputs
    for node in graph.topological_order():
        # (set look-ups, not any() over a generator, whose every item is a call: every node
        # is asked)
        if infer and changed and not changed.isdisjoint(node.inputs):
            if corrected and not corrected.isdisjoint(node.inputs):
                corrected.update(forget_shapes(graph, node.outputs))
            if canonical.is_canonical(node.op):
                canonical.check_types(graph, node)  # a dtype inference gave only now
                node = canonical.normalize(graph, node, partial)
                canonical.check(graph, node, partial)
            changed.update(infer_node(graph, node, memo))
        if select is not None and not select(node):
            continue
        # ``foldable``, with ``_may_fold`` asked once: most nodes fail it, or read an input
        # not known, and then only a ``PARTIAL_OPS`` node may fold (``partial_fold``)
        if not _may_fold(node):
            continue
        values = None
        op_type = node.op_type
        for port, name in enumerate(node.inputs):  # a loop: a generator's items are calls
            if not input_available(graph, op_type, port, name, partial):
                known = False
                break
        else:
            known = True
            for out in node.outputs:
                if out in outputs:
                    known = False
                    break
        if not known:
            if op_type not in PARTIAL_OPS:  # ``partial_fold``'s first test, inline
                continue
            values = partial_fold(
                graph, op_type, node.op.domain, node.op.since_version, node.op.attrs,
                node.inputs, node.outputs, partial,
            )
            if values is None or node.outputs[0] in graph.outputs:
                continue
        if node.op_type == "Div" and (overflow := overflowing_division(graph, node.inputs)):
            raise ModelValidationError(f"{graph.source}: {node.label}: {overflow}")
        divergent = _slice_divergence(graph, node) or (
            node.op_type in ORT_DIVERGENT_OPS
            and ort_divergence(graph, node.op_type, node.op.domain, node.op.since_version,
                               node.op.attrs, node.inputs)
        )
        if divergent:
            _note(node, NOT_FOLDED, divergent)
            continue
        if values is None and (grows := growth_rejection(graph, node.inputs, node.outputs)):
            _note(node, NOT_FOLDED, grows)
            continue
        kernel = shape_kernels.kernel_for(node.op_type, node.op.domain, node.op.since_version)
        if values is None and kernel is not None:
            values = kernel_values(
                graph, kernel, node.op.since_version, node.op.attrs, node.inputs, node.outputs,
                partial,
            )
        if values is None and (broken := reference_refusal(graph, node)):
            _note(node, NOT_FOLDED, broken)
            continue
        if values is None:
            try:
                values = _run_reference(graph, [node], {})
            except Exception as exc:
                _note(node, NOT_FOLDED, f"onnx.reference failed: {type(exc).__name__}: {exc}")
                continue
        reason = rejection(graph, node.inputs, node.outputs, values)
        if reason:
            _note(node, NOT_FOLDED, reason)
            if infer:
                fixed = _adopt_evaluated_shapes(graph, node, values)
                corrected.update(fixed)
                changed.update(fixed)
            continue
        if _is_float_range(graph, node):
            _note(node, NOT_FOLDED, FLOAT_RANGE)
            continue
        graph.remove_node(node.id)
        graph.removed.append(RemovedNode(node.provenance, "folded", FOLDED))
        for out in node.outputs:
            if out:
                graph.set_tensor(TensorInfo(out, data=values[out]))
                changed.add(out)
        folded.append(node.label)
    return folded


# What onnxruntime computes otherwise than ONNX, which folding must not decide for it:


def _slice_divergence(graph: Graph, node: Node) -> str:
    """Why a Slice is read otherwise by onnxruntime ("" when it is not): a negative step
    with an end of ``shape_kernels.ort_reversed_end``. Left to the lowering, which notes the
    divergence, so parity names it."""
    if node.op_type != "Slice" or not canonical.is_canonical(node.op):
        return ""
    ends, steps = graph.constant(node.input(2)), graph.constant(node.input(4))
    if ends is None or steps is None or ends.shape != steps.shape:
        return ""
    for end, step in zip(ends.reshape(-1).tolist(), steps.reshape(-1).tolist()):
        sentinel = shape_kernels.ort_reversed_end(end, step)
        if sentinel:
            return (
                f"end {sentinel} with step {step} is read otherwise by onnxruntime; left to "
                "the lowering, which notes the divergence"
            )
    return ""


#: Integers onnxruntime computes through a double in these ops (std::pow, and reductions
#: whose results it rounds or saturates) are exact up to 2^53 in magnitude; the bound is
#: itself a double, so those reaching 2^52 are left alone.
_DOUBLE_EXACT = 2**52


def ort_divergence(
    graph: Graph,
    op_type: str,
    domain: str,
    version: int,
    attrs: Mapping[str, Any],
    inputs: Sequence[str],
) -> str:
    """Why onnxruntime computes this node otherwise than ONNX's evaluation of it, or refuses
    it ("" when neither): folding leaves it to the fallback, where onnxruntime decides (each
    case measured against onnxruntime 1.32's CPU kernels)."""
    ours = not domain or domain == DIVERGENT_DOMAINS.get(op_type)  # no call for ai.onnx's
    check = _DIVERGENCES.get(op_type) if ours else None
    if check is None:  # callers ask ``op_type in ORT_DIVERGENT_OPS`` first: this runs per node
        return ""
    values = [graph.constant(name) for name in inputs]
    return check(values, attrs, version)


def _clip_divergence(values: list[np.ndarray | None], attrs: Mapping[str, Any], version: int) -> str:
    if version < 11:
        low, high = attrs.get("min"), attrs.get("max")
        if (low is not None and math.isnan(low)) or (high is not None and math.isnan(high)):
            return "Clip-6 with a NaN bound, which onnxruntime refuses"
        if low is not None and high is not None and low > high:
            return "Clip-6 with min > max, which onnxruntime refuses"
        return ""
    for bound in values[1:3]:
        if bound is not None and bound.dtype.kind == "f" and np.isnan(bound).any():
            return "a NaN bound, which onnxruntime ignores (NumPy's minimum and maximum give NaN)"
    data = values[0] if values else None
    given = [v for v in values[:3] if v is not None]
    if (
        version == 11 and data is not None and data.dtype == np.float16
        and any(len(values) <= port or values[port] is None for port in (1, 2))
        and any(np.isinf(v).any() for v in given if v.dtype.kind == "f")
    ):
        return ("a float16 Clip-11 with an infinity and a bound omitted, which onnxruntime "
                "keeps where ONNX's default bound (the type's lowest or highest) clips it")
    return ""


def _pad_divergence(values: list[np.ndarray | None], attrs: Mapping[str, Any], version: int) -> str:
    """A constant Pad where onnxruntime departs from ONNX (``ort_pad``, the list lowering
    notes from): left unfolded, it is lowered with its divergence named (folded, it hid it,
    and ``check`` failed on the file: a reflect by the size or more, a wrap of an empty
    input)."""
    data = values[0] if values else None
    form = canonical.FORMS["Pad"].get(version)
    if data is None or not isinstance(form, canonical.PadForm):
        return ""
    pads = attrs.get("pads") if form.params_as_attributes else (
        values[1] if len(values) > 1 else None)
    if pads is None:
        return ""
    widths = np.asarray(pads, dtype=np.int64).ravel()
    given = values[3] if form.has_axes and len(values) > 3 else None
    if given is not None:  # pads for those axes alone: spread over every axis
        axes = np.asarray([int(a) % data.ndim for a in given.ravel()] if data.ndim else [])
        if widths.size != 2 * axes.size or len(set(axes.tolist())) != axes.size:
            return ""
        widths = canonical.expand_pads(widths, axes, data.ndim)
    if widths.size != 2 * data.ndim:
        return ""
    mode = canonical.pad_mode(OnnxOp("Pad", version, attrs=attrs))
    found = pad_divergences(data.shape, mode, [int(w) for w in widths])
    return "; ".join(d.text for d in found)


def _magnitude_divergence(op_type: str) -> Callable[..., str]:
    """Integer Pow and sum/product reductions: onnxruntime rounds through a double."""

    def check(values: list[np.ndarray | None], attrs: Mapping[str, Any], version: int) -> str:
        data = values[0]
        if (
            data is not None and data.size and op_type in ("ReduceL2", "ReduceSumSquare")
            and data.dtype.kind in "fV" and data.dtype.itemsize == 2
        ):  # onnxruntime sums a float16's squares in float32; onnx.reference overflowed
            with np.errstate(all="ignore"):
                squares = float(np.square(data.astype(np.float64)).sum())
            if not squares <= float(np.finfo(data.dtype).max):
                return (f"a {data.dtype} {op_type} whose squares' sum overflows the type, "
                        "which onnxruntime sums in float32")
            return ""
        if data is None or data.dtype.kind not in "iu" or not data.size:
            return ""
        with np.errstate(all="ignore"):
            x = np.abs(data.astype(np.float64))
            if op_type == "Pow":
                power = values[1]
                if power is None:
                    return ""
                bound = float(np.max(x ** np.abs(power.astype(np.float64)), initial=0.0))
            elif op_type in ("ReduceSum", "ReduceL1", "ReduceMean"):
                bound = float(x.sum())
            elif op_type in ("ReduceSumSquare", "ReduceL2"):
                bound = float((x * x).sum())
            else:  # ReduceProd
                bound = float(np.prod(np.maximum(x, 1.0)))
        limit = min(_DOUBLE_EXACT, int(np.iinfo(data.dtype).max))
        if not bound < limit:
            return (f"an integer {op_type} reaching 2^52 or the limits of {data.dtype}, which "
                    "onnxruntime computes through a double (it rounds, and saturates on "
                    "overflow where NumPy wraps)")
        return ""

    return check


def _cast_divergence(values: list[np.ndarray | None], attrs: Mapping[str, Any], version: int) -> str:
    data = values[0] if values else None
    if data is not None and data.dtype.kind in "OUS":
        return "a Cast of strings, which onnxruntime parses otherwise (\"0\" to bool is False)"
    target = attrs.get("to")
    float8 = {TensorProto.FLOAT8E4M3FN, TensorProto.FLOAT8E4M3FNUZ, TensorProto.FLOAT8E5M2,
              TensorProto.FLOAT8E5M2FNUZ}
    if target in float8 and attrs.get("saturate", 1) == 0:
        return "a Cast to float8 without saturation, where onnxruntime and ONNX differ on overflow"
    return ""


def _division_divergence(
    values: list[np.ndarray | None], attrs: Mapping[str, Any], version: int
) -> str:
    divisor = values[1] if len(values) > 1 else None
    if divisor is not None and divisor.dtype.kind in "iu" and not divisor.all():
        return "an integer division by zero, which onnxruntime refuses"
    return ""


def overflowing_division(graph: Graph, inputs: Sequence[str]) -> str:
    """Why an integer Div of constants must be refused ("" when it need not): it divides the
    type's minimum by -1, whose quotient the type cannot hold. ONNX leaves it undefined,
    NumPy wraps it (onnx.reference folded -2^63), and onnxruntime's CPU provider dies of a
    floating-point exception (SIGFPE) on it, which took ``check`` down with no word."""
    if len(inputs) != 2 or not all(inputs):
        return ""
    a, b = graph.constant(inputs[0]), graph.constant(inputs[1])
    if a is None or b is None or a.dtype.kind != "i" or b.dtype != a.dtype:
        return ""
    low = np.iinfo(a.dtype).min
    try:
        overflows = bool(((a == low) & (b == -1)).any())
    except ValueError:  # shapes that do not broadcast: inference's to refuse
        return ""
    if not overflows:
        return ""
    return (f"divides the {a.dtype} minimum {low} by -1, a quotient {a.dtype} cannot hold: "
            "ONNX leaves it undefined and onnxruntime's CPU provider dies of a floating-point "
            "exception (SIGFPE) on it")


def _mod_divergence(values: list[np.ndarray | None], attrs: Mapping[str, Any], version: int) -> str:
    divisor = values[1] if len(values) > 1 else None
    if divisor is not None and divisor.dtype.kind == "f" and attrs.get("fmod", 0) == 0:
        return "a Mod of floats without fmod=1, which ONNX forbids and onnxruntime refuses"
    return _division_divergence(values, attrs, version)


def _nan_divergence(op_type: str, infinite: bool = False) -> Callable[..., str]:
    """Ops whose NaN onnx.reference places otherwise than onnxruntime (helpers' sweeps):
    Hardmax of [NaN, 1] is [1, 0] by NumPy's argmax and [0, 1] on onnxruntime; Sign of a
    float16 NaN is NaN by NumPy and 0 on onnxruntime; ArgMax of [1, NaN, 3] is 1 and 2;
    ReduceMax of [1, NaN] is NaN and 1. With ``infinite``, an infinity too (ReduceLogSumExp
    of [-inf, -inf]: NaN by onnx.reference, -inf on onnxruntime)."""

    def check(values: list[np.ndarray | None], attrs: Mapping[str, Any], version: int) -> str:
        data = values[0] if values else None
        if data is None or data.dtype.kind not in "fV" or not data.size:
            return ""
        with np.errstate(all="ignore"):
            wide = data.astype(np.float64)
        if np.isnan(wide).any() or (infinite and np.isinf(wide).any()):
            what = "NaN or an infinity" if infinite else "NaN"
            return f"a {op_type} of {what}, which onnxruntime computes otherwise than NumPy"
        return ""

    return check


def _log_softmax_divergence(
    values: list[np.ndarray | None], attrs: Mapping[str, Any], version: int
) -> str:
    """onnx.reference takes the log of the softmax, which underflows to -inf where the
    inputs lie further apart than the exponent spans; onnxruntime subtracts the log of the
    sum (LogSoftmax of [-6.8, 1e30]: -inf by onnx.reference, -1e30 on onnxruntime)."""
    data = values[0] if values else None
    if data is None or data.dtype.kind != "f" or not data.size:
        return ""
    with np.errstate(all="ignore"):
        wide = data.astype(np.float64)
        spread = float(np.max(wide) - np.min(wide))
    if not spread <= -math.log(float(np.finfo(data.dtype).tiny)):
        return ("a LogSoftmax of inputs further apart than the exponent spans, which "
                "onnx.reference computes as -inf and onnxruntime does not")
    return ""


def _mean_divergence(
    values: list[np.ndarray | None], attrs: Mapping[str, Any], version: int
) -> str:
    """A ReduceMean over an empty set, which ONNX leaves undefined: onnxruntime makes it 0,
    onnx.reference NaN (and an integer's NaN cast, INT64_MIN). Else as other sums."""
    data = values[0] if values else None
    if data is not None and data.size == 0:
        return ("a ReduceMean of an empty tensor, which ONNX leaves undefined (onnxruntime "
                "gives 0, NumPy NaN)")
    return _REDUCE_MEAN_MAGNITUDE(values, attrs, version)


_REDUCE_MEAN_MAGNITUDE = _magnitude_divergence("ReduceMean")


def _nonzero_divergence(
    values: list[np.ndarray | None], attrs: Mapping[str, Any], version: int
) -> str:
    """NonZero of a scalar: ONNX gives [rank 0, count] ([0, 1] for 3), onnxruntime [1, 1]."""
    data = values[0] if values else None
    if data is not None and data.ndim == 0:
        return "a NonZero of a scalar, which onnxruntime reads as a vector of one element"
    return ""


def _range_divergence(values: list[np.ndarray | None], attrs: Mapping[str, Any], version: int) -> str:
    if any(v is not None and v.ndim != 0 for v in values):
        return "a Range of inputs that are not scalars, which onnxruntime refuses"
    return ""


_DIVERGENCES: Mapping[str, Callable[[list[np.ndarray | None], Mapping[str, Any], int], str]] = {
    "Clip": _clip_divergence,
    "Pad": _pad_divergence,
    "Pow": _magnitude_divergence("Pow"),
    "ReduceSum": _magnitude_divergence("ReduceSum"),
    "ReduceL1": _magnitude_divergence("ReduceL1"),
    "ReduceSumSquare": _magnitude_divergence("ReduceSumSquare"),
    "ReduceProd": _magnitude_divergence("ReduceProd"),
    "ReduceMean": _mean_divergence,
    "ReduceL2": _magnitude_divergence("ReduceL2"),
    "Hardmax": _nan_divergence("Hardmax"),
    "Sign": _nan_divergence("Sign"),
    "ArgMax": _nan_divergence("ArgMax"),
    "ArgMin": _nan_divergence("ArgMin"),
    "ReduceMax": _nan_divergence("ReduceMax"),
    "ReduceMin": _nan_divergence("ReduceMin"),
    "ReduceLogSumExp": _nan_divergence("ReduceLogSumExp", infinite=True),
    "LogSoftmax": _log_softmax_divergence,
    "Cast": _cast_divergence,
    "Div": _division_divergence,
    "Mod": _mod_divergence,
    "Range": _range_divergence,
    "NonZero": _nonzero_divergence,
    "LabelEncoder": lambda values, attrs, version: label_divergence(
        version, attrs, values[0] if values else None),
}


#: The ops ``ort_divergence`` may have a reason for.
ORT_DIVERGENT_OPS = frozenset(_DIVERGENCES)


# What ONNX forbids and onnx.reference computes all the same (NumPy is lenient), asked only
# of a node about to go to onnx.reference (the kernels decline these cases themselves):
# folded, a malformed node became a value where onnxruntime refuses it.


def reference_refusal(graph: Graph, node: Node) -> str:
    """Why ONNX forbids this node on its constant inputs, though ``onnx.reference`` would
    compute it ("" when nothing does): it stays unfolded, for onnxruntime to refuse."""
    check = _SPEC_RULES.get(node.op_type) if node.op.domain == "" else None
    if check is None:
        return ""
    values = [graph.constant(name) if name else None for name in node.inputs]
    reason = check(values, node.op.attrs, node.op.since_version, len(node.outputs))
    return f"{reason}, which ONNX forbids and onnxruntime refuses" if reason else ""


def _gather_rule(values: list[np.ndarray | None], attrs: Mapping[str, Any], version: int,
                 outputs: int) -> str:
    data = values[0] if values else None
    return "a Gather of a scalar (data of rank 0)" if data is not None and data.ndim == 0 else ""


def _squeeze_rule(values: list[np.ndarray | None], attrs: Mapping[str, Any], version: int,
                  outputs: int) -> str:
    data = values[0] if values else None
    axes = attrs.get("axes") if version < 13 else (values[1] if len(values) > 1 else None)
    if data is None or axes is None:
        return ""
    for axis in np.asarray(axes).reshape(-1).tolist():
        if -data.ndim <= axis < data.ndim and data.shape[axis] != 1:
            return f"a Squeeze of axis {axis}, of size {data.shape[axis]}, not 1"
    return ""


def _reshape_rule(values: list[np.ndarray | None], attrs: Mapping[str, Any], version: int,
                  outputs: int) -> str:
    shape = values[1] if len(values) > 1 else None
    if shape is not None and shape.dtype.kind == "i" and (shape < -1).any():
        return f"a Reshape to {shape.tolist()}, a size below -1"
    return ""


def _tile_rule(values: list[np.ndarray | None], attrs: Mapping[str, Any], version: int,
               outputs: int) -> str:
    data, repeats = (values + [None, None])[:2]
    if data is None or repeats is None:
        return ""
    if repeats.ndim != 1 or repeats.size != data.ndim:
        return f"a Tile of rank {data.ndim} by {repeats.size} repeats"
    if (repeats < 0).any():
        return f"a Tile by negative repeats {repeats.tolist()}"
    return ""


def _split_rule(values: list[np.ndarray | None], attrs: Mapping[str, Any], version: int,
                outputs: int) -> str:
    data = values[0] if values else None
    axis = attrs.get("axis", 0)
    if data is None or not -data.ndim <= axis < data.ndim:
        return ""
    size = data.shape[axis]
    given = values[1] if version >= 13 and len(values) > 1 else attrs.get("split")
    if given is None:
        if version < 18 and outputs and size % outputs:
            return f"a Split of size {size} into {outputs} equal parts"
        parts = attrs.get("num_outputs")
        if parts is not None and (parts != outputs or -(-size // parts) * (parts - 1) > size):
            return f"a Split of size {size} into num_outputs={parts} for {outputs} outputs"
        return ""
    split = np.asarray(given).reshape(-1).tolist()
    if len(split) != outputs or sum(split) != size or min(split, default=0) < 0:
        return f"a Split of size {size} into {split} for {outputs} outputs"
    return ""


def _flatten_rule(values: list[np.ndarray | None], attrs: Mapping[str, Any], version: int,
                  outputs: int) -> str:
    data = values[0] if values else None
    axis = attrs.get("axis", 1)
    if data is not None and not -data.ndim <= axis <= data.ndim:
        return f"a Flatten of rank {data.ndim} at axis {axis}"
    return ""


def _mod_rule(values: list[np.ndarray | None], attrs: Mapping[str, Any], version: int,
              outputs: int) -> str:
    fmod = attrs.get("fmod", 0)
    return f"a Mod with fmod={fmod} (0 or 1)" if fmod not in (0, 1) else ""


def _constant_of_shape_rule(values: list[np.ndarray | None], attrs: Mapping[str, Any],
                            version: int, outputs: int) -> str:
    value = attrs.get("value")
    if isinstance(value, np.ndarray) and value.shape != (1,):
        return f"a ConstantOfShape whose value is of shape {list(value.shape)}, not [1]"
    return ""


_SPEC_RULES: Mapping[
    str, Callable[[list[np.ndarray | None], Mapping[str, Any], int, int], str]
] = MappingProxyType({
    "Gather": _gather_rule,
    "Squeeze": _squeeze_rule,
    "Reshape": _reshape_rule,
    "Tile": _tile_rule,
    "Split": _split_rule,
    "Flatten": _flatten_rule,
    "Mod": _mod_rule,
    "ConstantOfShape": _constant_of_shape_rule,
})


def _is_float_range(graph: Graph, node: Node) -> bool:
    """A float Range: onnxruntime adds delta to a running value, ONNX takes start + i * delta,
    and the two round apart (measured: element 24 of Range(0, 2.5, 0.1) times 10, cast to
    int64, is 23 on onnxruntime, 24 by ONNX). It stays for the fallback, evaluated all the
    same: a wrong inferred length shows there (``_adopt_evaluated_shapes``)."""
    if node.op_type != "Range" or not node.is_onnx or node.op.domain != "":
        return False
    start = graph.tensors.get(node.input(0))
    return start is not None and start.dtype is not None and start.dtype.kind == "f"


FLOAT_RANGE = (
    "a float Range, which onnxruntime computes by adding delta to a running value and ONNX as "
    "start + i * delta (they round apart): left to the fallback"
)


def _adopt_evaluated_shapes(
    graph: Graph, node: Node, values: Mapping[str, np.ndarray]
) -> list[str]:
    """Outputs whose evaluated shape differs from onnx's inference (of the same dtype) take
    the evaluated one: inference is wrong there (a float Range's length, measured against
    onnxruntime), and a Shape of the tensor must not fold to it. The node still runs on the
    fallback. Returns the outputs changed."""
    fixed = []
    for out in node.outputs:
        value = values.get(out) if out else None
        info = graph.tensors.get(out) if out else None
        if (
            not isinstance(value, np.ndarray)
            or info is None
            or info.shape is None
            or (info.dtype is not None and info.dtype != value.dtype)
            or shape_matches(info.shape, value.shape)
        ):
            continue
        graph.set_tensor(TensorInfo(out, dtype=value.dtype, shape=value.shape))
        _note(node, SHAPE_EVALUATED, f"{out!r} is {list(value.shape)} as evaluated, not "
              f"{list(info.shape)} as onnx infers")
        fixed.append(out)
    return fixed


def forget_shapes(graph: Graph, outputs: Iterable[str]) -> list[str]:
    """Outputs inferred from a shape evaluation corrected lose their shapes, for node
    inference to infer them again from the corrected one; returns them."""
    forgotten = []
    for out in outputs:
        info = graph.tensors.get(out) if out else None
        if info is None or info.data is not None or out in graph.inputs or info.shape is None:
            continue
        graph.set_tensor(TensorInfo(out, dtype=info.dtype))
        forgotten.append(out)
    return forgotten


def foldable(graph: Graph, node: Node, trust: PartialShapes | None = None) -> bool:
    """Whether ``fold_constants`` would try to fold the node: an ONNX node of a foldable
    domain, deterministic, not noted as unfoldable, computing no graph output, its inputs
    known (``input_available``; ``trust``: a sweep's answers to ``PartialShapes.unsure``)."""
    if not _may_fold(node):
        return False
    # the outputs (a list) last: asked of every node of a graph whose every tensor is an
    # output, first, it made folding quadratic
    op_type = node.op_type
    for port, name in enumerate(node.inputs):  # a loop: a generator's every item is a call
        if not input_available(graph, op_type, port, name, trust):
            return False
    return not any(o in graph.outputs for o in node.outputs)


def _may_fold(node: Node) -> bool:
    """An ONNX node of a foldable domain, deterministic, not noted as unfoldable: what
    ``foldable`` asks first, and all that ``fold_constants`` asks of a node it folds through
    shape vectors known in part (``partial_fold``), whose inputs are not all known."""
    return (
        node.is_onnx
        and node.op.domain in FOLDABLE_DOMAINS
        and node.op_type not in NONDETERMINISTIC_OPS
        and not (node.notes and any(n.startswith(NOT_FOLDED) for n in node.notes))
        # control flow runs on the fallback, whole: onnx.reference would compute its
        # subgraphs' Slices otherwise than the spec (clamping with negative steps), which
        # folding's own kernels follow, and onnxruntime folds none of it either
        and not node.op.holds_subgraphs
    )


def input_available(
    graph: Graph, op_type: str, port: int, name: str, trust: PartialShapes | None = None
) -> bool:
    """Whether folding knows input ``port`` (tensor ``name``) of an ``op_type`` node: omitted,
    constant, or the input of Shape/Size with a static shape (``shape_only_value``) that
    onnxruntime gives the tensor at run time too (not ``PartialShapes.unsure``: ``trust``
    keeps a sweep's answers; without it they are found anew).

    The last, since a shape is static here where it is not in onnxruntime's session: sizes
    fixed by ``--input-shape``, or made static by dmlgraph's own folding (a Reshape to a
    folded shape). Folded from inference there, the Shape of a MaxPool with ceil_mode gave
    onnx's 4 columns where onnxruntime's kernel, and the spec, make 3."""
    if not name or graph.is_constant(name):
        return True
    info = graph.tensors.get(name)
    if (
        op_type not in SHAPE_ONLY_OPS
        or port != 0
        or info is None
        or not info.is_static
        or info.dtype is None
    ):
        return False
    return not (trust or PartialShapes(graph.declared_sizes)).unsure(graph, name)


def shape_only_value(info: TensorInfo) -> np.ndarray:
    """The input of a Shape/Size only lends its static shape: a zero-strided dummy of it, so
    no real data is allocated."""
    shape = info.static_shape or ()
    dtype = np.dtype(info.dtype)
    # one element's zero bytes behind every index (np.broadcast_to costs 10x this)
    return np.ndarray(shape, dtype, buffer=bytes(max(dtype.itemsize, 1)), strides=(0,) * len(shape))


def kernel_values(
    graph: Graph,
    kernel: shape_kernels.Kernel,
    version: int,
    attrs: Mapping[str, Any],
    inputs: Sequence[str],
    outputs: Sequence[str],
    trust: PartialShapes | None = None,
) -> dict[str, np.ndarray] | None:
    """A foldable node's outputs by its ``shape_kernels`` kernel at since_version
    ``version``, or None where the kernel declines (then ``onnx.reference`` evaluates it) or
    an input is not known (``kernel_inputs``). The kernels follow the spec where
    onnx.reference does not (Slice's clamping with negative steps, Shape's end below -rank),
    as onnxruntime does."""
    args = kernel_inputs(graph, kernel.op_type, inputs, trust)
    if args is None:
        return None
    results = kernel.fn(args, attrs, version)
    if results is None or len(results) != len(outputs):
        return None
    named: dict[str, np.ndarray] = {}
    for out, value in zip(outputs, results):
        if out:
            named[out] = frozen_array(value) if type(value) is np.ndarray else value
    return named


#: Ops that only move the elements of their data: over a shape vector known in part
#: (``_partial_values``) each result element is an element it moved, so a result made only of
#: known ones is the value the node computes at run time. Port None: every input is data
#: (Concat); else only that port is, the others (indices, starts, axes) must be constants.
PARTIAL_OPS: Mapping[str, int | None] = MappingProxyType(
    {"Shape": 0, "Identity": 0, "Gather": 0, "Slice": 0, "Squeeze": 0, "Unsqueeze": 0,
     "Concat": None}
)
#: An element of a partial vector that is not known: a dimension is never negative.
UNKNOWN_DIM = -1
_INT64 = np.dtype("int64")


#: Ops whose output shape onnx's inference gives as onnxruntime's kernels make it, whatever
#: the sizes: elementwise ops, matrix products, convolutions, normalizations and the layout
#: ops. A tensor's static sizes are trusted (a Shape of it folded) only through these
#: (``PartialShapes.unsure``): elsewhere the two may differ (MaxPool with ceil_mode=1 over
#: [B, 1, 5], kernel 2, stride 2, pads 1: onnx infers 4 columns, onnxruntime makes 3).
#: Resizes, splits and every other op stop the trust.
#: Elementwise ops: their outputs' sizes are their inputs' (broadcast), whatever the values,
#: so the arithmetic of shape vectors (a Cast, a Mul by a scale, a Floor) keeps their
#: lengths (``PartialShapes.vector_unsure``).
ELEMENTWISE_OPS: frozenset[str] = frozenset({
    # one input
    "Abs", "Acos", "Acosh", "Asin", "Asinh", "Atan", "Atanh", "Cast", "CastLike", "Ceil",
    "Celu", "Clip", "Cos", "Cosh", "Elu", "Erf", "Exp", "Floor", "Gelu", "HardSigmoid",
    "HardSwish", "Identity", "IsInf", "IsNaN", "LeakyRelu", "Log", "Mish", "Neg", "Not",
    "Reciprocal", "Relu", "Round", "Selu", "Shrink", "Sigmoid", "Sign", "Sin", "Sinh",
    "Softplus", "Softsign", "Sqrt", "Tan", "Tanh", "ThresholdedRelu",
    # broadcasting
    # (a PRelu only where its slope broadcasts to X: onnx sizes the output as X,
    # onnxruntime broadcasts both ways, [B, 1] by a slope of [1, 4] making [B, 4];
    # ``_slope_within``)
    "PRelu", "Add", "And", "Div", "Equal", "Greater", "GreaterOrEqual", "Less",
    "LessOrEqual", "Max", "Mean", "Min", "Mod", "Mul", "Or", "Pow", "Sub", "Sum", "Where",
    "Xor",
})

SHAPE_EXACT_OPS: frozenset[str] = ELEMENTWISE_OPS | frozenset({
    # products, convolution, normalizations
    "MatMul", "Gemm", "Conv", "BatchNormalization", "InstanceNormalization",
    "LayerNormalization", "GroupNormalization", "Softmax", "LogSoftmax",
    "GlobalAveragePool", "GlobalMaxPool",
    # windowed pools, as ``_pool_exact`` allows, and ConvTranspose with explicit pads
    "MaxPool", "AveragePool", "LpPool", "ConvTranspose",
    # recurrences, sequence first only (``_recurrence_exact``); reductions (empty axes too: with
    # noop_with_empty_axes or without, onnx and onnxruntime agree); ops sizing their outputs
    # from their inputs' sizes and attributes alone (Resize by ``_resize_exact``)
    "LSTM", "GRU", "RNN", "ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd",
    "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare", "ArgMax",
    "ArgMin", "CumSum", "Dropout", "Hardmax", "LRN", "LpNormalization",
    "MeanVarianceNormalization", "DepthToSpace", "SpaceToDepth", "Tile", "Split", "TopK",
    "Trilu", "GatherElements", "GatherND", "ScatterElements", "ScatterND", "QuantizeLinear",
    "DequantizeLinear", "Einsum", "GridSample", "RoiAlign", "Resize", "Upsample",
    # quantized products, bitwise ops, and ops sizing by constants and attributes (a helper's
    # sweep, 400 configs each that both ran, opsets 13-21: onnx sized every output as
    # onnxruntime 1.32 made it; Range is not one: float32 rounding, ``_is_float_range``)
    "QLinearConv", "QLinearMatMul", "MatMulInteger", "ConvInteger", "DynamicQuantizeLinear",
    "BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitwiseNot", "BitShift", "Det", "EyeLike",
    "OneHot", "CenterCropPad", "Col2Im", "AffineGrid", "ReverseSequence", "Swish",
    "BlackmanWindow", "HannWindow", "HammingWindow", "MelWeightMatrix", "Bernoulli",
    "RandomNormalLike", "RandomUniformLike", "Multinomial", "MaxRoiPool", "MaxUnpool",
    # layout (a Slice only where onnxruntime reads its parameters as ONNX does, a Squeeze
    # without named axes only of a static input, with no 1 for an empty list, which onnx
    # squeezes nothing of and onnxruntime every 1 (``_squeeze_exact``); a Concat only of
    # inputs sized alike: onnx sizes [B, T] ++ [0, 1] as [?, 1], onnxruntime
    # skips the empty one, [B, T]; ``_concat_sized_alike``)
    "Transpose", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Concat", "Expand", "Gather",
    "Slice", "Pad",
    # shapes as values: exact where their input's sizes are (a Reshape to a shape computed
    # from them is sized by the values inference propagated)
    "Shape", "Size", "ConstantOfShape",
})


def _pool_exact(graph: Graph, node: Node) -> bool:
    """Whether onnx sizes a pool as onnxruntime does: with ceil_mode only where its sizes are
    the spec's (``_ceil_windows_alike``), not with SAME padding and a dilation (onnxruntime
    sizes the padding by the undilated kernel: a kernel of 3 dilated by 2 over 5 makes 3
    columns, onnx infers 5), and not with a pad as large as the kernel (which onnxruntime
    refuses)."""
    attrs = node.op.attrs
    if attrs.get("ceil_mode", 0) and not _ceil_windows_alike(graph, node):
        return False
    dilations = attrs.get("dilations") or ()
    if attrs.get("auto_pad", "NOTSET") in ("SAME_UPPER", "SAME_LOWER") and any(
        d != 1 for d in dilations
    ):
        return False
    kernel = attrs.get("kernel_shape") or ()
    pads = attrs.get("pads") or ()
    return all(p < kernel[k % len(kernel)] for k, p in enumerate(pads)) if kernel else not pads


def _ceil_pool_size(
    size: int, kernel: int, stride: int, dilation: int, begin: int, end: int
) -> int:
    """A pooled size with ceil_mode, as the spec and onnxruntime make it: the windows
    rounded up, less a last one that would start in the end padding (onnx's inference keeps
    it: [B, 1, 5] pooled by 2 with pads of 1 has 3 columns, onnx infers 4)."""
    count = -(-(size + begin + end - dilation * (kernel - 1) - 1) // stride) + 1
    return count - 1 if (count - 1) * stride >= size + begin else count


def _ceil_windows_alike(graph: Graph, node: Node) -> bool:
    """Whether a pool with ceil_mode and explicit pads has the spec's spatial sizes
    (``_ceil_pool_size``), as ``ceil_pool_infos`` makes them where onnx infers others."""
    x = graph.tensors.get(node.inputs[0]) if node.inputs else None
    y = graph.tensors.get(node.outputs[0]) if node.outputs else None
    spec = _ceil_pool_spatial(node.op.attrs, x)
    if spec is None or y is None or y.shape is None or len(y.shape) != len(spec) + 2:
        return False
    return tuple(y.shape[2:]) == spec


#: The pools with ceil_mode (``ceil_pool_infos``).
CEIL_POOL_OPS = frozenset({"MaxPool", "AveragePool", "LpPool"})


def _ceil_pool_spatial(attrs: Mapping[str, Any], x: TensorInfo | None) -> tuple[int, ...] | None:
    """The spatial sizes the spec gives a pool with ceil_mode and explicit pads of ``x``
    (``_ceil_pool_size``); None unless they are known (x's spatial sizes static)."""
    kernel = tuple(attrs.get("kernel_shape") or ())
    if (
        not attrs.get("ceil_mode")
        or attrs.get("auto_pad", "NOTSET") != "NOTSET"
        or x is None
        or x.shape is None
        or not kernel
        or len(x.shape) != len(kernel) + 2
    ):
        return None
    sizes = [n for n in x.shape[2:] if type(n) is int]
    if len(sizes) != len(kernel):
        return None
    rank = len(kernel)
    strides = tuple(attrs.get("strides") or (1,) * rank)
    dilations = tuple(attrs.get("dilations") or (1,) * rank)
    pads = tuple(attrs.get("pads") or (0,) * (2 * rank))
    if len(strides) != rank or len(dilations) != rank or len(pads) != 2 * rank:
        return None
    if any(s < 1 for s in strides) or any(d < 1 for d in dilations):
        return None
    return tuple(
        _ceil_pool_size(n, kernel[i], strides[i], dilations[i], pads[i], pads[rank + i])
        for i, n in enumerate(sizes)
    )


def ceil_pool_infos(
    graph: Graph, op_type: str, domain: str, attrs: Mapping[str, Any],
    inputs: Sequence[str], outputs: Sequence[str],
) -> list[TensorInfo]:
    """A pool's output infos with ceil_mode sized as the spec and onnxruntime size them,
    where onnx's inference keeps a last window that would start in the end padding ([B, 1, 5]
    pooled by 2 with pads of 1: onnx 4 columns, the spec 3); the infos that change (for the
    importer and ``infer_proto`` to set). MaxPool's indices are shaped as its output."""
    if domain or op_type not in CEIL_POOL_OPS or not attrs.get("ceil_mode") or not inputs:
        return []
    spec = _ceil_pool_spatial(attrs, graph.tensors.get(inputs[0]))
    if spec is None:
        return []
    changed = []
    for name in outputs:
        info = graph.tensors.get(name) if name else None
        if info is None or info.data is not None or info.shape is None:
            continue
        if len(info.shape) != len(spec) + 2 or tuple(info.shape[2:]) == spec:
            continue
        changed.append(info.replace(shape=(*info.shape[:2], *spec)))
    return changed


def _slope_within(graph: Graph, node: Node) -> bool:
    """Whether a PRelu's slope broadcasts to X without growing it: right-aligned, each of its
    sizes 1 or X's own static size there."""
    x, slope = (graph.tensors.get(name) for name in node.inputs[:2])
    if x is None or slope is None or x.shape is None or slope.shape is None:
        return False
    if len(slope.shape) > len(x.shape):
        return False
    tail = x.shape[len(x.shape) - len(slope.shape):]
    return all(s == 1 or (type(s) is int and s == d) for s, d in zip(slope.shape, tail))


def _resize_exact(graph: Graph, node: Node) -> bool:
    """Whether onnx sizes a Resize (or Upsample) as onnxruntime does: by constant ``sizes``,
    or by constant scales where each resized size is static and floor(size * scale) is the
    same in float32 (onnxruntime's) and in double (onnx's: 10 * 0.7 is 7 in float32, 6 in
    double), or the scale is 1. Not with keep_aspect_ratio_policy (Resize-18)."""
    attrs = node.op.attrs
    if attrs.get("keep_aspect_ratio_policy", "stretch") != "stretch":
        return False
    x = graph.tensors.get(node.inputs[0]) if node.inputs else None
    if x is None or x.shape is None:
        return False
    version = node.op.since_version
    if node.op_type == "Upsample" and version < 9:
        scales = attrs.get("scales")
    elif node.op_type == "Upsample" or version < 11:
        scales = graph.constant(node.input(1)) if node.input(1) else None
    else:
        sizes = graph.constant(node.input(3)) if node.input(3) else None
        if sizes is not None and sizes.size:
            return True
        scales = graph.constant(node.input(2)) if node.input(2) else None
    if scales is None:
        return False
    values = np.asarray(scales, dtype=np.float32).reshape(-1).tolist()
    axes = attrs.get("axes") or range(len(x.shape))
    if len(values) != len(axes):
        return False
    for axis, scale in zip(axes, values):
        if scale == 1.0:
            continue
        size = x.shape[axis % len(x.shape)] if -len(x.shape) <= axis < len(x.shape) else None
        if type(size) is not int:
            return False
        single = np.floor(np.float32(size) * np.float32(scale))
        if int(single) != math.floor(size * scale):  # ``scale``: the float32's exact value
            return False
    return True


def _einsum_exact(graph: Graph, node: Node) -> bool:
    """Whether onnx sizes an Einsum as onnxruntime does: onnx gives a label the size of the
    first operand that has it, onnxruntime broadcasts a 1 against another size (ij,ij->ij of
    [N, 1] and [1, 3]: onnx [N, 1], onnxruntime [N, 3]). Exact where no explicit label is 1
    in one operand and not in another (labels under ``...`` broadcast alike in both)."""
    equation = node.op.attrs.get("equation")
    if not isinstance(equation, str):
        return False
    terms = equation.replace(" ", "").split("->")[0].split(",")
    if len(terms) != len(node.inputs):
        return False
    sizes: dict[str, set[Any]] = {}
    for term, name in zip(terms, node.inputs):
        info = graph.tensors.get(name)
        if info is None or info.shape is None:
            return False
        head, _, tail = term.partition("...")
        shape = info.shape
        if len(head) + len(tail) > len(shape):
            return False
        dims = list(zip(head, shape[: len(head)]))
        dims += list(zip(tail, shape[len(shape) - len(tail):])) if tail else []
        for label, size in dims:
            sizes.setdefault(label, set()).add(size)
    return all(not (1 in found and len(found) > 1) for found in sizes.values())


@dataclass
class PartialShapes:
    """One folding sweep's shape vectors known in part, by tensor name (``values``), and
    whether each tensor asked about has static sizes onnxruntime may not give it
    (``unsure``), or even another rank (``rank_unsure``)."""

    declared: Collection[str]  # the graph's ``declared_sizes``
    values: dict[str, np.ndarray] = field(default_factory=dict)
    _unsure: dict[str, bool] = field(default_factory=dict)
    _rank_unsure: dict[str, bool] = field(default_factory=dict)
    _vector_unsure: dict[str, bool] = field(default_factory=dict)
    # made when first asked (of a Concat its rules refuse): no cost to a sweep that never asks
    _session_rank_unsure: dict[str, bool] | None = None
    # whether a node or a declared output that nodes read may give another rank: else no
    # tensor's is asked
    _ranks_diverge: bool | None = None

    def unsure(self, graph: Graph, name: str) -> bool:
        """Whether the sizes inference gives ``name`` may differ from the tensor's at run time:
        a graph output whose shape the model's declaration added to (which nothing checks at
        run time: onnxruntime warns and goes on), or a tensor a node computes unless the
        node's op is in ``SHAPE_EXACT_OPS`` and every tensor it reads is sure. Graph inputs
        (whose sizes onnxruntime checks) and constants are sure. Each tensor is asked once a
        sweep. (Unsure too: whatever is computed from such a tensor, its values included,
        as a Reshape's sizes are from a Shape of it; ``vector_unsure`` asks less.)"""
        return self._walk(graph, name, self._unsure, _shape_exact)

    def vector_unsure(self, graph: Graph, name: str) -> bool:
        """Whether the sizes of ``name`` itself may differ from the tensor's at run time,
        whatever its values: as ``unsure``, but a Shape's vector is sure where its input's
        rank is (its length is that rank), a Size's scalar always, and so are the ops that
        only move such elements (``PARTIAL_OPS``, their other inputs constant) or compute
        elementwise with them (``ELEMENTWISE_OPS``: a size scaled and floored). What a
        fallback segment declares of an input: a Concat of two elements of a Shape of an
        unsure tensor and two constants was declared of unknown length, and onnxruntime's
        Resize refused it as its ``sizes`` ("Number of elements of input 'sizes' (0) must be
        same as rank of input 'X' (4)": a helper's torchvision exports, dynamic sizes)."""
        return self._walk(graph, name, self._vector_unsure, _shape_exact, self._moved)

    def _moved(self, graph: Graph, producer: Node) -> bool | None:
        """``vector_unsure``'s answer for a producer's outputs where it is not the walk's:
        by the input's rank for Shape, sure for Size, ``unsure``'s for what is not a
        ``PARTIAL_OPS`` node of constant parameters nor a descriptor; None: as its inputs
        are."""
        op_type = producer.op_type
        if not producer.is_onnx:  # a descriptor, sized by its inputs (checked at run time)
            return None
        if not producer.op.domain and producer.inputs:
            if op_type == "Shape":
                return self.rank_unsure(graph, producer.inputs[0])
            if op_type == "Size":
                return False
            if op_type in ELEMENTWISE_OPS:
                return None
            data_port = PARTIAL_OPS.get(op_type, -1)
            if data_port != -1 and all(
                not name or graph.is_constant(name)
                for port, name in enumerate(producer.inputs)
                if data_port is not None and port != data_port
            ):
                return None
        made = next((out for out in producer.outputs if out), "")
        return self.unsure(graph, made) if made else True

    def rank_unsure(self, graph: Graph, name: str) -> bool:
        """Whether the rank inference gives ``name`` may differ from the tensor's at run time:
        as ``unsure``, but only the nodes ``_RANK_DIVERGENT_WHEN`` names stop the trust (and
        declared graph outputs, whose rank the declaration may have given)."""
        if self._ranks_diverge is None:
            self._ranks_diverge = any(
                name in graph.tensors and graph.consumers(name) for name in self.declared
            ) or any(
                node.op_type in _RANK_DIVERGENT_WHEN and not _rank_exact(graph, node)
                for node in graph.nodes
            )
        return self._ranks_diverge and self._walk(graph, name, self._rank_unsure, _rank_exact)

    def session_rank_unsure(self, graph: Graph, name: str) -> bool:
        """Whether onnxruntime's session, loading the model, may see another rank for
        ``name`` than inference gives it: as ``rank_unsure``, but only through the nodes
        ``_SESSION_RANK_OPS`` names (control flow, whose outputs it types by what their
        subgraphs make). Elsewhere it infers as onnx does at load (a declared output by its
        declaration, a PRelu's output as X), and refuses a Concat whose inputs' ranks differ
        there, whatever its kernels would make."""
        if not self.rank_unsure(graph, name):
            return False
        if self._session_rank_unsure is None:
            self._session_rank_unsure = {}
        return self._walk(graph, name, self._session_rank_unsure, _session_rank_exact, declared=())

    def _walk(
        self,
        graph: Graph,
        name: str,
        known: dict[str, bool],
        exact: Callable[[Graph, Node], bool],
        decided: Callable[[Graph, Node], bool | None] | None = None,
        declared: Collection[str] | None = None,
    ) -> bool:
        """``known[name]``, found walking producers back; ``decided`` answers for some
        producers' outputs by itself (None: walk on); ``declared``: the tensors unsure by
        themselves (the graph's ``declared_sizes`` where None)."""
        if name in known:
            return known[name]
        producer_of = graph.producer
        declared = self.declared if declared is None else declared
        # depth first, without recursion: chains are thousands of nodes long. A tensor whose
        # inputs are pushed is pushed back below them with its producer, (tensor, producer),
        # so its producer is looked up and judged once, not again when they are known.
        stack: list[Any] = [name]
        while stack:
            top = stack.pop()
            if type(top) is tuple:  # its producer's inputs are known now
                made, producer = top
                known[made] = _any_known(known, producer.inputs)
                continue
            if top in known:
                continue
            producer = producer_of(top)
            if top in declared or (producer is not None and not exact(graph, producer)):
                known[top] = True
                continue
            if producer is None:
                known[top] = False
                continue
            answer = None if decided is None else decided(graph, producer)
            if answer is not None:
                known[top] = answer
                continue
            pending = [i for i in producer.inputs if i and i not in known]
            if pending:
                stack.append((top, producer))
                stack.extend(pending)
                continue
            known[top] = _any_known(known, producer.inputs)
        return known[name]

    def cause(self, graph: Graph, name: str) -> str:
        """What makes ``name`` unsure, for messages: the first node upstream whose sizes
        onnxruntime may make otherwise, or a graph output sized by its declaration ("" when
        ``name`` is sure)."""
        while self.unsure(graph, name):
            producer = graph.producer(name)
            if name in self.declared or producer is None:
                return (f"graph output {name!r}, sized by the model's declaration (which "
                        "nothing checks at run time)")
            if not _shape_exact(graph, producer):
                return f"{producer.label}, which onnxruntime may size otherwise at run time"
            name = next(i for i in producer.inputs if i and self.unsure(graph, i))
        return ""


def _any_known(known: Mapping[str, bool], inputs: Sequence[str]) -> bool:
    """Whether ``known`` says True of a named input (a loop: a generator's items are calls,
    and a walk asks this of every producer it passes)."""
    for name in inputs:
        if name and known[name]:
            return True
    return False


def _shape_exact(graph: Graph, node: Node) -> bool:
    """Whether onnx's inference sizes ``node``'s outputs as onnxruntime does
    (``SHAPE_EXACT_OPS``, on the condition ``_EXACT_WHEN`` gives for some). A node lowering
    made (a logical or DirectML op) is sized by its descriptor, whose input sizes are checked
    at run time: exact."""
    op = node.op  # read once: asked of every node a walk (``PartialShapes``) passes
    if not isinstance(op, OnnxOp):
        return True
    op_type = op.op_type
    if op.domain or op_type not in SHAPE_EXACT_OPS:
        return False
    condition = _EXACT_WHEN.get(op_type)
    return condition is None or condition(graph, node)


def _slice_exact(graph: Graph, node: Node) -> bool:
    """A Slice onnxruntime reads as ONNX does (no ``_slice_divergence``)."""
    return canonical.is_canonical(node.op) and not _slice_divergence(graph, node)


def _squeeze_exact(graph: Graph, node: Node) -> bool:
    """A Squeeze with axes named; or without, of a static input (onnx squeezes its size-1
    axes, as onnxruntime does); or by an empty list, of a static input with no axis of size
    1 (onnx squeezes nothing for an empty list, onnxruntime every size-1 axis)."""
    if node.op.since_version < 13:
        given = node.op.attrs.get("axes")
        listed = given is not None
    else:
        listed = len(node.inputs) > 1 and bool(node.inputs[1])
        given = graph.constant(node.input(1)) if listed else None
        if listed and given is None:  # axes known at run time only
            return False
    if given is not None and len(given) > 0:
        return True
    info = graph.tensors.get(node.inputs[0]) if node.inputs else None
    shape = info.static_shape if info is not None else None
    return shape is not None and not (listed and 1 in shape)


def _recurrence_exact(graph: Graph, node: Node) -> bool:
    """An LSTM, GRU or RNN with the sequence first (onnxruntime refuses layout 1)."""
    return not node.op.attrs.get("layout", 0)


def _conv_transpose_exact(graph: Graph, node: Node) -> bool:
    """A ConvTranspose with explicit pads (SAME with a dilation, as for pools) and no
    output_shape: to one smaller than the input, onnx gives up on the spatial dims ([N, C]),
    onnxruntime crops."""
    attrs = node.op.attrs
    return attrs.get("auto_pad", "NOTSET") in ("NOTSET", "VALID") and not attrs.get(
        "output_shape"
    )


def _concat_sized_alike(graph: Graph, node: Node) -> bool:
    """Whether onnxruntime sizes a Concat as onnx does: onnxruntime skips an empty input, while
    onnx sizes the dims off the axis by every input, so no input may be empty, statically
    (a 0 size) or at run time where it alone gives a dim its size ([T, S] ++ [B, 3] on axis 0:
    onnx infers [?, 3], onnxruntime makes [T, S] when B is 0). Off the axis, a dim is static
    in every input alike, or in none."""
    shapes = []
    for name in node.inputs:
        info = graph.tensors.get(name)
        if info is None or info.shape is None or 0 in info.shape:
            return False
        shapes.append(info.shape)
    axis = node.op.attrs.get("axis")
    rank = len(shapes[0]) if shapes else 0
    if not isinstance(axis, int) or not -rank <= axis < rank:
        return False
    for k in range(rank):
        if k == axis % rank:
            continue
        sizes = {shape[k] if k < len(shape) else None for shape in shapes}
        if len(sizes) > 1 and any(type(size) is int for size in sizes):
            return False
    return True


#: The conditions on which some ops of ``SHAPE_EXACT_OPS`` are exact (``_shape_exact``).
_EXACT_WHEN: Mapping[str, Callable[[Graph, Node], bool]] = MappingProxyType({
    "MaxPool": _pool_exact,
    "AveragePool": _pool_exact,
    "LpPool": _pool_exact,
    "LSTM": _recurrence_exact,
    "GRU": _recurrence_exact,
    "RNN": _recurrence_exact,
    "ConvTranspose": _conv_transpose_exact,
    "Resize": _resize_exact,
    "Upsample": _resize_exact,
    "Einsum": _einsum_exact,
    "PRelu": _slope_within,
    "Slice": _slice_exact,
    "Concat": _concat_sized_alike,
    "Squeeze": _squeeze_exact,
})


def _prelu_grows_rank(graph: Graph, node: Node) -> bool:
    """A PRelu whose slope may have more axes than X: onnx sizes the output as X, onnxruntime
    broadcasts both ways."""
    x, slope = (graph.tensors.get(name) for name in node.inputs[:2])
    return x is None or slope is None or x.rank is None or slope.rank is None or (
        slope.rank > x.rank
    )


#: The ops after which onnx's inference may give a tensor another rank than onnxruntime's
#: kernel makes, on the condition each maps to (``PartialShapes.rank_unsure``). A
#: ConvTranspose to an output_shape smaller than its input: onnx gives up on the spatial dims
#: ([N, C]), onnxruntime crops ([N, C, 3]); a Squeeze without named axes (onnx squeezes
#: nothing for an empty list, onnxruntime every size-1 axis, by sizes onnx may have wrong);
#: a PRelu whose slope has more axes than X. Every other op makes its rank from its inputs'
#: ranks and its attributes alike in both.
_RANK_DIVERGENT_WHEN: Mapping[str, Callable[[Graph, Node], bool]] = MappingProxyType({
    "ConvTranspose": lambda graph, node: bool(node.op.attrs.get("output_shape")),
    "Squeeze": lambda graph, node: not _squeeze_exact(graph, node),
    "PRelu": _prelu_grows_rank,
    # control flow: onnx takes its outputs' types from its subgraphs' declarations, which
    # onnxruntime merges leniently with what they make (an If branch declaring [2, 6] that
    # makes [1, 2, 6] runs, with a warning); a Slice on axis -1 of it was made axis 1
    "If": lambda graph, node: True,
    "Loop": lambda graph, node: True,
    "Scan": lambda graph, node: True,
})


#: The ops whose outputs onnxruntime's session may type with another rank than onnx's
#: inference when it loads a model (``PartialShapes.session_rank_unsure``): control flow,
#: whose declared subgraph outputs it merges leniently with what they make (an If branch
#: declaring [2, 3] that makes [1, 2, 3] runs, and its output joins a [1, 2, 3] on axis 2).
_SESSION_RANK_OPS = frozenset({"If", "Loop", "Scan"})


def _session_rank_exact(graph: Graph, node: Node) -> bool:
    """Whether onnxruntime's session types ``node``'s outputs with onnx's ranks at load."""
    op = node.op
    return not isinstance(op, OnnxOp) or bool(op.domain) or op.op_type not in _SESSION_RANK_OPS


def _rank_exact(graph: Graph, node: Node) -> bool:
    """Whether onnx's inference gives ``node``'s outputs the ranks onnxruntime makes."""
    op = node.op
    if not isinstance(op, OnnxOp) or op.domain:
        return True
    condition = _RANK_DIVERGENT_WHEN.get(op.op_type)
    return condition is None or not condition(graph, node)


def _partial_values(
    graph: Graph,
    op_type: str,
    version: int,
    attrs: Mapping[str, Any],
    inputs: Sequence[str],
    partial: PartialShapes,
) -> np.ndarray | None:
    """What a ``PARTIAL_OPS`` node makes of shape vectors known in part: its int64 output with
    each element not known as ``UNKNOWN_DIM``, or None where the node reads none (or reads
    anything else that is not constant, or its kernel declines). A Shape of a tensor whose
    rank is known gives one, where onnxruntime gives it the sizes inference does
    (``PartialShapes.unsure``).

    So ``pos_embedding[:, :x.shape[1]]`` of an ``x`` of shape [batch, 197, 768] folds, as
    the static dimension it reads is known; the batch's dimension stays a run-time value."""
    data_port = PARTIAL_OPS[op_type]  # ``partial_fold`` asks only of those
    kernel = shape_kernels.kernel_for(op_type, "", version)
    if kernel is None or not inputs:
        return None
    if op_type == "Shape":
        info = graph.tensors.get(inputs[0])
        if (
            info is None
            or info.shape is None
            or info.data is not None
            or partial.unsure(graph, inputs[0])
        ):
            return None
        dims = info.shape[shape_kernels.shape_range(len(info.shape), attrs)]
        value = np.array([d if type(d) is int else UNKNOWN_DIM for d in dims], dtype=_INT64)
    else:
        args: list[np.ndarray | None] = []
        reads = False
        for port, name in enumerate(inputs):
            known = (
                partial.values.get(name)
                if name and (data_port is None or port == data_port)
                else None
            )
            if known is not None:
                reads = True
                args.append(known)
            elif not name:
                args.append(None)
            elif (constant := graph.constant(name)) is not None:
                args.append(constant)
            else:
                return None
        results = kernel.fn(args, attrs, version) if reads else None
        if results is None or len(results) != 1 or results[0].dtype != _INT64:
            return None
        value = results[0]
    return frozen_array(value)


def partial_fold(
    graph: Graph,
    op_type: str,
    domain: str,
    version: int,
    attrs: Mapping[str, Any],
    inputs: Sequence[str],
    outputs: Sequence[str],
    partial: PartialShapes,
) -> dict[str, np.ndarray] | None:
    """A node's output by ``_partial_values`` where every element of it is known, for folding
    to check and adopt as it adopts a kernel's; else None, and a result known in part is
    kept in ``partial`` for the nodes reading it. Import and ``fold_constants`` both ask."""
    if domain or op_type not in PARTIAL_OPS or len(outputs) != 1 or not outputs[0]:
        return None
    if op_type != "Shape":  # asked of every node that did not fold: most read no partial
        for name in inputs:  # a loop, not any(...) over a generator
            if name in partial.values:
                break
        else:
            return None
    value = _partial_values(graph, op_type, version, attrs, inputs, partial)
    if value is None:
        return None
    if UNKNOWN_DIM in value.ravel().tolist():  # a few elements: a list beats a reduction
        partial.values[outputs[0]] = value
        return None
    return {outputs[0]: value}


def kernel_inputs(
    graph: Graph, op_type: str, inputs: Sequence[str], trust: PartialShapes | None = None
) -> list[np.ndarray | None] | None:
    """A kernel's arguments for an ``op_type`` node reading ``inputs``: constants' data, None
    for an omitted input, a ``shape_only_value`` for Shape/Size's data; None when an input is
    not known (``input_available`` and ``_feeds`` in one pass: import asks for every node)."""
    tensors = graph.tensors
    args: list[np.ndarray | None] = []
    for port, name in enumerate(inputs):
        if not name:
            args.append(None)
            continue
        info = tensors.get(name)
        if info is not None and info.data is not None:
            args.append(info.data)
        elif input_available(graph, op_type, port, name, trust):
            args.append(shape_only_value(tensors[name]))
        else:
            return None
    return args


def _run_reference(
    graph: Graph, nodes: list[Node], values: Mapping[str, np.ndarray]
) -> dict[str, np.ndarray]:
    """The nodes' outputs by ``onnx.reference``: constants and ``values`` feed them, and the
    input of a Shape/Size only lends its static shape. One node goes through a cached
    evaluator of its form; several (or a node whose implementation needs input types) run as
    a model extracted from the graph."""
    if len(nodes) == 1:
        results = _run_single(graph, nodes[0], _feeds(graph, nodes[0].inputs, values))
        if results is not None:
            return results
    sub = graph.extract(node.id for node in nodes)
    feeds = _feeds(graph, sub.inputs, values)
    from onnx.reference import ReferenceEvaluator

    outputs = ReferenceEvaluator(
        to_onnx(sub, value_info=False), new_ops=spec_ops(graph.opset_imports.get("", 1))
    ).run(None, feeds)
    return {
        name: np.asarray(result) if isinstance(result, np.generic) else result
        for name, result in zip(sub.outputs, outputs)
    }


def _feeds(
    graph: Graph, names: Iterable[str], values: Mapping[str, np.ndarray]
) -> dict[str, np.ndarray]:
    feeds: dict[str, np.ndarray] = {}
    for name in names:
        if not name or name in feeds:
            continue
        data = graph.constant(name)
        if data is None:
            data = values.get(name)
        if data is None:  # the input of a Shape/Size: only its static shape is read
            data = shape_only_value(graph.tensors[name])
        feeds[name] = data
    return feeds


#: ReferenceEvaluators of single nodes by (opsets, node proto with positional tensor names):
#: exporters repeat the same few shape-computing nodes (Gather axis 0, Unsqueeze, Cast...).
_EVALUATORS: dict[tuple[Any, ...], ReferenceEvaluator] = {}
_EVALUATOR_CACHE_SIZE = 4096


def _run_single(
    graph: Graph, node: Node, feeds: Mapping[str, np.ndarray]
) -> dict[str, np.ndarray] | None:
    """One node through a cached evaluator; None when its implementation depends on input
    types, which only a typed model gives (``onnx.reference``'s RuntimeContextError)."""
    proto, extra = node_proto(graph, node, set())
    form = onnx.NodeProto()
    form.CopyFrom(proto)
    form.name = ""
    del form.input[:], form.output[:]
    form.input.extend(f"i{k}" if name else "" for k, name in enumerate(proto.input))
    form.output.extend(f"o{k}" if name else "" for k, name in enumerate(proto.output))
    opsets = tuple(sorted(graph.opset_imports.items()))
    key = (opsets, form.SerializeToString())
    evaluator = _EVALUATORS.get(key)
    if evaluator is None:
        from onnx.reference import ReferenceEvaluator, op_run

        try:
            # a node's evaluator runs the newest version of its op whatever ``opsets`` say:
            # an older op's meaning replaces the reference's where they differ
            evaluator = ReferenceEvaluator(
                form, opsets=dict(opsets), new_ops=spec_ops(graph.opset_imports.get("", 1))
            )
        except op_run.RuntimeContextError:
            return None
        # of a NodeProto, onnx takes the opsets as {its domain: 1} (ai.onnx's newest), which
        # its ops read as they run (``run_params``, this same dict): a LabelEncoder-4 of
        # ai.onnx.ml 4 compared its float keys bit by bit, as LabelEncoder-2 does, and
        # folded -0 to the default where its key 0 maps it (onnxruntime, onnx.reference)
        evaluator.opsets_.update(opsets)
        if len(_EVALUATORS) >= _EVALUATOR_CACHE_SIZE:
            _EVALUATORS.clear()
        _EVALUATORS[key] = evaluator
    positional = {
        f"i{k}": extra[name] if name in extra else feeds[name]
        for k, name in enumerate(proto.input)
        if name
    }
    results = evaluator.run(None, positional)
    named = [name for name in proto.output if name]
    return {
        name: np.asarray(result) if isinstance(result, np.generic) else result
        for name, result in zip(named, results)
    }


def _growth_budget(tensors: Mapping[str, TensorInfo], inputs: Iterable[str]) -> int:
    """The bytes of constant data a fold may add: ``FOLD_GROWTH_LIMIT_BYTES`` more than its
    constant inputs hold."""
    budget = FOLD_GROWTH_LIMIT_BYTES
    for name in inputs:
        data = tensors[name].data if name and name in tensors else None
        if data is not None:
            budget += data.nbytes
    return budget


def growth_rejection(graph: Graph, inputs: Sequence[str], outputs: Sequence[str]) -> str:
    """Why a node is not evaluated to fold it ("" when it may be): the sizes inferred for
    its outputs exceed ``EVALUATION_LIMIT_BYTES`` and the growth limit, so ``rejection``
    would refuse the result. Evaluated first, a ConstantOfShape of [2^28] allocated 1 GB, and
    one of [10^6, 10^6] failed the import with a MemoryError."""
    tensors = graph.tensors
    for out in outputs:
        info = tensors.get(out) if out else None
        if info is None or info.dtype is None or info.static_shape is None:
            continue
        why = size_rejection(graph, inputs, out, info.static_shape, info.dtype)
        if why:
            return why
    return ""


def size_rejection(
    graph: Graph, inputs: Sequence[str], out: str, shape: Sequence[int], dtype: Any
) -> str:
    """``growth_rejection`` of one output of ``shape`` and ``dtype``, however known (a
    ConstantOfShape's from its shape input, where inference gave no size)."""
    nbytes = math.prod(shape) * np.dtype(dtype).itemsize
    if nbytes > EVALUATION_LIMIT_BYTES and nbytes > _growth_budget(graph.tensors, inputs):
        return (
            f"output {out!r} would add {nbytes} bytes of constant data, too many to "
            f"compute to find out (limit {EVALUATION_LIMIT_BYTES})"
        )
    return ""


def rejection(
    graph: Graph, inputs: Iterable[str], outputs: Iterable[str], values: Mapping[str, np.ndarray]
) -> str:
    """Why a node computed from ``inputs`` to ``values`` must not be folded ("" when it may
    be): its results disagree with the inferred types, or would grow the model too much."""
    tensors = graph.tensors  # loops, not generators: import asks for every folded node
    # the budget is at least the growth limit: summed only for a value above it
    budget: int | None = None
    for out in outputs:
        if not out:
            continue
        value = values[out]
        if not isinstance(value, np.ndarray):
            return f"output {out!r} is a {type(value).__name__}, not a tensor"
        info = tensors.get(out)  # None: nothing inferred to disagree with
        if info is not None and info.dtype is not None and value.dtype != info.dtype:
            return (
                f"folding computed output {out!r} with dtype {value.dtype}; "
                f"inference says {info.dtype}"
            )
        if info is not None and info.shape is not None and not shape_matches(
            info.shape, value.shape
        ):
            return (
                f"folding computed output {out!r} with shape {list(value.shape)}; "
                f"inference says {list(info.shape)}"
            )
        if value.nbytes > FOLD_GROWTH_LIMIT_BYTES:
            if budget is None:
                budget = _growth_budget(tensors, inputs)
            if value.nbytes > budget:
                return (
                    f"output {out!r} would add {value.nbytes} bytes of constant data "
                    f"(limit {budget})"
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
        op = node.op  # a Slice or Pad alone has any (no call for the other nodes, most)
        if type(op) is not OnnxOp or op.op_type in canonical.PARAMETER_PORTS:
            params = runtime_parameters(graph, node)
        else:
            params = {}
        if node.notes:
            node.notes[:] = [n for n in node.notes if not n.startswith(RUNTIME_PARAMETER)]
        if not params:
            continue
        for field_name, reason in params.items():
            port = canonical.PARAMETER_PORTS[node.op_type][field_name]
            _note(
                node,
                RUNTIME_PARAMETER,
                f"{field_name} ({node.input(port)!r}) is not constant: {reason}",
            )
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
    if producer.op.holds_subgraphs:
        return f"{producer.label} is control flow, which runs on the fallback (never folded)"
    if producer.op_type in SHAPE_ONLY_OPS:
        info = graph.tensors.get(producer.inputs[0])
        if info is None or not info.is_static:
            shape = "unknown" if info is None or info.shape is None else list(info.shape)
            return f"depends on the shape of {producer.inputs[0]!r}, which is not static ({shape})"
        cause = PartialShapes(graph.declared_sizes).cause(graph, producer.inputs[0])
        if info.dtype is not None and cause:
            return (
                f"depends on the shape of {producer.inputs[0]!r}, which onnx infers as "
                f"{list(info.shape or ())} through {cause} (folding.SHAPE_EXACT_OPS)"
            )
    outputs = [o for o in producer.outputs if o in graph.outputs]
    if outputs and all(
        input_available(graph, producer.op_type, p, n) for p, n in enumerate(producer.inputs)
    ):
        return f"{producer.label} computes graph output {outputs[0]!r}, which is never folded"
    return ""
