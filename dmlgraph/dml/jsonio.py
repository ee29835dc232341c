"""Descriptors to and from DxDispatch's JSON dispatchable form.

``{"type": "DML_OPERATOR_SLICE1", "desc": {...}}`` with the exact C field names. Reading
accepts what DxDispatch accepts: enum values in full or suffix form, a tensor desc in full form
(``{"Type": "DML_TENSOR_TYPE_BUFFER", "Desc": {...}}``) or shortened to its buffer desc, and a
scalar union as a number read through its sibling ``...DataType`` field. Writing uses the full
enum names and the shortened tensor desc, leaving out fields that hold their defaults.
Everything is driven by each descriptor's SCHEMA.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

from dmlgraph.dml import enums
from dmlgraph.dml.enums import OperatorType, TensorDataType, TensorFlags, TensorType
from dmlgraph.dml.operators import DESCRIPTOR_CLASSES, OperatorDesc
from dmlgraph.dml.schema import FieldKind, FieldSpec
from dmlgraph.dml.tensor import BufferTensorDesc
from dmlgraph.errors import DmlValidationError

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


def _number_to_json(value: float | int) -> float | int | str:
    """JSON has no NaN or infinity; DxDispatch reads them from strings."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    return value


def operator_to_json(desc: OperatorDesc) -> dict[str, Any]:
    body: dict[str, Any] = {}
    for spec in desc.SCHEMA:
        value = getattr(desc, spec.attr)
        if spec.kind in (K.INPUT_TENSOR, K.OUTPUT_TENSOR):
            body[spec.c_name] = tensor_to_json(value)
        elif spec.kind is K.INPUT_TENSOR_ARRAY:
            body[spec.c_name] = [tensor_to_json(t) for t in value]
        elif spec.kind in (K.UINT_ARRAY, K.INT_ARRAY):
            body[spec.c_name] = list(value)
        elif spec.kind is K.ENUM:
            body[spec.c_name] = value.full_name
        elif spec.kind in (K.FLOAT, K.SCALAR_UNION):
            body[spec.c_name] = _number_to_json(value)
        else:
            body[spec.c_name] = value
    return {"type": desc.OPERATOR.full_name, "desc": body}


# -- reading ---------------------------------------------------------------------------------
class _Reader:
    """Reads one operator's desc; every error names the operator and the JSON field path."""

    def __init__(self, operator: str) -> None:
        self.operator = operator

    def fail(self, path: str, value: object, rule: str) -> DmlValidationError:
        return DmlValidationError(self.operator, path, value, rule)

    def enum(self, cls: type[enums._DmlEnum], value: object, path: str) -> enums._DmlEnum:
        try:
            return cls.parse(value)
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

    def number(self, value: object, path: str) -> float | int:
        if isinstance(value, str):
            text = value.strip().lower()
            named = {"nan": math.nan, "inf": math.inf, "infinity": math.inf,
                     "-inf": -math.inf, "-infinity": -math.inf}
            if text in named:
                return named[text]
            try:
                return int(text, 0)
            except ValueError:
                pass
            try:
                return float(text)
            except ValueError:
                raise self.fail(path, value, "must be a number") from None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.fail(path, value, "must be a number")
        return value

    def object_(self, value: object, path: str, allowed: tuple[str, ...]) -> Mapping[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(path, value, "must be an object")
        unknown = sorted(set(value) - set(allowed))
        if unknown:
            raise self.fail(
                f"{path}.{unknown[0]}" if path else unknown[0],
                value[unknown[0]],
                f"unknown field (expected one of {', '.join(allowed)})",
            )
        return value

    def tensor(self, value: object, path: str) -> BufferTensorDesc:
        if isinstance(value, dict) and ("Type" in value or "Desc" in value):
            outer = self.object_(value, path, ("Type", "Desc"))
            kind = self.enum(TensorType, outer.get("Type", "BUFFER"), f"{path}.Type")
            if kind != TensorType.BUFFER:
                raise self.fail(f"{path}.Type", outer.get("Type"), "only BUFFER tensors exist")
            return self.tensor(outer.get("Desc"), f"{path}.Desc")
        body = self.object_(value, path, _BUFFER_KEYS)
        for key in ("DataType", "Sizes"):
            if key not in body:
                raise self.fail(f"{path}.{key}", None, "required field is missing")
        data_type = self.enum(TensorDataType, body["DataType"], f"{path}.DataType")
        sizes = [self.uint(v, f"{path}.Sizes[{i}]")
                 for i, v in enumerate(self.array(body["Sizes"], f"{path}.Sizes"))]
        if "DimensionCount" in body and body["DimensionCount"] != len(sizes):
            raise self.fail(
                f"{path}.DimensionCount", body["DimensionCount"],
                f"must equal the number of Sizes ({len(sizes)})",
            )
        strides = None
        if body.get("Strides") is not None:
            strides = tuple(self.uint(v, f"{path}.Strides[{i}]")
                            for i, v in enumerate(self.array(body["Strides"], f"{path}.Strides")))
        flags = self._flags(body.get("Flags", "NONE"), f"{path}.Flags")
        kwargs: dict[str, Any] = {}
        if "TotalTensorSizeInBytes" in body:
            kwargs["total_tensor_size_in_bytes"] = self.uint(
                body["TotalTensorSizeInBytes"], f"{path}.TotalTensorSizeInBytes", bits=64
            )
        if "GuaranteedBaseOffsetAlignment" in body:
            kwargs["guaranteed_base_offset_alignment"] = self.uint(
                body["GuaranteedBaseOffsetAlignment"], f"{path}.GuaranteedBaseOffsetAlignment"
            )
        return BufferTensorDesc(data_type, tuple(sizes), strides, flags, **kwargs)

    def _flags(self, value: object, path: str) -> TensorFlags:
        if isinstance(value, list):  # a list of flag names is OR-ed together
            combined = 0
            for i, item in enumerate(value):
                combined |= self.enum(TensorFlags, item, f"{path}[{i}]")
            return TensorFlags(combined)
        return self.enum(TensorFlags, value, path)

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
            data_type = parsed[spec.type_field or ""]
            number = self.number(value, path)
            if data_type.is_float:
                return float(number)
            if isinstance(number, float):
                if not number.is_integer():
                    raise self.fail(path, value, f"must be an integer for {data_type.full_name}")
                number = int(number)
            return number
        raise AssertionError(f"unhandled field kind {spec.kind}")


def operator_from_json(dispatchable: Mapping[str, Any]) -> OperatorDesc:
    """Build a descriptor from a DxDispatch DML dispatchable ``{"type": ..., "desc": {...}}``.

    The result is not validated against a feature level; call ``validate`` for that.
    """
    reader = _Reader("dispatchable")
    top = reader.object_(dispatchable, "", ("type", "desc", "executionFlags"))
    if "type" not in top or "desc" not in top:
        missing = "type" if "type" not in top else "desc"
        raise reader.fail(missing, None, "required field is missing")
    operator = reader.enum(OperatorType, top["type"], "type")
    cls = DESCRIPTOR_CLASSES.get(operator)
    if cls is None:
        supported = ", ".join(c.OPERATOR.full_name for c in DESCRIPTOR_CLASSES.values())
        raise reader.fail("type", top["type"], f"unsupported operator (supported: {supported})")
    reader = _Reader(operator.full_name)
    allowed = tuple(spec.c_name for spec in cls.SCHEMA)
    body = reader.object_(top["desc"], "desc", allowed)
    parsed: dict[str, Any] = {}
    kwargs: dict[str, Any] = {}
    for spec in cls.SCHEMA:
        if spec.c_name not in body:
            optional_value = spec.kind in (K.FLOAT, K.SCALAR_UNION)
            if not optional_value:
                raise reader.fail(spec.c_name, None, "required field is missing")
            continue
        parsed[spec.c_name] = reader.field(spec, body, parsed)
        kwargs[spec.attr] = parsed[spec.c_name]
    return cls(**kwargs)
