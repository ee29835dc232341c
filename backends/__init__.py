"""Backends: execute a graph (lowered or not) and say what ran where.

``get_backend(name, **options)`` returns an object with ``run(graph, feeds) -> dict`` and
``execute(graph, feeds) -> RunResult`` (outputs plus a ``RunRecord``).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

from backends.base import Backend, BackendError, NodeRun, RunRecord, RunResult


def _numpy(**options: Any) -> Backend:
    from backends.numpy.backend import NumpyBackend

    return _made("numpy", NumpyBackend, options)


def _onnxruntime(**options: Any) -> Backend:
    from backends.onnxruntime.backend import OnnxruntimeBackend

    return _made("onnxruntime", OnnxruntimeBackend, options)


def _made(name: str, backend: Callable[..., Backend], options: Mapping[str, Any]) -> Backend:
    """The backend made with ``options``; an option its constructor does not take is named
    with those it does (the constructor's TypeError said "unexpected keyword argument")."""
    signature = inspect.signature(backend)
    try:
        signature.bind(**options)
    except TypeError as exc:
        takes = ", ".join(signature.parameters) or "none"
        raise BackendError(f"the {name} backend's options are {takes}: {exc}") from None
    return backend(**options)


#: Backend name -> factory; options go to the backend's constructor.
BACKENDS: Mapping[str, Callable[..., Backend]] = {"numpy": _numpy, "onnxruntime": _onnxruntime}


def get_backend(name: str, **options: Any) -> Backend:
    """The backend called ``name`` ("numpy" or "onnxruntime")."""
    factory = BACKENDS.get(name) if isinstance(name, str) else None
    if factory is None:
        raise BackendError(f"unknown backend {name!r} (known: {', '.join(BACKENDS)})")
    return factory(**options)


__all__ = [
    "BACKENDS",
    "Backend",
    "BackendError",
    "NodeRun",
    "RunRecord",
    "RunResult",
    "get_backend",
]
