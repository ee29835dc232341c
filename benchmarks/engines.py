"""The two engines as the benchmarks drive them: dmlgraph (load, lower, the numpy backend) and
an onnxruntime CPU session, each able to return fresh outputs or fill the caller's arrays."""

from __future__ import annotations

import inspect
import os
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort

from backends import get_backend
from backends.numpy.backend import NumpyBackend
from dmlgraph import load
from lowering import LoweredGraph, Status, lower

FEATURE_LEVEL = "6_4"
#: The ops this project lowers; a fallback among them is a finding, elsewhere it is expected.
LOWERED_OPS = frozenset({"Slice", "Concat", "Pad"})
Arrays = dict[str, np.ndarray]


def default_threads() -> int:
    """onnxruntime's intra-op threads: 2, or fewer on a one-core machine."""
    return max(1, min(2, os.cpu_count() or 1))


class Ours:
    """A model loaded, lowered at FL 6.4 and run on the numpy backend."""

    def __init__(self, model: onnx.ModelProto | bytes | str | Path, threads: int) -> None:
        self.graph: LoweredGraph = lower(load(model), FEATURE_LEVEL)
        # as many copy threads as onnxruntime and the copy bound get (the backend's own
        # default takes every core the process may use, up to 8)
        self.backend = get_backend("numpy", threads=threads)
        self.can_bind = accepts_outputs(self.backend.run)

    def run(self, feeds: Mapping[str, np.ndarray]) -> Arrays:
        return self.backend.run(self.graph, feeds)

    def run_into(self, feeds: Mapping[str, np.ndarray], outputs: Mapping[str, np.ndarray]) -> None:
        """Run writing into the caller's ``outputs`` (only when ``can_bind``)."""
        self.backend.run(self.graph, feeds, outputs=dict(outputs))  # type: ignore[call-arg]

    def joined_in_place(self) -> int:
        """JOIN inputs the compiled plan writes in place: copies it does not make."""
        backend = self.backend
        assert isinstance(backend, NumpyBackend)
        return backend.plan(self.graph).summary.joined_in_place

    def stores(self) -> str:
        """How the plan's native copies write after the runs so far: "streamed", "cached",
        both ("cached+streamed"), "tuning" while any still times both ways, or "-" without
        native copies (``Plan.stores``)."""
        backend = self.backend
        assert isinstance(backend, NumpyBackend)
        ways = set(backend.plan(self.graph).stores)
        if not ways:
            return "-"
        if None in ways:
            return "tuning"
        return "+".join(name for name, way in (("cached", False), ("streamed", True))
                        if way in ways)

    def lowered_as(self) -> str:
        """What the model's Slice/Concat/Pad nodes became, e.g. "lowered: DML_OPERATOR_PAD"."""
        seen = dict.fromkeys(
            f"{r.status}: {', '.join(r.dml_ops) or '-'}"
            for r in self.graph.report()
            if r.op_type in LOWERED_OPS
        )
        return "; ".join(seen)


def fallbacks(graph: LoweredGraph) -> tuple[str, ...]:
    """Slice/Concat/Pad nodes that stayed ONNX nodes, as "name (op): notes"."""
    return tuple(
        f"{r.name or '?'} ({r.op_type}): {'; '.join(r.notes)}"
        for r in graph.report()
        if r.op_type in LOWERED_OPS and r.status is Status.FALLBACK
    )


def accepts_outputs(run: object) -> bool:
    """Whether a backend's ``run`` takes caller-provided output arrays (``outputs=``)."""
    try:
        return "outputs" in inspect.signature(run).parameters  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False


def session(
    model: onnx.ModelProto | bytes | str | Path, threads: int, *, optimize: bool = True
) -> ort.InferenceSession:
    """An onnxruntime CPU session: ORT_ENABLE_ALL (its default) or ORT_DISABLE_ALL."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.log_severity_level = 3
    options.graph_optimization_level = (
        ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        if optimize
        else ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    )
    source = model.SerializeToString() if isinstance(model, onnx.ModelProto) else model
    if isinstance(source, Path):
        source = str(source)
    return ort.InferenceSession(source, options, providers=["CPUExecutionProvider"])


class OrtBound:
    """An onnxruntime IOBinding: inputs bound in place, outputs written into given arrays."""

    def __init__(
        self,
        sess: ort.InferenceSession,
        feeds: Mapping[str, np.ndarray],
        outputs: Mapping[str, np.ndarray],
    ) -> None:
        self.sess = sess
        self.binding = sess.io_binding()
        for name, array in feeds.items():
            self.binding.bind_cpu_input(name, array)
        for name, array in outputs.items():
            if not array.flags.c_contiguous:
                raise ValueError(f"output {name!r}: a bound output must be C-contiguous")
            self.binding.bind_output(
                name, "cpu", 0, array.dtype, list(array.shape), array.ctypes.data
            )

    def run(self) -> None:
        self.sess.run_with_iobinding(self.binding)


def change_in_place(feeds: Mapping[str, np.ndarray], outputs: Iterable[np.ndarray] = ()) -> None:
    """New values in the same feed arrays (each reversed), and every byte of ``outputs`` set
    to 0xA5: a run checked after timing must compute the new answer, where one that did
    nothing would find the old right answer still in place (the check before timing cannot
    tell such a run from a fast one)."""
    for array in feeds.values():
        flat = array.reshape(-1)  # a view: the feeds are contiguous
        flat[...] = flat[::-1].copy()
    for array in outputs:
        array.reshape(-1).view(np.uint8)[...] = 0xA5


def bit_identical(a: np.ndarray, b: np.ndarray) -> bool:
    """Same dtype, shape and bits (NaN payloads and -0.0 included)."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    unsigned = np.dtype(f"u{a.dtype.itemsize}")
    return bool(np.array_equal(np.ascontiguousarray(a).view(unsigned),
                               np.ascontiguousarray(b).view(unsigned)))


class MismatchError(AssertionError):
    """Two engines disagree on a benchmark's output: the timings would compare nothing."""


def verify(what: str, got: Mapping[str, np.ndarray], expected: Mapping[str, np.ndarray]) -> None:
    """Raise MismatchError unless every expected output is bit-identical in ``got``."""
    for name, want in expected.items():
        have = got.get(name)
        if have is None:
            raise MismatchError(f"{what}: output {name!r} is missing")
        if not bit_identical(np.asarray(have), want):
            raise MismatchError(
                f"{what}: output {name!r} differs from onnxruntime's "
                f"({np.asarray(have).dtype}{list(np.asarray(have).shape)} vs "
                f"{want.dtype}{list(want.shape)})"
            )
