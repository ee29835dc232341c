"""Each row of each seed's "Tensor support" table, tested at its level and the level below.

The rows below are transcribed again, by hand, from the seed pages (SLICE: seed 004, SLICE1:
seeds 000/001, JOIN: seed 002, PADDING: seed 003; PADDING1 from DML_SPEC.md section 4), so the
descriptor model's own table is checked against an independent copy.
"""

from __future__ import annotations

import pytest

from dmlgraph.dml import (
    BufferTensorDesc,
    DmlValidationError,
    FeatureLevel,
    JoinDesc,
    OperatorDesc,
    Padding1Desc,
    PaddingDesc,
    Slice1Desc,
    SliceDesc,
)

SIX = ["FLOAT32", "FLOAT16", "INT32", "INT16", "UINT32", "UINT16"]
EIGHT = SIX + ["INT8", "UINT8"]
ELEVEN = EIGHT + ["FLOAT64", "INT64", "UINT64"]
ALL_LEVELS = list(FeatureLevel)

# operator -> [(level, supported dimension counts, supported types)], oldest first
SEED_TABLES: dict[str, list[tuple[str, range, list[str]]]] = {
    "SLICE": [("1_0", range(4, 6), SIX), ("2_1", range(4, 6), EIGHT),
              ("3_0", range(1, 9), EIGHT), ("4_1", range(1, 9), ELEVEN)],
    "SLICE1": [("2_1", range(4, 6), EIGHT), ("3_0", range(1, 9), EIGHT),
               ("4_1", range(1, 9), ELEVEN)],
    "JOIN": [("1_0", range(4, 5), SIX), ("2_1", range(4, 5), EIGHT),
             ("3_0", range(4, 6), EIGHT), ("4_1", range(1, 9), ELEVEN)],
    "PADDING": [("1_0", range(4, 6), ["FLOAT32", "FLOAT16"]), ("2_1", range(4, 6), EIGHT),
                ("3_1", range(1, 9), EIGHT), ("5_0", range(1, 9), ELEVEN)],
    "PADDING1": [("5_0", range(1, 9), ELEVEN)],
}


def make(op: str, data_type: str, rank: int) -> OperatorDesc:
    """A small valid descriptor of ``op`` with tensors of ``data_type`` and ``rank``."""
    sizes = (2,) * rank
    t = BufferTensorDesc(data_type, sizes)
    if op == "SLICE":
        return SliceDesc(input_tensor=t, output_tensor=BufferTensorDesc(data_type, (1,) * rank),
                         offsets=(1,) * rank, sizes=(1,) * rank, strides=(1,) * rank)
    if op == "SLICE1":
        return Slice1Desc(input_tensor=t, output_tensor=BufferTensorDesc(data_type, (1,) * rank),
                          input_window_offsets=(0,) * rank, input_window_sizes=(2,) * rank,
                          input_window_strides=(-1,) * rank)
    if op == "JOIN":
        out = BufferTensorDesc(data_type, (4,) + sizes[1:])
        return JoinDesc(input_tensors=(t, t), output_tensor=out, axis=0)
    out = BufferTensorDesc(data_type, (3,) * rank)
    common = dict(input_tensor=t, output_tensor=out, padding_mode="EDGE",
                  start_padding=(1,) * rank, end_padding=(0,) * rank)
    if op == "PADDING":
        return PaddingDesc(**common)
    return Padding1Desc(padding_value_data_type=data_type, **common)


def accepted(desc: OperatorDesc, level: FeatureLevel) -> bool:
    try:
        desc.validate(level)
    except DmlValidationError:
        return False
    return True


def expected_at(op: str, level: FeatureLevel, data_type: str, rank: int) -> bool:
    """What the transcribed table says about (type, rank) at ``level``."""
    rows = [row for row in SEED_TABLES[op] if FeatureLevel.parse(row[0]) <= level]
    if not rows:
        return False
    _, ranks, types = rows[-1]
    return rank in ranks and data_type in types


ROWS = [(op, i) for op, rows in SEED_TABLES.items() for i in range(len(rows))]


@pytest.mark.parametrize("op, index", ROWS, ids=[f"{op}-{SEED_TABLES[op][i][0]}" for op, i in ROWS])
def test_row_at_its_level_and_the_level_below(op: str, index: int) -> None:
    level_name, ranks, types = SEED_TABLES[op][index]
    level = FeatureLevel.parse(level_name)
    below = ALL_LEVELS[ALL_LEVELS.index(level) - 1] if level != FeatureLevel.L1_0 else None
    for data_type in ELEVEN:
        for rank in range(1, 9):
            desc = make(op, data_type, rank)
            assert accepted(desc, level) == (rank in ranks and data_type in types), (
                op, level_name, data_type, rank)
            if below is not None:
                assert accepted(desc, below) == expected_at(op, below, data_type, rank), (
                    op, below.short, data_type, rank)


@pytest.mark.parametrize("op", list(SEED_TABLES))
def test_every_level_matches_the_table(op: str) -> None:
    for level in ALL_LEVELS:
        for data_type in ("FLOAT32", "INT8", "INT64"):
            for rank in (1, 3, 4, 5, 6, 8):
                desc = make(op, data_type, rank)
                assert accepted(desc, level) == expected_at(op, level, data_type, rank), (
                    op, level.short, data_type, rank)


def test_rejection_names_the_lowest_accepting_level() -> None:
    desc = make("SLICE", "INT64", 3)
    with pytest.raises(DmlValidationError) as info:
        desc.validate("3_0")
    assert info.value.field == "InputTensor.DataType"
    assert info.value.min_level == "DML_FEATURE_LEVEL_4_1"
    assert "accepted from DML_FEATURE_LEVEL_4_1" in str(info.value)


def test_rejection_weighs_every_requirement_for_the_accepting_level() -> None:
    """3-D needs FL 3.0 for SLICE1, INT64 needs FL 4.1: together FL 4.1."""
    desc = make("SLICE1", "INT64", 3)
    with pytest.raises(DmlValidationError) as info:
        desc.validate("2_1")
    assert info.value.min_level == "DML_FEATURE_LEVEL_4_1"
    # each broken requirement names its field and value, not only the first: the type's
    # clause said "also DML_OPERATOR_SLICE1 supports FLOAT16, ..." without naming INT64
    assert info.value.field == "InputTensor.DimensionCount" and info.value.value == 3
    assert "supports 4 to 5 dimensions" in info.value.rule
    assert ("; also InputTensor.DataType = 'DML_TENSOR_DATA_TYPE_INT64': DML_OPERATOR_SLICE1 "
            "supports FLOAT16") in info.value.rule
    assert info.value.rule.count("; also") == 1  # the output's same rules are not repeated


def test_wrap_needs_fl_6_4() -> None:
    desc = PaddingDesc(input_tensor=BufferTensorDesc("FLOAT32", (3,)),
                       output_tensor=BufferTensorDesc("FLOAT32", (5,)), padding_mode="WRAP",
                       start_padding=(1,), end_padding=(1,))
    desc.validate("6_4")
    with pytest.raises(DmlValidationError) as info:
        desc.validate("6_3")
    assert info.value.field == "PaddingMode"
    assert info.value.min_level == "DML_FEATURE_LEVEL_6_4"


def test_operator_introduction_levels() -> None:
    slice1 = make("SLICE1", "FLOAT32", 4)
    with pytest.raises(DmlValidationError, match="SLICE1 needs DML_FEATURE_LEVEL_2_1"):
        slice1.validate("2_0")
    padding1 = make("PADDING1", "FLOAT32", 4)
    with pytest.raises(DmlValidationError, match="PADDING1 needs DML_FEATURE_LEVEL_5_0"):
        padding1.validate("4_1")


def test_no_level_accepts_nine_dimensions() -> None:
    with pytest.raises(DmlValidationError, match="1 to 8 dimensions") as info:
        make("SLICE", "FLOAT32", 9).validate("6_4")
    assert info.value.min_level is None
