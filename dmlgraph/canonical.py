"""Canonical forms of Slice, Concat and Pad: one internal form per op, whatever its version.

Each op has a table, since_version -> form facts, covering exactly the versions dmlgraph knows;
any other since_version is refused (``form_for``), never mapped to "the closest rule" (the
TVM Pad-18 bug that STYLE.md recalls). The canonical forms, which lowering reads:

- ``Slice`` (since_version 13): inputs ``(data, starts, ends, axes, steps)``. Slice-1
  attributes become int64 constant inputs; absent steps become ones and absent axes
  ``0..n-1`` (axes once the rank is known), both once every given parameter's length is known
  (before, what arrived at run time breaking a rule blamed them as the model's); constant
  parameters are int64 (int32 beside an int32 one read at run time: ONNX gives them one type)
  and constant axes are non-negative once the rank is known.
- ``Concat`` (since_version 13): attribute ``axis``, non-negative once the rank is known
  (Concat-1's default of 1 filled in).
- ``Pad`` (since_version 25): inputs ``(data, pads, constant_value, axes)``, attribute ``mode``.
  Pad-2's ``pads``/``value`` attributes become constant inputs; ``constant_value`` defaults to a
  zero of data's dtype; absent axes become ``0..rank-1`` once the rank is known and pads holds
  2 * rank values; with constant pads and axes and a known rank, pads are expanded to every
  axis so ``axes`` is always ``0..rank-1``.

Every other op keeps its model's since_version and attributes unchanged. ``to_canonical``
builds the form at import; ``normalize`` fills what needs dtypes, ranks or constants (run again
after shape inference and folding); ``check`` refuses malformed nodes; ``emit`` writes a node
back in the syntax of a given version, for ``to_onnx``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from types import MappingProxyType
from typing import Any, Protocol

import numpy as np
import onnx

from dmlgraph.dml.scalars import cast_float, is_integer
from dmlgraph.errors import NodeRuleError, UnsupportedError
from dmlgraph.ir import INT64_MAX, Graph, Node, OnnxOp
from dmlgraph.schema_types import type_string


class Trust(Protocol):
    """Whether onnxruntime may give a tensor other sizes (``unsure``), or another rank
    (``rank_unsure``), than inference gave it (``folding.PartialShapes``): rules that count
    by those stand aside for such tensors."""

    def unsure(self, graph: Graph, name: str) -> bool: ...

    def rank_unsure(self, graph: Graph, name: str) -> bool: ...

    def session_rank_unsure(self, graph: Graph, name: str) -> bool: ...

# ----------------------------------------------------------------------------- version tables


@dataclass(frozen=True)
class SliceForm:
    since_version: int
    params_as_attributes: bool  # Slice-1: starts/ends/axes are attributes and there are no steps


@dataclass(frozen=True)
class ConcatForm:
    since_version: int
    default_axis: int | None  # Concat-1: axis is optional with default 1; required from 4


@dataclass(frozen=True)
class PadForm:
    since_version: int
    params_as_attributes: bool  # Pad-2: pads and value are attributes
    has_axes: bool  # Pad-18 added the optional axes input
    modes: frozenset[str]


Form = SliceForm | ConcatForm | PadForm

_PAD_MODES = frozenset({"constant", "reflect", "edge"})
_PAD_MODES_WRAP = _PAD_MODES | {"wrap"}

#: The ONNX ops dmlgraph lowers to DirectML (FORMS holds their versions).
LOWERED_OPS: tuple[str, ...] = ("Slice", "Concat", "Pad")

#: op_type -> since_version -> form. The keys are the versions dmlgraph supports.
FORMS: Mapping[str, Mapping[int, Form]] = MappingProxyType(
    {
        "Slice": MappingProxyType(
            {
                1: SliceForm(1, params_as_attributes=True),
                10: SliceForm(10, params_as_attributes=False),
                11: SliceForm(11, params_as_attributes=False),
                13: SliceForm(13, params_as_attributes=False),
            }
        ),
        "Concat": MappingProxyType(
            {
                1: ConcatForm(1, default_axis=1),
                4: ConcatForm(4, default_axis=None),
                11: ConcatForm(11, default_axis=None),
                13: ConcatForm(13, default_axis=None),
            }
        ),
        "Pad": MappingProxyType(
            {
                2: PadForm(2, params_as_attributes=True, has_axes=False, modes=_PAD_MODES),
                11: PadForm(11, params_as_attributes=False, has_axes=False, modes=_PAD_MODES),
                13: PadForm(13, params_as_attributes=False, has_axes=False, modes=_PAD_MODES),
                18: PadForm(18, params_as_attributes=False, has_axes=True, modes=_PAD_MODES),
                19: PadForm(19, params_as_attributes=False, has_axes=True, modes=_PAD_MODES_WRAP),
                21: PadForm(21, params_as_attributes=False, has_axes=True, modes=_PAD_MODES_WRAP),
                23: PadForm(23, params_as_attributes=False, has_axes=True, modes=_PAD_MODES_WRAP),
                24: PadForm(24, params_as_attributes=False, has_axes=True, modes=_PAD_MODES_WRAP),
                25: PadForm(25, params_as_attributes=False, has_axes=True, modes=_PAD_MODES_WRAP),
            }
        ),
    }
)

#: The since_version of each op's canonical form: its newest supported version.
CANONICAL_VERSION: Mapping[str, int] = MappingProxyType(
    {op: max(forms) for op, forms in FORMS.items()}
)

#: The attributes of the canonical forms (their parameters are inputs).
CANONICAL_ATTRIBUTES: Mapping[str, frozenset[str]] = MappingProxyType(
    {"Slice": frozenset(), "Concat": frozenset({"axis"}), "Pad": frozenset({"mode"})}
)

#: Input ports of the parameter inputs of the canonical forms (port 0 is the data).
PARAMETER_PORTS: Mapping[str, Mapping[str, int]] = MappingProxyType(
    {
        "Slice": MappingProxyType({"starts": 1, "ends": 2, "axes": 3, "steps": 4}),
        "Pad": MappingProxyType({"pads": 1, "constant_value": 2, "axes": 3}),
    }
)
_ARITY = {"Slice": 5, "Pad": 4}
_INDEX_PARAMS = {"Slice": ("starts", "ends", "axes", "steps"), "Pad": ("pads", "axes")}


def is_canonical(op: Any) -> bool:
    """True for an OnnxOp of an op that has a canonical form (Slice, Concat, Pad)."""
    return (
        (type(op) is OnnxOp or isinstance(op, OnnxOp))  # the exact type first: no call
        and op.domain == ""
        and op.op_type in FORMS
    )


def since_version(op_type: str, domain: str, opset: int, where: str) -> int:
    """The since_version of ``op_type`` in a model importing ``domain`` at ``opset``."""
    version = known_since_version(op_type, domain, opset)
    if version is None:
        raise UnsupportedError(
            f"{where}: no ONNX schema for op {op_type!r} in domain {domain or 'ai.onnx'!r} "
            f"at opset {opset}"
        )
    return version


@lru_cache(maxsize=4096)
def known_since_version(op_type: str, domain: str, opset: int) -> int | None:
    """``since_version`` without the error: None where onnx has no schema. Cached, since
    schema look-ups cost microseconds each and every node of a model asks twice."""
    try:
        return int(onnx.defs.get_schema(op_type, opset, domain).since_version)
    except onnx.defs.SchemaError:
        return None


#: Why a version ONNX defines has no form here, and what a model's author can do: said after
#: ``form_for``'s refusal, which named only the versions dmlgraph knows.
UNFORMED_VERSIONS: Mapping[tuple[str, int], str] = MappingProxyType(
    {
        ("Pad", 1): (
            "Pad-1's paddings come in an order its own text and its example disagree on (its "
            "text: every begin, then every end; its example: begin and end per axis), and "
            "onnxruntime has no Pad-1 kernel; export the model at opset 2 or later, where "
            "Pad-2's pads are begins, then ends"
        ),
    }
)


def form_for(op_type: str, version: int, where: str) -> Form:
    """The form of ``op_type`` at a since_version; UnsupportedError when dmlgraph lacks it."""
    forms = FORMS[op_type]
    try:
        return forms[version]
    except KeyError:
        why = UNFORMED_VERSIONS.get((op_type, version))
        raise UnsupportedError(
            f"{where}: {op_type} since_version {version} is not supported "
            f"(dmlgraph knows {op_type} {', '.join(map(str, forms))})"
            + (f": {why}" if why else "")
        ) from None


#: Pad's ``mode`` where none is given (every version of ONNX's Pad).
DEFAULT_PAD_MODE = "constant"


def pad_mode(op: OnnxOp) -> str:
    """A Pad op's mode: a graph built by hand may leave the attribute out, as ONNX may."""
    mode = op.attrs.get("mode", DEFAULT_PAD_MODE)
    return mode.decode("utf-8", "replace") if isinstance(mode, bytes) else str(mode)


def concat_axis(node: Node, where: str) -> int:
    """A Concat's axis: its attribute, or Concat-1's default (1); from Concat-4 ONNX requires
    it, and a node built by hand without it is refused, naming the node."""
    axis = node.op.attrs.get("axis")
    if axis is None:
        form = FORMS["Concat"].get(node.op.since_version)
        axis = form.default_axis if isinstance(form, ConcatForm) else None
        if axis is None:
            raise NodeRuleError(
                f"{where}: attribute axis is missing; Concat-{node.op.since_version} requires it"
            )
    return _concat_axis_value(axis, where)


def check_form(node: Node, where: str) -> None:
    """Refuse a Slice, Concat or Pad whose since_version the IR cannot hold: one dmlgraph
    does not know, or Slice-1's and Pad-2's, whose parameters are attributes where the IR
    holds them as inputs (``to_canonical`` moves them at import). Built with the Graph API,
    such a node was read as one without parameters: ``to_onnx`` asked for constants it was
    not given, and lowering raised a TypeError from deep inside. And an attribute the form
    lacks, which no rule reads and ``to_onnx`` dropped."""
    op = node.op
    form = form_for(op.op_type, op.since_version, where)
    if getattr(form, "params_as_attributes", False):
        params = ", ".join(PARAMETER_PORTS[op.op_type])
        raise NodeRuleError(
            f"{where}: {op.op_type}-{op.since_version} holds its parameters as attributes; "
            f"the IR holds them as inputs: build it as {op.op_type}-"
            f"{CANONICAL_VERSION[op.op_type]} reading (data, {params}) (constants by "
            "Graph.add_constant), as dmlgraph.load makes it"
        )
    unknown = sorted(set(op.attrs) - CANONICAL_ATTRIBUTES[op.op_type])
    if unknown:  # read by no rule: a Pad's misspelt "mode" padded with zeros, silently
        known = ", ".join(sorted(CANONICAL_ATTRIBUTES[op.op_type])) or "none"
        raise NodeRuleError(
            f"{where}: attribute {unknown[0]!r} is not {op.op_type}'s (its attributes: "
            f"{known}), as onnx's checker and onnxruntime refuse it"
        )


def _concat_axis_value(axis: object, where: str) -> int:
    """A Concat's axis attribute as an int: an INT attribute, as ONNX types it (a float was
    truncated, so 3.7 joined on axis 3)."""
    if not is_integer(axis) or not -INT64_MAX - 1 <= axis <= INT64_MAX:
        raise NodeRuleError(
            f"{where}: attribute axis = {axis!r} is not an int64, as ONNX's INT attribute is"
        )
    return int(axis)


# ----------------------------------------------------------------------------- import


def to_canonical(
    graph: Graph,
    op_type: str,
    version: int,
    inputs: Sequence[str],
    attrs: Mapping[str, Any],
    where: str,
    const_base: str,
) -> tuple[OnnxOp, tuple[str, ...]]:
    """The canonical op and inputs of one imported node (may add constants to ``graph``).

    ``where`` names the node in errors; ``const_base`` prefixes new constants' names.
    """
    form = form_for(op_type, version, where)
    canon_version = CANONICAL_VERSION[op_type]
    if isinstance(form, SliceForm):
        if form.params_as_attributes:
            ports = [inputs[0] if inputs else ""]
            for field in ("starts", "ends", "axes"):
                value = attrs.get(field)
                ports.append(
                    ""
                    if value is None
                    else graph.add_constant(f"{const_base}:{field}", value, np.int64)
                )
            ports.append("")
        else:
            ports = list(inputs) + [""] * (5 - len(inputs))
        return OnnxOp("Slice", canon_version), tuple(ports)
    if isinstance(form, ConcatForm):
        axis = attrs.get("axis", form.default_axis)
        if axis is None:
            raise NodeRuleError(
                f"{where}: attribute axis is missing; Concat-{version} requires it"
            )
        axis = _concat_axis_value(axis, where)
        return OnnxOp("Concat", canon_version, attrs={"axis": axis}), tuple(inputs)
    # Pad
    mode = pad_mode(OnnxOp("Pad", version, attrs=attrs))
    if mode not in form.modes:
        later = [
            v for v, f in FORMS["Pad"].items()
            if v > version and isinstance(f, PadForm) and mode in f.modes
        ]
        hint = (  # torch's exporter writes circular pads as 'wrap' at opset 18
            f"; {mode!r} came with Pad-{later[0]}: export the model at opset {later[0]} or "
            "later (onnxruntime runs it here with that meaning)"
            if later else ""
        )
        raise NodeRuleError(
            f"{where}: mode = {mode!r}: Pad-{version} accepts modes "
            f"{', '.join(sorted(form.modes))}{hint}"
        )
    if form.params_as_attributes:
        data = inputs[0] if inputs else ""
        pads = attrs.get("pads")
        if pads is None:
            raise NodeRuleError(
                f"{where}: attribute pads is missing; Pad-{version} requires it"
            )
        # Typed like data when inference knew data's dtype, a float type (Pad-2 takes those
        # alone: ``check`` refuses the rest by their type, not by a cast's OverflowError);
        # normalize() retypes it otherwise.
        value_dtype = graph.tensors[data].dtype if data in graph.tensors else None
        if value_dtype is None or value_dtype.kind != "f":
            value_dtype = np.dtype(np.float32)
        value = cast_float(attrs.get("value", 0.0), value_dtype)
        ports = [
            data,
            graph.add_constant(f"{const_base}:pads", pads, np.int64),
            graph.add_constant(f"{const_base}:constant_value", value),
            "",
        ]
    else:
        ports = list(inputs) + [""] * (4 - len(inputs))
    return OnnxOp("Pad", canon_version, attrs={"mode": mode}), tuple(ports)


# ----------------------------------------------------------------------------- normalize


def normalize(graph: Graph, node: Node, trust: Trust | None = None) -> Node:
    """Fill defaults and normalize parameters as far as known dtypes, ranks and constants allow.

    Idempotent; leaves anything it cannot decide (or that ``check`` will refuse) as it is.
    Where ``trust`` says onnxruntime may give a tensor the node reads another rank than
    inference did, axes counted from the end stay so, and a Pad's axes are not written out,
    since the node may run on onnxruntime as written (a fallback) where the rank is another;
    lowering reads them by the inferred rank, which the backend checks at run time. Nor is a
    parameter's length read from sizes it says onnxruntime may make otherwise.
    """
    if not is_canonical(node.op):
        return node
    op_type = node.op.op_type
    if op_type == "Concat":
        rank = _concat_rank(graph, node)
        given = node.op.attrs.get("axis")
        axis = concat_axis(node, graph.describe(node))
        if rank is not None and -rank <= axis < 0 and not _rank_unsure(graph, node, trust):
            axis += rank
        if axis != given:
            node = graph.replace_node(
                node.id, op=OnnxOp("Concat", node.op.since_version, attrs={"axis": axis})
            )
        return node
    ports = PARAMETER_PORTS[op_type]
    index = _index_dtype(graph, node)
    for field in _INDEX_PARAMS[op_type]:  # constant index parameters are int64, or int32
        value = graph.constant(node.input(ports[field]))
        if value is not None and value.dtype != index and value.dtype.kind in "iu":
            node = _set_param(graph, node, field, value.astype(index))
    if op_type == "Slice":
        return _normalize_slice(graph, node, index, trust)
    return _normalize_pad(graph, node, trust)


def _rank_unsure(graph: Graph, node: Node, trust: Trust | None) -> bool:
    """Whether a tensor whose rank the node's parameters count by (a Concat's inputs, else
    the data) may have another at run time (``Trust``)."""
    if trust is None:
        return False
    read = node.inputs if node.op_type == "Concat" else node.inputs[:1]
    for name in read:  # a loop: a generator's every item is a call
        if name and trust.rank_unsure(graph, name):
            return True
    return False


def _session_rules(
    graph: Graph, node: Node, trust: Trust | None, fields: Sequence[str] | None = None
) -> bool:
    """Whether onnxruntime's session holds a Slice or Pad to the rules counted by its data's
    rank when it loads the model, where import stands aside for that rank (``Trust``): it
    sees inference's rank (``Trust.session_rank_unsure``), and knows every parameter as onnx's
    inference does, the model's initializers and Constants alone (``Graph.given_constants``),
    or a default or Slice-1's or Pad-2's attribute. (A PRelu whose slope grows X: onnx [B, 3],
    its kernel [1, B, 3]; a Slice of it by constant axes [2] is refused at load, "Unexpected
    axis value: 2", which import stood aside for and ran. By axes computed, or ends given at
    run time, the session runs it, as import lets it.) ``fields``: the parameters the rule
    reads, where onnx's inference checks it knowing those alone (a Pad's axes: ``check``),
    every index parameter by default."""
    given = graph.given_constants
    if trust is None or given is None or trust.session_rank_unsure(graph, node.inputs[0]):
        return False
    form = FORMS[node.op_type].get(node.provenance.since_version)
    if getattr(form, "params_as_attributes", False):
        return True
    made = f"{constant_base(node.name, node.op_type, node.id)}:"  # defaults ``_set_param`` set
    ports = PARAMETER_PORTS[node.op_type]
    for field in _INDEX_PARAMS[node.op_type] if fields is None else fields:
        name = node.input(ports[field])
        if name and not (
            graph.is_constant(name)
            and name not in graph.inputs
            and (name in given or name.startswith(made))
        ):
            return False
    return True


def _index_dtype(graph: Graph, node: Node) -> np.dtype:
    """The dtype a node's constant index parameters take: int64, or int32 where a Slice reads
    an int32 one at run time (its starts, ends, axes and steps are one type in ONNX, so the
    defaults filled in beside it are int32 too)."""
    if node.op_type == "Slice":
        for field in _INDEX_PARAMS["Slice"]:
            name = node.input(PARAMETER_PORTS["Slice"][field])
            info = graph.tensors.get(name) if name else None
            if info is not None and info.data is None and info.dtype == np.int32:
                return np.dtype(np.int32)
    return np.dtype(np.int64)


def _normalize_slice(graph: Graph, node: Node, index: np.dtype, trust: Trust | None) -> Node:
    rank = graph.tensors[node.inputs[0]].rank if node.inputs[0] in graph.tensors else None
    lengths = {f: _param_length(graph, node, f, trust) for f in _INDEX_PARAMS["Slice"]}
    if len({n for n in lengths.values() if n is not None}) > 1:
        return node  # defaults of either length would be blamed as the model's: ``check`` says
    count = lengths["starts"] if lengths["starts"] is not None else lengths["ends"]
    if count is not None and rank is not None and count > rank and not node.input(3):
        return node  # axes 0..count-1 would blame axes the model never wrote: ``check`` says
    # nor while the data's rank or a given parameter's length is unknown: what arrives at run
    # time blamed them as the model's ("axes = [0, 1, 2, 3]: [3] out of range", "got
    # starts=2, ends=3, axes=2, steps=2"); normalizing again, when all is known (the run's
    # one-node graph), writes them or ``check`` says why not
    ports = PARAMETER_PORTS["Slice"]
    known = all(n is not None for f, n in lengths.items() if node.input(ports[f]))
    if count is not None and known and rank is not None and not node.input(3):
        node = _set_param(graph, node, "axes", np.arange(count, dtype=index))
    if count is not None and known and not node.input(4):
        node = _set_param(graph, node, "steps", np.ones(count, dtype=index))
    axes = graph.constant(node.input(3))
    if (
        axes is not None
        and rank is not None
        and (axes < 0).any()
        and not _rank_unsure(graph, node, trust)
    ):
        fixed = _nonnegative_axes(axes, rank)
        if fixed is not None:
            node = _set_param(graph, node, "axes", fixed.astype(index))
    return node


def default_pad_value(dtype: np.dtype) -> np.ndarray:
    """Pad's ``constant_value`` when none is given: 0, False, or for strings "" (ONNX)."""
    if np.dtype(dtype) == np.dtype(object):
        return np.array("", dtype=object)
    return np.zeros((), dtype=dtype)


def empty_axis_refusal(mode: str, axis: int, empty: str = "is empty") -> str:
    """Why a Pad in a mode that repeats elements (edge, reflect, wrap) cannot pad ``axis``, of
    no elements, into some: ONNX gives no value there (np.pad refuses it too). Lowering and
    onnx.reference's Pad (``backends.numpy.fallback``) refuse it in these words."""
    return f"mode {mode!r} cannot pad axis {axis}: it {empty}, with no elements to repeat"


def _normalize_pad(graph: Graph, node: Node, trust: Trust | None) -> Node:
    data = graph.tensors.get(node.inputs[0])
    rank = None if data is None else data.rank
    if rank is not None and _rank_unsure(graph, node, trust):
        rank = None
    dtype = None if data is None else data.dtype
    value = graph.constant(node.input(2))
    if dtype is not None and not node.input(2):
        node = _set_param(graph, node, "constant_value", default_pad_value(dtype))
    elif (
        dtype is not None
        and value is not None
        and value.dtype != dtype
        and node.provenance.since_version == 2
    ):
        # Pad-2's float attribute `value` was typed before data's dtype was known.
        node = _set_param(graph, node, "constant_value", cast_float(value, dtype))
    pads = graph.constant(node.input(1))
    pads_length = _param_length(graph, node, "pads", trust)
    # Without axes a Pad pads every axis: they are written out once the rank is known, never
    # guessed from the pads (axes 0..k-1 pad the leading k axes of data of any rank, where
    # ONNX refuses 2k pads for data of another rank than k)
    # (nor by pads of a length known only at run time, which blamed them as the model's: "pads
    # has 4 values for 3 axes"; the run's one-node graph knows the length)
    if not node.input(3) and rank is not None and pads_length == 2 * rank:
        node = _set_param(graph, node, "axes", np.arange(rank, dtype=np.int64))
    axes = graph.constant(node.input(3))
    if axes is None or rank is None:
        return node
    fixed = _nonnegative_axes(axes, rank)
    if fixed is None:
        return node
    if pads is not None and pads.ndim == 1 and pads.size == 2 * fixed.size:
        full = expand_pads(pads, fixed, rank)
        fixed = np.arange(rank, dtype=np.int64)
        if not np.array_equal(full, pads):
            node = _set_param(graph, node, "pads", full)
    if not np.array_equal(fixed, axes) or axes.dtype != np.int64:
        node = _set_param(graph, node, "axes", fixed)
    return node


def _pad_axes_rank(graph: Graph, node: Node, trust: Trust | None, rank: int | None) -> int | None:
    """The rank a Pad's axes are checked by where import stands aside for its data's rank and
    its pads are not the model's constants: onnx's inference checks the axes' range knowing
    them alone, so onnxruntime's session refuses axes [2] of onnx's [B, 3] at load whatever
    the pads ("Unexpected axis value: 2"), which import let run by the rank that arrived."""
    return rank if _session_rules(graph, node, trust, ("axes",)) else None


def _nonnegative_axes(axes: np.ndarray, rank: int) -> np.ndarray | None:
    """Axes made non-negative, or None when some are out of range or repeated (check refuses)."""
    if axes.ndim != 1 or ((axes < -rank) | (axes >= rank)).any():
        return None
    fixed = np.where(axes < 0, axes + rank, axes).astype(np.int64)
    return fixed if len(set(fixed.tolist())) == fixed.size else None


def constant_base(node_name: str, op_type: str, index: int) -> str:
    """The prefix of constants made for a node's parameters: its name, else op type and index."""
    return node_name or f"{op_type}_{index}"


def _set_param(graph: Graph, node: Node, field: str, value: np.ndarray) -> Node:
    base = constant_base(node.name, node.op_type, node.id)
    name = graph.add_constant(f"{base}:{field}", value)
    return graph.set_input(node.id, PARAMETER_PORTS[node.op_type][field], name)


def _param_length(graph: Graph, node: Node, field: str, trust: Trust | None) -> int | None:
    """The length of a 1-D parameter input: from its data, else its static shape (not one
    ``trust`` says onnxruntime may make otherwise: ends from a Shape of a PRelu whose slope
    grows X, sliced from -5, have 0 values by onnx's rank 4, 1 by onnxruntime's 5)."""
    name = node.input(PARAMETER_PORTS[node.op_type][field])
    if not name or name not in graph.tensors:
        return None
    info = graph.tensors[name]
    if info.data is None and trust is not None and trust.unsure(graph, name):
        return None
    if info.shape is not None and len(info.shape) == 1 and isinstance(info.shape[0], int):
        return info.shape[0]
    return None


def _concat_rank(graph: Graph, node: Node) -> int | None:
    for name in node.inputs:
        info = graph.tensors.get(name)
        if info is not None and info.rank is not None:
            return info.rank
    return None


# ----------------------------------------------------------------------------- check


def check(graph: Graph, node: Node, trust: Trust | None = None) -> None:
    """Refuse a malformed Slice, Concat or Pad with a NodeRuleError (a ModelValidationError)
    naming the node, in words and by its outputs (``NodeRuleError.outputs``).

    Checks what is known: lengths from constants or static shapes, ranks from shape inference
    (but not a rank ``trust`` says onnxruntime may make otherwise: a ConvTranspose's
    [N, 2, 3] where onnx says [N, 2] takes a Slice on axis -3).
    """
    try:
        _check(graph, node, trust)
    except NodeRuleError as exc:
        exc.outputs = tuple(node.outputs)
        raise


def _check(graph: Graph, node: Node, trust: Trust | None) -> None:
    """``check``'s rules."""
    if not is_canonical(node.op):
        return
    where = graph.describe(node)
    check_form(node, where)
    if node.op.op_type == "Concat":
        _check_concat(graph, node, where, trust)
        return
    ports = PARAMETER_PORTS[node.op.op_type]
    data = graph.tensors.get(node.input(0))
    if data is None:
        rank = axes_rank = None
    elif _rank_unsure(graph, node, trust):
        rank = data.rank if _session_rules(graph, node, trust) else None
        axes_rank = rank if rank is not None or node.op.op_type != "Pad" else _pad_axes_rank(
            graph, node, trust, data.rank)
    else:
        rank = axes_rank = data.rank
    lengths: dict[str, int] = {}
    for field in _INDEX_PARAMS[node.op.op_type]:
        name = node.input(ports[field])
        info = graph.tensors.get(name) if name else None
        if info is None:
            continue
        if info.rank is not None and info.rank != 1:
            raise NodeRuleError(
                f"{where}: {field} has shape {list(info.shape or ())}; it must be 1-D"
            )
        length = _param_length(graph, node, field, trust)
        if length is not None:
            lengths[field] = length
        axes = info.data if field == "axes" else None
        if axes is not None:
            _check_axes(axes, axes_rank, where)
    if node.op.op_type == "Slice":
        count = lengths.get("starts", lengths.get("ends"))
        if count is not None and not node.input(3) and rank is not None and count > rank:
            raise NodeRuleError(
                f"{where}: starts and ends have {count} values for data of rank {rank}; "
                "without axes they slice the leading axes, at most one value each"
            )
        if len(set(lengths.values())) > 1:
            raise NodeRuleError(f"{where}: {_slice_lengths(node, lengths)}")
        steps = graph.constant(node.input(4))
        if steps is not None and (steps == 0).any():
            raise NodeRuleError(f"{where}: steps = {steps.tolist()}: a step must not be 0")
        return
    # Pad
    pads = lengths.get("pads")
    if pads is not None and pads % 2:
        raise NodeRuleError(
            f"{where}: pads has {pads} values; Pad needs an even count (begins, then ends)"
        )
    if pads is not None and "axes" in lengths and pads != 2 * lengths["axes"]:
        raise NodeRuleError(
            f"{where}: pads has {pads} values for {lengths['axes']} axes; it must have 2 * "
            "len(axes)"
        )
    if pads is not None and not node.input(3) and rank is not None and pads != 2 * rank:
        raise NodeRuleError(
            f"{where}: pads has {pads} values for data of rank {rank}; it must have 2 * rank"
        )
    value = graph.tensors.get(node.input(2)) if node.input(2) else None
    if value is not None and value.size is not None and value.size != 1:
        # its dtype is data's (``check_types``)
        raise NodeRuleError(
            f"{where}: constant_value has {value.size} values; it must be a scalar"
        )
    pads_data = graph.constant(node.input(1))
    shape = data.static_shape if data is not None and rank is not None else None
    if pads_data is not None and shape is not None and pads_data.size == 2 * len(shape):
        values = [int(v) for v in pads_data.reshape(-1)]  # Python ints: the sums may overflow
        for axis, n in enumerate(shape):
            size = n + values[axis] + values[axis + len(shape)]
            if size > INT64_MAX:
                raise NodeRuleError(
                    f"{where}: pads {values} make axis {axis} of size {size}, beyond the int64 "
                    "an ONNX dimension is"
                )


def _slice_lengths(node: Node, lengths: Mapping[str, int]) -> str:
    """The rule a Slice's parameter lengths break, naming only what the model gave: axes and
    steps it left out are said to be, not given the lengths their defaults would have."""
    form = FORMS["Slice"].get(node.provenance.since_version)
    slice_1 = isinstance(form, SliceForm) and form.params_as_attributes  # it has no steps
    fields = _INDEX_PARAMS["Slice"][:3] if slice_1 else _INDEX_PARAMS["Slice"]
    ports = PARAMETER_PORTS["Slice"]
    listed = ", ".join(f"{f}={n}" for f, n in lengths.items())
    absent = [f for f in fields if not node.input(ports[f])]
    unknown = [f for f in fields if node.input(ports[f]) and f not in lengths]
    said = "".join(
        f"; {' and '.join(group)} {'is' if len(group) == 1 else 'are'} {what}"
        for group, what in ((absent, "not given"), (unknown, "known only at run time"))
        if group
    )
    return f"{', '.join(fields[:-1])} and {fields[-1]} must have one length; got {listed}{said}"


#: A formal input or output of a schema: (name, type parameter, the type strings it allows).
_Formal = tuple[str, str, frozenset[str]]


@lru_cache(maxsize=64)
def _formal_types(op_type: str, version: int) -> tuple[tuple[_Formal, ...], tuple[_Formal, ...]]:
    """The formal inputs and outputs of the op's ONNX schema at ``version``. A fixed type
    (Pad's ``pads``) is its own one-type parameter."""
    schema = onnx.defs.get_schema(op_type, version, "")
    allowed = {c.type_param_str: frozenset(c.allowed_type_strs) for c in schema.type_constraints}

    def formals(params: Sequence[Any]) -> tuple[_Formal, ...]:
        return tuple(
            (f.name, f.type_str, allowed.get(f.type_str, frozenset({f.type_str})))
            for f in params
        )

    return formals(schema.inputs), formals(schema.outputs)


def check_types(graph: Graph, node: Node) -> None:
    """Refuse a Slice, Concat or Pad input or output whose dtype its ONNX schema, at the
    model's since_version, does not allow, or tensors of one type parameter whose dtypes
    differ (int32 starts with int64 ends; float data with an output declared int32): ONNX
    types them so, and onnxruntime refuses such a model. Before ``normalize``, which makes
    index parameters int64. Ports of the canonical form match the schema's inputs where the
    model's form has inputs; an attribute form (Slice-1, Pad-2) has only its data to check."""
    if not is_canonical(node.op):
        return
    op_type = node.op.op_type
    version = node.provenance.since_version
    if version not in FORMS[op_type]:  # a graph built by hand names no model version
        version = node.op.since_version
        form_for(op_type, version, graph.describe(node))  # one it has, or a clear error
    tensors = graph.tensors
    names = (*node.inputs, *node.outputs)
    dtypes = tuple([  # a list: a generator's every item is a call
        (info.dtype if (info := tensors.get(name)) is not None else None) if name else None
        for name in names
    ])
    problem = _type_problem(op_type, version, dtypes, len(node.outputs))
    if problem is None:
        return
    port, first, param, allowed = problem
    field = _field(op_type, version, port, len(node.inputs))
    if first is None:
        raise NodeRuleError(
            f"{graph.describe(node)}: {field} ({names[port]!r}) has dtype {dtypes[port]}; "
            f"{op_type}-{version} takes {', '.join(sorted(allowed))} there (type {param})"
        )
    raise NodeRuleError(
        f"{graph.describe(node)}: {_field(op_type, version, first, len(node.inputs))} has "
        f"dtype {dtypes[first]} and {field} ({names[port]!r}) {dtypes[port]}; "
        f"{op_type}-{version} gives them one type (type {param})"
    )


@lru_cache(maxsize=1024)
def _type_problem(
    op_type: str, version: int, dtypes: tuple[np.dtype | None, ...], outputs: int
) -> tuple[int, int | None, str, frozenset[str]] | None:
    """``check_types``'s verdict on one form of node (cached: a model repeats a few forms),
    ``dtypes`` being the inputs' then the ``outputs`` outputs': None, or (the port at fault,
    the earlier port of its type parameter it differs from, or None when its type is not
    allowed at all, the type parameter, the types it allows)."""
    formal_inputs, formal_outputs = _formal_types(op_type, version)
    inputs = len(dtypes) - outputs
    form = FORMS[op_type][version]
    checked = 1 if getattr(form, "params_as_attributes", False) else inputs
    variadic = op_type == "Concat"
    seen: dict[str, int] = {}  # type parameter -> the first port of it
    for port, dtype in enumerate(dtypes):
        if port < inputs:
            if port >= checked or (not variadic and port >= len(formal_inputs)):
                continue
            formal = formal_inputs[0 if variadic else port]
        elif port - inputs < len(formal_outputs):
            formal = formal_outputs[port - inputs]
        else:
            continue
        if dtype is None:
            continue
        _, param, allowed = formal
        if type_string(dtype) not in allowed:
            return port, None, param, allowed
        first = seen.setdefault(param, port)
        if dtypes[first] != dtype:
            return port, first, param, allowed
    return None


def _field(op_type: str, version: int, port: int, inputs: int) -> str:
    """A port's name in the op's schema: a variadic input's with its index, an output's
    after the word "output"."""
    formal_inputs, formal_outputs = _formal_types(op_type, version)
    if port >= inputs:
        name = formal_outputs[port - inputs][0]
        return name if name == "output" else f"output {name}"
    if op_type == "Concat":
        return f"{formal_inputs[0][0]}[{port}]"
    return formal_inputs[port][0]


def _check_axes(axes: np.ndarray, rank: int | None, where: str) -> None:
    values = axes.tolist()
    if rank is not None:
        bad = [a for a in values if not -rank <= a < rank]
        if bad:
            raise NodeRuleError(
                f"{where}: axes = {values}: {bad} out of range [-{rank}, {rank - 1}]"
            )
        values = [a + rank if a < 0 else a for a in values]
    if len(set(values)) != len(values):
        raise NodeRuleError(f"{where}: axes = {axes.tolist()}: an axis appears twice")


def _check_concat(graph: Graph, node: Node, where: str, trust: Trust | None) -> None:
    """Refuse a malformed Concat; its rules counted by its inputs' ranks stand aside where
    ``trust`` says onnxruntime's session may see one of them otherwise (an If's branch
    declaring [2, 3] that makes [1, 2, 3]: onnxruntime joins it with a [1, 2, 3] on axis 2,
    which "different ranks" refused). Not where only its kernel may make another (a PRelu
    whose slope grows X): the session infers as onnx does and refuses the model at load.
    Asked only of a node they refuse (inline, so a valid node pays no added call)."""
    if "" in node.inputs:  # onnx's checker lets it pass; the ports are not optional
        raise NodeRuleError(
            f"{where}: input {node.inputs.index('')} is empty (''); Concat's inputs are not "
            "optional: name a tensor"
        )
    infos = [graph.tensors[n] for n in node.inputs if n in graph.tensors]
    dtypes = {info.dtype for info in infos if info.dtype is not None}
    if len(dtypes) > 1:
        raise NodeRuleError(
            f"{where}: inputs have different dtypes {sorted(map(str, dtypes))}"
        )
    ranks = {info.rank for info in infos if info.rank is not None}
    try:  # the rules counted by the inputs' ranks
        if len(ranks) > 1:
            listed = ", ".join(
                f"{info.name!r}: rank {info.rank}" for info in infos if info.rank is not None
            )
            raise NodeRuleError(
                f"{where}: inputs have different ranks ({listed}); Concat needs one rank"
            )
        if not ranks:
            return
        rank = ranks.pop()
        if rank == 0:  # no axis to join on ("axis = 0 is out of range [-0, -1]" said oddly)
            raise NodeRuleError(
                f"{where}: Concat joins tensors of rank 1 or more; these are scalars"
            )
        axis = concat_axis(node, where)
        if not -rank <= axis < rank:
            # the canonical op holds the axis given or Concat-1's default: say which it may be
            form = FORMS["Concat"].get(node.provenance.since_version)
            why = "" if not isinstance(form, ConcatForm) or form.default_axis is None else (
                f" (Concat-{form.since_version} joins on axis {form.default_axis} where the node "
                "gives no axis)")
            raise NodeRuleError(
                f"{where}: axis = {axis} is out of range [-{rank}, {rank - 1}] for rank {rank}{why}"
            )
        axis %= rank
        for dim in range(rank):
            if dim == axis:
                continue
            sizes = {
                info.shape[dim]
                for info in infos
                if info.shape is not None and isinstance(info.shape[dim], int)
            }
            if len(sizes) > 1:
                listed = ", ".join(
                    f"{info.name!r}: {list(info.shape)}" for info in infos if info.shape is not None
                )
                raise NodeRuleError(
                    f"{where}: inputs differ in dimension {dim}, which is not the concat axis "
                    f"{axis} ({listed})"
                )
        joined = [info.shape[axis] for info in infos if info.shape is not None]
        if len(joined) == len(node.inputs) and all(type(n) is int for n in joined):
            size = sum(joined)  # type: ignore[arg-type]
            if size > INT64_MAX:  # as Pad's: onnx's inference gives up, the lowering wrapped
                raise NodeRuleError(
                    f"{where}: inputs of sizes {joined} on axis {axis} make it of size {size}, "
                    "beyond the int64 an ONNX dimension is"
                )
    except NodeRuleError:
        if trust is None or not any(trust.session_rank_unsure(graph, n) for n in node.inputs):
            raise


# ----------------------------------------------------------------------------- emit


@dataclass(frozen=True)
class Emitted:
    """A canonical node written in one version's syntax, plus constants that syntax needed."""

    op_type: str
    inputs: tuple[str, ...]
    attrs: Mapping[str, Any]
    new_constants: Mapping[str, np.ndarray]


def emit(graph: Graph, node: Node, version: int) -> Emitted:
    """Write a canonical node in the syntax of ``version``; UnsupportedError if it cannot be."""
    where = graph.describe(node)
    check_form(node, where)
    op_type = node.op.op_type
    form = form_for(op_type, version, where)
    if isinstance(form, ConcatForm):
        return Emitted("Concat", node.inputs, {"axis": concat_axis(node, where)}, {})
    if isinstance(form, SliceForm):
        if not form.params_as_attributes:
            return Emitted("Slice", _trim(node.inputs), {}, {})
        attrs: dict[str, Any] = {}
        for field in ("starts", "ends", "axes"):
            value = graph.constant(node.input(PARAMETER_PORTS["Slice"][field]))
            if value is None and (field != "axes" or node.input(3)):
                raise UnsupportedError(
                    f"{where}: Slice-1 needs constant {field} to write it as an attribute"
                )
            if value is not None:
                attrs[field] = [int(v) for v in value]
        steps = graph.constant(node.input(4))
        if node.input(4) and (steps is None or (steps != 1).any()):
            raise UnsupportedError(
                f"{where}: steps = {None if steps is None else steps.tolist()}: Slice-1 has no "
                "steps"
            )
        return Emitted("Slice", (node.input(0),), attrs, {})
    # Pad
    mode = pad_mode(node.op)
    if mode not in form.modes:
        raise UnsupportedError(f"{where}: mode {mode!r} cannot be written as Pad-{version}")
    pads_name, new_constants = node.input(1), {}
    if not form.has_axes and node.input(3):
        full = _pads_for_every_axis(graph, node)
        if full is None:
            raise UnsupportedError(
                f"{where}: Pad-{version} has no axes input, and axes "
                f"{_listed(graph.constant(node.input(3)))} cannot be folded into the pads"
            )
        if isinstance(full, np.ndarray):
            pads_name = f"{pads_name}:n{node.id}:every_axis"
            new_constants[pads_name] = full
    if form.params_as_attributes:
        pads = new_constants[pads_name] if pads_name in new_constants else graph.constant(pads_name)
        value = graph.constant(node.input(2))
        if pads is None or (node.input(2) and value is None):
            raise UnsupportedError(
                f"{where}: Pad-{version} needs constant pads and constant_value to write them as "
                "attributes"
            )
        attrs = {"mode": mode, "pads": [int(p) for p in pads]}
        if value is not None:  # a float32 as it is: float() would quiet a signalling NaN
            first = value.reshape(-1)[0]
            attrs["value"] = first if first.dtype == np.float32 else float(first)
        return Emitted("Pad", (node.input(0),), attrs, {})
    inputs = (node.input(0), pads_name, node.input(2)) + ((node.input(3),) if form.has_axes else ())
    return Emitted("Pad", _trim(inputs), {"mode": mode}, new_constants)


def _pads_for_every_axis(graph: Graph, node: Node) -> np.ndarray | bool | None:
    """How to drop a Pad's axes input: True when axes are already ``0..rank-1`` (keep pads),
    the expanded constant pads when they can be computed, None when neither is possible."""
    pads = graph.constant(node.input(1))
    axes = graph.constant(node.input(3))
    data = graph.tensors.get(node.input(0))
    rank = None if data is None else data.rank
    if axes is None or rank is None:  # axes 0..k-1 pad the leading k axes of any rank
        return None
    fixed = _nonnegative_axes(axes, rank)
    if fixed is None:
        return None
    if np.array_equal(fixed, np.arange(rank)):
        return True
    if pads is None or pads.size != 2 * fixed.size:
        return None
    return expand_pads(pads, fixed, rank)


def expand_pads(pads: np.ndarray, axes: np.ndarray, rank: int) -> np.ndarray:
    """Pads ``[begins of axes..., ends of axes...]`` rewritten for every axis 0..rank-1."""
    full = np.zeros(2 * rank, dtype=np.int64)
    full[axes] = pads[: axes.size]
    full[rank + axes] = pads[axes.size :]
    return full


def _listed(value: np.ndarray | None) -> Any:
    return None if value is None else value.tolist()


def _trim(inputs: Sequence[str]) -> tuple[str, ...]:
    """Drop trailing omitted inputs, as ONNX writes them."""
    out = list(inputs)
    while out and out[-1] == "":
        out.pop()
    return tuple(out)
