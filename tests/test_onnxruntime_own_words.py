"""onnxruntime's error texts classified by its own words (``providers.own_words``), never by
the names it quotes: each classifier against onnxruntime 1.32's real text for its phrase, and
against the texts of other failures of nodes named as each phrase."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from backends import BackendError
from backends.base import first_line
from backends.onnxruntime.providers import (
    CANNOT_LOAD,
    CANNOT_RUN,
    FAILS,
    FAILS_WHEN_RUN,
    INSERTED_CAST,
    cannot_run,
    failed,
    fails_at_run,
    fails_when_run,
    make_session,
    may_run_hint,
    own_words,
    refused,
)
from dmlgraph.cli import main

CPU = ["CPUExecutionProvider"]
#: Names a node may be given: each phrase, and each after dmlgraph's own prefixes.
PHRASES = (*CANNOT_RUN, f"Mismatched attribute type in '{INSERTED_CAST}", INSERTED_CAST,
           *FAILS_WHEN_RUN)
NAMES = (*PHRASES, *(f"{CANNOT_LOAD}{p}" for p in PHRASES), *(f"{FAILS}{p}" for p in PHRASES),
         *(f"x' Status Message: {p}" for p in FAILS_WHEN_RUN))


def _info(name: str, elem: int, shape: list | None) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem, shape)


def _model(nodes, inputs, outputs, inits=(), opset: int = 18) -> bytes:
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                             ir_version=8).SerializeToString()


def _refusal(model: bytes | str, where: str = "m.onnx: node(s) n (Op)") -> BackendError:
    """dmlgraph's refusal of a session over ``model``, as ``make_session`` words it."""
    with pytest.raises(BackendError) as refusal:
        make_session(model, CPU, where)
    return refusal.value


def _run_failure(model: bytes, feeds) -> BackendError:
    """onnxruntime's own error running ``model``, as the backend words a whole model's."""
    session = ort.InferenceSession(model, providers=CPU)
    with pytest.raises(Exception) as failure:
        session.run(None, feeds)
    return failed("m.onnx", first_line(failure.value))


def _int16_pad(name: str) -> bytes:  # NOT_IMPLEMENTED : Could not find an implementation
    pads = numpy_helper.from_array(np.array([1, 1, 1, 1], np.int64), "pads")
    return _model([helper.make_node("Pad", ["x", "pads"], ["y"], mode="edge", name=name)],
                  [_info("x", TensorProto.INT16, [2, 3])], [_info("y", TensorProto.INT16, None)],
                  [pads])


def _complex_pad(name: str) -> bytes:  # MLDataType for: tensor(complex64) is not currently ...
    pads = numpy_helper.from_array(np.array([1, 1, 1, 1], np.int64), "pads")
    return _model([helper.make_node("Pad", ["x", "pads"], ["y"], name=name)],
                  [_info("x", TensorProto.COMPLEX64, [2, 3])],
                  [_info("y", TensorProto.COMPLEX64, None)], [pads])


def _float16_pad_2() -> bytes:  # the Cast-6 onnxruntime inserts fails its own checker
    return _model([helper.make_node("Pad", ["x"], ["y"], mode="reflect", pads=[1, 1, 1, 1])],
                  [_info("x", TensorProto.FLOAT16, [2, 3])],
                  [_info("y", TensorProto.FLOAT16, None)], opset=5)


def _shapeless_scan(name: str) -> tuple[bytes, dict]:  # Subgraph must have the shape set
    body = helper.make_graph(
        [helper.make_node("Slice", ["row"], ["out"], starts=[0, 0], ends=[2, 1], axes=[1, 0])],
        "body", [_info("row", TensorProto.FLOAT, [3, 4])], [_info("out", TensorProto.FLOAT, None)])
    model = _model([helper.make_node("Scan", ["X"], ["Y"], name=name, body=body,
                                     num_scan_inputs=1)],
                   [_info("X", TensorProto.FLOAT, [2, 3, 4])],
                   [_info("Y", TensorProto.FLOAT, None)], opset=9)
    return model, {"X": np.zeros((2, 3, 4), np.float32)}


def _split(name: str, fed: bool) -> bytes:
    """A Split of 3 columns into sizes [2, 2], which ONNX forbids: constant sizes fail the
    load ("Node (N) Op (Split) [ShapeInferenceError]"), fed ones the run ("Name:'N' Status
    Message: Invalid value in 'split'")."""
    sizes = _info("sp", TensorProto.INT64, [2])
    inits = [] if fed else [numpy_helper.from_array(np.array([2, 2], np.int64), "sp")]
    return _model([helper.make_node("Split", ["X", "sp"], ["A", "B"], axis=1, name=name)],
                  [_info("X", TensorProto.FLOAT, [2, 3]), *([sizes] if fed else [])],
                  [_info("A", TensorProto.FLOAT, None), _info("B", TensorProto.FLOAT, None)],
                  inits)


def _string_relu(name: str) -> bytes:  # Type Error: ... in node (N) is invalid
    return _model([helper.make_node("Relu", ["x"], ["y"], name=name)],
                  [_info("x", TensorProto.STRING, [2])], [_info("y", TensorProto.STRING, None)])


def _bad_cast(name: str) -> bytes:  # In Node, ("N", Cast, "", -1) : ... Mismatched attribute
    return _model([helper.make_node("Cast", ["x"], ["y"], to=TensorProto.FLOAT, name=name)],
                  [_info("x", TensorProto.FLOAT16, [2])], [_info("y", TensorProto.FLOAT, None)],
                  opset=5)


@pytest.mark.parametrize("refusal, said", [
    (lambda: _refusal(_int16_pad("p")), "Could not find an implementation for Pad(18)"),
    (lambda: _refusal(_int16_pad(CANNOT_RUN[1])), "node with name 'Could not find"),
    (lambda: _refusal(_float16_pad_2()), "Mismatched attribute type in 'InsertedPrecision"),
    (lambda: _refusal(_complex_pad("p")), "tensor(complex64) is not currently registered"),
])
def test_onnxruntime_s_real_refusals_of_what_it_cannot_run_are_told(refusal, said) -> None:
    """The real texts of each ``CANNOT_RUN`` phrase (NOT_IMPLEMENTED with "Could not find an
    implementation"; the inserted Cast's checker failure; a complex tensor's type), a node
    named as a phrase too."""
    error = refusal()
    text = str(error)
    assert said in text and cannot_run(error) is not None and may_run_hint(error)
    assert cannot_run(error) == text.partition(CANNOT_LOAD)[2]


@pytest.mark.parametrize("name", ["pad", *NAMES])
def test_cuda_s_refusal_is_told_whatever_the_node_is_named(name) -> None:
    """CUDA's words for a node no provider runs (verbatim, onnxruntime-gpu 1.31.1 on an H200,
    as tests/test_cli_check.py feeds them), its node named anything."""
    from tests.test_cli_check import CUDA_REFUSAL

    error = refused("m.onnx", f"RuntimeError: {CUDA_REFUSAL.format(op='Pad', name=name)}")
    assert cannot_run(error) is not None


def test_onnxruntime_s_real_failure_of_a_shapeless_scan_output_is_told() -> None:
    error = _run_failure(*_shapeless_scan("scan"))
    text = str(error)
    assert "Subgraph must have the shape set for all outputs" in text
    assert fails_at_run(error) is not None and fails_when_run(text) and may_run_hint(error)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("refusal", [
    lambda name: _refusal(_split(name, fed=False)),
    lambda name: _refusal(_string_relu(name)),
    lambda name: _refusal(_bad_cast(name)),
    lambda name: _run_failure(_split(name, fed=True),
                              {"X": np.zeros((2, 3), np.float32), "sp": np.array([2, 2])}),
], ids=["Node (N) Op", "Type Error in node (N)", "In Node, (\"N\"", "Name:'N'"])
def test_a_node_named_as_a_phrase_is_not_taken_for_it(refusal, name) -> None:
    """Other failures of a node named as a phrase (or as dmlgraph's prefix and a phrase):
    onnxruntime quotes the name, and a phrase anywhere in the text matched (a Split named
    NOT_IMPLEMENTED, its constant sizes past its axis: ``check --fallback reference`` said
    "parity holds")."""
    error = refusal(name)
    text = str(error)
    assert name.rpartition(": ")[2].partition("' ")[0] in text or name in text
    assert cannot_run(error) is None and fails_at_run(error) is None
    assert not may_run_hint(error) and not fails_when_run(text.partition(FAILS)[2] or text)


def test_a_scan_named_as_a_refusal_fails_as_a_shapeless_scan_only() -> None:
    error = _run_failure(*_shapeless_scan(CANNOT_RUN[0]))
    assert fails_at_run(error) is not None and cannot_run(error) is None


@pytest.mark.parametrize("name", NAMES)
def test_check_of_a_split_named_as_a_phrase_whose_sizes_do_not_fit_does_not_pass(
    name, tmp_path: Path, capsys
) -> None:
    """A Split named NOT_IMPLEMENTED (any phrase) whose constant sizes [2, 2] do not fit its
    axis of 3: ``check --fallback reference`` compared it with onnx.reference (which
    truncates) and said "parity holds", exit 0; onnxruntime's refusal now stands, exit 2."""
    path = tmp_path / "m.onnx"
    path.write_bytes(_split(name, fed=False))
    np.savez(tmp_path / "in.npz", X=np.arange(6, dtype=np.float32).reshape(2, 3))
    code = main(["check", str(path), "--fallback", "reference", "--inputs",
                 str(tmp_path / "in.npz")])
    captured = capsys.readouterr()
    assert code == 2 and "parity holds" not in captured.out
    error = captured.err.strip()
    assert len(error.splitlines()) == 1 and "[ShapeInferenceError] Mismatch between" in error


#: Openers of names onnxruntime quotes, whose regexes' ``.*`` was retried at each.
_OPENERS = ("Name:'", "Node (", "while running ", "implementation for ", " in node (",
            "of input parameter (", "Provider type for ", "of operator (")


@pytest.mark.parametrize("opener", _OPENERS)
def test_a_long_text_of_openers_is_masked_in_linear_time(opener: str) -> None:
    """100 KB of one opener never closed: the regexes' ``.*`` retried at each opener took
    7-13 s ("Name:'", "Node (", "while running ", "implementation for ")."""
    text = opener * (100_000 // len(opener))
    began = time.perf_counter()
    assert own_words(text) == text
    assert time.perf_counter() - began < 1.0


def test_a_pad_named_by_a_long_text_of_openers_is_classified_in_linear_time() -> None:
    """An int16 Pad named 100 KB of "Name:'", which onnxruntime quotes whole in its refusal:
    check of it took 38 s (0.3 s named "pad"), the refusal's classing 13 s; its words stand
    (CANNOT_RUN)."""
    pad = helper.make_node("Pad", ["x", "p"], ["y"], name="Name:'" * 17_000, mode="edge")
    graph = helper.make_graph(
        [pad], "g", [_info("x", TensorProto.INT16, [2, 3])], [_info("y", TensorProto.INT16, None)],
        [numpy_helper.from_array(np.array([1, 1, 1, 1], np.int64), "p")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)], ir_version=10)
    with pytest.raises(BackendError) as refusal:
        make_session(model.SerializeToString(), CPU, "m.onnx")
    began = time.perf_counter()
    words = cannot_run(refusal.value)
    assert time.perf_counter() - began < 1.0
    assert words is not None and "NOT_IMPLEMENTED" in words


#: Folders a model may be read from: each quote onnxruntime's texts use, openers of the names
#: it quotes, a newline, and dmlgraph's own prefix with a phrase after it.
FOLDERS = ('q"dir', "q'dir", "Name:'x", "x' Status Message: y", "Node (a) Op (", "a\nb",
           f"{CANNOT_LOAD}x", f'{CANNOT_LOAD}{CANNOT_RUN[0]} "q')


@pytest.mark.parametrize("folder", FOLDERS)
def test_check_compares_a_model_onnxruntime_cannot_run_with_onnx_reference_in_any_folder(
    folder: str, tmp_path: Path, capsys
) -> None:
    """A float16 Pad-2, which onnxruntime refuses (``CANNOT_RUN``), read from a folder named
    'q"dir' (or "Node (a) Op ("): the quote masked onnxruntime's words from it on, dmlgraph's
    prefix with them (``own_words``), and ``check --fallback reference`` exited 2 instead of
    comparing with onnx.reference. NumPy's np.pad, stored, is an oracle of its own."""
    folder_path = tmp_path / folder
    folder_path.mkdir()
    (folder_path / "m.onnx").write_bytes(_float16_pad_2())
    x = np.array([[1, -2, 3], [400, -500, 6]], np.float16)
    np.savez(folder_path / "io.npz", x=x, y=np.pad(x, 1, mode="reflect"))
    code = main(["check", str(folder_path / "m.onnx"), "--fallback", "reference", "--inputs",
                 str(folder_path / "io.npz")])
    captured = capsys.readouterr()
    out = " ".join(captured.out.split())
    assert code == 0, captured.err
    assert "parity holds" in out and "onnxruntime cannot run it: " in out
    assert "InsertedPrecisionFreeCast_x" in out and "stored outputs" in out


@pytest.mark.parametrize("name", ["s", 's"'])
@pytest.mark.parametrize("folder", FOLDERS)
def test_a_refusal_onnxruntime_words_otherwise_stands_in_any_folder(
    folder: str, name: str, tmp_path: Path, capsys
) -> None:
    """A Split whose constant sizes [2, 2] do not fit its axis of 3, which onnxruntime refuses
    at load (not ``CANNOT_RUN``), read from a folder named as dmlgraph's prefix, then
    NOT_IMPLEMENTED and a '"': the folder's quote masked onnxruntime's words and its own
    prefix, the folder's prefix and phrase were read as onnxruntime's, and check compared
    with onnx.reference (which truncates): "parity holds", exit 0."""
    folder_path = tmp_path / folder
    folder_path.mkdir()
    (folder_path / "m.onnx").write_bytes(_split(name, fed=False))
    np.savez(folder_path / "in.npz", X=np.arange(6, dtype=np.float32).reshape(2, 3))
    code = main(["check", str(folder_path / "m.onnx"), "--fallback", "reference", "--inputs",
                 str(folder_path / "in.npz")])
    captured = capsys.readouterr()
    assert code == 2 and "parity holds" not in captured.out
    assert "[ShapeInferenceError] Mismatch between" in captured.err


@pytest.mark.parametrize("content", [None, b"not a model"], ids=["missing", "unreadable"])
def test_a_path_onnxruntime_echoes_is_not_taken_for_its_words(content, tmp_path: Path) -> None:
    """onnxruntime repeats a path it was given ("Load model from P failed:"): a file missing or
    unreadable in a folder named NOT_IMPLEMENTED was taken for a model onnxruntime has no
    kernel for, its refusal hinting at ``--fallback reference``."""
    path = tmp_path / CANNOT_RUN[0] / "m.onnx"
    path.parent.mkdir()
    if content is not None:
        path.write_bytes(content)
    error = _refusal(str(path), str(path))
    assert f"Load model from {path} failed" in str(error)
    assert cannot_run(error) is None and not may_run_hint(error)


def _float16_pad(x: str, opset: int, pad: str = "p", beside: bool = False) -> bytes:
    """A float16 reflect Pad of input ``x`` (named ``pad``), which onnxruntime's CPU provider
    runs between Casts it inserts (``INSERTED_CAST``); ``beside``: an Identity of x making a
    graph output named as the inserted Cast's."""
    pads = [numpy_helper.from_array(np.array([1, 1, 1, 1], np.int64), "pads")] * (opset > 10)
    how = {} if pads else {"pads": [1, 1, 1, 1]}
    nodes = [helper.make_node("Pad", [x, *(p.name for p in pads)], ["y"], mode="reflect",
                              name=pad, **how)]
    outputs = [_info("y", TensorProto.FLOAT16, None)]
    if beside:
        nodes.append(helper.make_node("Identity", [x], [INSERTED_CAST + x], name="i"))
        outputs.append(_info(INSERTED_CAST + x, TensorProto.FLOAT16, None))
    return _model(nodes, [_info(x, TensorProto.FLOAT16, [2, 3])], outputs, pads, opset=opset)


#: (input, opset, the Pad's name, beside): what onnxruntime cannot run by a Cast it inserts.
INSERTED = [
    ("x", 5, "p", False),
    ("x", 5, f"{INSERTED_CAST}x", False),  # its Cast then "..._x_token_0"
    ('a"b', 5, "p", False),
    ("a\nb", 5, "p", False),
    ('x": b', 5, "p", False),
    ('In Node, ("q', 5, "p", False),
    ("x", 5, "p", True),
    ("x", 18, "p", True),
    ('a"b', 18, "p", True),
]


@pytest.mark.parametrize("x, opset, pad, beside", INSERTED)
def test_onnxruntime_s_refusal_of_a_cast_it_inserts_is_told_whatever_the_model_names(
    x: str, opset: int, pad: str, beside: bool
) -> None:
    """Its checker's refusal of the Cast-1 it inserts before a float16 Pad-2 went untold for an
    input named 'a"b' (or holding a newline): the quote's mask ran past the phrase. A tensor
    named as the inserted Cast's output ("InsertedPrecisionFreeCast_x"), which a valid model
    may hold, made onnxruntime refuse it as defining the name twice, at any opset: untold."""
    error = _refusal(_float16_pad(x, opset, pad, beside))
    said = "Duplicate definition of name" if beside else "Mismatched attribute type in"
    assert said in error.engine_words.text and INSERTED_CAST in str(error)  # (all it said)
    assert cannot_run(error) == str(error).partition(CANNOT_LOAD)[2] and may_run_hint(error)


@pytest.mark.parametrize("refusal", [
    lambda: _refusal(_bad_cast(f"{INSERTED_CAST}x")),
    lambda: _refusal(_split(f"{INSERTED_CAST}s", fed=False)),
    lambda: _refusal(_string_relu(f"{INSERTED_CAST}s")),
], ids=["Cast-1 to an int", "Split", "Relu of strings"])
def test_a_node_named_as_an_inserted_cast_is_not_taken_for_one(refusal) -> None:
    """A model's own node named with onnxruntime's prefix for its inserted Casts, refused for
    what it is (a Cast-1 to an int, which dmlgraph's import refuses first, was taken for
    onnxruntime's own Cast)."""
    error = refusal()
    assert INSERTED_CAST in str(error)
    assert cannot_run(error) is None and not may_run_hint(error)


@pytest.mark.parametrize("x, opset", [("x", 18), ('a"b', 5)])
def test_check_compares_a_float16_pad_onnxruntime_refuses_by_its_inserted_cast_with_onnx_reference(
    x: str, opset: int, tmp_path: Path, capsys
) -> None:
    """A float16 Pad beside a tensor named as the Cast onnxruntime inserts (a valid model), or
    a Pad-2 of an input named 'a"b': onnxruntime refuses it, check exited 2; it compares
    with onnx.reference. NumPy's np.pad, stored, is an oracle of its own."""
    path = tmp_path / "m.onnx"
    path.write_bytes(_float16_pad(x, opset, beside=opset > 5))
    value = np.array([[1, -2, 3], [400, -500, 6]], np.float16)
    stored = {x: value, "y": np.pad(value, 1, mode="reflect")}
    if opset > 5:
        stored[INSERTED_CAST + x] = value
    np.savez(tmp_path / "io.npz", **stored)
    code = main(["check", str(path), "--fallback", "reference", "--inputs",
                 str(tmp_path / "io.npz")])
    captured = capsys.readouterr()
    out = " ".join(captured.out.split())
    assert code == 0, captured.err
    assert "parity holds" in out and "onnxruntime cannot run it: " in out
    assert "stored outputs" in out
