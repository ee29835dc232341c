"""The native copier (``backends/numpy/_copies.c``) against ``np.copyto``, its oracle: random
strided, reversed and broadcast copies of every element size, split over lists (threads) and
lockstep groups, streamed or not; and the errors it gives instead of copying wrongly."""

from __future__ import annotations

import ctypes
import mmap
import os
import sys
import weakref

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from backends.numpy import threads as copy_threads

pytestmark = pytest.mark.skipif(
    copy_threads.Program is None, reason="the native copier is not built here"
)
Program = copy_threads.Program
DTYPES = [np.uint8, np.uint16, np.uint32, np.uint64, np.dtype("V3")]


@st.composite
def strided_copies(draw, dtype: np.dtype):
    """A destination view and a source view broadcastable to it: any steps, negative too,
    size-1 and missing leading source axes, a 0-d fill; with the arrays they view (the
    destination's, then the source's: a fill is an array of its own)."""
    rank = draw(st.integers(1, 5))
    # the last axis long enough for rows to stream (256 bytes and up) at every item size
    shape = (*draw(st.lists(st.integers(0, 5), min_size=rank - 1, max_size=rank - 1)),
             draw(st.one_of(st.integers(0, 70), st.integers(256, 300))))
    steps = [draw(st.sampled_from([1, 1, 2, 3, -1, -2])) for _ in shape]
    dims = [max(1, n) * abs(k) + 1 for n, k in zip(shape, steps)]
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    big = np.frombuffer(rng.bytes(dtype.itemsize * int(np.prod(dims))), dtype=dtype)
    big = big.reshape(dims)
    source = big[tuple(slice(None, n * k, k) if k > 0 else slice(None, -(n * -k) - 1, k)
                       for n, k in zip(shape, steps))]
    kind = draw(st.sampled_from(["full", "broadcast", "fill"]))
    if kind == "fill":
        source = np.array(big.reshape(-1)[0])
    elif kind == "broadcast" and source.size:
        source = source[(0,) * draw(st.integers(0, rank))]  # leading axes missing
        source = source[tuple(slice(0, 1) if draw(st.booleans()) else slice(None)
                              for _ in source.shape)]
    outer = np.zeros(tuple(n + 2 for n in shape), dtype)
    destination = outer[tuple(slice(1, 1 + n) for n in shape)]
    if draw(st.booleans()):  # a destination read backwards along one axis
        axis = draw(st.integers(0, rank - 1))
        destination = np.flip(destination, axis)
    return outer, destination, source, big


def split_lists(data, destination, source, parts: int, lead: int) -> list:
    """The copy cut along axis 0 into up to ``parts`` lists (threads), each a lockstep group
    over up to ``lead`` leading axes, or a plain move with ``lead`` 0."""
    full = np.broadcast_to(source, destination.shape)
    n = destination.shape[0]
    bounds = sorted({0, n, *data.draw(st.lists(st.integers(0, n), max_size=parts - 1))})
    lists = []
    for a, b in zip(bounds, bounds[1:]):
        piece = (destination[a:b], full[a:b])
        lead_here = min(lead, destination.ndim)
        lists.append([(lead_here, [piece])] if lead_here else [piece])
    return lists or [[(destination, source)]]


@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@settings(max_examples=80, deadline=None)
@given(st.integers(1, 3), st.integers(0, 5), st.data())
def test_copies_match_numpy(dtype, stream, parts, lead, data) -> None:
    """Per element size, streamed or not: Split along axis 0 over up to 3 lists, each a lockstep group over up to ``lead``
    leading axes (or plain moves): the destination, borders included, is what np.copyto
    makes."""
    outer, destination, source, _ = data.draw(strided_copies(np.dtype(dtype)))
    want = outer.copy()
    offset = destination.__array_interface__["data"][0] - outer.__array_interface__["data"][0]
    np.copyto(np.ndarray(destination.shape, destination.dtype, want, offset,
                         destination.strides), source)
    Program(split_lists(data, destination, source, parts, lead), stream=stream)()
    assert outer.tobytes() == want.tobytes()


def test_a_lockstep_group_fills_rows_in_order() -> None:
    """Later moves of a group see what earlier ones wrote in the same slab (a padding's
    borders read its interior), slab by slab."""
    out = np.zeros((3, 6), np.int32)
    x = np.arange(12, dtype=np.int32).reshape(3, 4) + 1
    moves = [(out[:, 1:5], x), (out[:, 0:1], out[:, 1:2]), (out[:, 5:6], out[:, 4:5])]
    Program([[(1, moves)]])()
    expected = np.pad(x, ((0, 0), (1, 1)), mode="edge")
    assert (out == expected).all()


def test_streamed_and_threaded_copy_of_many_megabytes() -> None:
    """Large enough to stream by size on two threads: the bits arrive, reversed."""
    x = np.arange(3 << 20, dtype=np.uint32).reshape(-1, 1024)
    out = np.empty_like(x)
    half = x.shape[0] // 2
    program = Program([[(out[:half], x[:half, ::-1])], [(out[half:], x[half:, ::-1])]])
    assert program.nbytes == out.nbytes and program.threads == 2
    program()
    assert (out == x[:, ::-1]).all()


@pytest.mark.parametrize(
    "lists, error, message",
    [
        ([], ValueError, "lists of moves"),
        ([[(np.zeros(4, np.uint32), np.zeros(4, np.uint16))]], TypeError, "item sizes differ"),
        ([[(np.zeros(4, np.uint32), np.zeros(5, np.uint32))]], ValueError, "does not broadcast"),
        ([[(np.zeros(4, np.uint32), np.zeros((2, 4), np.uint32))]], ValueError, "source not above"),
        ([[(np.broadcast_to(np.zeros(1, np.uint8), (4,)), np.zeros(4, np.uint8))]],
         (BufferError, ValueError), "read-only|writable"),
        ([[(1, [(np.zeros((2, 3), np.uint8), np.zeros((2, 3), np.uint8)),
                (np.zeros((3, 3), np.uint8), np.zeros((3, 3), np.uint8))])]],
         ValueError, "leading axis 0"),
        ([[(-1, [(np.zeros(2, np.uint8), np.zeros(2, np.uint8))])]], ValueError, "lead"),
        ([[np.zeros(2)]], TypeError, "tuple"),
    ],
)
def test_what_it_refuses(lists, error, message) -> None:
    with pytest.raises(error, match=message):
        Program(lists)


def test_compiled_falls_back_to_numpy_for_what_the_native_copier_refuses() -> None:
    """A move NumPy can make (a cast) but the copier cannot: the plan's call is NumPy's."""
    destination = np.zeros(4, np.float64)
    run = copy_threads.compiled([[(destination, np.arange(4, dtype=np.int32))]])
    assert not isinstance(run, Program)
    run()
    assert destination.tolist() == [0.0, 1.0, 2.0, 3.0]


def _chained_lists(count: int, width: int) -> tuple[list, list, np.ndarray]:
    """``count`` lists, each two moves in order: a <- b, then b <- c. Run once, a holds b's
    old values and b holds c's; run twice, a would hold c's too: each list runs exactly once,
    whole, in order, or the bits say otherwise."""
    rows = np.arange(3 * count * width, dtype=np.uint32).reshape(3, count, width)
    a, b, c = rows.copy()
    lists = [[(a[k], b[k]), (b[k], c[k])] for k in range(count)]
    return lists, [a, b], rows


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 40), st.integers(1, 6), st.integers(1, 300))
def test_each_list_is_taken_by_one_thread_once(count, threads, width) -> None:
    """More lists than threads (pieces of a copy, taken by the threads as they free up):
    every list runs once, by one thread, its moves in order; and more threads than lists
    run the lists alone. Before, a program ran list k on thread k, one list per thread."""
    lists, (a, b), rows = _chained_lists(count, width)
    program = Program(lists, threads=threads)
    assert program.lists == count and program.threads == min(threads, count)
    program()
    assert (a == rows[1]).all() and (b == rows[2]).all()


def test_programs_called_at_once_from_two_threads_each_run_all_their_lists() -> None:
    """One call holds the copy threads; a call made meanwhile on another thread takes all its
    lists itself. Each list still runs once."""
    import threading

    failures: list[str] = []

    def calls(seed: int) -> None:
        for round_ in range(30):
            lists, (a, b), rows = _chained_lists(25 + seed, 2000 + round_)
            try:
                Program(lists, threads=2)()
            except Exception as exc:  # a thread's exception would not reach the test
                failures.append(f"thread {seed}: {exc!r}")
                return
            if not ((a == rows[1]).all() and (b == rows[2]).all()):
                failures.append(f"thread {seed}, round {round_}")

    workers = [threading.Thread(target=calls, args=(seed,)) for seed in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert not failures


def test_a_copy_thread_asleep_when_every_list_is_taken_is_called_off() -> None:
    """A call whose calling thread takes every list before its copy thread begins (asleep
    after its 2 ms of spinning: waking it takes microseconds, two tiny lists take
    nanoseconds) calls the thread off rather than wait for it to wake and find nothing left
    (64 us to 2 ms on a loaded 2-vCPU VM). Every list still runs once, by one thread, in this
    and the calls after it, which the thread called off must not take for the old batch."""
    import time

    from backends.numpy._copies import called_off, usable_cpus

    if usable_cpus() < 2:
        pytest.skip("one CPU: a call uses no copy thread")
    before = called_off()
    for round_ in range(20):
        time.sleep(0.004)  # past the copy thread's 2 ms of spinning: it sleeps
        lists, (a, b), rows = _chained_lists(2, 4 + round_)
        Program(lists, threads=2)()
        assert (a == rows[1]).all() and (b == rows[2]).all()
        lists, (a, b), rows = _chained_lists(40, 5000)  # right after: the thread may join
        Program(lists, threads=2)()
        assert (a == rows[1]).all() and (b == rows[2]).all()
    assert called_off() > before


@pytest.mark.parametrize("files, quota", [
    ({"v2": "200000 100000\n"}, 2),
    ({"v2": "150000 100000\n"}, 1),  # whole CPUs: 1.5 allows one thread's spinning
    ({"v2": "50000 100000\n"}, 1),
    ({"v2": "max 100000\n"}, None),
    ({"v1": ("400000\n", "100000\n")}, 4),
    ({"v1": ("-1\n", "100000\n")}, None),
    ({}, None),
])
def test_a_cgroup_cpu_quota_caps_the_default_threads(tmp_path, monkeypatch, files, quota):
    """A container limited by a CPU quota (``docker --cpus=2``) lists every CPU of its host
    in its affinity; the default copy threads take the quota's whole CPUs too, or 3-8 copy
    threads on 2 CPUs' worth stall each call (they spin waiting for the ones descheduled).
    cgroup v2's ``cpu.max`` first, then v1's quota and period."""
    v2 = tmp_path / "cpu.max"
    v1 = (tmp_path / "cfs_quota_us", tmp_path / "cfs_period_us")
    if "v2" in files:
        v2.write_text(files["v2"])
    if "v1" in files:
        for path, text in zip(v1, files["v1"]):
            path.write_text(text)
    monkeypatch.setattr(copy_threads, "CGROUP_CPU_MAX", str(v2))
    monkeypatch.setattr(copy_threads, "CGROUP_V1_QUOTA", tuple(map(str, v1)))
    assert copy_threads.quota_cpus() == quota
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(16)), raising=False)
    assert copy_threads.default_threads() == min(quota or 8, 8)


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="no affinity on this platform")
@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_a_cgroup_cpu_quota_caps_a_calls_threads_given_or_not(tmp_path, monkeypatch) -> None:
    """The quota caps a call's threads as its CPUs do, a count the caller gave too: with 8
    copy threads on a 2-CPU quota (``docker --cpus=2`` shows every host CPU in the
    affinity), the others spin waiting for the ones descheduled. In a child, so the test
    process keeps its limit."""
    from backends.numpy._copies import limit_cpus, usable_cpus

    (tmp_path / "cpu.max").write_text("100000 100000\n")  # one CPU's worth
    monkeypatch.setattr(copy_threads, "CGROUP_CPU_MAX", str(tmp_path / "cpu.max"))
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            assert copy_threads.limit_to_quota() == 1
            lists, (a, b), rows = _chained_lists(12, 5000)
            Program(lists, threads=8)()
            good = (a == rows[1]).all() and (b == rows[2]).all()
            one = usable_cpus() == 1
            limit_cpus(0)  # no limit: the affinity's count again
            code = 0 if good and one and usable_cpus() == len(os.sched_getaffinity(0)) else 1
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    with pytest.raises(ValueError, match="limit_cpus"):
        limit_cpus(-1)


@pytest.mark.parametrize("threads", [0, -1, copy_threads.MAX_THREADS + 1])
def test_threads_out_of_range_are_refused(threads) -> None:
    x = np.zeros(4, np.uint8)
    if threads == 0:  # the default: one thread per list, up to MAX_THREADS
        assert Program([[(x[:2], x[2:])], [(x[2:], x[:2])]], threads=0).threads == 2
        many = Program([[(x[:2], x[2:])]] * (copy_threads.MAX_THREADS + 4))
        assert many.threads == copy_threads.MAX_THREADS
        return
    with pytest.raises(ValueError, match="threads"):
        Program([[(x[:2], x[2:])]], threads=threads)


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no affinity on this platform")
@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_a_call_uses_no_more_threads_than_its_cpus() -> None:
    """The copier counts the CPUs the calling thread may run on (a container's or taskset's
    limit), as ``default_threads`` counts them, and follows a change; a program of more
    threads than that runs on fewer (copy threads without a CPU each stalled a call 5-10x:
    the others spin waiting for them) and copies everything. In a child, so the test
    process keeps its CPUs."""
    from backends.numpy._copies import usable_cpus

    assert usable_cpus() == len(os.sched_getaffinity(0))
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
            lists, (a, b), rows = _chained_lists(12, 5000)
            Program(lists, threads=8)()
            good = (a == rows[1]).all() and (b == rows[2]).all()
            code = 0 if usable_cpus() == 1 and good else 1
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_copy_threads_are_started_again_in_a_forked_child() -> None:
    x = np.arange(1 << 16, dtype=np.uint32)
    out = np.zeros_like(x)
    Program([[(out[:100], x[:100])], [(out[100:], x[100:])]])()  # threads exist in the parent
    pid = os.fork()
    if pid == 0:  # the child: its copy threads must be new ones, or this hangs
        child = np.zeros_like(x)
        Program([[(child[:100], x[:100])], [(child[100:], x[100:])]])()
        os._exit(0 if (child == x).all() else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@settings(max_examples=40, deadline=None)
@given(st.data())
def test_address_is_numpys(dtype, data) -> None:
    """The native look-up of element 0's address, against NumPy's own: strided, reversed,
    broadcast, read-only, empty and 0-d arrays alike."""
    from backends.numpy._copies import address

    _, destination, source, _ = data.draw(strided_copies(np.dtype(dtype)))
    source = np.asarray(source)  # a NumPy scalar has no fixed address
    for array in (destination, source, np.broadcast_to(source, destination.shape)):
        assert address(array) == array.__array_interface__["data"][0]
    frozen = destination.view()
    frozen.flags.writeable = False
    assert address(frozen) == destination.__array_interface__["data"][0]


@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@settings(max_examples=60, deadline=None)
@given(st.data())
def test_last_axis_join_in_lockstep_matches_concatenate(dtype, stream, data) -> None:
    """A JOIN on the last axis, as the plan gives it: one lockstep group whose moves are each a
    contiguous run per slab (copied as plain pieces), over leading axes that merge where the
    strides allow and stay apart where a source steps over rows; at any alignment of the
    destination."""
    dtype = np.dtype(dtype)
    rank = data.draw(st.integers(2, 4))
    lead = data.draw(st.integers(1, rank - 1))
    outer_shape = data.draw(st.lists(st.integers(1, 4), min_size=rank - 1, max_size=rank - 1))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    sources = []
    for _ in range(data.draw(st.integers(1, 8))):
        width = data.draw(st.one_of(st.integers(1, 9), st.integers(60, 140)))
        step = data.draw(st.sampled_from([1, 1, 2]))  # 2: rows apart, axes cannot merge
        full = np.frombuffer(rng.bytes(dtype.itemsize * step * int(np.prod(outer_shape)) * width),
                             dtype).reshape(outer_shape[0] * step, *outer_shape[1:], width)
        sources.append(full[::step])
    widths = [s.shape[-1] for s in sources]
    skew = data.draw(st.integers(0, 3))  # the destination starts skew items into a buffer
    flat = np.zeros(skew + int(np.prod(outer_shape)) * sum(widths) + 1, dtype)
    out = flat[skew:skew + int(np.prod(outer_shape)) * sum(widths)].reshape(
        *outer_shape, sum(widths))
    moves, at = [], 0
    for s, w in zip(sources, widths):
        moves.append((out[..., at:at + w], s))
        at += w
    Program([[(lead, moves)]], stream=stream)()
    want = np.concatenate(sources, axis=-1)
    assert out.tobytes() == want.tobytes()
    assert flat[:skew].tobytes() + flat[-1:].tobytes() == bytes((skew + 1) * dtype.itemsize)


@pytest.mark.skipif(sys.platform != "linux", reason="guard pages through libc's mprotect")
@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.uint32, np.uint64], ids=str)
def test_step_two_rows_read_nothing_past_their_last_item(dtype, stream) -> None:
    """Every other item of a row that ends at a page with no access behind it: the shuffled
    loads of a step-2 row take two items per item kept, so they must stop before the last
    (reading past it would fault here). The values are NumPy's."""
    page = mmap.PAGESIZE
    buffer = mmap.mmap(-1, 2 * page, prot=mmap.PROT_READ | mmap.PROT_WRITE)
    libc = ctypes.CDLL(None, use_errno=True)
    start = ctypes.addressof(ctypes.c_char.from_buffer(buffer))
    items = np.frombuffer(buffer, dtype, count=page // np.dtype(dtype).itemsize)
    items[:] = np.arange(items.size) % 251
    assert libc.mprotect(ctypes.c_void_p(start + page), page, 0) == 0  # PROT_NONE
    try:
        source = items[1::2]  # its last item ends the page
        out = np.zeros(source.shape, dtype)
        Program([[(out, source)]], stream=stream)()
        assert np.array_equal(out, source)
    finally:
        libc.mprotect(ctypes.c_void_p(start + page), page, 3)  # PROT_READ | PROT_WRITE


@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@settings(max_examples=60, deadline=None)
@given(st.data())
def test_rows_assembled_from_pieces_match_numpy(dtype, stream, data) -> None:
    """A lockstep group whose moves tile each output row, as a padding's borders and interior
    do, from sources read forwards, backwards, every other item or broadcast, streamed or not.
    Gaps between the pieces keep what they held. The result is what the same assignments in
    order make in NumPy."""
    dtype = np.dtype(dtype)
    rows = data.draw(st.integers(2, 6))
    widths = data.draw(st.lists(st.integers(1, 40), min_size=2, max_size=5))
    gap = data.draw(st.sampled_from([0, 0, 1]))  # 1: one item left out after the first piece
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    total = sum(widths) + gap
    out = np.frombuffer(rng.bytes(dtype.itemsize * rows * total), dtype).reshape(rows, total)
    out = out.copy()
    want = out.copy()
    moves, at = [], 0
    for k, w in enumerate(widths):
        kind = data.draw(st.sampled_from(["forward", "backward", "step2", "broadcast"]))
        base = np.frombuffer(rng.bytes(dtype.itemsize * rows * 2 * w), dtype).reshape(rows, 2 * w)
        source = {"forward": base[:, :w], "backward": base[:, w - 1::-1] if w > 1 else base[:, :1],
                  "step2": base[:, ::2], "broadcast": base[:, :1]}[kind]
        moves.append((out[:, at:at + w], source))
        want[:, at:at + w] = source
        at += w + (gap if k == 0 else 0)
    Program([[(1, moves)]], stream=stream)()
    assert out.tobytes() == want.tobytes()


@pytest.mark.parametrize("stream", [True, False])
def test_a_group_reading_its_own_row_is_not_assembled_apart(stream) -> None:
    """Borders reflected from the interior just written, within one group: the moves tile
    each row, and the borders' sources are the destination; the borders must see the
    interior."""
    out = np.zeros((64, 204), np.int32)  # rows long enough to stream
    x = np.arange(64 * 200, dtype=np.int32).reshape(64, 200) + 1
    moves = [(out[:, 2:202], x), (out[:, 0:2], out[:, 4:2:-1]),
             (out[:, 202:204], out[:, 200:198:-1])]
    Program([[(1, moves)]], stream=stream)()
    assert (out == np.pad(x, ((0, 0), (2, 2)), mode="reflect")).all()


def _at(array: np.ndarray, view: np.ndarray, root: np.ndarray) -> np.ndarray:
    """The view ``view`` of ``root`` made again over ``array`` (same shape and dtype)."""
    offset = copy_threads.address(view) - copy_threads.address(root)
    return np.ndarray(view.shape, view.dtype, array, offset, view.strides)


@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@settings(max_examples=60, deadline=None)
@given(st.integers(1, 3), st.integers(0, 5), st.data())
def test_a_relocated_program_copies_between_the_buffers_each_call_names(
    dtype, stream, parts, lead, data
) -> None:
    """Built over two root buffers and called with the addresses of two others, a program
    moves between those, as np.copyto does between the same views of them, and leaves the
    buffers it was built over as they were; a fill outside both roots stays where it is."""
    outer, destination, source, big = data.draw(strided_copies(np.dtype(dtype)))
    lists = split_lists(data, destination, source, parts, lead)
    address = copy_threads.address
    roots = [(address(outer), outer.nbytes), (address(big), big.nbytes)]
    program = Program(lists, stream=stream, roots=roots)
    built = outer.tobytes(), big.tobytes()
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    for _ in range(2):  # twice, elsewhere each time
        dst = np.frombuffer(rng.bytes(outer.nbytes), outer.dtype).reshape(outer.shape).copy()
        src = np.frombuffer(rng.bytes(big.nbytes), big.dtype).reshape(big.shape).copy()
        want = dst.copy()
        filled = source if source.base is None and source.ndim == 0 else _at(src, source, big)
        np.copyto(_at(want, destination, outer), filled)
        program([address(dst), address(src)])
        assert dst.tobytes() == want.tobytes()
    assert (outer.tobytes(), big.tobytes()) == built


def test_a_relocatable_program_needs_the_addresses_of_the_roots_it_moves() -> None:
    x, out = np.arange(8, dtype=np.uint32), np.zeros(8, np.uint32)
    address = copy_threads.address
    program = Program([[(out, x)]], roots=[(address(out), out.nbytes), None, (address(x), 32)])
    with pytest.raises(TypeError, match="addresses"):
        program()
    with pytest.raises(ValueError, match="3 root addresses"):
        program([address(out)])
    with pytest.raises(ValueError, match="root 2 .* no address"):
        program([address(out), None, None])
    program([address(out), None, address(x)])  # root 1 is not relocated: no address needed
    assert out.tolist() == x.tolist()
    with pytest.raises(TypeError, match="no arguments"):
        Program([[(out, x)]])([address(out)])
    with pytest.raises(TypeError, match="None or \\(address, size\\)"):
        Program([[(out, x)]], roots=[5])


def test_a_program_reads_its_roots_addresses_at_their_slots() -> None:
    """A program of two roots of a plan's many reads their addresses where its slots say,
    in the plan's list of all of them; a call whose list is too short, and slots that do
    not place the roots, are refused."""
    x, out = np.arange(8, dtype=np.uint32), np.zeros(8, np.uint32)
    address = copy_threads.address
    program = Program([[(out, x)]], roots=[(address(out), out.nbytes), (address(x), 32)],
                      slots=[5, 2])
    src, dst = np.arange(8, 16, dtype=np.uint32), np.zeros(8, np.uint32)
    addresses = [None] * 7
    addresses[5], addresses[2] = address(dst), address(src)
    program(addresses)
    assert dst.tolist() == src.tolist() and out.tolist() == [0] * 8  # built over, not moved
    with pytest.raises(ValueError, match="at least 6 root addresses expected, got 5"):
        program(addresses[:5])
    with pytest.raises(ValueError, match="root 2 .* no address"):
        program([None, None, None, None, None, address(dst)])
    with pytest.raises(ValueError, match="2 slots expected"):
        Program([[(out, x)]], roots=[(address(out), 32), (address(x), 32)], slots=[0])
    with pytest.raises(ValueError, match="negative"):
        Program([[(out, x)]], roots=[(address(out), 32)], slots=[-1])
    with pytest.raises(TypeError, match="give the roots"):
        Program([[(out, x)]], slots=[0])


def test_a_replay_refuses_a_program_reading_addresses_it_does_not_bind() -> None:
    """A replay binds a plan's roots; a program reading a slot beyond them is refused when
    the replay is made, not read past at a run."""
    import threading

    x, out = np.arange(8, dtype=np.uint32), np.zeros(8, np.uint32)
    address = copy_threads.address
    program = Program([[(out, x)]], roots=[(address(out), 32)], slots=[3])
    with pytest.raises(ValueError, match="reads 4 root addresses, the replay binds 2"):
        copy_threads.Replay((), (), (program,), (None, None), threading.Lock(),
                            np.empty((2, 3), np.float32))


@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.uint32, np.uint64], ids=str)
@pytest.mark.parametrize("border", ["reflect", "edge", "fill", "wrap"])
def test_sixteen_byte_borders_beside_an_interior_match_numpy(dtype, stream, border) -> None:
    """A padding's row as the plan makes it: an interior and a 16-byte border on each side
    (one register each, streamed where aligned: rows start 16-aligned here, and 8 bytes off
    in a second array), from the input reflected, repeated, filled or wrapped."""
    dtype = np.dtype(dtype)
    k = 16 // dtype.itemsize  # items in 16 bytes
    rows, width = 48, 512 // dtype.itemsize + 3  # a slab long enough to stream
    x = np.random.default_rng(3).integers(0, 255, (rows, width)).astype(dtype)
    fill = np.array(7, dtype)
    sources = {
        "reflect": (x[:, k:0:-1], x[:, -2:-k - 2:-1]),
        "edge": (np.broadcast_to(x[:, :1], (rows, k)), np.broadcast_to(x[:, -1:], (rows, k))),
        "fill": (np.broadcast_to(fill, (rows, k)), np.broadcast_to(fill, (rows, k))),
        "wrap": (x[:, -k:], x[:, :k]),
    }[border]
    for skew in (0, 8):  # bytes the output's rows start past a 16-byte boundary
        memory = np.zeros(rows * (width + 2 * k) * dtype.itemsize + 64, np.uint8)
        start = (-copy_threads.address(memory)) % 16 + skew
        out = memory[start:start + rows * (width + 2 * k) * dtype.itemsize].view(dtype)
        out = out.reshape(rows, width + 2 * k)
        moves = [(out[:, k:k + width], x), (out[:, :k], sources[0]),
                 (out[:, k + width:], sources[1])]
        Program([[(1, moves)]], stream=stream)()
        want = np.concatenate([sources[0], x, sources[1]], axis=1)
        assert out.tobytes() == want.tobytes()


def test_object_arrays_are_left_to_numpy() -> None:
    """A Program copies bytes: references copied so are not counted, and the objects die
    while the destination still holds them."""

    class Payload:
        """An object a weak reference can follow."""

    src = np.array([Payload() for _ in range(4)], dtype=object)
    dst = np.empty(4, dtype=object)
    with pytest.raises(TypeError, match="object arrays hold references"):
        Program([[(dst, src)]])
    alive = weakref.ref(src[0])
    copy_threads.compiled([[(dst, src)]])()  # the backend's entry point: NumPy copies them
    del src
    assert alive() is not None and dst[0] is alive()
    # a record with an object field beside one NumPy cannot word a format for (bfloat16)
    import ml_dtypes

    record = np.dtype([("a", object), ("b", ml_dtypes.bfloat16)])
    with pytest.raises(TypeError, match="object arrays hold references"):
        Program([[(np.zeros(3, record), np.zeros(3, record))]])


def test_a_program_keeps_its_memory_from_moving() -> None:
    """The moves point into their buffers: a bytearray under them cannot be resized (its
    block would be freed under the pointers) while the Program lives."""
    dst, src = bytearray(64), bytes(range(64))
    program = Program([[(dst, src)]])
    with pytest.raises(BufferError):
        dst.extend(b"x" * (1 << 20))
    program()
    assert dst == bytearray(src)
    del program
    dst.extend(b"x")  # released with the Program


def test_a_program_leaves_the_callers_tuples_as_they_were() -> None:
    d, s = np.zeros(4, np.uint8), np.ones(4, np.uint8)
    moves = [(d, s)]
    lists = (moves,)
    group = (1, [(d[None], s[None])])
    nested = ((group,),)
    Program(lists)
    Program(nested)
    assert lists[0] is moves and nested[0][0] is group and isinstance(group[1], list)


def test_bytes_written_saturate_rather_than_overflow() -> None:
    """Zero-stride destinations of 2^62 elements: their byte count would overflow (UBSan)."""
    dst = np.lib.stride_tricks.as_strided(np.zeros(1, np.uint8), (1 << 62,), (0,))
    program = Program([[(dst, np.zeros((), np.uint8))] * 3])  # built, never run
    assert program.nbytes == sys.maxsize


def test_arrays_numpy_cannot_word_a_format_for_are_still_copied() -> None:
    """ml_dtypes' bfloat16: NumPy exports its buffer, but not a format string for it."""
    import ml_dtypes

    source = np.arange(6).astype(ml_dtypes.bfloat16)
    destination = np.zeros(6, ml_dtypes.bfloat16)
    Program([[(destination, source[::-1])]])()
    assert destination.tobytes() == source[::-1].tobytes()


def test_a_streamed_groups_bytes_saturate_too() -> None:
    """A lockstep group's slab bytes, summed when it streams, overflowed as nbytes did."""
    dst = np.lib.stride_tricks.as_strided(np.zeros(1, np.uint8), (2, 1 << 61), (0, 0))
    program = Program([[(1, [(dst, np.zeros((), np.uint8))] * 5)]])  # built, never run
    assert program.nbytes == sys.maxsize


def test_a_large_program_by_size_times_both_stores_then_keeps_the_faster() -> None:
    """From STREAM_BYTES, ``stream=None`` writes neither way for good before it has timed
    both in two rounds (a VM's reported cache size can be the host's, so no size decides;
    a program's first calls run slow whatever the way, so the first round only picks the
    way to time again): ``streams`` is None for its first TUNE_CALLS calls, a bool after,
    and every call copies right in both ways and across the switches. Told True or False, or
    below the size, a program never times."""
    from backends.numpy._copies import STREAM_BYTES, STREAMS, TUNE_CALLS

    elements = STREAM_BYTES // 4 + 1024
    rng = np.random.default_rng(0)
    x = rng.integers(0, 2**32, (elements // 1024, 1024), dtype=np.uint32)
    out = np.zeros((elements // 1024, 1024 + 8), np.uint32)
    program = Program([[(out[:, 4:-4], x)]])
    said = []
    calls = TUNE_CALLS + 4
    for _ in range(calls):
        out[...] = 7
        program()
        assert np.array_equal(out[:, 4:-4], x) and (out[:, :4] == 7).all()
        said.append(program.streams)
    if STREAMS:
        assert TUNE_CALLS >= 16  # two rounds: at least a block of each way in each
        assert said[: TUNE_CALLS - 1] == [None] * (TUNE_CALLS - 1)
        assert said[-1] in (True, False) and said[TUNE_CALLS - 1 :] == [said[-1]] * 5
    else:
        assert said == [False] * calls
    small = np.zeros(1024, np.uint32)
    assert Program([[(small, np.ones(1024, np.uint32))]]).streams is False
    assert Program([[(out[:, 4:-4], x)]], stream=False).streams is False
    assert Program([[(out[:, 4:-4], x)]], stream=True).streams is bool(STREAMS)
