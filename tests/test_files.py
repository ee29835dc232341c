"""Output files written whole or not at all (dmlgraph/files.py): what a plain write did for
links and modes, kept; what it did wrong on failure (a truncated file), not."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dmlgraph import files


def test_a_new_file_gets_the_umasks_mode_and_an_old_one_keeps_its_own(tmp_path: Path) -> None:
    mask = os.umask(0o022)
    os.umask(mask)
    files.write_text(tmp_path / "new.txt", "x")
    assert (tmp_path / "new.txt").stat().st_mode & 0o777 == 0o666 & ~mask
    (tmp_path / "old.txt").write_text("old")
    os.chmod(tmp_path / "old.txt", 0o640)
    files.write_text(tmp_path / "old.txt", "new")
    assert (tmp_path / "old.txt").read_text() == "new"
    assert (tmp_path / "old.txt").stat().st_mode & 0o777 == 0o640


def test_a_link_is_written_through_and_a_hard_link_sees_the_new_content(tmp_path: Path) -> None:
    """Replacing the link itself left the file it names as it was."""
    (tmp_path / "real.txt").write_text("old")
    (tmp_path / "link.txt").symlink_to(tmp_path / "real.txt")
    files.write_text(tmp_path / "link.txt", "new")
    assert (tmp_path / "link.txt").is_symlink()
    assert (tmp_path / "real.txt").read_text() == "new"
    os.link(tmp_path / "real.txt", tmp_path / "hard.txt")
    files.write_text(tmp_path / "hard.txt", "newer")
    assert (tmp_path / "real.txt").read_text() == "newer"


def test_a_failed_write_keeps_the_old_file_and_names_it_not_the_temporary(
    tmp_path: Path, monkeypatch
) -> None:
    target = tmp_path / "out.json"
    target.write_text("old")

    def full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full)
    with pytest.raises(OSError) as info:
        files.write_text(target, "new")
    assert info.value.filename == str(target)
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]
