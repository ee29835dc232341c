"""Real torch exports (``models/torch``, made by its ``make_torch_models.py``) whose code reads
its input's sizes, exported with only the batch dynamic: the sizes they read are static dims
of a partly dynamic tensor, which folding makes constants. Oracles: torch's own (eager)
outputs, stored beside the inputs, and onnxruntime."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import dmlgraph
from backends import get_backend
from dmlgraph.parity import OPTIMIZER_DIVERGENCE, Verdict, check
from lowering import lower

TORCH = Path(__file__).resolve().parent.parent / "models" / "torch"
with np.load(TORCH / "torch_io.npz") as _data:
    IO = {key: _data[key] for key in _data.files}
CASES = sorted({tuple(key.split("__")[:2]) for key in IO})
MODELS = sorted({model for model, _ in CASES})


def test_every_model_has_its_inputs_and_torch_s_outputs() -> None:
    assert {p.stem for p in TORCH.glob("*.onnx")} == set(MODELS)
    assert all(f"{m}__{c}__eager__y" in IO for m, c in CASES)


@pytest.mark.parametrize("model, case", CASES)
def test_the_lowered_graph_computes_what_torch_does(model, case) -> None:
    lowered = lower(dmlgraph.load(TORCH / f"{model}.onnx"), "6_4")
    x, expected = IO[f"{model}__{case}__in__x"], IO[f"{model}__{case}__eager__y"]
    (y,) = get_backend("numpy").run(lowered, {"x": x}).values()
    assert y.shape == expected.shape and np.allclose(y, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("model", MODELS)
def test_no_size_the_model_reads_is_left_a_run_time_parameter(model) -> None:
    """Before partial folding, every Slice/Pad whose parameters came from ``x.shape[k]`` was a
    fallback "known only at run time" (its sizes depend on the shape of 'x', not static)."""
    lowered = lower(dmlgraph.load(TORCH / f"{model}.onnx"), "6_4")
    notes = [note for record in lowered.report() for note in record.notes]
    assert not [note for note in notes if "runtime parameter" in note], notes
    if model == "position_slice":  # pe[:, :x.shape[1]] is a constant: no Slice is left
        assert not [n for n in lowered.nodes if n.op_type == "Slice" or "SLICE" in n.op_type]


@pytest.mark.parametrize("model, case", CASES)
def test_check_holds_against_onnxruntime(model, case, onnx_run) -> None:
    """``reversed_index_select``: onnxruntime 1.32's optimized session makes the reversed
    index_select empty (GatherToSliceFusion), its plain one agrees with torch; ``check``
    names the optimizations rather than failing."""
    x = IO[f"{model}__{case}__in__x"]
    report = check(TORCH / f"{model}.onnx", inputs={"x": x})
    assert report.passed
    (output,) = report.comparisons[0].outputs
    optimized = onnx_run(TORCH / f"{model}.onnx", {"x": x})[0]
    if optimized.shape == IO[f"{model}__{case}__eager__y"].shape:
        assert output.verdict == Verdict.PASS
    else:
        assert model == "reversed_index_select"
        assert output.verdict == Verdict.KNOWN_DIVERGENCE
        assert output.divergences == (OPTIMIZER_DIVERGENCE,)
