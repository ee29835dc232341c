"""The DirectML object model: enums, tensor descs, operator descriptors, support tables, JSON."""

from dmlgraph.dml.enums import (
    FeatureLevel,
    GraphEdgeType,
    OperatorType,
    PaddingMode,
    TensorDataType,
    TensorFlags,
)
from dmlgraph.dml.operators import (
    DESCRIPTOR_CLASSES,
    JoinDesc,
    OperatorDesc,
    Padding1Desc,
    PaddingDesc,
    Slice1Desc,
    SliceDesc,
)
from dmlgraph.dml.jsonio import operator_from_json, operator_to_json
from dmlgraph.dml.support import SUPPORT, SupportRow, lowest_level, support_row
from dmlgraph.dml.tensor import BufferTensorDesc, calc_buffer_tensor_size, packed_strides
from dmlgraph.errors import DmlValidationError

__all__ = [
    "DESCRIPTOR_CLASSES",
    "SUPPORT",
    "BufferTensorDesc",
    "DmlValidationError",
    "FeatureLevel",
    "GraphEdgeType",
    "JoinDesc",
    "OperatorDesc",
    "OperatorType",
    "Padding1Desc",
    "PaddingDesc",
    "PaddingMode",
    "Slice1Desc",
    "SliceDesc",
    "SupportRow",
    "TensorDataType",
    "TensorFlags",
    "calc_buffer_tensor_size",
    "lowest_level",
    "operator_from_json",
    "operator_to_json",
    "packed_strides",
    "support_row",
]
