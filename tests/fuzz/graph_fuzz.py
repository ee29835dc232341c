"""Fuzz dmlgraph's NumPy backend on random multi-node graphs against onnxruntime (CPU).

Each case (one seed) is a random ONNX DAG (opset 13-21, IR 9) of Slice / Concat / Pad with
Relu, Add, Transpose, Reshape and Identity between them, and twins (a node repeated, a Slice
as the Pad cropping its window) that lowering's Simplify merges; 40% are Slice/Concat/Pad
alone (a plan of descriptors, replayed natively). Fan-out, a Concat reading one tensor twice,
intermediate graph outputs, rarely an input as an output or an output named twice, run-time
Slice/Pad parameters, symbolic input and output sizes, float32/float16/int64/bool/uint8, and
now and then a tensor of a few MB. Copy knobs vary per case (native or NumPy copies, thread
count, PARALLEL_BYTES, BLOCK_BYTES, SLAB_BYTES, PIECE_BYTES), and 10% run on the reference
fallback.

A fifth of the seeds (``wants_cflow``, drawn from a stream of their own: the other seeds build
the cases they always did) add control flow over the graph built: an If (a bool input or
constant; each branch a generated subgraph, one or two outputs, of shapes that may differ
between branches), a Loop (trip count 0-4, an input or a constant, a `cond` absent, constant
or an input; the carried values transformed by a generated body, kept at their shape with
scan outputs, or growing each trip by Slices, Pads and self-Concats, some starting at the
iteration number) or a Scan (one or two scan inputs along any axis and direction, 0-2 state
variables, scan outputs on any axis). Bodies read enclosing tensors, constants and graph
inputs by name. Avoided, as onnxruntime's known divergences (docs/DECISIONS.md): a body
making one of its inputs, or one tensor twice, an output; the iteration number as an output; and
what onnxruntime 1.32 fails on or dies of (SIGFPE) where ONNX and dmlgraph run it: a Scan over a
tensor of no elements, a Scan output of no elements stacked on an axis other than 0.

A seventh of the seeds (``wants_oldops``, a stream of their own too) build the graph at an
opset of 1-12 instead, in the forms of those versions: Slice-1 (attribute starts, ends and
axes, no steps), Slice-10 (steps, negative ones), Pad-1 (``paddings``: dmlgraph refuses it,
naming the node; checked), Pad-2 (attribute pads, negative ones crop, a float ``value``),
Pad-11, Concat-1 (``axis`` left out: 1) and Concat-4, with negative axes now and then (which
those versions' text does not define; onnxruntime and onnx.reference count them from the
end, as later versions say), Reshape-1 (attribute ``shape``) before opset 5, and no control
flow. Left out, as onnxruntime 1.32 has no kernel that dmlgraph's fallback could run them
on: Relu before opset 6, Add before opset 7 (Add-1 and Add-6 broadcast by attribute). Where
onnxruntime runs no such model (no Concat-1 kernel, its own Cast before a float16 Pad-2 of
opset 2-5 refused), the oracle is onnx.reference, or where that fails too (no Reshape-1,
negative pads, Concat-1 without axis) ``numpy_eval``.

A twentieth of the seeds (``wants_scan8``, a stream of their own), and the old-opset seeds of
opset 8, build the graph at opset 8 and add a Scan-8 over a tensor of it (batch axis 0,
sequence axis 1; a vector becomes one batch entry, now and then the tensor is transposed
first): one or two scan inputs, 0-2 state variables of the batch size (the graph's tensors,
constants or inputs), a body grown in opset 8's forms, scan outputs, ``directions`` drawn per
scan input and a ``sequence_lens`` absent, constant or an input, of lengths 1 to the longest.
Left out, as onnxruntime 1.32 refuses them where ONNX allows them (docs/DECISIONS.md): a
length of 0, a batch of 0, a sequence of 0. Such a case runs on both fallbacks (the Scan-8 runs
whole on it: onnxruntime's kernel, or reference_ops' Scan-8); what onnxruntime refuses of it is
counted by its words (``scan8_ort_refuses: ...``).

Each model is lowered at FL 6_4, 4_1, 2_1 and 1_0 (``verify_each``) and run on the NumPy
backend: twice with the same feeds, with other feeds, with bound outputs (poisoned), with
strided feeds, partly bound, and every fifth case from 3 threads at once; each run is
compared bit for bit with onnxruntime (ORT_DISABLE_ALL and default). A mismatch where
onnx.reference or this file's NumPy evaluator (``numpy_eval``, which runs If and Loop too:
onnx 1.23's Loop runs no trip without ``cond`` and joins scan outputs with ``np.vstack``)
agrees with dmlgraph is onnxruntime's (float16 Add chains it rounds once), not a finding;
nor, on the onnxruntime fallback (whose segments keep such chains in float32 but end where a
lowered node rounds), is a float16 output within ``numpy_eval``'s bounds of rounding
anywhere (``widen``). Findings are saved under tests/fuzz/findings/ (model, feeds, what
differed).

    python tests/fuzz/graph_fuzz.py --start 0 --count 100            # a worker, in process
    python tests/fuzz/graph_fuzz.py --driver --start 0 --minutes 40  # workers restarted on crashes
    python tests/fuzz/graph_fuzz.py --driver --cflow-only ...         # control-flow seeds alone
    python tests/fuzz/graph_fuzz.py --driver --oldops-only ...        # opset 1-12 seeds alone
    python tests/fuzz/graph_fuzz.py --driver --scan8-only ...         # Scan-8 seeds alone
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
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
F16_MAX = float(np.finfo(np.float16).max)
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
    #: a subgraph's builder prefixes its names (one namespace for the whole model)
    tag: str = ""
    #: tensors of sizes known only when they run (an If's or a Loop's outputs)
    unshaped: set[str] = field(default_factory=set)
    #: a subgraph's constants that the enclosing graph holds (read by name)
    outer_inits: list[onnx.TensorProto] = field(default_factory=list)
    #: an opset-1 case that may hold a Pad-1 (which dmlgraph refuses, naming it)
    pad1: bool = False

    def name(self, prefix: str) -> str:
        self.counter += 1
        return f"{self.tag}{prefix}{self.counter}"

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
                step = step if self.opset >= 10 else 1  # Slice-1 has no steps
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
        if self.opset < 13:  # what the old versions differ on
            v = 1 if self.opset < 10 else 10
            self.kinds[f"Slice{v}.int64_extreme"] += any(
                abs(b) >= 2**31 for b in starts + ends)
            self.kinds[f"Slice{v}.negative_step"] += any(st < 0 for st in steps)
        if self.opset < 10:  # Slice-1: attributes; axes optional, negative ones rarely
            written = [a - r if rng.random() < 0.1 else a for a in axes]
            self.kinds["Slice1.negative_axes"] += use_axes and any(a < 0 for a in written)
            if use_axes or rng.random() < 0.5:
                return self.emit("Slice", [x], tuple(out), starts=starts, ends=ends,
                                 axes=written if use_axes else list(range(k)))
            return self.emit("Slice", [x], tuple(out), starts=starts, ends=ends)
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
        if self.opset < 4 and self.dtype not in ("float32", "float16"):
            return None  # Concat-1 takes floats
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
        # negative axes came with Concat-11 (onnxruntime and onnx.reference take them before)
        written = axis - r if rng.random() < (0.3 if self.opset >= 11 else 0.1) else axis
        if self.opset < 4 and axis == 1 and rng.random() < 0.6:
            self.kinds["Concat1.default_axis"] += 1
            return self.emit("Concat", ins, tuple(out))
        return self.emit("Concat", ins, tuple(out), axis=written)

    def pad(self, x: str) -> str | None:
        rng, s = self.rng, self.shapes[x]
        r = len(s)
        if not self._pad_takes_dtype():
            return None
        if self.opset < 2 and not self.pad1:
            return None  # Pad-1, which dmlgraph refuses: only in cases meant to hold one
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
        if self.opset < 11:
            return self._pad_attributes(x, begins + ends, mode, tuple(out))
        ins = [x, self.param(begins + ends, "pd")]
        if mode == "constant" and rng.random() < 0.6:
            ins.append(self.new_const((), self.dtype))
        if use_axes:
            if len(ins) == 2:
                ins.append("")
            ins.append(self.ints([a - r if rng.random() < 0.3 else a for a in axes], "pa"))
        self.kinds[f"Pad.{mode}"] += 1
        return self.emit("Pad", ins, tuple(out), mode=mode)

    def _pad_takes_dtype(self) -> bool:
        """Whether the case's Pad version takes its dtype: Pad-1 and Pad-2 floats, Pad-11
        numbers (bool came with Pad-13)."""
        if self.opset < 11:
            return self.dtype in ("float32", "float16")
        return self.opset >= 13 or self.dtype != "bool"

    def _pad_attributes(
        self, x: str, pads: list[int], mode: str, shape: tuple[int, ...]
    ) -> str:
        """Pad-1 (``paddings``; dmlgraph refuses it) or Pad-2 (``pads``), a float ``value``
        exact in float16 now and then."""
        attrs: dict[str, Any] = {"paddings" if self.opset < 2 else "pads": pads}
        if mode != "constant" or self.rng.random() < 0.7:
            attrs["mode"] = mode
        if mode == "constant" and self.rng.random() < 0.6:
            attrs["value"] = float(self.rng.choice([0.0, -0.0, 1.5, -2.25, 7.0, 1e4]))
        self.kinds[f"Pad{'1' if self.opset < 2 else '2'}.{mode}"] += 1
        self.kinds["Pad.negative_pads"] += any(p < 0 for p in pads)
        return self.emit("Pad", [x], shape, **attrs)

    def relu(self, x: str) -> str | None:
        if self.opset < 6:
            return None  # onnxruntime 1.32 has no Relu-1 kernel, which dmlgraph runs on it
        if self.dtype not in ("float32", "float16") or self.neg_zero:
            return None
        return self.emit("Relu", [x], self.shapes[x])

    def add(self, x: str) -> str | None:
        if self.dtype in ("bool",) or (self.dtype == "uint8" and self.opset < 14):
            return None
        if self.opset < 7:
            return None  # Add-1 and Add-6 broadcast by attribute; onnxruntime has no kernel
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
                else None  # (a 0 copies the input's size before allowzero)
            )
        if self.opset < 5:  # Reshape-1: attribute `shape`, floats
            if self.dtype not in ("float32", "float16"):
                return None
            out = self.emit("Reshape", [x], tuple(new))
            self.nodes[-1].attribute.append(helper.make_attribute("shape", written))
            return out
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
            if crop is not None and self._pad_takes_dtype() and self.opset >= 2:
                self.kinds["twin_crop"] += 1
                mode = str(self.rng.choice(["constant", "edge", "reflect"]))
                if self.opset < 11:
                    return self._pad_attributes(node.input[0], crop, mode, shape)
                return self.emit("Pad", [node.input[0], self.ints(crop, "tw")], shape, mode=mode)
        self.kinds["twin"] += 1
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        return self.emit(node.op_type, list(node.input), shape, **attrs)

    def _slice_as_crop(self, node: onnx.NodeProto) -> list[int] | None:
        inits = {t.name: numpy_helper.to_array(t) for t in self.inits}
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        if "starts" in attrs:  # Slice-1
            inits = {"st": np.array(attrs["starts"]), "en": np.array(attrs["ends"])}
            if "axes" in attrs:
                inits["ax"] = np.array(attrs["axes"])
            node = helper.make_node("Slice", [node.input[0], *inits], ["_"])
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


# ------------------------------------------------------------------------------ control flow
#: a fraction of cases get an If, a Loop or a Scan over tensors of the graph built so far,
#: drawn from a stream of their own (``[seed, CFLOW_STREAM]``), so a seed that gets none is
#: the case it always was
CFLOW_FRACTION = 0.2
CFLOW_STREAM = 0xCF
CFLOW_LIMIT = 1 << 16  # elements of a tensor a subgraph starts from (a Loop may grow it 81x)


def wants_cflow(seed: int) -> bool:
    """Whether make_case(seed) draws control flow (a big case then gets none)."""
    return bool(np.random.default_rng([seed, CFLOW_STREAM]).random() < CFLOW_FRACTION)


def _sub(
    b: Builder, rng: np.random.Generator, tag: str, starts: dict[str, tuple[int, ...]],
    limit: int = CFLOW_LIMIT,
) -> Builder:
    """A builder for a subgraph: its own nodes and constants, the model's inputs (a new one is
    an enclosing tensor the body reads), starting from ``starts`` and, sometimes, a few
    enclosing tensors of at most ``limit`` elements it reads by name."""
    sub = Builder(rng, b.opset, b.dtype, False, inputs=b.inputs, tag=f"{b.name(tag)}_")
    sub.neg_zero = b.neg_zero
    for n, s in starts.items():
        sub.shapes[n] = s
        sub.order.append(n)
    outer = [t for t in b.order if t not in b.unshaped and b.shapes[t]
             and int(np.prod(b.shapes[t])) <= limit]
    for _ in range(int(rng.integers(0, 3))):
        if outer:
            t = outer[int(rng.integers(0, len(outer)))]
            sub.shapes[t] = b.shapes[t]
            sub.order.insert(0, t)
            sub.kinds["cf.outer_read"] += 1
    return sub


def _grow(sub: Builder, n: int) -> None:
    """n nodes of the usual ops into a subgraph, as make_case grows the main graph."""
    names, weights = zip(*OPS)
    p = np.array(weights, float) / sum(weights)
    for _ in range(200):
        if len(sub.nodes) >= n:
            return
        x = sub.pick()
        op = names[int(sub.rng.choice(len(names), p=p))]
        if not sub.shapes[x] or int(np.prod(sub.shapes[x])) > CFLOW_LIMIT:
            continue
        getattr(sub, op)(x)


def _made(sub: Builder) -> list[str]:
    return [o for n in sub.nodes for o in n.output]


def _to_shape(sub: Builder, t: str, target: tuple[int, ...]) -> str:
    """A node making t's values of exactly the shape ``target`` (a Slice cropping, then a
    constant Pad growing each axis at either end; non-negative pads, which onnx.reference
    runs), or t's Identity where it has it already (a body making one of its inputs, or one
    tensor twice, an output is onnxruntime's known divergence)."""
    rng, s = sub.rng, sub.shapes[t]
    if s == target:
        return sub.emit("Identity", [t], s)
    sub.kinds["cf.to_shape"] += 1
    if any(w < d for d, w in zip(s, target)):
        starts = [int(rng.integers(0, d - w + 1)) if w < d else 0 for d, w in zip(s, target)]
        ends = [st + min(w, d) for st, d, w in zip(starts, s, target)]
        s = tuple(min(d, w) for d, w in zip(s, target))
        t = (sub.emit("Slice", [t], s, starts=starts, ends=ends) if sub.opset < 10  # Slice-1
             else sub.emit("Slice", [t, sub.ints(starts, "ts"), sub.ints(ends, "te")], s))
        if s == target:
            return t
    begins = [int(rng.integers(0, w - d + 1)) for d, w in zip(s, target)]
    ends = [w - d - b for d, w, b in zip(s, target, begins)]
    if sub.opset < 11:
        return _grow_old(sub, t, begins, ends)
    return sub.emit("Pad", [t, sub.ints(begins + ends, "ts")], target, mode="constant")


def _grow_old(sub: Builder, t: str, begins: list[int], ends: list[int]) -> str:
    """t grown by ``begins`` and ``ends`` elements on each axis at an opset before 11: a
    Pad-2 (attribute ``pads``, floats only), or a Concat-4 of constants on each side."""
    s = sub.shapes[t]
    target = tuple(d + b + e for d, b, e in zip(s, begins, ends))
    if sub.opset >= 2 and sub.dtype in ("float32", "float16") and sub.rng.random() < 0.5:
        return sub.emit("Pad", [t], target, pads=begins + ends, mode="constant")
    for a, (b, e) in enumerate(zip(begins, ends)):
        s = sub.shapes[t]
        parts = [sub.new_const(s[:a] + (n,) + s[a + 1:]) if n else "" for n in (b, e)]
        parts = [p for p in (parts[0], t, parts[1]) if p]
        if len(parts) > 1:
            grown = list(sub.shapes[t])
            grown[a] += b + e
            t = sub.emit("Concat", parts, tuple(grown), axis=a)
    return t


def _output(sub: Builder, want_rank: int | None, taken: set[str]) -> str:
    """A tensor the subgraph makes (never one of its inputs), of want_rank if given."""
    made = [t for t in _made(sub) if t not in taken
            and (want_rank is None or len(sub.shapes[t]) == want_rank)]
    if made and sub.rng.random() < 0.85:
        return made[-1 - int(sub.rng.integers(0, min(3, len(made))))]
    src = [t for t in sub.order if want_rank is None or len(sub.shapes[t]) == want_rank]
    src = src or sub.order
    return sub.emit("Identity", [src[-1]], sub.shapes[src[-1]])


def _graph(sub: Builder, name: str, inputs, outputs, declare: bool) -> onnx.GraphProto:
    """The subgraph; each constant its own initializer or, half the time, the enclosing
    graph's (read by name)."""
    own, outer = [], []
    for init in sub.inits:
        (own if sub.rng.random() < 0.5 else outer).append(init)
    sub.outer_inits[:] = outer
    elem = ELEM[sub.dtype]

    def vi(n: str, e: int, shape: Any) -> onnx.ValueInfoProto:
        return helper.make_tensor_value_info(n, e, shape)

    return helper.make_graph(
        sub.nodes,
        name,
        [vi(n, e, s) for n, e, s in inputs],
        [vi(n, elem, list(sub.shapes[n]) if declare and n in sub.shapes else None)
         for n in outputs],
        own,
    )


def _scalar_input(b: Builder, elem: str, values: tuple[int, int]) -> str:
    name = b.name("k")
    b.inputs.append((name, (), f"scalar:{elem}:{values[0]},{values[1]}"))
    return name


def _adopt(b: Builder, sub: Builder) -> None:
    b.inits.extend(sub.outer_inits)
    b.kinds.update(sub.kinds)


def add_control_flow(b: Builder, rng: np.random.Generator) -> None:
    """An If, a Loop or a Scan reading the graph's tensors, its outputs the graph's (and now
    and then sliced or padded further)."""
    main_rng, b.rng = b.rng, rng
    try:
        kind = str(rng.choice(["If", "Loop", "Scan"]))
        cands = [t for t in b.order if b.shapes[t] and int(np.prod(b.shapes[t])) <= CFLOW_LIMIT]
        if not cands:
            return
        if kind == "Scan":  # onnxruntime 1.32 fails on, or dies of SIGFPE on, empty scans
            cands = [t for t in cands if all(b.shapes[t])] or cands
            kind = kind if all(b.shapes[cands[-1]]) else "Loop"
        x = cands[-1 - int(rng.integers(0, min(3, len(cands))))]
        outs = {"If": _if, "Loop": _loop, "Scan": _scan}[kind](b, rng, x)
        b.kinds[f"cf.{kind}"] += 1
        for t in outs:
            if t not in b.unshaped and b.shapes[t] and rng.random() < 0.3:
                getattr(b, str(rng.choice(["slice_", "pad", "concat"])))(t)
    finally:
        b.rng = main_rng


def _if(b: Builder, rng: np.random.Generator, x: str) -> list[str]:
    u = rng.random()
    if u < 0.15:  # a constant condition
        cond = b.name("cc")
        b.inits.append(numpy_helper.from_array(np.array(rng.random() < 0.5), cond))
    else:
        cond = _scalar_input(b, "bool", (int(rng.random() < 0.5), int(rng.random() < 0.5)))
    k = int(rng.integers(1, 3))
    branches, outs = [], []
    for which in ("then", "else"):
        sub = _sub(b, rng, which[0], {x: b.shapes[x]})
        _grow(sub, int(rng.integers(1, 5)))
        taken: set[str] = set()
        for j in range(k):
            rank = len(outs[j][1]) if which == "else" and rng.random() < 0.7 else None
            t = _output(sub, rank, taken)
            taken.add(t)
            if which == "then":
                outs.append((t, sub.shapes[t]))
            else:
                outs[j] = (outs[j][0], outs[j][1], t, sub.shapes[t])
        branches.append(sub)
    then, else_ = branches
    then_outs = [o[0] for o in outs]
    else_outs = [o[2] for o in outs]
    declare = rng.random() < 0.5
    g_then = _graph(then, "then", [], then_outs, declare)
    g_else = _graph(else_, "else", [], else_outs, declare)
    _adopt(b, then)
    _adopt(b, else_)
    names = [b.name("if") for _ in range(k)]
    b.nodes.append(helper.make_node("If", [cond], names, name=names[0],
                                    then_branch=g_then, else_branch=g_else))
    for n, o in zip(names, outs):
        b.order.append(n)
        b.shapes[n] = o[1]
        if o[1] != o[3]:
            b.unshaped.add(n)  # which branch runs is the feed's
    b.kinds["cf.if_shapes_differ"] += any(o[1] != o[3] for o in outs)
    return names


def _loop(b: Builder, rng: np.random.Generator, x: str) -> list[str]:
    trips = (int(rng.integers(0, 5)), int(rng.integers(0, 5)))
    if rng.random() < 0.5:
        m = _scalar_input(b, "int64", trips)
    else:
        m = b.name("m")
        b.inits.append(numpy_helper.from_array(np.array(trips[0], np.int64), m))
    u = rng.random()
    if u < 0.4:
        cond = ""
    elif u < 0.7:
        cond = b.name("lc")
        b.inits.append(numpy_helper.from_array(np.array(True), cond))
    else:
        cond = _scalar_input(b, "bool", (int(rng.random() < 0.8), int(rng.random() < 0.8)))
    carried = [x]
    more = [t for t in b.order if t != x and b.shapes[t] and t not in b.unshaped
            and int(np.prod(b.shapes[t])) <= CFLOW_LIMIT]
    if more and rng.random() < 0.3:
        carried.append(more[int(rng.integers(0, len(more)))])
    growing = rng.random() < 0.3
    it, c_in = b.name("iter"), b.name("cin")
    ins = {f"{b.name('v')}": b.shapes[t] for t in carried}
    sub = _sub(b, rng, "l", ins)
    c_out = sub.emit("Identity", [c_in], ())
    sub.order.remove(c_out)
    sub.shapes[it], sub.shapes[c_in] = (), ()
    if growing:
        nexts = [_grow_step(sub, v, int(rng.integers(1, 4)), it) for v in ins]
        scans: list[str] = []
    else:
        nexts, scans = _grown_outputs(sub, rng, ins, {c_out}, fewest_scans=0)
    elem = ELEM[b.dtype]
    body_ins = [(it, onnx.TensorProto.INT64, []), (c_in, onnx.TensorProto.BOOL, [])] + [
        (v, elem, None if growing else list(s)) for v, s in ins.items()]
    body = _graph(sub, "body", body_ins, [c_out, *nexts, *scans], not growing and
                  rng.random() < 0.7)
    body.output[0].type.tensor_type.elem_type = onnx.TensorProto.BOOL
    del body.output[0].type.tensor_type.shape.dim[:]
    _adopt(b, sub)
    finals = [b.name("lf") for _ in carried]
    stacked = [b.name("ls") for _ in scans]
    b.nodes.append(helper.make_node("Loop", [m, cond, *carried], finals + stacked,
                                    name=finals[0], body=body))
    for f, t in zip(finals, carried):
        b.order.append(f)
        b.shapes[f] = b.shapes[t]
        if growing:
            b.unshaped.add(f)
    for n, t in zip(stacked, scans):
        b.order.append(n)
        b.shapes[n] = (0, *sub.shapes[t])
        b.unshaped.add(n)
    b.kinds["cf.loop_growing"] += growing
    b.kinds["cf.loop_scan_outputs"] += len(scans)
    return finals + stacked


def _grow_step(sub: Builder, v: str, n: int, it: str) -> str:
    """A carried value's next, of another shape each trip: Slice, constant Pads of
    non-negative pads and Concats of itself, which fit any size (a Slice's bounds clamp),
    now and then a Slice starting at the iteration number."""
    rng = sub.rng
    t = v
    for _ in range(n):
        u = rng.random()
        r = len(sub.shapes[t])
        if u < 0.3:
            t = sub.slice_(t) or t
        elif u < 0.55:
            pads = [int(p) for p in rng.integers(0, 3, 2 * r)]
            t = sub.emit("Pad", [t, sub.ints(pads, "gp")],
                         tuple(d + pads[i] + pads[i + r] for i, d in enumerate(sub.shapes[t])),
                         mode="constant")
        elif u < 0.8:
            a = int(rng.integers(0, r))
            k = int(rng.integers(2, 4))
            s = list(sub.shapes[t])
            s[a] *= k
            t = sub.emit("Concat", [t] * k, tuple(s), axis=a)
        else:
            st = sub.emit("Reshape", [it, sub.ints([1], "rs")], (1,))
            sub.order.remove(st)
            a = int(rng.integers(0, r))
            s = list(sub.shapes[t])
            t = sub.emit("Slice", [t, st, sub.ints([INT64_MAX], "en"), sub.ints([a], "ax")],
                         tuple(s))
            sub.kinds["cf.iter_slice"] += 1
    if t == v:
        t = sub.emit("Identity", [v], sub.shapes[v])
    return t


def _grown_outputs(
    sub: Builder, rng: np.random.Generator, states: dict[str, tuple[int, ...]],
    taken: set[str], fewest_scans: int,
) -> tuple[list[str], list[str]]:
    """A Loop's or Scan's body grown in ``sub``: each state's next value, of its shape, then
    ``fewest_scans`` to 2 scan outputs, none a tensor already ``taken`` as an output."""
    _grow(sub, int(rng.integers(1, 6)))
    nexts = []
    for shape in states.values():
        t = _output(sub, len(shape), taken)
        t = _to_shape(sub, t, shape) if (sub.shapes[t] != shape or t in taken) else t
        taken.add(t)
        nexts.append(t)
    scans = []
    for _ in range(int(rng.integers(fewest_scans, 3))):
        t = _output(sub, None, taken)
        if t in taken:
            t = sub.emit("Identity", [t], sub.shapes[t])
        taken.add(t)
        scans.append(t)
    return nexts, scans


def _scan_body(
    b: Builder, rng: np.random.Generator, sub: Builder, st_ins: dict[str, tuple[int, ...]],
    sc_ins: dict[str, tuple[int, ...]],
) -> tuple[onnx.GraphProto, list[str]]:
    """A Scan's body (any version's) grown in ``sub`` from its state and scan inputs: each
    state's next value, of its shape, then 0-2 scan outputs (1-2 without states); adopted
    into ``b``. The body, and its scan outputs' names."""
    nexts, scans = _grown_outputs(sub, rng, st_ins, set(), fewest_scans=0 if st_ins else 1)
    elem = ELEM[b.dtype]
    body_ins = [(v, elem, list(shp)) for v, shp in {**st_ins, **sc_ins}.items()]
    body = _graph(sub, "body", body_ins, [*nexts, *scans], rng.random() < 0.7)
    _adopt(b, sub)
    return body, scans


def _scan(b: Builder, rng: np.random.Generator, x: str) -> list[str]:
    s = b.shapes[x]
    r = len(s)
    axis = int(rng.integers(0, r))
    length = s[axis]
    n_scan = 1 if rng.random() < 0.7 else 2
    dirs_in = [int(rng.random() < 0.3) for _ in range(n_scan)]
    slice_shape = s[:axis] + s[axis + 1:]
    states = []
    more = [t for t in b.order if b.shapes[t] and t not in b.unshaped
            and int(np.prod(b.shapes[t])) <= CFLOW_LIMIT]
    for _ in range(int(rng.integers(0, 3))):
        if more and rng.random() < 0.6:
            states.append(more[int(rng.integers(0, len(more)))])
        else:
            states.append(b.new_const(random_shape(rng, int(rng.integers(1, 4)), 256, False)))
    st_ins = {b.name("sv"): b.shapes[t] for t in states}
    sc_ins = {b.name("sx"): slice_shape for _ in range(n_scan)}
    sub = _sub(b, rng, "s", {**st_ins, **sc_ins})
    body, scans = _scan_body(b, rng, sub, st_ins, sc_ins)
    # onnxruntime 1.32 dies of SIGFPE stacking an output of no elements on an axis but 0
    out_axes = [int(rng.integers(-(len(sub.shapes[t]) + 1), len(sub.shapes[t]) + 1))
                if all(sub.shapes[t]) else 0 for t in scans]
    attrs: dict[str, Any] = {"num_scan_inputs": n_scan}
    if axis or rng.random() < 0.3:
        attrs["scan_input_axes"] = [axis - r if rng.random() < 0.3 else axis] * n_scan
    if any(dirs_in) or rng.random() < 0.3:
        attrs["scan_input_directions"] = dirs_in
    if any(out_axes) or (scans and rng.random() < 0.3):
        attrs["scan_output_axes"] = out_axes
    if scans and rng.random() < 0.4:
        attrs["scan_output_directions"] = [int(rng.random() < 0.5) for _ in scans]
    finals = [b.name("sf") for _ in states]
    stacked = [b.name("ss") for _ in scans]
    b.nodes.append(helper.make_node("Scan", [*states, *[x] * n_scan], finals + stacked,
                                    name=(finals + stacked)[0], body=body, **attrs))
    for f, t in zip(finals, states):
        b.order.append(f)
        b.shapes[f] = b.shapes[t]
    for n, t, a in zip(stacked, scans, out_axes):
        e = list(sub.shapes[t])
        a = a % (len(e) + 1)
        b.order.append(n)
        b.shapes[n] = tuple(e[:a] + [length] + e[a:])
    b.kinds["cf.scan_inputs"] += n_scan
    b.kinds["cf.scan_outputs"] += len(scans)
    return finals + stacked


# ------------------------------------------------------------------------------ Scan-8
#: a fraction of cases are built at opset 8 with a Scan-8 (a batch axis 0 and a sequence
#: axis 1 on its inputs, ``sequence_lens``, ``directions``), drawn from a stream of their own
#: (``[seed, SCAN8_STREAM]``); an old-opset case of opset 8 gets one too
SCAN8_FRACTION = 0.05
SCAN8_STREAM = 0x5C8
SCAN8_OPSET = 8
#: a Scan-8's steps (batch size times sequence length) and the elements of an enclosing
#: tensor its body reads at most: each step's outputs are stacked (a body reading 29K
#: elements over 194 x 148 steps made 4 GB, and the worker was killed)
SCAN8_STEPS = 256
SCAN8_BODY_LIMIT = 4096
#: of sequence_lens given, those that may hold a 0
SCAN8_ZERO_LENGTHS = 0.2


def wants_scan8(seed: int) -> bool:
    """Whether make_case(seed) is an opset-8 case meant to hold a Scan-8 (a big one gets
    none)."""
    if np.random.default_rng([seed, SCAN8_STREAM]).random() < SCAN8_FRACTION:
        return True
    old_rng = np.random.default_rng([seed, OLDOPS_STREAM])
    return bool(old_rng.random() < OLDOPS_FRACTION) and int(
        old_rng.choice(OLD_OPSETS)) == SCAN8_OPSET


def add_scan8(b: Builder, rng: np.random.Generator) -> None:
    """A Scan-8 over a tensor of the graph of rank 2 or more and no empty axis (onnxruntime
    refuses a batch or a sequence of 0: ONNX allows them, docs/DECISIONS.md), now and then
    transposed first or a vector made one batch entry; its outputs the graph's, sliced or padded
    further now and then."""
    main_rng, b.rng = b.rng, rng
    try:
        cands = [t for t in b.order if b.shapes[t] and all(b.shapes[t])
                 and int(np.prod(b.shapes[t])) <= CFLOW_LIMIT
                 and int(np.prod(b.shapes[t][:2])) <= SCAN8_STEPS]
        if not cands:
            return
        x = cands[-1 - int(rng.integers(0, min(3, len(cands))))]
        if len(b.shapes[x]) == 1:
            b.kinds["cf.scan8_one_batch"] += 1
            x = b.emit("Reshape", [x, b.ints([1, b.shapes[x][0]], "rs")], (1, *b.shapes[x]))
        elif rng.random() < 0.3:
            t = b.transpose(x)
            x = t if t and int(np.prod(b.shapes[t][:2])) <= SCAN8_STEPS else x
        outs = _scan8(b, rng, x)
        b.kinds["cf.Scan8"] += 1
        for t in outs:
            if b.shapes[t] and rng.random() < 0.3:
                getattr(b, str(rng.choice(["slice_", "pad", "concat"])))(t)
    finally:
        b.rng = main_rng


def _fits(b: Builder, t: str) -> bool:
    return bool(b.shapes[t]) and int(np.prod(b.shapes[t])) <= CFLOW_LIMIT


def _scan8(b: Builder, rng: np.random.Generator, x: str) -> list[str]:
    s = b.shapes[x]
    batch, length = s[0], s[1]
    scanned = [x]
    alike = [t for t in b.order if t != x and _fits(b, t) and b.shapes[t][:2] == (batch, length)]
    for _ in range(int(rng.random() < 0.3)):
        scanned.append(alike[int(rng.integers(0, len(alike)))] if alike and rng.random() < 0.6
                       else x)
    states = []
    for _ in range(int(rng.integers(0, 3))):
        pool = [t for t in b.order if _fits(b, t) and b.shapes[t][0] == batch]
        if pool and rng.random() < 0.5:
            states.append(pool[int(rng.integers(0, len(pool)))])
        else:
            shape = (batch, *random_shape(rng, int(rng.integers(0, 3)), 64, False))
            states.append(b.new_const(shape) if rng.random() < 0.6 else b.new_input(shape))
    st_ins = {b.name("sv"): b.shapes[t][1:] for t in states}
    sc_ins = {b.name("sx"): b.shapes[t][2:] for t in scanned}
    sub = _sub(b, rng, "s", {**st_ins, **sc_ins}, SCAN8_BODY_LIMIT)
    body, scans = _scan_body(b, rng, sub, st_ins, sc_ins)
    lens = _sequence_lens(b, rng, batch, length)
    directions = [int(rng.random() < 0.4) for _ in scanned]
    attrs: dict[str, Any] = {"num_scan_inputs": len(scanned)}
    if any(directions) or rng.random() < 0.3:
        attrs["directions"] = directions
    finals = [b.name("sf") for _ in states]
    stacked = [b.name("ss") for _ in scans]
    b.nodes.append(helper.make_node("Scan", [lens, *states, *scanned], finals + stacked,
                                    name=(finals + stacked)[0], body=body, **attrs))
    for f, t in zip(finals, states):
        b.order.append(f)
        b.shapes[f] = b.shapes[t]
    for n, t in zip(stacked, scans):
        b.order.append(n)
        b.shapes[n] = (batch, length, *sub.shapes[t])
    b.kinds["cf.scan8_states"] += len(states)
    b.kinds["cf.scan8_inputs"] += len(scanned)
    b.kinds["cf.scan8_outputs"] += len(scans)
    b.kinds["cf.scan8_reversed"] += any(directions)
    return finals + stacked


def _sequence_lens(b: Builder, rng: np.random.Generator, batch: int, length: int) -> str:
    """A Scan-8's sequence_lens: none, a constant or a graph input, of lengths 1 to the
    longest, or now and then from 0 (ONNX allows it; onnxruntime refuses it, docs/DECISIONS.md: the
    oracle is then ``numpy_eval``)."""
    u = rng.random()
    if u < 0.35:
        return ""
    low = 0 if rng.random() < SCAN8_ZERO_LENGTHS else 1
    values = [int(rng.integers(low, length + 1)) if rng.random() < 0.7 else length
              for _ in range(batch)]
    b.kinds["cf.scan8_short"] += any(v < length for v in values)
    b.kinds["cf.scan8_zero_length"] += 0 in values
    if u < 0.7:
        return b.ints(values, "sl")
    name = b.name("sl")
    b.inputs.append((name, (batch,), "int64:" + ",".join(map(str, values))))
    return name


# ------------------------------------------------------------------------------ old opsets
#: a fraction of cases are built at an opset of 1-12 instead (Slice-1's attributes, Slice-10,
#: Pad-1's ``paddings``, Pad-2's attributes, Pad-11, Concat-1's optional axis, Concat-4),
#: drawn from a stream of their own (``[seed, OLDOPS_STREAM]``): the other seeds build the
#: cases they always did. They get no If, Loop or Scan-9; those of opset 8 a Scan-8 (above).
OLDOPS_FRACTION = 0.15
OLDOPS_STREAM = 0x01D
OLD_OPSETS = list(range(1, 13))
#: of opset-1 cases, those that may hold a Pad-1 (refused by dmlgraph: the whole case is)
PAD1_FRACTION = 0.3


def wants_oldops(seed: int) -> bool:
    """Whether make_case(seed) builds its graph at an opset before 13."""
    return bool(np.random.default_rng([seed, OLDOPS_STREAM]).random() < OLDOPS_FRACTION)


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


def _input_elem(kind: str) -> int:
    """A graph input's element type by its kind: DTYPE, int64:VALUES (a run-time Slice or
    Pad parameter), scalar:DTYPE:FIRST,SECOND (an If's condition, a Loop's trip count)."""
    if kind.startswith("int64:"):
        return onnx.TensorProto.INT64
    return ELEM[kind.split(":")[1]] if kind.startswith("scalar:") else ELEM[kind]


def make_case(seed: int) -> Case:
    rng = np.random.default_rng(seed)
    opset = int(rng.choice([13, 14, 17, 18, 19, 21]))
    dtype = str(rng.choice(DTYPES, p=[0.35, 0.2, 0.2, 0.1, 0.15]))
    big = rng.random() < 0.04
    old_rng = np.random.default_rng([seed, OLDOPS_STREAM])
    old = bool(old_rng.random() < OLDOPS_FRACTION)
    if old:  # the old forms take floats only (Pad-2, Concat-1): float dtypes more often
        opset = int(old_rng.choice(OLD_OPSETS))
        dtype = str(old_rng.choice(DTYPES, p=[0.5, 0.25, 0.1, 0.05, 0.1]))
    s8_rng = np.random.default_rng([seed, SCAN8_STREAM])
    if s8_rng.random() < SCAN8_FRACTION:  # opset 8, its old forms, and a Scan-8
        old, opset, big = True, SCAN8_OPSET, False
        dtype = str(s8_rng.choice(DTYPES, p=[0.5, 0.25, 0.1, 0.05, 0.1]))
    b = Builder(rng, opset, dtype, big)
    b.pad1 = old and opset < 2 and bool(old_rng.random() < PAD1_FRACTION)
    b.kinds["old_opset"] += old
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
    cf_rng = np.random.default_rng([seed, CFLOW_STREAM])  # the base case's draws unchanged
    if cf_rng.random() < CFLOW_FRACTION and not big and not old:
        add_control_flow(b, cf_rng)
    if opset == SCAN8_OPSET and not big:
        add_scan8(b, s8_rng)
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
        if not declare or t in b.unshaped:
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
                _input_elem(kind),
                list(s) if kind.startswith(("int64:", "scalar:")) else input_dims(n, s),
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
            elif kind.startswith("scalar:"):  # scalar:DTYPE:FIRST,SECOND, one value a feed
                _, elem, values = kind.split(":")
                f[n] = np.array(int(values.split(",")[len(feeds)]), dtype=elem)
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
        # drawn last, so every case and knob before it is what the same seed always made
        "piece_bytes": int(rng.choice([256 << 10, 256 << 10, 64, 4096])),
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


def _attributes_as_inputs(op: str, ins: list, attrs: dict[str, Any]) -> list:
    """Slice-1's, Pad-1's and Pad-2's, and Reshape-1's attributes as the later inputs
    (Pad-1's ``paddings`` read as its attribute's text lays them out, begins then ends; Pad-2's
    float ``value`` converted to the data's type)."""
    if op == "Slice" and "starts" in attrs:
        return [ins[0], attrs["starts"], attrs["ends"], attrs.get("axes")]
    if op == "Pad" and len(ins) == 1:
        pads = attrs.get("pads", attrs.get("paddings"))
        return [ins[0], pads, np.float32(attrs.get("value", 0.0))]
    if op == "Reshape" and len(ins) == 1:
        return [ins[0], attrs["shape"]]
    return ins


def numpy_eval(
    model: onnx.ModelProto, feeds: dict[str, np.ndarray], widen: int = 0
) -> list[np.ndarray | None]:
    """The graph in NumPy, each op from its ONNX definition; None for an output that a Scan-9+
    reaches (left to onnxruntime and onnx.reference); a Loop's (``_loop_eval``) and a
    Scan-8's (``_scan8_eval``) by their texts.
    ``widen`` -1 or 1: instead a lower or upper bound (float64) of each float16 value, under
    any choice of where float16 values are rounded and where kept in float32 (``_widened``)."""
    env = {k: _unrounded(v) for k, v in feeds.items()} if widen else dict(feeds)
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
    _eval_graph(model.graph, env, opset, widen)
    return [env.get(o.name) for o in model.graph.output]


def _unrounded(a: np.ndarray) -> np.ndarray:
    """A float16 array as float64 (``numpy_eval``'s bounds), others as they are."""
    return a.astype(np.float64) if a.dtype == np.float16 else a


def _widened(exact: np.ndarray, side: int) -> np.ndarray:
    """A bound of a float16 Add's result, given the exact sum of its inputs' bounds (float64):
    one float16 spacing toward ``side``, past where rounding to float16 (half a spacing) or to
    float32 first (onnxruntime's CPU provider computes chains of float16 ops in float32 and
    rounds once, InsertCastTransformer) could take it, as rounding is monotonic; infinite
    toward ``side`` past float16's range, where float16 overflows and float32 may not."""
    size = np.abs(exact)
    step = np.spacing(np.minimum(size, 32768.0).astype(np.float16)).astype(np.float64)
    bound = np.where((size > F16_MAX) & (np.sign(exact) == side), side * np.inf,
                     exact + side * step)
    return np.where(np.isfinite(exact), bound, exact)


def _eval_graph(
    graph: onnx.GraphProto, env: dict[str, np.ndarray], opset: int, widen: int = 0
) -> None:
    """numpy_eval of a graph's nodes into ``env`` (which holds the enclosing graph's names)."""
    for init in graph.initializer:
        value = numpy_helper.to_array(init)
        env[init.name] = _unrounded(value) if widen else value
    for node in graph.node:
        if any(n and n not in env for n in node.input):
            continue
        if node.op_type == "Scan" and opset == SCAN8_OPSET:
            env.update(_scan8_eval(node, env, opset))
            continue
        if node.op_type == "If":
            branch = "then_branch" if bool(env[node.input[0]]) else "else_branch"
            body = next(helper.get_attribute_value(a) for a in node.attribute if a.name == branch)
            inner = dict(env)
            _eval_graph(body, inner, opset, widen)
            env.update({n: inner[v.name] for n, v in zip(node.output, body.output)
                        if v.name in inner})
            continue
        if node.op_type == "Loop":
            env.update(_loop_eval(node, env, opset, widen))
            continue
        if node.op_type == "Scan":
            continue
        ins = [env[n] if n else None for n in node.input]
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        ins = _attributes_as_inputs(node.op_type, ins, attrs)
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
            y = np.concatenate(ins, axis=attrs.get("axis", 1))  # Concat-1's default
        elif node.op_type == "Pad":
            r = x.ndim
            pads = [int(p) for p in ins[1]]
            fill = ins[2] if len(ins) > 2 and ins[2] is not None else np.zeros((), x.dtype)
            fill = np.asarray(fill).astype(x.dtype)
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
            if widen and y.dtype == np.float64:  # a float16 Add's (``_unrounded``)
                y = _widened(y, widen)
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


def _loop_eval(
    node: onnx.NodeProto, env: dict[str, np.ndarray], opset: int, widen: int = 0
) -> dict[str, np.ndarray]:
    """A Loop's outputs, from its text: trips while i < M (M given) and the condition holds
    (the ``cond`` input before the first trip, then the body's; without a ``cond`` input the
    body's is ignored, a for loop); the body takes the iteration number (int64), the
    condition (true without a ``cond`` input) and the carried values, and reads the
    enclosing graph's tensors by name. The carried values' last (their initial ones after no
    trip), then each scan output's trips stacked on a new axis 0; after no trip, zeros of
    the shape the body declares with 0 before it, or left out (unknown) where it declares
    none. (onnx 1.23's evaluator ran no trip without ``cond`` and joined scan outputs with
    ``np.vstack``, a case of this fuzzer, seed 454734, failing: "need at least one array to
    concatenate".)"""
    body = next(helper.get_attribute_value(a) for a in node.attribute if a.name == "body")
    ins = [env[n] if n else None for n in node.input] + [None] * (2 - len(node.input))
    limit, given, carried = ins[0], ins[1], list(ins[2:])
    if limit is None and given is None:
        raise ValueError("a Loop without M or cond runs forever by its text: no case makes one")
    going = True if given is None else bool(np.asarray(given).reshape(-1)[0])
    trips = None if limit is None else int(np.asarray(limit).reshape(-1)[0])
    names = [i.name for i in body.input]
    n_carried = len(carried)
    scans: list[list[np.ndarray]] = [[] for _ in body.output[1 + n_carried:]]
    trip = 0
    while going and (trips is None or trip < trips):
        local = dict(env)
        local.update(zip(names, [np.array(trip, np.int64), np.array(going), *carried]))
        _eval_graph(body, local, opset, widen)
        made = [local[o.name] for o in body.output]
        if given is not None:
            going = bool(np.asarray(made[0]).reshape(-1)[0])
        carried = made[1:1 + n_carried]
        for kept, value in zip(scans, made[1 + n_carried:]):
            kept.append(value)
        trip += 1
    got = dict(zip(node.output, carried))
    for o, kept, declared in zip(node.output[n_carried:], scans, body.output[1 + n_carried:]):
        zeros = _declared_zeros(declared) if not kept else None
        if kept:
            got[o] = np.stack(kept)
        elif zeros is not None:
            got[o] = np.zeros((0, *zeros.shape), np.float64 if widen and
                              zeros.dtype == np.float16 else zeros.dtype)
    return got


def _declared_zeros(value: onnx.ValueInfoProto) -> np.ndarray | None:
    """Zeros of a value's declared type and static shape; None where it declares neither."""
    tensor = value.type.tensor_type
    dims = tensor.shape.dim
    if not tensor.HasField("shape") or any(not d.HasField("dim_value") for d in dims):
        return None
    dtype = helper.tensor_dtype_to_np_dtype(tensor.elem_type)
    return np.zeros([d.dim_value for d in dims], dtype)


def _scan8_eval(
    node: onnx.NodeProto, env: dict[str, np.ndarray], opset: int
) -> dict[str, np.ndarray]:
    """A Scan-8's outputs, from its text: for each batch entry b (axis 0 of every input), the
    body runs ``sequence_lens[b]`` steps (all of axis 1 without it; 0 allowed: the final
    states are the initial ones), taking the scan inputs' step t of entry b, from the end of
    its sequence where ``directions`` says 1; the final states stacked by entry, each scan
    output's steps stacked on axis 1 after b, zeros past its sequence (the text leaves them
    undefined, onnxruntime writes zeros). A scan output no step made is zeros of the shape
    and type its body declares, or left out (unknown) where it declares none."""
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    body, k = attrs["body"], attrs["num_scan_inputs"]
    lens, *rest = [env[n] if n else None for n in node.input]
    n_states = len(rest) - k
    initial, scanned = rest[:n_states], rest[n_states:]
    directions = attrs.get("directions", [0] * k)
    batch, longest = rest[0].shape[0], scanned[0].shape[1]
    lengths = [longest] * batch if lens is None else [int(v) for v in lens]
    names = [i.name for i in body.input]
    finals: list[list[np.ndarray]] = [[] for _ in initial]
    steps: list[list[list[np.ndarray]]] = [[[] for _ in range(batch)]
                                           for _ in body.output[n_states:]]
    for b, n in enumerate(lengths):
        carried = [x[b] for x in initial]
        for t in range(n):
            local = dict(env)
            local.update(zip(names, carried))
            local.update((v, x[b, n - 1 - t if d else t])
                         for v, x, d in zip(names[n_states:], scanned, directions))
            _eval_graph(body, local, opset)
            made = [local[o.name] for o in body.output]
            carried = made[:n_states]
            for out, value in zip(steps, made[n_states:]):
                out[b].append(value)
        for final, value in zip(finals, carried):
            final.append(value)
    got = {o: np.stack(f) for o, f in zip(node.output, finals)}
    for o, out, declared in zip(node.output[n_states:], steps, body.output[n_states:]):
        first = next((row[0] for row in out if row), _declared_zeros(declared))
        if first is None:
            continue
        y = np.zeros((batch, longest, *first.shape), first.dtype)
        for b, row in enumerate(out):
            for t, value in enumerate(row):
                y[b, t] = value
        got[o] = y
    return got


# ------------------------------------------------------------------------------ running
def set_knobs(knobs: dict[str, Any]) -> None:
    from backends.numpy import threads as t

    t.native = knobs["native"] and t.Program is not None
    t.PARALLEL_BYTES = knobs["parallel_bytes"]
    t.BLOCK_BYTES = knobs["block_bytes"]
    t.SLAB_BYTES = knobs["slab_bytes"]
    t.PIECE_BYTES = knobs.get("piece_bytes", 256 << 10)


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
    if case.opset < 2 and any(n.op_type == "Pad" for n in model.graph.node):
        return _pad1_refused(model, stats)
    expected = []
    for feeds in (f1, f2):
        plain = ort_run(model, feeds, optimize=False)
        full = ort_run(model, feeds, optimize=True)
        expected.append((plain, full))
    ort_fails = all(isinstance(e, Exception) for pair in expected for e in pair)
    ort_errors = [plain for plain, _ in expected]
    if case.opset < 13 and ort_fails:
        # no kernel for an old version (Concat-1), or onnxruntime's own Cast before a float16
        # Pad-2 refused by its checker: the spec's values, by onnx.reference or this file
        stats["ort_refuses." + _ort_reason(expected[0][0])] += 1
        if case.kinds["cf.Scan8"]:  # what onnxruntime refuses of a Scan-8's, to read
            stats["scan8_ort_refuses: " + _ort_words(expected[0][0])] += 1
        spec = [_spec_values(model, f, stats) for f in (f1, f2)]
        if any(v is None for v in spec):
            stats["invalid"] += 1
            return []
        expected = [(v, v) for v in spec]
    if isinstance(expected[0][0], Exception) and isinstance(expected[0][1], Exception):
        ref = reference_run(model, f1)
        if isinstance(ref, Exception):
            stats["invalid"] += 1
            return []
        stats["ort_fails_ref_runs"] += 1
        return [{"what": "ort fails, reference runs", "error": str(expected[0][0])[:300]}]
    problems: list[dict[str, Any]] = []
    set_knobs(case.knobs)
    for fallback in _fallbacks(case):
        backend = get_backend("numpy", threads=case.knobs["threads"], fallback=fallback)
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
            fails_alike = False
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
                        held.append(got)  # pooled arrays kept alive: the next run must not
                        # reuse them
                    del got
                except Exception as exc:  # noqa: BLE001
                    plain, full = expected[which]
                    if isinstance(plain, Exception) and isinstance(full, Exception):
                        stats["both_fail"] += 1
                        continue
                    if fallback == "reference" and _reference_fails_alike(
                        model, feeds, exc
                    ):
                        stats["reference_fallback_fails"] += 1
                        break
                    if ort_fails and ("onnxruntime cannot load the model" in str(exc)
                                      or _says_as_ort(exc, ort_errors[which])):
                        # a node left to the onnxruntime fallback that onnxruntime cannot run (a
                        # float16 Pad-2 of opset 2-5): the error names it and --fallback reference
                        stats["ort_fallback_fails_alike"] += 1
                        fails_alike = True
                        break
                    problems.append(
                        {"what": "run raised", "level": level, "run": label,
                         "fallback": fallback, "error": _err(exc)}
                    )
                    break
                if label == "first":
                    plan = backend.plan(lowered)
                    stats["plans"] += 1
                    stats["replay"] += plan.replay is not None
                    stats["joined_in_place"] += plan.summary.joined_in_place
                    stats["plans_with_in_place"] += plan.summary.joined_in_place > 0
                problem = compare(
                    model, feeds if label != "strided" else f2, names, got_list,
                    expected[which], stats, ort_fallback=fallback == "onnxruntime",
                )
                if problem:
                    problem.update(level=level, run=label, fallback=fallback)
                    problems.append(problem)
                    break
            stats["runs"] += len(runs)
            if not problems and not fails_alike and case.seed % 5 == 0:
                problem = concurrent(
                    backend, lowered, model, names, (f1, f2), expected, stats,
                    fallback == "reference",
                )
                if problem:
                    problem.update(level=level, run="concurrent", fallback=fallback)
                    problems.append(problem)
    return problems


def _fallbacks(case: Case) -> list[str]:
    """The fallbacks a case runs on: its knob's, or both where it holds a Scan-8 (which runs
    whole on the fallback: onnxruntime's kernel, or reference_ops' by its spec)."""
    if case.kinds["cf.Scan8"]:
        return ["onnxruntime", "reference"]
    return [case.knobs.get("fallback", "onnxruntime")]


def _pad1_refused(model: onnx.ModelProto, stats: collections.Counter) -> list[dict[str, Any]]:
    """A model holding a Pad-1 (``paddings``, whose layout its own example contradicts;
    onnxruntime has no kernel): dmlgraph refuses it at load, naming the node and the versions
    it knows."""
    from dmlgraph import load
    from dmlgraph.errors import UnsupportedError

    pad = next(n for n in model.graph.node if n.op_type == "Pad")
    try:
        load(model)
    except UnsupportedError as exc:
        if f"node '{pad.name}'" in str(exc) and "Pad since_version 1 is not supported" in str(exc):
            stats["pad1_refused"] += 1
            return []
        return [{"what": "Pad-1 refused unclearly", "error": _err(exc)}]
    except Exception as exc:  # noqa: BLE001
        return [{"what": "Pad-1 load raised", "error": _err(exc)}]
    return [{"what": "Pad-1 loaded", "node": pad.name}]


def _says_as_ort(exc: Exception, ort_error: Any) -> bool:
    """Whether dmlgraph's onnxruntime fallback failed in onnxruntime's own words (a Scan-8's
    sequence_lens entry of 0, which onnxruntime refuses where ONNX allows it)."""
    said = str(ort_error).split("Status Message: ", 1)[-1].strip()
    if bool(said) and said in str(exc):
        return True
    # a failure onnxruntime meets running what ONNX allows ("Subgraph must have the shape
    # set for all outputs but X did not"): the segment may name another output than the
    # whole model does (seed 330534: s12_sli5, the whole model s12_con4)
    from backends.onnxruntime.providers import fails_when_run

    return fails_when_run(str(ort_error)) and fails_when_run(str(exc))


def _ort_words(exc: Exception) -> str:
    """onnxruntime's error, its node names and numbers left out (so that alike ones count
    together)."""
    text = str(exc).split(" : ", 2)[-1]
    return re.sub(r"'[^']*'|\d+", "_", text)[:160]


def _ort_reason(exc: Exception) -> str:
    text = str(exc)
    for key in ("NOT_IMPLEMENTED", "INVALID_GRAPH", "INVALID_ARGUMENT", "FAIL"):
        if key in text:
            return key
    return type(exc).__name__


def _holds_scan8(model: onnx.ModelProto) -> bool:
    """Whether the model holds a Scan-8 (at its top level), which onnx.reference runs as a
    Scan-9 (its ``sequence_lens`` a state variable): no oracle of it (``numpy_eval`` is)."""
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
    return opset == SCAN8_OPSET and any(n.op_type == "Scan" for n in model.graph.node)


def _spec_values(
    model: onnx.ModelProto, feeds: dict[str, np.ndarray], stats: collections.Counter
) -> list[np.ndarray] | None:
    """The outputs by onnx.reference, else by numpy_eval; None when neither gives them."""
    try:  # a model onnx's typed inference refuses (a type a version does not take): none
        onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
    except Exception:  # noqa: BLE001
        stats["oracle.checker_refuses"] += 1
        return None
    ref = reference_run(model, feeds) if not _holds_scan8(model) else None
    if ref is not None and not isinstance(ref, Exception):
        stats["oracle.reference"] += 1
        return [np.asarray(v, order="C") for v in ref]
    try:
        mine = numpy_eval(model, feeds)
    except Exception:  # noqa: BLE001
        return None
    if any(v is None for v in mine):
        return None
    stats["oracle.numpy_eval"] += 1
    return [np.asarray(v, order="C") for v in mine]  # (bound outputs are made like
    # them; not ascontiguousarray, which makes a scalar [1])


#: onnx.reference's failures on what ONNX leaves open, as dmlgraph's reference fallback
#: reports them: a Loop of no trips making scan outputs (their element shape; dmlgraph runs
#: it whole on the fallback; onnxruntime takes the body's inferred shape, or (0,)), where the
#: reference evaluator's Loop (``reference_ops._loop``) knows no element shape
REFERENCE_OPEN = ["(Loop): ValueError: the Loop ran no iteration, so its scan output"]


def _reference_fails_alike(model: onnx.ModelProto, feeds: dict, exc: Exception) -> bool:
    """Whether dmlgraph's reference fallback failed as onnx.reference does: on the model
    itself, or in a way REFERENCE_OPEN lists (onnx.reference may fail earlier on the whole
    model, at another node): the fallback asked for, not a finding."""
    if any(known in str(exc) for known in REFERENCE_OPEN):
        return True
    ref = reference_run(model, feeds)
    return isinstance(ref, Exception) and str(ref) in str(exc)


def concurrent(
    backend, lowered, model, names, feeds, expected, stats, reference_fallback: bool = False
) -> dict[str, Any] | None:
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
            if reference_fallback and _reference_fails_alike(model, feeds[which], got):
                continue
            return {"what": "concurrent run raised", "error": _err(got)}
        problem = compare(model, feeds[which], names, got, expected[which], stats,
                          ort_fallback=not reference_fallback)
        if problem:
            return problem
    return None


def compare(
    model, feeds, names, got, expected, stats, ort_fallback: bool = False
) -> dict[str, Any] | None:
    """A mismatch of ``got`` against onnxruntime's values, onnx.reference's and numpy_eval's;
    ``ort_fallback``: ``got`` ran nodes on the onnxruntime fallback, whose float16 chains are
    computed in float32 and rounded once, where the fallback's segments end at lowered nodes
    that round (a mix that neither onnxruntime nor the spec makes): then a float16 output may
    be anywhere within ``numpy_eval``'s bounds of such rounding (``_rounded_anywhere``)."""
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
    ref = reference_run(model, feeds) if not _holds_scan8(model) else RuntimeError("Scan-8")
    if not isinstance(ref, Exception) and all(same(got[i], ref[i]) for i in bad):
        stats["ort_divergence"] += 1
        return None
    try:
        mine = numpy_eval(model, feeds)
    except Exception as exc:  # noqa: BLE001
        mine = exc
    if not isinstance(mine, Exception) and all(
        mine[i] is not None and same(got[i], mine[i]) for i in bad
    ):
        stats["ort_divergence_numpy"] += 1
        return None
    if ort_fallback and _rounded_anywhere(model, feeds, got, bad):
        stats["ort_float32_chains"] += 1
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
                if isinstance(mine, Exception) or exp is None or mine[i] is None
                else bool(same(mine[i], exp)),
                "mismatches": None
                if exp is None or exp.shape != got[i].shape
                else int((np.asarray(exp) != got[i]).sum()),
            }
        )
    return {"what": "mismatch", "outputs": detail}


def _rounded_anywhere(model, feeds, got, bad: list[int]) -> bool:
    """Whether each of the ``bad`` outputs is float16 and within ``numpy_eval``'s bounds of
    where float16 values may be rounded (a NaN where a bound is NaN)."""
    if any(got[i].dtype != np.float16 for i in bad):
        return False
    try:
        low, high = numpy_eval(model, feeds, widen=-1), numpy_eval(model, feeds, widen=1)
    except Exception:  # noqa: BLE001
        return False
    for i in bad:
        lo, hi = low[i], high[i]
        if lo is None or hi is None or lo.shape != got[i].shape or hi.shape != got[i].shape:
            return False
        value = got[i].astype(np.float64)
        with np.errstate(invalid="ignore"):
            inside = (lo <= value) & (value <= hi)
        nan = np.isnan(value) & (np.isnan(lo) | np.isnan(hi))
        if not (inside | nan).all():
            return False
    return True


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


def worker(
    start: int, count: int, progress: str | None, cflow_only: bool = False,
    oldops_only: bool = False, scan8_only: bool = False,
) -> None:
    import warnings

    warnings.filterwarnings("ignore")
    stats: collections.Counter = collections.Counter()
    found = 0
    for seed in range(start, start + count):
        if progress:
            with open(progress, "w") as fh:
                fh.write(str(seed))
        if cflow_only and not wants_cflow(seed):
            continue
        if oldops_only and not wants_oldops(seed):
            continue
        if scan8_only and not wants_scan8(seed):
            continue
        case = make_case(seed)
        stats["cases"] += 1
        stats["cflow"] += any(k.startswith("cf.") for k in case.kinds)
        stats["scan8"] += bool(case.kinds["cf.Scan8"])
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


def driver(
    start: int, minutes: float, chunk: int, cflow_only: bool = False, oldops_only: bool = False,
    scan8_only: bool = False,
) -> None:
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
                *(["--cflow-only"] if cflow_only else []),
                *(["--oldops-only"] if oldops_only else []),
                *(["--scan8-only"] if scan8_only else []),
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
    parser.add_argument("--cflow-only", action="store_true", help="the control-flow seeds alone")
    parser.add_argument("--oldops-only", action="store_true", help="the opset 1-12 seeds alone")
    parser.add_argument("--scan8-only", action="store_true", help="the Scan-8 seeds alone")
    args = parser.parse_args()
    if args.driver:
        driver(args.start, args.minutes, args.count, args.cflow_only, args.oldops_only,
               args.scan8_only)
    else:
        worker(args.start, args.count, args.progress, args.cflow_only, args.oldops_only,
               args.scan8_only)
