"""Tensors in and out: .npz files and ONNX test-data folders round trip, bind by name or
position, and fail with a message; generated inputs are reproducible and in range."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import dmlgraph
from backends import get_backend
from backends.base import BackendError
from dmlgraph import tensorio

from dmlgraph.ir import Graph, OnnxOp, Provenance, TensorInfo
from dmlgraph.tensorio import TensorIOError, VALUE_RANGES, generate, read, write
from lowering import lower

DTYPES = {
    "x": np.float32, "m": np.int64, "b": np.bool_, "h": np.float16,
    "bf": ml_dtypes.bfloat16, "u": np.uint8,
    # np.load refuses float8_e5m2's own descriptor ("<f1"): a file of it did not read back
    "f8": ml_dtypes.float8_e5m2, "f8n": ml_dtypes.float8_e4m3fn,
}


def io_graph() -> Graph:
    """Inputs of several dtypes, two outputs; the nodes do not matter to tensor I/O."""
    graph = Graph(opset_imports={"": 19})
    for name, dtype in DTYPES.items():
        graph.add_input(TensorInfo(name, dtype, (2, 3)))
    graph.add_node(OnnxOp("Neg", 13), ["x"], ["y"], Provenance("neg", "Neg"))
    graph.add_node(OnnxOp("Not", 1), ["b"], ["nb"], Provenance("not", "Not"))
    graph.set_tensor(TensorInfo("y", np.float32, (2, 3)))
    graph.set_tensor(TensorInfo("nb", np.bool_, (2, 3)))
    graph.outputs = ["y", "nb"]
    return graph


def arrays(graph: Graph, seed: int = 0) -> tuple[dict, dict]:
    inputs = generate(graph, seed)
    return inputs, {"y": -inputs["x"], "nb": ~inputs["b"]}


def assert_same(a: dict, b: dict) -> None:
    assert list(a) == list(b)
    for name in a:
        assert a[name].dtype == b[name].dtype and a[name].shape == b[name].shape, name
        np.testing.assert_array_equal(a[name].view(np.uint8), b[name].view(np.uint8))


@pytest.mark.parametrize("target", ["io.npz", "case_0"])
def test_round_trip(target, tmp_path) -> None:
    graph = io_graph()
    inputs, outputs = arrays(graph)
    write(tmp_path / target, graph, inputs, outputs)
    back = read(tmp_path / target, graph)
    assert_same(back.inputs, inputs)
    assert_same(back.outputs, outputs)


def test_test_data_folder_is_the_onnx_layout(tmp_path) -> None:
    graph = io_graph()
    inputs, outputs = arrays(graph)
    write(tmp_path, graph, inputs, outputs)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [f"input_{i}.pb" for i in range(len(DTYPES))] + ["output_0.pb", "output_1.pb"])
    proto = onnx.TensorProto()
    proto.ParseFromString((tmp_path / "input_1.pb").read_bytes())
    assert proto.name == "m"
    np.testing.assert_array_equal(numpy_helper.to_array(proto), inputs["m"])


def test_folder_binds_by_name_then_by_position(tmp_path) -> None:
    graph = io_graph()
    inputs, _ = arrays(graph)
    order = ["h", "m", "f8n", "b", "x", "bf", "f8", "u"]  # out of graph order, named: names win
    for index, name in enumerate(order):
        (tmp_path / f"input_{index}.pb").write_bytes(
            numpy_helper.from_array(inputs[name], name).SerializeToString())
    assert_same(dict(sorted(read(tmp_path, graph).inputs.items())), dict(sorted(inputs.items())))
    for index, name in enumerate(graph.inputs):  # unnamed protos: by position
        (tmp_path / f"input_{index}.pb").write_bytes(
            numpy_helper.from_array(inputs[name]).SerializeToString())
    assert_same(read(tmp_path, graph).inputs, inputs)


def test_multi_model_npz_is_read_by_the_model_stem(onnx_models_dir, onnx_reference_io) -> None:
    graph = Graph()
    graph.add_input(TensorInfo("input.1", np.float32, (1, 3, 224, 224)))
    graph.set_tensor(TensorInfo("117", np.float32, (1, 100)))
    graph.outputs = ["117"]
    path = onnx_models_dir / "reference_io.npz"
    tensors = read(path, graph, stem="squeezenet1_1")
    np.testing.assert_array_equal(tensors.inputs["input.1"],
                                  onnx_reference_io["squeezenet1_1__in0"])
    np.testing.assert_array_equal(tensors.outputs["117"], onnx_reference_io["squeezenet1_1__out0"])
    with pytest.raises(TensorIOError, match="models .*'squeezenet1_1'.*none of 'resnet'"):
        read(path, graph, stem="resnet")


def test_numpy_positional_keys(tmp_path) -> None:
    graph = Graph()
    graph.add_input(TensorInfo("a", np.int32, (2,)))
    graph.add_input(TensorInfo("b", np.int32, (2,)))
    np.savez(tmp_path / "pos.npz", np.array([1, 2], np.int32), np.array([3, 4], np.int32))
    bound = read(tmp_path / "pos.npz", graph).inputs
    assert bound["a"].tolist() == [1, 2] and bound["b"].tolist() == [3, 4]


def _truncated_npz(path) -> None:
    np.savez(path, m=np.zeros(2))
    path.write_bytes(path.read_bytes()[:100])


@pytest.mark.parametrize("setup, fragment", [
    (lambda p: np.savez(p / "in.npz", x=np.zeros(2)), "holds no value for graph input(s) ['m'"),
    (lambda p: np.savez(p / "in.npz", nope=np.zeros(2)),
     "'nope' is neither a graph input nor a graph output"),
    (lambda p: (p / "in.npz").write_bytes(b"not a zip"), "not an .npz file (an .npz is a zip"),
    (lambda p: (p / "in.txt").write_text("x"), "not an .npz file or an ONNX test-data folder"),
    # a cut copy: it said "not an .npz file" of what is one, cut (a helper's try as a new user)
    (lambda p: _truncated_npz(p / "in.npz"), "truncated or corrupt?"),
])
def test_bad_files_are_named(setup, fragment, tmp_path) -> None:
    setup(tmp_path)
    path = next(tmp_path.iterdir())
    with pytest.raises(TensorIOError) as info:
        read(path, io_graph())
    assert str(path) in str(info.value) and fragment in str(info.value)


def test_bad_folders_are_named(tmp_path) -> None:
    graph = io_graph()
    with pytest.raises(TensorIOError, match="none found"):
        read(tmp_path, graph)
    (tmp_path / "input_1.pb").write_bytes(numpy_helper.from_array(np.zeros(2)).SerializeToString())
    with pytest.raises(TensorIOError, match=r"numbered \[1\]"):
        read(tmp_path, graph)
    (tmp_path / "input_0.pb").write_bytes(b"\xff\xff\xff")
    with pytest.raises(TensorIOError, match="input_0.pb: not a serialized TensorProto"):
        read(tmp_path, graph)
    with pytest.raises(TensorIOError, match="no such file"):
        read(tmp_path / "missing.npz", graph)


# ----------------------------------------------------------------------------- generating


def test_generated_inputs_are_reproducible_and_in_range() -> None:
    graph = io_graph()
    first, again, other = generate(graph, 5), generate(graph, 5), generate(graph, 6)
    assert_same(first, again)
    assert not np.array_equal(first["x"], other["x"])
    for name, dtype in DTYPES.items():
        value = first[name]
        assert value.dtype == np.dtype(dtype) and value.shape == (2, 3)
    low, high = VALUE_RANGES["f"]
    assert low <= first["x"].min() and first["x"].max() < high
    assert first["u"].max() < VALUE_RANGES["u"][1]
    assert VALUE_RANGES["i"][0] <= first["m"].min() and first["m"].max() < VALUE_RANGES["i"][1]


@pytest.mark.parametrize("dtype", [ml_dtypes.int4, ml_dtypes.uint4, ml_dtypes.int2,
                                   ml_dtypes.uint2, np.int8, np.uint8])
def test_generated_sub_byte_integers_take_every_value_of_their_range(dtype) -> None:
    """ml_dtypes' int4/uint4/int2/uint2 are NumPy kind "V", which generation took for a float:
    drawn in [-1, 1) and truncated, every value was 0 (found by a new user's walkthrough of an
    int4 Pad-21 model: ``check`` compared zeros padded with zeros). The oracle: the integer
    range ``VALUE_RANGES`` documents, cut to what ml_dtypes says the type holds."""
    graph = Graph(opset_imports={"": 21})
    graph.add_input(TensorInfo("x", dtype, (4000,)))
    graph.add_node(OnnxOp("Identity", 21), ["x"], ["y"], Provenance("id", "Identity"))
    graph.set_tensor(TensorInfo("y", dtype, (4000,)))
    graph.outputs = ["y"]
    value = generate(graph, 0)["x"]
    assert value.dtype == np.dtype(dtype)
    held = ml_dtypes.iinfo(dtype)
    low, high = VALUE_RANGES["i" if held.min < 0 else "u"]
    expected = set(range(max(int(low), int(held.min)), min(int(high), int(held.max) + 1)))
    assert {int(v) for v in value.astype(np.int64)} == expected


def test_generated_float8_e8m0_values_are_numbers() -> None:
    """float8_e8m0fnu holds no sign: a negative draw became NaN, half the values, each one
    compared as NaN against NaN."""
    graph = Graph(opset_imports={"": 24})
    graph.add_input(TensorInfo("x", ml_dtypes.float8_e8m0fnu, (1000,)))
    graph.add_node(OnnxOp("Identity", 24), ["x"], ["y"], Provenance("id", "Identity"))
    graph.set_tensor(TensorInfo("y", ml_dtypes.float8_e8m0fnu, (1000,)))
    graph.outputs = ["y"]
    value = generate(graph, 0)["x"].astype(np.float64)
    assert not np.isnan(value).any() and (value > 0).all() and (value <= 1).all()


def test_generation_needs_static_shapes_and_refuses_slice_parameters() -> None:
    graph = Graph(opset_imports={"": 13})
    graph.add_input(TensorInfo("x", np.float32, ("N", 4)))
    graph.add_input(TensorInfo("starts", np.int64, (1,)))
    graph.set_tensor(TensorInfo("ends", data=np.array([2], np.int64)))
    graph.add_node(OnnxOp("Slice", 13), ["x", "starts", "ends"], ["y"], Provenance("s", "Slice"))
    graph.outputs = ["y"]
    with pytest.raises(TensorIOError, match="input 'x' is float32\\['N', 4\\]; give its shape"):
        generate(graph)
    with pytest.raises(TensorIOError, match="'starts' is parameter 'starts' of node 's'"):
        generate(graph, shapes={"x": (3, 4)})


def test_a_string_input_that_cannot_be_generated_is_named_string() -> None:
    """A STRING input has no random values; the error said "dtype object", NumPy's word for
    the arrays that hold strings, where the model says STRING."""
    graph = Graph(opset_imports={"": 13})
    graph.add_input(TensorInfo("s", np.dtype(object), (2, 3)))
    graph.add_node(OnnxOp("Identity", 13), ["s"], ["t"], Provenance("id", "Identity"))
    graph.set_tensor(TensorInfo("t", np.dtype(object), (2, 3)))
    graph.outputs = ["t"]
    with pytest.raises(TensorIOError) as raised:
        generate(graph)
    assert str(raised.value).endswith(
        "input 's': cannot generate values of STRING; give its value with --inputs "
        "(inputs= in Python)")


@pytest.mark.parametrize("ir_version, listed", [(3, ()), (8, ("st", "en"))])
def test_an_initializer_listed_as_an_input_takes_no_value_and_says_why(
    ir_version, listed, tmp_path
) -> None:
    """From IR 4 ONNX lets a feed override such an initializer; dmlgraph folds it, so a value
    for it is refused with the reason, not as an unknown name."""
    graph = helper.make_graph(
        [helper.make_node("Slice", ["x", "st", "en"], ["y"], name="s")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4]),
         helper.make_tensor_value_info("st", TensorProto.INT64, [1]),
         helper.make_tensor_value_info("en", TensorProto.INT64, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
        [numpy_helper.from_array(np.array([1], np.int64), "st"),
         numpy_helper.from_array(np.array([3], np.int64), "en")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                              ir_version=ir_version)
    lowered = lower(dmlgraph.load(model))
    assert lowered.initializer_inputs == listed and lowered.inputs == ["x"]
    feeds = {"x": np.arange(4, dtype=np.float32), "st": np.array([0], np.int64)}
    with pytest.raises(BackendError) as info:
        get_backend("numpy").run(lowered, feeds)
    assert ("'st' is an initializer the model also lists as a graph input" in str(info.value)) \
        == bool(listed)
    np.savez(tmp_path / "in.npz", **feeds)
    with pytest.raises(tensorio.TensorIOError) as read:
        tensorio.read(tmp_path / "in.npz", lowered)
    assert ("takes no value" in str(read.value)) == bool(listed)
    # a test-data folder names it too: the name wins over the place it would bind by
    folder = tmp_path / "td"
    folder.mkdir()
    for index, name in enumerate(["st", "x"]):
        proto = numpy_helper.from_array(feeds[name], name)
        (folder / f"input_{index}.pb").write_bytes(proto.SerializeToString())
    if listed:
        with pytest.raises(tensorio.TensorIOError, match="'st' is an initializer"):
            tensorio.read(folder, lowered)


def test_inputs_beyond_the_machines_memory_are_refused_before_they_are_drawn(
    monkeypatch,
) -> None:
    """Linux lets NumPy allocate more than it has and kills the process at first touch:
    generation checks what the machine can give (MemAvailable) first."""
    graph = Graph("g")
    graph.add_input(TensorInfo("x", np.float32, (1000, 1000)))
    graph.outputs = ["x"]
    monkeypatch.setattr(tensorio, "available_memory", lambda: 4_000_000.0)
    with pytest.raises(TensorIOError, match=r"4000000 bytes: too large to generate here"):
        generate(graph, 0)
    monkeypatch.setattr(tensorio, "available_memory", lambda: 20_000_000.0)
    assert generate(graph, 0)["x"].shape == (1000, 1000)
    assert tensorio.available_memory() > 0


def _one_input(dtype=np.float32, shape=(2, 3)) -> Graph:
    graph = Graph(opset_imports={"": 19})
    graph.add_input(TensorInfo("x", dtype, shape))
    graph.add_node(OnnxOp("Identity", 1), ["x"], ["y"], Provenance("id", "Identity"))
    graph.set_tensor(TensorInfo("y", dtype, shape))
    graph.outputs = ["y"]
    return graph


def test_two_values_for_one_input_are_an_error(tmp_path) -> None:
    """By name and by position (which one won hung on the order of the members), or two
    test-data files of one name (the first was dropped)."""
    x = np.zeros((2, 3), np.float32)
    np.savez(tmp_path / "a.npz", x, x=x + 1)
    np.savez(tmp_path / "b.npz", arr_0=x, x=x + 1)
    (tmp_path / "td").mkdir()
    for index in (0, 1):
        (tmp_path / "td" / f"input_{index}.pb").write_bytes(
            numpy_helper.from_array(x + index, "x").SerializeToString())
    for source in ("a.npz", "b.npz", "td"):
        with pytest.raises(TensorIOError, match="holds two values for input 'x'"):
            read(tmp_path / source, _one_input())


def test_two_values_for_one_position_name_their_keys(tmp_path) -> None:
    """``m__in0`` and ``m__in00`` are both input #0: the message names both keys, not
    "#0, and #0"."""
    x = np.zeros((2, 3), np.float32)
    np.savez(tmp_path / "m.npz", m__in0=x, m__in00=x + 1, m__out0=x)
    with pytest.raises(TensorIOError, match="holds two values for input 'x'") as info:
        read(tmp_path / "m.npz", _one_input(), stem="m")
    assert "'m__in0'" in str(info.value) and "'m__in00'" in str(info.value)
    (tmp_path / "td").mkdir()
    for index in (0, 1):
        (tmp_path / "td" / f"input_{index}.pb").write_bytes(
            numpy_helper.from_array(x + index, "x").SerializeToString())
    with pytest.raises(TensorIOError, match="file 'input_0.pb'.*file 'input_1.pb'"):
        read(tmp_path / "td", _one_input())


def test_a_folder_of_an_output_listed_twice_reads_back(tmp_path) -> None:
    """ONNX lets a graph list an output twice; ``write`` puts it at both positions, and
    reading that folder back was refused as two values for one output. Two different values
    there still are."""
    graph = _one_input()
    graph.outputs = ["y", "y"]
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    tensorio.write(tmp_path / "td", graph, {"x": x}, {"y": x + 1})
    assert sorted(p.name for p in (tmp_path / "td").iterdir()) == [
        "input_0.pb", "output_0.pb", "output_1.pb"]
    read_back = read(tmp_path / "td", graph)
    assert list(read_back.outputs) == ["y"] and np.array_equal(read_back.outputs["y"], x + 1)
    (tmp_path / "td" / "output_1.pb").write_bytes(
        numpy_helper.from_array(x + 2, "y").SerializeToString())
    with pytest.raises(TensorIOError, match="holds two values for output 'y'"):
        read(tmp_path / "td", graph)


def test_strings_stored_as_bytes_are_read_as_text(tmp_path) -> None:
    """np.savez stores bytes as dtype S: they fed onnxruntime as the text "b'bb'"."""
    np.savez(tmp_path / "s.npz", x=np.array([b"bb", "cé".encode()]))
    (x,) = read(tmp_path / "s.npz", _one_input(object, (2,))).inputs.values()
    assert x.dtype == object and x.tolist() == ["bb", "cé"]
    np.savez(tmp_path / "bad.npz", x=np.array([b"\xff"]))
    with pytest.raises(TensorIOError, match="not UTF-8") as info:
        read(tmp_path / "bad.npz", _one_input(object, (1,)))
    assert str(tmp_path / "bad.npz") in str(info.value)


def test_a_test_data_name_that_is_no_file_is_refused_before_anything_is_replaced(
    tmp_path,
) -> None:
    """Found while the files were replaced, it left output_0.pb new and input_0.pb old."""
    graph = _one_input()
    (tmp_path / "td").mkdir()
    (tmp_path / "td" / "input_0.pb").mkdir()
    old = numpy_helper.from_array(np.full((2, 3), 7, np.float32), "y").SerializeToString()
    (tmp_path / "td" / "output_0.pb").write_bytes(old)
    new = {"x": np.zeros((2, 3), np.float32)}
    with pytest.raises(TensorIOError, match="input_0.pb is not a file"):
        write(tmp_path / "td", graph, new, {"y": new["x"]})
    assert (tmp_path / "td" / "output_0.pb").read_bytes() == old


@pytest.mark.parametrize("array, fragment", [
    (np.zeros((2, 3), [("a", "u1"), ("b", "u1")]), "the graph expects float16"),  # was bit-cast
    (np.zeros((2, 3), np.float64), "is float64; the graph expects float16"),
    (np.zeros((3, 2), np.float16), "has shape [3, 2]; the graph expects [2, 3]"),
])
def test_an_input_of_another_type_or_shape_is_refused_naming_the_file(array, fragment,
                                                                     tmp_path) -> None:
    np.savez(tmp_path / "in.npz", x=array)
    with pytest.raises(TensorIOError) as info:
        read(tmp_path / "in.npz", _one_input(np.float16))
    assert str(tmp_path / "in.npz") in str(info.value) and fragment in str(info.value)


def test_external_data_of_a_test_data_file_lies_beside_it(tmp_path, monkeypatch) -> None:
    from onnx.external_data_helper import set_external_data

    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    (tmp_path / "td").mkdir()
    proto = numpy_helper.from_array(x, "x")
    (tmp_path / "td" / "x.bin").write_bytes(proto.raw_data)
    set_external_data(proto, "x.bin")
    proto.ClearField("raw_data")
    (tmp_path / "td" / "input_0.pb").write_bytes(proto.SerializeToString())
    monkeypatch.chdir(tmp_path)  # not the folder: it was read from the working directory
    np.testing.assert_array_equal(read(tmp_path / "td", _one_input()).inputs["x"], x)


def test_a_failed_write_leaves_the_old_file_whole(tmp_path, monkeypatch) -> None:
    """A full disk or a size limit in the middle of a write: the .npz that was there stays
    (it was truncated), and a test-data folder the write made is removed."""
    graph = _one_input()
    old = {"x": np.ones((2, 3), np.float32), "y": np.ones((2, 3), np.float32)}
    tensorio.save_npz(tmp_path / "out.npz", old)
    before = (tmp_path / "out.npz").read_bytes()

    def full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(np.lib.format, "write_array", full)
    new = {"x": np.zeros((2, 3), np.float32)}
    with pytest.raises(TensorIOError, match="No space left"):
        write(tmp_path / "out.npz", graph, new, {"y": new["x"]})
    assert (tmp_path / "out.npz").read_bytes() == before
    monkeypatch.setattr(onnx.TensorProto, "SerializeToString", full)
    with pytest.raises(TensorIOError, match="No space left"):
        write(tmp_path / "td", graph, new, {"y": new["x"]})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.npz"]  # no temporary left


def test_a_test_data_folder_with_two_files_for_one_input_is_refused(tmp_path) -> None:
    """input_0.pb and input_00.pb both read as input 0: whichever the folder listed last was
    used, silently."""
    for name, value in (("input_0.pb", 1.0), ("input_00.pb", 100.0)):
        tensor = numpy_helper.from_array(np.full((2,), value, np.float32), "x")
        (tmp_path / name).write_bytes(tensor.SerializeToString())
    graph = Graph(opset_imports={"": 13})
    graph.add_input(TensorInfo("x", np.float32, (2,)))
    with pytest.raises(TensorIOError, match="input_0.pb and input_00.pb are both input 0"):
        read(tmp_path, graph)


def test_an_npz_of_float8_e5m2_from_np_savez_says_how_to_save_it(tmp_path) -> None:
    np.savez(tmp_path / "x.npz", f8=np.zeros((2, 3), ml_dtypes.float8_e5m2))
    with pytest.raises(TensorIOError, match=r"save them as raw bytes, array.view\('V1'\)"):
        read(tmp_path / "x.npz", io_graph())


def test_an_npz_holding_one_name_twice_is_refused(tmp_path) -> None:
    """Two x.npy members: NumPy keeps the last, silently."""
    import io
    import zipfile

    path = tmp_path / "in.npz"
    with zipfile.ZipFile(path, "w") as archive, pytest.warns(UserWarning, match="Duplicate"):
        for value in (1.0, 100.0):
            buffer = io.BytesIO()
            np.lib.format.write_array(buffer, np.full((2,), value, np.float32))
            archive.writestr("x.npy", buffer.getvalue())
    graph = Graph(opset_imports={"": 13})
    graph.add_input(TensorInfo("x", np.float32, (2,)))
    with pytest.raises(TensorIOError, match=r"holds \['x'\] more than once"):
        read(path, graph)


def test_an_npz_cannot_name_a_tensor_past_65535_bytes(tmp_path) -> None:
    """zipfile raised struct.error, a traceback from `run -o out.npz`."""
    with pytest.raises(TensorIOError, match="at most 65535 bytes"):
        tensorio.save_npz(tmp_path / "out.npz", {"i" * 70_000: np.zeros(2, np.float32)})
    assert not (tmp_path / "out.npz").exists()


def test_a_test_data_folder_s_link_is_not_written_through(tmp_path) -> None:
    """``run -o FOLDER`` replaced what a link in the folder named: input_0.pb linking to
    ../precious.txt overwrote that file with tensor bytes (a helper's reproducer). The folder
    is refused now, before anything is written, and the linked file is left as it was."""
    graph = _one_input()
    precious = tmp_path / "precious.txt"
    precious.write_text("precious")
    folder = tmp_path / "td"
    folder.mkdir()
    (folder / "input_0.pb").symlink_to(precious)
    x = np.ones((2, 3), np.float32)
    with pytest.raises(TensorIOError, match="input_0.pb is a symbolic link"):
        write(folder, graph, {"x": x}, {"y": x})
    assert precious.read_text() == "precious"
    assert sorted(p.name for p in folder.iterdir()) == ["input_0.pb"]


def test_a_file_name_ending_in_a_slash_is_refused(tmp_path) -> None:
    """``Path`` drops a trailing slash: ``x.npz/`` and ``out.json/`` were written as files,
    though the slash names a folder."""
    from dmlgraph import files

    graph = _one_input()
    x = np.ones((2, 3), np.float32)
    with pytest.raises(TensorIOError, match="ends with a slash"):
        write(f"{tmp_path}/x.npz/", graph, {"x": x}, {"y": x})
    with pytest.raises(IsADirectoryError, match="ends with a slash"):
        files.write_text(f"{tmp_path}/out.json/", "{}")
    assert list(tmp_path.iterdir()) == []
    write(f"{tmp_path}/td/", graph, {"x": x}, {"y": x})  # a folder's name: a test-data folder
    assert sorted(p.name for p in (tmp_path / "td").iterdir()) == ["input_0.pb", "output_0.pb"]


def test_an_npz_is_measured_by_its_headers_before_it_is_unpacked(tmp_path, monkeypatch) -> None:
    """An .npz compresses: a 2 MB file held a 2 GB array, unpacked whole before its key was
    looked at (a helper's reproducer peaked at 2.16 GB to say the key was no input). Arrays
    ``read`` may bind are measured from their headers against the free memory; a key it
    cannot bind is refused by its name without its data being unpacked."""
    import io
    import zipfile

    graph = _one_input()
    big = np.zeros((1024, 2048), np.float32)  # 8 MB, a few KB compressed
    monkeypatch.setattr(tensorio, "available_memory", lambda: 1e6)
    np.savez_compressed(tmp_path / "x.npz", x=big)
    assert (tmp_path / "x.npz").stat().st_size < 100_000
    with pytest.raises(TensorIOError, match=r"holds 8.4 MB of arrays \(key 'x'.*free \(1.0 MB\)"):
        read(tmp_path / "x.npz", graph)
    with zipfile.ZipFile(tmp_path / "lie.npz", "w") as archive:  # a header alone: 4 TB
        header = io.BytesIO()
        np.lib.format.write_array_header_1_0(
            header, {"descr": "<f4", "fortran_order": False, "shape": (10**6, 10**6)})
        archive.writestr("x.npy", header.getvalue() + bytes(64))
    with pytest.raises(TensorIOError, match=r"holds 4.0 TB of arrays"):
        read(tmp_path / "lie.npz", graph)
    read_keys = []
    original = np.lib.npyio.NpzFile.__getitem__

    def reading(self, key):
        read_keys.append(key)
        return original(self, key)

    monkeypatch.setattr(np.lib.npyio.NpzFile, "__getitem__", reading)
    np.savez_compressed(tmp_path / "z.npz", x=np.ones((2, 3), np.float32), Z=big)
    with pytest.raises(TensorIOError, match="'Z' is neither a graph input nor a graph output"):
        read(tmp_path / "z.npz", graph)
    assert read_keys == ["x"]


def test_an_npz_of_test_cases_says_so(tmp_path) -> None:
    """The torch fixtures key several cases a model (``MODEL__CASE__in__x``): ``--inputs``
    on one said its first key "is neither a graph input nor a graph output" (a helper's
    try as a new user). It says what the file holds, and a case taken out as MANIFEST.md
    shows reads."""
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent / "models" / "torch"
    graph = dmlgraph.load(root / "attention.onnx")
    with pytest.raises(TensorIOError, match="holds test cases keyed MODEL__CASE__in__NAME"):
        read(root / "torch_io.npz", graph)
    cases = np.load(root / "torch_io.npz")
    np.savez(tmp_path / "case.npz", x=cases["attention__1__in__x"],
             y=cases["attention__1__eager__y"])
    taken = read(tmp_path / "case.npz", graph)
    assert list(taken.inputs) == ["x"] and list(taken.outputs) == ["y"]


def test_an_npz_member_that_is_no_npy_file_is_refused_by_its_key(tmp_path) -> None:
    """NumPy hands a member that is not an .npy file back as its bytes: a pickle stored as
    x.npy reached the binding as a tensor and ended in a traceback ('bytes' object has no
    attribute 'dtype'). It is refused by its key, and never unpickled."""
    import pickle
    import zipfile

    path = tmp_path / "in.npz"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("x.npy", pickle.dumps(np.zeros((2, 3), np.float32)))
    with pytest.raises(TensorIOError, match=r"in\.npz: key 'x' is not a NumPy array"):
        read(path, _one_input())
    np.savez(tmp_path / "obj.npz", x=np.zeros((2, 3), object))  # pickled by NumPy
    with pytest.raises(TensorIOError, match=r"obj\.npz: key 'x' holds an object array"):
        read(tmp_path / "obj.npz", _one_input())


def test_raw_bytes_for_a_string_input_are_refused_not_viewed_as_references(tmp_path) -> None:
    """Raw bytes (V) are viewed as an ml_dtypes type of their width; for a STRING input
    (object, 8 bytes) the view raised NumPy's TypeError, a traceback."""
    np.savez(tmp_path / "in.npz", x=np.zeros((2,), "V8"))
    with pytest.raises(TensorIOError, match=r"input 'x' is \|V8; the graph expects object"):
        read(tmp_path / "in.npz", _one_input(object, (2,)))


def _test_data_file(folder, proto: onnx.TensorProto) -> None:
    folder.mkdir(exist_ok=True)
    (folder / "input_0.pb").write_bytes(proto.SerializeToString())


@pytest.mark.parametrize("dims, data, fragment", [
    # NumPy read -1 as "the rest": no data made a [0, 3] tensor, which ran (parity held)
    ([-1, 3], [], r"'x' has dims \[-1, 3\]; a dimension is a size >= 0"),
    ([-1, 3], list(range(6)), r"'x' has dims \[-1, 3\]; a dimension is a size >= 0"),
    ([2, 3], [1.0, 2.0], r"'x' \(FLOAT, dims \[2, 3\]\) cannot be read: .*size 2"),
])
def test_a_test_data_file_whose_dims_do_not_hold_is_refused(dims, data, fragment,
                                                            tmp_path) -> None:
    proto = onnx.TensorProto(name="x", data_type=TensorProto.FLOAT, dims=dims, float_data=data)
    _test_data_file(tmp_path / "td", proto)
    with pytest.raises(TensorIOError, match=r"td/input_0\.pb: TensorProto " + fragment):
        read(tmp_path / "td", _one_input(np.float32, ("N", 3)))


@pytest.mark.parametrize("data_type", [TensorProto.UNDEFINED, 99])
def test_a_test_data_file_of_no_element_type_says_so(data_type, tmp_path) -> None:
    """It said "not a serialized TensorProto: KeyError: 99" of a file that parsed."""
    proto = onnx.TensorProto(name="x", data_type=data_type, dims=[2, 3])
    _test_data_file(tmp_path / "td", proto)
    with pytest.raises(TensorIOError, match=f"has data_type {data_type}, which is no ONNX "
                                            "element type"):
        read(tmp_path / "td", _one_input())


def test_strings_ending_in_nul_read_whole_and_are_never_cut_by_an_npz(tmp_path) -> None:
    """ONNX strings are bytes; onnx's to_array passes them through a NumPy string array,
    which drops trailing NULs: "a\\0" was read from a test-data file as "a" (onnxruntime
    gives "a\\0" back). np.savez's string arrays drop them too: such a tensor is refused in
    an .npz, named, where a test-data folder keeps it."""
    values = [b"a\0", b"b", b"\0", b""]
    proto = onnx.TensorProto(name="x", data_type=TensorProto.STRING, dims=[2, 2],
                             string_data=values)
    _test_data_file(tmp_path / "td", proto)
    graph = _one_input(object, (2, 2))
    x = read(tmp_path / "td", graph).inputs["x"]
    assert x.dtype == object and x.reshape(-1).tolist() == ["a\0", "b", "\0", ""]
    write(tmp_path / "out", graph, {"x": x}, {"y": x})
    assert read(tmp_path / "out", graph).outputs["y"].reshape(-1).tolist() == x.reshape(-1).tolist()
    with pytest.raises(TensorIOError, match=r"out\.npz: tensor 'x': the string 'a\\x00' ends "
                                            "with a NUL"):
        write(tmp_path / "out.npz", graph, {"x": x}, {"y": x})
    assert not (tmp_path / "out.npz").exists()
    bad = onnx.TensorProto(name="x", data_type=TensorProto.STRING, dims=[1],
                           string_data=[b"\xff"])
    _test_data_file(tmp_path / "bad", bad)
    with pytest.raises(TensorIOError, match="a string is not UTF-8"):
        read(tmp_path / "bad", _one_input(object, (1,)))


def test_a_string_initializer_ending_in_nul_is_imported_whole() -> None:
    """The importer read STRING initializers through onnx's to_array too: a Concat with
    ["k\\0", "\\0"] ran to ["k", ""] on the NumPy backend (``run`` printed it), where
    onnxruntime on the model keeps the NULs (``check`` failed its parity)."""
    import onnxruntime

    constant = onnx.TensorProto(name="c", data_type=TensorProto.STRING, dims=[1, 2],
                                string_data=[b"k\0", b"\0"])
    model = helper.make_model(helper.make_graph(
        [helper.make_node("Concat", ["x", "c"], ["y"], axis=0, name="cat")], "g",
        [helper.make_tensor_value_info("x", TensorProto.STRING, [1, 2])],
        [helper.make_tensor_value_info("y", TensorProto.STRING, None)], [constant]),
        opset_imports=[helper.make_opsetid("", 13)])
    x = np.array([["p", "q\0"]], dtype=object)
    session = onnxruntime.InferenceSession(model.SerializeToString(),
                                           providers=["CPUExecutionProvider"])
    (expected,) = session.run(None, {"x": x})
    assert expected.reshape(-1).tolist() == ["p", "q\0", "k\0", "\0"]
    outputs = get_backend("numpy").run(lower(dmlgraph.load(model)), {"x": x})
    assert outputs["y"].reshape(-1).tolist() == expected.reshape(-1).tolist()
    assert dmlgraph.check(model, inputs={"x": x}).passed


@pytest.mark.parametrize("stored", [np.zeros((2, 3), "V2"), np.zeros((2, 3), [("a", "<f4")])])
def test_a_stored_output_of_no_tensor_type_is_refused(stored, tmp_path) -> None:
    """Raw bytes of another width than the output's, or a record, reached the comparison
    (``check --expected``), which ended in NumPy's TypeError ("Cannot compare structured or
    void to non-void arrays"), a traceback. A stored output of another tensor type is still
    compared, and fails naming both."""
    x = np.zeros((2, 3), np.float32)
    np.savez(tmp_path / "out.npz", x=x, y=stored)
    with pytest.raises(TensorIOError, match=r"out\.npz: output 'y' is .*, which is no tensor "
                                            r"type; the graph makes float32"):
        read(tmp_path / "out.npz", _one_input())
    raw = x.astype(ml_dtypes.bfloat16).view("V2")  # as save_npz stores bfloat16: viewed back
    np.savez(tmp_path / "bf.npz", x=raw, y=raw)
    read_back = read(tmp_path / "bf.npz", _one_input(ml_dtypes.bfloat16))
    assert read_back.outputs["y"].dtype == ml_dtypes.bfloat16


def test_expected_arrays_of_no_tensor_type_are_refused_by_check() -> None:
    """``check(expected={...})`` took raw bytes for an output to the comparison too, and
    raised NumPy's TypeError."""
    model = helper.make_model(helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])]),
        opset_imports=[helper.make_opsetid("", 13)])
    x = np.zeros(2, np.float32)
    with pytest.raises(TensorIOError,
                       match=r"the expected arrays: output 'y' is \|V2, which is no tensor type"):
        dmlgraph.check(model, inputs={"x": x}, expected={"y": np.zeros(2, "V2")})


def test_an_input_of_more_dimensions_than_numpy_holds_is_refused_by_name() -> None:
    # NumPy 2 arrays have at most 64 dimensions (its own ValueError escaped as a traceback)
    graph = dmlgraph.load(helper.make_model(helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1] * 65)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    ), opset_imports=[helper.make_opsetid("", 17)], ir_version=8))
    with pytest.raises(TensorIOError, match="'x' has rank 65, more than 64: .* 64 dimensions$"):
        generate(graph)


def _external_input(folder, data_size: int) -> None:
    """input_0.pb: a float [2] tensor 'x' whose data is external, in 'x.bin' of
    ``data_size`` bytes (sparse beyond [1.5, -2.0]), no length given."""
    folder.mkdir()
    with open(folder / "x.bin", "wb") as data:
        data.write(np.array([1.5, -2.0], np.float32).tobytes())
        data.truncate(data_size)
    proto = numpy_helper.from_array(np.zeros(2, np.float32), "x")
    proto.ClearField("raw_data")
    proto.data_location = TensorProto.EXTERNAL
    entry = proto.external_data.add()
    entry.key, entry.value = "location", "x.bin"
    (folder / "input_0.pb").write_bytes(proto.SerializeToString())


def test_test_data_external_data_longer_than_its_dims_is_refused_before_reading(
    tmp_path,
) -> None:
    # onnx reads the external file whole, then fails to reshape: a [2] float over 16 GiB
    # read 16 GiB first; 64 MiB here
    graph = dmlgraph.load(helper.make_model(helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
    ), opset_imports=[helper.make_opsetid("", 17)], ir_version=8))
    _external_input(tmp_path / "long", 64 << 20)
    with pytest.raises(TensorIOError, match=f"gives {64 << 20} bytes from offset 0; dims "
                                            r"\[2\] of FLOAT hold 8"):
        read(tmp_path / "long", graph)
    _external_input(tmp_path / "exact", 8)  # the tensor's own bytes read as ever
    np.testing.assert_array_equal(read(tmp_path / "exact", graph).inputs["x"], [1.5, -2.0])
