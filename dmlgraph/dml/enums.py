"""DirectML enumerations with the exact numeric values of directml.h.

Names are the directml.h names without their prefix (``DML_TENSOR_DATA_TYPE_FLOAT32`` is
``TensorDataType.FLOAT32``); ``full_name`` gives the C spelling back, which the JSON form and
error messages use.
"""

from __future__ import annotations

import enum
import re
from typing import TypeVar

import numpy as np

from dmlgraph.dml.scalars import is_integer
from dmlgraph.errors import EnumValueError, shown

_E = TypeVar("_E", bound="_DmlEnum")


class _DmlEnum(enum.IntEnum):
    """An IntEnum that knows its C prefix and parses the full or suffix spelling."""

    @classmethod
    def prefix(cls) -> str:
        """The C spelling's prefix, e.g. ``DML_PADDING_MODE_``."""
        return _C_NAMES[cls.__name__][0]

    @classmethod
    def c_type(cls) -> str:
        """directml.h's name of the enum, e.g. ``DML_TENSOR_FLAGS`` (its values'
        ``DML_TENSOR_FLAG_``): what a DxDispatch model's author knows it by."""
        return _C_NAMES[cls.__name__][1]

    @property
    def full_name(self) -> str:
        return f"{self.prefix()}{self.name}"

    @classmethod
    def parse(cls: type[_E], value: object, field: str = "") -> _E:
        """Accept a member, its numeric value, its full C name or its suffix. ``field`` (the
        descriptor field it is read for) starts the error's message."""
        if isinstance(value, cls):
            return value
        if field:
            try:
                return cls.parse(value)
            except EnumValueError as exc:
                raise EnumValueError(f"{field}: {exc}") from None
        if isinstance(value, (bool, np.bool_, enum.Enum)):  # another enum's member is no
            raise EnumValueError(f"{shown(value)} is not a {cls.__name__}")  # number of this one
        if is_integer(value):  # NumPy's integers too
            try:
                return cls(int(value))
            except ValueError:
                raise EnumValueError(f"{int(value)!r} is not a {cls.__name__} value") from None
        if isinstance(value, str):
            text = value.strip()
            if text.startswith(cls.prefix()):
                text = text[len(cls.prefix()):]
            try:
                return cls[text]
            except KeyError:
                names = ", ".join(m.name for m in cls)
                raise EnumValueError(
                    f"{shown(value)} is not a {cls.__name__} (one of {names})"
                ) from None
        raise EnumValueError(f"{shown(value)} is not a {cls.__name__}")


class FeatureLevel(_DmlEnum):
    """DML_FEATURE_LEVEL: ordered, so ``level >= FeatureLevel.L2_1`` reads as the spec does."""


    L1_0 = 0x1000
    L2_0 = 0x2000
    L2_1 = 0x2100
    L3_0 = 0x3000
    L3_1 = 0x3100
    L4_0 = 0x4000
    L4_1 = 0x4100
    L5_0 = 0x5000
    L5_1 = 0x5100
    L5_2 = 0x5200
    L6_0 = 0x6000
    L6_1 = 0x6100
    L6_2 = 0x6200
    L6_3 = 0x6300
    L6_4 = 0x6400

    @property
    def full_name(self) -> str:
        return f"DML_FEATURE_LEVEL_{self.short}"

    @property
    def short(self) -> str:
        """The "6_4" spelling."""
        return self.name[1:]

    @classmethod
    def parse(cls, value: object, field: str = "") -> FeatureLevel:
        """Accept "6_4", "6.4", "DML_FEATURE_LEVEL_6_4", 0x6400 (or "0x6400") or a member;
        ``field`` starts the error's message, as for the other enums."""
        try:
            return cls._parse_level(value)
        except EnumValueError as exc:
            if not field:
                raise
            raise EnumValueError(f"{field}: {exc}") from None

    @classmethod
    def _parse_level(cls, value: object) -> FeatureLevel:
        if isinstance(value, cls):
            return value
        if is_integer(value) and not isinstance(value, enum.Enum):  # another enum's member
            try:  # is no level
                return cls(int(value))  # NumPy's integers too
            except ValueError:
                raise EnumValueError(_unknown_level(int(value))) from None
        if isinstance(value, str):
            text = value.strip()
            if re.fullmatch(r"0[xX][0-9a-fA-F]+", text):
                try:
                    return cls(int(text, 16))
                except ValueError:
                    raise EnumValueError(_unknown_level(value)) from None
            upper = text.upper()
            if upper.startswith("DML_FEATURE_LEVEL_"):
                upper = upper[len("DML_FEATURE_LEVEL_"):]
            # digits as written: int() read "6.04" and "06_4" as 6_4, and any script's digits
            match = re.fullmatch(r"([0-9]+)[._]([0-9]+)", upper)
            if match:
                member = cls.__members__.get(f"L{match[1]}_{match[2]}")
                if member is not None:
                    return member
        raise EnumValueError(_unknown_level(value))

    def __str__(self) -> str:
        return self.full_name


def _unknown_level(value: object) -> str:
    known = ", ".join(level.short for level in FeatureLevel)
    # a float names no level (3.1 and 3.10 are one float): say how to write the one meant
    hint = f"; write a level as a string, '{value}'" if isinstance(value, float) else ""
    return f"unknown DirectML feature level {value!r} (known: {known}{hint})"


class TensorDataType(_DmlEnum):
    """DML_TENSOR_DATA_TYPE."""


    UNKNOWN = 0
    FLOAT32 = 1
    FLOAT16 = 2
    UINT32 = 3
    UINT16 = 4
    UINT8 = 5
    INT32 = 6
    INT16 = 7
    INT8 = 8
    FLOAT64 = 9
    UINT64 = 10
    INT64 = 11
    UINT4 = 12
    INT4 = 13

    @property
    def bit_width(self) -> int:
        return _BIT_WIDTH[self]

    @property
    def is_float(self) -> bool:
        return self in (TensorDataType.FLOAT16, TensorDataType.FLOAT32, TensorDataType.FLOAT64)

    @property
    def numpy_dtype(self) -> np.dtype:
        """The NumPy dtype that holds one element; 4-bit types have none."""
        try:
            return np.dtype(_NUMPY[self])
        except KeyError:
            raise ValueError(f"{self.full_name} has no NumPy element type") from None

    @property
    def bits_dtype(self) -> np.dtype:
        """The unsigned integer dtype of the same width: data moves as bits, never as values."""
        return np.dtype(f"u{self.bit_width // 8}")

    @classmethod
    def from_numpy(cls, dtype: np.dtype | type) -> TensorDataType:
        dtype = np.dtype(dtype)
        for member, name in _NUMPY.items():
            if np.dtype(name) == dtype:
                return member
        raise ValueError(f"NumPy dtype {dtype} has no DirectML tensor data type")


_BIT_WIDTH: dict[TensorDataType, int] = {
    TensorDataType.UNKNOWN: 0,
    TensorDataType.FLOAT32: 32,
    TensorDataType.FLOAT16: 16,
    TensorDataType.UINT32: 32,
    TensorDataType.UINT16: 16,
    TensorDataType.UINT8: 8,
    TensorDataType.INT32: 32,
    TensorDataType.INT16: 16,
    TensorDataType.INT8: 8,
    TensorDataType.FLOAT64: 64,
    TensorDataType.UINT64: 64,
    TensorDataType.INT64: 64,
    TensorDataType.UINT4: 4,
    TensorDataType.INT4: 4,
}

_NUMPY: dict[TensorDataType, str] = {
    TensorDataType.FLOAT32: "float32",
    TensorDataType.FLOAT16: "float16",
    TensorDataType.UINT32: "uint32",
    TensorDataType.UINT16: "uint16",
    TensorDataType.UINT8: "uint8",
    TensorDataType.INT32: "int32",
    TensorDataType.INT16: "int16",
    TensorDataType.INT8: "int8",
    TensorDataType.FLOAT64: "float64",
    TensorDataType.UINT64: "uint64",
    TensorDataType.INT64: "int64",
}


class PaddingMode(_DmlEnum):
    """DML_PADDING_MODE."""


    CONSTANT = 0
    EDGE = 1
    REFLECTION = 2
    SYMMETRIC = 3
    WRAP = 4


class TensorFlags(_DmlEnum):
    """DML_TENSOR_FLAGS (a bit set in C; NONE and OWNED_BY_DML are its only members)."""


    NONE = 0
    OWNED_BY_DML = 1


class ExecutionFlags(_DmlEnum):
    """DML_EXECUTION_FLAGS (a bit set in C): a DxDispatch dispatchable's ``executionFlags``.
    None of them changes what a copy computes; they are read to refuse a misspelt one."""

    NONE = 0
    ALLOW_HALF_PRECISION_COMPUTATION = 1
    DISABLE_META_COMMANDS = 2
    DESCRIPTORS_VOLATILE = 4


class TensorType(_DmlEnum):
    """DML_TENSOR_TYPE: only BUFFER tensors exist."""


    INVALID = 0
    BUFFER = 1


class OperatorType(_DmlEnum):
    """DML_OPERATOR_TYPE: the members this project emits or may emit."""


    INVALID = 0
    ELEMENT_WISE_IDENTITY = 1
    SLICE = 60
    CAST = 61
    SPLIT = 62
    JOIN = 63
    PADDING = 64
    GATHER = 67
    FILL_VALUE_CONSTANT = 103
    SLICE1 = 111
    PADDING1 = 155


class GraphEdgeType(_DmlEnum):
    """DML_GRAPH_EDGE_TYPE."""


    INVALID = 0
    INPUT = 1
    OUTPUT = 2
    INTERMEDIATE = 3


#: Each enum's C spellings: its values' prefix and directml.h's name of the type (the two
#: differ for the flag sets: ``DML_TENSOR_FLAG_NONE`` is a ``DML_TENSOR_FLAGS``).
_C_NAMES: dict[str, tuple[str, str]] = {
    "FeatureLevel": ("DML_FEATURE_LEVEL_", "DML_FEATURE_LEVEL"),
    "TensorDataType": ("DML_TENSOR_DATA_TYPE_", "DML_TENSOR_DATA_TYPE"),
    "PaddingMode": ("DML_PADDING_MODE_", "DML_PADDING_MODE"),
    "TensorFlags": ("DML_TENSOR_FLAG_", "DML_TENSOR_FLAGS"),
    "ExecutionFlags": ("DML_EXECUTION_FLAG_", "DML_EXECUTION_FLAGS"),
    "TensorType": ("DML_TENSOR_TYPE_", "DML_TENSOR_TYPE"),
    "OperatorType": ("DML_OPERATOR_", "DML_OPERATOR_TYPE"),
    "GraphEdgeType": ("DML_GRAPH_EDGE_TYPE_", "DML_GRAPH_EDGE_TYPE"),
}

# DirectML constants (directml.h).
TENSOR_DIMENSION_COUNT_MAX = 5
TENSOR_DIMENSION_COUNT_MAX1 = 8
MINIMUM_BUFFER_TENSOR_ALIGNMENT = 16
UINT32_MAX = 2**32 - 1
INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1
