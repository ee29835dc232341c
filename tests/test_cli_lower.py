"""`dmlgraph lower` and `dmlgraph viz` as a user types them."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from dmlgraph.cli import main

MODELS = Path(__file__).parent.parent / "models"


def test_lower_prints_one_row_per_slice_concat_and_pad(capsys) -> None:
    assert main(["lower", str(MODELS / "shufflenet_v2_x0_5.onnx"), "--feature-level", "2.1"]) == 0
    out = capsys.readouterr().out
    assert "DML_FEATURE_LEVEL_2_1: 42 Slice/Concat/Pad nodes: 42 lowered" in out
    assert "/stage2/stage2.1/Slice" in out and "descriptors: 16 DML_OPERATOR_JOIN" in out


def test_lower_json_lists_descriptors_in_dxdispatch_form(tmp_path, capsys) -> None:
    out = tmp_path / "lowered.json"
    model = MODELS / "encodec_encoder_reflect.onnx"
    assert main(["lower", str(model), "--feature-level", "DML_FEATURE_LEVEL_2_1", "-o", str(out)]) == 0
    document = json.loads(out.read_text())
    assert document["feature_level"] == "DML_FEATURE_LEVEL_2_1"
    pads = [n["dml"] for n in document["nodes"] if "dml" in n]
    assert len(pads) == 6 and {p["type"] for p in pads} == {"DML_OPERATOR_PADDING"}
    # DML_SPEC: below FL 3.1 PADDING takes 4 to 5 dimensions, so [1, 1, 2000] gains a 1
    assert pads[0]["desc"]["InputTensor"]["Sizes"] == [1, 1, 1, 2000]
    assert pads[0]["desc"]["PaddingMode"] == "DML_PADDING_MODE_REFLECTION"
    statuses = {r["status"] for r in document["report"] if r["op_type"] == "Pad"}
    assert statuses <= {"lowered", "eliminated", "folded"}


def test_lower_to_dxdispatch_runs_back_with_the_seed_values(tmp_path, capsys) -> None:
    out = tmp_path / "join.json"
    model, inputs = MODELS / "seeds" / "join_example2.onnx", MODELS / "seeds" / "seed_io.npz"
    args = ["lower", str(model), "--format", "dxdispatch", "--inputs", str(inputs), "-o", str(out)]
    assert main(args) == 0
    assert main(["dxdispatch", str(out)]) == 0
    printed = capsys.readouterr().out
    expected = np.load(inputs)["join_example2__out2"].reshape(-1)
    assert ", ".join(str(int(v)) for v in expected) in printed


def test_lower_to_dxdispatch_sizes_a_dynamic_input_by_its_inputs(tmp_path, capsys) -> None:
    """A dynamic input stayed ONNX in a DxDispatch model even with --inputs, whose values fix
    every size: the export was refused ("3 node(s) stay ONNX"); the values now size it, as
    --input-shape would, and a value that breaks a dimension's name is refused by it."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    nodes = [helper.make_node("Slice", ["x", "st", "en", "ax", "sp"], ["s"], name="slice"),
             helper.make_node("Concat", ["s", "y"], ["c"], axis=1, name="concat"),
             helper.make_node("Pad", ["c", "pads"], ["p"], mode="reflect", name="pad")]
    constants = {"st": [0, -1], "en": [2**63 - 1, -2**63], "ax": [1, 2], "sp": [2, -1],
                 "pads": [0, 1, 2, 0, 1, 2]}
    graph = helper.make_graph(
        nodes, "dyn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", "C", "W"]),
                       helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", "K", "W"])],
        [helper.make_tensor_value_info("p", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.array(v, np.int64), k) for k, v in constants.items()])
    model = tmp_path / "dyn.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)],
                                ir_version=8), model)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 5, 6)).astype(np.float32)
    y = rng.standard_normal((2, 1, 6)).astype(np.float32)
    np.savez(tmp_path / "in.npz", x=x, y=y)
    out = tmp_path / "dyn.json"
    args = ["lower", str(model), "--feature-level", "3_0", "--format", "dxdispatch",
            "--inputs", str(tmp_path / "in.npz"), "-o", str(out)]
    assert main(args) == 0
    assert main(["dxdispatch", str(out), "-o", str(tmp_path / "res.npz")]) == 0
    expected = np.pad(np.concatenate([x[:, ::2, ::-1], y], axis=1),
                      ((0, 0), (1, 1), (2, 2)), mode="reflect")
    np.testing.assert_array_equal(np.load(tmp_path / "res.npz")["p"], expected.reshape(-1))
    capsys.readouterr()
    np.savez(tmp_path / "bad.npz", x=x, y=np.zeros((2, 1, 7), np.float32))
    args[args.index(str(tmp_path / "in.npz"))] = str(tmp_path / "bad.npz")
    assert main(args) == 2
    assert "dimension 'W' is 6 in input 'x' (axis 2) but 7 in input 'y'" in capsys.readouterr().err


def test_viz_writes_html_and_dot(tmp_path, capsys) -> None:
    model = str(MODELS / "squeezenet1_1.onnx")
    assert main(["viz", model, "-o", str(tmp_path / "s.html")]) == 0
    html = (tmp_path / "s.html").read_text()
    assert "<html" in html and "http://" not in html and "https://" not in html
    assert main(["viz", model, "--feature-level", "1_0", "-o", str(tmp_path / "s.dot")]) == 0
    assert (tmp_path / "s.dot").read_text().startswith("digraph")


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["lower", "no/such.onnx"], "no/such.onnx"),
        (["lower", str(MODELS / "squeezenet1_1.onnx"), "--format", "dxdispatch"], "-o OUT.json"),
        (["lower", str(MODELS / "squeezenet1_1.onnx"), "--format", "dxdispatch", "-o", "x.json"],
         "ONNX"),
    ],
)
def test_lower_errors_are_one_line_and_exit_2(args, fragment, capsys, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(args) == 2
    err = capsys.readouterr().err
    assert fragment in err and err.count("\n") == 1 and "Traceback" not in err


def test_lower_of_a_model_whose_slices_all_fold_prints_no_empty_table(tmp_path, capsys) -> None:
    """Every Slice folded at import: the summary says so, and no table frame follows with
    no rows in it."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    graph = helper.make_graph(
        [helper.make_node("Slice", ["c", "s", "e"], ["t"], name="fold_me"),
         helper.make_node("Add", ["x", "t"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
        [numpy_helper.from_array(np.arange(4, dtype=np.float32), "c"),
         numpy_helper.from_array(np.array([1]), "s"), numpy_helper.from_array(np.array([3]), "e")])
    path = tmp_path / "folds.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                                ir_version=8), path)
    assert main(["lower", str(path)]) == 0
    out = capsys.readouterr().out
    assert "1 Slice/Concat/Pad nodes: 1 folded" in out and "1 folded at import" in out
    assert "┏" not in out and "node" not in out.split("\n", 2)[-1]


def test_lower_of_a_model_without_slice_concat_or_pad_says_so_and_no_more(tmp_path, capsys):
    """A dangling "0 Slice/Concat/Pad nodes: " headed an empty report (seen on a torch export
    whose one index_select is a Gather)."""
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    path = tmp_path / "relu.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                                ir_version=8), path)
    assert main(["lower", str(path)]) == 0
    assert capsys.readouterr().out.strip() == "DML_FEATURE_LEVEL_6_4: 0 Slice/Concat/Pad nodes"



def test_rows_hidden_as_removed_at_import_are_counted_by_their_status(tmp_path, capsys) -> None:
    """A Slice nothing reads is eliminated at import, the one whose result is constant
    folded: the line saying they are not listed said "2 folded at import"."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    params = [numpy_helper.from_array(np.array(v, np.int64), n)
              for n, v in (("s", [1]), ("e", [3]), ("a", [0]))]
    params.append(numpy_helper.from_array(np.zeros((4, 2), np.float32), "c"))
    nodes = [helper.make_node("Slice", ["x", "s", "e", "a"], ["dead"], name="dead"),
             helper.make_node("Slice", ["c", "s", "e", "a"], ["k"], name="constant"),
             helper.make_node("Slice", ["x", "s", "e", "a"], ["y"], name="kept"),
             helper.make_node("Concat", ["y", "k"], ["z"], name="join", axis=0)]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 2])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [4, 2])], params)
    model = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)]), model)
    assert main(["lower", str(model)]) == 0
    out = capsys.readouterr().out
    assert "(1 folded and 1 eliminated at import are not listed; --all lists every node)" in out


def test_json_ties_unnamed_nodes_to_their_records_and_check_writes_the_same_records(
        tmp_path, capsys) -> None:
    """Three unnamed Slices (names cannot tell them apart): x [6, 3] reversed along axis 1,
    at FL 1_0 a JOIN of 3 one-column SLICEs, and two plain row slices. Each lowered node
    names its record (``origin`` = ``node_id``), and ``check --json`` lists the records
    ``lower --json`` does, ``at_import`` and all (it lacked it)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    big = np.iinfo(np.int64).max
    ints = {"a0": [0], "a1": [1], "s1": [1], "e4": [4], "m1": [-1], "mn": [-big - 1],
            "s": [0], "e": [1]}
    nodes = [helper.make_node("Slice", ["x", "m1", "mn", "a1", "m1"], ["y"]),
             helper.make_node("Slice", ["x", "s1", "e4", "a0"], ["y2"]),
             helper.make_node("Slice", ["x", "s", "e", "a0"], ["y3"]),
             helper.make_node("Slice", ["x", "s", "e", "a0"], ["dead"])]  # at import
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [6, 3])],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in ("y", "y2", "y3")],
        [numpy_helper.from_array(np.array(v, np.int64), k) for k, v in ints.items()])
    model = tmp_path / "unnamed.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)]), model)
    assert main(["lower", str(model), "--feature-level", "1_0", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    made: dict[int, list[str]] = {}
    for node in document["nodes"]:
        made.setdefault(node["origin"], []).append(node["dml"]["type"])
    records = document["report"]
    assert [r["at_import"] for r in records] == [False, False, False, True]
    assert sorted(made[records[0]["node_id"]]) == ["DML_OPERATOR_JOIN"] + [
        "DML_OPERATOR_SLICE"] * 3
    for record in records:
        assert made.get(record["node_id"], []) == record["dml_ops"]
    assert main(["check", str(model), "--feature-level", "1_0", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["lowering"]["nodes"] == records


def _reversal_chain(path: Path, count: int) -> None:
    """``count`` Slices in a chain, each reversing x [4]: at FL 1_0 each is a JOIN of single
    elements, with notes saying why."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    params = [numpy_helper.from_array(np.array(v, np.int64), n)
              for n, v in (("s", [-1]), ("e", [-(2 ** 63)]), ("st", [-1]))]
    nodes, previous = [], "x"
    for k in range(count):
        nodes.append(helper.make_node("Slice", [previous, "s", "e", "", "st"], [f"t{k}"],
                                      name=f"rev{k}"))
        previous = f"t{k}"
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info(previous, TensorProto.FLOAT, [4])], params)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                                ir_version=8), path)


def test_a_long_report_prints_as_plain_aligned_lines(tmp_path, capsys) -> None:
    """Past PLAIN_ROWS_ABOVE rows the report is plain text, a row per line and a note per
    line under the notes column: rich laid a 5,000-row table out in 9 of lower's 10 s."""
    from dmlgraph.reporting import PLAIN_ROWS_ABOVE

    count = PLAIN_ROWS_ABOVE + 1
    model = tmp_path / "chain.onnx"
    _reversal_chain(model, count)
    assert main(["lower", str(model), "--feature-level", "1_0"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"DML_FEATURE_LEVEL_1_0: {count} Slice/Concat/Pad nodes: {count} decomposed"
    assert lines[1].split() == ["node", "op", "status", "DirectML", "notes"]
    notes_at = lines[1].index("notes")
    rows = [line for line in lines[2:-1] if line[:1] != " "]
    assert [row.split()[:4] for row in rows] == [
        [f"rev{k}", "Slice", "decomposed", "SLICE"] for k in range(count)]
    assert all(row[notes_at:].startswith("axis 0 is read backwards") for row in rows)
    continued = [line for line in lines[2:-1] if line[:1] == " "]
    assert continued and all(line[:notes_at].strip() == "" and line[notes_at] != " "
                             for line in continued)
    assert not any(box in line for line in lines for box in "│┃━─")
    assert lines[-1] == f"descriptors: {count} DML_OPERATOR_JOIN, {4 * count} DML_OPERATOR_SLICE"


def test_lower_without_json_or_output_builds_no_json(tmp_path, capsys, monkeypatch) -> None:
    """The printed table does not show the JSON document; building it (every descriptor's
    JSON, validated again) took a third of lower's time on 35,000 descriptors."""
    import dmlgraph.reporting

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("lowered_to_json called for a table")

    model = tmp_path / "chain.onnx"
    _reversal_chain(model, 2)
    monkeypatch.setattr(dmlgraph.reporting, "lowered_to_json", refuse)
    assert main(["lower", str(model)]) == 0
    assert "2 Slice/Concat/Pad nodes: 2 lowered" in capsys.readouterr().out


def _long_named_slices(path: Path, count: int, length: int) -> list[str]:
    """``count`` Slices in a chain, each named by ``length`` characters (distinct letters, so
    that a shortened name's two ends tell where it was cut), as is the tensor it makes;
    their names."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    names = ["".join(chr(ord("a") + (i * 7 + k) % 26) for i in range(length - 4)) + f"{k:04d}"
             for k in range(count)]
    nodes = [helper.make_node("Slice", [names[k - 1] if k else "x", "st", "en"], [name],
                              name=name) for k, name in enumerate(names)]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info(names[-1], TensorProto.FLOAT, [4])],
        [numpy_helper.from_array(np.array([0], np.int64), "st"),
         numpy_helper.from_array(np.array([3], np.int64), "en")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                                ir_version=8), path)
    return names


def _cut(name: str) -> str:
    """A name past 300 characters as viz shows it: its first and last 130, and its length."""
    return f"{name[:130]}\u2026{name[-130:]} ({len(name)} characters)"


def _column(out: str, k: int) -> str:
    """Column ``k`` of a rich table's body rows, its folded lines joined back, without the
    space a fold may drop."""
    rows = [line.split("│") for line in out.splitlines() if line.startswith("│")]
    return "".join(cells[k + 1].strip() for cells in rows).replace(" (", "(")


def test_a_very_long_name_is_shortened_in_the_table_as_viz_shortens_it(tmp_path, capsys):
    """A 5,000-character node name printed whole in lower's table, folded into 51 rows; viz
    showed it by its two ends and its length. The table shows it as viz does (the DOT's
    label of the graph output, a tensor of the same name, is the oracle), and the JSON keeps
    it whole."""
    import html

    model = tmp_path / "long.onnx"
    (name,) = _long_named_slices(model, 1, 5000)
    out_json = tmp_path / "lowered.json"
    assert main(["lower", str(model), "-o", str(out_json)]) == 0
    out = capsys.readouterr().out
    assert _column(out, 0) == _cut(name).replace(" (", "(")
    assert len([line for line in out.splitlines() if line.startswith("│")]) < 10
    assert [n["name"] for n in json.loads(out_json.read_text())["nodes"]] == [name]
    assert main(["lower", str(model), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["report"][0]["name"] == name
    dot = tmp_path / "long.dot"
    assert main(["viz", str(model), "-o", str(dot)]) == 0
    assert html.escape(_cut(name)).encode("ascii", "xmlcharrefreplace").decode() in (
        dot.read_text())


def test_a_very_long_name_is_shortened_in_the_plain_report_too(tmp_path, capsys) -> None:
    """Past PLAIN_ROWS_ABOVE rows the report is plain lines: each long name shortened as in
    the rich table, the columns aligned after it."""
    from dmlgraph.reporting import PLAIN_ROWS_ABOVE

    model = tmp_path / "long.onnx"
    names = _long_named_slices(model, PLAIN_ROWS_ABOVE + 1, 1000)
    assert main(["lower", str(model)]) == 0
    lines = capsys.readouterr().out.splitlines()
    op_at = lines[1].index("op")
    rows = lines[2:2 + len(names)]
    assert [row[:op_at].rstrip() for row in rows] == [_cut(name) for name in names]
    assert all(row[op_at:].split()[0] == "Slice" for row in rows)
