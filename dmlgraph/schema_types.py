"""Node input types against their ONNX schemas, as onnxruntime checks them when it loads a
model: each input has a type its formal parameter allows, and the inputs bound to one type
parameter share one type. Outputs are not checked, as onnxruntime does not: it runs a Cast-9
to bfloat16 or a ConstantOfShape-9 of bfloat16, whose schemas list no such output, and a
Constant-1 of int64 (it makes Constants initializers first). onnx's ``check_type`` refuses
all three, so the importer asks this module instead (``node_problem``, and
``output_dtypes`` for the types a model declares)."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np
import onnx

from dmlgraph.dtypes import DTYPE_TO_ELEM_TYPE

_VARIADIC = onnx.defs.OpSchema.FormalParameterOption.Variadic


@lru_cache(maxsize=64)
def type_string(dtype: np.dtype) -> str | None:
    """ONNX's name of a dtype in type constraints (``tensor(float)``); None without one."""
    elem = DTYPE_TO_ELEM_TYPE.get(dtype)
    return None if elem is None else f"tensor({onnx.TensorProto.DataType.Name(elem).lower()})"


@lru_cache(maxsize=1024)
def _schema(op_type: str, domain: str, version: int) -> Any:
    try:
        return onnx.defs.get_schema(op_type, version, domain)
    except onnx.defs.SchemaError:
        return None


@lru_cache(maxsize=4096)
def node_problem(
    op_type: str, domain: str, version: int, dtypes: tuple[np.dtype | None, ...]
) -> str | None:
    """Why inputs of ``dtypes`` (None: absent or unknown) break the op's schema at
    ``version``; None when they do not (or the schema is unknown)."""
    schema = _schema(op_type, domain, version)
    if schema is None or not schema.inputs:
        return None
    formals = schema.inputs
    allowed = {c.type_param_str: frozenset(c.allowed_type_strs) for c in schema.type_constraints}
    bound: dict[str, tuple[int, str]] = {}  # type parameter -> (first port, its type)
    for port, dtype in enumerate(dtypes):
        if dtype is None:
            continue
        if port < len(formals):
            formal = formals[port]
        elif formals[-1].option == _VARIADIC:
            formal = formals[-1]
        else:
            continue  # more inputs than the schema has: the checker's to refuse
        name = type_string(dtype)
        if name is None:
            continue
        takes = allowed.get(formal.type_str, frozenset({formal.type_str}))
        if name not in takes:
            return (
                f"input {port} ({formal.name}) is {name}; {op_type}-{schema.since_version}"
                f" takes {', '.join(sorted(takes))} there"
            )
        if formal.type_str in allowed and (
            formal.option != _VARIADIC or formal.is_homogeneous
        ):
            first, first_type = bound.setdefault(formal.type_str, (port, name))
            if first_type != name:
                return (
                    f"input {port} ({formal.name}) is {name} and input {first} "
                    f"{first_type}; {op_type}-{schema.since_version} gives them one type "
                    f"({formal.type_str})"
                )
    return None


@lru_cache(maxsize=4096)
def output_dtypes(
    op_type: str, domain: str, version: int, dtypes: tuple[np.dtype | None, ...], outputs: int
) -> tuple[np.dtype | None, ...]:
    """The dtype of each of a node's ``outputs`` outputs that its schema fixes (Shape's
    int64, a type parameter of one type) or binds to an input's type parameter (Relu's T; a
    variadic output's for each of its outputs); None where an attribute decides it (Cast)
    or nothing says."""
    schema = _schema(op_type, domain, version)
    if schema is None:
        return ()
    bound: dict[str, np.dtype] = {}
    for port, dtype in enumerate(dtypes):
        if dtype is None or not schema.inputs:
            continue
        if port < len(schema.inputs):
            formal = schema.inputs[port]
        elif schema.inputs[-1].option == _VARIADIC:
            formal = schema.inputs[-1]
        else:
            continue
        if _one_type(formal):  # a Loop's carried values each have their own
            bound.setdefault(formal.type_str, dtype)
    allowed = {c.type_param_str: c.allowed_type_strs for c in schema.type_constraints}
    made: list[np.dtype | None] = []
    for formal in schema.outputs:
        if not _one_type(formal):  # a Loop's or If's outputs: typed by its subgraph
            made.append(None)
            continue
        takes = allowed.get(formal.type_str, [formal.type_str])  # a fixed type is its own
        only = _FIXED.get(takes[0]) if len(takes) == 1 else None  # Shape's T1: int64 only
        made.append(bound.get(formal.type_str) or only)
    if schema.outputs and schema.outputs[-1].option == _VARIADIC:  # Split's every output
        made += [made[-1]] * (outputs - len(made))
    return tuple(made)


def _one_type(formal: Any) -> bool:
    """Whether every value of a formal parameter has the one type its type parameter binds:
    not so for a heterogeneous variadic one (a Loop's carried values and scan outputs, an
    If's outputs), whose values are typed one by one."""
    return bool(formal.option != _VARIADIC or formal.is_homogeneous)


#: A fixed type string (``tensor(int64)``) -> its dtype.
_FIXED: dict[str, np.dtype] = {
    name: dtype for dtype in DTYPE_TO_ELEM_TYPE if (name := type_string(dtype)) is not None
}
