"""What an If's branches and a Loop's or Scan's body become, listed ahead of any run.

The NumPy backend lowers a control-flow node's subgraphs when it runs them, by the sizes
that arrive (``backends.numpy.control``), as onnxruntime's DirectML provider partitions
them. To show their descriptors without a run, ``held_lowerings`` lowers each subgraph that
holds a Slice, Concat or Pad the same way, as a model of its own, with its inputs typed as
the enclosing graph types them: the enclosing tensors it reads by their inferred types
(small constants by value), a Loop body's iteration number and condition as the int64 and
bool scalars they are, and its carried values as the Loop's initial values, so the body is
listed as its first trip sees it; a Scan body's state variables as the initial ones, and
each scan input's slice as the input without its scan axis. A carried value that changes
size from trip to trip, or a size only a run tells, is lowered again at run time by the
sizes that arrive then (and ``run``/``check`` list what it became).
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import onnx

from dmlgraph import folding
from dmlgraph.canonical import LOWERED_OPS
from dmlgraph.errors import DmlgraphError
from dmlgraph.ir import Graph, Node, OnnxOp, Subgraph, TensorInfo, split_inputs
from dmlgraph.subgraphs import (
    ScanForm,
    holder_label,
    lowered_when_run,
    scan_form,
    scan_slice,
    subgraph_model,
)
from dmlgraph.value_info import tensor_info, value_info
from lowering.report import LoweredGraph


@dataclass(frozen=True)
class HeldLowering:
    """One subgraph lowered by itself: the node holding it (``path`` names the enclosing
    nodes too, for a subgraph within a subgraph), the types its inputs were given, and the
    lowered graph (None, with ``problem`` saying why, where it cannot be lowered so)."""

    path: str  # "Loop '/Loop' body: If '/If' then_branch"
    node: str
    op_type: str
    attribute: str
    typed_as: tuple[TensorInfo, ...]  # its inputs, as typed (no data)
    lowered: LoweredGraph | None
    problem: str = ""


def held_lowerings(
    lowered: LoweredGraph, within: str = "", *, only: Collection[int] | None = None
) -> list[HeldLowering]:
    """Each If branch and Loop or Scan body of ``lowered``'s ONNX nodes that holds a Slice,
    Concat or Pad, lowered at ``lowered``'s feature level with its inputs typed as ``lowered`` types
    them (see the module's docstring); not the subgraphs within them (``held_lowerings`` of
    each one's ``lowered`` gives those). ``only``: of the nodes with these ids only."""
    found: list[HeldLowering] = []
    for node in lowered.topological_order():
        if only is not None and node.id not in only:
            continue
        op = node.op
        for attr in lowered_when_run(op):
            sub = op.attrs.get(attr)
            if sub is None or not any(name in LOWERED_OPS for name in sub.ops):
                continue
            where = f"{within}{op.op_type} {holder_label(node.name, node.outputs)} {attr}"
            found.append(_held(lowered, node, attr, where))
    return found


def every_held(
    lowered: LoweredGraph, *, only: Collection[int] | None = None
) -> Iterator[HeldLowering]:
    """``held_lowerings`` of ``lowered``, each followed by those within it, depth first,
    their paths naming every enclosing node: what a flat listing shows. ``only``: of the
    nodes of ``lowered`` with these ids only (and all within them)."""
    def walk(
        graph: LoweredGraph, within: str, only: Collection[int] | None = None
    ) -> Iterator[HeldLowering]:
        for held in held_lowerings(graph, within, only=only):
            yield held
            if held.lowered is not None:
                yield from walk(held.lowered, f"{held.path}: ")

    return walk(lowered, "", only)


def _held(graph: LoweredGraph, node: Node, attr: str, path: str) -> HeldLowering:
    op = node.op
    assert isinstance(op, OnnxOp)
    sub = op.attrs[attr]
    explicit, outer = split_inputs(node)
    infos: dict[str, TensorInfo] = {}
    constants: dict[str, np.ndarray] = {}
    for old in sub.outer:
        info = graph.tensors.get(outer.get(old, old))
        value = None if info is None else info.data
        if value is not None and value.size <= folding.INFERENCE_CONSTANT_LIMIT:
            constants[old] = value
        else:
            infos[old] = _typed(old, info)
    problem = ""
    body = onnx.GraphProto.FromString(sub.data)
    declared = body.input
    formal = [value.name for value in declared]
    if op.op_type == "Loop":
        # iteration number, condition, then the carried values: as the Loop's initial ones
        infos[formal[0]] = TensorInfo(formal[0], dtype="int64", shape=())
        infos[formal[1]] = TensorInfo(formal[1], dtype="bool", shape=())
        for value, given in zip(declared[2:], explicit[2:]):
            infos[value.name] = _fed(value, graph.tensors.get(given), path)
    elif op.op_type == "Scan":
        form = scan_form(op.attrs, len(explicit), len(node.outputs), len(declared),
                         len(body.output))
        problem = _scan_typed(graph, form, explicit, declared, infos, path)
    typed = tuple(infos[name] for name in [*formal, *sub.outer] if name in infos)
    unknown = [info.name for info in typed if info.dtype is None]
    if unknown and not problem:
        problem = (f"the type of {', '.join(map(repr, unknown))} is known only when it runs "
                   "(a run lists what its nodes become)")
    lowered = None
    if not problem:
        try:
            lowered = _lowered(graph, sub, node, attr, infos, constants, path)
        except DmlgraphError as exc:  # named by the model made of it: the path says that
            text = str(exc).removeprefix(f"<ModelProto {_model_name(node, attr)}>: ")
            problem = f"it cannot be lowered by itself: {text}"
    return HeldLowering(path, node.name, op.op_type, attr, typed, lowered, problem)


def _lowered(
    graph: LoweredGraph,
    sub: Subgraph,
    node: Node,
    attr: str,
    infos: dict[str, TensorInfo],
    constants: dict[str, np.ndarray],
    path: str,
) -> LoweredGraph:
    from dmlgraph.importer import load
    from lowering import lower

    types = {name: value_info(info).type for name, info in infos.items()}
    model = subgraph_model(
        sub, _model_name(node, attr), types, constants, graph.opset_imports,
        graph.ir_version,
    )
    imported: Graph = load(model)
    imported.source = f"{graph.source or 'the model'}: {path}"
    return lower(imported, graph.feature_level)


def _fed(value: onnx.ValueInfoProto, given: TensorInfo | None, path: str) -> TensorInfo:
    """A body input fed from the enclosing graph's ``given`` (a Loop's carried value, a
    Scan's state variable): typed as ``given``, or as the body declares it where the enclosing
    graph knows less."""
    info = _typed(value.name, given)
    if info.dtype is None or info.shape is None:
        try:
            said = tensor_info(value, path)
        except DmlgraphError:  # not a tensor: the import says so
            said = info
        info = said if said.dtype is not None else info
    return info


def _scan_typed(
    graph: LoweredGraph,
    form: ScanForm,
    explicit: tuple[str, ...],
    declared: Sequence[onnx.ValueInfoProto],
    infos: dict[str, TensorInfo],
    path: str,
) -> str:
    """A Scan body's inputs typed into ``infos``: its state variables as the initial ones, a
    scan input's slice as the input without its scan axis (as the body declares it where the
    input's shape is not known); why not ("" where they are)."""
    for value, given in zip(declared[: form.states], explicit[: form.states]):
        infos[value.name] = _fed(value, graph.tensors.get(given), path)
    for index, (value, given, axis) in enumerate(
        zip(declared[form.states :], explicit[form.states :], form.input_axes)
    ):
        scanned = graph.tensors.get(given)
        if scanned is None or scanned.shape is None or scanned.dtype is None:
            infos[value.name] = _fed(value, None, path)
            continue
        try:
            shape = scan_slice(scanned.shape, axis, index)
        except ValueError as exc:
            return f"its scan input {given!r} is of shape {list(scanned.shape)}: {exc}"
        infos[value.name] = TensorInfo(value.name, dtype=scanned.dtype, shape=shape)
    return ""


def _model_name(node: Node, attr: str) -> str:
    return f"{node.name or node.op_type}.{attr}"


def _typed(name: str, info: TensorInfo | None) -> TensorInfo:
    """``info``'s type under ``name``, without its data (unknown where there is none)."""
    return TensorInfo(name) if info is None else TensorInfo(name, dtype=info.dtype,
                                                              shape=info.shape)
