"""The NumPy executor against independent oracles: NumPy slicing, sequence-built padding,
and hand-made strided buffers. Bit exactness is checked on the raw bits."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backends.numpy import ExecutionError, execute_operator
from dmlgraph.dml import (
    BufferTensorDesc,
    DmlValidationError,
    JoinDesc,
    Padding1Desc,
    PaddingDesc,
    Slice1Desc,
    SliceDesc,
    TensorDataType,
)

T = BufferTensorDesc
ELEVEN = ["FLOAT32", "FLOAT16", "FLOAT64", "INT8", "INT16", "INT32", "INT64",
          "UINT8", "UINT16", "UINT32", "UINT64"]
PROPERTY = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def random_tensor(rng: np.random.Generator, shape, data_type: str) -> np.ndarray:
    """Random bits of the type, so NaN payloads, -0.0 and extremes appear."""
    dtype = TensorDataType.parse(data_type)
    raw = rng.integers(0, 256, size=int(np.prod(shape)) * dtype.numpy_dtype.itemsize,
                       dtype=np.uint8)
    return raw.view(dtype.numpy_dtype).reshape(shape)


def assert_bits_equal(actual: np.ndarray, expected: np.ndarray) -> None:
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    bits = f"u{actual.dtype.itemsize}"
    np.testing.assert_array_equal(actual.view(bits), expected.view(bits))


# -- SLICE1 and SLICE against NumPy basic slicing ----------------------------------------------
@st.composite
def slice1_cases(draw):
    rank = draw(st.integers(1, 8))
    shape = draw(st.lists(st.integers(1, 5), min_size=rank, max_size=rank))
    windows = []
    for n in shape:
        offset = draw(st.integers(0, n - 1))
        size = draw(st.integers(1, n - offset))
        stride = draw(st.integers(1, 4)) * draw(st.sampled_from([1, -1]))
        most = 1 + (size - 1) // abs(stride)
        count = draw(st.integers(1, most))
        windows.append((offset, size, stride, count))
    data_type = draw(st.sampled_from(ELEVEN))
    return shape, windows, data_type, draw(st.integers(0, 2**32 - 1))


@PROPERTY
@given(slice1_cases())
def test_slice1_matches_numpy_slicing(case) -> None:
    shape, windows, data_type, seed = case
    x = random_tensor(np.random.default_rng(seed), shape, data_type)
    desc = Slice1Desc(
        input_tensor=T(data_type, shape),
        output_tensor=T(data_type, [w[3] for w in windows]),
        input_window_offsets=[w[0] for w in windows],
        input_window_sizes=[w[1] for w in windows],
        input_window_strides=[w[2] for w in windows],
    )
    # Oracle: cut the window, reverse it for a negative stride, step, keep `count` elements.
    expected = x
    for axis, (offset, size, stride, count) in enumerate(windows):
        index = [slice(None)] * len(shape)
        index[axis] = slice(offset, offset + size)
        expected = expected[tuple(index)]
        index[axis] = slice(None, None, -1) if stride < 0 else slice(None)
        expected = expected[tuple(index)]
        index[axis] = slice(None, None, abs(stride))
        expected = expected[tuple(index)]
        index[axis] = slice(0, count)
        expected = expected[tuple(index)]
    (out,) = execute_operator(desc, [x], "6_4")
    assert_bits_equal(out, expected)


@PROPERTY
@given(st.lists(st.integers(1, 6), min_size=1, max_size=8), st.data())
def test_slice_matches_numpy_slicing(shape, data) -> None:
    offsets, sizes, strides = [], [], []
    for n in shape:
        offset = data.draw(st.integers(0, n - 1))
        stride = data.draw(st.integers(1, 4))
        size = data.draw(st.integers(1, 1 + (n - 1 - offset) // stride))
        offsets.append(offset), sizes.append(size), strides.append(stride)
    data_type = data.draw(st.sampled_from(ELEVEN))
    x = random_tensor(np.random.default_rng(data.draw(st.integers(0, 999))), shape, data_type)
    desc = SliceDesc(input_tensor=T(data_type, shape), output_tensor=T(data_type, sizes),
                     offsets=offsets, sizes=sizes, strides=strides)
    expected = x[tuple(slice(o, None, k) for o, k in zip(offsets, strides))]
    expected = expected[tuple(slice(0, n) for n in sizes)]
    (out,) = execute_operator(desc, [x], "6_4")
    assert_bits_equal(out, expected)


@PROPERTY
@given(st.lists(st.integers(1, 4), min_size=1, max_size=8), st.data())
def test_join_matches_assignment_into_the_output(shape, data) -> None:
    axis = data.draw(st.integers(0, len(shape) - 1))
    lengths = data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=5))
    data_type = data.draw(st.sampled_from(ELEVEN))
    rng = np.random.default_rng(data.draw(st.integers(0, 999)))
    xs = []
    for length in lengths:
        part = list(shape)
        part[axis] = length
        xs.append(random_tensor(rng, part, data_type))
    out_shape = list(shape)
    out_shape[axis] = sum(lengths)
    expected = np.empty(out_shape, xs[0].dtype)
    start = 0
    for x in xs:
        index = [slice(None)] * len(shape)
        index[axis] = slice(start, start + x.shape[axis])
        expected.view(f"u{x.itemsize}")[tuple(index)] = x.view(f"u{x.itemsize}")
        start += x.shape[axis]
    desc = JoinDesc(input_tensors=[T(data_type, x.shape) for x in xs],
                    output_tensor=T(data_type, out_shape), axis=axis)
    (out,) = execute_operator(desc, xs, "6_4")
    assert_bits_equal(out, expected)


# -- padding against sequences built by hand -----------------------------------------------------
def periodic_source(mode: str, n: int, start: int, end: int) -> list[int]:
    """Source indices for one dimension, built as a periodic sequence rather than a formula:
    REFLECTION repeats 0..n-1, n-2..1; SYMMETRIC repeats 0..n-1, n-1..0; WRAP repeats 0..n-1;
    EDGE holds the end values."""
    if mode == "EDGE":
        return [0] * start + list(range(n)) + [n - 1] * end
    cycle = {"REFLECTION": list(range(n)) + list(range(n - 2, 0, -1)),
             "SYMMETRIC": list(range(n)) + list(range(n - 1, -1, -1)),
             "WRAP": list(range(n))}[mode]
    return [cycle[(i - start) % len(cycle)] for i in range(start + n + end)]


@st.composite
def padding_cases(draw):
    mode = draw(st.sampled_from(["CONSTANT", "EDGE", "REFLECTION", "SYMMETRIC", "WRAP"]))
    rank = draw(st.integers(1, 5))
    shape = draw(st.lists(st.integers(2 if mode == "REFLECTION" else 1, 4),
                          min_size=rank, max_size=rank))
    starts = draw(st.lists(st.integers(0, 9), min_size=rank, max_size=rank))  # up to > 2n
    ends = draw(st.lists(st.integers(0, 9), min_size=rank, max_size=rank))
    data_type = draw(st.sampled_from(ELEVEN))
    return mode, shape, starts, ends, data_type, draw(st.integers(0, 2**32 - 1))


@PROPERTY
@given(padding_cases())
def test_padding_modes_match_periodic_sequences(case) -> None:
    mode, shape, starts, ends, data_type, seed = case
    rng = np.random.default_rng(seed)
    x = random_tensor(rng, shape, data_type)
    out_shape = [n + s + e for n, s, e in zip(shape, starts, ends)]
    dtype = TensorDataType.parse(data_type)
    if mode == "CONSTANT":
        value = int(rng.integers(-100, 100)) if not dtype.is_float else -2.5
        if data_type.startswith("UINT"):
            value = abs(value)
        desc = Padding1Desc(input_tensor=T(data_type, shape), output_tensor=T(data_type, out_shape),
                            padding_mode=mode, padding_value_data_type=data_type,
                            padding_value=value, start_padding=starts, end_padding=ends)
        expected = np.full(out_shape, value, dtype=dtype.numpy_dtype)
        expected[tuple(slice(s, s + n) for s, n in zip(starts, shape))] = x
    else:
        desc = PaddingDesc(input_tensor=T(data_type, shape), output_tensor=T(data_type, out_shape),
                           padding_mode=mode, start_padding=starts, end_padding=ends)
        index = np.ix_(*[periodic_source(mode, n, s, e) for n, s, e in zip(shape, starts, ends)])
        expected = x[index]
    (out,) = execute_operator(desc, [x], "6_4")
    assert_bits_equal(out, expected)


@pytest.mark.parametrize("mode, numpy_mode", [("REFLECTION", "reflect"),
                                              ("SYMMETRIC", "symmetric"), ("EDGE", "edge"),
                                              ("WRAP", "wrap")])
def test_single_cycle_padding_matches_numpy_pad(mode: str, numpy_mode: str) -> None:
    """Within one period numpy.pad is stable across versions: a second oracle."""
    x = np.arange(1, 21, dtype=np.float32).reshape(4, 5)
    pads = [(3, 1), (2, 4)]  # below the input sizes: one reflection at most
    desc = PaddingDesc(input_tensor=T("FLOAT32", (4, 5)), output_tensor=T("FLOAT32", (8, 11)),
                       padding_mode=mode, start_padding=(3, 2), end_padding=(1, 4))
    (out,) = execute_operator(desc, [x], "6_4")
    np.testing.assert_array_equal(out, np.pad(x, pads, mode=numpy_mode))


# -- values: truncation, exactness, bits ------------------------------------------------------
@pytest.mark.parametrize("data_type, value, expected", [
    ("INT32", 10.6, 10), ("INT32", -2.7, -2), ("UINT8", 255.9, 255), ("INT64", 2.0**40, 2**40),
    ("FLOAT16", 0.1, np.float16(np.float32(0.1))), ("FLOAT64", 0.1, np.float64(np.float32(0.1))),
])
def test_padding_value_conversions(data_type: str, value: float, expected) -> None:
    desc = PaddingDesc(input_tensor=T(data_type, (1,)), output_tensor=T(data_type, (2,)),
                       padding_mode="CONSTANT", padding_value=value, start_padding=(1,),
                       end_padding=(0,))
    x = np.zeros(1, TensorDataType.parse(data_type).numpy_dtype)
    (out,) = execute_operator(desc, [x], "6_4")
    assert out[0] == expected and out.dtype == x.dtype


def test_padding1_int64_value_is_exact() -> None:
    value = 2**62 + 1  # not representable as float32 or float64
    desc = Padding1Desc(input_tensor=T("INT64", (1,)), output_tensor=T("INT64", (3,)),
                        padding_mode="CONSTANT", padding_value_data_type="INT64",
                        padding_value=value, start_padding=(1,), end_padding=(1,))
    (out,) = execute_operator(desc, [np.array([7], np.int64)], "5_0")
    assert out.tolist() == [value, 7, value]


@pytest.mark.parametrize("bits", [0x7F800001, 0xFFA00000, 0x7FC00001])
def test_padding1_float32_nan_value_keeps_its_bits(bits: int) -> None:
    """The scalar union holds the float32's bits, and DirectML fills with them; a signalling
    NaN went through float() into the descriptor, which set its quiet bit (0x7f800001 filled
    0x7fc00001). A FLOAT16 NaN kept its payload already; so does a quiet float32 one."""
    value = np.array(bits, np.uint32).view(np.float32)[()]
    desc = Padding1Desc(input_tensor=T("FLOAT32", (1,)), output_tensor=T("FLOAT32", (3,)),
                        padding_mode="CONSTANT", padding_value_data_type="FLOAT32",
                        padding_value=value, start_padding=(1,), end_padding=(1,))
    x = np.array([0x3F800000], np.uint32).view(np.float32)
    (out,) = execute_operator(desc, [x], "5_0")
    assert out.view(np.uint32).tolist() == [bits, 0x3F800000, bits]


@pytest.mark.parametrize("bits, data_type, filled", [
    (0x7F800001, "FLOAT32", 0x7F800001),  # the struct's FLOAT, as it is
    (0xFFA00000, "FLOAT32", 0xFFA00000),
    (0x7FC00123, "FLOAT32", 0x7FC00123),
    (0x7F800001, "FLOAT16", 0x7E00),  # converted as a C cast converts it: quiet
    (0xFF802000, "FLOAT16", 0xFE01),
])
def test_padding_float32_nan_value_keeps_its_bits(bits: int, data_type: str, filled: int) -> None:
    """PADDING's value is a C FLOAT: a signalling np.float32 NaN is a FLOAT the struct holds,
    and DirectML fills a FLOAT32 tensor with its bits (as PADDING1 does). It went through
    float() into the descriptor, which set its quiet bit (0x7f800001 filled 0x7fc00001). A
    FLOAT16 tensor gets it converted as C converts a float (F16C's bits), quiet."""
    value = np.array(bits, np.uint32).view(np.float32)[()]
    dtype = TensorDataType.parse(data_type)
    desc = PaddingDesc(input_tensor=T(data_type, (1,)), output_tensor=T(data_type, (3,)),
                       padding_mode="CONSTANT", padding_value=value, start_padding=(1,),
                       end_padding=(1,))
    x = np.zeros(1, dtype.numpy_dtype)
    (out,) = execute_operator(desc, [x], "6_4")
    assert out.view(dtype.bits_dtype).tolist() == [filled, 0, filled]


def test_float_bits_survive_unchanged() -> None:
    """Signalling NaN payloads and -0.0 are copied bit for bit."""
    bits = np.array([0x7F800001, 0xFFC12345, 0x80000000, 0x00000001], np.uint32)
    x = bits.view(np.float32).reshape(1, 1, 1, 4)
    desc = Slice1Desc(input_tensor=T("FLOAT32", (1, 1, 1, 4)),
                      output_tensor=T("FLOAT32", (1, 1, 1, 4)), input_window_offsets=(0,) * 4,
                      input_window_sizes=(1, 1, 1, 4), input_window_strides=(1, 1, 1, -1))
    (out,) = execute_operator(desc, [x], "2_1")
    assert out.view(np.uint32).reshape(-1).tolist() == bits[::-1].tolist()


# -- strided tensor descs over flat buffers -------------------------------------------------
def test_strided_input_reads_a_transposed_buffer() -> None:
    buffer = np.arange(6, dtype=np.int32)  # holds a 3x2 matrix row-major
    desc = SliceDesc(input_tensor=T("INT32", (2, 3), strides=(1, 2)),  # its transpose
                     output_tensor=T("INT32", (2, 3)), offsets=(0, 0), sizes=(2, 3),
                     strides=(1, 1))
    (out,) = execute_operator(desc, [buffer], "6_4")
    np.testing.assert_array_equal(out, np.arange(6, dtype=np.int32).reshape(3, 2).T)


def test_zero_stride_broadcasts() -> None:
    row = np.array([1, 2, 3], np.float16)
    desc = PaddingDesc(input_tensor=T("FLOAT16", (4, 3), strides=(0, 1)),
                       output_tensor=T("FLOAT16", (4, 5)), padding_mode="EDGE",
                       start_padding=(0, 1), end_padding=(0, 1))
    (out,) = execute_operator(desc, [row], "6_4")
    np.testing.assert_array_equal(out, np.tile([1, 1, 2, 3, 3], (4, 1)).astype(np.float16))


def test_strided_output_writes_into_a_bound_buffer() -> None:
    """A JOIN input written straight into its slot of a larger buffer, as aliasing would."""
    big = np.full(8, -1, np.int16)
    desc = SliceDesc(input_tensor=T("INT16", (2, 2)),
                     output_tensor=T("INT16", (2, 2), strides=(4, 1)), offsets=(0, 0),
                     sizes=(2, 2), strides=(1, 1))
    x = np.array([[1, 2], [3, 4]], np.int16)
    (out,) = execute_operator(desc, [x], "6_4", outputs=[big])
    assert out is big
    assert big.tolist() == [1, 2, -1, -1, 3, 4, -1, -1]


def test_aliasing_output_strides_are_refused() -> None:
    """By validate(), before the run: the one rule (``tensor.shared_element``)."""
    desc = SliceDesc(input_tensor=T("INT16", (2, 2)),
                     output_tensor=T("INT16", (2, 2), strides=(0, 1)), offsets=(0, 0),
                     sizes=(2, 2), strides=(1, 1))
    with pytest.raises(DmlValidationError, match="must lie at distinct addresses"):
        execute_operator(desc, [np.zeros((2, 2), np.int16)], "6_4")


def test_inputs_are_not_modified() -> None:
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    before = x.copy()
    desc = PaddingDesc(input_tensor=T("FLOAT32", (1, 1, 4, 4)),
                       output_tensor=T("FLOAT32", (1, 1, 4, 4)), padding_mode="CONSTANT",
                       start_padding=(0,) * 4, end_padding=(0,) * 4)
    (out,) = execute_operator(desc, [x], "1_0")
    out[...] = 99
    np.testing.assert_array_equal(x, before)


def test_a_bound_output_over_an_input_is_refused_and_the_input_kept() -> None:
    """None of these operators runs in place (``OperatorDesc.IN_PLACE``), as the backend and
    ``dmlgraph dxdispatch`` refuse it: an EDGE pad written over its own input changed the
    input to [0, 0, 1, 2]."""
    buffer = np.arange(6, dtype=np.float32)
    desc = PaddingDesc(input_tensor=T("FLOAT32", (1, 1, 1, 4)),
                       output_tensor=T("FLOAT32", (1, 1, 1, 6)), padding_mode="EDGE",
                       start_padding=(0, 0, 0, 1), end_padding=(0, 0, 0, 1))
    with pytest.raises(ExecutionError, match="bound output 0 shares memory with input 0"):
        execute_operator(desc, [buffer[:4]], outputs=[buffer])
    assert buffer.tolist() == [0, 1, 2, 3, 4, 5]


def test_an_input_and_output_in_disjoint_parts_of_one_buffer_run() -> None:
    """Only the addressed elements count: a flat input in the first half of a buffer and the
    output bound to the second half do not overlap."""
    buffer = np.array([1, 2, 3, 4, 0, 0, 0, 0, 0, 0], np.int32)
    desc = PaddingDesc(input_tensor=T("INT32", (4,)), output_tensor=T("INT32", (6,)),
                       padding_mode="CONSTANT", padding_value=7, start_padding=(1,),
                       end_padding=(1,))
    execute_operator(desc, [buffer[:4]], outputs=[buffer[4:]])
    assert buffer.tolist() == [1, 2, 3, 4, 7, 1, 2, 3, 4, 7]


def test_an_input_and_output_interleaved_in_one_buffer_run() -> None:
    """DirectML's interleaved tensors: the input the even elements of a buffer, the output
    bound to the odd ones, each read through a stride of 2. They share no element, but were
    refused as sharing memory by their bounds; one element in common still is refused."""
    buffer = np.arange(10, dtype=np.int32)
    desc = SliceDesc(input_tensor=T("INT32", (4,), strides=(2,)),
                     output_tensor=T("INT32", (4,), strides=(2,)), offsets=(0,), sizes=(4,),
                     strides=(1,))
    want = buffer.copy()
    want[1:9:2] = want[0:8:2]  # NumPy's own reading of it
    execute_operator(desc, [buffer], outputs=[buffer[1:]])
    assert buffer.tolist() == want.tolist()
    with pytest.raises(ExecutionError, match="bound output 0 shares memory with input 0"):
        execute_operator(desc, [buffer], outputs=[buffer[2:]])


@pytest.mark.parametrize("array, message", [
    (np.zeros((1, 1, 4, 4), np.float64), "does not match DataType"),
    (np.zeros((1, 4, 4), np.float32), "neither the tensor's sizes"),
    (np.zeros(15, np.float32), "shorter than the 16 elements"),
])
def test_bad_arrays_are_refused(array, message) -> None:
    desc = Slice1Desc(input_tensor=T("FLOAT32", (1, 1, 4, 4)),
                      output_tensor=T("FLOAT32", (1, 1, 2, 2)), input_window_offsets=(0,) * 4,
                      input_window_sizes=(1, 1, 4, 3), input_window_strides=(1, 1, 2, 2))
    with pytest.raises(ExecutionError, match=message):
        execute_operator(desc, [array], "2_1")


def test_counts_of_one_say_element() -> None:
    """"a flat buffer of 1 elements" said the plural of one."""
    desc = SliceDesc(input_tensor=T("INT32", (2,), strides=(1,)), output_tensor=T("INT32", (1,)),
                     offsets=(1,), sizes=(1,), strides=(1,))
    with pytest.raises(ExecutionError, match=r"input 0: a flat buffer of 1 element is shorter "
                       r"than the 2 elements its tensor desc addresses$"):
        execute_operator(desc, [np.zeros(1, np.int32)])
    broadcast = T("INT32", (1, 2), strides=(1, 0))  # not packed, addresses 1 element
    desc = SliceDesc(input_tensor=broadcast, output_tensor=T("INT32", (1, 2)), offsets=(0, 0),
                     sizes=(1, 2), strides=(1, 1))
    with pytest.raises(ExecutionError, match=r"pass a 1-D array of at least 1 element$"):
        execute_operator(desc, [np.zeros((1, 2), np.int32)])


def test_a_masked_bound_output_that_hides_elements_is_refused() -> None:
    """Its mask would hide the results written into its data; one masking nothing runs."""
    desc = PaddingDesc(input_tensor=T("INT32", (4,)), output_tensor=T("INT32", (6,)),
                       padding_mode="CONSTANT", padding_value=7, start_padding=(1,),
                       end_padding=(1,))
    x = np.array([1, 2, 3, 4], np.int32)
    hiding = np.ma.masked_array(np.zeros(6, np.int32), mask=[1, 0, 0, 0, 0, 0])
    with pytest.raises(ExecutionError, match="output 0: the bound output is a masked array "
                       "whose mask hides 1 of its elements"):
        execute_operator(desc, [x], outputs=[hiding])
    plain = np.ma.masked_array(np.zeros(6, np.int32))
    assert execute_operator(desc, [x], outputs=[plain])[0] is plain
    assert plain.tolist() == [7, 1, 2, 3, 4, 7]


def test_a_shaped_array_for_a_strided_desc_is_told_to_be_flat() -> None:
    """The message said "array shape (3, 2) is neither the tensor's sizes [3, 2] (packed) nor
    a flat buffer" of an array shaped as the sizes: a strided desc reads a flat buffer only."""
    desc = SliceDesc(input_tensor=T("INT32", (3, 2), strides=(1, 3)),
                     output_tensor=T("INT32", (3, 2), strides=(1, 3)), offsets=(0, 0),
                     sizes=(3, 2), strides=(1, 1))
    shaped = np.arange(6, dtype=np.int32).reshape(3, 2)
    with pytest.raises(ExecutionError, match=r"input 0: array shape \(3, 2\) is not a flat "
                       r"buffer, .* Strides \[1, 3\] \(not packed\) .* at least 6 elements"):
        execute_operator(desc, [shaped])
    with pytest.raises(ExecutionError, match=r"output 0: bound array shape \(3, 2\) is not a "
                       r"flat buffer"):
        execute_operator(desc, [shaped.reshape(-1)], outputs=[np.zeros((3, 2), np.int32)])


def test_a_bound_output_of_another_shape_is_refused() -> None:
    """As inputs are read: the desc's sizes (packed) or a flat buffer; a (5, 2) array for
    sizes [2, 5] was written row-major and handed back in its own shape."""
    desc = PaddingDesc(input_tensor=T("FLOAT32", (2, 3)), output_tensor=T("FLOAT32", (2, 5)),
                       padding_mode="CONSTANT", padding_value=1.5, start_padding=(0, 1),
                       end_padding=(0, 1))
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    with pytest.raises(ExecutionError, match=r"bound array shape \(5, 2\)"):
        execute_operator(desc, [x], outputs=[np.zeros((5, 2), np.float32)])
    flat = np.zeros(10, np.float32)
    assert execute_operator(desc, [x], outputs=[flat])[0] is flat
    np.testing.assert_array_equal(flat.reshape(2, 5), np.pad(x, [(0, 0), (1, 1)],
                                                             constant_values=1.5))


@pytest.mark.parametrize("call, message", [
    (lambda d, x: execute_operator(d.to_json(), [x]), "not dict"),
    (lambda d, x: execute_operator(d, None), "inputs must be a list"),
    (lambda d, x: execute_operator(d, x), "inputs must be a list"),
    (lambda d, x: execute_operator(d, [[[1.0], [1.0, 2.0]]]), "cannot be read as an array"),
    (lambda d, x: execute_operator(d, [x], outputs=np.zeros((2, 5), np.float32)),
     "outputs must be a list"),
    (lambda d, x: execute_operator(d, [x], outputs=[[0.0] * 10]), "must be a numpy array"),
])
def test_arguments_of_the_wrong_kind_are_one_clear_error(call, message) -> None:
    desc = PaddingDesc(input_tensor=T("FLOAT32", (2, 3)), output_tensor=T("FLOAT32", (2, 5)),
                       padding_mode="EDGE", start_padding=(0, 1), end_padding=(0, 1))
    with pytest.raises(ExecutionError, match=message):
        call(desc, np.ones((2, 3), np.float32))


def test_executor_validates_first() -> None:
    desc = PaddingDesc(input_tensor=T("INT8", (1, 1, 2, 2)), output_tensor=T("INT8", (1, 1, 2, 2)),
                       padding_mode="EDGE", start_padding=(0,) * 4, end_padding=(0,) * 4)
    with pytest.raises(DmlValidationError, match="accepted from DML_FEATURE_LEVEL_2_1"):
        execute_operator(desc, [np.zeros((1, 1, 2, 2), np.int8)], "1_0")


def test_a_padding_value_beyond_float16_is_inf_without_a_warning() -> None:
    """DirectML converts PADDING's FLOAT to the tensor's type: 1e6 is inf in float16, as a C
    cast gives it; NumPy's overflow warning used to leak onto stderr."""
    import warnings

    from backends.numpy.moves import constant_bits
    from dmlgraph.dml import BufferTensorDesc, PaddingDesc

    desc = PaddingDesc(input_tensor=BufferTensorDesc("FLOAT16", (2,)),
                       output_tensor=BufferTensorDesc("FLOAT16", (4,)),
                       padding_mode="DML_PADDING_MODE_CONSTANT", padding_value=1e6,
                       start_padding=(1,), end_padding=(1,))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert constant_bits(desc).view(np.float16) == np.inf


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(-3, 3), max_size=40))
def test_a_border_s_sources_split_into_maximal_arithmetic_pieces(values) -> None:
    """``moves._runs`` splits a border's source coordinates into pieces (first position,
    count, first source, step) that give every coordinate back, each piece as long as its
    step lasts (the next begins where a greedy walk would). It walks by piece now, not by
    element: a border of 10^7 took 3.5 s to plan."""
    from backends.numpy.moves import _runs

    sources = np.array(values, dtype=np.int64)
    pieces = _runs(sources)
    rebuilt = [first + step * k for _, count, first, step in pieces for k in range(count)]
    assert rebuilt == values
    position = 0
    for start, count, _, step in pieces:
        assert start == position
        position += count
        end = start + count
        if count > 1:
            assert all(values[i + 1] - values[i] == step for i in range(start, end - 1))
        if end < len(values) and count > 1:  # it stops where the step changes
            assert values[end] - values[end - 1] != step
    assert position == len(values)


def test_an_output_beyond_free_memory_is_refused_before_allocating(monkeypatch) -> None:
    """A valid strided output of TotalTensorSizeInBytes 2^50 made a fresh buffer of that size:
    NumPy's MemoryError, naming no operator; bound, a buffer of the addressed elements runs.
    A packed output larger than the free memory is refused too (faked small here)."""
    import backends.numpy.dml_executor as executor

    desc = SliceDesc(input_tensor=T("FLOAT32", (2,)),
                     output_tensor=T("FLOAT32", (2,), strides=(2,),
                                     total_tensor_size_in_bytes=2**50),
                     offsets=(0,), sizes=(2,), strides=(1,))
    x = np.array([1.5, 2.5], np.float32)
    with pytest.raises(ExecutionError, match=r"DML_OPERATOR_SLICE output 0: sizes \[2\], "
                       r"TotalTensorSizeInBytes 1125899906842624: the run allocates .* more "
                       r"than this machine has free .* buffer of the 3 elements"):
        execute_operator(desc, [x])
    bound = np.zeros(3, np.float32)
    assert execute_operator(desc, [x], outputs=[bound])[0].tolist() == [1.5, 0, 2.5]
    padding = PaddingDesc(input_tensor=T("FLOAT64", (1,)), output_tensor=T("FLOAT64", (10**6,)),
                          padding_mode="EDGE", start_padding=(0,), end_padding=(10**6 - 1,))
    monkeypatch.setattr(executor, "available_memory", lambda: 1_000_000.0)
    with pytest.raises(ExecutionError, match=r"PADDING output 0: sizes \[1000000\], .* "
                       r"allocates 8.0 MB, more than this machine has free \(1.0 MB\)$"):
        execute_operator(padding, [np.ones(1)])


def test_an_input_of_another_byte_order_runs_as_its_values() -> None:
    """As the backends take feeds (docs/PYTHON.md): a big-endian float32 array was refused
    as "dtype >f4 does not match DataType FLOAT32 (float32)", naming the type it has. Its
    values arrive, bit for bit (a NaN payload kept), shaped or as a strided flat buffer."""
    bits = np.array([0x7FC00001, 0x80000000, 0x3F800000, 0xFF800000], np.uint32)
    x = bits.view(np.float32).astype(">f4")
    shaped = Slice1Desc(input_tensor=T("FLOAT32", (4,)), output_tensor=T("FLOAT32", (4,)),
                        input_window_offsets=(0,), input_window_sizes=(4,),
                        input_window_strides=(-1,))
    (out,) = execute_operator(shaped, [x], "6_4")
    assert out.view(np.uint32).tolist() == bits[::-1].tolist()
    strided = SliceDesc(input_tensor=T("FLOAT32", (2,), strides=(2,)),
                        output_tensor=T("FLOAT32", (2,)), offsets=(0,), sizes=(2,), strides=(1,))
    (out,) = execute_operator(strided, [x], "6_4")
    assert out.view(np.uint32).tolist() == bits[::2].tolist()


@pytest.mark.parametrize("bound, problem", [
    (np.zeros(4, ">f4"), "byte order"),
    (np.zeros(4, np.float64), "float64"),
    (np.zeros(8, np.float32)[::2], "not C-contiguous"),
    (np.zeros(4, np.float32).view(np.int32), "int32"),
])
def test_a_bound_output_that_cannot_take_the_result_says_why(bound, problem) -> None:
    """"must be a writable contiguous float32 array" was said of a big-endian float32 array
    too, which is one: the message names what the array is."""
    desc = SliceDesc(input_tensor=T("FLOAT32", (4,)), output_tensor=T("FLOAT32", (4,)),
                     offsets=(0,), sizes=(4,), strides=(1,))
    with pytest.raises(ExecutionError, match=problem):
        execute_operator(desc, [np.zeros(4, np.float32)], "6_4", outputs=[bound])


def test_a_flat_buffer_is_read_only_as_far_as_its_desc_addresses() -> None:
    """A flat buffer longer than the desc addresses was made contiguous whole: a broadcast
    view of 2^40 elements raised NumPy's MemoryError ("Unable to allocate 4.00 TiB")."""
    desc = SliceDesc(input_tensor=T("FLOAT32", (2,), strides=(3,)),
                     output_tensor=T("FLOAT32", (2,)), offsets=(0,), sizes=(2,), strides=(1,))
    huge = np.broadcast_to(np.float32(2.5), (2**40,))
    (out,) = execute_operator(desc, [huge], "6_4")
    assert out.tolist() == [2.5, 2.5]


def test_bytes_for_the_inputs_list_are_refused_as_such() -> None:
    """bytes is a Sequence of ints: b"x" was read as one input, the int 120, "array dtype
    int64 does not match DataType FLOAT32"."""
    desc = SliceDesc(input_tensor=T("FLOAT32", (4,)), output_tensor=T("FLOAT32", (4,)),
                     offsets=(0,), sizes=(4,), strides=(1,))
    with pytest.raises(ExecutionError, match="inputs must be a list of arrays.*not bytes"):
        execute_operator(desc, b"abcd", "6_4")


def test_a_flat_buffer_of_another_byte_order_is_read_only_as_far_as_its_desc_addresses() -> None:
    """Converted to this machine's byte order whole first, a big-endian broadcast view of
    2^40 elements raised NumPy's MemoryError ("Unable to allocate 4.00 TiB"), a traceback."""
    desc = SliceDesc(input_tensor=T("FLOAT32", (2,), strides=(3,)),
                     output_tensor=T("FLOAT32", (2,)), offsets=(0,), sizes=(2,), strides=(1,))
    huge = np.broadcast_to(np.array(2.5, np.dtype(np.float32).newbyteorder()), (2**40,))
    (out,) = execute_operator(desc, [huge], "6_4")
    assert out.tolist() == [2.5, 2.5]
    flat = np.arange(4, dtype=np.dtype(np.float32).newbyteorder())
    assert execute_operator(desc, [flat], "6_4")[0].tolist() == [0.0, 3.0]
