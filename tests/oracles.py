"""Independent oracles and a plain executor for the lowering tests.

The NumPy oracles are written from ONNX's and DML_SPEC.md's definitions, independently of the
code under test; ``run_lowered`` and ``run_translated`` run a lowered graph on the two backends.
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import onnx
import onnxruntime as ort

from backends import get_backend
from dmlgraph.errors import UnsupportedError


# ------------------------------------------------------------------------------ execution
def run_lowered(lowered: Any, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    """The lowered graph on the NumPy backend (descriptors on the DirectML executor, ONNX nodes
    left for fallback on onnxruntime)."""
    outputs = get_backend("numpy").run(lowered, feeds)
    return [outputs[name] for name in lowered.outputs]


def run_translated(lowered: Any, feeds: dict[str, np.ndarray]) -> list[np.ndarray] | None:
    """The same lowered graph on onnxruntime, each descriptor translated back to ONNX ops; None
    where ONNX cannot express one (a type split, SYMMETRIC, reflection beyond the dimension).
    bfloat16 feeds go in as OrtValues (``backends.onnxruntime.values``)."""
    try:
        outputs = get_backend("onnxruntime").run(lowered, feeds)
    except UnsupportedError:
        return None
    return [outputs[name] for name in lowered.outputs]


def ort_or_none(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> np.ndarray | None:
    """onnxruntime's result, or None when it has no kernel for the type."""
    if any(a.dtype == ml_dtypes.bfloat16 for a in feeds.values()):
        return None  # onnxruntime's Python API takes no bfloat16 arrays
    options = ort.SessionOptions()
    options.log_severity_level = 4
    try:
        session = ort.InferenceSession(
            model.SerializeToString(), options, providers=["CPUExecutionProvider"]
        )
    except Exception as exc:  # NOT_IMPLEMENTED: no kernel for this type
        if "NOT_IMPLEMENTED" in str(exc) or "Could not find an implementation" in str(exc):
            return None
        raise
    return session.run(None, feeds)[0]


def same_values(a: np.ndarray, b: np.ndarray) -> bool:
    """Bit-equal, except that NaNs need only be NaN: onnxruntime's float16 Pad rewrites NaN
    payloads (0x7e01 -> 0x7e00), which DirectML, moving bits, does not."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.kind == "f":
        nan = np.isnan(a)
        if not np.array_equal(nan, np.isnan(b)):
            return False
        a, b = np.where(nan, 0, a), np.where(nan, 0, b)
    return same_bits(a, b)


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.itemsize in (1, 2, 4, 8):  # the bits, without copying a large result to bytes
        width = np.dtype(f"u{a.dtype.itemsize}")
        return bool(np.array_equal(a.view(width), b.view(width)))
    return (np.ascontiguousarray(a).view(np.uint8).tobytes()
            == np.ascontiguousarray(b).view(np.uint8).tobytes())


# ------------------------------------------------------------------------------ oracles
def slice_oracle(x: np.ndarray, starts, ends, axes, steps) -> np.ndarray:
    """Slice-13's text: negative indices add the dim; clamp start to [0, dim] (step > 0) or
    [0, dim - 1] (step < 0), end to [0, dim] or [-1, dim - 1]; then NumPy slicing."""
    index: list[Any] = [slice(None)] * x.ndim
    for s, e, a, t in zip(starts, ends, axes, steps):
        n = x.shape[a]
        s, e = (s + n if s < 0 else s), (e + n if e < 0 else e)
        if t > 0:
            s, e = np.clip(s, 0, n), np.clip(e, 0, n)
        else:
            s, e = np.clip(s, 0, n - 1), np.clip(e, -1, n - 1)
        picked = list(range(int(s), int(e), t)) if n else []
        index[a] = picked
    return x[np.ix_(*[i if isinstance(i, list) else range(x.shape[k]) for k, i in enumerate(index)])]


def pad_index(mode: str, i: np.ndarray, n: int) -> np.ndarray:
    """DML_SPEC.md's index maps; reflect on size 1 repeats the element (as EDGE)."""
    if mode == "edge" or (mode == "reflect" and n == 1):
        return np.clip(i, 0, n - 1)
    if mode == "reflect":
        p = 2 * (n - 1)
        m = np.mod(i, p)
        return np.where(m < n, m, p - m)
    return np.mod(i, n)  # wrap


def pad_oracle(x: np.ndarray, pads: list[int], mode: str, value: np.ndarray) -> np.ndarray:
    r = x.ndim
    crop = tuple(
        slice(max(0, -pads[a]), x.shape[a] - max(0, -pads[a + r])) for a in range(r)
    )
    x = x[crop]
    begin = [max(0, p) for p in pads[:r]]
    end = [max(0, p) for p in pads[r:]]
    if mode == "constant":
        out = np.full([n + b + e for n, b, e in zip(x.shape, begin, end)], value, dtype=x.dtype)
        out[tuple(slice(b, b + n) for b, n in zip(begin, x.shape))] = x
        return out
    for a in range(r):
        if begin[a] or end[a]:
            source = pad_index(mode, np.arange(-begin[a], x.shape[a] + end[a]), x.shape[a])
            x = np.take(x, source, axis=a)
    return x


# ------------------------------------------------------------------------------ focused drawings
def focus_model() -> onnx.ModelProto:
    """A small graph for focused drawings: x -> r0 (Relu) -> e1 (Exp) -> pad (Pad, channels)
    -> cat (Concat, with s (Sigmoid) of x) -> neg -> ab -> y, and z = wide (Concat) of five
    Tanh of x. Nothing in it folds at import, so its nodes are the imported graph's."""
    h = onnx.helper
    f32 = onnx.TensorProto.FLOAT
    nodes = [
        h.make_node("Relu", ["x"], ["t0"], name="r0"),
        h.make_node("Exp", ["t0"], ["t1"], name="e1"),
        h.make_node("Pad", ["t1", "pads"], ["t2"], name="pad", mode="constant"),
        h.make_node("Sigmoid", ["x"], ["t3"], name="s"),
        h.make_node("Concat", ["t2", "t3"], ["t4"], name="cat", axis=1),
        h.make_node("Neg", ["t4"], ["t5"], name="neg"),
        h.make_node("Abs", ["t5"], ["y"], name="ab"),
        *(h.make_node("Tanh", ["x"], [f"u{i}"], name=f"tanh{i}") for i in range(5)),
        h.make_node("Concat", [f"u{i}" for i in range(5)], ["z"], name="wide", axis=1),
    ]
    pads = onnx.numpy_helper.from_array(np.array([0, 1, 0, 0, 0, 1, 0, 0], np.int64), "pads")
    graph = h.make_graph(
        nodes, "focus", [h.make_tensor_value_info("x", f32, [1, 2, 4, 4])],
        [h.make_tensor_value_info("y", f32, [1, 6, 4, 4]),
         h.make_tensor_value_info("z", f32, [1, 10, 4, 4])],
        [pads],
    )
    return h.make_model(graph, opset_imports=[h.make_opsetid("", 18)], ir_version=10)


def outputs_not_made_by_nodes() -> onnx.ModelProto:
    """x [4, 5] is a graph input and output; y = x[1:3]; w, a weight, is joined to y into z
    and is a graph output itself."""
    h = onnx.helper
    params = [onnx.numpy_helper.from_array(np.array(v, np.int64), n)
              for n, v in (("s", [1]), ("e", [3]))]
    params.append(onnx.numpy_helper.from_array(np.ones((2, 5), np.float32), "w"))
    nodes = [h.make_node("Slice", ["x", "s", "e"], ["y"], name="slice"),
             h.make_node("Concat", ["y", "w"], ["z"], name="join", axis=0)]
    graph = h.make_graph(
        nodes, "g", [h.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [4, 5])],
        [h.make_tensor_value_info(n, onnx.TensorProto.FLOAT, None) for n in ("x", "z", "w")],
        params)
    return h.make_model(graph, opset_imports=[h.make_opsetid("", 13)], ir_version=8)


def nodes_within(model: onnx.ModelProto, names: list[str], depth: int) -> set[str]:
    """The names of the nodes ``depth`` edges or fewer (direction ignored) from the nodes
    ``names`` name, or that make or read a tensor they name: networkx over the proto's
    top-level nodes, each edge a tensor one makes and another reads."""
    import networkx as nx

    made = {out: node.name for node in model.graph.node for out in node.output}
    graph = nx.Graph()
    graph.add_nodes_from(node.name for node in model.graph.node)
    seeds = set()
    for node in model.graph.node:
        for name in node.input:
            if name in made:
                graph.add_edge(made[name], node.name)
            if name in names:
                seeds.add(node.name)
        if node.name in names or any(out in names for out in node.output):
            seeds.add(node.name)
    found: set[str] = set()
    for seed in seeds:
        found |= set(nx.single_source_shortest_path_length(graph, seed, cutoff=depth))
    return found
