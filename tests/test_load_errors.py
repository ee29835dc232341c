"""Every way load() refuses a model: a DmlgraphError subclass that names the file or the node,
the field, the value and the rule; never a protobuf or onnx traceback."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper

import dmlgraph
from dmlgraph.errors import DmlgraphError, ModelLoadError, ModelValidationError, UnsupportedError

INT64 = TensorProto.INT64
FLOAT = TensorProto.FLOAT


def _refused(error: type[DmlgraphError], model, *fragments: str) -> DmlgraphError:
    with pytest.raises(error) as info:
        dmlgraph.load(model)
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message, f"{fragment!r} not in {message!r}"
    return info.value


# ----------------------------------------------------------------------------- unreadable files


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "absent.onnx"
    _refused(ModelLoadError, path, str(path), "cannot read")


def test_directory_instead_of_file(tmp_path: Path) -> None:
    _refused(ModelLoadError, tmp_path, str(tmp_path), "cannot read")


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "empty.onnx"
    path.write_bytes(b"")
    _refused(ModelLoadError, path, str(path), "not an ONNX model")


@pytest.mark.parametrize("name", ["squeezenet1_1", "encodec_encoder_reflect"])
def test_file_cut_in_half(name: str, tmp_path: Path, onnx_models_dir: Path) -> None:
    data = (onnx_models_dir / f"{name}.onnx").read_bytes()
    path = tmp_path / f"{name}_half.onnx"
    path.write_bytes(data[: len(data) // 2])
    error = _refused(ModelLoadError, path, str(path))
    assert error.__cause__ is None and error.__suppress_context__  # no protobuf traceback attached


@pytest.mark.parametrize("size", [20, 100])
def test_a_truncated_model_that_decodes_as_utf8_is_not_called_text(size: int, tmp_path: Path,
                                                                   onnx_models_dir: Path) -> None:
    """A seed model's first 100 bytes (field tags, then its doc string) decode as UTF-8: it
    was "a text file, not an ONNX model". Text holds no control characters but tab, newline,
    CR and form feed; protobuf's tags and lengths are such bytes."""
    data = (onnx_models_dir / "seeds" / "slice1_example2.onnx").read_bytes()[:size]
    data.decode("utf-8")  # the case: it decodes
    path = tmp_path / "cut.onnx"
    path.write_bytes(data)
    message = str(_refused(ModelLoadError, path, str(path), "truncated or corrupt?"))
    assert "text file" not in message


@pytest.mark.parametrize("text", ["a\tb\r\n\fc\n", "x" * 4095 + "é and more"])
def test_text_is_named_as_text(text: str, tmp_path: Path) -> None:
    """Tabs and form feeds are text; so is a character that the 4096 bytes read to tell
    cut in two (it was called unknown, then "not a valid ONNX protobuf")."""
    path = tmp_path / "notes.onnx"
    path.write_text(text, encoding="utf-8")
    _refused(ModelLoadError, path, f"{path}: is a text file, not an ONNX model")


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("size", [1, 17, 1000, 100_000])
def test_random_bytes_file(seed: int, size: int, tmp_path: Path) -> None:
    path = tmp_path / "random.onnx"
    path.write_bytes(np.random.default_rng(seed).bytes(size))
    _refused(ModelLoadError, path, str(path))


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300))
def test_arbitrary_bytes_never_escape_as_anything_but_dmlgraph_errors(data: bytes) -> None:
    with pytest.raises(DmlgraphError, match="<bytes>"):
        dmlgraph.load(data)


def test_model_bytes_with_one_flipped_byte(onnx_models_dir: Path) -> None:
    """Corruption in the first 4 KB (node structure, names, lengths): each either still loads
    (a changed name or weight byte is a valid model) or is a DmlgraphError naming the source;
    nothing else escapes."""
    data = (onnx_models_dir / "squeezenet1_1.onnx").read_bytes()
    refused = 0
    for offset in range(0, 4000, 37):
        corrupted = bytearray(data)
        corrupted[offset] ^= 0xFF
        try:
            dmlgraph.load(bytes(corrupted), fold=False)
        except DmlgraphError as error:
            assert str(error).startswith("<bytes>")
            refused += 1
    assert refused > 10


def test_wrong_argument_type() -> None:
    _refused(ModelLoadError, 12345, "path, bytes or an onnx.ModelProto", "int")


def test_checker_failure_names_the_file(tmp_path: Path, onnx_make_model) -> None:
    model = onnx_make_model(
        [helper.make_node("Relu", ["x"], ["y"]), helper.make_node("Relu", ["x"], ["y"])],
        [("x", FLOAT, [2])],
        [("y", FLOAT, [2])],
        opset=17,
    )
    path = tmp_path / "twice.onnx"
    onnx.save(model, path)
    _refused(ModelValidationError, path, str(path), "ONNX checker refuses")


# ----------------------------------------------------------------------------- unsupported models


def test_unknown_domain_names_the_node_and_domain(onnx_make_model) -> None:
    model = onnx_make_model(
        [helper.make_node("Frobnicate", ["x"], ["y"], name="custom_op", domain="com.example")],
        [("x", FLOAT, [2])],
        [("y", FLOAT, [2])],
        opset=17,
        extra_opsets={"com.example": 1},
    )
    _refused(UnsupportedError, model, "'custom_op'", "Frobnicate", "'com.example'", "not supported")


def test_unknown_op_in_the_default_domain(onnx_make_model) -> None:
    model = onnx_make_model(
        [helper.make_node("NoSuchOp", ["x"], ["y"], name="mystery")],
        [("x", FLOAT, [2])],
        [("y", FLOAT, [2])],
        opset=17,
    )
    _refused(UnsupportedError, model, "'mystery'", "no ONNX schema for op 'NoSuchOp'", "opset 17")


def test_a_subgraph_node_of_another_domain_is_refused(onnx_make_model) -> None:
    """Control flow imports whole, but a node inside it of a domain dmlgraph does not import
    is refused as one in the main graph is, naming both."""
    branch = helper.make_graph(
        [helper.make_node("Gelu", ["x"], ["z"], name="contrib", domain="com.microsoft")],
        "branch",
        [],
        [helper.make_tensor_value_info("z", FLOAT, [2])],
    )
    model = onnx_make_model(
        [
            helper.make_node(
                "If", ["c"], ["y"], name="the_if", then_branch=branch, else_branch=branch
            )
        ],
        [("c", TensorProto.BOOL, []), ("x", FLOAT, [2])],
        [("y", FLOAT, [2])],
        opset=17,
        extra_opsets={"com.microsoft": 1},
    )
    _refused(UnsupportedError, model, "'the_if' (If", "attribute 'else_branch' holds a "
             "subgraph whose node 'contrib' (Gelu) is of domain 'com.microsoft'")


@pytest.mark.parametrize("caller", ["model", "function"])
def test_a_call_of_a_local_function_whose_domain_is_not_imported(caller: str,
                                                                  onnx_make_model) -> None:
    """onnx's checker and onnxruntime refuse it ("No opset import for domain 'local'"); the
    call was inlined before the checker saw it, and the model ran."""
    inner = helper.make_function("local", "Neg2", ["a"], ["b"], [
        helper.make_node("Neg", ["a"], ["b"])], [helper.make_opsetid("", 17)])
    outer = helper.make_function("local", "Outer", ["a"], ["b"], [
        helper.make_node("Neg2", ["a"], ["b"], domain="local")], [helper.make_opsetid("", 17)])
    called = "Neg2" if caller == "model" else "Outer"
    model = onnx_make_model(
        [helper.make_node(called, ["x"], ["y"], name="call", domain="local")],
        [("x", FLOAT, [2])], [("y", FLOAT, [2])], opset=17,
        extra_opsets={} if caller == "model" else {"local": 1})
    model.functions.extend([inner, outer])
    where = "the model" if caller == "model" else "local function local::Outer"
    _refused(ModelValidationError, model, "calls a local function of domain 'local'",
             f"{where} imports no opset")


def test_non_tensor_graph_input_is_refused(onnx_make_model) -> None:
    model = onnx_make_model(
        [helper.make_node("SequenceLength", ["s"], ["y"], name="length")],
        [],
        [("y", INT64, [])],
        opset=17,
    )
    model.graph.input.append(helper.make_tensor_sequence_value_info("s", FLOAT, [2]))
    _refused(UnsupportedError, model, "'s'", "sequence_type", "tensors only")



def test_a_sparse_initializer_is_refused_by_name(onnx_make_model) -> None:
    """docs/DECISIONS.md: sparse tensors are not imported, with an error naming them; it said
    "sparse initializers are not supported", naming none."""
    model = onnx_make_model([helper.make_node("Add", ["x", "w"], ["y"], name="add")],
                            [("x", FLOAT, [4])], [("y", FLOAT, [4])], opset=17)
    values = helper.make_tensor("w", FLOAT, [1], [1.0])
    model.graph.sparse_initializer.append(
        helper.make_sparse_tensor(values, helper.make_tensor("w_i", INT64, [1], [0]), [4]))
    _refused(UnsupportedError, model, "sparse initializer(s) ['w']")


def test_a_graph_input_of_element_type_0_is_refused(onnx_make_model) -> None:
    """onnx's checker lets it through; onnxruntime refuses the model. load imported it with
    no dtype: a Slice of it then failed at run time in the fallback's session ("Model input
    (x) does not have type information"), or ran with whatever dtype was fed."""
    model = onnx_make_model(
        [helper.make_node("Slice", ["x", "s", "e"], ["y"], name="cut")],
        [("x", FLOAT, [4])], [("y", FLOAT, None)], opset=17,
        initializers=[helper.make_tensor("s", INT64, [1], [1]),
                      helper.make_tensor("e", INT64, [1], [3])])
    model.graph.input[0].type.tensor_type.elem_type = TensorProto.UNDEFINED
    _refused(ModelValidationError, model, "graph input 'x'", "element type 0 (UNDEFINED)")


@pytest.mark.parametrize("entry", ["t", "x", "k", "c", "unread"])
def test_a_value_info_entry_of_element_type_0_is_refused_for_what_a_node_makes(
    entry, onnx_make_model, onnx_run
) -> None:
    """A ``value_info`` entry typed a tensor of element type 0 (UNDEFINED): onnxruntime
    refuses the model at load where a node makes the tensor ("Invalid tensor data type 0"),
    and runs it where the entry names a graph input, an initializer, a Constant's output or
    nothing; dmlgraph dropped the entry and ran every one (check then said that onnxruntime
    refused the file, and compared with to_onnx() of the import)."""
    model = onnx_make_model(
        [helper.make_node("Add", ["x", "k"], ["t"]),
         helper.make_node("Constant", [], ["c"], value=helper.make_tensor("v", FLOAT, [2],
                                                                           [1, 1])),
         helper.make_node("Add", ["t", "c"], ["y"])],
        [("x", FLOAT, [2])], [("y", FLOAT, [2])], opset=17,
        initializers=[helper.make_tensor("k", FLOAT, [2], [1, 2])])
    untyped = model.graph.value_info.add()
    untyped.name = entry
    untyped.type.tensor_type.SetInParent()
    feeds = {"x": np.array([1, 2], np.float32)}
    if entry != "t":
        (want,) = onnx_run(model, feeds, optimize=False)
        assert np.array_equal(want, [3, 5])
        dmlgraph.load(model)
        return
    with pytest.raises(Exception, match="Invalid tensor data type 0"):
        onnx_run(model, feeds, optimize=False)
    _refused(ModelValidationError, model, "value_info entry 't' is a tensor of element type 0 "
             "(UNDEFINED); give its type, or leave the type out")


@pytest.mark.parametrize("extra", [1, 8])
def test_raw_data_longer_than_its_dims_say_is_named(extra: int, onnx_make_model) -> None:
    """onnx's checker refuses raw_data too short only; onnxruntime refuses both. The message
    was NumPy's "buffer size must be a multiple of element size" or "cannot reshape array of
    size 5 into shape (4,)"."""
    pads = onnx.numpy_helper.from_array(np.array([0, 1, 0, 2], np.int64), "p")
    pads.raw_data += bytes(extra)
    model = onnx_make_model(
        [helper.make_node("Pad", ["x", "p"], ["y"], name="pad")],
        [("x", FLOAT, [2, 3])], [("y", FLOAT, None)], opset=17, initializers=[pads])
    _refused(ModelLoadError, model, "tensor 'p'", f"raw_data holds {32 + extra} bytes",
             "dims [4] of INT64 take 32")


# ----------------------------------------------------------------------------- malformed nodes


def _slice(
    onnx_make_model, starts, ends, axes=None, steps=None, shape=(4, 5, 6), from_constant_nodes=False
):
    names = [
        "x",
        "starts",
        "ends",
        "axes" if axes is not None else "",
        "steps" if steps is not None else "",
    ]
    while names[-1] == "":
        names.pop()
    tensors = {"starts": starts, "ends": ends, "axes": axes, "steps": steps}
    tensors = {
        k: helper.make_tensor(k, INT64, [len(v)], v) for k, v in tensors.items() if v is not None
    }
    nodes = [helper.make_node("Slice", names, ["y"], name="bad_slice")]
    if from_constant_nodes:
        nodes = [helper.make_node("Constant", [], [k], value=t) for k, t in tensors.items()] + nodes
        tensors = {}
    return onnx_make_model(
        nodes,
        [("x", FLOAT, list(shape))],
        [("y", FLOAT, [None] * len(shape))],
        opset=13,
        initializers=list(tensors.values()),
    )


def test_slice_step_zero(onnx_make_model) -> None:
    _refused(
        ModelValidationError,
        _slice(onnx_make_model, [0, 0], [2, 2], [0, 1], [1, 0]),
        "'bad_slice' (Slice)",
        "steps = [1, 0]",
        "must not be 0",
    )


def test_slice_step_zero_from_a_constant_node(onnx_make_model) -> None:
    model = _slice(onnx_make_model, [0], [2], [1], [0], from_constant_nodes=True)
    _refused(ModelValidationError, model, "'bad_slice' (Slice)", "steps = [0]", "must not be 0")


def test_slice_step_zero_computed_at_load(onnx_make_model) -> None:
    """steps = Shape(x)[0:1] - 4 = [0] once folded: refused after folding makes it known."""
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"], start=0, end=1),
        helper.make_node("Sub", ["shape", "four"], ["steps"]),
        helper.make_node(
            "Slice", ["x", "starts", "ends", "axes", "steps"], ["y"], name="bad_slice"
        ),
    ]
    inits = [
        helper.make_tensor(n, INT64, [1], [v])
        for n, v in [("four", 4), ("starts", 0), ("ends", 2), ("axes", 0)]
    ]
    model = onnx_make_model(
        nodes, [("x", FLOAT, [4, 5])], [("y", FLOAT, [None, 5])], opset=15, initializers=inits
    )
    _refused(ModelValidationError, model, "'bad_slice' (Slice)", "steps = [0]")
    assert dmlgraph.load(model, fold=False)  # without folding nothing shows steps is 0


@pytest.mark.parametrize("values", [{}, {"value_ints": [1], "value": [2]},
                                    {"value": [2], "value_ints": [1]}])
def test_a_constant_holds_exactly_one_value(values: dict, onnx_make_model) -> None:
    """ONNX: "one and only one" value attribute. onnxruntime takes the first given,
    onnx.reference and dmlgraph took 'value': a Slice's start of 1 sliced from 2, silently."""
    constant = helper.make_node("Constant", [], ["s"], name="two")
    for name, value in values.items():
        constant.attribute.append(helper.make_attribute(
            name, helper.make_tensor("s", INT64, [1], value) if name == "value" else value))
    model = onnx_make_model(
        [constant, helper.make_node("Slice", ["x", "s", "e"], ["y"])],
        [("x", FLOAT, [4])], [("y", FLOAT, None)], opset=17,
        initializers=[onnx.numpy_helper.from_array(np.array([3], np.int64), "e")])
    _refused(ModelValidationError, model, "'two' (Constant", "exactly one of value",
             ", ".join(values) or "no value attribute")


@pytest.mark.parametrize("values", [{}, {"value_float": 1.0, "value_int": 2}])
def test_a_constant_in_a_branch_holds_exactly_one_value(values: dict, onnx_make_model) -> None:
    """As in the main graph: onnxruntime refuses the model even where the branch is never
    taken ("Constant node: k has no data attributes"), and where it has two it takes the
    first; load ran it."""
    constant = helper.make_node("Constant", [], ["c"], name="k", **values)
    branch = helper.make_graph(
        [constant, helper.make_node("Add", ["x", "c"], ["t"])], "branch", [],
        [helper.make_tensor_value_info("t", FLOAT, None)])
    same = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["e"])], "same", [],
        [helper.make_tensor_value_info("e", FLOAT, None)])
    model = onnx_make_model(
        [helper.make_node("If", ["cond"], ["y"], name="the_if", then_branch=same,
                          else_branch=branch)],
        [("x", FLOAT, [2]), ("cond", TensorProto.BOOL, [])], [("y", FLOAT, None)], opset=17)
    _refused(ModelValidationError, model, "'the_if' (If", "'else_branch'", "'k' (Constant)",
             "exactly one of value", ", ".join(values) or "no value attribute")


def test_a_branch_output_of_an_element_type_onnx_does_not_define_is_named(
        onnx_make_model) -> None:
    """A corrupt branch output type (99) beside a float one: the message said only
    "cannot import the model: KeyError: 99"."""
    def branch(name: str, elem_type: int) -> onnx.GraphProto:
        return helper.make_graph([helper.make_node("Identity", ["x"], [name])], name, [],
                                 [helper.make_tensor_value_info(name, elem_type, None)])
    model = onnx_make_model(
        [helper.make_node("If", ["cond"], ["y"], name="the_if", then_branch=branch("t", 99),
                          else_branch=branch("e", FLOAT))],
        [("x", FLOAT, [2]), ("cond", TensorProto.BOOL, [])], [("y", FLOAT, None)], opset=17)
    _refused(ModelValidationError, model, "'the_if' (If",
             "output 0 is tensor(element type 99, which ONNX does not define) in then_branch",
             "tensor(float32) in else_branch")


@pytest.mark.parametrize("op", ["If", "Loop"])
def test_a_control_flow_output_declared_of_another_type_than_its_subgraph_makes(
        op: str, onnx_make_model) -> None:
    """A graph output declared int64 where the branches (or body) make float32: onnxruntime
    refuses the model ("Type (tensor(int64)) of output arg (y) ... does not match expected
    type (tensor(float))"), as load refuses it of a Relu; the IR said int64 and the run
    gave float32."""
    vi = helper.make_tensor_value_info
    if op == "If":
        def branch(name: str) -> onnx.GraphProto:
            return helper.make_graph([helper.make_node("Relu", ["x"], [name])], name, [],
                                     [vi(name, FLOAT, None)])
        node = helper.make_node("If", ["cond"], ["y"], name="flow", then_branch=branch("t"),
                                else_branch=branch("e"))
        inputs = [("x", FLOAT, [4]), ("cond", TensorProto.BOOL, [])]
    else:
        body = helper.make_graph(
            [helper.make_node("Identity", ["c"], ["co"]), helper.make_node("Relu", ["v"], ["vo"])],
            "body", [vi("i", INT64, []), vi("c", TensorProto.BOOL, []), vi("v", FLOAT, None)],
            [vi("co", TensorProto.BOOL, []), vi("vo", FLOAT, None)])
        node = helper.make_node("Loop", ["n", "", "x"], ["y"], name="flow", body=body)
        inputs = [("x", FLOAT, [4]), ("n", INT64, [])]
    model = onnx_make_model([node], inputs, [("y", INT64, [4])], opset=17)
    _refused(ModelValidationError, model, f"'flow' ({op}", "declares 'y' INT64",
             "makes float32")


def test_slice_duplicate_axes(onnx_make_model) -> None:
    _refused(
        ModelValidationError,
        _slice(onnx_make_model, [0, 0], [2, 2], [1, -2]),
        "'bad_slice'",
        "axes = [1, -2]",
        "appears twice",
    )


def test_slice_axis_out_of_range(onnx_make_model) -> None:
    _refused(
        ModelValidationError,
        _slice(onnx_make_model, [0], [2], [3]),
        "'bad_slice'",
        "axes = [3]",
        "out of range [-3, 2]",
    )


def test_slice_length_mismatch(onnx_make_model) -> None:
    _refused(
        ModelValidationError,
        _slice(onnx_make_model, [0, 1], [2], [0, 1]),
        "'bad_slice'",
        "starts=2",
        "ends=1",
        "one length",
    )


@pytest.mark.parametrize("starts, ends, axes, steps, said", [
    ([0, 0], [1], None, None, "got starts=2, ends=1; axes and steps are not given"),
    ([0, 0], [1], [0, 1], None, "got starts=2, ends=1, axes=2; steps is not given"),
    ([0], [1], [0], [1, 1], "got starts=1, ends=1, axes=1, steps=2"),
])
def test_slice_length_mismatch_names_only_what_the_model_gave(starts, ends, axes, steps, said,
                                                               onnx_make_model) -> None:
    """It said "axes=2, steps=2" of a Slice with neither: the lengths of dmlgraph's own
    defaults (0..n-1, ones), filled in from starts."""
    message = str(_refused(ModelValidationError,
                           _slice(onnx_make_model, starts, ends, axes, steps), "'bad_slice'",
                           f"starts, ends, axes and steps must have one length; {said}"))
    assert message.endswith(said)


def test_slice_1_length_mismatch_names_no_steps(onnx_make_model) -> None:
    """Slice-1 has no steps input, and this one no axes attribute."""
    node = helper.make_node("Slice", ["x"], ["y"], name="s1", starts=[0, 0], ends=[1])
    model = onnx_make_model([node], [("x", FLOAT, [2, 3, 4])], [("y", FLOAT, None)], opset=9)
    _refused(ModelValidationError, model, "'s1' (Slice): starts, ends and axes must have one "
             "length; got starts=2, ends=1; axes is not given")


def test_slice_parameter_not_1d(onnx_make_model) -> None:
    model = _slice(onnx_make_model, [0], [2], [0])
    model.graph.initializer[0].dims[:] = [1, 1]
    _refused(ModelValidationError, model, "'bad_slice'", "starts has shape [1, 1]", "1-D")


def _pad(onnx_make_model, pads, mode="constant", axes=None, opset=19, shape=(3, 4), value=None):
    names = ["x", "pads", "value" if value is not None else "", "axes" if axes is not None else ""]
    while names[-1] == "":
        names.pop()
    inits = [helper.make_tensor("pads", INT64, [len(pads)], pads)]
    if axes is not None:
        inits.append(helper.make_tensor("axes", INT64, [len(axes)], axes))
    if value is not None:
        inits.append(onnx.numpy_helper.from_array(value, "value"))
    node = helper.make_node("Pad", names, ["y"], name="bad_pad", mode=mode)
    return onnx_make_model(
        node and [node],
        [("x", FLOAT, list(shape))],
        [("y", FLOAT, [None] * len(shape))],
        opset=opset,
        initializers=inits,
    )


def test_pad_odd_length(onnx_make_model) -> None:
    _refused(
        ModelValidationError,
        _pad(onnx_make_model, [1, 0, 1]),
        "'bad_pad' (Pad)",
        "pads has 3 values",
        "even",
    )


def test_pad_length_not_twice_the_rank(onnx_make_model) -> None:
    _refused(
        ModelValidationError,
        _pad(onnx_make_model, [1, 0, 1, 0, 0, 0]),
        "'bad_pad'",
        "pads has 6 values for data of rank 2",
        "2 * rank",
    )


def test_pad_length_not_twice_the_axes(onnx_make_model) -> None:
    _refused(
        ModelValidationError,
        _pad(onnx_make_model, [1, 0, 1, 0], axes=[1]),
        "'bad_pad'",
        "pads has 4 values for 1 axes",
        "2 * len(axes)",
    )


def test_pad_axes_out_of_range_and_duplicated(onnx_make_model) -> None:
    _refused(
        ModelValidationError,
        _pad(onnx_make_model, [1, 1], axes=[2]),
        "'bad_pad'",
        "axes = [2]",
        "out of range",
    )
    _refused(
        ModelValidationError,
        _pad(onnx_make_model, [1, 1, 1, 1], axes=[0, -2]),
        "'bad_pad'",
        "appears twice",
    )


def test_pad_unknown_mode(onnx_make_model) -> None:
    _refused(
        ModelValidationError,
        _pad(onnx_make_model, [0, 1, 0, 1], mode="mirror"),
        "'bad_pad' (Pad",
        "mode = 'mirror'",
        "Pad-19 accepts modes constant, edge, reflect, wrap",
    )


def test_pad_wrap_before_pad_19(onnx_make_model) -> None:
    _refused(
        ModelValidationError,
        _pad(onnx_make_model, [0, 1, 0, 1], mode="wrap", opset=18),
        "mode = 'wrap'",
        "Pad-18 accepts modes constant, edge, reflect; 'wrap' came with Pad-19: export the "
        "model at opset 19 or later",
    )


def test_pad_constant_value_of_another_dtype(onnx_make_model) -> None:
    model = _pad(onnx_make_model, [0, 1, 0, 1], value=np.array(1, dtype=np.int64))
    _refused(
        ModelValidationError,
        model,
        "'bad_pad'",
        "data has dtype float32 and constant_value ('value') int64",
        "Pad-19 gives them one type (type T)",
    )


def _concat(onnx_make_model, shapes, axis):
    names = [f"x{i}" for i in range(len(shapes))]
    node = helper.make_node("Concat", names, ["y"], name="bad_concat", axis=axis)
    return onnx_make_model(
        [node],
        [(n, FLOAT, list(s)) for n, s in zip(names, shapes)],
        [("y", FLOAT, [None] * len(shapes[0]))],
        opset=13,
    )


def test_concat_different_ranks(onnx_make_model) -> None:
    _refused(
        ModelValidationError,
        _concat(onnx_make_model, [(2, 3), (2, 3, 4)], 0),
        "'bad_concat' (Concat)",
        "'x0': rank 2",
        "'x1': rank 3",
        "one rank",
    )


def test_concat_mismatched_non_axis_dims(onnx_make_model) -> None:
    _refused(
        ModelValidationError,
        _concat(onnx_make_model, [(2, 3), (4, 3)], 1),
        "'bad_concat'",
        "differ in dimension 0",
        "concat axis 1",
    )


def test_concat_axis_out_of_range(onnx_make_model) -> None:
    _refused(
        ModelValidationError,
        _concat(onnx_make_model, [(2, 3), (2, 3)], -3),
        "'bad_concat'",
        "axis = -3",
        "out of range [-2, 1]",
    )


def test_concat_mismatch_found_only_after_shape_inference(onnx_make_model) -> None:
    """The second input's rank is known only once onnx infers the Unsqueeze output."""
    nodes = [
        helper.make_node("Unsqueeze", ["x", "zero"], ["u"]),
        helper.make_node("Concat", ["x", "u"], ["y"], name="bad_concat", axis=0),
    ]
    model = onnx_make_model(
        nodes,
        [("x", FLOAT, [2, 3])],
        [("y", FLOAT, [None, None])],
        opset=13,
        initializers=[helper.make_tensor("zero", INT64, [1], [0])],
    )
    _refused(ModelValidationError, model, "'bad_concat'", "'u': rank 3", "one rank")


# ----------------------------------------------------------------------------- input types


def _typed(op: str, opset: int, data_type: int, params: dict[str, np.ndarray | None], **attrs):
    """A one-node model: data ``x`` of ``data_type`` (shape 4 x 5), then the parameters as
    initializers in order (None: an omitted input)."""
    names = ["x"] + [name if value is not None else "" for name, value in params.items()]
    while names[-1] == "":
        names.pop()
    node = helper.make_node(op, names, ["y"], name="typed", **attrs)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", data_type, [4, 5])],
        [helper.make_tensor_value_info("y", data_type, [None, None])],
        [onnx.numpy_helper.from_array(v, n) for n, v in params.items() if v is not None],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)


def _i32(*values: int) -> np.ndarray:
    return np.array(values, dtype=np.int32)


def _i64(*values: int) -> np.ndarray:
    return np.array(values, dtype=np.int64)


#: Models whose input types break their op's schema, and what the error must name. The
#: oracle that they are invalid is onnxruntime, which refuses each one.
BAD_TYPES = {
    "float starts and ends": (
        _typed("Slice", 13, FLOAT, {"s": np.array([0.9], np.float32),
                                    "e": np.array([3.0], np.float32)}),
        ("starts ('s') has dtype float32", "Slice-13", "tensor(int32), tensor(int64)", "Tind"),
    ),
    "int32 starts, int64 ends": (
        _typed("Slice", 13, FLOAT, {"s": _i32(0), "e": _i64(3)}),
        ("starts has dtype int32 and ends ('e') int64", "one type", "Tind"),
    ),
    "float axes": (
        _typed("Slice", 11, FLOAT, {"s": _i64(0), "e": _i64(3),
                                    "a": np.array([1.5], np.float32)}),
        ("axes ('a') has dtype float32", "Slice-11"),
    ),
    "float8 data": (
        _typed("Slice", 13, TensorProto.FLOAT8E4M3FN, {"s": _i64(0), "e": _i64(3)}),
        ("data ('x') has dtype float8_e4m3fn", "Slice-13", "(type T)"),
    ),
    "int32 pads": (
        _typed("Pad", 13, FLOAT, {"pads": _i32(0, 1, 0, 1)}),
        ("pads ('pads') has dtype int32", "Pad-13 takes tensor(int64)"),
    ),
    "int64 pads, int32 axes, float data: fine; float axes": (
        _typed("Pad", 18, FLOAT, {"pads": _i64(1, 1), "c": None,
                                  "a": np.array([1.0], np.float32)}),
        ("axes ('a') has dtype float32", "Pad-18"),
    ),
    "Pad-2 of int32 data": (
        _typed("Pad", 2, TensorProto.INT32, {}, pads=[0, 1, 0, 1]),
        ("data ('x') has dtype int32", "Pad-2 takes tensor(double), tensor(float), "
         "tensor(float16)"),
    ),
    # its value was cast to uint8 first, an OverflowError (found by the fuzz)
    "Pad-2 of uint8 data, a negative value": (
        _typed("Pad", 2, TensorProto.UINT8, {}, pads=[0, 1, 0, 1], value=-3.0),
        ("data ('x') has dtype uint8", "Pad-2 takes tensor(double)"),
    ),
}


@pytest.mark.parametrize("case", list(BAD_TYPES))
def test_inputs_of_a_type_their_schema_forbids_are_refused(case: str) -> None:
    import onnxruntime as ort

    from onnxruntime.capi.onnxruntime_pybind11_state import Fail, InvalidGraph

    model, fragments = BAD_TYPES[case]
    with pytest.raises((Fail, InvalidGraph), match="[Tt]ype"):  # the oracle refuses it too
        ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    _refused(ModelValidationError, model, "'typed'", *fragments)


@pytest.mark.parametrize("op, opset, params, attrs", [
    ("Slice", 13, {"s": _i32(1), "e": _i32(3), "a": _i32(1), "t": _i32(1)}, {}),
    ("Pad", 18, {"pads": _i64(1, 2), "c": np.array(7, np.float32), "a": _i64(-1)}, {}),
    ("Pad", 2, {}, {"pads": [0, 1, 0, 1]}),
])
def test_inputs_of_types_their_schema_allows_are_imported(op, opset, params, attrs) -> None:
    """The positive control: int32 index parameters throughout, and Pad-2 of float data."""
    import onnxruntime as ort

    model = _typed(op, opset, FLOAT, params, **attrs)
    x = np.arange(20, dtype=np.float32).reshape(4, 5)
    (expected,) = ort.InferenceSession(
        model.SerializeToString(), providers=["CPUExecutionProvider"]
    ).run(None, {"x": x})
    from backends import get_backend
    from lowering import lower

    (y,) = get_backend("numpy").run(lower(dmlgraph.load(model)), {"x": x}).values()
    np.testing.assert_array_equal(y, expected)


@pytest.mark.parametrize("nested", [False, True], ids=["main graph", "If branch"])
def test_a_split_with_more_outputs_than_num_outputs_is_refused(nested: bool,
                                                               onnx_make_model) -> None:
    """onnx's shape inference indexes past its list of sizes on it and aborts the process
    (so does onnxruntime's session): load refuses it with a message instead."""
    split = helper.make_node("Split", ["x"], ["a", "b", "c"], name="split3", axis=0,
                             num_outputs=2)
    outputs = [("a", FLOAT, None), ("b", FLOAT, None), ("c", FLOAT, None)]
    nodes, inputs = [split], [("x", FLOAT, [6, 4])]
    if nested:
        branch = helper.make_graph(
            [split], "branch", [], [helper.make_tensor_value_info("a", FLOAT, None)])
        nodes = [helper.make_node("If", ["cond"], ["y"], name="the_if", then_branch=branch,
                                  else_branch=branch)]
        inputs, outputs = [("cond", TensorProto.BOOL, []), *inputs], [("y", FLOAT, None)]
    model = onnx_make_model(nodes, inputs, outputs, opset=18)
    _refused(ModelValidationError, model, "'split3' has 3 outputs for num_outputs=2")


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.int8])
def test_an_integer_division_that_overflows_is_refused(dtype) -> None:
    """The type's minimum divided by -1: ONNX leaves it undefined, onnx.reference folded it
    to the minimum (NumPy wraps, with a RuntimeWarning on stderr), and `check`'s run of the
    model on onnxruntime died of SIGFPE (exit 136, no message)."""
    from onnx import numpy_helper

    low = np.iinfo(dtype).min
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    graph = helper.make_graph(
        [helper.make_node("Div", ["a", "b"], ["q"], name="div"),
         helper.make_node("Add", ["x", "q"], ["y"], name="add")], "g",
        [helper.make_tensor_value_info("x", elem, [2])],
        [helper.make_tensor_value_info("y", elem, [2])],
        [numpy_helper.from_array(np.array([6, low], dtype), "a"),
         numpy_helper.from_array(np.array([-1], dtype), "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)], ir_version=8)
    _refused(ModelValidationError, model, "node 'div' (Div)", f"minimum {low} by -1", "SIGFPE")
    fine = onnx.ModelProto()
    fine.CopyFrom(model)
    fine.graph.initializer[0].CopyFrom(numpy_helper.from_array(np.array([6, low + 1], dtype), "a"))
    dmlgraph.load(fine)  # one more than the minimum divides: -(low + 1) fits
