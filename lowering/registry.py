"""Lowering rules keyed by (domain, op_type, since_version range), and the rewriter they use.

A rule declares exactly the ONNX versions it covers (the canonical form of
``dmlgraph.canonical`` makes those versions look alike). A rule reads one canonical node and,
through a ``Rewriter``, says what it becomes: logical ops, a constant, or an alias of one of its
inputs. The rewriter records and applies nothing until the rule returns, so a rule that fails
(``Unlowerable``) leaves no trace and its node stays ONNX with the reason as a note.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Callable, NoReturn

import numpy as np

from dmlgraph import canonical
from dmlgraph.errors import ModelValidationError, NodeRuleError, UnsupportedError
from dmlgraph.folding import PartialShapes
from dmlgraph.ir import Graph, Node
from lowering.logical import LogicalOp
from lowering.report import Status

Shape = tuple[int, ...]


class Unlowerable(Exception):
    """The node stays an ONNX node; the message says why, as a sentence."""


@dataclass
class Rewriter:
    """What a rule makes of its node; applied by the lower pass when the rule succeeds."""

    graph: Graph
    node: Node
    ops: list[tuple[LogicalOp, tuple[str, ...], str, Shape]] = field(default_factory=list)
    temps: dict[str, Shape] = field(default_factory=dict)
    constant: np.ndarray | None = None
    alias: str | None = None
    status: Status | None = None
    notes: list[str] = field(default_factory=list)
    #: the lower pass's answers to whether onnxruntime may size a tensor otherwise than its
    #: static sizes here (``folding.PartialShapes.unsure``); None: sizes are trusted
    trust: PartialShapes | None = None

    @property
    def where(self) -> str:
        return self.graph.describe(self.node)

    def _unsure_through(self, tensor: str) -> str:
        """What onnxruntime may size otherwise upstream of ``tensor``, whose sizes here are
        inference's (``PartialShapes.cause``); "" for sizes that hold, and when the lower
        pass trusts every size (``trust`` None)."""
        if (
            self.trust is None
            or self.graph.is_constant(tensor)
            or not self.trust.unsure(self.graph, tensor)
        ):
            return ""
        return self.trust.cause(self.graph, tensor)

    def rely_on_sizes(self, tensors: Iterable[str], decision: str) -> None:
        """Refuse (``Unlowerable``) a ``decision`` that follows from the inferred sizes of
        ``tensors`` alone, where onnxruntime may size one otherwise: an emitted descriptor's
        sizes are checked against the tensor at run time, but an input dropped as empty, or
        a node become a constant or an alias of its input, leaves nothing to check. (A PRelu
        whose slope grows X, sized [B, 1] by onnx and [B, 4] by onnxruntime, split in two:
        the Concat of the halves dropped the second as empty and gave [B, 2].)"""
        for tensor in tensors:
            cause = self._unsure_through(tensor)
            if cause:
                raise Unlowerable(
                    f"{decision} follows from the size onnx infers for {tensor!r}, which "
                    f"comes through {cause} (folding.SHAPE_EXACT_OPS); left to the fallback, "
                    "which computes it"
                )

    def refuse(self, tensors: Iterable[str], problem: str) -> NoReturn:
        """Refuse the model (``ModelValidationError``: "``where``: ``problem``") for what the
        sizes of ``tensors`` make invalid; where onnxruntime may size one otherwise, leave
        the node to the fallback instead (``Unlowerable``), which computes what onnxruntime
        does (after a Squeeze by an empty axes list, onnx's [1, 8, 1] has no elements on
        axis 2 to repeat, onnxruntime's [8] has 8)."""
        for tensor in tensors:
            cause = self._unsure_through(tensor)
            if cause:
                raise Unlowerable(
                    f"by the sizes onnx infers, {problem}; but {tensor!r} comes through "
                    f"{cause}: left to the fallback, which computes it"
                )
        raise ModelValidationError(f"{self.where}: {problem}")

    def static_shape(self, tensor: str, role: str, *, ruled: bool = False) -> Shape:
        """The static sizes of ``tensor`` (``Unlowerable`` where some are not known), noting
        where they are inference's and onnxruntime may make others: a descriptor is sized by
        them, and the backend checks them at run time. ``ruled``: the node's parameters are
        counted by its rank (a Slice's or Pad's data, a Concat's inputs), so where import
        could not trust that rank, the node is held to its rules by it here
        (``_hold_to_rules``)."""
        info = self.graph.tensor(tensor)
        if info.dtype is None or not info.is_static:
            dims = "unknown" if info.shape is None else list(info.shape)
            raise Unlowerable(
                f"{role} {tensor!r} has shape {dims}; DirectML descriptors need static sizes, "
                "so the backend lowers this node when it runs, by the sizes that arrive "
                "(--input-shape NAME:D0,D1,.. fixes a graph input's)"
            )
        shape: Shape = info.static_shape  # type: ignore[assignment]
        cause = self._unsure_through(tensor)
        said = f"comes through {cause}"
        if cause and ruled:
            self._hold_to_rules(tensor)
        if cause and not any(said in note for note in self.notes):
            self.note(
                f"{role} {tensor!r} is described as onnx infers it, {list(shape)}; it {said}: "
                "the backend checks its size at run time, and lowers the node again for another"
            )
        return shape

    def normalize_again(self, tensor: str) -> Node:
        """The node brought to its canonical form by the sizes known now, then held to its
        rules by them (``_hold_to_rules``): import writes a Slice's default axes and steps, a
        Pad's default axes, only once the data's rank is known, and a rank onnx's inference
        left unknown (data made by a Slice-1 of axes out of order) is known only here, where
        lowering sized the node making it (the rule read None for the axes: a TypeError)."""
        self.node = canonical.normalize(self.graph, self.node, self.trust)
        self._hold_to_rules(tensor)
        return self.node

    def _hold_to_rules(self, tensor: str) -> None:
        """Hold a Slice, Concat or Pad to its op's rules by the rank ``tensor``'s static sizes
        give, where import could not: ``canonical.check`` passes over a rank onnxruntime may
        make otherwise (``trust``), and the rule then reads its parameters by this one (a
        Pad's 8 pads for data of rank 3 were read as 3 begins and 5 ends, the last two
        dropped; an axis 3 of rank 3 raised IndexError; a Concat's inputs of ranks 2 and 3
        were compared dimension by dimension). Broken, the node is refused as ``refuse``
        says: left to the fallback, which computes (or refuses) what onnxruntime does."""
        try:
            canonical.check(self.graph, self.node)
        except NodeRuleError as exc:
            self.refuse([tensor], str(exc).removeprefix(f"{self.where}: "))

    def dtype(self, tensor: str) -> np.dtype:
        dtype = self.graph.tensor(tensor).dtype
        assert dtype is not None
        return dtype

    def emit(self, op: LogicalOp, inputs: tuple[str, ...], shape: Shape, last: bool) -> str:
        """Add a logical op; the last one writes the node's output, others a new tensor."""
        out = self.node.outputs[0]
        if not last:
            base, k = f"{out}.{type(op).__name__.removeprefix('Logical').lower()}", 0
            out = base
            while self.graph.name_taken(out) or out in self.temps:
                k += 1
                out = f"{base}_{k}"
            self.temps[out] = shape
        self.ops.append((op, inputs, out, shape))
        return out

    def become_constant(self, data: np.ndarray, note: str) -> None:
        self.constant, self.status = data, Status.FOLDED
        self.notes.append(note)

    def become_alias(self, tensor: str, note: str) -> None:
        self.alias, self.status = tensor, Status.ELIMINATED
        self.notes.append(note)

    def note(self, text: str) -> None:
        self.notes.append(text)


RuleFn = Callable[[Rewriter], None]


@dataclass(frozen=True)
class Rule:
    domain: str
    op_type: str
    first: int  # the ONNX since_versions the rule covers, inclusive
    last: int
    fn: RuleFn


RULES: list[Rule] = []
#: ``RULES`` by (domain, op type), in registration order: ``find_rule`` is asked of every
#: node of a model, most of whose op types have none (a look-up, not a scan of every rule).
RULES_BY_OP: dict[tuple[str, str], list[Rule]] = {}


def rule(op_type: str, first: int, last: int, domain: str = "") -> Callable[[RuleFn], RuleFn]:
    """Register ``fn`` for ``op_type`` versions ``first``..``last`` of ``domain``."""

    def register(fn: RuleFn) -> RuleFn:
        made = Rule(domain, op_type, first, last, fn)
        RULES.append(made)
        RULES_BY_OP.setdefault((domain, op_type), []).append(made)
        return fn

    return register


def find_rule(graph: Graph, node: Node) -> Rule | None:
    """The rule for this node's original ONNX version; None when no rule knows the op type.

    An op type with rules but none for this version fails loudly: a newer version may mean
    something the rules do not implement (TVM once fed Pad-18 to its Pad-11 handler).
    """
    # a node built by hand may name no model version (Provenance's default 0): its op's
    version = node.provenance.since_version or node.op.since_version
    domain = node.op.domain
    known = RULES_BY_OP.get((domain, node.op.op_type))
    if not known:
        return None
    for candidate in known:
        if candidate.first <= version <= candidate.last:
            return candidate
    ranges = ", ".join(f"{r.first}-{r.last}" for r in known)
    raise UnsupportedError(
        f"{graph.describe(node)}: since_version {version} has no lowering rule (rules cover "
        f"versions {ranges})"
    )
