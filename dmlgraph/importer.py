"""``load``: an ONNX model (path, bytes or ModelProto) -> the dmlgraph IR.

Steps, each failing with a DmlgraphError that names the file and, where there is one, the node:
read and parse; load external data (only from inside the model's folder); refuse unknown
domains (in subgraphs too) and opsets newer than this onnx knows; run the ONNX checker;
fix dynamic input dimensions from ``input_shapes``; infer shapes (onnx, data propagation);
build the IR with canonical Slice/Concat/Pad; normalize and check those; fold constants.

Decisions:
- The checker runs without ``full_check``: its strict shape inference rejects real exporter
  output; dmlgraph runs inference itself, non-strict, and checks the nodes it relies on.
- ``value_info`` in the file is dropped before inference, so folding a Shape never trusts a
  stale annotation: shapes come from onnx's inference and the declared graph inputs/outputs.
- Domains: "" (alias "ai.onnx") and "ai.onnx.ml"; anything else is UnsupportedError.
- Initializers also listed as graph inputs (the IR < 4 convention) are constants, not inputs.
- Model-local functions are inlined with ``onnx.inliner`` before anything else looks at nodes.
- Control flow (If, Loop, Scan) is imported whole: its subgraphs are attribute values
  (``ir.Subgraph``) that the NumPy backend lowers when it runs their node (or that run on
  the fallback with it), and the enclosing graph's tensors they read are the node's implicit
  inputs (``subgraphs``).
- A Constant node with a tensor ``value`` becomes a constant tensor as it is read (recorded as
  folded); other Constant forms, and Constants that are graph outputs, are left to folding.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import AttributeProto, TensorProto, helper

from dmlgraph import (
    canonical,
    collector,
    folding,
    schema_types,
    shape_kernels,
    sniff,
    subgraphs,
)
from dmlgraph.dml.scalars import is_integer
from dmlgraph.dtypes import ELEM_TYPE_TO_DTYPE, PLAIN_DTYPES, raw_bytes
from dmlgraph.errors import (
    DmlgraphError,
    ModelLoadError,
    ModelValidationError,
    NodeRuleError,
    UnsupportedError,
)
from dmlgraph.ir import (
    INT64_MAX,
    Graph,
    OnnxOp,
    Provenance,
    RemovedNode,
    TensorInfo,
    dims_text,
    implicit_inputs,
    split_inputs,
)
from dmlgraph.value_info import raw_array, shape_dim, tensor_array, tensor_info
from dmlgraph.value_info import value_info as value_info_of

ModelSource = str | os.PathLike[str] | bytes | onnx.ModelProto

#: Node domains dmlgraph accepts; "ai.onnx" is the default domain's long name.
SUPPORTED_DOMAINS: frozenset[str] = frozenset({"", "ai.onnx.ml"})
_DOMAIN_ALIASES: Mapping[str, str] = {"ai.onnx": ""}


def load(
    model: ModelSource,
    input_shapes: Mapping[str, Sequence[int | str]] | None = None,
    *,
    fold: bool = True,
) -> Graph:
    """Import an ONNX model into a validated Graph.

    ``input_shapes`` fixes graph-input dimensions (``{"x": [1, 3, 224, 224]}``); a given size
    must agree with any fixed size in the model, and a name frees one (the model's lowering
    with that dimension dynamic). With ``fold`` (the default) shapes are inferred
    and every subgraph computable from constants and static shapes is folded; Slice/Pad
    parameters that stay run-time values get a note saying why.
    """
    if not isinstance(fold, bool):  # "no" is true
        raise ModelLoadError(f"fold is True or False, not {fold!r}")
    with collector.paused():
        return _load(model, input_shapes, fold)


def _load(
    model: ModelSource, input_shapes: Mapping[str, Sequence[int | str]] | None, fold: bool
) -> Graph:
    source, proto, base_dir, data = _read(model)
    try:
        # read once, for every pass over the nodes (external data, domains, checks, build)
        nodes = [NodeFields(node) for node in proto.graph.node]
        if _load_external_data(proto, base_dir, source, nodes):
            data = None
        if proto.functions:
            proto, data = _inline_functions(proto, source), None
            nodes = [NodeFields(node) for node in proto.graph.node]
        if _normalize_domains(proto, nodes, source):
            data = None
        named_like = _check_nodes(proto, nodes, source)
        as_given = [_copied(value) for value in proto.graph.input] if input_shapes else None
        if input_shapes:  # first: they may give an input the shape the checker requires
            _apply_input_shapes(proto, input_shapes, source)
            data = None
        with _for_checker(proto) as changed:
            _run_checker(proto if changed or data is None else data, source)
        data = None  # the file's bytes: the proto holds all of it now, and they were 1x more
        declared, undefined = _declared_types(proto.graph.value_info)
        if undefined:
            _refuse_undefined(nodes, undefined, source)
        del proto.graph.value_info[:]
        inferred, hidden = _infer_shapes(proto, nodes, source)
        refined = _refined_outputs(proto, nodes, inferred)
        if refined:  # declared sizes inference lacks, for the nodes reading those outputs
            inferred, hidden = _infer_shapes(proto, nodes, source, refined)
        graph = _build_graph(
            proto, nodes, inferred, declared, source, fold=fold, hidden=hidden, refined=refined,
            named_like=named_like,
        )
        _check_scans(graph, inferred, None if as_given is None else lambda: _inferred_as_given(
            proto, nodes, source, refined, as_given))
        if fold:
            folding.fold(graph, inferred=True, read=lambda: _read_by_nodes(nodes))
        else:
            folding.prepare(graph)
    except DmlgraphError:
        raise
    except Exception as exc:  # onnx/protobuf/numpy errors must not escape as tracebacks
        raise ModelLoadError(
            f"{source}: cannot import the model: {type(exc).__name__}: {exc}"
        ) from None
    graph.validate()
    graph.track_edits()  # its infos are inference's: a later edit marks those it changes
    return graph


# ----------------------------------------------------------------------------- reading


def _read(model: ModelSource) -> tuple[str, onnx.ModelProto, Path | None, bytes | None]:
    """(source name for messages, a private ModelProto copy, folder for external data, the
    bytes it was parsed from: the checker reads them instead of a re-serialization)."""
    if isinstance(model, onnx.ModelProto):
        proto = onnx.ModelProto()
        proto.CopyFrom(model)
        source = f"<ModelProto {model.graph.name or 'unnamed'}>"
        _require_model(proto, source)
        return source, proto, None, None
    if isinstance(model, (bytes, bytearray, memoryview)):
        data = bytes(model)
        return "<bytes>", _parse(data, "<bytes>"), None, data
    if isinstance(model, (str, os.PathLike)):
        path = Path(model)
        source = str(path)
        try:
            data = path.read_bytes()
        except ValueError as exc:  # a NUL in the path
            raise ModelLoadError(f"{source!r}: cannot read the model file: {exc}") from None
        except OSError as exc:
            raise ModelLoadError(
                f"{source}: cannot read the model file: {exc.strerror or exc}"
            ) from None
        # the folder the path names, as onnx and onnxruntime take it (a link's, not its
        # target's): its external data is what they read
        return source, _parse(data, source), path.absolute().parent, data
    raise ModelLoadError(
        f"load() takes a path, bytes or an onnx.ModelProto, not {type(model).__name__}"
    )


def _parse(data: bytes, source: str) -> onnx.ModelProto:
    proto = onnx.ModelProto()
    try:
        proto.ParseFromString(data)
    except Exception as exc:  # google.protobuf DecodeError, RuntimeWarning-as-error, ...
        _refuse_other_kinds(data, source)
        raise ModelLoadError(
            f"{source}: not a valid ONNX protobuf ({len(data)} bytes; truncated or corrupt?): {exc}"
        ) from None
    try:
        _require_model(proto, source)
    except ModelLoadError:
        _refuse_other_kinds(data, source)
        raise
    return proto


def _refuse_other_kinds(data: bytes, source: str) -> None:
    """A file that is plainly something else (JSON, text, a zip) is named as what it is,
    not as a corrupt model."""
    kind = sniff.described(data)
    if kind and not kind.startswith("an ONNX"):
        raise ModelLoadError(f"{source}: is {kind}, not an ONNX model")


def _require_model(proto: onnx.ModelProto, source: str) -> None:
    """Protobuf parses many byte strings; an ONNX model has an IR version, a graph and opsets."""
    missing = [
        what
        for what, ok in (
            ("ir_version", proto.ir_version > 0),
            ("graph", proto.HasField("graph")),
            ("opset_import", len(proto.opset_import) > 0),
        )
        if not ok
    ]
    if missing:
        raise ModelLoadError(
            f"{source}: not an ONNX model (missing {', '.join(missing)}; truncated or corrupt?)"
        )


# ----------------------------------------------------------------------------- external data


def _model_tensors(
    proto: onnx.ModelProto, nodes: Sequence[NodeFields] | None = None
) -> Iterator[TensorProto]:
    """Every tensor of the model: the graph's (``_all_tensors``) and its local functions'
    node attributes, which inlining copies into the graph. ``nodes``: the graph's nodes as
    read already, whose attributes are not read again."""
    if nodes is None:
        yield from _all_tensors(proto.graph)
    else:
        yield from proto.graph.initializer
        yield from _node_tensors(nodes)
    for function in proto.functions:
        yield from _node_tensors(function.node)


def _all_tensors(graph: onnx.GraphProto) -> Iterator[TensorProto]:
    """Initializers and tensor attributes, subgraphs' too. An attribute is read by its type,
    as ``attribute_value`` reads it (a field of another kind is never used)."""
    yield from graph.initializer
    yield from _node_tensors(graph.node)


def _node_tensors(nodes: Iterable[onnx.NodeProto | NodeFields]) -> Iterator[TensorProto]:
    for node in nodes:
        for attr in node.attribute[:]:  # a slice: iterating the field costs more
            kind = attr.type
            if kind == AttributeProto.TENSOR:
                yield attr.t
            elif kind == AttributeProto.TENSORS:
                yield from attr.tensors
            elif kind == AttributeProto.GRAPH:
                yield from _all_tensors(attr.g)
            elif kind == AttributeProto.GRAPHS:
                for sub in attr.graphs:
                    yield from _all_tensors(sub)


def external_data_files(path: Path) -> list[Path]:
    """The files a model at ``path`` keeps tensors in (its external data), as ``load`` would
    read them; none where the model cannot be read (``load`` says why)."""
    try:
        proto = onnx.load(path, load_external_data=False)
    except Exception:
        return []
    found = set()
    for tensor in _model_tensors(proto):
        if tensor.data_location == TensorProto.EXTERNAL:
            location = _external_entries(tensor).get("location", "")
            if location and (path.parent / location).is_file():
                found.add(path.parent / location)
    return sorted(found)


def _tensor_label(proto: onnx.ModelProto, tensor: TensorProto) -> str:
    """How messages name a tensor: by its name, or, unnamed (a Constant's value), by the
    node attribute holding it (its messages said "tensor ''")."""
    if tensor.name:
        return f"tensor {tensor.name!r}"
    graphs = [proto.graph, *(onnx.GraphProto(node=f.node) for f in proto.functions)]
    for node in (n for graph in graphs for n in subgraphs.nested_nodes(graph)):
        for attr in node.attribute:
            if attr.type == AttributeProto.TENSOR and attr.t == tensor:
                return f"the tensor of node {node.name!r} ({node.op_type}) attribute {attr.name!r}"
            if attr.type == AttributeProto.TENSORS and tensor in attr.tensors:
                return f"a tensor of node {node.name!r} ({node.op_type}) attribute {attr.name!r}"
    return "an unnamed tensor"


def _external_entries(tensor: TensorProto) -> dict[str, str]:
    """A tensor's external-data fields (location, offset, length) by key."""
    return {e.key: e.value for e in tensor.external_data}


def _load_external_data(
    proto: onnx.ModelProto,
    base_dir: Path | None,
    source: str,
    nodes: Sequence[NodeFields] | None = None,
) -> bool:
    """Read external tensor data, refusing any location outside the model's folder; True when
    some tensor had external data. ``nodes`` as in ``_model_tensors``."""
    changed = False
    for tensor in _model_tensors(proto, nodes):
        if tensor.data_location != TensorProto.EXTERNAL:
            continue
        changed = True
        entries = _external_entries(tensor)
        where = f"{source}: {_tensor_label(proto, tensor)}"
        if len(entries) != len(tensor.external_data):  # which file or bytes it means is a guess
            keys = [e.key for e in tensor.external_data]
            raise ModelLoadError(  # onnxruntime: "duplicate 'location' entries"
                f"{where}: external data gives {sorted({k for k in keys if keys.count(k) > 1})} "
                "more than once"
            )
        location = entries.get("location", "")
        if base_dir is None:
            raise ModelLoadError(
                f"{where}: external data {location!r} needs the model's folder; load the model "
                "from its path"
            )
        if not location:
            raise ModelLoadError(f"{where}: external data has no location")
        if os.path.isabs(location) or Path(location).drive or Path(location).root:
            raise ModelLoadError(
                f"{where}: external data location {location!r} is absolute; it must be relative to "
                "the model's folder"
            )
        root = base_dir.resolve()
        target = (root / location).resolve()
        if target != root and root not in target.parents:
            raise ModelLoadError(
                f"{where}: external data location {location!r} escapes the model's folder "
                f"{str(root)!r}"
            )
        if not target.is_file():  # '.' is the model's folder itself
            what = "is a folder, not a file," if target.is_dir() else "does not exist"
            raise ModelLoadError(
                f"{where}: external data file {location!r} {what} in {str(root)!r}"
            )
        if not all(_DECIMAL.fullmatch(entries.get(k, "0")) for k in ("offset", "length")):
            raise ModelLoadError(  # int() took "+16", " 16" and "1_6"; onnxruntime does not
                f"{where}: external data offset/length are not decimal integers (byte counts, "
                f"digits only): {entries}"
            )
        offset = int(entries.get("offset", 0))
        # no length: the tensor's own bytes from the offset, as onnxruntime reads it (a file
        # may hold several tensors; reading to its end failed "cannot reshape array")
        length = int(entries["length"]) if "length" in entries else raw_bytes(tensor)
        size = target.stat().st_size
        if (
            offset < 0
            or offset > size
            or (length is not None and (length < 0 or offset + length > size))
        ):
            raise ModelLoadError(
                f"{where}: external data offset {offset} length {length} lies outside {location!r} "
                f"({size} bytes)"
            )
        with open(target, "rb") as handle:
            handle.seek(offset)
            tensor.raw_data = handle.read(-1 if length is None else length)
        tensor.data_location = TensorProto.DEFAULT
        del tensor.external_data[:]
    return changed


# ----------------------------------------------------------------------------- checks


_DECIMAL = re.compile(r"[0-9]+")


def _inline_functions(proto: onnx.ModelProto, source: str) -> onnx.ModelProto:
    """The model with its local functions inlined (``onnx.inliner``), after filling in what
    the inliner leaves out, as onnxruntime reads a function: a caller's omitted attributes
    take the function's defaults (``_resolve_function_attributes``; the inliner dropped
    them, and a Pad whose mode defaulted to "edge" padded with zeros), the opsets a function
    alone imports join the model's, and a function's nodes bind at the model's version of a
    domain both import (``_merge_function_opsets``). A function of a standard domain is left
    out: a node of that domain names the standard op, as onnxruntime and onnx.reference read
    it (the inliner replaced a Relu by a function ""::Relu)."""
    standard = {*SUPPORTED_DOMAINS, *_DOMAIN_ALIASES}
    kept = [f for f in proto.functions if f.domain not in standard]
    if len(kept) != len(proto.functions):
        del proto.functions[:]
        proto.functions.extend(kept)
        if not kept:
            return proto
    _check_call_domains(proto, source)
    _resolve_function_attributes(proto)
    _merge_function_opsets(proto, source)
    made = _inlined_nodes(proto)
    if made > INLINED_NODE_LIMIT:
        raise ModelLoadError(
            f"{source}: inlining the model's local functions would make {made} nodes, more "
            f"than {INLINED_NODE_LIMIT} (each call copies its function's body, so functions "
            "calling others more than once grow exponentially)"
        )
    try:
        import onnx.inliner

        inlined = onnx.inliner.inline_local_functions(proto)
    except Exception as exc:
        raise ModelLoadError(
            f"{source}: cannot inline the model's local functions: {exc}"
        ) from None
    local = {(f.domain, f.name) for f in proto.functions}
    for node in inlined.graph.node:
        if (node.domain, node.op_type) in local:
            raise UnsupportedError(
                f"{source}: node {node.name!r} calls local function "
                f"{node.domain}::{node.op_type}, which onnx's inliner could not inline"
            )
    return inlined


#: The most nodes a model's local functions may inline to. Inlining copies a function's
#: body at each call, so functions that each call the next twice grow exponentially: 30 of
#: them, a 2.4 KB file, asked for 2^29 nodes, still growing past 3 GB after a minute (20
#: made 524,288 nodes: 45 s, 2.4 GB); onnx's inliner bounds the call depth (100), not the
#: nodes made. The largest real models hold a few hundred thousand.
INLINED_NODE_LIMIT = 1_000_000


def _inlined_nodes(proto: onnx.ModelProto) -> int:
    """How many nodes inlining ``proto``'s local functions makes, subgraphs' nodes included,
    counted without making them (each function once). A recursive call, or one deeper than
    ``_COUNTED_DEPTH``, counts as one node: the inliner refuses those."""
    functions = {(f.domain, f.name, f.overload): f for f in proto.functions}
    counted: dict[_FunctionKey, int] = {}

    def count(nodes: Iterable[onnx.NodeProto], depth: int) -> int:
        total = 0
        for node in nodes:
            key = (node.domain, node.op_type, node.overload)
            function = functions.get(key)
            if function is None or depth > _COUNTED_DEPTH:
                total += 1 + sum(count(graph.node, depth + 1) for attr in node.attribute
                                 for graph in subgraphs.attribute_graphs(attr))
                continue
            if key not in counted:
                counted[key] = 1  # while its body is counted: a call of itself counts one
                counted[key] = count(function.node, depth + 1)
            total += counted[key]
        return total

    return count(proto.graph.node, 0)


#: How deep ``_inlined_nodes`` follows calls and subgraphs: past the inliner's call depth
#: (100), within Python's recursion limit.
_COUNTED_DEPTH = 200


def _check_call_domains(proto: onnx.ModelProto, source: str) -> None:
    """A call of a local function needs its domain imported (by the model, or by the
    function making the call), as onnx's checker and onnxruntime require; inlined, the call
    was gone before the checker could see it."""
    local = {f.domain for f in proto.functions}
    bodies = [(proto.graph.node, proto.opset_import, "the model"),
              *((f.node, f.opset_import, f"local function {f.domain}::{f.name}")
                for f in proto.functions)]
    for nodes, opsets, what in bodies:
        imported = {o.domain for o in opsets}
        for node in nodes:
            if node.domain in local and node.domain not in imported:
                raise ModelValidationError(
                    f"{source}: node {node.name!r} ({node.op_type}) calls a local function of "
                    f"domain {node.domain!r}, for which {what} imports no opset"
                )


_FunctionKey = tuple[str, str, str]  # domain, name, overload


def _resolve_function_attributes(proto: onnx.ModelProto) -> None:
    """Give every call of a local function the function's default for each attribute it
    omits, and make an attribute reference to an attribute its caller omits absent before
    the inliner sees it (the private copy ``_read`` made is changed).

    As ONNX and onnxruntime read a call: an omitted attribute takes the function's default;
    one that refers (``ref_attr_name``) to an attribute the caller leaves out, of no
    default, is absent, so an inner function's default holds. The inliner drops defaults,
    and drops such a reference only as it inlines, after the defaults were filled: a call
    ``Inner(m=@mm)`` inside ``Outer``, Outer called without ``mm``, lost Inner's default.
    So a function called with attributes missing is inlined from a copy of its own
    (``Name__absent_a_b``), whose references to them are removed and whose calls are
    resolved again. Functions are told apart by overload too."""
    functions: dict[_FunctionKey, onnx.FunctionProto] = {
        (f.domain, f.name, f.overload): f for f in proto.functions
    }
    copies: dict[tuple[_FunctionKey, frozenset[str]], str] = {}
    taken = {f.name for f in proto.functions}
    pending: list[onnx.FunctionProto] = list(proto.functions)

    def resolve(nodes: Iterable[onnx.NodeProto]) -> None:
        for node in nodes:
            for attr in node.attribute:
                for graph in subgraphs.attribute_graphs(attr):
                    resolve(graph.node)
            key = (node.domain, node.op_type, node.overload)
            function = functions.get(key)
            if function is None:
                continue
            present = {a.name for a in node.attribute}
            node.attribute.extend(a for a in function.attribute_proto if a.name not in present)
            absent = frozenset(set(function.attribute) - present)
            if not absent:
                continue
            name = copies.get((key, absent))
            if name is None:
                name = f"{function.name}__absent_{'_'.join(sorted(absent))}"
                while name in taken:
                    name += "_"
                taken.add(name)
                copies[key, absent] = name
                copy = onnx.FunctionProto()
                copy.CopyFrom(function)
                copy.name = name
                del copy.attribute[:]
                copy.attribute.extend(a for a in function.attribute if a not in absent)
                _drop_references(copy.node, absent)
                functions[(copy.domain, name, copy.overload)] = copy
                proto.functions.append(copy)
                pending.append(proto.functions[-1])
            node.op_type = name

    resolve(proto.graph.node)
    while pending:
        resolve(pending.pop().node)


def _drop_references(nodes: Iterable[onnx.NodeProto], absent: frozenset[str]) -> None:
    """Remove every attribute referring to one of ``absent`` (subgraphs' nodes too)."""
    for node in nodes:
        for attr in node.attribute:
            for graph in subgraphs.attribute_graphs(attr):
                _drop_references(graph.node, absent)
        dropped = [i for i, a in enumerate(node.attribute) if a.ref_attr_name in absent]
        for i in reversed(dropped):
            del node.attribute[i]


def _merge_function_opsets(proto: onnx.ModelProto, source: str) -> None:
    """The opsets local functions import and the model does not, added to the model's at the
    newest version this onnx knows (the newest the functions import, where that is newer:
    refused later, as a model's), and a function's nodes bound at the model's version of
    their domain, as onnxruntime binds them (onnx.reference binds them at the function's own
    version: a ReduceSum of axes given as an attribute, the function at opset 11 and the
    model at 13 or at none, it ran as ReduceSum-11). onnxruntime imports every domain it
    knows that a model does not at its newest opset (``Model::Model`` in
    ``core/graph/model.cc``: onnxruntime 1.32 added ai.onnx.ml 5 and ai.onnx 28, this onnx's
    newest) and inlines every function there. The first function's version was taken
    instead: two functions importing ai.onnx.ml at 2 and 4, the model at none, were refused
    (LabelEncoder-4's tensor attributes break LabelEncoder-2), and a function's Softmax at
    opset 11, the model importing no ai.onnx, ran as Softmax-11 (the flattened axes) where
    onnxruntime runs Softmax-13, silently. ONNX asks a function's imports to give the same
    schemas as the model's; where they do not, the model's version is what onnxruntime runs
    (a Softmax of a function at opset 11, the model at 13, is Softmax-13, as onnx.reference's
    one Softmax computes). Converting to the model's opset, as before, gave Softmax-11's
    values where both give Softmax-13's, and refused what both run: a Pad-18 of pads given,
    the model at 11 ("No Adapter To Version $17 for Pad"), a function of opset 13 calling
    another ("Type unknown"), a domain other than ai.onnx its nodes use at two versions."""
    model = {_DOMAIN_ALIASES.get(o.domain, o.domain): int(o.version) for o in proto.opset_import}
    known = onnx.defs.C.schema_version_map()  # domain -> (oldest, newest) opset
    added: dict[str, int] = {}
    spelled: dict[str, str] = {}  # as the first function importing it spells it
    for function in proto.functions:
        for entry in function.opset_import:
            domain = _DOMAIN_ALIASES.get(entry.domain, entry.domain)
            if domain not in model:
                spelled.setdefault(domain, entry.domain)
                added[domain] = max(added.get(domain, known.get(domain, (0, 0))[1]),
                                    int(entry.version))
    for domain, version in added.items():
        model[domain] = version
        proto.opset_import.append(onnx.helper.make_opsetid(spelled[domain], version))
    for function in proto.functions:
        for entry in function.opset_import:
            domain = _DOMAIN_ALIASES.get(entry.domain, entry.domain)
            if entry.version != model[domain]:
                _check_rebound(function, domain, int(entry.version), model, domain in added,
                               source)
                entry.version = model[domain]


def _check_rebound(function: onnx.FunctionProto, domain: str, version: int,
                   model: Mapping[str, int], added: bool, source: str) -> None:
    """Refuse a function's node of ``domain`` (at any depth of its subgraphs) whose op has
    another schema at the model's version and breaks it, naming both versions: the checker
    alone named the op of the inlined model (onnxruntime refuses such a model too). A node
    holding subgraphs is left to that checker: checked alone, its subgraphs' reads of the
    function's names are undefined ("Nodes in a graph must be topologically sorted"), and an
    If or Loop of any version reading one was refused where onnxruntime runs it. ``added``:
    the model imports no opset of ``domain``; ``model`` holds the one it was given."""
    context = onnx.checker.C.CheckerContext()
    context.ir_version = onnx.IR_VERSION
    context.opset_imports = dict(model)
    for node in _function_nodes(function):
        if _DOMAIN_ALIASES.get(node.domain, node.domain) != domain or any(
            subgraphs.attribute_graphs(attr) for attr in node.attribute
        ):
            continue
        was, now = _since(node, version), _since(node, model[domain])
        if was == now:
            continue
        try:
            onnx.checker.check_node(node, context)
        except Exception as exc:
            broken = (f"breaks {node.op_type}-{now}" if now is not None
                      else f"is no op at opset {model[domain]}")
            models = (f"the model at none (onnxruntime imports such a domain at its newest "
                      f"opset, {model[domain]})" if added else f"the model at {model[domain]}")
            raise ModelValidationError(
                f"{source}: local function {function.domain}::{function.name} imports domain "
                f"{domain or 'ai.onnx'!r} at opset {version}, {models}: its "
                f"nodes bind at the model's version, as onnxruntime binds them (ONNX asks "
                f"both imports to give the same schemas; onnx.reference binds them at the "
                f"function's), and its node "
                f"{subgraphs.holder_label(node.name, node.output)} ({node.op_type}-{was} at "
                f"opset {version}) {broken}: "
                f"{str(exc).splitlines()[0]}"
            ) from None


def _function_nodes(function: onnx.FunctionProto) -> Iterator[onnx.NodeProto]:
    """Every node of a function and of the subgraphs its nodes hold, at any depth."""
    for node in function.node:
        yield node
        for attr in node.attribute:
            for graph in subgraphs.attribute_graphs(attr):
                yield from subgraphs.nested_nodes(graph)


def _since(node: onnx.NodeProto, version: int) -> int | None:
    """The version of ``node``'s op at opset ``version`` of its domain; None: none yet."""
    try:
        return int(onnx.defs.get_schema(node.op_type, version, node.domain).since_version)
    except onnx.defs.SchemaError:
        return None


def _normalize_domains(
    proto: onnx.ModelProto, nodes: Sequence[NodeFields], source: str
) -> bool:
    """Rename domain aliases ("ai.onnx" -> "") in opset imports and nodes (``nodes``: the
    graph's, as read, renamed alike), as onnxruntime does; the onnx checker knows only the
    canonical names. True when anything changed."""
    domains = {node.domain for node in nodes}  # (a generator over the nodes: a call a node)
    if not any(entry.domain in _DOMAIN_ALIASES for entry in proto.opset_import) and not any(
        domain in _DOMAIN_ALIASES for domain in domains
    ) and len({entry.domain for entry in proto.opset_import}) == len(proto.opset_import):
        return False
    opsets: dict[str, int] = {}
    for entry in proto.opset_import:
        domain = _DOMAIN_ALIASES.get(entry.domain, entry.domain)
        if opsets.get(domain, entry.version) != entry.version:
            raise ModelValidationError(
                f"{source}: domain {domain or 'ai.onnx'!r} is imported at opsets {opsets[domain]} "
                f"and {entry.version}"
            )
        opsets[domain] = int(entry.version)
    del proto.opset_import[:]
    proto.opset_import.extend(onnx.helper.make_opsetid(d, v) for d, v in opsets.items())
    for node in nodes:
        if node.domain in _DOMAIN_ALIASES:
            node.domain = node.proto.domain = _DOMAIN_ALIASES[node.domain]
    return True


def _normalized_opsets(proto: onnx.ModelProto) -> dict[str, int]:
    return {o.domain: int(o.version) for o in proto.opset_import}


class NodeFields:
    """A NodeProto's fields, read once. protobuf builds a new str (or container) at every
    read, and the importer reads each node's fields a dozen times. The same names as
    NodeProto's, so whatever reads a NodeProto reads this. Repeated fields are read by slice:
    ``tuple(field[:])`` costs half of ``tuple(field)``, which iterates through Python."""

    __slots__ = ("proto", "name", "op_type", "domain", "input", "output", "attribute", "version")

    def __init__(self, proto: onnx.NodeProto) -> None:
        self.proto = proto
        self.name: str = proto.name
        self.op_type: str = proto.op_type
        self.domain: str = proto.domain
        self.input: tuple[str, ...] = tuple(proto.input[:])
        self.output: tuple[str, ...] = tuple(proto.output[:])
        self.attribute: tuple[AttributeProto, ...] = tuple(proto.attribute[:])
        self.version = 0  # the since_version ``_check_nodes`` resolves

    def SerializeToString(self) -> bytes:  # noqa: N802  (protobuf's name)
        return self.proto.SerializeToString()


def _read_by_nodes(nodes: Sequence[NodeFields]) -> set[str]:
    """The tensors the model's nodes read."""
    return {name for node in nodes for name in node.input if name}


def _node_where(source: str, index: int, node: NodeFields) -> str:
    """How import messages name a node: as ``Node.label`` does, with its index in the file."""
    if node.name:
        return f"{source}: node {node.name!r} ({node.op_type}, #{index})"
    made = next((out for out in node.output if out), "")
    named = f"unnamed node making {made!r}" if made else "unnamed node"
    return f"{source}: {named} ({node.op_type}, #{index})"


def _check_scans(
    graph: Graph,
    inferred: onnx.GraphProto,
    as_given: Callable[[], Mapping[str, TensorInfo]] | None = None,
) -> None:
    """Refuse a Scan whose body declares an input of another type or size than inference
    gives the tensor fed to it (``subgraphs.scan_fed_problem``), or makes a state variable
    of another size than it is fed, or declares an output of another rank than its node makes
    (``subgraphs.scan_state_problem``, by the body's outputs as the ``inferred`` graph types
    them), as onnxruntime does at load or at every run; its run would compute on from sizes
    the body does not declare, or stop at its first step. ``as_given``: the
    types inferred from the graph inputs as the model declares them, where ``input_shapes``
    fixed sizes: onnxruntime loads the model as declared, so a size only ``input_shapes``
    gives is no reason to refuse it (its run takes what is fed, as onnxruntime's does)."""
    given: Mapping[str, TensorInfo] | None = None
    scans: dict[tuple[str, ...], onnx.NodeProto] | None = None
    for node in graph.nodes:
        if node.op_type != "Scan" or not isinstance(node.op, OnnxOp):
            continue
        if scans is None:  # each Scan as inferred, by its outputs
            scans = {tuple(n.output): n for n in inferred.node if n.op_type == "Scan"}
        explicit, _ = split_inputs(node)
        fed = [graph.tensors.get(name) for name in explicit]
        scan = scans.get(node.outputs)
        outputs = [] if scan is None else _body_outputs(scan)
        node_made = _node_made(scan, inferred, graph.opset_imports)
        problem = subgraphs.scan_fed_problem(
            node.op, len(explicit), len(node.outputs), fed
        ) or subgraphs.scan_state_problem(node.op, fed, outputs, node_made)
        if problem is not None and as_given is not None:
            given = as_given() if given is None else given
            fed = [given.get(name, info if info is not None and info.is_constant else None)
                   for name, info in zip(explicit, fed)]
            problem = subgraphs.scan_fed_problem(
                node.op, len(explicit), len(node.outputs), fed
            ) or subgraphs.scan_state_problem(node.op, fed, outputs, node_made)
        if problem is not None:
            raise ModelValidationError(f"{graph.describe(node)}: {problem}")


def _node_made(
    scan: onnx.NodeProto | None, inferred: onnx.GraphProto, opsets: Mapping[str, int]
) -> Callable[[int], onnx.TypeProto.Tensor | None]:
    """The type the node making a Scan's body output (by index) infers, from the types
    inference gave its inputs, regardless of what the body declares the output (onnx's
    inference keeps the declaration; onnxruntime merges the two, ``onnxruntime_sizes``);
    None where no body node makes it, it holds a subgraph, or onnx cannot infer it. Asked
    where a body declares a state of another size than it is fed, or a scan output's shape
    (the types read once a Scan)."""
    types: dict[str, onnx.TypeProto] = {}

    def made(index: int) -> onnx.TypeProto.Tensor | None:
        body = next((a.g for a in (scan.attribute if scan else ()) if a.name == "body"), None)
        if body is None or index >= len(body.output):
            return None
        name = body.output[index].name
        node = next((n for n in body.node if name in n.output), None)
        if node is None or any(a.type in _GRAPH_ATTRIBUTES for a in node.attribute):
            return None
        if not types:
            types.update({v.name: v.type for graph in (inferred, body)
                          for v in (*graph.input, *graph.value_info, *graph.output)})
            types.update({t.name: helper.make_tensor_type_proto(t.data_type, t.dims)
                          for graph in (inferred, body) for t in graph.initializer})
            # a body input passed through as an output is read as the input it is
            types.update({v.name: v.type for v in body.input})
        try:
            schema = onnx.defs.get_schema(
                node.op_type, opsets.get(node.domain or "", 1), node.domain or "")
            result = onnx.shape_inference.infer_node_outputs(
                schema, node, {n: types[n] for n in node.input if n in types})
        except Exception:  # (no schema, or onnx refuses the node: the run says)
            return None
        typed = result.get(name)
        return typed.tensor_type if typed is not None and typed.HasField("tensor_type") else None

    return made


#: Attribute types holding subgraphs, which ``infer_node_outputs`` does not enter.
_GRAPH_ATTRIBUTES = frozenset({AttributeProto.GRAPH, AttributeProto.GRAPHS})


def _body_outputs(node: onnx.NodeProto) -> list[onnx.ValueInfoProto]:
    """The outputs of a node's ``body`` attribute (none where it has none)."""
    return next((list(a.g.output) for a in node.attribute if a.name == "body"), [])


def _copied(value: onnx.ValueInfoProto) -> onnx.ValueInfoProto:
    copy = onnx.ValueInfoProto()
    copy.CopyFrom(value)
    return copy


def _inferred_as_given(
    proto: onnx.ModelProto,
    nodes: Sequence[NodeFields],
    source: str,
    refined: Mapping[str, onnx.ValueInfoProto],
    inputs: Sequence[onnx.ValueInfoProto],
) -> dict[str, TensorInfo]:
    """The tensor types inference gives with the graph inputs as the model declares them
    (``inputs``, before ``input_shapes``), by name: what onnxruntime's load knows. The
    graph inputs as inferred, not as the skeleton holds them after inference: their long
    dimensions named as hidden lengths there, a Scan fed float[b, 5000] read its slice as of
    an unknown size, and a message named it."""
    skeleton = _skeleton(proto, nodes, refined)
    declared = {value.name: value for value in inputs}
    for value in skeleton.graph.input:
        if value.name in declared:
            value.CopyFrom(declared[value.name])
    inferred, _ = folding.infer_model(skeleton, source, nodes, _weight_names(proto))
    types = {}
    for value in (*inferred.input, *inferred.value_info, *inferred.output):
        if value.type.HasField("tensor_type"):
            types[value.name] = tensor_info(value, source)
    return types


def _check_nodes(
    proto: onnx.ModelProto, nodes: Sequence[NodeFields], source: str
) -> list[NodeFields]:
    """Refuse what dmlgraph cannot import before the checker phrases it less precisely.
    Returns the nodes ``_invented_like`` reads (a name with a colon, or a subgraph), found on
    the way: it reads every name and attribute kind already."""
    opsets = _normalized_opsets(proto)
    known = onnx.defs.C.schema_version_map()  # domain -> (oldest, newest) opset
    for domain in SUPPORTED_DOMAINS & set(opsets):
        newest = known.get(domain, (0, 0))[1]
        if opsets[domain] > newest:
            raise UnsupportedError(
                f"{source}: {domain or 'ai.onnx'} opset {opsets[domain]} is newer than the "
                f"newest this onnx knows ({newest}); dmlgraph will not guess how its ops behave"
            )
    named: dict[str, int] = {}  # node name -> index, for names onnxruntime requires unique
    named_like: list[NodeFields] = []
    for index, node in enumerate(nodes):
        op_type, domain = node.op_type, node.domain
        try:  # protobuf gives bytes for bad UTF-8, and joining bytes fails (one C call a node)
            joined = "".join((op_type, domain, node.name, *node.input, *node.output))
        except TypeError:
            raise ModelLoadError(
                f"{source}: node #{index} has a name, op type or tensor name that is not "
                "valid UTF-8 (corrupt file?)"
            ) from None
        if ":" in joined:
            named_like.append(node)
        if node.name and (op_type != "Constant" or domain):
            first = named.setdefault(node.name, index)
            if first != index:  # onnxruntime: "two nodes with same node name" (a Constant
                raise ModelValidationError(  # becomes an initializer before it looks)
                    f"{_node_where(source, index, node)}: node #{first} has the same name; "
                    "node names must be unique, as onnxruntime requires"
                )
        # the messages' node description is made only for a message
        if domain not in SUPPORTED_DOMAINS:
            raise UnsupportedError(
                f"{_node_where(source, index, node)}: domain {domain!r} is not supported "
                "(dmlgraph imports "
                f"{', '.join(repr(d or 'ai.onnx') for d in sorted(SUPPORTED_DOMAINS))})"
            )
        if domain not in opsets:
            raise ModelValidationError(
                f"{_node_where(source, index, node)}: the model imports no opset for domain "
                f"{domain or 'ai.onnx'!r}"
            )
        version = canonical.known_since_version(op_type, domain, opsets[domain])
        forms = canonical.FORMS.get(op_type) if domain == "" else None
        if version is None or (forms is not None and version not in forms):
            where = _node_where(source, index, node)
            version = canonical.since_version(op_type, domain, opsets[domain], where)
            canonical.form_for(op_type, version, where)  # raises: dmlgraph lacks the form
        node.version = version
        if op_type == "Constant" and domain == "" and len(node.attribute) != 1:
            raise ModelValidationError(
                f"{_node_where(source, index, node)}: {_constant_problem(node)}"
            )
        for attr in node.attribute:
            if attr.type in subgraphs.SUBGRAPH_KINDS:
                _check_subgraph_nodes(attr, opsets, _node_where(source, index, node))
                if not named_like or named_like[-1] is not node:
                    named_like.append(node)
        if op_type in subgraphs.LOWERED_WHEN_RUN:
            problem = subgraphs.signature_problem(node, version)
            if problem is not None:
                raise ModelValidationError(f"{_node_where(source, index, node)}: {problem}")
    if proto.graph.sparse_initializer:
        names = [s.values.name for s in proto.graph.sparse_initializer]
        raise UnsupportedError(f"{source}: sparse initializer(s) {names}: dmlgraph imports "
                               "dense tensors only (give them as initializers)")
    return named_like


def _constant_problem(node: NodeFields | onnx.NodeProto) -> str:
    """What is wrong with a Constant node whose value attributes are not exactly one."""
    return (
        f"has {', '.join(a.name for a in node.attribute) or 'no value attribute'}; a "
        "Constant holds exactly one of value, sparse_value, value_float(s), "
        "value_int(s), value_string(s), as ONNX requires (onnxruntime takes the first "
        "given, onnx.reference prefers 'value': they compute different models)"
    )


def _check_subgraph_nodes(attr: AttributeProto, opsets: Mapping[str, int], where: str) -> None:
    """Refuse a subgraph node of a domain dmlgraph does not import, as the main graph's are
    (onnxruntime would run it only where it has the op; its run would fail, not the load),
    a Constant without exactly one value, and a control-flow node whose subgraphs do not fit
    it (``subgraphs.signature_problem``), as the main graph's (onnxruntime refuses the
    model, even where the branch holding it is never taken)."""
    for graph in subgraphs.attribute_graphs(attr):
        for node in subgraphs.nested_nodes(graph):
            if node.op_type == "Constant" and node.domain in ("", "ai.onnx") and (
                len(node.attribute) != 1
            ):
                raise ModelValidationError(
                    f"{where}: attribute {attr.name!r} holds a subgraph whose node "
                    f"{node.name!r} (Constant) {_constant_problem(node)}"
                )
            domain = _DOMAIN_ALIASES.get(node.domain, node.domain)
            if domain not in SUPPORTED_DOMAINS or domain not in opsets:
                raise UnsupportedError(
                    f"{where}: attribute {attr.name!r} holds a subgraph whose node "
                    f"{node.name!r} ({node.op_type}) is of domain {node.domain!r}, which "
                    "dmlgraph does not import"
                    + ("" if domain not in SUPPORTED_DOMAINS else " (the model imports no "
                       "opset for it)")
                )
            if domain == "" and node.op_type in subgraphs.LOWERED_WHEN_RUN:
                # as the main graph's (a nested misfit ran whole on the fallback, by its
                # reading: an int64[2] iteration number by onnxruntime's)
                version = canonical.known_since_version(node.op_type, "", opsets[""])
                problem = version and subgraphs.signature_problem(node, version)
                if problem:
                    raise ModelValidationError(
                        f"{where}: attribute {attr.name!r} holds a subgraph whose node "
                        f"{node.name!r} ({node.op_type}): {problem}"
                    )


def _unshaped(graph: onnx.GraphProto) -> list[onnx.ValueInfoProto]:
    """Graph inputs and outputs typed as tensors without a ``shape`` field."""
    return [
        vi for vi in (*graph.input, *graph.output)
        if vi.type.HasField("tensor_type") and not vi.type.tensor_type.HasField("shape")
    ]


@contextmanager
def _for_checker(proto: onnx.ModelProto) -> Iterator[bool]:
    """The model as the checker should see what onnxruntime runs and onnx's checker refuses,
    for the block, then as it was; yields whether it changed anything:
    - a graph input or output without a shape field gets an empty one. ONNX lets a tensor
      type omit its shape (unknown rank), but the checker requires the field on graph inputs
      and outputs; without ``full_check`` it reads nothing from it. The import keeps the
      shape unknown;
    - a graph output without a type gets a tensor type of element type 0 (UNDEFINED): the
      checker requires the field ("Field 'type' of 'value_info' is required but missing",
      naming no tensor), onnxruntime runs the model with the type it infers, and the import
      takes inference's (where onnx infers none, as for Scaler, the run gives it, as for any
      tensor inference leaves untyped);
    - before IR version 4, an initializer not listed as a graph input is listed (IR 3 said
      every initializer is one; onnxruntime runs it either way).
    In place and undone, not on a copy: a copy held the weights once more."""
    unlisted = _unlisted_initializers(proto)
    untyped = [vi for vi in proto.graph.output if not vi.HasField("type")]
    for value_info in untyped:  # typed first: ``_unshaped`` then gives it its empty shape
        value_info.type.tensor_type.elem_type = TensorProto.UNDEFINED
    unshaped = _unshaped(proto.graph)
    listed = len(proto.graph.input)
    try:
        for value_info in unshaped:
            value_info.type.tensor_type.shape.SetInParent()
        proto.graph.input.extend(
            helper.make_tensor_value_info(t.name, t.data_type, t.dims) for t in unlisted
        )
        yield bool(unlisted or unshaped)
    finally:
        for value_info in unshaped:
            value_info.type.tensor_type.ClearField("shape")
        for value_info in untyped:
            value_info.ClearField("type")
        del proto.graph.input[listed:]


def _unlisted_initializers(proto: onnx.ModelProto) -> list[TensorProto]:
    if proto.ir_version >= 4:
        return []
    listed = {value_info.name for value_info in proto.graph.input}
    return [t for t in proto.graph.initializer if t.name not in listed]


def _run_checker(model: onnx.ModelProto | bytes, source: str) -> None:
    try:
        onnx.checker.check_model(model)
    except Exception as exc:
        raise ModelValidationError(f"{source}: the ONNX checker refuses the model: {exc}") from None


def _apply_input_shapes(
    proto: onnx.ModelProto, input_shapes: Mapping[str, Sequence[int | str]], source: str
) -> None:
    initializers = {t.name for t in proto.graph.initializer}
    inputs = {i.name: i for i in proto.graph.input if i.name not in initializers}
    if not isinstance(input_shapes, Mapping):
        raise ModelValidationError(
            f"{source}: input_shapes maps input names to shapes ({{'x': [1, 3, 224, 224]}}), "
            f"not a {type(input_shapes).__name__}"
        )
    for name, dims in input_shapes.items():
        if isinstance(dims, (str, bytes)) or not isinstance(dims, Iterable):
            raise ModelValidationError(
                f"{source}: the input shape for {name!r} is {dims!r}: a shape is a sequence of "
                "sizes and names"
            )
        if name not in inputs:
            raise ModelValidationError(
                f"{source}: an input shape is given for {name!r}, which is not a graph input "
                f"(inputs: {sorted(inputs)})"
            )
        if not inputs[name].type.HasField("tensor_type"):  # writing one would replace its type
            kind = inputs[name].type.WhichOneof("value") or "no type"
            raise ModelValidationError(
                f"{source}: an input shape is given for {name!r}, which has {kind}; dmlgraph "
                "handles tensors only"
            )
        tensor_type = inputs[name].type.tensor_type
        dims = list(dims)
        declared = tensor_type.shape.dim if tensor_type.HasField("shape") else None
        if declared is not None and len(declared) != len(dims):
            raise ModelValidationError(
                f"{source}: the input shape for {name!r}, {dims}, has rank {len(dims)}; the "
                f"model declares rank {len(declared)}"
            )
        for axis, size in enumerate(dims):
            if not isinstance(size, str) and (
                not is_integer(size) or not 0 <= size <= INT64_MAX
            ):
                raise ModelValidationError(
                    f"{source}: the input shape for {name!r} gives dimension {axis} as {size!r}: "
                    "a size is an int from 0 to 2^63 - 1, or a name"
                )
            if (
                declared is not None
                and isinstance(shape_dim(declared[axis]), int)  # a negative one is unknown
                and not isinstance(size, str)
                and declared[axis].dim_value != size
            ):
                raise ModelValidationError(
                    f"{source}: the input shape for {name!r} gives dimension {axis} as {size}, but "
                    f"the model fixes that dimension to {declared[axis].dim_value}"
                )
        tensor_type.ClearField("shape")
        for size in dims:  # a name frees a size the model fixes: its lowering, made dynamic
            dim = tensor_type.shape.dim.add()
            if isinstance(size, str):
                dim.dim_param = size
            else:
                dim.dim_value = int(size)


def _infer_shapes(
    proto: onnx.ModelProto,
    nodes: Sequence[NodeFields],
    source: str,
    refined: Mapping[str, onnx.ValueInfoProto] | None = None,
) -> tuple[onnx.GraphProto, frozenset[str]]:
    """The inferred graph (its ``value_info`` and ``output``) of the model's skeleton: the same
    nodes, with initializers above ``folding.INFERENCE_CONSTANT_LIMIT`` elements declared as
    typed inputs, as folding's own inference does, so the weights are neither serialized nor
    parsed again (inference reads only small, shape-carrying constants by value); and the
    long vectors hidden from its data propagation (``folding.infer_model``)."""
    skeleton = _skeleton(proto, nodes, refined or {})
    return folding.infer_model(skeleton, source, nodes, _weight_names(proto))


def _weight_names(proto: onnx.ModelProto) -> Callable[[str], bool]:
    """Whether a name is an initializer's; the names read only when asked (rarely)."""
    return lambda name: any(tensor.name == name for tensor in proto.graph.initializer)


def _declared_types(
    value_infos: Iterable[onnx.ValueInfoProto],
) -> tuple[dict[str, int], list[str]]:
    """The element types the model's ``value_info`` declares for tensors inside the graph, and
    the names it declares tensors of element type 0 (UNDEFINED)."""
    declared: dict[str, int] = {}
    undefined: list[str] = []
    for vi in value_infos:
        if vi.type.HasField("tensor_type"):
            if vi.type.tensor_type.elem_type:
                declared[vi.name] = vi.type.tensor_type.elem_type
            else:
                undefined.append(vi.name)
    return declared, undefined


def _refuse_undefined(nodes: Sequence[NodeFields], undefined: Sequence[str], source: str) -> None:
    """Refuse a ``value_info`` entry of element type 0 (UNDEFINED) for what a node makes, as
    onnxruntime refuses the model at load ("Invalid tensor data type 0"; ONNX requires a
    tensor type's element type); dmlgraph dropped it and ran the model. One naming a graph
    input, an initializer or a Constant's output (onnxruntime makes Constants initializers
    first), or nothing, it runs, and so does dmlgraph."""
    made = {
        out for node in nodes
        if not (node.op_type == "Constant" and node.domain in ("", "ai.onnx"))
        for out in node.output
    }
    for name in undefined:
        if name in made:
            raise ModelValidationError(
                f"{source}: value_info entry {name!r} is a tensor of element type 0 "
                "(UNDEFINED); give its type, or leave the type out (onnxruntime refuses the "
                "model: 'Invalid tensor data type 0')"
            )


def _refined_outputs(
    proto: onnx.ModelProto, nodes: Sequence[NodeFields], inferred: onnx.GraphProto
) -> dict[str, onnx.ValueInfoProto]:
    """Graph outputs that nodes read, whose declared shape adds a size or a name to the one
    inferred without it (``_with_declared_shape``), as those value infos: inference given
    them carries the declaration on to the readers, as it did before outputs went bare."""
    declared = {
        o.name: o.type.tensor_type.shape for o in proto.graph.output
        if o.type.HasField("tensor_type") and o.type.tensor_type.HasField("shape")
    }
    if declared:  # the set of every node's inputs only where some output declares a shape
        read = {name for node in nodes for name in node.input}
        declared = {name: shape for name, shape in declared.items() if name in read}
    if not declared:
        return {}
    refined = {}
    for value_info in inferred.output:
        if value_info.name in declared:
            made = tensor_info(value_info, "graph output")
            merged = _with_declared_shape(made, declared[value_info.name], [])
            if merged.shape != made.shape:
                refined[value_info.name] = value_info_of(merged)
    return refined


def _skeleton(
    proto: onnx.ModelProto,
    nodes: Sequence[NodeFields],
    refined: Mapping[str, onnx.ValueInfoProto],
) -> onnx.ModelProto:
    skeleton = onnx.ModelProto(ir_version=proto.ir_version)
    skeleton.opset_import.extend(proto.opset_import)
    graph, source = skeleton.graph, proto.graph
    limit = folding.INFERENCE_CONSTANT_LIMIT
    big = [math.prod(tensor.dims) > limit for tensor in source.initializer]
    if _copy_whole(source, big, len(nodes)):
        graph.CopyFrom(source)  # one C call, where copying node by node costs more
        for field, _ in graph.ListFields():
            if field.name not in _SKELETON_FIELDS:
                graph.ClearField(field.name)
        for index in reversed([index for index, heavy in enumerate(big) if heavy]):
            del graph.initializer[index]
    else:
        graph.name = source.name
        graph.node.extend(source.node)
        graph.input.extend(source.input)
        graph.initializer.extend(
            tensor for tensor, heavy in zip(source.initializer, big) if not heavy
        )
    inputs = {value_info.name: value_info for value_info in source.input}
    initializers = {tensor.name: tensor for tensor in source.initializer}
    for value_info in source.output:  # typed, not shaped: onnx keeps a declared shape over
        bare = graph.output.add()  # the one its node makes, and infers onward from it
        if value_info.name in inputs:  # no node makes it: a bare one made onnx forget the
            bare.CopyFrom(inputs[value_info.name])  # input's shape for all its readers
            continue
        tensor = initializers.get(value_info.name)
        if tensor is not None:  # nor an initializer, whose dims are its shape
            bare.CopyFrom(
                helper.make_tensor_value_info(tensor.name, tensor.data_type, tensor.dims)
            )
            continue
        bare.CopyFrom(refined.get(value_info.name, value_info))
        if bare.type.HasField("tensor_type") and value_info.name not in refined:
            bare.type.tensor_type.ClearField("shape")
    for tensor, heavy in zip(source.initializer, big):
        if heavy and tensor.name not in inputs:
            graph.input.append(
                helper.make_tensor_value_info(tensor.name, tensor.data_type, tensor.dims)
            )
    folding.guard_slice_steps(graph, nodes)
    return skeleton


#: The GraphProto fields a skeleton keeps of the model's graph (its outputs are made anew).
_SKELETON_FIELDS = frozenset({"name", "node", "input", "initializer"})
#: Copying the whole graph at once copies the initializers a skeleton leaves out as well:
#: worth it while those hold at most this many bytes a node (copying one node at a time
#: costs about what 8 KiB of weights cost to copy).
_COPIED_BYTES_PER_NODE = 2048


def _copy_whole(source: onnx.GraphProto, big: Sequence[bool], node_count: int) -> bool:
    """Whether ``_skeleton`` copies the whole graph and drops the ``big`` initializers (and
    the fields it does not keep), rather than copying its nodes one by one: a small model's
    weights cost less to copy than its nodes (encodec's: 0.14 ms against 0.48). Numeric
    tensors only, counted at 8 bytes an element: a string tensor's size is unknown."""
    budget = node_count * _COPIED_BYTES_PER_NODE
    for tensor, heavy in zip(source.initializer, big):
        if heavy:
            if tensor.data_type == TensorProto.STRING:
                return False
            budget -= 8 * math.prod(tensor.dims)
            if budget < 0:
                return False
    return True


# ----------------------------------------------------------------------------- building the IR


def attribute_value(attr: AttributeProto, where: str) -> Any:
    """An attribute as an immutable Python value (see ``dmlgraph.ir.Attributes``)."""
    kind = attr.type
    if kind == AttributeProto.FLOAT:
        value = float(attr.f)
        return value if value == value else wire_floats(attr, 2)[0]
    if kind == AttributeProto.INT:
        return int(attr.i)
    if kind == AttributeProto.STRING:
        return _text(attr.s)
    if kind == AttributeProto.TENSOR:
        return tensor_array(attr.t, where)
    if kind == AttributeProto.FLOATS:
        values = tuple(attr.floats[:])  # Python floats already; a slice is one C call
        total = sum(values)  # NaN where one is (or inf meets -inf: read again, no harm)
        return values if total == total else tuple(wire_floats(attr, 7))
    if kind == AttributeProto.INTS:
        return tuple(attr.ints[:])  # Python ints already
    if kind == AttributeProto.STRINGS:
        return tuple(_text(v) for v in attr.strings)
    if kind == AttributeProto.TENSORS:
        return tuple(tensor_array(t, where) for t in attr.tensors)
    if kind == AttributeProto.GRAPH:
        return subgraphs.subgraph_of(attr.g)
    if kind == AttributeProto.GRAPHS:
        return tuple(subgraphs.subgraph_of(g) for g in attr.graphs)
    raise UnsupportedError(
        f"{where}: attribute {attr.name!r} has kind {AttributeProto.AttributeType.Name(kind)}, "
        "which dmlgraph does not import"
    )


def wire_floats(attr: AttributeProto, field: int) -> np.ndarray:
    """A FLOAT (``field`` 2, ``f``) or FLOATS (7, ``floats``) attribute's values as float32s of
    their own bits, read from its wire form. protobuf hands them out as doubles, converted in
    C, which sets a signalling NaN's quiet bit; onnxruntime reads the floats themselves (a
    Pad-2 whose value is 0x7f800001 fills with 0x7f800001). Read only where a NaN is."""
    raw, at, found = attr.SerializeToString(), 0, []
    while at < len(raw):
        key, at = _varint(raw, at)
        number, wire = key >> 3, key & 7
        if wire == 0:
            at = _varint(raw, at)[1]
            continue
        size, start = (8, at) if wire == 1 else (4, at) if wire == 5 else _varint(raw, at)
        if number == field and wire in (2, 5):  # 2: a packed run of fixed32s
            found.append(raw[start : start + size])
        at = start + size
    return np.frombuffer(b"".join(found), "<f4").astype(np.float32)


def _varint(raw: bytes, at: int) -> tuple[int, int]:
    """The protobuf varint at ``raw[at:]`` and the index after it."""
    value, shift = 0, 0
    while True:
        byte = raw[at]
        value |= (byte & 0x7F) << shift
        at, shift = at + 1, shift + 7
        if byte < 0x80:
            return value, at


def _text(raw: bytes) -> str | bytes:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw


def _build_graph(
    proto: onnx.ModelProto,
    nodes: Sequence[NodeFields],
    inferred: onnx.GraphProto,
    declared: Mapping[str, int],
    source: str,
    *,
    fold: bool,
    hidden: frozenset[str] = frozenset(),
    refined: Collection[str] = (),
    named_like: Sequence[NodeFields] | None = None,
) -> Graph:
    """The IR of a model, with the value infos of its inferred graph. With ``fold``, nodes a
    shape kernel computes from constants become constants on the way (``_fold_at_import``),
    and the nodes reading them have their outputs re-inferred, so a chain folds in one sweep;
    ``folding.fold`` finishes the rest (a Shape or Size of a tensor it will evaluate waits for
    it: evaluation may prove the inferred shape wrong). The readers of the vectors ``hidden``
    from data propagation are inferred again the same way, folding or not. The outputs
    ``refined`` (inference was given their declared sizes: ``_refined_outputs``) start the
    graph's ``declared_sizes``. ``named_like``: the nodes ``_invented_like`` need read
    (``_check_nodes``'s); all of them where not given."""
    opsets = _normalized_opsets(proto)
    graph = Graph(
        proto.graph.name or "main",
        opset_imports=opsets,
        ir_version=int(proto.ir_version),
        source=source,
    )
    graph.declared_sizes.update(refined)  # outputs inference was given declared sizes of
    graph.reserve_names(_invented_like(nodes if named_like is None else named_like))
    graph.model_info = {
        "producer_name": proto.producer_name,
        "producer_version": proto.producer_version,
        "domain": proto.domain,
        "model_version": proto.model_version,
        "doc_string": proto.doc_string,
        "metadata_props": {p.key: p.value for p in proto.metadata_props},
    }
    # the constants the model gives (``Graph.given_constants``): its initializers, and its
    # Constants' outputs as the nodes are read (a dict: an item stored is no call)
    given: dict[str, None] = {t.name: None for t in proto.graph.initializer}
    graph.given_constants = given
    for value_info in proto.graph.input:
        if value_info.name not in given:
            info = tensor_info(value_info, f"{source}: graph input")
            if info.dtype is None:  # the checker lets it through; onnxruntime does not
                raise ModelValidationError(
                    f"{source}: graph input {info.name!r} is a tensor of element type 0 "
                    "(UNDEFINED); give its type (onnxruntime refuses the model: 'Invalid "
                    "tensor data type 0')"
                )
            graph.add_input(_countable(info, source))
    if proto.ir_version >= 4:  # before it, every initializer was listed as an input
        graph.initializer_inputs = tuple(
            vi.name for vi in proto.graph.input if vi.name in given
        )
    for tensor in proto.graph.initializer:
        data = tensor_array(tensor, f"{source}: initializer")
        graph.set_tensor(TensorInfo(tensor.name, data=data))
    known = {vi.name: vi for vi in list(inferred.value_info) + list(inferred.output)}
    outputs = {o.name for o in proto.graph.output}
    changed = set(hidden)  # tensors folded or re-inferred on the way
    # sizes onnx infers otherwise than the spec, made the spec's (``folding.ceil_pool_infos``),
    # and the tensors inferred from them
    corrected: set[str] = set()
    # without folding, what a Shape or Size of a static tensor gives, for its readers'
    # inference: data propagation tells it, save where the tensor's length was hidden from it
    shapes: dict[str, np.ndarray] = {}
    # tensors folding will compute (their nodes read only constants and such tensors): their
    # inferred shapes are not trusted here, since evaluation may prove them wrong
    pending: set[str] = set()
    # shape vectors known in part; the declared sizes, filled below, are asked as they come
    partial = folding.PartialShapes(graph.declared_sizes)
    partial_values = partial.values
    memo: folding.InferenceMemo = {}
    tensors = graph.tensors
    declared_outputs = {
        o.name: o.type.tensor_type.elem_type for o in proto.graph.output
        if o.type.HasField("tensor_type")
    }
    untyped = [name for name, elem in declared_outputs.items() if not elem]
    # onnxruntime: "Invalid tensor data type 0" for what a node makes (no type field at all
    # is fine); an input or initializer listed so it runs, typed by itself, and so does a
    # Constant's output (onnxruntime makes Constants initializers first)
    listed = set(given).union(
        (vi.name for vi in proto.graph.input),
        (out for node in nodes if node.op_type == "Constant" and not node.domain
         for out in node.output),
    ) if untyped else set()
    for name in untyped:
        if name not in listed:
            raise ModelValidationError(
                f"{source}: graph output {name!r} is a tensor of element type 0 (UNDEFINED); "
                "give its type, or leave the type out"
            )
    declared_shapes = {
        o.name: o.type.tensor_type.shape for o in proto.graph.output
        if o.type.HasField("tensor_type") and o.type.tensor_type.HasField("shape")
    }
    for index, node in enumerate(nodes):
        if node.op_type == "Constant" and node.domain in ("", "ai.onnx"):
            for out in node.output:  # onnxruntime makes it an initializer first
                given[out] = None
            if _constant_value(graph, node, outputs, source, index):
                continue
        where = _node_where(source, index, node)
        notes: list[str] = []
        if node.domain or node.op_type not in canonical.FORMS:  # those: ``check_types``
            _check_types(node, tensors, opsets, declared_outputs, where)
        for out in node.output:
            if out and out in known:
                info = tensor_info(known[out], where)
                if out in declared_shapes:
                    info = _declared(graph, info, declared_shapes[out], notes)
                graph.set_tensor(info)
                if declared and out in declared:
                    _check_declared(out, tensors[out].dtype, declared[out], where)
        version = node.version
        # (no comprehension, a call, for a node without attributes: most of a shape chain's)
        attrs = (
            {a.name: attribute_value(a, where) for a in node.attribute} if node.attribute else {}
        )
        if corrected and any(name in corrected for name in node.input):
            # inferred from a size corrected below: inferred again from it
            corrected.update(folding.forget_shapes(graph, node.output))
            changed.update(node.output)
        if node.op_type in folding.CEIL_POOL_OPS:
            for info in folding.ceil_pool_infos(
                graph, node.op_type, node.domain, attrs, node.input, node.output
            ):
                graph.set_tensor(info)
                changed.add(info.name)
                corrected.add(info.name)
        if fold:
            if (
                node.op_type in canonical.FORMS
                and not node.domain
                and _unplain(node, tensors)
                and all(not name or graph.is_constant(name) for name in node.input)
            ):
                # its kernel moves any dtype, and a folded node never reaches canonical's
                # type check: a bfloat16 Slice-11 (bfloat16 came with Slice-13) is refused here
                _check_types(node, tensors, opsets, declared_outputs, where)
            known_before = list(map(tensors.get, node.output))  # (a comprehension is a call)
            reads_pending_shape = (
                node.op_type in folding.SHAPE_ONLY_OPS
                and bool(node.input)
                and node.input[0] in pending
            )
            # a node reading a tensor neither a kernel (``folding.kernel_inputs``) nor
            # ``folding.partial_fold`` can know (not a constant, not a vector known in part,
            # not the data of a Shape or Size, whose static shape may do) cannot fold: asked
            # here, inline, as of every node, it skips ``_fold_at_import``'s checks
            reads_unknown = False
            for port, name in enumerate(node.input):
                if (
                    name
                    and name not in partial_values
                    and (name not in tensors or tensors[name].data is None)
                    and (port or node.op_type not in folding.SHAPE_ONLY_OPS)
                ):
                    reads_unknown = True
                    break
            if not reads_pending_shape and not reads_unknown and _fold_at_import(
                graph, node, version, attrs, outputs, partial
            ):
                for out, before in zip(node.output, known_before):  # (a generator: 3 calls)
                    if folding.news_for_inference(before, tensors[out]):
                        changed.add(out)
                continue
        if (changed and not changed.isdisjoint(node.input)) or (  # better known
            (node.op_type, version) in folding.INFERRED_AS_NEWER and not node.domain
        ):  # or an old version whole-model inference leaves untyped (Concat-1)
            extra = {name: shapes[name] for name in node.input if name in shapes}
            changed.update(
                folding.infer_proto(graph, node, opsets[node.domain], extra or None, memo=memo)
            )
        if hidden and not fold and not node.domain:
            if node.op_type in folding.SHAPE_ONLY_OPS:
                read = _shape_value(graph, node, version, attrs)
            elif node.op_type in folding.PROPAGATING_OPS and shapes:
                read = _propagated_value(graph, node, version, attrs, shapes)
            else:
                read = {}
            shapes.update(read)
            changed.update(read)
        if fold:
            for name in node.input:  # a loop: a generator's every item is a call
                if name and name not in pending and not graph.is_constant(name):
                    break
            else:
                if node.input:
                    pending.update(node.output)
        _add_node(graph, node, index, version, attrs, where, notes)
    graph.outputs = [o.name for o in proto.graph.output]
    for value_info in inferred.output:
        if value_info.name not in graph.tensors:
            info = tensor_info(value_info, f"{source}: graph output")
            if info.name in declared_shapes:
                info = _declared(graph, info, declared_shapes[info.name], [])
            graph.set_tensor(info)
    return graph


def _invented_like(nodes: Sequence[NodeFields]) -> set[str]:
    """The model's names that a name dmlgraph invents could be and that are not yet tensors
    when it does: the main graph's with a colon, as the constants invented while it is read
    have (``canonical.constant_base``), and every name a subgraph uses, which is never one
    (lowering's ``s.piece`` beside a branch's own ``s.piece`` made a graph onnxruntime
    refused as it is not in SSA form)."""
    names = {name for node in nodes for name in (*node.input, *node.output) if ":" in name}
    for node in nodes:
        for attr in node.attribute:
            if attr.type in subgraphs.SUBGRAPH_KINDS:
                for graph in subgraphs.attribute_graphs(attr):
                    names.update(subgraphs.all_names(graph))
    return names


def _declared(
    graph: Graph, info: TensorInfo, declared: onnx.TensorShapeProto, notes: list[str]
) -> TensorInfo:
    """``_with_declared_shape``, recording in ``Graph.declared_sizes`` an output whose shape
    the declaration added to."""
    merged = _with_declared_shape(info, declared, notes)
    if merged.shape != info.shape:
        graph.declared_sizes.add(info.name)
    return merged


def _countable(info: TensorInfo, source: str) -> TensorInfo:
    """A graph input whose static sizes multiply to an int64, as a tensor's element count is
    in ONNX and onnxruntime (``TensorShape::Size``); beyond it, onnx's inference wraps the
    sizes it derives (a Flatten of [2^63 - 1, 4])."""
    shape = info.static_shape
    if shape is not None and math.prod(shape) > INT64_MAX:
        raise ModelValidationError(
            f"{source}: graph input {info.name!r} of shape {dims_text(shape)} holds "
            f"{math.prod(shape)} elements, beyond the int64 a tensor's element count is"
        )
    return info


def _unplain(node: NodeFields, tensors: Mapping[str, TensorInfo]) -> bool:
    """Whether a node reads a tensor of a dtype beyond NumPy's own (``PLAIN_DTYPES``: every
    version of Slice and Concat that a kernel folds takes those)."""
    for name in node.input:
        info = tensors.get(name) if name else None
        if info is not None and info.dtype is not None and info.dtype not in PLAIN_DTYPES:
            return True
    return False


def _with_declared_shape(
    info: TensorInfo, declared: onnx.TensorShapeProto, notes: list[str]
) -> TensorInfo:
    """A graph output's computed info with what its declared shape adds: a size or a name
    where the computed dimension has none (or the whole shape, where none was computed). A
    declaration the node contradicts yields to the node, as in onnxruntime (which warns "Error
    merging shape info for output ... Falling back to lenient merge"), with a note saying so."""
    said = tuple(shape_dim(d) for d in declared.dim)
    made = info.shape
    if made is None:
        return info.replace(shape=said)
    if len(made) != len(said) or any(
        type(m) is int and type(d) is int and m != d for m, d in zip(made, said)
    ):
        notes.append(
            f"the model declares graph output {info.name!r} of shape {dims_text(said)}, "
            f"but the node makes {dims_text(made)}: the node's shape is used, as in "
            "onnxruntime"
        )
        return info
    # a size from either; else the declared name (onnx's own are "unk__7")
    merged = tuple(m if type(m) is int or d is None else d for m, d in zip(made, said))
    return info if merged == made else info.replace(shape=merged)



def _check_types(
    node: NodeFields,
    tensors: Mapping[str, TensorInfo],
    opsets: Mapping[str, int],
    declared: Mapping[str, int],
    where: str,
) -> None:
    """Refuse what onnxruntime refuses at load (``schema_types``): an input of a type the
    node's schema does not take, or a graph output ``declared`` of another type than the node
    makes where the schema says which (Relu's is its input's). onnx's ``check_type`` is no
    guide: it refuses outputs onnxruntime runs (a Cast-9 to bfloat16) and misses inputs whose
    data it fails to read first (an int32 Reshape shape)."""
    get = tensors.get  # a list, not a generator: asked for every node of the model
    dtypes = tuple([None if (info := get(name)) is None else info.dtype for name in node.input])
    version = opsets[node.domain]
    problem = schema_types.node_problem(node.op_type, node.domain, version, dtypes)
    if problem is not None:
        raise ModelValidationError(f"{where}: {problem}")
    fed = None  # (before its outputs' types, which its body gives)
    if node.op_type == "Loop" and not node.domain:
        fed = subgraphs.loop_fed_problem(node, dtypes)
    elif node.op_type == "Scan" and not node.domain:
        fed = subgraphs.scan_dtypes_problem(node, version, dtypes)
    if fed is not None:
        # a rule broken by the types fed: in a branch or body imported as it runs, the run's
        # error, not a reason to run it whole on onnxruntime (which refused it in its words)
        raise NodeRuleError(f"{where}: {fed}")
    if not declared:
        return
    for name in node.output:  # a loop, not keys().isdisjoint: two calls, for every node
        if name in declared:
            break
    else:
        return
    made = schema_types.output_dtypes(node.op_type, node.domain, version, dtypes, len(node.output))
    if node.op_type in subgraphs.LOWERED_WHEN_RUN and not node.domain:
        made = tuple(ELEM_TYPE_TO_DTYPE.get(elem) for elem in
                     subgraphs.declared_output_types(node))
    for name, dtype in zip(node.output, made):
        if name in declared:
            _check_declared(name, dtype, declared[name], where)


def _check_declared(name: str, made: np.dtype | None, declared: int, where: str) -> None:
    """Refuse a tensor the model types otherwise than its node makes it, as onnxruntime
    refuses it."""
    said = ELEM_TYPE_TO_DTYPE.get(declared)
    if said is not None and made is not None and said != made:
        raise ModelValidationError(
            f"{where}: the model declares {name!r} {TensorProto.DataType.Name(declared)}, "
            f"but the node makes {made}"
        )


#: The Constant attributes ``_constant_value`` reads: (name, type).
_CONSTANT_FORMS = frozenset({
    ("value", AttributeProto.TENSOR),
    ("value_float", AttributeProto.FLOAT),
    ("value_floats", AttributeProto.FLOATS),
})


def _constant_value(
    graph: Graph, node: NodeFields, outputs: set[str], source: str, index: int
) -> bool:
    """A Constant node with a tensor ``value``, a ``value_float`` or ``value_floats`` becomes a
    constant tensor at once, as folding would make it (recorded as folded); True when it did.
    Other forms (value_ints...) and Constants that compute a graph output stay nodes, for
    folding to evaluate or keep. (Floats read by ``onnx.reference`` lost a signalling NaN's
    bits, ``wire_floats``.) (``source`` and ``index`` word the node, ``_node_where``, only
    for a tensor not read straight from its raw bytes: a third of a model's nodes are
    Constants.)"""
    if (
        node.op_type != "Constant"
        or node.domain != ""
        or len(node.attribute) != 1
        or len(node.output) != 1
        or node.output[0] in outputs
        or node.output[0] in graph.tensors
    ):
        return False
    attr = node.attribute[0]
    kind = attr.type  # (each read of a protobuf field makes a new object: read once)
    if (attr.name, kind) not in _CONSTANT_FORMS:
        return False
    data: np.ndarray | None
    if kind != AttributeProto.TENSOR:
        data = np.asarray(attribute_value(attr, ""), np.float32)
    else:
        data = raw_array(attr.t)
        if data is None:
            data = tensor_array(attr.t, _node_where(source, index, node))
    graph.set_tensor(TensorInfo(node.output[0], data=data))
    _record_folded(graph, node, node.version)
    return True


def _record_folded(graph: Graph, node: NodeFields, version: int) -> None:
    provenance = Provenance(node.name, node.op_type, node.domain, version)
    graph.removed.append(RemovedNode(provenance, "folded", folding.FOLDED))


def _fold_at_import(
    graph: Graph,
    node: NodeFields,
    version: int,
    attrs: Mapping[str, Any],
    outputs: set[str],
    partial: folding.PartialShapes,
) -> bool:
    """A node that a shape kernel computes from constants (or a static shape, for Shape/Size;
    or the known part of shape vectors known in part, ``folding.partial_fold``, which keeps
    in ``partial`` what is still known in part) becomes constants before it enters the IR,
    as ``folding`` would make it, without ``onnx.reference``'s per-node cost; True when it
    did. What the kernel declines, or ``folding.rejection`` refuses, is imported as a node:
    folding evaluates it with ``onnx.reference`` and notes why it cannot fold."""
    kernel = shape_kernels.kernel_for(node.op_type, node.domain, version)
    if kernel is None or (
        node.op_type in folding.ORT_DIVERGENT_OPS
        and folding.ort_divergence(graph, node.op_type, node.domain, version, attrs, node.input)
    ) or (
        node.op_type in _GROWING_OPS
        and not (node.op_type in _INPUT_BOUNDED and _inputs_small(graph, node.input))
        and (
            not _sized(graph, node, attrs)
            or folding.growth_rejection(graph, node.input, node.output)
        )
    ):
        return False
    # None as well when an input is not known (``folding.input_available``)
    named = folding.kernel_values(
        graph, kernel, version, attrs, node.input, node.output, partial
    )
    if named is None:
        named = folding.partial_fold(
            graph, node.op_type, node.domain, version, attrs, node.input, node.output, partial
        )
    if named is None:
        return False
    for out in node.output:
        if out in outputs:
            return False
    if folding.rejection(graph, node.input, node.output, named):
        return False
    for out, value in named.items():
        graph.set_tensor(TensorInfo(out, data=value))
    _record_folded(graph, node, version)
    return True


#: Ops whose results may be far larger than their inputs: their inferred sizes are asked
#: against the growth limit before a kernel computes them (``folding.growth_rejection``),
#: and a kernel computes them only where inference sized them (``_sized``). A Gather by
#: repeated indices, a broadcasting Add, Sub, Mul or Div and a Cast to a wider type grow as
#: well: computed first, a Gather of [1, 2^20] floats by 4096 indices failed the import with
#: a MemoryError (16 GiB), as did a ConstantOfShape whose shape a Floor and a Cast made
#: (inference did not size it); a Cast of a 128 MiB float16 weight to float took 256 MiB.
_GROWING_OPS = frozenset({
    "ConstantOfShape", "Expand", "Tile", "Range", "Pad", "Resize",
    "Gather", "Add", "Sub", "Mul", "Div", "Cast",
})


#: Growing ops whose results hold at most the product of their inputs' element counts (a
#: Gather, a broadcast, a Cast): ``_inputs_small`` spares the shape chains' small ones
#: (most of an exporter's) the checks above, a quarter of encodec's import calls.
_INPUT_BOUNDED = frozenset({"Gather", "Add", "Sub", "Mul", "Div", "Cast"})
#: The widest element a Cast makes (complex128).
_WIDEST_BYTES = 16


def _inputs_small(graph: Graph, inputs: Sequence[str]) -> bool:
    """Whether every input is a constant and the product of their element counts (each at
    least 1) in the widest elements stays within ``folding.EVALUATION_LIMIT_BYTES``: then no
    result of an ``_INPUT_BOUNDED`` op can reach the growth limit."""
    tensors, total = graph.tensors, _WIDEST_BYTES
    for name in inputs:
        if not name:
            continue
        info = tensors.get(name)
        data = info.data if info is not None else None
        if data is None:
            return False
        total *= data.size or 1
        if total > folding.EVALUATION_LIMIT_BYTES:
            return False
    return True


def _sized(graph: Graph, node: NodeFields, attrs: Mapping[str, Any]) -> bool:
    """Whether inference gave every output a static shape, for the growth limit to judge,
    or, for a ConstantOfShape, its shape input gives a size the limit accepts (encodec's
    LSTM state: [2, 1, 32], which inference leaves [2, unk, 32]). An output not sized is
    inferred again once the node is imported, from its constant inputs, and folding judges
    it then."""
    for out in node.output:
        info = graph.tensors.get(out) if out else None
        if out and (info is None or info.static_shape is None):
            break
    else:
        return True
    if node.op_type != "ConstantOfShape" or len(node.input) != 1 or not node.input[0]:
        return False
    shape = graph.constant(node.input[0]) if node.input[0] in graph.tensors else None
    value = attrs.get("value", shape_kernels.FILL_ZERO)
    if shape is None or shape.dtype != np.int64 or shape.ndim != 1 or (shape < 0).any():
        return False  # the kernel's to decline, or folding's to judge
    dtype = value.dtype if isinstance(value, np.ndarray) else np.float32
    return not folding.size_rejection(graph, node.input, node.output[0], shape.tolist(), dtype)


def _shape_value(
    graph: Graph, node: NodeFields, version: int, attrs: Mapping[str, Any]
) -> dict[str, np.ndarray]:
    """What a Shape or Size node gives, by its shape kernel, where its input's shape is
    static; else nothing. For its readers' inference, as onnx's data propagation gives it,
    whether or not onnxruntime gives that tensor the same shape (``folding.input_available``
    asks that of a fold)."""
    kernel = shape_kernels.kernel_for(node.op_type, node.domain, version)
    info = graph.tensors.get(node.input[0]) if len(node.input) == 1 else None
    if kernel is None or info is None or not info.is_static or info.dtype is None:
        return {}
    results = kernel.fn([folding.shape_only_value(info)], attrs, version)
    if results is None or len(results) != len(node.output):
        return {}
    return {out: value for out, value in zip(node.output, results) if out}


def _propagated_value(
    graph: Graph,
    node: NodeFields,
    version: int,
    attrs: Mapping[str, Any],
    shapes: Mapping[str, np.ndarray],
) -> dict[str, np.ndarray]:
    """What a node onnx's data propagation computes through gives, by its shape kernel, from
    the values ``shapes`` holds (``_shape_value``'s, and these) and small constants; else
    nothing. Without folding, a Shape of an input whose long dimension was hidden fed a
    Gather, Unsqueeze and Concat to a Reshape's shape: the Reshape lost its static size."""
    if not any(name in shapes for name in node.input):
        return {}
    kernel = shape_kernels.kernel_for(node.op_type, node.domain, version)
    values = [shapes.get(name, graph.constant(name)) if name else None for name in node.input]
    if kernel is None or any(
        (value is None or value.size > folding.LONG_VECTOR) for name, value
        in zip(node.input, values) if name
    ):
        return {}
    results = kernel.fn(values, attrs, version)
    if results is None or len(results) != len(node.output):
        return {}
    return {
        out: value for out, value in zip(node.output, results)
        if out and value.size <= folding.LONG_VECTOR
    }


def _add_node(
    graph: Graph,
    node: NodeFields,
    index: int,
    version: int,
    attrs: dict[str, Any],
    where: str,
    notes: Sequence[str] = (),
) -> None:
    domain = node.domain
    provenance = Provenance(node.name, node.op_type, domain, version)
    inputs: tuple[str, ...] = node.input
    if domain == "" and node.op_type in canonical.FORMS:
        op, inputs = canonical.to_canonical(
            graph,
            node.op_type,
            version,
            inputs,
            attrs,
            where,
            canonical.constant_base(node.name, node.op_type, index),
        )
    else:
        op = OnnxOp(node.op_type, version, domain, attrs)
        if op.holds_subgraphs:  # the enclosing graph's tensors its subgraphs read
            inputs = inputs + implicit_inputs(op)
    graph.add_node(op, inputs, node.output, provenance, notes)
