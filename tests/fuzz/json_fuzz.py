"""Mutation fuzzer of dmlgraph's two JSON readers: DxDispatch models (``dmlgraph dxdispatch``)
and its own descriptor JSON (``dmlgraph.dml.jsonio.operator_from_json`` on ``lower -o``'s
nodes).

The corpus is valid JSON: the DxDispatch examples (models/dxdispatch), the models
``lower --format dxdispatch`` writes from models/seeds at several feature levels (with their
inputs from seed_io.npz, and without), and ``lower -o`` documents of every model under models/.
Each mutant changes it structurally (keys deleted, duplicated or renamed, values of another
JSON type, extreme numbers, huge sizes, strides and offsets, enum strings misspelt or in
another case or another enum's, empty lists, bindings swapped, resources too small, bindings
as objects with element offsets, tensor flags and strides added) and textually (comments,
trailing commas, truncation, invalid UTF-8, a byte-order mark, deep nesting, lone surrogates,
NaN literals, numbers past a double). Two fifths of the DxDispatch mutants first get changes
that keep them valid (``coherent``: every type another, strides spread out or broadcasting,
bindings at element offsets, an input flagged OWNED_BY_DML and bound at initialization,
sequences of initial values, values at an offset, a resource's bytes written in another type
than its tensors read, a resource renamed everywhere to an odd name), the oracle's cases.

Each mutant runs in a forked child (RLIMIT_AS 4 GiB, 10 s): a DxDispatch mutant through
``dmlgraph.cli.main(["dxdispatch", FILE, "--feature-level", L, "-o", OUT.npz])``, a descriptor
mutant through ``operator_from_json``, ``validate`` and ``execute_operator`` on random flat
buffers. A finding is a traceback or an exception other than DmlgraphError, an exit code other
than 0 or 2, a child killed or past the time limit, more than 1.5 GB resident, "out of memory"
naming nothing, an error that is not one line, is over 3000 characters or speaks Python's own
words ("NoneType", "object is not subscriptable"), or a result that differs from this file's
NumPy oracle (``oracle_model``, ``oracle_op``: DxDispatch's reading of resources, bindings and
the five operators, from DML_SPEC.md and docs/DECISIONS.md, written apart from the code under
test) for a mutant that is still valid plain JSON (a field given twice read as DxDispatch
reads it: ``Pairs``). Findings go to tests/fuzz/findings/, with a count of each distinct
error message (``json_SEED_messages.txt``) to read for messages that say too little.

    nice -n 15 python tests/fuzz/json_fuzz.py --minutes 20 --seed 1
"""

from __future__ import annotations

import argparse
import collections
import copy
import json
import math
import os
import random
import re
import resource
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any, Callable

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT))
FINDINGS = HERE / "findings"
LEVELS = ["6_4", "5_0", "4_1", "3_0", "2_1", "1_0"]
CASE_SECONDS = 10.0
MEMORY_LIMIT = 4 << 30
RSS_LIMIT_KB = 1_500_000

# ------------------------------------------------------------------------------ corpus


def build_corpus(work: Path, quick: bool = False) -> list[dict[str, Any]]:
    """Valid documents: {"kind": "dx" | "desc", "name", "text", "level"}."""
    from dmlgraph.cli import main

    entries: list[dict[str, Any]] = []
    for example in sorted((ROOT / "models" / "dxdispatch").glob("example_*.json")):
        entries.append({"kind": "dx", "name": example.name, "text": example.read_text(),
                        "level": "6_4"})
    if quick:
        return entries
    seeds = sorted((ROOT / "models" / "seeds").glob("*.onnx"))
    others = sorted(p for p in (ROOT / "models").rglob("*.onnx") if p not in seeds)
    io = ROOT / "models" / "seeds" / "seed_io.npz"
    devnull = open(os.devnull, "w")
    for model in seeds:
        for level in ("6_4", "5_0", "3_0", "2_1", "1_0"):
            for inputs in (True, False):
                out = work / f"{model.stem}_{level}_{int(inputs)}.json"
                argv = ["lower", str(model), "--format", "dxdispatch", "-o", str(out),
                        "--feature-level", level] + (["--inputs", str(io)] if inputs else [])
                if _quiet(main, argv, devnull) == 0:
                    entries.append({"kind": "dx", "name": out.name, "text": out.read_text(),
                                    "level": level})
    for model in seeds + others:
        for level in ("6_4", "2_1"):
            out = work / f"{model.stem}_{level}_lowered.json"
            argv = ["lower", str(model), "-o", str(out), "--feature-level", level]
            if _quiet(main, argv, devnull) == 0:
                entries.append({"kind": "desc", "name": out.name, "text": out.read_text(),
                                "level": level})
    return entries


def _quiet(main: Callable[[list[str]], int], argv: list[str], sink: Any) -> int:
    saved = sys.stdout, sys.stderr
    sys.stdout = sys.stderr = sink
    try:
        return main(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    finally:
        sys.stdout, sys.stderr = saved


# ------------------------------------------------------------------------------ mutation

BIG_NUMBERS: list[Any] = [
    -1, 0, 1, 2, 3, 7, 16, 255, 256, 65535, 2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**53 + 1,
    2**63 - 1, 2**63, 2**64 - 1, 2**64, -(2**31), -(2**63) - 1, 1e308, -1e308, -0.0, 0.5,
    1.5, 3.0, 1e-320, 1e20, -2.5,
]
ENUM_WORDS = [
    "FLOAT32", "FLOAT16", "FLOAT64", "UINT8", "UINT16", "UINT32", "UINT64", "INT8", "INT16",
    "INT32", "INT64", "UINT4", "INT4", "UNKNOWN", "CONSTANT", "EDGE", "REFLECTION", "SYMMETRIC",
    "WRAP", "NONE", "OWNED_BY_DML", "BUFFER", "INVALID", "SLICE", "SLICE1", "JOIN", "PADDING",
    "PADDING1", "CAST", "ELEMENT_WISE_IDENTITY", "DML_TENSOR_DATA_TYPE_FLOAT32",
    "DML_PADDING_MODE_WRAP", "DML_PADDING_MODE_SYMMETRIC", "DML_TENSOR_FLAG_OWNED_BY_DML",
    "DML_OPERATOR_SLICE1", "DML_OPERATOR_PADDING1", "DML_TENSOR_DATA_TYPE_INT64",
    "DML_EXECUTION_FLAG_NONE", "DML_EXECUTION_FLAG_ALLOW_HALF_PRECISION_COMPUTATION",
    "DmlCompileGraph", "dispatch", "print", "DISPATCH", "writeFile", "buffer", "hlsl", "onnx",
    "inf", "-inf", "nan", "NaN", "Inf",
]
FIELD_WORDS = [
    "InputTensor", "OutputTensor", "InputTensors", "DimensionCount", "InputCount", "Offsets",
    "Sizes", "Strides", "InputWindowOffsets", "InputWindowSizes", "InputWindowStrides",
    "Axis", "PaddingMode", "PaddingValue", "PaddingValueDataType", "StartPadding",
    "EndPadding", "DataType", "Flags", "TotalTensorSizeInBytes",
    "GuaranteedBaseOffsetAlignment", "Type", "Desc", "type", "desc", "bindings",
    "executionFlags", "dmlCompileType", "initialValues", "initialValuesDataType",
    "initialValuesOffsetInBytes", "sizeInBytes", "valueCount", "value", "valueStart",
    "valueDelta", "name", "elementOffset", "elementSizeInBytes", "elementCount", "format",
    "resource", "dispatchable", "threadGroupCount", "verbose", "$schema", "resources",
    "dispatchables", "commands", "Float32", "UInt16", "Int64",
]


class Dup(dict):  # type: ignore[type-arg]
    """An object written with a key given twice: ``pairs`` in order."""

    def __init__(self, pairs: list[tuple[str, Any]]) -> None:
        super().__init__(pairs)
        self.pairs = pairs


def dumps(value: Any, rng: random.Random) -> str:
    """JSON text; a ``Dup`` writes its repeated key."""
    ascii_ = rng.random() < 0.5

    def go(v: Any) -> str:
        if isinstance(v, Dup):
            return "{" + ", ".join(f"{json.dumps(k, ensure_ascii=ascii_)}: {go(x)}"
                                   for k, x in v.pairs) + "}"
        if isinstance(v, dict):
            return "{" + ", ".join(f"{json.dumps(k, ensure_ascii=ascii_)}: {go(x)}"
                                   for k, x in v.items()) + "}"
        if isinstance(v, list):
            return "[" + ", ".join(go(x) for x in v) + "]"
        if isinstance(v, float) and not math.isfinite(v):
            return "1e400" if v > 0 else ("-1e400" if v < 0 else "NaN")
        return json.dumps(v, ensure_ascii=ascii_)

    return go(value)


def paths(value: Any, at: tuple = ()) -> list[tuple]:
    """Every path (keys and indices) to a value under ``value``, ``()`` included."""
    out = [at]
    if isinstance(value, dict):
        for key, item in value.items():
            out += paths(item, at + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            out += paths(item, at + (index,))
    return out


def get(doc: Any, path: tuple) -> Any:
    for step in path:
        doc = doc[step]
    return doc


def put(doc: Any, path: tuple, value: Any) -> Any:
    if not path:
        return value
    get(doc, path[:-1])[path[-1]] = value
    return doc


def other_type(value: Any, rng: random.Random) -> Any:
    choices: list[Any] = [None, True, False, 0, -1, 1.5, "", "x", "1", [], {}, [value],
                          {"value": value}, str(value), 2**32]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        choices += [str(value), [value], float(value), -value]
    if isinstance(value, list) and value:
        choices += [value[0], tuple(value) and value[:1], {"0": value[0]}]
    if isinstance(value, dict) and value:
        choices += [list(value.values()), list(value)]
    return rng.choice(choices)


def misspell(word: str, rng: random.Random) -> str:
    kind = rng.randrange(8)
    if kind == 0:
        return word.lower()
    if kind == 1:
        return word.upper() if word != word.upper() else word.capitalize()
    if kind == 2 and word:
        i = rng.randrange(len(word))
        return word[:i] + word[i + 1:]
    if kind == 3:
        return word + rng.choice(["_", "S", " ", "1", "\u00e9", "\x00"])
    if kind == 4:
        return " " + word
    if kind == 5 and "_" in word:
        return word.rsplit("_", 1)[-1]  # the suffix form
    if kind == 6:
        return rng.choice(ENUM_WORDS)
    return rng.choice(FIELD_WORDS)


def mutate_once(doc: Any, rng: random.Random) -> Any:
    """One structural change somewhere in ``doc`` (in place where it can), or ``doc`` as it is
    where the change drawn does not apply."""
    try:
        return _mutate_once(doc, rng)
    except (ValueError, IndexError, KeyError, TypeError, AttributeError, StopIteration):
        return doc


def _mutate_once(doc: Any, rng: random.Random) -> Any:
    every = paths(doc)
    # weight the interesting places: numbers, enum strings, bindings, sizes
    path = rng.choice(every)
    value = get(doc, path)
    parent = get(doc, path[:-1]) if path else None
    op = rng.randrange(22)
    if op == 0 and isinstance(parent, dict):  # delete a key
        del parent[path[-1]]
        return doc
    if op == 1 and isinstance(parent, dict):  # the key twice (first or last wins)
        pairs = list(parent.items())
        key = path[-1]
        extra = (key, other_type(value, rng) if rng.random() < 0.7 else copy.deepcopy(value))
        index = next(i for i, (k, _) in enumerate(pairs) if k == key)
        pairs.insert(index + rng.choice([0, 1, len(pairs) - index]), extra)
        return put(doc, path[:-1], Dup(pairs))
    if op == 2 and isinstance(parent, dict):  # rename a key
        key = path[-1]
        new = misspell(key, rng) if rng.random() < 0.7 else rng.choice(FIELD_WORDS)
        pairs = [(new if k == key else k, v) for k, v in parent.items()]
        return put(doc, path[:-1], dict(pairs))
    if op == 3:  # another JSON type
        return put(doc, path, other_type(value, rng))
    if op in (4, 5, 6) and isinstance(value, (int, float)) and not isinstance(value, bool):
        return put(doc, path, rng.choice(BIG_NUMBERS))
    if op in (4, 5, 6):  # a number anywhere numeric
        numeric = [p for p in every if isinstance(get(doc, p), (int, float))
                   and not isinstance(get(doc, p), bool)]
        if numeric:
            p = rng.choice(numeric)
            old = get(doc, p)
            new = rng.choice(BIG_NUMBERS + [old + 1, old - 1, old * 2, old + 16, old // 2 if
                                            isinstance(old, int) else old / 2])
            return put(doc, p, new)
    if op in (7, 8):  # enum strings
        strings = [p for p in every if isinstance(get(doc, p), str)]
        if strings:
            p = rng.choice(strings)
            return put(doc, p, misspell(get(doc, p), rng))
    if op == 9:  # empty lists, or lists grown or shrunk
        lists = [p for p in every if isinstance(get(doc, p), list)]
        if lists:
            p = rng.choice(lists)
            items = get(doc, p)
            kind = rng.randrange(4)
            if kind == 0:
                return put(doc, p, [])
            if kind == 1 and items:
                items.append(copy.deepcopy(rng.choice(items)))
            elif kind == 2 and items:
                items.pop(rng.randrange(len(items)))
            elif items:
                rng.shuffle(items)
            return doc
    if op == 10:  # swap bindings, or any two values of one object
        objects = [p for p in every if isinstance(get(doc, p), dict) and len(get(doc, p)) > 1]
        bindings = [p for p in objects if p and p[-1] == "bindings"]
        if objects:
            p = rng.choice(bindings or objects) if rng.random() < 0.7 else rng.choice(objects)
            obj = get(doc, p)
            a, b = rng.sample(list(obj), 2)
            obj[a], obj[b] = obj[b], obj[a]
            return doc
    if op == 11:  # a resource too small, or too large
        res = doc.get("resources") if isinstance(doc, dict) else None
        if isinstance(res, dict) and res:
            spec = res[rng.choice(list(res))]
            if isinstance(spec, dict):
                init = spec.get("initialValues")
                kind = rng.randrange(4)
                if kind == 0 and isinstance(init, dict) and isinstance(init.get("valueCount"), int):
                    init["valueCount"] = max(1, init["valueCount"] - rng.choice([1, 2, 4, 100]))
                elif kind == 1 and isinstance(init, list) and len(init) > 1:
                    del init[rng.randrange(len(init)):]
                    init.append(1)
                elif kind == 2:
                    spec["sizeInBytes"] = rng.choice([0, 1, 4, 15, 16, 17, 64, 2**20, 2**33])
                else:
                    spec["initialValuesOffsetInBytes"] = rng.choice([1, 2, 4, 16, 64, 2**31])
                return doc
    if op == 12:  # a binding as an object with element offsets
        bpaths = [p for p in every if len(p) >= 2 and p[-2] == "bindings"]
        if bpaths:
            p = rng.choice(bpaths)
            b = get(doc, p)
            name = b if isinstance(b, str) else (b.get("name") if isinstance(b, dict) else None)
            if isinstance(name, str):
                obj: dict[str, Any] = {"name": name}
                if rng.random() < 0.8:
                    obj["elementOffset"] = rng.choice([0, 1, 2, 4, 8, 16, 3, 2**31, 2**40])
                if rng.random() < 0.5:
                    obj["elementSizeInBytes"] = rng.choice([0, 1, 2, 4, 8, 16, 3])
                if rng.random() < 0.2:
                    obj["elementCount"] = rng.choice([0, 1, 10**9])
                return put(doc, p, obj)
    if op in (13, 14):  # tensor strides, flags, total size, alignment
        tensors = [p for p in every if isinstance(get(doc, p), dict)
                   and "DataType" in get(doc, p) and isinstance(get(doc, p).get("Sizes"), list)]
        if tensors:
            p = rng.choice(tensors)
            t = get(doc, p)
            sizes = t["Sizes"]
            kind = rng.randrange(6)
            if kind == 0:
                packed = [1] * len(sizes)
                for i in range(len(sizes) - 2, -1, -1):
                    s = sizes[i + 1] if isinstance(sizes[i + 1], int) else 1
                    packed[i] = packed[i + 1] * s
                packed = [s * rng.choice([1, 1, 2, 3]) for s in packed]
                if rng.random() < 0.4:
                    packed[rng.randrange(len(packed))] = rng.choice([0, 1, 2**31, 2**32 - 1])
                t["Strides"] = packed
            elif kind == 1:
                t["Flags"] = rng.choice(["OWNED_BY_DML", "DML_TENSOR_FLAG_OWNED_BY_DML",
                                         ["NONE", "OWNED_BY_DML"], "NONE", [], ["NONE"]])
            elif kind == 2:
                t["TotalTensorSizeInBytes"] = rng.choice([0, 1, 4, 16, 2**20, 2**32, 2**40])
            elif kind == 3:
                t["GuaranteedBaseOffsetAlignment"] = rng.choice([0, 1, 2, 4, 16, 32, 3, 2**31])
            elif kind == 4:
                t["DimensionCount"] = len(sizes) + rng.choice([0, 0, 1, -1])
            elif sizes:
                i = rng.randrange(len(sizes))
                sizes[i] = rng.choice([0, 1, 2, 2**16, 2**31, 2**32 - 1, sizes[i] + 1])
            return doc
    if op == 15:  # the data type of a resource or of a tensor
        typed = [p for p in every if p and p[-1] in ("initialValuesDataType", "DataType",
                                                    "PaddingValueDataType")]
        if typed:
            p = rng.choice(typed)
            return put(doc, p, rng.choice(ENUM_WORDS[:14]))
    if op == 16:  # commands reordered, repeated, removed
        cmds = doc.get("commands") if isinstance(doc, dict) else None
        if isinstance(cmds, list) and cmds:
            kind = rng.randrange(3)
            if kind == 0:
                cmds.append(copy.deepcopy(rng.choice(cmds)))
            elif kind == 1:
                rng.shuffle(cmds)
            else:
                cmds.insert(0, {"type": "print", "resource": rng.choice(
                    list(doc.get("resources") or {"x": 0}))})
            return doc
    if op == 17:  # the initial values in other forms
        res = doc.get("resources") if isinstance(doc, dict) else None
        if isinstance(res, dict) and res:
            spec = res[rng.choice(list(res))]
            if isinstance(spec, dict):
                spec["initialValues"] = rng.choice([
                    {"valueCount": rng.choice([1, 4, 16, 100, 0, 2**32, -1]),
                     "value": rng.choice(BIG_NUMBERS + ["inf", "nan", "-inf", "x"])},
                    {"valueCount": rng.choice([3, 16, 64]), "valueStart": rng.choice(BIG_NUMBERS),
                     "valueDelta": rng.choice(BIG_NUMBERS)},
                    [rng.choice(BIG_NUMBERS + ["inf", "nan"]) for _ in range(rng.randrange(1, 40))],
                    {"valueCount": 8},
                    {"value": 1},
                ])
                return doc
    if op == 18:  # the dispatchable's "type" or another operator's desc
        disp = doc.get("dispatchables") if isinstance(doc, dict) else None
        if isinstance(disp, dict) and disp:
            d = disp[rng.choice(list(disp))]
            if isinstance(d, dict):
                d["type"] = rng.choice(["DML_OPERATOR_SLICE", "DML_OPERATOR_SLICE1",
                                        "DML_OPERATOR_JOIN", "DML_OPERATOR_PADDING",
                                        "DML_OPERATOR_PADDING1", "SLICE1", "PADDING1",
                                        "DML_OPERATOR_CAST", "hlsl", "Onnx"])
                return doc
    if op == 19 and isinstance(value, list):  # a list wrapped, or nested deep
        return put(doc, path, [value] if rng.random() < 0.7 else
                   [[[[[[[[value]]]]]]]])
    if op == 20 and isinstance(value, dict):  # a field added where none is expected
        value[rng.choice(FIELD_WORDS)] = rng.choice([1, "x", [], {}, None, "FLOAT32"])
        return doc
    if op == 21:  # a PaddingValue in another form
        pv = [p for p in every if p and p[-1] == "PaddingValue"]
        if pv:
            p = rng.choice(pv)
            return put(doc, p, rng.choice([
                {"Float32": 1.5}, {"UInt16": 15360}, {"Int64": -(2**63)}, {"UInt64": 2**64 - 1},
                {"Float64": "nan"}, {"Int8": 300}, {"UInt8": 255}, "inf", "nan", -0.0, 1e39,
                10.6, -10.6, 2**53 + 1, 65504, 65520, {"Float32": 1, "Int32": 1}, {}]))
    return doc


ITEMSIZE = {"FLOAT32": 4, "FLOAT16": 2, "FLOAT64": 8, "UINT8": 1, "UINT16": 2, "UINT32": 4,
            "UINT64": 8, "INT8": 1, "INT16": 2, "INT32": 4, "INT64": 8}


def _word(value: Any) -> str:
    return value.rsplit("_", 1)[-1] if isinstance(value, str) else ""


def roomy(doc: dict[str, Any], extra: int) -> None:
    """Every resource ``extra`` bytes larger than its initial values need."""
    for spec in doc["resources"].values():
        init = spec["initialValues"]
        count = init["valueCount"] if isinstance(init, dict) else len(init)
        size = ITEMSIZE.get(_word(spec["initialValuesDataType"]), 8)
        spec["sizeInBytes"] = spec.get("initialValuesOffsetInBytes", 0) + count * size + extra


def coherent(doc: dict[str, Any], rng: random.Random) -> None:
    """A change that keeps a DxDispatch model valid (most of the time): the oracle's cases."""
    kind = rng.randrange(8)
    if kind == 7:  # a resource's bytes written in another type than its tensors read
        spec = doc["resources"][rng.choice(list(doc["resources"]))]
        init = spec["initialValues"]
        count = init["valueCount"] if isinstance(init, dict) else len(init)
        nbytes = count * ITEMSIZE[_word(spec["initialValuesDataType"])]
        word = rng.choice(["UINT8", "INT8", "UINT16", "INT32", "FLOAT16", "FLOAT64", "UINT64"])
        size = ITEMSIZE[word]
        if nbytes % size or nbytes // size > 1 << 14:
            return
        spec["initialValuesDataType"] = word
        if word.startswith("FLOAT"):
            values: list[Any] = [rng.choice([0.0, -0.0, 1.5, -2.25, 1e-5, 65504.0, "inf", "nan"])
                                 for _ in range(nbytes // size)]
        else:
            low, high = (0, 2 ** (8 * size) - 1) if word[0] == "U" else (
                -(2 ** (8 * size - 1)), 2 ** (8 * size - 1) - 1)
            values = [rng.randint(low, high) for _ in range(nbytes // size)]
        spec["initialValues"] = values
        return
    if kind == 6:  # a resource renamed everywhere: odd names reach the .npz and the terminal
        old = rng.choice(list(doc["resources"]))
        new = rng.choice(["", "a/b", "..", "x\x00y", "\ud800", "\u00e9t\u00e9", "A" * 300,
                          "arr_0", "out.npy", "\x1b[31mred", "名前", "a\\b", " ", "CON",
                          "resources", "x" * 5000, "\n", "a.npz", "-o"])
        doc["resources"] = {new if k == old else k: v for k, v in doc["resources"].items()}
        for p in paths(doc):
            if p and p[0] == "resources":
                continue
            v = get(doc, p)
            if v == old and p and (p[-1] in ("resource", "name") or "bindings" in p):
                put(doc, p, new)
        return
    tensors = [get(doc, p) for p in paths(doc) if isinstance(get(doc, p), dict)
               and "DataType" in get(doc, p) and isinstance(get(doc, p).get("Sizes"), list)]
    if kind == 0:  # every type another
        word = rng.choice(list(ITEMSIZE))
        for p in paths(doc):
            if p and p[-1] in ("DataType", "PaddingValueDataType", "initialValuesDataType"):
                put(doc, p, rng.choice([word, "DML_TENSOR_DATA_TYPE_" + word]))
        integer = word[0] in "UI"
        for spec in doc["resources"].values():
            init = spec["initialValues"]
            if integer and isinstance(init, list):
                spec["initialValues"] = [rng.randrange(0, 100) for _ in init]
            elif integer:
                for key in ("value", "valueStart", "valueDelta"):
                    if key in init:
                        init[key] = rng.randrange(0, 5)
        for p in paths(doc):
            if p and p[-1] == "PaddingValue":
                put(doc, p, rng.choice([0, 1, 7, 100]) if integer else rng.choice(
                    [0.5, -1.25, 3, "inf", "-inf", 1e-8, 65504.0, 1e10]))
        return
    if kind == 1 and tensors:  # strides spread out, resources large enough
        for t in rng.sample(tensors, rng.randrange(1, len(tensors) + 1)):
            sizes = t["Sizes"]
            packed = [1] * len(sizes)
            for i in range(len(sizes) - 2, -1, -1):
                packed[i] = packed[i + 1] * sizes[i + 1]
            factor = rng.choice([1, 2, 3])
            t["Strides"] = [s * factor + rng.choice([0, 0, 1]) * (i == 0)
                            for i, s in enumerate(packed)]
            if rng.random() < 0.3 and "Flags" not in t:  # broadcast an axis (inputs only)
                t["Strides"][rng.randrange(len(sizes))] = 0
        roomy(doc, 1 << 12)
        return
    if kind == 2:  # bindings at element offsets
        roomy(doc, 1 << 12)
        for command in doc["commands"]:
            for point, b in list(command.get("bindings", {}).items()):
                if isinstance(b, str) and rng.random() < 0.6:
                    size = ITEMSIZE.get(_word(doc["resources"][b]["initialValuesDataType"]), 4)
                    unit = rng.choice([0, 1, 2, 16])
                    count = rng.choice([16, 32, 64]) // (unit or size) if (unit or size) <= 16 \
                        else 1
                    command["bindings"][point] = {"name": b, "elementOffset": count *
                                                  rng.choice([1, 2, 3])}
                    if unit:
                        command["bindings"][point]["elementSizeInBytes"] = unit
        return
    if kind == 3:  # an input flagged OWNED_BY_DML, bound at initialization
        for command in doc["commands"]:
            d = doc["dispatchables"].get(command.get("dispatchable"))
            binds = command.get("bindings", {})
            if d and "InputTensor" in binds:
                d["desc"]["InputTensor"]["Flags"] = "OWNED_BY_DML"
                d["bindings"] = {"InputTensor": binds.pop("InputTensor")}
                return
        return
    if kind == 4:  # an input's values a sequence
        spec = doc["resources"][rng.choice(list(doc["resources"]))]
        init = spec["initialValues"]
        count = init["valueCount"] if isinstance(init, dict) else len(init)
        integer = _word(spec["initialValuesDataType"])[0] in "UI"
        spec["initialValues"] = {
            "valueCount": count,
            "valueStart": rng.choice([0, 1, 250, -3] if integer else [0.1, 1, -7.5, 2048]),
            "valueDelta": rng.choice([1, 3, 127] if integer else [0.1, 1, 0.3333, -2])}
        if integer and _word(spec["initialValuesDataType"]).startswith("U"):
            spec["initialValues"]["valueStart"] = abs(spec["initialValues"]["valueStart"])
        return
    # the initial values at an offset in a larger buffer
    spec = doc["resources"][rng.choice(list(doc["resources"]))]
    spec["initialValuesOffsetInBytes"] = rng.choice([4, 16, 64])
    roomy(doc, rng.choice([0, 4, 64]))


def text_mutation(text: str, rng: random.Random) -> bytes:
    """A textual change of valid JSON text."""
    kind = rng.randrange(12)
    raw = text.encode("utf-8", "surrogatepass")
    if kind == 0:  # truncated
        return raw[: rng.randrange(len(raw))]
    if kind == 1:  # invalid UTF-8 somewhere (in a string, most likely)
        i = rng.randrange(len(raw))
        return raw[:i] + rng.choice([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x80"]) + raw[i:]
    if kind == 2:  # comments at whitespace
        spots = [m.start() for m in re.finditer(r"[,\[{]\s", text)]
        for at in sorted(rng.sample(spots, min(len(spots), 3)), reverse=True):
            text = text[: at + 1] + rng.choice([" // c\n", " /* c */ ", "/**/", "// \"x\n"]) + \
                text[at + 1:]
        return text.encode("utf-8", "surrogatepass")
    if kind == 3:  # trailing commas
        spots = [m.start() for m in re.finditer(r"[\]}]", text)]
        for at in sorted(rng.sample(spots, min(len(spots), 3)), reverse=True):
            text = text[:at] + rng.choice([",", ", ", ",,", ",/*x*/"]) + text[at:]
        return text.encode("utf-8", "surrogatepass")
    if kind == 4:  # byte-order mark, or text after the root
        return rng.choice([b"\xef\xbb\xbf" + raw, raw + b" garbage", raw + b"{}", b"  " + raw])
    if kind == 5:  # deep nesting in a value
        depth = rng.choice([100, 2000, 100000])
        return re.sub(r'("Sizes": )', lambda m: m.group(1) + "[" * depth + "1" + "]" * depth
                      + ", \"x\": ", text, count=1).encode("utf-8", "surrogatepass")
    if kind == 6:  # a lone surrogate or a control character in a name
        return re.sub(r'"(\w+)": \{', lambda m: f'"{m.group(1)}' + rng.choice(
            ["\\ud800", "\\u0000", "\\u001b[31m", "\\n", "\u202e", "\\udfff\\ud800"]) + '": {',
            text, count=1).encode("utf-8", "surrogatepass")
    if kind == 7:  # NaN or Infinity literals, numbers past a double
        return re.sub(r"(?<=[:\[, ])(\d+)(?=[,\]\s])", lambda m: rng.choice(
            ["NaN", "Infinity", "-Infinity", "1e400", "9" * 400, "-0", "1E2", "0.1e1", "01",
             "1.", ".5", "+1", "0x10"]), text, count=1).encode("utf-8", "surrogatepass")
    if kind == 8:  # a root that is not an object
        return rng.choice([b"[]", b"null", b"1", b"\"x\"", b"", b" ", b"[" + raw + b"]"])
    if kind == 9:  # single quotes, or an unquoted key
        return text.replace('"', "'", rng.randrange(1, 6)).encode("utf-8", "surrogatepass")
    if kind == 10:  # the whole text twice (duplicate root)
        return raw + raw
    # a huge string
    return re.sub(r'"(\w+)": \{', lambda m: f'"{m.group(1)}{"x" * 100000}": {{', text,
                  count=1).encode("utf-8", "surrogatepass")


def make_mutant(entry: dict[str, Any], rng: random.Random) -> tuple[bytes, str, bool]:
    """(bytes, feature level, strict) for one mutant of ``entry``; strict: plain JSON with no
    duplicate key, which the oracle may read."""
    doc = json.loads(entry["text"])
    level = entry["level"]
    if entry["kind"] == "desc" and rng.random() < 0.8:
        nodes = [n for n in doc.get("nodes", []) if isinstance(n, dict) and "dml" in n]
        if nodes:  # mutate one descriptor, most of the time
            node = rng.choice(nodes)
            for _ in range(rng.choice([1, 1, 2, 3])):
                node["dml"] = mutate_once(node["dml"], rng)
            return dumps(doc, rng).encode("utf-8", "surrogatepass"), level, True
    kept = rng.random() < 0.4
    if kept:
        for _ in range(rng.choice([1, 1, 2, 3])):
            try:
                coherent(doc, rng)
            except (KeyError, TypeError, AttributeError, ValueError, IndexError):
                pass
    if not kept or rng.random() < 0.3:
        for _ in range(rng.choice([1, 1, 1, 2, 2, 3, 5])):
            doc = mutate_once(doc, rng)
    if rng.random() < 0.15:
        level = rng.choice(LEVELS)
    text = dumps(doc, rng) if rng.random() < 0.5 else _indented(doc, rng)
    strict = "NaN" not in text and "1e400" not in text
    if rng.random() < 0.2:
        return text_mutation(text, rng), level, False
    return text.encode("utf-8", "surrogatepass"), level, strict


def _indented(doc: Any, rng: random.Random) -> str:
    if "Dup" in _types(doc):
        return dumps(doc, rng)
    return json.dumps(doc, indent=2, ensure_ascii=rng.random() < 0.5)


def _types(value: Any) -> set[str]:
    out = {type(value).__name__}
    if isinstance(value, dict):
        for v in value.values():
            out |= _types(v)
    elif isinstance(value, list):
        for v in value:
            out |= _types(v)
    return out


# ------------------------------------------------------------------------------ oracle


class Skip(Exception):
    """The oracle does not read this mutant (a form it leaves to the code under test)."""


DTYPES = {
    "FLOAT32": np.float32, "FLOAT16": np.float16, "FLOAT64": np.float64, "UINT8": np.uint8,
    "UINT16": np.uint16, "UINT32": np.uint32, "UINT64": np.uint64, "INT8": np.int8,
    "INT16": np.int16, "INT32": np.int32, "INT64": np.int64,
}


def enum_word(value: Any, prefix: str) -> str:
    if not isinstance(value, str):
        raise Skip("enum not a string")
    return value[len(prefix):] if value.startswith(prefix) else value


def oracle_dtype(value: Any) -> np.dtype:
    word = enum_word(value, "DML_TENSOR_DATA_TYPE_")
    if word not in DTYPES:
        raise Skip(f"type {word}")
    return np.dtype(DTYPES[word])


class Tensor:
    def __init__(self, spec: Any) -> None:
        if not isinstance(spec, dict):
            raise Skip("tensor not an object")
        if "Desc" in spec:
            spec = spec["Desc"]
        self.dtype = oracle_dtype(spec["DataType"])
        self.sizes = [int(s) for s in spec["Sizes"]]
        strides = spec.get("Strides") or None
        if strides is None:
            strides = [1] * len(self.sizes)
            for i in range(len(self.sizes) - 2, -1, -1):
                strides[i] = strides[i + 1] * self.sizes[i + 1]
        self.strides = [int(s) for s in strides]
        flags = spec.get("Flags", "NONE")
        flags = flags if isinstance(flags, list) else [flags]
        self.owned = any(enum_word(f, "DML_TENSOR_FLAG_") == "OWNED_BY_DML" for f in flags)

    def view(self, buffer: bytearray, offset: int) -> np.ndarray:
        base = np.frombuffer(buffer, dtype=np.uint8, offset=offset)
        last = sum((n - 1) * s for n, s in zip(self.sizes, self.strides))
        needed = (last + 1) * self.dtype.itemsize
        if needed > base.size:
            raise Skip("view past the buffer")
        flat = base[:needed].view(self.dtype)
        return np.lib.stride_tricks.as_strided(
            flat, self.sizes, [s * self.dtype.itemsize for s in self.strides])

    @property
    def writes_once(self) -> bool:
        """Whether no two output elements share a byte (else the order of writes decides)."""
        dims = sorted((s * self.dtype.itemsize, n) for n, s in zip(self.sizes, self.strides)
                      if n > 1)
        reach = self.dtype.itemsize
        for stride, n in dims:
            if stride < reach:
                return False
            reach = stride * (n - 1) + reach
        return True


def pad_source(mode: str, i: np.ndarray, n: int) -> np.ndarray:
    """DML_SPEC.md §3's table: the input index each padded output index reads."""
    if mode == "EDGE":
        return np.clip(i, 0, n - 1)
    if mode == "REFLECTION":
        if n == 1:
            return np.zeros_like(i)
        p = 2 * (n - 1)
        m = np.mod(i, p)
        return np.where(m < n, m, p - m)
    if mode == "SYMMETRIC":
        p = 2 * n
        m = np.mod(i, p)
        return np.where(m < n, m, p - 1 - m)
    if mode == "WRAP":
        return np.mod(i, n)
    raise Skip(f"mode {mode}")


def fill_value(value: Any, dtype: np.dtype, typed: Any) -> Any:
    """PADDING's FLOAT (a C float) or PADDING1's scalar union, as an element of ``dtype``."""
    if typed is not None and oracle_dtype(typed) != dtype:
        raise Skip("value type differs")
    if isinstance(value, dict):
        if len(value) != 1:
            raise Skip("union object")
        ((member, inner),) = value.items()
        if dtype == np.float16 and member == "UInt16":
            return np.array(inner, np.uint16).view(np.float16)
        if isinstance(inner, str):
            inner = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}[inner.lower()]
        value = inner
    if isinstance(value, str):
        value = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}[value.lower()]
    if typed is None:  # PADDING: a C FLOAT, then converted to the element type
        value = float(np.float32(value))
    if dtype.kind == "f":
        if dtype == np.float16 and typed is not None:
            return np.float16(np.float32(value))
        return np.array(value, dtype=dtype)
    if isinstance(value, float):
        if not math.isfinite(value) or value != value:
            raise Skip("non-finite value for an integer")
        value = int(value)  # truncation (10.6 -> 10)
    info = np.iinfo(dtype)
    if not info.min <= value <= info.max:
        raise Skip("value outside the type")
    return np.array(value, dtype=dtype)


def oracle_op(kind: str, desc: dict[str, Any], inputs: list[np.ndarray],
              out_sizes: list[int], out_dtype: np.dtype) -> np.ndarray:
    """The operator on NumPy arrays (DML_SPEC.md §3)."""
    if kind == "SLICE":
        (x,) = inputs
        index = tuple(slice(o, o + s * (n - 1) + 1, s) for o, n, s in
                      zip(desc["Offsets"], desc["Sizes"], desc["Strides"]))
        return x[index]
    if kind == "SLICE1":
        (x,) = inputs
        axes = []
        for o, w, s, n in zip(desc["InputWindowOffsets"], desc["InputWindowSizes"],
                              desc["InputWindowStrides"], out_sizes):
            start = o + (w - 1 if s < 0 else 0)
            axes.append(start + s * np.arange(n))
        return x[np.ix_(*axes)]
    if kind == "JOIN":
        return np.concatenate(inputs, axis=desc["Axis"])
    if kind in ("PADDING", "PADDING1"):
        (x,) = inputs
        mode = enum_word(desc["PaddingMode"], "DML_PADDING_MODE_")
        starts = desc["StartPadding"]
        axes = [np.arange(n) - s for n, s in zip(out_sizes, starts)]
        if mode == "CONSTANT":
            value = fill_value(desc["PaddingValue"], out_dtype,
                               desc.get("PaddingValueDataType") if kind == "PADDING1" else None)
            out = np.full(out_sizes, value, dtype=out_dtype)
            inside = tuple(slice(s, s + n) for s, n in zip(starts, x.shape))
            out[inside] = x
            return out
        return x[np.ix_(*[pad_source(mode, a, n) for a, n in zip(axes, x.shape)])]
    raise Skip(f"operator {kind}")


def operator_parts(d: Any) -> tuple[str, dict[str, Any]]:
    if not isinstance(d, dict):
        raise Skip("dispatchable")
    kind = enum_word(d.get("type", d.get("Type")), "DML_OPERATOR_")
    body = d.get("desc", d.get("Desc", d))
    return kind, body


def tensors_of(kind: str, body: dict[str, Any]) -> tuple[list[tuple[str, Any]], Any]:
    """[(bind point, tensor spec)] of the inputs, and the output's spec."""
    if kind == "JOIN":
        return [("InputTensors", t) for t in body["InputTensors"]], body["OutputTensor"]
    return [("InputTensor", body["InputTensor"])], body["OutputTensor"]


class Pairs(dict):  # type: ignore[type-arg]
    """A JSON object as DxDispatch reads one (docs/DECISIONS.md): a field given twice, its
    first value (RapidJSON's FindMember); in ``last``, each name's last (its maps of resources,
    dispatchables and bindings are filled member by member)."""

    def __init__(self, pairs: list[tuple[str, Any]]) -> None:
        super().__init__()
        for key, value in pairs:
            self.setdefault(key, value)
        self.last = dict(pairs)


def last(value: Any) -> Any:
    return value.last if isinstance(value, Pairs) else value


def oracle_model(doc: dict[str, Any]) -> dict[str, np.ndarray]:
    """Every resource's values after the commands, as DxDispatch computes them."""
    buffers: dict[str, bytearray] = {}
    types: dict[str, np.dtype] = {}
    counts: dict[str, int] = {}
    for name, spec in last(doc["resources"]).items():
        dtype = oracle_dtype(spec["initialValuesDataType"])
        values = initial_values(spec["initialValues"], dtype)
        offset = spec.get("initialValuesOffsetInBytes", 0)
        size = spec.get("sizeInBytes", (values.nbytes + 3) // 4 * 4)
        if size > 1 << 28:
            raise Skip("large")
        buf = bytearray(size)
        buf[offset: offset + values.nbytes] = values.tobytes()
        buffers[name], types[name], counts[name] = buf, dtype, len(values)
    snapshot = {name: bytearray(b) for name, b in buffers.items()}

    def located(source: Any, bufs: dict[str, bytearray]) -> tuple[bytearray, int]:
        if isinstance(source, list):
            (source,) = source
        if isinstance(source, str):
            source = {"name": source}
        name = source["name"]
        size = source.get("elementSizeInBytes", 0) or types[name].itemsize
        return bufs[name], source.get("elementOffset", 0) * size

    for command in doc["commands"]:
        if command["type"].lower() != "dispatch":
            continue
        d = last(doc["dispatchables"])[command["dispatchable"]]
        kind, body = operator_parts(d)
        in_specs, out_spec = tensors_of(kind, body)
        binds = last(command.get("bindings", {}))
        init = last(d.get("bindings", {}))
        inputs = []
        for i, (point, spec) in enumerate(in_specs):
            tensor = Tensor(spec)
            source_map, bufs = (init, snapshot) if tensor.owned else (binds, buffers)
            source = source_map[point]
            if kind == "JOIN":
                source = source[i] if isinstance(source, list) else source
            buf, off = located(source, bufs)
            inputs.append(tensor.view(buf, off).copy())
        out = Tensor(out_spec)
        if not out.writes_once:
            raise Skip("output elements share bytes")
        result = oracle_op(kind, body, inputs, out.sizes, out.dtype)
        if list(result.shape) != out.sizes:
            raise Skip("shape")
        buf, off = located(binds["OutputTensor"], buffers)
        out.view(buf, off)[...] = result.astype(out.dtype)  # as_strided is writable here
    return {name: np.frombuffer(buffers[name], types[name], counts[name]) for name in buffers}


def initial_values(spec: Any, dtype: np.dtype) -> np.ndarray:
    def one(v: Any) -> Any:
        if isinstance(v, str):
            v = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}[v.lower()]
        if dtype == np.float16:
            return np.float16(np.float32(v))
        return v

    if isinstance(spec, list):
        return np.array([one(v) for v in spec], dtype=dtype)
    count = spec["valueCount"]
    if count > 1 << 22:
        raise Skip("large")
    if "value" in spec:
        return np.full(count, one(spec["value"]), dtype=dtype)
    start, delta = one(spec["valueStart"]), one(spec["valueDelta"])
    if dtype.kind in "iu":  # accumulated in the type: wraps modulo 2^bits
        bits = dtype.itemsize * 8
        wrapped = [(start + k * delta) % (1 << bits) for k in range(count)]
        return np.array(wrapped, dtype=np.uint64 if bits == 64 else np.int64).astype(
            dtype.str.replace("i", "u")).view(dtype)
    if count > 100000:
        raise Skip("long float sequence")
    out = np.empty(count, dtype=dtype)
    acc = dtype.type(start)
    step = dtype.type(delta)
    with np.errstate(over="ignore", invalid="ignore"):
        for k in range(count):
            out[k] = acc
            acc = dtype.type(acc + step)
    return out


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


# ------------------------------------------------------------------------------ running

#: Python's own words, which no message of dmlgraph's should be.
PYTHON_WORDS = re.compile(
    r"object is not|not subscriptable|has no attribute|unhashable|NoneType|object of type|"
    r"invalid literal|positional argument|list index out of range|KeyError|"
    r"not supported between|can't multiply|cannot convert|unsupported operand|"
    r"^\S+$|'dict'|'list'|'str'|'int'|'float'|'bool'"
)


def run_dx(data: bytes, level: str, work: Path, strict: bool) -> dict[str, Any]:
    """In the child: the command line on the mutant, and the oracle where it ran."""
    from dmlgraph.cli import main

    path = work / "model.json"
    path.write_bytes(data)
    out = work / "out.npz"
    if out.exists():
        out.unlink()
    stdout, stderr = work / "stdout", work / "stderr"
    code = _captured(lambda: main(["dxdispatch", str(path), "--feature-level", level,
                                   "-o", str(out)]), stdout, stderr)
    err = stderr.read_text(errors="replace")
    result: dict[str, Any] = {"code": code, "stderr": err[:2000] + err[-2000:][2000 - len(err):],
                              "lines": err.count("\n")}
    if code == 0 and strict:
        try:
            expected = oracle_model(json.loads(data, object_pairs_hook=Pairs))
        except (Skip, KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
            result["oracle"] = f"skip: {type(exc).__name__} {exc}"[:200]
            return result
        got = dict(np.load(out))
        result["oracle"] = "compared"
        for name, want in expected.items():
            have = got.get(name)
            if have is None:
                result["wrong"] = f"resource {name!r} not in the .npz ({sorted(got)[:5]})"
                break
            if not same_bits(np.asarray(have).reshape(-1), want.reshape(-1)):
                result["wrong"] = (f"resource {name!r}: dmlgraph {have.reshape(-1)[:12]} "
                                   f"oracle {want.reshape(-1)[:12]}")
                break
    return result


def run_desc(data: bytes, level: str, seed: int) -> dict[str, Any]:
    """In the child: each node's descriptor through operator_from_json, validate and the
    executor on random flat buffers, against the oracle."""
    from backends.numpy import execute_operator
    from dmlgraph.dml.jsonio import operator_from_json, operator_to_json
    from dmlgraph.errors import DmlgraphError

    try:
        doc = json.loads(data)
        nodes = [n["dml"] for n in doc["nodes"] if isinstance(n, dict) and "dml" in n]
    except (ValueError, TypeError, KeyError, RecursionError):  # the API reads dicts
        return {"code": 0, "oracle": "skip: not JSON"}
    rng = np.random.default_rng(seed)
    messages = []
    compared = 0
    for dml in nodes:
        try:
            desc = operator_from_json(dml)
            desc.validate(level)
        except DmlgraphError as exc:
            messages.append(str(exc))
            continue
        back = operator_from_json(json.loads(json.dumps(operator_to_json(desc))))
        if back != desc:
            return {"code": 0, "wrong": f"round trip changed {desc!r} to {back!r}"}
        try:
            kind, body = operator_parts(dml)
            in_specs, out_spec = tensors_of(kind, body)
            ins = [Tensor(s) for _, s in in_specs]
            out = Tensor(out_spec)
        except (Skip, KeyError, TypeError, ValueError, AttributeError):
            continue
        flats = []
        for t, (_, spec) in zip(ins, in_specs):
            count = _span(t)
            if count > 1 << 24:
                break
            raw = rng.integers(0, 256, count * t.dtype.itemsize, dtype=np.uint8)
            flats.append(raw.view(t.dtype))
        else:
            if _span(out) > 1 << 24 or not out.writes_once:
                continue
            target = np.zeros(_span(out), out.dtype)
            try:
                execute_operator(desc, flats, level, outputs=[target])
            except DmlgraphError as exc:
                messages.append(str(exc))
                continue
            try:
                want = oracle_op(kind, body, [t.view(bytearray(f.tobytes()), 0).copy()
                                              for t, f in zip(ins, flats)], out.sizes, out.dtype)
            except (Skip, KeyError, TypeError, ValueError, IndexError):
                continue
            expected = np.zeros(_span(out), out.dtype)
            buf = bytearray(expected.tobytes())
            out.view(buf, 0)[...] = want
            compared += 1
            if not same_bits(np.frombuffer(buf, out.dtype), target):
                return {"code": 0, "wrong": f"{kind}: executor differs from the oracle"}
    return {"code": 0, "messages": messages, "oracle": f"compared {compared}"}


def _span(t: Tensor) -> int:
    return sum((n - 1) * s for n, s in zip(t.sizes, t.strides)) + 1


def _captured(call: Callable[[], int], stdout: Path, stderr: Path) -> int:
    """Run ``call`` with its output going to files (fds 1 and 2 too, and sys.stdout and
    sys.stderr, which pytest replaces), UTF-8 as a terminal's; its exit code (1 for an
    exception)."""
    sys.stdout.flush()
    sys.stderr.flush()
    with open(stdout, "w", encoding="utf-8") as out, open(stderr, "w", encoding="utf-8") as err:
        os.dup2(out.fileno(), 1)
        os.dup2(err.fileno(), 2)
        sys.stdout, sys.stderr = out, err
        try:
            return call()
        except SystemExit as exc:
            return exc.code if isinstance(exc.code, int) else 1
        except BaseException:  # noqa: BLE001  (the finding is the traceback)
            traceback.print_exc()
            return 1
        finally:
            sys.stdout.flush()
            sys.stderr.flush()


def run_case(kind: str, data: bytes, level: str, strict: bool, seed: int,
             work: Path) -> dict[str, Any]:
    """Fork a child that runs one mutant; its result, exit status, time and peak memory."""
    result_path = work / "result.json"
    if result_path.exists():
        result_path.unlink()
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:  # the child
        code = 0
        try:
            resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
            if kind == "dx":
                result = run_dx(data, level, work, strict)
            else:
                try:
                    result = run_desc(data, level, seed)
                except Exception as exc:  # noqa: BLE001
                    from dmlgraph.errors import DmlgraphError
                    result = {"code": 2 if isinstance(exc, DmlgraphError) else 1,
                              "stderr": traceback.format_exc()[-4000:]}
            result_path.write_text(json.dumps(result))
        except BaseException:  # noqa: BLE001
            code = 3
        os._exit(code)
    status, usage = 0, None
    while True:
        got, status, usage = os.wait4(pid, os.WNOHANG)
        if got:
            break
        if time.monotonic() - start > CASE_SECONDS:
            os.kill(pid, 9)
            _, status, usage = os.wait4(pid, 0)
            return {"code": None, "hang": True, "seconds": time.monotonic() - start}
        time.sleep(0.002)
    seconds = time.monotonic() - start
    if os.WIFSIGNALED(status) or os.WEXITSTATUS(status) != 0 or not result_path.exists():
        return {"code": None, "crash": f"status {status}", "seconds": seconds,
                "rss_kb": usage.ru_maxrss}
    result = json.loads(result_path.read_text())
    result["seconds"] = seconds
    result["rss_kb"] = usage.ru_maxrss
    return result


def findings_of(result: dict[str, Any], kind: str) -> list[str]:
    out = []
    if result.get("hang"):
        out.append("hang (> 10 s)")
    if result.get("crash"):
        out.append(f"child died: {result['crash']}")
    if result.get("rss_kb", 0) > RSS_LIMIT_KB + result.get("declared", 0) // 1024:
        out.append(f"memory: {result['rss_kb'] // 1024} MB resident")
    code = result.get("code")
    err = result.get("stderr", "")
    if code not in (0, 2, None):
        out.append(f"exit {code}: {err.strip().splitlines()[-1] if err.strip() else ''}")
    if "Traceback" in err:
        out.append("traceback")
    if result.get("wrong"):
        out.append(f"wrong: {result['wrong']}")
    if code == 2 and kind == "dx":
        message = err.strip()
        if result.get("lines") != 1 or not message.startswith("dmlgraph: error: "):
            out.append(f"not one line: {message[:300]}")
        body = message.removeprefix("dmlgraph: error: ")
        text = body.split(": ", 1)[-1]
        if PYTHON_WORDS.search(text) or len(text) < 12:
            out.append(f"unclear message: {body[:300]}")
        if len(body) > 3000 and not re.search(r"(.)\1{999}", body):  # a name of the model's
            out.append(f"message of {len(body)} characters: {body[:300]}")
        if "out of memory" in body and "out of memory allocating" not in body:
            out.append(f"out of memory: {body[:300]}")
    for message in result.get("messages", []):
        if message.startswith("operator_from_json: dispatchable = "):  # the API's own words
            continue
        if len(message) > 3000:
            out.append(f"message of {len(message)} characters: {message[:300]}")
        if PYTHON_WORDS.search(message.split(": ", 1)[-1]) or len(message) < 12:
            out.append(f"unclear message: {message[:300]}")
    return out


def declared_bytes(data: bytes) -> int:
    """The bytes a DxDispatch model's resources ask for (sizeInBytes, and a valueCount's values
    twice over, at 8 bytes each): memory it may take rightly. Read with comments, as
    dmlgraph reads it (an estimate, not an oracle)."""
    from dmlgraph.dxdispatch import parse_json

    try:
        resources = parse_json(data.decode())["resources"]
        total = 0
        for spec in resources.values():
            size = spec.get("sizeInBytes", 0)
            init = spec.get("initialValues")
            count = init.get("valueCount", 0) if isinstance(init, dict) else 0
            total += (size if type(size) is int else 0) + (count if type(count) is int else 0) * 16
        return max(total, 0)
    except (ValueError, TypeError, KeyError, AttributeError, RecursionError):
        return 0


def normalized(message: str) -> str:
    """A message with its numbers and quoted names blanked, to count distinct ones."""
    message = re.sub(r"'[^']*'", "'_'", message)
    message = re.sub(r"\d+", "N", message)
    return message[:160]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, default=5.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-cases", type=int, default=0, help="stop after this many (0: none)")
    parser.add_argument("--quick", action="store_true", help="the two examples as corpus")
    parser.add_argument("--kind", choices=("dx", "desc", "both"), default="both")
    args = parser.parse_args()
    sys.stdout.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]  # surrogates

    # everything a child needs, imported before the first fork
    import backends.numpy  # noqa: F401
    import dmlgraph.cli  # noqa: F401
    import dmlgraph.dxdispatch  # noqa: F401
    import dmlgraph.tensorio  # noqa: F401

    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="json_fuzz_") as tmp:
        work = Path(tmp)
        corpus = build_corpus(work, args.quick)
        if args.kind != "both":
            corpus = [e for e in corpus if e["kind"] == args.kind]
        print(f"corpus: {len(corpus)} documents "
              f"({collections.Counter(e['kind'] for e in corpus)})", flush=True)
        deadline = time.monotonic() + args.minutes * 60
        counts: collections.Counter[str] = collections.Counter()
        messages: collections.Counter[str] = collections.Counter()
        examples: dict[str, str] = {}
        FINDINGS.mkdir(exist_ok=True)
        case = 0
        while time.monotonic() < deadline and (not args.max_cases or case < args.max_cases):
            entry = rng.choice(corpus)
            try:
                data, level, strict = make_mutant(entry, rng)
            except (ValueError, IndexError, KeyError, TypeError, AttributeError):
                counts["mutation not made"] += 1
                continue
            result = run_case(entry["kind"], data, level, strict, case, work)
            result["declared"] = declared_bytes(data)
            counts["run"] += 1
            counts[f"exit {result.get('code')}"] += 1
            oracle = result.get("oracle", "")
            counts["oracle compared" if oracle.startswith("compared") else
                   ("oracle skipped" if oracle else "no oracle")] += 1
            if result.get("code") == 2 and entry["kind"] == "dx":
                key = normalized(result.get("stderr", "").strip().split(": ", 2)[-1])
                messages[key] += 1
                examples.setdefault(key, result.get("stderr", "").strip()[:400])
            for message in result.get("messages", []):
                key = normalized(message)
                messages[key] += 1
                examples.setdefault(key, message[:400])
            found = findings_of(result, entry["kind"])
            if found:
                counts["findings"] += 1
                stem = FINDINGS / f"json_{args.seed}_{case}"
                stem.with_suffix(".json").write_bytes(data)
                stem.with_suffix(".txt").write_text(errors="backslashreplace", data=
                    f"source {entry['name']} level {level} kind {entry['kind']}\n"
                    + "\n".join(found) + "\n\n" + result.get("stderr", ""))
                print(f"case {case} ({entry['name']}, {level}): {found[0][:300]}", flush=True)
            case += 1
        print(dict(counts), flush=True)
        with open(FINDINGS / f"json_{args.seed}_messages.txt", "w",
                  errors="backslashreplace") as f:
            for key, n in messages.most_common():
                f.write(f"{n:6d}  {examples[key]}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
