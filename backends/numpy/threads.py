"""Copies spread across threads, run natively where the extension is built.

``compiled`` turns independent lists of moves into one call on up to ``threads`` threads. With
the native extension (``_copies.c``, built by ``pip install``) that is a ``Program``: every
move analysed once into pointers and coalesced strides, rows copied by typed loops (NumPy runs
one inner loop of about 30 ns per row, which bounds short rows), the GIL released, the lists
(pieces of about ``PIECE_BYTES``) taken by the threads as they free up, and copy threads that
spin for 2 ms after each batch before they sleep, as onnxruntime's pool does. Without it (no C
compiler, or ``DMLGRAPH_NATIVE_COPIES=0``) the same lists run through ``np.copyto``; NumPy
releases the GIL while it copies, and Python copy threads wait on a bare lock each rather than a
``concurrent.futures`` pool, whose queue added about 25 µs to each hand-over on a 2-core VM
(measured: a tiny two-thread batch took 100 µs through a pool, 75 µs with locks). Most of what
is left there is waking an idle virtual CPU, which Python threads cannot avoid by spinning
without holding the GIL.
"""

from __future__ import annotations

import _thread
import heapq
import math
import os
import threading
from bisect import bisect_left
from collections.abc import Callable, Sequence
from functools import partial

import numpy as np

from backends.numpy.moves import Move, Phase
from backends.numpy.views import address

try:
    from backends.numpy._copies import MAX_THREADS, Program, Replay, limit_cpus
except ImportError:  # not built: no C compiler where it was installed
    Program = Replay = limit_cpus = None  # type: ignore[assignment,misc]  # checked before use
    MAX_THREADS = 1

#: The most threads a plan copies on: the native copier's most (which it takes on its own,
#: each thread taking pieces), and as many for NumPy's copies where it is not built. A count
#: past it gave up the native copier for a Python thread per list: ``threads=10**6`` started
#: 4,096, kept for good, and a 64 MB padding took 4.9 s where 8 threads take 0.1.
MOST_THREADS = MAX_THREADS if Program is not None else 16

#: Whether plans compiled from now on copy natively (tests set it to cover both paths).
native: bool = Program is not None and os.environ.get("DMLGRAPH_NATIVE_COPIES", "1") != "0"

Instruction = Callable[[], None]
#: What a list for a thread holds: moves, and natively also lockstep groups ``(lead, moves)``:
#: for each index of the ``lead`` leading axes (the same sizes in every move), every move's
#: slab there, in order.
Item = Move | tuple[int, list[Move]]

#: Below this many destination bytes a phase stays on one thread: waking a copy thread costs
#: about 80 µs on a 2-core VM (measured: one thread wins at 2 MB, two win from 8 MB).
PARALLEL_BYTES = 6 << 20
#: A native lockstep group's slab (one index of its leading axes) writes at least this
#: many bytes: smaller slabs cost more in loop overhead than they gain in locality.
SLAB_BYTES = 1 << 10
#: Moves that write side by side (a JOIN on an inner axis) or in order over the same rows (a
#: padding's interior, then its borders) are done in blocks of rows of about this many
#: destination bytes, all moves per block, so each block of the output is finished while it
#: is still in cache instead of once per move.
BLOCK_BYTES = 1 << 20
#: Natively, a phase handed to several threads is cut into lists of about this many
#: destination bytes, which the threads take one by one as they free up (``_copies.c``'s
#: ``Share``), rather than one fixed share each: a VM's vCPUs run at different speeds from
#: moment to moment, and with fixed halves the faster thread waits for the slower. Measured
#: in C on the 2-vCPU VM (two threads, a plain copy): 256 KB pieces beat halves by 0-7% at
#: 16 MB and 4-10% at 128 MB; 1 MB pieces by -5% to +8%.
PIECE_BYTES = 256 << 10
#: At most this many lists a phase (a 128 MB phase is 512 pieces of 256 KB).
MAX_PIECES = 1024
#: At most this many moves a phase's pieces hold in all where each piece holds every move (a
#: lockstep row block): as many as 8 threads' fixed shares held. A Concat of 1024 inputs on an
#: inner axis cut into 1024 row blocks was a million moves: 2 s to compile and 1.4 GB held.
MAX_PIECE_MOVES = 8 << 10


def default_threads() -> int:
    """The CPUs this process may run on (its affinity, a container's cpuset, and a CPU quota:
    not the host's), at most 8: copies saturate memory bandwidth before that. More copy
    threads than CPUs stall a call: the others spin waiting for the one without a CPU."""
    try:
        count = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        count = os.cpu_count() or 1
    quota = quota_cpus()
    return max(1, min(count, quota or count, 8))


#: Where Linux states a cgroup's CPU quota: version 2's ``cpu.max`` ("QUOTA PERIOD", QUOTA
#: "max" without one), version 1's ``cpu.cfs_quota_us`` (-1 without one) and period.
CGROUP_CPU_MAX = "/sys/fs/cgroup/cpu.max"
CGROUP_V1_QUOTA = ("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "/sys/fs/cgroup/cpu/cpu.cfs_period_us")


def quota_cpus() -> int | None:
    """The whole CPUs a cgroup's CPU quota allows (``docker --cpus=2``, a Kubernetes CPU
    limit; at least 1), which a container's affinity does not show: it lists every CPU of
    the host. None without a quota, or where none can be read (not Linux)."""
    try:
        with open(CGROUP_CPU_MAX, encoding="ascii") as limit:
            quota, period = limit.read().split()[:2]
    except (OSError, ValueError):
        try:
            with open(CGROUP_V1_QUOTA[0], encoding="ascii") as q, \
                    open(CGROUP_V1_QUOTA[1], encoding="ascii") as p:
                quota, period = q.read().strip(), p.read().strip()
        except (OSError, ValueError):
            return None
    try:
        allowed, length = int(quota), int(period)
    except ValueError:  # "max": no quota
        return None
    if allowed <= 0 or length <= 0:  # -1: no quota
        return None
    return max(1, allowed // length)


def limit_to_quota() -> int | None:
    """Cap every native call's threads at the CPU quota (``quota_cpus``), a count the caller
    gave too, as its CPUs cap them: past the quota, copy threads stall a call (the others
    spin waiting for the one descheduled). Done on import; the quota it applied."""
    quota = quota_cpus()
    if limit_cpus is not None:
        limit_cpus(quota or 0)
    return quota


limit_to_quota()


def split(destination: np.ndarray, source: np.ndarray, parts: int) -> list[Move]:
    """The copy as up to ``parts`` copies of disjoint destination blocks, cut along the
    outermost axis that divides evenly enough; one piece when none does."""
    source = np.broadcast_to(source, destination.shape)
    for axis, size in enumerate(destination.shape):
        if size >= 4 * parts or (size >= parts and size % parts == 0):
            bounds = [size * k // parts for k in range(parts + 1)]
            lead = (slice(None),) * axis
            return [
                (destination[lead + (slice(a, b),)], source[lead + (slice(a, b),)])
                for a, b in zip(bounds, bounds[1:])
            ]
    return [(destination, source)]


def cut(destination: np.ndarray, source: np.ndarray, pieces: int) -> list[Move]:
    """The copy as about ``pieces`` copies of disjoint destination blocks in memory order,
    each a run of the outer indices: the outermost axis longer than 1 is cut into
    ``pieces`` ranges, or where it is shorter, each of its indices cut again along the axes
    after it. ``split``'s one axis dividing evenly may be an inner one, whose pieces each
    take rows from every outer index (a [16, 4, 256, 256] copy in 64 pieces: 4 rows of each
    of 64 planes, which copied at 0.7x the speed of halves)."""
    source = np.broadcast_to(source, destination.shape)
    return _cut(destination, source, pieces)


def _cut(destination: np.ndarray, source: np.ndarray, pieces: int) -> list[Move]:
    shape = destination.shape
    axis = next((a for a, size in enumerate(shape) if size > 1), None)
    if pieces <= 1 or axis is None:
        return [(destination, source)]
    size = shape[axis]
    lead = (slice(None),) * axis
    if size >= pieces:
        bounds = [size * k // pieces for k in range(pieces + 1)]
        return [
            (destination[lead + (slice(a, b),)], source[lead + (slice(a, b),)])
            for a, b in zip(bounds, bounds[1:])
        ]
    each = math.ceil(pieces / size)
    return [
        piece
        for i in range(size)
        for piece in _cut(destination[lead + (slice(i, i + 1),)],
                          source[lead + (slice(i, i + 1),)], each)
    ]


def distribute(phase: Sequence[Move], workers: int, rows: int | None = None) -> list[list[Item]]:
    """A phase's moves as independent lists of about equal bytes each, for ``workers``
    threads (``_distribute``)."""
    return _distribute(phase, workers, rows)[0]


def distribute_phases(phases: Sequence[Phase], workers: int) -> list[list[list[Item]]]:
    """The phases as calls, each independent lists for ``workers`` threads: one per worker,
    or natively pieces that the threads take as they free up (``PIECE_BYTES``). A phase over
    the same rows as the one before it, which was cut into row blocks, joins that call list by
    list, cut at the same rows: each row reads only the same row (``moves.Phase``), so a
    thread can go on to its own rows of the next phase without waiting for the others (a
    padding's outer borders: the hand-over between phases cost 5-8% of a 16 MB padding,
    measured)."""
    calls: list[list[list[Item]]] = []
    blocked: tuple[int, int] | None = None  # the last call's row axis and its size
    for phase in phases:
        if not phase.moves:
            continue
        rows = phase.rows
        if blocked is not None and rows is not None and blocked == (rows, _size(phase, rows)):
            total = sum(d.nbytes for d, _ in phase.moves)
            more = _row_blocks(phase.moves, rows, len(calls[-1]), total)
            calls[-1] = [done + next_ for done, next_ in zip(calls[-1], more)]
            continue
        lists, axis = _distribute(phase.moves, workers, rows)
        blocked = None if axis is None else (axis, _size(phase, axis))
        calls.append(lists)
    return calls


def _size(phase: Phase, axis: int) -> int:
    return int(phase.moves[0][0].shape[axis])


def _pieces(total: int, workers: int, each: int = 1) -> int:
    """How many lists a phase of ``total`` bytes for ``workers`` threads is cut into, each
    list ``each`` moves: one per worker, or natively one per ``PIECE_BYTES`` (no fewer than
    the workers, no more than ``MAX_PIECES`` lists or ``MAX_PIECE_MOVES`` moves)."""
    if not native:
        return workers
    return max(workers, min(total // PIECE_BYTES, MAX_PIECES, MAX_PIECE_MOVES // each))


def _distribute(
    phase: Sequence[Move], workers: int, rows: int | None
) -> tuple[list[list[Item]], int | None]:
    """A phase's moves as independent lists of about equal bytes each (one per worker, or
    natively pieces the workers take as they free up: ``_pieces``), and the axis they were
    cut into row blocks along (None if they were not).

    ``rows``: the moves run in order within each row of that axis (``moves.Phase``); they are
    cut into blocks of its rows, every move per block in order, each list a range of blocks
    (one worker too, so each block is finished while it is in cache). Otherwise the moves are
    independent: moves whose destinations share an outer axis are cut along it the same way;
    else large moves are split and pieces go largest first to the least loaded list. One
    list when the phase is too small to hand over. Natively, a block is a lockstep group
    (``Item``) of single rows."""
    total = sum(d.nbytes for d, _ in phase)
    if workers < 2 or total < PARALLEL_BYTES:
        lockstep = native and len(phase) > 1  # free natively, whatever the size
        if lockstep and rows is None:
            rows = _shared_axis(phase, 1)
        if rows is None or not (lockstep or total >= 2 * BLOCK_BYTES):
            return [list(phase)], None
        return _row_blocks(phase, rows, 1, total), rows
    if rows is None:
        rows = _shared_axis(phase, workers)
    if rows is not None:  # every block all the moves
        return _row_blocks(phase, rows, _pieces(total, workers, len(phase)), total), rows
    parts = _pieces(total, workers)
    share = total / parts
    pieces: list[Move] = []
    for destination, source in phase:
        if destination.nbytes > share / 2:
            if parts == workers:  # fixed shares: every worker a part of each move
                pieces.extend(split(destination, source, workers))
            else:  # pieces of about a share each, taken as threads free up
                pieces.extend(cut(destination, source, math.ceil(destination.nbytes / share)))
        else:
            pieces.append((destination, source))
    lists: list[list[Item]] = [[] for _ in range(parts)]
    loads = [(0, k) for k in range(parts)]  # a heap: the least loaded list first
    for destination, source in sorted(pieces, key=lambda m: -m[0].nbytes):
        load, least = loads[0]
        lists[least].append((destination, source))
        heapq.heapreplace(loads, (load + destination.nbytes, least))
    return [moves for moves in lists if moves], None


def _shared_axis(phase: Sequence[Move], workers: int) -> int | None:
    """The outermost axis on which every move has the same size, at least 2 per worker, with
    all axes before it the same too, and along which the moves write side by side: their
    destinations step alike there and all start within one step of it (a JOIN on an inner
    axis). None without one, or with one move: nothing to share. Moves that write one block
    after another (a JOIN on its outermost axis) are better split into long runs than cut
    into rows taken in turns."""
    if len(phase) < 2:
        return None
    shapes = [d.shape for d, _ in phase]
    rank = len(shapes[0])
    if any(len(shape) != rank for shape in shapes):
        return None
    for axis in range(rank):
        size = shapes[0][axis]
        if any(shape[axis] != size for shape in shapes):
            return None
        if size >= 2 * workers:
            step = phase[0][0].strides[: axis + 1]
            if any(d.strides[: axis + 1] != step for d, _ in phase):
                return None
            starts = [address(d) for d, _ in phase]
            return axis if max(starts) - min(starts) < abs(step[axis]) else None
    return None


def _row_blocks(phase: Sequence[Move], axis: int, workers: int, total: int) -> list[list[Item]]:
    size = phase[0][0].shape[axis]
    lead = (slice(None),) * axis
    block = max(1, size * BLOCK_BYTES // total)
    sources = [np.broadcast_to(s, d.shape) for d, s in phase]
    workers = min(workers, size)
    bounds = [size * k // workers for k in range(workers + 1)]
    lockstep = _lockstep_axes(phase, axis) if native else 0
    lists: list[list[Item]] = []
    for low, high in zip(bounds, bounds[1:]):
        if lockstep:
            rows = lead + (slice(low, high),)
            lists.append([(lockstep, [(d[rows], s[rows]) for (d, _), s in zip(phase, sources)])])
            continue
        moves: list[Item] = []
        for start in range(low, high, block):
            rows = lead + (slice(start, min(high, start + block)),)
            moves.extend((d[rows], s[rows]) for (d, _), s in zip(phase, sources))
        lists.append(moves)
    return lists


def _lockstep_axes(phase: Sequence[Move], axis: int) -> int:
    """How many leading axes a native lockstep group of the phase's moves runs over: through
    ``axis`` (all moves the same size there and before), then on while the moves keep the same
    size and a slab of all of them still writes ``SLAB_BYTES``; but only through ``axis`` where
    a move reads memory the phase writes. The phase's contract says a row of ``axis`` reads
    only the same row; along an inner axis a border may read another index (a padding's edge
    copies index 1 to indices 2 and 3), which in lockstep it would read before it is written."""
    shapes = [d.shape for d, _ in phase]
    itemsize = phase[0][0].itemsize
    lead = axis + 1
    if _reads_written(phase):
        return lead
    while lead < min(len(shape) for shape in shapes) and all(
        shape[lead] == shapes[0][lead] for shape in shapes
    ):
        slab = itemsize * sum(math.prod(shape[lead + 1 :]) for shape in shapes)
        if slab < SLAB_BYTES:
            break
        lead += 1
    return lead


def byte_bounds(array: object) -> tuple[int, int] | None:
    """The bytes ``[low, high)`` an array may touch, as ``np.may_share_memory`` bounds it;
    None for an empty one, or a value that is not an array (converted, it shares nothing)."""
    if not isinstance(array, np.ndarray) or array.size == 0:
        return None
    low = high = address(array)
    for size, stride in zip(array.shape, array.strides):
        if stride < 0:
            low += stride * (size - 1)
        else:
            high += stride * (size - 1)
    return low, high + array.itemsize


def _reads_written(phase: Sequence[Move]) -> bool:
    """Whether some move's source may share memory with some destination of the phase (by
    bounds, as ``np.may_share_memory``): the written bytes merged and sorted once, then each
    source looked up, rather than every pair (a JOIN of thousands of inputs took seconds)."""
    written: list[list[int]] = []
    for low, high in sorted(b for b in (byte_bounds(d) for d, _ in phase) if b is not None):
        if written and low <= written[-1][1]:
            written[-1][1] = max(written[-1][1], high)
        else:
            written.append([low, high])
    starts = [low for low, _ in written]
    for _, source in phase:
        bounds = byte_bounds(source)
        if bounds is None:
            continue
        k = bisect_left(starts, bounds[1]) - 1  # the last written span starting before its end
        if k >= 0 and written[k][1] > bounds[0]:
            return True
    return False


def run_list(moves: Sequence[Move]) -> None:
    for destination, source in moves:
        np.copyto(destination, source)


class Worker:
    """A daemon thread that runs one list of moves each time it is started."""

    def __init__(self) -> None:
        self._go = _thread.allocate_lock()
        self._done = _thread.allocate_lock()
        self._go.acquire()
        self._done.acquire()
        self._moves: Sequence[Move] = ()
        self._error: BaseException | None = None
        threading.Thread(target=self._loop, name="dmlgraph-copy", daemon=True).start()

    def _loop(self) -> None:
        while True:
            self._go.acquire()
            try:
                run_list(self._moves)
            except BaseException as exc:  # handed to the caller by ``join``
                self._error = exc
            self._done.release()

    def start(self, moves: Sequence[Move]) -> None:
        self._moves = moves
        self._go.release()

    def join(self) -> None:
        """Wait for the list to be done; raise what it raised."""
        self._done.acquire()
        self._moves, error, self._error = (), self._error, None
        if error is not None:
            raise error


class _Idle:
    """The workers not running anything, shared by every plan: a batch takes what it needs,
    starting workers when none is idle (so there are as many as the most batches running at
    once have needed), and gives them back when done."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.workers: list[Worker] = []

    def take(self, count: int) -> list[Worker]:
        with self.lock:
            taken = self.workers[len(self.workers) - count :] if count else []
            del self.workers[len(self.workers) - len(taken) :]
        return taken + [Worker() for _ in range(count - len(taken))]

    def give(self, workers: list[Worker]) -> None:
        with self.lock:
            self.workers.extend(workers)

    def forget(self) -> None:
        """In a forked child: the parent's threads do not exist there."""
        self.lock = threading.Lock()
        self.workers = []


_idle = _Idle()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_idle.forget)


class Batch:
    """Runs one list of moves per worker: the first on the calling thread, the rest on copy
    threads, and returns when all are done."""

    __slots__ = ("lists",)

    def __init__(self, lists: list[list[Move]]) -> None:
        self.lists = lists

    def __call__(self) -> None:
        lists = self.lists
        workers = _idle.take(len(lists) - 1)
        try:
            for worker, moves in zip(workers, lists[1:]):
                worker.start(moves)
            run_list(lists[0])
        finally:
            errors = []
            for worker in workers:  # every one, so none is handed back still running
                try:
                    worker.join()
                except BaseException as exc:
                    errors.append(exc)
            _idle.give(workers)
            if errors:
                raise errors[0]


def compiled(lists: list[list[Item]], threads: int | None = None) -> Instruction:
    """One call that runs the independent lists on the calling thread and copy threads, at
    most ``threads`` in all (one per list by default): a native program where it can be built
    (its moves' arrays all export strided buffers of one item size), its threads taking the
    lists as they free up; else the fewest Python calls (a single copy is ``np.copyto``), the
    lists joined into one per thread, in order."""
    threads = min(threads or len(lists), len(lists))
    if native and Program is not None and threads <= MAX_THREADS:
        try:
            return Program(lists, threads=threads)
        except (TypeError, ValueError, BufferError):
            pass  # NumPy makes every copy it can (and raises for the rest when run)
    bounds = [len(lists) * k // threads for k in range(threads + 1)]
    plain = [
        [move for items in lists[low:high] for move in _plain_moves(items)]
        for low, high in zip(bounds, bounds[1:])
    ]
    if len(plain) > 1:
        return Batch(plain)
    if len(plain[0]) == 1:
        return partial(np.copyto, *plain[0][0])
    return partial(run_list, plain[0])


def _plain_moves(items: list[Item]) -> list[Move]:
    """A list's moves with each lockstep group's moves in its place, whole and in order:
    the same result, since a group's slab reads only its own rows (``moves.Phase``), so
    finishing each move over all slabs before the next changes no value read. Groups are
    made for the native copier, and NumPy copies when it cannot take them (more lists than
    its threads, an array it cannot read)."""
    plain: list[Move] = []
    for first, second in items:
        if isinstance(first, int):  # a group: (lead, moves)
            plain.extend(second)
        else:  # a move: (destination, source)
            assert isinstance(second, np.ndarray)
            plain.append((first, second))
    return plain
