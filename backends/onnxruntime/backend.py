"""The onnxruntime backend: a graph (ONNX or lowered) or a model file on onnxruntime.

A graph of ONNX nodes runs as ``to_onnx()``; a lowered graph after ``translate`` writes its
DML nodes as standard ops, so the same lowered graph is checked by a second engine. A model
file runs as it is (``run_model``): the oracle parity compares against.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
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
    check_arguments,
    check_feeds,
    first_line,
    refuse_beyond_memory,
    refuse_unbound,
)
from backends.onnxruntime import values
from backends.onnxruntime.providers import (
    layout_rewrite_safe,
    make_session,
    placements,
    select_providers,
)
from backends.onnxruntime.translate import translate
from dmlgraph import tensorio
from dmlgraph.dtypes import DTYPE_TO_ELEM_TYPE
from dmlgraph.ir import Graph
from dmlgraph.schema_types import type_string

#: A session input's type as onnxruntime names it (``tensor(float)``) -> its dtype.
_SESSION_DTYPES = {type_string(dtype): dtype for dtype in DTYPE_TO_ELEM_TYPE}

class OnnxruntimeBackend:
    """``providers``: the execution providers to ask for (default: DirectML, else CUDA, else
    CPU, whichever this onnxruntime has, see ``providers.select_providers``)."""

    name = "onnxruntime"

    def __init__(
        self, providers: Sequence[str] | None = None, *, layout: bool | None = None
    ) -> None:
        self.providers = select_providers(providers)
        #: whether sessions made from model files (``session``) may use onnxruntime's NCHWc
        #: rewrite, as decided for the graph the model was imported as
        #: (``providers.layout_rewrite_safe``); None: decided from each model alone
        self.layout = layout
        self._sessions: GraphCache[tuple[ort.InferenceSession, list[str]]] = GraphCache()
        self.last_record: RunRecord | None = None

    def model_for(self, graph: Graph) -> onnx.ModelProto:
        """The ModelProto a graph runs as: ``to_onnx``, translated when it holds DML nodes."""
        if all(node.is_onnx for node in graph.nodes):
            return graph.to_onnx()
        return translate(graph)

    def execute(self, graph: Graph, feeds: Mapping[str, Any]) -> RunResult:
        check_arguments(graph, feeds)
        arrays = check_feeds(graph, feeds)
        if not graph.outputs:  # onnxruntime refuses to run for no outputs; the numpy
            # backend computes nothing: so does this one, without a session
            return RunResult({}, RunRecord(self.name, self.providers[0], ()))

        def build() -> tuple[ort.InferenceSession, list[str]]:
            refuse_beyond_memory(graph)
            refuse_unbound(graph)
            model = self.model_for(graph)
            # a graph dmlgraph made runs as written: the shapes it left are computed
            # (``providers.SHAPE_REWRITES``)
            session = make_session(model, self.providers, graph.source, shape_rewrites=False,
                                   layout=layout_rewrite_safe(graph))
            return session, [
                o.name for o in model.graph.output
            ]

        session, names = self._sessions.get(graph, build)
        results = self._run(session, names, arrays, graph.source)
        # to_onnx lists each output once; graph.outputs may name one twice
        outputs = {name: results[name] for name in graph.outputs}
        return RunResult(outputs, self._record(session))

    def run(self, graph: Graph, feeds: Mapping[str, Any]) -> dict[str, np.ndarray]:
        return self.execute(graph, feeds).outputs

    def session(
        self,
        model: onnx.ModelProto | bytes | str | os.PathLike[str],
        where: str = "",
        *,
        optimize: bool = True,
    ) -> ort.InferenceSession:
        """A session for a model as given (a path keeps external data reachable); with
        ``optimize=False``, without onnxruntime's graph optimizations."""
        where = where or (str(model) if isinstance(model, (str, os.PathLike)) else "<model>")
        content = str(model) if isinstance(model, os.PathLike) else model
        return make_session(content, self.providers, where, optimize=optimize,
                            layout=self.layout)

    def execute_session(
        self, session: ort.InferenceSession, feeds: Mapping[str, Any], where: str = "<model>"
    ) -> RunResult:
        """Run a session; feeds it does not take are left out."""
        if not isinstance(feeds, Mapping):  # as run() refuses them
            raise BackendError(f"{where}: feeds map tensor names to arrays, not a "
                               f"{type(feeds).__name__}")
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
            raise BackendError(f"{where}: onnxruntime fails: {first_line(exc)}") from None
        return dict(zip(names, results))

    def _record(self, session: ort.InferenceSession) -> RunRecord:
        provider = session.get_providers()[0]
        nodes = tuple(
            NodeRun(name, op_type, f"onnxruntime:{ep}") for name, op_type, ep in placements(session)
        )
        record = RunRecord(self.name, provider, nodes)
        self.last_record = record
        return record
