"""Negative axes of old ops counted from the end in the models dmlgraph makes for onnxruntime,
where onnx's inference (which onnxruntime runs) does not count them and so sizes nothing.

onnxruntime's Scan (8 and 9+) sizes its outputs by the shapes inference gives its body's
outputs, and fails at run time where one has none ("Subgraph must have the shape set for all
outputs but X did not"). Concat-1 and Concat-4 define only non-negative axes, yet
onnxruntime's kernel and onnx.reference count a negative one from the end, as Concat-11 does;
their inference gives up on it (no shape at all), and so does that of all a body makes from
it. onnxruntime ran such an opset-8 model (a Scan-8 body's Transpose, Concat on axis -1, Pad)
only with its TransposeOptimizer on, which rewrites the Concat: a fallback segment or a
lowered graph, sessions without it (``providers.VALUE_REWRITES``), failed where the model ran.
Unoptimized, onnxruntime fails on the model itself; counted, it runs it as ONNX says.
"""

from __future__ import annotations

from collections.abc import Mapping

import onnx

from dmlgraph.canonical import known_since_version
from dmlgraph.subgraphs import attribute_graphs, nested_nodes

#: The ops whose early versions take an axis attribute onnx's inference sizes nothing by where
#: it is negative, each with that attribute and the version from which a negative one counts
#: from the end (and is inferred).
UNCOUNTED_AXES: Mapping[str, tuple[str, int]] = {"Concat": ("axis", 11)}


def count_old_axes(model: onnx.ModelProto) -> onnx.ModelProto:
    """``model``, or where a Scan of it (at any depth) may have a body inference cannot size
    (``UNCOUNTED_AXES``: such an axis in a subgraph), a copy with each such axis counted from
    the end by the rank inference gives the node's inputs: the value ONNX's later versions,
    onnxruntime's kernel and onnx.reference read it as, and one its inference sizes by. As
    many passes of inference as it takes, each counting the axes whose ranks it gave (a
    Concat of such a Concat's result is ranked only once that one is counted); an axis of
    no rank known, or out of range, stays as it is (onnxruntime says where it fails)."""
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 1)
    ops = {op: attr for op, (attr, counted) in UNCOUNTED_AXES.items()
           if (known_since_version(op, "", opset) or counted) < counted}
    if not ops or not _may_need(model.graph, ops):
        return model
    counted_model = onnx.ModelProto()
    counted_model.CopyFrom(model)
    while True:
        try:
            inferred = onnx.shape_inference.infer_shapes(
                counted_model, check_type=False, strict_mode=False)
        except Exception:  # (inference refuses it: onnxruntime says why, in its words)
            return counted_model
        if not _count(counted_model.graph, inferred.graph, {}, ops):
            return counted_model


def _may_need(graph: onnx.GraphProto, ops: Mapping[str, str]) -> bool:
    """Whether the graph holds a Scan (at any depth) and, in a subgraph, an axis of ``ops``
    that is negative: the one case counting changes what onnxruntime runs."""
    held = [inner for node in graph.node for attr in node.attribute
            for sub in attribute_graphs(attr) for inner in nested_nodes(sub)]
    return any(node.op_type == "Scan" for node in (*graph.node, *held)) and any(
        _negative(node, ops) is not None for node in held)


def _negative(node: onnx.NodeProto, ops: Mapping[str, str]) -> onnx.AttributeProto | None:
    """The node's axis attribute of ``ops`` where it is negative, else None."""
    name = ops.get(node.op_type) if node.domain in ("", "ai.onnx") else None
    return next((attr for attr in node.attribute if attr.name == name
                 and attr.type == onnx.AttributeProto.INT and attr.i < 0), None)


def _count(graph: onnx.GraphProto, inferred: onnx.GraphProto, outer: Mapping[str, int],
           ops: Mapping[str, str]) -> bool:
    """Count from the end each negative axis of ``ops`` in ``graph`` and its subgraphs whose
    node's inputs ``inferred`` (``graph`` as inference gave it back, node for node) ranks
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
        axis = _negative(node, ops)
        rank = next((ranks[name] for name in node.input if name in ranks), None)
        if axis is not None and rank is not None and axis.i >= -rank:
            axis.i += rank
            changed = True
        for attr, inferred_attr in zip(node.attribute, seen.attribute):
            for sub, inferred_sub in zip(attribute_graphs(attr), attribute_graphs(inferred_attr)):
                changed |= _count(sub, inferred_sub, ranks, ops)
    return changed
