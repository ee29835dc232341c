"""The JSON fuzzer (tests/fuzz/json_fuzz.py): its NumPy oracle on the shipped DxDispatch
examples, worked out by hand, and a few of its mutants run as it runs them (a smoke test: the
fuzzer itself runs by hand, ``--minutes``)."""

from __future__ import annotations

import json
import os
import random
import sys
from pathlib import Path

import numpy as np

import backends.numpy  # noqa: F401  (imported before the fork, as the fuzzer does)
import dmlgraph.cli  # noqa: F401

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fuzz"))
import json_fuzz  # noqa: E402

DATA = Path(__file__).parent.parent / "models" / "dxdispatch"


def test_the_oracle_reads_the_examples_as_worked_out_by_hand() -> None:
    """JOIN of A[0:3], B[0:2] and A[4:9]; rows 1..3, columns 1 and 3 of the 5x5 grid 1..25
    (the same hand-worked values test_dxdispatch checks dmlgraph against)."""
    join = json_fuzz.oracle_model(json.loads((DATA / "example_join.json").read_text()))
    assert join["Out"].tolist() == [1, 2, 3, 100, 115, 5, 6, 7, 8, 9]
    sliced = json_fuzz.oracle_model(json.loads((DATA / "example_slice.json").read_text()))
    assert sliced["output"].tolist() == [7, 9, 12, 14, 17, 19]


def test_the_oracle_pads_as_the_spec_table_says() -> None:
    """DML_SPEC.md §3's modes on [1, 2, 3] padded by 4 before and 4 after (numpy.pad's
    edge, reflect, symmetric and wrap agree)."""
    x = np.array([1, 2, 3], dtype=np.int32)
    expected = {
        "EDGE": [1, 1, 1, 1, 1, 2, 3, 3, 3, 3, 3],
        "REFLECTION": [1, 2, 3, 2, 1, 2, 3, 2, 1, 2, 3],
        "SYMMETRIC": [3, 3, 2, 1, 1, 2, 3, 3, 2, 1, 1],
        "WRAP": [3, 1, 2, 3, 1, 2, 3, 1, 2, 3, 1],
    }
    for mode, values in expected.items():
        desc = {"PaddingMode": mode, "StartPadding": [4], "EndPadding": [4]}
        out = json_fuzz.oracle_op("PADDING", desc, [x], [11], np.dtype(np.int32))
        assert out.tolist() == values, mode


def test_a_few_mutants_run_without_findings(tmp_path) -> None:
    corpus = json_fuzz.build_corpus(tmp_path, quick=True)
    rng = random.Random(0)
    for case in range(10):  # about 1 s; the fuzzer runs thousands by hand
        entry = rng.choice(corpus)
        data, level, strict = json_fuzz.make_mutant(entry, rng)
        result = json_fuzz.run_case(entry["kind"], data, level, strict, case, tmp_path)
        assert json_fuzz.findings_of(result, entry["kind"]) == [], data[:2000]
