"""Field schemas of operator descriptors, as DxDispatch's DirectMLSchema.h describes them.

Each descriptor class lists its fields once, in directml.h order, with a kind. Generic
validation of common kinds, JSON reading and writing, and visualization are derived from the
schema instead of being written per operator.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class FieldKind(enum.Enum):
    INPUT_TENSOR = "input tensor"
    OUTPUT_TENSOR = "output tensor"
    INPUT_TENSOR_ARRAY = "input tensor array"
    COUNT = "count"  # DimensionCount / InputCount: sizes the arrays named by counted_by
    UINT = "uint"
    UINT_ARRAY = "uint array"
    INT_ARRAY = "int array"
    FLOAT = "float"
    ENUM = "enum"
    SCALAR_UNION = "scalar union"  # a DML_SCALAR_UNION read through its sibling data type


@dataclass(frozen=True)
class FieldSpec:
    """One C field: its exact name, the dataclass attribute, its kind and its relations."""

    c_name: str
    attr: str
    kind: FieldKind
    enum_name: str | None = None  # for ENUM: the enums.py class name
    counted_by: str | None = None  # for arrays: the c_name of the COUNT field sizing them
    type_field: str | None = None  # for SCALAR_UNION: the c_name of its data type field

    @property
    def is_tensor(self) -> bool:
        return self.kind in (
            FieldKind.INPUT_TENSOR,
            FieldKind.OUTPUT_TENSOR,
            FieldKind.INPUT_TENSOR_ARRAY,
        )

    @property
    def is_array(self) -> bool:
        return self.kind in (
            FieldKind.UINT_ARRAY,
            FieldKind.INT_ARRAY,
            FieldKind.INPUT_TENSOR_ARRAY,
        )
