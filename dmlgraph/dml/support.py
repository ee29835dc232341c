"""Per-feature-level tensor support of each operator, transcribed from the seeds' tables.

This is the one copy of the tables: descriptor validation reads it, and so does the lowering
when it legalizes ranks and data types. A row holds from its feature level until the next row
of the same operator. In every seed table the input and output rows are identical, so one row
covers all tensors of the operator.
"""

from __future__ import annotations

from dataclasses import dataclass

from dmlgraph.dml.enums import FeatureLevel, OperatorType, TensorDataType

_T = TensorDataType
SIX_TYPES = frozenset({_T.FLOAT32, _T.FLOAT16, _T.INT32, _T.INT16, _T.UINT32, _T.UINT16})
EIGHT_TYPES = SIX_TYPES | {_T.INT8, _T.UINT8}
ALL_ELEVEN = EIGHT_TYPES | {_T.FLOAT64, _T.INT64, _T.UINT64}
FLOAT_TYPES = frozenset({_T.FLOAT32, _T.FLOAT16})


@dataclass(frozen=True)
class SupportRow:
    """One row of a seed's "Tensor support" table."""

    since: FeatureLevel
    min_dims: int
    max_dims: int
    data_types: frozenset[TensorDataType]

    def accepts_dims(self, count: int) -> bool:
        return self.min_dims <= count <= self.max_dims

    def describe_dims(self) -> str:
        if self.min_dims == self.max_dims:
            return f"{self.min_dims}"
        return f"{self.min_dims} to {self.max_dims}"


_L = FeatureLevel
SUPPORT: dict[OperatorType, tuple[SupportRow, ...]] = {
    OperatorType.SLICE: (
        SupportRow(_L.L1_0, 4, 5, SIX_TYPES),
        SupportRow(_L.L2_1, 4, 5, EIGHT_TYPES),
        SupportRow(_L.L3_0, 1, 8, EIGHT_TYPES),
        SupportRow(_L.L4_1, 1, 8, ALL_ELEVEN),
    ),
    OperatorType.SLICE1: (
        SupportRow(_L.L2_1, 4, 5, EIGHT_TYPES),
        SupportRow(_L.L3_0, 1, 8, EIGHT_TYPES),
        SupportRow(_L.L4_1, 1, 8, ALL_ELEVEN),
    ),
    OperatorType.JOIN: (
        SupportRow(_L.L1_0, 4, 4, SIX_TYPES),
        SupportRow(_L.L2_1, 4, 4, EIGHT_TYPES),
        SupportRow(_L.L3_0, 4, 5, EIGHT_TYPES),
        SupportRow(_L.L4_1, 1, 8, ALL_ELEVEN),
    ),
    OperatorType.PADDING: (
        SupportRow(_L.L1_0, 4, 5, FLOAT_TYPES),
        SupportRow(_L.L2_1, 4, 5, EIGHT_TYPES),
        SupportRow(_L.L3_1, 1, 8, EIGHT_TYPES),
        SupportRow(_L.L5_0, 1, 8, ALL_ELEVEN),
    ),
    OperatorType.PADDING1: (
        SupportRow(_L.L5_0, 1, 8, ALL_ELEVEN),
    ),
}


def support_row(operator: OperatorType, level: FeatureLevel) -> SupportRow | None:
    """The row in force at ``level``, or None when the operator does not exist there yet."""
    current = None
    for row in SUPPORT[operator]:
        if row.since <= level:
            current = row
    return current


def introduced(operator: OperatorType) -> FeatureLevel:
    """The feature level that introduced the operator."""
    return SUPPORT[operator][0].since


def lowest_level(
    operator: OperatorType, dimension_count: int, data_type: TensorDataType
) -> FeatureLevel | None:
    """The lowest feature level whose row accepts this rank and type, or None if none does."""
    for level in FeatureLevel:
        row = support_row(operator, level)
        if row and row.accepts_dims(dimension_count) and data_type in row.data_types:
            return level
    return None
