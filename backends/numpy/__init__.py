"""The NumPy backend: a bit-exact emulator of DirectML operators, and the graph runner on it."""

from backends.numpy.backend import NumpyBackend
from backends.numpy.dml_executor import ExecutionError, execute_operator
from backends.numpy.fallback import FALLBACKS, OnnxruntimeFallback, ReferenceFallback

__all__ = [
    "FALLBACKS",
    "ExecutionError",
    "NumpyBackend",
    "OnnxruntimeFallback",
    "ReferenceFallback",
    "execute_operator",
]
