"""Types of the optional native copier (``_copies.c``); ``threads.py`` says what it does."""

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

MAX_THREADS: int
STREAM_BYTES: int
STREAMS: int
TUNE_CALLS: int

def address(array: np.ndarray, /) -> int: ...
def usable_cpus() -> int: ...
def limit_cpus(limit: int, /) -> None: ...
def called_off() -> int: ...

class Program:
    """Independent lists of (destination, source) copies, analysed once; each call's threads
    (at most ``threads``) take the lists one by one as they free up."""

    def __new__(
        cls,
        lists: Sequence[Sequence[Any]],
        stream: bool | None = None,
        roots: Sequence[tuple[int, int] | None] | None = None,
        slots: Sequence[int] | None = None,
        *,
        threads: int = ...,
    ) -> Program: ...
    def __call__(self, bases: Sequence[int | None] = ..., /) -> None: ...
    @property
    def nbytes(self) -> int: ...
    @property
    def threads(self) -> int: ...
    @property
    def lists(self) -> int: ...
    @property
    def streams(self) -> bool | None: ...

class Replay:
    """A plan's run in one call; None where Python's path must run it."""

    def __new__(
        cls,
        inputs: tuple[tuple[str, np.dtype, tuple[int, ...], int], ...],
        outputs: tuple[tuple[str, np.dtype, tuple[int, ...], int, Callable[[], np.ndarray]], ...],
        programs: tuple[Program, ...],
        bases: tuple[int, ...],
        lock: Any,
        probe: np.ndarray,
        limit: int = ...,
        keep: object = ...,
    ) -> Replay: ...
    def __call__(
        self, feeds: Mapping[str, np.ndarray], outputs: Mapping[str, np.ndarray] | None = None
    ) -> dict[str, np.ndarray] | None: ...
