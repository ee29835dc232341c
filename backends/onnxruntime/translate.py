"""Lowered graph -> standard ONNX, so a second engine can run the very descriptors lowered.

Each DML node becomes ONNX ops that compute what DirectML defines, on its IR tensors:

- The op runs on a **carrier**: the IR tensors' own dtype, in the shape of the desc's sizes.
  A desc that views the bytes as another type of the same width (bool as UINT8) needs no
  change; one that merges elements (UINT8 pairs as UINT16) gets one more, innermost axis
  holding each desc element's IR elements, which the op leaves whole, so any window or
  padding of the view moves whole groups; one that splits each element (INT64 as UINT32
  pairs) changes only the innermost axis, by that ratio, so the op moves the same bytes as
  long as it moves whole IR elements. Reshapes go in and out of the carrier shape.
- SLICE / SLICE1 -> Slice (a window read backwards ends at ``INT64_MIN`` to reach index 0);
  JOIN -> Concat; PADDING / PADDING1 -> Pad, the fill value being the IR element DirectML's
  fill bytes make.

Not expressible, and said so per node: SYMMETRIC padding (ONNX Pad has no such mode),
REFLECTION by the dimension or more (DirectML repeats it periodically; ONNX leaves it
undefined and onnxruntime refuses it), and a type reinterpretation that splits IR elements or
fills with bytes no single IR value has. onnxruntime's CPU kernels lack Pad for 16-bit
integers, and older ones bfloat16 (``ort_lacks`` asks this one); those run on a wider type
through exact Casts.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from types import MappingProxyType
from typing import Any

import ml_dtypes
import numpy as np
import onnx

from dmlgraph import canonical
from dmlgraph.dml.enums import PaddingMode, TensorDataType
from dmlgraph.dml.operators import JoinDesc, Padding1Desc, PaddingDesc, Slice1Desc, SliceDesc
from dmlgraph.dtypes import to_elem_type
from dmlgraph.errors import DmlgraphError, UnsupportedError, counted
from dmlgraph.exporter import ir_version_for_opset, to_onnx
from dmlgraph.ir import Graph, Node, OnnxOp, Provenance, TensorInfo
from dmlgraph.ort_pad import pad_divergences
from dmlgraph.schema_types import node_problem
from dmlgraph.subgraphs import holder_label

INT64_MIN = -(2**63)
#: Opset given to a graph that imports none (a hand-built lowered graph): wrap needs 19.
DEFAULT_OPSET = 19

#: ONNX Pad mode of each DirectML padding mode; SYMMETRIC has none.
PAD_MODES: Mapping[PaddingMode, str] = MappingProxyType(
    {
        PaddingMode.CONSTANT: "constant",
        PaddingMode.EDGE: "edge",
        PaddingMode.REFLECTION: "reflect",
        PaddingMode.WRAP: "wrap",
    }
)

#: dtypes onnxruntime's CPU kernels may lack, per op -> a wider dtype holding every value
#: exactly (a float32 detour quiets a bfloat16 NaN's payload, so it is taken only where this
#: onnxruntime has no kernel: ``ort_lacks``).
ORT_KERNEL_GAPS: Mapping[str, Mapping[np.dtype, np.dtype]] = MappingProxyType(
    {
        "Pad": {
            np.dtype(np.int16): np.dtype(np.int32),
            np.dtype(np.uint16): np.dtype(np.uint32),
            np.dtype(ml_dtypes.bfloat16): np.dtype(np.float32),
        },
        "Slice": {np.dtype(ml_dtypes.bfloat16): np.dtype(np.float32)},
        "Concat": {np.dtype(ml_dtypes.bfloat16): np.dtype(np.float32)},
    }
)


@functools.cache
def ort_lacks(op_type: str, dtype: np.dtype, opset: int) -> bool:
    """Whether this onnxruntime's CPU provider has no ``op_type`` kernel for ``dtype`` at
    ``opset``: a one-node session, made once per case (onnxruntime 1.32 runs bfloat16 Slice
    and Concat, and bfloat16 Pad from opset 21; it refuses int16 Pad when the session is
    made)."""
    import onnxruntime

    if opset < 13:  # before it, Slice's and Pad's parameters were attributes: not probed
        return True
    elem = to_elem_type(dtype, "probe")
    x = onnx.helper.make_tensor_value_info("x", elem, [2])
    y = onnx.helper.make_tensor_value_info("y", elem, None)
    ints = [onnx.helper.make_tensor(n, onnx.TensorProto.INT64, [len(v)], v)
            for n, v in (("a", [0]), ("b", [1]), ("p", [1, 1]))]
    node = {
        "Slice": onnx.helper.make_node("Slice", ["x", "a", "b"], ["y"]),
        "Concat": onnx.helper.make_node("Concat", ["x", "x"], ["y"], axis=0),
        "Pad": onnx.helper.make_node("Pad", ["x", "p"], ["y"]),
    }[op_type]
    model = onnx.helper.make_model(
        onnx.helper.make_graph([node], "probe", [x], [y], ints),
        opset_imports=[onnx.helper.make_opsetid("", opset)],
        ir_version=ir_version_for_opset(opset),
    )
    options = onnxruntime.SessionOptions()
    options.log_severity_level = 4
    try:
        onnxruntime.InferenceSession(
            model.SerializeToString(), options, providers=["CPUExecutionProvider"]
        )
    except Exception:  # NOT_IMPLEMENTED: "Could not find an implementation for ..."
        return True
    return False


#: The first opset whose Concat onnxruntime implements (it has no Concat-1 kernel).
ORT_CONCAT_SINCE = 4
#: Reshape-1's type constraint T (opsets 1-4).
_RESHAPE_1_TYPES = frozenset(map(np.dtype, (np.float16, np.float32, np.float64)))


class NotExpressible(Exception):
    """One DML node has no ONNX equivalent; the message says why."""


@dataclass(frozen=True)
class Untranslatable:
    node: str
    op: str
    reason: str

    def __str__(self) -> str:
        return f"{self.node or '?'} ({self.op}): {self.reason}"


def translate(graph: Graph) -> onnx.ModelProto:
    """The graph as an ONNX model of standard ops; UnsupportedError lists every DML node that
    ONNX cannot express."""
    onnx_graph, problems = translate_graph(graph)
    if problems:
        listed = "; ".join(map(str, problems[:4]))
        more = f" (and {len(problems) - 4} more)" if len(problems) > 4 else ""
        raise UnsupportedError(
            f"{graph.source}: {len(problems)} DML node(s) cannot be written as ONNX: "
            f"{listed}{more}"
        )
    try:
        return to_onnx(onnx_graph)
    except DmlgraphError as exc:
        raise UnsupportedError(
            f"{graph.source}: the translated graph cannot be written: {exc}"
        ) from None


def translate_graph(graph: Graph) -> tuple[Graph, list[Untranslatable]]:
    """A copy with every translatable DML node replaced by ONNX nodes, and the others."""
    new = graph.copy()
    if "" not in new.opset_imports:
        new.opset_imports[""] = DEFAULT_OPSET
        new.ir_version = max(new.ir_version, ir_version_for_opset(DEFAULT_OPSET))
    problems: list[Untranslatable] = []
    for node in graph.topological_order():
        if node.is_onnx:
            continue
        try:
            _Translator(new, node).emit()
        except NotExpressible as exc:
            # an unnamed node by the tensor it makes, as run records name one (it was "?")
            name = node.name or holder_label("", node.outputs)
            problems.append(Untranslatable(name, node.op.name, str(exc)))
    return new, problems


@dataclass(frozen=True)
class Carrier:
    """The IR dtype the op runs on, and the factor from desc elements to IR elements along
    the innermost axis (1 same width, 1/2 INT64 as UINT32 pairs, 2 UINT8 pairs as UINT16)."""

    dtype: np.dtype
    factor: Fraction

    @property
    def group(self) -> int:
        """IR elements per desc element where a desc element holds several (UINT8 pairs as
        UINT16: 2), carried on an extra innermost axis the op leaves whole; else 1. (Scaling
        the innermost axis instead cannot reverse or step over pairs, nor repeat one.)"""
        return int(self.factor) if self.factor > 1 else 1

    def shape(self, sizes: Sequence[int]) -> tuple[int, ...]:
        if self.group > 1:
            return tuple(sizes) + (self.group,)
        last = sizes[-1] * self.factor
        if last.denominator != 1:
            raise NotExpressible(
                f"type reinterpretation: an innermost size of {sizes[-1]} does not hold whole "
                f"{self.dtype} elements"
            )
        return tuple(sizes[:-1]) + (int(last),)

    def count(self, n: int) -> int:
        """``n`` desc elements of the innermost axis as carrier elements of that axis."""
        if self.group > 1:
            return n
        scaled = n * self.factor
        if scaled.denominator != 1:
            raise NotExpressible(
                f"type reinterpretation: {n} innermost elements of the view split "
                f"{self.dtype} elements"
            )
        return int(scaled)

    def window(self, start: int, step: int, count: int) -> tuple[int, int, int]:
        """An innermost-axis window on the carrier; where desc elements split IR elements,
        only a unit step moves whole ones."""
        if self.factor >= 1:
            return start, step, count
        if step != 1:
            raise NotExpressible(
                f"type reinterpretation: a step of {step} on the innermost axis of the view "
                f"moves parts of {self.dtype} elements"
            )
        return self.count(start), 1, self.count(count)


class _Translator:
    """Writes the ONNX nodes of one DML node into ``graph`` (which still holds the node)."""

    def __init__(self, graph: Graph, node: Node) -> None:
        self.graph = graph
        self.node = node
        self.desc = node.op
        self.opset = graph.opset_imports[""]
        self.carrier = self._carrier()
        self.pending: list[tuple[OnnxOp, tuple[str, ...], tuple[str, ...]]] = []
        self.new_tensors: dict[str, TensorInfo] = {}
        self.new_constants: dict[str, np.ndarray] = {}

    # -- the carrier ----------------------------------------------------------------------
    def _carrier(self) -> Carrier:
        desc, node = self.desc, self.node
        views = list(desc.inputs) + list(desc.outputs)
        names = list(node.inputs) + list(node.outputs)
        if not isinstance(desc, (SliceDesc, Slice1Desc, JoinDesc, PaddingDesc, Padding1Desc)):
            raise NotExpressible(f"no ONNX translation of {desc.name}")
        if len(views) != len(names):
            raise NotExpressible(
                f"{len(names)} tensors bound to a descriptor of {len(views)} tensor descs"
            )
        infos = [self.graph.tensor(n) for n in names]
        dtypes = {info.dtype for info in infos}
        types = {view.data_type for view in views}
        if len(dtypes) != 1 or None in dtypes or len(types) != 1:
            raise NotExpressible(
                f"its tensors mix dtypes {sorted(map(str, dtypes))} / views "
                f"{sorted(t.name for t in types)}; data movement keeps one type"
            )
        dtype = np.dtype(dtypes.pop())
        data_type: TensorDataType = types.pop()
        if data_type.bit_width < 8:
            raise NotExpressible(f"{data_type.name} packs elements below a byte")
        carrier = Carrier(dtype, Fraction(data_type.bit_width // 8, dtype.itemsize))
        for info, view in zip(infos, views):
            shape = carrier.shape(view.sizes)
            if info.static_shape is None:
                raise NotExpressible(f"tensor {info.name!r} has no static shape")
            if int(np.prod(shape)) != int(np.prod(info.static_shape)):
                raise NotExpressible(
                    f"{data_type.name}{list(view.sizes)} views "
                    f"{counted(int(np.prod(shape)), f'{dtype} element')} of {info.name!r}, "
                    f"which has {info.size} (the view reaches the "
                    "padding bytes of the buffer)"
                )
        return carrier

    # -- emission helpers -----------------------------------------------------------------
    def _name(self, base: str) -> str:
        name, k = base, 0
        while (
            self.graph.name_taken(name) or name in self.new_tensors or name in self.new_constants
        ):
            k += 1
            name = f"{base}_{k}"
        return name

    def _constant(self, base: str, value: np.ndarray) -> str:
        name = self._name(f"{self.node.name}/{base}")
        self.new_constants[name] = value
        return name

    def _temp(self, base: str, dtype: np.dtype, shape: tuple[int, ...]) -> str:
        name = self._name(f"{self.node.name}/{base}")
        self.new_tensors[name] = TensorInfo(name, dtype, shape)
        return name

    def _op(self, op_type: str, attrs: Mapping[str, Any] | None = None) -> OnnxOp:
        if op_type in canonical.FORMS:
            return OnnxOp(op_type, canonical.CANONICAL_VERSION[op_type], attrs=attrs or {})
        version = canonical.since_version(op_type, "", self.opset, self.graph.describe(self.node))
        return OnnxOp(op_type, version, attrs=attrs or {})

    def _add(self, op: OnnxOp, inputs: Sequence[str], output: str) -> None:
        self.pending.append((op, tuple(inputs), (output,)))

    def _reshape(self, source: str, shape: tuple[int, ...], target: str | None = None) -> str:
        info = self.new_tensors.get(source) or self.graph.tensor(source)
        if info.static_shape == shape and target is None:
            return source
        if info.dtype is None:
            raise NotExpressible(f"tensor {source!r} has no known dtype")
        out = target or self._temp("view", info.dtype, shape)
        if self.opset < 5:  # Reshape-1 takes the shape as an attribute, and floats alone
            if info.dtype not in _RESHAPE_1_TYPES:
                raise NotExpressible(
                    f"opset {self.opset}'s Reshape (Reshape-1) takes float16, float32 or "
                    f"float64, not {info.dtype}"
                )
            self._add(self._op("Reshape", {"shape": shape}), (source,), out)
            return out
        shape_name = self._constant("shape", np.array(shape, dtype=np.int64))
        self._add(self._op("Reshape"), (source, shape_name), out)
        return out

    def _cast(
        self, source: str, dtype: np.dtype, shape: tuple[int, ...], target: str | None = None
    ) -> str:
        if self.opset < 6:
            raise NotExpressible(f"opset {self.opset} has no Cast with a numeric 'to'")
        out = target or self._temp("cast", dtype, shape)
        self._add(self._op("Cast", {"to": to_elem_type(dtype)}), (source,), out)
        return out

    # -- the node -------------------------------------------------------------------------
    def emit(self) -> None:
        desc = self.desc
        strided = [label for label, view, _ in desc.tensor_fields() if not view.is_packed]
        if strided:  # lowering makes none; the numpy backend refuses them between nodes too
            raise NotExpressible(f"{strided[0]} has strides: ONNX tensors are packed")
        if isinstance(desc, (SliceDesc, Slice1Desc)):
            op_type, op, params = "Slice", self._op("Slice"), self._slice_params()
        elif isinstance(desc, JoinDesc):
            if self.opset < ORT_CONCAT_SINCE:
                raise NotExpressible(
                    f"onnxruntime has no Concat before opset {ORT_CONCAT_SINCE} (the graph "
                    f"imports {self.opset}), so the JOIN cannot run there"
                )
            op_type, op, params = "Concat", self._op("Concat", {"axis": desc.axis}), []
        else:
            op_type, (op, params) = "Pad", self._pad()
        carrier = self.carrier
        dtype = carrier.dtype
        wide = ORT_KERNEL_GAPS.get(op_type, {}).get(dtype)
        if wide is not None and not ort_lacks(op_type, dtype, self.opset):
            wide = None
        # the op's schema must take the type it runs on: Slice-13 and Concat-13 take no
        # float8, which a float8 Pad-23 decomposed into SLICEs and JOINs moves
        problem = node_problem(op_type, "", op.since_version, (wide or dtype,))
        if problem:
            raise NotExpressible(f"ONNX {op_type} cannot carry it: {problem}")
        inputs = []
        for name, view in zip(self.node.inputs, desc.inputs):
            shape = carrier.shape(view.sizes)
            value = self._reshape(name, shape)
            inputs.append(self._cast(value, wide, shape) if wide is not None else value)
        for kind, param in params:
            if kind == "fill" and wide is not None:
                param = param.astype(wide)
            inputs.append(self._constant(kind, param))
        (output,) = self.node.outputs
        out_shape = carrier.shape(desc.outputs[0].sizes)
        final = self.graph.tensor(output).static_shape
        if final is None:
            raise NotExpressible(f"output {output!r} has no static shape")
        if wide is None and out_shape == final:
            self._add(op, inputs, output)
        else:
            result = self._temp(op_type.lower(), wide if wide is not None else dtype, out_shape)
            self._add(op, inputs, result)
            if wide is not None:
                narrow_target = output if out_shape == final else None
                result = self._cast(result, dtype, out_shape, narrow_target)
            if out_shape != final:
                self._reshape(result, final, output)
        self._commit()

    def _commit(self) -> None:
        graph, node = self.graph, self.node
        graph.remove_node(node.id)
        for name, value in self.new_constants.items():
            graph.set_tensor(TensorInfo(name, data=value))
        for info in self.new_tensors.values():
            graph.set_tensor(info)
        for op, inputs, outputs in self.pending:
            graph.add_node(op, inputs, outputs, Provenance(node.name, self.desc.name), node.notes)

    # -- Slice ----------------------------------------------------------------------------
    def _slice_params(self) -> list[tuple[str, np.ndarray]]:
        desc = self.desc
        if isinstance(desc, SliceDesc):
            windows = list(zip(desc.offsets, desc.strides, desc.sizes))
        else:
            windows = [
                (o if s > 0 else o + w - 1, s, n)
                for o, w, s, n in zip(
                    desc.input_window_offsets,
                    desc.input_window_sizes,
                    desc.input_window_strides,
                    desc.output_tensor.sizes,
                )
            ]
        windows[-1] = self.carrier.window(*windows[-1])
        if self.carrier.group > 1:  # the carrier's extra axis, whole
            windows.append((0, 1, self.carrier.group))
        starts, ends, steps = [], [], []
        for start, step, count in windows:
            end = start + step * (count - 1) + (1 if step > 0 else -1)
            starts.append(start)
            ends.append(INT64_MIN if end < 0 else end)
            steps.append(step)
        rank = len(windows)
        return [
            ("starts", np.array(starts, np.int64)),
            ("ends", np.array(ends, np.int64)),
            ("axes", np.arange(rank, dtype=np.int64)),
            ("steps", np.array(steps, np.int64)),
        ]

    # -- Pad ------------------------------------------------------------------------------
    def _pad(self) -> tuple[OnnxOp, list[tuple[str, np.ndarray]]]:
        desc = self.desc
        mode = desc.padding_mode
        if mode not in PAD_MODES:
            raise NotExpressible(f"ONNX Pad has no {mode.full_name} (it mirrors with the edge)")
        starts, ends = list(desc.start_padding), list(desc.end_padding)
        in_shape = self.carrier.shape(desc.inputs[0].sizes)
        if starts[-1] or ends[-1]:
            if self.carrier.factor < 1 and mode is not PaddingMode.CONSTANT:
                raise NotExpressible(
                    f"type reinterpretation: {mode.full_name} on the innermost axis of the view "
                    f"repeats parts of {self.carrier.dtype} elements"
                )
            starts[-1], ends[-1] = self.carrier.count(starts[-1]), self.carrier.count(ends[-1])
        if self.carrier.group > 1:  # the carrier's extra axis, not padded
            starts.append(0)
            ends.append(0)
        if mode is PaddingMode.REFLECTION:  # onnxruntime's departures, as lowering notes them
            found = pad_divergences(in_shape, "reflect", starts + ends)
            if found:
                axis = found[0].axes[0]
                raise NotExpressible(
                    f"REFLECTION by {max(starts[axis], ends[axis])} on axis {axis} of size "
                    f"{in_shape[axis]}: DirectML repeats the reflection periodically; "
                    f"{found[0].text}"
                )
        params = [("pads", np.array(starts + ends, dtype=np.int64))]
        if mode is PaddingMode.CONSTANT:
            params.append(("fill", self._fill_value()))
        return self._op("Pad", {"mode": PAD_MODES[mode]}), params

    def _fill_value(self) -> np.ndarray:
        """The IR element that DirectML's fill bytes form (0-d, carrier dtype)."""
        desc = self.desc
        data_type = desc.output_tensor.data_type
        value = desc.fill()
        raw = np.atleast_1d(value).view(np.uint8)
        dtype = self.carrier.dtype
        if dtype.itemsize >= raw.size:
            element = np.tile(raw, dtype.itemsize // raw.size)
        else:
            chunks = raw.reshape(-1, dtype.itemsize)
            if not (chunks == chunks[0]).all():
                raise NotExpressible(
                    f"type reinterpretation: the {data_type.name} fill {value.item()!r} is not "
                    f"one {dtype} value repeated"
                )
            element = chunks[0].copy()
        if dtype == np.bool_ and element[0] > 1:
            raise NotExpressible(f"the fill byte {element[0]} is not a bool")
        return element.view(dtype).reshape(())
