"""The user's output files, written whole or not at all: a write that fails (a full disk, a
size limit) leaves the file that was there as it was, never half of a new one."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def replacing(path: str | os.PathLike[str]) -> Iterator[Path]:
    """A temporary path beside ``path`` for the block to write; it replaces ``path`` when
    the block ends, and is removed when it raises. The file gets the mode the old one had
    (else the umask's), not the temporary file's 0600."""
    target = Path(path)
    handle, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part",
                                    dir=target.parent)
    os.close(handle)
    temporary = Path(name)
    try:
        yield temporary
        if target.exists():
            shutil.copymode(target, temporary)
        else:
            os.chmod(temporary, 0o666 & ~_umask())
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def write_text(path: str | os.PathLike[str], text: str) -> None:
    with replacing(path) as temporary:
        temporary.write_text(text, encoding="utf-8")


def write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    with replacing(path) as temporary:
        temporary.write_bytes(data)


def _umask() -> int:
    mask = os.umask(0o22)  # reading it means setting it: put it back at once
    os.umask(mask)
    return mask
