"""Fuzz dmlgraph's NumPy backend on random multi-node graphs against onnxruntime (CPU).

Each case (one seed) is a random ONNX DAG (opset 13-21, IR 9) of Slice / Concat / Pad with
Relu, Add, Transpose, Reshape and Identity between them, and twins (a node repeated, a Slice
as the Pad cropping its window) that lowering's Simplify merges; 40% are Slice/Concat/Pad
alone (a plan of descriptors, replayed natively). Fan-out, a Concat reading one tensor twice,
intermediate graph outputs, rarely an input as an output or an output named twice, run-time
Slice/Pad parameters, symbolic input and output sizes, float32/float16/int64/bool/uint8, and
now and then a tensor of a few MB. Copy knobs vary per case (native or NumPy copies, thread
count, PARALLEL_BYTES, BLOCK_BYTES, SLAB_BYTES), and 10% run on the reference fallback.

Each model is lowered at FL 6_4, 4_1, 2_1 and 1_0 (``verify_each``) and run on the NumPy
backend: twice with the same feeds, with other feeds, with bound outputs (poisoned), with
strided feeds, partly bound, and every fifth case from 3 threads at once; each run is
compared bit for bit with onnxruntime (ORT_DISABLE_ALL and default). A mismatch where
onnx.reference or this file's NumPy evaluator (``numpy_eval``) agrees with dmlgraph is
onnxruntime's (float16 Add chains it rounds once), not a finding. Findings are saved under
tests/fuzz/findings/ (model, feeds, what differed).

    python tests/fuzz/graph_fuzz.py --start 0 --count 100            # a worker, in process
    python tests/fuzz/graph_fuzz.py --driver --start 0 --minutes 40  # workers restarted on crashes
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # the tests' oracles
from oracles import same_values as same  # noqa: E402  (bit for bit, NaN with NaN)
FINDINGS = os.path.join(HERE, "findings")
INT64_MAX, INT64_MIN = 2**63 - 1, -(2**63)
LEVELS = ["6_4", "4_1", "2_1", "1_0"]
DTYPES = ["float32", "float16", "int64", "bool", "uint8"]
ELEM = {
    "float32": onnx.TensorProto.FLOAT,
    "float16": onnx.TensorProto.FLOAT16,
    "int64": onnx.TensorProto.INT64,
    "bool": onnx.TensorProto.BOOL,
    "uint8": onnx.TensorProto.UINT8,
}


# ------------------------------------------------------------------------------ data
def random_data(
    rng: np.random.Generator, dtype: str, shape: tuple[int, ...], neg_zero: bool = True
) -> np.ndarray:
    return np.asarray(_random_data(rng, dtype, shape, neg_zero))


def _random_data(
    rng: np.random.Generator, dtype: str, shape: tuple[int, ...], neg_zero: bool
) -> np.ndarray:
    if dtype in ("float32", "float16"):
        a = (rng.standard_normal(shape) * 8).astype(dtype)
        if a.size and neg_zero:
            a.reshape(-1)[rng.random(a.size) < 0.05] = -0.0
        return a
    if dtype == "int64":
        return rng.integers(-1000, 1000, shape, dtype=np.int64)
    if dtype == "uint8":
        return rng.integers(0, 256, shape, dtype=np.uint8)
    return rng.random(shape) < 0.5


def random_shape(rng: np.random.Generator, rank: int, cap: int, big: bool) -> tuple[int, ...]:
    shape = []
    budget = cap
    for _ in range(rank):
        hi = max(1, min(64, budget))
        d = (
            int(rng.integers(1, hi + 1))
            if rng.random() < 0.6
            else int(rng.integers(1, min(hi, 6) + 1))
        )
        shape.append(d)
        budget = max(1, budget // d)
    if big:  # a few MB: one large axis
        axis = int(rng.integers(0, rank))
        other = int(np.prod([s for i, s in enumerate(shape) if i != axis])) or 1
        shape[axis] = max(shape[axis], (int(rng.integers(1, 4)) << 20) // other)
    rng.shuffle(shape)
    return tuple(shape)


# ------------------------------------------------------------------------------ building
@dataclass
class Builder:
    rng: np.random.Generator
    opset: int
    dtype: str
    big: bool
    nodes: list[onnx.NodeProto] = field(default_factory=list)
    inits: list[onnx.TensorProto] = field(default_factory=list)
    inputs: list[tuple[str, tuple[int, ...], str]] = field(default_factory=list)
    shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)
    kinds: collections.Counter = field(default_factory=collections.Counter)
    counter: int = 0
    #: -0.0 in the data; then no Relu (onnxruntime's Relu keeps or drops the sign of a zero
    #: by where it lies: vector body or scalar tail, whether its result is an output)
    neg_zero: bool = True

    def name(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    # tensors -----------------------------------------------------------------
    def new_input(self, shape: tuple[int, ...]) -> str:
        name = self.name("in")
        self.inputs.append((name, shape, self.dtype))
        self.shapes[name] = shape
        self.order.append(name)
        return name

    def new_const(self, shape: tuple[int, ...], dtype: str | None = None) -> str:
        name = self.name("c")
        value = random_data(self.rng, dtype or self.dtype, shape, self.neg_zero)
        self.inits.append(numpy_helper.from_array(value, name))
        self.shapes[name] = shape
        self.kinds["const"] += 1
        return name

    def ints(self, values: list[int], prefix: str = "p") -> str:
        name = self.name(prefix)
        self.inits.append(numpy_helper.from_array(np.array(values, dtype=np.int64), name))
        return name

    def param(self, values: list[int], prefix: str) -> str:
        """A Slice/Pad parameter: a constant, or rarely a graph input (run-time lowering)."""
        if self.rng.random() < 0.025:
            name = self.name(prefix)
            self.inputs.append((name, (len(values),), "int64:" + ",".join(map(str, values))))
            self.kinds["runtime_param"] += 1
            return name
        return self.ints(values, prefix)

    def pick(self) -> str:
        if self.rng.random() < 0.6:
            return self.order[-1 - int(self.rng.integers(0, min(3, len(self.order))))]
        return self.order[int(self.rng.integers(0, len(self.order)))]

    def emit(self, op: str, ins: list[str], shape: tuple[int, ...], **attrs: Any) -> str:
        out = self.name(op.lower()[:3])
        self.nodes.append(helper.make_node(op, ins, [out], name=out, **attrs))
        self.shapes[out] = shape
        self.order.append(out)
        self.kinds[op] += 1
        return out

    # ops ----------------------------------------------------------------------
    def slice_(self, x: str) -> str | None:
        rng, s = self.rng, self.shapes[x]
        r = len(s)
        use_axes = rng.random() < 0.75
        k = int(rng.integers(1, r + 1))
        axes = [int(a) for a in rng.choice(r, k, replace=False)] if use_axes else list(range(k))
        starts, ends, steps = [], [], []
        out = list(s)
        for a in axes:
            d = s[a]
            for _ in range(20):
                step = int(rng.choice([1, 1, 1, 2, 3, -1, -1, -2, -3, d + 1, -(d + 1)]))
                if step == 0:
                    continue
                start = self._bound(d, step, True)
                end = self._bound(d, step, False)
                n = _slice_len(d, start, end, step)
                if n > 0 or rng.random() < 0.03:
                    break
            starts.append(start)
            ends.append(end)
            steps.append(step)
            out[a] = n
        ins = [x, self.param(starts, "st"), self.param(ends, "en")]
        if use_axes or any(st != 1 for st in steps) or rng.random() < 0.3:
            ins.append(
                self.ints([a - r if rng.random() < 0.3 else a for a in axes], "ax")
                if use_axes
                else self.ints(list(range(k)), "ax")
            )
            if any(st != 1 for st in steps) or rng.random() < 0.5:
                ins.append(self.param(steps, "sp"))
        return self.emit("Slice", ins, tuple(out))

    def _bound(self, d: int, step: int, is_start: bool) -> int:
        rng = self.rng
        u = rng.random()
        if u < 0.08:
            if is_start:
                return INT64_MIN if step > 0 else INT64_MAX
            # ends = INT64_MAX with a negative step is onnxruntime's known divergence
            return INT64_MAX if step > 0 else INT64_MIN
        if u < 0.12:
            return INT64_MIN if is_start == (step > 0) else -(2**31)
        return int(rng.integers(-d - 3, d + 4))

    def concat(self, x: str) -> str | None:
        rng, s = self.rng, self.shapes[x]
        r = len(s)
        axis = int(rng.integers(0, r))
        n = int(rng.integers(2, 7))
        ins = [x]
        compatible = [
            t
            for t in self.order
            if len(self.shapes[t]) == r
            and all(self.shapes[t][i] == s[i] for i in range(r) if i != axis)
        ]
        for _ in range(n - 1):
            u = rng.random()
            if u < 0.3:
                ins.append(x)
            elif u < 0.6 and compatible:
                ins.append(compatible[int(rng.integers(0, len(compatible)))])
            else:
                shape = list(s)
                shape[axis] = (
                    int(rng.choice([0, 1, 1, 2, 3, 5, 8]))
                    if not self.big
                    else int(rng.choice([0, 1, 2]))
                )
                if rng.random() < 0.5:
                    ins.append(self.new_const(tuple(shape)))
                else:
                    ins.append(self.new_input(tuple(shape)))
        order = list(rng.permutation(len(ins)))
        ins = [ins[i] for i in order]
        out = list(s)
        out[axis] = sum(self.shapes[t][axis] for t in ins)
        written = axis - r if rng.random() < 0.3 else axis
        return self.emit("Concat", ins, tuple(out), axis=written)

    def pad(self, x: str) -> str | None:
        rng, s = self.rng, self.shapes[x]
        r = len(s)
        modes = ["constant", "constant", "reflect", "edge"] + (["wrap"] if self.opset >= 19 else [])
        mode = str(rng.choice(modes))
        if any(d == 0 for d in s) and mode != "constant":
            mode = "constant"
        use_axes = self.opset >= 18 and rng.random() < 0.4
        axes = (
            [int(a) for a in rng.choice(r, int(rng.integers(1, r + 1)), replace=False)]
            if use_axes
            else list(range(r))
        )
        begins, ends = [], []
        out = list(s)
        for a in axes:
            d = s[a]
            for _ in range(30):
                small = 2 if self.big else 5
                b = (
                    int(rng.integers(-d - 2, small))
                    if rng.random() < 0.3
                    else int(rng.integers(0, small))
                )
                e = (
                    int(rng.integers(-d - 2, small))
                    if rng.random() < 0.3
                    else int(rng.integers(0, small))
                )
                kept = d + min(b, 0) + min(e, 0)
                if mode == "constant":
                    if d + b + e >= 0:
                        break
                elif mode == "edge":
                    if kept >= 1:
                        break
                elif mode == "reflect":
                    if kept >= 2 and max(b, 0) < kept and max(e, 0) < kept:
                        break
                else:  # wrap
                    if kept >= 1 and max(b, 0) <= kept and max(e, 0) <= kept:
                        break
            else:
                b = e = 0
            begins.append(b)
            ends.append(e)
            out[a] = d + b + e
        ins = [x, self.param(begins + ends, "pd")]
        if mode == "constant" and rng.random() < 0.6:
            ins.append(self.new_const((), self.dtype))
        if use_axes:
            if len(ins) == 2:
                ins.append("")
            ins.append(self.ints([a - r if rng.random() < 0.3 else a for a in axes], "pa"))
        self.kinds[f"Pad.{mode}"] += 1
        return self.emit("Pad", ins, tuple(out), mode=mode)

    def relu(self, x: str) -> str | None:
        if self.dtype not in ("float32", "float16") or self.neg_zero:
            return None
        return self.emit("Relu", [x], self.shapes[x])

    def add(self, x: str) -> str | None:
        if self.dtype in ("bool",) or (self.dtype == "uint8" and self.opset < 14):
            return None
        rng, s = self.rng, self.shapes[x]
        u = rng.random()
        same = [t for t in self.order if self.shapes[t] == s and t != x]
        if u < 0.25:
            y = x
        elif u < 0.55 and same:
            y = same[int(rng.integers(0, len(same)))]
        else:
            shape = tuple(d if rng.random() < 0.5 else 1 for d in s)
            shape = shape[int(rng.integers(0, len(shape) + 1)) :]
            y = self.new_const(shape) if rng.random() < 0.6 else self.new_input(shape)
        ins = [x, y] if rng.random() < 0.5 else [y, x]
        return self.emit("Add", ins, s)

    def transpose(self, x: str) -> str | None:
        s = self.shapes[x]
        if self.rng.random() < 0.2:
            return self.emit("Transpose", [x], tuple(reversed(s)))
        perm = [int(p) for p in self.rng.permutation(len(s))]
        return self.emit("Transpose", [x], tuple(s[p] for p in perm), perm=perm)

    def reshape(self, x: str) -> str | None:
        rng, s = self.rng, list(self.shapes[x])
        r = len(s)
        u = rng.random()
        if u < 0.35 and r >= 2:  # merge two adjacent axes
            i = int(rng.integers(0, r - 1))
            new = s[:i] + [s[i] * s[i + 1]] + s[i + 2 :]
        elif u < 0.7 and r < 5:  # split an axis or insert a 1
            i = int(rng.integers(0, r))
            d = s[i]
            divs = [f for f in range(1, d + 1) if d % f == 0]
            f = int(rng.choice(divs)) if divs else 1
            new = s[:i] + [f, d // f if f else 0] + s[i + 1 :]
        else:
            new = s[:]
            rng.shuffle(new)  # same count, other layout
        written = list(new)
        total = int(np.prod(new))
        if total > 0 and rng.random() < 0.3:
            written[int(rng.integers(0, len(new)))] = -1
        for i in range(min(len(new), r)):
            if written[i] != -1 and new[i] == s[i] and rng.random() < 0.3:
                written[i] = 0
        if any(w == 0 for w in written) and any(n == 0 for n in new):
            written = list(new)
            return (
                self.emit("Reshape", [x, self.ints(written, "rs")], tuple(new), allowzero=1)
                if self.opset >= 14
                else None
            )
        return self.emit("Reshape", [x, self.ints(written, "rs")], tuple(new))

    def identity(self, x: str) -> str | None:
        return self.emit("Identity", [x], self.shapes[x])

    def twin(self, x: str) -> str | None:
        """A node computing what an earlier one does from the same tensors (lowering's
        Simplify merges identical descriptors): a copy, or a Slice of unit steps as the Pad
        cropping the same window."""
        made = [n for n in self.nodes if n.op_type in ("Slice", "Pad", "Concat")]
        if not made:
            return None
        node = made[int(self.rng.integers(0, len(made)))]
        shape = self.shapes[node.output[0]]
        if node.op_type == "Slice" and self.rng.random() < 0.5:
            crop = self._slice_as_crop(node)
            if crop is not None:
                self.kinds["twin_crop"] += 1
                return self.emit(
                    "Pad",
                    [node.input[0], self.ints(crop, "tw")],
                    shape,
                    mode=str(self.rng.choice(["constant", "edge", "reflect"])),
                )
        self.kinds["twin"] += 1
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        return self.emit(node.op_type, list(node.input), shape, **attrs)

    def _slice_as_crop(self, node: onnx.NodeProto) -> list[int] | None:
        inits = {t.name: numpy_helper.to_array(t) for t in self.inits}
        ins = list(node.input) + [""] * (5 - len(node.input))
        if any(n and n not in inits for n in ins[1:]):
            return None
        s = self.shapes[ins[0]]
        r = len(s)
        starts, ends = list(inits[ins[1]]), list(inits[ins[2]])
        axes = [int(a) % r for a in inits[ins[3]]] if ins[3] else list(range(len(starts)))
        steps = list(inits[ins[4]]) if ins[4] else [1] * len(starts)
        if any(int(v) != 1 for v in steps):
            return None
        begin, end = [0] * r, [0] * r
        for a, st, en in zip(axes, starts, ends):
            d = s[a]
            window = _clamp(d, int(st), int(en))
            if window is None:
                return None
            begin[a], end[a] = -window[0], -(d - window[1])
        return begin + end


OPS = [
    ("slice_", 4),
    ("concat", 4),
    ("pad", 4),
    ("relu", 1),
    ("add", 1),
    ("transpose", 1),
    ("reshape", 1),
    ("identity", 1),
    ("twin", 2),
]


def _clamp(d: int, start: int, end: int) -> tuple[int, int] | None:
    """A unit-step Slice's window [start, end) on an axis of d, None when empty."""
    start = start + d if start < 0 else start
    end = end + d if end < 0 else end
    start, end = min(max(start, 0), d), min(max(end, 0), d)
    return (start, end) if end > start else None


def _slice_len(d: int, start: int, end: int, step: int) -> int:
    """ONNX Slice-13's length of an axis of d."""
    return len(_clamp_slice(d, start, end, step))


@dataclass
class Case:
    seed: int
    model: onnx.ModelProto
    feeds: list[dict[str, np.ndarray]]
    kinds: collections.Counter
    dtype: str
    opset: int
    big: bool
    knobs: dict[str, Any]


def make_case(seed: int) -> Case:
    rng = np.random.default_rng(seed)
    opset = int(rng.choice([13, 14, 17, 18, 19, 21]))
    dtype = str(rng.choice(DTYPES, p=[0.35, 0.2, 0.2, 0.1, 0.15]))
    big = rng.random() < 0.04
    b = Builder(rng, opset, dtype, big)
    b.neg_zero = bool(rng.random() < 0.5)
    rank = int(rng.choice([1, 2, 2, 3, 3, 4, 4, 5]))
    cap = 4096 if not big else 64
    b.new_input(random_shape(rng, rank, cap, big))
    if rng.random() < 0.4:
        b.new_input(random_shape(rng, int(rng.integers(1, 5)), cap, False))
    n_nodes = int(rng.integers(2, 13)) if not big else int(rng.integers(2, 6))
    pure = rng.random() < 0.4  # Slice/Concat/Pad alone: a plan of descriptors (Replay)
    names, weights = zip(*([*OPS[:3], OPS[-1]] if pure else OPS))
    p = np.array(weights, float) / sum(weights)
    b.kinds["pure"] += pure
    tries = 0
    while len(b.nodes) < n_nodes and tries < 200:
        tries += 1
        op = names[int(rng.choice(len(names), p=p))]
        x = b.pick()
        if not b.shapes[x] and op != "identity":
            continue
        if int(np.prod(b.shapes[x])) > (2 << 20):  # a few MB: Concat and Pad grow it
            continue
        getattr(b, op)(x)
    # outputs: sinks, some intermediates, rarely a graph input
    read = {i for n in b.nodes for i in n.input}
    made = [o for n in b.nodes for o in n.output]
    outs = [t for t in made if t not in read]
    outs += [t for t in made if t in read and rng.random() < 0.25]
    if rng.random() < 0.05 or not outs:  # no node made (a large input): passed through
        outs.append(b.inputs[0][0])
    outs = list(dict.fromkeys(outs))
    rng.shuffle(outs)
    if rng.random() < 0.03:
        outs.append(outs[0])  # one tensor named twice among the outputs
    declare = rng.random() < 0.8
    dynamic = rng.random() < 0.12  # graph inputs of symbolic sizes: lowered at run time
    b.kinds["dynamic_inputs"] += dynamic

    def input_dims(n: str, s: tuple[int, ...]) -> list[Any]:
        if not dynamic:
            return list(s)
        return [f"{n}_d{i}" if rng.random() < 0.6 else d for i, d in enumerate(s)]

    def output_dims(t: str) -> list[Any] | None:
        if not declare:
            return None
        u = rng.random()
        if u < 0.06:
            b.kinds["symbolic_output"] += 1
            return [f"{t}_o{i}" for i in range(len(b.shapes[t]))]
        return list(b.shapes[t])

    graph = helper.make_graph(
        b.nodes,
        f"fuzz{seed}",
        [
            helper.make_tensor_value_info(
                n,
                onnx.TensorProto.INT64 if kind.startswith("int64:") else ELEM[kind],
                list(s) if kind.startswith("int64:") else input_dims(n, s),
            )
            for n, s, kind in b.inputs
        ],
        [helper.make_tensor_value_info(t, ELEM[dtype], output_dims(t)) for t in outs],
        b.inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 9
    feeds = []
    for _ in range(2):
        f = {}
        for n, s, kind in b.inputs:
            if kind.startswith("int64:"):
                f[n] = np.array([int(v) for v in kind[6:].split(",")], dtype=np.int64)
            else:
                f[n] = random_data(rng, kind, s, b.neg_zero)
        feeds.append(f)
    knobs = {
        "native": bool(rng.random() < 0.8),
        "parallel_bytes": int(rng.choice([6 << 20, 6 << 20, 64, 1024, 16384])),
        # tiny blocks of a large copy make millions of NumPy moves (a 235 MB Concat at 128
        # bytes: 38 s and 5 GB), a cost of the knob, not a fault: small graphs only
        "block_bytes": int(rng.choice([1 << 20, 1 << 20] + ([] if big else [128, 4096]))),
        "slab_bytes": int(rng.choice([1 << 10, 1 << 10, 16])),
        "threads": int(rng.choice([1, 2, 2, 3, 4])),
        "fallback": "reference" if rng.random() < 0.1 else "onnxruntime",
    }
    return Case(seed, model, feeds, b.kinds, dtype, opset, big, knobs)


# ------------------------------------------------------------------------------ oracles
def ort_run(
    model: onnx.ModelProto, feeds: dict[str, np.ndarray], optimize: bool
) -> list[np.ndarray] | Exception:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 4
    options.intra_op_num_threads = 1
    if not optimize:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    try:
        session = ort.InferenceSession(
            model.SerializeToString(), options, providers=["CPUExecutionProvider"]
        )
        return session.run(None, feeds)
    except Exception as exc:  # noqa: BLE001
        return exc


def reference_run(
    model: onnx.ModelProto, feeds: dict[str, np.ndarray]
) -> list[np.ndarray] | Exception:
    from onnx.reference import ReferenceEvaluator

    try:
        return [np.asarray(a) for a in ReferenceEvaluator(model).run(None, feeds)]
    except Exception as exc:  # noqa: BLE001
        return exc


def _clamp_slice(d: int, start: int, end: int, step: int) -> range:
    """ONNX Slice-13's clamping, written from its text."""
    if start < 0:
        start += d
    if end < 0:
        end += d
    if step > 0:
        start, end = min(max(start, 0), d), min(max(end, 0), d)
    else:
        start, end = min(max(start, 0), d - 1), min(max(end, -1), d - 1)
    return range(start, end, step)


def _pad_index(d: int, b: int, e: int, mode: str) -> np.ndarray:
    """For each output index along an axis, the input index it reads (-1: the fill). Negative
    pads crop first; the edge/reflect/wrap source is the cropped extent."""
    lo, hi = max(0, -b), d - max(0, -e)  # the kept input indices [lo, hi)
    out = []
    for j in range(d + b + e):
        i = j - b
        if lo <= i < hi:
            out.append(i)
        elif mode == "constant":
            out.append(-1)
        elif mode == "edge":
            out.append(lo if i < lo else hi - 1)
        elif mode == "wrap":
            out.append(lo + (i - lo) % (hi - lo))
        else:  # reflect
            n = hi - lo
            k = (i - lo) % (2 * n - 2) if n > 1 else 0
            out.append(lo + (k if k < n else 2 * n - 2 - k))
    return np.array(out, dtype=np.int64)


def numpy_eval(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    """The graph in NumPy, each op from its ONNX definition."""
    env = dict(feeds)
    for init in model.graph.initializer:
        env[init.name] = numpy_helper.to_array(init)
    for node in model.graph.node:
        ins = [env[n] if n else None for n in node.input]
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        x = ins[0]
        if node.op_type == "Slice":
            r = x.ndim
            starts, ends = list(ins[1]), list(ins[2])
            axes = list(ins[3]) if len(ins) > 3 and ins[3] is not None else list(range(len(starts)))
            steps = list(ins[4]) if len(ins) > 4 and ins[4] is not None else [1] * len(starts)
            index: list[Any] = [slice(None)] * r
            for a, st, en, sp in zip(axes, starts, ends, steps):
                a = int(a) % r
                index[a] = list(_clamp_slice(x.shape[a], int(st), int(en), int(sp)))
            y = x
            for a, ix in enumerate(index):
                if isinstance(ix, list):
                    y = np.take(y, np.array(ix, dtype=np.int64), axis=a)
        elif node.op_type == "Concat":
            y = np.concatenate(ins, axis=attrs["axis"])
        elif node.op_type == "Pad":
            r = x.ndim
            pads = [int(p) for p in ins[1]]
            fill = ins[2] if len(ins) > 2 and ins[2] is not None else np.zeros((), x.dtype)
            axes = [int(a) % r for a in ins[3]] if len(ins) > 3 else list(range(r))
            k = len(axes)
            mode = attrs.get("mode", b"constant")
            mode = mode.decode() if isinstance(mode, bytes) else mode
            y = x
            for n, a in enumerate(axes):
                idx = _pad_index(x.shape[a], pads[n], pads[n + k], mode)
                taken = (
                    np.take(y, np.maximum(idx, 0), axis=a)
                    if y.shape[a]
                    else np.zeros(y.shape[:a] + (len(idx),) + y.shape[a + 1 :], y.dtype)
                )
                mask = (idx < 0).reshape((1,) * a + (-1,) + (1,) * (r - a - 1))
                y = np.where(mask, fill.astype(x.dtype), taken)
        elif node.op_type == "Relu":
            y = np.maximum(x, np.zeros((), x.dtype))
        elif node.op_type == "Add":
            y = (x + ins[1]).astype(x.dtype)
        elif node.op_type == "Transpose":
            y = np.transpose(x, attrs.get("perm"))
        elif node.op_type == "Reshape":
            shape = [int(v) for v in ins[1]]
            if not attrs.get("allowzero", 0):
                shape = [x.shape[i] if v == 0 else v for i, v in enumerate(shape)]
            y = x.reshape(shape)
        elif node.op_type == "Identity":
            y = x
        else:
            raise NotImplementedError(node.op_type)
        env[node.output[0]] = np.array(y)
    return [env[o.name] for o in model.graph.output]


# ------------------------------------------------------------------------------ running
def set_knobs(knobs: dict[str, Any]) -> None:
    from backends.numpy import threads as t

    t.native = knobs["native"] and t.Program is not None
    t.PARALLEL_BYTES = knobs["parallel_bytes"]
    t.BLOCK_BYTES = knobs["block_bytes"]
    t.SLAB_BYTES = knobs["slab_bytes"]


def strided(a: np.ndarray) -> np.ndarray:
    """The same values through a non-contiguous array."""
    if a.ndim == 0 or a.size == 0:
        return a
    wide = np.empty(a.shape[:-1] + (a.shape[-1] * 2,), dtype=a.dtype)
    view = wide[..., ::2]
    view[...] = a
    return view


def run_case(case: Case, stats: collections.Counter) -> list[dict[str, Any]]:
    """The problems found in one case (empty: it passed)."""
    from backends import get_backend
    from dmlgraph import load
    from lowering import lower

    model, (f1, f2) = case.model, case.feeds
    names = [o.name for o in model.graph.output]
    expected = []
    for feeds in (f1, f2):
        plain = ort_run(model, feeds, optimize=False)
        full = ort_run(model, feeds, optimize=True)
        expected.append((plain, full))
    if isinstance(expected[0][0], Exception) and isinstance(expected[0][1], Exception):
        ref = reference_run(model, f1)
        if isinstance(ref, Exception):
            stats["invalid"] += 1
            return []
        stats["ort_fails_ref_runs"] += 1
        return [{"what": "ort fails, reference runs", "error": str(expected[0][0])[:300]}]
    problems: list[dict[str, Any]] = []
    set_knobs(case.knobs)
    backend = get_backend(
        "numpy", threads=case.knobs["threads"], fallback=case.knobs.get("fallback", "onnxruntime")
    )
    for level in LEVELS:
        try:
            graph = load(model)
            lowered = lower(graph, level, verify_each=True)
        except Exception as exc:  # noqa: BLE001
            problems.append({"what": "load/lower raised", "level": level, "error": _err(exc)})
            continue
        for r in lowered.report():
            stats[f"status.{r.op_type}.{r.status}"] += 1
        runs = [("first", f1, None, 0), ("again", f1, None, 0), ("other", f2, None, 1)]
        runs.append(("bound", f1, "bound", 0))
        runs.append(("strided", {k: strided(v) for k, v in f2.items()}, None, 1))
        runs.append(("bound-other", f2, "bound", 1))
        runs.append(("partial-bound", f1, "partial", 0))
        runs.append(("other-again", f2, None, 1))
        held = []
        for label, feeds, binding, which in runs:
            try:
                outputs = None
                if binding:
                    outputs = {}
                    for i, n in enumerate(names):
                        if binding == "partial" and i % 2:
                            continue
                        if lowered.tensor(n).static_shape is None:
                            continue  # a run-time size: nothing to bind to
                        ref = (
                            expected[which][0]
                            if not isinstance(expected[which][0], Exception)
                            else expected[which][1]
                        )
                        if isinstance(ref, Exception):
                            outputs = None
                            break
                        arr = np.empty_like(ref[i])
                        if arr.size:
                            arr.reshape(-1).view(np.uint8)[:] = 0xA5
                        outputs[n] = arr
                    # an output that is also a graph input cannot be bound in place of it? keep
                got = (
                    backend.run(lowered, feeds, outputs=outputs)
                    if outputs is not None
                    else backend.run(lowered, feeds)
                )
                got_list = [np.array(got[n], copy=True) for n in names]
                if case.seed % 2 or label == "first":
                    held.append(got)  # pooled arrays kept alive: the next run must not reuse them
                del got
            except Exception as exc:  # noqa: BLE001
                plain, full = expected[which]
                if isinstance(plain, Exception) and isinstance(full, Exception):
                    stats["both_fail"] += 1
                    continue
                problems.append(
                    {"what": "run raised", "level": level, "run": label, "error": _err(exc)}
                )
                break
            if label == "first":
                plan = backend.plan(lowered)
                stats["plans"] += 1
                stats["replay"] += plan.replay is not None
                stats["joined_in_place"] += plan.summary.joined_in_place
                stats["plans_with_in_place"] += plan.summary.joined_in_place > 0
            problem = compare(
                model, feeds if label != "strided" else f2, names, got_list, expected[which], stats
            )
            if problem:
                problem.update(level=level, run=label)
                problems.append(problem)
                break
        stats["runs"] += len(runs)
        if not problems and case.seed % 5 == 0:
            problem = concurrent(backend, lowered, model, names, (f1, f2), expected, stats)
            if problem:
                problem.update(level=level, run="concurrent")
                problems.append(problem)
    return problems


def concurrent(backend, lowered, model, names, feeds, expected, stats) -> dict[str, Any] | None:
    """Runs of one plan from 3 threads at once, alternating feeds."""
    import threading

    results: list[tuple[int, list[np.ndarray] | Exception]] = []

    def go(k: int) -> None:
        for j in range(4):
            which = (k + j) % 2
            try:
                got = backend.run(lowered, feeds[which])
                results.append((which, [np.array(got[n], copy=True) for n in names]))
            except Exception as exc:  # noqa: BLE001
                results.append((which, exc))

    threads_ = [threading.Thread(target=go, args=(k,)) for k in range(3)]
    for t in threads_:
        t.start()
    for t in threads_:
        t.join()
    stats["concurrent"] += 1
    for which, got in results:
        if isinstance(got, Exception):
            plain, full = expected[which]
            if isinstance(plain, Exception) and isinstance(full, Exception):
                continue
            return {"what": "concurrent run raised", "error": _err(got)}
        problem = compare(model, feeds[which], names, got, expected[which], stats)
        if problem:
            return problem
    return None


def compare(model, feeds, names, got, expected, stats) -> dict[str, Any] | None:
    plain, full = expected
    bad = []
    for i, n in enumerate(names):
        agree = [
            ref for ref in (plain, full) if not isinstance(ref, Exception) and same(got[i], ref[i])
        ]
        if not agree:
            bad.append(i)
    if not bad:
        return None
    ref = reference_run(model, feeds)
    if not isinstance(ref, Exception) and all(same(got[i], ref[i]) for i in bad):
        stats["ort_divergence"] += 1
        return None
    try:
        mine = numpy_eval(model, feeds)
    except Exception as exc:  # noqa: BLE001
        mine = exc
    if not isinstance(mine, Exception) and all(same(got[i], mine[i]) for i in bad):
        stats["ort_divergence_numpy"] += 1
        return None
    detail = []
    for i in bad[:3]:
        r = plain if not isinstance(plain, Exception) else full
        exp = r[i] if not isinstance(r, Exception) else None
        detail.append(
            {
                "output": names[i],
                "got": f"{got[i].dtype}{list(got[i].shape)}",
                "ort": None if exp is None else f"{exp.dtype}{list(exp.shape)}",
                "ref_agrees_with_ort": None
                if isinstance(ref, Exception) or exp is None
                else bool(same(ref[i], exp)),
                "numpy_agrees_with_ort": None
                if isinstance(mine, Exception) or exp is None
                else bool(same(mine[i], exp)),
                "mismatches": None
                if exp is None or exp.shape != got[i].shape
                else int((np.asarray(exp) != got[i]).sum()),
            }
        )
    return {"what": "mismatch", "outputs": detail}


def _err(exc: BaseException) -> str:
    return (
        f"{type(exc).__name__}: {str(exc)[:400]} @ "
        + "".join(traceback.format_tb(exc.__traceback__)[-2:])[-600:]
    )


def save(case: Case, problems: list[dict[str, Any]]) -> None:
    os.makedirs(FINDINGS, exist_ok=True)
    base = os.path.join(FINDINGS, f"case{case.seed}")
    onnx.save(case.model, base + ".onnx")
    np.savez(
        base + ".npz", **{f"f{i}__{k}": v for i, f in enumerate(case.feeds) for k, v in f.items()}
    )
    with open(base + ".json", "w") as fh:
        json.dump(
            {
                "seed": case.seed,
                "knobs": case.knobs,
                "dtype": case.dtype,
                "opset": case.opset,
                "problems": problems,
            },
            fh,
            indent=1,
        )


def worker(start: int, count: int, progress: str | None) -> None:
    import warnings

    warnings.filterwarnings("ignore")
    stats: collections.Counter = collections.Counter()
    found = 0
    for seed in range(start, start + count):
        if progress:
            with open(progress, "w") as fh:
                fh.write(str(seed))
        case = make_case(seed)
        stats["cases"] += 1
        stats[f"dtype.{case.dtype}"] += 1
        stats[f"opset.{case.opset}"] += 1
        stats["big"] += case.big
        stats[f"nodes.{len(case.model.graph.node)}"] += 1
        for k, v in case.kinds.items():
            stats[f"op.{k}"] += v
        try:
            problems = run_case(case, stats)
        except Exception as exc:  # noqa: BLE001
            problems = [{"what": "harness raised", "error": _err(exc)}]
        if problems:
            found += 1
            save(case, problems)
            print(f"seed {seed}: {problems[0]['what']} {json.dumps(problems[0])[:300]}", flush=True)
    stats["found"] += found
    print("STATS " + json.dumps(dict(stats)), flush=True)


def driver(start: int, minutes: float, chunk: int) -> None:
    deadline = time.time() + minutes * 60
    seed = start
    progress = os.path.join(HERE, "progress.txt")
    while time.time() < deadline:
        proc = subprocess.run(
            [
                sys.executable,
                __file__,
                "--start",
                str(seed),
                "--count",
                str(chunk),
                "--progress",
                progress,
            ],
            capture_output=True,
            text=True,
        )
        sys.stdout.write(proc.stdout)
        if proc.returncode != 0:
            with open(progress) as fh:
                at = int(fh.read())
            print(f"seed {at}: CRASH rc={proc.returncode} {proc.stderr[-800:]}", flush=True)
            seed = at + 1
        else:
            seed += chunk
        sys.stdout.flush()
    print(f"DONE next seed {seed}", flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--start", type=int, default=0)
    parser.add_argument("--count", type=int, default=50)
    parser.add_argument("--progress")
    parser.add_argument("--driver", action="store_true")
    parser.add_argument("--minutes", type=float, default=40)
    args = parser.parse_args()
    if args.driver:
        driver(args.start, args.minutes, args.count)
    else:
        worker(args.start, args.count, args.progress)
