"""One test per rule: a descriptor that breaks it is rejected, naming field, value and rule.

Each case starts from a valid descriptor (checked in ``test_baselines_are_valid``) and changes
exactly one thing, so a failure can only come from the rule under test.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
from typing import Any, Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dmlgraph.dml import (
    BufferTensorDesc,
    DmlValidationError,
    JoinDesc,
    OperatorDesc,
    Padding1Desc,
    PaddingDesc,
    Slice1Desc,
    SliceDesc,
)
from dmlgraph.dml.tensor import shared_element
from dmlgraph.errors import DmlgraphError

T = BufferTensorDesc


def slice_desc(**changes: Any) -> SliceDesc:
    base = dict(
        input_tensor=T("FLOAT32", (1, 1, 4, 4)),
        output_tensor=T("FLOAT32", (1, 1, 2, 2)),
        offsets=(0, 0, 1, 0),
        sizes=(1, 1, 2, 2),
        strides=(1, 1, 2, 3),
    )
    return SliceDesc(**{**base, **changes})


def slice1_desc(**changes: Any) -> Slice1Desc:
    base = dict(
        input_tensor=T("FLOAT32", (1, 1, 4, 4)),
        output_tensor=T("FLOAT32", (1, 1, 2, 2)),
        input_window_offsets=(0, 0, 0, 1),
        input_window_sizes=(1, 1, 4, 3),
        input_window_strides=(1, 1, -2, 2),
    )
    return Slice1Desc(**{**base, **changes})


def join_desc(**changes: Any) -> JoinDesc:
    base = dict(
        input_tensors=(T("FLOAT32", (1, 1, 2, 3)), T("FLOAT32", (1, 1, 2, 4))),
        output_tensor=T("FLOAT32", (1, 1, 2, 7)),
        axis=3,
    )
    return JoinDesc(**{**base, **changes})


def padding_desc(**changes: Any) -> PaddingDesc:
    base = dict(
        input_tensor=T("FLOAT32", (1, 1, 4, 4)),
        output_tensor=T("FLOAT32", (1, 1, 8, 10)),
        padding_mode="CONSTANT",
        padding_value=9.0,
        start_padding=(0, 0, 1, 2),
        end_padding=(0, 0, 3, 4),
    )
    return PaddingDesc(**{**base, **changes})


def padding1_desc(**changes: Any) -> Padding1Desc:
    base = dict(
        input_tensor=T("INT64", (2, 3)),
        output_tensor=T("INT64", (3, 6)),
        padding_mode="CONSTANT",
        padding_value_data_type="INT64",
        padding_value=2**62 + 1,
        start_padding=(1, 1),
        end_padding=(0, 2),
    )
    return Padding1Desc(**{**base, **changes})


BASELINES: list[Callable[..., OperatorDesc]] = [
    slice_desc, slice1_desc, join_desc, padding_desc, padding1_desc
]


def test_baselines_are_valid() -> None:
    for make in BASELINES:
        make().validate("6_4")


# (builder, changes, field named in the error, text of the rule)
CASES: list[tuple[Callable[..., OperatorDesc], dict[str, Any], str, str]] = [
    # Buffer tensor desc rules
    (slice_desc, {"input_tensor": T("FLOAT32", (1, 0, 4, 4))}, "InputTensor.Sizes[1]",
     "at least 1"),
    (slice_desc, {"input_tensor": T("UNKNOWN", (1, 1, 4, 4))}, "InputTensor.DataType",
     "must be known"),
    (slice_desc, {"input_tensor": T("FLOAT32", (1,) * 9)}, "InputTensor.DimensionCount",
     "1 to 8 dimensions"),
    (slice_desc, {"input_tensor": T("FLOAT32", (1, 1, 4, 4), strides=(16, 16, 4))},
     "InputTensor.Strides", "DimensionCount (4) entries"),
    (slice_desc, {"input_tensor": T("FLOAT32", (1, 1, 4, 4), total_tensor_size_in_bytes=60)},
     "InputTensor.TotalTensorSizeInBytes", "DMLCalcBufferTensorSize = 64"),
    (slice_desc, {"input_tensor": T("FLOAT32", (1, 1, 4, 4),
                                    guaranteed_base_offset_alignment=24)},
     "InputTensor.GuaranteedBaseOffsetAlignment", "power of two"),
    (slice_desc, {"input_tensor": T("FLOAT32", (1, 1, 4, 4),
                                    guaranteed_base_offset_alignment=2)},
     "InputTensor.GuaranteedBaseOffsetAlignment", "at least the element size (4)"),
    (slice_desc, {"input_tensor": T("FLOAT32", (1, 1, 65536, 65536))}, "InputTensor.Sizes",
     "2^32 - 1 elements"),
    (slice_desc, {"output_tensor": T("FLOAT32", (1, 1, 2, 2), flags="OWNED_BY_DML")},
     "OutputTensor.Flags", "input tensors only"),
    # Shared tensor constraints
    (slice_desc, {"output_tensor": T("FLOAT16", (1, 1, 2, 2))}, "OutputTensor.DataType",
     "must equal InputTensor.DataType"),
    (slice1_desc, {"output_tensor": T("FLOAT32", (1, 2, 2))}, "OutputTensor.DimensionCount",
     "must equal InputTensor.DimensionCount"),
    (slice_desc, {"dimension_count": 3}, "Offsets", "DimensionCount (3) entries"),
    # SLICE
    (slice_desc, {"strides": (1, 1, 0, 3)}, "Strides[2]", "at least 1"),
    (slice_desc, {"sizes": (1, 1, 1, 2)}, "Sizes[2]", "must equal OutputTensor.Sizes"),
    (slice_desc, {"offsets": (0, 0, 2, 0)}, "Offsets[2]", "out-of-bounds read"),
    (slice_desc, {"offsets": (0, 0, 1, 4294967296)}, "Offsets[3]", "must fit in UINT"),
    # SLICE1
    (slice1_desc, {"input_window_sizes": (1, 1, 0, 3)}, "InputWindowSizes[2]",
     "must not be empty"),
    (slice1_desc, {"input_window_offsets": (0, 0, 1, 1)}, "InputWindowOffsets[2]",
     "inside the input"),
    (slice1_desc, {"input_window_strides": (1, 1, 0, 2)}, "InputWindowStrides[2]",
     "non-zero"),
    (slice1_desc, {"input_window_strides": (1, 1, -4, 2)}, "OutputTensor.Sizes[2]",
     "MaxCopiedElements"),
    (slice1_desc, {"input_window_strides": (1, 1, -2, 2**31)}, "InputWindowStrides[3]",
     "must fit in INT"),
    (slice1_desc, {"input_window_sizes": (1, 1, 4)}, "InputWindowSizes",
     "DimensionCount (4) entries"),
    # JOIN
    (join_desc, {"input_tensors": (), "output_tensor": T("FLOAT32", (1, 1, 2, 7))},
     "InputCount", "greater than 0"),
    (join_desc, {"input_count": 3}, "InputTensors", "InputCount (3) entries"),
    (join_desc, {"axis": 4}, "Axis", "[0, 3]"),
    (join_desc, {"input_tensors": (T("FLOAT32", (1, 1, 2, 3)), T("FLOAT32", (1, 1, 3, 4)))},
     "InputTensors[1].Sizes[2]", "sizes off the join axis"),
    (join_desc, {"output_tensor": T("FLOAT32", (1, 1, 2, 8))}, "OutputTensor.Sizes[3]",
     "sum of the inputs' sizes along Axis (7)"),
    (join_desc, {"input_tensors": (T("FLOAT32", (1, 1, 2, 3)), T("INT32", (1, 1, 2, 4)))},
     "InputTensors[1].DataType", "must equal InputTensors[0].DataType"),
    (join_desc, {"input_tensors": (T("FLOAT32", (1, 1, 2, 3)), T("FLOAT32", (1, 2, 4)))},
     "InputTensors[1].DimensionCount", "must equal InputTensors[0].DimensionCount"),
    # PADDING
    (padding_desc, {"output_tensor": T("FLOAT32", (1, 1, 8, 11))}, "OutputTensor.Sizes[3]",
     "InputTensor.Sizes + StartPadding + EndPadding"),
    (padding_desc, {"end_padding": (0, 0, 3)}, "EndPadding", "DimensionCount (4) entries"),
    (padding_desc, {"input_tensor": T("INT8", (1, 1, 4, 4)),
                    "output_tensor": T("INT8", (1, 1, 8, 10)), "padding_value": 200.0},
     "PaddingValue", "fit in DML_TENSOR_DATA_TYPE_INT8"),
    (padding_desc, {"input_tensor": T("UINT16", (1, 1, 4, 4)),
                    "output_tensor": T("UINT16", (1, 1, 8, 10)), "padding_value": float("nan")},
     "PaddingValue", "fit in DML_TENSOR_DATA_TYPE_UINT16"),
    (padding_desc, {"input_tensor": T("FLOAT32", (1, 1, 1, 4)),
                    "output_tensor": T("FLOAT32", (1, 1, 5, 10)), "padding_mode": "REFLECTION"},
     "InputTensor.Sizes[2]", "nothing to mirror"),
    # PADDING1
    (padding1_desc, {"padding_value_data_type": "INT32"}, "PaddingValueDataType",
     "must equal OutputTensor.DataType"),
    (padding1_desc, {"padding_value": 2**63}, "PaddingValue",
     "integer in DML_TENSOR_DATA_TYPE_INT64"),
    (padding1_desc, {"padding_value": 0.5}, "PaddingValue", "must be an integer"),
    (padding1_desc, {"input_tensor": T("FLOAT16", (2, 3)), "output_tensor": T("FLOAT16", (3, 6)),
                     "padding_value_data_type": "FLOAT16", "padding_value": 1e6},
     "PaddingValue", "overflows DML_TENSOR_DATA_TYPE_FLOAT16"),
    (padding1_desc, {"input_tensor": T("FLOAT32", (2, 3)), "output_tensor": T("FLOAT32", (3, 6)),
                     "padding_value_data_type": "FLOAT32", "padding_value": 10**400},
     "PaddingValue", "overflows DML_TENSOR_DATA_TYPE_FLOAT32"),
    # numbers that are not integers: int() truncated 1.9 to 1 without a word
    (slice_desc, {"offsets": (0, 0, 1.9, 0)}, "Offsets[2]", "must be an integer"),
    (slice_desc, {"strides": (1, 1, 2, True)}, "Strides[3]", "must be an integer"),
    (slice_desc, {"offsets": "0010"}, "Offsets", "must be a sequence of integers"),
    (slice_desc, {"input_tensor": T("FLOAT32", (1, 1, 4, 4.5))}, "InputTensor.Sizes[3]",
     "must be an integer"),
    (slice_desc, {"input_tensor": T("FLOAT32", None)}, "InputTensor.Sizes",
     "must be a sequence of integers"),
    (slice_desc, {"dimension_count": "4"}, "DimensionCount", "must be an integer"),
    (join_desc, {"axis": 3.0}, "Axis", "must be an integer"),
    (join_desc, {"input_tensors": None}, "InputTensors", "sequence of DML_BUFFER_TENSOR_DESC"),
    (padding_desc, {"input_tensor": T("UINT4", (1, 1, 4, 4)),
                    "output_tensor": T("UINT4", (1, 1, 8, 10))},
     "InputTensor.DataType", "DML_OPERATOR_PADDING supports"),  # was a KeyError
    # rules a review found no test for (each removed, the suite still passed)
    (slice_desc, {"input_tensor": T("FLOAT32", (1, 1, 1, 7)),
                  "output_tensor": T("FLOAT32", (1, 1, 1, 3)), "dimension_count": 3,
                  "offsets": (0, 0, 0), "sizes": (1, 1, 1), "strides": (1, 1, 1)},
     "DimensionCount", "must match the tensors' DimensionCount (4)"),  # seeds 000, 001, 004
    (slice_desc, {"input_tensor": T("FLOAT32", (1, 1, 4, 4), strides=(16, 16, 4, -1))},
     "InputTensor.Strides[3]", "strides are UINT"),
    (slice_desc, {"input_tensor": T("FLOAT32", (1, 1, 4, 4),
                                    total_tensor_size_in_bytes=2**64)},
     "InputTensor.TotalTensorSizeInBytes", "UINT64: at most 2^64 - 1"),  # said "at least 64"
    (slice_desc, {"input_tensor": T("FLOAT32", (1, 1, 4, 4), total_tensor_size_in_bytes=66)},
     "InputTensor.TotalTensorSizeInBytes", "multiple of 4"),  # DMLCalcBufferTensorSize's rule
    (slice_desc, {"input_tensor": T("FLOAT32", (1, 1, 4, 4), total_tensor_size_in_bytes=64.0)},
     "InputTensor.TotalTensorSizeInBytes", "must be an integer"),
    (slice_desc, {"input_tensor": T("FLOAT32", (1, 1, 4, 4),
                                    guaranteed_base_offset_alignment=16.0)},
     "InputTensor.GuaranteedBaseOffsetAlignment", "must be an integer"),
    (slice_desc, {"input_tensor": (1, 1, 4, 4)}, "InputTensor", "must be a DML_BUFFER_TENSOR_DESC"),
    (join_desc, {"axis": -1}, "Axis", "must fit in UINT"),
    (join_desc, {"input_count": 2**32}, "InputCount", "must fit in UINT"),
    # rules a conformance audit of the seeds found no test for (each check removed or
    # loosened, the DML test files still passed)
    # "This value must match the DimensionCount of the input and output tensors" (seeds
    # 000/001 for SLICE1; seed 003: "must be the same as ... InputTensor and OutputTensor")
    (slice1_desc, {"dimension_count": 3, "input_window_offsets": (0, 0, 0),
                   "input_window_sizes": (1, 1, 4), "input_window_strides": (1, 1, -2)},
     "DimensionCount", "must match the tensors' DimensionCount (4)"),
    (padding_desc, {"output_tensor": T("FLOAT32", (1, 1, 8, 4)), "dimension_count": 3,
                    "start_padding": (0, 0, 1), "end_padding": (0, 0, 3)},
     "DimensionCount", "must match the tensors' DimensionCount (4)"),
    (padding1_desc, {"output_tensor": T("INT64", (3, 3)), "dimension_count": 1,
                     "start_padding": (1,), "end_padding": (0,)},
     "DimensionCount", "must match the tensors' DimensionCount (2)"),
    # the offset and padding arrays are UINT: -1 is no offset (NumPy would read it from the end)
    (slice_desc, {"offsets": (0, 0, -1, 0)}, "Offsets[2]", "must fit in UINT"),
    (slice1_desc, {"input_window_offsets": (0, 0, 0, -1)}, "InputWindowOffsets[3]",
     "must fit in UINT"),
    (padding_desc, {"start_padding": (0, 0, -1, 2), "end_padding": (0, 0, 5, 4)},
     "StartPadding[2]", "must fit in UINT"),
    # a tensor's sizes and strides are UINT, and it has at least one dimension (a scalar is [1])
    (slice_desc, {"input_tensor": T("FLOAT32", (1, 1, 1, 2**32))}, "InputTensor.Sizes[3]",
     "fit in UINT"),
    (slice_desc, {"input_tensor": T("FLOAT32", (1, 1, 4, 4), strides=(16, 16, 4, 2**32))},
     "InputTensor.Strides[3]", "strides are UINT"),
    # GuaranteedBaseOffsetAlignment is a UINT (directml.h): 2^32, a power of two at least the
    # element size, was taken; -16 was told it must be a power of two
    (slice_desc, {"input_tensor": T("FLOAT32", (1, 1, 4, 4),
                                    guaranteed_base_offset_alignment=2**32)},
     "InputTensor.GuaranteedBaseOffsetAlignment", "is a UINT: 0 to 2^32 - 1"),
    (slice_desc, {"input_tensor": T("FLOAT32", (1, 1, 4, 4),
                                    guaranteed_base_offset_alignment=-16)},
     "InputTensor.GuaranteedBaseOffsetAlignment", "is a UINT: 0 to 2^32 - 1"),
    # "The total size of a buffer tensor may not exceed (2^32 - 1) elements"
    # (DML_BUFFER_TENSOR_DESC): 3 elements 2^31 apart span 2^32 + 1 elements of their buffer
    # (TotalTensorSizeInBytes 16 GiB + 4); only the product of the sizes was checked
    (slice_desc, {"input_tensor": T("FLOAT32", (1, 1, 1, 3), strides=(3, 3, 3, 2**31))},
     "InputTensor.Strides", "a buffer tensor spans at most 2^32 - 1"),
    (slice_desc, {"input_tensor": T("FLOAT32", (1, 1, 1, 3), strides=(3, 3, 3, 2**31))},
     "InputTensor.Strides", "spans 4294967297 elements"),
    (slice_desc, {"input_tensor": T("FLOAT32", ()), "output_tensor": T("FLOAT32", ()),
                  "offsets": (), "sizes": (), "strides": ()},
     "InputTensor.DimensionCount", "1 to 8 dimensions (DML_TENSOR_DIMENSION_COUNT_MAX1)"),
]


@pytest.mark.parametrize(
    "make, changes, field, rule",
    CASES,
    ids=[f"{make.__name__}-{field}-{rule[:24]}" for make, _, field, rule in CASES],
)
def test_rule_is_enforced(make, changes, field, rule) -> None:
    desc = make(**changes)
    with pytest.raises(DmlValidationError) as info:
        desc.validate("6_4")
    error = info.value
    assert error.field == field, str(error)
    assert rule in error.rule, str(error)
    assert error.operator == desc.name
    assert field in str(error) and rule in str(error)
    assert isinstance(error, DmlgraphError)


def test_a_strided_tensor_may_span_exactly_2_32_minus_1_elements() -> None:
    """The bound of "The total size of a buffer tensor may not exceed (2^32 - 1) elements":
    2 elements 2^32 - 2 apart span 2^32 - 1 of them, the most, and validate."""
    tensor = T("UINT8", (1, 1, 1, 2), strides=(2, 2, 2, 2**32 - 2))
    slice_desc(input_tensor=tensor, output_tensor=T("UINT8", (1, 1, 1, 1)),
               offsets=(0, 0, 0, 1), sizes=(1, 1, 1, 1), strides=(1, 1, 1, 1)).validate("6_4")
    assert tensor.total_tensor_size_in_bytes == 2**32  # 2^32 - 1 bytes, rounded up to 4


def test_padding_value_that_overflows_float32_is_rejected() -> None:
    with pytest.raises(DmlValidationError, match="32-bit FLOAT"):
        padding_desc(padding_value=1e39)


def test_padding_value_is_stored_as_the_float32_the_struct_holds() -> None:
    assert padding_desc(padding_value=0.1).padding_value == float.fromhex("0x1.99999ap-4")


@pytest.mark.parametrize("data_type, value, fill", [
    ("UINT8", -0.5, 0), ("INT8", -128.9, -128), ("INT8", 127.9, 127), ("UINT16", -0.99, 0),
])
def test_padding_value_is_truncated_toward_zero_before_its_range_is_checked(
    data_type: str, value: float, fill: int
) -> None:
    """Seed 003: a non-float tensor's value is truncated (10.6 becomes 10), so -0.5 fills a
    UINT8 with 0 and -128.9 an INT8 with -128: both fit. Rounding down would refuse them."""
    desc = padding_desc(input_tensor=T(data_type, (1, 1, 4, 4)),
                        output_tensor=T(data_type, (1, 1, 8, 10)), padding_value=value)
    desc.validate("2_1")
    assert desc.fill() == fill


# (builder, changes, the value the error must name): the value that breaks the rule, which is
# not always the one changed (the output's size, the window's offset)
VALUES: list[tuple[Callable[..., OperatorDesc], dict[str, Any], str, object]] = [
    (slice_desc, {"offsets": (0, 0, 2, 0)}, "Offsets[2]", 2),
    (slice1_desc, {"input_window_offsets": (0, 0, 1, 1)}, "InputWindowOffsets[2]", 1),
    (slice1_desc, {"input_window_strides": (1, 1, -4, 2)}, "OutputTensor.Sizes[2]", 2),
    (join_desc, {"output_tensor": T("FLOAT32", (1, 1, 2, 8))}, "OutputTensor.Sizes[3]", 8),
    (join_desc, {"axis": 4}, "Axis", 4),
    (padding_desc, {"output_tensor": T("FLOAT32", (1, 1, 8, 11))}, "OutputTensor.Sizes[3]", 11),
    (padding_desc, {"input_tensor": T("INT8", (1, 1, 4, 4)),
                    "output_tensor": T("INT8", (1, 1, 8, 10)), "padding_value": 200.0},
     "PaddingValue", 200.0),
    (padding1_desc, {"padding_value_data_type": "INT32"}, "PaddingValueDataType",
     "DML_TENSOR_DATA_TYPE_INT32"),
]


@pytest.mark.parametrize("make, changes, field, value", VALUES,
                         ids=[f"{m.__name__}-{f}" for m, _, f, _ in VALUES])
def test_error_names_the_offending_value(make, changes, field, value) -> None:
    with pytest.raises(DmlValidationError) as info:
        make(**changes).validate("6_4")
    assert (info.value.field, info.value.value) == (field, value)
    assert f"{field} = {value!r}:" in str(info.value)


def test_padding_value_ignored_outside_constant_mode() -> None:
    """Seed 003: the value "is ignored in other padding modes", so no range rule applies."""
    desc = padding_desc(
        input_tensor=T("INT8", (1, 1, 4, 4)),
        output_tensor=T("INT8", (1, 1, 8, 10)),
        padding_mode="EDGE",
        padding_value=1000.0,
    )
    desc.validate("6_4")


def test_reflection_allows_pads_larger_than_the_input() -> None:
    """Seed 003: StartPadding[i] >= InputTensor.Sizes[i] is valid for REFLECTION."""
    padding_desc(
        input_tensor=T("FLOAT32", (1, 1, 2, 2)),
        output_tensor=T("FLOAT32", (1, 1, 2 + 5 + 7, 2)),
        padding_mode="REFLECTION",
        start_padding=(0, 0, 5, 0),
        end_padding=(0, 0, 7, 0),
    ).validate("1_0")


@pytest.mark.parametrize("mode, level", [("SYMMETRIC", "3_0"), ("WRAP", "6_4")])
def test_symmetric_and_wrap_allow_pads_larger_than_the_input(mode: str, level: str) -> None:
    """Seed 003: "StartPadding[i] > InputTensor.Sizes[i] and EndPadding[i] >
    InputTensor.Sizes[i] are valid" for SYMMETRIC (WRAP is periodic too, DML_SPEC.md). Only
    a property test covered it, by chance of its draws."""
    padding_desc(
        input_tensor=T("FLOAT32", (1, 1, 2, 2)),
        output_tensor=T("FLOAT32", (1, 1, 2 + 5 + 7, 2)),
        padding_mode=mode,
        start_padding=(0, 0, 5, 0),
        end_padding=(0, 0, 7, 0),
    ).validate(level)


def test_slice1_output_need_not_take_every_reachable_element() -> None:
    """Seed 000/001: valid so long as 1 <= OutputSizes[i] <= MaxCopiedElements[i]."""
    slice1_desc(output_tensor=T("FLOAT32", (1, 1, 1, 1))).validate("2_1")


def test_descriptors_are_frozen() -> None:
    desc = slice1_desc()
    with pytest.raises(dataclasses.FrozenInstanceError):
        desc.dimension_count = 3  # type: ignore[misc]


@pytest.mark.parametrize("value", ["1.5", None, True, 10**400])
def test_a_padding_value_must_be_a_number_that_fits(value: object) -> None:
    with pytest.raises(DmlValidationError, match="PaddingValue"):
        padding_desc(padding_value=value)


def test_numpy_scalars_are_numbers() -> None:
    import numpy as np

    desc = padding1_desc(padding_value=np.int64(2**62 + 1))
    desc.validate("6_4")
    assert int(desc.scalar()) == 2**62 + 1
    floating = padding1_desc(input_tensor=T("FLOAT32", (2, 3)), output_tensor=T("FLOAT32", (3, 6)),
                             padding_value_data_type="FLOAT32", padding_value=np.float32(1.5))
    floating.validate("6_4")
    assert float(floating.scalar()) == 1.5
    sliced = slice_desc(offsets=tuple(np.int64(v) for v in (0, 0, 1, 0)))
    sliced.validate("6_4")
    assert all(type(v) is int for v in sliced.offsets)


def test_an_unknown_enum_value_is_a_dmlgraph_error_and_a_value_error() -> None:
    import numpy as np

    from dmlgraph.dml import FeatureLevel
    from dmlgraph.dml.enums import PaddingMode

    for parse, value in ((FeatureLevel.parse, "7_0"), (FeatureLevel.parse, None),
                         (PaddingMode.parse, "MIRROR"), (PaddingMode.parse, 9)):
        with pytest.raises(DmlgraphError) as info:
            parse(value)
        assert isinstance(info.value, ValueError)
    assert FeatureLevel.parse(np.int64(0x6400)) is FeatureLevel.L6_4


@pytest.mark.parametrize("make, field, value", [
    (lambda v: padding_desc(padding_mode=v), "DML_OPERATOR_PADDING.PaddingMode", 5),
    (lambda v: padding1_desc(padding_value_data_type=v),
     "DML_OPERATOR_PADDING1.PaddingValueDataType", 99),
    (lambda v: T(v, (4,)), "DML_BUFFER_TENSOR_DESC.DataType", 14),
    (lambda v: T("FLOAT32", (4,), flags=v), "DML_BUFFER_TENSOR_DESC.Flags", 2),
])
def test_an_enum_value_out_of_range_names_its_field(make, field, value) -> None:
    """The error said "99 is not a TensorDataType value", naming no field."""
    from dmlgraph.errors import EnumValueError

    with pytest.raises(EnumValueError, match=rf"^{field}: {value} is not a "):
        make(value)


# -- an output's elements lie at distinct addresses ------------------------------------------
def _offsets(sizes: tuple[int, ...], strides: tuple[int, ...]) -> list[int]:
    """Every element's address, by enumeration: the oracle of ``shared_element``."""
    return [sum(c * s for c, s in zip(coords, strides))
            for coords in itertools.product(*(range(n) for n in sizes))]


@pytest.mark.parametrize("make", [slice_desc, slice1_desc, join_desc, padding_desc])
def test_a_zero_output_stride_on_a_dimension_of_size_two_is_refused(make) -> None:
    """Overlapping writes were refused only by the executor, at the run; validate() passed."""
    output = make().output_tensor
    strides = list(output.effective_strides)
    axis = next(i for i, n in enumerate(output.sizes) if n > 1)
    strides[axis] = 0
    desc = make(output_tensor=T("FLOAT32", output.sizes, strides=tuple(strides)))
    with pytest.raises(DmlValidationError) as info:
        desc.validate("6_4")
    err = info.value
    assert (err.operator, err.field, err.value) == (desc.name, "OutputTensor.Strides", strides)
    assert "distinct addresses" in err.rule and f"Strides[{axis}] = 0" in err.rule
    assert err.min_level is None  # no feature level accepts it


def test_any_self_overlapping_output_is_refused_with_two_coordinates() -> None:
    """Not only a stride of 0: sizes [2, 2] strides [1, 1] write element 1 twice."""
    desc = slice_desc(output_tensor=T("FLOAT32", (1, 1, 2, 2), strides=(4, 4, 1, 1)))
    with pytest.raises(DmlValidationError, match=r"OutputTensor.Strides = \[4, 4, 1, 1\]: "
                       r"an output tensor's elements must lie at distinct addresses: "
                       r"coordinates \[0, 0, 0, 1\] and \[0, 0, 1, 0\] both address element 1$"):
        desc.validate("6_4")


def test_two_broadcast_axes_the_coordinates_and_the_stride_named_are_one_axis() -> None:
    """Strides 0 on axes of sizes 3 and 2: the coordinates moved along the smaller (axis 3,
    sorted by size) while the rule named Strides[2]; both name the first such axis now."""
    desc = slice_desc(output_tensor=T("FLOAT32", (1, 1, 3, 2), strides=(0, 0, 0, 0)),
                      sizes=(1, 1, 3, 2))
    with pytest.raises(DmlValidationError, match=r"coordinates \[0, 0, 0, 0\] and "
                       r"\[0, 0, 1, 0\] both address element 0 \(Strides\[2\] = 0 on a "
                       r"dimension of size 3: "):
        desc.validate("6_4")


def test_outputs_that_do_not_overlap_pass_nested_or_not() -> None:
    """A zero stride on a size-1 dimension, padded rows, and an interleaving that no sorting
    nests (sizes [3, 2] strides [2, 3]: addresses 0, 2, 4, 3, 5, 7) all stay valid."""
    for strides in [(0, 0, 2, 1), (9, 9, 3, 1), (1, 1, 2, 3)]:
        sizes = (1, 1, 2, 2) if strides[2] != 2 or strides[3] != 3 else (1, 1, 3, 2)
        out = T("FLOAT32", sizes, strides=strides)
        inner = sizes[2:]
        slice_desc(output_tensor=out, sizes=(1, 1, *inner), strides=(1, 1, 1, 1)).validate()
    # an input may broadcast: stride 0 on a dimension of size 4
    slice_desc(input_tensor=T("FLOAT32", (1, 1, 4, 4), strides=(0, 0, 0, 1))).validate()


def test_json_dxdispatch_and_the_executor_refuse_by_the_same_rule(tmp_path) -> None:
    """One rule: operator_from_json's descriptor fails validate(), a DxDispatch model its
    load, and the executor its run, each with validate()'s words."""
    from backends.numpy import execute_operator
    from dmlgraph.dml import operator_from_json
    from dmlgraph.dxdispatch import DxDispatchError, load_model, run_model

    body = {"InputTensor": {"DataType": "FLOAT32", "Sizes": [2, 2]},
            "OutputTensor": {"DataType": "FLOAT32", "Sizes": [2, 2], "Strides": [0, 1]},
            "DimensionCount": 2, "Offsets": [0, 0], "Sizes": [2, 2], "Strides": [1, 1]}
    desc = operator_from_json({"type": "SLICE", "desc": body})
    with pytest.raises(DmlValidationError) as info:
        desc.validate("6_4")
    rule = info.value.rule
    with pytest.raises(DmlValidationError) as run_info:
        execute_operator(desc, [np.zeros((2, 2), np.float32)])
    assert run_info.value.rule == rule
    model = {
        "resources": {n: {"initialValuesDataType": "FLOAT32",
                          "initialValues": {"value": 0, "valueCount": 4}} for n in ("in", "out")},
        "dispatchables": {"s": {"type": "SLICE", "desc": body}},
        "commands": [{"type": "dispatch", "dispatchable": "s",
                      "bindings": {"InputTensor": "in", "OutputTensor": "out"}}],
    }
    path = tmp_path / "model.json"
    path.write_text(json.dumps(model))
    with pytest.raises(DxDispatchError) as dx_info:
        run_model(load_model(path))
    assert str(dx_info.value) == f"{path}: dispatchable 's': {info.value}"


def test_an_interleaved_output_runs_as_numpy_places_it() -> None:
    """The interleaving validate() accepts runs, each element at its own address."""
    from backends.numpy import execute_operator

    desc = SliceDesc(input_tensor=T("INT32", (3, 2)), output_tensor=T("INT32", (3, 2),
                     strides=(2, 3)), offsets=(0, 0), sizes=(3, 2), strides=(1, 1))
    x = np.arange(1, 7, dtype=np.int32).reshape(3, 2)
    (out,) = execute_operator(desc, [x])
    expected = np.zeros(8, np.int32)
    np.add.at(expected, np.add.outer(np.arange(3) * 2, np.arange(2) * 3), x)
    np.testing.assert_array_equal(out, expected)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 6), st.integers(0, 14)), min_size=1, max_size=4))
def test_shared_element_is_exact(dims: list[tuple[int, int]]) -> None:
    """Against enumeration: a pair where addresses repeat, None where they do not."""
    sizes = tuple(n for n, _ in dims)
    strides = tuple(s for _, s in dims)
    offsets = _offsets(sizes, strides)
    found = shared_element(sizes, strides)
    assert (found is not None) == (len(set(offsets)) < len(offsets))
    if found is not None:
        assert found.decided and found.first != found.second
        for coords in (found.first, found.second):
            assert all(0 <= c < n for c, n in zip(coords, sizes))
            assert sum(c * s for c, s in zip(coords, strides)) == found.element
        # a broadcast is named where the strides hold one: the first axis of stride 0 that
        # has more than one element, the two coordinates apart along it alone
        broadcasts = [i for i, (n, s) in enumerate(dims) if n > 1 and s == 0]
        assert found.broadcast_axis == (broadcasts[0] if broadcasts else None)
        if broadcasts:
            apart = [i for i, (a, b) in enumerate(zip(found.first, found.second)) if a != b]
            assert apart == broadcasts[:1]


def test_a_search_out_of_steps_is_undecided_not_distinct() -> None:
    """Strides that do not nest and hide no collision near: out of steps, the answer is
    "undecided" (which validate() refuses), never None (distinct)."""
    assert shared_element((46000, 46000), (46001, 46000)) is None  # 46000 steps: distinct
    found = shared_element((46000, 46000), (46001, 46000), steps=1000)
    assert found is not None and not found.decided
