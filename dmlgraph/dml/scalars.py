"""What a descriptor's number fields take: Python's or NumPy's integers and reals, never a
bool or a string. One test for the dataclasses, their validation and the executor."""

from __future__ import annotations

import math
import numbers
import struct
from collections.abc import Iterable
from typing import TypeGuard

import numpy as np


def is_integer(value: object) -> TypeGuard[int]:  # NumPy's integers act as ints here
    kind = type(value)
    if kind is int:  # first: lowering asks for every size and stride it builds
        return True
    return kind is not bool and isinstance(value, numbers.Integral) and kind is not np.bool_


def is_real(value: object) -> TypeGuard[float]:
    kind = type(value)
    if kind is float or kind is int:
        return True
    return kind is not bool and isinstance(value, numbers.Real) and kind is not np.bool_


def int_tuple(values: object) -> object:
    """A sequence of integers as a tuple of Python ints. Anything else comes back as it is (a
    tuple keeps each non-integer as it is) for ``validate()`` to refuse by its field's name:
    ``int()`` would truncate 1.9 to 1 without a word."""
    if type(values) is tuple:
        for v in values:  # a loop: most are tuples of ints already, kept as they are
            if type(v) is not int:
                break
        else:
            return values
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        return values
    return tuple(int(v) if is_integer(v) else v for v in values)


def plain_int(value: object) -> object:
    """An integer, NumPy's too, as a Python int; anything else as it is, for ``validate()``
    to refuse by its field's name. A NumPy integer kept in a field reached ``to_json()``'s
    dict, which ``json.dumps`` cannot write."""
    return int(value) if type(value) is not int and is_integer(value) else value


def as_double(value: object) -> float | None:
    """A real number as a double; None when it is finite but no double holds it (an integer
    of 400 digits, a long double of 1e400), which ``float()`` makes inf or refuses."""
    try:
        double = float(value)  # type: ignore[arg-type]
    except OverflowError:
        return None
    if math.isinf(double):
        try:
            infinite = bool(np.isinf(value))  # type: ignore[call-overload]
        except (TypeError, OverflowError):  # a Fraction, an int: never infinite
            infinite = False
        if not infinite:
            return None
    return double


#: Types ``same_bits_key`` returns as they are, by exact type (no float is one).
_NOT_FLOATS = frozenset({int, bool, str, bytes, tuple, type(None)})


def same_bits_key(value: object) -> object:
    """A float as its bits, anything else as it is: a key under which 0.0 and -0.0 differ and
    a NaN equals the same NaN (Python's ``==`` says the opposite of both). A descriptor's or an
    attribute's float is bits that DirectML or onnxruntime copy, so two that compare equal
    must copy the same bits."""
    kind = type(value)
    if kind in _NOT_FLOATS:  # most fields: no isinstance asked (a descriptor's hash reads all)
        return value
    if isinstance(value, np.floating) and value != value:  # float() would quiet a signalling
        return (value.dtype.str, value.tobytes())  # NaN (an attribute's: importer.wire_floats)
    if type(value) is float or isinstance(value, np.floating):  # NumPy's too (an API caller's)
        return (float, struct.pack("<d", float(value)))
    return value


def cast_float(value: object, dtype: np.dtype) -> np.ndarray:
    """A float in another float type as a C cast (onnxruntime's) and onnx.reference convert
    it: inf beyond the range, and a NaN quiet, its payload kept as far as the type holds it.
    NumPy's float16 cast keeps a signalling NaN signalling (0x7f800001 became 0x7c01 where
    both fill 0x7e00), so a NaN is made quiet in its own type first. In its own type a value
    keeps its bits, a signalling NaN too (a copy, as a 0-d array)."""
    source = np.array(value)
    if source.dtype != dtype and source.dtype.kind == "f" and np.isnan(source).any():
        bits = source.view(f"u{source.itemsize}")
        quiet = np.where(np.isnan(source), 1 << (np.finfo(source.dtype).nmant - 1), 0)
        bits |= quiet.astype(bits.dtype)
    with np.errstate(over="ignore", invalid="ignore"):  # beyond float16's range: inf, as in C
        return source.astype(dtype)
