"""ONNX Pad (versions 2 to 25) -> logical crop and pad ops in DirectML's modes.

ONNX negative pads remove elements: the crop comes first, then the padding, so a Pad with both
becomes a slice followed by a pad. Mode names map to DirectML's: constant -> CONSTANT,
edge -> EDGE, reflect -> REFLECTION, wrap -> WRAP. Reflecting a single element has nothing to
mirror (DirectML's period 2 * (n - 1) is 0), so such axes pad in EDGE mode, which repeats the
element as NumPy does. Reflection by at least the dimension is left undefined by ONNX and
refused by onnxruntime; it is lowered with DirectML's periodic meaning and noted.
"""

from __future__ import annotations

import math

import numpy as np

from dmlgraph.canonical import (
    PARAMETER_PORTS,
    default_pad_value,
    empty_axis_refusal,
    expand_pads,
    pad_mode,
)
from dmlgraph.dml.enums import PaddingMode
from dmlgraph.errors import counted
from dmlgraph.folding import FOLD_GROWTH_LIMIT_BYTES
from dmlgraph.ort_pad import PadDivergenceKind as Kind
from dmlgraph.ort_pad import pad_divergences
from lowering.logical import LogicalPad, LogicalSlice
from lowering.registry import Rewriter, Unlowerable, rule
from lowering.slice import runtime_reason

MODES: dict[str, PaddingMode] = {
    "constant": PaddingMode.CONSTANT,
    "edge": PaddingMode.EDGE,
    "reflect": PaddingMode.REFLECTION,
    "wrap": PaddingMode.WRAP,
}


@rule("Pad", 2, 25)
def lower_pad(rw: Rewriter) -> None:
    node, graph = rw.node, rw.graph
    reason = runtime_reason(rw, dict(PARAMETER_PORTS["Pad"]))
    if reason:
        raise Unlowerable(reason)
    data = node.inputs[0]
    shape = rw.static_shape(data, "input", ruled=True)
    if not node.input(3):
        node = rw.normalize_again(data)
    dtype = rw.dtype(data)
    rank = len(shape)
    mode_name = pad_mode(node.op)
    mode = MODES[mode_name]
    pads_data = graph.constant(node.input(1))
    if pads_data is None:  # ONNX requires pads; only a graph built by hand can lack them
        raise Unlowerable("pads is missing")
    given = graph.constant(node.input(3)) if node.input(3) else None
    if given is not None:  # left counted from the end where the rank is unsure (normalize)
        pads_data = expand_pads(pads_data.reshape(-1), given % max(rank, 1), rank)
    pads = [int(p) for p in pads_data.reshape(-1)]
    value_data = graph.constant(node.input(2)) if node.input(2) else None
    if value_data is None or value_data.size == 0:
        value = default_pad_value(dtype)
    else:
        value = np.asarray(value_data).reshape(-1)[:1].reshape(()).astype(dtype)
    begins, ends = pads[:rank], pads[rank:]
    divergences = {d.kind: d for d in pad_divergences(shape, mode_name, pads)}
    for kind in (Kind.SCALAR, Kind.WRAP_EMPTY, Kind.EMPTY_AXIS, Kind.ZERO_EXTENT):  # as they are
        if kind in divergences:
            rw.note(f"divergence: {divergences[kind].text}")
    crop_begin = [max(0, -p) for p in begins]
    crop_end = [max(0, -p) for p in ends]
    cropped = tuple(n - b - e for n, b, e in zip(shape, crop_begin, crop_end))
    out_shape = tuple(n + b + e for n, b, e in zip(shape, begins, ends))
    if 0 in shape and 0 in out_shape and min(out_shape) >= 0:
        # no element to pad, none in the result: ONNX's result is empty in every mode,
        # whatever the crops would remove from the input's other axes (onnxruntime refuses
        # some: ``pad_divergences``)
        rw.rely_on_sizes((data,), "an empty or all-padding result")
        rw.become_constant(
            np.zeros(out_shape, dtype=dtype),
            f"the input and the result are empty (shapes {list(shape)} and {list(out_shape)}); "
            "DirectML cannot describe a zero-size tensor, so it is an empty constant",
        )
        return
    if any(c < 0 for c in cropped) and (mode is not PaddingMode.CONSTANT or min(out_shape) < 0):
        # a constant pad's crop may reach into the other side's padding (onnxruntime pads,
        # then crops: [5] padded by [3, -2] is [9, 9]); nothing else may remove more
        axis = next(a for a, c in enumerate(cropped) if c < 0)
        rw.refuse(
            (data,),
            f"pads {pads} remove {counted(crop_begin[axis] + crop_end[axis], 'element')} from axis "
            f"{axis}, which has {shape[axis]}",
        )
    add_begin = tuple(max(0, p) for p in begins)
    add_end = tuple(max(0, p) for p in ends)
    if 0 in out_shape:
        rw.rely_on_sizes((data,), "an empty or all-padding result")
        rw.become_constant(
            np.zeros(out_shape, dtype=dtype),
            f"the result is empty (shape {list(out_shape)}); DirectML cannot describe a "
            "zero-size tensor, so it is an empty constant",
        )
        return
    if cropped and min(cropped) <= 0:
        axis = next(a for a, c in enumerate(cropped) if c <= 0)
        # empty as given, or made so by negative pads
        empty = "is empty" if shape[axis] == 0 else f"is empty after the crop of pads {pads}"
        if mode is not PaddingMode.CONSTANT:
            rw.refuse((data,), empty_axis_refusal(mode_name, axis, empty))
        nbytes = math.prod(out_shape) * dtype.itemsize
        why = (
            f"axis {axis} {empty}, so the result is all padding: a constant "
            f"of shape {list(out_shape)}"
        )
        if nbytes > FOLD_GROWTH_LIMIT_BYTES:  # folding's bound on the constant data it adds
            raise Unlowerable(
                f"{why}, {nbytes} bytes, more than the {FOLD_GROWTH_LIMIT_BYTES} bytes of "
                "constant data dmlgraph adds for a node"
            )
        rw.rely_on_sizes((data,), "an empty or all-padding result")
        rw.become_constant(np.full(out_shape, value, dtype=dtype), why)
        return
    pad_axes = [a for a in range(rank) if add_begin[a] or add_end[a]]
    crop = any(crop_begin) or any(crop_end)
    if not crop and not pad_axes:
        if node.outputs[0] not in graph.outputs:
            rw.become_alias(data, "all pads are 0: the output is the input")
            return
        rw.note("all pads are 0; it stays a copy because its result is a graph output")
    if crop:
        rw.note(
            f"negative pads remove elements first (ONNX crops, then pads): a slice of "
            f"{list(cropped)} from {list(shape)}"
        )
    current, current_shape = data, shape
    stages: list[tuple[PaddingMode, list[int]]] = []
    if mode is PaddingMode.REFLECTION:
        single = divergences.get(Kind.REFLECT_SIZE_1)
        if single:
            rw.note(
                f"divergence: {single.text}; padded in EDGE mode, which repeats the element "
                "as NumPy does"
            )
            stages.append((PaddingMode.EDGE, list(single.axes)))
        stages.append((mode, [a for a in pad_axes if cropped[a] > 1]))
        beyond = divergences.get(Kind.REFLECT_BEYOND)
        if beyond:
            rw.note(f"divergence: {beyond.text}; lowered with DirectML's periodic reflection")
    else:
        stages.append((mode, pad_axes))
    stages = [(m, axes) for m, axes in stages if axes] or [(mode, [])]
    if crop:
        crop_op = LogicalSlice(tuple(crop_begin), (1,) * rank, cropped)
        last = not pad_axes
        current = rw.emit(crop_op, (current,), cropped, last=last)
        current_shape = cropped
        if last:
            return
    for k, (stage_mode, axes) in enumerate(stages):
        starts = tuple(add_begin[a] if a in axes else 0 for a in range(rank))
        stops = tuple(add_end[a] if a in axes else 0 for a in range(rank))
        next_shape = tuple(n + s + e for n, s, e in zip(current_shape, starts, stops))
        op = LogicalPad(stage_mode, value, starts, stops)
        current = rw.emit(op, (current,), next_shape, last=k == len(stages) - 1)
        current_shape = next_shape
