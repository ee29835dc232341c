"""onnx.reference's kernels replaced where they compute otherwise than the ONNX spec (an
older opset's op by a newer version's meaning, or a plain slip): what folding evaluates and
what ``--fallback reference`` runs must be the model's op, as onnxruntime runs it.

``spec_ops(opset)`` gives the replacements for a model importing that default-domain
opset, as classes for ``ReferenceEvaluator(..., new_ops=...)``, which finds each by the op's
name. A replacement reads its attributes from the node itself: the evaluator fills the ones a
node leaves out from the newest schema's defaults (Softmax-13's axis -1, not Softmax-11's 1).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from typing import Any

import numpy as np
import onnx

#: The first opset whose Softmax, LogSoftmax and Hardmax work along one axis; before it they
#: coerce the input to a matrix at ``axis`` (default 1) and work along its rows.
PER_AXIS_SOFTMAX_OPSET = 13
#: The first opset whose RoiAlign has ``coordinate_transformation_mode`` (default
#: half_pixel); RoiAlign-10 samples as its ``output_half_pixel``.
HALF_PIXEL_ROI_ALIGN_OPSET = 16
#: The oldest DequantizeLinear onnx.reference implements (19); before it, none.
REFERENCE_DEQUANTIZE_OPSET = 19
#: The first opset whose Concat requires ``axis``; Concat-1's is optional (default 1).
CONCAT_AXIS_REQUIRED_OPSET = 4
#: The first opset whose Reshape takes its shape as an input (Reshape-5; onnx.reference's
#: oldest); Reshape-1's is an attribute.
RESHAPE_SHAPE_INPUT_OPSET = 5
#: The first opset whose Scan (Scan-9) scans one sequence; Scan-8, before it, scans a batch
#: of them (``sequence_lens`` first, a batch axis 0 on every input, ``directions``).
SEQUENCE_SCAN_OPSET = 9


def spec_ops(opset: int) -> list[type]:
    """The replacements a model of this default-domain opset needs."""
    return list(_spec_ops(opset))


@lru_cache(maxsize=None)
def _spec_ops(opset: int) -> tuple[type, ...]:
    """``spec_ops``, its classes made once per opset."""
    ops: list[type] = [_lrn(), _lp_normalization(), _normalizer(), _max_pool(), _resize(),
                       *_ceil_mode_pools(), _label_encoder(), *_casts(), _conv_transpose(),
                       _upsample(), _loop()]
    if opset < PER_AXIS_SOFTMAX_OPSET:
        ops += [_coerced("Softmax", _softmax), _coerced("LogSoftmax", _log_softmax),
                _coerced("Hardmax", _hardmax)]
    if 7 <= opset < 14:
        ops.append(_inference_batch_norm(opset))
    if opset < HALF_PIXEL_ROI_ALIGN_OPSET:
        ops.append(_output_half_pixel_roi_align())
    if opset < REFERENCE_DEQUANTIZE_OPSET:
        ops.append(_dequantize_linear_10())
    if opset < CONCAT_AXIS_REQUIRED_OPSET:
        ops.append(_concat_1())
    if opset < RESHAPE_SHAPE_INPUT_OPSET:
        ops.append(_reshape_1())
    if opset < SEQUENCE_SCAN_OPSET:
        ops.append(_scan_8())
    return tuple(ops)


def _softmax(rows: np.ndarray) -> np.ndarray:
    """Along axis 1, as onnx.reference computes Softmax."""
    y = np.exp(rows - rows.max(axis=1, keepdims=True))
    y /= y.sum(axis=1, keepdims=True)
    return y


def _log_softmax(rows: np.ndarray) -> np.ndarray:
    """onnx.reference's LogSoftmax: the log of its Softmax."""
    y = _softmax(rows)
    np.log(y, out=y)
    return y


def _hardmax(rows: np.ndarray) -> np.ndarray:
    """1 at each row's first largest element, 0 elsewhere."""
    y = np.zeros_like(rows)
    y[np.arange(rows.shape[0]), np.argmax(rows, axis=1)] = 1
    return y


def _coerced(op_type: str, rows_kernel: Callable[[np.ndarray], np.ndarray]) -> type:
    """Softmax-1/11, LogSoftmax-1/11 or Hardmax-1/11: the input as a matrix of
    ``prod(shape[:axis])`` rows, the kernel along each row. onnx.reference has one class for
    every version, Softmax-13's (along ``axis`` alone): a Softmax-11 over axis 1 of [2, 3, 4]
    normalized each column of 3 where the spec and onnxruntime normalize each row of 12
    (0.39 off)."""
    from onnx.reference.op_run import OpRun

    def _run(self: Any, x: np.ndarray, axis: Any = None) -> tuple[np.ndarray]:
        given = [a.i for a in self.onnx_node.attribute if a.name == "axis"]
        at = given[0] if given else 1
        at = at + x.ndim if at < 0 else at
        if x.size == 0:
            return (x.copy(),)
        rows = x.reshape(math.prod(x.shape[:at]), math.prod(x.shape[at:]))
        return (rows_kernel(rows).astype(x.dtype).reshape(x.shape),)

    return type(op_type, (OpRun,), {"op_domain": "", "_run": _run})


def _inference_batch_norm(opset: int) -> type:
    """BatchNormalization-7/9 as the spec says: with Y its only output it runs in test mode
    (the running mean and variance given), as onnxruntime does. onnx.reference's runs
    otherwise: its BatchNormalization_9 takes the schema's default momentum as asking for
    training and normalizes by statistics of the batch (0.39 off onnxruntime; a silent
    difference in every BatchNormalization of an opset-9..13 model), and its
    BatchNormalization_6 (opsets 7 and 8), without ``is_test``, trains and fails. With more
    outputs (training mode) the reference's own kernel runs."""
    from onnx.reference.op_run import OpRun
    from onnx.reference.ops import op_batch_normalization as reference

    trained: Any = reference.BatchNormalization_9 if opset >= 9 else reference.BatchNormalization_6

    class BatchNormalization(OpRun):  # the op's name: the evaluator finds the class by it
        op_domain = ""

        def _run(  # type: ignore[no-untyped-def]
            self, x, scale, bias, mean, var, epsilon=None, momentum=None, spatial=None,
            is_test=None, training_mode=None,
        ):
            if sum(1 for name in self.onnx_node.output if name) > 1:
                if opset >= 9:
                    return trained._run(self, x, scale, bias, mean, var, epsilon, momentum)
                return trained._run(self, x, scale, bias, mean, var, epsilon, is_test,
                                    momentum, spatial)
            eps = 1e-5 if epsilon is None else epsilon
            return (reference._batchnorm_test_mode(x, scale, bias, mean, var, epsilon=eps),)

    return BatchNormalization


def _lrn() -> type:
    """LRN as the spec says: each channel's square sum over its window of ``size`` channels.
    onnx.reference's loops over the batch instead of the channels, so channels from the
    batch size on were divided by ``bias ** beta`` alone (1e-3 off onnxruntime on a
    [2, 3, 4, 4] input; AlexNet's and GoogLeNet's LRNs, at batch 1, all but channel 0)."""
    from onnx.reference.op_run import OpRun

    class LRN(OpRun):  # the op's name: the evaluator finds the class by it
        op_domain = ""

        def _run(  # type: ignore[no-untyped-def]
            self, x, alpha=None, beta=None, bias=None, size=None
        ):
            channels = x.shape[1]
            before, after = (size - 1) // 2, math.ceil((size - 1) / 2)
            squares = x * x
            square_sum = np.zeros_like(squares)
            for c in range(channels):
                window = squares[:, max(0, c - before) : min(channels, c + after + 1)]
                square_sum[:, c] = window.sum(axis=1)
            y = x / ((bias + (alpha / size) * square_sum) ** beta)
            return (y.astype(x.dtype),)

    return LRN


def _lp_normalization() -> type:
    """LpNormalization by the Lp norm: the sum of ``|x| ** p``. onnx.reference's sums
    ``x ** p``, so an odd ``p`` let signs cancel (p=1 over [1, -2, 3]: 2 for 6, 3 times
    onnxruntime's result). A zero norm gives 0, as in onnxruntime and the reference."""
    from onnx.reference.op_run import OpRun

    class LpNormalization(OpRun):  # the op's name: the evaluator finds the class by it
        op_domain = ""

        def _run(self, x, axis=None, p=None):  # type: ignore[no-untyped-def]
            axis = -1 if axis is None else axis
            p = 2 if p is None else p
            norm = np.power(np.power(np.abs(x), p).sum(axis=axis, keepdims=True), 1.0 / p)
            zero = norm == 0
            result = np.where(zero, 0, x / np.where(zero, 1, norm))
            return (result.astype(x.dtype),)

    return LpNormalization


def _output_half_pixel_roi_align() -> type:
    """RoiAlign-10, which samples as RoiAlign-16's ``output_half_pixel`` (no half-pixel
    shift of the rois). onnx.reference has one class, reading a RoiAlign-10 node by
    RoiAlign-16's default, half_pixel: every sample half a pixel off (1.1 off onnxruntime)."""
    from onnx.reference.ops.op_roi_align import RoiAlign as Reference

    class RoiAlign(Reference):  # the op's name: the evaluator finds the class by it
        op_domain = ""

        def _run(  # type: ignore[no-untyped-def]
            self, X, rois, batch_indices, coordinate_transformation_mode=None, **attributes
        ):
            return super()._run(X, rois, batch_indices, "output_half_pixel", **attributes)

    return RoiAlign


def _normalizer() -> type:
    """ai.onnx.ml's Normalizer, its MAX mode dividing by each row's largest element, as the
    spec writes it (``Y = X / max(X)``) and onnxruntime computes it (a row whose largest is
    0 kept as it is); onnx.reference divides by the largest absolute value ([-1, -2, -0.5]:
    by 2, where both give [2, 4, 1]). L1 and L2 are the reference's, which onnxruntime
    agrees with. The output is float, as the schema says (the reference's was float64 for
    integer or double input, and its L2 of integers failed)."""
    from onnx.reference.ops.aionnxml.op_normalizer import Normalizer as Reference

    class Normalizer(Reference):  # the op's name: the evaluator finds the class by it
        op_domain = "ai.onnx.ml"

        def _run(self, x, norm=None):  # type: ignore[no-untyped-def]
            if norm != "MAX":  # integers as doubles: the reference's L2 took a square root
                # in place into the integer input's type ("Issues with types")
                (made,) = super()._run(x.astype(np.float64) if x.dtype.kind in "iu" else x, norm)
                return (made.astype(np.float32),)
            top = x.max(axis=1, keepdims=True)
            kept = top == 0
            made = np.where(kept, x, x / np.where(kept, 1, top))
            return (made.astype(np.float32),)

    return Normalizer


def _dequantize_linear_10() -> type:
    """DequantizeLinear-10 and -13, which onnx.reference lacks ("No implementation for
    operator 'DequantizeLinear' ... version 13, found 19, ..."): a quantized model of opset
    10-18 failed on ``--fallback reference``. DequantizeLinear-19 computes them (it adds
    float8 types and nothing else)."""
    from onnx.reference.ops.op_dequantize_linear import DequantizeLinear_19

    class DequantizeLinear(DequantizeLinear_19):  # the op's name: the evaluator finds it by it
        op_domain = ""

        def _run(  # type: ignore[no-untyped-def,override]
            self, x, x_scale, x_zero_point=None, axis=None, **newer
        ):  # ``newer``: the newest schema's attributes (block_size...), at their defaults
            return super()._run(x, x_scale, x_zero_point, 1 if axis is None else axis)

    return DequantizeLinear


def _concat_1() -> type:
    """Concat-1, whose ``axis`` is optional, defaulting to 1 (``canonical.FORMS``, as the
    lowering reads it). onnx.reference has one class, read by the newest schema, which
    requires it: a Concat-1 without ``axis`` failed ("Attribute 'axis' is expected"), and
    ``check`` of such a model, which onnxruntime has no kernel for, compared nothing."""
    import onnx
    from onnx.reference.ops.op_concat import Concat as Reference

    from dmlgraph.canonical import FORMS, ConcatForm

    form = FORMS["Concat"][1]
    assert isinstance(form, ConcatForm) and form.default_axis is not None
    default = form.default_axis

    class Concat(Reference):  # the op's name: the evaluator finds the class by it
        op_domain = ""
        op_schema = onnx.defs.get_schema("Concat", 1, "")  # (axis optional)

        def _run(self, *data, axis=None):  # type: ignore[no-untyped-def,override]
            return super()._run(*data, axis=default if axis is None else axis)

    return Concat


def _reshape_1() -> type:
    """Reshape-1, whose ``shape`` is an attribute (0 copies the input's size, -1 is
    inferred, as Reshape-5 without ``allowzero``). onnx.reference implements Reshape from
    version 5: ``--fallback reference`` failed on a model of opset 1-4 holding one ("No
    implementation for operator 'Reshape' ... version 4, found 5, 14")."""
    import onnx
    from onnx.reference.op_run import OpRun
    from onnx.reference.ops.op_reshape import reshape_reference_implementation

    class Reshape(OpRun):  # the op's name: the evaluator finds the class by it
        op_domain = ""
        op_schema = onnx.defs.get_schema("Reshape", 1, "")

        def _run(  # type: ignore[no-untyped-def,override]
            self, data, shape=None, consumed_inputs=None
        ):  # ``consumed_inputs``: Reshape-1's legacy attribute, unused
            return (reshape_reference_implementation(data, np.array(shape, np.int64), 0),)

    return Reshape


def _loop() -> type:
    """Loop as the spec says: without a ``cond`` input it runs (a for loop, stopped early by
    its body's condition, as onnxruntime does), and each scan output is its iterations'
    values stacked on a new axis 0. onnx.reference's ran no iteration without ``cond``
    (``while cond``: a Loop of 2 trips doubling x [2, 6] gave x) and stacked by
    ``np.vstack``, which joins along axis 0: three [2, 6] values made [6, 6] (ONNX and
    onnxruntime: [3, 2, 6]), three scalars [3, 1] (ONNX: [3])."""
    from onnx.reference.ops.op_loop import Loop as Reference

    class Loop(Reference):  # the op's name: the evaluator finds the class by it
        op_domain = ""

        def _run(  # type: ignore[no-untyped-def,override]
            self, M, cond, *args, context=None, body=None, attributes=None, bindings=None
        ):
            graph = self.body
            names, made = graph.input_names, graph.output_names
            inputs = dict.fromkeys(names)
            inputs.update(context or {})  # the enclosing graph's: the body's own shadow them
            inputs.update(zip(names[2:], args))
            going = True if cond is None else bool(np.asarray(cond).reshape(-1)[0])
            limit = None if M is None else int(np.asarray(M).reshape(-1)[0])
            scans = [[] for _ in range(self.K)]  # each scan output's values, trip by trip
            trip = 0
            while going and (limit is None or trip < limit):
                inputs[names[0]] = np.array(trip, dtype=np.int64)
                inputs[names[1]] = np.array(going)
                outputs = self._run_body(inputs, attributes=attributes, bindings=bindings)
                for kept, value in zip(scans, outputs[len(outputs) - self.K :]):
                    kept.append(value)
                going = bool(np.asarray(outputs[self.output_index[made[0]]]).reshape(-1)[0])
                for name, out in zip(names[2:], made[1:]):
                    inputs[name] = outputs[self.output_index[out]]
                trip += 1
            carried = [inputs[name] for name in names[2:]]
            if not trip and self.K:  # no value to stack: the shape the body makes
                types = _body_output_types(self.body.onnx_graph_, inputs,
                                           self.run_params["opsets"])
                stacked = [_no_trip_scan(name, types.get(name, kind))
                           for name, kind in zip(made[len(made) - self.K :],
                                                 self.body.output_types_[len(made) - self.K :])]
            else:
                stacked = [np.stack(x) for x in scans]
            return self._check_and_fix_outputs(tuple(carried + stacked))

    return Loop


def _scan_8() -> type:
    """Scan-8 as its spec says, for opset 8 (onnx.reference implements Scan-9 on only: it
    read ``sequence_lens`` as a state variable and failed, "x and y have different dtype").
    Each batch entry b runs its own loop: the state variables start at their initial values'
    row b, the body takes step t of each scan input's row b (from the end of its first
    ``sequence_lens[b]`` steps where ``directions`` says 1), and each scan output's row b is
    its steps' values stacked, then zeros to the longest sequence (the spec leaves them
    undefined; onnxruntime zeroes them). What the spec or onnxruntime forbids is refused,
    saying which rule it breaks (``subgraphs.scan_form``, ``_scan_8_lengths``)."""
    from onnx.reference.op_run import OpRun

    from dmlgraph.subgraphs import scan_form  # here: subgraphs imports this module

    class Scan(OpRun):  # the op's name: the evaluator finds the class by it
        op_domain = ""
        op_schema = onnx.defs.get_schema("Scan", 8)  # its attributes (directions), not Scan-9's

        def need_context(self) -> bool:
            return True  # its body may read the enclosing graph's tensors by name

        def _run(  # type: ignore[no-untyped-def]
            self, sequence_lens, *args, context=None, body=None, num_scan_inputs=None,
            directions=None, attributes=None, bindings=None,
        ):
            names = self.body.input_names
            made = self.body.output_names
            form = scan_form({"num_scan_inputs": self.num_scan_inputs,
                              "directions": self.directions}, len(args), len(self.output),
                             len(names), len(made), input_directions="directions")
            states, reverse = form.states, form.input_reversed
            lengths, longest = _scan_8_lengths(sequence_lens, args[:states], args[states:])
            inputs = dict(context or {})  # the enclosing graph's: the body's own shadow them
            finals, rows = _scan_8_loops(
                lambda feeds: self._run_body(feeds, attributes=attributes, bindings=bindings),
                names, inputs, args[:states], args[states:], reverse, lengths,
                len(made) - states)
            stacked = [np.stack(final) if final else np.array(init)
                       for final, init in zip(finals, args[:states])]
            if any(not any(taken) for taken in rows):  # no step anywhere gives a shape
                typed = {name: np.empty(x.shape[1 + (i >= states):], x.dtype)
                         for i, (name, x) in enumerate(zip(names, args))}
                types = _body_output_types(self.body.onnx_graph_, {**inputs, **typed},
                                           self.run_params["opsets"], declared_first=0)
            outs = [
                _padded(taken, name, longest) if any(taken) else _no_trip_scan(
                    name, types.get(name, kind), "Scan", (len(lengths), longest))
                for taken, name, kind in zip(rows, made[states:],
                                             self.body.output_types_[states:])
            ]
            return (*stacked, *outs)

    return Scan


def _scan_8_loops(
    run_body: Callable[[dict[str, Any]], Any], names: list[str], inputs: dict[str, Any],
    initial: tuple[np.ndarray, ...], scanned: tuple[np.ndarray, ...], reverse: tuple[bool, ...],
    lengths: list[int], made: int,
) -> tuple[list[list[np.ndarray]], list[list[list[np.ndarray]]]]:
    """A Scan-8's loop of each batch entry b over its first ``lengths[b]`` steps: each state
    variable's final value by batch entry, and each of its ``made`` scan outputs' values by
    batch entry, step by step. The body's ``inputs`` start as the enclosing graph's."""
    states = len(initial)
    finals: list[list[np.ndarray]] = [[] for _ in initial]
    rows: list[list[list[np.ndarray]]] = [[] for _ in range(made)]
    for b, length in enumerate(lengths):
        carried = [init[b] for init in initial]
        steps: list[list[np.ndarray]] = [[] for _ in range(made)]
        for t in range(length):
            inputs.update(zip(names, carried))
            inputs.update((name, x[b, length - 1 - t if back else t])
                          for name, x, back in zip(names[states:], scanned, reverse))
            outputs = run_body(inputs)
            carried = _kept_states(carried, outputs[:states], names, b, t)
            for kept, value in zip(steps, outputs[states:]):
                kept.append(value)
        for final, value in zip(finals, carried):
            final.append(value)
        for row, taken in zip(rows, steps):
            row.append(taken)
    return finals, rows


def _scan_8_lengths(
    sequence_lens: Any, initial: tuple[np.ndarray, ...], scanned: tuple[np.ndarray, ...]
) -> tuple[list[int], int]:
    """A Scan-8's sequence length for each batch entry, and the longest (axis 1 of every
    scan input); ValueError naming the rule its inputs break, as onnxruntime refuses them
    ("Scan inputs have inconsistent batch size", "Invalid entries in sequence_lens"): a
    batch axis 0 on every input, of one size; scan inputs as long along axis 1; one length
    per batch entry, from 0 to the longest (onnxruntime refuses 0 too, which ONNX allows:
    the entry's final states are its initial ones, its scan outputs all padding)."""
    for what, values, rank in (("initial state", initial, 1), ("scan input", scanned, 2)):
        for index, value in enumerate(values):
            if value.ndim < rank:
                raise ValueError(
                    f"its {what} {index} is of shape {list(value.shape)}; a Scan-8's "
                    f"{what}s have a batch axis 0{' and a sequence axis 1' * (rank - 1)}")
    batches = [value.shape[0] for value in (*initial, *scanned)]
    longests = [x.shape[1] for x in scanned]
    if len(set(batches)) != 1 or len(set(longests)) != 1:
        raise ValueError(
            f"its inputs' batch sizes (axis 0) are {batches} and its scan inputs' lengths "
            f"(axis 1) {longests}; a Scan-8's inputs share one batch size, its scan inputs "
            "one length")
    batch, longest = batches[0], longests[0]
    if sequence_lens is None:
        return [longest] * batch, longest
    lengths = [int(v) for v in np.asarray(sequence_lens).reshape(-1)]
    if len(lengths) != batch or any(not 0 <= v <= longest for v in lengths):
        raise ValueError(
            f"sequence_lens is {lengths}; a Scan-8's holds one length per batch entry "
            f"({batch}), each from 0 to its scan inputs' length {longest} (axis 1)")
    return lengths, longest


def _kept_states(taken: list[np.ndarray], made: Any, names: list[str], batch: int,
                 step: int) -> list[np.ndarray]:
    """The state variables a Scan-8's body ``made``; ValueError where one changed shape or
    type from what it took: ONNX requires the same shape in each iteration, and a batch's
    final states are stacked."""
    for index, (before, after) in enumerate(zip(taken, made)):
        after = np.asarray(after)
        if before.shape != after.shape or before.dtype != after.dtype:
            raise ValueError(
                f"its body made state variable {index} ({names[index]!r}) "
                f"{after.dtype}{list(after.shape)} from {before.dtype}{list(before.shape)} "
                f"in step {step} of batch entry {batch}; a Scan's state variables keep their "
                "shape and type from step to step (ONNX requires it)")
    return [np.asarray(value) for value in made]


def _padded(rows: list[list[np.ndarray]], name: str, longest: int) -> np.ndarray:
    """A Scan-8's scan output ``name``: each batch entry's steps stacked, zeros after them
    to the ``longest`` sequence; ValueError where an element changed shape or type."""
    first = next(steps[0] for steps in rows if steps)
    out = np.zeros((len(rows), longest, *first.shape), first.dtype)
    for b, steps in enumerate(rows):
        for t, value in enumerate(steps):
            if value.shape != first.shape or value.dtype != first.dtype:
                raise ValueError(
                    f"its scan output {name!r} is {value.dtype}{list(value.shape)} in step {t} "
                    f"of batch entry {b}, {first.dtype}{list(first.shape)} before; a Scan's "
                    "scan outputs keep their shape and type (their steps are stacked)")
            out[b, t] = value
    return out


def _body_output_types(
    body: onnx.GraphProto, values: dict[str, Any], opsets: dict[str, int], declared_first: int = 2
) -> dict[str, onnx.TypeProto]:
    """The types onnx's inference gives a Loop's or Scan's body's outputs, its inputs and the
    enclosing names it reads typed by the values they hold (its first ``declared_first`` as
    declared: a Loop's iteration number and condition, the scalars it feeds), as onnxruntime
    types such a node's outputs; {} where inference fails."""
    graph = onnx.GraphProto()
    graph.CopyFrom(body)
    declared = {value.name for value in body.input}
    del graph.input[:]
    for index, value in enumerate(body.input):
        array = values.get(value.name)
        if index < declared_first or array is None:  # a Loop's counters: as declared
            graph.input.append(value)
        else:
            graph.input.append(_typed(value.name, array))
    for name, array in values.items():  # the enclosing graph's names it reads
        if name not in declared and isinstance(array, np.ndarray):
            graph.input.append(_typed(name, array))
    model = onnx.helper.make_model(
        graph, opset_imports=[onnx.helper.make_opsetid(d, v) for d, v in opsets.items()])
    try:
        inferred = onnx.shape_inference.infer_shapes(model, data_prop=True)
    except Exception:  # inference's failure: the declared types stand
        return {}
    return {value.name: value.type for value in inferred.graph.output}


def _typed(name: str, array: np.ndarray) -> onnx.ValueInfoProto:
    return onnx.helper.make_tensor_value_info(
        name, onnx.helper.np_dtype_to_tensor_dtype(array.dtype), array.shape)


def _no_trip_scan(name: str, declared: onnx.TypeProto, op: str = "Loop",
                  lead: tuple[int, ...] = (0,)) -> np.ndarray:
    """A scan output of a Loop (or a Scan-8) that ran no iteration: zeros of shape ``lead``
    (a Loop's: empty along its new axis 0) then the shape of each element, of the type the
    body makes for it, as inference gives it (``_body_output_types``; onnxruntime's reading:
    x [2, 3] gives [0, 2, 3]). Where no fixed shape is known, no iteration tells it: refused,
    naming the output (``np.stack`` of nothing raised "need at least one array to stack")."""
    tensor = declared.tensor_type if declared.HasField("tensor_type") else None
    dims = [] if tensor is None or not tensor.HasField("shape") else list(tensor.shape.dim)
    if tensor is None or not tensor.elem_type or not tensor.HasField("shape") or any(
        not d.HasField("dim_value") for d in dims
    ):
        raise ValueError(
            f"the {op} ran no iteration, so its scan output {name!r} has no element shape: "
            "neither its body nor inference fixes one"
        )
    dtype = onnx.helper.tensor_dtype_to_np_dtype(tensor.elem_type)
    return np.zeros((*lead, *(d.dim_value for d in dims)), dtype=dtype)


def _explicit_pads(auto_pad: Any, pads: Any, spatial: Any, kernel_shape: Any, strides: Any,
                   dilations: Any) -> list[int]:
    """A pool's pads, every begin then every end: ``auto_pad`` SAME pads ``(out - 1) * stride
    + (kernel - 1) * dilation + 1 - size`` (none where that is negative, as onnxruntime:
    the spec's output is ``ceil(size / stride)`` either way) for ``out = ceil(size /
    stride)``, the odd one at the end (SAME_UPPER) or the beginning (SAME_LOWER)."""
    rank = len(kernel_shape)
    if auto_pad not in ("SAME_UPPER", "SAME_LOWER"):
        return [0] * (2 * rank) if auto_pad == "VALID" or pads is None else list(pads)
    begins, ends = [], []
    for size, k, stride, dilation in zip(spatial, kernel_shape, strides, dilations):
        out = -(-size // stride)
        total = max(0, (out - 1) * stride + (k - 1) * dilation + 1 - size)
        begin = total // 2 if auto_pad == "SAME_UPPER" else total - total // 2
        begins.append(begin)
        ends.append(total - begin)
    return begins + ends


def _max_pool() -> type:
    """MaxPool by the reference's general kernel (``_max_pool``), its pads explicit. The
    reference takes a shortcut where strides and dilations are 1 that reads ``pads`` as
    (begin, end) pairs per axis, where ONNX lists every axis's begin, then every end: pads
    [0, 0, 1, 1] over 5x6 made 4x7 for 5x6 (YOLOv3-tiny's 2x2 stride-1 pool pads so).
    Its SAME_LOWER put the odd pad at the end and sized the output by flooring; ONNX and
    onnxruntime put it at the beginning and size by ceiling, as for SAME_UPPER."""
    from onnx.reference.ops.op_max_pool import MaxPool as Reference

    class MaxPool(Reference):  # the op's name: the evaluator finds the class by it
        op_domain = ""

        def _run(  # type: ignore[no-untyped-def]
            self, x, auto_pad=None, ceil_mode=None, dilations=None, kernel_shape=None,
            pads=None, storage_order=None, strides=None,
        ):
            rank = len(kernel_shape)
            strides = list(strides or [1] * rank)
            dilations = list(dilations or [1] * rank)
            pads = _explicit_pads(auto_pad, pads, x.shape[2:], kernel_shape, strides, dilations)
            return self._max_pool(x, "NOTSET", ceil_mode, dilations, kernel_shape,
                                  list(pads), storage_order, strides)

    return MaxPool


_HALF = np.float32(0.5)

#: Resize's coordinate transformation modes, each mapping output coordinates ``y`` of an axis
#: to input coordinates, as Resize-19's ``coordinate_transformation_mode`` writes them: (y,
#: scale, input length, output length, roi start, roi end), all float32 (the scales' type, and
#: onnxruntime's arithmetic: in float64 a nearest element at a tie or an integer coordinate
#: came out one off onnxruntime's, 1.3 of 6 with round_prefer_floor).
_RESIZE_COORDINATES: dict[str, Callable[..., np.ndarray]] = {
    "half_pixel": lambda y, scale, size, out, start, end: (y + _HALF) / scale - _HALF,
    "half_pixel_symmetric": lambda y, scale, size, out, start, end: (
        size / np.float32(2) * (np.float32(1) - out / (scale * size))
        + (y + _HALF) / scale - _HALF),
    "pytorch_half_pixel": lambda y, scale, size, out, start, end: (
        (y + _HALF) / scale - _HALF if out > 1 else 0 * y),
    "align_corners": lambda y, scale, size, out, start, end: (
        y * (size - 1) / (out - 1) if out > 1 else 0 * y),
    "asymmetric": lambda y, scale, size, out, start, end: y / scale,
    "tf_crop_and_resize": lambda y, scale, size, out, start, end: (
        start * (size - 1) + y * (end - start) * (size - 1) / (out - 1) if out > 1
        else 0 * y + _HALF * (start + end) * (size - 1)),
}
#: Resize's ``nearest_mode``: the input index nearest an input coordinate.
_NEAREST: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "round_prefer_floor": lambda x: np.ceil(x - 0.5),
    "round_prefer_ceil": lambda x: np.floor(x + 0.5),
    "floor": np.floor,
    "ceil": np.ceil,
}


def _resize_axis(data: np.ndarray, axis: int, x: np.ndarray, mode: str, nearest: str,
                 cubic_a: float, exclude_outside: bool) -> np.ndarray:
    """``data`` resampled along ``axis`` at input coordinates ``x``: the nearest element,
    or a linear (2 taps) or cubic (4 taps, Keys' kernel with ``cubic_a``) blend, the taps
    clamped into the axis (or, with ``exclude_outside``, those outside weighted 0 and the
    rest renormalized), as the spec and onnxruntime."""
    size = data.shape[axis]
    if mode == "nearest":
        index = np.clip(_NEAREST[nearest](x), 0, size - 1).astype(np.intp)
        return np.take(data, index, axis=axis)
    first = np.floor(x)
    t = (x - first)[:, None]
    if mode == "linear":
        offsets, weights = np.arange(2), np.hstack([1 - t, t])
    else:
        offsets = np.arange(-1, 3)
        d = np.abs(np.hstack([t + 1, t, 1 - t, 2 - t]))  # each tap's distance from x
        weights = np.where(d <= 1, ((cubic_a + 2) * d - (cubic_a + 3)) * d * d + 1,
                           ((cubic_a * d - 5 * cubic_a) * d + 8 * cubic_a) * d - 4 * cubic_a)
    taps = first.astype(np.intp)[:, None] + offsets
    if exclude_outside:
        weights = np.where((taps < 0) | (taps >= size), 0.0, weights)
        weights = weights / weights.sum(axis=1, keepdims=True)
    gathered = np.take(data, np.clip(taps, 0, size - 1), axis=axis)  # (..., out, taps, ...)
    shape = (1,) * axis + weights.shape + (1,) * (data.ndim - axis - 1)
    return (gathered * weights.reshape(shape)).sum(axis=axis + 1)


def _conv_transpose() -> type:
    """ConvTranspose with ``output_shape`` and explicit padding (``auto_pad`` NOTSET): the
    pads follow from the shape, as the spec's equations say ("total_padding[i] = stride[i] *
    (input_size[i] - 1) + output_padding[i] + ((kernel_shape[i] - 1) * dilations[i] + 1) -
    output_shape[i]"; the odd one at the start) and onnxruntime computes them; a shape past
    the full output (negative padding, which ONNX leaves unsaid) extends it at the end, as
    onnxruntime does. The reference took the pads as zeros and failed on any other shape
    than the full output ("expected size of input's dimension")."""
    from onnx.reference.ops.op_conv_transpose import ConvTranspose as Reference

    class ConvTranspose(Reference):  # the op's name: the evaluator finds the class by it
        op_domain = ""

        def _run(  # type: ignore[no-untyped-def,override]
            self, X, W, B=None, auto_pad=None, dilations=None, group=None, kernel_shape=None,
            output_padding=None, output_shape=None, pads=None, strides=None,
        ):
            if output_shape is not None and auto_pad in (None, "NOTSET"):
                rank = X.ndim - 2
                output_padding = list(output_padding or [0] * rank)[:rank]
                total = [
                    s * (n - 1) + extra + (k - 1) * d + 1 - out
                    for s, n, extra, k, d, out in zip(
                        strides or [1] * rank, X.shape[2:], output_padding,
                        kernel_shape or W.shape[2:], dilations or [1] * rank, output_shape)
                ]
                pads = [max(0, t - t // 2) for t in total] + [max(0, t // 2) for t in total]
                # a shape past the full output extends it at the end, as output_padding
                output_padding = [e + max(0, -t) for e, t in zip(output_padding, total)]
                output_shape = None
            return super()._run(X, W, B, auto_pad, dilations, group, kernel_shape,
                                output_padding, output_shape, pads, strides)

    return ConvTranspose


def _as_string(value: Any) -> str:
    """A number as Cast writes it into a string, onnxruntime's way (the spec asks only for
    "plain floating-point representation (such as "314.15926")"): a float by C's ``%.8g``
    ("-2", "0.1", "1e+20", "-0"; float16 and double too), NaN and the infinities as "NaN",
    "INF" and "-INF" (the spellings Cast reads back), a bool as "1" or "0", an integer in
    full. The reference wrote NumPy's ``str``: "-2.0", "nan", "True"."""
    if isinstance(value, (bool, np.bool_)):
        return "1" if value else "0"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    number = float(value)
    if math.isnan(number):
        return "NaN"
    if math.isinf(number):
        return "INF" if number > 0 else "-INF"
    return "%.8g" % number


def _strings(x: np.ndarray) -> np.ndarray:
    """``x`` as an array of Python strings (objects, as dmlgraph's and onnxruntime's STRING
    tensors; the reference's were NumPy's ``<U``)."""
    made = np.empty(x.shape, object)
    if x.dtype.kind in "OUS":
        made.reshape(-1)[:] = [v if isinstance(v, str) else str(v) for v in x.reshape(-1)]
    else:
        made.reshape(-1)[:] = [_as_string(v) for v in x.reshape(-1).tolist()]
    return made


def _casts() -> list[type]:
    """Cast and CastLike to STRING as onnxruntime writes numbers (``_as_string``); every
    other cast stays the reference's (``cast_to``)."""
    from onnx import TensorProto
    from onnx.helper import np_dtype_to_tensor_dtype
    from onnx.reference.op_run import OpRun
    from onnx.reference.ops.op_cast import cast_to

    class Cast(OpRun):  # the op's name: the evaluator finds the class by it
        op_domain = ""

        def _run(self, x, to=None, saturate=None, round_mode=None):  # type: ignore[no-untyped-def]
            if to == TensorProto.STRING:
                return (_strings(x),)
            return (cast_to(x, to, 1 if saturate is None else saturate, round_mode or "up"),)

    class CastLike(OpRun):  # the op's name: the evaluator finds the class by it
        op_domain = ""

        def _run(self, x, like, saturate=None, round_mode=None):  # type: ignore[no-untyped-def]
            if like.dtype.kind in "OU":
                return (_strings(x),)
            to = np_dtype_to_tensor_dtype(like.dtype)
            return (cast_to(x, to, 1 if saturate is None else saturate, round_mode or "up"),)

    return [Cast, CastLike]


#: LabelEncoder-4's ``default_tensor`` where a node leaves it out, by the values' kind (the
#: schema's "{"_Unused"} if values_* has string type, {-1} if ... integral type, and {-0.f}
#: if ... float type").
_LABEL_DEFAULTS = {"O": "_Unused", "U": "_Unused", "i": -1, "u": -1, "f": -0.0}


def _label_encoder() -> type:
    """ai.onnx.ml's LabelEncoder as LabelEncoder-4 says: ``default_tensor``, where given, is
    the default whatever ``values_*`` holds the values (the reference read it only with
    ``values_tensor``: keys_int64s to values_floats with default_tensor [-7] gave -0 where
    onnxruntime gives -7), and its schema default where ``values_tensor`` comes without it
    (the reference failed); a NaN key matches any NaN input (the reference's dictionary
    matched none); strings come out as objects, as dmlgraph's STRING tensors."""
    from onnx.reference.ops.aionnxml.op_label_encoder import LabelEncoder as Reference

    class LabelEncoder(Reference):  # the op's name: the evaluator finds the class by it
        op_domain = "ai.onnx.ml"

        def _run(  # type: ignore[no-untyped-def,override]
            self, x, default_float=None, default_int64=None, default_string=None,
            default_tensor=None, keys_floats=None, keys_int64s=None, keys_strings=None,
            values_floats=None, values_int64s=None, values_strings=None, keys_tensor=None,
            values_tensor=None,
        ):
            keys = next(k for k in (keys_floats, keys_int64s, keys_strings, keys_tensor)
                        if k is not None)
            if values_tensor is not None:
                values, dtype = values_tensor.tolist(), values_tensor.dtype
                default = _LABEL_DEFAULTS[dtype.kind]
            elif values_floats is not None:
                values, dtype, default = values_floats, np.dtype(np.float32), default_float
            elif values_int64s is not None:
                values, dtype, default = values_int64s, np.dtype(np.int64), default_int64
            else:
                values, dtype, default = values_strings, np.dtype(object), default_string
            if default_tensor is not None:
                default = default_tensor.reshape(-1)[0]
            if dtype.kind in "OU":
                dtype = np.dtype(object)
                default = default if isinstance(default, str) else str(default)
            if keys_floats is not None and not self._nan_matches():
                flat = label_bits_look_up(keys_floats, values, default, x)
            else:
                keys = np.asarray(keys).tolist()  # Python scalars: NumPy's compare otherwise
                table = dict(zip(keys, values))
                at_nan = [v for k, v in zip(keys, values) if isinstance(k, float) and k != k]
                nan_value = at_nan[-1] if at_nan and self._nan_matches() else default

                def look_up(key: Any) -> Any:
                    if isinstance(key, str) or key == key:
                        return table.get(key, default)
                    return nan_value

                flat = [look_up(k) for k in x.reshape(-1).tolist()]
            made = np.empty(len(flat), dtype)
            made[:] = flat
            return (made.reshape(x.shape),)

        def _nan_matches(self) -> bool:
            """LabelEncoder-4's NaN keys match any NaN input; LabelEncoder-2's and -3's
            float keys are compared bit by bit (``label_bits_look_up``)."""
            return bool(self.run_params["opsets"].get("ai.onnx.ml", 1) >= 4)

    return LabelEncoder


#: The domain of ops whose divergence tests are keyed by op type alone, where not ai.onnx's.
DIVERGENT_DOMAINS: dict[str, str] = {"LabelEncoder": "ai.onnx.ml"}


def label_bits_divergence(version: int, attrs: Mapping[str, Any], x: Any) -> str:
    """Why onnxruntime 1.32 maps ``x`` otherwise than a LabelEncoder-2 (or -3) of float keys
    does by its spec (``label_bits_look_up``), or "": a NaN of a NaN key's bits, -0 for a
    key 0, a 0 of keys 0 and -0 of other values (onnxruntime takes the first's)."""
    keys = attrs.get("keys_floats")
    if version >= 4 or keys is None or not isinstance(x, np.ndarray) or x.dtype != np.float32:
        return ""
    keys = np.asarray(keys, np.float32)
    if not ((keys != keys) | (keys == 0)).any():
        return ""
    odd = x[(x != x) | (x == 0)].view(np.uint32)  # the only inputs mapped otherwise
    if not odd.size:
        return ""
    values = next((v for v in (attrs.get(f"values_{kind}") for kind in (
        "floats", "int64s", "strings")) if v is not None), None)
    bits, counts = np.unique(odd, return_counts=True)
    differ = sum(int(count) for b, count in zip(bits.tolist(), counts.tolist())
                 if _label_keys_differ(keys, values, np.uint32(b)))
    if not differ:
        return ""
    return (f"a LabelEncoder-{version} of float keys {keys.tolist()}: ONNX compares keys bit "
            f"by bit (\"even a float NaN can be mapped\"), so {differ} element(s) of its input "
            "(a NaN of a NaN key's bits, -0 against a key 0, or a 0 of keys 0 and -0) map "
            "otherwise than onnxruntime 1.32 maps them, comparing as floats (a NaN matches no "
            "key, -0 matches 0, the first of equal keys is taken), as onnx.reference does; "
            "--fallback reference computes ONNX's")


def _label_keys_differ(keys: np.ndarray, values: Sequence[Any] | None, bits: np.uint32) -> bool:
    """Whether an input of ``bits`` takes another value by the spec's look-up (the last key
    of its bits, as ``label_bits_look_up``'s table) than by onnxruntime's (the first key
    equal as a float); without ``values``, whether the keys differ."""
    by_bits = np.flatnonzero(keys.view(np.uint32) == bits)
    as_float = np.flatnonzero(keys == bits.view(np.float32))
    spec = int(by_bits[-1]) if by_bits.size else None
    onnxruntime = int(as_float[0]) if as_float.size else None
    if spec is None or onnxruntime is None or values is None:
        return spec != onnxruntime
    return bool(values[spec] != values[onnxruntime])


def label_divergence(version: int, attrs: Mapping[str, Any], x: Any) -> str:
    """Why onnxruntime 1.32 maps ``x`` otherwise than a LabelEncoder does here (folding and
    the reference fallback run ``reference_ops``'): its float keys compared bit by bit
    (``label_bits_divergence``), else its repeated keys (``label_repeat_divergence``); "" if
    neither."""
    return label_bits_divergence(version, attrs, x) or label_repeat_divergence(version, attrs, x)


_LABEL_KEYS = ("keys_floats", "keys_int64s", "keys_strings", "keys_tensor")
_LABEL_VALUES = ("values_floats", "values_int64s", "values_strings", "values_tensor")
_NAN_KEY = "NaN key"  #: the one group of LabelEncoder-4's NaN keys, which match any NaN


def label_repeat_divergence(version: int, attrs: Mapping[str, Any], x: Any) -> str:
    """A key repeated with another value (equal as onnxruntime compares: as floats, a NaN
    matching a NaN from LabelEncoder-4 on): onnxruntime 1.32 maps an input equal to it to the
    first one's value, onnx.reference and ``reference_ops`` (a table of the keys, the last one
    kept) to the last's; ONNX says neither. Named with the count of ``x``'s elements so
    mapped, or "". Folded, a constant input took the last's where onnxruntime gives the
    first's, silently."""
    keys = next((attrs[k] for k in _LABEL_KEYS if attrs.get(k) is not None), None)
    values = next((attrs[k] for k in _LABEL_VALUES if attrs.get(k) is not None), None)
    if keys is None or values is None or not isinstance(x, np.ndarray):
        return ""
    keys = np.asarray(keys).reshape(-1).tolist()
    values = np.asarray(values).reshape(-1).tolist()
    first: dict[Any, Any] = {}
    last: dict[Any, Any] = {}
    for key, value in zip(keys, values):
        if isinstance(key, float) and key != key:
            if version < 4:  # a NaN matches no key in onnxruntime (label_bits_divergence)
                continue
            key = _NAN_KEY
        first.setdefault(key, value)
        last[key] = value
    repeated = {k for k in last if not _same_label(first[k], last[k])}
    if not repeated:
        return ""
    flat = x.reshape(-1)
    if version < 4 and attrs.get("keys_floats") is not None:  # the spec's look-up is by bits
        if flat.dtype != np.float32:
            return ""
        hit = flat[np.isin(flat, np.asarray(sorted(repeated), np.float32))].view(np.uint32)
        bits, counts = np.unique(hit, return_counts=True)
        floats = np.asarray(keys, np.float32)
        differ = sum(int(c) for b, c in zip(bits.tolist(), counts.tolist())
                     if _label_keys_differ(floats, values, np.uint32(b)))
    else:
        differ = sum(1 for e in flat.tolist()
                     if (_NAN_KEY if isinstance(e, float) and e != e else e) in repeated)
    if not differ:
        return ""
    shown = sorted((str(k) for k in repeated))
    return (f"a LabelEncoder-{version} of keys repeated with other values ({', '.join(shown)}): "
            f"onnxruntime 1.32 maps an input equal to one to the first one's value, "
            f"onnx.reference to the last one's (ONNX says neither), so {differ} element(s) of "
            "its input map otherwise than onnxruntime maps them; --fallback reference computes "
            "onnx.reference's")


def _same_label(a: Any, b: Any) -> bool:
    """Whether two values of a LabelEncoder are the same (two NaNs are)."""
    return bool(a == b or (isinstance(a, float) and a != a and b != b))


def label_bits_look_up(keys: Sequence[float], values: Sequence[Any], default: Any,
                       x: np.ndarray) -> list[Any]:
    """LabelEncoder-2's and -3's look-up of float keys, as their spec says: "bit-wise
    comparison is used so even a float NaN can be mapped to a value" (a NaN input of a NaN
    key's bits takes its value; -0 is not 0's key). onnx.reference and onnxruntime 1.32
    compare as floats: a NaN matches no key, -0 matches 0 (``label_bits_divergence``)."""
    bits = np.asarray(keys, np.float32).view(np.uint32).tolist()
    table = dict(zip(bits, values))
    return [table.get(b, default) for b in np.asarray(x, np.float32).reshape(-1).view(
        np.uint32).tolist()]


def _pool_pads(x: np.ndarray, auto_pad: Any, ceil_mode: Any, dilations: Any,
               kernel_shape: Any, pads: Any, strides: Any) -> tuple[list[int], Any]:
    """A pool's explicit pads (``_explicit_pads``) and its ceil_mode, which the spec's
    SAME and VALID output sizes do not read."""
    rank = len(kernel_shape)
    made = _explicit_pads(auto_pad, pads, x.shape[2:], kernel_shape, strides or [1] * rank,
                          dilations or [1] * rank)
    return made, ceil_mode if auto_pad in (None, "NOTSET") else 0


def _ceil_mode_pools() -> list[type]:
    """AveragePool and LpPool with ``ceil_mode``: a last window reaching past the padded
    input takes the elements it holds there, as onnxruntime (and PyTorch) do: an average
    divides by their count (with ``count_include_pad``, the padding among them; the spec's
    divisor is "the number of elements"), an Lp norm sums them. The reference pads such an
    input on both sides to fit the windows, so its windows started a column early ([1, 1, 7]
    by 3, stride 3: 1.5, 4, 6 for 2, 5, 7), and its LpPool scaled a short window's mean by
    the kernel's size (7 came out 12.1)."""
    from onnx.reference.ops.op_average_pool import AveragePool_19
    from onnx.reference.ops.op_lp_pool import LpPool as ReferenceLpPool
    from onnx.reference.ops.op_pool_common import get_output_shape_explicit_padding, pool

    def ceil_pool(x: np.ndarray, kind: str, include_pad: int, p: Any, dilations: Any,
                  kernel_shape: Any, pads: Any, strides: Any) -> np.ndarray:
        rank = len(kernel_shape)
        pads = list(pads or [0] * (2 * rank))
        strides = list(strides or [1] * rank)
        dilations = list(dilations or [1] * rank)
        out, _ = get_output_shape_explicit_padding(pads, x.shape[2:], kernel_shape, strides,
                                                   dilations, True)
        ends = [  # the end padding, or as far as the last window reaches past it
            max(pads[rank + d], (o - 1) * s + (k - 1) * dil + 1 - size - pads[d])
            for d, (o, s, k, dil, size) in enumerate(
                zip(out, strides, kernel_shape, dilations, x.shape[2:]))
        ]
        padded = np.pad(x, [(0, 0), (0, 0), *zip(pads[:rank], ends)],
                        constant_values=0 if include_pad else np.nan)
        return pool(padded, x.shape, kernel_shape, strides, out, kind, pads[:rank] + ends,
                    pads, dilations, include_pad, p)  # type: ignore[no-any-return]

    class AveragePool(AveragePool_19):  # the op's name: the evaluator finds the class by it
        op_domain = ""

        def _run(  # type: ignore[no-untyped-def,override]
            self, x, auto_pad=None, ceil_mode=None, count_include_pad=None, dilations=None,
            kernel_shape=None, pads=None, strides=None,
        ):
            pads, ceil_mode = _pool_pads(x, auto_pad, ceil_mode, dilations, kernel_shape, pads,
                                         strides)
            if not ceil_mode:
                return super()._run(x, "NOTSET", 0, dilations, kernel_shape, pads, strides,
                                    count_include_pad)
            return (ceil_pool(x, "AVG", count_include_pad, 1, dilations, kernel_shape, pads,
                              strides),)

    class LpPool(ReferenceLpPool):  # the op's name: the evaluator finds the class by it
        op_domain = ""

        def _run(  # type: ignore[no-untyped-def,override]
            self, x, auto_pad=None, ceil_mode=None, dilations=None, kernel_shape=None, p=2,
            pads=None, strides=None,
        ):
            pads, ceil_mode = _pool_pads(x, auto_pad, ceil_mode, dilations, kernel_shape, pads,
                                         strides)
            if not ceil_mode:
                return super()._run(x, "NOTSET", 0, dilations, kernel_shape, p, pads, strides)
            made = ceil_pool(x, "LPPOOL", 1, p, dilations, kernel_shape, pads, strides)
            return (made.astype(x.dtype),)

    return [AveragePool, LpPool]


def _resize_geometry(
    shape: tuple[int, ...], axes: list[int], scales: Any, sizes: Any, policy: Any, roi: Any,
) -> tuple[list[float], list[int], list[float], list[float]]:
    """Each axis's scale, output length and roi (start, end; ``roi`` None but for
    tf_crop_and_resize), as Resize-19 says: from ``sizes`` (scale = output / input; with
    ``keep_aspect_ratio_policy`` one scale, the output rounded half up) or from ``scales``
    (output = floor(input * (roi_end - roi_start) * scale))."""
    rank = len(shape)
    starts, ends = [0.0] * rank, [1.0] * rank
    for k, axis in enumerate(axes if roi is not None and len(roi) else []):
        starts[axis], ends[axis] = float(roi[k]), float(roi[len(axes) + k])
    if sizes is None or not len(sizes):
        scale = [1.0] * rank
        for axis, value in zip(axes, np.asarray(scales).tolist()):
            scale[axis] = value
        out = [math.floor(shape[a] * (ends[a] - starts[a]) * scale[a]) for a in range(rank)]
        return scale, out, starts, ends
    out = list(shape)
    for axis, value in zip(axes, np.asarray(sizes).tolist()):
        out[axis] = value
    scale = [out[a] / shape[a] for a in range(rank)]
    if policy in ("not_larger", "not_smaller"):
        kept = (min if policy == "not_larger" else max)(scale[a] for a in axes)
        scale = [kept if a in axes else 1.0 for a in range(rank)]
        out = [int(kept * shape[a] + 0.5) if a in axes else shape[a] for a in range(rank)]
    return scale, out, starts, ends


def _resize() -> type:
    """Resize by the spec's formulas, axis by axis. onnx.reference computed align_corners,
    pytorch_half_pixel's one-element case and tf_crop_and_resize from the length before
    flooring (``input * scale``) where the spec and onnxruntime use the output's length
    (align_corners 0.75 of 5 to 3: 6.5 off onnxruntime); its nearest picked an element one
    off where the coordinate is an integer or a tie within rounding (half_pixel_symmetric
    0.5 of 7); its float64 coordinates did so too against the spec's in float32 (the
    scales' type, onnxruntime's); and Resize-10 failed ("output_size is None"). Where the
    spec and onnxruntime differ this follows the spec (docs/DECISIONS.md): a scale other than 1 that
    keeps the length still resamples (onnxruntime copies), and tf_crop_and_resize's scaled
    length counts the roi (onnxruntime's does not). Antialiased linear and cubic stay the
    reference's."""
    from onnx.numpy_helper import saturate_cast
    from onnx.reference.ops.op_resize import Resize as Reference

    class Resize(Reference):  # the op's name: the evaluator finds the class by it
        op_domain = ""

        def _run(  # type: ignore[no-untyped-def,override]
            self, X, roi=None, scales=None, sizes=None, antialias=None, axes=None,
            coordinate_transformation_mode=None, cubic_coeff_a=None, exclude_outside=None,
            extrapolation_value=None, keep_aspect_ratio_policy=None, mode=None,
            nearest_mode=None,
        ):
            transform = coordinate_transformation_mode
            if self.run_params["opsets"].get("", 1) < 11:  # Resize-10: (X, scales), asymmetric
                roi, scales, transform, nearest_mode = None, roi, "asymmetric", "resize_10"
            if antialias and mode != "nearest":
                return super()._run(X, roi, scales, sizes, antialias, axes, transform,
                                    cubic_coeff_a, exclude_outside, extrapolation_value,
                                    keep_aspect_ratio_policy, mode, nearest_mode)
            rank = X.ndim
            axes = [a + rank if a < 0 else a for a in (range(rank) if axes is None else axes)]
            geometry = _resize_geometry(X.shape, axes, scales, sizes, keep_aspect_ratio_policy,
                                        roi if transform == "tf_crop_and_resize" else None)
            made = _resample(X, axes, *geometry, transform, mode, nearest_mode, cubic_coeff_a,
                             bool(exclude_outside), extrapolation_value)
            return (saturate_cast(made, X.dtype),)

    return Resize


def _resample(X: np.ndarray, axes: list[int], scale: list[float], out: list[int],
              starts: list[float], ends: list[float], transform: str, mode: str, nearest: str,
              cubic_a: float, exclude_outside: bool, extrapolation: float) -> np.ndarray:
    """``X`` resized (in float64) axis by axis as ``_resize_geometry`` sizes it, each
    output coordinate mapped by ``transform`` (in float32) and sampled by ``mode``."""
    made = X.astype(np.float64)
    for axis in axes:
        size = X.shape[axis]
        if (out[axis], scale[axis], starts[axis], ends[axis]) == (size, 1, 0, 1):
            continue  # every mode maps y to y
        x = _RESIZE_COORDINATES[transform](
            np.arange(out[axis], dtype=np.float32),
            *(np.float32(v) for v in (scale[axis], size, out[axis], starts[axis], ends[axis]))
        ).astype(np.float64)
        rounding = nearest
        if rounding == "resize_10":  # unsaid by Resize-10 and Upsample: onnxruntime's choice
            rounding = "ceil" if scale[axis] < 1 else "floor"
        made = _resize_axis(made, axis, x, mode, rounding, cubic_a, exclude_outside)
        if transform == "tf_crop_and_resize":
            outside = (x < 0) | (x > size - 1)
            made = np.where(outside.reshape((-1,) + (1,) * (X.ndim - axis - 1)),
                            extrapolation, made)
    return made


def _upsample() -> type:
    """Upsample (opsets 7-9) as Resize-10, which replaced it: ``floor(input * scale)``
    elements, asymmetric coordinates. onnx.reference's repeated elements for whole nearest
    scales and failed on any other scale or on linear ("Not implemented for mode"); and
    Upsample-7's ``scales`` attribute it did not read."""
    from onnx.numpy_helper import saturate_cast
    from onnx.reference.op_run import OpRun

    class Upsample(OpRun):  # the op's name: the evaluator finds the class by it
        op_domain = ""

        def _run(self, X, scales=None, mode=None):  # type: ignore[no-untyped-def]
            if scales is None:  # Upsample-7: an attribute, which the newest schema lacks
                scales = next(a.floats for a in self.onnx_node.attribute if a.name == "scales")
            axes = list(range(X.ndim))
            geometry = _resize_geometry(X.shape, axes, scales, None, None, None)
            made = _resample(X, axes, *geometry, "asymmetric", mode or "nearest", "resize_10",
                             -0.75, False, 0.0)
            return (saturate_cast(made, X.dtype),)

    return Upsample
