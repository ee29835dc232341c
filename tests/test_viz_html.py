"""The HTML report: self-contained, both graphs with every node, statuses, provenance groups,
notes as sentences, parity results; and, in headless Chromium, a clean load that selects a node
and highlights what it became.

Everything but the browser test is checked by parsing the page with html.parser. The browser
test needs Debian's chromium package (or another Chromium/Chrome binary on PATH) and skips,
naming the binaries looked for, when there is none.
"""

from __future__ import annotations

import functools
import json
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from oracles import focus_model, nodes_within, outputs_not_made_by_nodes

from dmlgraph import load
from dmlgraph.ir import Graph
from dmlgraph.viz import VizError, focus_on, html_report, parity_sections, write_html, write_viz
from dmlgraph.viz.describe import STATUS_STYLES, describe_graph, sentence
from lowering import lower

ROOT = Path(__file__).resolve().parent.parent
SHUFFLENET = ROOT / "models" / "shufflenet_v2_x0_5.onnx"
ENCODEC = ROOT / "models" / "encodec_encoder_reflect.onnx"
SYMMETRIC = ROOT / "models" / "seeds" / "padding_symmetric.onnx"
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable",
                  "chrome")


@functools.cache
def graphs(path: Path, level: str) -> tuple[Graph, Graph]:
    graph = load(path)
    return graph, lower(graph, level)


@functools.cache
def page(path: Path, level: str) -> str:
    return html_report(*graphs(path, level))


class Page(HTMLParser):
    """Elements of the page: (tag, attrs, text of the element's direct data) in order."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict[str, str]]] = []
        self.scripts: list[tuple[dict[str, str], str]] = []
        self._script: dict[str, str] | None = None
        self.text: list[str] = []
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = {k: v or "" for k, v in attrs}
        self.elements.append((tag, attributes))
        if tag == "script":
            self._script = attributes

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._script = None

    def handle_data(self, data: str) -> None:
        if self._script is not None:
            self.scripts.append((self._script, data))
        else:
            self.text.append(data)

    def all(self, tag: str | None = None, **attrs: str) -> list[dict[str, str]]:
        return [a for t, a in self.elements if (tag is None or t == tag)
                and all(a.get(k.replace("_", "-")) == v for k, v in attrs.items())]

    def nodes(self) -> dict[str, dict[str, str]]:
        """data-key -> attributes of the first drawing of each node."""
        found: dict[str, dict[str, str]] = {}
        for tag, a in self.elements:
            if tag == "g" and "data-key" in a:
                found.setdefault(a["data-key"], a)
        return found


def test_page_is_self_contained() -> None:
    text = page(SHUFFLENET, "6_4")
    assert "http://" not in text and "https://" not in text and "//cdn" not in text
    parsed = Page(text)
    assert not parsed.all("link") and not parsed.all("img") and not parsed.all("iframe")
    assert all("src" not in a for a in parsed.all("script"))
    assert re.findall(r"url\(([^)]*)\)", text) == [
        m for m in re.findall(r"url\(([^)]*)\)", text) if m.startswith("#arrow-")]
    ids = [a["id"] for _, a in parsed.elements if "id" in a]
    assert len(ids) == len(set(ids)), "ids must be unique"


def test_both_panels_draw_every_node_with_its_status() -> None:
    graph, lowered = graphs(SHUFFLENET, "6_4")
    parsed = Page(page(SHUFFLENET, "6_4"))
    assert parsed.all("section", id="panel-o") and parsed.all("section", id="panel-l")
    drawn = parsed.nodes()
    for prefix, g, original in (("o", graph, True), ("l", lowered, False)):
        views = describe_graph(g, lowered.report(), original=original)
        assert len(views) == len(g)
        for view in views:
            node = drawn[f"{prefix}-n{view.node_id}"]
            assert node["data-status"] == view.status
            assert f"st-{view.status}" in node["class"].split()
    statuses = {a["data-status"] for k, a in drawn.items() if k.startswith("l-n")}
    assert statuses == {"lowered", "fallback"}
    assert {a["data-key"] for a in parsed.all("g") if "k-input" in a.get("class", "")} >= {
        "o-in0", "l-in0"}


def test_provenance_groups_link_an_original_node_to_what_it_became() -> None:
    graph, lowered = graphs(SYMMETRIC, "1_0")
    drawn = Page(page(SYMMETRIC, "1_0")).nodes()
    bottom = next(n for n in graph.nodes if n.name == "bottom")
    group = drawn[f"o-n{bottom.id}"]["data-groups"]
    became = sorted(k for k, a in drawn.items() if k.startswith("l-") and a["data-groups"] == group)
    expected = sorted(f"l-n{n.id}" for n in lowered.nodes if n.name == "bottom")
    assert became == expected and len(expected) == 4
    assert all(drawn[k]["data-status"] == "decomposed" for k in became)


def test_a_decomposed_node_is_drawn_counted_and_filtered_as_decomposed() -> None:
    """Every decomposed node has a note saying why, and a node with notes was drawn as
    "notes" (lowered, with legalization notes): the "decomposed" filter counted 0 and hid
    nothing, though the report's row said decomposed. At FL 1_0 padding_symmetric's
    'bottom', 'left' and 'right' read an axis backwards: each a JOIN of SLICEs."""
    graph, lowered = graphs(SYMMETRIC, "1_0")
    decomposed = {r.name for r in lowered.report() if str(r.status) == "decomposed"}
    assert decomposed == {"bottom", "left", "right"}
    text = page(SYMMETRIC, "1_0")
    parsed = Page(text)
    rows = [a["data-status"] for a in parsed.all("tr") if "data-status" in a]
    assert rows.count("decomposed") == 3
    drawn = parsed.nodes()
    assert {drawn[f"o-n{n.id}"]["data-status"] for n in graph.nodes
            if n.name in decomposed} == {"decomposed"}
    counts = dict(re.findall(r'data-status="([a-z]+)"> [a-z]+ <b>(\d+)</b>', text))
    assert {k: int(v) for k, v in counts.items()} == {
        status: rows.count(status) for status in STATUS_STYLES}


def test_details_data_holds_fields_tensors_and_notes_as_sentences() -> None:
    graph, lowered = graphs(ENCODEC, "1_0")
    parsed = Page(page(ENCODEC, "1_0"))
    (data,) = [json.loads(body) for a, body in parsed.scripts if a.get("id") == "details-data"]
    pad = next(n for n in lowered.nodes if n.op_type == "PaddingDesc")
    details = data[f"l-n{pad.id}"]
    assert details["title"] == "DML_OPERATOR_PADDING"
    assert dict(map(tuple, details["fields"]))["PaddingMode"] == "REFLECTION"
    assert details["tensors"][0][2:4] == ["float32[1,1,2000]", "FLOAT32 [1,1,1,2000]"]
    assert details["notes"] and all(n[0].isupper() and n.endswith(".") for n in details["notes"])
    assert set(parsed.nodes()) <= set(data)


def test_report_table_lists_every_original_node_folded_ones_included() -> None:
    graph, lowered = graphs(ENCODEC, "1_0")
    text = page(ENCODEC, "1_0")
    parsed = Page(text)
    rows = parsed.all("tr")[1:]  # after the header row of the first table
    records = lowered.report()
    report_rows = [a for a in rows if "data-status" in a]
    assert len(report_rows) == len(records)
    assert sum(a["data-status"] == "folded" for a in report_rows) == sum(
        str(r.status) == "folded" for r in records) > 500
    pad = next(r for r in records if r.op_type == "Pad" and str(r.status) == "lowered")
    assert pad.notes and all(f"<li>{sentence(n)}</li>" in text for n in pad.notes)


def test_large_graphs_start_collapsed_and_small_ones_do_not() -> None:
    large = Page(page(SHUFFLENET, "6_4"))
    assert "collapsed" in large.all("body")[0]["class"].split()
    assert large.all("input", id="collapse")[0].get("checked") is not None
    chains = [a for a in large.all("g") if "k-chain" in a.get("class", "")]
    assert len(chains) > 20
    small = Page(page(SYMMETRIC, "1_0"))
    assert small.all("body")[0]["class"] == ""
    assert not [a for a in small.all("div") if "layout-collapsed" in a.get("class", "")]
    # a filter per status, whatever the model
    boxes = {a["data-status"] for a in small.all("input") if a.get("type") == "checkbox"
             and "data-status" in a}
    assert boxes == set(STATUS_STYLES)


PARITY_RECORDS = [
    {"name": "Y", "passed": True, "max_abs_error": 0.0, "mismatches": 0},
    {"name": "Z", "passed": False, "max_abs_error": 0.25, "mismatches": 3},
]


@pytest.mark.parametrize("parity, verdicts", [
    (PARITY_RECORDS, ["pass", "fail"]),
    ({"comparisons": [{"actual": "numpy", "expected": "onnxruntime", "passed": True,
                       "outputs": [{"name": "Y", "verdict": "known divergence"}]}]},
     ["known divergence"]),
])
def test_parity_section(parity: Any, verdicts: list[str]) -> None:
    graph, lowered = graphs(SYMMETRIC, "6_4")
    parsed = Page(html_report(graph, lowered, parity))
    assert parsed.all("section", id="parity")
    rows = [a["class"] for a in parsed.all("tr") if a.get("class", "").startswith("verdict-")]
    assert rows == [f"verdict-{v.replace(' ', '-')}" for v in verdicts]
    assert [s.rows[0].verdict for s in parity_sections(parity)] == verdicts[:1]
    output = parsed.nodes()["l-out0"]
    assert f"verdict-{verdicts[0].replace(' ', '-')}" in output["class"]
    assert not Page(html_report(graph, lowered)).all("section", id="parity")


def test_parity_report_object_is_accepted() -> None:
    from dmlgraph.parity import check

    report = check(SYMMETRIC, feature_level="6_4")
    graph, lowered = graphs(SYMMETRIC, "6_4")
    text = html_report(graph, lowered, report)
    assert "parity holds" in text and 'class="verdict-pass"' in text


def test_parity_of_outputs_not_compared_says_nothing_was_compared() -> None:
    """A reflect Pad by the size or more: ONNX leaves it undefined, onnxruntime refuses it,
    so check compares nothing ("nothing compared", exit 0). The page said "parity holds",
    its section "pass", and gave the output 0 mismatches of 16 elements at atol 0."""
    from onnx import TensorProto, helper, numpy_helper

    from dmlgraph.parity import check

    pads = numpy_helper.from_array(np.array([0, 4, 0, 0], np.int64), "p")
    model = helper.make_model(helper.make_graph(
        [helper.make_node("Pad", ["x", "p"], ["y"], mode="reflect", name="pad")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [pads]),
        opset_imports=[helper.make_opsetid("", 18)], ir_version=8)
    report = check(model)
    assert report.passed and report.compared == 0
    graph = load(model)
    text = html_report(graph, lower(graph), report)
    tags = [t for t in Page(text).text if t in ("parity holds", "pass", "nothing compared")]
    assert tags == ["nothing compared", "nothing compared"]
    (section,) = re.findall(r'<section id="parity">.*?</section>', text)
    cells = re.findall(r"<td>([^<]*)</td>", section)
    assert cells[:3] == ["y", "known divergence", "not compared"]
    assert "16" not in cells and "0" not in cells


def test_parity_where_no_dml_operator_ran_says_so_beside_its_verdict() -> None:
    """A Slice selecting everything (eliminated) before a Relu: no DML operator runs, so
    parity compares the fallback alone; check says so under "parity holds", the page said
    "parity holds" alone. From the report or its JSON form."""
    from onnx import TensorProto, helper, numpy_helper

    from dmlgraph.parity import check

    params = [numpy_helper.from_array(np.array(v, np.int64), n) for n, v in (("s", [0]),
                                                                              ("e", [9]))]
    model = helper.make_model(helper.make_graph(
        [helper.make_node("Slice", ["x", "s", "e"], ["t"], name="all"),
         helper.make_node("Relu", ["t"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])], params),
        opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    report = check(model)
    assert report.passed and report.compared and report.descriptors_run == 0
    graph = load(model)
    for parity in (report, report.to_json()):
        (section,) = re.findall(r'<section id="parity">.*?</section>',
                                html_report(graph, lower(graph), parity))
        assert "No DML operator ran: every Slice/Concat/Pad was folded" in section
    ran = html_report(*graphs(SYMMETRIC, "6_4"), check(SYMMETRIC))  # its DML operators ran
    assert "parity holds" in ran and "No DML operator ran" not in ran


def test_the_two_graphs_swapped_are_refused(tmp_path: Path) -> None:
    """write_viz(path, lowered, graph) drew the lowered graph as the ONNX one and the model
    as "Lowered at ?", a page with no word of the mistake."""
    graph, lowered = graphs(SYMMETRIC, "6_4")
    path = tmp_path / "swapped.html"
    with pytest.raises(VizError, match="original holds DML operators, so it is lower"):
        write_viz(path, lowered, graph)
    assert not path.exists()


@pytest.mark.parametrize("suffix", [".html", ".dot"])
def test_a_lowering_of_another_model_is_refused(tmp_path: Path, suffix: str) -> None:
    """write_viz(path, load(symmetric), lower(load(shufflenet))) wrote a page of the one's
    nodes with the other's statuses (the report is joined to the nodes by id), silently.
    The report's node 0 is shufflenet's first Conv, the model file's first node computing
    (its Identity nodes are weights' aliases); another load of the same model draws."""
    import onnx

    first = next(node for node in onnx.load(SHUFFLENET).graph.node if node.op_type != "Identity")
    graph, _ = graphs(SYMMETRIC, "6_4")
    _, other = graphs(SHUFFLENET, "2_1")
    path = tmp_path / f"mixed{suffix}"
    with pytest.raises(VizError, match=re.escape(
            f"write_viz: lowered was not lowered from original: its report's Conv "
            f"{first.name!r} is node 0, where original has node 'top' (Slice)")):
        write_viz(path, graph, other)
    assert not path.exists()
    assert write_viz(path, load(SHUFFLENET), other) == f"wrote {path}"


@pytest.mark.parametrize("suffix", [".html", ".dot"])
def test_a_graph_not_lowered_is_refused_saying_to_lower_it(tmp_path: Path, suffix: str) -> None:
    """write_viz(path, graph, graph), the graph load() made given as the lowered one, wrote a
    page headed "Lowered at ?" (and a DOT drawing of every node as a fallback), though
    nothing was lowered: refused, saying to lower first, and nothing is written."""
    graph, _ = graphs(SYMMETRIC, "6_4")
    path = tmp_path / f"unlowered{suffix}"
    with pytest.raises(VizError, match=re.escape(
            "write_viz: lowered is not lower()'s result (a graph load() made, or one built), "
            "so nothing says what its nodes became nor at which feature level; lower it "
            "first: write_viz(..., graph, lowering.lower(graph, feature_level))")):
        write_viz(path, graph, graph)
    assert not path.exists()
    with pytest.raises(VizError, match=r"^html_report: lowered is not lower\(\)'s result"):
        html_report(graph, graph)


def test_write_html(tmp_path: Path) -> None:
    graph, lowered = graphs(SYMMETRIC, "6_4")
    path = tmp_path / "r.html"
    assert write_html(graph, lowered, path) == f"wrote {path}"
    assert path.read_text(encoding="utf-8") == html_report(graph, lowered)


# ----------------------------------------------------------------------------- in a browser


def chromium() -> str | None:
    return next((p for p in map(shutil.which, CHROMIUM_NAMES) if p), None)


def test_report_loads_in_headless_chromium(tmp_path: Path) -> None:
    binary = chromium()
    if binary is None:
        pytest.skip(f"no Chromium binary on PATH (looked for {', '.join(CHROMIUM_NAMES)}); "
                    "apt-get install chromium")
    graph, lowered = graphs(SHUFFLENET, "6_4")
    path = tmp_path / "shufflenet.html"
    write_html(graph, lowered, path, PARITY_RECORDS)
    target = next(n for n in graph.nodes if n.op_type == "Slice")
    dml = [n for n in lowered.nodes if n.name == target.name and not n.is_onnx]
    done = subprocess.run(
        [binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--enable-logging=stderr", "--v=0", f"--user-data-dir={tmp_path / 'profile'}",
         "--dump-dom", f"{path.as_uri()}#select=o-n{target.id}"],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    console = [line for line in done.stderr.splitlines() if ":CONSOLE" in line]
    assert not console, console
    dom = Page(done.stdout)
    assert dom.all("body")[0]["data-ready"] == "1", "the page script did not finish"
    errors = dom.all("pre", id="js-errors")[0]
    assert "hidden" in errors
    selected = {a["data-key"] for a in dom.all("g") if "sel" in a.get("class", "").split()}
    linked = {a["data-key"] for a in dom.all("g") if "linked" in a.get("class", "").split()}
    assert selected == {f"o-n{target.id}"}
    assert {f"l-n{n.id}" for n in dml} <= linked and dml
    assert target.name in "".join(dom.text)  # the details panel names the node
    drawn = dom.nodes()
    assert {f"o-n{n.id}" for n in graph.nodes} <= set(drawn)
    assert {f"l-n{n.id}" for n in lowered.nodes} <= set(drawn)


def test_an_output_shows_its_worst_verdict_over_every_comparison() -> None:
    """Against onnxruntime Y passed, against the stored outputs it failed: the output's box
    says fail (it showed the first comparison's pass while the page said parity fails)."""
    parity = {"comparisons": [
        {"actual": "numpy", "expected": "onnxruntime", "passed": True,
         "outputs": [{"name": "Y", "verdict": "pass"}]},
        {"actual": "numpy", "expected": "stored", "passed": False,
         "outputs": [{"name": "Y", "verdict": "fail"}]},
    ]}
    graph, lowered = graphs(SYMMETRIC, "6_4")
    parsed = Page(html_report(graph, lowered, parity))
    for key in ("o-out0", "l-out0"):
        classes = parsed.nodes()[key]["class"].split()
        assert "verdict-fail" in classes and "verdict-pass" not in classes


def test_a_verdict_given_as_a_plain_record_cannot_break_out_of_its_attribute() -> None:
    graph, lowered = graphs(SYMMETRIC, "6_4")
    text = html_report(graph, lowered, [{"name": "Y", "verdict": 'x"onmouseover="alert(1)'}])
    assert 'onmouseover="' not in text  # no attribute of its own
    assert 'verdict-x"onmouseover="alert(1)' in Page(text).nodes()["l-out0"]["class"]


def test_control_characters_in_names_show_as_escapes_in_the_page() -> None:
    """The page wrote names' control characters raw: a NUL is an HTML parse error (read as
    U+FFFD) and its inline SVGs were not XML. They show as \\xNN, as in the DOT drawing."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    graph = helper.make_graph(
        [helper.make_node("Pad", ["x\x1b", "pads"], ["y\x00"], name="pad\x1b\x7f\x85")], "g",
        [helper.make_tensor_value_info("x\x1b", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y\x00", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.array([0, 1, 0, 1], np.int64), "pads")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    graph = load(model)
    page = html_report(graph, lower(graph, "6_4"))
    assert not re.search(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]", page)
    assert "pad\\x1b\\x7f\\x85" in page
    svgs = re.findall(r"<svg.*?</svg>", page, re.S)
    assert svgs
    for svg in svgs:
        ET.fromstring(svg)  # XML: a raw control character would not parse


def test_the_page_lists_each_branch_lowered_by_itself() -> None:
    """A model with an If: the page lists each branch's Slice/Concat/Pad rows as ``lower``
    does (lowered by itself, its input typed as the main graph types it), after the report;
    a model without control flow has no such section."""
    if_model = ROOT / "models" / "control_flow" / "if_pad_slice.onnx"
    parsed = Page(page(if_model, "6_4"))
    text = " ".join(" ".join(parsed.text).split())
    assert parsed.all("section", id="subgraphs")
    assert "If '/If' then_branch inputs, as the enclosing graph types them: x " in text
    assert "If '/If' else_branch" in text
    rows = [a for a in parsed.all("tr") if a.get("data-status") == "lowered"]
    assert len(rows) == 6  # the branches' 3 + 3 (the main graph lowers none of its own)
    assert not Page(page(SYMMETRIC, "6_4")).all("section", id="subgraphs")


def test_the_page_draws_each_branch_and_its_rows_select_its_nodes() -> None:
    """Each branch lowered by itself is drawn as a panel of its own (keys ``s0-``, ``s1-``):
    its DML operators are nodes whose details (descriptor fields) the page carries, and each
    of its report rows shares its group with a node of that drawing only, so a click on the
    row selects it there. Before, a branch was a table of rows, its descriptors nowhere."""
    if_model = ROOT / "models" / "control_flow" / "if_pad_slice.onnx"
    graph, lowered = graphs(if_model, "6_4")
    parsed = Page(html_report(graph, lowered))
    (data,) = [json.loads(body) for a, body in parsed.scripts if a.get("id") == "details-data"]
    held = [a for a in parsed.all("div") if a.get("class") == "held"]
    assert len(held) == 2  # then_branch, else_branch
    nodes = [a for a in parsed.all("g") if a.get("data-key", "").startswith("s")]
    by_panel: dict[str, list[dict[str, str]]] = {}
    for a in nodes:
        by_panel.setdefault(a["data-key"].split("-")[0], []).append(a)
    assert set(by_panel) == {"s0", "s1"}
    dml = {data[a["data-key"]]["title"] for a in nodes
           if data.get(a["data-key"], {}).get("title", "").startswith("DML_OPERATOR_")}
    assert {"DML_OPERATOR_SLICE", "DML_OPERATOR_PADDING"} <= dml
    for prefix, drawn in by_panel.items():
        groups = {g for a in drawn for g in a.get("data-groups", "").split()}
        assert groups and all(g.startswith(f"{prefix}g") for g in groups)
    rows = [a for a in parsed.all("tr") if a.get("data-groups", "").startswith("s")
            and a.get("data-status") == "lowered"]
    assert len(rows) == 6
    drawn_groups = {g for a in nodes for g in a.get("data-groups", "").split()}
    assert all(r["data-groups"] in drawn_groups for r in rows)


def test_the_page_script_parses(tmp_path: Path) -> None:
    """The page's script as a JavaScript engine reads it (Node's ``--check``, where Node is
    installed): without Chromium, the only check that an edit to it is valid JavaScript."""
    node = shutil.which("node") or shutil.which("nodejs")
    if node is None:
        pytest.skip("no Node.js on PATH (looked for node, nodejs)")
    if_model = ROOT / "models" / "control_flow" / "if_pad_slice.onnx"
    (script,) = [body for a, body in Page(page(if_model, "6_4")).scripts if not a]
    path = tmp_path / "page.js"
    path.write_text(script, encoding="utf-8")
    done = subprocess.run([node, "--check", str(path)], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr


def test_the_details_panel_shows_control_and_bidi_characters_by_their_codes() -> None:
    """The details box is filled from the page's JSON by textContent, which shows text as it
    is: a name's U+202E there turned the rest of its line around, and an ESC or a newline was
    kept raw, where every other place on the page (and the DOT drawing) shows \\u202e, \\x1b.
    The JSON holds the text as shown."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    from dmlgraph.printable import CONTROL

    pad, x, y = "pad\u202etxt.exe", "x\x1b[31m", "y\n\u2066"
    graph = helper.make_graph(
        [helper.make_node("Pad", [x, "pads"], [y], name=pad)], "g",
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info(y, TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.array([0, 1, 0, 1], np.int64), "pads")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    graph = load(model)
    lowered = lower(graph, "6_4")
    parsed = Page(html_report(graph, lowered))
    (data,) = [json.loads(body) for a, body in parsed.scripts if a.get("id") == "details-data"]

    def strings(value: Any) -> list[str]:
        if isinstance(value, str):
            return [value]
        if isinstance(value, dict):
            return [s for v in value.values() for s in strings(v)]
        if isinstance(value, list):
            return [s for v in value for s in strings(v)]
        return []

    texts = strings(data)
    assert not [t for t in texts if CONTROL.search(t)]
    (node,) = [n for n in lowered.nodes if n.name == pad]
    assert data[f"l-n{node.id}"]["name"] == "pad\\u202etxt.exe"
    assert data["l-in0"]["title"] == "graph input x\\x1b[31m"
    assert data["o-out0"]["title"] == "graph output y\\x0a\\u2066"


# ----------------------------------------------------------------------------- --focus


@functools.cache
def focused_graphs() -> tuple[Graph, Graph]:
    graph = load(focus_model())
    return graph, lower(graph, "6_4")


def drawn_ops(parsed: Page, prefix: str, graph: Graph) -> set[str]:
    """The names of the operations a panel draws (``PREFIX-nID`` keys)."""
    keys = [k for k in parsed.nodes() if re.fullmatch(rf"{prefix}-n\d+", k)]
    return {graph.node(int(k.split("-n")[1])).name for k in keys}


def test_a_focused_page_draws_lists_and_says_the_selection_only() -> None:
    """Depth 1 from the Pad: both panels draw e1, pad and cat only (what networkx over the
    proto says, and what they became), the report table lists those three, and the top of
    the page says it is a focused view; cut edges end at stubs in both panels."""
    graph, lowered = focused_graphs()
    expected = nodes_within(focus_model(), ["pad"], 1)
    assert expected == {"e1", "pad", "cat"}
    parsed = Page(html_report(graph, lowered, focus=focus_on(graph, "pad", 1)))
    assert drawn_ops(parsed, "o", graph) == expected
    assert drawn_ops(parsed, "l", lowered) == expected
    titles = {a.get("data-status") for k, a in parsed.nodes().items() if k.startswith("l-n")}
    assert titles == {"lowered", "fallback"}  # the PADDING and the JOIN; Exp on the fallback
    assert len([a for a in parsed.all("p") if a.get("id") == "focus"]) == 1
    text = " ".join(" ".join(parsed.text).split())
    assert f"focus: pad, depth 1: 3 of {len(graph)} nodes" in text
    report = [a for a in parsed.all("tr") if "data-status" in a]
    assert len(report) == 3
    table = text[text.index("Lowering report"):]
    assert all(f" {name} " in f" {table} " for name in expected)
    assert not any(f" {name} " in f" {table} " for name in ("r0", "neg", "wide"))
    for prefix in ("o", "l"):
        stubs = {a["data-key"] for a in parsed.all("g") if "k-stub" in a.get("class", "")
                 and a["data-key"].startswith(f"{prefix}-")}
        assert len(stubs) == 3, stubs  # t0 (from r0), t3 (from s), t4 (read by neg)
    (data,) = [json.loads(body) for a, body in parsed.scripts if a.get("id") == "details-data"]
    assert data["o-cut0"]["title"] == "t0: made by node 'r0' (Relu), outside the focus"
    assert set(parsed.nodes()) <= set(data)
    for svg in re.findall(r"<svg.*?</svg>", html_report(graph, lowered,
                                                        focus=focus_on(graph, "pad", 1)), re.S):
        ET.fromstring(svg)


def test_a_focused_page_lists_the_parity_of_the_selected_outputs_only() -> None:
    graph, lowered = focused_graphs()
    parity = [{"name": "y", "passed": True}, {"name": "z", "passed": False}]
    parsed = Page(html_report(graph, lowered, parity, focus=focus_on(graph, "pad", 3)))
    rows = [a["class"] for a in parsed.all("tr") if a.get("class", "").startswith("verdict-")]
    assert rows == ["verdict-pass"]  # y (ab makes it, 3 edges away); not z (wide)
    text = " ".join(" ".join(parsed.text).split())
    assert "1 of 2 outputs, made outside the focus, not listed" in text
    assert "parity FAILS" in text  # the verdict at the top is the whole model's


def test_without_a_focus_the_page_is_as_before() -> None:
    graph, lowered = focused_graphs()
    text = html_report(graph, lowered)
    assert 'id="focus"' not in text and "k-stub" not in text
    assert drawn_ops(Page(text), "o", graph) == {n.name for n in graph.nodes}


def test_a_focus_keeps_the_panels_of_the_selected_ifs_only() -> None:
    """if_pad_slice's If holds a Pad and a Slice in each branch: a focus reaching the If
    draws both branches' panels; one leaving it out draws none, and no subgraph section."""
    if_model = ROOT / "models" / "control_flow" / "if_pad_slice.onnx"
    graph, lowered = graphs(if_model, "6_4")
    near = Page(html_report(graph, lowered, focus=focus_on(graph, "/Pad_1", 1)))
    assert drawn_ops(near, "o", graph) == {"/If", "/Pad_1", "/Slice_10", "/Concat_3"}
    assert len([a for a in near.all("div") if a.get("class") == "held"]) == 2
    text = " ".join(" ".join(near.text).split())
    assert "If '/If' then_branch" in text and "If '/If' else_branch" in text
    far = Page(html_report(graph, lowered, focus=focus_on(graph, "/Slice_12", 1)))
    assert drawn_ops(far, "o", graph) == {"/Slice_11", "/Slice_12", "/Concat_3"}
    assert not far.all("section", id="subgraphs")
    assert not [k for k in far.nodes() if k.startswith("s")]


def test_a_focus_selected_in_another_graph_is_refused() -> None:
    """A Focus holds node ids of the graph it was selected in: given with another original,
    its ids would pick unrelated nodes of it."""
    graph, lowered = focused_graphs()
    other = load(SYMMETRIC)
    with pytest.raises(VizError, match="the focus was selected in a graph of 6 nodes, not in "
                                        "original \\(13\\)"):
        html_report(graph, lowered, focus=focus_on(other, "bottom"))


def test_a_focused_panel_draws_the_outputs_that_are_a_drawn_input_or_constant() -> None:
    """x, a graph input, and w, a weight, are graph outputs too: the whole page drew both in
    each panel; a focus on the nodes reading them dropped w, as made outside the focus."""
    graph = load(outputs_not_made_by_nodes())
    lowered = lower(graph)
    for focus in (None, "x", "w", "join", "slice"):
        text = html_report(graph, lowered) if focus is None else html_report(
            graph, lowered, focus=focus_on(graph, focus, 1))
        details = json.loads(next(body for a, body in Page(text).scripts
                                  if a.get("id") == "details-data"))
        for panel in "ol":
            drawn = {d["title"] for k, d in details.items() if k.startswith(f"{panel}-out")}
            assert drawn == {"graph output x", "graph output z", "graph output w"}, focus


def test_a_focused_page_lists_the_parity_rows_of_the_outputs_it_draws() -> None:
    """x (a graph input) and w (a weight) are graph outputs; a focused panel draws them where
    a node it keeps reads them, but the parity table left their rows out as "made outside
    the focus". Oracle: the model's wiring, read from the proto: the outputs a kept node
    makes, or that no node makes and a kept node reads."""
    from dmlgraph.parity import check

    model = outputs_not_made_by_nodes()
    graph = load(model)
    lowered = lower(graph)
    report = check(model)
    made = {out: node.name for node in model.graph.node for out in node.output}
    for name in ("join", "slice"):
        focus = focus_on(graph, name, 0)
        kept = {node.name for node in model.graph.node if node.name == name}
        expected = {o.name for o in model.graph.output
                    if made.get(o.name) in kept
                    or (o.name not in made and any(o.name in node.input for node in
                                                   model.graph.node if node.name in kept))}
        (section,) = re.findall(r'<section id="parity">.*?</section>',
                                html_report(graph, lowered, report, focus=focus))
        listed = set(re.findall(r'<tr class="verdict-[a-z-]+"><td>(\w+)</td>', section))
        assert listed == expected, (name, section)
        left = 3 - len(expected)
        assert (f"{left} of 3 outputs" in section) == bool(left)


def test_a_focus_leaving_out_every_output_keeps_its_section_s_verdict() -> None:
    """x -> Slice 'a' -> Relu 'b' -> y; a focus on 'a' alone lists no parity row (y is b's),
    and the section said "nothing compared" of a comparison that compared y. Oracle: check's
    own count of outputs compared, and onnxruntime's run of the model (what it compared)."""
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    from dmlgraph.parity import check

    params = [numpy_helper.from_array(np.array(v, np.int64), n) for n, v in (("s", [1]),
                                                                              ("e", [3]))]
    model = helper.make_model(helper.make_graph(
        [helper.make_node("Slice", ["x", "s", "e"], ["t"], name="a"),
         helper.make_node("Relu", ["t"], ["y"], name="b")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])], params),
        opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    assert [o.name for o in session.get_outputs()] == ["y"]
    report = check(model)
    assert report.passed and report.compared == 1
    graph = load(model)
    (section,) = re.findall(r'<section id="parity">.*?</section>',
                            html_report(graph, lower(graph), report, focus=focus_on(graph, "a", 0)))
    assert "1 of 1 outputs, made outside the focus, not listed" in section
    assert "nothing compared" not in section and 'verdict-pass">pass<' in section
