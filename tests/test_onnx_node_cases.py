"""ONNX's own conformance cases (``onnx.backend.test.case.node``: the models and expected
outputs behind onnx's backend test data) whose graphs hold a Slice, Concat or Pad (those of
the ops themselves, and of functions expanded inline: attention with a KV cache, rotary
embeddings, layer and group normalization, CenterCropPad...) or the control flow the NumPy
backend runs itself: each is loaded, lowered at the newest and the oldest feature level, and
run on the NumPy backend and on onnxruntime (the lowered graph translated back to ONNX); its
outputs must be ONNX's expected ones, and on the NumPy backend what its Slice, Concat and Pad
nodes were lowered to must have run as DirectML operators (where what they make is not
empty; a shape vector's Concat is folded at import).

The cases come with the installed onnx (its exporters run when their module is imported, about
a second for these), so they are an oracle independent of dmlgraph and of onnxruntime: a Scan
of scalars (``test_scan9_scalar``) came back as [1] and [5, 1] where ONNX makes [] and [5]
until they were run here. A case dmlgraph refuses must be one it refuses by rule (a sequence
or optional, a preview domain), and one it cannot run must be one onnxruntime, its fallback,
cannot load (a bfloat16 Expand has no CPU kernel in onnxruntime 1.32)."""

from __future__ import annotations

import importlib
import warnings
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import numpy_helper

import dmlgraph
from backends import get_backend
from backends.base import BackendError
from dmlgraph.errors import UnsupportedError
from lowering import Status, lower

#: onnx's case modules whose cases hold the lowered ops or control flow (found by running
#: every module's cases: the rest hold none).
MODULES = (
    "slice", "concat", "pad", "center_crop_pad", "scan", "loop", "if_", "attention",
    "flexattention", "linear_attention", "rotaryembedding", "affinegrid",
    "causal_conv_with_state", "layernormalization", "groupnormalization",
    "negativeloglikelihoodloss", "rangeop", "spacetodepth", "depthtospace", "sequence_map",
)
HELD = frozenset({"Slice", "Concat", "Pad", "Scan", "Loop", "If", "CenterCropPad"})
#: Ops that move elements and compute none: their expected outputs are met bit for bit.
MOVING = frozenset({"Slice", "Concat", "Pad", "CenterCropPad"})


def _cases() -> list:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from onnx.backend.test.case import node as node_cases

        start = len(node_cases._NodeTestCases)
        for module in MODULES:
            importlib.import_module(f"onnx.backend.test.case.node.{module}")
        made = node_cases._NodeTestCases[start:]
    return [c for c in made if {n.op_type for n in c.model.graph.node} & HELD]


CASES = _cases()


def _same(got: np.ndarray, want: np.ndarray, exact: bool, rtol: float, atol: float) -> bool:
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape or got.dtype != want.dtype:
        return False
    if exact or got.dtype.kind not in "fc":
        return got.tobytes() == want.tobytes()
    return bool(np.allclose(got, want, rtol=rtol, atol=atol, equal_nan=True))


def _not_tensors_or_preview(model: onnx.ModelProto) -> bool:
    """Whether the model holds what dmlgraph refuses by rule: a value of a sequence or
    optional type (at the graph's edges, or made by a node: ``infer_shapes`` says), or a
    node of a preview domain."""
    graph = onnx.shape_inference.infer_shapes(model).graph
    values = [*graph.input, *graph.output, *graph.value_info]
    return any(v.type.WhichOneof("value") in ("sequence_type", "optional_type")
               for v in values) or any(n.domain.startswith("ai.onnx.preview")
                                       for n in model.graph.node)


def _onnxruntime_loads(model: onnx.ModelProto) -> bool:
    options = ort.SessionOptions()
    options.log_severity_level = 4
    try:
        ort.InferenceSession(model.SerializeToString(), options,
                             providers=["CPUExecutionProvider"])
    except Exception:
        return False
    return True


def test_the_cases_are_there() -> None:
    """The modules gave their cases (an onnx that renamed them would leave this file testing
    nothing): each lowered op and each control-flow op is covered, beside expanded functions."""
    ops = {node.op_type for case in CASES for node in case.model.graph.node}
    assert HELD - {"CenterCropPad"} <= ops
    assert len(CASES) >= 200


@pytest.mark.parametrize("backend_name", ["numpy", "onnxruntime"])
@pytest.mark.parametrize("level", ["6_4", "1_0"])
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_onnx_s_node_case_gives_its_expected_outputs(case, level, backend_name) -> None:
    """On the emulator, and on onnxruntime as the lowered graph translated back to ONNX (the
    descriptors as ONNX nodes: ``run --backend onnxruntime --lowered``)."""
    model = case.model
    ops = {node.op_type for node in model.graph.node}
    backend = get_backend(backend_name, **({"providers": ["CPU"]} if backend_name != "numpy"
                                           else {}))
    try:
        lowered = lower(dmlgraph.load(model), level)
        runs = [backend.run(lowered, dict(zip([v.name for v in model.graph.input], inputs)))
                for inputs, _ in case.data_sets]
    except UnsupportedError as exc:
        assert _not_tensors_or_preview(model), exc
        return
    except BackendError as exc:
        assert "onnxruntime cannot load the model" in str(exc)
        assert not _onnxruntime_loads(model), exc
        return
    for got, (_, outputs) in zip(runs, case.data_sets):
        assert len(outputs) == len(model.graph.output)
        for value, want in zip(model.graph.output, outputs):
            assert _same(got[value.name], want, ops <= MOVING, case.rtol, case.atol), value.name
    if backend_name != "numpy":
        return
    ran = {r.op for r in backend.last_record.nodes}
    made = [r for r in lowered.report() if r.status in (Status.LOWERED, Status.DECOMPOSED)]
    if made and all(np.size(w) for w in case.data_sets[-1][1]):
        # (an empty result is no DirectML tensor: nothing runs to make it)
        assert any(op.startswith("DML_OPERATOR_") for op in ran), ran


#: onnx's test data of models exported by an early torch (opsets 6-9: a Pad-2's pads and a
#: Slice-1's starts are attributes) whose graphs hold a Slice, Concat or Pad, each with its
#: inputs and expected outputs (torch's) as protobuf files; they only move elements.
DATA = Path(onnx.__file__).parent / "backend" / "test" / "data"
DATA_CASES = sorted(
    path.parent for kind in ("pytorch-converted", "pytorch-operator")
    for path in (DATA / kind).glob("*/model.onnx")
    if {n.op_type for n in onnx.load(path).graph.node} & {"Slice", "Concat", "Pad"}
)


def test_the_data_cases_are_there() -> None:
    assert {p.name for p in DATA_CASES} >= {
        "test_ConstantPad2d", "test_ReflectionPad2d", "test_ReplicationPad2d",
        "test_ZeroPad2d", "test_operator_concat2", "test_operator_pad", "test_operator_index"}


def _tensors(folder: Path, kind: str) -> list[np.ndarray]:
    """``input_0.pb``, ``input_1.pb``... in their number's order (input_10 after input_9)."""
    files = sorted(folder.glob(f"{kind}_*.pb"), key=lambda f: int(f.stem.split("_")[1]))
    return [numpy_helper.to_array(onnx.load_tensor(f)) for f in files]


@pytest.mark.parametrize("level", ["6_4", "1_0"])
@pytest.mark.parametrize("folder", DATA_CASES, ids=[p.name for p in DATA_CASES])
def test_onnx_s_test_data_gives_its_expected_outputs(folder, level) -> None:
    model = onnx.load(folder / "model.onnx")
    constants = {t.name for t in model.graph.initializer}
    names = [v.name for v in model.graph.input if v.name not in constants]
    lowered = lower(dmlgraph.load(folder / "model.onnx"), level)
    for data in sorted(folder.glob("test_data_set_*")):
        inputs, outputs = _tensors(data, "input"), _tensors(data, "output")
        assert inputs and len(outputs) == len(model.graph.output)
        got = get_backend("numpy").run(lowered, dict(zip(names, inputs)))
        for value, want in zip(model.graph.output, outputs):
            # they only move elements: torch's outputs bit for bit
            assert _same(got[value.name], want, True, 0, 0), value.name


#: onnx's "light" model zoo copies (their weights made small) whose graphs hold a Concat:
#: densenet121's 58 among them. onnx's runner feeds each float input ``arange(n) / n`` in its
#: shape and compares with the stored output (onnx.reference's) at these tolerances.
LIGHT = {"densenet121": 2e-3, "inception_v1": 1e-3, "inception_v2": 1e-3,
         "shufflenet": 1e-3, "squeezenet": 1e-3}


@pytest.mark.parametrize("name", sorted(LIGHT))
def test_onnx_s_light_models_give_their_stored_outputs(name) -> None:
    path = DATA / "light" / f"light_{name}.onnx"
    model = onnx.load(path)
    constants = {t.name for t in model.graph.initializer}
    feeds = {}
    for value in model.graph.input:
        if value.name not in constants:
            shape = [d.dim_value if d.HasField("dim_value") else 1
                     for d in value.type.tensor_type.shape.dim]
            size = int(np.prod(shape))
            feeds[value.name] = (np.arange(size).reshape(shape) / size).astype(np.float32)
    want = numpy_helper.to_array(onnx.load_tensor(DATA / "light" / f"light_{name}_output_0.pb"))
    backend = get_backend("numpy")
    got = backend.run(lower(dmlgraph.load(path), "6_4"), feeds)[model.graph.output[0].name]
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=LIGHT[name], atol=1e-7)
    assert "DML_OPERATOR_JOIN" in {r.op for r in backend.last_record.nodes}
