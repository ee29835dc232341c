"""The NumPy backend's compiled plan: in-place JOINs, memory planning, output binding, the
output pool and threaded copies. Oracles: onnxruntime on the original ONNX model, NumPy."""

from __future__ import annotations

import dataclasses
import os
from contextlib import contextmanager
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper

from backends import BackendError
from backends.numpy import NumpyBackend
from backends.numpy import threads as copy_threads
from backends.numpy.memory import Lifetime, assign_buffers
from dmlgraph.dml.enums import FeatureLevel
from dmlgraph import load
from lowering import lower
from oracles import same_bits

#: The plan's two ways of copying: NumPy (``np.copyto``, Python copy threads) and the native
#: extension (lockstep groups, streaming stores, native copy threads), where it is built.
COPIERS = ["numpy", pytest.param("native", marks=pytest.mark.skipif(
    copy_threads.Program is None, reason="the native copier is not built here"))]


@contextmanager
def copying(copier: str, parallel_bytes: int | None = None, block_bytes: int | None = None,
            piece_bytes: int | None = None):
    """Plans compiled inside copy with ``copier``; the thresholds as given, restored after."""
    old = (copy_threads.native, copy_threads.PARALLEL_BYTES, copy_threads.BLOCK_BYTES,
           copy_threads.PIECE_BYTES)
    copy_threads.native = copier == "native"
    if parallel_bytes is not None:
        copy_threads.PARALLEL_BYTES = parallel_bytes
    if block_bytes is not None:
        copy_threads.BLOCK_BYTES = block_bytes
    if piece_bytes is not None:
        copy_threads.PIECE_BYTES = piece_bytes
    try:
        yield
    finally:
        (copy_threads.native, copy_threads.PARALLEL_BYTES, copy_threads.BLOCK_BYTES,
         copy_threads.PIECE_BYTES) = old


#: A DML-only plan runs as one native call (``Replay``) where it is built, else through
#: Python; outputs, pools and errors must not depend on which.
PATHS = ["python", pytest.param("replay", marks=pytest.mark.skipif(
    copy_threads.Replay is None, reason="the native copier is not built here"))]


@pytest.fixture(params=PATHS)
def path(request, monkeypatch) -> str:
    """Plans compiled in the test replay natively or run through Python, as the param says."""
    if request.param == "python":
        import backends.numpy.plan as plan_module

        monkeypatch.setattr(plan_module, "Replay", None)
    return request.param


def moves_of(items: list) -> list:
    """The moves of a thread's list, lockstep groups ``(lead, moves)`` opened."""
    return [m for item in items for m in (item[1] if isinstance(item[0], int) else [item])]

ONNX_TYPES = {np.float32: TensorProto.FLOAT, np.int64: TensorProto.INT64, np.uint8: TensorProto.UINT8}


def _model(nodes, inputs, outputs, initializers=()) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "plan", inputs, outputs, list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    model.ir_version = 10
    return model


def _ints(name: str, values: list[int]) -> onnx.TensorProto:
    return helper.make_tensor(name, TensorProto.INT64, [len(values)], values)


def _info(name: str, dtype, shape) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, ONNX_TYPES[dtype], list(shape))


def _ort(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def _halves_concat(rows: int = 4, cols: int = 6) -> onnx.ModelProto:
    """x -> two Slices (top, bottom rows) -> Concat(bottom, top): both JOIN inputs in place."""
    half = rows // 2
    return _model(
        [
            helper.make_node("Slice", ["x", "s0", "e0", "ax"], ["top"]),
            helper.make_node("Slice", ["x", "s1", "e1", "ax"], ["bottom"]),
            helper.make_node("Concat", ["bottom", "top"], ["y"], axis=0),
        ],
        [_info("x", np.float32, (rows, cols))],
        [_info("y", np.float32, (rows, cols))],
        [_ints("s0", [0]), _ints("e0", [half]), _ints("s1", [half]), _ints("e1", [rows]),
         _ints("ax", [0])],
    )


# ------------------------------------------------------------------------------ in place
def test_join_inputs_made_by_dml_nodes_are_written_in_place() -> None:
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    lowered = lower(load(_halves_concat()), "6_4")
    backend = NumpyBackend()
    (y,) = backend.run(lowered, {"x": x}).values()
    assert same_bits(y, np.concatenate([x[2:], x[:2]]))
    summary = backend.plan(lowered).summary
    assert summary.joined_in_place == 2
    assert summary.moves == 2  # the two slices; the JOIN moves nothing
    assert summary.arena_buffers == 0  # both slices live inside the output


def test_nested_joins_and_int64_pairs_in_place() -> None:
    """Concat(Concat(slice, pad), slice) of int64: the inner JOIN and all three producers are
    homed in the outer output, through UINT32-pair views."""
    x = np.arange(-12, 12, dtype=np.int64).reshape(4, 6)
    model = _model(
        [
            helper.make_node("Slice", ["x", "s", "e", "ax"], ["a"]),
            helper.make_node("Pad", ["x", "pads", "v"], ["b"]),
            helper.make_node("Concat", ["a", "b"], ["ab"], axis=1),
            helper.make_node("Slice", ["x", "s2", "e2", "ax"], ["c"]),
            helper.make_node("Concat", ["ab", "c"], ["y"], axis=1),
        ],
        [_info("x", np.int64, (4, 6))],
        [_info("y", np.int64, (4, 4 + 8 + 3))],
        [_ints("s", [1]), _ints("e", [5]), _ints("s2", [0]), _ints("e2", [3]), _ints("ax", [1]),
         _ints("pads", [0, 1, 0, 1]),
         helper.make_tensor("v", TensorProto.INT64, [], [-(2**40) - 3])],
    )
    lowered = lower(load(model), "6_4")
    backend = NumpyBackend()
    (y,) = backend.run(lowered, {"x": x}).values()
    (expected,) = _ort(model, {"x": x})
    assert same_bits(y, expected)
    assert backend.plan(lowered).summary.joined_in_place == 4


@pytest.mark.parametrize(
    "case, in_place", [("graph input", 1), ("same tensor twice", 0), ("also an output", 0)]
)
def test_join_inputs_that_must_stay_copies(case: str, in_place: int) -> None:
    """A graph input is the caller's memory; a tensor read twice or returned needs a home of
    its own: those JOIN inputs are copied (the slice beside the graph input is in place)."""
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    slice_node = helper.make_node("Slice", ["x", "s", "e", "ax"], ["a"])
    inits = [_ints("s", [0]), _ints("e", [2]), _ints("ax", [0])]
    a_info = _info("a", np.float32, (2, 6))
    if case == "graph input":
        nodes, rows, outputs = [slice_node, helper.make_node("Concat", ["a", "x"], ["y"], axis=0)], 6, []
    elif case == "same tensor twice":
        nodes, rows, outputs = [slice_node, helper.make_node("Concat", ["a", "a"], ["y"], axis=0)], 4, []
    else:
        nodes, rows, outputs = [slice_node, helper.make_node("Concat", ["a", "a"], ["y"], axis=0)], 4, [a_info]
    model = _model(nodes, [_info("x", np.float32, (4, 6))],
                   [_info("y", np.float32, (rows, 6)), *outputs], inits)
    lowered = lower(load(model), "6_4")
    backend = NumpyBackend()
    results = backend.run(lowered, {"x": x})
    for actual, expected in zip(results.values(), _ort(model, {"x": x})):
        assert same_bits(actual, expected)
    assert backend.plan(lowered).summary.joined_in_place == in_place


# ------------------------------------------------------------------------------ memory
def test_a_chain_reuses_two_buffers() -> None:
    """Pad then Slice back, 20 times: 39 intermediate tensors, at most 3 live at once."""
    nodes, current = [], "x"
    for i in range(20):
        nodes.append(helper.make_node("Pad", [current, "pads"], [f"p{i}"], mode="edge"))
        nodes.append(helper.make_node("Slice", [f"p{i}", "s", "e"], [f"s{i}"]))
        current = f"s{i}"
    model = _model(nodes, [_info("x", np.float32, (8, 8))], [_info(current, np.float32, (8, 8))],
                   [_ints("pads", [1, 1, 1, 1]), _ints("s", [1, 0]), _ints("e", [9, 8])])
    lowered = lower(load(model), "6_4")
    backend = NumpyBackend()
    x = np.random.default_rng(1).standard_normal((8, 8)).astype(np.float32)
    (y,) = backend.run(lowered, {"x": x}).values()
    (expected,) = _ort(model, {"x": x})
    assert same_bits(y, expected)
    summary = backend.plan(lowered).summary
    assert summary.arena_buffers <= 3
    assert summary.arena_bytes * 10 < summary.unplanned_bytes


@given(st.lists(st.tuples(st.integers(0, 30), st.integers(0, 30), st.integers(1, 100)),
                min_size=1, max_size=30))
def test_buffer_assignment_never_overlaps_live_tensors(spans) -> None:
    lifetimes = [Lifetime(min(a, b), max(a, b), n) for a, b, n in spans]
    assigned, sizes = assign_buffers(lifetimes)
    for i, first in enumerate(lifetimes):
        assert sizes[assigned[i]] >= first.nbytes
        for j in range(i):
            second = lifetimes[j]
            overlap = first.start <= second.end and second.start <= first.end
            assert not (overlap and assigned[i] == assigned[j])


# ------------------------------------------------------------------------------ outputs
def test_bound_outputs_are_written_in_place(path: str) -> None:
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    lowered = lower(load(_halves_concat()), "6_4")
    out = np.full((4, 6), -1, np.float32)
    result = NumpyBackend().run(lowered, {"x": x}, outputs={"y": out})
    assert result["y"] is out
    assert same_bits(out, np.concatenate([x[2:], x[:2]]))


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda x: {"y": np.zeros((4, 6), np.float64)}, "dtype float64"),
        (lambda x: {"y": np.zeros((6, 4), np.float32)}, r"shape \[6, 4\]"),
        (lambda x: {"y": np.zeros((6, 4), np.float32).T}, "not C-contiguous"),
        (lambda x: {"y": np.zeros((4, 6), np.float32).view()}, None),
        (lambda x: {"z": np.zeros((4, 6), np.float32)}, "no output named 'z'"),
        (lambda x: {"y": x}, "shares memory with input 'x'"),
    ],
)
def test_bad_bound_outputs_are_refused(make, message, path: str) -> None:
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    lowered = lower(load(_halves_concat()), "6_4")
    outputs = make(x)
    if message is None:  # a read-only array
        outputs["y"].flags.writeable = False
        message = "read-only"
    before = x.copy()
    with pytest.raises(BackendError, match=message):
        NumpyBackend().run(lowered, {"x": x}, outputs=outputs)
    assert same_bits(x, before)


@pytest.mark.parametrize("made_by", ["dml", "fallback"])
def test_a_masked_array_that_hides_elements_is_refused_as_a_bound_output(
    made_by: str, path: str
) -> None:
    """A masked array bound to an output took the results into its data under its mask: the
    array handed back showed ``--`` and its sum skipped the hidden results, with no error.
    One masking nothing is an array like any other."""
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    model = _halves_concat()
    if made_by == "fallback":  # the output made by onnxruntime, copied into the array
        model.graph.node.append(helper.make_node("Relu", ["y"], ["r"]))
        model.graph.output[0].name = "r"
    name = model.graph.output[0].name
    lowered = lower(load(model), "6_4")
    (want,) = _ort(model, {"x": x})
    hiding = np.ma.masked_array(np.zeros((4, 6), np.float32), mask=np.eye(4, 6, dtype=bool))
    with pytest.raises(BackendError, match=rf"bound output {name!r} cannot take the result: "
                       r"a masked array whose mask hides 4 of its elements"):
        NumpyBackend().run(lowered, {"x": x}, outputs={name: hiding})
    for mask in (np.ma.nomask, np.zeros((4, 6), bool)):
        plain = np.ma.masked_array(np.zeros((4, 6), np.float32), mask=mask)
        got = NumpyBackend().run(lowered, {"x": x}, outputs={name: plain})[name]
        assert got is plain and same_bits(plain.data, want) and plain.sum() == want.sum()


@pytest.mark.parametrize("fallback", ["onnxruntime", "reference"])
def test_outputs_of_run_time_sizes_take_bound_arrays_run_by_run(fallback: str) -> None:
    """An output whose sizes arrive at run time (a Slice of run-time ends, a Concat of a
    dynamic batch) takes a bound array of the run's shape, as onnxruntime's IOBinding takes
    a pre-allocated output of a dynamic shape; a run making another shape than the array's
    is refused naming both, and so is an array of another rank or dtype. Binding such an
    output was refused outright ("no static dtype and shape to bind an array to")."""
    model = _model(
        [helper.make_node("Slice", ["x", "st", "e", "ax"], ["y"], name="cut"),
         helper.make_node("Concat", ["x", "x"], ["z"], axis=1, name="cat")],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4]),
         _info("e", np.int64, (1,))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("z", TensorProto.FLOAT, None)],
        [_ints("st", [1]), _ints("ax", [0])],
    )
    lowered = lower(load(model), "6_4")
    backend = NumpyBackend(fallback)
    for rows, end in ((5, 3), (3, 100), (6, 1), (5, 3)):
        feeds = {"x": np.arange(rows * 4, dtype=np.float32).reshape(rows, 4),
                 "e": np.array([end], np.int64)}
        want = dict(zip(("y", "z"), _ort(model, feeds)))
        bound = {name: np.full(value.shape, np.nan, np.float32) for name, value in want.items()}
        got = backend.run(lowered, feeds, outputs=bound)
        for name, value in want.items():
            assert got[name] is bound[name] and same_bits(bound[name], value)
    feeds = {"x": np.ones((5, 4), np.float32), "e": np.array([3], np.int64)}
    with pytest.raises(BackendError, match=r"output 'y' is float32\[2, 4\] in this run; the "
                       r"array bound to it is float32\[3, 4\]"):
        backend.run(lowered, feeds, outputs={"y": np.zeros((3, 4), np.float32)})
    with pytest.raises(BackendError, match=r"bound output 'y' cannot take the result: shape "
                       r"\[2, 4, 1\]"):
        backend.run(lowered, feeds, outputs={"y": np.zeros((2, 4, 1), np.float32)})
    with pytest.raises(BackendError, match="dtype float64"):
        backend.run(lowered, feeds, outputs={"z": np.zeros((5, 8), np.float64)})


@pytest.mark.parametrize("second", [slice(4, 22), slice(0, 18)])
def test_bound_outputs_sharing_memory_are_refused(second: slice, path: str) -> None:
    """Two bound outputs over one buffer: each result would overwrite part of the other (the
    native replay checked outputs against inputs only, and wrote y's values over with z's)."""
    model = _model(
        [helper.make_node("Slice", ["x", "s0", "e0", "ax"], ["y"]),
         helper.make_node("Concat", ["x", "x"], ["z"], axis=1)],
        [_info("x", np.float32, (3, 3))],
        [_info("y", np.float32, (2, 3)), _info("z", np.float32, (3, 6))],
        [_ints("s0", [1]), _ints("e0", [3]), _ints("ax", [0])],
    )
    lowered = lower(load(model), "6_4")
    x = np.arange(9, dtype=np.float32).reshape(3, 3)
    buffer = np.zeros(30, np.float32)
    outputs = {"y": buffer[:6].reshape(2, 3), "z": buffer[second].reshape(3, 6)}
    with pytest.raises(BackendError, match="bound outputs 'y' and 'z' share memory"):
        NumpyBackend().run(lowered, {"x": x}, outputs=outputs)
    apart = {"y": buffer[:6].reshape(2, 3), "z": buffer[6:24].reshape(3, 6)}
    NumpyBackend().run(lowered, {"x": x}, outputs=apart)
    for name, expected in zip(("y", "z"), _ort(model, {"x": x})):
        assert same_bits(apart[name], expected)


def test_a_bound_output_between_a_strided_input_s_elements_runs(path: str) -> None:
    """An input of every third float of a buffer and an output bound to floats 1 and 2 share
    no element (``np.shares_memory``): the run was refused, saying they share memory, by
    their bounds alone. An output over one of the input's elements still is refused."""
    model = _model(
        [helper.make_node("Slice", ["x", "s0", "e0", "ax"], ["y"])],
        [_info("x", np.float32, (6,))], [_info("y", np.float32, (2,))],
        [_ints("s0", [1]), _ints("e0", [3]), _ints("ax", [0])],
    )
    lowered = lower(load(model), "6_4")
    buffer = np.full(18, -1, np.float32)
    buffer[::3] = np.arange(6)
    x = buffer[::3]
    (want,) = _ort(model, {"x": x.copy()})
    got = NumpyBackend().run(lowered, {"x": x}, outputs={"y": buffer[1:3]})
    assert same_bits(got["y"], want) and same_bits(x, np.arange(6, dtype=np.float32))
    with pytest.raises(BackendError, match="bound output 'y' shares memory with input 'x'"):
        NumpyBackend().run(lowered, {"x": x}, outputs={"y": buffer[2:4]})


def test_outputs_held_by_the_caller_are_never_reused(path: str) -> None:
    lowered = lower(load(_halves_concat()), "6_4")
    backend = NumpyBackend()
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    first = backend.run(lowered, {"x": x})["y"]
    kept = first.copy()
    view = first[1:]  # a view alone keeps the buffer too
    address = first.__array_interface__["data"][0]
    del first
    second = backend.run(lowered, {"x": x + 100})["y"]
    assert same_bits(view, kept[1:])
    second_address = second.__array_interface__["data"][0]
    assert second_address != address
    del view, second
    third = backend.run(lowered, {"x": x})["y"]  # everything dropped: a buffer comes back
    assert third.__array_interface__["data"][0] in (address, second_address)
    assert same_bits(third, kept)


def test_dropped_outputs_are_recycled(path: str) -> None:
    lowered = lower(load(_halves_concat()), "6_4")
    backend = NumpyBackend()
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    addresses = {backend.run(lowered, {"x": x})["y"].__array_interface__["data"][0]
                 for _ in range(5)}
    assert len(addresses) == 1


@pytest.mark.parametrize("change", [
    lambda y: y.setflags(write=False),  # the usual way to freeze a result
    lambda y: setattr(y, "shape", (24,)),
    lambda y: setattr(y, "shape", (6, 4)),
    lambda y: setattr(y, "dtype", np.int32),
])
def test_a_returned_array_changed_in_place_then_dropped_is_not_reused(change, path) -> None:
    """The replay hands out its pooled arrays themselves: one whose flags, shape or dtype the
    caller changed and then dropped came back from the pool unlike its output, and every later
    run raised "an output factory made an array unlike its port"."""
    lowered = lower(load(_halves_concat()), "6_4")
    backend = NumpyBackend()
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    want = np.concatenate([x[2:], x[:2]])
    first = backend.run(lowered, {"x": x})["y"]
    change(first)
    del first
    for _ in range(2):
        y = backend.run(lowered, {"x": x})["y"]
        assert same_bits(y, want) and y.flags.writeable


# ------------------------------------------------------------------------------ threads
@pytest.mark.parametrize("copier", COPIERS)
@pytest.mark.parametrize("mode", ["constant", "reflect", "edge", "wrap"])
def test_threaded_copies_match_one_thread(mode: str, copier: str) -> None:
    """A 2 MB Pad and Concat: the copies split across threads give the same bits."""
    rows, cols = 512, 1024
    model = _model(
        [helper.make_node("Pad", ["x", "pads"], ["p"], mode=mode),
         helper.make_node("Concat", ["p", "p"], ["y"], axis=1)],
        [_info("x", np.float32, (rows, cols))],
        [_info("y", np.float32, (rows + 5, 2 * (cols + 7)))],
        [_ints("pads", [2, 3, 3, 4])],
    )
    x = np.random.default_rng(2).standard_normal((rows, cols)).astype(np.float32)
    lowered = lower(load(model), "6_4")
    (expected,) = _ort(model, {"x": x})
    for threads in (1, 2, 3):
        with copying(copier):
            (y,) = NumpyBackend(threads=threads).run(lowered, {"x": x}).values()
        assert same_bits(y, expected), threads


@given(st.lists(st.integers(1, 6), min_size=1, max_size=4), st.integers(1, 40), st.data())
def test_cut_pieces_cover_the_copy_once_in_memory_order(shape, pieces, data) -> None:
    """``cut``: about ``pieces`` blocks, in memory order, each one run of the outer indices
    (contiguous in a contiguous destination), together every element once."""
    destination = np.zeros(shape, np.int32)
    source = np.arange(destination.size, dtype=np.int32).reshape(shape)
    if data.draw(st.booleans()):
        source = source[..., :1]  # broadcast along the last axis
    moves = copy_threads.cut(destination, source, pieces)
    starts = [d.__array_interface__["data"][0] for d, _ in moves]
    assert starts == sorted(starts)
    assert all(d.flags.c_contiguous for d, _ in moves)
    assert sum(d.size for d, _ in moves) == destination.size
    long_axes = [n for n in shape if n > 1]
    assert len(moves) <= max(pieces, 1) * 2 ** len(long_axes)
    for d, s in moves:
        np.copyto(d, s)
    assert same_bits(destination, np.broadcast_to(source, shape))


@pytest.mark.parametrize("copier", COPIERS)
@pytest.mark.parametrize("workers", [2, 3])
def test_pieces_outnumber_the_workers_and_run_on_them(copier, workers) -> None:
    """Natively a phase is cut into pieces of about ``PIECE_BYTES``, more lists than
    workers, which one program's ``workers`` threads take as they free up; with NumPy's
    copies, one list per worker as before. Every element arrives either way."""
    destination = np.zeros((32, 8, 16), np.float32)
    source = np.arange(destination.size, dtype=np.float32).reshape(destination.shape)
    with copying(copier, 0, piece_bytes=1024):
        lists = copy_threads.distribute([(destination, source)], workers)
        run = copy_threads.compiled(lists, workers)
    if copier == "native":
        assert len(lists) == destination.nbytes // 1024
        assert isinstance(run, copy_threads.Program)
        assert run.threads == workers and run.lists == len(lists)
    else:
        assert len(lists) == workers
    run()
    assert same_bits(destination, source)


@pytest.mark.skipif(copy_threads.Program is None, reason="the native copier is not built here")
def test_row_block_pieces_of_many_moves_hold_no_more_moves_than_the_bound() -> None:
    """A JOIN of many inputs on an inner axis is cut into row blocks, each block every move:
    its pieces are fewer, so they hold at most ``MAX_PIECE_MOVES`` moves in all (never fewer
    lists than workers). Before, 1024 blocks of 64 moves each: 65536 moves (a Concat of 1024
    inputs, a million: 2 s to compile, 1.4 GB held)."""
    inputs, rows = 64, 1024
    destination = np.zeros((rows, inputs, 2), np.uint8)
    sources = [np.full((rows, 2), k, np.uint8) for k in range(inputs)]
    phase = [(destination[:, k], source) for k, source in enumerate(sources)]
    with copying("native", 0, piece_bytes=64):
        lists = copy_threads.distribute(phase, 2)
        run = copy_threads.compiled(lists, 2)
    moves = sum(len(item[1]) for items in lists for item in items)
    assert moves <= copy_threads.MAX_PIECE_MOVES and len(lists) >= 2
    run()
    assert same_bits(destination, np.broadcast_to(np.arange(inputs, dtype=np.uint8)[:, None],
                                                   destination.shape))


def test_numpy_copies_join_pieces_into_one_list_per_thread() -> None:
    """Pieces cut for the native copier that it cannot build (a cast) run through NumPy on
    ``threads`` lists, each a run of the pieces in order: never a thread per piece."""
    destination = np.zeros((12, 5), np.float64)
    pieces = [[(destination[k], np.arange(5, dtype=np.int32) + 10 * k)] for k in range(12)]
    run = copy_threads.compiled(pieces, 3)
    assert isinstance(run, copy_threads.Batch)
    assert [len(moves) for moves in run.lists] == [4, 4, 4]
    run()
    assert same_bits(destination, np.arange(5.0) + np.arange(0.0, 120.0, 10.0)[:, None])


@pytest.mark.parametrize("copier", COPIERS)
@pytest.mark.parametrize("threads", [2, 3])
@pytest.mark.parametrize("case", ["constant", "reflect", "edge", "wrap", "concat0", "concat2",
                                  "slice"])
def test_plans_cut_in_pieces_give_onnxruntimes_bits(copier, threads, case) -> None:
    """Paddings (their borders joined to the interior's pieces, row block by row block),
    Concats on the outer and the inner axis and a strided Slice, cut into pieces of 256
    bytes: onnxruntime's bits, on 2 or 3 threads."""
    shape = (6, 5, 7)
    if case in ("constant", "reflect", "edge", "wrap"):
        model, x = _pad_case(shape, [1, 2, 0, 2, 1, 3], case)
        feeds = {"x": x}
    elif case.startswith("concat"):
        axis = int(case[-1])
        model = _model([helper.make_node("Concat", ["a", "b"], ["y"], axis=axis)],
                       [_info("a", np.int64, shape), _info("b", np.int64, shape)],
                       [_info("y", np.int64, [n * (2 if k == axis else 1)
                                             for k, n in enumerate(shape)])])
        feeds = {"a": np.arange(210, dtype=np.int64).reshape(shape),
                 "b": -np.arange(210, dtype=np.int64).reshape(shape)}
    else:
        model = _model(
            [helper.make_node("Slice", ["x", "s", "e", "ax", "st"], ["y"])],
            [_info("x", np.int64, shape)], [_info("y", np.int64, (6, 3, 4))],
            [_ints("s", [0, 6]), _ints("e", [5, -100]), _ints("ax", [1, 2]),
             _ints("st", [2, -2])])
        feeds = {"x": np.arange(210, dtype=np.int64).reshape(shape)}
    expected = _ort(model, feeds)
    with copying(copier, 0, 64, piece_bytes=256):
        got = NumpyBackend(threads=threads).run(lower(load(model), "6_4"), feeds)
    assert all(same_bits(y, want) for y, want in zip(got.values(), expected))


def _pad_case(shape: tuple[int, ...], pads: list[int], mode: str):
    """A one-Pad model of int64 data and its input, distinct values throughout."""
    rank = len(shape)
    padded = tuple(n + a + b for n, a, b in zip(shape, pads[:rank], pads[rank:]))
    model = _model([helper.make_node("Pad", ["x", "pads"], ["y"], mode=mode)],
                   [_info("x", np.int64, shape)], [_info("y", np.int64, padded)],
                   [_ints("pads", pads)])
    return model, np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape) * 3 - 7


@pytest.mark.parametrize("copier", COPIERS)
@pytest.mark.parametrize("mode", ["constant", "reflect", "edge", "wrap"])
@pytest.mark.parametrize("shape, pads", [
    ((1, 2, 3, 2, 4), [1, 0, 0, 2, 0, 0, 2, 1, 0, 2]),  # found by test_lowering_property
    ((1, 3, 96), [1, 0, 3, 0, 3, 2]),
])
def test_borders_that_read_another_index_of_an_inner_axis(copier, mode, shape, pads) -> None:
    """A padding's later borders read rows the phase writes, and along an inner axis not the
    same index (an edge border of 2 copies index 1 to indices 2 and 3, as wide as the
    interior beside it): such moves must not run in lockstep along that axis, or a border
    is read before it is made. Wide enough rows that lockstep would reach that axis."""
    if mode == "reflect":
        pads = [min(p, n - 1) for p, n in zip(pads, shape * 2)]
    model, x = _pad_case(shape, pads, mode)
    (expected,) = _ort(model, {"x": x})
    with copying(copier):
        (y,) = NumpyBackend(threads=1).run(lower(load(model), "6_4"), {"x": x}).values()
    assert same_bits(y, expected)


@pytest.mark.parametrize("copier", COPIERS)
@settings(max_examples=40, deadline=None)
@given(st.data(), st.sampled_from(["constant", "reflect", "edge", "wrap"]),
       st.integers(1, 3), st.sampled_from([1, 64, 1 << 20]))
def test_padding_in_row_blocks_matches_onnxruntime(copier, data, mode, threads, block) -> None:
    """Paddings are cut into blocks of rows: of an unpadded outer axis when one has 8 rows or
    more (each block then pads every axis), else of the outermost padded axis's interior rows
    (whose own borders come after). Either way, every block count and thread count gives
    onnxruntime's bits."""
    rank = data.draw(st.integers(1, 4))
    shape = tuple(data.draw(st.lists(st.sampled_from([1, 2, 3, 5, 8, 9]), min_size=rank,
                                     max_size=rank)))
    limit = (lambda n: n - 1) if mode == "reflect" else (lambda n: n)
    pads = [data.draw(st.integers(0, min(3, limit(n)))) for n in shape * 2]
    model, x = _pad_case(shape, pads, mode)
    (expected,) = _ort(model, {"x": x})
    with copying(copier, 0, block):
        (y,) = NumpyBackend(threads=threads).run(lower(load(model), "6_4"), {"x": x}).values()
    assert same_bits(y, expected)


@pytest.mark.skipif(copy_threads.Program is None, reason="the native copier is not built here")
@pytest.mark.parametrize("why", ["more threads than it runs", "it refuses the moves"])
@pytest.mark.parametrize("mode", ["constant", "reflect", "edge", "wrap"])
def test_lockstep_groups_the_native_copier_cannot_take_run_through_numpy(
    why: str, mode: str, monkeypatch
) -> None:
    """Lists are cut for the native copier (lockstep groups) before it is asked to build
    them; where it cannot (more lists than its threads, or moves it refuses), NumPy copies the
    groups' moves instead: the same bits. Before, NumPy was handed the groups themselves and
    raised a TypeError from ``np.copyto``."""
    import backends.numpy.plan as plan_module

    threads = copy_threads.MAX_THREADS + 1 if why.startswith("more") else 2
    if why.startswith("it refuses"):
        class Refusing:  # a Program that takes no moves
            def __new__(cls, *args, **kwargs):
                raise TypeError("refused")

        monkeypatch.setattr(copy_threads, "Program", Refusing)
        monkeypatch.setattr(plan_module, "Program", Refusing)
    given: list = []

    def spy(lists, threads=None):
        given.extend(item for items in lists for item in items)
        return copy_threads.compiled(lists, threads)

    monkeypatch.setattr(plan_module, "compiled", spy)
    model, x = _pad_case((40, 3, 96), [0, 2, 3, 0, 1, 2], mode)
    (expected,) = _ort(model, {"x": x})
    with copying("native", parallel_bytes=0):
        backend = NumpyBackend()
        backend.threads = threads  # past the backend's own cap (MOST_THREADS): a plan's
        (y,) = backend.run(lower(load(model), "6_4"), {"x": x}).values()
    assert any(isinstance(item[0], int) for item in given)  # lockstep groups were made
    assert same_bits(y, expected)


@pytest.mark.parametrize("copier", COPIERS)
@given(st.lists(st.integers(1, 9), min_size=1, max_size=4), st.integers(2, 4), st.data())
def test_distribute_covers_every_element_once(copier, shape, workers, data) -> None:
    destination = np.zeros(shape, np.int32)
    source = np.arange(destination.size, dtype=np.int32).reshape(shape)
    with copying(copier, 0):
        lists = copy_threads.distribute([(destination, source)], workers)
        run = copy_threads.compiled(lists)
    assert len(lists) <= workers
    pieces = [d for items in lists for d, _ in moves_of(items)]
    assert all(np.shares_memory(d, destination) for d in pieces)
    run()
    assert same_bits(destination, source)
    assert sum(p.size for p in pieces) == destination.size


def test_batch_raises_a_copy_threads_error_and_keeps_its_threads() -> None:
    """A move that fails on a copy thread fails the batch in the caller, after every thread
    has finished; the threads go back to work for the next batch."""
    destination = np.zeros((3, 4), np.int32)
    good = [(destination[0], np.full(4, 7, np.int32))]
    bad = [(destination[1], np.zeros(5, np.int32))]  # cannot broadcast: numpy raises
    with pytest.raises(ValueError, match="broadcast"):
        copy_threads.Batch([good, bad, [(destination[2], np.full(4, 9, np.int32))]])()
    assert destination[0].tolist() == [7] * 4 and destination[2].tolist() == [9] * 4
    destination[:] = 0
    copy_threads.Batch([good, [(destination[1], np.full(4, 8, np.int32))]])()
    assert destination.tolist() == [[7] * 4, [8] * 4, [0] * 4]


# ------------------------------------------------------------------------------ random graphs
@st.composite
def random_graphs(draw):
    """Random DAGs of Slice, Concat and Pad over one input: shared tensors, nested Concats,
    tensors that are outputs and also read; float32, int64 or uint8."""
    dtype = draw(st.sampled_from([np.float32, np.int64, np.uint8]))
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(2, 5), min_size=rank, max_size=rank)))
    tensors = {"x": shape}
    nodes, inits = [], []
    for i in range(draw(st.integers(1, 7))):
        name = f"t{i}"
        op = draw(st.sampled_from(["Slice", "Concat", "Pad"]))
        source = draw(st.sampled_from(sorted(tensors)))
        dims = tensors[source]
        axis = draw(st.integers(0, len(dims) - 1))
        if op == "Slice":
            n = dims[axis]
            step = draw(st.sampled_from([1, 1, 2, -1]))
            a, b = sorted(draw(st.lists(st.integers(0, n), min_size=2, max_size=2, unique=True)))
            start, end = (a, b) if step > 0 else (b - 1, a - 1 if a > 0 else -n - 1)
            count = len(np.arange(n)[start:end:step])  # ONNX clamps these as Python does
            inits += [_ints(f"{name}_s", [start]), _ints(f"{name}_e", [end]),
                      _ints(f"{name}_a", [axis]), _ints(f"{name}_p", [step])]
            nodes.append(helper.make_node("Slice", [source, f"{name}_s", f"{name}_e",
                                                    f"{name}_a", f"{name}_p"], [name]))
            tensors[name] = dims[:axis] + (count,) + dims[axis + 1:]
        elif op == "Concat":
            partners = [t for t, d in sorted(tensors.items())
                        if len(d) == len(dims)
                        and all(x == y for k, (x, y) in enumerate(zip(d, dims)) if k != axis)]
            chosen = [source] + draw(st.lists(st.sampled_from(partners), min_size=1, max_size=3))
            nodes.append(helper.make_node("Concat", chosen, [name], axis=axis))
            total = sum(tensors[t][axis] for t in chosen)
            tensors[name] = dims[:axis] + (total,) + dims[axis + 1:]
        else:
            mode = draw(st.sampled_from(["constant", "edge", "reflect", "wrap"]))
            limit = (lambda n: n - 1) if mode == "reflect" else (lambda n: n)
            pads = [draw(st.integers(0, min(2, limit(n)))) for n in dims] + [
                draw(st.integers(0, min(2, limit(n)))) for n in dims]
            inits.append(_ints(f"{name}_pads", pads))
            nodes.append(helper.make_node("Pad", [source, f"{name}_pads"], [name], mode=mode))
            tensors[name] = tuple(n + a + b for n, a, b in zip(dims, pads[:len(dims)], pads[len(dims):]))
    made = [f"t{i}" for i in range(len(nodes))]
    outputs = [made[-1]] + draw(st.lists(st.sampled_from(made), max_size=2, unique=True))
    outputs = list(dict.fromkeys(outputs))
    model = _model(nodes, [_info("x", dtype, shape)],
                   [_info(o, dtype, tensors[o]) for o in outputs], inits)
    x = (np.arange(int(np.prod(shape))) * 7 - 11).astype(dtype).reshape(shape)
    level = draw(st.sampled_from(["6_4", "2_1", "1_0"]))
    return model, x, level


@pytest.mark.parametrize("copier", COPIERS)
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_graphs(), st.integers(1, 3), st.sampled_from([1, 16, 1 << 20]))
def test_random_graphs_match_onnxruntime(copier, case, threads, block) -> None:
    model, x, level = case
    before = x.copy()
    expected = _ort(model, {"x": x})
    lowered = lower(load(model), level)
    # split even tiny copies, in blocks of a few rows, so the threaded, blocked paths run
    with copying(copier, 0, block):
        backend = NumpyBackend(threads=threads)
        for _ in range(2):  # the second run replays the plan with recycled outputs
            results = backend.run(lowered, {"x": x})
            for name, want in zip([o.name for o in model.graph.output], expected):
                assert same_bits(results[name], want), name
    assert same_bits(x, before)


@pytest.mark.parametrize("copier", COPIERS)
@given(st.lists(st.integers(1, 12), min_size=2, max_size=3), st.integers(2, 4),
       st.integers(2, 4), st.integers(1, 64))
def test_distribute_side_by_side_moves_in_row_blocks(copier, shape, parts, workers, block) -> None:
    """A JOIN on the last axis: every input's columns, cut in row blocks across workers
    (natively: one lockstep group per worker)."""
    widths = [shape[-1]] * parts
    destination = np.zeros(tuple(shape[:-1]) + (sum(widths),), np.int32)
    sources = [np.arange(np.prod(shape), dtype=np.int32).reshape(shape) + 1000 * k
               for k in range(parts)]
    moves = [(destination[..., k * shape[-1]:(k + 1) * shape[-1]], s)
             for k, s in enumerate(sources)]
    with copying(copier, 0, block):
        lists = copy_threads.distribute(moves, workers)
        copy_threads.compiled(lists)()
    assert len(lists) <= workers
    assert same_bits(destination, np.concatenate(sources, axis=-1))
    assert sum(d.size for items in lists for d, _ in moves_of(items)) == destination.size


@pytest.mark.parametrize("copier", COPIERS)
@pytest.mark.parametrize("parts", [2, 8])
def test_distribute_block_after_block_moves_in_long_runs(copier, parts) -> None:
    """A JOIN on the outermost axis: its inputs' destinations follow one another, so each is
    cut into long runs, never into rows taken in turns (which natively became 1 KB slabs
    alternating between far-apart destinations, and ran at 0.6x a memcpy)."""
    rows = 64
    destination = np.zeros((parts * rows, 256), np.float32)
    sources = [np.full((rows, 256), k, np.float32) for k in range(parts)]
    moves = [(destination[k * rows:(k + 1) * rows], s) for k, s in enumerate(sources)]
    with copying(copier, 0, 1 << 20):
        lists = copy_threads.distribute(moves, 2)
        copy_threads.compiled(lists)()
    assert same_bits(destination, np.concatenate(sources))
    items = [item for items in lists for item in items]
    assert not any(isinstance(item[0], int) for item in items)  # no lockstep groups
    assert min(d.nbytes for d, _ in items) >= rows * 256 * 4 // 2  # runs of half an input


@pytest.mark.parametrize("copier", COPIERS)
@pytest.mark.parametrize("workers", [1, 2, 3])
def test_phases_over_the_same_rows_run_as_one_call(copier, workers) -> None:
    """A padding's phases: the interior (and the inner axis's borders), then the borders of an
    outer axis read back from the output, both in blocks of axis 0's rows. They run as one
    call, each worker's rows of the second phase after its rows of the first, and give what
    np.pad gives; a phase over other rows (a reversed copy over axis 1) stays a call of its
    own, after them."""
    from backends.numpy.moves import Phase

    x = np.arange(12 * 5 * 6, dtype=np.int32).reshape(12, 5, 6)
    out = np.zeros((12, 7, 6), np.int32)
    interior = Phase([(out[:, 1:6], x)], rows=0)
    borders = Phase([(out[:, 0:1], out[:, 1:2]), (out[:, 6:7], out[:, 5:6])], rows=0)
    flipped = np.zeros((12, 7, 6), np.int32)
    other = Phase([(flipped, out[:, ::-1])], rows=1)
    with copying(copier, 0, 64):
        calls = copy_threads.distribute_phases([interior, borders, other], workers)
        for lists in calls:
            copy_threads.compiled(lists)()
    assert len(calls) == 2 and len(calls[0]) == workers
    want = np.pad(x, ((0, 0), (1, 1), (0, 0)), mode="edge")
    assert same_bits(out, want) and same_bits(flipped, want[:, ::-1])
    for k, items in enumerate(calls[0]):  # each worker: its rows, first phase then second
        moves = moves_of(items)
        rows = {(d.__array_interface__["data"][0] - out.ctypes.data) // out.strides[0]
                for d, _ in moves}
        low, high = 12 * k // workers, 12 * (k + 1) // workers
        assert rows <= set(range(low, high))
        assert [d.shape[1] for d, _ in moves][-2:] == [1, 1]  # the borders come last


@pytest.mark.parametrize("shape, pads", [
    ((2, 4096), ((0, 0), (3, 5))), ((4096,), ((3, 5),)), ((1, 1, 4096), ((0, 0),) * 2 + ((3, 5),)),
    ((2, 4096, 1), ((0, 0), (3, 5), (0, 0))), ((4, 1024, 2), ((0, 0), (3, 5), (1, 0))),
])
def test_a_padding_is_never_blocked_by_rows_of_a_few_elements(shape, pads) -> None:
    """A float32 [2, 4M] padded on its last axis was blocked by that axis's "rows", single
    elements: the native copier ran a lockstep slab per element, 97 ms where whole rows take
    3 (rank 1 and [1, 1, N], as audio is, alike; [2, N, 2]: 53 ms). No phase is now blocked
    by rows of fewer than 64 elements; the values are np.pad's."""
    from backends.numpy.moves import operator_moves
    from dmlgraph.dml import BufferTensorDesc, PaddingDesc

    starts, ends = zip(*pads)
    out_shape = tuple(n + a + b for n, (a, b) in zip(shape, pads))
    desc = PaddingDesc(input_tensor=BufferTensorDesc("FLOAT32", shape),
                       output_tensor=BufferTensorDesc("FLOAT32", out_shape),
                       padding_mode="REFLECTION", start_padding=starts, end_padding=ends)
    x = np.arange(np.prod(shape), dtype=np.uint32).reshape(shape)
    out = np.zeros(out_shape, np.uint32)
    phases = operator_moves(desc, [x], out)
    for phase in phases:  # a block: a row of the input along the phase's axis
        assert phase.rows is None or np.prod(shape[phase.rows + 1:]) >= 64
        copy_threads.compiled(copy_threads.distribute_phases([phase], 2)[0], 2)()
    assert same_bits(out, np.pad(x, pads, mode="reflect"))


@pytest.mark.parametrize("seed", range(4))
def test_padding_phases_give_np_pad_in_any_order_their_rows_allow(seed) -> None:
    """A phase without rows may run its moves in any order (on any thread), one with rows
    block by block in any block order, its moves in order within a block: run so in reverse
    (blocks last to first, free moves last to first), every mode's phases give np.pad. Two
    axes' borders in one phase without rows (a first form of unblocked paddings, which the
    random graphs caught as a race) ran the outer axis's first, copying borders not yet
    written: 56 of 1,500 such cases failed."""
    from backends.numpy.moves import operator_moves
    from dmlgraph.dml import BufferTensorDesc, Padding1Desc

    rng = np.random.default_rng(seed)
    modes = {"CONSTANT": "constant", "EDGE": "edge", "REFLECTION": "reflect",
             "SYMMETRIC": "symmetric", "WRAP": "wrap"}
    for _ in range(150):
        shape = tuple(int(rng.integers(1, 7)) if rng.random() < 0.8 else int(rng.integers(50, 300))
                      for _ in range(int(rng.integers(1, 5))))
        mode = str(rng.choice(list(modes)))
        most = [min(4, n - 1 if mode == "REFLECTION" else n) for n in shape]
        pads = [tuple(int(rng.integers(0, m + 1)) if rng.random() < 0.6 else 0 for _ in "se")
                for m in most]
        out_shape = tuple(n + a + b for n, (a, b) in zip(shape, pads))
        starts, ends = zip(*pads)
        desc = Padding1Desc(input_tensor=BufferTensorDesc("UINT16", shape),
                            output_tensor=BufferTensorDesc("UINT16", out_shape),
                            padding_mode=mode, padding_value_data_type="UINT16",
                            padding_value=7, start_padding=starts, end_padding=ends)
        x = rng.integers(0, 1000, shape).astype(np.uint16)
        out = np.zeros(out_shape, np.uint16)
        for phase in operator_moves(desc, [x], out):
            if phase.rows is None:
                for destination, source in phase.moves[::-1]:
                    np.copyto(destination, source)
                continue
            for row in reversed(range(phase.moves[0][0].shape[phase.rows])):
                at = (slice(None),) * phase.rows + (slice(row, row + 1),)
                for destination, source in phase.moves:
                    np.copyto(destination[at], source[at] if source.ndim else source)
        kwargs = {"constant_values": 7} if mode == "CONSTANT" else {}
        assert same_bits(out, np.pad(x, pads, mode=modes[mode], **kwargs)), (shape, mode, pads)


def test_restored_node_reads_what_replaced_an_eliminated_input() -> None:
    """Found by the random graphs: uint8 at FL 1.0 cannot be lowered, so the first and last
    Slice stay ONNX; the middle one is an identity and is eliminated. The last must then read
    the first's output, not the eliminated tensor."""
    nodes, inits, current = [], [], "x"
    for i in range(3):
        nodes.append(helper.make_node("Slice", [current, "s", "e", "a"], [f"t{i}"]))
        current = f"t{i}"
    inits = [_ints("s", [0]), _ints("e", [1]), _ints("a", [0])]
    model = _model(nodes, [_info("x", np.uint8, (2,))], [_info("t2", np.uint8, (1,))], inits)
    x = np.array([245, 252], np.uint8)
    lowered = lower(load(model), "1_0")
    assert [r.status.value for r in lowered.report()] == ["fallback", "eliminated", "fallback"]
    (y,) = NumpyBackend().run(lowered, {"x": x}).values()
    assert same_bits(y, _ort(model, {"x": x})[0])


def test_bound_and_pooled_outputs_in_turns_compile_each_form_once(monkeypatch) -> None:
    """A caller alternating between its own output array and pooled ones: with NumPy's copies
    each phase keeps a compiled form per set of addresses, so turns replay instead of
    rebuilding, and every result is right. (Native programs are relocated instead: below.)"""
    import backends.numpy.plan as plan_module

    monkeypatch.setattr(copy_threads, "native", False)

    compiled: list[object] = []
    real = plan_module.compiled

    def counting(lists, threads=None):
        compiled.append(lists)
        return real(lists, threads)

    monkeypatch.setattr(plan_module, "compiled", counting)
    nodes = [helper.make_node("Pad", ["x", "pads"], ["y"], mode="reflect")]
    model = _model(nodes, [_info("x", np.float32, (3, 5, 6))],
                   [_info("y", np.float32, (3, 7, 10))], [_ints("pads", [0, 1, 2, 0, 1, 2])])
    x = np.arange(90, dtype=np.float32).reshape(3, 5, 6)
    (want,) = _ort(model, {"x": x})
    lowered = lower(load(model), "6_4")
    backend = NumpyBackend()
    mine = np.zeros((3, 7, 10), np.float32)
    built = []
    for _ in range(3):
        assert same_bits(backend.run(lowered, {"x": x})["y"], want)
        mine[:] = 0
        backend.run(lowered, {"x": x}, outputs={"y": mine})
        assert same_bits(mine, want)
        built.append(len(compiled))
    assert built[0] > 0 and built[0] == built[1] == built[2]  # both forms built in turn one


# ------------------------------------------------------------------------------ native replay
replay_only = pytest.mark.skipif(copy_threads.Replay is None,
                                 reason="the native copier is not built here")


@replay_only
def test_only_dml_plans_replay() -> None:
    """A plan of DML nodes alone is one native call; one with a fallback node is not."""
    backend = NumpyBackend()
    lowered = lower(load(_halves_concat()), "6_4")
    assert backend.plan(lowered).replay is not None
    nodes = [helper.make_node("Neg", ["x"], ["n"]), helper.make_node("Pad", ["n", "pads"], ["y"])]
    model = _model(nodes, [_info("x", np.float32, (2, 3))], [_info("y", np.float32, (2, 5))],
                   [_ints("pads", [0, 1, 0, 1])])
    assert backend.plan(lower(load(model), "6_4")).replay is None


@replay_only
def test_a_replay_that_cannot_be_made_leaves_the_python_path(monkeypatch) -> None:
    """Where the native call refuses what it is given (here: NumPy's arrays not laid out
    as it reads them), the plan runs through Python, with the same results."""
    import backends.numpy.plan as plan_module

    def refuse(*args, **kwargs):
        raise ValueError("this NumPy's arrays are not laid out as expected")

    monkeypatch.setattr(plan_module, "Replay", refuse)
    lowered = lower(load(_halves_concat()), "6_4")
    backend = NumpyBackend()
    assert backend.plan(lowered).replay is None
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    (y,) = backend.run(lowered, {"x": x}).values()
    assert same_bits(y, np.concatenate([x[2:], x[:2]]))


@replay_only
def test_a_replayed_run_does_not_go_through_python(monkeypatch) -> None:
    """With the replay, a run never reaches the plan's Python path, and says what ran as that
    path would."""
    from backends.numpy.plan import Plan

    lowered = lower(load(_halves_concat()), "6_4")
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    python = NumpyBackend()
    python.plan(lowered).replay = None
    expected = python.execute(lowered, {"x": x})
    monkeypatch.setattr(Plan, "run", lambda *a, **k: pytest.fail("the Python path ran"))
    backend = NumpyBackend()
    for outputs in (None, {"y": np.empty((4, 6), np.float32)}):
        result = backend.execute(lowered, {"x": x}, outputs)
        assert same_bits(result.outputs["y"], expected.outputs["y"])
        assert result.record == expected.record == backend.last_record


@pytest.mark.parametrize("feeds, fragment", [
    (lambda x: {}, "missing ['x']"),
    (lambda x: {"x": x, "z": x}, "unknown ['z']"),
    (lambda x: {"x": x.astype(np.float64)}, "is float64; the graph expects float32"),
    (lambda x: {"x": x[:3]}, "has shape [3, 6]"),
])
@replay_only
def test_feeds_the_replay_declines_get_the_python_paths_errors(feeds, fragment) -> None:
    lowered = lower(load(_halves_concat()), "6_4")
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    with pytest.raises(BackendError) as info:
        NumpyBackend().run(lowered, feeds(x))
    assert fragment in str(info.value)


class _Tagged(np.ndarray):
    """An ndarray subclass: the replay takes exactly ndarrays, Python's path the rest."""


@pytest.mark.parametrize("make", [
    lambda x: np.asfortranarray(x),  # not C-contiguous
    lambda x: np.concatenate([x, x], axis=1)[:, :6],  # rows apart
    lambda x: memoryview(x),  # not an array
    lambda x: x.view(_Tagged),  # a subclass
    lambda x: x.astype(np.dtype(">f4")),  # another byte order: the same values
    lambda x: np.frombuffer(x.tobytes(), np.float32).reshape(4, 6),  # read-only: fine to read
])
@replay_only
def test_feeds_the_replay_declines_still_run(make) -> None:
    lowered = lower(load(_halves_concat()), "6_4")
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    feed = make(x)
    (y,) = NumpyBackend().run(lowered, {"x": feed}).values()
    assert same_bits(y, np.concatenate([x[2:], x[:2]]))


@replay_only
def test_concurrent_runs_of_one_plan_are_each_right() -> None:
    """Runs from several threads share the plan's programs and arena: one at a time."""
    import threading

    model = _halves_concat(256, 1024)  # 1 MB: the arena and the copy threads are used
    lowered = lower(load(model), "6_4")
    backend = NumpyBackend(threads=2)
    wrong: list[object] = []

    def work(seed: int) -> None:
        for k in range(20):
            x = np.full((256, 1024), seed * 100 + k, np.float32)
            x[0, 0] = -1
            try:
                y = backend.run(lowered, {"x": x})["y"]
            except Exception as exc:  # noqa: BLE001 - a thread's error fails the test
                wrong.append(exc)
                return
            if not same_bits(y, np.concatenate([x[128:], x[:128]])):
                wrong.append(seed)

    threads = [threading.Thread(target=work, args=(seed,)) for seed in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not wrong


def test_the_last_plan_goes_with_its_graph(path: str) -> None:
    """The backend keeps its last plan at hand, but not past the graph's life."""
    import gc
    import weakref

    backend = NumpyBackend()
    lowered = lower(load(_halves_concat()), "6_4")
    backend.run(lowered, {"x": np.zeros((4, 6), np.float32)})
    plan = weakref.ref(backend.plan(lowered))
    del lowered
    gc.collect()
    assert plan() is None


@pytest.mark.parametrize("fallback", ["onnxruntime", "reference"])
def test_a_dropped_plan_needs_no_collector(fallback: str) -> None:
    """A plan with every kind of step (DML, a fallback segment whose output a JOIN reads, a
    Slice lowered at run time) is freed with its graph by reference counting alone: its arena
    and its fallback's sessions do not wait for the collector, and the backend's cache of
    plans keyed weakly by graphs does not keep either alive."""
    import gc
    import weakref

    model = _model(
        [
            helper.make_node("Slice", ["x", "s0", "e0", "ax"], ["top"]),
            helper.make_node("Relu", ["top"], ["r"]),
            helper.make_node("Concat", ["r", "x"], ["y"], axis=0),
            helper.make_node("Slice", ["x", "start", "e0", "ax"], ["z"]),
        ],
        [_info("x", np.float32, (4, 6)), _info("start", np.int64, (1,))],
        [_info("y", np.float32, (6, 6)), _info("z", np.float32, ("n", 6))],
        [_ints("s0", [0]), _ints("e0", [2]), _ints("ax", [0])],
    )
    x = np.random.default_rng(7).standard_normal((4, 6)).astype(np.float32)
    feeds = {"x": x, "start": np.array([1])}
    enabled = gc.isenabled()
    gc.disable()
    try:
        backend = NumpyBackend(fallback)
        lowered = lower(load(model), "6_4")
        result = backend.execute(lowered, feeds)
        expected = _ort(model, feeds)
        assert same_bits(result.outputs["y"], expected[0])
        assert same_bits(result.outputs["z"], expected[1])
        vias = {r.via for r in result.record.nodes}
        assert "lowered at run time" in vias
        assert any(fallback in r.engine for r in result.record.nodes)
        plan = backend.plan(lowered)
        held = [weakref.ref(plan), weakref.ref(lowered._nx)]
        held += [weakref.ref(step) for step in plan._steps]
        del lowered, plan, result
        assert [ref() for ref in held] == [None] * len(held)
    finally:
        if enabled:
            gc.enable()


def test_a_fallback_result_unlike_its_inferred_type_is_not_read_past() -> None:
    """onnx infers STFT(frame_length=5) of 16 samples, step 3, as [1, 4, 5, 2]; onnxruntime
    makes [1, 4, 3, 2] (the oracle). The JOIN reading it was laid out for the inferred shape,
    so binding the smaller result would read past its end: the run stopped with the error.
    It lowers the graph again now, the Concat lowered when it runs, for the [1, 4, 3, 2]."""
    model = _model(
        [helper.make_node("STFT", ["x", "st", "", "fl"], ["o"], name="stft"),
         helper.make_node("Concat", ["o", "o"], ["y"], axis=2)],
        [_info("x", np.float32, (1, 16, 1))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None] * 4)],
        [helper.make_tensor("st", TensorProto.INT64, [], [3]),
         helper.make_tensor("fl", TensorProto.INT64, [], [5])],
    )
    x = np.random.default_rng(0).standard_normal((1, 16, 1)).astype(np.float32)
    (expected,) = _ort(model, {"x": x})
    graph = load(model)
    assert expected.shape == (1, 4, 6, 2) and graph.tensor("o").shape == (1, 4, 5, 2)
    lowered = lower(graph, "6_4")
    assert any(n.op_type == "JoinDesc" for n in lowered.nodes)
    result = NumpyBackend().execute(lowered, {"x": x})
    assert same_bits(result.outputs["y"], expected)
    (note,) = result.record.notes
    assert "'stft' (STFT) made 'o' as float32[1, 4, 3, 2], where onnx infers " \
        "float32[1, 4, 5, 2]" in note


@pytest.mark.parametrize("pairs", [8, 0])  # pair by pair, or by sorted spans
def test_a_fallback_s_views_of_its_feeds_are_copied(pairs: int, monkeypatch) -> None:
    """A fallback (any object the backend takes) whose runner hands back views of what it was
    fed, as onnx.reference's Reshape does: a result over the plan's arena was overwritten by
    the next run, and one over the caller's input changed it when written."""
    from onnx.reference import ReferenceEvaluator

    import backends.numpy.plan as plan_module

    monkeypatch.setattr(plan_module, "APART_PAIRS", pairs)

    class Viewing:
        engine = "onnx.reference, uncopied"

        def prepare(self, graph):
            evaluator, outputs = ReferenceEvaluator(graph.to_onnx()), list(graph.outputs)
            return lambda feeds: dict(zip(outputs, evaluator.run(None, dict(feeds))))

    model = _model(
        [helper.make_node("Slice", ["x", "s", "e", "ax"], ["t"]),  # a DML node: the arena
         helper.make_node("Reshape", ["t", "flat"], ["y"]),
         helper.make_node("Reshape", ["t", "flat"], ["y2"]),
         helper.make_node("Reshape", ["x", "flat2"], ["xf"])],
        [_info("x", np.float32, (4, 6))],
        [_info("y", np.float32, (12,)), _info("y2", np.float32, (12,)),
         _info("xf", np.float32, (24,))],
        [_ints("s", [1]), _ints("e", [3]), _ints("ax", [0]), _ints("flat", [12]),
         _ints("flat2", [24])],
    )
    lowered = lower(load(model), "6_4")
    assert [n.op_type for n in lowered.nodes][0] == "SliceDesc"
    backend = NumpyBackend(fallback=Viewing())
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    first = backend.run(lowered, {"x": x})
    kept = {name: value.copy() for name, value in first.items()}
    first["xf"][0] = -1
    first["y2"][0] = -1
    assert x[0, 0] == 0 and first["y"][0] == 6  # neither the input nor the other output
    for name, value in zip(("y", "y2", "xf"), _ort(model, {"x": x + 100})):
        assert same_bits(backend.run(lowered, {"x": x + 100})[name], value)
    assert same_bits(first["y"], kept["y"])  # the arena's next run left it alone


def test_a_fallback_that_gives_no_value_for_a_tensor_is_an_error() -> None:
    """A fallback (any object the backend takes) that leaves out a tensor DML nodes read: the
    native program would read the earlier run's freed memory for it (found by ASan)."""
    from dmlgraph.dml import BufferTensorDesc, Slice1Desc
    from dmlgraph.ir import OnnxOp
    from test_backend_numpy import make_graph

    class Flaky:
        engine = "flaky"

        def prepare(self, graph):
            calls = []

            def run(feeds):
                calls.append(1)
                return {} if len(calls) == 2 else {"r": np.maximum(feeds["x"], 0)}

            return run

    n = 1 << 12
    tensor = BufferTensorDesc("FLOAT32", (n,))
    reverse = Slice1Desc(input_tensor=tensor, output_tensor=tensor, input_window_offsets=(0,),
                         input_window_sizes=(n,), input_window_strides=(-1,))
    graph = make_graph({"x": (np.float32, (n,))},
                       [(OnnxOp("Relu", 14), ["x"], ["r"], "relu"), (reverse, ["r"], ["y"], "rev")],
                       {"r": (np.float32, (n,)), "y": (np.float32, (n,))}, ["y"])
    backend = NumpyBackend(fallback=Flaky(), threads=1)
    x = np.arange(n, dtype=np.float32)
    assert same_bits(backend.run(graph, {"x": x})["y"], x[::-1])
    with pytest.raises(BackendError, match=r"gave no value for \['r'\], made by node\(s\) \['relu'\]"):
        backend.run(graph, {"x": x})


def test_run_time_lowerings_are_kept_for_the_most_recent_values_only(monkeypatch) -> None:
    """Each parameter value keeps a lowering, a sub-plan and its pooled output: 300 values
    of a 2 MB slice held 520 MB. The least recently run go past the limit."""
    import backends.numpy.plan as plan_module

    monkeypatch.setattr(plan_module, "RUNTIME_CACHE_LIMIT", 3)
    model = _model(
        [helper.make_node("Slice", ["x", "start", "e", "ax"], ["z"])],
        [_info("x", np.float32, (8, 6)), _info("start", np.int64, (1,))],
        [_info("z", np.float32, ("n", 6))],
        [_ints("e", [8]), _ints("ax", [0])],
    )
    lowered = lower(load(model), "6_4")
    backend = NumpyBackend()
    x = np.arange(48, dtype=np.float32).reshape(8, 6)
    for start in (0, 1, 2, 3, 4, 1, 5):
        (z,) = backend.run(lowered, {"x": x, "start": np.array([start])}).values()
        assert same_bits(z, x[start:])
    (step,) = [s for s in backend.plan(lowered)._steps if isinstance(s, plan_module._RuntimeStep)]
    port = step.node.inputs.index("start")
    kept = [int(np.frombuffer(key[port][2], np.int64)[0]) for key in step.cache]
    assert kept == [4, 1, 5]  # 1 was lowered again, after it went


def test_a_child_forked_while_a_run_is_under_way_runs_the_graph() -> None:
    """The running thread does not exist in the child, and the plan's lock it held did not
    come free: the child's run waited for ever. A forked child forgets its plans."""
    import multiprocessing
    import threading

    if "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("no fork on this platform")
    lowered = lower(load(_halves_concat(512, 1024)), "6_4")
    backend = NumpyBackend()
    x = np.random.default_rng(3).standard_normal((512, 1024)).astype(np.float32)
    expected = np.concatenate([x[256:], x[:256]])
    stop = threading.Event()

    def busy() -> None:
        while not stop.is_set():
            backend.run(lowered, {"x": x})

    worker = threading.Thread(target=busy, daemon=True)
    worker.start()
    try:
        _forked_child_agrees(backend, lowered, x, "y", expected)
    finally:
        stop.set()
        worker.join()


def _forked_child_agrees(backend: Any, lowered: Any, x: np.ndarray, output: str,
                         expected: np.ndarray) -> None:
    """A forked child runs the graph and gets ``expected`` bit for bit, within 60 s."""
    import multiprocessing

    context = multiprocessing.get_context("fork")
    results = context.Queue()

    def child() -> None:
        results.put(same_bits(backend.run(lowered, {"x": x})[output], expected))

    process = context.Process(target=child)
    process.start()
    process.join(60)
    alive = process.is_alive()
    if alive:
        process.kill()
    assert not alive, "the child hung"
    assert process.exitcode == 0 and results.get(timeout=5)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no os.fork: run_forked runs the work here")
def test_a_forked_child_finalizes_nothing_it_inherited() -> None:
    """``run_forked`` freezes the parent's objects before it forks: a garbage cycle the
    parent had not yet collected, holding an onnxruntime session, was collected in the child,
    whose teardown waited forever for the parent's pool threads (``check``'s forked reference
    hung a suite run). Here a cycle finalized in the child would say so in what it returns."""
    import gc

    from backends.base import run_forked
    finalized: list[int] = []

    class Held:
        def __del__(self) -> None:
            finalized.append(os.getpid())

    def work() -> list[int]:
        gc.collect()
        return list(finalized)

    enabled = gc.isenabled()
    gc.disable()  # the cycle stays uncollected until the fork
    _COLLECT_AFTER_FORK.append(True)  # as Python's own after-fork hooks may start one
    try:
        held = Held()
        held.me = held  # type: ignore[attr-defined]
        del held
        assert run_forked(work) == []
    finally:
        _COLLECT_AFTER_FORK.clear()
        gc.collect()
        if enabled:
            gc.enable()
    assert finalized == [os.getpid()]  # the parent finalized it, once
    assert gc.get_freeze_count() == 0  # and the parent's objects are collectable again


#: While it holds an item, a forked child collects garbage in its first after-fork hook.
_COLLECT_AFTER_FORK: list[bool] = []


def _collect_in_child() -> None:
    if _COLLECT_AFTER_FORK:
        import gc

        gc.collect()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_collect_in_child)


@pytest.mark.parametrize("engine", ["numpy", "onnxruntime"])
def test_a_child_forked_after_onnxruntime_ran_runs_the_graph(engine: str) -> None:
    """A parent that ran a graph through an onnxruntime session (a fallback node, or the
    onnxruntime backend), then forked: the child freed the session in the fork's handler,
    and its destructor waited for the parent's pool threads (``pthread_cond_destroy``),
    which the child does not have: every child hung before running any code."""
    import multiprocessing
    import time

    from backends import get_backend

    if "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("no fork on this platform")
    model = _halves_concat(256, 1024)
    model.graph.node.append(helper.make_node("Relu", ["y"], ["r"]))
    model.graph.output[0].name = "r"
    lowered = lower(load(model), "6_4")
    backend = get_backend(engine)
    x = np.random.default_rng(3).standard_normal((256, 1024)).astype(np.float32)
    (expected,) = _ort(model, {"x": x})
    assert same_bits(backend.run(lowered, {"x": x})["r"], expected)
    time.sleep(0.3)  # the session's pool threads wait on their condition now
    _forked_child_agrees(backend, lowered, x, "r", expected)


# ------------------------------------------------------------------------------ validation
def _wrap_pad() -> onnx.ModelProto:
    return _model(
        [helper.make_node("Pad", ["x", "p"], ["y"], mode="wrap")],
        [_info("x", np.float32, (2, 3))], [_info("y", np.float32, (2, 5))],
        [_ints("p", [0, 1, 0, 1])],
    )


def test_the_plan_skips_validating_only_what_lower_validated_unchanged(path: str) -> None:
    """``lower`` validated its descriptors at its level, so the plan need not again; a run at
    another level, or a descriptor swapped in since, is validated (and refused) as before."""
    lowered = lower(load(_wrap_pad()), "6_4")  # WRAP: DML_PADDING1 from 6_2
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert np.array_equal(NumpyBackend().run(lowered, {"x": x})["y"], np.pad(x, 1, "wrap")[1:3])
    with pytest.raises(BackendError, match="DML_PADDING_MODE_WRAP"):
        NumpyBackend(feature_level="6_1").run(lowered, {"x": x})
    changed = lower(load(_halves_concat()), "6_4")
    node = next(n for n in changed.nodes if n.op.name == "DML_OPERATOR_JOIN")
    bad = dataclasses.replace(node.op, axis=1)  # the inputs' sizes no longer add up
    changed.replace_node(node.id, op=bad)
    with pytest.raises(BackendError, match="sizes off the join axis must equal"):
        NumpyBackend().run(changed, {"x": np.zeros((4, 6), np.float32)})


# ------------------------------------------------------------------------------ plan size
# A plan's compile and its runs must cost in proportion to the graph: each of these made one
# of them quadratic (a 4000-input JOIN took 5 s to compile, a graph of 8000 outputs 12 s).
@st.composite
def phase_over_one_buffer(draw):
    """Moves over strided views of one buffer (some reversed, some empty, some overlapping),
    with a value that is not an array as a source now and then."""
    buffer = np.zeros(64, np.int32)

    def view():
        start = draw(st.integers(0, 63))
        stop = draw(st.integers(0, 64))
        step = draw(st.sampled_from([1, 2, 3, -1, -2]))
        return buffer[start:stop:step]

    moves = []
    for _ in range(draw(st.integers(1, 6))):
        destination = view()
        source = draw(st.one_of(st.just(np.int32(7)), st.builds(lambda: view())))
        moves.append((destination, source))
    return moves


@given(phase_over_one_buffer())
def test_a_phase_reads_what_it_writes_by_numpys_bounds(phase) -> None:
    """Whether a source may share memory with a destination, as np.may_share_memory says of
    every pair (the oracle), from one sorted pass over the written bytes."""
    want = any(np.may_share_memory(d, s) for d, _ in phase for _, s in phase)
    assert copy_threads._reads_written(phase) == want


@st.composite
def roots_and_views(draw):
    """Roots over a few buffers, some sharing memory (as constants may), and views of them."""
    buffers = [np.zeros(draw(st.integers(0, 16)), np.uint8) for _ in range(3)]
    shared = buffers[0][draw(st.integers(0, 8)):]  # a second root over the first's bytes
    proxies = [*buffers, shared] if draw(st.booleans()) else buffers
    candidates = draw(st.lists(st.integers(0, len(proxies) - 1), min_size=1, max_size=8))
    views = [
        proxies[draw(st.integers(0, len(proxies) - 1))][draw(st.integers(0, 16)):]
        for _ in range(4)
    ]
    return proxies, candidates, views


@given(roots_and_views())
def test_the_root_of_a_view_is_the_first_candidate_holding_it(case) -> None:
    """The root locator answers as a scan of the candidates in order would (the oracle,
    written here), whether the roots' memory is disjoint (bisection) or not."""
    from backends.numpy.plan import Plan, RootKind, _Root
    from backends.numpy.views import address

    proxies, candidates, views = case
    plan = Plan.__new__(Plan)
    plan._roots = [_Root(RootKind.CONSTANT, p.size, p) for p in proxies]
    locate = plan.root_locator(candidates)
    for view in views:
        at = address(view)
        want = next(
            (r for r in candidates
             if address(proxies[r]) <= at < address(proxies[r]) + max(proxies[r].size, 1)),
            None,
        )
        assert locate(view) == want


@pytest.mark.skipif(copy_threads.Program is None, reason="the native copier is not built here")
def test_a_native_program_knows_only_the_roots_its_moves_touch(monkeypatch) -> None:
    """A chain whose every tensor is a graph output (the usual way to debug a model): each
    program is given the two or three roots of its own tensors, not the plan's 120; before,
    every build and every call went through all of them. Results: onnxruntime's."""
    import backends.numpy.plan as plan_module

    given_roots: list[int] = []
    real = plan_module.Program

    class Programs(type):  # the plan's isinstance checks still see real Programs
        def __instancecheck__(cls, made: object) -> bool:
            return isinstance(made, real)

    class Recording(metaclass=Programs):
        def __new__(cls, lists, stream=None, roots=None, slots=None, **threads):
            given_roots.append(len(roots or ()))
            return real(lists, stream=stream, roots=roots, slots=slots, **threads)

    monkeypatch.setattr(plan_module, "Program", Recording)
    nodes, outputs, current = [], [], "x"
    for i in range(40):
        nodes += [helper.make_node("Pad", [current, "pads"], [f"p{i}"], mode="edge"),
                  helper.make_node("Slice", [f"p{i}", "s", "e", "ax"], [f"q{i}"])]
        outputs += [f"p{i}", f"q{i}"]
        current = f"q{i}"
    model = _model(nodes, [_info("x", np.float32, (2, 3))],
                   [_info(name, np.float32, (2, 5) if name[0] == "p" else (2, 3))
                    for name in outputs],
                   [_ints("pads", [0, 1, 0, 1]), _ints("s", [1]), _ints("e", [4]),
                    _ints("ax", [1])])
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    got = NumpyBackend().run(lower(load(model), "6_4"), {"x": x})
    assert given_roots and max(given_roots) <= 3
    assert all(same_bits(got[name], want) for name, want in zip(outputs, _ort(model, {"x": x})))


def test_naming_a_decomposition_s_pieces_asks_each_name_once() -> None:
    """A Slice read backwards at FL 1.0 is a JOIN of 256 single-element slices: naming them
    asks whether a name is taken about once each (it probed from suffix 0 for each piece: 33
    thousand look-ups). The names are the same."""
    from lowering import emit

    asked: list[str] = []
    plan = emit.Plan(FeatureLevel.parse("1_0"), np.dtype(np.float32),
                     lambda name: asked.append(name) or name == "y.piece")
    names = [plan.temp("y.piece", (1,)) for _ in range(256)]
    assert names == [f"y.piece_{k}" for k in range(1, 257)]
    assert len(asked) <= 2 * 256


# ------------------------------------------------------------------- inference proved wrong
def _dilated_pool_model() -> onnx.ModelProto:
    """A MaxPool with SAME padding over a dilation (onnx infers [1, 2, 5], onnxruntime
    makes [1, 2, 3]: it pads by the undilated kernel), then a reversed Slice, a Concat of
    both and a reflect Pad: every descriptor is sized by onnx's wrong 5 columns."""
    return _model(
        [
            helper.make_node("MaxPool", ["x"], ["p"], kernel_shape=[3], dilations=[2],
                             auto_pad="SAME_UPPER"),
            helper.make_node("Slice", ["p", "m1", "low", "two", "m1"], ["s"]),
            helper.make_node("Concat", ["p", "s"], ["c"], axis=-1),
            helper.make_node("Pad", ["c", "pads"], ["y"], mode="reflect"),
        ],
        [_info("x", np.float32, (1, 2, 5))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [_ints("m1", [-1]), _ints("low", [-2**63]), _ints("two", [2]),
         _ints("pads", [0, 0, 2, 0, 0, 1])],
    )


def test_a_size_inference_got_wrong_is_lowered_again_by_the_sizes_that_arrive() -> None:
    """The pool's output arrives with 3 columns where the descriptors read 5: the run refused
    it (exit 2, "onnx infers this node's output wrongly"). Now the graph is lowered again with
    the sizes onnxruntime may make otherwise left to run time, the Slice, Concat and Pad
    lowered when they run, on the emulator, and the result is onnxruntime's. The second run
    reuses that lowering."""
    model = _dilated_pool_model()
    x = np.arange(10, dtype=np.float32).reshape(1, 2, 5)
    (want,) = _ort(model, {"x": x})
    assert want.shape == (1, 2, 9)  # 3 + 3 columns, padded by 2 and 1
    lowered = lower(load(model), "6_4")
    backend = NumpyBackend()
    for _ in range(2):
        result = backend.execute(lowered, {"x": x})
        assert np.array_equal(result.outputs["y"], want)
        assert result.record.relowered
        assert result.record.engines() == {
            "onnxruntime:CPUExecutionProvider": 1, "numpy DirectML emulator": 3
        }
        (note,) = result.record.notes
        assert "made 'p' as float32[1, 2, 3], where onnx infers float32[1, 2, 5]" in note
    plan = backend.plan(lowered)
    assert set(plan.resized) == {False}  # the unsure sizes sufficed; made once
    again = plan.resized[False]
    assert again is not None and again.tensor("c").shape is None  # left to run time
    # the graph given keeps its lowering: descriptors sized by inference, as reported
    assert lowered.tensor("c").shape == (1, 2, 10)


def test_a_relowered_run_writes_into_bound_outputs() -> None:
    """Outputs bound by the caller take the re-lowered run's results; one bound at the size
    onnx infers, which the run does not make, is refused, naming both sizes."""
    model = _dilated_pool_model()
    model.graph.node.append(helper.make_node("Concat", ["x", "x"], ["z"], axis=0))
    model.graph.output.append(_info("z", np.float32, (2, 2, 5)))
    x = np.arange(10, dtype=np.float32).reshape(1, 2, 5)
    want_y, want_z = _ort(model, {"x": x})
    lowered = lower(load(model), "6_4")
    backend = NumpyBackend()
    z = np.full(want_z.shape, np.nan, np.float32)
    got = backend.run(lowered, {"x": x}, {"z": z})
    assert got["z"] is z and np.array_equal(z, want_z)
    assert np.array_equal(got["y"], want_y)
    assert backend.last_record is not None and backend.last_record.relowered
    with pytest.raises(BackendError, match=r"output 'y' is float32\[1, 2, 9\] in this run; "
                       r"the array bound to it is float32\[1, 2, 13\]"):
        backend.run(lowered, {"x": x}, {"y": np.zeros((1, 2, 13), np.float32)})


def test_every_size_is_left_to_run_time_where_the_unsure_ones_do_not_suffice(
    monkeypatch,
) -> None:
    """Where a size onnx infers wrongly comes through an op ``SHAPE_EXACT_OPS`` trusts (as
    if the pool were trusted here), leaving the unsure sizes to run time changes nothing:
    the graph is lowered again with every computed size left to run time."""
    from dmlgraph import folding

    trusted = dict(folding._EXACT_WHEN, MaxPool=lambda graph, node: True)
    monkeypatch.setattr(folding, "_EXACT_WHEN", trusted)
    model = _dilated_pool_model()
    x = np.arange(10, dtype=np.float32).reshape(1, 2, 5)
    (want,) = _ort(model, {"x": x})
    lowered = lower(load(model), "6_4")
    backend = NumpyBackend()
    result = backend.execute(lowered, {"x": x})
    assert np.array_equal(result.outputs["y"], want)
    resized = backend.plan(lowered).resized
    assert resized[False] is None and resized[True] is not None
    # its sessions' NCHWc decision is the model's (check's reference's), not one made from
    # a copy that lost every size, pools' included
    from backends.onnxruntime.providers import layout_rewrite_safe

    assert layout_rewrite_safe(lowered) and backend.plan(resized[True]).layout_rewrite
    assert "every tensor a node computes" in result.record.notes[0]


class _WideningEngine:
    """An engine that sizes the pool's output otherwise than onnx infers: two rows and two
    columns more, as onnx 1.23's ReferenceEvaluator sizes a 3x3 MaxPool with ceil_mode,
    stride 1 and padding 1 (4x4 in, 6x6 out; the spec, onnx's inference and onnxruntime
    make 4x4): onnxruntime's values, widened with zeros."""

    engine = "widening engine"

    def prepare(self, graph):
        from backends.numpy.fallback import OnnxruntimeFallback

        run = OnnxruntimeFallback(["CPUExecutionProvider"]).prepare(graph)

        def widened(feeds):
            made = run(feeds)
            made["p"] = np.pad(made["p"], [(0, 0), (0, 0), (0, 2), (0, 2)])
            return made

        return widened


def test_a_graph_lowered_again_that_breaks_a_rule_names_the_size_the_engine_made() -> None:
    """An engine making the pool 6x6 where onnx infers 4x4 (``_WideningEngine``; a
    torchvision GoogLeNet with ``--fallback reference``) has the graph lowered again by the
    sizes made, where the Concat of x and the pool is invalid. The error said only that
    ("node 'cat' (Concat): inputs differ in dimension 2"), blaming a valid model; it now
    leads with the engine's size and onnx's, and names the engine."""
    model = _model(
        [helper.make_node("MaxPool", ["x"], ["p"], kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                          ceil_mode=1, name="pool"),
         helper.make_node("Concat", ["x", "p"], ["y"], axis=1, name="cat")],
        [_info("x", np.float32, (1, 1, 4, 4))],
        [_info("y", np.float32, (1, 2, 4, 4))],
    )
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    assert _ort(model, {"x": x})[0].shape == (1, 2, 4, 4)  # a valid model
    lowered = lower(load(model), "6_4")
    with pytest.raises(BackendError) as raised:
        NumpyBackend(_WideningEngine()).run(lowered, {"x": x})
    message, source = str(raised.value), lowered.source
    assert message.startswith(
        f"{source}: node 'pool' (MaxPool) made 'p' as float32[1, 1, 6, 6], where onnx infers "
        "float32[1, 1, 4, 4] (fallback: widening engine); lowered again by the sizes made, "
        "the graph fails: node 'cat' (Concat): inputs differ in dimension 2"
    ), message
    assert message.count(source) == 1


@pytest.mark.parametrize("edited", ["source", "lowered"])
def test_a_mismatch_is_refused_once_either_graph_has_changed(edited: str) -> None:
    """The lowering's source, edited after ``lower``, no longer says what was lowered; nor
    does the lowered graph, edited: with its outputs reordered, the run lowered again gave
    each output the other's value (a reviewer's reproducer), since the two graphs' outputs
    correspond by position. The run refuses the mismatch, as before, saying why it cannot
    lower it again."""
    model = _dilated_pool_model()
    model.graph.output.append(_info("x", np.float32, (1, 2, 5)))
    graph = load(model)
    lowered = lower(graph, "6_4")
    changed = graph if edited == "source" else lowered
    changed.outputs = list(reversed(changed.outputs))
    with pytest.raises(BackendError, match="onnx infers this node's output wrongly.*or its "
                       "source has changed since it was lowered"):
        NumpyBackend().run(lowered, {"x": np.zeros((1, 2, 5), np.float32)})


@pytest.mark.parametrize("scaled", [False, True])
def test_a_shape_vector_keeps_its_length_in_a_fallback_segment(scaled: bool) -> None:
    """A Resize to ``sizes`` made of two elements of the Shape of a Resize by scales (which
    onnx may size otherwise) and two constants, with H and W dynamic: dmlgraph lowers the
    Slice and the Concat, and the segment holding the second Resize declared ``sizes`` of
    unknown length, which onnxruntime's Resize refused ("Number of elements of input 'sizes'
    (0) must be same as rank of input 'X' (4)"; a helper's torchvision exports). A Shape's
    length is its input's rank, whatever its sizes (``PartialShapes.vector_unsure``), and
    arithmetic on it keeps that length: ``scaled``, the last two sizes are the Shape's own,
    times 1.5, floored (as torchvision's FPN computes them; its dynamic export failed so
    after the first fix)."""
    from backends.numpy.plan import segment_graph
    from dmlgraph import folding

    if scaled:  # hw = int64(floor(float(s[2:4]) * 1.5))
        hw = [helper.make_node("Slice", ["s", "en", "four"], ["hw_in"]),
              helper.make_node("Cast", ["hw_in"], ["hw_f"], to=TensorProto.FLOAT),
              helper.make_node("Mul", ["hw_f", "scale"], ["hw_m"]),
              helper.make_node("Floor", ["hw_m"], ["hw_fl"]),
              helper.make_node("Cast", ["hw_fl"], ["hw"], to=TensorProto.INT64)]
        constants = [_ints("four", [4]), helper.make_tensor("scale", TensorProto.FLOAT, [], [1.5])]
    else:
        hw, constants = [], [_ints("hw", [3, 5])]
    model = _model(
        [helper.make_node("Resize", ["x", "", "sc"], ["r"], mode="nearest"),
         helper.make_node("Shape", ["r"], ["s"]),
         helper.make_node("Slice", ["s", "st", "en"], ["nc"]),
         *hw,
         helper.make_node("Concat", ["nc", "hw"], ["sizes"], axis=0),
         helper.make_node("Resize", ["r", "", "", "sizes"], ["y"], mode="nearest")],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, "H", "W"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [helper.make_tensor("sc", TensorProto.FLOAT, [4], [1, 1, 2, 2]),
         _ints("st", [0]), _ints("en", [2]), *constants],
    )
    x = np.random.default_rng(0).random((1, 2, 4, 6), dtype=np.float32)
    (want,) = _ort(model, {"x": x})
    lowered = lower(load(model), "6_4")
    assert {n.op_type for n in lowered.nodes} >= {"SliceDesc", "JoinDesc"}
    trust = folding.PartialShapes(lowered.declared_sizes)
    assert trust.unsure(lowered, "sizes") and not trust.vector_unsure(lowered, "sizes")
    (resize,) = [n for n in lowered.nodes if n.op_type == "Resize" and "sizes" in n.inputs]
    segment = segment_graph(lowered, [resize], trust)
    assert segment.tensor("sizes").shape == (4,) and segment.tensor("r").shape == (
        None, None, None, None)  # the data, whose sizes onnx may have wrong: its rank alone
    assert same_bits(NumpyBackend().run(lowered, {"x": x})["y"], want)


def test_a_node_lowered_at_run_time_to_nothing_says_so_in_the_record() -> None:
    """A Slice whose ends arrive at run time and select nothing becomes an empty constant
    when lowered: no engine runs it. The record named its engine "none", and ``check``
    printed "1 on none"."""
    from backends.numpy.plan import NOTHING_RAN

    model = _model(
        [helper.make_node("Slice", ["x", "st", "e", "ax"], ["y"], name="cut")],
        [_info("x", np.float32, (2, 3)), _info("e", np.int64, (1,))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [_ints("st", [1]), _ints("ax", [1])],
    )
    feeds = {"x": np.ones((2, 3), np.float32), "e": np.array([1], np.int64)}
    (want,) = _ort(model, feeds)
    result = NumpyBackend().execute(lower(load(model), "6_4"), feeds)
    assert want.shape == (2, 0) and result.outputs["y"].shape == (2, 0)
    assert result.record.engines() == {NOTHING_RAN: 1}
    assert NOTHING_RAN == "nothing (folded or eliminated when lowered at run time)"


def test_a_cross_check_translates_the_graph_the_run_lowered_again() -> None:
    """``check --cross-check`` ran onnxruntime on the graph lowered ahead of time, whose
    descriptors are sized for the 5 columns onnx inferred: a Slice of the last two read
    columns 3:5 of a tensor of 3, and check failed a run that was right ("shape [1, 2, 2]
    differs from [1, 2, 0]": a reviewer's reproducer). It translates the graph the run
    lowered again now."""
    import dmlgraph

    model = _model(
        [helper.make_node("MaxPool", ["x"], ["p"], kernel_shape=[3], dilations=[2],
                          auto_pad="SAME_UPPER"),
         helper.make_node("Slice", ["p", "m2", "big", "two"], ["y"])],
        [_info("x", np.float32, (1, 2, 5))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [_ints("m2", [-2]), _ints("big", [100]), _ints("two", [2])],
    )
    x = np.arange(10, dtype=np.float32).reshape(1, 2, 5)
    report = dmlgraph.check(model, inputs={"x": x}, cross_check=True)
    assert report.passed and len(report.comparisons) == 2
    crossed = report.comparisons[1]
    assert "lowered again by the sizes the run made" in crossed.expected
    assert [o.expected_shape for o in crossed.outputs] == [(1, 2, 2)]


def test_a_bad_run_time_parameter_names_the_tensor_it_came_from() -> None:
    """A Slice whose axes arrive at run time as [9]: the error named the node, field, value
    and rule, but not which graph tensor held the value."""
    from dmlgraph.errors import ModelValidationError

    info = helper.make_tensor_value_info
    model = helper.make_model(helper.make_graph(
        [helper.make_node("Slice", ["x", "s", "e", "a"], ["y"], name="sl")], "g",
        [info("x", TensorProto.FLOAT, [4, 3]), info("s", TensorProto.INT64, [1]),
         info("e", TensorProto.INT64, [1]), info("a", TensorProto.INT64, [1])],
        [info("y", TensorProto.FLOAT, None)]),
        opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    lowered = lower(load(model))
    feeds = {"x": np.ones((4, 3), np.float32), "s": np.array([0]), "e": np.array([2]),
             "a": np.array([9])}
    with pytest.raises(ModelValidationError) as info_:
        NumpyBackend().run(lowered, feeds)
    message = str(info_.value)
    assert "axes = [9]" in message
    assert "this run's starts from 's', ends from 'e', axes from 'a'" in message


VIEW_DTYPES = [np.uint8, np.int16, np.float16, np.float32, np.uint32, np.int64, np.float64]


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_reform_is_a_view_of_the_same_bytes_or_none(data) -> None:
    """``views.reform``: the array's row-major bytes as another dtype and shape, without a
    copy, or None. Every other byte of a uint8 array as uint16 (reshaped, the pair's bytes
    lay 2 apart) raised NumPy's "the last axis must be contiguous" instead."""
    from numpy.lib.stride_tricks import as_strided

    from backends.numpy.views import reform

    dtype = np.dtype(data.draw(st.sampled_from(VIEW_DTYPES)))
    shape = tuple(data.draw(st.lists(st.integers(1, 4), max_size=4)))
    count = int(np.prod(shape))
    base = (np.arange(8192) % 251).astype(np.uint8).view(dtype)
    kind = data.draw(st.sampled_from(["packed", "transposed", "stepped", "reversed", "broadcast"]))
    if kind == "broadcast":
        strides = [data.draw(st.sampled_from([0, 1, 3])) * dtype.itemsize for _ in shape]
        x = as_strided(base, shape=shape, strides=strides)
    else:
        flat = {"stepped": base[::2], "reversed": base[::-1]}.get(kind, base)[:count]
        x = flat.reshape(shape)
        if kind == "transposed":
            x = x.transpose(data.draw(st.permutations(range(len(shape)))))
    target = np.dtype(data.draw(st.sampled_from(VIEW_DTYPES)))
    assume(x.nbytes % target.itemsize == 0)
    left = x.nbytes // target.itemsize
    new_shape = []
    for _ in range(data.draw(st.integers(0, 3))):
        part = data.draw(st.sampled_from([d for d in range(1, left + 1) if left % d == 0]))
        new_shape.append(part)
        left //= part
    new_shape.append(left)
    view = reform(x, target, tuple(new_shape))
    if view is not None:
        assert view.shape == tuple(new_shape) and view.dtype == target
        assert view.tobytes() == np.ascontiguousarray(x).tobytes()
        assert np.shares_memory(view, base)
    if kind == "packed":  # contiguous bytes always have a view
        assert view is not None


def test_reform_of_bytes_apart_is_none() -> None:
    from backends.numpy.views import reform

    every_other = np.arange(8, dtype=np.uint8)[::2]
    assert reform(every_other, np.dtype(np.uint16), (2,)) is None
    assert reform(every_other[::-1], np.dtype(np.uint16), (1, 2)) is None
    packed = np.arange(8, dtype=np.uint8)
    view = reform(packed, np.dtype(np.uint16), (2, 2))
    assert view is not None and view.tolist() == packed.view(np.uint16).reshape(2, 2).tolist()


def _run_time_pad_peak(mode: str, x: np.ndarray, pads: list[int]) -> tuple[np.ndarray, int]:
    """A Pad of ``x`` (a uint8 vector) by ``pads`` given at run time, at FL 6_4: its result
    and the run's peak of memory Python allocated (tracemalloc)."""
    import tracemalloc

    model = _model([helper.make_node("Pad", ["x", "pads"], ["y"], mode=mode)],
                   [_info("x", np.uint8, [len(x)]), _info("pads", np.int64, [2])],
                   [_info("y", np.uint8, [None])])
    lowered = lower(load(model), "6_4")
    tracemalloc.start()
    try:
        (y,) = NumpyBackend().run(lowered, {"x": x, "pads": np.array(pads)}).values()
        return y, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_an_edge_pad_s_moves_take_no_memory_in_proportion_to_its_pads() -> None:
    """An edge Pad of 4 bytes by 2^24 at run time: each border is one broadcast move. Its
    moves were built from an index array of every output position (int64, 8 bytes per output
    byte here, and as many again for its differences): pads of 2^31 took 16 GB beyond the
    output, past the memory check, and the process was killed."""
    pads = 1 << 24
    x = np.arange(1, 5, dtype=np.uint8)
    y, peak = _run_time_pad_peak("edge", x, [1, pads])
    assert y.shape == (pads + 5,) and y[0] == 1 and y[1:5].tolist() == [1, 2, 3, 4]
    assert (y[5:] == 4).all()
    assert peak < 3 * y.nbytes


@pytest.mark.parametrize("mode", ["wrap", "reflect"])
def test_a_periodic_pad_s_moves_are_those_of_one_period(mode) -> None:
    """A wrap or reflect Pad of 4 bytes by 2^22 at run time: each run of the first period's
    border is one move, repeated along a new axis. Every run of every period was a move of
    its own: pads of 2^22 on 4 floats took a million moves, 2.4 GB and 50 s to build."""
    pads = 1 << 22
    x = np.arange(1, 5, dtype=np.uint8)
    y, peak = _run_time_pad_peak(mode, x, [5, pads])
    i = np.arange(-5, 4 + pads)
    if mode == "wrap":
        expected = x[i % 4]
    else:  # DML_SPEC's REFLECTION map: period 2 (n - 1)
        m = i % 6
        expected = x[np.where(m < 4, m, 6 - m)]
    np.testing.assert_array_equal(y, expected)
    assert peak < 3 * y.nbytes


def _shared_join_input_model(joins: int) -> onnx.ModelProto:
    """One SLICE's output ``t`` read by ``joins`` JOINs (each with a slice of its own), whose
    outputs one last JOIN stacks."""
    def ints(name: str, value: int) -> onnx.TensorProto:
        return helper.make_tensor(name, TensorProto.INT64, [1], [value])

    nodes = [helper.make_node("Slice", ["x", "s0", "e0", "ax"], ["t"])]
    init = [ints("ax", 1), ints("s0", 0), ints("e0", 1)]
    for i in range(joins):
        nodes += [
            helper.make_node("Slice", ["x", f"s{i + 1}", f"e{i + 1}", "ax"], [f"p{i}"]),
            helper.make_node("Concat", ["t", f"p{i}"], [f"c{i}"], axis=1),
        ]
        init += [ints(f"s{i + 1}", i + 1), ints(f"e{i + 1}", i + 2)]
    nodes.append(helper.make_node("Concat", [f"c{i}" for i in range(joins)], ["y"], axis=0))
    graph = helper.make_graph(
        nodes, "shared", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, joins + 1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2 * joins, 2])], init,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


def test_join_inputs_placed_without_listing_a_shared_tensors_readers_per_join(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Placing each JOIN input in its output asks whether anything else reads it: that listed
    (and sorted) every reader of the tensor per JOIN reading it, quadratic in a tensor's
    readers (8,000 JOINs of one SLICE's output: minutes). Listed readers stay linear."""
    from dmlgraph.ir import Graph

    joins = 40
    model = _shared_join_input_model(joins)
    lowered = lower(load(model), "6_4")
    listed = []
    consumers = Graph.consumers

    def counted(self: Graph, tensor: str) -> list[Any]:
        found = consumers(self, tensor)
        listed.append(len(found))
        return found

    monkeypatch.setattr(Graph, "consumers", counted)
    x = np.arange(2 * (joins + 1), dtype=np.float32).reshape(2, joins + 1)
    (got,) = NumpyBackend().run(lowered, {"x": x}).values()
    assert sum(listed) <= 4 * (3 * joins + 2), sum(listed)  # readers of each tensor, a few times
    (want,) = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})
    assert same_bits(got, want)


@pytest.mark.skipif(copy_threads.Program is None, reason="the native copier is not built here")
def test_a_thread_count_past_the_native_copiers_most_keeps_the_native_copier() -> None:
    """``threads`` past the native copier's most (16) gave it up for a Python thread per
    list: threads=10**6 on a 16 MB padding started thousands of threads, kept for good, and
    ran 50x slower, with no native replay. The count is now the copier's most at the
    outside, and the plan replays natively; values are np.pad's."""
    n = 1 << 22
    model = _model([helper.make_node("Pad", ["x", "p"], ["y"], mode="reflect")],
                   [_info("x", np.float32, (n,))], [_info("y", np.float32, (n + 4,))],
                   [_ints("p", [1, 3])])
    lowered = lower(load(model), "6_4")
    x = np.arange(n, dtype=np.float32)
    for count in (10**6, 17):
        backend = NumpyBackend(threads=count)
        assert backend.threads == copy_threads.MAX_THREADS
        assert same_bits(backend.run(lowered, {"x": x})["y"], np.pad(x, (1, 3), mode="reflect"))
        assert backend.plan(lowered).replay is not None
