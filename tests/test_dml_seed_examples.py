"""Every example of the seed documents, built in Python and from DxDispatch JSON.

Expected outputs are transcribed by hand from the seed pages (SLICE: seed 004, SLICE1: seeds
000/001, JOIN: seed 002, PADDING: seed 003); they are the oracle, not the code under test.
"""

from __future__ import annotations

import numpy as np
import pytest

from backends.numpy import execute_operator
from dmlgraph.dml import (
    BufferTensorDesc,
    FeatureLevel,
    JoinDesc,
    OperatorDesc,
    PaddingDesc,
    PaddingMode,
    Slice1Desc,
    SliceDesc,
    operator_from_json,
)
from dmlgraph.dml.indexmaps import source_indices

F32 = "FLOAT32"
SLICE_INPUT = np.arange(1, 17, dtype=np.float32).reshape(1, 1, 4, 4)


def both_forms(python: OperatorDesc, json_desc: dict) -> list[OperatorDesc]:
    from_json = operator_from_json(json_desc)
    assert from_json == python
    return [python, from_json]


def tensor_json(sizes: list[int]) -> dict:
    return {"DataType": "FLOAT32", "Sizes": sizes}


# -- DML_SLICE (seed 004) ---------------------------------------------------------------------
SLICE_EXAMPLES = [
    pytest.param(
        [0, 0, 1, 2], [1, 1, 3, 2], [1, 1, 1, 1],
        [[7, 8], [11, 12], [15, 16]],
        id="example1-contiguous",
    ),
    pytest.param(
        [0, 0, 1, 0], [1, 1, 2, 2], [1, 1, 2, 3],
        [[5, 8], [13, 16]],
        id="example2-strided",
    ),
]


@pytest.mark.parametrize("offsets, sizes, strides, expected", SLICE_EXAMPLES)
def test_slice_seed_example(offsets, sizes, strides, expected) -> None:
    python = SliceDesc(
        input_tensor=BufferTensorDesc(F32, (1, 1, 4, 4)),
        output_tensor=BufferTensorDesc(F32, sizes),
        offsets=offsets,
        sizes=sizes,
        strides=strides,
    )
    json_desc = {
        "type": "DML_OPERATOR_SLICE",
        "desc": {
            "InputTensor": tensor_json([1, 1, 4, 4]),
            "OutputTensor": tensor_json(sizes),
            "DimensionCount": 4,
            "Offsets": offsets,
            "Sizes": sizes,
            "Strides": strides,
        },
    }
    for desc in both_forms(python, json_desc):
        (out,) = execute_operator(desc, [SLICE_INPUT], FeatureLevel.L1_0)
        np.testing.assert_array_equal(out, np.array(expected, np.float32).reshape(sizes))


# -- DML_SLICE1 (seeds 000 Korean, 001 English) -----------------------------------------------
SLICE1_EXAMPLES = [
    pytest.param([1, 1, 2, 2], [[2, 4], [10, 12]], id="example1-positive-strides"),
    pytest.param([1, 1, -2, 2], [[14, 16], [6, 8]], id="example2-negative-stride"),
]


@pytest.mark.parametrize("strides, expected", SLICE1_EXAMPLES)
def test_slice1_seed_example(strides, expected) -> None:
    python = Slice1Desc(
        input_tensor=BufferTensorDesc(F32, (1, 1, 4, 4)),
        output_tensor=BufferTensorDesc(F32, (1, 1, 2, 2)),
        input_window_offsets=[0, 0, 0, 1],
        input_window_sizes=[1, 1, 4, 3],
        input_window_strides=strides,
    )
    json_desc = {
        "type": "SLICE1",  # DxDispatch accepts the suffix form
        "desc": {
            "InputTensor": {"Type": "DML_TENSOR_TYPE_BUFFER",
                            "Desc": {"DataType": "FLOAT32", "Sizes": [1, 1, 4, 4]}},
            "OutputTensor": tensor_json([1, 1, 2, 2]),
            "DimensionCount": 4,
            "InputWindowOffsets": [0, 0, 0, 1],
            "InputWindowSizes": [1, 1, 4, 3],
            "InputWindowStrides": strides,
        },
    }
    for desc in both_forms(python, json_desc):
        (out,) = execute_operator(desc, [SLICE_INPUT], FeatureLevel.L2_1)
        np.testing.assert_array_equal(out, np.array(expected, np.float32).reshape(1, 1, 2, 2))


# -- DML_JOIN (seed 002) ----------------------------------------------------------------------
def _join_case(inputs: list[np.ndarray], axis: int) -> list[OperatorDesc]:
    out_sizes = list(inputs[0].shape)
    out_sizes[axis] = sum(x.shape[axis] for x in inputs)
    python = JoinDesc(
        input_tensors=[BufferTensorDesc(F32, x.shape) for x in inputs],
        output_tensor=BufferTensorDesc(F32, out_sizes),
        axis=axis,
    )
    json_desc = {
        "type": "DML_OPERATOR_JOIN",
        "desc": {
            "InputCount": len(inputs),
            "InputTensors": [tensor_json(list(x.shape)) for x in inputs],
            "OutputTensor": tensor_json(out_sizes),
            "Axis": axis,
        },
    }
    return both_forms(python, json_desc)


def test_join_seed_example1_only_axis_3() -> None:
    a = np.array([[[[1, 2, 3], [4, 5, 6]]]], np.float32)
    b = np.array([[[[7, 8, 9, 10], [11, 12, 13, 14]]]], np.float32)
    expected = np.array(
        [[[[1, 2, 3, 7, 8, 9, 10], [4, 5, 6, 11, 12, 13, 14]]]], np.float32
    )
    for desc in _join_case([a, b], 3):
        (out,) = execute_operator(desc, [a, b], FeatureLevel.L1_0)
        np.testing.assert_array_equal(out, expected)


JOIN2_INPUTS = [
    np.array([[[[1, 2], [3, 4]]]], np.float32),
    np.array([[[[5, 6], [7, 8]]]], np.float32),
    np.array([[[[9, 10], [11, 12]]]], np.float32),
]
JOIN2_EXPECTED = {
    1: [[[[1, 2], [3, 4]], [[5, 6], [7, 8]], [[9, 10], [11, 12]]]],
    2: [[[[1, 2], [3, 4], [5, 6], [7, 8], [9, 10], [11, 12]]]],
    3: [[[[1, 2, 5, 6, 9, 10], [3, 4, 7, 8, 11, 12]]]],
}


@pytest.mark.parametrize("axis", [1, 2, 3])
def test_join_seed_example2_each_axis(axis: int) -> None:
    for desc in _join_case(JOIN2_INPUTS, axis):
        (out,) = execute_operator(desc, JOIN2_INPUTS, FeatureLevel.L1_0)
        np.testing.assert_array_equal(out, np.array(JOIN2_EXPECTED[axis], np.float32))


def test_join_seed_example1_other_axes_are_rejected() -> None:
    """The seed: "the tensors can't be joined along any other axis"."""
    a = BufferTensorDesc(F32, (1, 1, 2, 3))
    b = BufferTensorDesc(F32, (1, 1, 2, 4))
    for axis in range(3):
        out = [1, 1, 2, 3]
        out[axis] *= 2
        desc = JoinDesc(input_tensors=[a, b], output_tensor=BufferTensorDesc(F32, out), axis=axis)
        with pytest.raises(Exception, match="sizes off the join axis"):
            desc.validate(FeatureLevel.L1_0)


# -- DML_PADDING (seed 003) -------------------------------------------------------------------
PAD_INPUT = np.array([[1, 2, 3, 4], [5, 6, 7, 8], [1, 2, 3, 4], [5, 6, 7, 8]], np.float32)
PAD_EXPECTED = {
    "CONSTANT": [
        [9, 9, 9, 9, 9, 9, 9, 9, 9, 9],
        [9, 9, 1, 2, 3, 4, 9, 9, 9, 9],
        [9, 9, 5, 6, 7, 8, 9, 9, 9, 9],
        [9, 9, 1, 2, 3, 4, 9, 9, 9, 9],
        [9, 9, 5, 6, 7, 8, 9, 9, 9, 9],
        [9, 9, 9, 9, 9, 9, 9, 9, 9, 9],
        [9, 9, 9, 9, 9, 9, 9, 9, 9, 9],
        [9, 9, 9, 9, 9, 9, 9, 9, 9, 9],
    ],
    "EDGE": [
        [1, 1, 1, 2, 3, 4, 4, 4, 4, 4],
        [1, 1, 1, 2, 3, 4, 4, 4, 4, 4],
        [5, 5, 5, 6, 7, 8, 8, 8, 8, 8],
        [1, 1, 1, 2, 3, 4, 4, 4, 4, 4],
        [5, 5, 5, 6, 7, 8, 8, 8, 8, 8],
        [5, 5, 5, 6, 7, 8, 8, 8, 8, 8],
        [5, 5, 5, 6, 7, 8, 8, 8, 8, 8],
        [5, 5, 5, 6, 7, 8, 8, 8, 8, 8],
    ],
    "REFLECTION": [
        [7, 6, 5, 6, 7, 8, 7, 6, 5, 6],
        [3, 2, 1, 2, 3, 4, 3, 2, 1, 2],
        [7, 6, 5, 6, 7, 8, 7, 6, 5, 6],
        [3, 2, 1, 2, 3, 4, 3, 2, 1, 2],
        [7, 6, 5, 6, 7, 8, 7, 6, 5, 6],
        [3, 2, 1, 2, 3, 4, 3, 2, 1, 2],
        [7, 6, 5, 6, 7, 8, 7, 6, 5, 6],
        [3, 2, 1, 2, 3, 4, 3, 2, 1, 2],
    ],
    "SYMMETRIC": [
        [2, 1, 1, 2, 3, 4, 4, 3, 2, 1],
        [2, 1, 1, 2, 3, 4, 4, 3, 2, 1],
        [6, 5, 5, 6, 7, 8, 8, 7, 6, 5],
        [2, 1, 1, 2, 3, 4, 4, 3, 2, 1],
        [6, 5, 5, 6, 7, 8, 8, 7, 6, 5],
        [6, 5, 5, 6, 7, 8, 8, 7, 6, 5],
        [2, 1, 1, 2, 3, 4, 4, 3, 2, 1],
        [6, 5, 5, 6, 7, 8, 8, 7, 6, 5],
    ],
}
# Example 4 (SYMMETRIC) is marked "starting with DML_FEATURE_LEVEL_3_0".
PAD_LEVEL = {"CONSTANT": "1_0", "EDGE": "1_0", "REFLECTION": "1_0", "SYMMETRIC": "3_0"}


@pytest.mark.parametrize("mode", list(PAD_EXPECTED))
def test_padding_seed_example(mode: str) -> None:
    python = PaddingDesc(
        input_tensor=BufferTensorDesc(F32, (1, 1, 4, 4)),
        output_tensor=BufferTensorDesc(F32, (1, 1, 8, 10)),
        padding_mode=mode,
        padding_value=9.0 if mode == "CONSTANT" else 0.0,
        start_padding=[0, 0, 1, 2],
        end_padding=[0, 0, 3, 4],
    )
    json_body = {
        "InputTensor": tensor_json([1, 1, 4, 4]),
        "OutputTensor": tensor_json([1, 1, 8, 10]),
        "PaddingMode": f"DML_PADDING_MODE_{mode}",
        "PaddingValue": 9 if mode == "CONSTANT" else 0,
        "DimensionCount": 4,
        "StartPadding": [0, 0, 1, 2],
        "EndPadding": [0, 0, 3, 4],
    }
    for desc in both_forms(python, {"type": "DML_OPERATOR_PADDING", "desc": json_body}):
        (out,) = execute_operator(desc, [PAD_INPUT.reshape(1, 1, 4, 4)], PAD_LEVEL[mode])
        np.testing.assert_array_equal(
            out, np.array(PAD_EXPECTED[mode], np.float32).reshape(1, 1, 8, 10)
        )


@pytest.mark.parametrize("mode", ["EDGE", "REFLECTION", "SYMMETRIC"])
def test_index_maps_reproduce_the_padding_seed_examples(mode: str) -> None:
    """The index maps the lowering decomposes padding with (``indexmaps``) give seed 003's
    examples: rows padded 1 and 3, columns 2 and 4, of a 4 x 4 input. The executor reads
    EDGE's map only at each border's first position, so the examples through it did not
    check the whole of it."""
    rows = source_indices(PaddingMode.parse(mode), 4, 1, 3)
    cols = source_indices(PaddingMode.parse(mode), 4, 2, 4)
    np.testing.assert_array_equal(PAD_INPUT[np.ix_(rows, cols)], PAD_EXPECTED[mode])


# Source coordinates of 7 + 3 + 7 positions over an axis of 3, written out by hand: pads
# beyond the input repeat periodically (REFLECTION: "StartPadding[i] >= InputTensor.Sizes[i]
# ... is valid"; SYMMETRIC: "> InputTensor.Sizes[i]"; WRAP and EDGE from DML_SPEC.md's table).
LONG_PADS = {
    "EDGE": [0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 2, 2, 2, 2, 2, 2, 2],
    "REFLECTION": [1, 2, 1, 0, 1, 2, 1, 0, 1, 2, 1, 0, 1, 2, 1, 0, 1],
    "SYMMETRIC": [0, 0, 1, 2, 2, 1, 0, 0, 1, 2, 2, 1, 0, 0, 1, 2, 2],
    "WRAP": [2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0],
}


@pytest.mark.parametrize("mode", list(LONG_PADS))
def test_index_maps_of_pads_longer_than_the_input(mode: str) -> None:
    np.testing.assert_array_equal(
        source_indices(PaddingMode.parse(mode), 3, 7, 7), LONG_PADS[mode]
    )


@pytest.mark.parametrize("mode, period", [("REFLECTION", 4), ("SYMMETRIC", 6), ("WRAP", 3)])
def test_the_periods_the_executor_repeats_borders_by_are_the_maps(mode: str, period: int) -> None:
    """``indexmaps.PERIODS`` (by which the executor copies a long border as its first period
    repeated) at n = 3: the hand-written sequences above repeat with that period and with
    no shorter one."""
    from dmlgraph.dml.indexmaps import PERIODS

    assert PERIODS[PaddingMode.parse(mode)](3) == period
    sequence = LONG_PADS[mode]
    assert sequence[period:] == sequence[:-period]
    assert all(sequence[p:] != sequence[:-p] for p in range(1, period))


def test_padding_symmetric_example_needs_fl_3_0() -> None:
    desc = PaddingDesc(
        input_tensor=BufferTensorDesc(F32, (1, 1, 4, 4)),
        output_tensor=BufferTensorDesc(F32, (1, 1, 8, 10)),
        padding_mode="SYMMETRIC",
        start_padding=[0, 0, 1, 2],
        end_padding=[0, 0, 3, 4],
    )
    with pytest.raises(Exception, match="SYMMETRIC needs DML_FEATURE_LEVEL_3_0"):
        desc.validate("2_1")


def test_padding_value_truncated_for_integer_tensors() -> None:
    """Seed 003: for non-float tensors the value may be truncated (10.6 becomes 10)."""
    desc = PaddingDesc(
        input_tensor=BufferTensorDesc("INT32", (1, 1, 1, 2)),
        output_tensor=BufferTensorDesc("INT32", (1, 1, 1, 4)),
        padding_mode="CONSTANT",
        padding_value=10.6,
        start_padding=[0, 0, 0, 1],
        end_padding=[0, 0, 0, 1],
    )
    (out,) = execute_operator(desc, [np.array([[[[1, 2]]]], np.int32)], "2_1")
    np.testing.assert_array_equal(out, np.array([[[[10, 1, 2, 10]]]], np.int32))
