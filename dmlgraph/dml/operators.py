"""Operator descriptors: DML_SLICE, DML_SLICE1, DML_JOIN, DML_PADDING, DML_PADDING1.

One frozen dataclass per ``DML_*_OPERATOR_DESC``, fields in directml.h order under snake_case
names, each described once by a ``SCHEMA``. ``validate(feature_level)`` enforces every rule of
the seed documents plus the support tables of ``support.py``; it checks structure first and
the feature level last, so a level error can say which level would accept the descriptor.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass, fields
from functools import cache
from typing import Any, Callable, ClassVar, Iterator

import numpy as np

from dmlgraph.dml.enums import (
    INT32_MAX,
    INT32_MIN,
    UINT32_MAX,
    FeatureLevel,
    OperatorType,
    PaddingMode,
    TensorDataType,
    TensorFlags,
)
from dmlgraph.dml.scalars import (
    as_double,
    cast_float,
    int_tuple,
    is_integer,
    is_real,
    plain_int,
    same_bits_key,
)
from dmlgraph.dml.schema import FieldKind, FieldSpec
from dmlgraph.dml.support import introduced, support_row
from dmlgraph.dml.tensor import OVERLAP_SEARCH_STEPS, BufferTensorDesc, shared_element
from dmlgraph.errors import DmlValidationError

K = FieldKind

# Padding modes newer than DML_PADDING itself, and the level that added each.
PADDING_MODE_INTRODUCED: dict[PaddingMode, FeatureLevel] = {
    PaddingMode.CONSTANT: FeatureLevel.L1_0,
    PaddingMode.EDGE: FeatureLevel.L1_0,
    PaddingMode.REFLECTION: FeatureLevel.L1_0,
    PaddingMode.SYMMETRIC: FeatureLevel.L3_0,
    PaddingMode.WRAP: FeatureLevel.L6_4,
}

_INTEGER_RANGE: dict[TensorDataType, tuple[int, int]] = {
    **{
        dt: (int(np.iinfo(dt.numpy_dtype).min), int(np.iinfo(dt.numpy_dtype).max))
        for dt in TensorDataType
        if dt.bit_width >= 8 and not dt.is_float and dt != TensorDataType.UNKNOWN
    },
    TensorDataType.UINT4: (0, 15),  # no NumPy dtype; the support tables refuse them anyway,
    TensorDataType.INT4: (-8, 7),  # after the rules are checked
}


def _count(values: object) -> int:
    """A DimensionCount or InputCount left out: the length of its array (-1, which validate()
    refuses, when that is no sequence)."""
    return len(values) if isinstance(values, tuple) else -1


@cache
def _field_names(cls: type[OperatorDesc]) -> tuple[str, ...]:
    return tuple(f.name for f in fields(cls))


def _field_values(desc: OperatorDesc) -> dict[str, object]:
    return {name: getattr(desc, name) for name in _field_names(type(desc))}


@cache
def _tensor_specs(cls: type[OperatorDesc]) -> tuple[FieldSpec, ...]:
    """The tensor fields of a descriptor class's schema (asked for on every validation)."""
    return tuple(spec for spec in cls.SCHEMA if spec.is_tensor)


@dataclass(frozen=True, kw_only=True)
class OperatorDesc(ABC):
    """Base of all descriptors: schema-driven validation and the level search."""

    OPERATOR: ClassVar[OperatorType]
    SCHEMA: ClassVar[tuple[FieldSpec, ...]]
    #: Whether an output may be bound over an input's bytes. DirectML's page of each operator
    #: that supports in-place execution says so; the SLICE, SLICE1, JOIN, PADDING and
    #: PADDING1 pages do not.
    IN_PLACE: ClassVar[bool] = False

    # Equality by bits (the descriptors are declared ``eq=False``): a PADDING filling -0.0 is
    # not one filling 0.0, which lowering's Simplify would otherwise merge into it.
    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self._bits() == other._bits()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        try:
            return hash(self._bits())
        except (TypeError, DmlValidationError):  # a list where a tuple belongs, or such a
            self._check_schema()  # tensor desc: the schema names the field and the rule
            raise DmlValidationError(
                self.name, "(fields)", _field_values(self), "a field holds an unhashable value"
            ) from None

    def _bits(self) -> tuple[object, ...]:
        # a list, not a generator, whose every item is a call: every hash reads all fields
        return tuple([same_bits_key(getattr(self, name)) for name in _field_names(type(self))])

    @property
    def name(self) -> str:
        return self.OPERATOR.full_name

    def to_json(self) -> dict[str, Any]:
        """The DxDispatch dispatchable form ``{"type": ..., "desc": {...}}``, of fields of
        their kinds (``_check_schema``: a None offsets raised a TypeError while writing)."""
        from dmlgraph.dml.jsonio import operator_to_json  # jsonio reads these classes

        self._check_schema()
        return operator_to_json(self)

    def _plain_integers(self) -> None:
        """Its count and UINT fields' NumPy integers as Python ints, as ``int_tuple`` makes
        its arrays'."""
        for spec in self.SCHEMA:
            if spec.kind in (K.COUNT, K.UINT):
                object.__setattr__(self, spec.attr, plain_int(getattr(self, spec.attr)))

    # -- tensors -------------------------------------------------------------------------
    def tensor_fields(self) -> Iterator[tuple[str, BufferTensorDesc, bool]]:
        """(field label, desc, is_output) for every tensor, in schema order."""
        for spec in _tensor_specs(type(self)):
            value = getattr(self, spec.attr)
            if spec.kind is K.INPUT_TENSOR_ARRAY:
                for i, desc in enumerate(value):
                    yield f"{spec.c_name}[{i}]", desc, False
            else:
                yield spec.c_name, value, spec.kind is K.OUTPUT_TENSOR

    @property
    def inputs(self) -> tuple[BufferTensorDesc, ...]:
        return tuple(desc for _, desc, out in self.tensor_fields() if not out)

    @property
    def outputs(self) -> tuple[BufferTensorDesc, ...]:
        return tuple(desc for _, desc, out in self.tensor_fields() if out)

    # -- validation ----------------------------------------------------------------------
    def error(
        self, field: str, value: object, rule: str, min_level: FeatureLevel | None = None
    ) -> DmlValidationError:
        return DmlValidationError(
            self.name, field, value, rule, min_level.full_name if min_level else None
        )

    def validate(self, feature_level: FeatureLevel | str | int = FeatureLevel.L6_4) -> None:
        """Raise DmlValidationError for the first broken rule at ``feature_level``."""
        level = FeatureLevel.parse(feature_level)
        self._check_schema()
        for label, desc, is_output in self.tensor_fields():
            if is_output:
                self._check_distinct_elements(label, desc)
        self._check_rules()
        failures = self._level_failures(level)
        if failures:
            field, value, rule = failures[0]
            # every other broken requirement once, with the first field and value breaking it
            others: dict[str, tuple[str, object]] = {}
            for other_field, other_value, other_rule in failures[1:]:
                if other_rule != rule:
                    others.setdefault(other_rule, (other_field, other_value))
            rule += "".join(f"; also {f} = {v!r}: {r}" for r, (f, v) in others.items())
            accepting = next(
                (lv for lv in FeatureLevel if lv > level and not self._level_failures(lv)), None
            )
            raise self.error(field, value, f"at {level.full_name}, {rule}", accepting)

    def _check_schema(self) -> None:
        """Rules every field of a kind obeys: tensor descs, counts, UINT and INT ranges."""
        for spec in self.SCHEMA:
            value = getattr(self, spec.attr)
            if spec.kind in (K.UINT_ARRAY, K.INT_ARRAY) and not isinstance(value, tuple):
                raise self.error(spec.c_name, value, "must be a sequence of integers")
            if spec.kind is K.INPUT_TENSOR_ARRAY and not isinstance(value, tuple):
                raise self.error(spec.c_name, value, "must be a sequence of DML_BUFFER_TENSOR_DESC")
            if spec.kind in (K.FLOAT, K.SCALAR_UNION) and not is_real(value):
                raise self.error(spec.c_name, value, "must be a number")
        for label, desc, is_output in self.tensor_fields():
            if not isinstance(desc, BufferTensorDesc):
                raise self.error(label, desc, "must be a DML_BUFFER_TENSOR_DESC")
            desc.validate(self.name, label)
            if is_output and desc.flags & TensorFlags.OWNED_BY_DML:
                raise self.error(
                    f"{label}.Flags",
                    desc.flags.full_name,
                    "DML_TENSOR_FLAG_OWNED_BY_DML applies to input tensors only",
                )
        by_name = {spec.c_name: spec for spec in self.SCHEMA}
        for spec in self.SCHEMA:
            value = getattr(self, spec.attr)
            if spec.kind in (K.COUNT, K.UINT) and not is_integer(value):
                raise self.error(spec.c_name, value, "must be an integer")
            if spec.kind is K.COUNT:
                if not 0 <= value <= UINT32_MAX:
                    raise self.error(spec.c_name, value, "must fit in UINT")
            elif spec.kind is K.UINT:
                if not 0 <= value <= UINT32_MAX:
                    raise self.error(spec.c_name, value, "must fit in UINT (0 to 2^32 - 1)")
            elif spec.kind in (K.UINT_ARRAY, K.INT_ARRAY):
                low, high = (0, UINT32_MAX) if spec.kind is K.UINT_ARRAY else (INT32_MIN, INT32_MAX)
                for i, item in enumerate(value):
                    if not is_integer(item):
                        raise self.error(f"{spec.c_name}[{i}]", item, "must be an integer")
                    if not low <= item <= high:
                        kind = "UINT" if spec.kind is K.UINT_ARRAY else "INT"
                        raise self.error(f"{spec.c_name}[{i}]", item, f"must fit in {kind}")
            if spec.counted_by is not None:
                count = getattr(self, by_name[spec.counted_by].attr)
                if len(value) != count:
                    raise self.error(
                        spec.c_name,
                        list(value) if spec.kind is not K.INPUT_TENSOR_ARRAY else len(value),
                        f"must have {spec.counted_by} ({count}) entries",
                    )

    def _check_distinct_elements(self, label: str, desc: BufferTensorDesc) -> None:
        """An output's elements lie at distinct addresses: DirectML writes each element once,
        in no order it defines, so two coordinates of one address would leave either value
        (a stride of 0 broadcasts an input; an output has nothing to broadcast)."""
        if desc.strides is None:
            return
        shared = shared_element(desc.sizes, desc.strides)
        if shared is None:
            return
        if not shared.decided:
            rule = (
                "an output tensor's elements must lie at distinct addresses; these strides "
                "do not nest (sorted, each at least the span of the smaller ones) and "
                f"{OVERLAP_SEARCH_STEPS} steps did not decide whether two coordinates share one"
            )
        else:
            axis = shared.broadcast_axis
            why = (
                f" (Strides[{axis}] = 0 on a dimension of size {desc.sizes[axis]}: a "
                "broadcast, which only an input may be)" if axis is not None else ""
            )
            rule = (
                "an output tensor's elements must lie at distinct addresses: coordinates "
                f"{list(shared.first)} and {list(shared.second)} both address element "
                f"{shared.element}{why}"
            )
        raise self.error(f"{label}.Strides", list(desc.strides), rule)

    @abstractmethod
    def _check_rules(self) -> None:
        """Operator-specific rules that hold at every feature level."""

    def _level_failures(self, level: FeatureLevel) -> list[tuple[str, object, str]]:
        """Every (field, value, rule) the feature level forbids; empty when it accepts."""
        first = introduced(self.OPERATOR)
        if level < first:
            return [("OperatorType", self.name, f"{self.name} needs {first.full_name}")]
        row = support_row(self.OPERATOR, level)
        assert row is not None
        failures: list[tuple[str, object, str]] = []
        for label, desc, _ in self.tensor_fields():
            if not row.accepts_dims(desc.dimension_count):
                failures.append((
                    f"{label}.DimensionCount",
                    desc.dimension_count,
                    f"{self.name} supports {row.describe_dims()} dimensions",
                ))
            if desc.data_type not in row.data_types:
                names = ", ".join(sorted(t.name for t in row.data_types))
                failures.append((
                    f"{label}.DataType",
                    desc.data_type.full_name,
                    f"{self.name} supports {names}",
                ))
        return failures + self._extra_level_failures(level)

    def _extra_level_failures(self, level: FeatureLevel) -> list[tuple[str, object, str]]:
        return []

    # -- shared rule helpers -------------------------------------------------------------
    def _same_type_and_rank(self, dimension_count: int | None) -> None:
        """"InputTensor and OutputTensor must have the same DataType and DimensionCount"."""
        tensors = list(self.tensor_fields())
        first_label, first, _ = tensors[0]
        for label, desc, _ in tensors[1:]:
            if desc.data_type != first.data_type:
                raise self.error(
                    f"{label}.DataType",
                    desc.data_type.full_name,
                    f"must equal {first_label}.DataType ({first.data_type.full_name})",
                )
            if desc.dimension_count != first.dimension_count:
                raise self.error(
                    f"{label}.DimensionCount",
                    desc.dimension_count,
                    f"must equal {first_label}.DimensionCount ({first.dimension_count})",
                )
        if dimension_count is not None and dimension_count != first.dimension_count:
            raise self.error(
                "DimensionCount",
                dimension_count,
                f"must match the tensors' DimensionCount ({first.dimension_count})",
            )


@dataclass(frozen=True, kw_only=True, eq=False)
class SliceDesc(OperatorDesc):
    """DML_SLICE_OPERATOR_DESC (FL 1.0): ``Out[c] = In[Offsets + Strides * c]``."""

    OPERATOR: ClassVar[OperatorType] = OperatorType.SLICE
    SCHEMA: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec("InputTensor", "input_tensor", K.INPUT_TENSOR),
        FieldSpec("OutputTensor", "output_tensor", K.OUTPUT_TENSOR),
        FieldSpec("DimensionCount", "dimension_count", K.COUNT),
        FieldSpec("Offsets", "offsets", K.UINT_ARRAY, counted_by="DimensionCount"),
        FieldSpec("Sizes", "sizes", K.UINT_ARRAY, counted_by="DimensionCount"),
        FieldSpec("Strides", "strides", K.UINT_ARRAY, counted_by="DimensionCount"),
    )

    input_tensor: BufferTensorDesc
    output_tensor: BufferTensorDesc
    dimension_count: int = -1
    offsets: tuple[int, ...]
    sizes: tuple[int, ...]
    strides: tuple[int, ...]

    def __post_init__(self) -> None:
        self._plain_integers()
        for name in ("offsets", "sizes", "strides"):
            object.__setattr__(self, name, int_tuple(getattr(self, name)))
        if self.dimension_count == -1:
            object.__setattr__(self, "dimension_count", _count(self.offsets))

    def _check_rules(self) -> None:
        self._same_type_and_rank(self.dimension_count)
        in_sizes, out_sizes = self.input_tensor.sizes, self.output_tensor.sizes
        for i in range(self.dimension_count):
            if self.strides[i] < 1:
                raise self.error(f"Strides[{i}]", self.strides[i], "strides must be at least 1")
            if self.sizes[i] != out_sizes[i]:
                raise self.error(
                    f"Sizes[{i}]",
                    self.sizes[i],
                    f"the slice's Sizes must equal OutputTensor.Sizes ({out_sizes[i]})",
                )
            last = self.offsets[i] + self.strides[i] * (self.sizes[i] - 1)
            if last >= in_sizes[i]:
                raise self.error(
                    f"Offsets[{i}]",
                    self.offsets[i],
                    f"out-of-bounds read: Offsets + Strides * (Sizes - 1) = {last} must be "
                    f"less than InputTensor.Sizes[{i}] ({in_sizes[i]})",
                )


@dataclass(frozen=True, kw_only=True, eq=False)
class Slice1Desc(OperatorDesc):
    """DML_SLICE1_OPERATOR_DESC (FL 2.1): a window read forwards or, for a negative stride,
    backwards from its end."""

    OPERATOR: ClassVar[OperatorType] = OperatorType.SLICE1
    SCHEMA: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec("InputTensor", "input_tensor", K.INPUT_TENSOR),
        FieldSpec("OutputTensor", "output_tensor", K.OUTPUT_TENSOR),
        FieldSpec("DimensionCount", "dimension_count", K.COUNT),
        FieldSpec(
            "InputWindowOffsets", "input_window_offsets", K.UINT_ARRAY, counted_by="DimensionCount"
        ),
        FieldSpec(
            "InputWindowSizes", "input_window_sizes", K.UINT_ARRAY, counted_by="DimensionCount"
        ),
        FieldSpec(
            "InputWindowStrides", "input_window_strides", K.INT_ARRAY, counted_by="DimensionCount"
        ),
    )

    input_tensor: BufferTensorDesc
    output_tensor: BufferTensorDesc
    dimension_count: int = -1
    input_window_offsets: tuple[int, ...]
    input_window_sizes: tuple[int, ...]
    input_window_strides: tuple[int, ...]

    def __post_init__(self) -> None:
        self._plain_integers()
        for name in ("input_window_offsets", "input_window_sizes", "input_window_strides"):
            object.__setattr__(self, name, int_tuple(getattr(self, name)))
        if self.dimension_count == -1:
            object.__setattr__(self, "dimension_count", _count(self.input_window_offsets))

    def max_copied_elements(self, i: int) -> int:
        """1 + (InputWindowSizes[i] - 1) / |InputWindowStrides[i]| (the seed omits the abs;
        without it seed example 2, stride -2, would be invalid)."""
        return 1 + (self.input_window_sizes[i] - 1) // abs(self.input_window_strides[i])

    def _check_rules(self) -> None:
        self._same_type_and_rank(self.dimension_count)
        in_sizes, out_sizes = self.input_tensor.sizes, self.output_tensor.sizes
        for i in range(self.dimension_count):
            offset = self.input_window_offsets[i]
            size = self.input_window_sizes[i]
            stride = self.input_window_strides[i]
            if size < 1:
                raise self.error(
                    f"InputWindowSizes[{i}]", size, "the input window must not be empty"
                )
            if offset + size > in_sizes[i]:
                raise self.error(
                    f"InputWindowOffsets[{i}]",
                    offset,
                    f"the window must lie inside the input: InputWindowOffsets + "
                    f"InputWindowSizes = {offset + size} must be at most "
                    f"InputTensor.Sizes[{i}] ({in_sizes[i]})",
                )
            if stride == 0:
                raise self.error(f"InputWindowStrides[{i}]", stride, "strides must be non-zero")
            most = self.max_copied_elements(i)
            if not 1 <= out_sizes[i] <= most:
                raise self.error(
                    f"OutputTensor.Sizes[{i}]",
                    out_sizes[i],
                    f"must satisfy 1 <= OutputTensor.Sizes <= MaxCopiedElements = "
                    f"1 + (InputWindowSizes - 1) / |InputWindowStrides| = {most}",
                )


@dataclass(frozen=True, kw_only=True, eq=False)
class JoinDesc(OperatorDesc):
    """DML_JOIN_OPERATOR_DESC (FL 1.0): concatenation along Axis; the inverse of SPLIT."""

    OPERATOR: ClassVar[OperatorType] = OperatorType.JOIN
    SCHEMA: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec("InputCount", "input_count", K.COUNT),
        FieldSpec("InputTensors", "input_tensors", K.INPUT_TENSOR_ARRAY, counted_by="InputCount"),
        FieldSpec("OutputTensor", "output_tensor", K.OUTPUT_TENSOR),
        FieldSpec("Axis", "axis", K.UINT),
    )

    input_count: int = -1
    input_tensors: tuple[BufferTensorDesc, ...]
    output_tensor: BufferTensorDesc
    axis: int

    def __post_init__(self) -> None:
        self._plain_integers()
        if isinstance(self.input_tensors, Iterable):
            object.__setattr__(self, "input_tensors", tuple(self.input_tensors))
        if self.input_count == -1:
            object.__setattr__(self, "input_count", _count(self.input_tensors))

    def _check_rules(self) -> None:
        if self.input_count < 1:
            raise self.error("InputCount", self.input_count, "must be greater than 0")
        self._same_type_and_rank(None)
        out_sizes = self.output_tensor.sizes
        if self.axis >= len(out_sizes):
            raise self.error(
                "Axis",
                self.axis,
                f"must be in [0, OutputTensor.DimensionCount - 1] = [0, {len(out_sizes) - 1}]",
            )
        join_size = 0
        for i, desc in enumerate(self.input_tensors):
            for dim, size in enumerate(desc.sizes):
                if dim == self.axis:
                    join_size += size
                elif size != out_sizes[dim]:
                    raise self.error(
                        f"InputTensors[{i}].Sizes[{dim}]",
                        size,
                        f"sizes off the join axis must equal OutputTensor.Sizes[{dim}] "
                        f"({out_sizes[dim]})",
                    )
        if join_size != out_sizes[self.axis]:
            raise self.error(
                f"OutputTensor.Sizes[{self.axis}]",
                out_sizes[self.axis],
                f"must equal the sum of the inputs' sizes along Axis ({join_size})",
            )


class _PaddingRules:
    """What DML_PADDING and DML_PADDING1 share: sizes, modes and their feature levels.

    A mixin without fields, so each descriptor keeps its fields in directml.h order.
    """

    input_tensor: BufferTensorDesc
    output_tensor: BufferTensorDesc
    padding_mode: PaddingMode
    dimension_count: int
    start_padding: tuple[int, ...]
    end_padding: tuple[int, ...]
    error: Callable[..., DmlValidationError]
    OPERATOR: ClassVar[OperatorType]
    _same_type_and_rank: Callable[[int | None], None]
    _plain_integers: Callable[[], None]

    def _normalize_common(self) -> None:
        self._plain_integers()
        object.__setattr__(
            self, "padding_mode", PaddingMode.parse(
                self.padding_mode, f"{self.OPERATOR.full_name}.PaddingMode"
            )
        )
        for name in ("start_padding", "end_padding"):
            object.__setattr__(self, name, int_tuple(getattr(self, name)))
        if self.dimension_count == -1:
            object.__setattr__(self, "dimension_count", _count(self.start_padding))

    def _check_rules(self) -> None:
        self._same_type_and_rank(self.dimension_count)
        in_sizes, out_sizes = self.input_tensor.sizes, self.output_tensor.sizes
        for i in range(self.dimension_count):
            start, end = self.start_padding[i], self.end_padding[i]
            if out_sizes[i] != in_sizes[i] + start + end:
                raise self.error(
                    f"OutputTensor.Sizes[{i}]",
                    out_sizes[i],
                    f"must equal InputTensor.Sizes + StartPadding + EndPadding = "
                    f"{in_sizes[i]} + {start} + {end} = {in_sizes[i] + start + end}",
                )
            if (
                self.padding_mode is PaddingMode.REFLECTION
                and in_sizes[i] == 1
                and (start or end)
            ):
                raise self.error(
                    f"InputTensor.Sizes[{i}]",
                    1,
                    "REFLECTION has nothing to mirror in a dimension of size 1 (its period "
                    "2 * (size - 1) is 0); use EDGE, which gives the same values",
                )
        self._check_value()

    @abstractmethod
    def _check_value(self) -> None:
        """PADDING and PADDING1 type their value differently."""

    def _extra_level_failures(self, level: FeatureLevel) -> list[tuple[str, object, str]]:
        needed = PADDING_MODE_INTRODUCED[self.padding_mode]
        if level < needed:
            return [(
                "PaddingMode",
                self.padding_mode.full_name,
                f"{self.padding_mode.full_name} needs {needed.full_name}",
            )]
        return []


@dataclass(frozen=True, kw_only=True, eq=False)
class PaddingDesc(_PaddingRules, OperatorDesc):
    """DML_PADDING_OPERATOR_DESC (FL 1.0). PaddingValue is a C FLOAT: it is stored as the
    float32 the struct would hold (a signalling ``np.float32`` NaN as it is, since a Python
    float would set its quiet bit, as ``Padding1Desc`` keeps one), and truncated toward zero
    for integer tensors. Seed 003 says the value "may be truncated" for any DataType other
    than FLOAT16 and FLOAT32, words older than FLOAT64 PADDING (FL 5.0); a FLOAT64 tensor
    takes the FLOAT exactly, as a C conversion does (DML_SPEC.md: "non-float tensors"; tested
    in test_numpy_executor.test_padding_value_conversions)."""

    OPERATOR: ClassVar[OperatorType] = OperatorType.PADDING
    SCHEMA: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec("InputTensor", "input_tensor", K.INPUT_TENSOR),
        FieldSpec("OutputTensor", "output_tensor", K.OUTPUT_TENSOR),
        FieldSpec("PaddingMode", "padding_mode", K.ENUM, enum_name="PaddingMode"),
        FieldSpec("PaddingValue", "padding_value", K.FLOAT),
        FieldSpec("DimensionCount", "dimension_count", K.COUNT),
        FieldSpec("StartPadding", "start_padding", K.UINT_ARRAY, counted_by="DimensionCount"),
        FieldSpec("EndPadding", "end_padding", K.UINT_ARRAY, counted_by="DimensionCount"),
    )

    input_tensor: BufferTensorDesc
    output_tensor: BufferTensorDesc
    padding_mode: PaddingMode
    padding_value: float = 0.0
    dimension_count: int = -1
    start_padding: tuple[int, ...]
    end_padding: tuple[int, ...]

    def __post_init__(self) -> None:
        self._normalize_common()
        if not is_real(self.padding_value):
            raise self.error("PaddingValue", self.padding_value, "must be a number (a C FLOAT)")
        if _nan_a_double_changes(self.padding_value, TensorDataType.FLOAT32):
            return  # a signalling float32 NaN is a FLOAT the struct holds: kept, its bits
        value = as_double(self.padding_value)
        if value is None:  # finite, beyond any double
            raise self.error("PaddingValue", self.padding_value, "must fit in a 32-bit FLOAT")
        with np.errstate(over="ignore"):
            as_float32 = float(np.float32(value))
        if math.isinf(as_float32) and not math.isinf(value):
            raise self.error("PaddingValue", value, "must fit in a 32-bit FLOAT")
        object.__setattr__(self, "padding_value", as_float32)

    def fill(self) -> np.ndarray:
        """The element DirectML fills with, a 0-d array of the output tensor's type: the C
        FLOAT converted as a C cast converts it (inf where a FLOAT16 cannot hold it, a NaN
        quiet; toward zero for an integer tensor). The one rule the emulator and the
        translation read."""
        data_type = self.output_tensor.data_type
        if data_type.is_float:
            return cast_float(np.float32(self.padding_value), data_type.numpy_dtype)
        return np.array(math.trunc(self.padding_value), dtype=data_type.numpy_dtype)

    def _check_value(self) -> None:
        data_type = self.output_tensor.data_type
        if self.padding_mode is not PaddingMode.CONSTANT or data_type.is_float:
            return
        value = self.padding_value
        low, high = _INTEGER_RANGE[data_type]
        if not math.isfinite(value) or not low <= math.trunc(value) <= high:
            raise self.error(
                "PaddingValue",
                value,
                f"truncated toward zero it must fit in {data_type.full_name} [{low}, {high}]",
            )


@dataclass(frozen=True, kw_only=True, eq=False)
class Padding1Desc(_PaddingRules, OperatorDesc):
    """DML_PADDING1_OPERATOR_DESC (FL 5.0): PADDING with a typed DML_SCALAR_UNION value, exact
    for 64-bit integers and doubles. The value is stored as the union holds it: a Python int
    for integer types, a float rounded to a float type (so 3 and 3.0 are one FLOAT32
    descriptor, and a FLOAT16 0.1 survives JSON, which DxDispatch reads through float)."""

    OPERATOR: ClassVar[OperatorType] = OperatorType.PADDING1
    SCHEMA: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec("InputTensor", "input_tensor", K.INPUT_TENSOR),
        FieldSpec("OutputTensor", "output_tensor", K.OUTPUT_TENSOR),
        FieldSpec("PaddingMode", "padding_mode", K.ENUM, enum_name="PaddingMode"),
        FieldSpec(
            "PaddingValueDataType", "padding_value_data_type", K.ENUM, enum_name="TensorDataType"
        ),
        FieldSpec(
            "PaddingValue", "padding_value", K.SCALAR_UNION, type_field="PaddingValueDataType"
        ),
        FieldSpec("DimensionCount", "dimension_count", K.COUNT),
        FieldSpec("StartPadding", "start_padding", K.UINT_ARRAY, counted_by="DimensionCount"),
        FieldSpec("EndPadding", "end_padding", K.UINT_ARRAY, counted_by="DimensionCount"),
    )

    input_tensor: BufferTensorDesc
    output_tensor: BufferTensorDesc
    padding_mode: PaddingMode
    padding_value_data_type: TensorDataType
    padding_value: int | float = 0
    dimension_count: int = -1
    start_padding: tuple[int, ...]
    end_padding: tuple[int, ...]

    def __post_init__(self) -> None:
        self._normalize_common()
        data_type = TensorDataType.parse(
            self.padding_value_data_type, f"{self.name}.PaddingValueDataType"
        )
        object.__setattr__(self, "padding_value_data_type", data_type)
        object.__setattr__(self, "padding_value", _union_value(self.padding_value, data_type))

    def scalar(self) -> np.ndarray:
        """The value as the 0-d array the scalar union holds (its bits are what DML reads)."""
        if not is_real(self.padding_value):  # NumPy's own error, or a string parsed as one
            raise self.error("PaddingValue", self.padding_value, "must be a number")
        return np.array(self.padding_value, dtype=self.padding_value_data_type.numpy_dtype)

    def fill(self) -> np.ndarray:
        """The element DirectML fills with (``PaddingDesc.fill``): the union's value."""
        return self.scalar()

    def _check_value(self) -> None:
        data_type = self.padding_value_data_type
        if data_type != self.output_tensor.data_type:
            raise self.error(
                "PaddingValueDataType",
                data_type.full_name,
                f"must equal OutputTensor.DataType ({self.output_tensor.data_type.full_name})",
            )
        value = self.padding_value
        if data_type.is_float:
            if not is_real(value):
                raise self.error("PaddingValue", value, "must be a number")
            double = as_double(value)
            if double is None:  # finite, beyond any double
                raise self.error("PaddingValue", value, f"overflows {data_type.full_name}")
            with np.errstate(over="ignore"):
                stored = float(np.array(double, dtype=data_type.numpy_dtype))
            if math.isinf(stored) and not math.isinf(double):
                raise self.error(
                    "PaddingValue", value, f"overflows {data_type.full_name}"
                )
            return
        low, high = _INTEGER_RANGE[data_type]
        if not is_integer(value) or not low <= value <= high:
            raise self.error(
                "PaddingValue",
                value,
                f"must be an integer in {data_type.full_name} [{low}, {high}]",
            )


def _nan_a_double_changes(value: object, data_type: TensorDataType) -> bool:
    if not (isinstance(value, np.floating) and value.dtype == data_type.numpy_dtype):
        return False
    if not np.isnan(value):
        return False
    bits = data_type.bits_dtype
    return bool(np.array(float(value), value.dtype).view(bits) != np.array(value).view(bits))


def _union_value(value: object, data_type: TensorDataType) -> object:
    """A PADDING1 value as its DML_SCALAR_UNION member holds it: NumPy's numbers and
    fractions as Python's, integers as ints, reals as doubles rounded to a float type. What
    that cannot hold (a string, 3.5 for INT8, 1e5 for FLOAT16, 10**400) is kept as it is for
    ``_check_value`` to name. A NaN of the member's own NumPy type that a double would change
    (a signalling float32 NaN: ``float()`` sets its quiet bit) is kept as it is, its bits."""
    if _nan_a_double_changes(value, data_type):
        return value
    if is_integer(value):
        value = int(value)
    if is_real(value) and (data_type.is_float or not is_integer(value)):
        double = as_double(value)
        value = value if double is None else double
    if type(value) is not float:
        return value
    if not data_type.is_float:
        return int(value) if value.is_integer() else value
    if not math.isfinite(value):  # a NaN keeps its bits, which rounding could change
        return value
    with np.errstate(over="ignore"):
        stored = float(np.array(value, dtype=data_type.numpy_dtype))
    return stored if math.isfinite(stored) else value


DESCRIPTOR_CLASSES: dict[OperatorType, type[OperatorDesc]] = {
    cls.OPERATOR: cls for cls in (SliceDesc, Slice1Desc, JoinDesc, PaddingDesc, Padding1Desc)
}

