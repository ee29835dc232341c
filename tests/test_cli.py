"""The command line as a user types it: inspect on a bundled model, and its errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from dmlgraph.cli import main

MODELS = Path(__file__).parent.parent / "models"


def test_inspect_lists_folded_parameters(capsys) -> None:
    assert main(["inspect", str(MODELS / "encodec_encoder_reflect.onnx")]) == 0
    out = capsys.readouterr().out
    assert "input  hidden_states.1: float32[1,1,2000]" in out
    # The first reflect Pad of the encoder pads the time axis by 3 on each side once folded.
    assert "/e/layers.0/Pad: mode=reflect pads=[0, 0, 3, 0, 0, 3]" in out
    assert "run-time" not in out


def test_inspect_with_dynamic_input_shape_flag(capsys) -> None:
    args = ["inspect", str(MODELS / "squeezenet1_1.onnx"), "--input-shape", "input.1:1,3,224,224"]
    assert main(args) == 0
    assert "Concat" in capsys.readouterr().out


@pytest.mark.parametrize("name", ["if_pad_slice", "nested_loop_if"])
def test_inspect_names_the_control_flow_nodes_holding_slice_concat_pad(name, capsys) -> None:
    """inspect listed only the main graph's Slice/Concat/Pad: a model whose Loop body held a
    Pad and a Slice said "Slice/Concat/Pad after folding: 0" (found by a new user's
    walkthrough), where `lower` lowers and lists them. The oracle counts them in the file."""
    from collections import Counter

    import onnx

    def held(graph: onnx.GraphProto) -> Counter[str]:
        found: Counter[str] = Counter()
        for node in graph.node:
            for attribute in node.attribute:
                for sub in [attribute.g] if attribute.HasField("g") else list(attribute.graphs):
                    found.update(n.op_type for n in sub.node
                                 if n.op_type in ("Slice", "Concat", "Pad"))
                    found.update(held(sub))
        return found

    path = MODELS / "control_flow" / f"{name}.onnx"
    model = onnx.load(path)
    holders = [n for n in model.graph.node if n.op_type in ("If", "Loop", "Scan")]
    assert len(holders) == 1
    expected = held(model.graph)  # all of them the one holder's
    assert main(["inspect", str(path), "--input-shape", "x:2,4" if "loop" in name
                 else "x:1,2,5,6"]) == 0
    out = capsys.readouterr().out
    listed = ", ".join(f"{n} {op}" for op, n in sorted(expected.items()))
    assert f"and {sum(expected.values())} in the subgraphs of 1 control-flow node(s)" in out
    assert f"  {holders[0].op_type:<6} {holders[0].name}: its subgraphs hold {listed}" in out


@pytest.mark.parametrize("args, fragment", [
    (["inspect", "no/such/model.onnx"], "no/such/model.onnx"),
    (["inspect", str(MODELS / "squeezenet1_1.onnx"), "--input-shape", "nope:1,3"],
     "an input shape is given for 'nope', which is not a graph input"),
    # the option's words, not the Python argument's (it said input_shapes['input.1'] = ...)
    (["lower", str(MODELS / "squeezenet1_1.onnx"), "--input-shape", "input.1:1,3,224"],
     "the input shape for 'input.1', [1, 3, 224], has rank 3; the model declares rank 4"),
    (["lower", str(MODELS / "squeezenet1_1.onnx"), "--input-shape", "input.1:1,3,224,225"],
     "the input shape for 'input.1' gives dimension 3 as 225, but the model fixes that"),
    *(
        ([command, str(MODELS / "squeezenet1_1.onnx"), "--input-shape", "input.1:1,3,224,224",
          "--input-shape", "input.1:2,3,224,224"], "'input.1' two shapes")
        for command in ("inspect", "lower", "check", "run")  # viz reads them as lower does
    ),
])
def test_errors_are_one_line_and_exit_2(args, fragment, capsys) -> None:
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("dmlgraph: error:") and err.count("\n") == 1 and fragment in err


# "1_0" and "\u0663": Python's int() reads 10 and 3, which no user typing a size meant
@pytest.mark.parametrize("bad", ["x", "x:1,a", ":1,2", "x:-1", "x:1_0", "x:\u0663"])
def test_malformed_input_shape_is_a_usage_error(bad, capsys) -> None:
    with pytest.raises(SystemExit) as info:
        main(["inspect", str(MODELS / "squeezenet1_1.onnx"), "--input-shape", bad])
    assert info.value.code == 2
    assert "NAME:D0,D1" in capsys.readouterr().err


@pytest.mark.parametrize("level", ["9_9", "6.04", "06_4", "6_40", "\uff16.\uff14", "\u0666_\u0664"])
def test_unknown_feature_level_is_a_usage_error(level, capsys) -> None:
    """"6.04", "06_4" and other scripts' digits ("６.４") were read as 6_4 (int() of each
    part): a level is written as DirectML names it."""
    with pytest.raises(SystemExit) as info:
        main(["dxdispatch", str(MODELS / "dxdispatch" / "example_join.json"),
              "--feature-level", level])
    assert info.value.code == 2
    assert "unknown DirectML feature level" in capsys.readouterr().err


def _save(tmp_path: Path, nodes, inputs, outputs, name: str = "m.onnx") -> str:
    import onnx
    from onnx import helper

    graph = helper.make_graph(nodes, "g", inputs, outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=10)
    path = tmp_path / name
    onnx.save(model, path)
    return str(path)


def test_a_checker_message_of_several_lines_is_one_line(tmp_path: Path, capsys) -> None:
    """The ONNX checker's messages carry a context line after a blank one; the error the
    command prints is still one line."""
    from onnx import TensorProto, helper

    info = helper.make_tensor_value_info
    path = _save(tmp_path, [helper.make_node("Concat", ["a", "a"], ["y"])],
                 [info("a", TensorProto.FLOAT, [2])], [info("y", TensorProto.FLOAT, [4])])
    assert main(["lower", path]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Required attribute 'axis' is missing. ==> Context:" in err


def test_an_input_too_large_to_generate_is_an_error_not_a_traceback(
    tmp_path: Path, capsys
) -> None:
    """2**46 float32 elements: more bytes than a 64-bit process can map, so the allocation
    fails at once, whatever the machine's overcommit policy."""
    from onnx import TensorProto, helper

    info = helper.make_tensor_value_info
    path = _save(tmp_path, [helper.make_node("Concat", ["a", "a"], ["y"], axis=1)],
                 [info("a", TensorProto.FLOAT, [2**45, 2])],
                 [info("y", TensorProto.FLOAT, [2**45, 4])])
    assert main(["check", path]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert f"input 'a' is float32[{2**45}, 2], {2**48} bytes: too large to generate" in err


def _slice_model(tmp_path: Path, **save: object) -> Path:
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    inits = [numpy_helper.from_array(np.arange(16, dtype=np.float32).reshape(2, 8), "w")] + [
        numpy_helper.from_array(np.array([v], np.int64), n) for n, v in
        (("s", 0), ("e", 4), ("a", 1))]
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "w"], ["t"]),
         helper.make_node("Slice", ["t", "s", "e", "a"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    path = tmp_path / "m.onnx"
    onnx.save(model, path, **save)  # type: ignore[arg-type]
    return path


def test_an_output_naming_the_models_external_data_is_refused(tmp_path: Path, capsys) -> None:
    """`lower m.onnx -o w.json` where m.onnx keeps its tensors in w.json overwrote them."""
    model = _slice_model(tmp_path, save_as_external_data=True, all_tensors_to_one_file=True,
                         location="w.json", size_threshold=0)
    before = (tmp_path / "w.json").read_bytes()
    assert main(["lower", str(model), "-o", str(tmp_path / "w.json")]) == 2
    assert f"is {model}'s external data w.json, which this command reads" in (
        capsys.readouterr().err)
    assert (tmp_path / "w.json").read_bytes() == before


@pytest.mark.parametrize("link", ["symlink", "hardlink"])
def test_a_test_data_file_linked_to_the_model_is_refused(tmp_path: Path, capsys, link) -> None:
    """`run m.onnx -o FOLDER` where FOLDER/output_0.pb (or input_0.pb) links to the model
    wrote the output into the model."""
    import os

    model = _slice_model(tmp_path)
    before = model.read_bytes()
    folder = tmp_path / "out"
    folder.mkdir()
    made = folder / "output_0.pb"
    (made.symlink_to if link == "symlink" else made.hardlink_to)(model)
    assert main(["run", str(model), "-o", str(folder)]) == 2
    err = capsys.readouterr().err
    assert f"{made}: is {model}, which this command reads" in err
    assert model.read_bytes() == before
    assert os.path.samefile(made, model)


def test_names_reach_the_terminal_with_control_codes_shown(tmp_path, capsys) -> None:
    """A model's names are anyone's text: ESC [31m recoloured the terminal, a newline broke
    the table's row; they print as \\x1b and \\x0a, as the drawings show them."""
    import onnx
    from onnx import TensorProto, helper

    name = "ca\x1b[31mt\nline2"
    graph = helper.make_graph(
        [helper.make_node("Concat", ["x", "x"], [name], axis=0, name=name)], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info(name, TensorProto.FLOAT, None)])
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)],
                                ir_version=10), path)
    for command in (["lower"], ["inspect"], ["run"], ["check"]):
        assert main([*command, str(path)]) == 0
        out = capsys.readouterr().out
        assert "\x1b" not in out and "ca\\x1b[31mt\\x0aline2" in out, command


def _bidi_controls() -> set[str]:
    """Unicode's Bidi_Control characters: the explicit embeddings, overrides and isolates (by
    their bidirectional class) and the three marks (by name)."""
    import unicodedata

    explicit = {"LRE", "RLE", "LRO", "RLO", "PDF", "LRI", "RLI", "FSI", "PDI"}
    found = {chr(c) for c in range(0x110000)
             if not 0xD800 <= c <= 0xDFFF and unicodedata.bidirectional(chr(c)) in explicit}
    marks = ("ARABIC LETTER MARK", "LEFT-TO-RIGHT MARK", "RIGHT-TO-LEFT MARK")
    return found | {unicodedata.lookup(mark) for mark in marks}


def test_bidirectional_controls_are_shown_by_their_codes() -> None:
    """U+202E (RIGHT-TO-LEFT OVERRIDE) in a name printed the rest of the line backwards (it
    passed raw, where U+FFFE was escaped); every bidi control shows as its code, and the
    letters of right-to-left scripts stay as they are."""
    from dmlgraph.printable import visible

    controls = _bidi_controls()
    assert len(controls) == 12, sorted(map(ord, controls))
    for char in controls:
        assert visible(f"a{char}b") == f"a\\u{ord(char):04x}b"
    assert visible("\u05d0\u0628 \u00e9") == "\u05d0\u0628 \u00e9"


def test_lower_and_inspect_leave_onnxruntime_unimported() -> None:
    """Nothing of onnxruntime is needed to lower or inspect; importing it (to word
    ``--version`` for a parser that might never show it) cost every command 40 ms."""
    import subprocess
    import sys

    model = MODELS / "seeds" / "slice_example1.onnx"
    script = (
        "import sys\n"
        "from dmlgraph.cli import main\n"
        "for command in ('lower', 'inspect'):\n"
        "    try:\n"
        f"        main([command, {str(model)!r}])\n"
        "    except SystemExit as exc:\n"
        "        assert not exc.code, exc.code\n"
        "assert 'onnxruntime' not in sys.modules, 'onnxruntime was imported'\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          cwd=Path(__file__).parent.parent)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("name", ["graph", "graph."])
def test_viz_to_a_name_without_a_suffix_says_so(name, tmp_path, capsys) -> None:
    """It said "cannot tell the format from 'no suffix'", quoting those words as the suffix."""
    assert main(["viz", str(MODELS / "squeezenet1_1.onnx"), "-o", str(tmp_path / name)]) == 2
    err = capsys.readouterr().err
    assert f"{name}: cannot tell the format without a suffix (use one of .dot" in err
    assert err.count("\n") == 1


@pytest.mark.parametrize("target", ["out", "out.npz"])
def test_run_says_how_many_outputs_it_saved_when_one_is_listed_twice(
    tmp_path: Path, capsys, target: str
) -> None:
    """A graph listing one output twice: a test-data folder holds a file for each listing (2),
    an .npz one key (1); `run -o` said 1 for both."""
    from onnx import TensorProto, helper

    from dmlgraph import load, tensorio

    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    model = _save(tmp_path, [helper.make_node("Relu", ["x"], ["y"])],
                  [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])], [y, y])
    out = tmp_path / target
    assert main(["run", model, "-o", str(out)]) == 0
    listed = 2 if target == "out" else 1
    assert f"saved 1 input(s) and {listed} output(s)" in capsys.readouterr().out
    if target == "out":
        assert sorted(p.name for p in out.iterdir()) == ["input_0.pb", "output_0.pb",
                                                         "output_1.pb"]
    assert len(tensorio.read(out, load(model)).outputs) == 1


def test_inspect_shows_a_nan_fill_value_other_than_the_dtypes_own_by_its_bits(tmp_path,
                                                                           capsys) -> None:
    """A Pad filling -nan with a payload is lowered otherwise than one filling nan (at FL
    1_0 no PADDING holds it): inspect printed "constant_value=nan" for both."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    fill = np.frombuffer(np.uint32(0xFFC00001).tobytes(), np.float32).reshape(())
    for name, value in (("payload", fill), ("plain", np.array(np.nan, np.float32))):
        graph = helper.make_graph(
            [helper.make_node("Pad", ["x", "p", "v"], ["y"], name="pad")], "g",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 5])],
            [numpy_helper.from_array(np.array([1, 1, 1, 1], np.int64), "p"),
             numpy_helper.from_array(value, "v")])
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)]),
                  tmp_path / f"{name}.onnx")
    assert main(["inspect", str(tmp_path / "payload.onnx")]) == 0
    assert "constant_value=nan(0xffc00001) " in capsys.readouterr().out
    assert main(["inspect", str(tmp_path / "plain.onnx")]) == 0
    assert "constant_value=nan " in capsys.readouterr().out


def test_python_dash_m_dmlgraph_runs_the_command() -> None:
    """``python -m dmlgraph`` said "No module named dmlgraph.__main__"; it is the command,
    its exit status too (a seed model lowers: 0; a missing file: 2)."""
    import subprocess
    import sys

    model = MODELS / "seeds" / "slice_example1.onnx"
    root = Path(__file__).parent.parent
    done = subprocess.run([sys.executable, "-m", "dmlgraph", "lower", str(model)],
                          capture_output=True, text=True, cwd=root)
    assert done.returncode == 0, done.stderr
    assert "DML_OPERATOR_SLICE" in done.stdout
    missing = subprocess.run([sys.executable, "-m", "dmlgraph", "lower", "no-such.onnx"],
                             capture_output=True, text=True, cwd=root)
    assert missing.returncode == 2 and missing.stderr.startswith("dmlgraph: error: ")


def test_inspect_and_check_name_an_unnamed_node_as_lower_does(tmp_path, capsys) -> None:
    """An unnamed Slice is "(unnamed)" in lower's table; inspect printed "Slice  : ..." and
    check's fallback line "fallback Slice : ...", a name of nothing."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    params = [numpy_helper.from_array(np.array([0], np.int64), "a"),
              numpy_helper.from_array(np.array([2], np.int64), "e")]
    graph = helper.make_graph(
        [helper.make_node("Slice", ["x", "s", "e", "a"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4]),
         helper.make_tensor_value_info("s", TensorProto.INT64, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], params)
    model = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), model)
    inputs = tmp_path / "in.npz"
    np.savez(inputs, x=np.arange(4, dtype=np.float32), s=np.array([1], np.int64))
    assert main(["lower", str(model)]) == 0
    assert "│ (unnamed) │ Slice │ fallback" in capsys.readouterr().out
    assert main(["inspect", str(model)]) == 0
    assert "  Slice  (unnamed): starts=run-time" in capsys.readouterr().out
    assert main(["check", str(model), "--inputs", str(inputs)]) == 0
    assert "  fallback Slice (unnamed): starts is known only at run time" in (
        capsys.readouterr().out.replace("\n", " "))


@pytest.fixture
def focus_onnx(tmp_path: Path) -> Path:
    import onnx
    from oracles import focus_model

    path = tmp_path / "focus.onnx"
    onnx.save(focus_model(), path)
    return path


@pytest.mark.parametrize("suffix", [".dot", ".html"])
def test_viz_focus_draws_the_named_node_and_its_neighbours(focus_onnx, tmp_path, suffix,
                                                           capsys) -> None:
    out = tmp_path / f"f{suffix}"
    assert main(["viz", str(focus_onnx), "-o", str(out), "--focus", "pad", "--focus", "t5",
                 "--depth", "0"]) == 0
    assert capsys.readouterr().out == f"wrote {out}\n"
    text = out.read_text(encoding="utf-8")
    assert "focus: pad, t5, depth 0: 3 of 13 nodes" in text  # pad; neg and ab for t5
    assert "tanh0" not in text and "wide" not in text
    default = tmp_path / f"d{suffix}"
    assert main(["viz", str(focus_onnx), "-o", str(default), "--focus", "pad"]) == 0
    assert "focus: pad, depth 2: 6 of 13 nodes" in default.read_text(encoding="utf-8")


@pytest.mark.parametrize("args, fragment", [
    (["--focus", "Pda"], "focus 'Pda': no node or tensor of the imported graph has this name; "
                         "close matches: 'pad'"),
    (["--focus", "pad", "--focus", "tahn1"], "focus 'tahn1': no node or tensor of the "
                                             "imported graph has this name; close matches: "),
    (["--depth", "1"], "--depth 1 says how far --focus reaches; add --focus NAME"),
])
def test_viz_focus_errors_are_one_line_and_exit_2(focus_onnx, tmp_path, args, fragment,
                                                  capsys) -> None:
    out = tmp_path / "f.dot"
    assert main(["viz", str(focus_onnx), "-o", str(out), *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("dmlgraph: error: ") and err.count("\n") == 1 and fragment in err
    assert not out.exists()


@pytest.mark.parametrize("depth", ["x", "1.5", "-1", ""])
def test_viz_depth_is_a_whole_number_or_a_usage_error(focus_onnx, tmp_path, depth,
                                                      capsys) -> None:
    with pytest.raises(SystemExit) as info:
        main(["viz", str(focus_onnx), "-o", str(tmp_path / "f.dot"), "--focus", "pad",
              "--depth", depth])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "argument --depth" in err and "is not a whole number of edges >= 0" in err


def test_viz_help_names_the_default_depth(capsys) -> None:
    """cli.py names focus.DEFAULT_DEPTH in the help without importing it for every command."""
    from dmlgraph.viz.focus import DEFAULT_DEPTH

    with pytest.raises(SystemExit):
        main(["viz", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert f"(default {DEFAULT_DEPTH})" in help_text and "--focus NAME" in help_text


def test_run_and_check_list_each_node_lowered_when_it_ran_once(tmp_path, capsys) -> None:
    """A node lowered as the graph ran was listed once per descriptor: at FL 1_0 a reversed
    slice of 16 is 16 SLICEs and a JOIN, so three of them took 51 lines, cut at 30, and the
    last Concat was hidden behind "... and 21 more" (found by a new user's walkthrough of a
    dynamic-batch attention block). The oracle: the model's own nodes, one line each, the
    descriptors counted from the shapes (one single-element SLICE per element reversed)."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    def ints(name: str, values: list[int]) -> onnx.TensorProto:
        return numpy_helper.from_array(np.array(values, np.int64), name)

    nodes = [helper.make_node("Slice", ["x", "s", "e", "a", "st"], [f"r{k}"], name=f"rev{k}")
             for k in range(3)]
    nodes.append(helper.make_node("Concat", ["r0", "r1", "r2"], ["y"], axis=0, name="cat"))
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [ints("s", [-1]), ints("e", [-(2**63)]), ints("a", [1]), ints("st", [-1])])
    path = tmp_path / "rev.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    inputs = tmp_path / "in.npz"
    np.savez(inputs, x=np.arange(32, dtype=np.float32).reshape(2, 16))
    for command in ("run", "check"):
        args = [command, str(path), "--inputs", str(inputs), "--feature-level", "1_0"]
        assert main(args) == 0
        lines = [line for line in capsys.readouterr().out.splitlines()
                 if line.startswith("  lowered when it ran:")]
        assert lines == [
            *(f"  lowered when it ran: rev{k} -> DML_OPERATOR_SLICE x16, DML_OPERATOR_JOIN "
              "(lowered at run time)" for k in range(3)),
            "  lowered when it ran: cat -> DML_OPERATOR_JOIN (lowered at run time)",
        ]


def test_inspect_writes_unknown_sizes_and_ranks_as_messages_do(tmp_path, capsys) -> None:
    """inspect wrote an input of unknown rank as ``float32[?]``, which is how a rank-1 shape
    of unknown size reads (``ir.dims_text``: ``[...]`` for an unknown rank), and a size
    with neither a value nor a name as ``None`` (a new user's walkthrough). The oracle: the
    model file's own shapes, one declared as [?, 4] and [?], one with none at all."""
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Concat", ["a", "a"], ["y"], axis=1, name="cat"),
         helper.make_node("Concat", ["b", "b"], ["z"], axis=0, name="cat2"),
         helper.make_node("Concat", ["c", "c"], ["w"], axis=0, name="cat3")], "g",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, [None, 4]),
         helper.make_tensor_value_info("b", TensorProto.FLOAT, [None]),
         helper.make_tensor_value_info("c", TensorProto.FLOAT, None)],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in "yzw"])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    (a, b, c) = model.graph.input
    assert [d.HasField("dim_value") or d.HasField("dim_param")
            for d in a.type.tensor_type.shape.dim] == [False, True]
    assert len(b.type.tensor_type.shape.dim) == 1 and not c.type.tensor_type.HasField("shape")
    path = tmp_path / "unknown.onnx"
    onnx.save(model, path)
    assert main(["inspect", str(path)]) == 0
    out = capsys.readouterr().out
    assert "  input  a: float32[?,4]\n" in out
    assert "  input  b: float32[?]\n" in out
    assert "  input  c: float32[...]\n" in out


def test_unnamed_nodes_lowered_when_they_ran_are_told_apart(tmp_path, capsys) -> None:
    """Two unnamed Slices of a dynamic input, lowered as the graph ran, were listed as two
    "(unnamed) -> DML_OPERATOR_SLICE" lines and two records named '' in check --json (a new
    user's walkthrough); a subgraph's were already named by the first tensor each makes.
    The oracle: the tensors the model file says each node makes."""
    import json

    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    def ints(name: str, values: list[int]) -> onnx.TensorProto:
        return numpy_helper.from_array(np.array(values, np.int64), name)

    graph = helper.make_graph(
        [helper.make_node("Slice", ["x", "s", "e", "a"], ["first"]),
         helper.make_node("Slice", ["x", "s2", "e", "a"], ["second"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 6])],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("first", "second")],
        [ints("s", [1]), ints("s2", [2]), ints("e", [5]), ints("a", [1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    made = [node.output[0] for node in model.graph.node if not node.name]
    path, inputs = tmp_path / "unnamed.onnx", tmp_path / "in.npz"
    onnx.save(model, path)
    np.savez(inputs, x=np.zeros((2, 6), np.float32))
    assert main(["run", str(path), "--inputs", str(inputs)]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if "lowered when it ran" in line]
    assert lines == [f"  lowered when it ran: (unnamed, making {name!r}) -> DML_OPERATOR_SLICE "
                     "(lowered at run time)" for name in made]
    assert main(["check", str(path), "--inputs", str(inputs), "--json"]) == 0
    (numpy_run, _) = json.loads(capsys.readouterr().out)["runs"]
    assert [r["node"] for r in numpy_run["lowered_when_run"]] == [
        f"(unnamed, making {name!r})" for name in made]
