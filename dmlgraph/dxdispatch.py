"""Run a DxDispatch JSON model's DML dispatchables on the NumPy executor.

Follows DxDispatch's own reading of a model (DxDispatch/src/model/JsonParsers.cpp and
dxdispatch/Executor.cpp): the JSON may hold comments and trailing commas (RapidJSON's
kParseCommentsFlag | kParseTrailingCommasFlag); an enum value newer than its parser
(``jsonio.DXDISPATCH_UNKNOWN_VALUES``: DML_PADDING_MODE_WRAP) is refused, as DxDispatch could
not read the model; resources are byte buffers filled from
``initialValues`` (an array, ``{value, valueCount}`` or ``{valueStart, valueDelta,
valueCount}`` accumulated in the element type; integer types take JSON integers only, FLOAT16
rounds through float), ``sizeInBytes`` defaults to the initial data rounded up to 4 bytes and
must hold the data at ``initialValuesOffsetInBytes``; a binding's ``elementOffset`` counts
elements of ``elementSizeInBytes`` (absent or 0: the resource's element size), its byte
offset aligned as DML_BUFFER_BINDING requires (DML_MINIMUM_BUFFER_TENSOR_ALIGNMENT, and the
tensor's GuaranteedBaseOffsetAlignment when larger) with the tensor's TotalTensorSizeInBytes
after it (the least a buffer holding the tensor may have), an output's bytes (TotalTensorSizeInBytes
from its offset) overlapping an input's only for an operator that runs in place (none here),
and ``elementCount`` is ignored for DML operators; an input flagged DML_TENSOR_FLAG_OWNED_BY_DML
is bound by the dispatchable's own ``bindings`` when it is initialized, before the first
command, never at dispatch, and every other tensor at dispatch alone (``_initialize``);
command types are compared ignoring case; ``print`` writes ``Resource 'NAME': v0, v1, ...``
over the initialised elements, as an ostream does (INT8 and UINT8 as characters; the command
line shows control characters among them, and in names, by their codes).
"""

from __future__ import annotations

import codecs
import json
import math
import os
import re
import sys
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

import ml_dtypes
import numpy as np

from dmlgraph.dml.enums import (
    MINIMUM_BUFFER_TENSOR_ALIGNMENT,
    UINT32_MAX,
    FeatureLevel,
    TensorDataType,
    TensorFlags,
)
from dmlgraph.dml.jsonio import (
    dxdispatch_unknown_value,
    json_enum,
    json_float,
    json_number,
    operator_from_json,
)
from dmlgraph.dml.operators import OperatorDesc
from dmlgraph.dml.schema import FieldKind, FieldSpec
from dmlgraph.dml.tensor import BufferTensorDesc
from dmlgraph.errors import DmlgraphError, cut, shown_json
from dmlgraph.sniff import described, is_lowered_json
from dmlgraph.tensorio import UNWEIGHED_BYTES, available_memory


class DxDispatchError(DmlgraphError):
    """The DxDispatch model cannot be read or run; names the resource, dispatchable or command."""


@dataclass
class Resource:
    """A buffer resource: raw bytes plus the element type its initial values were written in."""

    name: str
    data: bytearray
    data_type: TensorDataType
    value_count: int

    def values(self) -> np.ndarray:
        dtype = self.data_type.numpy_dtype
        return np.frombuffer(self.data, dtype=dtype, count=self.value_count)


@dataclass
class DxDispatchModel:
    resources: dict[str, Resource]
    dispatchables: dict[str, OperatorDesc]
    commands: list[dict[str, Any]]
    printed: list[str] = field(default_factory=list)
    source: str = ""  # the file it was read from, for messages
    #: each dispatchable's own "bindings", by its name: those DxDispatch binds when it
    #: initializes the operator, for its inputs flagged DML_TENSOR_FLAG_OWNED_BY_DML
    init_bindings: dict[str, Any] = field(default_factory=dict)


#: The fields of each object of DxDispatch's model schema (dxdispatch/model.schema.json).
#: Others are errors, as they are in descriptors (``jsonio``): DxDispatch ignores them, so a
#: misspelt one would silently not do what it says. Fields for HLSL (``format``,
#: ``counter``, ``shape``, ``threadGroupCount``) are accepted and, like DxDispatch's DML
#: path, ignored; ``$schema`` is JSON Schema's own.
MODEL_FIELDS: dict[str, frozenset[str]] = {
    "model": frozenset({"$schema", "resources", "dispatchables", "commands"}),
    "resource": frozenset(
        {"type", "initialValues", "initialValuesDataType", "initialValuesOffsetInBytes",
         "sizeInBytes"}
    ),
    "constant initializer": frozenset({"valueCount", "value"}),
    "sequence initializer": frozenset({"valueCount", "valueStart", "valueDelta"}),
    "binding": frozenset(
        {"name", "format", "elementCount", "elementSizeInBytes", "elementOffset", "counter",
         "shape"}
    ),
    "dispatch": frozenset({"type", "dispatchable", "bindings", "threadGroupCount"}),
    "print": frozenset({"type", "resource", "verbose"}),
}


def _known_fields(value: dict[str, Any], kind: str, where: str) -> None:
    allowed = MODEL_FIELDS[kind]
    unknown = sorted(set(value) - allowed)
    if unknown:
        raise DxDispatchError(
            f"{where}: unknown {kind} field {shown_json(unknown[0])} (a {kind} has "
            f"{', '.join(sorted(allowed))})"
        )


def _element(name: str, value: object, data_type: TensorDataType) -> float | int:
    """One initial value as DxDispatch parses it for ``data_type``."""
    if data_type.is_float:
        try:
            return json_float(json_number(value), data_type)
        except ValueError as exc:
            raise DxDispatchError(
                f"resource '{name}': initial value {shown_json(value)} {exc}"
            ) from None
    if isinstance(value, bool) or not isinstance(value, int):
        raise DxDispatchError(
            f"resource '{name}': initial value {shown_json(value)} is not an integer, as "
            f"{data_type.full_name} needs"
        )
    limits = ml_dtypes.iinfo(data_type.numpy_dtype)
    if not int(limits.min) <= value <= int(limits.max):  # NumPy said "too large for C long"
        raise DxDispatchError(
            f"resource '{name}': initial value {shown_json(value)} is outside "
            f"{data_type.full_name}'s "
            f"range, {int(limits.min)} to {int(limits.max)}"
        )
    return value


#: Integers a double holds exactly: a float resource's integer values within them convert
#: as they are (``lossless_double``); others take ``_element``'s rule.
_EXACT_IN_DOUBLE = 2**53


def _plain_values(values: list[Any], data_type: TensorDataType) -> np.ndarray | None:
    """An initialValues array of plain numbers (floats and integers a double holds, for a
    float type; integers in range, for an integer type) as ``_element`` reads each of them,
    converted at NumPy's speed: element by element, a 4 MB resource took 6 s. None where
    some value needs ``_element``'s reading ("inf" strings) or its error."""
    if not values:
        return None
    kinds = set(map(type, values))
    dtype = data_type.numpy_dtype
    if data_type.is_float:
        if not kinds <= {float, int}:
            return None
        if int in kinds:
            ints = [v for v in values if type(v) is int]
            if not (-_EXACT_IN_DOUBLE <= min(ints) and max(ints) <= _EXACT_IN_DOUBLE):
                return None
        array = np.array(values, dtype=np.float64)
        if data_type == TensorDataType.FLOAT16:  # through float, as ``json_float``
            array = array.astype(np.float32)
        return array.astype(dtype)
    if kinds != {int}:
        return None
    limits = ml_dtypes.iinfo(dtype)
    if not (int(limits.min) <= min(values) and max(values) <= int(limits.max)):
        return None
    return np.array(values, dtype=dtype)


#: The element types DxDispatch writes initial values in (its GenerateInitialValues* switches;
#: UNKNOWN is its mixed-type array, which dmlgraph does not read).
INITIAL_VALUE_TYPES: tuple[TensorDataType, ...] = tuple(
    t for t in TensorDataType if t.bit_width in (8, 16, 32, 64)
)


def _initial_values(name: str, spec: dict[str, Any], data_type: TensorDataType) -> np.ndarray:
    dtype = data_type.numpy_dtype
    values = spec.get("initialValues")
    if values == []:  # ParseModelBufferDesc: "'initialValues' must be non-empty."
        raise DxDispatchError(
            f"resource '{name}': initialValues is an empty array; DxDispatch requires at least "
            "one initial value (give sizeInBytes for the buffer's size)"
        )
    if isinstance(values, list):
        plain = _plain_values(values, data_type)
        if plain is not None:
            return plain
        return np.array([_element(name, v, data_type) for v in values], dtype=dtype)
    if isinstance(values, dict) and "valueCount" in values:
        kind = "constant initializer" if "value" in values else "sequence initializer"
        _known_fields(values, kind, f"resource '{name}': initialValues")
        count = values["valueCount"]
        if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= UINT32_MAX:
            raise DxDispatchError(  # DxDispatch reads it as a UINT32 (gsl::narrow)
                f"resource '{name}': valueCount {shown_json(count)} must be an integer from 1 to "
                "2^32 - 1"
            )
        # the values, and then the resource's buffer they are copied into: twice their bytes
        _fits_in_memory(name, f"valueCount {count}", 2 * count * dtype.itemsize,
                        "its values and the buffer holding them")
        if "value" in values:
            return np.full(count, _element(name, values["value"], data_type), dtype=dtype)
        if "valueStart" in values and "valueDelta" in values:
            # DxDispatch adds valueDelta step by step in the element type; cumsum does too.
            steps = np.full(count, _element(name, values["valueDelta"], data_type), dtype=dtype)
            steps[0] = np.array(_element(name, values["valueStart"], data_type), dtype=dtype)
            return np.cumsum(steps, dtype=dtype)
    raise DxDispatchError(
        f"resource '{name}': initialValues must be an array, {{value, valueCount}} or "
        "{valueStart, valueDelta, valueCount}"
    )


def _parse_resource(name: str, spec: Any) -> Resource:
    if not isinstance(spec, dict) or spec.get("type", "buffer") != "buffer":
        raise DxDispatchError(f"resource '{name}': only buffer resources are supported")
    _known_fields(spec, "resource", f"resource '{name}'")
    if "initialValuesDataType" not in spec:
        raise DxDispatchError(
            f"resource '{name}': initialValuesDataType is required (dmlgraph does not read "
            "DxDispatch's mixed-type initialValues arrays)"
        )
    written = spec["initialValuesDataType"]
    try:
        data_type = json_enum(TensorDataType, written)
    except ValueError as exc:
        raise DxDispatchError(
            f"resource '{name}': initialValuesDataType = {shown_json(written)}: {exc}"
        ) from None
    if data_type not in INITIAL_VALUE_TYPES:  # GenerateInitialValues*: "Invalid tensor data type."
        raise DxDispatchError(
            f"resource '{name}': initialValuesDataType = {shown_json(written)}: DxDispatch fills a "
            f"buffer of {', '.join(t.name for t in INITIAL_VALUE_TYPES)} values only"
        )
    try:
        # 1e300 is inf in a float, and inf + -inf a NaN, as in DxDispatch: NumPy's warnings of
        # them were printed above the command's output ("RuntimeWarning: invalid value
        # encountered in accumulate", with a line of NumPy's source)
        with np.errstate(over="ignore", invalid="ignore"):
            values = _initial_values(name, spec, data_type)
    except (TypeError, ValueError, OverflowError) as exc:
        raise DxDispatchError(f"resource '{name}': initialValues: {exc}") from None
    except MemoryError:  # past _fits_in_memory: a limit on the process, or memory gone since
        raise _out_of_memory(name, "its initialValues") from None
    offset = _uint(spec.get("initialValuesOffsetInBytes", 0), f"resource '{name}'",
                   "initialValuesOffsetInBytes")
    nbytes = values.nbytes
    size = _uint(spec.get("sizeInBytes", (nbytes + 3) & ~3), f"resource '{name}'",
                 "sizeInBytes")
    if size < offset + nbytes:  # the default is the data's size: an offset needs room
        raise DxDispatchError(
            f"resource '{name}': sizeInBytes {shown_json(size)} cannot hold its {nbytes} bytes of "
            f"initial values at offset {shown_json(offset)}"
        )
    if size > _UINT64_MAX:  # DxDispatch reads it as a UINT64
        raise DxDispatchError(f"resource '{name}': sizeInBytes {shown_json(size)} is beyond UINT64")
    _fits_in_memory(name, f"sizeInBytes {size}", size)
    try:
        data = bytearray(size)  # zero-filled, so the next resource's check sees it taken
    except MemoryError:
        raise _out_of_memory(name, f"sizeInBytes {size}") from None
    # written through a view of the buffer: assigning a memoryview of the values to a slice of
    # the bytearray copies them first (3 copies held at once; measured: 200 MB of values
    # peaked at 570 MB)
    np.frombuffer(data, np.uint8, nbytes, offset)[:] = values.reshape(-1).view(np.uint8)
    return Resource(name, data, data_type, len(values))


_UINT64_MAX = 2**64 - 1


def _fits_in_memory(name: str, what: str, nbytes: int, held: str = "") -> None:
    """Refuse a resource whose bytes the machine has not free: allocating them would fail
    (a MemoryError) or take the machine's memory. Resources read before are in memory
    already, so the free memory read here is what is left for this one. ``held``: what the
    bytes hold, when more than the resource's buffer."""
    if nbytes < UNWEIGHED_BYTES:
        return
    free = available_memory()
    if nbytes > free:
        needs = f"needs {nbytes} bytes ({held})" if held else f"is {nbytes} bytes"
        raise DxDispatchError(
            f"resource '{name}': {what} {needs}, more memory than this machine has "
            f"free ({free:.0f} bytes)"
        )


#: JSON's names of the values ``parse_json`` makes, by Python type: a message says what the
#: file holds ("a JSON null"), not the reader's types ("NoneType", "_JsonObject"). bool first:
#: True is an int too.
_JSON_TYPES: tuple[tuple[type, str], ...] = (
    (bool, "boolean"), (dict, "object"), (list, "array"), (str, "string"),
    (int, "number"), (float, "number"), (type(None), "null"),
)


def json_type(value: object) -> str:
    """The JSON type of a parsed value, as JSON names it."""
    return next((name for kind, name in _JSON_TYPES if isinstance(value, kind)),
                type(value).__name__)


def _out_of_memory(name: str, what: str) -> DxDispatchError:
    """A resource whose allocation failed although ``_fits_in_memory`` let it through: the
    process may use less than the machine has free (a ulimit, a container's cgroup, which
    MemAvailable does not show). Said of the resource, not as "out of memory (Unable to
    allocate 8.00 GiB for an array with shape (2147483648,))", which named none."""
    return DxDispatchError(
        f"resource '{name}': out of memory allocating {what} (this process may use less memory "
        "than the machine has free: a ulimit or a container's limit)"
    )


def _uint(value: object, where: str, field_name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise DxDispatchError(
            f"{where}: {field_name} {shown_json(value)} is not an unsigned integer"
        )
    return value


#: A JSON string, a comment, or a comma with only whitespace and comments before a closing
#: bracket: what RapidJSON's comment and trailing-comma flags let through, and ``json`` not.
_RELAXED = re.compile(
    r'"(?:[^"\\]|\\.)*"|//[^\n]*|/\*.*?\*/|,(?=(?:\s|//[^\n]*|/\*.*?\*/)*[\]}])',
    re.DOTALL,
)


def parse_json(text: str) -> Any:
    """JSON as DxDispatch reads it with RapidJSON: comments and trailing commas allowed,
    anything after the root value ignored (``kParseStopWhenDoneFlag``), no NaN or Infinity
    literal and no number beyond a double (no ``kParseNanAndInfFlag``), and of a field given
    twice, the first (``FindMember``); ``members`` gives a map's entries, the last of a
    name winning, as DxDispatch fills its maps of resources, dispatchables and bindings.

    Read first as plain JSON at ``json``'s own speed, its numbers checked afterwards
    (``_plain_object``): a model of 1M initial values (30 MB) spent 1.3 s of its 2.4 in
    removing comments that were not there and in a Python call per number. Text with a "/"
    (a comment, or one inside a string), text plain JSON refuses (a trailing comma, or an
    error) and a number past a double are read again the exact way, which words any
    error."""
    if "/" not in text:
        try:
            value = _decode(text, _PLAIN_DECODER)
            if type(value) is not _JsonObject:  # a root no object holds
                _check_plain(value)
            return value
        except (ValueError, _UnplainNumber):  # JSONDecodeError is a ValueError
            pass  # read again below, the exact way, which accepts it or words the error
    relaxed = _RELAXED.sub(lambda m: m.group() if m.group().startswith('"') else "", text)
    return _decode(relaxed, _EXACT_DECODER)


def _decode(text: str, decoder: json.JSONDecoder) -> Any:
    try:
        value, _ = decoder.raw_decode(text, len(text) - len(text.lstrip()))
    except RecursionError:  # Python's parser recurses per level, as RapidJSON's does
        raise ValueError(
            f"arrays or objects nest deeper than this parser reaches ({sys.getrecursionlimit()} "
            "levels)"
        ) from None
    return value


class _UnplainNumber(Exception):
    """A number ``_double`` or ``_integer`` refuses, met by the plain reading."""


#: The most digits ``_integer`` reads: more are past any double (and Python's 4300-digit
#: limit), which the plain reading finds as magnitudes of 10^309 and up.
_INTEGER_DIGITS = 309
_INTEGER_LIMIT = 10**_INTEGER_DIGITS


def _check_plain(values: Any) -> None:
    """Raise ``_UnplainNumber`` where a value (of an array, as deep as arrays nest; objects
    check their own) is a float past a double (JSON has no infinity: only an overflow makes
    one) or an integer ``_integer`` refuses."""
    if type(values) is not list:
        values = [values]
    kinds = set(map(type, values))  # C loops: an array of initial values may hold millions
    if float in kinds and (math.inf in values or -math.inf in values):
        raise _UnplainNumber
    if int in kinds:
        ints = [value for value in values if type(value) is int]
        if not (-_INTEGER_LIMIT < min(ints) and max(ints) < _INTEGER_LIMIT):
            raise _UnplainNumber
    if list in kinds:
        for value in values:
            if type(value) is list:
                _check_plain(value)


def _plain_object(pairs: list[tuple[str, Any]]) -> _JsonObject:
    """An object of the plain reading, every value of every pair checked (a field given twice
    keeps one value, but RapidJSON reads them all)."""
    for _, value in pairs:
        if type(value) is not _JsonObject:
            _check_plain(value)
    return _JsonObject(pairs)


class _JsonObject(dict[str, Any]):
    """A JSON object: the first value of each field (RapidJSON's ``FindMember``), and in
    ``last`` every name's last value (a map DxDispatch fills member by member)."""

    def __init__(self, pairs: list[tuple[str, Any]]) -> None:
        super().__init__()
        for key, value in pairs:
            self.setdefault(key, value)
        self.last = dict(pairs)


def members(value: Any) -> Any:
    """A map's entries as DxDispatch keeps them: a name given twice, its last value."""
    return value.last if isinstance(value, _JsonObject) else value


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is no JSON number (DxDispatch's reader refuses it; write the "
                     'string "nan" or "inf" where a FLOAT takes one)')


def _integer(text: str) -> int:
    if len(text.lstrip("-")) > _INTEGER_DIGITS:
        raise ValueError(f"the number {text[:20]}... ({len(text)} digits) is too big for a "
                         "double (DxDispatch's reader refuses it)")
    return int(text)


def _double(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"the number {text} is too big for a double (DxDispatch's reader "
                         "refuses it)")
    return value


_PLAIN_DECODER = json.JSONDecoder(object_pairs_hook=_plain_object, parse_constant=_no_constant)
_EXACT_DECODER = json.JSONDecoder(
    object_pairs_hook=_JsonObject,
    parse_constant=_no_constant,
    parse_float=_double,
    parse_int=_integer,
)


#: Python's reasons for a byte UTF-8 refuses, as a message says them.
_UTF8_REASONS: Mapping[str, str] = {
    "invalid start byte": "starts no UTF-8 character",
    "invalid continuation byte": "starts a UTF-8 character the next byte does not continue",
    "unexpected end of data": "starts a UTF-8 character the file ends in",
}


def load_model(source: str | Path | dict[str, Any]) -> DxDispatchModel:
    """Read a DxDispatch model from a path or an already parsed dict."""
    if isinstance(source, dict):
        return _read_model(source, "")
    if not isinstance(source, (str, os.PathLike)):
        raise DxDispatchError(
            f"load_model takes a path or a parsed dict, not {type(source).__name__}"
        )
    try:
        raw = Path(source).read_bytes()
    except OSError as exc:
        raise DxDispatchError(
            f"{source}: cannot read the model file: {exc.strerror or exc}"
        ) from None
    try:
        doc = parse_json(raw.decode("utf-8"))
    except ValueError as exc:  # UnicodeDecodeError too
        kind = described(raw)
        if kind.startswith(("an ONNX", "a zip")):  # text gets the JSON parser's own words
            raise DxDispatchError(f"{source}: is {kind}, not a DxDispatch JSON model") from None
        if raw.startswith(codecs.BOM_UTF8):  # "Expecting value: line 1 column 1 (char 0)"
            raise DxDispatchError(
                f"{source}: starts with a UTF-8 byte-order mark, which DxDispatch refuses (its "
                "RapidJSON parses the file's bytes as they are); save it without one"
            ) from None
        if isinstance(exc, UnicodeDecodeError):  # was Python's "'utf-8' codec can't decode"
            line = raw.count(b"\n", 0, exc.start) + 1
            raise DxDispatchError(
                f"{source}: is not UTF-8 text: byte 0x{raw[exc.start]:02x} at offset "
                f"{exc.start} (line {line}) {_UTF8_REASONS.get(exc.reason, exc.reason)}"
            ) from None
        raise DxDispatchError(f"{source}: cannot read a JSON model: {exc}") from None
    if is_lowered_json(raw):  # `lower -o`'s: said as what it is, not by a field it lacks
        raise DxDispatchError(f"{source}: is {described(raw)}, not a DxDispatch JSON model")
    try:
        return _read_model(doc, str(source))
    except DxDispatchError as exc:
        raise DxDispatchError(f"{source}: {exc}") from None


def _read_model(doc: Any, source: str) -> DxDispatchModel:
    if not isinstance(doc, dict):
        raise DxDispatchError("a DxDispatch model is a JSON object")
    _known_fields(doc, "model", "the model")
    for key, container in (("resources", dict), ("dispatchables", dict), ("commands", list)):
        if key not in doc:
            raise DxDispatchError(f"the model has no '{key}'")
        if not isinstance(doc[key], container):
            raise DxDispatchError(
                f"the model's '{key}' is a JSON {json_type(doc[key])}, not an "
                f"{'object' if container is dict else 'array'}"
            )
    resources = {
        name: _parse_resource(name, spec) for name, spec in members(doc["resources"]).items()
    }
    dispatchables: dict[str, OperatorDesc] = {}
    init_bindings: dict[str, Any] = {}
    for name, spec in members(doc["dispatchables"]).items():
        if not isinstance(spec, dict):
            raise DxDispatchError(
                f"dispatchable '{name}' is a JSON {json_type(spec)}, not an object"
            )
        kind = str(spec.get("type", "")).lower()
        if kind in ("hlsl", "onnx", "dmlserializedgraph"):
            raise DxDispatchError(
                f"dispatchable '{name}': {kind} dispatchables need DirectX; only DML operators "
                "run here"
            )
        try:
            dispatchables[name] = operator_from_json(spec)
        except DmlgraphError as exc:
            raise DxDispatchError(f"dispatchable '{name}': {exc}") from None
        unknown = dxdispatch_unknown_value(dispatchables[name])
        if unknown is not None:  # operator_from_json reads dmlgraph's own JSON, which has it
            raise DxDispatchError(f"dispatchable '{name}': {unknown[0]}")
        if "bindings" in spec:
            init_bindings[name] = members(spec["bindings"])
    return DxDispatchModel(resources, dispatchables, list(doc["commands"]), source=source,
                           init_bindings=init_bindings)


def _binding(model: DxDispatchModel, source: Any, where: str) -> tuple[dict[str, Any], Resource]:
    """A binding (a resource name, or an object naming one) and the resource it names."""
    if isinstance(source, list) and len(source) == 1:  # one resource, written as a list
        source = source[0]
    binding = {"name": source} if isinstance(source, str) else source
    if not isinstance(binding, dict) or not isinstance(binding.get("name"), str):
        raise DxDispatchError(
            f"{where}: a binding is a resource name or an object with a \"name\", not "
            f"{cut(json.dumps(source))}"
        )
    _known_fields(binding, "binding", where)
    if binding["name"] not in model.resources:
        raise DxDispatchError(f"{where}: binds unknown resource {shown_json(binding['name'])}")
    return binding, model.resources[binding["name"]]


def _bind_points(
    desc: OperatorDesc, bindings: Any, name: str, initialized: Collection[str] = (),
    stage: str = "dispatch",
) -> Iterator[tuple[FieldSpec, str, list[Any]]]:
    """(tensor field, where, the sources bound to it) for every tensor of ``desc`` bound at
    ``stage``: at dispatch, all but the bind points ``initialized`` holds; at initialization,
    those alone. A bind point ``desc`` lacks is refused: bound nowhere, it would silently do
    nothing; so is one bound at the other stage (``_initialize``)."""
    if not isinstance(bindings, dict):
        raise DxDispatchError(
            f"{stage} '{name}': bindings must be an object, not {shown_json(bindings)}"
        )
    points = [spec.c_name for spec in desc.SCHEMA if spec.is_tensor]
    unknown = [point for point in bindings if point not in points]
    if unknown:
        raise DxDispatchError(
            f"{stage} '{name}': {desc.OPERATOR.full_name} has no bind point "
            f"{shown_json(unknown[0])} "
            f"(its bind points: {', '.join(points)})"
        )
    at_init = stage != "dispatch"
    for spec in desc.SCHEMA:
        if not spec.is_tensor:
            continue
        where = f"{stage} '{name}', bind point '{spec.c_name}'"
        if (spec.c_name in initialized) != at_init:  # bound at the other stage, or not at all
            if spec.c_name in bindings:
                raise DxDispatchError(f"{where}: {_OWNED_STAGE[at_init]}")
            continue
        if spec.c_name not in bindings:
            raise DxDispatchError(
                f"{where}: nothing bound for a required tensor" if not at_init else
                f"{where}: nothing bound for an input flagged DML_TENSOR_FLAG_OWNED_BY_DML, "
                "which DirectML reads when it initializes the operator, and only then (the "
                "dispatchable's \"bindings\")"
            )
        bound = bindings[spec.c_name]
        if spec.kind is not FieldKind.INPUT_TENSOR_ARRAY:
            yield spec, where, [bound]
            continue
        sources = bound if isinstance(bound, list) else [bound]
        count = len(getattr(desc, spec.attr))
        if len(sources) != count:
            raise DxDispatchError(
                f"{where}: requires {count} resources, but {len(sources)} were bound"
            )
        yield spec, where, sources


#: Why a tensor bound at initialization, or at dispatch, may not be (by whether it was at
#: initialization): IDMLBindingTable::BindInputs, "If an input tensor has the
#: DML_TENSOR_FLAG_OWNED_BY_DML flag set, it may only be bound when executing an operator
#: initializer. Otherwise ... the input tensor must not be bound when executing the
#: initializer, but must be bound when executing the operator itself."
_OWNED_STAGE: Mapping[bool, str] = {
    True: "bound at initialization (the dispatchable's \"bindings\"), which DirectML allows "
          "only for an input flagged DML_TENSOR_FLAG_OWNED_BY_DML; bind it at dispatch",
    False: "flagged DML_TENSOR_FLAG_OWNED_BY_DML, it is bound when DirectML initializes the "
           "operator (the dispatchable's \"bindings\"), never at dispatch",
}


def _initialize(
    model: DxDispatchModel, name: str, desc: OperatorDesc, copies: dict[str, Resource]
) -> dict[str, list[_Bound]]:
    """The inputs of dispatchable ``name`` flagged DML_TENSOR_FLAG_OWNED_BY_DML, by bind point,
    bound where its own "bindings" say: DirectML reads such an input once, when it initializes
    the operator, into its persistent resource. DxDispatch initializes every dispatchable
    before the first command, so each reads its resource as the initial values left it: a
    copy taken now (``copies``, one per resource), which later dispatches do not change. An
    array bind point (JOIN's InputTensors) is bound whole, so its tensors are flagged alike."""
    owned: list[str] = []
    for spec in desc.SCHEMA:
        if not spec.is_tensor:
            continue
        value = getattr(desc, spec.attr)
        tensors = value if spec.kind is FieldKind.INPUT_TENSOR_ARRAY else (value,)
        flagged = [bool(t.flags & TensorFlags.OWNED_BY_DML) for t in tensors]
        if any(flagged) and not all(flagged):
            raise DxDispatchError(
                f"dispatchable '{name}', bind point '{spec.c_name}': only some of its tensors "
                "are flagged DML_TENSOR_FLAG_OWNED_BY_DML, which DirectML binds at "
                "initialization only, the others at dispatch only; DxDispatch binds a bind "
                "point whole, at one or the other"
            )
        if all(flagged) and flagged:
            owned.append(spec.c_name)
    bindings = model.init_bindings.get(name, {})
    initialized: dict[str, list[_Bound]] = {}
    for spec, where, sources in _bind_points(desc, bindings, name, owned, "dispatchable"):
        value = getattr(desc, spec.attr)
        tensors = value if spec.kind is FieldKind.INPUT_TENSOR_ARRAY else (value,)
        labels = ([f"{spec.c_name}[{i}]" for i in range(len(tensors))]
                  if spec.kind is FieldKind.INPUT_TENSOR_ARRAY else [spec.c_name])
        bound = []
        for source, tensor, label in zip(sources, tensors, labels):
            at = _bound(model, source, tensor, label, where)
            copy = copies.setdefault(at.resource.name, Resource(
                at.resource.name, bytearray(at.resource.data), at.resource.data_type,
                at.resource.value_count))
            bound.append(replace(at, resource=copy))
        initialized[spec.c_name] = bound
    return initialized


@dataclass(frozen=True)
class _Bound:
    """A tensor bound for a dispatch: its bind point, and the resource and byte offset."""

    point: str  # "InputTensor", "InputTensors[1]"
    tensor: BufferTensorDesc
    resource: Resource
    offset: int

    @property
    def end(self) -> int:
        """Past the last byte the tensor may touch: its TotalTensorSizeInBytes from its offset."""
        return self.offset + self.tensor.total_tensor_size_in_bytes

    def overlaps(self, other: _Bound) -> bool:
        return self.resource is other.resource and (
            self.offset < other.end and other.offset < self.end
        )

    def view(self) -> np.ndarray:
        """A flat, writable view of the resource from the offset on."""
        dtype = self.tensor.data_type.numpy_dtype
        count = (len(self.resource.data) - self.offset) // dtype.itemsize
        return np.frombuffer(self.resource.data, dtype=dtype, count=count, offset=self.offset)


def _bound(
    model: DxDispatchModel, source: Any, tensor: BufferTensorDesc, point: str, where: str
) -> _Bound:
    """Where ``source`` binds ``tensor``: the byte offset, aligned as DML_BUFFER_BINDING needs."""
    binding, resource = _binding(model, source, where)
    element_size = _uint(binding.get("elementSizeInBytes", 0), where, "elementSizeInBytes")
    element_size = element_size or resource.data_type.numpy_dtype.itemsize
    offset = _uint(binding.get("elementOffset", 0), where, "elementOffset") * element_size
    # both powers of two: "Buffer tensors always have a minimum alignment of 16 bytes", and
    # a GuaranteedBaseOffsetAlignment, when given, is one more the offset must keep
    # (DML_BUFFER_TENSOR_DESC); a smaller one does not lower the 16 (4 bound at byte 4)
    alignment = max(MINIMUM_BUFFER_TENSOR_ALIGNMENT, tensor.guaranteed_base_offset_alignment)
    if offset % alignment:
        raise DxDispatchError(
            f"{where}: binds '{resource.name}' at byte {offset}, which is not a multiple of "
            f"{alignment} (DML_BUFFER_BINDING's Offset: DML_MINIMUM_BUFFER_TENSOR_ALIGNMENT, "
            "and the tensor's GuaranteedBaseOffsetAlignment when larger)"
        )
    if len(resource.data) - offset < tensor.data_type.numpy_dtype.itemsize:
        raise DxDispatchError(f"{where}: offset {offset} bytes leaves no room in '{resource.name}'")
    if len(resource.data) - offset < tensor.total_tensor_size_in_bytes:
        raise DxDispatchError(
            f"{where}: '{resource.name}' holds {len(resource.data) - offset} bytes from byte "
            f"{offset}, fewer than the tensor's TotalTensorSizeInBytes "
            f"({tensor.total_tensor_size_in_bytes}), the least a buffer holding it may have "
            "(DML_BUFFER_TENSOR_DESC)"
        )
    return _Bound(point, tensor, resource, offset)


def _bound_tensors(
    model: DxDispatchModel, desc: OperatorDesc, bindings: Any, name: str,
    initialized: Mapping[str, list[_Bound]],
) -> tuple[list[_Bound], list[_Bound]]:
    """The inputs and the outputs of a dispatch of ``desc``, each where it is bound (an input
    bound at initialization where ``initialized`` holds it: ``_initialize``). An output
    overlapping an input is refused unless the operator supports in-place execution
    (``OperatorDesc.IN_PLACE``)."""
    points: dict[str, list[_Bound]] = dict(initialized)
    for spec, where, sources in _bind_points(desc, bindings, name, initialized):
        tensors = getattr(desc, spec.attr)
        if spec.kind is not FieldKind.INPUT_TENSOR_ARRAY:
            points[spec.c_name] = [_bound(model, sources[0], tensors, spec.c_name, where)]
            continue
        points[spec.c_name] = [_bound(model, source, tensor, f"{spec.c_name}[{i}]", where)
                               for i, (source, tensor) in enumerate(zip(sources, tensors))]
    inputs: list[_Bound] = []  # in the order of the desc's tensors, as the executor takes them
    outputs: list[_Bound] = []
    for spec in desc.SCHEMA:
        if spec.is_tensor:
            (outputs if spec.kind is FieldKind.OUTPUT_TENSOR else inputs).extend(
                points[spec.c_name])
    for output in outputs:
        for input_ in inputs:
            if output.overlaps(input_) and not desc.IN_PLACE:
                raise DxDispatchError(
                    f"dispatch '{name}': {output.point} and {input_.point} overlap in "
                    f"'{output.resource.name}' (bytes {output.offset} to {output.end} and "
                    f"{input_.offset} to {input_.end}): {desc.OPERATOR.full_name} does not "
                    "support in-place execution (DirectML says so of each operator that "
                    "does), so its output may not alias an input"
                )
    return inputs, outputs


def _dispatch(
    model: DxDispatchModel,
    command: dict[str, Any],
    level: FeatureLevel,
    initialized: Mapping[str, Mapping[str, list[_Bound]]],
) -> None:
    from backends.numpy import execute_operator  # the executor lives in the backends package

    name = command["dispatchable"]  # known, valid and bound to known names: _check_commands
    desc = model.dispatchables[name]
    # no output overlaps an input (_bound_tensors), so they are read and written in place
    inputs, outputs = _bound_tensors(
        model, desc, members(command.get("bindings", {})), name, initialized[name]
    )
    try:
        execute_operator(desc, [bound.view() for bound in inputs], level,
                         outputs=[bound.view() for bound in outputs])
    except DmlgraphError as exc:
        raise DxDispatchError(f"dispatch '{name}': {exc}") from None


def format_values(values: np.ndarray) -> str:
    """Values as C++ ostream prints them by default: 6 significant digits for floats, and
    int8_t / uint8_t as the characters they are (their bytes, read as Latin-1)."""
    flat = values.reshape(-1)
    if values.dtype.kind == "f":  # tolist: Python floats and ints, formatted in C loops
        return ", ".join(map("{:g}".format, flat.tolist()))
    if values.dtype.itemsize == 1:
        return ", ".join(flat.view(np.uint8).tobytes().decode("latin-1"))
    return ", ".join(map(str, flat.tolist()))


def run_model(
    model: DxDispatchModel,
    feature_level: FeatureLevel | str | int = FeatureLevel.L6_4,
    echo: Callable[[str], None] | None = None,
) -> DxDispatchModel:
    """Execute the commands in order; ``print`` lines are collected (and echoed if asked),
    the model's text in them exact (the command line shows it through ``printable.visible``)."""
    if not isinstance(model, DxDispatchModel):  # a dict or a path: AttributeError inside
        raise DxDispatchError(
            f"run_model takes the model load_model(path or parsed dict) reads, not "
            f"{type(model).__name__}"
        )
    if echo is not None and not callable(echo):  # called at the first print command
        raise DxDispatchError(f"echo is None or a function taking a line, not {echo!r}")
    level = FeatureLevel.parse(feature_level)
    try:
        _run_commands(model, level, echo)
    except DxDispatchError as exc:
        raise DxDispatchError(f"{model.source}: {exc}" if model.source else str(exc)) from None
    return model


def _command_kind(command: Any) -> Any:
    kind = command.get("type") if isinstance(command, dict) else None
    return kind.lower() if isinstance(kind, str) else kind  # DxDispatch: _stricmp


def _check_commands(
    model: DxDispatchModel, level: FeatureLevel
) -> dict[str, dict[str, list[_Bound]]]:
    """Every dispatchable at the level, and every command's type, fields, names and
    bindings (offsets, an output over an input), before any command runs, as DxDispatch
    parses the commands and initializes every dispatchable first (a bad last command printed
    nothing there, and everything before it here). Returns each dispatchable's inputs bound
    at its initialization (``_initialize``)."""
    initialized: dict[str, dict[str, list[_Bound]]] = {}
    copies: dict[str, Resource] = {}
    for key, desc in model.dispatchables.items():
        try:  # before binding, too: a tensor of a type with no NumPy element type
            desc.validate(level)
        except DmlgraphError as exc:
            raise DxDispatchError(f"dispatchable '{key}': {exc}") from None
        initialized[key] = _initialize(model, key, desc, copies)
    for index, command in enumerate(model.commands):
        kind = _command_kind(command)
        if kind == "writefile":
            raise DxDispatchError(
                f"command {index}: writeFile is not run here (no file is written from a model; "
                "`dmlgraph dxdispatch MODEL -o OUT.npz` saves every resource)"
            )
        if not isinstance(command, dict):  # was "unknown command type None"
            raise DxDispatchError(
                f"command {index} is a JSON {json_type(command)}, not an object"
            )
        if "type" not in command:
            raise DxDispatchError(f"command {index} has no \"type\" (dispatch or print)")
        if kind not in ("dispatch", "print"):
            raise DxDispatchError(f"command {index}: unknown command type {shown_json(kind)}")
        _known_fields(command, kind, f"command {index}")
        if kind == "dispatch":
            name = command.get("dispatchable")
            if not isinstance(name, str) or name not in model.dispatchables:
                raise DxDispatchError(f"command {index}: unknown dispatchable {shown_json(name)}")
            _check_thread_groups(command.get("threadGroupCount", [1, 1, 1]), index)
            _bound_tensors(model, model.dispatchables[name],
                           members(command.get("bindings", {})), name, initialized[name])
        else:
            name = command.get("resource")
            if not isinstance(name, str) or name not in model.resources:
                raise DxDispatchError(
                    f"command {index}: print of unknown resource {shown_json(name)}"
                )
    return initialized


def _check_thread_groups(value: object, index: int) -> None:
    """A dispatch's ``threadGroupCount`` as the schema types it (three integers above 0, a
    UINT each): an HLSL dispatch's, which a DML dispatch does not read, so it is only
    checked; it was taken whatever it held (``[1, "x", 1]``)."""
    if not (
        isinstance(value, list)
        and len(value) == 3
        and all(type(n) is int and 0 < n <= UINT32_MAX for n in value)
    ):
        raise DxDispatchError(
            f"command {index}: threadGroupCount = {shown_json(value)}: the schema's is three "
            "integers "
            f"above 0 (X, Y, Z thread groups, at most {UINT32_MAX} each)"
        )


def _run_commands(
    model: DxDispatchModel, level: FeatureLevel, echo: Callable[[str], None] | None
) -> None:
    initialized = _check_commands(model, level)
    for command in model.commands:
        if _command_kind(command) == "dispatch":
            _dispatch(model, command, level, initialized)
            continue
        name = command["resource"]
        line = f"Resource '{name}': {format_values(model.resources[name].values())}"
        model.printed.append(line)
        if echo:
            echo(line)
