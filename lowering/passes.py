"""The lowering passes and the manager that runs them.

fold -> lower -> legalize -> simplify -> verify. Each pass is small and named; after each one
the manager checks the IR invariants and the pass's own promise (``ensures``), so a broken
invariant names the pass that broke it and the passes that ran before it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from dmlgraph import canonical, folding
from dmlgraph.dml.binding import unbound_tensors
from dmlgraph.dml.operators import OperatorDesc
from dmlgraph.errors import DmlValidationError, GraphInvariantError
from dmlgraph.ir import Node, NodeId, OnnxOp, Shape, TensorInfo, split_inputs
from dmlgraph.ort_pad import PadDivergenceKind, pad_divergences
from dmlgraph.subgraphs import (
    LOWERED_WHEN_RUN,
    held_note,
    loop_divergence,
    lowered_when_run,
)
from lowering import concat, pad, slice  # noqa: F401  (register the rules)
from lowering.emit import CannotLower, Plan, Step, plan_join, plan_pad, plan_slice
from lowering.logical import LogicalJoin, LogicalPad, LogicalSlice
from lowering.registry import RULES_BY_OP, Rewriter, Unlowerable, find_rule
from lowering.report import LoweredGraph, Status

LOGICAL = (LogicalSlice, LogicalJoin, LogicalPad)


def _static_shapes(graph: LoweredGraph, node: Node) -> tuple[tuple[int, ...], ...]:
    """A logical op's input shapes; the lowering rules made them static."""
    shapes = []
    for name in node.inputs:
        shape = graph.tensor(name).static_shape
        if shape is None:
            raise GraphInvariantError(
                f"{graph.describe(node)}: input {name!r} has no static shape"
            )
        shapes.append(shape)
    return tuple(shapes)


@dataclass
class Origin:
    """One node of the graph given to ``lower``, and what became of it."""

    node: Node
    status: Status | None = None
    notes: list[str] = field(default_factory=list)


@dataclass
class Context:
    """State the passes share: the origin of every node, by node id."""

    origins: dict[NodeId, Origin] = field(default_factory=dict)
    origin_of: dict[NodeId, NodeId] = field(default_factory=dict)
    #: node -> the other origins whose output it computes too (Simplify merged theirs into it)
    computes_for: dict[NodeId, set[NodeId]] = field(default_factory=dict)
    #: tensor -> the tensor that replaced it when its node was eliminated
    aliases: dict[str, str] = field(default_factory=dict)
    #: descriptors validated at the graph's level, by id (the values keep the ids alive)
    validated: dict[int, object] = field(default_factory=dict)
    #: the graph given to ``lower`` is as folding left it (``Graph.is_folded``)
    folded: bool = False
    #: check the IR invariants after every pass, and what a pass skips (``verify_each``)
    verify: bool = False

    def adopt(self, node: Node, origin: NodeId) -> None:
        self.origin_of[node.id] = origin

    def resolve(self, tensor: str) -> str:
        """What a tensor of the original graph is now called (eliminations chain)."""
        while tensor in self.aliases:
            tensor = self.aliases[tensor]
        return tensor


class Pass(ABC):
    name: str = ""

    @abstractmethod
    def run(self, graph: LoweredGraph, ctx: Context) -> None: ...

    def ensures(self, graph: LoweredGraph, ctx: Context) -> str:
        """What must hold after the pass; "" when it does."""
        return ""


class FoldConstants(Pass):
    """Fold what is computable from constants, as the importer does (``folding.fold``): a
    graph loaded without folding, built by hand or edited since may have some, and a Slice or
    Pad whose parameters become constant only now must also be brought to its canonical form
    (a Pad's pads spread over its ``axes``) before its rule reads them."""

    name = "fold"

    def run(self, graph: LoweredGraph, ctx: Context) -> None:
        if ctx.folded:  # the importer's folding reached its fixed point on this graph
            if ctx.verify:
                trust = folding.PartialShapes(graph.declared_sizes)
                left = [n.label for n in graph.nodes if folding.foldable(graph, n, trust)]
                if left:
                    raise GraphInvariantError(
                        f"the graph is marked folded, but these nodes fold: {left}")
            return
        removed = len(graph.removed)
        report = folding.fold(graph)
        # folding recorded them as the importer's, but their origins report them (below):
        # left there, the report listed each twice, once as "computed ... at import"
        del graph.removed[removed:]
        for node_id in report.folded_ids:
            self._gone(ctx, node_id, Status.FOLDED, "computed from constants before lowering")
        for node_id, record in report.dead.items():
            self._gone(ctx, node_id, Status(record.status), record.note)
        for node in graph.nodes:  # canonical now, as the importer leaves them
            ctx.origins[ctx.origin_of[node.id]].node = node

    @staticmethod
    def _gone(ctx: Context, node_id: NodeId, status: Status, note: str) -> None:
        origin = ctx.origins[ctx.origin_of.pop(node_id)]
        origin.status = status
        origin.notes[:] = [note]


class LowerOnnx(Pass):
    """Each ONNX node with a rule becomes logical ops, a constant or an alias; otherwise it
    stays ONNX with the reason."""

    name = "lower"

    def run(self, graph: LoweredGraph, ctx: Context) -> None:
        # asked only where a rule decides by sizes alone (``Rewriter.rely_on_sizes``)
        trust = folding.PartialShapes(graph.declared_sizes)
        aliases: dict[str, str] = {}  # eliminated node's output -> the tensor it passes on
        # each node as the sweep starts: it edits only the node it is at, and the readers of
        # a tensor it renames when it reaches them (``_renamed``)
        for node in graph.topological_order():
            if aliases and not aliases.keys().isdisjoint(node.inputs):  # (no call: most)
                node = _renamed(graph, node, aliases)
            origin = ctx.origins[ctx.origin_of[node.id]]
            op = node.op  # an OnnxOp (``_lower`` refused any other)
            # most op types have no rule: asked inline, no call for them
            rule = find_rule(graph, node) if (op.domain, op.op_type) in RULES_BY_OP else None
            if rule is None:
                origin.status = Status.FALLBACK
                # control flow's alone (``LOWERED_WHEN_RUN``; ``held_note`` of a node holding
                # subgraphs): no calls for the other nodes, most of a model's
                run_here = lowered_when_run(op) if op.op_type in LOWERED_WHEN_RUN else ()
                origin.notes.append(
                    f"no lowering rule: dmlgraph lowers Slice, Concat and Pad; {op.op_type} "
                    + ("runs on the backend's fallback" if not run_here else
                       "is run by the numpy backend itself, its subgraphs lowered as it runs "
                       "them (the onnxruntime backend runs it whole)")
                )
                held = held_note(op) if op.attrs.holds_subgraphs else ""
                if held:
                    origin.notes.append(held)
                # asked of control flow alone: the note of a Loop onnxruntime fails on (one
                # held that fails when it runs: noted where it runs, if it does)
                diverges = loop_divergence(
                    node.op, split_inputs(node)[0], held_at_run=False) if run_here else ""
                if diverges:
                    origin.notes.append(diverges)
                continue
            rw = Rewriter(graph, node, trust=trust)
            try:
                rule.fn(rw)
            except Unlowerable as exc:
                origin.status = Status.FALLBACK
                origin.notes.append(str(exc))
                continue
            origin.notes += rw.notes
            self._apply(graph, ctx, node, rw, aliases)

    @staticmethod
    def _apply(
        graph: LoweredGraph, ctx: Context, node: Node, rw: Rewriter, aliases: dict[str, str]
    ) -> None:
        origin_id = ctx.origin_of[node.id]
        origin = ctx.origins[origin_id]
        out = node.outputs[0]
        info = graph.tensor(out)
        if rw.constant is None and rw.alias is None and len(rw.ops) == 1 and not rw.temps:
            # one logical op in the node's place: the node keeps its id (and its place in
            # the order), with the op and the op's inputs
            ((op, inputs, output, shape),) = rw.ops
            assert output == out
            dtype = graph.tensor(node.inputs[0]).dtype
            graph.replace_node(node.id, op=op, inputs=inputs, notes=list(rw.notes))
            graph.set_tensor(info.replace(dtype=dtype, shape=shape))
            return
        del ctx.origin_of[node.id]
        graph.remove_node(node.id)
        if rw.constant is not None:
            origin.status = Status.FOLDED
            graph.set_tensor(TensorInfo(out, data=rw.constant))
            return
        if rw.alias is not None:
            origin.status = Status.ELIMINATED
            _rename_later(graph, aliases, out, rw.alias)
            ctx.aliases[out] = rw.alias
            return
        dtype = graph.tensor(node.inputs[0]).dtype
        for name, shape in rw.temps.items():
            graph.set_tensor(TensorInfo(name, dtype, shape))
        graph.set_tensor(info.replace(dtype=dtype, shape=rw.ops[-1][3]))
        for op, inputs, output, _ in rw.ops:
            new = graph.add_node(op, inputs, (output,), node.provenance, list(rw.notes))
            ctx.adopt(new, origin_id)


class Legalize(Pass):
    """Logical ops become DirectML descriptors valid at the target level, all of an original
    node or none: a node that cannot be lowered whole goes back to its ONNX form."""

    name = "legalize"

    def run(self, graph: LoweredGraph, ctx: Context) -> None:
        groups: dict[NodeId, list[Node]] = {}
        for node in graph.topological_order():
            op = node.op  # the exact type first: most nodes stay ONNX (an isinstance a call)
            if type(op) is not OnnxOp and isinstance(op, LOGICAL):
                groups.setdefault(ctx.origin_of[node.id], []).append(node)
        # A model repeats its blocks: a single op whose plan is one descriptor over its own
        # tensors is planned once per form (op, input shapes, dtype) and reused, and so is
        # the reason a form cannot be lowered.
        planned: dict[tuple[object, ...], Plan | str] = {}
        for origin_id, nodes in groups.items():
            dtype = np.dtype(graph.tensor(nodes[0].inputs[0]).dtype)
            form = None
            if len(nodes) == 1:
                node = nodes[0]
                form = (node.op, _static_shapes(graph, node), dtype)
                known = planned.get(form)
                if isinstance(known, str):
                    self._restore(graph, ctx, origin_id, nodes, known)
                    continue
                if known is not None:
                    self._commit(graph, ctx, origin_id, nodes, _replanned(known, node))
                    continue
            plan = Plan(graph.feature_level, dtype, graph.name_taken)
            try:
                for node in nodes:
                    shapes = _static_shapes(graph, node)
                    if isinstance(node.op, LogicalSlice):
                        plan_slice(plan, node.inputs[0], shapes[0], node.op, node.outputs[0])
                    elif isinstance(node.op, LogicalJoin):
                        plan_join(plan, node.inputs, shapes, node.op.axis, node.outputs[0])
                    else:
                        plan_pad(plan, node.inputs[0], shapes[0], node.op, node.outputs[0])
            except CannotLower as exc:
                if form is not None:
                    planned[form] = str(exc)
                self._restore(graph, ctx, origin_id, nodes, str(exc))
                continue
            if form is not None and _own_tensors_only(plan, nodes[0]):
                planned[form] = plan
            self._commit(graph, ctx, origin_id, nodes, plan)

    @staticmethod
    def _drop(graph: LoweredGraph, ctx: Context, nodes: list[Node]) -> None:
        """Remove an original node's logical ops, committed or abandoned alike."""
        for node in nodes:
            graph.remove_node(node.id)
            del ctx.origin_of[node.id]

    @staticmethod
    def _commit(
        graph: LoweredGraph, ctx: Context, origin_id: NodeId, nodes: list[Node], plan: Plan
    ) -> None:
        origin = ctx.origins[origin_id]
        origin.notes += plan.notes
        if origin.status is None:
            single = len(plan.steps) == 1 and not plan.constants
            origin.status = Status.LOWERED if single else Status.DECOMPOSED
        if len(nodes) == 1 and _own_tensors_only(plan, nodes[0]):
            (step,) = plan.steps  # the descriptor takes the logical op's place (and id)
            ctx.validated[id(step.desc)] = step.desc  # Plan.add validated it at the level
            graph.replace_node(nodes[0].id, op=step.desc, notes=list(origin.notes))
            return
        Legalize._drop(graph, ctx, nodes)
        for name, shape in plan.temps.items():
            graph.set_tensor(TensorInfo(name, plan.dtype, shape))
        for name, data in plan.constants.items():
            graph.set_tensor(TensorInfo(name, data=data))
        for step in plan.steps:
            ctx.validated[id(step.desc)] = step.desc  # Plan.add validated it at graph.feature_level
            new = graph.add_node(
                step.desc, step.inputs, (step.output,), nodes[0].provenance, list(origin.notes)
            )
            ctx.adopt(new, origin_id)

    @staticmethod
    def _restore(
        graph: LoweredGraph, ctx: Context, origin_id: NodeId, nodes: list[Node], reason: str
    ) -> None:
        origin = ctx.origins[origin_id]
        original = origin.node
        inputs = tuple(ctx.resolve(name) if name else name for name in original.inputs)
        op = original.op
        runs_as = _as_onnxruntime_runs_it(graph, original)
        if runs_as is not None:
            op, kept, _ = runs_as
            inputs = inputs[:kept]
        if len(nodes) == 1 and nodes[0].outputs == original.outputs:
            graph.replace_node(  # the ONNX node takes its logical op's place (and id) back
                nodes[0].id,
                op=op,
                inputs=inputs,
                provenance=original.provenance,
                notes=list(original.notes),
            )
        else:
            Legalize._drop(graph, ctx, nodes)
            new = graph.add_node(op, inputs, original.outputs, original.provenance, original.notes)
            ctx.adopt(new, origin_id)
        origin.status = Status.FALLBACK
        origin.notes.append(f"not lowered at {graph.feature_level.full_name}: {reason}")
        if runs_as is not None:
            origin.notes.append(runs_as[2])
            return  # its divergence stays: check's reference fails on the node
        for note in list(origin.notes):
            if note.startswith("divergence:"):
                origin.notes.remove(note)  # it stays ONNX: runtimes agree on their own graph

    def ensures(self, graph: LoweredGraph, ctx: Context) -> str:
        left = [n.label for n in graph.nodes if isinstance(n.op, LOGICAL)]
        return f"logical ops left after legalization: {left}" if left else ""


#: Why a Slice or Pad of a scalar left to the fallback runs as an Identity.
SCALAR_IDENTITY = (
    "runs on the fallback as an ONNX Identity: a Slice or Pad of a scalar (no axis, empty "
    "parameters) is its input, and onnxruntime fails on the node itself"
)
#: Why a reflect Pad of single elements left to the fallback runs in edge mode.
REFLECT_AS_EDGE = (
    "runs on the fallback as an edge Pad: it reflects single elements, which repeats them "
    "as the lowering does, and onnxruntime refuses the reflect Pad itself"
)


def _as_onnxruntime_runs_it(
    graph: LoweredGraph, node: Node
) -> tuple[OnnxOp, int, str] | None:
    """For a canonical Slice or Pad left ONNX whose divergence is onnxruntime refusing what
    the lowering computes: the op it runs as on the fallback, how many of its inputs that
    reads, and the note saying so (None for the node as it is). A Slice or Pad of a scalar
    is the Identity; a reflect Pad whose every padded axis holds one element after its crop
    is an edge Pad (``pad_divergences``: REFLECT_SIZE_1). Left as written where a level has
    no copy for the type (int8 at FL 1_0), they failed the run in onnxruntime."""
    if node.op_type not in ("Slice", "Pad") or not node.inputs:
        return None
    info = graph.tensors.get(node.inputs[0])
    if info is None or info.shape is None:
        return None
    opset = graph.opset_imports.get("", 1)
    if info.shape == ():
        version = canonical.since_version("Identity", "", opset, graph.describe(node))
        return OnnxOp("Identity", version), 1, SCALAR_IDENTITY
    if node.op_type != "Pad" or canonical.pad_mode(node.op) != "reflect":
        return None
    shape, pads = info.static_shape, graph.constant(node.input(1))
    axes = graph.constant(node.input(3)) if node.input(3) else None
    if shape is None or pads is None or (node.input(3) and axes is None):
        return None
    if axes is not None:  # as the Pad rule spreads them (``lowering.pad``)
        pads = canonical.expand_pads(pads.reshape(-1), axes % max(len(shape), 1), len(shape))
    widths = [int(p) for p in pads.reshape(-1)]
    found = {d.kind: d for d in pad_divergences(shape, "reflect", widths)}
    single = found.get(PadDivergenceKind.REFLECT_SIZE_1)
    padded = {a for a in range(len(shape)) if widths[a] > 0 or widths[a + len(shape)] > 0}
    if set(found) != {PadDivergenceKind.REFLECT_SIZE_1} or single is None:
        return None
    if padded != set(single.axes):
        return None
    attrs = {**node.op.attrs, "mode": "edge"}
    return OnnxOp("Pad", node.op.since_version, node.op.domain, attrs), len(node.inputs), (
        REFLECT_AS_EDGE)


def _own_tensors_only(plan: Plan, node: Node) -> bool:
    """Whether the plan is one descriptor from the node's inputs to its output, with no new
    tensor: it then holds for any node of the same form, whatever its tensors are called."""
    return (
        len(plan.steps) == 1
        and not plan.temps
        and not plan.constants
        and plan.steps[0].inputs == node.inputs
        and plan.steps[0].output == node.outputs[0]
    )


def _replanned(plan: Plan, node: Node) -> Plan:
    """``plan`` (``_own_tensors_only`` of a node of the same form) over ``node``'s tensors."""
    (step,) = plan.steps
    # built directly rather than by dataclasses.replace (which reads the fields' metadata each
    # call): a model of repeated blocks replays most of its plans. Such a plan has no temps
    # and no constants (``_own_tensors_only``).
    return Plan(
        plan.level,
        plan.dtype,
        plan.taken,
        steps=[Step(step.desc, node.inputs, node.outputs[0])],
        notes=list(plan.notes),
    )


class Simplify(Pass):
    """Merge identical descriptors reading the same tensors into tensors of one shape, drop
    what nothing reads. The output's shape is part of the key, as a descriptor sees bytes: the
    Concats of a uint8 [1, 1, 2] along axes 0 and 1 are one JOIN at FL 1_0 (viewed as UINT16),
    and merged, the ONNX readers of the second's [1, 2, 2] read the first's [2, 1, 2]."""

    name = "simplify"

    def run(self, graph: LoweredGraph, ctx: Context) -> None:
        seen: dict[tuple[object, tuple[str, ...], Shape | None], Node] = {}
        shared: dict[tuple[NodeId, NodeId], int] = {}  # (origin, origin computing it) -> count
        merged: dict[str, str] = {}  # a removed duplicate's output -> the kept one's
        for node in graph.topological_order():  # (it removes only the node it is at)
            if merged and not merged.keys().isdisjoint(node.inputs):  # (no call: most)
                node = _renamed(graph, node, merged)
            # the exact type first: an ABC's isinstance of an ONNX node's op is three calls
            if type(node.op) is OnnxOp or not isinstance(node.op, OperatorDesc):
                continue
            key = (node.op, node.inputs, graph.tensor(node.outputs[0]).shape)
            first = seen.get(key)
            if first is None or node.outputs[0] in graph.outputs:
                seen.setdefault(key, node)
                continue
            graph.remove_node(node.id)
            origin, keeper = ctx.origin_of.pop(node.id, None), ctx.origin_of.get(first.id)
            if origin is not None and keeper is not None and origin != keeper:
                shared[origin, keeper] = shared.get((origin, keeper), 0) + 1
                ctx.computes_for.setdefault(first.id, set()).add(origin)
            _rename_later(graph, merged, node.outputs[0], first.outputs[0])
        for (origin, keeper), count in shared.items():  # its notes counted them as its own
            other = ctx.origins[keeper].node
            who = f"{other.op_type} {other.name!r}" if other.name else (
                f"the unnamed {other.op_type} (node id {other.id})"
            )
            ctx.origins[origin].notes.append(
                f"{count} of its descriptors are the same operator on the same tensors as "
                f"descriptors of {who}, and are computed once there"
            )
        dead: set[NodeId] = set()
        for node in graph.remove_dead_nodes():
            ctx.computes_for.pop(node.id, None)
            origin_id = ctx.origin_of.pop(node.id, None)
            if origin_id is not None:
                dead.add(origin_id)
        for origin_id in dead - set(ctx.origin_of.values()):  # none of its nodes remain
            gone = ctx.origins[origin_id]
            gone.status = Status.ELIMINATED
            # its divergence notes go with it: traced through the model's graph, they would
            # excuse outputs its values never reach (a Slice to nothing read it)
            gone.notes[:] = [folding.UNUSED]
        graph.prune_tensors()


def _rename_later(graph: LoweredGraph, renames: dict[str, str], old: str, new: str) -> None:
    """Make readers of ``old`` read ``new``: the graph outputs now, each node when a pass in
    topological order reaches it (``_renamed``). ``replace_uses`` rebuilt a reader's
    inputs per renamed tensor: a Concat of N merged or eliminated inputs was rebuilt N times,
    N inputs each (quadratic; 6.9 s to lower a Concat of 4,000 identical Slices)."""
    renames[old] = new
    if old in graph.outputs:
        graph.outputs = [new if o == old else o for o in graph.outputs]


def _renamed(graph: LoweredGraph, node: Node, renames: Mapping[str, str]) -> Node:
    """The node, its inputs renamed as ``renames`` says (in one edit: once per node). The
    sweeps ask only of a node reading a renamed tensor."""
    return graph.replace_node(node.id, inputs=[renames.get(n, n) for n in node.inputs])


class Verify(Pass):
    """Every descriptor validates at the target level and binds its tensors' bytes."""

    name = "verify"

    def run(self, graph: LoweredGraph, ctx: Context) -> None:
        problems: list[str] = []
        for node in graph.nodes:
            if type(node.op) is OnnxOp or isinstance(node.op, OnnxOp):  # (no call: most)
                continue
            if not isinstance(node.op, OperatorDesc):
                problems.append(f"{node.label} holds {type(node.op).__name__}, not a descriptor")
                continue
            if id(node.op) not in ctx.validated:  # Legalize's plans validated their own
                try:
                    node.op.validate(graph.feature_level)
                except DmlValidationError as exc:
                    problems.append(f"{node.label}: {exc}")
        problems += unbound_tensors(graph)
        if problems:
            raise GraphInvariantError("descriptors fail verification:\n  " + "\n  ".join(problems))


DEFAULT_PASSES: tuple[type[Pass], ...] = (FoldConstants, LowerOnnx, Legalize, Simplify, Verify)


class PassManager:
    """Runs passes in order, each followed by its ``ensures``. The IR invariants
    (``Graph.validate``) are checked once, after the last pass, or after every pass with
    ``verify_each`` (as MLIR's verifier), which names the pass that broke one but costs about
    5 µs a node per pass: a fifth of lowering time on large graphs (measured)."""

    def __init__(self, passes: tuple[Pass, ...], verify_each: bool = False) -> None:
        self.passes = passes
        self.verify_each = verify_each

    def run(self, graph: LoweredGraph, ctx: Context) -> None:
        ran: list[str] = []
        for p in self.passes:
            try:
                p.run(graph, ctx)
                if self.verify_each:
                    graph.validate()
                broken = p.ensures(graph, ctx)
                if broken:
                    raise GraphInvariantError(broken)
            except GraphInvariantError as exc:
                before = ", ".join(ran) or "none"
                raise GraphInvariantError(
                    f"{graph.source}: lowering pass {p.name!r} broke an invariant (passes run "
                    f"before it: {before}): {exc}"
                ) from None
            ran.append(p.name)
        if not self.verify_each:
            try:
                graph.validate()
            except GraphInvariantError as exc:
                raise GraphInvariantError(
                    f"{graph.source}: the lowering passes ({', '.join(ran)}) broke an invariant "
                    f"(lower with verify_each=True to name the pass): {exc}"
                ) from None
