"""Where onnxruntime's CPU Pad departs from ONNX: one list, read by folding (a Pad it names is
not folded, so the divergence is not hidden in a constant) and by lowering (which notes each
on the node as ``divergence:``, and ``check`` then names it).

Measured with onnxruntime 1.32; each sentence says what onnxruntime does and what ONNX gives.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass


class PadDivergenceKind(enum.Enum):
    SCALAR = "scalar"
    WRAP_EMPTY = "wrap of an empty input"
    EMPTY_AXIS = "edge or reflect of an axis of size 0"
    ZERO_EXTENT = "a crop to no elements"
    REFLECT_SIZE_1 = "reflect on size 1"
    REFLECT_BEYOND = "reflect by the size or more"


@dataclass(frozen=True)
class PadDivergence:
    kind: PadDivergenceKind
    text: str  # a sentence, without the ``divergence:`` prefix
    axes: tuple[int, ...] = ()


def pad_divergences(shape: Sequence[int], mode: str, pads: Sequence[int]) -> list[PadDivergence]:
    """onnxruntime's departures for data of ``shape`` padded in ``mode`` by ``pads`` (begins,
    then ends, for every axis; negative ones crop); empty where it computes what ONNX does.
    Pads that crop more than an axis holds are ONNX errors, not divergences: not judged."""
    rank = len(shape)
    if rank == 0:
        return [PadDivergence(
            PadDivergenceKind.SCALAR,
            "a scalar has no axis to pad (pads is empty), so the result is the input; "
            "onnxruntime fails on it at run time (its check that pads holds 2 * rank values "
            "fails for rank 0)",
        )]
    begins, ends = pads[:rank], pads[rank:]
    cropped = [n - max(0, -b) - max(0, -e) for n, b, e in zip(shape, begins, ends)]
    out = [n + b + e for n, b, e in zip(shape, begins, ends)]
    if 0 in shape and 0 in out and min(out) >= 0:
        if mode == "wrap":
            return [PadDivergence(
                PadDivergenceKind.WRAP_EMPTY,
                "onnxruntime fails on a wrap Pad of an empty input (its CPU kernel says "
                "\"Unexpected mode of 3\"); ONNX's result is the empty tensor",
            )]
        grown = tuple(a for a in range(rank) if shape[a] == 0 and out[a] > 0)
        if mode == "constant" or not grown:
            return []
        return [PadDivergence(  # numpy's rule, which onnxruntime keeps
            PadDivergenceKind.EMPTY_AXIS,
            f"onnxruntime refuses a Pad in mode {mode!r} that pads axis {list(grown)} of size "
            f"0 (its CPU kernel says \"Cannot use '{mode}' mode to pad dimension with a value "
            "of 0\"), even where the result is empty; ONNX's result is the empty tensor",
            grown,
        )]
    if 0 in out:
        if mode == "constant" or 0 not in cropped:
            return []
        return [PadDivergence(
            PadDivergenceKind.ZERO_EXTENT,
            f"onnxruntime refuses a Pad in mode {mode!r} whose pads crop an axis to no "
            "elements (its CPU kernel says \"zero effective input extent\"), even where the "
            "result is empty; ONNX's result is the empty tensor",
        )]
    if mode != "reflect":
        return []
    padded = [a for a in range(rank) if begins[a] > 0 or ends[a] > 0]
    found = []
    single = tuple(a for a in padded if cropped[a] == 1)
    if single:
        found.append(PadDivergence(
            PadDivergenceKind.REFLECT_SIZE_1,
            f"reflect on axis {list(single)} of size 1 has nothing to mirror; onnxruntime "
            "refuses it",
            single,
        ))
    beyond = tuple(
        a for a in padded if cropped[a] > 1 and max(begins[a], ends[a]) >= cropped[a]
    )
    if beyond:
        found.append(PadDivergence(
            PadDivergenceKind.REFLECT_BEYOND,
            f"reflect pads on axis {list(beyond)} reach the dimension or beyond; ONNX leaves "
            "that undefined and onnxruntime refuses it",
            beyond,
        ))
    return found
