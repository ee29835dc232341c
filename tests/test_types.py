"""The packages type-check: mypy, with the settings of ``[tool.mypy]`` in pyproject.toml.

"Type hints throughout" is only true while something reads them: mypy found a plan's copy
lists handed to NumPy with the native copier's lockstep groups still in them
(``test_plan.test_lockstep_groups_the_native_copier_cannot_take_run_through_numpy``).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from mypy import api

ROOT = Path(__file__).resolve().parent.parent


def test_the_packages_type_check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # the config's ``files`` are relative to the repository root
    stdout, stderr, status = api.run(["--cache-dir", str(tmp_path / "cache")])
    assert status == 0, stdout + stderr
