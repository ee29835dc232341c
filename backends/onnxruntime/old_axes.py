"""Old ops' axes written as onnx's inference sizes them, in the models dmlgraph makes for
onnxruntime: a Scan's body otherwise has outputs of no shape, which onnxruntime fails on.

onnxruntime's Scan (8 and 9+) sizes its outputs by the shapes inference (onnx's, which it
runs) gives its body's outputs, and fails at run time where one has none ("Subgraph must
have the shape set for all outputs but X did not"). Early versions of some ops define axes
only in a form their inference sizes; onnxruntime's kernels and onnx.reference take others
too, as later versions define them, and their inference then sizes nothing, nor what a body
makes of it (``OLD_AXES``). onnxruntime ran such an opset-8 model (a Scan-8 body's
Transpose, Concat on axis -1, Pad) only with its TransposeOptimizer on, which rewrote the
Concat: a fallback segment or a lowered graph, sessions without it
(``providers.VALUE_REWRITES``), failed where the model ran. Unoptimized, onnxruntime fails on
the model itself; rewritten, it runs it as ONNX says.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import onnx

from dmlgraph.canonical import known_since_version
from dmlgraph.subgraphs import attribute_graphs, nested_nodes


def _ints(node: onnx.NodeProto, name: str) -> onnx.AttributeProto | None:
    """The node's attribute ``name`` where it is an int or a list of ints."""
    kinds = (onnx.AttributeProto.INT, onnx.AttributeProto.INTS)
    return next((a for a in node.attribute if a.name == name and a.type in kinds), None)


def _concat_uncounted(node: onnx.NodeProto) -> bool:
    """A Concat-1/4 on a negative axis (Concat-11 defines it: counted from the end)."""
    axis = _ints(node, "axis")
    return axis is not None and axis.i < 0


def _count_concat(node: onnx.NodeProto, rank: int | None) -> bool:
    """Its negative axis counted from the end, where ``rank`` (its inputs') is known and the
    axis in range; whether it was."""
    axis = _ints(node, "axis")
    if axis is None or axis.i >= 0 or rank is None or axis.i < -rank:
        return False
    axis.i += rank
    return True


def _slice_uncounted(node: onnx.NodeProto) -> bool:
    """A Slice-1 whose axes are not increasing or hold a negative one (inference walks them
    in order, each from 0; Slice-10 defines negative ones, counted from the end)."""
    axes = _ints(node, "axes")
    found = list(axes.ints) if axes is not None else []
    return any(a < 0 for a in found) or found != sorted(set(found))


def _count_slice(node: onnx.NodeProto, rank: int | None) -> bool:
    """Its axes counted from the end (by ``rank``, its data's, where one is negative) and put
    in increasing order, each start and end with its axis; whether they were. Axes out of
    range or repeated, or starts and ends not one per axis, stay as they are (onnxruntime
    refuses them)."""
    axes, starts, ends = _ints(node, "axes"), _ints(node, "starts"), _ints(node, "ends")
    if axes is None or starts is None or ends is None or not _slice_uncounted(node):
        return False
    given = list(axes.ints)
    if len(starts.ints) != len(given) or len(ends.ints) != len(given):
        return False
    if any(a < 0 for a in given):
        if rank is None or any(not -rank <= a < rank for a in given):
            return False
        given = [a + rank if a < 0 else a for a in given]
    if len(set(given)) != len(given):
        return False
    order = sorted(range(len(given)), key=given.__getitem__)
    starts.ints[:] = [starts.ints[k] for k in order]
    ends.ints[:] = [ends.ints[k] for k in order]
    axes.ints[:] = [given[k] for k in order]
    return True


@dataclass(frozen=True)
class OldAxes:
    """An op whose versions before ``sized_since`` take axes in forms their inference sizes
    nothing by, though onnxruntime's kernel runs them: which nodes are of such a form, and
    how one is rewritten by its (first ranked) input's rank as the form inference sizes."""

    sized_since: int
    uncounted: Callable[[onnx.NodeProto], bool]
    count: Callable[[onnx.NodeProto, int | None], bool]


#: The ops ``count_old_axes`` rewrites, as data (measured on onnxruntime 1.32, in a Scan-8's
#: body: each form failed for want of its output's shape, and ran rewritten).
OLD_AXES: Mapping[str, OldAxes] = {
    "Concat": OldAxes(11, _concat_uncounted, _count_concat),
    "Slice": OldAxes(10, _slice_uncounted, _count_slice),
}


def count_old_axes(model: onnx.ModelProto) -> onnx.ModelProto:
    """``model``, or where a Scan of it (at any depth) may have a body inference cannot size
    (a node of ``OLD_AXES`` in a subgraph, in a form its version's inference sizes nothing
    by), a copy with each such node's axes rewritten as that inference sizes them: axes
    counted from the end by the rank inference gives the node's input (the value ONNX's
    later versions, onnxruntime's kernel and onnx.reference read one as), a Slice-1's in
    increasing order. As many passes of inference as it takes, each rewriting the nodes
    whose ranks it gave (a Concat of such a Concat's result is ranked only once that one is
    counted); a node of no rank known, or of axes out of range, stays as it is (onnxruntime
    says where it fails)."""
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 1)
    ops = {op: row for op, row in OLD_AXES.items()
           if (known_since_version(op, "", opset) or row.sized_since) < row.sized_since}
    if not ops or not _may_need(model.graph, ops):
        return model
    counted = onnx.ModelProto()
    counted.CopyFrom(model)
    while True:
        try:
            inferred = onnx.shape_inference.infer_shapes(
                counted, check_type=False, strict_mode=False)
        except Exception:  # (inference refuses it: onnxruntime says why, in its words)
            return counted
        if not _count(counted.graph, inferred.graph, {}, ops):
            return counted


def _of(node: onnx.NodeProto, ops: Mapping[str, OldAxes]) -> OldAxes | None:
    """The node's row of ``ops`` where it is in a form its inference sizes nothing by."""
    row = ops.get(node.op_type) if node.domain in ("", "ai.onnx") else None
    return row if row is not None and row.uncounted(node) else None


def _may_need(graph: onnx.GraphProto, ops: Mapping[str, OldAxes]) -> bool:
    """Whether the graph holds a Scan (at any depth) and, in a subgraph, a node of ``ops``
    in such a form: the one case rewriting changes what onnxruntime runs."""
    held = [inner for node in graph.node for attr in node.attribute
            for sub in attribute_graphs(attr) for inner in nested_nodes(sub)]
    return any(node.op_type == "Scan" for node in (*graph.node, *held)) and any(
        _of(node, ops) is not None for node in held)


def _count(graph: onnx.GraphProto, inferred: onnx.GraphProto, outer: Mapping[str, int],
           ops: Mapping[str, OldAxes]) -> bool:
    """Rewrite each node of ``ops`` in ``graph`` and its subgraphs in such a form by the rank
    ``inferred`` (``graph`` as inference gave it back, node for node) gives its inputs
    (``outer``: the ranks of the enclosing graphs' tensors); whether any was."""
    ranks = dict(outer)
    for name in (*(v.name for v in graph.input), *(o for n in graph.node for o in n.output)):
        ranks.pop(name, None)  # (its own, not an enclosing tensor of that name)
    ranks.update((tensor.name, len(tensor.dims)) for tensor in graph.initializer)
    for value in (*inferred.input, *inferred.value_info, *inferred.output):
        if value.type.tensor_type.HasField("shape"):
            ranks[value.name] = len(value.type.tensor_type.shape.dim)
    changed = False
    for node, seen in zip(graph.node, inferred.node):
        row = _of(node, ops)
        if row is not None:
            changed |= row.count(node, next(
                (ranks[name] for name in node.input if name in ranks), None))
        for attr, inferred_attr in zip(node.attribute, seen.attribute):
            for sub, inferred_sub in zip(attribute_graphs(attr), attribute_graphs(inferred_attr)):
                changed |= _count(sub, inferred_sub, ranks, ops)
    return changed
