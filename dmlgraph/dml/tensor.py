"""DML_BUFFER_TENSOR_DESC and DMLCalcBufferTensorSize: the one size rule of DirectML."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from dmlgraph.dml.enums import (
    TENSOR_DIMENSION_COUNT_MAX1,
    UINT32_MAX,
    TensorDataType,
    TensorFlags,
)
from dmlgraph.dml.scalars import int_tuple, is_integer, plain_int
from dmlgraph.errors import DmlValidationError

UINT64_MAX = 2**64 - 1


def packed_strides(sizes: Sequence[int]) -> tuple[int, ...]:
    """Row-major strides in elements, last dimension 1: what an absent Strides means."""
    strides = [1] * len(sizes)
    for i in range(len(sizes) - 2, -1, -1):
        strides[i] = strides[i + 1] * sizes[i + 1]
    return tuple(strides)


def calc_buffer_tensor_size(
    data_type: TensorDataType, sizes: Sequence[int], strides: Sequence[int] | None = None
) -> int:
    """DMLCalcBufferTensorSize: bytes from element 0 to the last addressed one, rounded to 4."""
    if strides is None:
        strides = packed_strides(sizes)
    last_index = sum([(size - 1) * stride for size, stride in zip(sizes, strides)])  # (a list:
    # a generator's every item is a call)
    bits = (last_index + 1) * data_type.bit_width
    size_in_bytes = (bits + 7) // 8
    return (size_in_bytes + 3) & ~3


#: Steps the search of ``shared_element`` may take before it gives up: strides that are not
#: nested and hide no collision a few steps deep are rare enough (hand-written interleavings)
#: that refusing the rest costs nothing real, and a search of 2^20 steps takes about a second.
OVERLAP_SEARCH_STEPS = 1 << 20


@dataclass(frozen=True)
class SharedElement:
    """Two distinct coordinates of one tensor that address the same element (``element``);
    ``decided`` False where the search gave up before finding one or proving there is none;
    ``broadcast_axis`` the axis the two differ along where its stride is 0 (a broadcast)."""

    first: tuple[int, ...]
    second: tuple[int, ...]
    element: int
    decided: bool = True
    broadcast_axis: int | None = None


def shared_element(
    sizes: Sequence[int], strides: Sequence[int], steps: int = OVERLAP_SEARCH_STEPS
) -> SharedElement | None:
    """Two coordinates addressing one element, or None where every element has its own.

    Exact: a stride of 0 on a dimension of size > 1 collides at once; strides that nest
    (sorted by stride, each dimension's stride at least the span of those before it, as
    packed and padded layouts do) never collide; anything else (interleavings: sizes [3, 2],
    strides [2, 3] address 0, 2, 4, 3, 5, 7, all distinct) is searched for a difference
    vector d, ``0 < |d|``, ``|d[i]| < sizes[i]``, ``sum(d * strides) = 0``.
    """
    rank = len(sizes)
    for axis, (size, stride) in enumerate(zip(sizes, strides)):
        if size > 1 and not stride:  # the first such axis, the one validate()'s rule names
            return SharedElement((0,) * rank, tuple(int(i == axis) for i in range(rank)), 0,
                                 broadcast_axis=axis)
    dims = sorted((s, n, i) for i, (n, s) in enumerate(zip(sizes, strides)) if n > 1)
    span = 1
    for stride, size, _ in dims:
        if stride < span:
            break
        span += (size - 1) * stride
    else:
        return None
    found = _collision([(s, n) for s, n, _ in reversed(dims)], steps)
    if found is None:
        return None
    axes = [i for _, _, i in reversed(dims)]
    plus, minus = [0] * rank, [0] * rank  # d = plus - minus, both within the sizes
    for axis, d in zip(axes, found):
        (plus if d > 0 else minus)[axis] = abs(d)
    element = sum(c * s for c, s in zip(plus, strides))
    low, high = sorted((tuple(plus), tuple(minus)))  # in row-major order
    return SharedElement(low, high, element, decided=bool(found))


def _collision(dims: list[tuple[int, int]], steps: int) -> tuple[int, ...] | None:
    """A nonzero d with ``sum(d * stride) = 0``, ``|d| < size``, over (stride, size) sorted by
    stride, largest first (each choice bounded by what the smaller strides can still undo);
    None where there is none; () where ``steps`` ran out first."""
    reach = [0] * (len(dims) + 1)  # reach[k]: the most dims[k:] can add or take away
    for k in range(len(dims) - 1, -1, -1):
        reach[k] = reach[k + 1] + (dims[k][1] - 1) * dims[k][0]
    budget = [steps]
    chosen: list[int] = []

    def search(k: int, partial: int, nonzero: bool) -> bool:
        budget[0] -= 1
        if budget[0] < 0:
            raise _Exhausted
        stride, size = dims[k]
        if k == len(dims) - 1:  # the last one is solved for, not tried
            d, rest = divmod(-partial, stride)
            if rest or abs(d) >= size or not (nonzero or d):
                return False
            chosen.append(d)
            return True
        low = -((reach[k + 1] + partial) // stride)  # ceil((-reach - partial) / stride)
        high = (reach[k + 1] - partial) // stride
        low, high = max(low, 1 - size, 0 if not nonzero else 1 - size), min(high, size - 1)
        for d in range(low, high + 1):  # the first nonzero d positive: d and -d are one
            chosen.append(d)
            if search(k + 1, partial + d * stride, nonzero or d != 0):
                return True
            chosen.pop()
        return False

    try:
        return tuple(chosen) if search(0, 0, False) else None
    except _Exhausted:
        return ()


class _Exhausted(Exception):
    """``_collision`` ran out of steps."""


@dataclass(frozen=True)
class BufferTensorDesc:
    """DML_BUFFER_TENSOR_DESC. Sizes and strides are in elements, strides unsigned.

    ``total_tensor_size_in_bytes`` defaults to ``calc_buffer_tensor_size`` so a desc built with
    only a type and sizes is always valid; an explicit value may be larger, never smaller.
    """

    data_type: TensorDataType
    sizes: tuple[int, ...]
    strides: tuple[int, ...] | None = None
    flags: TensorFlags = TensorFlags.NONE
    total_tensor_size_in_bytes: int = field(default=-1)
    guaranteed_base_offset_alignment: int = 0

    def __post_init__(self) -> None:
        field = "DML_BUFFER_TENSOR_DESC"  # its operator's field is not known yet
        object.__setattr__(
            self, "data_type", TensorDataType.parse(self.data_type, f"{field}.DataType")
        )
        object.__setattr__(self, "flags", TensorFlags.parse(self.flags, f"{field}.Flags"))
        object.__setattr__(self, "sizes", int_tuple(self.sizes))
        if self.strides is not None:
            object.__setattr__(self, "strides", int_tuple(self.strides))
        for name in ("total_tensor_size_in_bytes", "guaranteed_base_offset_alignment"):
            object.__setattr__(self, name, plain_int(getattr(self, name)))
        if self.total_tensor_size_in_bytes == -1:
            object.__setattr__(self, "total_tensor_size_in_bytes", self.minimum_size_in_bytes)

    def __hash__(self) -> int:
        # written out (the generated one hashes the same fields) to name a field holding an
        # unhashable value, a list where a sequence of integers belongs, by its rule
        fields = (
            self.data_type,
            self.sizes,
            self.strides,
            self.flags,
            self.total_tensor_size_in_bytes,
            self.guaranteed_base_offset_alignment,
        )
        try:
            return hash(fields)
        except TypeError:
            self.validate("DML_BUFFER_TENSOR_DESC", "")
            raise DmlValidationError(
                "DML_BUFFER_TENSOR_DESC", "(fields)", fields, "a field holds an unhashable value"
            ) from None

    @property
    def dimension_count(self) -> int:
        return len(self.sizes)

    @property
    def effective_strides(self) -> tuple[int, ...]:
        return self.strides if self.strides is not None else packed_strides(self.sizes)

    @property
    def is_packed(self) -> bool:
        """True when the elements lie row-major and contiguous (strides absent or packed)."""
        if self.strides is None:
            return True
        packed = packed_strides(self.sizes)
        return all(s == p or n == 1 for s, p, n in zip(self.strides, packed, self.sizes))

    @property
    def element_count(self) -> int:
        count = 1
        for size in self.sizes:
            count *= size
        return count

    @property
    def minimum_size_in_bytes(self) -> int:
        if not self._well_typed() or (self.sizes and min(self.sizes) < 1) or (
            self.strides is not None and len(self.strides) != len(self.sizes)
        ):
            return 0  # invalid; validate() names the rule
        if self.data_type == TensorDataType.UNKNOWN:
            return 0
        return calc_buffer_tensor_size(self.data_type, self.sizes, self.strides)

    def _well_typed(self) -> bool:
        """Sizes and strides are tuples of integers (``int_tuple`` keeps anything else)."""
        for values in (self.sizes, self.strides if self.strides is not None else ()):
            if not isinstance(values, tuple):  # loops: a generator's every item is a call
                return False
            for v in values:
                if not is_integer(v):
                    return False
        return True

    def validate(self, operator: str, field_name: str) -> None:
        """Check the tensor desc's own rules; errors name the operator field holding it."""

        def fail(sub: str, value: object, rule: str) -> DmlValidationError:
            return DmlValidationError(
                operator, f"{field_name}.{sub}" if field_name else sub, value, rule
            )

        for sub, values in (("Sizes", self.sizes), ("Strides", self.strides)):
            if sub == "Strides" and values is None:
                continue
            if not isinstance(values, tuple):
                raise fail(sub, values, "must be a sequence of integers")
            for i, value in enumerate(values):
                if not is_integer(value):
                    raise fail(f"{sub}[{i}]", value, "must be an integer")
        for sub, value in (
            ("TotalTensorSizeInBytes", self.total_tensor_size_in_bytes),
            ("GuaranteedBaseOffsetAlignment", self.guaranteed_base_offset_alignment),
        ):
            if not is_integer(value):
                raise fail(sub, value, "must be an integer")

        if self.data_type == TensorDataType.UNKNOWN:
            raise fail("DataType", self.data_type.full_name, "a tensor's DataType must be known")
        count = len(self.sizes)
        if not 1 <= count <= TENSOR_DIMENSION_COUNT_MAX1:
            raise fail(
                "DimensionCount",
                count,
                f"a tensor has 1 to {TENSOR_DIMENSION_COUNT_MAX1} dimensions "
                "(DML_TENSOR_DIMENSION_COUNT_MAX1)",
            )
        for i, size in enumerate(self.sizes):
            if not 1 <= size <= UINT32_MAX:
                raise fail(
                    f"Sizes[{i}]",
                    size,
                    "every size must be at least 1 and fit in UINT "
                    "(DirectML cannot describe a zero-size tensor)",
                )
        if self.element_count > UINT32_MAX:
            raise fail(
                "Sizes", list(self.sizes), "a tensor holds at most 2^32 - 1 elements"
            )
        if self.strides is not None:
            if len(self.strides) != count:
                raise fail(
                    "Strides",
                    list(self.strides),
                    f"Strides must have DimensionCount ({count}) entries",
                )
            for i, stride in enumerate(self.strides):
                if not 0 <= stride <= UINT32_MAX:
                    raise fail(
                        f"Strides[{i}]", stride, "strides are UINT: 0 to 2^32 - 1 elements"
                    )
            # DML_BUFFER_TENSOR_DESC: "The total size of a buffer tensor may not exceed
            # (2^32 - 1) elements": with strides, the elements of the buffer it spans
            span = sum([(n - 1) * s for n, s in zip(self.sizes, self.strides)]) + 1
            if span > UINT32_MAX:
                raise fail(
                    "Strides",
                    list(self.strides),
                    f"the tensor spans {span} elements of its buffer (last index "
                    "sum((Sizes - 1) * Strides) + 1); a buffer tensor spans at most 2^32 - 1",
                )
        minimum = self.minimum_size_in_bytes
        total = self.total_tensor_size_in_bytes
        if total < minimum:
            raise fail(
                "TotalTensorSizeInBytes",
                total,
                f"must be at least DMLCalcBufferTensorSize = {minimum} bytes",
            )
        if total > UINT64_MAX:
            raise fail("TotalTensorSizeInBytes", total, "is a UINT64: at most 2^64 - 1 bytes")
        if total % 4:
            raise fail(
                "TotalTensorSizeInBytes",
                total,
                "must be a multiple of 4 (DirectML requires every bound buffer's total size to "
                "be DWORD-aligned, as DMLCalcBufferTensorSize rounds it)",
            )
        alignment = self.guaranteed_base_offset_alignment
        element_bytes = max(1, self.data_type.bit_width // 8)
        if not 0 <= alignment <= UINT32_MAX:  # 2^32, a power of two, is no UINT
            raise fail(
                "GuaranteedBaseOffsetAlignment", alignment, "is a UINT: 0 to 2^32 - 1 bytes"
            )
        if alignment != 0 and (alignment & (alignment - 1) or alignment < element_bytes):
            raise fail(
                "GuaranteedBaseOffsetAlignment",
                alignment,
                f"must be 0 or a power of two at least the element size ({element_bytes})",
            )

