"""The NumPy backend: a bit-exact emulator of DirectML operators."""

from backends.numpy.dml_executor import ExecutionError, execute_operator

__all__ = ["ExecutionError", "execute_operator"]
