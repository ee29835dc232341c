"""The import-time shape kernels against onnx.reference, op by op and version by version, and
the import they speed up against the same import through onnx.reference alone.

A kernel may decline (None); what it returns must equal onnx.reference's result in dtype,
shape and every value. Each op also has a plain case it must not decline, so no test passes
by a kernel that declines everything."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import dmlgraph
from dmlgraph import shape_kernels
from dmlgraph.dtypes import to_elem_type

MODELS = Path(__file__).resolve().parent.parent / "models"
REAL_MODELS = sorted(p.stem for p in MODELS.glob("*.onnx"))

INT_DTYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
FLOAT_DTYPES = ("float16", "float32", "float64")
NUMBER_DTYPES = INT_DTYPES + FLOAT_DTYPES
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def _versions(op_type: str) -> list[int]:
    """Every since_version of ``op_type`` the kernel table claims."""
    kernel = shape_kernels.KERNELS[op_type]
    found = {
        s.since_version
        for s in onnx.defs.get_all_schemas_with_history()
        if s.name == op_type and s.domain == ""
    }
    return sorted(v for v in found if kernel.covers(v))


def _single_node_model(
    op_type: str, opset: int, inputs: list[np.ndarray | None], attrs: dict[str, Any]
) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """A model of the one node (omitted inputs as empty names), and its feeds."""
    names = [f"i{k}" if value is not None else "" for k, value in enumerate(inputs)]
    while names and not names[-1]:
        names.pop()
    node = helper.make_node(op_type, names, ["y"], **attrs)
    graph = helper.make_graph(
        [node],
        "g",
        [
            helper.make_tensor_value_info(n, to_elem_type(v.dtype, n), v.shape)
            for n, v in zip(names, inputs)
            if n and v is not None
        ],
        [onnx.ValueInfoProto(name="y")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10  # onnxruntime 1.31 loads at most 13
    feeds = {n: v for n, v in zip(names, inputs) if n and v is not None}
    return model, feeds


def _reference(
    op_type: str, version: int, inputs: list[np.ndarray | None], attrs: dict[str, Any]
) -> list[np.ndarray]:
    model, feeds = _single_node_model(op_type, version, inputs, attrs)
    with np.errstate(all="ignore"):  # inf - inf and the like are the point, not a mistake
        return [np.asarray(r) for r in ReferenceEvaluator(model).run(None, feeds)]


def _onnxruntime(
    op_type: str, version: int, inputs: list[np.ndarray | None], attrs: dict[str, Any]
) -> list[np.ndarray]:
    """The same node on onnxruntime, at an opset of the same meaning within what it loads
    (7..21: the ops here last changed meaning by 21; later versions add types)."""
    import onnxruntime as ort

    model, feeds = _single_node_model(op_type, max(7, min(version, 21)), inputs, attrs)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return [np.asarray(r) for r in session.run(None, feeds)]


ORACLES = {"reference": _reference, "onnxruntime": _onnxruntime}


def _attrs_for_kernel(attrs: dict[str, Any]) -> dict[str, Any]:
    """Attributes as the importer hands them over (tensors as arrays, lists as tuples)."""
    out: dict[str, Any] = {}
    for key, value in attrs.items():
        if isinstance(value, onnx.TensorProto):
            out[key] = numpy_helper.to_array(value)
        elif isinstance(value, list):
            out[key] = tuple(value)
        else:
            out[key] = value
    return out


def check(
    op_type: str,
    version: int,
    inputs: list[np.ndarray | None],
    attrs: dict[str, Any],
    oracle: str = "reference",
) -> bool:
    """Kernel vs onnx.reference (or onnxruntime); True when the kernel computed (and agreed)."""
    kernel = shape_kernels.kernel_for(op_type, "", version)
    assert kernel is not None
    ours = kernel.fn(inputs, _attrs_for_kernel(attrs), version)
    if ours is None:
        return False
    theirs = ORACLES[oracle](op_type, version, inputs, attrs)
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        assert isinstance(a, np.ndarray), type(a)
        assert (a.dtype, a.shape) == (b.dtype, b.shape), (op_type, version, inputs, attrs)
        assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), (
            op_type, version, inputs, attrs, a, b,
        )
    return True


# ----------------------------------------------------------------------------- strategies

dims = st.integers(0, 3)
shapes = st.lists(dims, min_size=0, max_size=3).map(tuple)
nonempty_shapes = st.lists(st.integers(1, 3), min_size=1, max_size=3).map(tuple)


@st.composite
def arrays(draw: st.DrawFn, dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    size = int(np.prod(shape, dtype=np.int64))
    kind = np.dtype(dtype)
    if kind.kind == "b":
        values = draw(st.lists(st.booleans(), min_size=size, max_size=size))
    elif kind.kind in "iu":
        info = np.iinfo(kind)
        small = st.integers(max(info.min, -9), min(info.max, 9))
        values = draw(st.lists(st.one_of(small, st.sampled_from([info.min, info.max])),
                               min_size=size, max_size=size))
    else:
        values = draw(st.lists(
            st.one_of(
                st.floats(-20, 20, width=16).map(float),
                st.sampled_from([0.5, -0.5, 2.5, -2.5, 1e30, -1e30, np.inf, -np.inf, np.nan]),
            ),
            min_size=size,
            max_size=size,
        ))
    with np.errstate(over="ignore"):
        return np.array(values, dtype=kind).reshape(shape)


def i64(values: list[int]) -> np.ndarray:
    return np.array(values, dtype=np.int64)


# ----------------------------------------------------------------------------- per op


@pytest.mark.parametrize("version", _versions("Shape"))
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_shape(version: int, data: st.DataObject) -> None:
    x = data.draw(arrays("float32", data.draw(shapes)))
    attrs = {}
    if version >= 15:
        for key in ("start", "end"):
            if data.draw(st.booleans()):
                attrs[key] = data.draw(st.integers(-5, 5))
    # onnx.reference does not clamp an end below -rank (Shape_15._interval): onnxruntime does,
    # as the spec says
    assert check("Shape", version, [x], attrs, oracle="onnxruntime" if attrs else "reference")
    # the importer feeds a zero-strided dummy of the static shape: same result
    dummy = np.broadcast_to(np.zeros((), np.float32), x.shape)
    kernel = shape_kernels.KERNELS["Shape"]
    assert np.array_equal(kernel.fn([dummy], attrs, version)[0], kernel.fn([x], attrs, version)[0])


@pytest.mark.parametrize("version", _versions("Size"))
@settings(max_examples=10, deadline=None)
@given(shape=shapes)
def test_size(version: int, shape: tuple[int, ...]) -> None:
    assert check("Size", version, [np.zeros(shape, np.int32)], {})


@pytest.mark.parametrize("version", _versions("Identity"))
@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_identity(version: int, data: st.DataObject) -> None:
    dtype = data.draw(st.sampled_from(NUMBER_DTYPES + ("bool",)))
    assert check("Identity", version, [data.draw(arrays(dtype, data.draw(shapes)))], {})


@pytest.mark.parametrize("version", _versions("Gather"))
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_gather(version: int, data: st.DataObject) -> None:
    x = data.draw(arrays(data.draw(st.sampled_from(["int64", "float32"])), data.draw(
        nonempty_shapes)))
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    dim = x.shape[axis]
    indices = np.array(
        data.draw(st.lists(st.integers(-dim - 1, dim), max_size=4)),
        dtype=data.draw(st.sampled_from(["int32", "int64"])),
    )
    if data.draw(st.booleans()) and indices.size:
        indices = indices[:1].reshape(())
    computed = check("Gather", version, [x, indices], {"axis": axis})
    in_range = bool(np.all((indices >= (-dim if version >= 11 else 0)) & (indices < dim)))
    assert computed == (in_range and (version >= 11 or axis >= 0))


@pytest.mark.parametrize("version", _versions("Unsqueeze"))
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_unsqueeze(version: int, data: st.DataObject) -> None:
    x = data.draw(arrays("int64", data.draw(shapes)))
    axes = data.draw(st.lists(st.integers(-5, 5), min_size=1, max_size=3))
    # onnx.reference's Unsqueeze-1/11 inserts the axes in the order given, so [1, 0] fails on
    # a 1-D tensor; the spec says their order does not matter, and onnxruntime agrees
    if version < 13:
        computed = check("Unsqueeze", version, [x], {"axes": axes}, oracle="onnxruntime")
    else:
        computed = check("Unsqueeze", version, [x, i64(axes)], {}, oracle="onnxruntime")
    rank = x.ndim + len(axes)
    normal = [a % rank for a in axes if -rank <= a < rank]
    valid = len(normal) == len(axes) == len(set(normal)) and (version >= 11 or min(axes) >= 0)
    assert computed == valid


@pytest.mark.parametrize("version", _versions("Squeeze"))
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_squeeze(version: int, data: st.DataObject) -> None:
    shape = data.draw(st.lists(st.integers(1, 2), max_size=4).map(tuple))
    x = data.draw(arrays("float32", shape))
    axes = data.draw(st.none() | st.lists(st.integers(-4, 3), min_size=1, max_size=2))
    # onnx.reference's Squeeze-1 squeezes the listed axes one after another, so [2, 0] of a
    # rank-3 tensor fails; onnxruntime removes them together, as the spec says
    if axes is None:
        assert check("Squeeze", version, [x], {}, oracle="onnxruntime")
    elif version < 13:
        check("Squeeze", version, [x], {"axes": axes}, oracle="onnxruntime")
    else:
        check("Squeeze", version, [x, i64(axes)], {}, oracle="onnxruntime")


def test_squeeze_declines_a_dimension_that_is_not_one() -> None:
    kernel = shape_kernels.KERNELS["Squeeze"]
    assert kernel.fn([np.zeros((2, 1)), i64([0])], {}, 13) is None
    assert kernel.fn([np.zeros((2, 1)), i64([1])], {}, 13)[0].shape == (2,)


@pytest.mark.parametrize("version", _versions("Concat"))
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_concat(version: int, data: st.DataObject) -> None:
    shape = list(data.draw(nonempty_shapes))
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    dtype = data.draw(st.sampled_from(["int64", "float32", "bool"]))
    parts = []
    for _ in range(data.draw(st.integers(1, 3))):
        shape[axis] = data.draw(dims)
        parts.append(data.draw(arrays(dtype, tuple(shape))))
    assert check("Concat", version, parts, {"axis": axis}) == (version >= 11 or axis >= 0)


def test_concat_declines_mismatched_inputs() -> None:
    kernel = shape_kernels.KERNELS["Concat"]
    assert kernel.fn([np.zeros((2, 3)), np.zeros((2, 4))], {"axis": 0}, 13) is None
    assert kernel.fn([np.zeros(2, np.int64), np.zeros(2, np.int32)], {"axis": 0}, 13) is None


slice_bounds = st.one_of(
    st.integers(-5, 5), st.sampled_from([INT64_MIN, INT64_MIN + 1, INT64_MAX, INT64_MAX - 1])
)


@pytest.mark.parametrize("version", _versions("Slice"))
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_slice(version: int, data: st.DataObject) -> None:
    x = data.draw(arrays("int32", data.draw(st.lists(dims, min_size=1, max_size=3).map(tuple))))
    axes = data.draw(st.permutations(range(x.ndim)))[: data.draw(st.integers(1, x.ndim))]
    n = len(axes)
    starts = data.draw(st.lists(slice_bounds, min_size=n, max_size=n))
    ends = data.draw(st.lists(slice_bounds, min_size=n, max_size=n))
    steps = data.draw(st.lists(st.sampled_from([-3, -2, -1, 1, 2, 3]), min_size=n, max_size=n))
    signed = [a - x.ndim if data.draw(st.booleans()) else a for a in axes]
    inputs = [x, i64(starts), i64(ends), i64(signed), i64(steps)]
    if data.draw(st.booleans()) and signed == list(range(n)):
        inputs = inputs[:3] if all(s == 1 for s in steps) else inputs
    # onnx.reference slices with Python's rules, which differ from the spec's clamping for
    # negative steps (start INT64_MIN on a size-1 axis: the spec reads index 0, Python
    # nothing); onnxruntime follows the spec
    computed = check("Slice", version, inputs, {}, oracle="onnxruntime")
    declined = any(s < 0 and e == INT64_MAX for s, e in zip(steps, ends))
    assert computed == (not declined)


@pytest.mark.parametrize("version", _versions("Reshape"))
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_reshape(version: int, data: st.DataObject) -> None:
    x = data.draw(arrays("float32", data.draw(shapes)))
    target = list(data.draw(st.permutations(x.shape))) if x.ndim else []
    for k in range(len(target)):
        if data.draw(st.integers(0, 3)) == 0:
            target[k] = 0 if k < x.ndim and x.shape[k] == target[k] else target[k]
    if target and data.draw(st.booleans()):
        target[data.draw(st.integers(0, len(target) - 1))] = -1
    attrs = {"allowzero": 1} if version >= 14 and data.draw(st.booleans()) else {}
    check("Reshape", version, [x, i64(target)], attrs)


def test_reshape_computes_the_plain_cases() -> None:
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    for target in ([4, 3], [0, -1], [-1], [2, 0, 2]):
        if target == [2, 0, 2]:
            assert not check("Reshape", 14, [x, i64(target)], {})  # 0 copies 4: 16 != 12
        else:
            assert check("Reshape", 14, [x, i64(target)], {})


@pytest.mark.parametrize("version", _versions("Transpose"))
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_transpose(version: int, data: st.DataObject) -> None:
    x = data.draw(arrays("int64", data.draw(shapes)))
    attrs = {"perm": list(data.draw(st.permutations(range(x.ndim))))} if x.ndim and data.draw(
        st.booleans()) else {}
    assert check("Transpose", version, [x], attrs)


@pytest.mark.parametrize("version", _versions("ConstantOfShape"))
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_constant_of_shape(version: int, data: st.DataObject) -> None:
    shape = i64(list(data.draw(shapes)))
    attrs = {}
    if data.draw(st.booleans()):
        dtype = data.draw(st.sampled_from(["int64", "int32", "float32", "float16", "bool"]))
        value = data.draw(arrays(dtype, (1,)))
        attrs["value"] = numpy_helper.from_array(value, "value")
    assert check("ConstantOfShape", version, [shape], attrs)


@pytest.mark.parametrize(
    "op_type", ["Add", "Sub", "Mul", "Div"],
)
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_arithmetic(op_type: str, data: st.DataObject) -> None:
    version = data.draw(st.sampled_from(_versions(op_type)))
    dtype = data.draw(st.sampled_from(NUMBER_DTYPES if version >= 14 else
                                      ("int32", "int64", "uint32", "uint64", *FLOAT_DTYPES)))
    shape = data.draw(shapes)
    other = tuple(d if data.draw(st.booleans()) else 1 for d in shape)[
        data.draw(st.integers(0, len(shape))):]
    a, b = data.draw(arrays(dtype, shape)), data.draw(arrays(dtype, other))
    if data.draw(st.booleans()):
        a, b = b, a
    computed = check(op_type, version, [a, b], {})
    if op_type != "Div" or dtype in FLOAT_DTYPES:
        assert computed
    else:  # integer division: declined exactly where C++ leaves it undefined
        by_zero = not np.all(b != 0)
        overflow = dtype.startswith("int") and bool(
            np.any((a == np.iinfo(dtype).min) & (b.astype(np.int64) == -1))
        )
        assert computed == (not by_zero and not overflow)


def test_integer_division_truncates_toward_zero() -> None:
    """The spec's C++ rule, checked by hand as well as against the reference."""
    div = shape_kernels.KERNELS["Div"]
    got = div.fn([i64([7, -7, 7, -7]), i64([2, 2, -2, -2])], {}, 14)[0]
    assert got.tolist() == [3, -3, -3, 3]
    assert div.fn([i64([1]), i64([0])], {}, 14) is None


@pytest.mark.parametrize("op_type", ["Ceil", "Floor"])
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_rounding(op_type: str, data: st.DataObject) -> None:
    version = data.draw(st.sampled_from(_versions(op_type)))
    x = data.draw(arrays(data.draw(st.sampled_from(FLOAT_DTYPES)), data.draw(shapes)))
    assert check(op_type, version, [x], {})


@pytest.mark.parametrize("version", _versions("Clip"))
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_clip(version: int, data: st.DataObject) -> None:
    dtype = data.draw(st.sampled_from(NUMBER_DTYPES if version >= 12 else FLOAT_DTYPES))
    x = data.draw(arrays(dtype, data.draw(shapes)))
    if version < 11:
        attrs = {k: data.draw(st.floats(-10, 10, width=32)) for k in ("min", "max")
                 if data.draw(st.booleans())}
        assert check("Clip", version, [x], attrs) == (dtype == "float32")
        return
    bounds = [data.draw(st.none() | arrays(dtype, ())) for _ in range(2)]
    nan_bound = any(b is not None and np.isnan(b).any() for b in bounds if dtype in FLOAT_DTYPES)
    if dtype in _ORT_CLIP_TYPES.get(version, ()) and not nan_bound:
        assert check("Clip", version, [x, *bounds], {}, oracle="onnxruntime")
        return
    # onnxruntime has no such kernel (int16, uint16; Clip-11 but of float32), keeps an
    # infinity (Clip-11 of float16) or ignores a NaN bound (both ``folding.ort_divergence``:
    # never folded); onnx.reference clips infinities otherwise than the spec where a bound
    # is omitted, so none are drawn then
    if dtype in FLOAT_DTYPES and None in bounds:
        x, *bounds = (None if a is None else np.where(np.isinf(a), 0, a).astype(dtype)
                      for a in (x, *bounds))
    assert check("Clip", version, [x, *bounds], {})


#: The types onnxruntime's CPU Clip runs, by since_version (Clip-11 takes only float32).
_ORT_CLIP_TYPES = {
    11: ("float32",),
    12: FLOAT_DTYPES + ("int8", "int32", "int64", "uint8", "uint32", "uint64"),
    13: FLOAT_DTYPES + ("int8", "int32", "int64", "uint8", "uint32", "uint64"),
}


@pytest.mark.parametrize("version, dtype", [
    (11, "float32"), (12, "float16"), (13, "float16"), (13, "float32"), (13, "float64"),
])
def test_clip_without_a_bound_clips_infinities_to_the_type_s_limits(version: int,
                                                                     dtype: str) -> None:
    """An omitted bound is numeric_limits::lowest() or max(), as the spec says and
    onnxruntime computes: -inf becomes the lowest finite value, inf the highest (the kernel
    kept them, as onnx.reference does)."""
    x = np.array([-np.inf, np.inf, 1.0, np.nan], dtype)
    bound = np.array(0.5, dtype)
    for inputs in ([x, None, bound], [x, bound], [x]):
        assert check("Clip", version, inputs, {}, oracle="onnxruntime")


def _exact(value: np.generic) -> int | float:
    """A value truncated toward zero as a Python number, which compares with an int exactly
    (NumPy would round int64's limits into a float16 or float64 first)."""
    return int(value) if isinstance(value, np.integer) else float(np.trunc(value))


@pytest.mark.parametrize("version", _versions("Cast"))
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_cast(version: int, data: st.DataObject) -> None:
    source = data.draw(st.sampled_from(NUMBER_DTYPES + ("bool",)))
    target = data.draw(st.sampled_from(NUMBER_DTYPES + ("bool",)))
    x = data.draw(arrays(source, data.draw(shapes)))
    # double to half: onnx.reference rounds once, onnxruntime twice (through float), and
    # the kernel follows onnxruntime
    oracle = "onnxruntime" if (source, target) == ("float64", "float16") else "reference"
    computed = check("Cast", version, [x], {"to": to_elem_type(np.dtype(target), "to")}, oracle)
    fits = np.dtype(target).kind not in "iu" or source == "bool" or x.size == 0 or (
        np.all(np.isfinite(x))
        and int(np.iinfo(target).min) <= _exact(x.min())
        and _exact(x.max()) <= int(np.iinfo(target).max)
    )
    assert computed == bool(fits)


@pytest.mark.parametrize("version", [6, 13, 19])
def test_cast_of_doubles_to_halves_rounds_as_onnxruntime(version: int) -> None:
    """Values where one rounding (double to half) and two (double to float to half) differ:
    the kernel gives onnxruntime's [1, 2048, inf], not [1.0009765625, 2050, 65504]."""
    x = np.array([1 + 2**-11 + 2**-40, 2049.0000001, 65519.99999], np.float64)
    assert check("Cast", version, [x], {"to": onnx.TensorProto.FLOAT16}, "onnxruntime")
    (y,) = shape_kernels.kernel_for("Cast", "", version).fn([x], {"to": 10}, version)
    assert y.tolist() == [1.0, 2048.0, float("inf")]


#: Sizes on both sides of ``shape_kernels._SMALL``, where the range checks move from a Python
#: list to NumPy's reductions (the strategies above stay below it).
AROUND_SMALL = st.integers(shape_kernels._SMALL - 2, shape_kernels._SMALL + 3)


@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_cast_checks_ranges_on_either_side_of_the_small_size(data: st.DataObject) -> None:
    source = data.draw(st.sampled_from(NUMBER_DTYPES))
    target = data.draw(st.sampled_from(INT_DTYPES))
    count = data.draw(AROUND_SMALL)
    x = np.array(data.draw(st.lists(st.integers(0, 9), min_size=count, max_size=count)),
                 dtype=source)
    if data.draw(st.booleans()):  # one value the target may not hold
        kind = np.dtype(source)
        extremes = [np.iinfo(kind).min, np.iinfo(kind).max] if kind.kind in "iu" else [
            np.inf, -np.inf, np.nan, -0.5, 1e4, -300.0]
        with np.errstate(over="ignore"):
            x[data.draw(st.integers(0, count - 1))] = data.draw(st.sampled_from(extremes))
    computed = check("Cast", 21, [x], {"to": to_elem_type(np.dtype(target), "to")})
    fits = bool(
        np.all(np.isfinite(x))
        and int(np.iinfo(target).min) <= _exact(x.min())
        and _exact(x.max()) <= int(np.iinfo(target).max)
    )
    assert computed == fits


@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_gather_checks_indices_on_either_side_of_the_small_size(data: st.DataObject) -> None:
    x = data.draw(arrays("float32", (2, 5)))
    axis = data.draw(st.sampled_from([0, 1, -1]))
    dim = x.shape[axis]
    count = data.draw(AROUND_SMALL)
    indices = np.array(data.draw(st.lists(st.integers(-dim, dim - 1), min_size=count,
                                          max_size=count)), dtype=np.int64)
    if data.draw(st.booleans()):  # one index just out of range, at either end
        indices[data.draw(st.integers(0, count - 1))] = data.draw(st.sampled_from([-dim - 1, dim]))
    computed = check("Gather", 13, [x, indices], {"axis": axis})
    assert computed == bool(np.all((indices >= -dim) & (indices < dim)))


def test_every_kernel_is_tested_above() -> None:
    tested = {
        "Shape", "Size", "Identity", "Gather", "Unsqueeze", "Squeeze", "Concat", "Slice",
        "Reshape", "Transpose", "ConstantOfShape", "Add", "Sub", "Mul", "Div", "Ceil", "Floor",
        "Clip", "Cast",
    }
    assert set(shape_kernels.KERNELS) == tested


def test_versions_outside_a_kernels_range_go_to_the_reference() -> None:
    assert shape_kernels.kernel_for("Add", "", 6) is None  # broadcast attribute era
    assert shape_kernels.kernel_for("Cast", "", 28) is None  # newer than the table's review
    assert shape_kernels.kernel_for("Add", "ai.onnx.ml", 14) is None
    assert shape_kernels.kernel_for("Add", "", 14) is shape_kernels.KERNELS["Add"]


# ----------------------------------------------------------------------------- import


def _signature(graph: dmlgraph.Graph) -> tuple[Any, ...]:
    nodes = sorted((n.op_type, n.inputs, n.outputs, n.provenance) for n in graph.nodes)
    used = {name for n in graph.nodes for name in n.inputs} | set(graph.outputs)
    tensors = sorted(
        (name, str(info.dtype), info.shape, None if info.data is None else info.data.tobytes())
        for name, info in graph.tensors.items()
        if name in used
    )
    removed = sorted((r.provenance.name, r.provenance.op_type, r.status) for r in graph.removed)
    return nodes, tensors, removed


@pytest.mark.parametrize("model", REAL_MODELS)
def test_import_with_kernels_equals_import_through_the_reference(
    model: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The oracle is the same import with every kernel declined: all folding then goes through
    onnx.reference, node by node. The graphs must be the same, constants byte for byte."""
    path = MODELS / f"{model}.onnx"
    fast = dmlgraph.load(path)
    monkeypatch.setattr(shape_kernels, "kernel_for", lambda *args: None)
    slow = dmlgraph.load(path)
    assert _signature(fast) == _signature(slow)
    assert len(fast.removed) == len(slow.removed)


def test_the_real_models_fold_at_import(monkeypatch: pytest.MonkeyPatch) -> None:
    """The kernels do the work on exporter chains: onnx.reference runs for none of encodec's
    folded nodes."""
    from dmlgraph import folding

    calls: list[str] = []
    real = folding._run_reference

    def counting(graph: Any, nodes: Any, values: Any) -> Any:
        calls.extend(n.op_type for n in nodes)
        return real(graph, nodes, values)

    monkeypatch.setattr(folding, "_run_reference", counting)
    graph = dmlgraph.load(MODELS / "encodec_encoder_reflect.onnx")
    assert sum(r.status == "folded" for r in graph.removed) > 300
    assert calls == []


