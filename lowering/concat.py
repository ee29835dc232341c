"""ONNX Concat (versions 1 to 13) -> a logical join of its non-empty inputs.

Inputs empty along the axis add nothing and are dropped (DirectML cannot describe them); an
empty result becomes an empty constant; a single remaining input is the result itself.
"""

from __future__ import annotations

import numpy as np

from dmlgraph.canonical import concat_axis
from lowering.logical import LogicalJoin
from lowering.registry import Rewriter, rule


@rule("Concat", 1, 13)
def lower_concat(rw: Rewriter) -> None:
    node = rw.node
    if node.provenance.since_version < 4:
        rw.note(
            "divergence: onnxruntime has no kernel for Concat before opset 4, so it cannot run "
            "the original node"
        )
    shapes = [rw.static_shape(x, f"input {i}", ruled=True) for i, x in enumerate(node.inputs)]
    rank = len(shapes[0])
    axis = concat_axis(node, rw.where)
    if not -rank <= axis < rank:  # import could not check it: the rank is known only now
        node = rw.normalize_again(node.inputs[0])
        axis = concat_axis(node, rw.where)
    axis = axis + rank if axis < 0 else axis
    for i, shape in enumerate(shapes):
        if len(shape) != rank or any(
            a != axis and d != shapes[0][a] for a, d in enumerate(shape)
        ):
            rw.refuse(
                node.inputs,
                f"input {i} {node.inputs[i]!r} has shape {list(shape)}; every input must "
                f"match input 0 {list(shapes[0])} except along axis {axis}",
            )
    out_shape = list(shapes[0])
    out_shape[axis] = sum(s[axis] for s in shapes)
    if 0 in out_shape:
        rw.rely_on_sizes(node.inputs, "an empty result")
        rw.become_constant(
            np.zeros(out_shape, dtype=rw.dtype(node.inputs[0])),
            f"the result is empty (shape {out_shape}); DirectML cannot describe a zero-size "
            "tensor, so it is an empty constant",
        )
        return
    kept = [(x, s) for x, s in zip(node.inputs, shapes) if s[axis] > 0]
    rw.rely_on_sizes((x for x, s in zip(node.inputs, shapes) if s[axis] == 0), "dropping an input")
    if len(kept) < len(shapes):
        dropped = [f"{x!r}" for x, s in zip(node.inputs, shapes) if s[axis] == 0]
        rw.note(
            f"input(s) {', '.join(dropped)} are empty along axis {axis} and add nothing; "
            "they are dropped, as DirectML cannot describe a zero-size tensor"
        )
    if len(kept) == 1 and node.outputs[0] not in rw.graph.outputs:
        rw.become_alias(kept[0][0], "only one input is not empty: the output is that input")
        return
    if len(kept) == 1:
        rw.note(
            "one input remains; it stays a copy (a one-input JOIN) because its result is a "
            "graph output"
        )
    rw.emit(LogicalJoin(axis), tuple(x for x, _ in kept), tuple(out_shape), last=True)
