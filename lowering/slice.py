"""ONNX Slice (versions 1 to 13) -> a logical slice, an empty constant, or nothing at all.

ONNX's index rules (Slice-13): a negative start or end counts from the end of the dimension;
then, for a positive step, both clamp to [0, dim]; for a negative step the start clamps to
[0, dim - 1] and the end to [-1, dim - 1]. The sentinels INT64_MAX and INT64_MIN are just
large values under these rules (onnxruntime reads INT32_MAX and INT64_MAX ends with a
negative step otherwise: a declared divergence, ``shape_kernels.ort_reversed_end``). This is
not Python's ``slice.indices``, which sends a start before the beginning to -1 (empty) where
ONNX clamps it to 0. Whatever the parameters, the result is a start, a step and a count per
axis.
"""

from __future__ import annotations

import numpy as np

from dmlgraph.canonical import PARAMETER_PORTS
from dmlgraph.shape_kernels import ort_reversed_end
from lowering.logical import LogicalSlice
from lowering.registry import Rewriter, Unlowerable, rule

def runtime_reason(rw: Rewriter, ports: dict[str, int]) -> str:
    """Why some parameter is not a constant ("" when all are)."""
    missing = [
        f
        for f, port in ports.items()
        if rw.node.input(port) and not rw.graph.is_constant(rw.node.input(port))
    ]
    if not missing:
        return ""
    notes = [n for n in rw.node.notes if n.startswith("runtime parameter")]
    why = f" ({'; '.join(notes)})" if notes else ""
    return (
        f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} known only at run time"
        f"{why}; DirectML descriptors hold them as constants, so the backend lowers this node "
        "when the values arrive"
    )


def resolve(start: int, end: int, step: int, dim: int) -> tuple[int, int]:
    """ONNX's (first index, element count) of one axis."""
    if dim == 0:
        return 0, 0
    start = start + dim if start < 0 else start
    end = end + dim if end < 0 else end
    if step > 0:
        start, end = min(max(start, 0), dim), min(max(end, 0), dim)
        return start, max(0, -(-(end - start) // step))
    start, end = min(max(start, 0), dim - 1), min(max(end, -1), dim - 1)
    return start, max(0, -(-(start - end) // -step))


@rule("Slice", 1, 13)
def lower_slice(rw: Rewriter) -> None:
    node, graph = rw.node, rw.graph
    ports = dict(PARAMETER_PORTS["Slice"])
    reason = runtime_reason(rw, ports)
    if reason:
        raise Unlowerable(reason)
    data = node.inputs[0]
    shape = rw.static_shape(data, "input", ruled=True)
    params = {f: graph.constant(node.input(p)) for f, p in ports.items()}
    axes = params["axes"]
    if params["steps"] is None or axes is None or not all(
        0 <= a < len(shape) for a in axes.reshape(-1).tolist()  # (NumPy's any: 3.3 µs a Slice)
    ):
        # import writes defaults and checks axes by the data's rank: known only now
        node = rw.normalize_again(data)
        params = {f: graph.constant(node.input(p)) for f, p in ports.items()}
    starts_p, ends_p, axes_p, steps_p = (
        [int(v) for v in np.asarray(params[f]).reshape(-1)]
        for f in ("starts", "ends", "axes", "steps")
    )
    starts, steps, sizes = [0] * len(shape), [1] * len(shape), list(shape)
    for start, end, axis, step in zip(starts_p, ends_p, axes_p, steps_p):
        first, count = resolve(start, end, step, shape[axis])
        # one element is read the same in either direction: keep steps positive then
        starts[axis], steps[axis], sizes[axis] = first, step if count > 1 else 1, count
        sentinel = ort_reversed_end(end, step)
        if sentinel:
            rw.note(
                f"divergence: axis {axis} has step {step} and end {sentinel}; ONNX clamps "
                "that end to dim - 1, so the slice stops before it, while onnxruntime's CPU "
                "kernel reads it as 'through index 0'"
            )
    out_shape = tuple(sizes)
    if not shape:
        rw.note(
            "divergence: a scalar has no axis to slice (starts and ends are empty), so the "
            "result is the input, as ONNX's reference gives it; onnxruntime fails on it at run "
            "time (\"Cannot slice scalars\")"
        )
    if 0 in out_shape:
        rw.rely_on_sizes((data,), "an empty result")
        rw.become_constant(
            np.zeros(out_shape, dtype=rw.dtype(data)),
            f"the result is empty (shape {list(out_shape)}); DirectML cannot describe a "
            "zero-size tensor, so it is an empty constant",
        )
        return
    op = LogicalSlice(tuple(starts), tuple(steps), out_shape)
    if not op.touched(shape):
        if node.outputs[0] in graph.outputs:
            rw.note(
                "the slice selects everything; it stays a copy because its result is a graph "
                "output"
            )
        else:
            rw.rely_on_sizes((data,), "selecting everything")
            rw.become_alias(data, "the slice selects everything: its output is its input")
            return
    rw.emit(op, (data,), out_shape, last=True)
