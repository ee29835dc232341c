"""dmlgraph: lower ONNX Slice, Concat and Pad to DirectML descriptors, run them, check parity."""

from dmlgraph.errors import DmlgraphError, DmlValidationError
from dmlgraph.importer import load
from dmlgraph.ir import Graph, Node, OnnxOp, Provenance, TensorInfo
from dmlgraph.parity import check

__all__ = [
    "DmlgraphError",
    "DmlValidationError",
    "Graph",
    "Node",
    "OnnxOp",
    "Provenance",
    "TensorInfo",
    "check",
    "load",
]
