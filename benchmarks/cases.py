"""The ONNX models the benchmarks run: single nodes, long chains and large synthetic graphs.

Models are built with ``onnx.helper`` at opset 19 (the first with Pad's ``wrap`` mode) and IR
version 10, which both onnxruntime 1.31 (at most IR 13) and dmlgraph load. Every computation
depends on a graph input, so neither dmlgraph's importer nor onnxruntime can fold it away.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 19
IR_VERSION = 10
FLOAT = TensorProto.FLOAT
MODELS_DIR = Path(__file__).resolve().parent.parent / "models"
#: The real models of the lowering section, by file stem.
REAL_MODELS: tuple[str, ...] = (
    "shufflenet_v2_x0_5",
    "squeezenet1_1",
    "tf_mobilenetv3_small_minimal",
    "encodec_encoder_reflect",
)
#: Where each real model's reference input lies in ``models/reference_io.npz``.
REFERENCE_IO = MODELS_DIR / "reference_io.npz"
Shape = tuple[int, ...]


@dataclass(frozen=True, eq=False)
class Case:
    """A model to run and its input shapes (float32 inputs, one float32 output ``y``).

    ``read_bytes``: the input bytes memory must deliver, where that is less than the inputs:
    the 64-byte lines that hold an element the node reads. A slice of the leading half reads
    half its input; a step-2 slice of 4-byte items reads every line (each holds eight selected
    items), so its bound is a copy of that traffic, not of the selected bytes alone."""

    name: str
    op: str
    model: onnx.ModelProto
    inputs: tuple[tuple[str, Shape], ...]
    output_shape: Shape
    read_bytes: int | None = None

    def feeds(self, seed: int = 0) -> dict[str, np.ndarray]:
        """Random normal inputs: every bit pattern of a finite float moves as is."""
        rng = np.random.default_rng(seed)
        return {name: rng.standard_normal(shape, dtype=np.float32) for name, shape in self.inputs}

    @property
    def input_bytes(self) -> int:
        return sum(4 * int(np.prod(shape)) for _, shape in self.inputs)

    @property
    def output_bytes(self) -> int:
        return 4 * int(np.prod(self.output_shape))

    @property
    def bytes_moved(self) -> int:
        """Bytes the node must read plus bytes it writes: what a copy of the same work moves."""
        read = self.input_bytes if self.read_bytes is None else self.read_bytes
        return read + self.output_bytes


def make_model(
    nodes: Sequence[onnx.NodeProto],
    inputs: Sequence[tuple[str, Shape]],
    outputs: Sequence[tuple[str, Shape]],
    initializers: Sequence[onnx.TensorProto] = (),
    name: str = "benchmark",
) -> onnx.ModelProto:
    graph = helper.make_graph(
        list(nodes),
        name,
        [helper.make_tensor_value_info(n, FLOAT, list(s)) for n, s in inputs],
        [helper.make_tensor_value_info(n, FLOAT, list(s)) for n, s in outputs],
        list(initializers),
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = IR_VERSION
    return model


def ints(name: str, values: Sequence[int]) -> onnx.TensorProto:
    return numpy_helper.from_array(np.array(values, dtype=np.int64), name)


def shape4(elements: int, lead: int = 1) -> Shape:
    """A 4-D shape of ``elements`` (a power of two): the last two axes up to 256 each, then up
    to 4 channels, the rest leading; the leading axis a multiple of ``lead``."""
    p = elements.bit_length() - 1
    if 1 << p != elements or p < 8:
        raise ValueError(f"{elements} elements: a power of two of at least 256 is needed")
    w = min(8, (p + 1) // 2)
    h = min(8, p - w)
    c = min(2, p - w - h)
    n = p - w - h - c
    need = lead.bit_length() - 1
    while n < need:  # move factors to the leading axis: channels first, then rows
        if c:
            c -= 1
        else:
            h -= 1
        n += 1
    return (1 << n, 1 << c, 1 << h, 1 << w)


def _single(name: str, op: str, node: onnx.NodeProto, inputs: list[tuple[str, Shape]],
            out: Shape, initializers: Sequence[onnx.TensorProto] = (),
            read_bytes: int | None = None) -> Case:
    model = make_model([node], inputs, [("y", out)], initializers, name)
    return Case(name, op, model, tuple(inputs), out, read_bytes)


def execution_cases(output_bytes: int) -> list[Case]:
    """Slice (contiguous, strided, reversed), Concat (2 and 8 inputs on axis 0 and the last
    axis) and Pad (4 modes, 4 on each side of the last two axes), each with an output of
    ``output_bytes`` float32 bytes. The slices read the leading half of their input, every
    other element of the last axis (every cache line of the input), or all of it backwards."""
    elements = output_bytes // 4
    n, c, h, w = out = shape4(elements)
    cases = [
        _single("slice_contiguous", "Slice",
                helper.make_node("Slice", ["x", "starts", "ends", "axes"], ["y"]),
                [("x", (2 * n, c, h, w))], out,
                [ints("starts", [0]), ints("ends", [n]), ints("axes", [0])], output_bytes),
        _single("slice_strided", "Slice",
                helper.make_node("Slice", ["x", "starts", "ends", "axes", "steps"], ["y"]),
                [("x", (n, c, h, 2 * w))], out,
                [ints("starts", [0]), ints("ends", [2 * w]), ints("axes", [3]),
                 ints("steps", [2])]),
        _single("slice_reversed", "Slice",
                helper.make_node("Slice", ["x", "starts", "ends", "axes", "steps"], ["y"]),
                [("x", out)], out,
                [ints("starts", [-1]), ints("ends", [-(w + 1)]), ints("axes", [3]),
                 ints("steps", [-1])]),
    ]
    for k in (2, 8):
        for axis in (0, 3):
            shape = shape4(elements, lead=k)
            part = list(shape)
            part[axis] //= k
            names = [f"x{i}" for i in range(k)]
            label = "axis0" if axis == 0 else "last"
            cases.append(_single(
                f"concat{k}_{label}", "Concat",
                helper.make_node("Concat", names, ["y"], axis=axis),
                [(name, tuple(part)) for name in names], shape))
    for mode in ("constant", "reflect", "edge", "wrap"):
        cases.append(_single(
            f"pad_{mode}", "Pad",
            helper.make_node("Pad", ["x", "pads"], ["y"], mode=mode),
            [("x", (n, c, h - 8, w - 8))], out,
            [ints("pads", [0, 0, 4, 4, 0, 0, 4, 4])]))
    return cases


def execution_case(name: str, output_bytes: int) -> Case:
    for case in execution_cases(output_bytes):
        if case.name == name:
            return case
    raise KeyError(name)


# ----------------------------------------------------------------------------- chains

CHAIN_ROWS = 4


def chain_cases(length: int) -> list[Case]:
    """Three chains of ``length`` nodes of one op over small float32 tensors.

    Slice: each node reverses the columns of a [4, 8] tensor, so every node moves the same
    128 bytes (a chain that dropped a column per node from [4, 8 + length] moved 8 KB a node
    on average, and timed copying more than the engines' per-node cost). Pad: from [4, 8] add
    one constant column per node (a Pad cannot keep its size). Concat: append the [4, 1]
    input ``x`` to the running tensor, per node; dmlgraph's plan writes every input of such
    a chain in place, into the last JOIN's output (``joined_in_place`` in the row says how
    many), which is work onnxruntime does and dmlgraph does not. Each node reads the previous
    one, so the chain runs node by node on both engines.
    """
    base = 8
    cases = []
    nodes = [
        helper.make_node("Slice", [f"t{i}", "last", "before_first", "axis1", "back"],
                         [f"t{i + 1}"], name=f"slice{i}")
        for i in range(length)
    ]
    nodes[-1].output[0] = "y"
    nodes[0].input[0] = "x"
    x = y = (CHAIN_ROWS, base)
    init = [ints("last", [-1]), ints("before_first", [-(1 << 62)]), ints("axis1", [1]),
            ints("back", [-1])]
    cases.append(Case("slice_chain", "Slice",
                      make_model(nodes, [("x", x)], [("y", y)], init, "slice_chain"),
                      (("x", x),), y))

    nodes = [helper.make_node("Pad", [f"t{i}", "pads"], [f"t{i + 1}"], name=f"pad{i}")
             for i in range(length)]
    nodes[-1].output[0] = "y"
    nodes[0].input[0] = "x"
    x, y = (CHAIN_ROWS, base), (CHAIN_ROWS, base + length)
    cases.append(Case("pad_chain", "Pad",
                      make_model(nodes, [("x", x)], [("y", y)], [ints("pads", [0, 0, 0, 1])],
                                 "pad_chain"),
                      (("x", x),), y))

    nodes = [helper.make_node("Concat", [f"t{i}", "x"], [f"t{i + 1}"], axis=1,
                              name=f"concat{i}")
             for i in range(length)]
    nodes[-1].output[0] = "y"
    nodes[0].input[0] = "x"
    x, y = (CHAIN_ROWS, 1), (CHAIN_ROWS, 1 + length)
    cases.append(Case("concat_chain", "Concat",
                      make_model(nodes, [("x", x)], [("y", y)], (), "concat_chain"),
                      (("x", x),), y))
    return cases


# ----------------------------------------------------------------------------- synthetic graphs

SYNTHETIC_SHAPE: Shape = (1, 8, 16, 16)
BLOCK_NODES = 5
_PAD_MODES = ("constant", "reflect", "edge", "wrap")


def synthetic_graph(nodes: int) -> Case:
    """About ``nodes`` Slice/Concat/Pad nodes over a [1, 8, 16, 16] input, in blocks of 5
    with two branches each, every block's output the next one's input:

    ``a = h[:, :4]``; ``b = h[:, 4:, :, ::-1]``; ``c = a[:, :, 1:-1, 1:-1]``;
    ``d = Pad(c, 1 each side of the last two axes, mode cycling constant/reflect/edge/wrap)``;
    ``h' = Concat(d, b, axis=1)``. Parameters are shared initializers, as an exporter that
    deduplicates constants writes them.
    """
    blocks = max(1, nodes // BLOCK_NODES)
    made = []
    h = "x"
    for i in range(blocks):
        a, b, c, d, out = (f"a{i}", f"b{i}", f"c{i}", f"d{i}", f"h{i}")
        mode = _PAD_MODES[i % len(_PAD_MODES)]
        made += [
            helper.make_node("Slice", [h, "s_a", "e_a", "ax_a"], [a], name=f"slice_a{i}"),
            helper.make_node("Slice", [h, "s_b", "e_b", "ax_b", "st_b"], [b],
                             name=f"slice_b{i}"),
            helper.make_node("Slice", [a, "s_c", "e_c", "ax_c"], [c], name=f"slice_c{i}"),
            helper.make_node("Pad", [c, "pads"], [d], mode=mode, name=f"pad{i}"),
            helper.make_node("Concat", [d, b], [out], axis=1, name=f"concat{i}"),
        ]
        h = out
    made[-1].output[0] = "y"
    init = [
        ints("s_a", [0]), ints("e_a", [4]), ints("ax_a", [1]),
        ints("s_b", [4, -1]), ints("e_b", [8, -(1 << 62)]), ints("ax_b", [1, 3]),
        ints("st_b", [1, -1]),
        ints("s_c", [1, 1]), ints("e_c", [-1, -1]), ints("ax_c", [2, 3]),
        ints("pads", [0, 0, 1, 1, 0, 0, 1, 1]),
    ]
    model = make_model(made, [("x", SYNTHETIC_SHAPE)], [("y", SYNTHETIC_SHAPE)], init,
                       f"synthetic_{len(made)}")
    return Case(f"synthetic_{len(made)}", "mix", model, (("x", SYNTHETIC_SHAPE),),
                SYNTHETIC_SHAPE)


def real_model_path(name: str) -> Path:
    return MODELS_DIR / f"{name}.onnx"


def real_model_feeds(name: str) -> dict[str, np.ndarray]:
    """The model's reference input from ``models/reference_io.npz``, keyed by input name."""
    model = onnx.load(real_model_path(name), load_external_data=False)
    initializers = {t.name for t in model.graph.initializer}
    names = [i.name for i in model.graph.input if i.name not in initializers]
    with np.load(REFERENCE_IO) as data:
        return {n: data[f"{name}__in{k}"] for k, n in enumerate(names)}
