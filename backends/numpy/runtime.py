"""Run-time lowering: a Slice/Pad whose parameters, or a Slice/Concat/Pad whose data shapes,
are known only when the graph runs.

DirectML descriptors hold every offset, size and pad as a number, so such a node cannot be
lowered ahead of time. onnxruntime's DirectML provider re-creates the kernel when the values
change; the NumPy backend does the same: it builds a one-node graph whose parameters are
constants holding the actual values and whose data inputs have the actual shapes, folds it
(shape inference, canonical parameters), lowers it and runs the result. The key of that
result is the parameter bytes plus the data shapes and dtypes, so equal runs reuse it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from dmlgraph import canonical, folding
from dmlgraph.dml.enums import FeatureLevel
from dmlgraph.errors import ModelValidationError, NodeRuleError
from dmlgraph.ir import Graph, Node, TensorInfo
from lowering.report import LoweredGraph


def parameter_ports(node: Node) -> frozenset[int]:
    """Input ports of a canonical Slice/Pad that hold parameters (none for Concat)."""
    return frozenset(canonical.PARAMETER_PORTS.get(node.op_type, {}).values())


def needs_runtime_lowering(graph: Graph, node: Node) -> bool:
    """A canonical Slice/Concat/Pad left ONNX with a run-time parameter or a data input of
    unknown shape: what the lowering could not do ahead of time."""
    if not canonical.is_canonical(node.op):
        return False
    params = parameter_ports(node)
    for port, name in enumerate(node.inputs):
        if not name:
            continue
        if port in params:
            if not graph.is_constant(name):
                return True
        elif not graph.tensor(name).is_static:
            return True
    return False


class RuntimeLowering:
    """Builds and keys the one-node graph of a node for the values it runs with."""

    def __init__(self, graph: Graph, node: Node) -> None:
        # what the one-node graph needs of ``graph``, not the graph itself: a plan holds this,
        # and the backend's cache of plans is keyed weakly by the graph
        self.graph_name, self.source = graph.name, graph.source
        self.opset_imports, self.ir_version = dict(graph.opset_imports), graph.ir_version
        self.output_dtypes = {out: graph.tensor(out).dtype for out in node.outputs if out}
        self.node = node
        self.params = parameter_ports(node)
        # the parameters that arrive at run time, by field, for errors: a bad value is named
        # by the rule's field, and the caller fed it as a tensor of another name
        ports = canonical.PARAMETER_PORTS.get(node.op_type, {})
        self.runtime_fields = tuple(
            (field, node.inputs[port]) for field, port in ports.items()
            if port < len(node.inputs) and node.inputs[port]
            and not graph.is_constant(node.inputs[port])
        )

    def key(self, arrays: Mapping[str, np.ndarray]) -> tuple[Any, ...]:
        """Parameter values (dtype, shape, bytes) and data dtypes and shapes, per port."""
        parts: list[Any] = []
        for port, name in enumerate(self.node.inputs):
            if not name:
                parts.append(None)
                continue
            value = arrays[name]
            entry = (value.dtype.str, value.shape)
            parts.append(entry + (value.tobytes(),) if port in self.params else entry)
        return tuple(parts)

    def graph_for(self, arrays: Mapping[str, np.ndarray]) -> Graph:
        """The node alone: parameters as constants, data as inputs of the actual shapes."""
        node = self.node
        sub = Graph(
            f"{self.graph_name}:{node.name}",
            opset_imports=self.opset_imports,
            ir_version=self.ir_version,
            source=self.source,
        )
        for port, name in enumerate(node.inputs):  # data first: a parameter may share it
            if name and port not in self.params and name not in sub.tensors:
                value = np.asarray(arrays[name])
                sub.add_input(TensorInfo(name, value.dtype, value.shape))
        outputs = [o for o in node.outputs if o]
        for out in outputs:
            sub.set_tensor(TensorInfo(out, self.output_dtypes[out]))
        inputs = list(node.inputs)
        for port, name in enumerate(node.inputs):
            if not name or port not in self.params:
                continue
            if name in sub.inputs:  # the data read as a parameter too: a constant of its own
                inputs[port] = sub.unique_name(f"{name}:{port}")
            if inputs[port] not in sub.tensors:
                sub.set_tensor(TensorInfo(inputs[port], data=np.asarray(arrays[name])))
        notes = [n for n in node.notes if not n.startswith(folding.RUNTIME_PARAMETER)]
        sub.add_node(node.op, inputs, node.outputs, node.provenance, notes)
        sub.outputs = outputs
        folding.fold(sub)
        return sub

    def lower(self, arrays: Mapping[str, np.ndarray], level: FeatureLevel) -> LoweredGraph:
        """The node lowered for these values (``lowering.lower``)."""
        from lowering import lower

        try:
            return lower(self.graph_for(arrays), level)
        except ModelValidationError as exc:  # the values are this run's: say whose they are
            if not self.runtime_fields:
                raise
            fed = ", ".join(f"{field} from {name!r}" for field, name in self.runtime_fields)
            said = type(exc)(f"{exc} (this run's {fed})")
            if isinstance(exc, NodeRuleError) and isinstance(said, NodeRuleError):
                said.outputs = exc.outputs  # (which node's rule: ``NodeRuleError.outputs``)
            raise said from None


def resized(lowered: LoweredGraph, level: FeatureLevel, everything: bool) -> LoweredGraph | None:
    """``lowered``'s source lowered again, where a run proved onnx's inference wrong
    (``SizeMismatch``): the tensors whose sizes onnxruntime may make otherwise
    (``folding.PartialShapes.unsure``), or with ``everything`` all tensors nodes compute,
    lose their shapes, so the Slices, Concats and Pads reading them are lowered when they
    run, by the sizes that arrive, and the rest stay as lowered before. None where the
    source is not at hand (changed since it was lowered), or where nothing would change."""
    source = lowered.source_graph
    if source is None:
        return None
    graph = source.copy()
    if not graph.is_folded:  # as ``lower`` would fold it, but first: folding infers the
        folding.fold(graph)  # whole graph again, and would give back the sizes forgotten
    trust = folding.PartialShapes(graph.declared_sizes)
    computed = [
        out
        for node in graph.topological_order()
        for out in node.outputs
        if out and (everything or trust.unsure(graph, out))
    ]
    with graph.untracked():  # no stale marks: re-inference would say the same again
        if not folding.forget_shapes(graph, computed):
            return None
    # nothing folds that did not before (a Shape of an unsure tensor never did), and folding
    # again would infer the forgotten sizes again
    graph.mark_folded()
    from backends.onnxruntime.providers import layout_rewrite_safe
    from lowering import lower

    again = lower(graph, level)
    again.layout_decided = layout_rewrite_safe(lowered)  # the model's, not the copy's
    return again
