"""The onnxruntime backend: original graphs, lowered graphs translated back to ONNX, files."""

from backends.onnxruntime.backend import OnnxruntimeBackend
from backends.onnxruntime.providers import PREFERENCE, select_providers
from backends.onnxruntime.translate import (
    NotExpressible,
    Untranslatable,
    translate,
    translate_graph,
)

__all__ = [
    "PREFERENCE",
    "NotExpressible",
    "OnnxruntimeBackend",
    "Untranslatable",
    "select_providers",
    "translate",
    "translate_graph",
]
