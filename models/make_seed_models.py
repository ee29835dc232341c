"""Write the examples of the seed documents as small ONNX models under ``models/seeds/``.

    python models/make_seed_models.py          # rewrites models/seeds/*.onnx and seed_io.npz

Each example of the DirectML pages (SLICE: seed 004, SLICE1: seeds 000/001, JOIN: seed 002,
PADDING: seed 003; ``../shared/docs/DML_SPEC.md`` lists them) becomes the ONNX graph that
means the same thing: an ONNX Slice, Concat or Pad over the page's input tensors, whose
outputs are the page's outputs. ``seed_io.npz`` holds, for each model NAME, its inputs
(``NAME__in0``, ...) and the outputs the page shows (``NAME__out0``, ...), transcribed by hand;
they are the oracle, so ``dmlgraph check models/seeds/NAME.onnx --inputs models/seeds/seed_io.npz
--expected models/seeds/seed_io.npz`` compares against the page, not against code.

Two examples have no one-node ONNX equivalent:

- PADDING example 4 (SYMMETRIC, FL 3.0): ONNX Pad has no symmetric mode, so the model builds
  it from Slices (reversed edges, negative steps) and Concats, as an exporter would;
- PADDING example 3 (REFLECTION) pads by 4 an axis of 4: DirectML reflects periodically, while
  ONNX reflect allows pads of at most size - 1 and onnxruntime rejects the model. It is kept as
  the page has it: a known divergence between DirectML and onnxruntime.

Models use opset 18 and IR version 10 (onnxruntime 1.31 loads them). Generation is
deterministic: the same script writes byte-identical files. Every example onnxruntime can run
is checked against the page before anything is written.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper

OUT_DIR = Path(__file__).resolve().parent / "seeds"
OPSET = 18
IR_VERSION = 10
F32 = TensorProto.FLOAT

GRID = np.arange(1, 17, dtype=np.float32).reshape(1, 1, 4, 4)  # SLICE / SLICE1 input
PAD_INPUT = np.array(
    [[1, 2, 3, 4], [5, 6, 7, 8], [1, 2, 3, 4], [5, 6, 7, 8]], np.float32
).reshape(1, 1, 4, 4)
PADS = [0, 0, 1, 2, 0, 0, 3, 4]  # StartPadding [0,0,1,2], EndPadding [0,0,3,4]


@dataclass(frozen=True)
class SeedExample:
    """One example of a seed page: its model, its inputs and the outputs the page shows."""

    name: str
    source: str  # the seed page and example it transcribes
    build: Callable[[], tuple[list[onnx.NodeProto], list[onnx.TensorProto]]]
    inputs: dict[str, np.ndarray]
    outputs: dict[str, np.ndarray]
    runs_on_onnxruntime: bool = True


def ints(name: str, values: list[int]) -> onnx.TensorProto:
    return helper.make_tensor(name, TensorProto.INT64, [len(values)], values)


def slice_nodes(
    starts: list[int], ends: list[int], steps: list[int], axes: tuple[int, ...] = (2, 3)
) -> Callable[[], tuple[list[onnx.NodeProto], list[onnx.TensorProto]]]:
    def build() -> tuple[list[onnx.NodeProto], list[onnx.TensorProto]]:
        node = helper.make_node(
            "Slice", ["X", "starts", "ends", "axes", "steps"], ["Y"], name="slice"
        )
        params = [ints("starts", starts), ints("ends", ends), ints("axes", list(axes)),
                  ints("steps", steps)]
        return [node], params

    return build


def join_nodes(inputs: list[str], axes: list[int]) -> Callable[[], tuple[list, list]]:
    def build() -> tuple[list[onnx.NodeProto], list[onnx.TensorProto]]:
        nodes = [
            helper.make_node("Concat", inputs, [f"Y_axis{axis}" if len(axes) > 1 else "Y"],
                             axis=axis, name=f"join_axis{axis}")
            for axis in axes
        ]
        return nodes, []

    return build


def pad_nodes(mode: str) -> Callable[[], tuple[list, list]]:
    def build() -> tuple[list[onnx.NodeProto], list[onnx.TensorProto]]:
        params = [ints("pads", PADS)]
        names = ["X", "pads"]
        if mode == "constant":
            params.append(helper.make_tensor("value", F32, [], [9.0]))
            names.append("value")
        return [helper.make_node("Pad", names, ["Y"], mode=mode, name="pad")], params

    return build


def symmetric_nodes() -> tuple[list[onnx.NodeProto], list[onnx.TensorProto]]:
    """SYMMETRIC padding (start [1, 2], end [3, 4] on H, W of a 4x4) as Slice + Concat.

    Symmetric repeats the edge: along H (n = 4) the rows are [0 | 0 1 2 3 | 3 2 1], along W the
    columns are [1 0 | 0 1 2 3 | 3 2 1 0]; each mirrored block is a Slice with step -1.
    """
    def mirror(name: str, src: str) -> onnx.NodeProto:
        return helper.make_node(
            "Slice", [src, f"{name}_starts", f"{name}_ends", f"{name}_axes", "minus_one"],
            [name], name=name,
        )

    nodes = [
        mirror("top", "X"),  # row 0
        mirror("bottom", "X"),  # rows 3, 2, 1
        helper.make_node("Concat", ["top", "X", "bottom"], ["rows"], axis=2, name="join_rows"),
        mirror("left", "rows"),  # columns 1, 0
        mirror("right", "rows"),  # columns 3, 2, 1, 0
        helper.make_node("Concat", ["left", "rows", "right"], ["Y"], axis=3, name="join_cols"),
    ]
    params = [ints("minus_one", [-1])]
    # (name, start, end, axis): ends of -5 clamp to "before index 0" for a step of -1
    for name, start, end, axis in (("top", 0, -5, 2), ("bottom", 3, 0, 2),
                                   ("left", 1, -5, 3), ("right", 3, -5, 3)):
        params += [ints(f"{name}_starts", [start]), ints(f"{name}_ends", [end]),
                   ints(f"{name}_axes", [axis])]
    return nodes, params


def f32(rows: list[list[float]]) -> np.ndarray:
    array = np.array(rows, np.float32)
    return array.reshape((1,) * (4 - array.ndim) + array.shape)


JOIN2 = {name: f32(rows) for name, rows in (
    ("A", [[1, 2], [3, 4]]), ("B", [[5, 6], [7, 8]]), ("C", [[9, 10], [11, 12]]))}

EXAMPLES: tuple[SeedExample, ...] = (
    SeedExample(
        "slice_example1", "seed 004 (DML_SLICE), example 1: Offsets {0,0,1,2}, Sizes {1,1,3,2}, "
        "Strides {1,1,1,1}",
        slice_nodes([1, 2], [4, 4], [1, 1]),
        {"X": GRID}, {"Y": f32([[7, 8], [11, 12], [15, 16]])},
    ),
    SeedExample(
        "slice_example2", "seed 004 (DML_SLICE), example 2: Offsets {0,0,1,0}, Sizes {1,1,2,2}, "
        "Strides {1,1,2,3}",
        slice_nodes([1, 0], [4, 4], [2, 3]),
        {"X": GRID}, {"Y": f32([[5, 8], [13, 16]])},
    ),
    SeedExample(
        "slice1_example1", "seeds 000/001 (DML_SLICE1), example 1: InputWindowOffsets {0,0,0,1}, "
        "InputWindowSizes {1,1,4,3}, InputWindowStrides {1,1,2,2}",
        slice_nodes([0, 1], [4, 4], [2, 2]),
        {"X": GRID}, {"Y": f32([[2, 4], [10, 12]])},
    ),
    SeedExample(
        "slice1_example2", "seeds 000/001 (DML_SLICE1), example 2: InputWindowOffsets {0,0,0,1}, "
        "InputWindowSizes {1,1,4,3}, InputWindowStrides {1,1,-2,2}",
        slice_nodes([3, 1], [0, 4], [-2, 2]),
        {"X": GRID}, {"Y": f32([[14, 16], [6, 8]])},
    ),
    SeedExample(
        "join_example1", "seed 002 (DML_JOIN), example 1: sizes {1,1,2,3} and {1,1,2,4} joined "
        "along axis 3",
        join_nodes(["A", "B"], [3]),
        {"A": f32([[1, 2, 3], [4, 5, 6]]), "B": f32([[7, 8, 9, 10], [11, 12, 13, 14]])},
        {"Y": f32([[1, 2, 3, 7, 8, 9, 10], [4, 5, 6, 11, 12, 13, 14]])},
    ),
    SeedExample(
        "join_example2", "seed 002 (DML_JOIN), example 2: three {1,1,2,2} tensors joined along "
        "axis 1, 2 and 3",
        join_nodes(["A", "B", "C"], [1, 2, 3]),
        JOIN2,
        {
            "Y_axis1": np.array([[[[1, 2], [3, 4]], [[5, 6], [7, 8]], [[9, 10], [11, 12]]]],
                                np.float32),
            "Y_axis2": f32([[1, 2], [3, 4], [5, 6], [7, 8], [9, 10], [11, 12]]),
            "Y_axis3": f32([[1, 2, 5, 6, 9, 10], [3, 4, 7, 8, 11, 12]]),
        },
    ),
    SeedExample(
        "padding_constant", "seed 003 (DML_PADDING), example 1: CONSTANT, PaddingValue 9, "
        "StartPadding {0,0,1,2}, EndPadding {0,0,3,4}",
        pad_nodes("constant"),
        {"X": PAD_INPUT},
        {"Y": f32([[9, 9, 9, 9, 9, 9, 9, 9, 9, 9],
                   [9, 9, 1, 2, 3, 4, 9, 9, 9, 9],
                   [9, 9, 5, 6, 7, 8, 9, 9, 9, 9],
                   [9, 9, 1, 2, 3, 4, 9, 9, 9, 9],
                   [9, 9, 5, 6, 7, 8, 9, 9, 9, 9],
                   [9, 9, 9, 9, 9, 9, 9, 9, 9, 9],
                   [9, 9, 9, 9, 9, 9, 9, 9, 9, 9],
                   [9, 9, 9, 9, 9, 9, 9, 9, 9, 9]])},
    ),
    SeedExample(
        "padding_edge", "seed 003 (DML_PADDING), example 2: EDGE, StartPadding {0,0,1,2}, "
        "EndPadding {0,0,3,4}",
        pad_nodes("edge"),
        {"X": PAD_INPUT},
        {"Y": f32([[1, 1, 1, 2, 3, 4, 4, 4, 4, 4],
                   [1, 1, 1, 2, 3, 4, 4, 4, 4, 4],
                   [5, 5, 5, 6, 7, 8, 8, 8, 8, 8],
                   [1, 1, 1, 2, 3, 4, 4, 4, 4, 4],
                   [5, 5, 5, 6, 7, 8, 8, 8, 8, 8],
                   [5, 5, 5, 6, 7, 8, 8, 8, 8, 8],
                   [5, 5, 5, 6, 7, 8, 8, 8, 8, 8],
                   [5, 5, 5, 6, 7, 8, 8, 8, 8, 8]])},
    ),
    SeedExample(
        "padding_reflection", "seed 003 (DML_PADDING), example 3: REFLECTION, StartPadding "
        "{0,0,1,2}, EndPadding {0,0,3,4} (an end pad of 4 on an axis of 4: periodic in "
        "DirectML, rejected by onnxruntime)",
        pad_nodes("reflect"),
        {"X": PAD_INPUT},
        {"Y": f32([[7, 6, 5, 6, 7, 8, 7, 6, 5, 6],
                   [3, 2, 1, 2, 3, 4, 3, 2, 1, 2],
                   [7, 6, 5, 6, 7, 8, 7, 6, 5, 6],
                   [3, 2, 1, 2, 3, 4, 3, 2, 1, 2],
                   [7, 6, 5, 6, 7, 8, 7, 6, 5, 6],
                   [3, 2, 1, 2, 3, 4, 3, 2, 1, 2],
                   [7, 6, 5, 6, 7, 8, 7, 6, 5, 6],
                   [3, 2, 1, 2, 3, 4, 3, 2, 1, 2]])},
        runs_on_onnxruntime=False,
    ),
    SeedExample(
        "padding_symmetric", "seed 003 (DML_PADDING), example 4: SYMMETRIC (FL 3.0), "
        "StartPadding {0,0,1,2}, EndPadding {0,0,3,4}; ONNX Pad has no symmetric mode, so "
        "Slices with step -1 and Concats",
        symmetric_nodes,
        {"X": PAD_INPUT},
        {"Y": f32([[2, 1, 1, 2, 3, 4, 4, 3, 2, 1],
                   [2, 1, 1, 2, 3, 4, 4, 3, 2, 1],
                   [6, 5, 5, 6, 7, 8, 8, 7, 6, 5],
                   [2, 1, 1, 2, 3, 4, 4, 3, 2, 1],
                   [6, 5, 5, 6, 7, 8, 8, 7, 6, 5],
                   [6, 5, 5, 6, 7, 8, 8, 7, 6, 5],
                   [2, 1, 1, 2, 3, 4, 4, 3, 2, 1],
                   [6, 5, 5, 6, 7, 8, 8, 7, 6, 5]])},
    ),
)


def build_model(example: SeedExample) -> onnx.ModelProto:
    nodes, params = example.build()
    graph = helper.make_graph(
        nodes,
        example.name,
        [helper.make_tensor_value_info(n, F32, list(a.shape)) for n, a in example.inputs.items()],
        [helper.make_tensor_value_info(n, F32, list(a.shape)) for n, a in example.outputs.items()],
        params,
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", OPSET)],
        ir_version=IR_VERSION,
        producer_name="dmlgraph models/make_seed_models.py",
        doc_string=example.source,
    )
    onnx.checker.check_model(model, full_check=True)
    return model


def check_on_onnxruntime(example: SeedExample, model: onnx.ModelProto) -> str:
    """"" when onnxruntime reproduces the page's outputs, else what differs."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    results = session.run(None, example.inputs)
    for (name, expected), actual in zip(example.outputs.items(), results):
        if not np.array_equal(actual, expected):
            return f"{example.name}: onnxruntime gives {actual.tolist()} for {name}"
    return ""


def io_arrays(examples: tuple[SeedExample, ...] = EXAMPLES) -> dict[str, np.ndarray]:
    """``NAME__inK`` / ``NAME__outK`` for every example, in graph order."""
    arrays: dict[str, np.ndarray] = {}
    for example in examples:
        for k, array in enumerate(example.inputs.values()):
            arrays[f"{example.name}__in{k}"] = array
        for k, array in enumerate(example.outputs.values()):
            arrays[f"{example.name}__out{k}"] = array
    return arrays


def main(out_dir: Path = OUT_DIR) -> int:
    models = {example.name: build_model(example) for example in EXAMPLES}
    problems = [
        problem
        for example in EXAMPLES
        if example.runs_on_onnxruntime
        and (problem := check_on_onnxruntime(example, models[example.name]))
    ]
    if problems:
        print("\n".join(problems), file=sys.stderr)
        return 1
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, model in models.items():
        (out_dir / f"{name}.onnx").write_bytes(model.SerializeToString())
    # np.savez stamps zip entries with the current time; fixed entries keep the file stable.
    _write_npz(out_dir / "seed_io.npz", io_arrays())
    print(f"wrote {len(models)} models and seed_io.npz to {out_dir}")
    return 0


def _write_npz(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """An .npz (a zip of .npy files) with fixed timestamps, so the bytes are reproducible."""
    import io
    import zipfile

    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for key, array in arrays.items():
            buffer = io.BytesIO()
            np.lib.format.write_array(buffer, np.ascontiguousarray(array), allow_pickle=False)
            info = zipfile.ZipInfo(f"{key}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, buffer.getvalue())


if __name__ == "__main__":
    sys.exit(main())
