"""ONNX's own conformance cases (``onnx.backend.test.case.node``: the models and expected
outputs behind onnx's backend test data) for the ops dmlgraph lowers and the control flow it
runs itself: each is loaded, lowered at the newest and the oldest feature level, and run on
the NumPy backend; its outputs must be ONNX's expected ones, and its Slice, Concat and Pad
nodes must have run as DirectML operators (where what they make is not empty).

The cases come with the installed onnx (its exporters run when their module is imported,
well under a second for these), so they are an oracle independent of dmlgraph and of
onnxruntime: a Scan of scalars (``test_scan9_scalar``) came back as [1] and [5, 1] where ONNX
makes [] and [5] before they were run here."""

from __future__ import annotations

import importlib
import warnings

import numpy as np
import pytest

import dmlgraph
from backends import get_backend
from dmlgraph.errors import UnsupportedError
from lowering import lower

#: onnx's case modules: the lowered ops, CenterCropPad (its expansion slices and pads), and
#: the control flow whose subgraphs the backend lowers.
MODULES = ("slice", "concat", "pad", "center_crop_pad", "scan", "loop", "if_")
#: Cases of sequences and optionals, which dmlgraph refuses at load (it handles tensors).
NOT_TENSORS = frozenset({"test_loop13_seq", "test_loop16_seq_none", "test_if_seq",
                         "test_if_opt"})
#: Ops that move elements and compute none: their expected outputs are met bit for bit.
MOVING = frozenset({"Slice", "Concat", "Pad", "CenterCropPad"})


def _cases() -> list:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from onnx.backend.test.case import node as node_cases

        start = len(node_cases._NodeTestCases)
        for module in MODULES:
            importlib.import_module(f"onnx.backend.test.case.node.{module}")
        return list(node_cases._NodeTestCases[start:])


CASES = _cases()
RUN = [c for c in CASES if c.name not in NOT_TENSORS]


def _same(got: np.ndarray, want: np.ndarray, exact: bool, rtol: float, atol: float) -> bool:
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape or got.dtype != want.dtype:
        return False
    if exact or got.dtype.kind not in "fc":
        return got.tobytes() == want.tobytes()
    return bool(np.allclose(got, want, rtol=rtol, atol=atol, equal_nan=True))


def test_the_cases_are_there() -> None:
    """The modules gave their cases (an onnx that renamed them would leave this file testing
    nothing): each lowered op and each control-flow op is covered."""
    ops = {node.op_type for case in CASES for node in case.model.graph.node}
    assert {"Slice", "Concat", "Pad", "Scan", "Loop", "If"} <= ops
    assert len(RUN) >= 40


@pytest.mark.parametrize("level", ["6_4", "1_0"])
@pytest.mark.parametrize("case", RUN, ids=[c.name for c in RUN])
def test_onnx_s_node_case_gives_its_expected_outputs(case, level) -> None:
    model = case.model
    ops = {node.op_type for node in model.graph.node}
    exact = ops <= MOVING
    lowered = lower(dmlgraph.load(model), level)
    backend = get_backend("numpy")
    for inputs, outputs in case.data_sets:
        names = [value.name for value in model.graph.input][: len(inputs)]
        got = backend.run(lowered, dict(zip(names, inputs)))
        for value, want in zip(model.graph.output, outputs):
            assert _same(got[value.name], want, exact, case.rtol, case.atol), value.name
        ran = {r.op for r in backend.last_record.nodes}
        if ops & {"Slice", "Concat", "Pad"} and all(np.size(w) for w in outputs):
            # (an empty result is no DirectML tensor: nothing runs to make it)
            assert any(op.startswith("DML_OPERATOR_") for op in ran), ran


@pytest.mark.parametrize("name", sorted(NOT_TENSORS))
def test_a_case_of_sequences_or_optionals_is_refused_at_load(name) -> None:
    (case,) = [c for c in CASES if c.name == name]
    with pytest.raises(UnsupportedError, match="dmlgraph handles tensors only"):
        dmlgraph.load(case.model)
