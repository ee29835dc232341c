"""Control flow's subgraphs (If's branches, Loop's and Scan's bodies) as the IR holds them.

dmlgraph lowers the main graph's Slice, Concat and Pad nodes ahead of time, and the NumPy
backend an If's, Loop's or Scan's subgraphs' when it runs them (``backends.numpy.control``;
a Scan-8, which scans batches, runs whole on the fallback, as any op without a lowering
rule). What the IR must know of a subgraph is what ONNX leaves implicit: the tensors of the
enclosing graph it reads by name. Its node lists them after its explicit inputs
(``ir.implicit_inputs``), so ordering, liveness, dead-node removal and fallback segments
treat them as the inputs they are; a proto written back leaves them out again, renaming them
inside the subgraph where a pass renamed them outside (an eliminated Slice's output read as
its input).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import onnx
from onnx import AttributeProto, TensorProto

from dmlgraph.canonical import LOWERED_OPS
from dmlgraph.dtypes import DTYPE_TO_ELEM_TYPE, ELEM_TYPE_TO_DTYPE
from dmlgraph.errors import counted
from dmlgraph.ir import OnnxOp, Shape, Subgraph, TensorInfo, dims_text, subgraphs
from dmlgraph.reference_ops import SEQUENCE_SCAN_OPSET
from dmlgraph.value_info import shape_dim

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


def signature_problem(node: NodeLike, version: int) -> str | None:
    """Why an If's branches, a Loop's body or a Scan's body and attributes (``scan_form``) do
    not fit the node of since_version ``version`` (None where they do), as onnx's type
    inference says when onnxruntime loads the model ("If node has 1 but subgraphs produce
    2"); the import's own inference is lenient and passes them, and the NumPy backend,
    running them itself, would pair what does not match."""
    if node.domain not in ("", "ai.onnx") or node.op_type not in LOWERED_WHEN_RUN:
        return None
    graphs = {attr.name: attr.g for attr in node.attribute if attr.type == AttributeProto.GRAPH}
    for attr, graph in graphs.items():
        undefined = _undefined_type(attr, graph)
        if undefined is not None:
            return undefined
    if node.op_type == "Scan":
        return _scan_problem(node, version, graphs.get("body"))
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
    return _loop_scalars_problem(body.input[:2]) or _kept_types(
        body.input[2:], body.output[1:], "carried value"
    )


def _undefined_type(attr: str, graph: onnx.GraphProto) -> str | None:
    """Why a subgraph declares a tensor of element type 0 (UNDEFINED), None where it does
    not: an input, or an output or ``value_info`` entry that a node of it makes (one naming
    its input or initializer is typed by that, as a main graph's output is). ONNX requires a
    tensor type's element type (a subgraph's value may leave its whole type out instead), and
    onnxruntime refuses the model at load ("Invalid tensor data type 0"), where onnx's checker
    and onnx.reference pass it, and dmlgraph ran the body typed by what arrived."""
    made: set[str] | None = None  # what the subgraph's nodes make, read where asked
    for what, values in (("input", graph.input), ("output", graph.output),
                         ("value_info entry", graph.value_info)):
        for value in values:
            if not value.type.HasField("tensor_type") or value.type.tensor_type.elem_type:
                continue
            if what != "input":
                made = {out for n in graph.node for out in n.output} if made is None else made
                if value.name not in made:
                    continue
            return (
                f"its {attr} declares {what} {value.name!r} a tensor of element type 0 "
                "(UNDEFINED); give its type, or leave the type out (onnxruntime refuses the "
                "model: 'Invalid tensor data type 0')"
            )
    return None


#: What a Loop feeds its body's first two inputs, as ONNX says: a scalar of each type.
_LOOP_SCALARS = (("iteration number", TensorProto.INT64), ("condition", TensorProto.BOOL))


def _loop_scalars_problem(inputs: Sequence[onnx.ValueInfoProto]) -> str | None:
    """Why a Loop's body declares its iteration number or condition otherwise than the
    scalar int64 and bool ONNX says the Loop feeds them (None where it does not, or declares
    no type): onnxruntime refuses another element type at load and ran another rank (an
    int64[2] iteration number) by a reading of its own; run, the body was retyped to the
    scalar fed."""
    for (what, elem), value in zip(_LOOP_SCALARS, inputs):
        kind = value.type.WhichOneof("value")
        declared = value.type.tensor_type
        if kind is None or (
            kind == "tensor_type" and declared.elem_type in (0, elem)
            and not (declared.HasField("shape") and declared.shape.dim)
        ):
            continue
        return (
            f"its body declares its {what} {value.name!r} as {_said(value.type)}; a Loop "
            f"feeds it a scalar, {ELEM_TYPE_TO_DTYPE[elem]}[], as ONNX says"
        )
    return None


def _said(declared: onnx.TypeProto) -> str:
    """A declared type as messages name it: a tensor's element type and shape ("int64[2]"),
    or its kind ("a sequence")."""
    kind = declared.WhichOneof("value")
    if kind == "tensor_type":
        return _declared(declared.tensor_type)
    return f"a {(kind or 'no_type').removesuffix('_type').replace('_', ' ')}"


def loop_fed_problem(node: NodeLike, fed: Sequence[Any]) -> str | None:
    """Why a Loop's body declares a carried value of another kind or element type than the
    tensor the Loop feeds it (``fed``: the dtypes of the node's inputs, None where unknown;
    dmlgraph's graphs hold tensors only), None where it does not: onnx's inference, which
    onnxruntime runs at load, refuses it ("type case mismatch", "Tensor element type
    mismatch"); run, a body taking a sequence was retyped to the tensor fed."""
    body = next((attr.g for attr in node.attribute if attr.name == "body"), None)
    if body is None:
        return None
    for name, dtype, value in zip(node.input[2:], fed[2:], body.input[2:]):
        kind = value.type.WhichOneof("value")
        if not name or kind is None or (
            kind == "tensor_type" and not _fed_misfit(value.type.tensor_type, dtype, None)
        ):
            continue
        return (
            f"its body declares carried value {value.name!r} as {_said(value.type)}, and the "
            f"Loop feeds it {name!r}, a {dtype or '?'} tensor; a Loop's body takes each "
            "carried value as the Loop is given it"
        )
    return None



def scan_dtypes_problem(node: NodeLike, version: int, fed: Sequence[Any]) -> str | None:
    """Why a Scan's (version 9 on) body declares an input of another element type than the
    tensor fed to it (``fed``: the dtypes of the node's inputs, None where unknown), None
    where it does not. Asked with the node's schema, before its outputs' types, which the
    body's declarations give: a model output declared float32 of a state variable the body
    declares int32 was blamed on the output. Sizes are ``scan_fed_problem``'s."""
    body = next((attr.g for attr in node.attribute if attr.name == "body"), None)
    scans = next((attr.i for attr in node.attribute if attr.name == "num_scan_inputs"), None)
    if version < _SCAN_RUN_SINCE or body is None or scans is None:
        return None
    states = len(node.input) - scans
    for index, (name, dtype, value) in enumerate(zip(node.input, fed, body.input)):
        if not value.type.HasField("tensor_type") or not _fed_misfit(
            value.type.tensor_type, dtype, None
        ):
            continue
        what = "state variable" if index < states else "scan input's slice"
        return (
            f"its body declares {what} {value.name!r} as {_said(value.type)}, and the Scan "
            f"feeds it {name!r}, a {dtype} tensor; onnxruntime refuses a body input "
            "declared of another type than the one fed"
        )
    return None

def fed_arrays_problem(
    declared: Sequence[onnx.ValueInfoProto], arrays: Mapping[str, Any], what: str
) -> str | None:
    """Why the arrays that arrive at a subgraph's inputs do not fit the types it declares
    for them (None where they do), as a main graph's feed is refused
    (``backends.base.check_feeds``): another kind, element type, rank or fixed size, or one
    named dimension of two sizes; ``what`` names the subgraph ("body"). Its model is typed
    by what arrives (``subgraph_model``): run, the body took any size its declarations
    forbid."""
    symbols: dict[str, tuple[int, str, int]] = {}  # name -> (size, input, axis)
    for value in declared:
        array = arrays.get(value.name)
        kind = value.type.WhichOneof("value")
        if array is None or kind is None:
            continue
        arrived = _fed(array.dtype, array.shape)
        if kind != "tensor_type" or _fed_misfit(value.type.tensor_type, array.dtype,
                                                array.shape):
            return (
                f"its {what}'s input {value.name!r} is {arrived} as it arrives; the {what} "
                f"declares it {_said(value.type)}"
            )
        for axis, (dim, size) in enumerate(zip(value.type.tensor_type.shape.dim, array.shape)):
            if dim.HasField("dim_param"):
                seen = symbols.setdefault(dim.dim_param, (size, value.name, axis))
                if seen[0] != size:
                    return (
                        f"its {what}'s dimension {dim.dim_param!r} is {seen[0]} in input "
                        f"{seen[1]!r} (axis {seen[2]}) but {size} in input {value.name!r} "
                        f"(axis {axis}) as they arrive"
                    )
    return None


def _scan_problem(node: NodeLike, version: int, body: onnx.GraphProto | None) -> str | None:
    if body is None:  # onnx's checker refuses a missing body
        return None
    attrs = {
        attr.name: onnx.helper.get_attribute_value(attr) for attr in node.attribute
        if attr.name in _SCAN_ATTRIBUTES
    }
    if version < _SCAN_RUN_SINCE:  # Scan-8: sequence_lens first, its directions by name
        try:
            scan_form(attrs, len(node.input) - 1, len(node.output), len(body.input),
                      len(body.output), input_directions="directions")
        except ValueError as exc:
            return str(exc)
        return None  # the evaluator (``reference_ops``) checks its inputs' batch axes
    try:
        form = scan_form(attrs, len(node.input), len(node.output), len(body.input),
                         len(body.output))
    except ValueError as exc:
        return str(exc)
    for index, value in enumerate(body.input):
        if value.type.WhichOneof("value") not in (None, "tensor_type"):
            what = "state variable" if index < form.states else "scan input's slice"
            return (
                f"its body declares {what} {value.name!r} as {_said(value.type)}; a Scan "
                "feeds its body tensors (its inputs' slices and state variables)"
            )
    # an axis against the rank the body declares a slice of (the run checks every axis)
    for attribute, axes, values in (
        ("scan_input_axes", form.input_axes, body.input[form.states :]),
        ("scan_output_axes", form.output_axes, body.output[form.states :]),
    ):
        for index, (axis, value) in enumerate(zip(axes, values)):
            rank = _declared_rank(value)
            if rank is not None:
                try:
                    scan_axis(axis, rank + 1, attribute, index)
                except ValueError as exc:
                    return f"{exc}: its body's {value.name!r} is of rank {rank}"
    return _kept_types(body.input[: form.states], body.output[: form.states], "state variable")


def scan_fed_problem(
    op: OnnxOp, inputs: int, outputs: int, fed: Sequence[TensorInfo | None]
) -> str | None:
    """Why a Scan (version 9 on) of ``inputs`` and ``outputs`` cannot take the tensors ``fed``
    to it (their inferred types, None where unknown) as its body declares its inputs (None
    where it can): onnx's inference, which onnxruntime runs at load, feeds the body each
    state variable's type and each scan input's without its scan axis, and refuses one of
    another element type, rank or size ("Can't merge shape info. Both inferred and declared
    dimension have values but they differ"); run as given, the body computes on from sizes
    it does not declare."""
    sub = op.attrs.get("body")
    if not isinstance(sub, Subgraph) or not lowered_when_run(op):
        return None
    body = onnx.GraphProto.FromString(sub.data)
    form = scan_form(op.attrs, inputs, outputs, len(body.input), len(body.output))
    for index, (value, info) in enumerate(zip(body.input, fed)):
        if info is None or not value.type.HasField("tensor_type"):
            continue
        shape, what = info.shape, "state variable"
        if index >= form.states:
            what = "scan input's slice"
            if shape is not None:
                try:
                    shape = scan_slice(shape, form.input_axes[index - form.states],
                                       index - form.states)
                except ValueError:  # the run says which axis
                    continue
        if _fed_misfit(value.type.tensor_type, info.dtype, shape):
            return (
                f"its body declares {what} {value.name!r} as "
                f"{_declared(value.type.tensor_type)}, and the Scan feeds it "
                f"{_fed(info.dtype, shape)}; onnxruntime refuses a body input declared of "
                "another type or size than the one fed"
            )
    return None


def scan_state_problem(
    op: OnnxOp,
    fed: Sequence[TensorInfo | None],
    made: Sequence[onnx.ValueInfoProto],
    node_made: Callable[[int], onnx.TypeProto.Tensor | None] = lambda index: None,
) -> str | None:
    """Why a Scan cannot keep a state variable's shape: the body's next value of it of
    another rank or size than the state fed (``fed``: its inputs' inferred types, None where
    unknown; a Scan-8's each batch entry of it), None where it can. onnx's inference, which
    onnxruntime runs at load, gives the Scan's output the state's type and merges into it the
    body's output as onnxruntime types it ("Can't merge shape info. Both inferred and declared
    dimension have values but they differ"); run, the first step's output is refused.
    ``made``: the body's outputs as onnx's inference of the model types them: the node's
    type where the body declares no size; a declared size stays in onnx's, while onnxruntime
    merges the node's type into it (``onnxruntime_sizes``), so where the declaration is not
    the state's, ``node_made`` (the type the node making output ``index`` infers, None where
    not known: then only a declared rank is read) says what onnxruntime keeps."""
    sub = op.attrs.get("body")
    scans = op.attrs.get("num_scan_inputs")
    if not isinstance(sub, Subgraph) or not isinstance(scans, int) or op.domain != "":
        return None
    batched = op.since_version < _SCAN_RUN_SINCE  # Scan-8: sequence_lens, then batches
    body = onnx.GraphProto.FromString(sub.data)
    for index, (info, value, declared) in enumerate(
        zip(fed[int(batched) : len(fed) - scans], made, body.output)
    ):
        if info is None or info.shape is None or not value.type.HasField("tensor_type"):
            continue
        shape, entry = info.shape, ""
        if batched:  # the body takes each batch entry's state
            if not shape:
                continue
            shape, entry = shape[1:], f" (a batch entry of {_fed(info.dtype, info.shape)})"
        passed = _passed_through(body, declared.name)
        made_type = (value if passed is None else passed).type.tensor_type
        if not made_type.HasField("shape"):
            continue
        said, how = declared.type.tensor_type, "as onnx infers it"
        load = "refuses the model at load"
        sizes = _sizes(made_type)
        if passed is None and said.HasField("shape") and not _merges(shape, _sizes(said)):
            node, how = node_made(index), "as declared"
            kept = None if node is None else onnxruntime_sizes(said, node)
            if node is None:  # (unknown: only a rank onnx's merge refuses is sure)
                sizes = [None] * len(said.shape.dim)
            elif kept is not None:
                sizes = kept
            elif len(said.shape.dim) == len(shape):  # onnxruntime drops the shape: it loads
                continue  # the model, and its run refuses a shapeless output
            else:
                sizes, load = _sizes(said), _SHAPE_DROPPED
        if _merges(shape, sizes):
            continue
        return (
            f"its body makes state variable {index} ({value.name!r}) "
            f"{_declared(made_type)} from {_fed(info.dtype, shape)}{entry}, {how}; a Scan's "
            f"state variables keep their shape from step to step (onnxruntime {load})"
        )
    return _scan_output_problem(body, len(fed) - int(batched) - scans, node_made)


def _passed_through(body: onnx.GraphProto, name: str) -> onnx.ValueInfoProto | None:
    """The body input a body output is, passed through (no node makes it); None where a node
    makes it. onnxruntime (1.32) takes such an output as the input is, whatever it is declared
    (a state declared [2, 1] passed through from [2]: it loads and runs, as onnx.reference
    does, where dmlgraph said it refused the model at load)."""
    if any(name in node.output for node in body.node):
        return None
    return next((value for value in body.input if value.name == name), None)


#: What onnxruntime does with a Scan whose body declares an output of another rank than
#: its node makes (``onnxruntime_sizes``: its merge keeps no shape).
_SHAPE_DROPPED = (
    "loads the model and fails at its run: \"Subgraph must have the shape set for all "
    "outputs\""
)


def _scan_output_problem(
    body: onnx.GraphProto, states: int, node_made: Callable[[int], onnx.TypeProto.Tensor | None]
) -> str | None:
    """Why a Scan's body cannot make a scan output as it declares it: of another rank than
    the node making it gives (``node_made``), as for a state (``scan_state_problem``):
    onnxruntime's merge keeps no shape, it loads the model and every run fails, where the
    numpy backend ran it by what the node made. None where the ranks agree or one is not
    known."""
    for index in range(states, len(body.output)):
        value = body.output[index]
        said = value.type.tensor_type
        if not value.type.HasField("tensor_type") or not said.HasField("shape"):
            continue
        node = node_made(index)
        if node is None or onnxruntime_sizes(said, node) is not None:
            continue
        return (
            f"its body declares scan output {index - states} ({value.name!r}) "
            f"{_declared(said)}, and its node makes {_declared(node)}: a Scan's body makes "
            f"its outputs as declared (onnxruntime {_SHAPE_DROPPED})"
        )
    return None


def onnxruntime_sizes(
    declared: onnx.TypeProto.Tensor, node: onnx.TypeProto.Tensor
) -> list[int | None] | None:
    """The sizes onnxruntime's load gives a subgraph output declared so, which a node of
    type ``node`` makes: the node's type merged into the declaration, or where they
    differ, leniently (``MergeShapeInfo``'s ``UnionShapeInfo``: a size stays
    where both give it; None, no shape, where their ranks differ)."""
    said = _sizes(declared)
    if not node.HasField("shape"):
        return said
    got = _sizes(node)
    if len(got) != len(said):
        return None
    if _merges(got, said):
        return [s if s is not None else g for s, g in zip(said, got)]
    return [s if s == g else None for s, g in zip(said, got)]


def _sizes(tensor: onnx.TypeProto.Tensor) -> list[int | None]:
    return [d.dim_value if d.HasField("dim_value") else None for d in tensor.shape.dim]


def _merges(shape: Sequence[Any], sizes: Sequence[int | None]) -> bool:
    """Whether onnx's merge takes ``sizes`` into ``shape``: one rank, no size both give
    differing."""
    return len(sizes) == len(shape) and not any(
        isinstance(n, int) and m is not None and n != m for n, m in zip(shape, sizes)
    )


def _fed_misfit(declared: onnx.TypeProto.Tensor, dtype: Any, shape: Shape | None) -> bool:
    """Whether a body input declared so cannot take a tensor of ``dtype`` and ``shape``
    (None where unknown), as onnx's type merge says: another element type, rank, or size
    where both give one."""
    elem = DTYPE_TO_ELEM_TYPE.get(dtype) if dtype is not None else None
    if declared.elem_type and elem is not None and declared.elem_type != elem:
        return True
    if not declared.HasField("shape") or shape is None:
        return False
    dims = declared.shape.dim
    if len(dims) != len(shape):
        return True
    return any(
        d.HasField("dim_value") and isinstance(n, int) and d.dim_value != n
        for d, n in zip(dims, shape)
    )


def _declared(declared: onnx.TypeProto.Tensor) -> str:
    dtype = ELEM_TYPE_TO_DTYPE.get(declared.elem_type)
    if not declared.HasField("shape"):
        return f"{dtype or '?'} of any shape"
    return f"{dtype or '?'}{dims_text([shape_dim(d) for d in declared.shape.dim])}"


def _fed(dtype: Any, shape: Shape | None) -> str:
    return f"{dtype or '?'} of any shape" if shape is None else f"{dtype or '?'}{dims_text(shape)}"


def _declared_rank(value: onnx.ValueInfoProto) -> int | None:
    """The rank a tensor value's declared shape gives (None where it gives none)."""
    if not value.type.HasField("tensor_type") or not value.type.tensor_type.HasField("shape"):
        return None
    return len(value.type.tensor_type.shape.dim)


#: The attributes ``scan_form`` reads.
_SCAN_ATTRIBUTES = frozenset({
    "num_scan_inputs", "scan_input_axes", "scan_input_directions", "scan_output_axes",
    "scan_output_directions", "directions",  # Scan-8's input directions
})


def _kept_types(
    taken: Sequence[onnx.ValueInfoProto], made: Sequence[onnx.ValueInfoProto], what: str
) -> str | None:
    """Why a body's values fed back (a Loop's carried values, a Scan's state variables) do
    not keep the type the body takes them as (None where they do)."""
    for value_in, value_out in zip(taken, made):
        said, out = _elem_type(value_in), _elem_type(value_out)
        if said and out and said != out:
            return (
                f"its body takes {what} {value_in.name!r} as {_type_name(said)} and makes "
                f"it ({value_out.name!r}) {_type_name(out)}; a {what} keeps its type"
            )
    return None


def declared_output_types(node: NodeLike) -> list[int]:
    """The element types an If's, Loop's or Scan's outputs get from its subgraph's declared
    outputs (then_branch's, the body's but its condition), 0 where one declares none:
    onnxruntime refuses a graph output typed otherwise ("Type (tensor(int64)) of output arg
    (y) of node () does not match expected type (tensor(float))")."""
    graphs = {attr.name: attr.g for attr in node.attribute if attr.type == AttributeProto.GRAPH}
    if node.op_type == "If":
        outputs = graphs["then_branch"].output if "then_branch" in graphs else []
    elif node.op_type in ("Loop", "Scan") and "body" in graphs:
        outputs = graphs["body"].output[node.op_type == "Loop":]
    else:
        outputs = []
    return [_elem_type(value) for value in outputs]


def _elem_type(value: onnx.ValueInfoProto) -> int:
    """A tensor value's declared element type, 0 where none is (or it is no tensor)."""
    return value.type.tensor_type.elem_type if value.type.HasField("tensor_type") else 0


def _type_name(elem_type: int) -> str:
    if elem_type not in onnx.TensorProto.DataType.values():  # a corrupt file's: KeyError
        return f"tensor(element type {elem_type}, which ONNX does not define)"
    return f"tensor({onnx.helper.tensor_dtype_to_np_dtype(elem_type)})"


#: Control-flow ops (domain "") whose subgraphs the NumPy backend lowers when it runs them
#: (``backends.numpy.control``), by the attributes that hold those subgraphs
#: (``lowered_when_run`` says it of a node: Scan-8 is not run so).
LOWERED_WHEN_RUN: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {"If": ("then_branch", "else_branch"), "Loop": ("body",), "Scan": ("body",)}
)
#: Scan-8 scans a batch of sequences (``sequence_lens``, a batch axis on every input): its
#: node runs whole on the fallback, as any op without a lowering rule.
_SCAN_RUN_SINCE = SEQUENCE_SCAN_OPSET


def lowered_when_run(op: Any) -> tuple[str, ...]:
    """The attributes of ``op`` whose subgraphs the NumPy backend lowers when it runs it
    (``LOWERED_WHEN_RUN``); none for any other op, a Scan-8 among them."""
    if not isinstance(op, OnnxOp) or op.domain != "":
        return ()
    attrs = LOWERED_WHEN_RUN.get(op.op_type, ())
    if op.op_type == "Scan" and op.since_version < _SCAN_RUN_SINCE:
        return ()
    return attrs


@dataclass(frozen=True)
class ScanForm:
    """How a Scan (version 9 on) runs its body, from its attributes: ``states`` state
    variables, then one scan input per entry of ``input_axes`` (each sliced along that axis,
    last to first where ``input_reversed``), and the scan outputs, each stacked along its
    ``output_axes`` entry (last to first where ``output_reversed``). Axes are as given: a
    negative one counts from the end of its tensor's rank (``scan_axis``)."""

    states: int
    input_axes: tuple[int, ...]
    input_reversed: tuple[bool, ...]
    output_axes: tuple[int, ...]
    output_reversed: tuple[bool, ...]


def scan_form(
    attrs: Mapping[str, Any], inputs: int, outputs: int, body_inputs: int, body_outputs: int,
    input_directions: str = "scan_input_directions",
) -> ScanForm:
    """A Scan's ``ScanForm`` from its attribute values (``num_scan_inputs`` and the four
    optional lists), its numbers of inputs and outputs and its body's; ValueError saying
    which rule they break, as onnxruntime refuses them at load (onnx's inference: "Number of
    scan input axes specified (2) is not equal to number of scan inputs (1)"; its kernel:
    "Invalid values in 'scan_input_directions'. 0 == forward. 1 == reverse"). A Scan-8
    names its input directions ``directions`` (``input_directions``; ``inputs`` counts its
    inputs after ``sequence_lens``) and has none of the other lists."""
    scans = attrs.get("num_scan_inputs")
    if scans is None:
        raise ValueError("it has no num_scan_inputs attribute, which Scan requires")
    if not 1 <= scans <= inputs:
        raise ValueError(
            f"num_scan_inputs is {scans}; it has {inputs} inputs, and Scan scans at least one "
            "and at most all of them (the state variables come first)"
        )
    states = inputs - scans
    if outputs < states:
        raise ValueError(
            f"it has {outputs} outputs and {states} state variables; a Scan makes each state "
            "variable's final value, then its scan outputs"
        )
    if body_inputs != inputs:
        raise ValueError(
            f"its body takes {body_inputs} inputs and it has {inputs}; a Scan's body takes "
            "each state variable and one slice of each scan input"
        )
    if body_outputs != outputs:
        raise ValueError(
            f"its body makes {body_outputs} outputs and it has {outputs}; a Scan's body makes "
            "each state variable's next value and one slice of each scan output"
        )
    lists = {}
    for key, name, kind, count in (
        ("scan_input_axes", "scan_input_axes", "input", scans),
        ("scan_input_directions", input_directions, "input", scans),
        ("scan_output_axes", "scan_output_axes", "output", outputs - states),
        ("scan_output_directions", "scan_output_directions", "output", outputs - states),
    ):
        given = attrs.get(name)
        values = (0,) * count if given is None else tuple(int(v) for v in given)
        if len(values) != count:
            raise ValueError(
                f"{name} has {len(values)} entries; it has {counted(count, f'scan {kind}')}, "
                "one entry each"
            )
        if name.endswith("directions") and any(v not in (0, 1) for v in values):
            raise ValueError(
                f"{name} is {list(values)}; a direction is 0 (forward) or 1 (reverse)"
            )
        lists[key] = values
    return ScanForm(
        states,
        lists["scan_input_axes"],
        tuple(v == 1 for v in lists["scan_input_directions"]),
        lists["scan_output_axes"],
        tuple(v == 1 for v in lists["scan_output_directions"]),
    )


def scan_slice(shape: Shape, axis: int, index: int) -> Shape:
    """The shape of one slice of scan input ``index``, of ``shape``, along its ``axis``
    (``scan_axis``'s ValueError where it is not one of the shape's)."""
    at = scan_axis(axis, len(shape), "scan_input_axes", index)
    return shape[:at] + shape[at + 1 :]


def scan_axis(axis: int, rank: int, attribute: str, index: int) -> int:
    """Entry ``index`` of a Scan's ``attribute`` (an axis of a tensor of ``rank``) from 0;
    ValueError outside [-rank, rank - 1], as onnx's inference refuses it ("scan_input_axes
    axis value 2 is invalid for a tensor of rank 2")."""
    if not -rank <= axis < rank:
        raise ValueError(
            f"{attribute}[{index}] is {axis}, not an axis of a tensor of rank {rank} "
            f"({-rank} to {rank - 1})"
        )
    return axis + rank if axis < 0 else axis


#: A Loop's body declaring its iteration number or condition without a shape (no type at all,
#: or a tensor type without one), as ONNX allows (a subgraph's input types may be left out;
#: an int64 and a bool scalar arrive): onnxruntime 1.32 fails on it when it runs ("Loop
#: subgraph input 0 has unknown shape"), a Loop of no trip too; onnx.reference runs it.
_UNSHAPED_COUNTER = (
    "divergence: the Loop's body declares its {which} without a shape, as ONNX allows (a "
    "subgraph input's type may be left out; a scalar arrives), and onnx.reference runs it; "
    "onnxruntime 1.32 fails on it when it runs (\"Loop subgraph input {index} has unknown "
    "shape\")"
)

#: A Loop's body declaring its condition with no type at all where the Loop leaves its
#: condition input out, as ONNX allows (the IR requires types of the main graph's inputs and
#: outputs only; a bool scalar arrives): onnx's inference types the body's condition by the
#: Loop's, so it gives it none, and onnxruntime 1.32 refuses the model at load. Where the Loop
#: is given a condition, onnxruntime types the body's by it and runs the model.
_UNTYPED_CONDITION = (
    "divergence: the Loop's body declares its condition {name!r} with no type and the Loop "
    "leaves its condition input out, as ONNX allows (a subgraph input's type may be left out; "
    "a bool scalar arrives), and onnx.reference runs it; onnxruntime 1.32 refuses the model at "
    "load (\"Model input ({name}) does not have type information\"){more}"
)


def loop_divergence(op: OnnxOp, inputs: Sequence[str], held_at_run: bool = True) -> str:
    """The divergence note of a Loop whose body declares its iteration number or condition
    without a shape (``_UNSHAPED_COUNTER``), or its condition with no type at all where the
    Loop's ``inputs`` (its explicit ones) leave the condition out (``_UNTYPED_CONDITION``:
    onnxruntime refuses that at load, the first failure); else, for an If, Loop or Scan, the
    note of such a Loop its subgraphs hold at any depth (``_held_loop_divergence``); "" for
    any other. ``held_at_run`` False: a held Loop's only where onnxruntime refuses the model
    at load (one it fails on when it runs diverges only where its holder runs it: not in an
    If's branch not taken, which lowering cannot tell)."""
    body = op.attrs.get("body")
    own = ""
    if op.op_type == "Loop" and op.domain == "" and isinstance(body, Subgraph):
        own = _body_divergence(onnx.GraphProto.FromString(body.data), inputs)
    return own or next((note for sub in subgraphs(op) if "Loop" in sub.ops
                        if (note := _held_loop_divergence(
                            onnx.GraphProto.FromString(sub.data), held_at_run))), "")


def _held_loop_divergence(graph: onnx.GraphProto, at_run: bool = True) -> str:
    """The note of the first Loop in ``graph`` (at any depth) that ``_body_divergence``
    notes (``at_run`` False: of those onnxruntime refuses at load): the same words as the
    Loop's own, so that ``check`` counts it once where the numpy backend runs the subgraph
    and notes the Loop itself. onnxruntime's error names the node it holds, and the numpy
    backend may run the holder whole on its fallback (then nothing noted the Loop, and check
    exited 2 with onnxruntime's error)."""
    for node in graph.node:
        for attr in node.attribute:
            for held in (*([attr.g] if attr.HasField("g") else ()), *attr.graphs):
                own = _body_divergence(held, node.input, at_run) if (
                    node.op_type == "Loop" and node.domain in ("", "ai.onnx")
                    and attr.name == "body") else ""
                if note := own or _held_loop_divergence(held, at_run):
                    return note
    return ""


def _body_divergence(body: onnx.GraphProto, inputs: Sequence[str], at_run: bool = True) -> str:
    """``loop_divergence`` of a Loop of this body and explicit ``inputs`` (``at_run`` False:
    only where onnxruntime refuses the model at load)."""
    counters = body.input[:2]
    named = [
        f"{what} {value.name!r}"
        for index, (what, value) in enumerate(zip(("iteration number", "condition"), counters))
        if not value.type.tensor_type.HasField("shape")
        and (index == 0 or value.type.HasField("tensor_type"))
    ]
    untyped = len(counters) > 1 and not counters[1].HasField("type")
    if untyped and not (len(inputs) > 1 and inputs[1]):
        more = (f"; its iteration number {counters[0].name!r} is declared without a shape too, "
                "which onnxruntime fails on when it runs" if named else "")
        return _UNTYPED_CONDITION.format(name=counters[1].name, more=more)
    if not named or not at_run:
        return ""
    index = 0 if named[0].startswith("iteration") else 1
    return _UNSHAPED_COUNTER.format(which=" and ".join(named), index=index)


def held_counts(op: Any) -> Counter[str]:
    """How many of each op dmlgraph lowers an op's subgraphs hold (none but for control flow):
    what ``held_note``, ``inspect`` and ``check``'s summary count beside the main graph's."""
    if not isinstance(op, OnnxOp) or not op.holds_subgraphs:  # asked of every unlowered node
        return Counter()
    return Counter(name for sub in subgraphs(op) for name in sub.ops if name in LOWERED_OPS)


def held_note(op: Any) -> str:
    """What a control-flow op's subgraphs hold of the ops dmlgraph lowers, for its report
    ("" for none), and when they are lowered: by the NumPy backend as it runs an If, Loop or
    Scan (``lowered_when_run``; their sizes are known only then), else never (a Scan-8's
    run on the fallback with it)."""
    held = held_counts(op)
    if not held:
        return ""
    listed = ", ".join(f"{n} {name}" for name, n in sorted(held.items()))
    if lowered_when_run(op):
        return (
            f"{HOLDS} {listed}: the numpy backend lowers them when it runs the "
            f"{'branch taken' if op.op_type == 'If' else 'body'}, by the sizes that arrive "
            "(its run record lists what they became; `dmlgraph lower` lists them by the "
            "types the enclosing graph gives)"
        )
    return (
        f"{HOLDS} {listed}: they run on the fallback with it (dmlgraph lowers the Slice, "
        "Concat and Pad nodes of the main graph and of the subgraphs of If, Loop and Scan "
        "from opset 9)"
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


def graphs_within(graph: onnx.GraphProto) -> list[onnx.GraphProto]:
    """A graph and the subgraphs its nodes hold, at any depth."""
    held = [a.g for n in graph.node for a in n.attribute if a.type == onnx.AttributeProto.GRAPH]
    held += [g for n in graph.node for a in n.attribute for g in a.graphs]
    return [graph, *(inner for g in held for inner in graphs_within(g))]


def defined_names(graph: onnx.GraphProto) -> list[str]:
    """The names a graph defines: its inputs, initializers and its nodes' outputs."""
    return [*(v.name for v in graph.input), *(t.name for t in graph.initializer),
            *(out for n in graph.node for out in n.output)]
