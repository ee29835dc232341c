"""Descriptors to and from DxDispatch's JSON dispatchable form.

``{"type": "DML_OPERATOR_SLICE1", "desc": {...}}`` with the exact C field names. Reading
accepts what DxDispatch's parser (DxDispatch/src/model/JsonParsers.cpp) accepts, and no more:
enum values as strings in full or suffix form (case-sensitive, never numbers); a tensor desc in
full form (``{"Type": "DML_TENSOR_TYPE_BUFFER", "Desc": {...}}``) or shortened to its buffer
desc; UINT/INT fields as JSON integers only; FLOAT fields as numbers or the strings "inf",
"-inf", "nan"; a scalar union as a number read through its sibling ``...DataType`` field or as
an object naming the union member (``{"Float32": 1.5}``, ``{"UInt16": 15360}`` for FLOAT16
bits). Every operator field is required, as in DxDispatch. Writing uses full enum names and
the shortened tensor desc, leaving out tensor fields that hold their defaults. Everything is
driven by each descriptor's SCHEMA.

DxDispatch's parser predates some enum values (``DXDISPATCH_UNKNOWN_VALUES``): a DxDispatch
model holding one is refused, by the exporter and by ``dmlgraph dxdispatch`` alike, while
dmlgraph's own JSON (``lower -o``) holds every value.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, TypeVar

import numpy as np

from dmlgraph.dml import enums
from dmlgraph.dml.enums import (
    ExecutionFlags,
    OperatorType,
    PaddingMode,
    TensorDataType,
    TensorFlags,
    TensorType,
)
from dmlgraph.dml.operators import DESCRIPTOR_CLASSES, OperatorDesc
from dmlgraph.dml.schema import FieldKind, FieldSpec
from dmlgraph.dml.tensor import BufferTensorDesc
from dmlgraph.errors import DmlValidationError, EnumValueError, cut

_E = TypeVar("_E", bound=enums._DmlEnum)

K = FieldKind
_BUFFER_KEYS = (
    "DataType",
    "Flags",
    "DimensionCount",
    "Sizes",
    "Strides",
    "TotalTensorSizeInBytes",
    "GuaranteedBaseOffsetAlignment",
)


# -- writing ---------------------------------------------------------------------------------
def tensor_to_json(desc: BufferTensorDesc) -> dict[str, Any]:
    """The shortened tensor desc, with only the fields that differ from their defaults."""
    out: dict[str, Any] = {"DataType": desc.data_type.full_name, "Sizes": list(desc.sizes)}
    if desc.flags != TensorFlags.NONE:
        out["Flags"] = desc.flags.full_name
    if desc.strides is not None:
        out["Strides"] = list(desc.strides)
    if desc.total_tensor_size_in_bytes != desc.minimum_size_in_bytes:
        out["TotalTensorSizeInBytes"] = desc.total_tensor_size_in_bytes
    if desc.guaranteed_base_offset_alignment:
        out["GuaranteedBaseOffsetAlignment"] = desc.guaranteed_base_offset_alignment
    return out


#: The NaN DxDispatch's float parser makes of "nan" (``std::numeric_limits<T>::quiet_NaN()``),
#: as bits of the float type it is read into: the one NaN a JSON float can carry.
QUIET_NAN_BITS: Mapping[TensorDataType, int] = {
    TensorDataType.FLOAT32: 0x7FC00000,
    TensorDataType.FLOAT64: 0x7FF8000000000000,
}


def _float_to_json(
    value: float, data_type: TensorDataType = TensorDataType.FLOAT32
) -> float | str:
    """JSON has no NaN or infinity; DxDispatch's FLOAT parser reads them from strings. A NaN
    other than the one "nan" reads as (its sign or payload) has no JSON form: ValueError,
    rather than a "nan" that reads back as another value."""
    if math.isnan(value):
        bits = int(np.array(value, dtype=data_type.numpy_dtype).view(data_type.bits_dtype))
        quiet = QUIET_NAN_BITS[data_type]
        if bits != quiet:
            width = data_type.bit_width // 4
            raise ValueError(
                f"a NaN of bits 0x{bits:0{width}x} as {data_type.full_name}: DxDispatch's JSON "
                f'writes a NaN only as "nan", which reads as the quiet NaN 0x{quiet:0{width}x}'
            )
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return value


# DML_SCALAR_UNION members by data type (FLOAT16 travels as its bits in UInt16).
SCALAR_MEMBER: dict[TensorDataType, str] = {
    TensorDataType.FLOAT16: "UInt16",
    TensorDataType.FLOAT32: "Float32",
    TensorDataType.FLOAT64: "Float64",
    TensorDataType.UINT8: "UInt8",
    TensorDataType.UINT16: "UInt16",
    TensorDataType.UINT32: "UInt32",
    TensorDataType.UINT64: "UInt64",
    TensorDataType.INT8: "Int8",
    TensorDataType.INT16: "Int16",
    TensorDataType.INT32: "Int32",
    TensorDataType.INT64: "Int64",
}


def _scalar_to_json(value: float | int, data_type: TensorDataType) -> float | int | dict:
    """A plain number where DxDispatch's number path is exact, else the member object."""
    if not data_type.is_float or math.isfinite(value):
        return value
    if data_type == TensorDataType.FLOAT16:
        bits = int(np.array(value, dtype=np.float16).view(np.uint16))
        return {"UInt16": bits}
    return {SCALAR_MEMBER[data_type]: _float_to_json(value, data_type)}


def operator_to_json(desc: OperatorDesc) -> dict[str, Any]:
    body: dict[str, Any] = {}
    for spec in desc.SCHEMA:
        try:
            body[spec.c_name] = _field_to_json(desc, spec)
        except ValueError as exc:  # a value the JSON form cannot carry (_float_to_json)
            raise desc.error(spec.c_name, getattr(desc, spec.attr), str(exc)) from None
    return {"type": desc.OPERATOR.full_name, "desc": body}


def _field_to_json(desc: OperatorDesc, spec: FieldSpec) -> Any:
    value = getattr(desc, spec.attr)
    if spec.kind in (K.INPUT_TENSOR, K.OUTPUT_TENSOR):
        return tensor_to_json(value)
    if spec.kind is K.INPUT_TENSOR_ARRAY:
        return [tensor_to_json(t) for t in value]
    if spec.kind in (K.UINT_ARRAY, K.INT_ARRAY):
        return list(value)
    if spec.kind is K.ENUM:
        return value.full_name
    if spec.kind is K.FLOAT:  # a C FLOAT
        return _float_to_json(value)
    if spec.kind is K.SCALAR_UNION:
        return _scalar_to_json(value, getattr(desc, _attr_of(desc, spec.type_field)))
    return value


#: The strings DxDispatch's float parser reads (in any case) as the numbers JSON lacks.
NAMED_FLOATS: Mapping[str, float] = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


def json_number(value: object, named_floats: bool = True) -> float | int:
    """A JSON number as DxDispatch reads one into a float (``ParseFloatingPointNumber``):
    with ``named_floats``, also "inf", "-inf" and "nan" in any case; ValueError says why
    not."""
    if isinstance(value, str) and named_floats and value.lower() in NAMED_FLOATS:
        return NAMED_FLOATS[value.lower()]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(
            'must be a number or "inf", "-inf", "nan"' if named_floats else "must be a number"
        )
    if not lossless_double(value):
        raise ValueError(
            "is no double exactly (DxDispatch's reader refuses an integer a double would round)"
        )
    return value


def json_enum(cls: type[_E], value: object) -> _E:
    """An enum value as DxDispatch's generated parsers read one (``ParseDmlTensorDataType``...):
    a JSON string, its full C name or its suffix compared with strcmp, so never a number nor a
    name with spaces around it (``_DmlEnum.parse`` takes both); ValueError says why not."""
    c_name = cls.c_type()  # the JSON's author knows C's names, not ours
    if not isinstance(value, str):
        raise ValueError(f"a {c_name} is written as a string")
    if value != value.strip():
        raise ValueError("an enum name is written without spaces around it")
    try:
        return cls.parse(value)
    except EnumValueError:  # its message repeated the value, Python's way
        names = ", ".join(member.name for member in cls)
        raise ValueError(f"is not a {c_name} (one of {names})") from None


def lossless_double(value: float | int) -> bool:
    """Whether a JSON number is a double exactly, as RapidJSON's ``IsLosslessDouble`` asks
    before DxDispatch reads an integer into a float field (2^53 + 1 is not; an integer
    beyond 64 bits RapidJSON holds as a double already, so it is)."""
    if isinstance(value, float):
        return True
    try:
        double = float(value)
    except OverflowError:  # beyond any double: NumberTooBig
        return False
    if not -(2**63) <= value < 2**64:  # RapidJSON reads such an integer as a double
        return True
    return int(double) == value


def json_float(number: float | int, data_type: TensorDataType) -> float:
    """A JSON number as DxDispatch stores it in a float type: a FLOAT16 through float
    (``half(ParseFloatingPointNumber<float>(v))``: two roundings), others as they are."""
    if data_type == TensorDataType.FLOAT16:
        with np.errstate(over="ignore"):  # NumPy's warning was printed above the output
            single = float(np.float32(number))
        if math.isinf(single) and math.isfinite(number):
            # beyond float: left as it is, a FLOAT16 of it inf either way; PADDING1's check
            # names it overflowing, as it did 70000 (1e39 padded with inf, said nothing)
            return float(number)
        return single
    return float(number)


def _attr_of(desc: OperatorDesc, c_name: str | None) -> str:
    return next(spec.attr for spec in desc.SCHEMA if spec.c_name == c_name)


# -- reading ---------------------------------------------------------------------------------
class _Absent:
    """A missing field's value in a message: "DataType = (absent)", not JSON's null, which
    the author may have written."""

    def __repr__(self) -> str:
        return "(absent)"


_ABSENT = _Absent()


class _Reader:
    """Reads one operator's desc; every error names the operator and the JSON field path."""

    def __init__(self, operator: str) -> None:
        self.operator = operator

    def fail(self, path: str, value: object, rule: str) -> DmlValidationError:
        return DmlValidationError(self.operator, path, value, rule, as_json=True)

    def missing(self, path: str) -> DmlValidationError:
        return self.fail(path, _ABSENT, "required field is missing")

    def enum(self, cls: type[_E], value: object, path: str) -> _E:
        try:
            return json_enum(cls, value)
        except ValueError as exc:
            raise self.fail(path, value, str(exc)) from None

    def uint(self, value: object, path: str, bits: int = 32) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**bits:
            raise self.fail(path, value, f"must be an unsigned {bits}-bit integer")
        return value

    def int_(self, value: object, path: str) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not -(2**31) <= value < 2**31:
            raise self.fail(path, value, "must be a signed 32-bit integer")
        return value

    def array(self, value: object, path: str) -> list[Any]:
        if not isinstance(value, list):
            raise self.fail(path, value, "must be an array")
        return value

    def number(self, value: object, path: str, named_floats: bool = True) -> float | int:
        try:
            return json_number(value, named_floats)
        except ValueError as exc:
            raise self.fail(path, value, str(exc)) from None

    def scalar(self, value: object, data_type: TensorDataType, path: str) -> float | int:
        """A DML_SCALAR_UNION: a number read as ``data_type``, or ``{"<Member>": value}``."""
        if isinstance(value, dict):
            member = SCALAR_MEMBER.get(data_type)
            if member is None:
                raise self.fail(
                    path, value, f"DML_SCALAR_UNION has no {data_type.full_name} member"
                )
            if set(value) != {member}:
                raise self.fail(path, value, f"a {data_type.full_name} scalar union object "
                                             f"has exactly the member \"{member}\"")
            inner = value[member]
            if data_type == TensorDataType.FLOAT16:
                bits = self.uint(inner, f"{path}.{member}", bits=16)
                return float(np.array(bits, dtype=np.uint16).view(np.float16))
            if data_type.is_float:
                return float(self.number(inner, f"{path}.{member}"))
            path, value = f"{path}.{member}", inner
        if data_type.is_float:
            return json_float(self.number(value, path, named_floats=False), data_type)
        if isinstance(value, bool) or not isinstance(value, int):  # 3.0 too, as DxDispatch
            raise self.fail(path, value, f"must be an integer for {data_type.full_name}")
        return value

    def object_(self, value: object, path: str, allowed: tuple[str, ...]) -> Mapping[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(path, value, "must be an object")
        unknown = sorted(set(value) - set(allowed))
        if unknown:
            raise self.fail(
                f"{path}.{cut(unknown[0])}" if path else cut(unknown[0]),
                value[unknown[0]],
                f"unknown field (expected one of {', '.join(allowed)})",
            )
        return value

    def tensor(self, value: object, path: str) -> BufferTensorDesc:
        if isinstance(value, dict) and ("Type" in value or "Desc" in value):
            # DML_TENSOR_DESC {Type, Desc}, or a buffer desc with its Type beside its fields
            kind = self.enum(TensorType, value.get("Type", "BUFFER"), f"{path}.Type")
            if kind != TensorType.BUFFER:
                raise self.fail(f"{path}.Type", value.get("Type"), "only BUFFER tensors exist")
            if "Desc" in value:
                outer = self.object_(value, path, ("Type", "Desc"))
                return self.tensor(outer["Desc"], f"{path}.Desc")
            value = {k: v for k, v in value.items() if k != "Type"}
        body = self.object_(value, path, _BUFFER_KEYS)
        for key in ("DataType", "Sizes"):
            if key not in body:
                raise self.missing(f"{path}.{key}")
        data_type = self.enum(TensorDataType, body["DataType"], f"{path}.DataType")
        sizes = [self.uint(v, f"{path}.Sizes[{i}]")
                 for i, v in enumerate(self.array(body["Sizes"], f"{path}.Sizes"))]
        if "DimensionCount" in body and self.uint(
            body["DimensionCount"], f"{path}.DimensionCount"
        ) != len(sizes):
            raise self.fail(
                f"{path}.DimensionCount", body["DimensionCount"],
                f"must equal the number of Sizes ({len(sizes)})",
            )
        strides = None  # absent or [] (DxDispatch: ``strides.empty() ? nullptr``)
        if "Strides" in body:
            strides = tuple(self.uint(v, f"{path}.Strides[{i}]")
                            for i, v in enumerate(self.array(body["Strides"], f"{path}.Strides")))
            strides = strides or None
        flags = TensorFlags(self.flags(TensorFlags, body.get("Flags", "NONE"), f"{path}.Flags"))
        kwargs: dict[str, Any] = {}
        total = self.uint(body.get("TotalTensorSizeInBytes", 0), f"{path}.TotalTensorSizeInBytes",
                          bits=64)
        if total:  # 0 or absent: DMLCalcBufferTensorSize, as DxDispatch does
            kwargs["total_tensor_size_in_bytes"] = total
        if "GuaranteedBaseOffsetAlignment" in body:
            kwargs["guaranteed_base_offset_alignment"] = self.uint(
                body["GuaranteedBaseOffsetAlignment"], f"{path}.GuaranteedBaseOffsetAlignment"
            )
        return BufferTensorDesc(data_type, tuple(sizes), strides, flags, **kwargs)

    def flags(self, cls: type[_E], value: object, path: str) -> int:
        """A bit set as DxDispatch's ParseFlags reads one: a flag's name, or an array of them
        OR-ed together."""
        if isinstance(value, list):
            combined = 0
            for i, item in enumerate(value):
                combined |= self.enum(cls, item, f"{path}[{i}]")
            return combined
        if not isinstance(value, str):
            raise self.fail(path, value, "must be a string or an array of strings")
        return self.enum(cls, value, path)

    def field(self, spec: FieldSpec, body: Mapping[str, Any], parsed: dict[str, Any]) -> Any:
        path = spec.c_name
        value = body[spec.c_name]
        if spec.kind in (K.INPUT_TENSOR, K.OUTPUT_TENSOR):
            return self.tensor(value, path)
        if spec.kind is K.INPUT_TENSOR_ARRAY:
            return tuple(self.tensor(v, f"{path}[{i}]")
                         for i, v in enumerate(self.array(value, path)))
        if spec.kind in (K.COUNT, K.UINT):
            return self.uint(value, path)
        if spec.kind is K.UINT_ARRAY:
            return tuple(self.uint(v, f"{path}[{i}]") for i, v in enumerate(self.array(value, path)))
        if spec.kind is K.INT_ARRAY:
            return tuple(self.int_(v, f"{path}[{i}]") for i, v in enumerate(self.array(value, path)))
        if spec.kind is K.ENUM:
            return self.enum(getattr(enums, spec.enum_name or ""), value, path)
        if spec.kind is K.FLOAT:
            return float(self.number(value, path))
        if spec.kind is K.SCALAR_UNION:
            return self.scalar(value, parsed[spec.type_field or ""], path)
        raise AssertionError(f"unhandled field kind {spec.kind}")


_DISPATCHABLE_KEYS = ("type", "Type", "desc", "Desc", "executionFlags", "dmlCompileType",
                      "bindings")
#: DxDispatch's DmlCompileType names (``ParseDmlCompileTypeField``): how it compiles the
#: operator, which does not change what a copy computes.
DML_COMPILE_TYPES = ("DmlCompileOp", "DmlCompileGraph")


def _dispatchable_options(reader: _Reader, dispatchable: Mapping[str, Any]) -> None:
    """Check the options DxDispatch reads beside the desc, which it refuses misspelt; their
    values do not change a copy's result, so they are not kept."""
    if "executionFlags" in dispatchable:
        reader.flags(ExecutionFlags, dispatchable["executionFlags"], "executionFlags")
    compile_type = dispatchable.get("dmlCompileType", DML_COMPILE_TYPES[0])
    if compile_type not in DML_COMPILE_TYPES:
        raise reader.fail("dmlCompileType", compile_type,
                          f"must be one of {', '.join(DML_COMPILE_TYPES)}")


def _as_dicts(value: Any) -> Any:
    """A mapping given for a JSON object (a read-only ``MappingProxyType`` too) as the dicts
    the reader takes, at any depth; any other value as it is."""
    if isinstance(value, Mapping):
        return {key: _as_dicts(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_as_dicts(item) for item in value)
    return value


def _not_an_object(given: object) -> DmlValidationError:
    """``operator_from_json`` given no dict: its JSON text was told "dispatchable:  = '<the
    whole text>': a dispatchable must be an object", naming no field and not the cure."""
    shown: object = given
    if isinstance(given, str) and len(given) > 43:
        shown = given[:40] + "..."
    elif isinstance(given, (bytes, bytearray)) and len(given) > 43:
        shown = bytes(given[:40]) + b"..."
    text = isinstance(given, (str, bytes, bytearray))
    cure = "; json.loads reads one from its JSON text" if text else ""
    return DmlValidationError(
        "operator_from_json", "dispatchable", shown,
        f"a dispatchable is a JSON object, a dict, not {type(given).__name__}{cure}",
    )


def operator_from_json(dispatchable: Mapping[str, Any]) -> OperatorDesc:
    """Build a descriptor from a DxDispatch DML dispatchable ``{"type": ..., "desc": {...}}``.

    As DxDispatch's ParseDmlOperatorDesc: the type under "Type" or "type", the fields under
    "Desc" or "desc" or inline beside the type. The result is not validated against a feature
    level; call ``validate`` for that.
    """
    reader = _Reader("dispatchable")
    if not isinstance(dispatchable, Mapping):
        raise _not_an_object(dispatchable)
    dispatchable = _as_dicts(dispatchable)
    type_key = next((k for k in ("Type", "type") if k in dispatchable), None)
    if type_key is None:
        raise reader.missing("type")
    type_name = dispatchable[type_key]
    if not isinstance(type_name, str):
        raise reader.fail(type_key, type_name, "an operator type is written as a string")
    try:  # the name exactly, as DxDispatch compares it
        kind = OperatorType.parse(type_name) if type_name == type_name.strip() else None
        cls = DESCRIPTOR_CLASSES.get(kind) if kind is not None else None
    except ValueError:
        cls = None
    if cls is None:
        supported = ", ".join(c.OPERATOR.full_name for c in DESCRIPTOR_CLASSES.values())
        raise reader.fail(
            type_key, dispatchable[type_key], f"unsupported operator (supported: {supported})"
        )
    reader = _Reader(cls.OPERATOR.full_name)
    allowed = tuple(spec.c_name for spec in cls.SCHEMA)
    desc_key = next((k for k in ("Desc", "desc") if k in dispatchable), None)
    if desc_key is not None:
        reader.object_(dispatchable, "", _DISPATCHABLE_KEYS)
        body = reader.object_(dispatchable[desc_key], desc_key, allowed)
    else:
        body = reader.object_(dispatchable, "", allowed + _DISPATCHABLE_KEYS)
    _dispatchable_options(reader, dispatchable)
    parsed: dict[str, Any] = {}
    kwargs: dict[str, Any] = {}
    for spec in cls.SCHEMA:
        if spec.c_name not in body:
            raise reader.missing(spec.c_name)
        parsed[spec.c_name] = reader.field(spec, body, parsed)
        kwargs[spec.attr] = parsed[spec.c_name]
    return cls(**kwargs)


# -- what DxDispatch's parser knows ----------------------------------------------------------
#: Enum values newer than DxDispatch's JSON parser, by enum (DML_SPEC.md §6: it predates
#: DML_PADDING_MODE_WRAP), each with what the lowering writes instead. DxDispatch could not
#: read a model holding one. Keyed by enum first: IntEnum members of equal value compare equal
#: (PaddingMode.WRAP == TensorDataType.UINT16).
DXDISPATCH_UNKNOWN_VALUES: Mapping[type[enums._DmlEnum], Mapping[enums._DmlEnum, str]] = {
    PaddingMode: {
        PaddingMode.WRAP: "lower at FL 6_3 or below, where wrap is SLICEs and a JOIN",
    },
}


def dxdispatch_unknown_value(desc: OperatorDesc) -> tuple[DmlValidationError, str] | None:
    """The first enum field of ``desc`` holding a value DxDispatch's JSON parser does not know,
    as an error naming the field and its value, with the way out the lowering has; None where
    DxDispatch reads every field."""
    for spec in desc.SCHEMA:
        if spec.kind is not K.ENUM:
            continue
        value = getattr(desc, spec.attr)
        unknown = DXDISPATCH_UNKNOWN_VALUES.get(type(value), {})
        if value in unknown:
            error = DmlValidationError(  # a DxDispatch model's value, or one it would hold
                desc.OPERATOR.full_name, spec.c_name, value.full_name,
                "newer than DxDispatch's JSON parser, which cannot read it", as_json=True,
            )
            return error, unknown[value]
    return None
