"""Logical ops -> DirectML descriptors at one feature level, decomposing where one cannot do.

Every function here plans into a ``Plan`` without touching the graph; the legalize pass
commits a plan only when the whole original node succeeded, so a node is lowered entirely or
left entirely for fallback. A failure raises ``CannotLower`` with a reason that names the
support-table row or rule that forbids the step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from dmlgraph.dml.enums import FeatureLevel, OperatorType, PaddingMode, TensorDataType
from dmlgraph.dml.indexmaps import INDEX_MAPS
from dmlgraph.dml.operators import (
    PADDING_MODE_INTRODUCED,
    JoinDesc,
    OperatorDesc,
    Padding1Desc,
    PaddingDesc,
    Slice1Desc,
    SliceDesc,
)
from dmlgraph.dml.support import introduced, support_row
from dmlgraph.dml.tensor import BufferTensorDesc
from dmlgraph.errors import DmlValidationError, counted
from dmlgraph.folding import FOLD_GROWTH_LIMIT_BYTES
from dmlgraph.printable import values_text
from lowering.layout import (
    Layout,
    TypeView,
    native_type,
    plan_layout,
    row_text,
    type_views,
    unsupported_dtype,
)
from lowering.logical import LogicalPad, LogicalSlice

#: At most this many pieces in one JOIN built by decomposition (a reversed axis below FL 2.1
#: needs one single-element SLICE per element).
MAX_JOIN_PIECES = 1024
#: At most this many border positions are indexed to find a padding's pieces (64 MB of
#: indices): a border of many periods of a long axis may pass the piece bound.
MAX_BORDER_POSITIONS = 1 << 23

Shape = tuple[int, ...]


class CannotLower(Exception):
    """No legal sequence of descriptors was found; the message says which rule forbids it."""


@dataclass(frozen=True)
class Step:
    """One DML operator to add: its descriptor, the tensors it reads and the one it writes."""

    desc: OperatorDesc
    inputs: tuple[str, ...]
    output: str


@dataclass
class Plan:
    """Descriptors, new intermediate tensors and new constants of one original node."""

    level: FeatureLevel
    dtype: np.dtype
    taken: Callable[[str], bool]  # whether the graph already has a tensor of this name
    steps: list[Step] = field(default_factory=list)
    temps: dict[str, Shape] = field(default_factory=dict)
    constants: dict[str, np.ndarray] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    #: per base, the suffix its last name took: names are only ever added, so the next one
    #: is past it (probing from 0 made a JOIN of k pieces cost k^2 look-ups)
    suffixes: dict[str, int] = field(default_factory=dict, repr=False, compare=False)

    def name(self, base: str) -> str:
        k = self.suffixes.get(base, 0)
        candidate = f"{base}_{k}" if k else base
        while self.taken(candidate) or candidate in self.temps or candidate in self.constants:
            k += 1
            candidate = f"{base}_{k}"
        self.suffixes[base] = k
        return candidate

    def temp(self, base: str, shape: Shape) -> str:
        name = self.name(base)
        self.temps[name] = tuple(shape)
        return name

    def constant(self, base: str, data: np.ndarray) -> str:
        name = self.name(base)
        self.constants[name] = data
        return name

    def add(
        self, desc: OperatorDesc, inputs: Sequence[str], output: str, checked: bool = False
    ) -> None:
        """Add a step; ``checked``: ``invalid`` already passed it at the plan's level."""
        if not checked:
            why = self.invalid(desc)
            if why:  # a planning bug must not leave lower() as a desc
                raise CannotLower(f"the planned descriptor is invalid: {why}")
        self.steps.append(Step(desc, tuple(inputs), output))

    def invalid(self, desc: OperatorDesc) -> str:
        """Why ``desc`` breaks a rule at the plan's level ("" when it is valid). A view the
        support row accepts may still break a rule of its numbers (a tensor of 2^32 elements,
        a SLICE1 stride beyond INT), which another view or a decomposition may not."""
        try:
            desc.validate(self.level)
        except DmlValidationError as exc:
            return str(exc)
        return ""

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    @property
    def operators(self) -> list[str]:
        return [step.desc.name for step in self.steps]


def _candidates(
    plan: Plan, operator: OperatorType, shapes: Sequence[Shape], touched: Sequence[int]
) -> Iterator[tuple[TypeView, Layout]]:
    """Type and rank views the operator's row at the plan's level accepts, best first."""
    row = support_row(operator, plan.level)
    if row is None:
        return
    for view in type_views(plan.dtype):
        if view.data_type not in row.data_types:
            continue
        layout = plan_layout(shapes[0], touched, view, row)
        if isinstance(layout, Layout):
            yield view, layout


def _why_not(plan: Plan, operator: OperatorType, shape: Shape, touched: Sequence[int]) -> str:
    """Why no view fits ``operator``'s row: the row itself, and the closest miss."""
    row = support_row(operator, plan.level)
    text = row_text(operator, plan.level)
    if row is None:
        return text
    unsupported = unsupported_dtype(plan.dtype)
    if unsupported:
        return unsupported
    typed = [v for v in type_views(plan.dtype) if v.data_type in row.data_types]
    if not typed:
        return f"{text}; no view of {plan.dtype} has one of those types"
    view = typed[0]
    miss = plan_layout(shape, touched, view, row)
    if isinstance(miss, Layout):  # the rank fits; the op's numbers would split an element
        axis = miss.scaled[0] if miss.scaled else "?"
        miss = (
            f"along axis {axis} the op's offsets, sizes or mode would split {view.data_type.name}"
            " elements"
        )
    return f"{text}; {view.describe(plan.dtype)}: {miss}"


def _desc(view: TypeView, layout: Layout, shape: Shape) -> BufferTensorDesc:
    return BufferTensorDesc(view.data_type, layout.sizes(shape))


def _view_note(
    plan: Plan, kind: OperatorType, view: TypeView, layout: Layout, shape: Shape
) -> None:
    """Say how the tensors were viewed, when that differs from the model's own type and rank."""
    if view.data_type != native_type(plan.dtype):
        plan.note(f"data viewed as {view.describe(plan.dtype)}: the op only moves bytes")
    sizes = list(layout.sizes(shape))
    if layout.scaled is not None:  # the trailing block folded into the innermost changed axis
        axis, mul, div = layout.scaled
        folded = [*shape[:axis], layout.scale(axis, shape[axis])]
        plan.note(
            f"axis {axis} and the {counted(mul, 'element')} after each of its indices viewed as "
            f"one axis of {folded[-1]} {view.data_type.name} elements ({div} {plan.dtype} "
            f"each): every index the op uses there stays whole; shape {list(shape)} as {folded}"
        )
        shape = tuple(folded)  # type: ignore[arg-type]  # what the rank notes start from
    natural = len(shape) + (1 if view.split > 1 else 0)
    row = support_row(kind, plan.level)
    assert row is not None
    if len(sizes) > max(natural, 1):
        plan.note(
            f"shape {list(shape)} viewed as {sizes}: leading 1s up to the {row.min_dims} dimensions "
            f"{kind.full_name} needs at {plan.level.full_name}"
        )
    elif len(sizes) < natural:
        plan.note(
            f"shape {list(shape)} viewed as {sizes}: untouched dimensions coalesced to fit the "
            f"{row.max_dims} dimensions {kind.full_name} allows at {plan.level.full_name}"
        )


# ----------------------------------------------------------------------------------- slice
def _slice_desc(
    op: LogicalSlice, layout: Layout, view: TypeView, in_shape: Shape, out_shape: Shape
) -> OperatorDesc:
    in_desc, out_desc = _desc(view, layout, in_shape), _desc(view, layout, out_shape)
    starts: list[int] = []
    steps: list[int] = []
    sizes: list[int] = []
    windows: list[int] = []
    for axis, block in zip(layout.axes, layout.blocks):
        if axis is None:
            starts.append(0)
            steps.append(1)
            sizes.append(block)
            windows.append(block)
            continue
        start, step, size = op.starts[axis], op.steps[axis], op.sizes[axis]
        if layout.scaled is not None and layout.scaled[0] == axis:  # checked by _slice_fits
            start, size = layout.scale(axis, start), layout.scale(axis, size)  # type: ignore
        starts.append(start if step > 0 else start + step * (size - 1))  # the lowest read
        steps.append(step)
        sizes.append(size)
        windows.append(abs(step) * (size - 1) + 1)
    if all(s > 0 for s in steps):
        return SliceDesc(
            input_tensor=in_desc, output_tensor=out_desc, offsets=tuple(starts),
            sizes=tuple(sizes), strides=tuple(steps),
        )
    return Slice1Desc(
        input_tensor=in_desc, output_tensor=out_desc, input_window_offsets=tuple(starts),
        input_window_sizes=tuple(windows), input_window_strides=tuple(steps),
    )


def _slice_fits(op: LogicalSlice, layout: Layout, in_shape: Shape) -> bool:
    """A merged view may read a contiguous run of whole elements only."""
    if layout.scaled is None:
        return True
    axis = layout.scaled[0]
    return op.steps[axis] == 1 and all(
        layout.scale(axis, v) is not None for v in (op.starts[axis], op.sizes[axis], in_shape[axis])
    )


def _try_slice(plan: Plan, x: str, in_shape: Shape, op: LogicalSlice, out: str) -> str:
    """Emit one descriptor for the slice; "" on success, else why not."""
    touched = op.touched(in_shape)
    reversing = any(op.steps[a] < 0 for a in touched)
    kinds = [OperatorType.SLICE1] if reversing else [OperatorType.SLICE, OperatorType.SLICE1]
    out_shape = tuple(op.sizes)
    broken: list[str] = []
    for kind in kinds:
        for view, layout in _candidates(plan, kind, [in_shape], touched):
            if not _slice_fits(op, layout, in_shape):
                continue
            desc = _slice_desc(op, layout, view, in_shape, out_shape)
            why = plan.invalid(desc)
            if why:
                broken.append(why)
                continue
            plan.add(desc, [x], out, checked=True)
            _view_note(plan, kind, view, layout, in_shape)
            return ""
    if broken:
        return _no_valid_view(broken)
    # each kind's reason, once: a type no view holds reads the same for SLICE and SLICE1
    return "; ".join(dict.fromkeys(_why_not(plan, kind, in_shape, touched) for kind in kinds))


def _no_valid_view(broken: Sequence[str]) -> str:
    """The reason when every view a row accepts makes a descriptor that breaks a rule."""
    return f"every view the support table accepts breaks a rule: {broken[0]}"


def plan_slice(plan: Plan, x: str, in_shape: Shape, op: LogicalSlice, out: str) -> None:
    """Slice ``x`` into ``out``: one descriptor, else a chain over groups of axes, and below
    FL 2.1 reversed axes as a JOIN of single-element slices."""
    why = _try_slice(plan, x, in_shape, op, out)
    if not why:
        return
    touched = op.touched(in_shape)
    if len(touched) <= 1 and not any(op.steps[a] < 0 for a in touched):
        raise CannotLower(why)
    first = len(plan.steps)
    current, shape = x, tuple(in_shape)
    pending = list(touched)
    while pending:
        group: list[int] = []
        for axis in pending:  # the largest group of axes one descriptor holds
            probe = Plan(plan.level, plan.dtype, lambda _: False)
            if not _try_slice(probe, "x", shape, _restrict(op, shape, group + [axis]), "y"):
                group.append(axis)
        group = group or pending[:1]
        sub = _restrict(op, shape, group)
        target = out if len(group) == len(pending) else plan.temp(f"{out}.slice", sub.sizes)
        why_sub = _try_slice(plan, current, shape, sub, target)
        if why_sub:
            (axis,) = group
            if op.steps[axis] > 0:
                raise CannotLower(why_sub)
            _reverse_by_pieces(plan, current, shape, axis, sub, target, why_sub)
        pending = [a for a in pending if a not in group]
        current, shape = target, sub.sizes
    plan.note(
        f"it takes {len(plan.steps) - first} descriptors, as one cannot hold this slice at "
        f"{plan.level.full_name}: {why}"
    )


def _restrict(op: LogicalSlice, shape: Shape, axes: Sequence[int]) -> LogicalSlice:
    """The part of ``op`` acting on ``axes`` only, applied to a tensor of ``shape``."""
    starts, steps, sizes = [0] * len(shape), [1] * len(shape), list(shape)
    for a in axes:
        starts[a], steps[a], sizes[a] = op.starts[a], op.steps[a], op.sizes[a]
    return LogicalSlice(tuple(starts), tuple(steps), tuple(sizes))


def _reverse_by_pieces(
    plan: Plan, x: str, shape: Shape, axis: int, op: LogicalSlice, out: str, why: str
) -> None:
    """A negative step without SLICE1: one single-element SLICE per element, then JOIN.
    ``why`` is why SLICE1 did not fit: its row, or the rule its descriptor broke."""
    count = op.sizes[axis]
    if count > MAX_JOIN_PIECES:  # before listing them: an axis may be billions long
        raise CannotLower(
            f"a negative step needs DML_OPERATOR_SLICE1 ({why});"
            f" without it, reversing {count} elements along axis {axis} would take "
            f"{count} single-element slices (limit {MAX_JOIN_PIECES})"
        )
    indices = [int(i) for i in op.source_indices(axis)]
    plan.note(
        f"axis {axis} is read backwards, which needs DML_OPERATOR_SLICE1 (FL 2.1); at "
        f"{plan.level.full_name} it is a JOIN of {len(indices)} single-element slices"
    )
    pieces = [_Piece("run", start=i, step=1, count=1) for i in indices]
    _gather(plan, x, shape, axis, pieces, out)


# ------------------------------------------------------------------------------------ join
def plan_join(plan: Plan, inputs: Sequence[str], shapes: Sequence[Shape], axis: int, out: str) -> None:
    out_shape = list(shapes[0])
    out_shape[axis] = sum(s[axis] for s in shapes)
    broken: list[str] = []
    for view, layout in _candidates(plan, OperatorType.JOIN, shapes, [axis]):
        if not all(layout.divides(s) for s in shapes):
            continue
        desc = JoinDesc(
            input_tensors=tuple(_desc(view, layout, s) for s in shapes),
            output_tensor=_desc(view, layout, tuple(out_shape)),
            axis=layout.axes.index(axis),
        )
        why = plan.invalid(desc)
        if why:
            broken.append(why)
            continue
        plan.add(desc, inputs, out, checked=True)
        _view_note(plan, OperatorType.JOIN, view, layout, shapes[0])
        return
    if broken:
        raise CannotLower(_no_valid_view(broken))
    raise CannotLower(_why_not(plan, OperatorType.JOIN, shapes[0], [axis]))


# --------------------------------------------------------------------------------- padding
#: Scalar union members whose JSON form writes a NaN as "nan" (FLOAT16 travels as its bits).
_NAN_AS_TEXT = frozenset({TensorDataType.FLOAT32, TensorDataType.FLOAT64})


def _fill_value(
    kind: OperatorType, view: TypeView, value: np.ndarray
) -> float | int | None:
    """The descriptor's PaddingValue that fills exactly ``value``'s bytes, or None. Exactly
    as the descriptor holds it (a Python float for FLOAT members, which makes a signalling NaN
    quiet) and as its JSON form says it (every float NaN is "nan", which DxDispatch reads as
    the quiet NaN): a NaN with other bits needs blocks of constants."""
    raw = value.tobytes()
    width = view.data_type.bit_width // 8
    if view.split > 1:
        pieces = {raw[k : k + width] for k in range(0, len(raw), width)}
        if len(pieces) != 1:
            return None
        raw = pieces.pop()
    elif view.merge > 1:
        raw = raw * view.merge
    element = np.frombuffer(raw, dtype=view.data_type.numpy_dtype)[0]
    bits = element.view(view.data_type.bits_dtype)
    if kind is OperatorType.PADDING1:
        number = element.item()
        if isinstance(number, float) and math.isnan(number) and view.data_type in _NAN_AS_TEXT:
            number = math.nan
        typed = np.array(number, dtype=view.data_type.numpy_dtype)
        return number if typed.view(view.data_type.bits_dtype) == bits else None
    if view.data_type.is_float:  # a C FLOAT the device converts to the tensor's type
        with np.errstate(all="ignore"):
            as_float = float(np.float32(element))
            if math.isnan(as_float):
                as_float = math.nan
            back = np.array(np.float32(as_float), dtype=view.data_type.numpy_dtype)
        return as_float if back.view(view.data_type.bits_dtype) == bits else None
    number = int(element)
    return float(number) if float(np.float32(number)) == number else None


def _try_pad(plan: Plan, x: str, in_shape: Shape, op: LogicalPad, out: str) -> str:
    touched = op.touched()
    out_shape = tuple(n + s + e for n, s, e in zip(in_shape, op.starts, op.ends))
    reasons: list[str] = []
    for kind in (OperatorType.PADDING, OperatorType.PADDING1):
        needed = PADDING_MODE_INTRODUCED[op.mode]
        row = support_row(kind, plan.level)
        if row is None:
            reasons.append(row_text(kind, plan.level))
            continue
        if plan.level < needed:
            reasons.append(f"{op.mode.full_name} needs {needed.full_name}")
            continue
        fitted = False
        broken: list[str] = []
        for view, layout in _candidates(plan, kind, [in_shape], touched):
            if layout.scaled is not None:  # whole merged elements, and only fill them
                a = layout.scaled[0]
                numbers = (op.starts[a], op.ends[a], in_shape[a])
                if op.mode is not PaddingMode.CONSTANT or any(
                    layout.scale(a, v) is None for v in numbers
                ):
                    continue
            fitted = True
            value = 0.0 if op.mode is not PaddingMode.CONSTANT else _fill_value(kind, view, op.value)
            if value is None:
                continue
            starts = [0 if a is None else layout.scale(a, op.starts[a]) for a in layout.axes]
            ends = [0 if a is None else layout.scale(a, op.ends[a]) for a in layout.axes]
            common: dict[str, Any] = dict(
                input_tensor=_desc(view, layout, in_shape),
                output_tensor=_desc(view, layout, out_shape),
                padding_mode=op.mode,
                start_padding=starts,
                end_padding=ends,
            )
            if kind is OperatorType.PADDING:
                desc: OperatorDesc = PaddingDesc(padding_value=value, **common)
            else:
                desc = Padding1Desc(
                    padding_value_data_type=view.data_type, padding_value=value, **common
                )
            why = plan.invalid(desc)
            if why:
                broken.append(why)
                continue
            plan.add(desc, [x], out, checked=True)
            _view_note(plan, kind, view, layout, in_shape)
            return ""
        if broken:
            reasons.append(_no_valid_view(broken))
        elif not fitted:
            reasons.append(_why_not(plan, kind, in_shape, touched))
        else:
            reasons.append(
                f"{kind.full_name}'s PaddingValue cannot hold the fill value "
                f"{values_text(op.value)} of {plan.dtype} exactly in any view its row accepts"
            )
    return "; ".join(dict.fromkeys(reasons))  # each once (a type no view holds: one reason)


def plan_pad(plan: Plan, x: str, in_shape: Shape, op: LogicalPad, out: str) -> None:
    """Pad ``x`` into ``out``: one PADDING/PADDING1, else axis by axis, and where an axis
    cannot be padded natively, a JOIN of slices (and constant blocks)."""
    why = _try_pad(plan, x, in_shape, op, out)
    if not why:
        return
    try:
        _pad_axis_by_axis(plan, x, in_shape, op, out, why)
    except CannotLower as exc:  # both reasons, each once (a string type's is the same)
        if str(exc) in why:
            raise
        raise CannotLower(
            f"no single padding descriptor fits: {why}; nor axis by axis: {exc}"
        ) from None


def _pad_axis_by_axis(
    plan: Plan, x: str, in_shape: Shape, op: LogicalPad, out: str, why: str
) -> None:
    touched = op.touched()
    if not touched:  # a copy: any copying descriptor will do
        identity = LogicalSlice((0,) * len(in_shape), (1,) * len(in_shape), tuple(in_shape))
        plan_slice(plan, x, tuple(in_shape), identity, out)
        return
    current, shape = x, tuple(in_shape)
    for k, axis in enumerate(touched):
        starts = tuple(op.starts[a] if a == axis else 0 for a in range(len(shape)))
        ends = tuple(op.ends[a] if a == axis else 0 for a in range(len(shape)))
        sub = LogicalPad(op.mode, op.value, starts, ends)
        next_shape = tuple(n + s + e for n, s, e in zip(shape, starts, ends))
        last = k == len(touched) - 1
        target = out if last else plan.temp(f"{out}.pad{axis}", next_shape)
        if len(touched) == 1 or _try_pad(plan, current, shape, sub, target):
            _pad_by_pieces(plan, current, shape, axis, sub, target)
        current, shape = target, next_shape
    plan.note(
        f"padded axis by axis with {', '.join(dict.fromkeys(plan.operators))}, as no single "
        f"padding descriptor fits at {plan.level.full_name}: {why}"
    )


def _pad_by_pieces(plan: Plan, x: str, shape: Shape, axis: int, op: LogicalPad, out: str) -> None:
    """One padded axis as a JOIN: constant blocks, or slices the mode's index map picks.
    Both are bounded before they are made (a pad may be billions long): the blocks by
    folding's bound on added constant data, the slices by ``MAX_JOIN_PIECES``, which a border
    of ``length`` reaches with ceil(length / n) pieces or more (a run reads distinct
    elements)."""
    n, start, end = shape[axis], op.starts[axis], op.ends[axis]
    interior = _Piece("run", 0, 1, n)  # every mode's index map keeps the input in place
    pieces: list[_Piece] = []
    if op.mode is PaddingMode.CONSTANT:
        fill = (start + end) * math.prod(shape) // n * plan.dtype.itemsize
        if fill > FOLD_GROWTH_LIMIT_BYTES:
            raise CannotLower(
                f"padding axis {axis} by pieces would take {fill} bytes of fill constants "
                f"(limit {FOLD_GROWTH_LIMIT_BYTES}, folding's bound on added constant data)"
            )
        pieces = [_Piece("const", count=start), interior, _Piece("const", count=end)]
        pieces = [p for p in pieces if p.count]
    else:
        least = -(-start // n) + 1 + -(-end // n)
        if least > MAX_JOIN_PIECES:
            raise CannotLower(
                f"padding axis {axis} by pieces would take at least {least} JOIN inputs "
                f"(limit {MAX_JOIN_PIECES})"
            )
        if start + end > MAX_BORDER_POSITIONS:
            raise CannotLower(
                f"padding axis {axis} by pieces would list {start + end} border positions "
                f"(limit {MAX_BORDER_POSITIONS})"
            )
        # mirrored runs take SLICE1's negative strides, from the level that introduced it
        index_map = INDEX_MAPS[op.mode]
        negative = plan.level >= introduced(OperatorType.SLICE1)
        before = _runs(index_map(np.arange(-start, 0, dtype=np.int64), n), negative)
        after = _runs(index_map(np.arange(n, n + end, dtype=np.int64), n), negative)
        pieces = [*before, interior, *after]
    if len(pieces) > MAX_JOIN_PIECES:
        raise CannotLower(
            f"padding axis {axis} by pieces would take {len(pieces)} JOIN inputs "
            f"(limit {MAX_JOIN_PIECES})"
        )
    _gather(plan, x, shape, axis, pieces, out, op.value)


@dataclass(frozen=True)
class _Piece:
    kind: str  # "run": count elements from start by step; "const": count fill elements
    start: int = 0
    step: int = 1
    count: int = 0


def _runs(indices: np.ndarray, negative: bool) -> list[_Piece]:
    """Indices as arithmetic runs a slice can read: steps >= 1, and mirrored runs (step -1)
    when negative steps are available (SLICE1). One turn per piece, not per index (a run
    ends where the step changes), and none past ``MAX_JOIN_PIECES + 1``: the caller refuses
    that many."""
    pieces: list[_Piece] = []
    count = len(indices)
    steps = np.diff(indices)
    changes = np.flatnonzero(np.diff(steps)) + 1  # k where steps[k] != steps[k - 1]
    i = 0
    while i < count and len(pieces) <= MAX_JOIN_PIECES:
        if i + 1 < count:
            step = int(steps[i])
            if step > 0 or (step == -1 and negative):
                # the run reaches the first index whose step differs (or the last index)
                later = int(np.searchsorted(changes, i, side="right"))
                j = int(changes[later]) if later < len(changes) else count - 1
                pieces.append(_Piece("run", int(indices[i]), step, j - i + 1))
                i = j + 1
                continue
        pieces.append(_Piece("run", int(indices[i]), 1, 1))
        i += 1
    return pieces


def _gather(
    plan: Plan,
    x: str,
    shape: Shape,
    axis: int,
    pieces: Sequence[_Piece],
    out: str,
    value: np.ndarray | None = None,
) -> None:
    """``out`` = the pieces of ``x`` along ``axis``, joined."""
    names: list[str] = []
    shapes: list[Shape] = []
    made: dict[_Piece, str] = {}
    for piece in pieces:
        piece_shape = tuple(piece.count if a == axis else d for a, d in enumerate(shape))
        if piece in made:
            names.append(made[piece])
        elif piece.kind == "const":
            assert value is not None
            block = np.full(piece_shape, value, dtype=plan.dtype)
            names.append(plan.constant(f"{out}.fill", block))
        elif piece.start == 0 and piece.step == 1 and piece.count == shape[axis]:
            names.append(x)
        else:
            target = out if len(pieces) == 1 else plan.temp(f"{out}.piece", piece_shape)
            starts = tuple(piece.start if a == axis else 0 for a in range(len(shape)))
            steps = tuple(piece.step if a == axis else 1 for a in range(len(shape)))
            sub = LogicalSlice(starts, steps, piece_shape)
            why = _try_slice(plan, x, shape, sub, target)
            if why:
                raise CannotLower(why)
            names.append(target)
        made[piece] = names[-1]
        shapes.append(piece_shape)
    if len(pieces) > 1:
        plan_join(plan, names, shapes, axis, out)
    elif names[0] != out:
        raise CannotLower("a single piece that is the whole input needs no descriptor")  # pragma: no cover
