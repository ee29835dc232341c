"""Each DirectML operator here as a list of moves: copies between strided views, in order.

SLICE, JOIN and PADDING move data and compute nothing, so one definition serves both the
one-operator executor (``dml_executor``) and the compiled plan (``plan``): a descriptor becomes
``(destination, source)`` pairs of bit views, the source broadcastable to the destination
(a fill is a 0-d source), in phases. A phase may read what an earlier one wrote: padding fills
its borders from its own output, axis by axis (the innermost axis's straight from the input),
so every mode is one pass over the output.
Moves within a phase are independent, or ordered only within rows (``Phase.rows``): either way
the plan can spread them over threads.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dmlgraph.dml.enums import PaddingMode
from dmlgraph.dml.indexmaps import INDEX_MAPS, PERIODS
from dmlgraph.dml.operators import (
    JoinDesc,
    OperatorDesc,
    Padding1Desc,
    PaddingDesc,
    Slice1Desc,
    SliceDesc,
)
from dmlgraph.errors import DmlgraphError

Move = tuple[np.ndarray, np.ndarray]


@dataclass(frozen=True)
class Phase:
    """Moves that run after every earlier phase's. ``rows`` None: the moves are independent
    (any order, any thread). An axis: they run in order, but every destination and source
    spans the same rows of that axis and each row reads only the same row, so the phase may
    be cut into blocks of rows, independent of each other, each running all the moves.
    Consecutive phases with the same ``rows`` span the same rows of it, so a block of the
    later one needs only the same block of the earlier (``threads.distribute_phases``)."""

    moves: list[Move]
    rows: int | None = None


def slice_index(desc: SliceDesc | Slice1Desc) -> tuple[slice, ...]:
    """The input elements the slice reads, in output order, as Python slices."""
    if isinstance(desc, SliceDesc):
        return tuple(
            slice(o, o + s * (n - 1) + 1, s)
            for o, n, s in zip(desc.offsets, desc.sizes, desc.strides)
        )
    index = []
    for offset, size, stride, count in zip(
        desc.input_window_offsets,
        desc.input_window_sizes,
        desc.input_window_strides,
        desc.output_tensor.sizes,
    ):
        start = offset + size - 1 if stride < 0 else offset
        stop = start + stride * count
        index.append(slice(start, None if stop < 0 else stop, stride))
    return tuple(index)


def constant_bits(desc: PaddingDesc | Padding1Desc) -> np.ndarray:
    """The fill value as a 0-d array of the output type's bits."""
    return desc.fill().view(desc.output_tensor.data_type.bits_dtype).reshape(())


def _runs(sources: np.ndarray) -> list[tuple[int, int, int, int]]:
    """Split a run of source coordinates into arithmetic pieces: (first position, count,
    first source, step), each as long as it goes. Index maps step by -1, 0 or +1, so the
    pieces are few; the walk is by piece, the coordinates' differences taken at once (a
    border of 10^7 walked element by element took 3.5 s)."""
    n = len(sources)
    steps = np.diff(sources)
    # where the step changes: a piece from i runs through the first such k > i
    changes = (np.flatnonzero(steps[1:] != steps[:-1]) + 1).tolist()
    pieces: list[tuple[int, int, int, int]] = []
    i = 0
    while i < n:
        if i + 1 >= n:
            pieces.append((i, 1, int(sources[i]), 1))
            break
        k = bisect.bisect_right(changes, i)
        last = changes[k] if k < len(changes) else n - 1
        pieces.append((i, last - i + 1, int(sources[i]), int(steps[i])))
        i = last + 1
    return pieces


def _periodic_runs(
    mode: PaddingMode, n: int, first: int, length: int, period: int
) -> list[tuple[int, int, int, int, int]]:
    """``_runs`` of the ``length`` border positions whose input-relative coordinates start
    at ``first``, each with how many times it repeats ``period`` positions further on. The
    index arrays and moves are those of one period and the rest: before, a border of pads
    2^22 over 4 elements took a million moves, 2.4 GB and 50 s to build."""
    if length <= 0:
        return []
    if period < 1 or length < 3 * period:
        return [(*r, 1) for r in _runs(INDEX_MAPS[mode](np.arange(first, first + length), n))]
    whole = length // period
    head = _runs(INDEX_MAPS[mode](np.arange(first, first + period), n))
    done = whole * period
    tail = _runs(INDEX_MAPS[mode](np.arange(first + done, first + length), n))
    return [(*r, whole) for r in head] + [(p + done, c, s, t, 1) for p, c, s, t in tail]


def _repeated(view: np.ndarray, axis: int, repeats: int, stride: int, read: bool) -> np.ndarray:
    """``view`` with an axis of ``repeats`` before ``axis``, ``stride`` elements of ``axis``
    apart (0: the same elements again, read only)."""
    if repeats == 1:
        return view
    shape = view.shape[:axis] + (repeats,) + view.shape[axis:]
    strides = view.strides[:axis] + (stride * view.strides[axis],) + view.strides[axis:]
    return np.lib.stride_tricks.as_strided(view, shape, strides, writeable=not read)


def _take(first: int, count: int, step: int) -> slice:
    """``count`` coordinates from ``first`` by ``step`` (0: the one coordinate, broadcast)."""
    if step == 0:
        return slice(first, first + 1)
    stop = first + step * count
    return slice(first, None if stop < 0 else stop, step)


#: A padding whose outer axes before the outermost padded one have at least this many rows
#: is done in blocks of those rows (else in blocks of the padded axis's interior rows).
_BLOCK_ROWS = 8
#: Rows shorter than this are no blocks: each costs the native copier a lockstep slab, and
#: a float32 [2, 4M] padded on its last axis, blocked by its single elements, ran in 97 ms
#: where whole rows take 3 ([2, N, 4]: 18 ms; rows of 64 bytes: 10.6; of 256: 2.8).
_MIN_ROW_BYTES = 256


def _row_bytes(x: np.ndarray, axis: int) -> int:
    """The bytes of one row of ``axis`` of ``x``: its elements after that axis."""
    return math.prod(x.shape[axis + 1 :]) * x.itemsize


def _padding(desc: PaddingDesc | Padding1Desc, x: np.ndarray, out: np.ndarray) -> list[Phase]:
    """The interior, then each padded axis's borders, innermost axis first: an axis's borders
    copy whole rows of the axes after it (complete by then) from its interior positions (the
    innermost axis's straight from the input, which those positions hold).
    Padding is separable (each output element is the input at one source index per axis), so
    this order gives what DirectML's formula does.

    Every axis before the outermost padded one is whole in every move, and so are the interior
    rows of that axis in all moves but its own borders: the moves may run block by block along
    such an axis, interior and borders while the block is in cache."""
    starts, ends, mode = desc.start_padding, desc.end_padding, desc.padding_mode
    rank = len(x.shape)
    interior = tuple(slice(s, s + n) for s, n in zip(starts, x.shape))
    fill = constant_bits(desc) if mode is PaddingMode.CONSTANT else None
    padded = [axis for axis in range(rank) if starts[axis] or ends[axis]]
    if not padded:
        return [Phase([(out, x)])]
    outer = padded[0]
    rows = next((a for a in range(outer) if x.shape[a] >= _BLOCK_ROWS), outer)
    if _row_bytes(x, rows) < _MIN_ROW_BYTES and outer:  # whole rows of the outermost axis
        rows = 0

    def borders(axis: int, from_input: bool = False) -> list[Move]:
        """The borders of ``axis``, copied from its interior positions in the output; with
        ``from_input`` (the innermost padded axis only, whose interior rows are exactly the
        input's) the sources are the input's, so the moves read nothing the padding writes."""
        start, end, n = starts[axis], ends[axis], x.shape[axis]
        region = list(interior[:axis]) + [slice(None)] * (rank - axis)

        def at(index: slice) -> np.ndarray:
            region[axis] = index
            return out[tuple(region)]

        moves: list[Move] = []
        if fill is not None:  # constant borders read nothing
            for border in (slice(0, start), slice(start + n, start + n + end)):
                if border.stop > border.start:
                    moves.append((at(border), fill))
            return moves
        if mode is PaddingMode.EDGE:  # each border repeats one element: one broadcast move
            # a side, with no index array as long as the pads (2^31 of them took 16 GB)
            # the map's source of each side's first position, which every one of its own
            # repeats (``INDEX_MAPS``: 0 before the input, n - 1 after it)
            first, last = INDEX_MAPS[PaddingMode.EDGE](np.array([-1, n]), n).tolist()
            sides = ((slice(0, start), first), (slice(start + n, start + n + end), last))
            for border, source in sides:
                if border.stop > border.start:
                    edge = slice(source, source + 1)
                    moves.append((at(border), x[(slice(None),) * axis + (edge,)] if from_input
                                  else at(slice(start + source, start + source + 1))))
            return moves
        period = PERIODS[mode](n)
        for low, high in ((0, start), (start + n, start + n + end)):
            for position, count, source, step, repeats in _periodic_runs(
                mode, n, low - start, high - low, period
            ):
                destination = at(slice(low + position, low + position + count))
                if from_input:
                    origin = x[(slice(None),) * axis + (_take(source, count, step),)]
                else:
                    origin = at(_take(source + start, count, step))
                moves.append((_repeated(destination, axis, repeats, period, False),
                              _repeated(origin, axis, repeats, 0, True)))
        return moves

    # The interior and the innermost axis's borders read only the input: one phase that may
    # run row by row, streamed, with no line written twice. The other axes' borders read
    # rows of the output completed by then, so they follow, each block after the first.
    inner = padded[-1]
    in_blocks = padded if rows < outer else padded[1:]  # the outer axis's borders come after
    first = [(out[interior], x)]
    if inner in in_blocks:
        first += borders(inner, from_input=True)
    later = [axis for axis in reversed(in_blocks) if axis != inner]
    if _row_bytes(x, rows) >= _MIN_ROW_BYTES and x.shape[rows] > 1:
        rest = [m for axis in later for m in borders(axis)]
        phases = [Phase(first, rows)] + ([Phase(rest, rows)] if rest else [])
    else:  # too short or too few rows to block by: an axis's borders read the later axes'
        phases = [Phase(first)] + [Phase(borders(axis)) for axis in later]  # a phase each
    if rows < outer:
        return phases
    return phases + [Phase(borders(outer, from_input=inner == outer))]


def operator_moves(
    desc: OperatorDesc, inputs: Sequence[np.ndarray], output: np.ndarray
) -> list[Phase]:
    """The moves, in phases, that compute ``desc`` from input bit views (shaped as their
    descs' sizes) into the output bit view (shaped as the output desc's sizes). A JOIN's
    move ``i`` copies input ``i``."""
    if isinstance(desc, (SliceDesc, Slice1Desc)):
        return [Phase([(output, inputs[0][slice_index(desc)])])]
    if isinstance(desc, JoinDesc):
        moves, offset = [], 0
        for x in inputs:
            n = x.shape[desc.axis]
            index = (slice(None),) * desc.axis + (slice(offset, offset + n),)
            moves.append((output[index], x))
            offset += n
        return [Phase(moves)]
    if isinstance(desc, (PaddingDesc, Padding1Desc)):
        return _padding(desc, inputs[0], output)
    raise DmlgraphError(f"{desc.name} has no NumPy kernel")


def run_moves(phases: Sequence[Phase]) -> None:
    for phase in phases:
        for destination, source in phase.moves:
            np.copyto(destination, source, casting="no")
