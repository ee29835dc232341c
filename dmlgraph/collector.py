"""The garbage collector paused while a graph is built.

Importing and lowering allocate many long-lived objects (nodes, tensor infos, protos) and free
few, so CPython's collector keeps walking a heap that only grows: a quarter of the time of a
100,000-node import went to collections that found nothing. Reference counting still frees
everything that is not in a cycle; the collector resumes when the outermost pause ends.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused() -> Iterator[None]:
    """Collector off for the block (nested blocks leave it to the outermost)."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
