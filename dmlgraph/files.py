"""The user's output files, written whole or not at all: a write that fails (a full disk, a
size limit) leaves the file that was there as it was, never half of a new one."""

from __future__ import annotations

import errno
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def _read_umask() -> int:
    mask = os.umask(0o22)  # reading it means setting it: done once, at import
    os.umask(mask)
    return mask


_UMASK = _read_umask()


@contextmanager
def replacing(path: str | os.PathLike[str]) -> Iterator[Path]:
    """A path for the block to write ``path`` through: a temporary file beside it, which
    replaces it when the block ends and is removed when the block raises. A link is written
    through (the file it names is replaced), and the new file gets the old one's mode (else
    the umask's), not the temporary file's 0600. Where a temporary file cannot stand in for
    it (a file with other hard links, a folder that takes no new files), the file itself is
    written, as a plain write would. Errors name ``path``, never the temporary file. A name
    ending in a slash is a folder's, which no file is written as (``Path`` drops the slash,
    and ``-o out.json/`` made a file)."""
    if names_folder(path):
        raise IsADirectoryError(errno.EISDIR, "ends with a slash, so it names a folder; a file "
                                "is written here: drop the slash", str(path))
    target = Path(path).resolve() if Path(path).is_symlink() else Path(path)
    exists = target.exists()
    if exists and not target.is_dir() and not os.access(target, os.W_OK):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))
    if (exists and target.stat().st_nlink > 1) or not os.access(target.parent, os.W_OK):
        yield target
        return
    try:
        handle, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part",
                                        dir=target.parent)
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, str(path)) from None
    os.close(handle)
    temporary = Path(name)
    try:
        yield temporary
        if exists:
            shutil.copymode(target, temporary)
        else:
            os.chmod(temporary, 0o666 & ~_UMASK)
        os.replace(temporary, target)
    except OSError as exc:
        temporary.unlink(missing_ok=True)
        raise OSError(exc.errno, exc.strerror, str(path)) from None
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def names_folder(path: str | os.PathLike[str]) -> bool:
    """Whether the path as given ends with a separator: the user named a folder."""
    text = os.fspath(path)
    return isinstance(text, str) and text.endswith(("/", os.sep))


def write_text(path: str | os.PathLike[str], text: str) -> None:
    with replacing(path) as temporary:
        temporary.write_text(text, encoding="utf-8")


def write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    with replacing(path) as temporary:
        temporary.write_bytes(data)
