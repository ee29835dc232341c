"""Shared fixtures of the ONNX-side tests (importer, IR, canonical forms, folding).

Every fixture here is prefixed ``onnx_`` so the DirectML-side tests can add their own freely.
Helpers come as session fixtures returning functions, so test modules need no imports from
the tests folder.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import helper

MODELS_DIR = Path(__file__).resolve().parent.parent / "models"

# every lowering in the tests checks the IR after each pass, so a pass that breaks an
# invariant is caught where it does (users get one check at the end: it is faster)
os.environ.setdefault("DMLGRAPH_VERIFY_EACH", "1")

#: The suite's oracle is onnxruntime's CPU provider: its divergences from ONNX are what the
#: tests name (measured on its kernels), and the default preference would take CUDA or
#: DirectML where onnxruntime-gpu or -directml is installed. Setting this variable to a
#: provider's name (CUDA, DML) runs the suite's default sessions there instead, to see where
#: that provider departs; tests of the CPU provider's own divergences then fail.
TEST_PROVIDER_VARIABLE = "DMLGRAPH_TEST_PROVIDER"


@pytest.fixture(autouse=True)
def _default_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    """onnxruntime offers the tests only that provider and the CPU's (a test that fakes the
    available ones sets its own over this)."""
    from backends.onnxruntime.providers import CPU, provider_name

    kept = {provider_name(os.environ.get(TEST_PROVIDER_VARIABLE) or "CPU"), CPU}
    available = ort.get_available_providers
    monkeypatch.setattr(ort, "get_available_providers",
                        lambda: [p for p in available() if p in kept])


def run_ort(
    model: onnx.ModelProto | str | Path, feeds: Mapping[str, np.ndarray], optimize: bool = True
) -> list[np.ndarray]:
    """Run a model on onnxruntime's CPU provider; ``optimize=False`` disables graph rewrites."""
    options = ort.SessionOptions()
    options.log_severity_level = 3
    if not optimize:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    content = model.SerializeToString() if isinstance(model, onnx.ModelProto) else str(model)
    session = ort.InferenceSession(content, options, providers=["CPUExecutionProvider"])
    return session.run(None, dict(feeds))


def make_model(
    nodes: Sequence[onnx.NodeProto],
    inputs: Sequence[tuple[str, int, Sequence[Any] | None]],
    outputs: Sequence[tuple[str, int, Sequence[Any] | None]],
    *,
    opset: int,
    initializers: Sequence[onnx.TensorProto] = (),
    ir_version: int = 8,
    extra_opsets: Mapping[str, int] | None = None,
) -> onnx.ModelProto:
    """A one-graph model; inputs/outputs are (name, ONNX elem type, shape) triples."""
    graph = helper.make_graph(
        list(nodes),
        "test",
        [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
        [helper.make_tensor_value_info(n, t, s) for n, t, s in outputs],
        list(initializers),
    )
    opsets = [helper.make_opsetid("", opset)]
    opsets += [helper.make_opsetid(d, v) for d, v in (extra_opsets or {}).items()]
    return helper.make_model(graph, opset_imports=opsets, ir_version=ir_version)


@pytest.fixture(scope="session")
def onnx_models_dir() -> Path:
    return MODELS_DIR


@pytest.fixture(scope="session")
def onnx_reference_io() -> dict[str, np.ndarray]:
    with np.load(MODELS_DIR / "reference_io.npz") as data:
        return {key: data[key] for key in data.files}


@pytest.fixture(scope="session")
def onnx_run() -> Callable[..., list[np.ndarray]]:
    return run_ort


@pytest.fixture(scope="session")
def onnx_make_model() -> Callable[..., onnx.ModelProto]:
    return make_model
