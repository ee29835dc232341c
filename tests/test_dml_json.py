"""DxDispatch JSON: round trips, the forms DxDispatch accepts, and clear errors otherwise."""

from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from backends.numpy import execute_operator
from dmlgraph.dml import (
    BufferTensorDesc,
    DmlValidationError,
    JoinDesc,
    Padding1Desc,
    PaddingDesc,
    Slice1Desc,
    SliceDesc,
    operator_from_json,
)

DATA = Path(__file__).parent.parent / "models" / "dxdispatch"
T = BufferTensorDesc


def test_dxdispatch_example_slice_parses_and_runs() -> None:
    model = json.loads((DATA / "example_slice.json").read_text())
    desc = operator_from_json(model["dispatchables"]["slice"])
    assert isinstance(desc, SliceDesc)
    desc.validate("1_0")
    values = np.arange(1, 26, dtype=np.float32)  # the resource: valueStart 1, valueDelta 1
    (out,) = execute_operator(desc, [values], "1_0")
    # Rows 1..3, columns 1 and 3 of the 5x5 grid 1..25, worked out by hand.
    np.testing.assert_array_equal(out.reshape(-1), [7, 9, 12, 14, 17, 19])


def test_dxdispatch_example_join_parses() -> None:
    model = json.loads((DATA / "example_join.json").read_text())
    desc = operator_from_json(model["dispatchables"]["join"])
    assert isinstance(desc, JoinDesc)
    assert [t.sizes for t in desc.input_tensors] == [(3,), (2,), (5,)]
    desc.validate("4_1")
    with pytest.raises(DmlValidationError, match="accepted from DML_FEATURE_LEVEL_4_1"):
        desc.validate("3_0")  # 1-D JOIN needs FL 4.1


SAMPLES = [
    SliceDesc(input_tensor=T("INT8", (4, 5)), output_tensor=T("INT8", (2, 2)),
              offsets=(1, 0), sizes=(2, 2), strides=(2, 3)),
    Slice1Desc(input_tensor=T("FLOAT16", (3, 4), strides=(1, 3)),
               output_tensor=T("FLOAT16", (2, 1)), input_window_offsets=(0, 1),
               input_window_sizes=(3, 2), input_window_strides=(-2, 5)),
    JoinDesc(input_tensors=(T("UINT64", (1, 2), flags="OWNED_BY_DML"), T("UINT64", (3, 2))),
             output_tensor=T("UINT64", (4, 2), total_tensor_size_in_bytes=128,
                             guaranteed_base_offset_alignment=16), axis=0),
    PaddingDesc(input_tensor=T("FLOAT32", (2,)), output_tensor=T("FLOAT32", (5,)),
                padding_mode="CONSTANT", padding_value=float("nan"), start_padding=(1,),
                end_padding=(2,)),
    PaddingDesc(input_tensor=T("FLOAT32", (2,)), output_tensor=T("FLOAT32", (5,)),
                padding_mode="CONSTANT", padding_value=float("-inf"), start_padding=(1,),
                end_padding=(2,)),
    Padding1Desc(input_tensor=T("INT64", (2,)), output_tensor=T("INT64", (3,)),
                 padding_mode="CONSTANT", padding_value_data_type="INT64",
                 padding_value=-(2**63), start_padding=(0,), end_padding=(1,)),
    Padding1Desc(input_tensor=T("FLOAT16", (2,)), output_tensor=T("FLOAT16", (3,)),
                 padding_mode="WRAP", padding_value_data_type="FLOAT16",
                 padding_value=float("nan"), start_padding=(0,), end_padding=(1,)),
]


@pytest.mark.parametrize("desc", SAMPLES, ids=lambda d: d.name)
def test_round_trip_through_json_text(desc) -> None:
    """Bit for bit (descriptors are equal only so): the NaN sample is the quiet NaN "nan"
    reads back as."""
    text = json.dumps(desc.to_json(), allow_nan=False)  # strict JSON: no bare NaN
    back = operator_from_json(json.loads(text))
    assert back == desc


def _nan(bits: int, width: int) -> float:
    raw = bits.to_bytes(width, "little")
    return float(np.frombuffer(raw, dtype=np.float32 if width == 4 else np.float64)[0])


@pytest.mark.parametrize("desc, bits, quiet", [
    (PaddingDesc(input_tensor=T("FLOAT32", (2,)), output_tensor=T("FLOAT32", (3,)),
                 padding_mode="CONSTANT", padding_value=_nan(0xFFC00001, 4),
                 start_padding=(0,), end_padding=(1,)), "0xffc00001", "0x7fc00000"),
    (Padding1Desc(input_tensor=T("FLOAT32", (2,)), output_tensor=T("FLOAT32", (3,)),
                  padding_mode="CONSTANT", padding_value_data_type="FLOAT32",
                  padding_value=_nan(0xFFC00000, 4), start_padding=(0,), end_padding=(1,)),
     "0xffc00000", "0x7fc00000"),
    (Padding1Desc(input_tensor=T("FLOAT64", (2,)), output_tensor=T("FLOAT64", (3,)),
                  padding_mode="CONSTANT", padding_value_data_type="FLOAT64",
                  padding_value=_nan(0x7FF8000000000123, 8), start_padding=(0,),
                  end_padding=(1,)), "0x7ff8000000000123", "0x7ff8000000000000"),
], ids=["PADDING -nan", "PADDING1 FLOAT32 -nan", "PADDING1 FLOAT64 payload"])
def test_a_nan_json_cannot_carry_is_refused_not_written_as_another(desc, bits, quiet) -> None:
    """DxDispatch writes every float NaN as "nan" and reads it as the quiet NaN: to_json wrote
    these as "nan", which read back as another descriptor, filling other bits."""
    with pytest.raises(DmlValidationError) as info:
        desc.to_json()
    assert info.value.field == "PaddingValue", str(info.value)
    assert bits in str(info.value) and quiet in str(info.value), str(info.value)


def test_numpy_integers_in_fields_write_plain_json() -> None:
    """NumPy integers validate as ints do, so they must write as ints: an np.int64 Axis or an
    np.uint64 TotalTensorSizeInBytes reached to_json()'s dict, and json.dumps raised."""
    desc = JoinDesc(input_count=np.uint32(2),
                    input_tensors=[T("INT32", (1, 2)),
                                   T("INT32", (1, 2), total_tensor_size_in_bytes=np.uint64(16),
                                     guaranteed_base_offset_alignment=np.int32(16))],
                    output_tensor=T("INT32", (1, 4)), axis=np.int64(1))
    desc.validate("4_1")
    text = json.dumps(desc.to_json())
    assert json.loads(text)["desc"]["Axis"] == 1
    assert json.loads(text)["desc"]["InputTensors"][1]["TotalTensorSizeInBytes"] == 16
    assert operator_from_json(json.loads(text)) == desc
    slice_ = SliceDesc(input_tensor=T("INT8", (4,)), output_tensor=T("INT8", (2,)),
                       dimension_count=np.uint8(1), offsets=[1], sizes=[2], strides=[1])
    assert json.loads(json.dumps(slice_.to_json()))["desc"]["DimensionCount"] == 1


def _padding1(data_type: str, value: object) -> Padding1Desc:
    return Padding1Desc(input_tensor=T(data_type, (2,)), output_tensor=T(data_type, (4,)),
                        padding_mode="CONSTANT", padding_value_data_type=data_type,
                        padding_value=value, start_padding=(1,), end_padding=(1,))


def test_padding1_values_the_union_holds_alike_are_one_descriptor() -> None:
    """The union holds 3 and 3.0 as the same FLOAT32; the descriptors compared unequal (and
    hashed apart), and a FLOAT16 0.1 read back from its JSON (through float, as DxDispatch
    reads it) was another descriptor than the one written."""
    assert _padding1("FLOAT32", 3) == _padding1("FLOAT32", 3.0)
    assert hash(_padding1("FLOAT32", 3)) == hash(_padding1("FLOAT32", 3.0))
    assert _padding1("INT8", 3) == _padding1("INT8", 3.0) == _padding1("INT8", np.int8(3))
    half = _padding1("FLOAT16", 0.1)
    assert half.padding_value == 0.0999755859375  # float16 0x2E66, the nearest to 0.1
    assert operator_from_json(json.loads(json.dumps(half.to_json()))) == half


@pytest.mark.parametrize("data_type, value, written", [
    ("INT64", np.int64(-3), -3),
    ("FLOAT32", np.float32(1.5), 1.5),
    ("FLOAT64", Fraction(1, 4), 0.25),
    ("FLOAT32", np.uint8(7), 7.0),
])
def test_padding1_values_of_numpy_or_fractions_write_plain_json(data_type, value, written):
    """json.dumps raised TypeError on the np.int64, np.float32 or Fraction kept as given."""
    desc = _padding1(data_type, value)
    desc.validate("5_0")
    body = json.loads(json.dumps(desc.to_json()))["desc"]
    assert body["PaddingValue"] == written and type(body["PaddingValue"]) is type(written)
    assert operator_from_json({"type": "PADDING1", "desc": body}) == desc


def test_written_form_uses_full_names_and_shorthand() -> None:
    written = SAMPLES[2].to_json()
    assert written["type"] == "DML_OPERATOR_JOIN"
    body = written["desc"]
    assert list(body) == ["InputCount", "InputTensors", "OutputTensor", "Axis"]
    assert body["InputTensors"][0] == {
        "DataType": "DML_TENSOR_DATA_TYPE_UINT64", "Sizes": [1, 2],
        "Flags": "DML_TENSOR_FLAG_OWNED_BY_DML",
    }
    assert body["OutputTensor"]["TotalTensorSizeInBytes"] == 128
    assert SAMPLES[3].to_json()["desc"]["PaddingValue"] == "nan"
    assert SAMPLES[6].to_json()["desc"]["PaddingValue"] == {"UInt16": 0x7E00}


def test_inline_and_capitalised_forms() -> None:
    inline = {"Type": "DML_OPERATOR_SLICE", "InputTensor": {"DataType": "INT8", "Sizes": [4, 5]},
              "OutputTensor": {"DataType": "INT8", "Sizes": [2, 2]}, "DimensionCount": 2,
              "Offsets": [1, 0], "Sizes": [2, 2], "Strides": [2, 3]}
    assert operator_from_json(inline) == SAMPLES[0]
    capital = {"type": "SLICE", "Desc": {k: v for k, v in inline.items() if k != "Type"}}
    assert operator_from_json(capital) == SAMPLES[0]


def test_scalar_union_member_object_form() -> None:
    body = {"InputTensor": {"DataType": "FLOAT16", "Sizes": [2]},
            "OutputTensor": {"DataType": "FLOAT16", "Sizes": [3]}, "PaddingMode": "CONSTANT",
            "PaddingValueDataType": "FLOAT16", "PaddingValue": {"UInt16": 0x3C00},
            "DimensionCount": 1, "StartPadding": [1], "EndPadding": [0]}
    desc = operator_from_json({"type": "PADDING1", "desc": body})
    assert desc.padding_value == 1.0
    body["PaddingValue"] = {"Float32": 1.0}
    with pytest.raises(DmlValidationError, match='"UInt16"'):
        operator_from_json({"type": "PADDING1", "desc": body})


def test_tensor_flags_as_list_and_zero_total_size_means_default() -> None:
    body = SAMPLES[0].to_json()["desc"]
    body["InputTensor"] = {"DataType": "INT8", "Sizes": [4, 5], "Flags": ["OWNED_BY_DML"],
                           "TotalTensorSizeInBytes": 0}
    desc = operator_from_json({"type": "SLICE", "desc": body})
    assert desc.input_tensor.flags.name == "OWNED_BY_DML"
    assert desc.input_tensor.total_tensor_size_in_bytes == 20


BAD = [
    ({"type": "DML_OPERATOR_CONVOLUTION", "desc": {}}, "type", "unsupported operator"),
    ({"desc": {}}, "type", "required field is missing"),
    ({"type": 60, "desc": {}}, "type", "written as a string"),
    ({"type": "slice1", "desc": {}}, "type", "unsupported operator"),  # case-sensitive
]


@pytest.mark.parametrize("doc, field, rule", BAD)
def test_bad_dispatchables(doc, field, rule) -> None:
    with pytest.raises(DmlValidationError) as info:
        operator_from_json(doc)
    assert info.value.field == field and rule in str(info.value)


def _slice_body() -> dict:
    return SAMPLES[0].to_json()["desc"]


@pytest.mark.parametrize("edit, field, rule", [
    (lambda b: b.pop("Strides"), "Strides", "required field is missing"),
    (lambda b: b.update(Offsets=[1.0, 0]), "Offsets[0]", "unsigned 32-bit integer"),
    (lambda b: b.update(Offsets=[-1, 0]), "Offsets[0]", "unsigned 32-bit integer"),
    (lambda b: b.update(Offsets="1,0"), "Offsets", "must be an array"),
    (lambda b: b.update(Bogus=1), "desc.Bogus", "unknown field"),
    (lambda b: b["InputTensor"].update(DataType="FLOAT128"), "InputTensor.DataType",
     "not a DML_TENSOR_DATA_TYPE"),
    (lambda b: b["InputTensor"].update(DataType=1), "InputTensor.DataType", "string"),
    (lambda b: b["InputTensor"].pop("Sizes"), "InputTensor.Sizes", "required"),
    (lambda b: b["InputTensor"].update(DimensionCount=3), "InputTensor.DimensionCount",
     "number of Sizes"),
    (lambda b: b["InputTensor"].update(Flags=1), "InputTensor.Flags", "string"),
    # a tensor's DimensionCount is a UINT (DxDispatch's tensor desc table: "UINT, Integer"):
    # 2.0 and true, equal to a count of Sizes as Python compares them, were taken
    (lambda b: b["InputTensor"].update(DimensionCount=float(len(b["InputTensor"]["Sizes"]))),
     "InputTensor.DimensionCount", "unsigned 32-bit integer"),
    (lambda b: b["InputTensor"].update(Sizes=[4], DimensionCount=True),
     "InputTensor.DimensionCount", "unsigned 32-bit integer"),
])
def test_bad_fields_name_the_path(edit, field, rule) -> None:
    body = _slice_body()
    edit(body)
    with pytest.raises(DmlValidationError) as info:
        operator_from_json({"type": "SLICE", "desc": body})
    assert info.value.field == field, str(info.value)
    assert rule in str(info.value)


@pytest.mark.parametrize("edit, field", [
    (lambda b, big: b.update(Offsets=big), "Offsets"),
    (lambda b, big: b["InputTensor"].update(Sizes={"n": big}), "InputTensor.Sizes"),
    (lambda b, big: b["InputTensor"].update(DataType=str(big)), "InputTensor.DataType"),
])
def test_a_huge_value_is_shown_by_its_start_and_length(edit, field) -> None:
    """The message shows 200 characters of a value and its length; the error keeps the value.
    200000 offsets were a message of 1.5 MB (json_fuzz: a value misplaced whole)."""
    body = _slice_body()
    big = list(range(200000))
    edit(body, big)
    with pytest.raises(DmlValidationError) as info:  # 200000 offsets: read, then refused
        operator_from_json({"type": "SLICE", "desc": body}).validate()
    message = str(info.value)
    assert info.value.field == field and len(message) < 1000, message[:1000]
    assert f"{field} = " in message and "characters)" in message


@pytest.mark.parametrize("desc", SAMPLES, ids=lambda d: d.name)
def test_a_count_field_left_out_is_refused(desc) -> None:
    """DML_SPEC.md section 6: "DimensionCount/InputCount are required" in DxDispatch's JSON,
    though the arrays they count would give them. Only another field's absence was tested."""
    body = desc.to_json()["desc"]
    count = "InputCount" if "InputCount" in body else "DimensionCount"
    del body[count]
    with pytest.raises(DmlValidationError) as info:
        operator_from_json({"type": desc.name, "desc": body})
    assert info.value.field == count and "required field is missing" in str(info.value)


def test_float_field_accepts_named_strings_only() -> None:
    body = SAMPLES[3].to_json()["desc"]
    for text, check in (("inf", math.isinf), ("NaN", math.isnan), ("-INF", math.isinf)):
        body["PaddingValue"] = text
        assert check(operator_from_json({"type": "PADDING", "desc": body}).padding_value)
    body["PaddingValue"] = "1.5"
    with pytest.raises(DmlValidationError, match="PaddingValue"):
        operator_from_json({"type": "PADDING", "desc": body})


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=6), st.data())
def test_slice1_round_trip_property(shape, data) -> None:
    offsets, sizes, strides, out = [], [], [], []
    for n in shape:
        o = data.draw(st.integers(0, n - 1))
        s = data.draw(st.integers(1, n - o))
        k = data.draw(st.integers(1, 3)) * data.draw(st.sampled_from([1, -1]))
        offsets.append(o), sizes.append(s), strides.append(k)
        out.append(1 + (s - 1) // abs(k))
    desc = Slice1Desc(input_tensor=T("INT32", shape), output_tensor=T("INT32", out),
                      input_window_offsets=offsets, input_window_sizes=sizes,
                      input_window_strides=strides)
    assert operator_from_json(json.loads(json.dumps(desc.to_json()))) == desc


@pytest.mark.parametrize("extra", [
    {"executionFlags": "NONE"},
    {"executionFlags": ["ALLOW_HALF_PRECISION_COMPUTATION",
                        "DML_EXECUTION_FLAG_DISABLE_META_COMMANDS"]},
    {"executionFlags": []},
    {"dmlCompileType": "DmlCompileGraph"},
    {"dmlCompileType": "DmlCompileOp", "executionFlags": "DESCRIPTORS_VOLATILE"},
])
def test_dispatchable_options_dxdispatch_reads_are_taken(extra) -> None:
    """A copy computes alike whatever the flags and however it is compiled: read, then left."""
    doc = {"type": "SLICE", "desc": _slice_body(), **extra}
    assert operator_from_json(doc) == SAMPLES[0]


@pytest.mark.parametrize("extra, field, rule", [
    # ParseDmlExecutionFlagsField / ParseDmlCompileTypeField refuse these; they were ignored
    ({"executionFlags": ["NOPE"]}, "executionFlags[0]", "not a DML_EXECUTION_FLAGS"),
    ({"executionFlags": "DML_EXECUTION_FLAGS_NONE"}, "executionFlags", "not a DML_EXECUTION_FLAGS"),
    ({"executionFlags": 1}, "executionFlags", "a string or an array of strings"),
    ({"executionFlags": [" NONE"]}, "executionFlags[0]", "without spaces"),
    ({"dmlCompileType": "DmlCompileGraphX"}, "dmlCompileType",
     "one of DmlCompileOp, DmlCompileGraph"),
    ({"dmlCompileType": 1}, "dmlCompileType", "one of DmlCompileOp, DmlCompileGraph"),
])
def test_dispatchable_options_dxdispatch_refuses_are_refused(extra, field, rule) -> None:
    with pytest.raises(DmlValidationError) as info:
        operator_from_json({"type": "SLICE", "desc": _slice_body(), **extra})
    assert info.value.field == field and rule in str(info.value), str(info.value)


@pytest.mark.parametrize("given, hint", [
    (json.dumps({"type": "SLICE", "desc": {}}), "json.loads"),
    (b'{"type": "SLICE"}', "json.loads"),
    ([1], "not list"),
])
def test_a_dispatchable_that_is_no_object_is_named_so(given, hint) -> None:
    """A dispatchable's JSON text was refused as "dispatchable:  = '...': a dispatchable must
    be an object", an empty field and the whole text; it names the argument and the cure."""
    with pytest.raises(DmlValidationError) as info:
        operator_from_json(given)
    message = str(info.value)
    assert info.value.field == "dispatchable" and hint in message and "  " not in message
    assert len(message) < 200, message


def test_a_read_only_mapping_is_a_dispatchable_as_a_dict_is() -> None:
    """``operator_from_json`` says it takes a Mapping: a ``MappingProxyType`` (nested too)
    was refused as "a dispatchable is a JSON object, a dict, not mappingproxy"."""
    from types import MappingProxyType

    dispatchable = json.loads((DATA / "example_slice.json").read_text())["dispatchables"]["slice"]
    frozen = MappingProxyType({key: MappingProxyType(value) if isinstance(value, dict) else value
                               for key, value in dispatchable.items()})
    assert operator_from_json(frozen) == operator_from_json(dispatchable)


def _padding1_json(value: object) -> dict:
    """A FLOAT16 PADDING1 as JSON, its PaddingValue ``value``."""
    tensor = {"DataType": "FLOAT16", "Sizes": [1, 1, 1, 2]}
    return {"type": "PADDING1", "desc": {
        "InputTensor": tensor, "OutputTensor": {**tensor, "Sizes": [1, 1, 1, 4]},
        "PaddingMode": "CONSTANT", "PaddingValueDataType": "FLOAT16", "PaddingValue": value,
        "DimensionCount": 4, "StartPadding": [0, 0, 0, 1], "EndPadding": [0, 0, 0, 1]}}


@pytest.mark.filterwarnings("error")  # NumPy's overflow warning was printed above the output
@pytest.mark.parametrize("value", [1e39, -1e300, 70000.0, 65520.0])
def test_a_float16_padding_value_past_float_overflows_as_one_past_half_does(value) -> None:
    """DxDispatch reads a FLOAT16 through float; a number beyond float became inf there, with
    NumPy's "overflow encountered in cast" warning, and inf passed the check that refuses
    70000 (json_fuzz): PaddingValue 1e39 padded with inf."""
    desc = operator_from_json(_padding1_json(value))
    with pytest.raises(DmlValidationError, match="overflows DML_TENSOR_DATA_TYPE_FLOAT16"):
        desc.validate()


@pytest.mark.filterwarnings("error")
def test_a_float16_padding_value_within_half_still_rounds_through_float() -> None:
    """65519 rounds to half's largest, 65504 (to float first, then to half); bits 0x7C00 are
    inf."""
    assert operator_from_json(_padding1_json(65519.0)).padding_value == 65504.0
    assert operator_from_json(_padding1_json({"UInt16": 0x7C00})).padding_value == math.inf


def test_a_desc_field_of_an_integer_too_long_for_str_is_named() -> None:
    """A Python caller's 10**5000 (no JSON file reaches past 309 digits) raised ValueError
    from the message's repr: a traceback, not the field's rule."""
    with pytest.raises(DmlValidationError, match="InputCount = an integer of 5000 digits or "
                       "more: must be an unsigned 32-bit integer"):
        operator_from_json({"type": "DML_OPERATOR_JOIN", "InputCount": 10**5000})
