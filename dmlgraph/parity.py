"""Parity: does the lowered graph compute what the model computes? (``dmlgraph check``)

``check`` imports and lowers a model, runs the lowered graph on the NumPy backend (DML nodes on
the DirectML emulator) and the model itself on onnxruntime, and compares every output in the
manner of Polygraphy's comparator:

- dtypes and shapes must match; integers and bools must match exactly;
- a float element fails only when it exceeds both ``atol`` and ``rtol`` (relative to the
  expected value); NaN matches NaN, and NaN against a number is a mismatch of its own count;
- each output reports max abs/rel error, the mismatch count and the minimum tolerance that
  would pass (``required_atol`` at the given rtol, ``required_rtol`` at the given atol);
- tolerances have a default per dtype (``DEFAULT_TOLERANCES``) and per-output overrides.

Known divergences: a node note starting ``divergence:`` (on a lowered node, in the lowering
report, or on a node lowered at run time) marks a place where DirectML and onnxruntime are
known to differ. A mismatch, or a reference that cannot run, on an output such a node reaches
is labelled a known divergence, naming the node and note, and does not fail the check (never
against stored outputs, the user's: ``--expected``, or those ``--inputs`` holds). So is
a mismatch that only onnxruntime's graph optimizations make: an output the reference fails
is compared again against onnxruntime with them off (``_optimizer_divergences``).

A model onnxruntime cannot run at all (``providers.CANNOT_RUN``: no kernel for a node, or a
node it inserts breaking its own checker) is compared against onnx.reference instead, and the
comparison says so (``_against_onnx_reference``). A model holding a Scan that makes scan
outputs runs its onnxruntime reference in a forked child (``_ForkedReference``): onnxruntime
1.32 dies of SIGFPE on some; then onnx.reference is the reference, or the death is one error.
The outputs onnxruntime fails on at a known divergence where onnx.reference computes what ONNX
says (``SPEC_REFERENCE_DIVERGENCES``), or computes there at all, otherwise than ONNX
(``_excused_by_spec``), are compared against onnx.reference, and the comparison says so
(``_on_onnx_reference``); where onnx.reference fails too, they are not compared.
"""

from __future__ import annotations

import enum
import math
import os
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from decimal import ROUND_CEILING, Decimal
from pathlib import Path
from types import MappingProxyType
from typing import Any, TypeVar

import ml_dtypes
import networkx as nx
import numpy as np
import onnx

from dmlgraph.canonical import LOWERED_OPS
from dmlgraph.dml.enums import FeatureLevel
from dmlgraph.dml.scalars import as_double, is_real
from dmlgraph.dtypes import is_float
from dmlgraph.errors import DmlgraphError, UnsupportedError, counted
from dmlgraph.ir import Graph, Node, Subgraph, split_inputs, string_problem, subgraphs
from dmlgraph.subgraphs import held_counts, holder_label
from dmlgraph.tensorio import TensorIOError, listed_names, native_order

T = TypeVar("T")

#: The prefix of a note that marks a known DirectML / onnxruntime divergence.
DIVERGENCE = "divergence:"
#: The phrase of a divergence note where onnxruntime's result is its uninitialized memory (a
#: Scan-8 of no step's final states: ``fallback._scan_8_no_step``). No onnxruntime run is an
#: oracle there, the reference's nor the onnxruntime fallback's, so ``check`` compares nothing
#: such a node reaches with onnxruntime (``_uninitialized``): it compared one session's
#: leftovers with another's, which passed, or failed and blamed onnxruntime's optimizations.
UNINITIALIZED = "onnxruntime 1.32 leaves them uninitialized"
#: The phrase of a divergence note where onnxruntime refuses the node by the values it runs
#: with (a Scan-8's sequence length of 0: ``fallback._scan_8_divergence``): it then fails
#: the node holding it too, so every output of that holder is the divergence's.
REFUSES = "onnxruntime 1.32 refuses it"
#: What a Scan the numpy backend runs (a Scan-9+) adds to the note of its body's divergence
#: (``backends.numpy.control``: an input passed through, one tensor made two outputs): its
#: values are ONNX's, as onnx.reference's Scan computes them, so ``check`` compares them with
#: it (``SPEC_REFERENCE_DIVERGENCES``; they were excused as the divergence, any value). Not a
#: Scan the fallback runs whole (a Scan-8, or one a node run whole holds: its values may be
#: onnxruntime's, and onnx.reference's Scan-8 is ``reference_ops``' own).
RUN_AS_ONNX = "; the numpy backend ran this Scan as ONNX says"


class Verdict(str, enum.Enum):
    PASS = "pass"
    FAIL = "fail"
    KNOWN_DIVERGENCE = "known divergence"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Tolerance:
    atol: float
    rtol: float


#: Float tolerances per dtype name; other floats take ``FALLBACK_TOLERANCE``.
DEFAULT_TOLERANCES: Mapping[str, Tolerance] = MappingProxyType(
    {
        "float16": Tolerance(1e-3, 1e-3),
        "bfloat16": Tolerance(1e-2, 1e-2),
        "float32": Tolerance(1e-5, 1e-5),
        "float64": Tolerance(1e-5, 1e-5),
    }
)
FALLBACK_TOLERANCE = Tolerance(1e-1, 1e-1)  # the 8- and 4-bit floats
#: The tolerance integers, bools and strings are compared with: none.
EXACT = Tolerance(0.0, 0.0)
#: What a given atol or rtol must be (``is_tolerance``): inf, or a double's overflow (1e400),
#: would pass every float element, and NaN none.
TOLERANCE_RULE = "a tolerance is a finite number >= 0"


def is_tolerance(value: float) -> bool:
    """Whether ``value`` keeps ``TOLERANCE_RULE`` (the CLI's --atol/--rtol and ``check``'s)."""
    return math.isfinite(value) and value >= 0


@dataclass(frozen=True)
class Tolerances:
    """atol/rtol per output name; ``""`` holds the default (None: the dtype's default)."""

    atol: Mapping[str, float] = field(default_factory=dict)
    rtol: Mapping[str, float] = field(default_factory=dict)

    @classmethod
    def of(
        cls, atol: float | Mapping[str, float] | None, rtol: float | Mapping[str, float] | None
    ) -> Tolerances:
        def number(kind: str, name: str, value: object) -> float:
            double = as_double(value) if is_real(value) else None
            if double is None:
                where = f" for {name!r}" if name else ""
                raise DmlgraphError(f"{kind}{where}: {value!r} is not a number a double holds")
            return double

        def as_map(kind: str, value: float | Mapping[str, float] | None) -> dict[str, float]:
            if value is None:
                return {}
            if isinstance(value, Mapping):
                return {str(k): number(kind, str(k), v) for k, v in value.items()}
            return {"": number(kind, "", value)}

        return cls(as_map("atol", atol), as_map("rtol", rtol))

    def check(self, outputs: Sequence[str]) -> None:
        """Refuse a tolerance for a name that is no output (a typo would pass silently) or
        one that breaks ``TOLERANCE_RULE``."""
        for kind, values in (("atol", self.atol), ("rtol", self.rtol)):
            for name, value in values.items():
                if name and name not in outputs:
                    raise DmlgraphError(
                        f"{kind} for {name!r}: the graph has no output of that name (outputs: "
                        f"{listed_names(list(outputs))})"
                    )
                if not is_tolerance(value):
                    raise DmlgraphError(f"{kind} {name + ': ' if name else ''}{value}: "
                                        f"{TOLERANCE_RULE}")

    def for_output(self, name: str, dtype: np.dtype) -> Tolerance:
        """A complex output takes its parts' type's default (complex64 float32's), not the
        8-bit floats' 0.1."""
        dtype = np.dtype(dtype)
        part = np.finfo(dtype).dtype if dtype.kind == "c" else dtype
        default = DEFAULT_TOLERANCES.get(part.name, FALLBACK_TOLERANCE)
        atol = self.atol.get(name, self.atol.get("", default.atol))
        rtol = self.rtol.get(name, self.rtol.get("", default.rtol))
        return Tolerance(atol, rtol)


# ----------------------------------------------------------------------------- comparing


@dataclass(frozen=True)
class OutputComparison:
    """One output of one comparison. Errors are None when nothing could be compared."""

    name: str
    verdict: Verdict
    actual_dtype: str
    expected_dtype: str
    actual_shape: tuple[int, ...]
    expected_shape: tuple[int, ...]
    exact: bool
    tolerance: Tolerance
    size: int
    mismatches: int | None  # None: the shapes differ, so no element was compared
    nan_mismatches: int
    max_abs_error: float | int | None  # an int for integer outputs: exact at any size
    max_rel_error: float | None
    required_atol: float | None
    required_rtol: float | None
    message: str = ""
    divergences: tuple[str, ...] = ()
    compared: bool = True  # False: the reference could not compute this output


def compare_output(
    name: str,
    actual: np.ndarray,
    expected: np.ndarray,
    tolerance: Tolerance,
    *,
    nan_equal: bool = True,
) -> OutputComparison:
    """Compare one output as described in the module docstring."""
    actual, expected = native_order(np.asarray(actual)), native_order(np.asarray(expected))
    exact = not is_float(expected.dtype)
    base: dict[str, Any] = dict(
        name=name,
        actual_dtype=_dtype_name(actual.dtype),
        expected_dtype=_dtype_name(expected.dtype),
        actual_shape=tuple(actual.shape),
        expected_shape=tuple(expected.shape),
        exact=exact,
        # what was applied: integers compare exactly, whatever tolerance their dtype or
        # --atol gives (the JSON and HTML reports said 0.1 / 0.1 for an int64 output)
        tolerance=EXACT if exact else tolerance,
        size=int(expected.size),
    )
    if actual.shape != expected.shape:
        return OutputComparison(
            **base,
            verdict=Verdict.FAIL,
            mismatches=None,
            nan_mismatches=0,
            max_abs_error=None,
            max_rel_error=None,
            required_atol=None,
            required_rtol=None,
            message=f"shape {list(actual.shape)} differs from {list(expected.shape)}",
        )
    stats = _chunked(actual, expected, lambda a, e: (
        _exact_stats(a, e) if exact else _float_stats(a, e, tolerance, nan_equal)
    ))
    problems = []
    if actual.dtype != expected.dtype:
        problems.append(f"dtype {actual.dtype} differs from {expected.dtype}")
    if stats["mismatches"]:
        count, nans = stats["mismatches"], stats["nan_mismatches"]
        one = count == 1  # its verbs agree: "1 of 1 element differs"
        if exact:
            how = f"{'differs' if one else 'differ'} (compared exactly)"
        elif nans == count:
            how = f"{'is' if one else 'are'} NaN against a number"
        else:
            how = (f"{'exceeds' if one else 'exceed'} both atol={tolerance.atol:g} and "
                   f"rtol={tolerance.rtol:g}")
            how += f" or {'is' if one else 'are'} NaN against a number ({nans})" if nans else ""
        problems.append(f"{count} of {counted(expected.size, 'element')} {how}")
        ulps = max_ulps(actual, expected) if not exact and nans < count else None
        if ulps is not None and ulps <= ROUNDING_ULPS:
            problems[-1] += (
                f", at most {ulps} units in the last place apart, as rounding makes them "
                "(docs/DECISIONS.md: a float16 model may fail check by a few)"
            )
    verdict = Verdict.FAIL if problems else Verdict.PASS
    return OutputComparison(**base, **stats, verdict=verdict, message="; ".join(problems))


#: Half-precision outputs failing by at most this many units in the last place are said to
#: be that close: onnxruntime's CPU provider computes chains of float16 ops in float32 and
#: rounds once, where dmlgraph's segments round at each lowered node (a helper's 22 of 94
#: float16 zoo models failed by 1-4 ulps so).
ROUNDING_ULPS = 8
#: Half-precision dtypes and the same-width integers their bits are read as.
_ULP_BITS: Mapping[np.dtype, type] = MappingProxyType(
    {np.dtype(np.float16): np.int16, np.dtype(ml_dtypes.bfloat16): np.int16}
)


def max_ulps(actual: np.ndarray, expected: np.ndarray) -> int | None:
    """The most units in the last place between two half-precision arrays of one dtype,
    NaNs apart (None for other dtypes, or where a NaN meets a number): each value's bits read
    as a sign and a magnitude, ordered as the reals are (-0 and +0 are 0 apart)."""
    bits = _ULP_BITS.get(expected.dtype)
    if bits is None or actual.dtype != expected.dtype or not expected.size:
        return None

    def ordered(values: np.ndarray) -> np.ndarray:
        raw = values.view(bits).astype(np.int32)
        magnitude = raw & 0x7FFF
        return np.where(raw < 0, -magnitude, magnitude)

    most = 0
    a, e = actual.reshape(-1), expected.reshape(-1)
    for k in range(0, e.size, COMPARE_CHUNK):  # a chunk at a time, as ``_chunked``
        part_a, part_e = a[k : k + COMPARE_CHUNK], e[k : k + COMPARE_CHUNK]
        nan_a, nan_e = np.isnan(part_a.astype(np.float32)), np.isnan(part_e.astype(np.float32))
        if (nan_a != nan_e).any():
            return None
        apart = np.abs(ordered(part_a) - ordered(part_e))
        most = max(most, int(apart[~nan_e].max(initial=0)))
    return most


#: Elements compared at a time. The statistics are counts and maxima, which chunks give
#: exactly; a whole output's float64 temporaries took 11 times its size (3.7 GB for `check`
#: of a 256 MB output).
COMPARE_CHUNK = 1 << 18


def _chunked(
    actual: np.ndarray,
    expected: np.ndarray,
    stats: Callable[[np.ndarray, np.ndarray], dict[str, Any]],
) -> dict[str, Any]:
    """``stats`` of two same-shape arrays, chunk by chunk of their elements, combined:
    counts added, errors the largest; a tolerance that would pass is unknown (None) where
    any chunk's is (NaNs against numbers)."""
    a, e = actual.reshape(-1), expected.reshape(-1)
    if a.size <= COMPARE_CHUNK:
        return stats(a, e)
    parts = [
        stats(a[k : k + COMPARE_CHUNK], e[k : k + COMPARE_CHUNK])
        for k in range(0, a.size, COMPARE_CHUNK)
    ]

    def largest(key: str, unknown_if_any: bool = False) -> Any:
        values = [p[key] for p in parts if p[key] is not None]
        if not values or (unknown_if_any and len(values) < len(parts)):
            return None
        nan = next((v for v in values if v != v), None)  # NumPy's max: a NaN wins
        return max(values) if nan is None else nan

    return _stats(
        sum(p["mismatches"] for p in parts),
        sum(p["nan_mismatches"] for p in parts),
        largest("max_abs_error"),
        largest("max_rel_error"),
        largest("required_atol", unknown_if_any=True),
        largest("required_rtol", unknown_if_any=True),
    )


def _exact_stats(actual: np.ndarray, expected: np.ndarray) -> dict[str, Any]:
    """Integers, bools and strings: every element equal; errors are shown for numbers (the
    absolute one exact, as an int: through float64, 2^62 + 1 against 2^62 differed by 0),
    tolerances do not apply."""
    count = int(np.count_nonzero(actual != expected))
    actual, expected = _numpy_integers(actual), _numpy_integers(expected)
    if not expected.size or expected.dtype.kind not in "biu" or actual.dtype.kind not in "biu":
        return _stats(count, 0, None, None, None, None)
    diff = _integer_distance(actual, expected)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(
            diff == 0, 0.0, diff.astype(np.float64) / np.abs(expected.astype(np.float64))
        )
    return _stats(count, 0, int(diff.max()), float(rel.max()), None, None)


def _numpy_integers(array: np.ndarray) -> np.ndarray:
    """ml_dtypes' int4/uint4/int2/uint2 (NumPy kind "V") as int8, whose values they all are:
    as "V" they showed no error ("-"), where a uint8 output showed its largest."""
    if array.dtype.kind == "V" and array.dtype.fields is None and not is_float(array.dtype):
        try:
            ml_dtypes.iinfo(array.dtype)
        except (TypeError, ValueError):
            return array
        return array.astype(np.int8)
    return array


def _integer_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """|a - b| elementwise, exact, for integer or bool arrays: as uint64 (the difference of
    two int64s fits one, and wraps back to it), or as Python ints where a uint64 meets a
    signed type (no NumPy integer holds both)."""
    kinds = {a.dtype.kind, b.dtype.kind}
    wide_unsigned = np.dtype(np.uint64) in (a.dtype, b.dtype)
    if wide_unsigned and kinds != {"u"}:
        x, y = a.astype(object), b.astype(object)
        return np.asarray(np.where(x >= y, x - y, y - x), dtype=object)
    common = np.uint64 if wide_unsigned else np.int64
    x, y = a.astype(common), b.astype(common)
    high, low = np.maximum(x, y), np.minimum(x, y)
    return high.astype(np.uint64) - low.astype(np.uint64)


def _float_stats(
    actual: np.ndarray, expected: np.ndarray, tolerance: Tolerance, nan_equal: bool
) -> dict[str, Any]:
    if not expected.size:
        return _stats(0, 0, None, None, 0.0, 0.0)
    # complex outputs: the distance in the complex plane (a float64 cast kept real parts)
    work = np.complex128 if np.iscomplexobj(actual) or np.iscomplexobj(expected) else np.float64
    with np.errstate(invalid="ignore"):  # a signalling NaN warned as it widened
        a = actual.astype(work)
        e = expected.astype(work)
    nan_a, nan_e = np.isnan(a), np.isnan(e)
    nan_mismatch = nan_a != nan_e if nan_equal else nan_a | nan_e
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        diff = np.where(a == e, 0.0, np.abs(a - e))  # equal infinities differ by 0, not NaN
        diff = np.where(nan_a | nan_e, 0.0, diff)  # NaNs are counted apart
        rel = np.where(diff == 0, 0.0, np.where(np.isinf(diff), np.inf, diff / np.abs(e)))
        # finite doubles whose difference is past the double range (1.5e308 against -1.5e308
        # differ by 3e308, 2 times the expected): their halves (exact) subtract within it
        past = np.isinf(diff) & np.isfinite(a) & np.isfinite(e)
        if past.any():
            rel[past] = np.abs(a[past] / 2 - e[past] / 2) / (np.abs(e[past]) / 2)
    beyond_atol = diff > tolerance.atol
    beyond_rtol = rel > tolerance.rtol
    failed = (beyond_atol & beyond_rtol) | nan_mismatch
    nan_count = int(np.count_nonzero(nan_mismatch))
    return _stats(
        int(np.count_nonzero(failed)),
        nan_count,
        float(diff.max()),
        float(rel.max()),
        None if nan_count else float(diff[beyond_rtol].max(initial=0.0)),
        None if nan_count else float(rel[beyond_atol].max(initial=0.0)),
    )


def passing_text(value: float | None) -> str:
    """A tolerance that would pass (``required_atol``/``required_rtol``) shown to 3 digits,
    rounded up: rounded to the nearest, 0.0012345 showed as 0.00123, which given back
    failed the element it was computed from. "-" for None."""
    if value is None:
        return "-"
    nearest = f"{value:.3g}"
    if value != value or float(nearest) >= value:
        return nearest
    exact = Decimal(value)
    scale = exact.adjusted() - 2  # keep 3 significant digits
    up = exact.scaleb(-scale).to_integral_value(ROUND_CEILING).scaleb(scale)
    return f"{float(up):.3g}"  # >= value: the double nearest a decimal above a double


def _stats(
    mismatches: int,
    nan_mismatches: int,
    max_abs: float | None,
    max_rel: float | None,
    required_atol: float | None,
    required_rtol: float | None,
) -> dict[str, Any]:
    return dict(
        mismatches=mismatches,
        nan_mismatches=nan_mismatches,
        max_abs_error=max_abs,
        max_rel_error=max_rel,
        required_atol=required_atol,
        required_rtol=required_rtol,
    )


# ----------------------------------------------------------------------------- divergences


#: Known divergences where onnx.reference (``fallback.reference_evaluator``, the evaluator of
#: ``--fallback reference``) computes what ONNX says at the node, by a phrase of their note:
#: where onnxruntime fails at such a node, ``check`` compares the outputs it reaches with
#: onnx.reference (``_on_onnx_reference``), and so where it computes them otherwise there
#: (``_excused_by_spec``). Each measured (tests/test_parity_divref.py). Not listed, so such
#: outputs stay not compared: a reflect Pad by the size or more (ONNX leaves it undefined;
#: onnx.reference reflects periodically, as DirectML does: no proof either way), a reflect Pad
#: of one element (nothing to mirror), a Scan's body passing an input through or making one
#: tensor two outputs where the fallback ran the Scan whole, a Scan-8's sequence length of 0
#: (onnx has no Scan-8: its evaluator runs ``reference_ops``' Scan-8, the code ``--fallback
#: reference`` runs, so a comparison would check that code with itself).
SPEC_REFERENCE_DIVERGENCES: tuple[str, ...] = (
    "onnxruntime has no kernel for Concat before opset 4",  # lowering/concat.py
    "ONNX's result is the empty tensor",  # ort_pad: a wrap of an empty input, an empty axis
    # grown by edge or reflect, an edge, reflect or wrap crop to no elements
    "ONNX clamps that end to dim - 1",  # lowering/slice.py: a negative step's INT64_MAX end
    "a scalar has no axis to",  # lowering/slice.py, ort_pad: a Slice or Pad of a scalar
    "the Loop's body declares its",  # subgraphs.loop_divergence: an unshaped iteration number
    "ONNX squeezes nothing",  # backends/numpy/fallback.py: a Squeeze by an empty axes list
    "the body ran no iteration, and its final",  # numpy/control.py: a Scan-9+ of no step
    # numpy/control.py, where onnxruntime computes otherwise (``_excused_by_spec``): a Loop's
    # iteration number itself a scan output or carried value (reference_ops' Loop stacks 0,
    # 1, 2... and carries the last trip's number), an If's branch making one tensor two
    # outputs (its If gives each the tensor), a Scan's body passing an input through or
    # making one tensor two outputs where the numpy backend ran the Scan (``RUN_AS_ONNX``);
    # not where the fallback runs it whole (its value may be onnxruntime's)
    "of the Loop are its body's iteration number itself",
    "more than one of its outputs, which onnxruntime gets wrong (all but the last of those "
    "outputs hold",
    RUN_AS_ONNX,
)


@dataclass(frozen=True)
class KnownDivergence:
    """A node whose note says DirectML and onnxruntime differ there, and the graph outputs
    (by position) it can affect."""

    node: str
    note: str
    outputs: frozenset[int]
    op_type: str = ""  # the ONNX op and the id in the imported graph: how ``to_onnx``
    node_id: int | None = None  # names the node when it has no name
    unnamed: str = ""  # how messages name it when it has no name (``Node.label``)

    def describe(self) -> str:
        return f"{self.unnamed or f'node {self.node!r}'}: {self.note}"

    @property
    def label(self) -> str:
        """The node's name, or, unnamed, the name ``to_onnx`` gives it (``named_in``)."""
        return self.node or f"{self.op_type}_{self.node_id}"

    @property
    def uninitialized(self) -> bool:
        """Whether onnxruntime's values there are its uninitialized memory (``UNINITIALIZED``)."""
        return UNINITIALIZED in self.note

    @property
    def reference_follows_spec(self) -> bool:
        """Whether onnx.reference computes what ONNX says at this node
        (``SPEC_REFERENCE_DIVERGENCES``), so it may be the reference where onnxruntime fails."""
        return any(phrase in self.note for phrase in SPEC_REFERENCE_DIVERGENCES)

    def named_in(self, named: Collection[str]) -> bool:
        """Whether a reference's error is about this node: by its name, or, unnamed, by the
        name ``to_onnx`` gives it (``OP_ID``), among those onnxruntime's error ``named``
        (``failure_names``), as a run names it or its refusal at load ("Node (loop) Op
        (Loop)")."""
        if not self.node and self.node_id is None:
            return False
        return (self.node or self.label) in named


def failure_names(graph: Graph, failure: BaseException | str) -> frozenset[str]:
    """The nodes onnxruntime's ``failure`` says it failed at (its run's, inwards) or refused
    (at load), each name matched whole against the graph's (``_known_names``), in
    onnxruntime's own words alone (``providers.words_of``): a name was found as "'N'"
    anywhere in dmlgraph's message, the model's path included, so a folder (or a node) named
    "'pad'" made an int16 Pad's refusal one at a divergent reflect Pad 'pad', and its wrong
    output went not compared, exit 0, where onnx.reference compared it."""
    from backends.onnxruntime.providers import failed_chain, refused_at

    names = _known_names(graph)
    return frozenset((*(name for _, name in failed_chain(failure, names)),
                      *refused_at(failure, names)))


def _known_names(graph: Graph) -> frozenset[str]:
    """The names of ``graph``'s nodes as onnxruntime may quote them: the file's (its
    subgraphs' too) and those ``to_onnx`` gives unnamed ones (``KnownDivergence.label``)."""
    from dmlgraph.subgraphs import nested_nodes

    names = {node.name or f"{node.op_type}_{node.id}" for node in graph.nodes}
    for node in graph.nodes:
        for sub in subgraphs(node.op):
            names |= {n.name for n in nested_nodes(onnx.GraphProto.FromString(sub.data))}
    return frozenset(names)


def known_divergences(
    imported: Graph, lowered: Graph, runs: Iterable[Any] = ()
) -> list[KnownDivergence]:
    """Divergence notes on lowered nodes, in the lowering report (traced in the imported
    graph) and on nodes lowered at run time (``NodeRun`` notes), deduplicated. Nodes are
    found by id (names may be empty or repeated), by name only where no id is known."""
    found: dict[tuple[str, str, str, int | None], set[int]] = {}
    origin_ids = getattr(lowered, "origin_ids", {})

    def add(name: str, op_type: str, origin: int | None, note: str, outputs: set[int]) -> None:
        found.setdefault((name, note, op_type, origin), set()).update(outputs)

    def ids_of(graph: Graph, node_id: int | None, name: str) -> list[int]:
        if node_id is not None:
            return [node_id] if node_id in graph.nx else []
        return [n.id for n in graph.find_nodes(name=name)] if name else []

    for node in lowered.nodes:
        for note in node.notes:
            if note.startswith(DIVERGENCE):
                add(node.name, node.provenance.op_type, origin_ids.get(node.id), note,
                    _reached(lowered, [node.id]))
    report = lowered.report() if hasattr(lowered, "report") else []
    for record in report:
        for note in record.notes:
            if note.startswith(DIVERGENCE):
                node_id = getattr(record, "node_id", None)
                ids = ids_of(imported, node_id, record.name)
                everything = set(range(len(imported.outputs)))
                add(record.name, record.op_type, node_id, note,
                    _reached(imported, ids) if ids else everything)
    for run in runs:
        for node_run in getattr(run, "nodes", ()):
            for note in node_run.notes:
                if not note.startswith(DIVERGENCE):
                    continue
                if getattr(run, "relowered", False):
                    # the graph lowered again (a size proved inference wrong:
                    # ``NumpyBackend._run_resized``): ids of the imported graph's nodes
                    ids = ids_of(imported, node_run.node_id, node_run.node)
                    op_type = imported.node(ids[0]).provenance.op_type if ids else node_run.op
                    # named as the graph's node, as below (a record names an unnamed node
                    # by the tensor it makes)
                    add(imported.node(ids[0]).name if ids else node_run.node, op_type,
                        ids[0] if ids else None, note,
                        _reached(imported, ids, _concerned(node_run, note)))
                    continue
                ids = ids_of(lowered, node_run.node_id, node_run.node)
                op_type = lowered.node(ids[0]).provenance.op_type if ids else node_run.op
                origin = origin_ids.get(ids[0]) if ids else None
                # named as the graph's node: a subgraph's node ran for its If or Loop
                name = lowered.node(ids[0]).name if ids else node_run.node
                add(name, op_type, origin, note,
                    _reached(lowered, ids, _concerned(node_run, note)))
    return [
        KnownDivergence(name, note, frozenset(out), op_type, origin,
                        "" if name or origin is None or origin not in imported.nx
                        else imported.node(origin).label)
        for (name, note, op_type, origin), out in found.items()
    ]


def _concerned(run: Any, note: str) -> tuple[str, ...] | None:
    """The outputs of a run record's node its divergence ``note`` concerns
    (``NodeRun.concerned``; a record without: all)."""
    concerned = getattr(run, "concerned", None)
    return concerned(note) if callable(concerned) else getattr(run, "wrong", None)


def failed_nodes(graph: Graph, failure: BaseException | str) -> list[Node]:
    """The nodes of ``graph`` onnxruntime's run ``failure`` names as the one it failed at (by
    name, as the file holds it; an unnamed one as ``to_onnx`` names it), at the top level:
    [] where it names none of them."""
    name = next(iter(failed_names(failure, _known_names(graph))), "")
    if not name:
        return []
    failed = graph.find_nodes(name=name)
    return failed or [n for n in graph.nodes if not n.name and f"{n.op_type}_{n.id}" == name]


def failed_names(failure: BaseException | str, names: Collection[str] = ()) -> list[str]:
    """The names of the nodes onnxruntime's run ``failure`` says it failed at: the graph's,
    then, where that one holds subgraphs, the one inside it failed at, and so on inwards;
    each matched whole against ``names`` where one fits (``providers.failed_chain``)."""
    return [name for _, name in failed_at(failure, names)]


def failed_at(failure: BaseException | str, names: Collection[str] = ()
              ) -> list[tuple[str, str]]:
    """``failed_names`` with each node's op type, (op type, name): an unnamed node ('') is
    told from another only by its op type in the message."""
    from backends.onnxruntime.providers import failed_chain

    return failed_chain(failure, names)


def _upstream(
    graph: Graph, divergences: Sequence[KnownDivergence], failure: BaseException | str
) -> list[KnownDivergence]:
    """The divergences at nodes whose results reach the node onnxruntime's run ``failure``
    names (by name, as the file holds it): its inputs there are not the model's, so its
    failure is theirs. An Add of [0] and the [4] a divergent Slice made on onnxruntime (ONNX:
    [0]) failed, and ``check`` with it (exit 2; a helper's sweep)."""
    failed = failed_nodes(graph, failure)
    if not failed:
        return []
    before: set[int] = set()
    for node in failed:
        before |= nx.ancestors(graph.nx, node.id)
    names = {graph.node(i).name for i in before}
    return [d for d in divergences if d.node_id in before or (d.node and d.node in names)]


def _without_dead_nodes(model: Any) -> bytes | None:
    """The model file without the nodes no graph output reads, serialized; None when it has
    none (or cannot be read here: then there is nothing to retry)."""
    try:
        proto = _model_proto(model)
    except Exception:  # the import read it; a failure here only forgoes the retry
        return None
    pruned = _pruned_to(proto, [o.name for o in proto.graph.output])
    if len(pruned.graph.node) == len(proto.graph.node):
        return None
    return pruned.SerializeToString()


def _pruned_to(proto: onnx.ModelProto, names: Sequence[str]) -> onnx.ModelProto:
    """A copy of the model whose outputs are ``names`` (each once), without the nodes none of
    them reads (a subgraph's reads of the outer graph's names counted)."""
    needed = set(names)
    live = []
    for node in reversed(proto.graph.node):  # ONNX lists nodes in topological order
        if needed.intersection(node.output):
            live.append(node)
            needed.update(_reads(node))
    pruned = onnx.ModelProto()
    pruned.CopyFrom(proto)
    del pruned.graph.node[:]
    pruned.graph.node.extend(reversed(live))
    kept = {o.name: o for o in reversed(proto.graph.output) if o.name in names}
    del pruned.graph.output[:]
    pruned.graph.output.extend(kept[name] for name in dict.fromkeys(names) if name in kept)
    return pruned


def _reads(node: onnx.NodeProto) -> Iterable[str]:
    """The names a node reads: its inputs, and those its subgraphs' nodes read."""
    yield from node.input
    for attr in node.attribute:
        for subgraph in (*([attr.g] if attr.HasField("g") else ()), *attr.graphs):
            for inner in subgraph.node:
                yield from _reads(inner)


def _model_proto(model: Any) -> onnx.ModelProto:
    """The model as given, as a proto (a path's external data loaded with it)."""
    if isinstance(model, onnx.ModelProto):
        return model
    if isinstance(model, (bytes, bytearray)):
        return onnx.load_from_string(bytes(model))
    return onnx.load(os.fspath(model))


def _reached(graph: Graph, node_ids: Sequence[int],
             tensors: Sequence[str] | None = None) -> set[int]:
    """Positions of the graph outputs computed from these nodes (of ``tensors`` of theirs
    only, where given: a node's note about some of its outputs, ``NodeRun.wrong``; (): none
    of them), tensor by tensor: an If, Loop or Scan past them reaches those of its outputs
    its subgraphs carry a reached read to (``reach.holder_outputs``; an If whose branch read
    one made all its outputs "not compared"), any other node all of its."""
    if tensors is not None:
        starts = {n.id for name in tensors for n, _ in graph.consumers(name)}
        reached = set(tensors)
    else:
        starts = set(node_ids)
        reached = {out for node_id in node_ids for out in graph.node(node_id).outputs}
    below = starts.union(*(nx.descendants(graph.nx, node_id) for node_id in starts))
    for node_id in nx.topological_sort(graph.nx.subgraph(below)):
        node = graph.node(node_id)
        if node_id in node_ids and tensors is None:
            continue  # (the divergent node itself: all its outputs, above)
        reads = [name for name in node.inputs if name in reached]
        if reads:
            reached.update(_holder_outputs(node, reads) if subgraphs(node.op) else node.outputs)
    return {i for i, name in enumerate(graph.outputs) if name in reached}


def _holder_outputs(node: Node, reads: Sequence[str]) -> list[str]:
    """The outputs of a node holding subgraphs that its inputs ``reads`` reach (``reach.
    holder_outputs``), its explicit inputs named apart from the names its subgraphs read
    (a pass may have renamed those it reads: ``split_inputs``)."""
    from dmlgraph.reach import holder_outputs

    explicit, outer = split_inputs(node)
    placeholder = [f"\0input {k}" if name else "" for k, name in enumerate(explicit)]
    attrs: dict[str, Any] = {}
    for key, value in node.op.attrs.items():
        if isinstance(value, Subgraph):
            attrs[key] = onnx.GraphProto.FromString(value.data)
        elif isinstance(value, tuple) and value and all(isinstance(v, Subgraph) for v in value):
            attrs[key] = [onnx.GraphProto.FromString(v.data) for v in value]
        elif key == "num_scan_inputs":
            attrs[key] = value
    proto = onnx.helper.make_node(node.op.op_type, placeholder, list(node.outputs),
                                  domain=node.op.domain, **attrs)
    read = set(reads)
    return holder_outputs(proto, [*(p for p, name in zip(placeholder, explicit) if name in read),
                                  *(inner for inner, name in outer.items() if name in read)])


# ----------------------------------------------------------------------------- the report


@dataclass(frozen=True)
class Comparison:
    """One engine's outputs against another's (or against stored outputs)."""

    actual: str
    expected: str
    outputs: tuple[OutputComparison, ...]
    note: str = ""

    @property
    def passed(self) -> bool:
        return all(o.verdict is not Verdict.FAIL for o in self.outputs)


@dataclass(frozen=True)
class HeldOps:
    """A control-flow node whose subgraphs hold ``ops`` (op type -> count) of the ops dmlgraph
    lowers (``subgraphs.held_counts``); ``label`` names it as ``lower``'s paths do."""

    node: str
    op_type: str
    label: str
    ops: Mapping[str, int]


#: Said with "parity holds" where no DML operator ran (``ParityReport.caveats``).
NO_DML_RAN = ("no DML operator ran: every Slice/Concat/Pad was folded, eliminated or left to "
              "the fallback, so this compares the fallback's run with the reference, not "
              "DirectML's operators")


def parity_caveats(notes: Sequence[str], passed: bool, compared: int,
                   descriptors_run: int) -> list[str]:
    """What a verdict says only with these: a report's notes, and where parity held over
    outputs compared but no DML operator ran, that it compared the fallback alone."""
    return [*notes, *([NO_DML_RAN] if passed and compared and not descriptors_run else [])]


@dataclass(frozen=True)
class ParityReport:
    """Everything ``check`` found: the comparisons, what lowering did with each node, the
    known divergences and what each engine ran."""

    model: str
    feature_level: FeatureLevel
    inputs: str
    outputs: tuple[str, ...]  # the model's output names, in order
    comparisons: tuple[Comparison, ...]
    lowering: tuple[Any, ...]  # lowering.NodeReport records
    divergences: tuple[KnownDivergence, ...]
    runs: tuple[Any, ...]  # backends.RunRecord of every engine run
    notes: tuple[str, ...] = ()
    #: the control-flow nodes whose subgraphs hold Slice/Concat/Pad nodes (``lowering`` and
    #: its summary are the main graph's)
    held: tuple[HeldOps, ...] = ()

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.comparisons)

    @property
    def compared(self) -> int:
        """How many (comparison, output) pairs were compared; 0 when every one was a known
        divergence that left nothing to compare (exit code 0 then claims nothing)."""
        return sum(o.compared for c in self.comparisons for o in c.outputs)

    @property
    def caveats(self) -> list[str]:
        """``parity_caveats`` of this report: ``check`` prints them under its tables, the
        HTML report in its parity section."""
        return parity_caveats(self.notes, self.passed, self.compared, self.descriptors_run)

    @property
    def descriptors_run(self) -> int:
        """How many DML operators the numpy backend's run executed (lowered ahead of time or
        as the graph ran). 0: every Slice/Concat/Pad was folded, eliminated or left to the
        fallback, so parity compares the fallback with the reference and shows nothing of
        DirectML's operators (said with the verdict, not hidden behind "parity holds")."""
        from backends.numpy.backend import DML_ENGINE

        return sum(record.engines().get(DML_ENGINE, 0) for record in self.runs)

    @property
    def exit_code(self) -> int:
        """ARCHITECTURE.md: 0 parity holds (known divergences included), 1 it fails."""
        return 0 if self.passed else 1

    def lowering_summary(
        self, ops: Sequence[str] = LOWERED_OPS
    ) -> dict[str, dict[str, int]]:
        """op type -> status -> count, for the ops dmlgraph lowers."""
        summary: dict[str, dict[str, int]] = {op: {} for op in ops}
        for record in self.lowering:
            if record.op_type in summary:
                status = str(record.status)
                summary[record.op_type][status] = summary[record.op_type].get(status, 0) + 1
        return summary

    def to_json(self) -> dict[str, Any]:
        from lowering.report import record_json

        return {
            "model": self.model,
            "feature_level": self.feature_level.full_name,  # as `lower --json` spells it
            "inputs": self.inputs,
            "passed": self.passed,
            "compared": self.compared,
            "descriptors_run": self.descriptors_run,
            "exit_code": self.exit_code,
            "notes": list(self.notes),
            "comparisons": [
                {
                    "actual": c.actual,
                    "expected": c.expected,
                    "passed": c.passed,
                    "note": c.note,
                    "outputs": [_output_json(o) for o in c.outputs],
                }
                for c in self.comparisons
            ],
            "lowering": {
                "summary": self.lowering_summary(),
                # added beside it: the summary counts the main graph's nodes only
                "held": [{"node": h.node, "op_type": h.op_type, "ops": dict(h.ops)}
                         for h in self.held],
                "nodes": [record_json(r) for r in self.lowering],
            },
            "divergences": [
                {"node": d.node, "note": d.note,
                 "outputs": [self.outputs[i] for i in sorted(d.outputs)]}
                for d in self.divergences
            ],
            "runs": [
                {"backend": r.backend, "provider": r.provider, "engines": r.engines(),
                 "engine_nodes": r.engine_nodes(),
                 "notes": list(getattr(r, "notes", ())),
                 "lowered_when_run": [
                     {"node": n.node, "op": n.op, "engine": n.engine, "via": n.via}
                     for n in r.lowered_when_run()
                 ] if hasattr(r, "lowered_when_run") else []}
                for r in self.runs
            ],
        }


def _output_json(o: OutputComparison) -> dict[str, Any]:
    def number(x: float | None) -> float | str | None:  # an int stays one, exact
        return x if x is None or math.isfinite(x) else str(x)

    return {
        "name": o.name,
        "verdict": str(o.verdict),
        "compared": o.compared,
        "actual": {"dtype": o.actual_dtype, "shape": list(o.actual_shape)},
        "expected": {"dtype": o.expected_dtype, "shape": list(o.expected_shape)},
        "exact": o.exact,
        "atol": number(o.tolerance.atol),
        "rtol": number(o.tolerance.rtol),
        "size": o.size,
        "mismatches": o.mismatches,
        "nan_mismatches": o.nan_mismatches,
        "max_abs_error": number(o.max_abs_error),
        "max_rel_error": number(o.max_rel_error),
        "required_atol": number(o.required_atol),
        "required_rtol": number(o.required_rtol),
        "message": o.message,
        "divergences": list(o.divergences),
    }


def compare_outputs(
    names: Sequence[str],
    actual: Sequence[np.ndarray],
    expected: Sequence[np.ndarray | None],
    tolerances: Tolerances,
    divergences: Sequence[KnownDivergence] = (),
) -> tuple[OutputComparison, ...]:
    """Compare by position (None: nothing to compare with); a failing output that some
    divergence reaches becomes a known divergence."""
    results = []
    for index, (name, a, e) in enumerate(zip(names, actual, expected)):
        if e is None:
            continue
        result = compare_output(name, a, e, tolerances.for_output(name, np.asarray(e).dtype))
        if result.verdict is Verdict.FAIL:
            reasons = tuple(d.describe() for d in divergences if index in d.outputs)
            if reasons:
                result = replace(result, verdict=Verdict.KNOWN_DIVERGENCE, divergences=reasons)
        results.append(result)
    return tuple(results)


#: The message of an output onnxruntime leaves uninitialized memory (``_uninitialized``).
UNINITIALIZED_MESSAGE = (
    "not compared: onnxruntime leaves it uninitialized memory at a known divergence, so no "
    "onnxruntime run computes it"
)


def _uninitialized(
    outputs: Sequence[OutputComparison],
    values: Sequence[np.ndarray],
    divergences: Sequence[KnownDivergence],
) -> tuple[OutputComparison, ...]:
    """``outputs`` (compared with onnxruntime, one per output by position), each that a
    divergence of onnxruntime's uninitialized memory reaches (``UNINITIALIZED``) made not
    compared, naming it."""
    made = []
    for index, o in enumerate(outputs):
        reasons = tuple(d.describe() for d in divergences
                        if d.uninitialized and index in d.outputs)
        if reasons and o.compared:
            o = replace(not_compared(o.name, values[index], reasons),
                        message=UNINITIALIZED_MESSAGE)
        made.append(o)
    return tuple(made)


def _dtype_name(dtype: np.dtype) -> str:
    """A dtype as reports name it: NumPy's name, and "string" for ONNX's STRING, which NumPy
    holds as objects ("object" named NumPy's container, not the output's type)."""
    return "string" if dtype.hasobject else str(dtype)


def not_compared(
    name: str, actual: np.ndarray, reasons: Sequence[str], why: str = ""
) -> OutputComparison:
    """An output the reference could not compute because of a known divergence (``why``:
    what else could not, and why)."""
    return OutputComparison(
        name=name,
        verdict=Verdict.KNOWN_DIVERGENCE,
        actual_dtype=_dtype_name(actual.dtype),
        expected_dtype="",
        actual_shape=tuple(actual.shape),
        expected_shape=(),
        exact=not is_float(actual.dtype),
        tolerance=EXACT,
        size=int(actual.size),
        mismatches=0,
        nan_mismatches=0,
        max_abs_error=None,
        max_rel_error=None,
        required_atol=None,
        required_rtol=None,
        message=f"not compared: the reference cannot compute it{why}",
        divergences=tuple(reasons),
        compared=False,
    )


# ----------------------------------------------------------------------------- check

ModelSource = str | os.PathLike[str] | bytes | onnx.ModelProto
TensorSource = str | os.PathLike[str] | Mapping[str, np.ndarray]


def check(
    model: ModelSource | Graph,
    *,
    feature_level: FeatureLevel | str | int = "6_4",
    inputs: TensorSource | None = None,
    expected: TensorSource | None = None,
    input_shapes: Mapping[str, Sequence[int | str]] | None = None,
    seed: int | None = None,
    atol: float | Mapping[str, float] | None = None,
    rtol: float | Mapping[str, float] | None = None,
    fallback: str = "onnxruntime",
    providers: Sequence[str] | None = None,
    cross_check: bool = False,
) -> ParityReport:
    """Lower ``model`` at ``feature_level`` and compare the NumPy backend's outputs against
    onnxruntime on the model (and against ``expected``, or the outputs ``inputs`` holds).

    ``model``: a path, bytes, an onnx.ModelProto, or a ``Graph`` (built or edited: checked
    as its ``to_onnx()``; ``load`` had refused one as "not Graph").

    ``inputs``: an .npz / test-data folder / dict; None generates them from ``seed`` (0 by
    default; given with ``inputs`` or ``expected``, which give the inputs, it is an error, as
    ``--seed`` is: it was ignored, silently).
    ``atol``/``rtol``: one value, or per output name with ``""`` as the default.
    ``cross_check`` adds onnxruntime on the lowered graph, translated back to ONNX.
    Raises DmlgraphError for bad input or an unsupported model (exit code 2).
    """
    from backends.numpy import NumpyBackend
    from backends.onnxruntime import OnnxruntimeBackend
    from backends.onnxruntime.providers import layout_rewrite_safe
    from dmlgraph.importer import load
    from lowering import lower
    from lowering.report import LoweredGraph

    try:
        level = FeatureLevel.parse(feature_level)
    except ValueError as exc:
        raise UnsupportedError(str(exc)) from None
    if not isinstance(cross_check, bool):  # "no" is true
        raise DmlgraphError(f"cross_check is True or False, not {cross_check!r}")
    for name, given in (("inputs", inputs), ("expected", expected)):
        if given is not None and not isinstance(given, (Mapping, str, os.PathLike)):
            raise DmlgraphError(
                f"{name} is an .npz or test-data folder path, or a mapping of names to "
                f"arrays, not a {type(given).__name__}"
            )
    for name, given in (("inputs", inputs), ("expected", expected)):
        if seed is not None and given is not None:
            raise DmlgraphError(f"seed {seed!r} draws generated inputs; it does nothing with "
                                f"{name}=, which gives them")
    if isinstance(model, LoweredGraph):
        raise UnsupportedError(
            f"{model.source}: check lowers the graph it is given, so it takes the model or the "
            "graph load() made, not a lowered one: check(load(...), feature_level=...) "
            f"(this one was lowered at {model.feature_level.full_name}); a lowered graph runs "
            "on get_backend('numpy').run(lowered, feeds)"
        )
    if not isinstance(model, (Graph, onnx.ModelProto, str, os.PathLike, bytes, bytearray,
                              memoryview)):  # load's words named load(), not check()
        raise DmlgraphError(f"check() takes a path, bytes, an onnx.ModelProto or a Graph, not "
                            f"{type(model).__name__}")
    source_model: ModelSource = model.to_onnx() if isinstance(model, Graph) else model
    graph = load(source_model, input_shapes)
    if not graph.outputs:
        raise DmlgraphError(f"{graph.source}: the graph declares no outputs: there is nothing "
                            "to compare")
    tolerances = Tolerances.of(atol, rtol)
    tolerances.check(graph.outputs)
    lowered = lower(graph, level)
    stem = Path(source_model).stem if isinstance(source_model, (str, os.PathLike)) else None
    feeds, stored, source = _tensors(graph, inputs, expected, 0 if seed is None else seed, stem)

    # one NCHWc decision for every session over the model (``providers.LAYOUT_REWRITE``)
    ort = OnnxruntimeBackend(providers, layout=layout_rewrite_safe(graph))
    # read-only for every engine: one that wrote into its feeds would hand the next ones the
    # values it computed from, and the comparison would pass on inputs the report never named
    feeds = {name: _read_only(array) for name, array in feeds.items()}
    # the providers are the reference's, and the fallback's where it is onnxruntime
    numpy = NumpyBackend(fallback, providers=providers if fallback == "onnxruntime" else None)
    actual = numpy.execute(lowered, feeds)
    runs: list[Any] = [actual.record]
    divergences = known_divergences(graph, lowered, runs)
    names = list(graph.outputs)
    values = [actual.outputs[name] for name in lowered.outputs]
    label = (
        f"numpy backend on the lowered graph (FL {level.short}, fallback "
        f"{actual.record.provider})"
    )
    notes: list[str] = []
    # a Scan making scan outputs may kill onnxruntime: its reference runs in a child
    reference = _ForkedReference(ort) if _may_die(graph) else ort
    comparisons = [
        _against_reference(reference, _Subject(source_model, graph, feeds, names, values,
                                               tolerances, divergences, label, runs), notes)
    ]
    notes.extend(_engines_apart(actual.record, comparisons[0]))
    if stored:
        # an output the file lacks is left out of its table: said, not silently dropped
        absent = list(dict.fromkeys(n for n in names if n not in stored))
        comparisons.append(
            Comparison(
                label,
                f"stored outputs ({expected if expected is not None else source})",
                # the user's values: no divergence of onnxruntime's excuses a mismatch (a wrong
                # output past a divergent Slice passed, exit 0)
                compare_outputs(names, values, [stored.get(n) for n in names], tolerances),
                note=f"the stored outputs hold no {', '.join(map(repr, absent))}: compared "
                     "with onnxruntime only" if absent else "",
            )
        )
    if cross_check:
        # the graph the numpy run ran: lowered again where the run proved inference wrong,
        # whose descriptors are the ones to check (the first's are sized for another tensor)
        ran = numpy.last_ran if isinstance(numpy.last_ran, LoweredGraph) else lowered
        again = " (lowered again by the sizes the run made)" if ran is not lowered else ""
        try:
            crossed = ort.execute(ran, feeds)
        except DmlgraphError as exc:  # without the hint for ``run`` the backend adds
            from backends.onnxruntime.providers import MAY_RUN

            notes.append(f"cross-check skipped: {str(exc).removesuffix(MAY_RUN)}")
        else:
            runs.append(crossed.record)
            comparisons.append(
                Comparison(
                    label,
                    f"onnxruntime on the lowered graph{again} translated to ONNX "
                    f"({crossed.record.provider})",
                    _uninitialized(compare_outputs(
                        names, values, [crossed.outputs[n] for n in ran.outputs], tolerances,
                        _kept_as_onnx(divergences, ran)), values, divergences),
                )
            )
    return ParityReport(
        model=graph.source,
        feature_level=level,
        inputs=source,
        outputs=tuple(names),
        comparisons=tuple(comparisons),
        lowering=tuple(lowered.report()),
        divergences=tuple(divergences),
        runs=tuple(runs),
        notes=tuple(notes),
        held=tuple(
            HeldOps(n.name, n.op_type, f"{n.op_type} {holder_label(n.name, n.outputs)}",
                    dict(sorted(counts.items())))
            for n in lowered.topological_order() if (counts := held_counts(n.op))
        ),
    )


def _engines_apart(record: Any, comparison: Comparison) -> list[str]:
    """Why a float output may fail with every DML operator right: the fallback ran ONNX nodes
    on onnx.reference that the reference ran on onnxruntime, which computes some floats
    otherwise (a U-Net's Convs: 63 of 6144 elements past 1e-5, "parity FAILS" naming
    nothing). Said where such an output fails; the verdict stands."""
    from backends.numpy.fallback import ReferenceFallback
    from dmlgraph.printable import counted

    if record.provider != ReferenceFallback.engine or not comparison.expected.startswith(
        "onnxruntime"
    ) or not any(o.verdict is Verdict.FAIL and not o.exact for o in comparison.outputs):
        return []
    ops = [run.op for run in record.nodes if run.engine == ReferenceFallback.engine]
    if not ops:
        return []
    return [
        f"the fallback ran {len(ops)} node(s) on onnx.reference ({counted(ops)}) that the "
        "reference ran on onnxruntime: where the two compute a float otherwise (by their "
        "rounding, or where ONNX leaves it open), a float output past them fails by that "
        "alone, with every DML operator right; --fallback onnxruntime (fallback='onnxruntime' "
        "in Python) runs them as the reference does"
    ]


def _read_only(array: np.ndarray) -> np.ndarray:
    """A read-only view (the caller's array stays as it was)."""
    view = array.view()
    view.flags.writeable = False
    return view


def _kept_as_onnx(divergences: Sequence[KnownDivergence], lowered: Graph) -> list[KnownDivergence]:
    """The divergences that still hold between the emulator and onnxruntime on the lowered
    graph translated to ONNX: those of nodes the lowered graph keeps as ONNX nodes (lowered at
    run time by the emulator with DirectML's meaning, where the translation keeps ONNX's). A
    descriptor is translated with its own meaning, and a folded node is the same constant on
    both sides, so there an emulator that differs is wrong."""
    origin_ids = getattr(lowered, "origin_ids", {})
    onnx_origins = {origin_ids.get(n.id, n.id) for n in lowered.nodes if n.is_onnx}
    return [d for d in divergences if d.node_id is None or d.node_id in onnx_origins]


def _feeds(
    graph: Graph, given: Mapping[str, Any], what: str = "inputs", outputs: bool = False
) -> dict[str, np.ndarray]:
    """The given inputs (and, with ``outputs``, expected outputs) as arrays, Python data in
    its tensor's type (``tensorio.feed_array``), so every engine is fed the same arrays:
    NumPy read a list as float64, which the backends refused for a float32 input, and
    onnxruntime's oracle too; an expected list failed a float32 output, "dtype float32
    differs from float64", for the very values it made. Arrays stay as given."""
    from dmlgraph import tensorio

    typed = set(graph.inputs) | (set(graph.outputs) if outputs else set())

    def dtype(name: str) -> np.dtype | None:
        info = graph.tensors.get(name)
        return info.dtype if info is not None and name in typed else None

    return {
        name: tensorio.feed_array(name, v, dtype(name), f"{what}[{name!r}]", TensorIOError)
        for name, v in given.items()
    }


def _tensors(
    graph: Graph,
    inputs: TensorSource | None,
    expected: TensorSource | None,
    seed: int,
    stem: str | None,
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], str]:
    """(feeds, stored outputs to compare with, where the feeds came from). Stored outputs are
    only compared with outputs of the inputs they were made from: an ``expected`` source that
    holds inputs lends them when none are given, and must agree with those given."""
    from dmlgraph import tensorio

    stored: dict[str, np.ndarray] = {}
    held: dict[str, np.ndarray] = {}  # the inputs ``expected`` holds
    where = "the expected arrays" if isinstance(expected, Mapping) else str(expected)
    if isinstance(expected, Mapping):
        stored = _feeds(graph, expected, "expected", outputs=True)
        # a misspelt output binds to nothing: refused, as in a file, naming the keys taken
        if why := tensorio.unbound_keys(graph, list(stored), stem=stem):
            raise tensorio.TensorIOError(f"{where}: {why}")
        held = {k: stored[k] for k in graph.inputs if k in stored}
        for name in set(stored) & set(graph.outputs):
            tensorio.check_output(where, graph, name, stored[name])
            if (problem := string_problem(stored[name])) is not None:  # None read as a
                # STRING output of shape [], compared, and said to differ in its shape
                raise tensorio.TensorIOError(f"{where}: output {name!r} {problem}")
    elif expected is not None:
        tensors = tensorio.read(expected, graph, stem=stem, require_inputs=False)
        stored, held = tensors.outputs, tensors.inputs
    if expected is not None and not set(stored) & set(graph.outputs):
        raise tensorio.TensorIOError(
            f"{where}: holds none of the graph's outputs {list(graph.outputs)}, so there is "
            "nothing to compare with"
        )
    if inputs is None and expected is not None and graph.inputs:
        missing = [name for name in graph.inputs if name not in held]
        if missing:  # generated inputs cannot give the stored outputs
            raise tensorio.TensorIOError(
                f"{where}: holds no value for graph input(s) {missing}, so its outputs cannot "
                "be compared with generated inputs' outputs; give the inputs they came from "
                "(--inputs / inputs=)"
            )
        return held, stored, f"{where} (the inputs stored with the expected outputs)"
    if inputs is None:
        feeds, source = tensorio.generate(graph, seed), f"generated (seed {seed})"
    elif isinstance(inputs, Mapping):
        feeds, source = _feeds(graph, inputs), "given arrays"
    else:
        tensors = tensorio.read(inputs, graph, stem=stem)
        feeds, source = tensors.inputs, str(inputs)
        if expected is None:
            stored = tensors.outputs
    for name, value in held.items():
        if name in feeds and not _same_values(feeds[name], value):
            raise tensorio.TensorIOError(
                f"{where}: holds input {name!r} unlike the one given ({source}): its outputs "
                "were computed from other inputs"
            )
    return feeds, stored, source


def _same_values(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal shapes and values, NaN matching NaN (the same bits where the dtype is one)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return False
    if a.dtype == b.dtype and a.dtype != np.dtype(object):
        return np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes()
    try:
        return bool(np.array_equal(a, b, equal_nan=is_float(a.dtype) and is_float(b.dtype)))
    except (TypeError, ValueError):
        return False


def _unoptimized(ort: Any, model: ModelSource, source: str) -> Any:
    """onnxruntime's session over the model without graph optimizations; None where it
    refuses that too."""
    try:
        return ort.session(model, source, optimize=False)
    except DmlgraphError:
        return None


#: What ``check`` adds where onnxruntime died of SIGFPE on its reference run (measured on
#: onnxruntime 1.32: a Scan stacking an empty scan output along an axis but 0).
_SIGFPE_SCAN = "as onnxruntime 1.32 does on some Scans making empty scan outputs"


class ReferenceDied(DmlgraphError):
    """onnxruntime killed the forked child running the reference (``_ForkedReference``);
    ``words`` say so in the table, where onnx.reference is the reference instead."""

    def __init__(self, where: str, signal: int) -> None:
        why, known = _death(signal)
        super().__init__(f"{where}: onnxruntime {why} running the model as the reference{known}")
        self.words = f"it {why} on it{known}"


def _death(signal: int) -> tuple[str, str]:
    """How onnxruntime's death by ``signal`` is said, and what is known of it (or "")."""
    from backends.base import signal_name

    known = f" ({_SIGFPE_SCAN})" if signal == 8 else ""
    return f"died of {signal_name(signal)} (signal {signal})", known


def run_apart(graph: Graph, work: Callable[[], T], where: str) -> T:
    """``work()``, an onnxruntime run of ``graph``, in a forked child where onnxruntime may
    die of it (``_may_die``), as ``check``'s reference runs (else here): ``run --backend
    onnxruntime`` died with onnxruntime of SIGFPE on a Scan making scan outputs (exit 136,
    no word). A child killed by a signal is one error naming it."""
    from backends.base import ChildKilled, run_forked

    if not _may_die(graph):
        return work()
    try:
        return run_forked(work)
    except ChildKilled as exc:
        why, known = _death(exc.signal)
        raise DmlgraphError(f"{where}: onnxruntime {why} running the model{known}") from None


def _may_die(graph: Graph) -> bool:
    """Whether onnxruntime may kill the process running ``graph``'s model: a Scan making scan
    outputs (``_scans_out``). (A node omitting an output onnxruntime dies of, a Split's "",
    is named in every session's copy of the model: ``providers.session_model``.)"""
    return _scans_out(graph)


def _scans_out(graph: Graph) -> bool:
    """Whether a Scan making scan outputs is in the graph, at any depth of its subgraphs:
    onnxruntime 1.32 kills the process running some (SIGFPE; which ones is murky), so the
    reference runs in a forked child (``_ForkedReference``). Other graphs cost a look at
    each node's attributes."""
    from dmlgraph.ir import subgraphs

    for node in graph.nodes:
        held = subgraphs(node.op)  # none but for control flow
        if not held:
            continue
        scans = node.op_type == "Scan" and node.op.domain in ("", "ai.onnx")
        if scans and _makes_scan_outputs(node.op.attrs):
            return True
        if any(_proto_scans_out(onnx.GraphProto.FromString(sub.data))
               for sub in held if "Scan" in sub.ops):
            return True
    return False


def _makes_scan_outputs(attrs: Mapping[str, Any]) -> bool:
    """Whether a Scan's body (``attrs``: the IR's, a Subgraph, or a proto node's, a
    GraphProto) has more outputs than state variables: N states and M scan inputs in,
    N states and K scan outputs out (Scan-8 and 9 on alike)."""
    body = attrs.get("body")
    data = getattr(body, "data", None)
    proto = onnx.GraphProto.FromString(data) if data is not None else body
    if not isinstance(proto, onnx.GraphProto):
        return False
    states = len(proto.input) - int(attrs.get("num_scan_inputs", 0))
    return len(proto.output) > states


def _proto_scans_out(graph: onnx.GraphProto) -> bool:
    """``_scans_out`` of a subgraph as ONNX holds it."""
    for node in graph.node:
        held = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute
                if a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
                or a.name == "num_scan_inputs"}
        if node.op_type == "Scan" and node.domain in ("", "ai.onnx") and (
            _makes_scan_outputs(held)
        ):
            return True
        for value in held.values():
            bodies = value if isinstance(value, list) else [value]
            if any(isinstance(b, onnx.GraphProto) and _proto_scans_out(b) for b in bodies):
                return True
    return False


class _ForkedReference:
    """onnxruntime as ``_against_reference`` uses it (``session``, ``execute_session``), each
    run in a forked child (``backends.base.run_forked``), for models ``_may_die`` finds:
    onnxruntime 1.32 died of SIGFPE running a Scan making scan outputs, and ``check`` with it
    (exit 136, no word). A session is made here, where refusing the model raises as before;
    the child makes its own alike (a parent's session does not survive a fork) and runs it;
    its outputs and record, or its error, come back. A child killed by a signal is
    ``ReferenceDied``."""

    def __init__(self, ort: Any) -> None:
        import weakref

        self._ort = ort
        self._made: weakref.WeakKeyDictionary[Any, tuple[Any, str, bool]] = (
            weakref.WeakKeyDictionary()
        )

    @property
    def providers(self) -> Sequence[str]:
        """The providers onnxruntime runs on (``_past_run_divergence`` runs again on them)."""
        return tuple(getattr(self._ort, "providers", ()))

    def session(self, model: Any, where: str = "", *, optimize: bool = True) -> Any:
        session = self._ort.session(model, where, optimize=optimize)
        self._made[session] = (model, where, optimize)
        return session

    def execute_session(self, session: Any, feeds: Mapping[str, Any], where: str = "<model>"
                        ) -> Any:
        from backends.base import ChildKilled, run_forked

        made = self._made.get(session)
        if made is None:  # not one of ours: run as given
            return self._ort.execute_session(session, feeds, where)
        model, made_where, optimize = made

        def run() -> Any:
            again = self._ort.session(model, made_where, optimize=optimize)
            return self._ort.execute_session(again, feeds, where)

        try:
            return run_forked(run)
        except ChildKilled as exc:
            raise ReferenceDied(where, exc.signal) from None


@dataclass(frozen=True)
class _Subject:
    """What ``check`` compares with a reference: the model as given and its import, the feeds,
    the outputs' names and the values the numpy backend made of them, the tolerances, the known
    divergences, the label of the numpy run, and ``runs``, where each engine's record is added."""

    model: ModelSource
    graph: Graph
    feeds: Mapping[str, np.ndarray]
    names: Sequence[str]
    values: Sequence[np.ndarray]
    tolerances: Tolerances
    divergences: list[KnownDivergence]  # (``_past_run_divergence`` adds to it)
    label: str
    runs: list[Any]


def _against_reference(ort: Any, subject: _Subject, notes: list[str]) -> Comparison:
    """onnxruntime on the model as given (if it refuses the file, on ``to_onnx`` of the
    import). If the run fails at a node with a known divergence, the outputs that node
    reaches are compared with onnx.reference where it computes what ONNX says there
    (``_on_onnx_reference``), else not compared, and the others are, on a copy of the graph
    pruned to them;
    any other failure is raised. Where onnxruntime cannot run the model at all
    (``providers.CANNOT_RUN``), or fails at its run on what ONNX allows
    (``providers.FAILS_WHEN_RUN``), the reference is onnx.reference
    (``_against_onnx_reference``)."""
    from backends.onnxruntime.providers import cannot_run, fails_at_run

    model, graph, feeds, names = subject.model, subject.graph, subject.feeds, subject.names
    values, tolerances, divergences = subject.values, subject.tolerances, subject.divergences
    label, runs = subject.label, subject.runs
    original = model.SerializeToString() if isinstance(model, onnx.ModelProto) else model
    reference = "onnxruntime on the original model"
    ran: Any = original  # the model the reference's session was made of
    result = None
    refused: DmlgraphError | None = None  # onnxruntime's refusal of the model as given
    try:
        try:
            session = ort.session(original, graph.source)
        except DmlgraphError as exc:
            refused = exc
            session = _unoptimized(ort, original, graph.source)
            if session is not None:  # its optimizers broke the model (a QuantizeLinear one
                # inserted, mistyped: "output_dtype INT8 does not match y_zero_point type")
                notes.append(f"onnxruntime's optimized session refused the model file "
                             f"({exc}); the reference is its session without graph "
                             "optimizations")
                reference = "onnxruntime on the original model, unoptimized"
            else:
                ran = graph.to_onnx()
                session = ort.session(ran, graph.source)
                notes.append(f"onnxruntime refused the model file ({exc}); the reference is "
                             "to_onnx() of the imported graph")
                reference = "onnxruntime on the imported graph"
        result = ort.execute_session(session, feeds, graph.source)
    except DmlgraphError as exc:
        failure = exc
    if (
        result is None
        and reference == "onnxruntime on the original model"
        and not _named_at(graph, divergences, failure)
        and (live := _without_dead_nodes(model)) is not None
    ):  # onnxruntime runs nodes no output reads, which dmlgraph never computes (a wrap Pad
        # of an empty input that nothing read failed the check): the file without them
        try:
            result = ort.execute_session(ort.session(live, graph.source), feeds, graph.source)
            ran = live
            notes.append(f"onnxruntime failed on the model file ({failure}); the reference is "
                         "the file without the nodes no output reads")
            reference = "onnxruntime on the model file without the nodes no output reads"
        except DmlgraphError as exc:
            if _named_at(graph, divergences, exc):
                failure = exc
    if (
        result is None
        and reference == "onnxruntime on the original model"
        and not _named_at(graph, divergences, failure)
        and (plain := _unoptimized(ort, original, graph.source)) is not None
    ):  # its optimizers broke the run (a QLinearGlobalAveragePool one fused: "parameter out
        # of computation range"), where the model's own nodes run
        try:
            result = ort.execute_session(plain, feeds, graph.source)
            notes.append(f"onnxruntime's optimized session failed on the model file "
                         f"({failure}); the reference is its session without graph "
                         "optimizations")
            reference = "onnxruntime on the original model, unoptimized"
        except DmlgraphError as exc:
            # the model's own failure: the optimized session's is the one to report, unless
            # the plain one's is at a divergence (``_at_divergence``)
            failure = _at_divergence(graph, divergences, exc) or failure
    if (
        result is None
        and reference == "onnxruntime on the original model"
        and not _named_at(graph, divergences, failure)
        and divergences
        and (any(not d.node for d in divergences) or "" in failed_names(failure))
    ):  # onnxruntime names an unnamed node '': ``to_onnx`` names each (``named_in``), the
        # divergent one or the one failing downstream of it
        notes.append(f"onnxruntime failed on the model file ({failure}); the reference is "
                     "to_onnx() of the imported graph, which names its unnamed nodes")
        reference = "onnxruntime on the imported graph"
        try:
            ran = graph.to_onnx()
            session = ort.session(ran, graph.source)
            result = ort.execute_session(session, feeds, graph.source)
        except DmlgraphError as exc:
            # at a divergence or downstream, else the model file's failure is the one to
            # report; unoptimized where the optimized session hides the divergent node
            failure = (_at_divergence(graph, divergences, exc)
                       or _plain_failure(ort, ran, subject) or failure)
    if result is not None:
        runs.append(result.record)
        # by name: a model may list an output twice, and the result holds it once
        outputs = _uninitialized(
            compare_outputs(names, values, [result.outputs[n] for n in names], tolerances,
                            divergences), values, divergences)
        if any(o.verdict is Verdict.FAIL for o in outputs):
            outputs = _optimizer_divergences(
                ort, ran, graph, feeds, result.outputs, values, tolerances, outputs, runs,
                notes, plain_failed=lambda exc, made: _past_run_divergence(
                    ort, subject, exc, made, notes))
        reference = f"{reference} ({result.record.provider})"
        computed = _excused_by_spec(dict(enumerate(outputs)), divergences)
        spec = _on_onnx_reference(subject, list(computed), computed)
        if spec.outputs:
            taken = dict.fromkeys(names[i] for i in spec.outputs)
            reference += f"; onnx.reference on the original model for {', '.join(map(repr, taken))}"
        outputs = tuple(spec.get(i) or o for i, o in enumerate(outputs))
        return Comparison(label, reference, outputs, note="; ".join(spec.notes))
    words = cannot_run(refused) if refused is not None else None
    if words is None:  # a Scan whose body makes an output inference gives no shape: exit 2
        words = fails_at_run(failure)  # with onnxruntime's words alone
    if words is None and isinstance(failure, ReferenceDied):
        words = failure.words  # onnx.reference may run what onnxruntime dies of
    if words is not None and not _failed_at(graph, divergences, failure, []):
        return _against_onnx_reference(subject, failure, words)
    # each failure at a divergent node prunes the outputs it reaches, until the rest run
    matched: list[KnownDivergence] = []
    expected: list[np.ndarray | None] = [None] * len(names)
    unreached: list[int] = []
    read = {i for d in divergences for i in d.outputs}  # (by values: before ``_failed_past``)
    while True:
        found = _failed_at(graph, divergences, failure, matched)
        if not found:
            widened = _failed_past(graph, matched, failure)
            if not widened:
                raise failure
            for old, new in widened:  # (the report's divergences too: the list is its)
                divergences[divergences.index(old)] = matched[matched.index(old)] = new
        matched += found
        unreached = [i for i in range(len(names)) if not any(i in d.outputs for d in matched)]
        if not unreached:
            break
        pruned = graph.copy()
        pruned.outputs = [names[i] for i in unreached]
        pruned.remove_dead_nodes()
        try:
            partial = ort.execute_session(ort.session(pruned.to_onnx(), graph.source), feeds,
                                          graph.source)
        except DmlgraphError as exc:
            failure = exc
            continue
        runs.append(partial.record)
        for i in unreached:
            expected[i] = partial.outputs[names[i]]
        break
    made = [i for i in range(len(names)) if expected[i] is not None]
    by_ort = dict(zip(made, compare_outputs(names, values, expected, tolerances, divergences)))
    computed = _excused_by_spec(by_ort, divergences)  # past the failure, a divergence computed
    reasons = list(dict.fromkeys(d.describe() for d in matched))
    left = [i for i in range(len(names)) if expected[i] is None]
    spec = _on_onnx_reference(subject, sorted({*left, *computed}), computed,
                              apart=[i for i in left if i not in read])
    outputs = _uninitialized(tuple(
        spec.get(i) or by_ort.get(i) or not_compared(names[i], values[i], reasons, spec.why)
        for i in range(len(names))
    ), values, divergences)
    note = f"reference failed: {failure}"
    if unreached:
        note += "; the outputs it does not reach were compared on the graph pruned to them"
    if spec.outputs:
        taken = dict.fromkeys(names[i] for i in spec.outputs)
        spec_reference = f"onnx.reference on the original model for {', '.join(map(repr, taken))}"
        # onnxruntime named only where it computed an output (the note says why it did not)
        ran = any(value is not None for value in expected)
        reference = f"{reference}; {spec_reference}" if ran else spec_reference
    return Comparison(label, reference, outputs, note="; ".join((note, *spec.notes)))


def _failed_past(graph: Graph, matched: Sequence[KnownDivergence], failure: Exception
                 ) -> list[tuple[KnownDivergence, KnownDivergence]]:
    """Where onnxruntime fails again on the graph pruned to what the ``matched`` divergences
    do not reach, at one's node or past it (``_upstream``): each such divergence (old, new)
    with every output that needs the node failed at to run (``_needing``): those its values
    do not reach as well (a Scan's rows of a scan input beside one a refused Pad made: the
    Scan still reads the Pad's result; ``_on_onnx_reference`` compares those as ``apart``);
    none where that adds nothing."""
    named = failure_names(graph, failure)
    at = [d for d in matched if d.named_in(named)] or _upstream(graph, matched, failure)
    needing = _needing(graph, failure)
    return [(d, replace(d, outputs=d.outputs | needing)) for d in at
            if not needing <= d.outputs]


def _needing(graph: Graph, failure: BaseException | str) -> frozenset[int]:
    """The graph outputs (by position) that need the node onnxruntime's run ``failure``
    names to run: its own, and those of every node past it, by any read."""
    below: set[int] = set()
    for node in failed_nodes(graph, failure):
        below |= {node.id, *nx.descendants(graph.nx, node.id)}
    made = {out for node_id in below for out in graph.node(node_id).outputs}
    return frozenset(i for i, name in enumerate(graph.outputs) if name in made)


def _at_divergence(graph: Graph, divergences: Sequence[KnownDivergence],
                   failure: DmlgraphError) -> DmlgraphError | None:
    """``failure`` where it is at a known divergence or downstream (``_failed_at``)."""
    return failure if _failed_at(graph, divergences, failure, []) else None


def _plain_failure(ort: Any, model: Any, subject: _Subject) -> DmlgraphError | None:
    """onnxruntime's failure on ``model`` without graph optimizations where it is at a known
    divergence (the optimized session's failed elsewhere): an If of a constant condition is
    inlined, its nodes renamed ("_if_then_branch_Loop"), so the failure of a divergent Loop
    in its branch, at any depth, named neither, and ``check`` exited 2."""
    plain = _unoptimized(ort, model, subject.graph.source)
    if plain is None:
        return None
    try:
        ort.execute_session(plain, subject.feeds, subject.graph.source)
    except DmlgraphError as exc:
        return _at_divergence(subject.graph, subject.divergences, exc)
    return None  # it runs unoptimized: the optimized session's failure stands


def _excused_by_spec(outputs: Mapping[int, OutputComparison],
                     divergences: Sequence[KnownDivergence]) -> dict[int, str]:
    """The outputs (by position) onnxruntime computed, at known divergences all of which
    onnx.reference computes what ONNX says at (``KnownDivergence.reference_follows_spec``),
    each with why onnxruntime's value is no oracle (``_COMPUTED``, ``_AGREED``):
    ``_on_onnx_reference`` compares them, whether dmlgraph's differs from it or not. A Slice
    ending at INT64_MAX with a negative step (onnxruntime reads it "through index 0", ONNX's
    result is empty) excused any value of dmlgraph's that differed (exit 0), and passed one
    equal to onnxruntime's. Not an output onnxruntime's graph optimizations alone excused
    (``OPTIMIZER_DIVERGENCE``)."""
    return {
        i: _AGREED if o.verdict is Verdict.PASS else _COMPUTED for i, o in outputs.items()
        if o.compared and OPTIMIZER_DIVERGENCE not in o.divergences
        and (reached := [d for d in divergences if i in d.outputs])
        and all(d.reference_follows_spec for d in reached)
    }


#: Why ``_on_onnx_reference`` compares an output: onnxruntime failed at a known divergence
#: (``_FAILED``), or computed it there, otherwise than dmlgraph (``_COMPUTED``) or as dmlgraph
#: does (``_AGREED``), where onnxruntime computes otherwise than ONNX.
_FAILED = "onnxruntime fails at a known divergence"
_COMPUTED = "onnxruntime computes it otherwise at a known divergence"
_AGREED = "onnxruntime computes it as dmlgraph does, but at a known divergence"
#: The message of an output ``_on_onnx_reference`` compares as ``apart``.
_NEEDED_ONLY = ("compared with onnx.reference: it needs a node onnxruntime fails at (a known "
                "divergence) to run, and reads none of its values")


@dataclass(frozen=True)
class _SpecReference:
    """What onnx.reference made of the outputs onnxruntime gives no oracle for
    (``_on_onnx_reference``): their comparisons by position, why the others stay not
    compared, notes for the table, and ``unjudged``: those onnxruntime computed (``computed``)
    where onnx.reference failed, not compared, both reasons said."""

    outputs: Mapping[int, OutputComparison]
    why: str
    notes: tuple[str, ...]
    unjudged: Mapping[int, OutputComparison] = field(default_factory=dict)

    def get(self, i: int) -> OutputComparison | None:
        """Output ``i`` as onnx.reference judged it, or left it unjudged; None where neither."""
        return self.outputs.get(i) or self.unjudged.get(i)


def _on_onnx_reference(subject: _Subject, left: Sequence[int],
                       computed: Mapping[int, str] = MappingProxyType({}),
                       apart: Collection[int] = ()) -> _SpecReference:
    """The outputs (by position) onnxruntime failed on at a known divergence, or computed
    there (``computed``, each with why: ``_excused_by_spec``), compared with onnx.reference on
    the model pruned to them, where it computes what ONNX says at every divergent node they are
    reached by (``KnownDivergence.reference_follows_spec``): a wrap Pad of an empty input, which
    onnxruntime fails on, was left not compared, though ONNX says its result. A mismatch there
    is dmlgraph's (no divergence excuses it). Where onnx.reference fails too, they stay not
    compared, its reason said (``computed`` ones in ``unjudged``). ``apart``: outputs
    that need a node onnxruntime fails at to run, and read none of its values or any other
    divergence's (``_failed_past``): compared whatever ONNX says there (a reflect Pad beyond
    its size, undefined, feeding a Scan beside y: the Scan's outputs made of y alone, a wrong
    one passed as "not compared")."""
    from backends.base import first_line

    names, values, divergences = subject.names, subject.values, subject.divergences

    reached = {i: [d for d in divergences if i in d.outputs] for i in left}
    ours = [i for i in left if i in apart or all(d.reference_follows_spec for d in reached[i])]
    notes = []
    unknown = dict.fromkeys(names[i] for i in left if i not in ours)
    if unknown:
        at = dict.fromkeys(d.label for i in left if i not in ours
                           for d in reached[i] if not d.reference_follows_spec)
        notes.append(f"{', '.join(map(repr, unknown))} not compared with onnx.reference either: "
                     f"it is not known to compute what ONNX says at {_nodes_text(at)}")
    if not ours:
        return _SpecReference({}, "", tuple(notes))
    taken = list(dict.fromkeys(names[i] for i in ours))
    try:
        made = dict(zip(taken, _onnx_reference_run(
            _pruned_to(_model_proto(subject.model), taken), subject.feeds, taken, subject.runs)))
    except Exception as exc:  # onnx.reference raises any type
        why = f", nor can onnx.reference ({first_line(exc)})"
        notes.append(f"onnx.reference failed on {', '.join(map(repr, taken))} as well: "
                     f"{first_line(exc)}")
        unjudged = {i: replace(not_compared(names[i], values[i],
                                            tuple(d.describe() for d in reached[i])),
                               message=f"not compared: {computed[i]}{why}")
                    for i in ours if i in computed}
        return _SpecReference({}, why, tuple(notes), unjudged)
    at = dict.fromkeys(d.label for i in ours if i not in apart for d in reached[i])
    spec = list(dict.fromkeys(names[i] for i in ours if i not in apart))
    if spec:
        notes.append(f"{', '.join(map(repr, spec))} compared with onnx.reference on the model "
                     f"(pruned to the outputs compared): it computes what ONNX says at "
                     f"{_nodes_text(at)}")
    aside = list(dict.fromkeys(names[i] for i in ours if i in apart))
    if aside:
        needed = dict.fromkeys(d.label for i in ours if i in apart for d in reached[i])
        notes.append(f"{', '.join(map(repr, aside))} compared with onnx.reference on the model "
                     f"(pruned to the outputs compared): they need {_nodes_text(needed)} to "
                     "run, and read none of its values")
    outputs = {}
    for i in ours:
        expected = made[names[i]]
        result = compare_output(names[i], values[i], expected,
                                subject.tolerances.for_output(names[i], expected.dtype))
        said = _NEEDED_ONLY if i in apart else (
            f"compared with onnx.reference: {computed.get(i, _FAILED)}, where "
            "onnx.reference computes what ONNX says")
        outputs[i] = replace(result, message="; ".join(filter(None, (said, result.message))))
    return _SpecReference(outputs, "", tuple(notes))


def _nodes_text(nodes: Iterable[str]) -> str:
    """'node 'a'' or 'nodes 'a', 'b''."""
    listed = list(nodes)
    return f"node{'s' if len(listed) > 1 else ''} {', '.join(map(repr, listed))}"


def _onnx_reference_run(
    proto: onnx.ModelProto, feeds: Mapping[str, np.ndarray], names: Sequence[str],
    runs: list[Any],
) -> list[np.ndarray]:
    """onnx.reference's values of outputs ``names`` of the model, its run added to ``runs``;
    raises what onnx.reference raises (any type)."""
    from backends.base import NodeRun, RunRecord
    from backends.numpy.fallback import reference_evaluator

    evaluator = reference_evaluator(proto)
    taken = set(evaluator.input_names)
    made = evaluator.run(None, {k: v for k, v in feeds.items() if k in taken})
    outputs = dict(zip(evaluator.output_names, made))
    expected = [np.asarray(outputs[n]) for n in names]
    engine = "onnx.reference"
    runs.append(RunRecord(engine, engine,
                          tuple(NodeRun(n.name, n.op_type, engine) for n in proto.graph.node)))
    return expected


def divergence_hint(graph: Graph, lowered: Graph, failure: Exception) -> str:
    """What onnxruntime's ``failure`` running ``graph`` (imported from a model, or ``lowered``
    from it) adds where it is at a known divergence: that the numpy backend runs the node and
    ``check`` names it (``run --backend onnxruntime`` said only onnxruntime's words); else
    ""."""
    from backends.base import engine_hint

    found = _failed_at(graph, [*known_divergences(graph, lowered), *_held_loops(graph)],
                       failure, [])
    if not found:
        return ""
    at = _nodes_text(dict.fromkeys(d.label for d in found))
    return engine_hint(f"a known divergence at {at}, which the numpy backend runs and check "
                       "names", "--backend numpy", "get_backend('numpy')")


def _held_loops(graph: Graph) -> list[KnownDivergence]:
    """The graph's If, Loop and Scan nodes holding a Loop onnxruntime fails on when it runs
    (``loop_divergence``), each as a divergence of its own: lowering notes none (the Loop
    diverges only where it runs), and onnxruntime's failure names the holder."""
    from dmlgraph.ir import split_inputs, subgraphs
    from dmlgraph.subgraphs import loop_divergence

    return [
        KnownDivergence(node.name, note, frozenset(_reached(graph, [node.id])),
                        node.provenance.op_type, node.id, "" if node.name else node.label)
        for node in graph.nodes
        if subgraphs(node.op) and (note := loop_divergence(node.op, split_inputs(node)[0]))
    ]


def _failed_at(
    graph: Graph,
    divergences: Sequence[KnownDivergence],
    failure: Exception,
    matched: Sequence[KnownDivergence],
) -> list[KnownDivergence]:
    """The divergences not yet ``matched`` that a reference's failure is theirs: at their
    node, by name, else upstream of the node it names (``_upstream``)."""
    named = failure_names(graph, failure)
    found = [d for d in divergences if d not in matched and d.named_in(named)]
    return found or [d for d in _upstream(graph, divergences, failure) if d not in matched]


def _named_at(graph: Graph, divergences: Sequence[KnownDivergence],
              failure: BaseException) -> bool:
    """Whether onnxruntime's ``failure`` names a divergent node (``failure_names``)."""
    named = failure_names(graph, failure)
    return any(d.named_in(named) for d in divergences)


def _against_onnx_reference(subject: _Subject, failure: DmlgraphError, words: str
                            ) -> Comparison:
    """onnx.reference on the model as given (its ops as the spec says: the evaluator of
    ``--fallback reference``), where onnxruntime cannot run it (``providers.CANNOT_RUN``,
    ``FAILS_WHEN_RUN``, its ``words``): an int16 Pad, which DirectML runs, stopped ``check``
    with exit 2 and no proof either way. Where onnx.reference fails too, onnxruntime's
    ``failure`` stands, saying so."""
    from backends.base import BackendError, first_line

    try:
        expected = _onnx_reference_run(_model_proto(subject.model), subject.feeds,
                                       subject.names, subject.runs)
    except Exception as exc:  # onnx.reference raises any type
        raise BackendError(f"{failure}; onnx.reference failed as well: {first_line(exc)}"
                           ) from None
    return Comparison(
        subject.label,
        f"onnx.reference on the original model (onnxruntime cannot run it: {words})",
        # a divergence onnx.reference computes what ONNX says at excuses nothing
        compare_outputs(subject.names, subject.values, expected, subject.tolerances,
                        [d for d in subject.divergences if not d.reference_follows_spec]),
    )


#: Why an output onnxruntime computes otherwise only with its graph optimizations is not a
#: failure (``_optimizer_divergences``); read after "known divergence at".
OPTIMIZER_DIVERGENCE = (
    "onnxruntime's graph optimizations: with them off (ORT_DISABLE_ALL) onnxruntime computes "
    "what dmlgraph does, so its optimized graph computes otherwise than the model (an "
    "onnxruntime optimizer divergence)"
)


def _optimizer_divergences(
    ort: Any,
    model: Any,
    graph: Graph,
    feeds: Mapping[str, np.ndarray],
    optimized: Mapping[str, np.ndarray],
    values: Sequence[np.ndarray],
    tolerances: Tolerances,
    outputs: tuple[OutputComparison, ...],
    runs: list[Any],
    notes: list[str],
    plain_failed: Callable[[DmlgraphError, tuple[OutputComparison, ...]],
                           tuple[OutputComparison, ...]] | None = None,
) -> tuple[OutputComparison, ...]:
    """``outputs`` (one per output, against onnxruntime with its default optimizations), each
    failing one that onnxruntime without graph optimizations computes as dmlgraph does, and
    otherwise than with them beyond the output's tolerance, made a known divergence
    (``OPTIMIZER_DIVERGENCE``): then onnxruntime disagrees with itself, and its plain run,
    the model's nodes as written, is the better oracle. (An error of dmlgraph's just past the
    tolerance of one run and within the other's, which fusions round apart, is not excused.)
    Found by this project's torch campaign: a reversed ``index_select`` (Range(n - 1, -1, -1)
    feeding a Gather) that onnxruntime 1.32's GatherToSliceFusion makes a Slice ending at -1,
    an empty result. Where the plain run fails, ``plain_failed`` (its error, ``outputs``)
    says what stands (``_past_run_divergence``); else the failures do."""
    try:
        plain = ort.execute_session(ort.session(model, graph.source, optimize=False), feeds,
                                    graph.source)
    except DmlgraphError as exc:
        return outputs if plain_failed is None else plain_failed(exc, outputs)
    runs.append(replace(plain.record, backend=f"{plain.record.backend}, graph optimizations off"))
    changed = []
    result = []
    for index, o in enumerate(outputs):
        if o.verdict is Verdict.FAIL:
            expected = plain.outputs[o.name]
            tolerance = tolerances.for_output(o.name, expected.dtype)
            if (
                compare_output(o.name, values[index], expected, tolerance).verdict
                is Verdict.PASS
                and compare_output(o.name, optimized[o.name], expected, tolerance).verdict
                is Verdict.FAIL
            ):
                o = replace(o, verdict=Verdict.KNOWN_DIVERGENCE,
                            divergences=(*o.divergences, OPTIMIZER_DIVERGENCE))
                if o.name not in changed:  # an output listed twice is named once
                    changed.append(o.name)
        result.append(o)
    if changed:
        notes.append(
            f"onnxruntime's graph optimizations change {', '.join(map(repr, changed))}: "
            "with them off it computes what dmlgraph does"
        )
    return tuple(result)


#: Why an output ``_past_run_divergence`` leaves not compared (after "the reference cannot
#: compute it").
PLAIN_RUN_FAILS = (
    ": onnxruntime's optimized run sizes what follows the divergent node by ONNX's inference, "
    "its kernel there otherwise (as the numpy backend's onnxruntime fallback does), and its run "
    "without graph optimizations (ORT_DISABLE_ALL) fails past it; --fallback reference runs "
    "the node as ONNX says"
)


def _past_run_divergence(
    ort: Any,
    subject: _Subject,
    failure: DmlgraphError,
    outputs: tuple[OutputComparison, ...],
    notes: list[str],
) -> tuple[OutputComparison, ...]:
    """``outputs`` (against onnxruntime's optimized run, some failing) where its run without
    graph optimizations fails too (``failure``), at or past a node that by the values fed
    makes other sizes on onnxruntime than ONNX says and that the numpy run did not note
    (``fallback.run_divergence_at``: a Squeeze by an empty axes list on the onnxruntime
    fallback, which squeezes as onnxruntime's kernel does). Its optimized run folded a
    Shape of the Squeeze's result by ONNX's inference, its kernel squeezed every 1 and its
    plain run failed: no onnxruntime run computes the model, and onnx.reference computes
    ONNX's sizes, which this run does not follow there. So each failing output the node
    reaches through a read of sizes (``_sized_past``) is not compared, the node named (added
    to the report's divergences); the others stand. Found by a review: an If of
    Size(Shape(Squeeze(X [1, 3, 1], []))) == 1 whose then branch held an inner If of
    Identity(S) (onnxruntime's plain run: "output 'b6' ... has shape {1,3,1} but the computed
    output shape for this run is {3}") failed ``check`` with exit 1 and no divergence named;
    without the inner If the plain run gave this run's values (``OPTIMIZER_DIVERGENCE``)."""
    from backends.numpy.fallback import run_divergence_at
    from backends.onnxruntime.providers import words_of

    graph, feeds = subject.graph, subject.feeds
    providers = tuple(getattr(ort, "providers", ()))
    try:  # (it may run onnxruntime again on what the failing node read: apart where it dies)
        found = run_apart(graph, lambda: run_divergence_at(
            graph, feeds, failure=words_of(failure), providers=providers), graph.source)
    except DmlgraphError:
        return outputs
    if found is None or not found.other_sizes or any(
            d.node_id == found.node_id for d in subject.divergences):
        return outputs  # (noted by the run: the outputs it reaches were judged so already)
    node = graph.node(found.node_id)
    divergence = KnownDivergence(node.name, found.note,
                                 frozenset(_reached(graph, _sized_past(graph, node))),
                                 node.provenance.op_type, node.id,
                                 "" if node.name else node.label)
    made = tuple(
        not_compared(o.name, subject.values[i], (divergence.describe(),), PLAIN_RUN_FAILS)
        if o.verdict is Verdict.FAIL and i in divergence.outputs else o
        for i, o in enumerate(outputs)
    )
    left = dict.fromkeys(o.name for o, was in zip(made, outputs) if o is not was)
    if not left:
        return outputs
    subject.divergences.append(divergence)
    notes.append(f"onnxruntime failed without graph optimizations ({failure}) past "
                 f"{found.where}, a known divergence: {', '.join(map(repr, left))} not "
                 "compared")
    return made


#: The ops whose values are a tensor's sizes: onnxruntime's optimizer folds them by ONNX's
#: inference (``_sized_past``).
_SIZE_READERS = frozenset({"Shape", "Size"})


def _sized_past(graph: Graph, node: Node) -> list[int]:
    """The nodes past ``node`` (itself included) where onnxruntime's optimized run may follow
    ONNX's sizes rather than its kernel's: a Shape or Size it reaches, or a node holding
    subgraphs (which may hold one, or check a branch's declared sizes). Elsewhere that run
    computes what the kernel made, as the onnxruntime fallback does: a Neg of the Squeeze's
    result is compared (a wrong one was excused as not compared, exit 0)."""
    return [i for i in (node.id, *nx.descendants(graph.nx, node.id))
            if (held := graph.node(i)).op_type in _SIZE_READERS or subgraphs(held.op)]
