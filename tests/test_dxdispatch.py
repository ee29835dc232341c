"""Running DxDispatch models: the two shipped examples and the command line around them."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from dmlgraph.cli import main
from dmlgraph.dxdispatch import DxDispatchError, load_model, run_model

DATA = Path(__file__).parent.parent / "models" / "dxdispatch"


def test_join_example_prints_the_joined_buffer() -> None:
    """A = 1..10, B = 100, 115, 130. JOIN reads A[0:3], B[0:2] (its desc says 2 elements) and
    A from element 4 for 5 elements: 1 2 3 | 100 115 | 5 6 7 8 9 (worked out by hand)."""
    model = run_model(load_model(DATA / "example_join.json"))
    assert model.printed == ["Resource 'Out': 1, 2, 3, 100, 115, 5, 6, 7, 8, 9"]


def test_slice_example_prints_the_slice() -> None:
    """Rows 1..3 and columns 1, 3 of the 5x5 grid holding 1..25."""
    model = run_model(load_model(DATA / "example_slice.json"))
    assert model.printed == ["Resource 'output': 7, 9, 12, 14, 17, 19"]


def test_run_model_misused_is_one_error() -> None:
    """A path or a dict for the model, or a string for echo, were an AttributeError and a
    TypeError from inside the command loop."""
    path = DATA / "example_join.json"
    for model in (str(path), {"resources": {}}):
        with pytest.raises(DxDispatchError, match="run_model takes the model load_model"):
            run_model(model)  # type: ignore[arg-type]
    with pytest.raises(DxDispatchError, match="echo is None or a function"):
        run_model(load_model(path), echo="print")  # type: ignore[arg-type]


def test_cli_runs_example_and_saves(tmp_path, capsys) -> None:
    out = tmp_path / "res.npz"
    assert main(["dxdispatch", str(DATA / "example_join.json"), "-o", str(out)]) == 0
    assert "Resource 'Out': 1, 2, 3, 100, 115, 5, 6, 7, 8, 9" in capsys.readouterr().out
    saved = np.load(out)
    assert saved["A"].tolist() == list(range(1, 11))


def test_cli_feature_level_too_low_is_one_line_exit_2(capsys) -> None:
    code = main(["dxdispatch", str(DATA / "example_join.json"), "--feature-level", "3.0"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and "accepted from DML_FEATURE_LEVEL_4_1" in err


@pytest.mark.parametrize("edit, message", [
    (lambda m: m["commands"][0]["bindings"].pop("OutputTensor"), "nothing bound"),
    (lambda m: m["commands"][0]["bindings"].update(InputTensors=["A", "B"]),
     "requires 3 resources, but 2 were bound"),
    (lambda m: m["commands"].append({"type": "print", "resource": "Nope"}), "unknown resource"),
    (lambda m: m["dispatchables"]["join"]["desc"].update(Axis=1), "Axis"),
    (lambda m: m.pop("commands"), "no 'commands'"),
    (lambda m: m["resources"]["A"].update(initialValuesDataType="FLOAT128"), "FLOAT128"),
])
def test_bad_models_fail_clearly(tmp_path, capsys, edit, message) -> None:
    model = json.loads((DATA / "example_join.json").read_text())
    edit(model)
    path = tmp_path / "model.json"
    path.write_text(json.dumps(model))
    with pytest.raises(DxDispatchError, match=message):
        run_model(load_model(path))
    assert main(["dxdispatch", str(path)]) == 2
    assert message in capsys.readouterr().err


def test_truncated_json_is_exit_2(tmp_path, capsys) -> None:
    path = tmp_path / "cut.json"
    path.write_text((DATA / "example_slice.json").read_text()[:200])
    assert main(["dxdispatch", str(path)]) == 2
    assert "cannot read a JSON model" in capsys.readouterr().err


def test_initial_values_beyond_free_memory_are_refused_before_allocating(
    tmp_path, capsys, monkeypatch
) -> None:
    """np.full ran before any size check: a valueCount of 2^32 - 1 doubles (32 GiB) raised a
    MemoryError traceback (found by a review). The machine's free memory is faked small."""
    import dmlgraph.dxdispatch as dxdispatch_module

    monkeypatch.setattr(dxdispatch_module, "available_memory", lambda: 1_000_000.0)
    model = _slice_model([1, 2, 3, 4])
    model["resources"]["out"].update(initialValuesDataType="FLOAT64",
                                     initialValues={"value": 1.0, "valueCount": 200_000})
    code, out, err = _run_text(tmp_path, json.dumps(model), capsys)
    assert (code, out) == (2, "") and (
        "valueCount 200000 needs 3200000 bytes (its values and the buffer holding them), "
        "more memory" in err
    )
    # the values and the buffer they are copied into are both held: 1.6 MB of values need
    # 3.2 MB, so 0.8 MB of values is the most a free 1 MB (faked) takes
    for count, fits in ((62_500, True), (62_501, False)):
        model["resources"]["out"]["initialValues"]["valueCount"] = count
        model["resources"]["out"].pop("sizeInBytes", None)
        code, out, err = _run_text(tmp_path, json.dumps(model), capsys)
        assert ("more memory than this machine has free" in err) == (not fits), (count, err)


def test_json_nested_past_the_parser_is_exit_2(tmp_path, capsys) -> None:
    """A RecursionError escaped as a traceback (exit 1)."""
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    assert main(["dxdispatch", str(path)]) == 2
    assert "nest deeper than this parser reaches" in capsys.readouterr().err


def test_sequence_accumulates_in_the_element_type() -> None:
    """valueDelta is added step by step in float32: 0.1 ten times is not 1.0 in float32."""
    model = load_model({
        "resources": {"r": {"initialValuesDataType": "FLOAT32",
                            "initialValues": {"valueCount": 11, "valueStart": 0,
                                              "valueDelta": 0.1}}},
        "dispatchables": {}, "commands": []})
    expected = np.float32(0)
    for _ in range(10):
        expected = np.float32(expected + np.float32(0.1))
    assert model.resources["r"].values()[-1] == expected


def test_console_script_is_installed() -> None:
    beside = Path(sys.executable).parent / "dmlgraph"  # the venv running the tests
    exe = str(beside) if beside.exists() else shutil.which("dmlgraph")
    assert exe is not None, "pip install -e . should install the dmlgraph console script"
    done = subprocess.run([exe, "dxdispatch", str(DATA / "example_slice.json")],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Resource 'output': 7, 9, 12, 14, 17, 19"


# ------------------------------------------------- DxDispatch's own reading (JsonParsers.cpp)


def _slice_model(values: object, data_type: str = "FLOAT32", **binding: object) -> dict:
    """A 4-element SLICE of resource "in" into "out", then a print of "out"."""
    return {
        "resources": {
            "in": {"initialValuesDataType": data_type, "initialValues": values},
            "out": {"initialValuesDataType": data_type,
                    "initialValues": {"value": 0, "valueCount": 4}},
        },
        "dispatchables": {"s": {"type": "SLICE", "desc": {
            "InputTensor": {"DataType": data_type, "Sizes": [4]},
            "OutputTensor": {"DataType": data_type, "Sizes": [4]},
            "DimensionCount": 1, "Offsets": [0], "Sizes": [4], "Strides": [1]}}},
        "commands": [
            {"type": "dispatch", "dispatchable": "s",
             "bindings": {"InputTensor": {"name": "in", **binding}, "OutputTensor": "out"}},
            {"type": "print", "resource": "out"},
        ],
    }


def _run_text(tmp_path: Path, text: str, capsys) -> tuple[int, str, str]:
    path = tmp_path / "model.json"
    path.write_text(text)
    code = main(["dxdispatch", str(path)])
    out, err = capsys.readouterr()
    return code, out, err


def test_small_resources_and_runs_read_no_free_memory(tmp_path, capsys, monkeypatch) -> None:
    """Each resource and each dispatch read /proc/meminfo, however small: a quarter of the
    time of a model of 5,000 small slices. Below tensorio.UNWEIGHED_BYTES nothing is read;
    a resource of that size or more still is (and is refused past the free memory)."""
    import backends.numpy.dml_executor as executor
    import dmlgraph.dxdispatch as dxdispatch_module
    from dmlgraph.tensorio import UNWEIGHED_BYTES

    reads = []

    def free() -> float:
        reads.append(1)
        return 1e12

    monkeypatch.setattr(dxdispatch_module, "available_memory", free)
    monkeypatch.setattr(executor, "available_memory", free)
    model = _slice_model([1, 2, 3, 4])
    assert _run_text(tmp_path, json.dumps(model), capsys)[:2] == (0, "Resource 'out': 1, 2, 3, 4\n")
    assert reads == []
    model["resources"]["in"]["sizeInBytes"] = UNWEIGHED_BYTES
    assert _run_text(tmp_path, json.dumps(model), capsys)[0] == 0
    assert reads


def test_comments_trailing_commas_and_command_case_are_read(tmp_path, capsys) -> None:
    """RapidJSON's kParseCommentsFlag | kParseTrailingCommasFlag, and _stricmp on "type";
    a "//" inside a string stays."""
    model = _slice_model([1, 2, 3, 4])
    model["commands"][1]["type"] = "Print"
    model["dispatchables"]["s // not a comment"] = model["dispatchables"].pop("s")
    model["commands"][0]["dispatchable"] = "s // not a comment"
    text = json.dumps(model, indent=1).replace('"Strides": [\n     1\n    ]', '"Strides": [1,]')
    text = "// a model\n/* of one\n slice */" + text.replace('"commands"', '/* c */ "commands"')
    assert '[1,]' in text
    assert _run_text(tmp_path, text, capsys) == (0, "Resource 'out': 1, 2, 3, 4\n", "")


@pytest.mark.parametrize("values, data_type, message", [
    ([1.5, 2, 3, 4], "INT32", "initial value 1.5 is not an integer"),
    ([True, 2, 3, 4], "INT32", "initial value true is not an integer"),
    (["4", 2, 3, 4], "INT32", 'initial value "4" is not an integer'),
    ({"valueStart": 1, "valueDelta": 0.5, "valueCount": 4}, "INT32", "0.5 is not an integer"),
    (["x", 2, 3, 4], "FLOAT32", 'initial value "x" must be a number'),
    # NumPy's words were "Python int too large to convert to C long"
    ([2**64, 2, 3, 4], "INT32", "initial value 18446744073709551616 is outside "
                                "DML_TENSOR_DATA_TYPE_INT32's range, -2147483648 to 2147483647"),
    ([-1, 2, 3, 4], "UINT32", "outside DML_TENSOR_DATA_TYPE_UINT32's range, 0 to 4294967295"),
    ({"value": 2**31, "valueCount": 4}, "INT32", "initial value 2147483648 is outside"),
])
def test_integer_types_take_json_integers_only(tmp_path, capsys, values, data_type, message):
    """DxDispatch's integer parsers: "Expected a signed integer." (no truncation, no bools)."""
    code, _, err = _run_text(tmp_path, json.dumps(_slice_model(values, data_type)), capsys)
    assert code == 2 and err.count("\n") == 1 and message in err


def test_float16_numbers_round_through_float(tmp_path, capsys) -> None:
    """half(float(v)): 1 + 2**-11 + 2**-40 rounds to float 1 + 2**-11, a tie that goes to even
    1.0 (bits 0x3c00); rounded once from the double it would be 0x3c01."""
    value = 1 + 2**-11 + 2**-40
    model = run_model(load_model(_slice_model([value, 1, 1, 1], "FLOAT16")))
    assert model.resources["in"].values().view(np.uint16)[0] == 0x3C00
    from dmlgraph.dml import operator_from_json

    desc = operator_from_json({"type": "PADDING1", "desc": {
        "InputTensor": {"DataType": "FLOAT16", "Sizes": [2]},
        "OutputTensor": {"DataType": "FLOAT16", "Sizes": [4]}, "PaddingMode": "CONSTANT",
        "PaddingValueDataType": "FLOAT16", "PaddingValue": value, "DimensionCount": 1,
        "StartPadding": [1], "EndPadding": [1]}})
    assert desc.scalar().view(np.uint16) == 0x3C00


@pytest.mark.parametrize("spec, message", [
    ({"initialValuesOffsetInBytes": 16}, "sizeInBytes 16 cannot hold its 16 bytes of initial "
                                         "values at offset 16"),
    ({"initialValuesOffsetInBytes": -4}, "initialValuesOffsetInBytes -4 is not an unsigned"),
    ({"initialValuesOffsetInBytes": "4"}, 'initialValuesOffsetInBytes "4" is not an unsigned'),
])
def test_resource_sizes_and_offsets_as_dxdispatch_checks_them(tmp_path, capsys, spec, message):
    """sizeInBytes defaults to the initial data's size (rounded to 4), offset not added."""
    model = _slice_model([1, 2, 3, 4])
    model["resources"]["in"].update(spec)
    code, _, err = _run_text(tmp_path, json.dumps(model), capsys)
    assert code == 2 and err.count("\n") == 1 and message in err


@pytest.mark.parametrize("binding, alignment, message", [
    ({"elementOffset": 1}, None, "at byte 4, which is not a multiple of 16"),
    ({"elementOffset": 4}, 256, "at byte 16, which is not a multiple of 256"),
    ({"elementOffset": -1}, None, "elementOffset -1 is not an unsigned integer"),
    ({"elementOffset": "1"}, None, 'elementOffset "1" is not an unsigned integer'),
])
def test_binding_offsets_are_aligned_and_unsigned(tmp_path, capsys, binding, alignment, message):
    """DML_BUFFER_BINDING's Offset is a multiple of DML_MINIMUM_BUFFER_TENSOR_ALIGNMENT (16),
    and of the tensor's GuaranteedBaseOffsetAlignment when that is larger."""
    model = _slice_model(list(range(1, 9)), **binding)
    if alignment:
        model["dispatchables"]["s"]["desc"]["InputTensor"]["GuaranteedBaseOffsetAlignment"] = (
            alignment
        )
    code, _, err = _run_text(tmp_path, json.dumps(model), capsys)
    assert code == 2 and err.count("\n") == 1 and message in err


@pytest.mark.parametrize("alignment, offset, accepted", [
    (4, 1, False), (8, 2, False), (16, 1, False), (4, 4, True), (32, 4, False), (32, 8, True),
])
def test_a_small_guaranteed_alignment_keeps_the_16_byte_minimum(
    tmp_path, capsys, alignment: int, offset: int, accepted: bool
) -> None:
    """DML_BUFFER_TENSOR_DESC: "Buffer tensors always have a minimum alignment of 16 bytes";
    GuaranteedBaseOffsetAlignment, "if provided", is a further multiple the binding's offset
    keeps. So a FLOAT32 tensor with GuaranteedBaseOffsetAlignment 4 (valid: a power of two at
    least its element size) binds at bytes 0, 16, 32..., never at byte 4, which ran."""
    model = _slice_model(list(range(1, 13)), elementOffset=offset)
    model["dispatchables"]["s"]["desc"]["InputTensor"]["GuaranteedBaseOffsetAlignment"] = alignment
    code, out, err = _run_text(tmp_path, json.dumps(model), capsys)
    if accepted:  # element 4 and on: byte 16, or 32 (a multiple of both 16 and 32)
        values = ", ".join(str(v) for v in range(offset + 1, offset + 5))
        assert (code, out) == (0, f"Resource 'out': {values}\n")
    else:
        needed = max(16, alignment)
        assert code == 2 and err.count("\n") == 1
        assert f"at byte {4 * offset}, which is not a multiple of {needed}" in err


def _owned_slice_model() -> dict:
    """_slice_model with its input flagged DML_TENSOR_FLAG_OWNED_BY_DML and bound where
    DxDispatch binds such an input: in the dispatchable's own "bindings", which it binds when
    it initializes the operator, not in the dispatch command."""
    model = _slice_model([1, 2, 3, 4])
    dispatchable = model["dispatchables"]["s"]
    dispatchable["desc"]["InputTensor"]["Flags"] = "OWNED_BY_DML"
    dispatchable["bindings"] = {"InputTensor": "in"}
    del model["commands"][0]["bindings"]["InputTensor"]
    return model


def test_an_input_owned_by_dml_is_bound_at_initialization(tmp_path, capsys) -> None:
    """IDMLBindingTable::BindInputs: "If an input tensor has the DML_TENSOR_FLAG_OWNED_BY_DML
    flag set, it may only be bound when executing an operator initializer"; DxDispatch binds
    a dispatchable's own "bindings" then. Such a model was refused ("nothing bound for a
    required tensor"), its initialization bindings ignored."""
    model = _owned_slice_model()
    assert _run_text(tmp_path, json.dumps(model), capsys)[:2] == (0, "Resource 'out': 1, 2, 3, 4\n")


def test_an_input_owned_by_dml_holds_the_values_it_was_initialized_with(tmp_path, capsys):
    """DML_TENSOR_FLAG_OWNED_BY_DML: "DirectML makes a copy of the tensor data during
    initialization of an operator", and DxDispatch initializes every dispatchable before the
    first command: a dispatch writing 5, 6, 7, 8 into "in" first does not change what the
    owned input reads, the 1, 2, 3, 4 "in" held."""
    model = _owned_slice_model()
    model["resources"]["src"] = {"initialValuesDataType": "FLOAT32",
                                 "initialValues": [5, 6, 7, 8]}
    model["dispatchables"]["w"] = {"type": "SLICE", "desc": {
        "InputTensor": {"DataType": "FLOAT32", "Sizes": [4]},
        "OutputTensor": {"DataType": "FLOAT32", "Sizes": [4]},
        "DimensionCount": 1, "Offsets": [0], "Sizes": [4], "Strides": [1]}}
    model["commands"].insert(0, {"type": "dispatch", "dispatchable": "w",
                                 "bindings": {"InputTensor": "src", "OutputTensor": "in"}})
    model["commands"].append({"type": "print", "resource": "in"})
    code, out, _ = _run_text(tmp_path, json.dumps(model), capsys)
    assert (code, out) == (0, "Resource 'out': 1, 2, 3, 4\nResource 'in': 5, 6, 7, 8\n")


@pytest.mark.parametrize("edit, message", [
    # bound at dispatch, as any other input: it ran
    (lambda m: m["commands"][0]["bindings"].update(InputTensor="in"),
     "dispatch 's', bind point 'InputTensor': flagged DML_TENSOR_FLAG_OWNED_BY_DML, it is "
     "bound when DirectML initializes the operator"),
    (lambda m: m["dispatchables"]["s"].pop("bindings"),
     "dispatchable 's', bind point 'InputTensor': nothing bound for an input flagged "
     "DML_TENSOR_FLAG_OWNED_BY_DML"),
    # an input not flagged, bound at initialization: ignored, it ran
    (lambda m: m["dispatchables"]["s"]["desc"]["InputTensor"].pop("Flags"),
     "dispatchable 's', bind point 'InputTensor': bound at initialization (the "
     "dispatchable's \"bindings\"), which DirectML allows only for an input flagged"),
    (lambda m: m["dispatchables"]["s"]["bindings"].update(OutputTensor="out"),
     "dispatchable 's', bind point 'OutputTensor': bound at initialization"),
    (lambda m: m["dispatchables"]["s"]["bindings"].update(Bogus="out"),
     'dispatchable \'s\': DML_OPERATOR_SLICE has no bind point "Bogus"'),
])
def test_owned_by_dml_inputs_bind_at_initialization_alone(tmp_path, capsys, edit, message):
    model = _owned_slice_model()
    edit(model)
    code, _, err = _run_text(tmp_path, json.dumps(model), capsys)
    assert code == 2 and err.count("\n") == 1 and message in err, err


def test_a_join_flagging_some_of_its_inputs_owned_by_dml_is_refused(tmp_path, capsys):
    """DxDispatch binds JOIN's InputTensors whole, at initialization or at dispatch; DirectML
    binds its OWNED_BY_DML tensors at initialization only and the others at dispatch only."""
    model = json.loads((DATA / "example_join.json").read_text())
    model["dispatchables"]["join"]["desc"]["InputTensors"][0]["Flags"] = "OWNED_BY_DML"
    code, _, err = _run_text(tmp_path, json.dumps(model), capsys)
    assert code == 2 and "bind point 'InputTensors': only some of its tensors are flagged" in err


def test_an_aligned_offset_a_zero_element_size_and_a_one_item_list_bind(tmp_path, capsys):
    """elementOffset 4 of 4-byte elements is byte 16; elementSizeInBytes 0 means the
    resource's own; one resource may be written as a one-item list."""
    model = _slice_model(list(range(1, 9)), elementOffset=4, elementSizeInBytes=0)
    model["commands"][0]["bindings"]["OutputTensor"] = ["out"]
    assert _run_text(tmp_path, json.dumps(model), capsys)[:2] == (0, "Resource 'out': 5, 6, 7, 8\n")


@pytest.mark.parametrize("edit, message", [
    (lambda m: m["dispatchables"]["s"]["desc"]["OutputTensor"].update(
        TotalTensorSizeInBytes=64),
     "bind point 'OutputTensor': 'out' holds 16 bytes from byte 0, fewer than the tensor's "
     "TotalTensorSizeInBytes (64)"),
    (lambda m: m["commands"][0]["bindings"]["InputTensor"].update(elementOffset=4),
     "bind point 'InputTensor': 'in' holds 12 bytes from byte 16, fewer than the tensor's "
     "TotalTensorSizeInBytes (16)"),
])
def test_a_binding_smaller_than_its_tensors_total_size_is_refused(tmp_path, capsys, edit,
                                                                  message) -> None:
    """TotalTensorSizeInBytes is "a minimum size in bytes for the buffer that will contain
    this tensor" (DML_BUFFER_TENSOR_DESC): a 64-byte output in a 16-byte resource ran."""
    model = _slice_model(list(range(1, 8)))  # "in": 7 floats, 28 bytes; "out": 16 bytes
    edit(model)
    code, out, err = _run_text(tmp_path, json.dumps(model), capsys)
    assert code == 2 and out == "" and err.count("\n") == 1 and message in err


@pytest.mark.parametrize("edit, message", [
    (lambda m: m.update(resources=[]), "'resources' is a JSON array, not an object"),
    (lambda m: m.update(dispatchables=[]), "'dispatchables' is a JSON array, not an object"),
    (lambda m: m["dispatchables"].update(s=[1]), "dispatchable 's' is a JSON array, not an "
     "object"),  # was "dispatchable 's': dispatchable: = [1]", a field without a name
    # JSON's names of what the file holds, not Python's (json_fuzz: "a JSON NoneType", "a
    # JSON _JsonObject", "a JSON int")
    (lambda m: m.update(resources=None), "'resources' is a JSON null, not an object"),
    (lambda m: m.update(commands={}), "'commands' is a JSON object, not an array"),
    (lambda m: m.update(commands=1), "'commands' is a JSON number, not an array"),
    (lambda m: m.update(commands=True), "'commands' is a JSON boolean, not an array"),
    (lambda m: m["dispatchables"].update(s="SLICE"), "dispatchable 's' is a JSON string, not "
     "an object"),
    # was "unknown command type None", for a command of no type and one not an object
    (lambda m: m["commands"][1].pop("type"), "command 1 has no \"type\" (dispatch or print)"),
    (lambda m: m["commands"].append(None), "command 2 is a JSON null, not an object"),
    (lambda m: m["commands"].append(["print"]), "command 2 is a JSON array, not an object"),
    (lambda m: m["dispatchables"]["s"].update(type=" SLICE"), "unsupported operator"),
    (lambda m: m["dispatchables"]["s"]["desc"]["InputTensor"].update(DataType=" FLOAT32 "),
     "an enum name is written without spaces around it"),
    (lambda m: m["dispatchables"]["s"]["desc"]["InputTensor"].update(Strides=None),
     "Strides = null: must be an array"),
    # JSON's spelling of the values it names (was Python's: None, True, 'x', {'a': 1})
    (lambda m: m["dispatchables"]["s"]["desc"].update(Offsets={"a": True}),
     'Offsets = {"a": true}: must be an array'),
    (lambda m: m["dispatchables"]["s"]["desc"]["Offsets"].__setitem__(0, "x"),
     'Offsets[0] = "x": must be an unsigned 32-bit integer'),
    (lambda m: m["dispatchables"]["s"]["desc"].pop("Offsets"),
     "Offsets = (absent): required field is missing"),
    (lambda m: m["dispatchables"]["s"]["desc"]["InputTensor"].pop("DataType"),
     "InputTensor.DataType = (absent): required field is missing"),
    # DirectML's C name of the enum, and the value said once (was "= "FOO": 'FOO' is not a
    # TensorDataType", Python's class)
    (lambda m: m["dispatchables"]["s"]["desc"]["InputTensor"].update(DataType="FOO"),
     'InputTensor.DataType = "FOO": is not a DML_TENSOR_DATA_TYPE (one of UNKNOWN, FLOAT32,'),
])
def test_malformed_parts_are_one_line_errors(tmp_path, capsys, edit, message) -> None:
    model = _slice_model([1, 2, 3, 4])
    edit(model)
    code, _, err = _run_text(tmp_path, json.dumps(model), capsys)
    assert code == 2 and err.count("\n") == 1 and message in err


def test_empty_strides_and_a_type_beside_the_fields_are_a_plain_buffer(tmp_path, capsys):
    """ParseDmlBufferTensorDesc: ``strides.empty() ? nullptr``; ParseDmlTensorDesc parses
    the object itself when it has a Type but no Desc."""
    model = _slice_model([1, 2, 3, 4])
    desc = model["dispatchables"]["s"]["desc"]
    desc["InputTensor"].update(Strides=[])
    desc["OutputTensor"] = {"Type": "BUFFER", **desc["OutputTensor"]}
    assert _run_text(tmp_path, json.dumps(model), capsys)[:2] == (0, "Resource 'out': 1, 2, 3, 4\n")


def test_one_byte_integers_print_as_characters(tmp_path, capsys) -> None:
    """Executor.cpp writes each element with ``os << value``: an int8_t or uint8_t is a char."""
    model = _slice_model([72, 105, 33, 63], "UINT8")
    assert _run_text(tmp_path, json.dumps(model), capsys)[:2] == (0, "Resource 'out': H, i, !, ?\n")


@pytest.mark.parametrize("edit, message", [
    # a data type with no NumPy element type: a traceback from binding, before validation
    (lambda m: [m["dispatchables"]["s"]["desc"][t].update(DataType="INT4")
                for t in ("InputTensor", "OutputTensor")], "DML_OPERATOR_SLICE supports"),
    (lambda m: m["dispatchables"]["s"]["desc"]["InputTensor"].update(DataType="UNKNOWN"),
     "a tensor's DataType must be known"),
    # ParseUInt32Field: gsl::narrow (it allocated 16 GiB here, and was killed)
    (lambda m: m["resources"]["out"]["initialValues"].update(valueCount=2**32),
     "valueCount 4294967296 must be an integer from 1 to 2^32 - 1"),
    # a valid UINT64 size: bytearray(2^63) raised OverflowError, 2^40 would take the memory
    (lambda m: m["resources"]["out"].update(sizeInBytes=2**63),
     "sizeInBytes 9223372036854775808 is 9223372036854775808 bytes, more memory than"),

    (lambda m: m["resources"]["out"].update(sizeInBytes=2**64),
     "sizeInBytes 18446744073709551616 is beyond UINT64"),
    # ParseFloatingPointNumber: IsLosslessDouble
    (lambda m: m["resources"]["in"].update(initialValues=[2**53 + 1, 2, 3, 4]),
     "9007199254740993 is no double exactly"),
    (lambda m: m["resources"]["in"].pop("initialValuesDataType"),
     "initialValuesDataType is required"),
    # ParseModelBufferDesc: "'initialValues' must be non-empty." (it ran, the buffer zeros)
    (lambda m: m["resources"]["in"].update(initialValues=[], sizeInBytes=16),
     "resource 'in': initialValues is an empty array"),
    # ParseDmlTensorDataType: a string, compared with strcmp (1 ran as FLOAT32, " FLOAT32" too)
    (lambda m: m["resources"]["in"].update(initialValuesDataType=1),
     "resource 'in': initialValuesDataType = 1: a DML_TENSOR_DATA_TYPE is written as a string"),
    (lambda m: m["resources"]["in"].update(initialValuesDataType=" FLOAT32"),
     'initialValuesDataType = " FLOAT32": an enum name is written without spaces around it'),
    (lambda m: m["resources"]["in"].update(initialValuesDataType="UNKNOWN"),
     'initialValuesDataType = "UNKNOWN": DxDispatch fills a buffer of FLOAT32, FLOAT16, '
     "UINT32, UINT16"),
    (lambda m: m["commands"].append({"type": "writeFile", "resource": "out",
                                     "targetPath": "out.bin"}), "writeFile is not run here"),
    # the Model checks every binding's name; the Executor initializes every dispatchable
    (lambda m: m["commands"].append({"type": "dispatch", "dispatchable": "s", "bindings": {
        "InputTensor": "in", "OutputTensor": "nowhere"}}), 'binds unknown resource "nowhere"'),
    # the schema's threadGroupCount: three integers above 0, even where DML ignores it
    (lambda m: m["commands"][0].update(threadGroupCount=[1, "x", 1]),
     'threadGroupCount = [1, "x", 1]: the schema\'s is three integers above 0'),
    (lambda m: m["commands"][0].update(threadGroupCount=[1, 1]), "threadGroupCount = [1, 1]"),
    (lambda m: m["commands"][0].update(threadGroupCount=[0, 1, 1]),
     "threadGroupCount = [0, 1, 1]"),
    (lambda m: m["commands"][0].update(threadGroupCount=[True, 1, 1]),
     "threadGroupCount = [true, 1, 1]"),
    (lambda m: m["dispatchables"].update(unused={"type": "SLICE", "desc": {
        "InputTensor": {"DataType": "FLOAT32", "Sizes": [4]},
        "OutputTensor": {"DataType": "FLOAT32", "Sizes": [3]},
        "DimensionCount": 1, "Offsets": [0], "Sizes": [4], "Strides": [1]}}),
     "dispatchable 'unused'"),
])
def test_what_dxdispatch_refuses_is_refused_before_anything_runs(tmp_path, capsys, edit,
                                                                  message) -> None:
    """DxDispatch parses every command before it runs one: nothing is printed first."""
    model = _slice_model([1, 2, 3, 4])
    edit(model)
    code, out, err = _run_text(tmp_path, json.dumps(model), capsys)
    assert (code, out) == (2, "") and err.count("\n") == 1 and message in err, err
    assert not (tmp_path / "out.bin").exists()


def test_rapidjson_reads_the_first_of_a_repeated_key_and_stops_after_the_root(
    tmp_path, capsys
) -> None:
    """FindMember finds the first member of a name; kParseStopWhenDoneFlag ignores what
    follows the root value."""
    text = json.dumps(_slice_model([1, 2, 3, 4]))
    text = text.replace('"resource": "out"', '"resource": "out", "resource": "in"')
    assert _run_text(tmp_path, text + "\n{trailing", capsys) == (
        0, "Resource 'out': 1, 2, 3, 4\n", "")


def test_a_map_entry_given_twice_is_its_last(tmp_path, capsys) -> None:
    """Resources, dispatchables and bindings are maps DxDispatch fills member by member
    (Model.cpp: ``m_resourceDescsByName[name] = ...``): the last of a name wins there."""
    text = json.dumps(_slice_model([1, 2, 3, 4]))
    text = text.replace('"resources": {', '"resources": {"in": {"initialValuesDataType": '
                        '"FLOAT32", "initialValues": [9, 9, 9, 9]}, ', 1)
    text = text.replace('"OutputTensor": "out"', '"OutputTensor": "in", "OutputTensor": "out"')
    assert _run_text(tmp_path, text, capsys) == (0, "Resource 'out': 1, 2, 3, 4\n", "")


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e400", "1" + "0" * 400])
def test_numbers_rapidjson_refuses_are_refused(tmp_path, capsys, literal) -> None:
    """No kParseNanAndInfFlag: NaN and Infinity are syntax errors, 1e400 NumberTooBig
    (they ran as nan and inf). Strings "nan" and "inf" are what a FLOAT takes."""
    text = json.dumps(_slice_model([1, 2, 3, 4])).replace("[1, 2, 3, 4]", f"[{literal}, 2, 3, 4]")
    code, out, err = _run_text(tmp_path, text, capsys)
    assert (code, out) == (2, "") and "DxDispatch's reader refuses it" in err


def test_an_integer_beyond_64_bits_is_a_double_already() -> None:
    """RapidJSON holds an integer past UINT64 as a double (IsLosslessDouble: true), so
    DxDispatch takes it rounded; one within 64 bits that a double rounds it refuses."""
    from dmlgraph.dml.jsonio import lossless_double

    assert lossless_double(2**70 + 1) and lossless_double(-(2**63))
    assert not lossless_double(2**53 + 1) and not lossless_double(2**64 - 1)
    assert not lossless_double(10**400)
    model = run_model(load_model(_slice_model([2**70 + 1, 1, 2, 3])))
    assert model.resources["out"].values()[0] == np.float32(2.0**70)


def test_initial_values_are_held_twice_at_most_while_read() -> None:
    """The values and the resource's buffer: the memory check counts 2x. A bytearray slice
    assignment from a memoryview copied the values first, a third copy (200 MB of values
    peaked at 570 MB, and a size the check let through was killed for memory)."""
    import tracemalloc

    count = 4_000_000  # 16 MB of FLOAT32
    doc = {"resources": {"R": {"initialValuesDataType": "FLOAT32",
                               "initialValues": {"valueCount": count, "value": 1.5}}},
           "dispatchables": {}, "commands": []}
    tracemalloc.start()
    try:
        model = load_model(doc)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2.5 * 4 * count
    (resource,) = model.resources.values() if isinstance(model.resources, dict) else model.resources
    assert np.frombuffer(resource.data, np.float32)[[0, -1]].tolist() == [1.5, 1.5]


# ----------------------------------------------------------------------------- fast paths


from hypothesis import example, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_NUMBERS = st.one_of(
    st.integers(-(2**70), 2**70),
    st.integers(-300, 300),
    st.floats(allow_nan=False, allow_infinity=False),
    st.floats(-1e6, 1e6, allow_nan=False),
    st.sampled_from([2**53, 2**53 + 1, -(2**53) - 1, 1e300, -1e300, 65519.99999, -0.0,
                     5e-324, "inf", "-nan", "1", True, None]),
)
_DATA_TYPES = ["FLOAT32", "FLOAT16", "FLOAT64", "INT8", "UINT8", "INT16", "UINT16", "INT32",
               "UINT32", "INT64", "UINT64"]


def _each_element(values, data_type):
    """The reading element by element: what the whole-array reading must equal."""
    from dmlgraph.dml.enums import TensorDataType
    from dmlgraph.dxdispatch import _element

    kind = TensorDataType.parse(data_type)
    with np.errstate(over="ignore"):
        return np.array([_element("r", v, kind) for v in values], dtype=kind.numpy_dtype)


@settings(max_examples=300, deadline=None)
@given(st.lists(_NUMBERS, min_size=1, max_size=12), st.sampled_from(_DATA_TYPES))
@example([65519.99999, 1.0], "FLOAT16")  # through float: inf; straight to half: 65504
@example([1 + 2**-11 + 2**-30], "FLOAT16")  # through float: a tie, to 1; straight: up
@example([2**53, -(2**53), 0.5], "FLOAT64")
@example([2**64 - 1, 0], "UINT64")
def test_initial_values_read_whole_as_element_by_element(values, data_type) -> None:
    """initialValues arrays are converted by NumPy where every value is plain (a 4 MB
    resource took 6 s element by element): the same bits, or the same error."""
    from dmlgraph.dxdispatch import _parse_resource

    try:
        expected = _each_element(values, data_type)
    except DxDispatchError as exc:
        with pytest.raises(DxDispatchError, match=re.escape(str(exc).split(": ", 1)[1])):
            _parse_resource("r", {"initialValuesDataType": data_type, "initialValues": values})
        return
    resource = _parse_resource("r", {"initialValuesDataType": data_type, "initialValues": values})
    got = resource.values()
    assert got.dtype == expected.dtype and got.tobytes() == expected.tobytes()


_JSON_NUMBERS = st.sampled_from(
    ["1", "-0", "2.5", "1e308", "1e309", "-1e400", "1e-400", "9" * 309, "9" * 310,
     "-" + "9" * 400, "1" * 5000, "0.1", "123456789012345678901234567890"]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_JSON_NUMBERS, min_size=1, max_size=4), st.booleans(), st.booleans(),
       st.booleans())
def test_plain_json_is_read_as_the_exact_reading_reads_it(numbers, twice, comma, nest) -> None:
    """parse_json reads plain JSON at json's speed and checks its numbers after: what it
    gives, or refuses, must be what the exact reading (a Python call per number) does,
    whether a number sits in an array, a nested array, or a field given twice."""
    from dmlgraph.dxdispatch import _EXACT_DECODER, _RELAXED, _decode, parse_json

    array = "[" + ", ".join(numbers) + ("," if comma else "") + "]"
    if nest:
        array = f"[{array}, [[{numbers[0]}]]]"
    text = f'{{"a": {array}, "b": 1' + (f', "a": {numbers[-1]}, "a": 2' if twice else "") + "}"

    def exact():
        relaxed = _RELAXED.sub(lambda m: m.group() if m.group().startswith('"') else "", text)
        return _decode(relaxed, _EXACT_DECODER)

    try:
        expected = exact()
    except ValueError as exc:
        with pytest.raises(ValueError) as info:
            parse_json(text)
        assert str(info.value) == str(exc)
        return
    got = parse_json(text)
    assert got == expected and got.last == expected.last


@pytest.mark.parametrize("values", [
    np.frombuffer(np.random.default_rng(3).bytes(4000), np.float32),
    np.frombuffer(np.random.default_rng(4).bytes(2000), np.float16),
    np.array([np.nan, np.inf, -np.inf, -0.0, 1e-45, 3.4e38], np.float64),
    np.arange(-128, 128, dtype=np.int8),
    np.arange(256, dtype=np.uint8),
    np.array([-(2**63), 2**63 - 1, 0], np.int64),
    np.array([2**64 - 1, 0], np.uint64),
])
def test_printed_values_are_ostream_defaults(values) -> None:
    """Formatted a list at a time: %g (6 significant digits) of each float as a double, and
    one-byte integers as the Latin-1 characters of their bytes."""
    from dmlgraph.dxdispatch import format_values

    if values.dtype.kind == "f":
        expected = ", ".join("%g" % float(v) for v in values)
    elif values.dtype.itemsize == 1:
        expected = ", ".join(chr(int(v) & 0xFF) for v in values)
    else:
        expected = ", ".join(str(int(v)) for v in values)
    assert format_values(values) == expected


def _pad_model(mode: str) -> dict:
    """[1, 2, 3, 4] padded by one element on each side in ``mode``, then printed."""
    return {
        "resources": {
            "in": {"initialValuesDataType": "FLOAT32", "initialValues": [1, 2, 3, 4]},
            "out": {"initialValuesDataType": "FLOAT32",
                    "initialValues": {"value": 0, "valueCount": 6}},
        },
        "dispatchables": {"p": {"type": "DML_OPERATOR_PADDING", "desc": {
            "InputTensor": {"DataType": "FLOAT32", "Sizes": [4]},
            "OutputTensor": {"DataType": "FLOAT32", "Sizes": [6]},
            "PaddingMode": f"DML_PADDING_MODE_{mode}", "PaddingValue": 9,
            "DimensionCount": 1, "StartPadding": [1], "EndPadding": [1]}}},
        "commands": [
            {"type": "dispatch", "dispatchable": "p",
             "bindings": {"InputTensor": "in", "OutputTensor": "out"}},
            {"type": "print", "resource": "out"},
        ],
    }


@pytest.mark.parametrize("mode, printed", [
    # DML_SPEC.md §3's index maps, i = out - 1, n = 4
    ("CONSTANT", "9, 1, 2, 3, 4, 9"),
    ("EDGE", "1, 1, 2, 3, 4, 4"),
    ("REFLECTION", "2, 1, 2, 3, 4, 3"),
    ("SYMMETRIC", "1, 1, 2, 3, 4, 4"),
    ("WRAP", None),
])
def test_a_padding_mode_newer_than_dxdispatchs_parser_is_refused(tmp_path, capsys, mode,
                                                                 printed) -> None:
    """DML_SPEC.md §6: DxDispatch's JSON parser predates DML_PADDING_MODE_WRAP, so it could
    not read such a model. `lower --format dxdispatch` refused to write one while
    `dmlgraph dxdispatch` ran it (exit 0); dmlgraph's own JSON still holds WRAP."""
    from dmlgraph.dml import operator_from_json

    model = _pad_model(mode)
    code, out, err = _run_text(tmp_path, json.dumps(model), capsys)
    if printed is not None:
        assert (code, out, err) == (0, f"Resource 'out': {printed}\n", "")
        return
    assert (code, out) == (2, "") and err.count("\n") == 1, err
    assert ("dispatchable 'p': DML_OPERATOR_PADDING: PaddingMode = \"DML_PADDING_MODE_WRAP\": "
            "newer than DxDispatch's JSON parser, which cannot read it") in err
    assert operator_from_json(model["dispatchables"]["p"]).padding_mode.name == "WRAP"


@pytest.mark.parametrize("point", ["Bogus", "InputTensors", "inputTensor"])
def test_a_bind_point_the_operator_lacks_is_refused(tmp_path, capsys, point) -> None:
    """DML_SLICE's tensors are InputTensor and OutputTensor (DML_SPEC.md §3): a binding to
    any other name binds nothing, and was accepted silently (exit 0)."""
    model = _slice_model([1, 2, 3, 4])
    model["commands"][0]["bindings"][point] = "in"
    code, out, err = _run_text(tmp_path, json.dumps(model), capsys)
    assert (code, out) == (2, "") and err.count("\n") == 1, err
    assert (f"dispatch 's': DML_OPERATOR_SLICE has no bind point \"{point}\" (its bind points: "
            "InputTensor, OutputTensor)") in err


def _one_buffer_slice(input_sizes: int, input_offset: int, output_offset: int) -> dict:
    """A SLICE of the first 4 elements of its input, input and output bound to one 8-element
    resource "buf" (1..8) at the given element offsets."""
    model = _slice_model(list(range(1, 9)))
    model["resources"] = {"buf": model["resources"]["in"]}
    desc = model["dispatchables"]["s"]["desc"]
    desc["InputTensor"]["Sizes"] = [input_sizes]
    model["commands"] = [
        {"type": "dispatch", "dispatchable": "s", "bindings": {
            "InputTensor": {"name": "buf", "elementOffset": input_offset},
            "OutputTensor": {"name": "buf", "elementOffset": output_offset}}},
        {"type": "print", "resource": "buf"},
    ]
    return model


def _join_into_an_input() -> dict:
    """The JOIN example writing its 10 elements into A, which its first and last inputs read."""
    model = json.loads((DATA / "example_join.json").read_text())
    model["commands"][0]["bindings"]["OutputTensor"] = "A"
    return model


@pytest.mark.parametrize("model, message", [
    (_one_buffer_slice(4, 0, 0), "OutputTensor and InputTensor overlap in 'buf' (bytes 0 to 16 "
                                 "and 0 to 16): DML_OPERATOR_SLICE"),
    (_one_buffer_slice(8, 0, 4), "OutputTensor and InputTensor overlap in 'buf' (bytes 16 to 32 "
                                 "and 0 to 32): DML_OPERATOR_SLICE"),
    (_join_into_an_input(), "OutputTensor and InputTensors[0] overlap in 'A' (bytes 0 to 40 and "
                            "0 to 12): DML_OPERATOR_JOIN"),
    ({**_pad_model("EDGE"), "commands": [{"type": "dispatch", "dispatchable": "p", "bindings": {
        "InputTensor": "out", "OutputTensor": "out"}}]},
     "OutputTensor and InputTensor overlap in 'out' (bytes 0 to 24 and 0 to 16): "
     "DML_OPERATOR_PADDING"),
], ids=["slice, same bytes", "slice, bytes in common", "join", "padding"])
def test_an_output_aliasing_an_input_is_refused(tmp_path, capsys, model, message) -> None:
    """DirectML says of each operator that supports in-place execution that its output may
    alias its input; the SLICE, JOIN and PADDING pages (seeds 002-004) say no such thing.
    Input and output bound to one resource ran, reading before writing (exit 0)."""
    code, out, err = _run_text(tmp_path, json.dumps(model), capsys)
    assert (code, out) == (2, "") and err.count("\n") == 1, err
    assert f"{message} does not support in-place execution" in err


def test_inputs_may_share_bytes_and_an_output_may_share_a_resource_beside_them(
    tmp_path, capsys
) -> None:
    """Only an output over an input's bytes aliases: two inputs read one resource, and an
    output after the input's 16 bytes of "buf" is a buffer of its own."""
    model = _one_buffer_slice(4, 0, 4)
    assert _run_text(tmp_path, json.dumps(model), capsys) == (
        0, "Resource 'buf': 1, 2, 3, 4, 1, 2, 3, 4\n", "")
    model = json.loads((DATA / "example_join.json").read_text())
    model["commands"][0]["bindings"]["InputTensors"][1] = model["commands"][0]["bindings"][
        "InputTensors"][0]  # A[0:3], A[0:2], A[4:9]
    assert _run_text(tmp_path, json.dumps(model), capsys) == (
        0, "Resource 'Out': 1, 2, 3, 1, 2, 5, 6, 7, 8, 9\n", "")


def test_a_models_text_reaches_the_terminal_with_control_codes_shown(tmp_path, capsys) -> None:
    """Resource names, one-byte values printed as characters and the output's file name
    reached the terminal raw (ESC [31m recoloured it, a newline split the line, U+202E turned
    it around); they show as the other commands show them, ``printed`` keeping them exact."""
    name = "out\x1b[31mRED\nline2\x07\u202e"
    model = _slice_model([27, 0x9B, 7, 65], "UINT8")  # ESC, CSI, BEL, "A"
    model["resources"][name] = model["resources"].pop("out")
    model["commands"][0]["bindings"]["OutputTensor"] = name
    model["commands"][1]["resource"] = name
    path = tmp_path / "model.json"
    path.write_text(json.dumps(model))
    saved = tmp_path / "o\x1b]0;title\x07.npz"
    assert main(["dxdispatch", str(path), "-o", str(saved)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines() == [
        "Resource 'out\\x1b[31mRED\\x0aline2\\x07\\u202e': \\x1b, \\x9b, \\x07, A",
        f"saved 2 resources to {tmp_path}/o\\x1b]0;title\\x07.npz",
    ]
    assert run_model(load_model(path)).printed == [f"Resource '{name}': \x1b, \x9b, \x07, A"]
    assert np.load(saved)[name].tolist() == [27, 0x9B, 7, 65]


def test_an_error_naming_a_models_text_shows_its_control_codes(tmp_path, capsys) -> None:
    """The one error line quoted a resource's name raw: ESC [31m recoloured the terminal."""
    model = _slice_model([1, 2, 3, 4])
    model["commands"][0]["bindings"]["OutputTensor"] = "no\x1b[31mpe\u202e"
    code, out, err = _run_text(tmp_path, json.dumps(model), capsys)
    assert (code, out) == (2, "") and err.count("\n") == 1
    assert 'binds unknown resource "no\\u001b[31mpe\\u202e"' in err and "\x1b" not in err


_UNDER_A_MEMORY_LIMIT = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
from dmlgraph.cli import main
sys.exit(main(["dxdispatch", sys.argv[1]]))
"""


@pytest.mark.parametrize("edit, what", [
    (lambda m: m["resources"]["in"].update(initialValues={"value": 1, "valueCount": 2**29}),
     "resource 'in'"),
    (lambda m: m["resources"]["out"].update(sizeInBytes=2**31), "resource 'out'"),
])
def test_a_resource_past_the_process_memory_limit_is_named(tmp_path, edit, what) -> None:
    """A process limited below the machine's free memory (a ulimit, a container) passed the
    free-memory check and failed allocating: "out of memory (Unable to allocate 2.00 GiB for
    an array with shape (536870912,) ...)", naming no resource (json_fuzz, under RLIMIT_AS).
    On a machine with less free memory, the check names it first."""
    model = _slice_model([1, 2, 3, 4])
    edit(model)
    path = tmp_path / "model.json"
    path.write_text(json.dumps(model))
    root = Path(__file__).parent.parent
    done = subprocess.run([sys.executable, "-c", _UNDER_A_MEMORY_LIMIT, str(path)],
                          capture_output=True, text=True, cwd=root, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(root)})
    assert done.returncode == 2 and done.stdout == "", done.stderr
    assert done.stderr.count("\n") == 1 and what in done.stderr, done.stderr


@pytest.mark.parametrize("edit, where", [
    (lambda m, big: m["dispatchables"]["s"]["desc"].update(Offsets=big), "Offsets = [0, 1, 2"),
    (lambda m, big: m["commands"][0].update(type=big), "command 0: unknown command type [0, 1"),
    (lambda m, big: m["commands"][0]["bindings"].update(OutputTensor=big),
     "bind point 'OutputTensor': a binding is a resource name or an object with a \"name\", "
     "not [0, 1"),
    (lambda m, big: m["resources"]["in"].update(sizeInBytes=big), "sizeInBytes [0, 1, 2"),
    (lambda m, big: m["resources"]["in"].update(initialValuesDataType=str(big)),
     'initialValuesDataType = "[0, 1, 2'),
])
def test_a_huge_misplaced_value_is_shown_cut(tmp_path, capsys, edit, where) -> None:
    """A value is shown in a message by its first characters and its length: 200000 offsets
    (or a desc under "type") were printed whole, an error line of 1.5 MB (json_fuzz)."""
    model = _slice_model([1, 2, 3, 4])
    edit(model, list(range(200000)))
    code, out, err = _run_text(tmp_path, json.dumps(model), capsys)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert where in err and re.search(r"\.\.\. \(148889\d characters\)", err), err[:1000]
    assert len(err) < 1000, err[:1000]  # the repr of a string has its quotes too


@pytest.mark.parametrize("edit, where", [
    (lambda m, big: m["dispatchables"]["s"]["desc"].update({big: 1}), "desc.Qqqq"),
    (lambda m, big: m["commands"][0]["bindings"].update({big: "in"}), 'has no bind point "Qqqq'),
    (lambda m, big: m["commands"][0]["bindings"].update(OutputTensor=big),
     'binds unknown resource "Qqqq'),
])
def test_a_huge_misplaced_name_is_shown_cut(tmp_path, capsys, edit, where) -> None:
    """A field, bind point or resource name of 100,000 characters was printed whole in the
    message refusing it, where a value beside it is cut (errors.shown)."""
    model = _slice_model([1, 2, 3, 4])
    edit(model, "Q" + "q" * 99999)
    code, out, err = _run_text(tmp_path, json.dumps(model), capsys)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert where in err and re.search(r"\.\.\. \(10000[02] characters\)", err), err[:500]
    assert len(err) < 1000, err[:1000]


def test_a_resource_name_with_a_nul_is_refused_saving_not_saved_cut(tmp_path, capsys) -> None:
    """zipfile ends a member's name at a NUL: resource "x\\0y" was saved as "x" (and "x\\0a"
    and "x\\0b" would both have been "x"); json_fuzz's oracle found no "x\\0y" in the .npz."""
    model = _slice_model([1, 2, 3, 4])
    model["resources"]["x\0y"] = model["resources"].pop("out")
    model["commands"][0]["bindings"]["OutputTensor"] = "x\0y"
    model["commands"][1]["resource"] = "x\0y"
    path = tmp_path / "model.json"
    path.write_text(json.dumps(model))
    out = tmp_path / "res.npz"
    assert main(["dxdispatch", str(path), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "tensor 'x\\x00y' has a NUL in its name" in err, err
    assert "read back as 'x'" in err and not out.exists()


def test_a_resource_name_with_a_lone_surrogate_is_refused_saving(tmp_path, capsys) -> None:
    """JSON's "\\ud800" reads as a lone surrogate, which zipfile could not encode as a
    member's name: a UnicodeEncodeError's traceback, exit 1 (json_fuzz)."""
    model = _slice_model([1, 2, 3, 4])
    model["resources"]["\ud800"] = model["resources"].pop("out")
    model["commands"][0]["bindings"]["OutputTensor"] = "\ud800"
    model["commands"][1]["resource"] = "\ud800"
    path = tmp_path / "model.json"
    path.write_text(json.dumps(model))  # ASCII: the escape "\ud800" as JSON writes it
    out = tmp_path / "res.npz"
    assert main(["dxdispatch", str(path), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "has a name holding a lone surrogate" in err, err
    assert "Traceback" not in err and not out.exists()


@pytest.mark.filterwarnings("error")  # a warning NumPy prints is a failure here
@pytest.mark.parametrize("values, printed", [
    ({"valueCount": 4, "valueStart": "inf", "valueDelta": "-inf"}, "inf, nan, nan, nan"),
    ({"valueCount": 4, "valueStart": 3e38, "valueDelta": 3e38}, "3e+38, inf, inf, inf"),
    ([1e300, -1e300, 1, 2], "inf, -inf, 1, 2"),
])
def test_a_sequence_reaching_inf_or_nan_runs_without_numpy_warnings(tmp_path, capsys, values,
                                                                    printed) -> None:
    """inf + -inf is a NaN and 3e38 + 3e38 an inf in float, as DxDispatch adds them; NumPy's
    "RuntimeWarning: invalid value encountered in accumulate" (and a line of its source) was
    printed to stderr above the output (json_fuzz: a result that was not one line)."""
    model = _slice_model(values)
    assert _run_text(tmp_path, json.dumps(model), capsys) == (0, f"Resource 'out': {printed}\n",
                                                               "")


@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize("values", [[1e39, -1e39, 1, 2], {"valueCount": 4, "value": 1e39}])
def test_a_float16_initial_value_past_float_is_inf_as_dxdispatch_makes_it(tmp_path, capsys,
                                                                          values) -> None:
    """half(float(1e39)) is inf: still so, read through ``json_float`` without NumPy's
    warning, which PADDING1's values now go around (a value past float overflows there)."""
    printed = "inf, -inf, 1, 2" if isinstance(values, list) else "inf, inf, inf, inf"
    model = _slice_model(values, "FLOAT16")
    assert _run_text(tmp_path, json.dumps(model), capsys) == (0, f"Resource 'out': {printed}\n",
                                                               "")


@pytest.mark.parametrize("text, said", [
    (b'{"resources": {"A\xff": 1}}', "byte 0xff at offset 17 (line 1) starts no UTF-8 character"),
    (b'{"resources": {\n"A\xc3": 1}}', "byte 0xc3 at offset 18 (line 2) starts a UTF-8 "
     "character the next byte does not continue"),
    (b'{"resources": {"A\xe2\x82', "byte 0xe2 at offset 17 (line 1) starts a UTF-8 character "
     "the file ends in"),
])
def test_a_model_that_is_not_utf8_says_where(tmp_path, capsys, text, said) -> None:
    """It was Python's "cannot read a JSON model: 'utf-8' codec can't decode byte 0xff in
    position 17: invalid start byte" (json_fuzz)."""
    path = tmp_path / "model.json"
    path.write_bytes(text)
    assert main(["dxdispatch", str(path)]) == 2
    err = capsys.readouterr().err
    assert err == f"dmlgraph: error: {path}: is not UTF-8 text: {said}\n"


@pytest.mark.parametrize("resource, said", [
    ({"sizeInBytes": -(10**5000)}, "sizeInBytes an integer of 5000 digits or more is not"),
    ({"sizeInBytes": 10**5000}, "sizeInBytes an integer of 5000 digits or more is beyond"),
    ({"initialValuesOffsetInBytes": 10**5000},
     "sizeInBytes 4 cannot hold its 4 bytes of initial values at offset an integer of 5000"),
    ({"initialValues": [10**5000]}, "initial value an integer of 5000 digits or more is outside"),
])
def test_an_integer_too_long_for_str_given_by_a_python_caller_is_named(resource, said) -> None:
    """A dict given to ``load_model`` may hold an int no JSON file can (past Python's 4300
    digits of ``str``): writing it in the message raised ValueError, a traceback."""
    spec = {"initialValuesDataType": "INT32", "initialValues": [1], **resource}
    with pytest.raises(DxDispatchError, match=re.escape(f"resource 'r': {said}")):
        load_model({"resources": {"r": spec}, "dispatchables": {}, "commands": []})
