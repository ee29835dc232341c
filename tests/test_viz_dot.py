"""DOT output: golden files for seed models, determinism, quoting, well-formed HTML-like labels
listing descriptor fields and tensor sizes before and after legalization, SVG through
Graphviz or a hint without it.

Golden files live in tests/data/golden/; after an intended change of the drawing (or of the
lowering it draws), rewrite them with ``UPDATE_GOLDEN=1 pytest tests/test_viz_dot.py`` and
review the diff.
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from oracles import focus_model, nodes_within, outputs_not_made_by_nodes

from dmlgraph import load
from dmlgraph.viz import VizError, focus_on, render_svg, to_dot, write_viz
from dmlgraph.viz import dot as dot_module
from dmlgraph.viz.describe import sentence
from dmlgraph.viz.dot import escape
from lowering import lower

ROOT = Path(__file__).resolve().parent.parent
SEEDS = ROOT / "models" / "seeds"
GOLDEN = Path(__file__).resolve().parent / "data" / "golden"

#: (seed model, feature level): one per drawing situation worth pinning.
GOLDEN_CASES = [
    ("slice1_example2", "6_4"),  # SLICE1 with a negative stride
    ("padding_reflection", "6_4"),  # PADDING with a known-divergence note
    ("padding_symmetric", "1_0"),  # SLICE/JOIN pieces of decomposed nodes, with notes
]

STATEMENT = re.compile(
    r'^  (?:"(?:[^"\\]|\\.)*" -> )?"(?:[^"\\]|\\.)*" \[(?P<attrs>.*)\];$'
)


def lowered_dot(name: str, level: str) -> str:
    return to_dot(lower(load(SEEDS / f"{name}.onnx"), level))


@pytest.mark.parametrize("name, level", GOLDEN_CASES)
def test_dot_matches_golden_file(name: str, level: str) -> None:
    path = GOLDEN / f"{name}.fl{level}.dot"
    text = lowered_dot(name, level)
    if os.environ.get("UPDATE_GOLDEN"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"missing golden file {path}; run with UPDATE_GOLDEN=1 to create it"
    assert text == path.read_text(encoding="utf-8")


def test_dot_is_deterministic_for_a_real_model() -> None:
    path = ROOT / "models" / "shufflenet_v2_x0_5.onnx"
    first = to_dot(lower(load(path), "6_4"))
    second = to_dot(lower(load(path), "6_4"))
    assert first == second


def statements(text: str) -> list[str]:
    lines = text.splitlines()
    assert lines[0].startswith('digraph "') and lines[0].endswith(" {") and lines[-1] == "}"
    return [line for line in lines[1:-1] if not re.match(r"^  (graph|node|edge) \[", line)]


def html_labels(text: str) -> list[str]:
    """Every ``label=<...>`` of the text (the HTML-like labels), balanced on angle brackets."""
    labels = []
    for start in (m.end() for m in re.finditer(r"label=<", text)):
        depth, i = 1, start
        while depth:
            depth += {"<": 1, ">": -1}.get(text[i], 0)
            i += 1
        labels.append(text[start:i - 1])
    return labels


@pytest.mark.parametrize("model, level", [
    ("models/seeds/join_example2.onnx", "6_4"),
    ("models/encodec_encoder_reflect.onnx", "1_0"),
    ("models/shufflenet_v2_x0_5.onnx", "6_4"),
])
def test_every_id_is_quoted_and_every_label_is_well_formed(model: str, level: str) -> None:
    text = to_dot(lower(load(ROOT / model), level))
    assert text.isascii()
    for line in statements(text):
        assert STATEMENT.match(line), line
    labels = html_labels(text)
    assert labels
    for label in labels:
        ET.fromstring(f"<L>{label.replace('&#8594;', '-&gt;')}</L>")  # XML-like, escaped


def test_labels_list_descriptor_fields() -> None:
    slice1 = lowered_dot("slice1_example2", "6_4")
    assert "DML_OPERATOR_SLICE1" in slice1
    for field in ("InputWindowOffsets", "InputWindowSizes", "InputWindowStrides"):
        assert f'<TD ALIGN="LEFT">{field}</TD>' in slice1
    assert "[1, 1, -2, 2]" in slice1
    padding = lowered_dot("padding_constant", "6_4")
    for field, value in (("PaddingMode", "CONSTANT"), ("PaddingValue", "9.0"),
                         ("StartPadding", "[0, 0, 1, 2]"), ("EndPadding", "[0, 0, 3, 4]")):
        assert f'<TD ALIGN="LEFT">{field}</TD><TD ALIGN="LEFT">{value}</TD>' in padding
    join = lowered_dot("join_example2", "6_4")
    for axis in (1, 2, 3):
        assert f'<TD ALIGN="LEFT">Axis</TD><TD ALIGN="LEFT">{axis}</TD>' in join
    assert "InputTensors[2]" in join


def test_labels_show_tensor_sizes_before_and_after_legalization() -> None:
    """encodec's rank-3 Pad becomes a 4-D PADDING: the IR tensor, then the desc viewing it,
    and the legalization note saying so, as a sentence."""
    lowered = lower(load(ROOT / "models" / "encodec_encoder_reflect.onnx"), "1_0")
    text = to_dot(lowered)
    assert "float32[1,1,2000] &#8594; FLOAT32 [1,1,1,2000]" in text
    pad = next(n for n in lowered.nodes if n.op_type == "PaddingDesc")
    assert pad.notes
    flat = re.sub(r'<BR ALIGN="LEFT"/>', " ", text)
    for note in pad.notes:
        assert escape(sentence(note)) in flat


def test_statuses_are_coloured_and_fallback_targets_stand_out(tmp_path: Path) -> None:
    text = to_dot(lower(load(ROOT / "models" / "squeezenet1_1.onnx"), "6_4"))
    assert 'BGCOLOR="#c8e6c9"' in text  # lowered JOINs
    assert 'BGCOLOR="#e9ecef"' in text  # Conv and friends on the fallback
    assert "lowered: lowered to one DML operator" in text and "fallback: left to" in text
    # weights of ONNX nodes are rows of their node, not nodes of their own
    assert '"const' not in text and "constant float32[" in text


def test_svg_through_graphviz(tmp_path: Path) -> None:
    if dot_module.graphviz() is None:
        pytest.skip("Graphviz's dot is not installed (looked for 'dot' on PATH)")
    path = tmp_path / "g.svg"
    assert render_svg(lowered_dot("padding_symmetric", "1_0"), path) == f"wrote {path}"
    svg = path.read_text()
    assert "<svg" in svg and "DML_OPERATOR_JOIN" in svg


def test_svg_without_graphviz_is_an_error_saying_what_to_write(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(dot_module, "graphviz", lambda: None)
    path = tmp_path / "g.svg"
    with pytest.raises(VizError) as info:
        render_svg("digraph \"g\" {\n}\n", path)
    message = str(info.value)
    assert "\n" not in message and "g.dot" in message and "graphviz" in message
    assert list(tmp_path.iterdir()) == []  # nothing the user did not ask for


def test_graphviz_failure_is_a_clear_error(tmp_path: Path) -> None:
    if dot_module.graphviz() is None:
        pytest.skip("Graphviz's dot is not installed (looked for 'dot' on PATH)")
    with pytest.raises(VizError, match="-Tsvg failed"):
        render_svg("digraph {", tmp_path / "bad.svg")


def test_write_viz_picks_the_format_from_the_suffix(tmp_path: Path) -> None:
    graph = load(SEEDS / "join_example1.onnx")
    lowered = lower(graph, "6_4")
    assert write_viz(tmp_path / "g.dot", graph, lowered) == f"wrote {tmp_path / 'g.dot'}"
    assert (tmp_path / "g.dot").read_text() == to_dot(lowered)
    write_viz(tmp_path / "g.html", graph, lowered)
    assert (tmp_path / "g.html").read_text().startswith("<!DOCTYPE html>")
    with pytest.raises(VizError, match=r"\.png"):
        write_viz(tmp_path / "g.png", graph, lowered)


def test_graphviz_accepts_the_dot_of_a_real_model() -> None:
    binary = dot_module.graphviz()
    if binary is None:
        pytest.skip("Graphviz's dot is not installed (looked for 'dot' on PATH)")
    text = to_dot(lower(load(ROOT / "models" / "tf_mobilenetv3_small_minimal.onnx"), "6_4"))
    done = subprocess.run([binary, "-Tcanon"], input=text.encode(), capture_output=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr.decode()
    assert not done.stderr, done.stderr.decode()


def test_drawing_a_real_model_is_fast() -> None:
    from dmlgraph.viz import html_report

    graph = load(ROOT / "models" / "shufflenet_v2_x0_5.onnx")
    lowered = lower(graph, "6_4")
    start = time.perf_counter()
    to_dot(lowered)
    html_report(graph, lowered)
    assert time.perf_counter() - start < 1.0


def _named_model(node_name: str, tensor_name: str, graph_name: str = "g"):
    """x -> Slice (named ``node_name``) -> ``tensor_name`` -> Pad -> y, names as given."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    ints = lambda name, v: numpy_helper.from_array(np.array(v, np.int64), name)  # noqa: E731
    graph = helper.make_graph(
        [helper.make_node("Slice", ["x", "s", "e"], [tensor_name], name=node_name),
         helper.make_node("Pad", [tensor_name, "p"], ["y"], name="pad")], graph_name,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [6])],
        [ints("s", [1]), ints("e", [5]), ints("p", [1, 1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    onnx.checker.check_model(model)
    return model


@pytest.mark.parametrize("node_name, tensor_name, graph_name", [
    ("a\x01b", "t\x00u", "g"),  # NUL failed Graphviz; \x01 made the SVG not XML
    ('in"q\\uote\\', 'out"q\\uote\\', 'g"\\'),  # ids doubled backslashes (DOT keeps them)
    ("n" * 20_000, "t" * 20_000, "g" * 20_000),  # Graphviz refuses strings over 16384
], ids=["control", "backslashes", "long"])
def test_any_name_draws_and_reads_as_it_is(node_name, tensor_name, graph_name, tmp_path) -> None:
    """Ids are numbers, never names; names are in labels and tooltips, control characters
    written as \\xNN and names past TEXT_LIMIT shortened, so Graphviz renders every model
    and the SVG is XML."""
    lowered = lower(load(_named_model(node_name, tensor_name, graph_name)), "6_4")
    text = to_dot(lowered)
    for line in statements(text):
        assert STATEMENT.match(line), line
    assert len(max(text.splitlines(), key=len)) < 16384
    if dot_module.graphviz() is None:
        pytest.skip("Graphviz's dot is not installed (looked for 'dot' on PATH)")
    render_svg(text, tmp_path / "g.svg")
    svg = ET.parse(tmp_path / "g.svg").getroot()
    titles = {a.get("{http://www.w3.org/1999/xlink}title") for a in svg.iter()} - {None}
    shown = dot_module.shown(tensor_name).replace("\x00", "\\x00")
    assert shown in titles  # the edge's tooltip: the name, not an id's escaping


def test_a_float64_padding_value_is_drawn_as_the_descriptor_holds_it() -> None:
    """PADDING1 holds a float64 fill exactly; the drawing showed 9 digits of it."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    fill = 0.1234567890123
    graph = helper.make_graph(
        [helper.make_node("Pad", ["x", "p", "v"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.DOUBLE, [3])],
        [helper.make_tensor_value_info("y", TensorProto.DOUBLE, [5])],
        [numpy_helper.from_array(np.array([1, 1], np.int64), "p"),
         numpy_helper.from_array(np.array(fill), "v")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    lowered = lower(load(model), "6_4")
    (pad,) = [n for n in lowered.nodes if n.op_type == "Padding1Desc"]
    assert pad.op.to_json()["desc"]["PaddingValue"] == fill
    assert f'<TD ALIGN="LEFT">PaddingValue</TD><TD ALIGN="LEFT">{fill!r}</TD>' in to_dot(lowered)


def _pad_then_relu(input_name: str, relu_name: str):
    """``input_name`` -> Pad (lowered) -> Relu named ``relu_name`` (left ONNX) -> y."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    graph = helper.make_graph(
        [helper.make_node("Pad", [input_name, "p"], ["a"], name="pad"),
         helper.make_node("Relu", ["a"], ["y"], name=relu_name)], "g",
        [helper.make_tensor_value_info(input_name, TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])],
        [numpy_helper.from_array(np.array([1, 1], np.int64), "p")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=10)
    onnx.checker.check_model(model, full_check=True)
    return model


@pytest.mark.parametrize("input_name, relu_name, codes", [
    ("x\ufffe", "r\uffff", ["\\ufffe", "\\uffff"]),  # XML has neither: dot refused the DOT
    ("\n", "\t", ["\\x0a", "\\x09"]),  # Graphviz dropped them and failed on <B></B>
], ids=["noncharacters", "whitespace"])
def test_names_xml_cannot_hold_draw_by_their_codes(input_name, relu_name, codes,
                                                    tmp_path) -> None:
    if dot_module.graphviz() is None:
        pytest.skip("Graphviz's dot is not installed (looked for 'dot' on PATH)")
    text = to_dot(lower(load(_pad_then_relu(input_name, relu_name)), "6_4"))
    for name, code in zip((input_name, relu_name), codes):
        shown = name.replace(name[-1], code)  # the input's label, the fallback node's row
        assert f"<B>{shown}</B>" in text or f">{shown}</FONT>" in text, shown
    render_svg(text, tmp_path / "g.svg")
    ET.parse(tmp_path / "g.svg")  # XML


def test_a_model_file_name_that_is_not_utf8_draws(tmp_path: Path) -> None:
    """Python decodes the undecodable byte of a file name to a lone surrogate: the HTML
    report raised UnicodeEncodeError, and the DOT held "&#56575;", which dot refuses."""
    import onnx

    path = Path(os.fsdecode(os.fsencode(tmp_path) + b"/model\xff.onnx"))
    onnx.save(_named_model("s", "t"), path)
    graph = load(path)
    lowered = lower(graph, "6_4")
    text = to_dot(lowered)
    assert "model\\xff.onnx" in text and "&#5" not in text
    write_viz(tmp_path / "g.html", graph, lowered)
    assert "model\\xff.onnx" in (tmp_path / "g.html").read_text(encoding="utf-8")
    if dot_module.graphviz() is not None:
        render_svg(text, tmp_path / "g.svg")


def test_a_note_quoting_a_long_name_is_shortened() -> None:
    """A note is wrapped into lines that are escaped one by one, so the TEXT_LIMIT of each
    line let a note quoting a 20,000-character name ("input 'qqq...' has no static shape")
    into the label whole: a line of 27,492 characters, which Graphviz refuses. The note is
    now shown by its ends and its length, as a long name is."""
    from onnx import TensorProto, helper, numpy_helper

    import numpy as np

    name = "q" * 20_000
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], [name], name="r"),
         helper.make_node("Slice", [name, "s", "e"], ["y"], name="slice")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, None)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.array([1], np.int64), "s"),
         numpy_helper.from_array(np.array([3], np.int64), "e")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    lowered = lower(load(model), "6_4")
    (record,) = [r for r in lowered.report() if r.name == "slice"]
    (note,) = [n for n in record.notes if name in n]
    text = to_dot(lowered)
    for line in statements(text):
        assert STATEMENT.match(line), line
    assert len(max(text.splitlines(), key=len)) < 16384
    flat = re.sub(r'<BR ALIGN="LEFT"/>', "", text)
    assert f"(a note of {len(sentence(note))} characters)" in flat


# ----------------------------------------------------------------------------- --focus


@functools.cache
def focused_graphs() -> tuple[Any, Any]:
    graph = load(focus_model())
    return graph, lower(graph, "6_4")


def drawn(text: str, lowered: Any) -> set[str]:
    """The original node names of the operations a DOT text draws (``"nID"`` statements)."""
    ids = re.findall(r'^  "n(\d+)" \[', text, re.M)
    return {lowered.node(int(i)).name for i in ids}


def stub_labels(text: str) -> list[str]:
    return [m.group(1) for m in re.finditer(
        r'^  "(?:cut|more|readers)\d+" \[shape="box", style="dashed".*?label=<(.*?)>, tooltip',
        text, re.M)]


@pytest.mark.parametrize("depth", [0, 1, 2, 3])
def test_a_focus_on_a_pad_draws_the_nodes_within_depth_and_what_they_became(depth: int) -> None:
    """The selection is the Pad and every node within ``depth`` edges, either way (networkx
    over the proto says which); the drawing keeps the lowered nodes they became (the Pad a
    PADDING, the Concat a JOIN) and no other; every label stays well formed."""
    graph, lowered = focused_graphs()
    expected = nodes_within(focus_model(), ["pad"], depth)
    focus = focus_on(graph, "pad", depth)
    assert {graph.node(i).name for i in focus.nodes} == expected
    text = to_dot(lowered, focus=focus)
    assert drawn(text, lowered) == expected
    titles = {lowered.node(int(i)).op_type for i in re.findall(r'^  "n(\d+)" \[', text, re.M)}
    assert "PaddingDesc" in titles
    assert (f"focus: pad, depth {depth}: {len(expected)} of {len(graph)} nodes"
            in text.splitlines()[1])
    for line in statements(text):
        assert STATEMENT.match(line), line
    for label in html_labels(text):
        ET.fromstring(f"<L>{label.replace('&#8594;', '-&gt;')}</L>")


def test_every_edge_a_focus_cuts_ends_at_a_stub() -> None:
    """Depth 0 on the Pad: its input, made by e1 (left out), comes from a dashed box naming
    the tensor; its output, read by cat (left out), goes to one saying so. Nothing else is
    drawn: no graph input (only r0 and s read x), no graph output."""
    graph, lowered = focused_graphs()
    text = to_dot(lowered, focus=focus_on(graph, ["pad"], 0))
    assert drawn(text, lowered) == {"pad"}
    assert stub_labels(text) == ["<B>t1</B><BR/>float32[1,2,4,4]",
                                 "<B>t2</B><BR/>read by 1 more node"]
    assert re.search(r'"cut\d+" -> "n\d+" \[label="float32\[1,2,4,4\]", tooltip="t1", '
                     r'style="dashed"\];', text)
    assert re.search(r'"n\d+" -> "readers\d+" \[tooltip="t2", style="dashed"\];', text)
    assert "made by node 'e1' (Exp), outside the focus" in text
    assert '"input' not in text and '"output' not in text


def test_many_cut_inputs_of_one_node_share_a_more_inputs_stub() -> None:
    """wide reads five Tanh outputs, all left out at depth 0: three boxes name their tensors,
    one says "... 2 more inputs" (its tooltip naming them); its output z is drawn."""
    graph, lowered = focused_graphs()
    text = to_dot(lowered, focus=focus_on(graph, "wide", 0))
    assert drawn(text, lowered) == {"wide"}
    labels = stub_labels(text)
    assert labels[:3] == [f"<B>u{i}</B><BR/>float32[1,2,4,4]" for i in range(3)]
    assert labels[3:] == ["&#8230; 2 more inputs"]
    assert 'tooltip="made outside the focus: u3, u4"' in text
    assert '"output' in text and "<B>z</B>" in text


def test_a_tensor_name_selects_its_producer_and_its_readers() -> None:
    graph, lowered = focused_graphs()
    for name, depth in (("t2", 0), ("x", 0), ("t3", 1), ("y", 0)):
        focus = focus_on(graph, name, depth)
        assert {graph.node(i).name for i in focus.nodes} == \
            nodes_within(focus_model(), [name], depth), name
    text = to_dot(lowered, focus=focus_on(graph, "x", 0))
    assert drawn(text, lowered) == {"r0", "s", *(f"tanh{i}" for i in range(5))}
    assert len(re.findall(r'^  "input\d+" \[', text, re.M)) == 1  # x, drawn once
    assert len(re.findall(r'^  "input0" -> "n\d+"', text, re.M)) == 7  # to each reader


def test_a_node_just_past_the_depth_is_a_stub_not_a_node() -> None:
    """Depth 1 from the Pad reaches cat, not neg: neg is inside the cut, so it is no node of
    the drawing, and cat's output reaches it through a stub."""
    graph, lowered = focused_graphs()
    text = to_dot(lowered, focus=focus_on(graph, ["pad"], 1))
    assert drawn(text, lowered) == {"e1", "pad", "cat"}
    assert "neg" not in drawn(text, lowered)
    assert "<B>t4</B><BR/>read by 1 more node" in stub_labels(text)
    assert "<B>t0</B><BR/>float32[1,2,4,4]" in stub_labels(text)  # r0, left out, makes it
    assert "<B>t3</B><BR/>float32[1,2,4,4]" in stub_labels(text)  # s, left out


def _twin_slices() -> onnx.ModelProto:
    """Slices A and B of x alike, each read by a Relu: Simplify computes them once, in A's
    descriptor, and B keeps no node of its own."""
    h = onnx.helper
    ints = [onnx.numpy_helper.from_array(np.array(v, np.int64), n)
            for n, v in (("s", [1]), ("e", [3]), ("a", [0]))]
    nodes = [h.make_node("Slice", ["x", "s", "e", "a"], [f"{n}_out"], name=n) for n in "AB"]
    nodes += [h.make_node("Relu", [f"{n}_out"], [f"r{n}"], name=f"R{n}") for n in "AB"]
    graph = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", onnx.TensorProto.FLOAT,
                                                                [4, 6])],
                         [h.make_tensor_value_info(f"r{n}", onnx.TensorProto.FLOAT, None)
                          for n in "AB"], ints)
    return h.make_model(graph, opset_imports=[h.make_opsetid("", 17)], ir_version=9)


def test_a_focus_on_a_node_simplify_merged_draws_the_node_computing_its_output() -> None:
    """B's descriptor was merged into A's (the same operator on the same tensor): a focus
    on B alone draws A's SLICE, which computes B's output, where it drew nothing; on a copy
    of the lowered graph too. A focus on RB alone draws RB only."""
    graph = load(_twin_slices())
    lowered = lower(graph)
    statuses = {r.name: str(r.status) for r in lowered.report()}
    assert statuses["A"] == "lowered" and statuses["B"] == "eliminated"
    for drawing in (lowered, lowered.copy()):
        text = to_dot(drawing, focus=focus_on(graph, "B", 0))
        ids = [int(i) for i in re.findall(r'^  "n(\d+)" \[', text, re.M)]
        assert [drawing.node(i).op.name for i in ids] == ["DML_OPERATOR_SLICE"]
        assert "from Slice 'A'" in text
        assert stub_labels(text) == ["<B>A_out</B><BR/>read by 2 more nodes"]
    text = to_dot(lowered, focus=focus_on(graph, "RB", 0))
    ids = [int(i) for i in re.findall(r'^  "n(\d+)" \[', text, re.M)]
    assert [lowered.node(i).name for i in ids] == ["RB"]


def test_a_focus_draws_the_outputs_that_are_a_drawn_input_or_constant() -> None:
    """A graph output no node makes (an input passed through, a weight) is drawn where its
    source is: the whole drawing drew x and w as outputs, a focus on them (or near them)
    dropped both, as outputs "made outside the focus"."""
    graph = load(outputs_not_made_by_nodes())
    lowered = lower(graph)

    def outputs(text: str) -> dict[str, str]:
        """output tensor -> what the edge into its ellipse comes from, by label"""
        labels = dict(re.findall(r'^  "(\w+)" \[.*?label=<(?:constant )?<B>(\w+)</B>', text,
                                 re.M))
        return {labels[o]: labels.get(src, src) for src, o in
                re.findall(r'^  "(\w+)" -> "(output\d+)"', text, re.M)}

    for focus in (None, *(focus_on(graph, name, 1) for name in ("x", "w", "join", "slice"))):
        drawn = outputs(to_dot(lowered, focus=focus))
        assert set(drawn) == {"x", "z", "w"} and drawn["x"] == "x" and drawn["w"] == "w"


def test_write_viz_focus_writes_the_focused_drawing(tmp_path: Path) -> None:
    graph, lowered = focused_graphs()
    path = tmp_path / "f.dot"
    assert write_viz(path, graph, lowered, focus=["pad", "wide"], depth=0) == f"wrote {path}"
    text = path.read_text(encoding="utf-8")
    assert text == to_dot(lowered, focus=focus_on(graph, ["pad", "wide"], 0))
    assert drawn(text, lowered) == {"pad", "wide"}
    assert "focus: pad, wide, depth 0: 2 of 13 nodes" in text
    write_viz(path, graph, lowered)  # no focus: the whole drawing, as it was
    assert path.read_text(encoding="utf-8") == to_dot(lowered)


@pytest.mark.parametrize("names, depth, message", [
    ("pda", 2, "focus 'pda': no node or tensor of the imported graph has this name; close "
               "matches: 'pad'"),
    (["pad", "tanh9"], 2, "focus 'tanh9': no node or tensor of the imported graph has this "
                          "name; close matches: 'tanh0', 'tanh1', 'tanh2', 'tanh3', 'tanh4'"),
    ("qqqq", 2, "focus 'qqqq': no node or tensor of the imported graph has this name; no name"),
    ("pad", -1, "depth: a whole number of edges >= 0, not -1"),
    ("pad", 1.5, "depth: a whole number of edges >= 0, not 1.5"),
    ("pad", True, "depth: a whole number of edges >= 0, not True"),
    ([], 2, "focus names no node or tensor"),
    ([3], 2, "focus: names of nodes or tensors are text, not int (3)"),
    (b"pad", 2, "focus: names of nodes or tensors, not bytes"),
])
def test_a_bad_focus_is_one_clear_error(names: Any, depth: Any, message: str,
                                        tmp_path: Path) -> None:
    graph, lowered = focused_graphs()
    with pytest.raises(VizError) as info:
        write_viz(tmp_path / "f.dot", graph, lowered, focus=names, depth=depth)
    assert str(info.value).startswith(message)
    assert not (tmp_path / "f.dot").exists()


def test_an_unknown_focus_offers_the_names_holding_it() -> None:
    """An exporter's paths are too unlike a part of them for difflib: 'pad' was offered
    nothing in encodec, whose Pads are '/e/layers.0/Pad'..."""
    from dmlgraph.viz.focus import _close_names

    known = ["/e/layers.3/Pad", "/e/layers.0/Pad", "/e/layers.0/Conv", "x", "/e/layers.0/Pad:axes"]
    assert _close_names("PAD", known) == ["/e/layers.0/Pad", "/e/layers.3/Pad",
                                          "/e/layers.0/Pad:axes"]


def test_a_depth_without_a_focus_is_an_error(tmp_path: Path) -> None:
    graph, lowered = focused_graphs()
    with pytest.raises(VizError, match="depth 3 says how far a focus reaches; give focus"):
        write_viz(tmp_path / "f.dot", graph, lowered, depth=3)
    with pytest.raises(VizError, match=r"to_dot: focus is a Focus \(dmlgraph.viz.focus_on"):
        to_dot(lowered, focus="pad")  # type: ignore[arg-type]


def test_a_name_inside_an_if_branch_names_the_if() -> None:
    """A node of an If's branch is not a node of the imported graph (a drawing shows the If
    as one): the error says which If holds it. The If itself is a focus like any node."""
    graph = load(ROOT / "models" / "control_flow" / "if_pad_slice.onnx")
    branch = onnx.load(ROOT / "models" / "control_flow" / "if_pad_slice.onnx").graph
    (if_node,) = [n for n in branch.node if n.op_type == "If"]
    inner = next(n.name for n in if_node.attribute[0].g.node if n.name)
    with pytest.raises(VizError, match=f"focus '{re.escape(inner)}': it is inside If '/If' "
                                       f"{if_node.attribute[0].name}"):
        focus_on(graph, inner)
    assert {graph.node(i).name for i in focus_on(graph, "/If", 1).nodes} == \
        {"/If", "/Cast", "/Pad_1"}


def test_a_graph_never_lowered_draws_plain_onnx_nodes_and_says_so() -> None:
    """``to_dot`` of a loaded graph: nothing was lowered, so no node is "left to the ONNX
    fallback" (every one was, grey, each Concat red as a lowering target that fell back);
    each is a plain ONNX node (white), the legend says so, and the heading says "not
    lowered". The same graph lowered keeps its statuses and heading."""
    graph = load(ROOT / "models" / "squeezenet1_1.onnx")
    text = to_dot(graph)
    assert "squeezenet1_1.onnx - not lowered</B>" in text
    assert 'BGCOLOR="#e9ecef"' not in text and "fallback:" not in text
    assert 'COLOR="#c62828"' not in text  # no lowering target drawn as fallen back
    assert text.count('BGCOLOR="#ffffff"') == len(graph.nodes) + 1  # and the legend's box
    assert "onnx: an ONNX node (the graph was not lowered)" in text
    lowered = to_dot(lower(graph, "6_4"))
    assert "not lowered" not in lowered and "onnx: an ONNX node" not in lowered
    assert 'BGCOLOR="#e9ecef"' in lowered  # Conv and friends on the fallback
