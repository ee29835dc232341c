"""Control flow's subgraphs (If's branches, Loop's and Scan's bodies) as the IR holds them.

dmlgraph lowers the main graph's Slice, Concat and Pad nodes ahead of time, and the NumPy
backend an If's or Loop's subgraphs' when it runs them (``backends.numpy.control``; a Scan runs
whole on the fallback, as any op without a lowering rule does). What the IR must know of a
subgraph is what ONNX leaves implicit: the tensors of the enclosing graph it reads by
name. Its node lists them after its explicit inputs (``ir.implicit_inputs``), so ordering,
liveness, dead-node removal and fallback segments treat them as the inputs they are; a proto
written back leaves them out again, renaming them inside the subgraph where a pass renamed
them outside (an eliminated Slice's output read as its input).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import onnx
from onnx import AttributeProto

from dmlgraph.canonical import LOWERED_OPS
from dmlgraph.ir import OnnxOp, Subgraph, subgraphs

if TYPE_CHECKING:
    from dmlgraph.folding import NodeLike

#: How a report note on a control-flow node begins where its subgraphs hold Slice, Concat or
#: Pad nodes (``held_note``): reports list such a node with the Slice/Concat/Pad rows.
HOLDS = "its subgraphs hold"

#: Attribute kinds that hold subgraphs.
SUBGRAPH_KINDS = frozenset({AttributeProto.GRAPH, AttributeProto.GRAPHS})


def subgraph_of(graph: onnx.GraphProto) -> Subgraph:
    """A GraphProto as the IR holds it (``ir.Subgraph``)."""
    return Subgraph(graph.SerializeToString(), tuple(outer_names(graph)), tuple(
        node.op_type for node in nested_nodes(graph)
    ))


def outer_names(graph: onnx.GraphProto, inherited: frozenset[str] = frozenset()) -> list[str]:
    """The names ``graph`` reads and does not define (its inputs, initializers and node
    outputs, before their first use), nested subgraphs' included, in first-use order; names
    in ``inherited`` are defined by an enclosing subgraph."""
    defined = {value.name for value in graph.input}
    defined.update(tensor.name for tensor in graph.initializer)
    defined.update(sparse.values.name for sparse in graph.sparse_initializer)
    found: dict[str, None] = {}
    for node in graph.node:
        for name in node.input:
            if name and name not in defined and name not in inherited:
                found[name] = None
        for attr in node.attribute:
            for sub in attribute_graphs(attr):
                for name in outer_names(sub, inherited | defined):
                    found[name] = None
        defined.update(name for name in node.output if name)
    # (a subgraph output naming an enclosing graph's tensor itself is not read here: onnx's
    # checker, which the import runs first, refuses it)
    return list(found)


def nested_nodes(graph: onnx.GraphProto) -> Iterator[onnx.NodeProto]:
    """Every node of ``graph`` and of the subgraphs its nodes hold, at any depth."""
    for node in graph.node:
        yield node
        for attr in node.attribute:
            for sub in attribute_graphs(attr):
                yield from nested_nodes(sub)


def attribute_graphs(attr: AttributeProto) -> list[onnx.GraphProto]:
    """The subgraphs an attribute holds (none but for GRAPH and GRAPHS kinds)."""
    if attr.type == AttributeProto.GRAPH:
        return [attr.g]
    if attr.type == AttributeProto.GRAPHS:
        return list(attr.graphs)
    return []


def signature_problem(node: NodeLike) -> str | None:
    """Why an If's branches or a Loop's body do not fit the node (None where they do), as
    onnx's type inference says when onnxruntime loads the model ("If node has 1 but
    subgraphs produce 2"); the import's own inference is lenient and passes them, and the
    NumPy backend, running them itself, would pair what does not match."""
    if node.domain not in ("", "ai.onnx") or node.op_type not in ("If", "Loop"):
        return None
    graphs = {attr.name: attr.g for attr in node.attribute if attr.type == AttributeProto.GRAPH}
    if node.op_type == "If":
        then, other = graphs.get("then_branch"), graphs.get("else_branch")
        if then is None or other is None:
            return None  # onnx's checker refuses a missing branch
        for attr, branch in (("then_branch", then), ("else_branch", other)):
            if branch.input:  # nothing would feed them: run, they were read unset
                return (
                    f"{attr} takes {len(branch.input)} input(s) ({branch.input[0].name!r} "
                    "first); If's branches take none (they read the enclosing graph's "
                    "tensors by name)"
                )
        if len(then.output) != len(other.output):
            return (
                f"then_branch makes {len(then.output)} outputs and else_branch "
                f"{len(other.output)}; If's branches make the same number"
            )
        if len(node.output) != len(then.output):
            return (
                f"it has {len(node.output)} outputs and its branches make "
                f"{len(then.output)}; If has one output for each"
            )
        for index, (a, b) in enumerate(zip(then.output, other.output)):
            made, made_else = _elem_type(a), _elem_type(b)
            if made and made_else and made != made_else:
                return (
                    f"output {index} is {_type_name(made)} in then_branch ({a.name!r}) and "
                    f"{_type_name(made_else)} in else_branch ({b.name!r}); If's branches "
                    "make one type"
                )
        return None
    body = graphs.get("body")
    if body is None:
        return None
    if len(body.input) != len(node.input):
        return (
            f"its body takes {len(body.input)} inputs and it has {len(node.input)}; a Loop's "
            "body takes the iteration number, the condition and each carried value"
        )
    if len(body.output) != len(node.output) + 1:
        return (
            f"its body makes {len(body.output)} outputs and it has {len(node.output)}; a "
            "Loop's body makes its condition, then one for each output of the Loop"
        )
    for taken, made in zip(body.input[2:], body.output[1:]):
        said, out = _elem_type(taken), _elem_type(made)
        if said and out and said != out:
            return (
                f"its body takes carried value {taken.name!r} as {_type_name(said)} and makes "
                f"it ({made.name!r}) {_type_name(out)}; a carried value keeps its type"
            )
    return None


def _elem_type(value: onnx.ValueInfoProto) -> int:
    """A tensor value's declared element type, 0 where none is (or it is no tensor)."""
    return value.type.tensor_type.elem_type if value.type.HasField("tensor_type") else 0


def _type_name(elem_type: int) -> str:
    return f"tensor({onnx.helper.tensor_dtype_to_np_dtype(elem_type)})"


#: Control-flow ops (domain "") whose subgraphs the NumPy backend lowers when it runs them
#: (``backends.numpy.control``), by the attributes that hold those subgraphs. Scan is not
#: one: its node runs whole on the fallback.
LOWERED_WHEN_RUN: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {"If": ("then_branch", "else_branch"), "Loop": ("body",)}
)


def held_note(op: Any) -> str:
    """What a control-flow op's subgraphs hold of the ops dmlgraph lowers, for its report
    ("" for none), and when they are lowered: by the NumPy backend as it runs an If or Loop
    (``LOWERED_WHEN_RUN``; their sizes are known only then), else never (Scan's run on the
    fallback with it)."""
    if not isinstance(op, OnnxOp) or not op.holds_subgraphs:  # asked of every unlowered node
        return ""
    held = Counter(name for sub in subgraphs(op) for name in sub.ops if name in LOWERED_OPS)
    if not held:
        return ""
    listed = ", ".join(f"{n} {name}" for name, n in sorted(held.items()))
    if op.domain == "" and op.op_type in LOWERED_WHEN_RUN:
        return (
            f"{HOLDS} {listed}: the numpy backend lowers them when it runs the "
            f"{'branch taken' if op.op_type == 'If' else 'body'}, by the sizes that arrive "
            "(its run record lists what they became; `dmlgraph lower` lists them by the "
            "types the enclosing graph gives)"
        )
    return (
        f"{HOLDS} {listed}: they run on the fallback with it (dmlgraph lowers the Slice, "
        "Concat and Pad nodes of the main graph and of If and Loop subgraphs)"
    )


def holder_label(name: str, outputs: Sequence[str]) -> str:
    """How a control-flow node is named in a path to its subgraph ("If '/If' then_branch"):
    its name, quoted, or for an unnamed one the first tensor it makes (tensor names are
    unique; two unnamed Ifs were both "If 'If'", in ``lower``'s listing and in run records)."""
    if name:
        return repr(name)
    made = next((out for out in outputs if out), "")
    return f"(unnamed, making {made!r})"


def graph_proto(sub: Subgraph, renamed: Mapping[str, str]) -> onnx.GraphProto:
    """The subgraph as a GraphProto, its outer names ``renamed`` (old -> new) wherever it
    reads them: a pass renamed them in the enclosing graph. A name the subgraph defines
    itself (an input, an initializer, a node output, at any depth) that is one of the new
    names is renamed first, within its scope, so that it does not capture the reads: a Loop
    body's carried input named x, as the graph input an eliminated Slice's output became,
    read the body's own x (ONNX lets a subgraph's names shadow the enclosing graph's)."""
    graph = onnx.GraphProto.FromString(sub.data)
    renamed = {old: new for old, new in renamed.items() if old != new}
    if renamed:
        targets = frozenset(renamed.values())
        taken = set(all_names(graph)) | targets | set(renamed)
        _rewrite(graph, renamed, targets, taken)
    return graph


def subgraph_model(
    sub: Subgraph,
    name: str,
    types: Mapping[str, onnx.TypeProto],
    constants: Mapping[str, Any],
    opset_imports: Mapping[str, int],
    ir_version: int,
) -> onnx.ModelProto:
    """A subgraph as a model of its own, to import and lower by itself: its inputs and the
    enclosing tensors it reads typed by ``types``, the enclosing ``constants`` it reads
    (arrays, by name) as initializers. The NumPy backend types them as they arrive
    (``backends.numpy.control``), ``lower``'s listing as the enclosing graph types them
    (``lowering.held``)."""
    from onnx import numpy_helper

    graph = graph_proto(sub, {})
    for value in graph.input:
        value.type.CopyFrom(types[value.name])
    own = {value.name for value in graph.input}
    own.update(tensor.name for tensor in graph.initializer)
    for outer in sub.outer:
        if outer in own:
            continue
        if outer in constants:
            graph.initializer.append(numpy_helper.from_array(constants[outer], outer))
        else:
            made = graph.input.add()
            made.name = outer
            made.type.CopyFrom(types[outer])
    graph.name = name
    return onnx.helper.make_model(
        graph,
        opset_imports=[onnx.helper.make_opsetid(d, v) for d, v in opset_imports.items()],
        ir_version=ir_version,
    )


def all_names(graph: onnx.GraphProto) -> Iterator[str]:
    """Every name a graph and its subgraphs define or read."""
    yield from (value.name for value in graph.input)
    yield from (value.name for value in graph.output)
    yield from (tensor.name for tensor in graph.initializer)
    for node in graph.node:
        yield from node.input
        yield from node.output
        for attr in node.attribute:
            for sub in attribute_graphs(attr):
                yield from all_names(sub)


def _rewrite(
    graph: onnx.GraphProto, outer: Mapping[str, str], targets: frozenset[str], taken: set[str]
) -> None:
    """Rename, in ``graph`` and its subgraphs, the enclosing names it reads by ``outer``
    (old -> new) and each name it defines that is in ``targets`` to a fresh one (added to
    ``taken``). A definition of an old name shadows its renaming below it."""
    scope = dict(outer)  # how a name read here is written

    def define(name: str) -> str:
        if name in targets:
            fresh, k = f"{name}__local", 1
            while fresh in taken:
                k += 1
                fresh = f"{name}__local{k}"
            taken.add(fresh)
            scope[name] = fresh
            return fresh
        scope.pop(name, None)  # this scope's own: an enclosing renaming no longer applies
        return name

    for value in graph.input:
        value.name = define(value.name)
    for tensor in graph.initializer:
        tensor.name = define(tensor.name)
    for node in graph.node:
        for port, name in enumerate(node.input):
            if name in scope:
                node.input[port] = scope[name]
        for attr in node.attribute:
            for sub in attribute_graphs(attr):
                _rewrite(sub, scope, targets, taken)
        for port, name in enumerate(node.output):
            if name:
                node.output[port] = define(name)
    for value in graph.output:
        value.name = scope.get(value.name, value.name)
    for value in graph.value_info:
        value.name = scope.get(value.name, value.name)
