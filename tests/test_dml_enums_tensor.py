"""Enum values of directml.h, FeatureLevel spellings, and DML_BUFFER_TENSOR_DESC sizes."""

from __future__ import annotations

import pytest

from dmlgraph.dml import (
    BufferTensorDesc,
    FeatureLevel,
    OperatorType,
    PaddingMode,
    TensorDataType,
    TensorFlags,
    calc_buffer_tensor_size,
)
from dmlgraph.dml import enums
from dmlgraph.dml.enums import ExecutionFlags, GraphEdgeType, TensorType

# Transcribed from directml.h (DML_SPEC.md section 1).
DIRECTML_H = {
    FeatureLevel: {"L1_0": 0x1000, "L2_0": 0x2000, "L2_1": 0x2100, "L3_0": 0x3000,
                   "L3_1": 0x3100, "L4_0": 0x4000, "L4_1": 0x4100, "L5_0": 0x5000,
                   "L5_1": 0x5100, "L5_2": 0x5200, "L6_0": 0x6000, "L6_1": 0x6100,
                   "L6_2": 0x6200, "L6_3": 0x6300, "L6_4": 0x6400},
    TensorDataType: {"UNKNOWN": 0, "FLOAT32": 1, "FLOAT16": 2, "UINT32": 3, "UINT16": 4,
                     "UINT8": 5, "INT32": 6, "INT16": 7, "INT8": 8, "FLOAT64": 9,
                     "UINT64": 10, "INT64": 11, "UINT4": 12, "INT4": 13},
    PaddingMode: {"CONSTANT": 0, "EDGE": 1, "REFLECTION": 2, "SYMMETRIC": 3, "WRAP": 4},
    TensorFlags: {"NONE": 0, "OWNED_BY_DML": 1},
    GraphEdgeType: {"INVALID": 0, "INPUT": 1, "OUTPUT": 2, "INTERMEDIATE": 3},
    TensorType: {"INVALID": 0, "BUFFER": 1},
    ExecutionFlags: {"NONE": 0, "ALLOW_HALF_PRECISION_COMPUTATION": 1,
                     "DISABLE_META_COMMANDS": 2, "DESCRIPTORS_VOLATILE": 4},
    OperatorType: {"INVALID": 0, "ELEMENT_WISE_IDENTITY": 1, "SLICE": 60, "CAST": 61, "SPLIT": 62,
                   "JOIN": 63, "PADDING": 64, "GATHER": 67, "FILL_VALUE_CONSTANT": 103,
                   "SLICE1": 111, "PADDING1": 155},
}


@pytest.mark.parametrize("enum_cls", list(DIRECTML_H), ids=lambda c: c.__name__)
def test_enum_values_match_directml_h(enum_cls) -> None:
    for name, value in DIRECTML_H[enum_cls].items():
        assert enum_cls[name] == value


def test_constants_match_directml_h() -> None:
    """DML_TENSOR_DIMENSION_COUNT_MAX (before FL 3.0), ..._MAX1, and the buffer alignment."""
    assert enums.TENSOR_DIMENSION_COUNT_MAX == 5
    assert enums.TENSOR_DIMENSION_COUNT_MAX1 == 8
    assert enums.MINIMUM_BUFFER_TENSOR_ALIGNMENT == 16


def test_full_names() -> None:
    assert TensorDataType.FLOAT16.full_name == "DML_TENSOR_DATA_TYPE_FLOAT16"
    assert PaddingMode.WRAP.full_name == "DML_PADDING_MODE_WRAP"
    assert OperatorType.SLICE1.full_name == "DML_OPERATOR_SLICE1"
    assert TensorFlags.OWNED_BY_DML.full_name == "DML_TENSOR_FLAG_OWNED_BY_DML"
    assert FeatureLevel.L6_4.full_name == "DML_FEATURE_LEVEL_6_4"


@pytest.mark.parametrize("spelling", ["6_4", "6.4", "DML_FEATURE_LEVEL_6_4", 0x6400, "0x6400",
                                      " dml_feature_level_6_4 ", FeatureLevel.L6_4])
def test_feature_level_spellings(spelling) -> None:
    assert FeatureLevel.parse(spelling) is FeatureLevel.L6_4


@pytest.mark.parametrize("bad", ["7_0", "6", "6.4.1", 0x6500, "", None, 6.4, True])
def test_feature_level_rejects_unknown(bad) -> None:
    with pytest.raises(ValueError, match="feature level|FeatureLevel"):
        FeatureLevel.parse(bad)


def test_a_float_feature_level_is_told_to_be_a_string() -> None:
    """lower(graph, 2.1) said only "unknown DirectML feature level 2.1", though "2.1" works."""
    with pytest.raises(ValueError, match=r"level 2\.1 \(known: .*; write a level as a string, "
                                         r"'2\.1'\)"):
        FeatureLevel.parse(2.1)


def test_feature_levels_are_ordered() -> None:
    assert FeatureLevel.L2_1 < FeatureLevel.L3_0 < FeatureLevel.L6_4


def test_enum_parse_full_and_suffix() -> None:
    assert PaddingMode.parse("DML_PADDING_MODE_REFLECTION") is PaddingMode.REFLECTION
    assert PaddingMode.parse("REFLECTION") is PaddingMode.REFLECTION
    with pytest.raises(ValueError):
        PaddingMode.parse("MIRROR")


# -- DMLCalcBufferTensorSize -----------------------------------------------------------------
def test_calc_size_spec_example() -> None:
    """DML_SPEC.md: FLOAT32 sizes [1,1,2,3] strides [6,6,3,1] -> 24."""
    assert calc_buffer_tensor_size(TensorDataType.FLOAT32, [1, 1, 2, 3], [6, 6, 3, 1]) == 24


@pytest.mark.parametrize("data_type, sizes, strides, expected", [
    ("FLOAT32", [2, 3], None, 24),
    ("FLOAT16", [3], None, 8),        # 6 bytes rounded up to 4
    ("UINT8", [5], None, 8),
    ("INT64", [2, 2], None, 32),
    ("FLOAT32", [4, 4], [0, 1], 16),  # broadcast rows: only 4 elements addressed
    ("FLOAT16", [2, 2], [1, 2], 8),   # transposed: last index 3 -> 4 elements -> 8 bytes
    ("UINT8", [1], [0], 4),
])
def test_calc_size_cases(data_type, sizes, strides, expected) -> None:
    assert calc_buffer_tensor_size(TensorDataType.parse(data_type), sizes, strides) == expected


def test_total_size_defaults_to_the_calc_rule_and_may_be_larger() -> None:
    desc = BufferTensorDesc("FLOAT16", (1, 3))
    assert desc.total_tensor_size_in_bytes == 8
    bigger = BufferTensorDesc("FLOAT16", (1, 3), total_tensor_size_in_bytes=64)
    bigger.validate("TEST", "Tensor")


def test_packed_detection() -> None:
    assert BufferTensorDesc("FLOAT32", (2, 3)).is_packed
    assert BufferTensorDesc("FLOAT32", (2, 3), strides=(3, 1)).is_packed
    assert BufferTensorDesc("FLOAT32", (1, 3), strides=(99, 1)).is_packed  # size-1 dim
    assert not BufferTensorDesc("FLOAT32", (2, 3), strides=(1, 2)).is_packed
    assert not BufferTensorDesc("FLOAT32", (2, 3), strides=(0, 1)).is_packed
