"""The IR: a networkx multigraph of operation nodes joined by named, typed tensors.

Design, in brief (ARCHITECTURE.md has the picture):

- A ``Node`` holds an ``op`` (an ``OnnxOp`` record, or any frozen DirectML descriptor object
  once lowering runs), ordered ``inputs``/``outputs`` tensor names, a ``Provenance`` and notes.
  ``Node.inputs`` is the one source of truth for port order; ``""`` marks an omitted optional
  input. The networkx edges (producer -> consumer, one per consumer port) are derived from it
  and only ``Graph`` methods change either, so the two cannot drift.
- Tensors live in one registry, name -> ``TensorInfo`` (frozen: dtype as ``numpy.dtype``, shape
  of ``int | str | None`` dims, optional read-only constant data). A tensor with data and no
  producer is a constant; ONNX initializers become constants.
- Graph inputs and outputs are ordered lists of tensor names.
- Node ids are ints handed out in insertion order and never reused, and every listing is in
  id or insertion order, so the same model always gives the same IR.
"""

from __future__ import annotations

import heapq
import math
import operator
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Protocol

import networkx as nx
import numpy as np

from dmlgraph.dml.scalars import is_integer, same_bits_key
from dmlgraph.errors import GraphInvariantError

#: A dimension: a known size, a symbolic name (``"N"``), or None when nothing is known.
Dim = int | str | None
Shape = tuple[Dim, ...]
NodeId = int
#: The largest ONNX int64: dimensions, indices and versions are ONNX int64s.
INT64_MAX = int(np.iinfo(np.int64).max)


def frozen_array(value: Any, dtype: np.dtype | None = None) -> np.ndarray:
    """The one way an array enters the IR (constant data, attribute arrays): ``value`` as an
    array that nothing can write, nor make writeable. One ``_immutable`` already is kept as it
    is; any other is copied into an immutable ``bytes``, the owner ``np.ndarray`` keeps, so
    NumPy refuses ``flags.writeable = True`` on it and every view of it ("cannot set
    WRITEABLE flag to True of this array"). Read-only alone was not enough: that assignment
    undid it on an array owning its memory (or viewing a writeable one), and a write then
    changed a constant after a backend had planned from it (padding values, views, folded
    results). An object array (STRING tensors: ``bytes`` cannot hold pointers) is sealed
    through ``_SealedObjects``. Written for few calls: folding seals every kernel result."""
    array = value if dtype is None and type(value) is np.ndarray else np.asarray(value, dtype)
    if not array.flags.writeable and (type(array.base) is bytes or _immutable(array)):
        return array
    if array.dtype.hasobject:
        owner = np.array(array, order="C")  # a copy the caller does not hold
        owner.flags.writeable = False
        return np.asarray(_SealedObjects(owner))
    return np.ndarray(array.shape, array.dtype, array.tobytes())


class _SealedObjects:
    """The owner of a sealed object array (``frozen_array``): an ``__array_interface__`` marked
    read-only over a private copy, and no buffer of its own, so NumPy finds nothing writeable
    below the array and refuses to make it writeable, as for ``bytes``."""

    __slots__ = ("__array_interface__", "_owner")

    def __init__(self, owner: np.ndarray) -> None:
        interface = dict(owner.__array_interface__)
        interface["data"] = (interface["data"][0], True)
        self.__array_interface__ = interface
        self._owner = owner  # keeps the memory alive


def not_a_string(data: np.ndarray) -> tuple[tuple[int, ...], Any] | None:
    """The first element of an object array that is not a str (its index and value), as
    ONNX's STRING tensors hold only text; None where every one is."""
    for index, value in np.ndenumerate(data):
        if not isinstance(value, str):  # NumPy's str_ is one
            return index, value
    return None


def string_problem(data: np.ndarray) -> str | None:
    """What an object array the user gave holds that no STRING tensor does (``not_a_string``),
    worded for a message after the array's name; None where it holds only str."""
    other = not_a_string(data) if data.dtype.hasobject else None
    if other is None:
        return None
    return (f"holds {type(other[1]).__name__} {repr(other[1])[:40]} at {list(other[0])}, "
            "where a STRING tensor holds only str")


def _immutable(array: np.ndarray) -> bool:
    """Whether nothing can write the array's memory, nor make it writeable: it and every array
    it views are read-only, down to an immutable ``bytes`` (the importer's, over raw_data) or
    a ``_SealedObjects``. A read-only array owning its memory is not (its
    ``flags.writeable = True`` succeeds), nor a read-only view of a writeable array
    (``np.broadcast_to(a, ...)``): kept as they were, a write changed a constant or an
    attribute under the graph, behind its version and the plans cached from it."""
    base: object = array
    while isinstance(base, np.ndarray):
        if base.flags.writeable:
            return False
        base = base.base
    kind = type(base)
    return kind is bytes or kind is _SealedObjects


def _values_equal(a: Any, b: Any) -> bool:
    """Equality that treats arrays by dtype, shape and content instead of raising. Floats
    compare by their bits (``same_bits_key``): an attribute of -0.0 is not one of 0.0, and a
    NaN is the same NaN, so equal ops write the same protos."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)):
            return False
        if a.dtype != b.dtype or a.shape != b.shape:
            return False
        if a.dtype.kind in "fcV":  # ml_dtypes' floats are kind V
            return a.tobytes() == b.tobytes()
        return bool(np.array_equal(a, b))
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_values_equal(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and same_bits_key(a) == same_bits_key(b)


def _value_hash(value: Any) -> int:
    if isinstance(value, np.ndarray):
        if value.dtype.hasobject:  # strings: by value (their bytes are pointers)
            return hash((value.dtype.str, value.shape, tuple(value.ravel().tolist())))
        return hash((value.dtype.str, value.shape, value.tobytes()))
    if isinstance(value, tuple):
        return hash(tuple(_value_hash(v) for v in value))
    return hash(same_bits_key(value))


@dataclass(frozen=True, eq=False, init=False, slots=True)
class TensorInfo:
    """What is known about one tensor: dtype, shape and, for constants, its data.

    ``dtype`` is a ``numpy.dtype`` (ml_dtypes for bfloat16 and friends; see ``dmlgraph.dtypes``)
    or None when unknown. ``shape`` is None when even the rank is unknown. ``data``, when set,
    is a read-only array whose dtype and shape fix ``dtype`` and ``shape``.
    """

    name: str
    dtype: np.dtype | None = None
    shape: Shape | None = None
    data: np.ndarray | None = None

    def __init__(
        self,
        name: str,
        dtype: Any = None,
        shape: Iterable[Any] | None = None,
        data: np.ndarray | None = None,
    ) -> None:
        # Written out rather than generated: import makes a thousand of these per model, and a
        # generated frozen __init__ plus __post_init__ cost 2.4-3x this (measured side by
        # side). Values already in normal form (a numpy.dtype, a tuple of plain dims, a
        # read-only ndarray) are kept as they are.
        if type(name) is not str and not isinstance(name, str):  # 5 or None ran until
            raise GraphInvariantError(f"TensorInfo: name {name!r} is not text")  # to_onnx
        if data is None:
            if dtype is not None and not isinstance(dtype, np.dtype):
                dtype = _dtype_of(name, dtype)
            if shape is not None:
                try:
                    shape = _normal_shape(shape)
                except GraphInvariantError as exc:
                    raise GraphInvariantError(f"tensor {name!r}: {exc}") from None
        else:  # the data fixes both; given ones must agree
            # kept as given where it is a read-only ndarray over a ``bytes`` (the importer's,
            # over raw_data: asked first, before ``_immutable``'s walk) or otherwise
            # ``_immutable``; inline, not a call: one is made for every initializer, Constant
            # and fold. Any other is sealed (``frozen_array``): nothing writes a constant
            if (
                type(data) is not np.ndarray
                or data.flags.writeable
                or not (type(data.base) is bytes or _immutable(data))
            ):
                try:
                    data = frozen_array(data)
                except (TypeError, ValueError) as exc:  # ragged lists, objects NumPy refuses
                    raise GraphInvariantError(f"tensor {name!r}: data is no array: {exc}") from None
            if dtype is not None and data.dtype != np.dtype(dtype):
                raise GraphInvariantError(
                    f"tensor {name!r}: data dtype {data.dtype} differs from dtype "
                    f"{np.dtype(dtype)}"
                )
            if shape is not None:
                declared = _normal_shape(shape)
                if not shape_matches(declared, data.shape):
                    raise GraphInvariantError(
                        f"tensor {name!r}: data shape {data.shape} differs from shape "
                        f"{declared}"
                    )
            if data.dtype.hasobject and not_a_string(data) is not None:
                # None or objects ran until the exporter refused them from deep inside
                raise GraphInvariantError(
                    f"tensor {name!r}: data of dtype object holds something other than "
                    "str (ONNX's STRING tensors)"
                )
            dtype, shape = data.dtype, data.shape  # a tuple of Python ints
        _set_name(self, name)
        _set_dtype(self, dtype)
        _set_shape(self, shape)
        _set_data(self, data)

    @property
    def is_constant(self) -> bool:
        return self.data is not None

    @property
    def rank(self) -> int | None:
        return None if self.shape is None else len(self.shape)

    @property
    def is_static(self) -> bool:
        """True when every dimension is a known integer."""
        shape = self.shape
        if shape is None:
            return False
        for d in shape:  # a loop, not all(...): asked thousands of times per lowering
            if type(d) is not int:
                return False
        return True

    @property
    def static_shape(self) -> tuple[int, ...] | None:
        return self.shape if self.is_static else None  # type: ignore[return-value]

    @property
    def size(self) -> int | None:
        static = self.static_shape
        return None if static is None else math.prod(static)

    def replace(self, **changes: Any) -> TensorInfo:
        """``dataclasses.replace``, spelled out: lowering replaces thousands of infos, and the
        generic one reads the fields' metadata every call (2-3x the time)."""
        _check_fields("TensorInfo", changes, _TENSOR_INFO_FIELDS)
        get = changes.get
        return TensorInfo(
            get("name", self.name),
            get("dtype", self.dtype),
            get("shape", self.shape),
            get("data", self.data),
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TensorInfo):
            return NotImplemented
        return (
            self.name == other.name
            and self.dtype == other.dtype
            and self.shape == other.shape
            and (self.data is None) == (other.data is None)
            and (self.data is None or _values_equal(self.data, other.data))
        )

    def __hash__(self) -> int:
        return hash((self.name, self.dtype, self.shape))

    def __reduce__(self) -> tuple[Any, ...]:
        """Unpickled through ``__init__``, which seals the data again: NumPy unpickles an
        array writeable (``copy.deepcopy`` of a graph held writeable constants)."""
        return TensorInfo, (self.name, self.dtype, self.shape, self.data)

    def __copy__(self) -> TensorInfo:
        return self  # immutable, data included: a copy is the same value

    def __deepcopy__(self, memo: dict[int, Any]) -> TensorInfo:
        return self

    def __repr__(self) -> str:
        dims = "?" if self.shape is None else dims_text(self.shape)
        const = " const" if self.data is not None else ""
        return f"TensorInfo({self.name!r}: {self.dtype}{dims}{const})"


#: The slots' own setters: a frozen instance's fields are written through them, 20% faster
#: than ``object.__setattr__`` (which looks the name up on the type first).
_set_name, _set_dtype, _set_shape, _set_data = (
    TensorInfo.__dict__[field].__set__ for field in ("name", "dtype", "shape", "data")
)


def normal_info(name: str, dtype: np.dtype | None, shape: Shape | None) -> TensorInfo:
    """``TensorInfo(name, dtype, shape)`` (no data) of a dtype and shape already in the form
    it keeps them (a ``numpy.dtype`` or None; a tuple of ``Dim`` or None), as another info's
    or ``value_info.described_type``'s are, without normalizing them again: the importer
    builds one for every tensor inference describes (a third of the constructor's cost)."""
    info = _new_info(TensorInfo)
    _set_name(info, name)
    _set_dtype(info, dtype)
    _set_shape(info, shape)
    _set_data(info, None)
    return info


_new_info = object.__new__


def dims_text(shape: Sequence[Any] | None) -> str:
    """``[1,?,N]``: a shape as messages and pictures show it (``[...]`` when even the rank
    is unknown: ``[?]`` is a rank-1 shape of unknown size)."""
    if shape is None:
        return "[...]"
    return "[" + ",".join("?" if d is None else str(d) for d in shape) + "]"


def _normal_shape(shape: Iterable[Any]) -> Shape:
    """A shape as a tuple of ``Dim``; a tuple of ``Dim`` (non-negative Python ints, strs,
    None) is returned as is."""
    if type(shape) is tuple:
        for d in shape:  # sizes, names and None: a dynamic shape is kept as it is too
            kind = type(d)
            if kind is int:
                if d < 0:
                    break
            elif kind is not str and d is not None:
                break
        else:
            return shape
    if isinstance(shape, (str, bytes)) or not isinstance(shape, Iterable):
        # a string iterated into one-character names printed as sizes: "1122" read [1,1,2,2]
        raise GraphInvariantError(f"shape {shape!r} is not a sequence of dimensions")
    return tuple(_dim(d) for d in shape)


def _dtype_of(name: str, dtype: Any) -> np.dtype:
    try:
        return np.dtype(dtype)
    except TypeError as exc:
        raise GraphInvariantError(f"tensor {name!r}: dtype {dtype!r} is not one: {exc}") from None


def _dim(d: Any) -> Dim:
    if d is None or isinstance(d, str):
        return d
    if isinstance(d, (int, np.integer)) and not isinstance(d, bool) and int(d) >= 0:
        return int(d)
    raise GraphInvariantError(f"dimension {d!r} is not a non-negative int, a name or None")


def shape_matches(shape: Shape, concrete: Sequence[int]) -> bool:
    """Whether a concrete shape has ``shape``'s rank and each of its fixed sizes (a named or
    unknown dimension matches any size). A loop: folding asks for every node it folds."""
    if len(shape) != len(concrete):
        return False
    for d, c in zip(shape, concrete):
        if isinstance(d, int) and d != c:
            return False
    return True


@dataclass(frozen=True, slots=True)
class Subgraph:
    """A control-flow op's subgraph attribute (If's branches, Loop's and Scan's body), held
    whole and run by the fallback with its node: ``data`` is the serialized GraphProto,
    ``outer`` the tensors of the enclosing graph it reads by name (first use first; its
    node's implicit inputs, ``implicit_inputs``) and ``ops`` the op types of its nodes,
    nested subgraphs' included (reports say which Slice/Concat/Pad it holds). Equal and
    hashed by its bytes."""

    data: bytes
    outer: tuple[str, ...]
    ops: tuple[str, ...]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Subgraph) and self.data == other.data

    def __hash__(self) -> int:
        return hash(self.data)

    def __repr__(self) -> str:
        return f"Subgraph({len(self.ops)} nodes, reads {list(self.outer)})"


def subgraphs(op: Any) -> tuple[Subgraph, ...]:
    """The subgraphs an op holds (none but for control flow), in attribute order."""
    if not isinstance(op, OnnxOp) or not op.holds_subgraphs:
        return ()
    found: list[Subgraph] = []
    for value in op.attrs.values():
        if isinstance(value, Subgraph):
            found.append(value)
        elif isinstance(value, tuple):
            found += [v for v in value if isinstance(v, Subgraph)]
    return tuple(found)


def implicit_inputs(op: Any) -> tuple[str, ...]:
    """The enclosing graph's tensors an op's subgraphs read by name: its node lists them after
    the explicit inputs (``Node.inputs``), so the graph orders, keeps alive and hands them
    over as any input; ONNX protos leave them out (``exporter.node_proto``)."""
    return tuple(dict.fromkeys(name for sub in subgraphs(op) for name in sub.outer))


def split_inputs(node: Node) -> tuple[tuple[str, ...], dict[str, str]]:
    """A control-flow node's explicit inputs, and the enclosing tensors its subgraphs read
    (``implicit_inputs``) by the names they read them by, each to what the node's input is
    called now: a pass may have renamed one (an eliminated Slice's output read as its input)."""
    implicit = implicit_inputs(node.op)
    explicit = len(node.inputs) - len(implicit)
    return tuple(node.inputs[:explicit]), dict(zip(implicit, node.inputs[explicit:]))


class Attributes(Mapping[str, Any]):
    """An immutable, hashable attribute mapping with a fixed (sorted) key order.

    Values are ints, floats, strs, bytes, read-only arrays (ONNX TENSOR attributes) or tuples
    of those; equality compares arrays by dtype, shape and content.
    """

    __slots__ = ("_items", "holds_subgraphs")

    def __init__(self, items: Mapping[str, Any] | Iterable[tuple[str, Any]] = ()) -> None:
        # a dict first: the importer's, for every node (an ABC check costs more)
        if type(items) is dict or isinstance(items, Mapping):
            pairs: Iterable[Any] = items.items()
        elif isinstance(items, Iterable) and not isinstance(items, (str, bytes)):
            pairs = items
        else:
            raise GraphInvariantError(
                f"attributes {items!r} are not a mapping of names to values"
            )
        try:
            # a str name with an int, float, str or bytes is kept as it is, inline (no call):
            # most of the importer's attributes, whose every kept node makes one of these
            frozen = [
                (k, v) if type(k) is str and type(v) in _ATOMIC_VALUES
                else (_attribute_name(k), _freeze_value(v, k))
                for k, v in pairs
            ]
        except (TypeError, ValueError):  # an item that is no (name, value) pair
            raise GraphInvariantError(
                f"attributes {items!r} are not a mapping of names to values"
            ) from None
        frozen.sort(key=_first)
        self._items: tuple[tuple[str, Any], ...] = tuple(frozen)
        #: whether a value is a ``Subgraph`` (or a tuple of them): asked of every node, once
        self.holds_subgraphs = False
        for _, value in frozen:
            kind = type(value)
            if kind is Subgraph or (kind is tuple and value and type(value[0]) is Subgraph):
                self.holds_subgraphs = True
                break

    def __getitem__(self, key: str) -> Any:
        for k, v in self._items:
            if k == key:
                return v
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return (k for k, _ in self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Attributes):
            return NotImplemented
        return len(self._items) == len(other._items) and all(
            ka == kb and _values_equal(va, vb)
            for (ka, va), (kb, vb) in zip(self._items, other._items)
        )

    def __hash__(self) -> int:
        return hash(tuple((k, _value_hash(v)) for k, v in self._items))

    def __reduce__(self) -> tuple[Any, ...]:
        """Unpickled through ``__init__``, which seals arrays again (``TensorInfo``'s)."""
        return Attributes, (self._items,)

    def __copy__(self) -> Attributes:
        return self  # immutable, arrays included

    def __deepcopy__(self, memo: dict[int, Any]) -> Attributes:
        return self

    def __repr__(self) -> str:
        return "Attributes(" + ", ".join(f"{k}={v!r}" for k, v in self._items) + ")"


#: Attribute values kept as they are (most attributes are one of these).
_ATOMIC_VALUES = frozenset({int, float, str, bytes})
_first = operator.itemgetter(0)


def _attribute_name(key: Any) -> str:
    if type(key) is str:
        return key
    if isinstance(key, str):  # NumPy's strings
        return str(key)
    raise GraphInvariantError(f"attribute name {key!r} is not text")  # 1 was made '1'


def _freeze_value(value: Any, key: str, nested: bool = False) -> Any:
    """An attribute value as ``Attributes`` holds it: an int, float, str, bytes, bool,
    read-only array or ``Subgraph``, or a tuple of those (ONNX's lists, which nest no
    further). Anything else (a dict or set met "unhashable type" in lowering, a nested
    list onnx's AssertionError) is refused, naming the attribute."""
    kind = type(value)
    if kind in _ATOMIC_VALUES:
        return value
    if kind is tuple and not nested:  # ints/floats attributes, as the importer reads them
        for v in value:  # a loop, not all(...): a generator costs more than most tuples
            if type(v) not in _ATOMIC_VALUES:
                return tuple(_freeze_value(v, key, True) for v in value)
        return value
    if isinstance(value, np.ndarray):
        return frozen_array(value)
    if isinstance(value, (list, tuple)) and not nested:
        return tuple(_freeze_value(v, key, True) for v in value)
    if isinstance(value, np.generic):  # a NaN float32 as it is: .item() would quiet a
        return value if value != value else value.item()  # signalling one (wire_floats)
    if kind is bool or kind is Subgraph:
        return value
    raise GraphInvariantError(
        f"attribute {key!r}: {value!r} is not a value ONNX attributes hold (an int, float, "
        "str, bytes, array or subgraph, or a list of one kind of those)"
    )


#: ``OnnxOp``'s attrs when none are given (each op gets an empty ``Attributes`` of its own).
_NO_ATTRIBUTES: Any = object()


@dataclass(frozen=True, slots=True, init=False)
class OnnxOp:
    """An ONNX operator as the IR holds it.

    For Slice, Concat and Pad ``since_version`` is the canonical form's version (the newest
    supported, see ``dmlgraph.canonical``) whatever version the model used; every other op keeps
    the since_version its model resolved to, with its attributes unchanged.
    """

    op_type: str
    since_version: int
    domain: str = ""
    attrs: Mapping[str, Any] = field(default_factory=Attributes)  # stored as Attributes

    def __init__(
        self,
        op_type: str,
        since_version: int,
        domain: str = "",
        attrs: Mapping[str, Any] | Iterable[tuple[str, Any]] = _NO_ATTRIBUTES,
    ) -> None:
        # written out, through the slots' setters (as ``TensorInfo``'s): import makes one for
        # every node it keeps, and the generated frozen __init__ with a __post_init__ costs
        # more than the checks
        if type(op_type) is not str or not op_type:
            raise GraphInvariantError(f"OnnxOp: op_type {op_type!r} is not an op's name")
        if type(domain) is not str:
            raise GraphInvariantError(f"OnnxOp {op_type}: domain {domain!r} is not text")
        if type(since_version) is not int:  # "14", 14.5, True or None ran as whatever they read
            if not is_integer(since_version):
                raise GraphInvariantError(
                    f"OnnxOp {op_type}: since_version {since_version!r} is not an integer"
                )
            since_version = int(since_version)
        if not 1 <= since_version <= INT64_MAX:
            raise GraphInvariantError(
                f"OnnxOp {op_type}: since_version {since_version} is not an opset "
                "version (1 to 2^63 - 1)"
            )
        _set_op_type(self, op_type)
        _set_op_version(self, since_version)
        _set_op_domain(self, domain)
        if attrs is _NO_ATTRIBUTES:
            attrs = Attributes()
        elif type(attrs) is dict or not isinstance(attrs, Attributes):
            # a dict first: the importer's, for every node (an isinstance of an ABC subclass
            # takes three calls)
            attrs = Attributes(attrs)
        _set_op_attrs(self, attrs)

    @property
    def name(self) -> str:
        return self.op_type if not self.domain else f"{self.domain}::{self.op_type}"

    @property
    def holds_subgraphs(self) -> bool:
        """Whether an attribute is a ``Subgraph`` (control flow)."""
        return self.attrs.holds_subgraphs  # type: ignore[attr-defined, no-any-return]


_set_op_type, _set_op_version, _set_op_domain, _set_op_attrs = (
    OnnxOp.__dict__[field].__set__ for field in ("op_type", "since_version", "domain", "attrs")
)


@dataclass(frozen=True, slots=True, init=False)
class Provenance:
    """Where a node came from: the ONNX node's name, op type, domain and since_version."""

    name: str
    op_type: str
    domain: str = ""
    since_version: int = 0

    def __init__(
        self, name: str, op_type: str, domain: str = "", since_version: int = 0
    ) -> None:
        # written out, through the slots' setters (as ``TensorInfo``'s): import makes one
        # for every node of the model, and the generated frozen __init__ costs 1.7x this
        if not (
            type(name) is str and type(op_type) is str and type(domain) is str
            and type(since_version) is int  # the importer's, for every node: exact types first
        ):
            _check_provenance_fields(name, op_type, domain, since_version)
        _set_prov_name(self, name)
        _set_prov_op_type(self, op_type)
        _set_prov_domain(self, domain)
        _set_prov_version(self, since_version)


_set_prov_name, _set_prov_op_type, _set_prov_domain, _set_prov_version = (
    Provenance.__dict__[field].__set__ for field in ("name", "op_type", "domain", "since_version")
)


@dataclass(frozen=True, slots=True, init=False)
class RemovedNode:
    """An ONNX node that left the graph before lowering (folded to constants, or dead), kept
    so a report can still account for every node of the model."""

    provenance: Provenance
    status: str  # "folded" or "eliminated"
    note: str

    def __init__(self, provenance: Provenance, status: str, note: str) -> None:
        # written out, as ``Provenance``'s: import makes one for every node it folds
        _set_removed_provenance(self, provenance)
        _set_removed_status(self, status)
        _set_removed_note(self, note)


_set_removed_provenance, _set_removed_status, _set_removed_note = (
    RemovedNode.__dict__[field].__set__ for field in ("provenance", "status", "note")
)


#: ``Node``'s notes when none are given (each node gets an empty list of its own).
_NO_NOTES: Any = object()


@dataclass(frozen=True, eq=False, slots=True, init=False)
class Node:
    """One operation. Immutable except ``notes``; change ports through ``Graph`` methods."""

    id: NodeId
    op: Any
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    provenance: Provenance
    notes: list[str] = field(default_factory=list)

    def __init__(
        self,
        id: NodeId,  # noqa: A002  (the field's name)
        op: Any,
        inputs: tuple[str, ...],
        outputs: tuple[str, ...],
        provenance: Provenance,
        notes: list[str] = _NO_NOTES,
    ) -> None:
        # written out, as ``Provenance``'s: every node added or replaced makes one
        _set_node_id(self, id)
        _set_node_op(self, op)
        _set_node_inputs(self, inputs)
        _set_node_outputs(self, outputs)
        _set_node_provenance(self, provenance)
        _set_node_notes(self, [] if notes is _NO_NOTES else notes)

    @property
    def name(self) -> str:
        return self.provenance.name

    @property
    def op_type(self) -> str:
        """The ONNX op type, or the descriptor's class name for a non-ONNX op."""
        op = self.op  # the exact type first: asked thousands of times per model
        return op.op_type if type(op) is OnnxOp or isinstance(op, OnnxOp) else type(op).__name__

    @property
    def is_onnx(self) -> bool:
        return type(self.op) is OnnxOp or isinstance(self.op, OnnxOp)

    @property
    def label(self) -> str:
        """How messages name this node: its ONNX name and op type, or its DirectML operator
        (``DML_OPERATOR_PADDING1``) once lowered; an unnamed one by the first tensor it makes
        (names are unique; "node '' (Shape)" told two Shapes apart by nothing)."""
        kind = self.op_type if isinstance(self.op, OnnxOp) else getattr(self.op, "name", None)
        op = kind if isinstance(kind, str) else self.op_type
        if self.name:
            return f"node {self.name!r} ({op})"
        made = next((out for out in self.outputs if out), "")
        return f"unnamed node making {made!r} ({op})" if made else f"unnamed node ({op})"

    def input(self, port: int) -> str:
        """The tensor at an input port, ``""`` when the port is absent or omitted."""
        return self.inputs[port] if port < len(self.inputs) else ""


(
    _set_node_id,
    _set_node_op,
    _set_node_inputs,
    _set_node_outputs,
    _set_node_provenance,
    _set_node_notes,
) = (
    Node.__dict__[field].__set__
    for field in ("id", "op", "inputs", "outputs", "provenance", "notes")
)


class TensorNames(list[str]):
    """A list of tensor names (a graph's inputs or outputs) whose ``in`` is a set look-up.
    The IR asks whether a tensor is a graph input or output for every node it adds or folds:
    a list's scan made a graph of thousands of inputs load in quadratic time (8,000 inputs:
    0.9 s of 1.2). Every mutator drops the set, so the list stays the one source of truth."""

    __slots__ = ("_members",)

    def __init__(self, names: Iterable[str] = ()) -> None:
        super().__init__(names)
        self._members: frozenset[str] | None = None

    def __contains__(self, name: object) -> bool:
        members = self._members
        if members is None:
            members = self._members = frozenset(self)
        try:
            return name in members
        except TypeError:  # an unhashable value is no name
            return super().__contains__(name)


def _dropping_members(method: Any) -> Any:
    def mutate(self: TensorNames, *args: Any) -> Any:
        self._members = None
        return method(self, *args)

    mutate.__name__ = method.__name__
    mutate.__doc__ = method.__doc__
    return mutate


for _name in (
    "append", "extend", "insert", "remove", "pop", "clear",
    "__setitem__", "__delitem__", "__iadd__", "__imul__",
):
    setattr(TensorNames, _name, _dropping_members(getattr(list, _name)))
del _name


class Graph:
    """The IR of one model. See the module docstring for the invariants ``validate`` checks."""

    def __init__(
        self,
        name: str = "main",
        *,
        opset_imports: Mapping[str, int] | None = None,
        ir_version: int = 8,
        source: str = "<graph>",
    ) -> None:
        _check_graph_fields(name, opset_imports, ir_version, source)
        self.name = name
        #: domain -> opset version, as the model imported them ("" is the default domain).
        self.opset_imports: dict[str, int] = {
            domain: int(version) for domain, version in (opset_imports or {}).items()
        }
        self.ir_version = int(ir_version)
        #: Where the graph came from (a path, "<bytes>", ...): error messages start with it.
        self.source = source
        #: Model-level ONNX fields kept for to_onnx: producer_name, doc_string, metadata_props...
        self.model_info: dict[str, Any] = {}
        self._inputs = TensorNames()
        self._outputs = TensorNames()
        #: Initializers the model also lists as graph inputs: from IR version 4, ONNX makes
        #: them defaults a feed may override (onnxruntime does); dmlgraph folds them as the
        #: constants they hold, so they are not in ``inputs`` and take no feed.
        self.initializer_inputs: tuple[str, ...] = ()
        #: The names of the constants the model itself gave, as the importer read them: its
        #: initializers and its Constant nodes' outputs (onnxruntime makes those initializers),
        #: not what folding made constant; None where not recorded (a graph built otherwise).
        #: onnxruntime's inference of the model knows the values of these alone (a Loop of no
        #: iteration, ``backends.numpy.control``). Never changed once imported: shared.
        self.given_constants: Collection[str] | None = None
        self._tensors: dict[str, TensorInfo] = {}
        # the one read-only view of it ``tensors`` hands out: the importer and lowering ask
        # for it thousands of times a model, and a new view each time cost 0.2 µs apiece.
        # ``_tensors`` is never rebound (``copy`` fills its own; unpickling makes the view
        # again: ``__setstate__``), so the view always shows this graph's tensors
        self._tensors_view: Mapping[str, TensorInfo] = MappingProxyType(self._tensors)
        self._nx: nx.MultiDiGraph = nx.MultiDiGraph()
        #: id -> Node, in id order: the same nodes as the networkx graph's "node" attributes,
        #: kept apart because networkx's views cost microseconds per look-up.
        self._nodes: dict[NodeId, Node] = {}
        self._producer: dict[str, NodeId] = {}
        self._consumers: dict[str, dict[tuple[NodeId, int], None]] = {}
        self._next_id = 0
        #: names the model uses that are not (yet) tensors here: a later node's output, or
        #: a name defined inside a subgraph; ``unique_name`` avoids them (``reserve_names``)
        self._reserved: set[str] = set()
        self._version = 0
        # the topological order's node ids, by the count of node and edge changes it is of
        self._order: tuple[int, tuple[NodeId, ...]] | None = None
        self._structure = 0  # counts changes to nodes and edges (not to ops or tensor infos)
        # the version and graph inputs and outputs at which folding last reached its fixed
        # point (``mark_folded``); None: never, or not known
        self._folded: tuple[int, tuple[str, ...], tuple[str, ...]] | None = None
        # once ``track_edits`` says the tensor infos are inference's (``load`` ends with it),
        # an edit marks the infos it may have made wrong (``stale_tensors``), which the next
        # whole-graph inference (``folding.infer_shapes``, as ``lower`` runs it) derives anew
        self._tracking = False
        self._stale: set[str] = set()
        #: Nodes removed by folding, in removal order (see ``RemovedNode``).
        self.removed: list[RemovedNode] = []
        #: Graph outputs whose shape took a size or a name from the model's declaration, not
        #: from their node (the importer's ``_with_declared_shape``): nothing checks those at
        #: run time, so folding trusts no size of them (``folding.PartialShapes``).
        self.declared_sizes: set[str] = set()

    @property
    def inputs(self) -> TensorNames:
        """The graph inputs' tensor names, in order (a list; ``in`` is a set look-up)."""
        return self._inputs

    @inputs.setter
    def inputs(self, names: Iterable[str]) -> None:
        self._inputs = TensorNames(_names(f"{self.source}: graph inputs", names))

    @property
    def outputs(self) -> TensorNames:
        """The graph outputs' tensor names, in order (a list; ``in`` is a set look-up)."""
        return self._outputs

    @outputs.setter
    def outputs(self, names: Iterable[str]) -> None:
        self._outputs = TensorNames(_names(f"{self.source}: graph outputs", names))

    # ---------------------------------------------------------------- tensors
    @property
    def tensors(self) -> Mapping[str, TensorInfo]:
        """Read-only view of the tensor registry, in insertion order."""
        return self._tensors_view

    def tensor(self, name: str) -> TensorInfo:
        try:
            return self._tensors[name]
        except KeyError:
            raise GraphInvariantError(f"{self.source}: no tensor named {name!r}") from None

    def set_tensor(self, info: TensorInfo) -> TensorInfo:
        """Add or replace a tensor's info. A tensor that a node produces cannot become constant."""
        if type(info) is not TensorInfo and not isinstance(info, TensorInfo):
            raise GraphInvariantError(
                f"{self.source}: set_tensor takes a TensorInfo (TensorInfo(name, dtype, shape, "
                f"data)), not {type(info).__name__}"
            )
        if info.data is not None and info.name in self._producer:
            node = self.node(self._producer[info.name])
            raise GraphInvariantError(
                f"{self.source}: tensor {info.name!r} is produced by {node.label}; "
                "remove the node before making the tensor a constant"
            )
        if self._tracking:
            old = self._tensors.get(info.name)
            if old is not None and old != info:  # what its readers made of it may change
                self._stale.update(
                    out
                    for node_id, _ in self._consumers.get(info.name, {})
                    for out in self._nodes[node_id].outputs
                )
        self._tensors[info.name] = info
        self._version += 1
        return info

    def update_tensor(self, name: str, **changes: Any) -> TensorInfo:
        return self.set_tensor(self.tensor(name).replace(**changes))

    def name_taken(self, name: str) -> bool:
        """Whether a tensor has the name, or the model uses it elsewhere (``reserve_names``):
        what every name dmlgraph invents must avoid."""
        return name in self._tensors or name in self._reserved

    def unique_name(self, base: str) -> str:
        """``base`` if no tensor has that name (nor a reserved one), else ``base_1``,
        ``base_2``..."""
        taken, reserved = self._tensors, self._reserved
        if base not in taken and base not in reserved:
            return base
        k = 1
        while f"{base}_{k}" in taken or f"{base}_{k}" in reserved:
            k += 1
        return f"{base}_{k}"

    def reserve_names(self, names: Iterable[str]) -> None:
        """Names ``unique_name`` must not give though no tensor has them yet: the importer
        invents a canonical Slice's or Pad's constants (``sl:starts``) before it meets a
        later node's output of that name (onnxruntime runs such a model; the graph had a
        cycle), and a subgraph may define one (onnxruntime refused the segment holding both:
        "Graph must be in single static assignment (SSA) form")."""
        self._reserved.update(names)

    def add_constant(self, base_name: str, value: Any, dtype: Any = None) -> str:
        """Register a new constant under a fresh name derived from ``base_name``; returns it."""
        if not isinstance(base_name, str):
            raise GraphInvariantError(
                f"{self.source}: add_constant: name {base_name!r} is not text"
            )
        name = self.unique_name(base_name)
        if dtype is not None:
            dtype = _dtype_of(name, dtype)
        try:
            data = frozen_array(value, dtype)
        except (TypeError, ValueError) as exc:  # ragged lists, values the dtype cannot hold
            raise GraphInvariantError(
                f"{self.source}: constant {name!r}: data is no array: {exc}"
            ) from None
        self.set_tensor(TensorInfo(name, data=data))
        return name

    def constant(self, name: str) -> np.ndarray | None:
        """The data of a constant tensor, None for "" or any non-constant tensor."""
        info = self._tensors.get(name) if name else None
        return None if info is None else info.data

    def is_constant(self, name: str) -> bool:
        info = self._tensors.get(name) if name else None  # ``constant``'s, inline: a call less
        return info is not None and info.data is not None

    @property
    def constants(self) -> list[str]:
        """Names of constant tensors (the initializers), in registry order."""
        return [n for n, info in self._tensors.items() if info.data is not None]

    # ---------------------------------------------------------------- nodes
    @property
    def nx(self) -> nx.MultiDiGraph:
        """The underlying networkx graph. Read it freely; change it only through Graph methods.

        Nodes are NodeIds with attribute ``node`` (the Node); an edge producer -> consumer has
        key = consumer input port and attributes ``tensor`` and ``src_port``.
        """
        return self._nx

    def node(self, node_id: NodeId) -> Node:
        try:
            return self._nodes[node_id]
        except KeyError:
            raise GraphInvariantError(f"{self.source}: no node with id {node_id!r}") from None

    @property
    def nodes(self) -> list[Node]:
        """All nodes in id (insertion) order."""
        return list(self._nodes.values())  # ids are handed out increasing, kept in order

    def __len__(self) -> int:
        return len(self._nodes)

    def topological_order(self) -> list[Node]:
        """Nodes so that producers precede consumers; ties broken by id, so it is deterministic.

        Kahn's algorithm with the ready nodes in a heap (networkx's lexicographical order),
        cached until a node or an edge changes: folding and lowering ask for it many times,
        and most of their changes are to ops and tensor infos, which leave the order be."""
        nodes = self._nodes
        cached = self._order
        if cached is not None and cached[0] == self._structure:
            return [nodes[i] for i in cached[1]]
        adjacency = _adjacency(self._nx)
        pred, succ = adjacency._pred, adjacency._succ
        # Where every edge runs from a lower id to a higher one (as a model's nodes are
        # numbered, until a rewrite reads a newer node), the ids ascending are that order:
        # the lowest id left has all its producers out already, so the heap would pop it
        # next. One pass over the edges instead of the heap (a third of the time).
        for n, successors in succ.items():
            for successor in successors:
                if successor <= n:
                    break
            else:
                continue
            break
        else:
            ascending = tuple(sorted(succ))
            self._order = (self._structure, ascending)
            return [nodes[i] for i in ascending]
        indegree = {n: sum(len(keys) for keys in pred[n].values()) for n in pred}
        ready = [n for n, d in indegree.items() if d == 0]
        heapq.heapify(ready)
        order: list[NodeId] = []
        while ready:
            n = heapq.heappop(ready)
            order.append(n)
            for successor, keys in succ[n].items():
                indegree[successor] -= len(keys)
                if indegree[successor] == 0:
                    heapq.heappush(ready, successor)
        if len(order) != len(indegree):
            raise GraphInvariantError(f"{self.source}: the graph has a cycle")
        self._order = (self._structure, tuple(order))
        return [nodes[i] for i in order]

    def find_nodes(self, op_type: str | None = None, name: str | None = None) -> list[Node]:
        """Nodes with the given op type and/or provenance name, in id order."""
        return [
            n
            for n in self.nodes
            if (op_type is None or n.op_type == op_type) and (name is None or n.name == name)
        ]

    def producer(self, tensor: str) -> Node | None:
        node_id = self._producer.get(tensor)
        return None if node_id is None else self.node(node_id)

    def consumers(self, tensor: str) -> list[tuple[Node, int]]:
        """(node, input port) pairs that read ``tensor``, ordered by node id then port."""
        return [(self.node(i), port) for i, port in sorted(self._consumers.get(tensor, {}))]

    def consumer_count(self, tensor: str) -> int:
        """``len(consumers(tensor))`` without building and sorting the list: asked per reader
        of a tensor, that was quadratic in its readers."""
        return len(self._consumers.get(tensor, ()))

    def add_node(
        self,
        op: Any,
        inputs: Sequence[str],
        outputs: Sequence[str],
        provenance: Provenance,
        notes: Iterable[str] = (),
    ) -> Node:
        """Add a node; unknown output tensors are registered with nothing known about them."""
        where = f"{self.source}: add_node"
        _check_node_fields(where, op, provenance, notes)
        node = Node(
            self._next_id,
            op,
            _names(f"{where}: inputs", inputs),
            _names(f"{where}: outputs", outputs),
            provenance,
            list(notes),
        )
        for out in node.outputs:
            self._check_new_output(node, out)
        self._next_id += 1
        for out in node.outputs:
            if out not in self._tensors:
                self._tensors[out] = TensorInfo(out)
        if self._tracking:  # a tensor it now makes may have been known as another's
            self._stale.update(out for out in node.outputs if out)
        _nx_add_node(self._nx, node.id, node)
        self._nodes[node.id] = node
        self._attach(node)
        return node

    def replace_node(self, node_id: NodeId, **changes: Any) -> Node:
        """Replace fields of a node (op, inputs, outputs, provenance, notes); keeps its id."""
        old = self.node(node_id)
        _check_fields("Node", changes, _NODE_FIELDS)
        get = changes.get  # dataclasses.replace, spelled out (see TensorInfo.replace)
        where = f"{self.source}: replace_node"
        _check_node_fields(
            where, get("op", old.op), get("provenance", old.provenance), get("notes", ())
        )
        new = Node(
            get("id", old.id),
            get("op", old.op),
            # any sequence, held as add_node holds it
            _names(f"{where}: inputs", get("inputs", old.inputs)),
            _names(f"{where}: outputs", get("outputs", old.outputs)),
            get("provenance", old.provenance),
            get("notes", old.notes),
        )
        if new.id != old.id:
            raise GraphInvariantError(f"{self.source}: replace_node cannot change a node's id")
        if self._tracking and (
            new.op != old.op or new.inputs != old.inputs or new.outputs != old.outputs
        ):
            self._stale.update(out for out in new.outputs if out)
        if new.outputs == old.outputs:  # a new op, or inputs rewired: only those ports change
            self._version += 1
            _adjacency(self._nx)._node[node_id]["node"] = new
            self._nodes[node_id] = new
            before_all, after_all = old.inputs, new.inputs
            if before_all != after_all:
                self._structure += 1
                count_before, count_after = len(before_all), len(after_all)
                for port in range(max(count_before, count_after)):
                    before = before_all[port] if port < count_before else ""
                    after = after_all[port] if port < count_after else ""
                    if before != after:
                        if before:
                            self._detach_port(node_id, port, before)
                        if after:
                            self._attach_port(node_id, port, after)
            return new
        self._detach(old)
        try:
            for out in new.outputs:
                self._check_new_output(new, out)
        except GraphInvariantError:
            self._attach(old)
            raise
        for out in new.outputs:
            if out not in self._tensors:
                self._tensors[out] = TensorInfo(out)
        _adjacency(self._nx)._node[node_id]["node"] = new
        self._nodes[node_id] = new
        self._attach(new)
        return new

    def set_input(self, node_id: NodeId, port: int, tensor: str) -> Node:
        """Point one input port at another tensor ("" omits it); pads absent ports with ""."""
        node = self.node(node_id)
        if not is_integer(port) or port < 0:
            raise GraphInvariantError(  # -1 was Python's last item: another port, silently
                f"{self.source}: {node.label}: input port {port!r} is not an int from 0"
            )
        port = int(port)
        if not isinstance(tensor, str):
            raise GraphInvariantError(
                f"{self.source}: {node.label}: input {tensor!r} is not a tensor name"
            )
        inputs = list(node.inputs) + [""] * max(0, port + 1 - len(node.inputs))
        inputs[port] = tensor
        while inputs and inputs[-1] == "":
            inputs.pop()
        return self.replace_node(node_id, inputs=tuple(inputs))

    def remove_node(self, node_id: NodeId) -> Node:
        """Remove a node. Its output tensors stay registered (see ``prune_tensors``)."""
        node = self.node(node_id)
        self._detach(node)
        self._nx.remove_node(node_id)
        del self._nodes[node_id]
        return node

    def replace_uses(self, old: str, new: str) -> None:
        """Make every consumer and graph output that reads tensor ``old`` read ``new``."""
        for node, port in self.consumers(old):
            self.set_input(node.id, port, new)
        self.outputs = [new if o == old else o for o in self.outputs]

    def remove_dead_nodes(self) -> list[Node]:
        """Remove nodes none of whose outputs is read by a node or is a graph output."""
        removed: list[Node] = []
        live_outputs = set(self.outputs)
        consumers = self._consumers
        for node in reversed(self.topological_order()):
            for o in node.outputs:  # a loop: a generator's every item is a call
                if o and (o in live_outputs or consumers.get(o)):
                    break
            else:
                removed.append(self.remove_node(node.id))
        return removed[::-1]

    def prune_tensors(self) -> list[str]:
        """Drop registry entries no node, graph input or graph output refers to."""
        used = set(self.inputs) | set(self.outputs) | set(self._producer)
        used.update([t for t, readers in self._consumers.items() if readers])  # (no generator)
        dropped = [name for name in self._tensors if name not in used]
        for name in dropped:
            del self._tensors[name]
        return dropped

    def _check_new_output(self, node: Node, out: str) -> None:
        if not out:
            return
        other = self._producer.get(out)
        if other is not None and other != node.id:
            raise GraphInvariantError(
                f"{self.source}: tensor {out!r} of {node.label} is already produced by "
                f"{self.node(other).label}"
            )
        info = self._tensors.get(out)
        if info is not None and info.data is not None:
            raise GraphInvariantError(
                f"{self.source}: {node.label} cannot produce constant {out!r}"
            )
        if out in self.inputs:
            raise GraphInvariantError(
                f"{self.source}: {node.label} cannot produce graph input {out!r}"
            )

    def track_edits(self, on: bool = True) -> None:
        """Say whether edits from now on mark the tensor infos they may make wrong: on where
        the infos are inference's (a loaded graph), so that a node rewired to a tensor of
        another shape does not leave its readers lowered for the old one."""
        self._tracking = on

    @property
    def tracks_edits(self) -> bool:
        return self._tracking

    @contextmanager
    def untracked(self) -> Iterator[None]:
        """Edits that keep every value (folding, canonical forms) mark nothing stale."""
        tracking, self._tracking = self._tracking, False
        try:
            yield
        finally:
            self._tracking = tracking

    def stale_tensors(self) -> set[str]:
        """The tensors whose recorded info an edit since the last inference may have made
        wrong: the outputs of the nodes edited, or reading a tensor whose info changed, and of
        every node downstream of them."""
        if not self._stale:
            return set()
        found: set[str] = set()
        todo = list(self._stale)
        while todo:
            name = todo.pop()
            if name in found or name not in self._producer:
                continue
            found.add(name)
            for node_id, _ in self._consumers.get(name, {}):
                todo.extend(out for out in self._nodes[node_id].outputs if out)
        return found

    def clear_stale(self) -> None:
        """Say that the tensor infos follow from the graph as it is (inference has run)."""
        self._stale.clear()

    def mark_folded(self) -> None:
        """Say that folding has reached its fixed point on the graph as it is now: nothing in
        it is computable from constants that folding would compute."""
        self._folded = (self._version, tuple(self.inputs), tuple(self.outputs))

    @property
    def is_folded(self) -> bool:
        """Whether ``mark_folded`` was said of the graph as it is now: no node or tensor info
        changed since, nor the graph's inputs or outputs (a node computing a graph output is
        not folded, so dropping an output can make it foldable)."""
        return self._folded == (self._version, tuple(self.inputs), tuple(self.outputs))

    @property
    def version(self) -> int:
        """Counts changes to nodes and tensor infos, so caches of things built from the graph
        can tell they are stale without walking it (graph I/O lists are compared apart)."""
        return self._version

    def _attach(self, node: Node) -> None:
        self._version += 1
        self._structure += 1
        for src_port, out in enumerate(node.outputs):
            if not out:
                continue
            self._producer[out] = node.id
            if out in self._consumers:  # (no ``get``: a call an output)
                for consumer, port in self._consumers[out]:
                    _nx_add_edge(self._nx, node.id, consumer, port, out, src_port)
        self._attach_inputs(node)

    def _attach_inputs(self, node: Node) -> None:
        for port, name in enumerate(node.inputs):
            if name:
                self._attach_port(node.id, port, name)

    def _attach_port(self, node_id: NodeId, port: int, name: str) -> None:
        consumers = self._consumers  # (subscripts, not ``get``: a call a port)
        if name in consumers:
            consumers[name][(node_id, port)] = None
        else:
            consumers[name] = {(node_id, port): None}
        if name in self._producer:
            producer = self._producer[name]
            src_port = self._nodes[producer].outputs.index(name)
            _nx_add_edge(self._nx, producer, node_id, port, name, src_port)

    def _detach(self, node: Node) -> None:
        self._version += 1
        self._structure += 1
        self._detach_inputs(node)
        producers, consumers = self._producer, self._consumers  # (subscripts: no calls)
        for out in node.outputs:
            if out and out in producers and producers[out] == node.id:
                del producers[out]
                for consumer, port in consumers[out] if out in consumers else ():
                    _nx_remove_edge(self._nx, node.id, consumer, port)

    def _detach_inputs(self, node: Node) -> None:
        for port, name in enumerate(node.inputs):
            if name:
                self._detach_port(node.id, port, name)

    def _detach_port(self, node_id: NodeId, port: int, name: str) -> None:
        consumers = self._consumers  # (subscripts, not get and pop: a call each, a port)
        if name in consumers:
            readers = consumers[name]
            if (node_id, port) in readers:
                del readers[(node_id, port)]
            if not readers:
                del consumers[name]
        if name in self._producer:
            _nx_remove_edge(self._nx, self._producer[name], node_id, port)

    # ---------------------------------------------------------------- graph I/O
    def add_input(self, info: TensorInfo) -> str:
        """Register a graph input (a tensor without data) at the end of the input list."""
        if not isinstance(info, TensorInfo):
            raise GraphInvariantError(
                f"{self.source}: add_input takes a TensorInfo (TensorInfo(name, dtype, shape)), "
                f"not {type(info).__name__}"
            )
        if info.data is not None:
            raise GraphInvariantError(f"{self.source}: graph input {info.name!r} cannot carry data")
        _check_new_input(self, info.name)
        self.set_tensor(info)
        self.inputs.append(info.name)
        return info.name

    # ---------------------------------------------------------------- whole graph
    def copy(self) -> Graph:
        """An independent copy (tensor infos and ops are immutable and shared; notes are not)."""
        other = Graph(
            self.name,
            opset_imports=self.opset_imports,
            ir_version=self.ir_version,
            source=self.source,
        )
        other.model_info = {  # metadata_props is a dict of its own: copied, not shared
            k: dict(v) if isinstance(v, dict) else v for k, v in self.model_info.items()
        }
        other.initializer_inputs = self.initializer_inputs
        other.given_constants = self.given_constants
        other.declared_sizes = set(self.declared_sizes)
        other.inputs = list(self.inputs)
        other.outputs = list(self.outputs)
        other._tensors.update(self._tensors)  # its own dict, which its view shows
        other._nx = _copy_multidigraph(self._nx)
        nx_nodes = _adjacency(other._nx)._node  # (once, not a call a node)
        for node in self.nodes:
            twin = Node(
                node.id, node.op, node.inputs, node.outputs, node.provenance, list(node.notes)
            )
            nx_nodes[node.id]["node"] = twin
            other._nodes[node.id] = twin
        other._producer = dict(self._producer)
        other._consumers = {t: dict(r) for t, r in self._consumers.items()}
        other._next_id = self._next_id
        other._reserved = self._reserved  # never changed after the import: shared
        other.removed = list(self.removed)
        other._structure, other._order = self._structure, self._order  # the same nodes, edges
        other._tracking, other._stale = self._tracking, set(self._stale)
        return other

    def __getstate__(self) -> dict[str, Any]:
        """Pickled, and deep-copied, without the view of ``_tensors`` (a mappingproxy does
        not pickle: ``pickle.dumps`` and ``copy.deepcopy`` of a graph failed); made again."""
        state = self.__dict__.copy()
        del state["_tensors_view"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._tensors_view = MappingProxyType(self._tensors)

    def __copy__(self) -> Graph:
        """``copy.copy`` is ``copy``: the default shallow copy shared the node and tensor
        tables with its original, so an edit of either changed both while the other's
        version (and with it its fold mark and the backends' cached plans) stood still, and
        the original ran its old plan: the old op, silently."""
        return self.copy()

    def extract(
        self,
        node_ids: Iterable[NodeId],
        outputs: Sequence[str] | None = None,
        *,
        keep_constants: bool = False,
        key: Callable[[NodeId], Any] | None = None,
    ) -> Graph:
        """A new graph of just these nodes: tensors they read from outside become graph inputs
        (without data), and ``outputs`` (default: every output of the nodes) its outputs.
        ``keep_constants``: constants they read stay constants (shared, not copied) instead.
        ``key``: the order the new graph numbers the nodes in (and so lists them, and breaks
        topological ties), by their ids here; default, these ids."""
        chosen = sorted(set(node_ids), key=key)
        sub = Graph(
            f"{self.name}_extract",
            opset_imports=self.opset_imports,
            ir_version=self.ir_version,
            source=self.source,
        )
        produced = {o for i in chosen for o in self.node(i).outputs if o}
        for i in chosen:
            for name in self.node(i).inputs:
                if name and name not in produced and name not in sub._tensors:
                    info = self._tensors[name]
                    if keep_constants and info.data is not None:
                        sub.set_tensor(info)
                    else:
                        sub.add_input(info.replace(data=None))
        for i in chosen:
            node = self.node(i)
            for out in node.outputs:
                if out:
                    sub.set_tensor(self._tensors[out])
            sub.add_node(node.op, node.inputs, node.outputs, node.provenance, node.notes)
        if outputs is None:
            order = {name: k for k, name in enumerate(self._tensors)}
            outputs = sorted(produced, key=order.__getitem__)
        sub.outputs = list(outputs)
        sub._stale = self.stale_tensors() & produced  # what an edit made stale stays so
        sub._tracking = self._tracking
        return sub

    def validate(self) -> None:
        """Check every IR invariant; raise GraphInvariantError listing all that fail."""
        problems: list[str] = []
        names = set(self._tensors)
        for name in self.inputs:
            info = self._tensors.get(name)
            if info is None:
                problems.append(f"graph input {name!r} is not a registered tensor")
            elif info.data is not None:
                problems.append(f"graph input {name!r} carries constant data")
            elif name in self._producer:
                problems.append(f"graph input {name!r} is produced by node {self._producer[name]}")
        if len(set(self.inputs)) != len(self.inputs):
            problems.append(f"graph inputs are listed twice: {self.inputs}")
        producers: dict[str, NodeId] = {}
        tensors = self._tensors
        nx_nodes = _adjacency(self._nx)._node
        nodes_agree = len(nx_nodes) == len(self._nodes)
        for i, node in self._nodes.items() if nodes_agree else ():  # (a generator: calls)
            if i not in nx_nodes or nx_nodes[i].get("node") is not node:
                nodes_agree = False
                break
        if not nodes_agree:
            problems.append("the node index disagrees with the networkx graph's nodes")
        for node in self._nodes.values():
            if not node.outputs:
                problems.append(f"{node.label} has no outputs")
            for out in node.outputs:
                if not out:
                    continue
                if out in producers:
                    problems.append(
                        f"tensor {out!r} is produced by nodes {producers[out]} and {node.id}"
                    )
                producers[out] = node.id
                info = tensors[out] if out in tensors else None
                if info is None:
                    problems.append(f"{node.label}: output {out!r} is not a registered tensor")
                elif info.data is not None:
                    problems.append(f"{node.label}: output {out!r} is a constant")
            for name in node.inputs:
                if name and name not in names:
                    problems.append(f"{node.label}: input {name!r} is not a registered tensor")
            if type(node.provenance) is not Provenance and not isinstance(
                node.provenance, Provenance
            ):
                problems.append(f"node {node.id} has no provenance")
        if producers != self._producer:
            problems.append("the producer index disagrees with the nodes' outputs")
        # Every port must have its consumer entry and its edge; with the counts equal, nothing
        # else can be there (an edge's key is its consumer port). No whole-graph sets are
        # built: it may run after every lowering pass (``verify_each``).
        # (Lookups by subscript, not ``get``: a call each, and this reads every port.)
        pred = _adjacency(self._nx)._pred
        inputs = set(self.inputs)
        consumers = self._consumers
        ports = edges = 0
        consumers_ok = True
        missing: list[tuple[NodeId, NodeId, int, str]] = []
        for node in self._nodes.values():
            for port, name in enumerate(node.inputs):
                if not name:
                    continue
                ports += 1
                if name not in consumers or (node.id, port) not in consumers[name]:
                    consumers_ok = False
                if name in producers:
                    src = producers[name]
                    edges += 1
                    try:  # (a missing edge or attribute: KeyError, as ``get`` gave None)
                        data = pred[node.id][src][port]
                        found = data["tensor"] == name and (
                            data["src_port"] == self._nodes[src].outputs.index(name)
                        )
                    except KeyError:
                        found = False
                    if not found:
                        missing.append((src, node.id, port, name))
                elif name not in inputs and (
                    (info := self._tensors.get(name)) is None or info.data is None
                ):
                    problems.append(
                        f"{node.label}: input {name!r} has no producer and is neither a graph "
                        "input nor a constant"
                    )
        if not consumers_ok or ports != sum(map(len, self._consumers.values())):
            problems.append("the consumer index disagrees with the nodes' inputs")
        extra = _edge_count(self._nx) - (edges - len(missing))
        if missing or extra:
            problems.append(
                f"networkx edges disagree with node ports: missing {missing[:3]}, "
                f"{extra} not matching a port"
            )
        for name in self.outputs:
            if name not in names:
                problems.append(f"graph output {name!r} is not a registered tensor")
            elif (
                name not in producers
                and name not in self.inputs
                and self._tensors[name].data is None
            ):
                problems.append(
                    f"graph output {name!r} has no producer and is neither a graph input nor a "
                    "constant"
                )
        try:
            if nodes_agree:  # the order reads the node index through networkx's ids
                self.topological_order()  # cached while the graph is unchanged
        except GraphInvariantError:
            problems.append("the graph has a cycle")
        if problems:
            raise GraphInvariantError(
                f"{self.source}: IR invariants broken:\n  " + "\n  ".join(problems)
            )

    def to_onnx(self, *, ir_version: int | None = None) -> Any:
        """This graph as an onnx.ModelProto that onnxruntime loads (see dmlgraph.exporter),
        after ``validate``: an edit that broke an invariant (an output no tensor, a node
        reading an unknown tensor) was written out as a model onnxruntime refuses, or raised
        a KeyError."""
        import onnx

        from dmlgraph.exporter import to_onnx

        if ir_version is not None and (
            not is_integer(ir_version) or not 1 <= ir_version <= onnx.IR_VERSION
        ):
            raise GraphInvariantError(
                f"{self.source}: ir_version {ir_version!r} is not an ONNX IR version this onnx "
                f"writes (1 to {onnx.IR_VERSION})"
            )
        self.validate()
        return to_onnx(self._typed(), ir_version=ir_version)

    def _typed(self) -> Graph:
        """The graph, or a copy of it whose stale infos (``stale_tensors``) and unknown
        output types inference derived anew, as ``lower`` derives them. ONNX requires a
        graph output's type: written without one (an output an edit made stale, or a node's
        output in a graph built with this API), onnx's checker, so ``load`` and ``check``,
        refused the model. Where inference fails, the graph as it is (its loader names
        the problem); a Slice, Concat or Pad whose rule an edit, or the builder of a graph
        whose infos it left unknown, broke, a NodeRuleError (``folding.check_edited``: a
        built Concat of [2, 3] and [3, 4] on axis 0 was written with its output untyped, and
        ``check`` said only that onnx's checker refused an untyped value_info)."""
        if not self.stale_tensors() and all(
            self._tensors[name].dtype is not None for name in self.outputs
        ):
            return self
        from dmlgraph import folding
        from dmlgraph.errors import DmlgraphError

        # what inference derives anew: infos an edit made stale, and those nobody gave
        derived = self.stale_tensors() | {
            name for name, info in self._tensors.items() if info.dtype is None or info.shape is None
        }
        typed = self.copy()
        try:
            folding.infer_shapes(typed)
        except DmlgraphError:
            return self
        folding.check_edited(typed, derived)  # a rule broken, named as ``lower`` names it
        return typed

    def not_an_input(self, name: str) -> str:
        """Why ``name`` takes no value although the model lists it as a graph input ("" when
        it does not list it)."""
        if name not in self.initializer_inputs:
            return ""
        return (
            f"{name!r} is an initializer the model also lists as a graph input: ONNX lets a "
            "feed override it, but dmlgraph folds it as the constant the model holds, so it "
            "takes no value (leave it out, or make it a graph input without an initializer)"
        )

    def describe(self, node: Node) -> str:
        """How error messages name a node: the source file, the ONNX node name and op type."""
        return f"{self.source}: {node.label}"

    def __repr__(self) -> str:
        return (
            f"Graph({self.name!r}, {len(self)} nodes, inputs={self.inputs}, "
            f"outputs={self.outputs}, "
            f"{len(self.constants)} constants)"
        )


# Graph reads and builds its networkx graph through the adjacency dicts, not through
# networkx's cached views: ``edges`` and ``degree`` (which ``number_of_edges`` and
# ``add_edges_from`` use) refer back to their graph, and that cycle would keep every dropped
# graph alive until the collector runs (a gen-1 collection of thousands of objects every few
# imports, 18 ms each on shufflenet).


# networkx's MultiDiGraph, changed through its adjacency dicts as its own add_node, add_edge
# and remove_edge change them: those re-check what Graph already knows (both ends exist, the
# key is the consumer port) and cost 3-4 µs an edge, thousands of times per model
class _Adjacency(Protocol):
    """The dicts a networkx MultiDiGraph keeps (private, so its stubs leave them out)."""

    _node: dict[NodeId, dict[str, Any]]
    _succ: dict[NodeId, dict[NodeId, dict[int, dict[str, Any]]]]
    _pred: dict[NodeId, dict[NodeId, dict[int, dict[str, Any]]]]


def _adjacency(graph: nx.MultiDiGraph) -> _Adjacency:
    return graph  # type: ignore[return-value]  # the attributes are there at run time


# The mutators below run for every node and port a graph gains or loses: they read the
# adjacency by a typed name, not through ``_adjacency``, and drop the cache inline, not
# through ``_nx_changed`` (each a call).


def _nx_add_node(graph: nx.MultiDiGraph, n: NodeId, node: Node) -> None:
    adjacency: _Adjacency = graph  # type: ignore[assignment]  # as ``_adjacency`` reads it
    adjacency._node[n] = {"node": node}
    adjacency._succ[n] = {}
    adjacency._pred[n] = {}
    cache = getattr(graph, "__networkx_cache__", None)  # ``_nx_changed``
    if cache:
        cache.clear()


def _nx_add_edge(
    graph: nx.MultiDiGraph, u: NodeId, v: NodeId, key: int, tensor: str, src_port: int
) -> None:
    adjacency: _Adjacency = graph  # type: ignore[assignment]  # as ``_adjacency`` reads it
    succ = adjacency._succ[u]
    if v in succ:
        keys = succ[v]
    else:
        keys = succ[v] = {}
        adjacency._pred[v][u] = keys
    keys[key] = {"tensor": tensor, "src_port": src_port}
    cache = getattr(graph, "__networkx_cache__", None)  # ``_nx_changed``
    if cache:
        cache.clear()


def _nx_remove_edge(graph: nx.MultiDiGraph, u: NodeId, v: NodeId, key: int) -> None:
    """Remove the edge if it is there."""
    adjacency: _Adjacency = graph  # type: ignore[assignment]  # as ``_adjacency`` reads it
    succ = adjacency._succ[u]
    if v not in succ or key not in succ[v]:
        return
    keys = succ[v]
    del keys[key]
    if not keys:
        del succ[v]
        del adjacency._pred[v][u]
    cache = getattr(graph, "__networkx_cache__", None)  # ``_nx_changed``
    if cache:
        cache.clear()


def _nx_changed(graph: nx.MultiDiGraph) -> None:
    """What networkx's own mutators do last: drop its dispatch backends' cached conversions."""
    cache = getattr(graph, "__networkx_cache__", None)
    if cache:
        cache.clear()


def _names(where: str, names: Any) -> tuple[str, ...]:
    """Tensor names as the IR holds them: a tuple of str (``""`` for an omitted one). A str
    given for the sequence was read as one name per character ("yy": two outputs 'y')."""
    kind = type(names)
    if kind is not tuple and kind is not list and (
        isinstance(names, (str, bytes)) or not isinstance(names, Iterable)
    ):  # the exact types first: asked for every node the importer adds
        raise GraphInvariantError(f"{where}: {names!r} is not a sequence of tensor names")
    held = names if kind is tuple else tuple(names)
    for name in held:  # a loop, exact type first, for the same reason
        if type(name) is not str and not isinstance(name, str):
            raise GraphInvariantError(f"{where}: {name!r} is not a tensor name")
    return held


def _check_provenance_fields(name: Any, op_type: Any, domain: Any, since_version: Any) -> None:
    """``Provenance``'s fields as given: text, and an integer version (5 for a name ran until
    to_onnx's protobuf refused it)."""
    if not (isinstance(name, str) and isinstance(op_type, str) and isinstance(domain, str)):
        raise GraphInvariantError(
            f"Provenance: name {name!r}, op_type {op_type!r} and domain {domain!r} are text"
        )
    if not is_integer(since_version):
        raise GraphInvariantError(
            f"Provenance {name!r}: since_version {since_version!r} is not an integer"
        )


def _check_node_fields(where: str, op: Any, provenance: Any, notes: Any) -> None:
    """What ``Node`` holds as given: an op (an op type's name or None was taken for a
    DirectML descriptor, "already lowered"), a ``Provenance`` and notes that are not one str
    (read as one note per character)."""
    if type(op) is OnnxOp and type(provenance) is Provenance and type(notes) in (list, tuple):
        return  # what the importer and the passes give, for every node
    if op is None or isinstance(op, (str, bytes, int, float)):
        raise GraphInvariantError(
            f"{where}: op {op!r} is an OnnxOp (OnnxOp('Relu', 14)) or a DirectML descriptor"
        )
    if not isinstance(provenance, Provenance):
        raise GraphInvariantError(
            f"{where}: provenance is a Provenance (Provenance(name, op_type, domain, "
            f"since_version)), not {type(provenance).__name__}"
        )
    if type(notes) not in (list, tuple) and (  # (Iterable's isinstance: three calls)
        isinstance(notes, (str, bytes)) or not isinstance(notes, Iterable)
    ):
        raise GraphInvariantError(f"{where}: notes {notes!r} is not a sequence of str")


def _check_new_input(graph: Graph, name: str) -> None:
    """A graph input is a new name, or one registered with no data, no producer and not an
    input yet: ``add_input`` of a constant's name made it an input, silently."""
    if not name:
        raise GraphInvariantError(f"{graph.source}: a graph input's name is empty, which ONNX "
                                  "reads as an omitted input")
    info = graph.tensors.get(name)
    if name in graph.inputs or (info is not None and info.data is not None) or (
        graph.producer(name) is not None
    ):
        raise GraphInvariantError(
            f"{graph.source}: add_input: {name!r} is already a graph input, a constant or a "
            "node's output"
        )


def _check_graph_fields(name: Any, opsets: Any, ir_version: Any, source: Any) -> None:
    """``Graph``'s arguments, which the exporter's protobuf refused from deep inside."""
    if not isinstance(name, str):
        raise GraphInvariantError(f"Graph: name {name!r} is not text")
    if type(source) is not str:
        raise GraphInvariantError(f"Graph: source {source!r} is not text")
    if opsets is not None and not isinstance(opsets, Mapping):
        raise GraphInvariantError(
            f"Graph: opset_imports {opsets!r} is not a mapping of domain to opset version"
        )
    for domain, version in (opsets or {}).items():
        if type(domain) is not str or not is_integer(version) or not 1 <= version <= INT64_MAX:
            raise GraphInvariantError(
                f"Graph: opset_imports {domain!r}: {version!r} is not a domain and an opset "
                "version (1 to 2^63 - 1)"
            )
    if not is_integer(ir_version) or ir_version < 1:
        raise GraphInvariantError(f"Graph: ir_version {ir_version!r} is not an ONNX IR version")


_TENSOR_INFO_FIELDS = frozenset({"name", "dtype", "shape", "data"})
_NODE_FIELDS = frozenset({"id", "op", "inputs", "outputs", "provenance", "notes"})


def _check_fields(kind: str, changes: Mapping[str, Any], fields: frozenset[str]) -> None:
    """What ``dataclasses.replace`` refuses: a field the class does not have."""
    unknown = changes.keys() - fields
    if unknown:
        raise TypeError(f"{kind} has no field {sorted(unknown)[0]!r}")


def _edge_count(graph: nx.MultiDiGraph) -> int:
    count = 0  # a loop: a generator's every item is a call
    for nbrs in _adjacency(graph)._succ.values():
        for keys in nbrs.values():
            count += len(keys)
    return count


def _copy_multidigraph(graph: nx.MultiDiGraph) -> nx.MultiDiGraph:
    """A copy with fresh attribute dicts (node and edge data shallow-copied), as networkx's
    ``copy`` makes, in one pass over the adjacency: edges keep their keys and order."""
    other: nx.MultiDiGraph = nx.MultiDiGraph()
    other.graph.update(graph.graph)
    source, copy = _adjacency(graph), _adjacency(other)
    succ, pred = copy._succ, copy._pred
    for n, data in source._node.items():
        copy._node[n] = dict(data)
        succ[n] = {}
        pred[n] = {}
    for u, nbrs in source._succ.items():
        out = succ[u]
        for v, keys in nbrs.items():
            copied = {key: dict(data) for key, data in keys.items()}
            out[v] = copied
            pred[v][u] = copied
    return other
