"""Smoke test of the benchmark suite: every section runs end to end in tiny mode and the JSON
holds what the full run's readers need. It asserts nothing about speed."""

from __future__ import annotations

import io
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

# benchmarks/ is not installed; pytest's pythonpath (pyproject.toml) puts the root on the path
from backends.numpy import threads
from benchmarks import suite
from benchmarks.__main__ import main
from benchmarks.cases import chain_cases, execution_case, execution_cases
from benchmarks.engines import MismatchError, Ours, bit_identical, verify
from benchmarks.report import write_json
from benchmarks.settings import TINY


@pytest.fixture(scope="module")
def document(tmp_path_factory: pytest.TempPathFactory) -> dict:
    out = io.StringIO()
    doc = suite.run(TINY, console=Console(file=out, width=200))
    path = tmp_path_factory.mktemp("bench") / "results.json"
    write_json(doc, path)
    return {"json": json.loads(path.read_text()), "printed": out.getvalue()}


def test_every_section_is_in_the_json(document: dict) -> None:
    doc = document["json"]
    assert set(doc["sections"]) == {"execution", "overhead", "lowering", "memory"}
    for key in ("cpu_count", "python", "numpy", "onnxruntime"):
        assert doc["machine"][key]
    names = {t["name"] for t in doc["summary"]}
    for section in doc["sections"].values():
        assert section["targets"]
        assert {t["name"] for t in section["targets"]} <= names
    assert "summary: worst ratio per target" in document["printed"]


def test_every_execution_case_was_verified(document: dict) -> None:
    rows = document["json"]["sections"]["execution"]["tables"]["cases"]
    assert [r["case"] for r in rows] == [c.name for c in execution_cases(TINY.sizes[0])]
    for row in rows:
        assert {"ours_alloc", "ort_bound"} <= set(row["verified"])
        assert ("ours_bound" in row["verified"]) == (row["ours_bound"] is not None)
        assert row["ours_alloc"]["samples"] and row["ort_alloc"]["samples"]
        assert row["bytes_moved"] > row["output_bytes"]
        assert set(row["ratios"]) >= {"ours/ort alloc", "ours/ort bound", "ours/memcpy alloc"}
        # a tiny copy is never streamed, nor timed both ways
        assert row["stores"] == ("cached" if threads.native else "-")


def test_overhead_lowering_and_memory_rows(document: dict) -> None:
    sections = document["json"]["sections"]
    chains = sections["overhead"]["tables"]["chains"]
    assert [c["chain"] for c in chains] == [c.name for c in chain_cases(TINY.chain_length)]
    assert all(c["verified"] == ["ours", "ort_all"] for c in chains)
    assert all(c["us_per_node"]["ort_none"] > 0 for c in chains)
    lowering = sections["lowering"]["tables"]
    assert [m["model"] for m in lowering["models"]] == list(TINY.models)
    assert len(lowering["synthetic"]) == len(TINY.synthetic_nodes)
    assert lowering["synthetic"][1]["scaling"] is not None
    for row in lowering["synthetic"]:  # the CPU split is the timed run's, not its set-up's
        cpu = row["user_us_per_node"] + row["system_us_per_node"]
        wall = (row["load_s"] + row["lower_s"]) / row["nodes"] * 1e6
        assert 0 < row["user_us_per_node"] and row["faults_per_node"] >= 0
        assert cpu <= wall * 1.1 + 2000 / row["nodes"]  # + 2 ms of clock granularity
    assert lowering["synthetic"][1]["user_scaling"] is not None
    profile = sections["lowering"]["profile"]
    assert profile["top_by_cumulative"] and profile["growth_per_node"]
    runs = sections["memory"]["tables"]["runs"]
    assert len(runs) == len(TINY.memory_cases)
    assert {runs[0]["ours"]["engine"], runs[0]["ort"]["engine"]} == {"ours", "ort"}
    for probe in (runs[0]["ours"], runs[0]["ort"]):  # build + first run spans both peaks
        assert probe["build_first_increase_mb"] == pytest.approx(
            max(probe["build_peak_mb"], probe["first_peak_mb"]) - probe["prepared_mb"])
        assert probe["build_first_increase_mb"] >= probe["build_increase_mb"]


def test_a_mismatch_fails_loudly() -> None:
    a = np.array([0.0, 1.0], dtype=np.float32)
    assert bit_identical(a, a.copy())
    assert not bit_identical(a, np.array([-0.0, 1.0], dtype=np.float32))
    with pytest.raises(MismatchError, match="differs"):
        verify("case", {"y": a}, {"y": np.array([-0.0, 1.0], dtype=np.float32)})
    with pytest.raises(MismatchError, match="missing"):
        verify("case", {}, {"y": a})


def test_command_line_writes_the_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("benchmarks.__main__.QUICK", replace(TINY, chain_length=3))
    path = tmp_path / "out.json"
    assert main(["--quick", "--only", "overhead", "--json", str(path)]) == 0
    assert list(json.loads(path.read_text())["sections"]) == ["overhead"]
    with pytest.raises(SystemExit):
        main(["--only", "nonsense"])


def test_a_band_target_is_met_only_when_every_value_is_inside() -> None:
    """0.75..1.25 is not symmetric about 1 in ratio terms: 0.79 looked "worse" than 1.26
    (1/0.79 > 1.26), so the verdict said met while 1.26 was outside."""
    from benchmarks.results import Target

    out = Target.worst_of("scaling", [("10k", 0.79), ("100k", 1.26)], low=0.75, high=1.25)
    assert (out.worst, out.worst_case, out.met) == (1.26, "100k", False)
    inside = Target.worst_of("scaling", [("10k", 0.79), ("100k", 1.2)], low=0.75, high=1.25)
    assert inside.met and inside.worst == 1.2  # 0.96 of its limit; 0.79 is 0.95 of its own


def test_a_scaling_miss_says_where_the_time_went() -> None:
    from benchmarks.lowering import SyntheticRow, scaling_notes
    from benchmarks.timing import Timing

    def row(nodes: int, us: float, user: float, system: float, faults: float,
            scaling: float | None, user_scaling: float | None) -> SyntheticRow:
        t = Timing.of([us * nodes / 1e6])
        return SyntheticRow(nodes, t, 0.0, 0.0, 0.0, 0, t, us, us, us, scaling, 1.0,
                            user, system, faults, user_scaling)

    rows = [row(1000, 80.0, 79.0, 1.0, 0.05, None, None),
            row(10_000, 96.0, 86.0, 10.0, 1.9, 1.2, 1.09),  # inside the band: no note
            row(100_000, 112.0, 88.0, 24.0, 2.1, 1.4, 1.11)]
    (note,) = scaling_notes(rows)
    assert note == (
        "scaling at 100,000 nodes is 1.40x: 112.0 µs/node (user 88.0, system 24.0, 2.10 page "
        "faults/node) against 1,000 nodes' 80.0 µs/node (user 79.0, system 1.0, 0.05 page "
        "faults/node); user time alone scales 1.11x")


def test_each_memcpy_way_reads_one_source_into_two_destinations_in_turns() -> None:
    """The bound is timed as the engines are: one source, two destinations written in turns
    (an engine's alloc and bound modes), each way a timing group of its own."""
    from benchmarks.execution import MemcpyBound

    bound = MemcpyBound(2, 4096)
    assert [list(g) for g in bound.groups()] == [[name] for name in bound.timed()]
    bound.source[:] = np.arange(bound.elements, dtype=np.float32)
    for name, way in bound.ways.items():
        first, second = bound.destinations[name]
        assert first is not second
        first[:] = second[:] = -1.0
        way()
        assert np.array_equal(first, bound.source), name
        assert (second == -1.0).all(), name
        way()
        assert np.array_equal(second, bound.source), name


# ----------------------------------------------------------------------------- the arithmetic
# The tiny run above is below every target's size: these give the targets made-up numbers.


def test_a_faster_engine_has_a_speed_ratio_above_one_and_meets_the_targets() -> None:
    from benchmarks.execution import TARGET_FROM_BYTES, speed_ratios, targets

    medians = {"ours_alloc": 1.0, "ours_bound": 0.5, "ort_alloc": 2.0, "ort_bound": 2.0,
               "memcpy": 0.9}
    ratios = speed_ratios(medians)
    assert ratios["ours/ort alloc"] == 2.0 and ratios["ours/ort bound"] == 4.0
    assert ratios["ours/memcpy alloc"] == pytest.approx(0.9)
    row = type("Row", (), {"case": "c", "output_bytes": TARGET_FROM_BYTES, "ratios": ratios})
    found = {t.name: t for t in targets([row])}  # type: ignore[list-item]
    assert all(t.met for t in found.values()), found
    slower = dict(ratios, **{"ours/ort alloc": ratio_of(medians, ours=3.0)})
    row.ratios = slower
    assert not all(t.met for t in targets([row]))  # type: ignore[list-item]


def ratio_of(medians: dict, *, ours: float) -> float | None:
    from benchmarks.execution import speed_ratios

    return speed_ratios(dict(medians, ours_alloc=ours))["ours/ort alloc"]


def test_the_memcpy_bound_copies_half_the_bytes_a_case_moves() -> None:
    from benchmarks.execution import MemcpyBound

    for case in execution_cases(1 << 20):
        bound = MemcpyBound(2, case.bytes_moved)
        assert bound.elements * 4 * 2 == case.bytes_moved  # read once, written once


def test_measure_times_the_call_not_the_freeing_of_its_result() -> None:
    import time

    from benchmarks.timing import measure, measure_together

    class SlowToFree:
        def __del__(self) -> None:
            time.sleep(0.05)

    assert measure(SlowToFree, 2, warmup=0).median < 0.04
    assert measure_together({"a": SlowToFree}, 2, warmup=0)["a"].median < 0.04


def test_a_run_that_computes_nothing_fails_the_check_after_timing() -> None:
    """A run that leaves its last outputs in place passes the check before timing; new values
    in the feeds and poisoned outputs make it fail the one after."""
    from benchmarks.engines import change_in_place

    feeds = {"x": np.arange(6, dtype=np.float32)}
    out = feeds["x"] * 2
    do_nothing = lambda: {"y": out}  # noqa: E731
    verify("before", do_nothing(), {"y": feeds["x"] * 2})
    change_in_place(feeds, [out])
    with pytest.raises(MismatchError):
        verify("after", do_nothing(), {"y": feeds["x"] * 2})


@pytest.mark.skipif(not threads.native, reason="the native copier is not built")
def test_a_row_says_how_its_copies_wrote_once_their_timing_settled() -> None:
    """A copy from ``STREAM_BYTES`` times both ways in its first calls ("tuning"), then keeps
    one; ``Ours.stores`` says which, as the table's DML column does."""
    from backends.numpy._copies import STREAM_BYTES, STREAMS, TUNE_CALLS

    case = execution_case("slice_contiguous", 2 * STREAM_BYTES)
    ours = Ours(case.model, 2)
    feeds = case.feeds()
    ours.run(feeds)
    assert ours.stores() == ("tuning" if STREAMS else "cached")
    for _ in range(TUNE_CALLS):
        ours.run(feeds)
    assert ours.stores() in (("cached", "streamed") if STREAMS else ("cached",))
