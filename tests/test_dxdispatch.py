"""Running DxDispatch models: the two shipped examples and the command line around them."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from dmlgraph.cli import main
from dmlgraph.dxdispatch import DxDispatchError, load_model, run_model

DATA = Path(__file__).parent.parent / "models" / "dxdispatch"


def test_join_example_prints_the_joined_buffer() -> None:
    """A = 1..10, B = 100, 115, 130. JOIN reads A[0:3], B[0:2] (its desc says 2 elements) and
    A from element 4 for 5 elements: 1 2 3 | 100 115 | 5 6 7 8 9 (worked out by hand)."""
    model = run_model(load_model(DATA / "example_join.json"))
    assert model.printed == ["Resource 'Out': 1, 2, 3, 100, 115, 5, 6, 7, 8, 9"]


def test_slice_example_prints_the_slice() -> None:
    """Rows 1..3 and columns 1, 3 of the 5x5 grid holding 1..25."""
    model = run_model(load_model(DATA / "example_slice.json"))
    assert model.printed == ["Resource 'output': 7, 9, 12, 14, 17, 19"]


def test_cli_runs_example_and_saves(tmp_path, capsys) -> None:
    out = tmp_path / "res.npz"
    assert main(["dxdispatch", str(DATA / "example_join.json"), "-o", str(out)]) == 0
    assert "Resource 'Out': 1, 2, 3, 100, 115, 5, 6, 7, 8, 9" in capsys.readouterr().out
    saved = np.load(out)
    assert saved["A"].tolist() == list(range(1, 11))


def test_cli_feature_level_too_low_is_one_line_exit_2(capsys) -> None:
    code = main(["dxdispatch", str(DATA / "example_join.json"), "--feature-level", "3.0"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and "accepted from DML_FEATURE_LEVEL_4_1" in err


@pytest.mark.parametrize("edit, message", [
    (lambda m: m["commands"][0]["bindings"].pop("OutputTensor"), "nothing bound"),
    (lambda m: m["commands"][0]["bindings"].update(InputTensors=["A", "B"]),
     "requires 3 resources, but 2 were bound"),
    (lambda m: m["commands"].append({"type": "print", "resource": "Nope"}), "unknown resource"),
    (lambda m: m["dispatchables"]["join"]["desc"].update(Axis=1), "Axis"),
    (lambda m: m.pop("commands"), "no 'commands'"),
    (lambda m: m["resources"]["A"].update(initialValuesDataType="FLOAT128"), "FLOAT128"),
])
def test_bad_models_fail_clearly(tmp_path, capsys, edit, message) -> None:
    model = json.loads((DATA / "example_join.json").read_text())
    edit(model)
    path = tmp_path / "model.json"
    path.write_text(json.dumps(model))
    with pytest.raises(DxDispatchError, match=message):
        run_model(load_model(path))
    assert main(["dxdispatch", str(path)]) == 2
    assert message in capsys.readouterr().err


def test_truncated_json_is_exit_2(tmp_path, capsys) -> None:
    path = tmp_path / "cut.json"
    path.write_text((DATA / "example_slice.json").read_text()[:200])
    assert main(["dxdispatch", str(path)]) == 2
    assert "cannot read a JSON model" in capsys.readouterr().err


def test_sequence_accumulates_in_the_element_type() -> None:
    """valueDelta is added step by step in float32: 0.1 ten times is not 1.0 in float32."""
    model = load_model({
        "resources": {"r": {"initialValuesDataType": "FLOAT32",
                            "initialValues": {"valueCount": 11, "valueStart": 0,
                                              "valueDelta": 0.1}}},
        "dispatchables": {}, "commands": []})
    expected = np.float32(0)
    for _ in range(10):
        expected = np.float32(expected + np.float32(0.1))
    assert model.resources["r"].values()[-1] == expected


def test_console_script_is_installed() -> None:
    beside = Path(sys.executable).parent / "dmlgraph"  # the venv running the tests
    exe = str(beside) if beside.exists() else shutil.which("dmlgraph")
    assert exe is not None, "pip install -e . should install the dmlgraph console script"
    done = subprocess.run([exe, "dxdispatch", str(DATA / "example_slice.json")],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Resource 'output': 7, 9, 12, 14, 17, 19"
