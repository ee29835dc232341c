"""The onnxruntime backend: a graph (ONNX or lowered) or a model file on onnxruntime.

A graph of ONNX nodes runs as ``to_onnx()``; a lowered graph after ``translate`` writes its
DML nodes as standard ops, so the same lowered graph is checked by a second engine. A model
file runs as it is (``run_model``): the oracle parity compares against.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort

from backends.base import (
    BackendError,
    GraphCache,
    NodeRun,
    RunRecord,
    RunResult,
    bind_outputs,
    check_arguments,
    check_feeds,
    engine_text,
    refuse_beyond_memory,
    refuse_invalid_descriptors,
    refuse_unbound,
    write_all_bound,
)
from backends.onnxruntime import values
from backends.onnxruntime.old_axes import count_old_axes
from backends.onnxruntime.providers import (
    failed,
    fatal_omission_in,
    layout_rewrite_safe,
    make_session,
    may_run_hint,
    name_omitted,
    placements,
    select_providers,
)
from backends.onnxruntime.translate import translate
from dmlgraph import folding, tensorio
from dmlgraph.dml.enums import FeatureLevel
from dmlgraph.dtypes import DTYPE_TO_ELEM_TYPE
from dmlgraph.ir import Graph
from dmlgraph.schema_types import type_string

#: A session input's type as onnxruntime names it (``tensor(float)``) -> its dtype.
_SESSION_DTYPES = {type_string(dtype): dtype for dtype in DTYPE_TO_ELEM_TYPE}

@dataclass
class _Built:
    """A lowered graph's session, its outputs, and the tensors whose sizes the run checks
    (``_sized_by_inference``), fetched beside them (``extra``)."""

    session: ort.InferenceSession | None  # None: onnxruntime refused it (``failure``)
    names: list[str]
    checked: dict[str, tuple[int, ...]]
    resized: dict[bool, Any] = field(default_factory=dict)
    failure: BackendError | None = None

    @property
    def extra(self) -> list[str]:
        return [n for n in self.checked if n not in self.names]


def _sized_by_inference(
    graph: Graph, model: onnx.ModelProto | None
) -> dict[str, tuple[int, ...]]:
    """The tensors ONNX nodes of a lowered graph make and its nodes read whose static sizes
    onnxruntime may make otherwise (``folding.PartialShapes.unsure``: an If's output, where a
    branch declares other sizes than it makes), by their sizes here, which descriptors were
    sized by and ONNX nodes normalized by (a Pad's axes). ``model``, its translation, then
    declares every such tensor by its type alone, as the original model leaves it to
    onnxruntime's inference (declared [] by a branch, onnxruntime refused a Slice of it on
    axis -1 at load)."""
    source = getattr(graph, "source_graph", None) or graph
    trust = folding.PartialShapes(source.declared_sizes)
    unsure = {
        out for node in source.nodes if node.is_onnx for out in node.outputs
        if out and trust.unsure(source, out)
    }
    if not unsure:
        return {}
    if model is not None:
        for info in (*model.graph.value_info, *model.graph.output):
            if info.name in unsure and info.type.HasField("tensor_type"):
                info.type.tensor_type.ClearField("shape")
    if source is graph:
        return {}
    checked: dict[str, tuple[int, ...]] = {}
    for node in graph.nodes:
        for name in node.inputs:
            producer = graph.producer(name) if name in unsure else None
            shape = graph.tensors[name].static_shape if producer is not None else None
            if producer is not None and producer.is_onnx and shape is not None:
                checked[name] = shape
    return checked


class OnnxruntimeBackend:
    """``providers``: the execution providers to ask for (default: DirectML, else CUDA, else
    CPU, whichever this onnxruntime has, see ``providers.select_providers``)."""

    name = "onnxruntime"

    def __init__(
        self, providers: Sequence[str] | None = None, *, layout: bool | None = None
    ) -> None:
        if layout is not None and not isinstance(layout, bool):  # "no" was true: the rewrite
            # that kills onnxruntime on some models ran where the caller meant it not to
            raise BackendError(f"layout is True, False or None, not {layout!r}")
        self.providers = select_providers(providers)
        #: whether sessions made from model files (``session``) may use onnxruntime's NCHWc
        #: rewrite, as decided for the graph the model was imported as
        #: (``providers.layout_rewrite_safe``); None: decided from each model alone
        self.layout = layout
        self._sessions: GraphCache[_Built] = GraphCache()
        self.last_record: RunRecord | None = None

    def model_for(self, graph: Graph) -> onnx.ModelProto:
        """The ModelProto a graph runs as: ``to_onnx``, translated when it holds DML nodes;
        each output onnxruntime dies of omitting named (``providers.name_omitted``), and a
        Scan body's old axes written as its inference sizes them (``old_axes``)."""
        model = graph.to_onnx() if all(node.is_onnx for node in graph.nodes) else translate(graph)
        return name_omitted(count_old_axes(model))

    def execute(
        self,
        graph: Graph,
        feeds: Mapping[str, Any],
        outputs: Mapping[str, np.ndarray] | None = None,
    ) -> RunResult:
        """Run and say what ran. ``outputs`` binds caller arrays, as the numpy backend binds
        them (``backends.base.bind_outputs``: the output's dtype and shape, C-contiguous,
        writable, no memory shared with a feed or another): each result is written into its
        array, which the outputs then hold (a user swapping backends met Python's
        ``unexpected keyword argument 'outputs'``)."""
        check_arguments(graph, feeds, outputs)
        arrays = check_feeds(graph, feeds)
        bound = bind_outputs(
            graph, arrays, outputs, folding.PartialShapes(graph.declared_sizes)
        ) if outputs else None
        try:
            result = self._execute(graph, arrays)
        except BackendError as exc:  # one it cannot run at all says what does
            # (``providers.may_run_hint``; a Python caller had onnxruntime's words alone)
            if not (hint := may_run_hint(exc)) or str(exc).endswith(hint):
                raise
            raise exc.with_hint(hint) from None
        if bound is None:
            return result
        return RunResult(write_all_bound(bound, result.outputs, graph), result.record)

    def _execute(self, graph: Graph, arrays: dict[str, np.ndarray]) -> RunResult:
        if not graph.outputs:  # onnxruntime refuses to run for no outputs; the numpy
            # backend computes nothing: so does this one, without a session
            return RunResult({}, RunRecord(self.name, self.providers[0], ()))

        def build() -> _Built:
            refuse_beyond_memory(graph)
            refuse_unbound(graph)
            refuse_invalid_descriptors(graph)
            model = self.model_for(graph)
            checked = _sized_by_inference(graph, model)
            names = [o.name for o in model.graph.output]
            model.graph.output.extend(
                onnx.ValueInfoProto(name=n) for n in checked if n not in names
            )
            # a graph dmlgraph made runs as written: the shapes it left are computed
            # (``providers.SHAPE_REWRITES``)
            try:
                session = make_session(model, self.providers, graph.source,
                                       shape_rewrites=False, layout=layout_rewrite_safe(graph))
            except BackendError as exc:  # a Slice's axes normalized by the rank inferred
                if not checked:
                    raise
                return _Built(None, names, checked, failure=exc)
            return _Built(session, names, checked)

        built = self._sessions.get(graph, build)
        session, names = built.session, built.names
        try:
            if session is None:
                assert built.failure is not None
                raise built.failure
            results = self._run(session, [*names, *built.extra], arrays, graph.source)
        except BackendError:  # a node read such a tensor by the rank onnx inferred
            again = self._resized(graph, built, None)
            if again is None:
                raise
            results = {}
        else:
            again = self._resized(graph, built, results)
        if again is not None:
            ran = self._execute(again, arrays)
            return RunResult({name: ran.outputs[twin] for name, twin in zip(
                graph.outputs, again.outputs)}, ran.record)
        assert session is not None
        # to_onnx lists each output once; graph.outputs may name one twice
        outputs = {name: results[name] for name in graph.outputs}
        return RunResult(outputs, self._record(session))

    def _resized(
        self, graph: Graph, built: _Built, results: Mapping[str, np.ndarray] | None
    ) -> Graph | None:
        """The graph lowered again (``runtime.resized``) where onnxruntime made a tensor
        that descriptors read in other sizes than onnx inferred and they were sized by, as
        the numpy backend lowers it again: the sizes onnxruntime may make otherwise left to
        run time (then every size). None where the sizes held. (An If whose branch declares
        [6] and makes [1, 2, 3]: the Slice on axis -1 reading it was lowered on axis 0, and
        the translated model sliced the wrong axis, silently.) ``results`` None: the run
        failed, and, where it checked sizes, may have failed by them (a Pad by axes [-1]
        whose pads were written for the rank onnx inferred): lowered again, or None."""
        if results is None:
            wrong = list(built.checked)
        else:
            wrong = [n for n, shape in built.checked.items() if results[n].shape != shape]
        if not wrong:
            return None
        from backends.numpy.runtime import resized

        level = getattr(graph, "feature_level", None) or FeatureLevel.L6_4
        for everything in (False, True):
            if everything not in built.resized:  # once a graph: kept only where it is sure
                again = resized(graph, level, everything)  # type: ignore[arg-type]
                built.resized[everything] = (
                    again if again is not None and not _sized_by_inference(again, None) else None
                )
            sure: Graph | None = built.resized[everything]
            if sure is not None:
                return sure
        if results is None:
            return None
        name = wrong[0]
        raise BackendError(
            f"{graph.source}: onnxruntime made {name!r} as {list(results[name].shape)}, where "
            f"onnx infers {list(built.checked[name])} and descriptors reading it were sized "
            "so; the graph could not be lowered again by the sizes made: lower it again"
        )

    def run(
        self,
        graph: Graph,
        feeds: Mapping[str, Any],
        outputs: Mapping[str, np.ndarray] | None = None,
    ) -> dict[str, np.ndarray]:
        """The outputs of ``execute`` (``last_record`` says what ran)."""
        return self.execute(graph, feeds, outputs).outputs

    def session(
        self,
        model: onnx.ModelProto | bytes | str | os.PathLike[str],
        where: str = "",
        *,
        optimize: bool = True,
    ) -> ort.InferenceSession:
        """A session for a model as given (a path keeps external data reachable); with
        ``optimize=False``, without onnxruntime's graph optimizations. An output whose
        omission onnxruntime dies of (a Split's "") is named in a copy, never in ``model``
        or its file (``providers.session_model``): the session's inputs and outputs are the
        model's, and it runs what the model says (it killed the process, exit 139)."""
        where = where or (str(model) if isinstance(model, (str, os.PathLike)) else "<model>")
        content = str(model) if isinstance(model, os.PathLike) else model
        return make_session(content, self.providers, where, optimize=optimize,
                            layout=self.layout)

    def execute_session(
        self, session: ort.InferenceSession, feeds: Mapping[str, Any], where: str = "<model>"
    ) -> RunResult:
        """Run a session; feeds it does not take are left out. A session made elsewhere
        (``onnxruntime.InferenceSession``) over a model whose omitted output onnxruntime dies
        of (``providers.fatal_omission_in``) is refused, as it cannot be renamed: running
        it killed the process (exit 139, no word); ``session`` makes one that runs."""
        if not isinstance(feeds, Mapping):  # as run() refuses them
            raise BackendError(f"{where}: feeds map tensor names to arrays, not a "
                               f"{type(feeds).__name__}")
        if (omits := fatal_omission_in(session)) is not None:
            raise BackendError(
                f"{where}: the session's model has {omits}, which onnxruntime 1.32 dies "
                "running (SIGSEGV); make the session with "
                "OnnxruntimeBackend.session (or run the model with execute_model), which "
                "names the omitted output in a copy")
        names = [o.name for o in session.get_outputs()]
        expected = {i.name: _SESSION_DTYPES.get(i.type) for i in session.get_inputs()}
        arrays = {  # Python data in the input's type, NumPy's strings decoded, as run() has it
            k: tensorio.feed_array(k, v, expected[k], f"{where}: input {k!r}", BackendError)
            for k, v in feeds.items()
            if k in expected
        }
        return RunResult(self._run(session, names, arrays, where), self._record(session))

    def execute_model(
        self, model: onnx.ModelProto | bytes | str | os.PathLike[str], feeds: Mapping[str, Any]
    ) -> RunResult:
        """Run a model as given: the original file, for parity."""
        where = str(model) if isinstance(model, (str, os.PathLike)) else "<model>"
        return self.execute_session(self.session(model, where), feeds, where)

    def _run(
        self,
        session: ort.InferenceSession,
        names: list[str],
        feeds: Mapping[str, np.ndarray],
        where: str,
    ) -> dict[str, np.ndarray]:
        try:
            results = values.run(session, names, feeds)
        except BackendError:
            raise
        except Exception as exc:  # onnxruntime's own exception types
            raise failed(where, engine_text(exc)) from None
        return dict(zip(names, results))

    def _record(self, session: ort.InferenceSession) -> RunRecord:
        provider = session.get_providers()[0]
        nodes = tuple(
            NodeRun(name, op_type, f"onnxruntime:{ep}") for name, op_type, ep in placements(session)
        )
        record = RunRecord(self.name, provider, nodes)
        self.last_record = record
        return record
