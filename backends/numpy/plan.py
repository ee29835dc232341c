"""The NumPy backend's compiled execution plan: a lowered graph analysed once, replayed per run.

Compiling does what DirectML's graph compiler does before a dispatch:

- **binding**: every tensor gets a home, a place in a root buffer; every DML node's tensor descs
  become views of those homes (``views.reform``), validated once;
- **in-place JOIN**: a tensor made by a DML node and read only by a JOIN is written by its
  producer straight into the JOIN's output, and that input's copy disappears;
- **memory planning**: tensors internal to the plan share buffers when their lifetimes do not
  overlap (``memory.assign_buffers``), allocated once;
- **copies**: each operator becomes its moves (``moves.operator_moves``); copies of a megabyte
  or more are split across threads.

A run binds the buffers that change per run (graph inputs, outputs: caller arrays, as with
onnxruntime's IOBinding, or pooled buffers; tensors made by the fallback) and replays the
moves: native programs are told where those buffers lie (relocated), NumPy's views over them
are rebuilt from recipes. A plan of DML nodes alone runs as one native call (``Replay``: the
checks, the output pool and the programs), since a run's megabytes evict Python's own path
from cache, which then cost 150-250 µs a run. ONNX nodes the lowering left run on the
fallback in segments; a node whose parameters arrive at run time is lowered when it runs.
"""

from __future__ import annotations

import abc
import ctypes
import enum
import heapq
import threading
import weakref
from bisect import bisect_left, bisect_right, insort
from collections import OrderedDict
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING, Any

import networkx as nx
import numpy as np

from backends.base import (
    NO_ITERATION,
    NOTHING_RAN,
    RUNTIME_LOWERED,
    BackendError,
    NodeRun,
    RunRecord,
    SizeMismatch,
    refuse_beyond_memory,
    write_all_bound,
)
from backends.numpy.control import ControlFlow, Declined, SubgraphRuleError, noted, runs_here
from backends.numpy.fallback import OnnxruntimeFallback, diverged_reads, reference_hint
from backends.numpy.memory import Lifetime, OutputPool, assign_buffers
from backends.numpy.moves import Move, Phase, operator_moves
from backends.numpy.runtime import RuntimeLowering, needs_runtime_lowering
from backends.numpy import threads
from backends.numpy.threads import (
    MAX_THREADS,
    Instruction,
    Program,
    Replay,
    byte_bounds,
    compiled,
    distribute_phases,
)
from backends.numpy.views import Recipe, address, as_bytes, reform
from backends.onnxruntime.providers import layout_rewrite_safe
from dmlgraph import folding
from dmlgraph.dml.binding import binds
from dmlgraph.dml.enums import FeatureLevel
from dmlgraph.dml.operators import JoinDesc, OperatorDesc
from dmlgraph.dml.tensor import BufferTensorDesc
from dmlgraph.errors import DmlgraphError, NodeRuleError, counted
from dmlgraph.ir import Graph, Node, NodeId
from dmlgraph.subgraphs import holder_label
from dmlgraph.tensorio import numpy_rank_problem

if TYPE_CHECKING:
    from backends.numpy.fallback import Fallback, Runner
    from lowering.report import LoweredGraph

#: How run records name the engine of DML nodes.
DML_ENGINE = "numpy DirectML emulator"

class RootKind(enum.Enum):
    """Where a root buffer's memory comes from."""

    ARENA = "arena"  # the plan's own, shared by lifetime
    CONSTANT = "constant"  # a graph constant's bytes
    INPUT = "input"  # the caller's feed, per run
    OUTPUT = "output"  # a caller's array or a pooled buffer, per run
    PRODUCED = "produced"  # an array the fallback or a run-time lowering returned, per run

    @property
    def static(self) -> bool:
        return self in (RootKind.ARENA, RootKind.CONSTANT)


#: The axis ``views.as_bytes`` adds to a tensor for its elements' bytes: a tensor the plan
#: reads or hands back as an array has one dimension fewer than NumPy allows.
_BYTES_AXIS = 1


@dataclass(frozen=True)
class PlanSummary:
    """What compiling did, for reports and tests: moves per run, JOIN inputs written in
    place (copies gone), the arena's buffers against one buffer per tensor."""

    steps: int
    moves: int
    joined_in_place: int
    arena_buffers: int
    arena_bytes: int
    unplanned_bytes: int


@dataclass
class _Root:
    kind: RootKind
    nbytes: int
    proxy: np.ndarray  # compile-time memory: untouched pages, or the constant itself


class _RunState:
    """What a run changes: each root's memory and address in this run, and the values the
    fallback and run-time steps made. Steps and their calls hold this, never the plan, so a
    plan is free of reference cycles: dropped with its graph, it frees its buffers and
    fallback sessions at once rather than when the garbage collector next runs."""

    __slots__ = ("frame", "addresses", "values", "produced_roots", "source")

    def __init__(self, frame: list[np.ndarray | None], source: str) -> None:
        self.frame = frame
        #: where each root's memory starts in this run: relocated programs read it
        self.addresses: list[int] = [0] * len(frame)
        self.values: dict[str, np.ndarray] = {}
        #: tensor -> its root, for tensors a fallback or run-time step makes that DML nodes
        #: read, with the type the root was made for and the tensor's maker (for the error)
        self.produced_roots: dict[str, tuple[int, np.dtype, tuple[int, ...], str]] = {}
        self.source = source

    def bind(self, root: int, memory: np.ndarray) -> None:
        self.frame[root] = memory
        self.addresses[root] = address(memory)

    def value(self, name: str) -> np.ndarray:
        value = self.values.get(name)
        if value is None:
            raise BackendError(f"{self.source}: tensor {name!r} has no value when read")
        return value

    def produced(self, name: str, value: np.ndarray) -> None:
        """A fallback's or run-time step's output: kept by name, bound if DML nodes read it."""
        self.values[name] = value
        bound = self.produced_roots.get(name)
        if bound is None:
            return
        root, dtype, shape, maker = bound
        if value.dtype != dtype or value.shape != shape:
            # the plan laid out DirectML's reads for the inferred type: never read past it
            raise SizeMismatch(
                f"{maker} made {name!r} as {value.dtype}{list(value.shape)}, but ONNX shape "
                f"inference says {dtype}{list(shape)}, for which the plan was made: onnx "
                "infers this node's output wrongly, so the lowered graph cannot run",
                name, maker, (value.dtype, value.shape), (dtype, shape),
            )
        self.bind(root, _bytes(value))


@dataclass(frozen=True)
class _Home:
    """A tensor's bytes: a view (row-major byte order) into one root's proxy."""

    root: int
    data: np.ndarray


def _bytes(array: np.ndarray) -> np.ndarray:
    """An array's memory as a flat uint8 buffer (a copy only if it is not contiguous)."""
    return np.ascontiguousarray(array).reshape(-1).view(np.uint8)


class Plan:
    """A graph compiled for the NumPy backend; ``run`` replays it (one run at a time; runs
    from several threads wait for each other)."""

    def __init__(
        self, graph: Graph, level: FeatureLevel, fallback: Fallback, threads: int = 1
    ) -> None:
        # a proxy: the backend's cache holds plans weakly keyed by their graphs
        self.graph = weakref.proxy(graph)
        self.level, self.fallback, self.threads = level, fallback, threads
        self._lock = threading.Lock()
        self._pool = OutputPool()
        #: whether lowering validated the graph's descriptors at this level, unchanged since
        #: (then its steps skip validating them again: 2 ms of shufflenet's 72 steps)
        check = getattr(graph, "descriptors_valid", None)
        self.descriptors_valid = bool(check is not None and check(level))
        #: which tensors' inferred sizes onnxruntime may not give them (``segment_graph``)
        self.trust = folding.PartialShapes(graph.declared_sizes)
        #: the graph lowered again where a run proved onnx's inference wrong, by whether
        #: every size was left to run time (``NumpyBackend._run_resized``); None: it could not
        self.resized: dict[bool, LoweredGraph | None] = {}
        self._layout: bool | None = None  # ``layout_rewrite``, once asked
        for name in (*graph.inputs, *graph.outputs):  # fed and handed back as NumPy arrays
            problem = numpy_rank_problem(name, graph.tensor(name).shape)
            if problem:
                kind = "input" if name in graph.inputs else "output"
                raise BackendError(f"{graph.source}: {problem} (a graph {kind}, an array)")
        self._compile(graph)

    @property
    def layout_rewrite(self) -> bool:
        """Whether the fallback's onnxruntime sessions may use its NCHWc rewrite: decided
        once, for the whole model (``providers.layout_rewrite_safe``), when a fallback step
        first asks (a plan of descriptors alone never walks its graph for it)."""
        if self._layout is None:
            self._layout = isinstance(self.fallback, OnnxruntimeFallback) and (
                layout_rewrite_safe(self.graph)
            )
        return self._layout

    @property
    def stores(self) -> tuple[bool | None, ...]:
        """How each native program of the plan writes now: streamed (True), cached (False),
        or None while it still times both ways (its first ``_copies.TUNE_CALLS`` calls). A
        program's speed at 16 MB and up turns on that choice, which the benchmarks report."""
        if Program is None:
            return ()
        calls = (call.func if isinstance(call, partial) else call for call in self._code)
        return tuple(call.streams for call in calls if isinstance(call, Program))

    # ------------------------------------------------------------------ compiling
    def _compile(self, graph: Graph) -> None:
        schedule = _schedule(graph)
        self._outputs = list(dict.fromkeys(graph.outputs))
        # as sets, for the questions asked of every tensor (lists made them quadratic)
        self._output_set = frozenset(self._outputs)
        self._input_set = frozenset(graph.inputs)
        producer_step: dict[str, int] = {}
        readers: dict[str, list[int]] = {}
        for index, (_, nodes) in enumerate(schedule):
            for node in nodes:
                for name in node.outputs:
                    if name:
                        producer_step[name] = index
                for name in node.inputs:
                    if name:
                        readers.setdefault(name, []).append(index)
        self._dml_made = {
            out for kind, nodes in schedule if kind == "dml" for out in nodes[0].outputs
        }
        self._roots: list[_Root] = []
        self._homes: dict[str, _Home] = {}
        in_place = self._place_join_inputs(graph, schedule)
        self._joined_in_place = len(in_place)
        for kind, nodes in schedule:  # the rest of the DML nodes' tensors: homes of their own
            if kind == "dml":
                for name in (*nodes[0].inputs, *nodes[0].outputs):
                    self.home(name)
        self._plan_memory(producer_step, readers)
        self._state = _RunState(
            [root.proxy if root.kind is RootKind.CONSTANT else None for root in self._roots],
            graph.source,
        )
        for index, buffer in self._arena_views.items():
            self._state.bind(index, buffer)  # fixed: relocated programs read it too
        self._steps = [self._step(graph, kind, nodes, in_place) for kind, nodes in schedule]
        for name, home in self._homes.items():
            if self._roots[home.root].kind is RootKind.PRODUCED:  # static: ``home`` says so
                info, maker = graph.tensor(name), graph.producer(name)
                self._state.produced_roots[name] = (
                    home.root,
                    np.dtype(info.dtype),
                    tuple(info.static_shape or ()),
                    graph.describe(maker) if maker is not None else f"tensor {name!r}",
                )
        self._code: list[Instruction] = [f for step in self._steps for f in step.code]
        self.summary = PlanSummary(
            steps=len(self._steps),
            moves=sum(step.moves for step in self._steps),
            joined_in_place=self._joined_in_place,
            arena_buffers=self._arena[0],
            arena_bytes=self._arena[1],
            unplanned_bytes=self._arena[2],
        )
        self.static_runs = (
            tuple(r for step in self._steps for r in step.runs)
            if all(isinstance(step, _DmlStep) for step in self._steps)
            else None
        )
        self._input_roots = [
            (name, self._homes[name].root) for name in graph.inputs if name in self._homes
        ]
        self._per_run_roots = [i for i, root in enumerate(self._roots) if not root.kind.static]
        self._output_roots = [
            (name, self._homes[name].root)
            for name in self._outputs
            if name in self._homes and self._roots[self._homes[name].root].kind is RootKind.OUTPUT
        ]
        for root in self._roots:  # compile-time memory is no longer needed
            if root.kind is not RootKind.CONSTANT:
                root.proxy = np.empty(0, dtype=np.uint8)
        self.replay = self._replay(graph)
        #: the run record of a replayed run (the same every run), made by the backend once
        self.replay_record: RunRecord | None = None

    def _replay(self, graph: Graph) -> Replay | None:
        """The whole run as one native call (``_copies.Replay``), where nothing in it needs
        Python: every step a DML node compiled to native programs, every graph input and output
        static, every output written by a DML node into memory of its own. None otherwise."""
        if Replay is None or not threads.native or self.static_runs is None:
            return None
        programs = []
        for call in self._code:
            program = call.func if isinstance(call, partial) else call
            if not isinstance(program, Program):
                return None
            programs.append(program)
        output_roots = dict(self._output_roots)
        if any(name not in output_roots or name in self._input_set for name in self._outputs):
            return None
        input_roots = dict(self._input_roots)
        ports = []
        for name in [*graph.inputs, *self._outputs]:
            info = graph.tensor(name)
            if info.dtype is None or info.static_shape is None:
                return None
            ports.append((name, np.dtype(info.dtype), tuple(info.static_shape)))
        inputs = tuple(
            (*port, input_roots.get(port[0], -1)) for port in ports[: len(graph.inputs)]
        )
        outputs = tuple(
            (*port, output_roots[port[0]], partial(np.empty, port[2], port[1]))
            for port in ports[len(graph.inputs) :]
        )
        try:
            return Replay(
                inputs, outputs, tuple(programs), tuple(self._state.addresses), self._lock,
                np.empty((2, 3), np.float32), self._pool.limit,
                keep=tuple(memory for memory in self._state.frame if memory is not None),
            )
        except (TypeError, ValueError):  # a rank it cannot hold, NumPy laid out otherwise
            return None

    def _new_root(self, kind: RootKind, nbytes: int, memory: np.ndarray | None = None) -> int:
        proxy = memory if memory is not None else np.empty(nbytes, dtype=np.uint8)
        self._roots.append(_Root(kind, nbytes, proxy))
        return len(self._roots) - 1

    def home(self, name: str) -> _Home:
        """The tensor's home, made on first use: a root of its own, by where it comes from."""
        found = self._homes.get(name)
        if found is not None:
            return found
        graph = self.graph
        info = graph.tensor(name)
        constant = graph.constant(name)
        if constant is not None:
            data = _bytes(np.asarray(constant))
            index = self._new_root(RootKind.CONSTANT, data.size, data)
        else:
            if info.dtype is None or info.static_shape is None:
                raise BackendError(
                    f"{graph.source}: tensor {name!r} has no static dtype and shape ({info!r}); "
                    "a DML node's tensors must have them"
                )
            nbytes = int(np.prod(info.static_shape, dtype=np.int64)) * np.dtype(info.dtype).itemsize
            if name in self._input_set:
                kind = RootKind.INPUT
            elif name in self._dml_made:
                kind = RootKind.OUTPUT if name in self._output_set else RootKind.ARENA
            else:
                kind = RootKind.PRODUCED
            index = self._new_root(kind, nbytes)
        home = _Home(index, self._roots[index].proxy)
        self._homes[name] = home
        return home

    def _desc_view(self, node: Node, port: str, name: str, desc: BufferTensorDesc) -> np.ndarray:
        """The tensor's home as the desc sees it: its type's bits, its sizes."""
        graph = self.graph
        info = graph.tensor(name)
        if info.dtype is None or info.static_shape is None:
            raise BackendError(
                f"{graph.describe(node)}: {port} {name!r} has no static dtype and shape "
                f"({info!r}); a DML node's tensors must have them"
            )
        reason = binds(desc, info.dtype, info.static_shape)
        if not reason:
            view = reform(self.home(name).data, desc.data_type.bits_dtype, desc.sizes)
            if view is not None:
                return view
            reason = (
                f"its {counted(desc.element_count, f'{desc.data_type.full_name} element')} "
                f"{'does' if desc.element_count == 1 else 'do'} not cover the tensor's bytes "
                "exactly"
            )
        raise BackendError(
            f"{graph.describe(node)}: {port} ({name!r}, {info.dtype}{list(info.static_shape)}): "
            f"{reason}"
        )

    def _place_join_inputs(
        self, graph: Graph, schedule: list[tuple[str, list[Node]]]
    ) -> set[tuple[int, int]]:
        """Home each JOIN input that a DML node makes and nothing else reads inside the JOIN's
        output (later JOINs first, so nested JOINs nest). Returns the (node id, port) pairs
        whose copy is gone."""
        in_place: set[tuple[int, int]] = set()
        for kind, nodes in reversed(schedule):
            node = nodes[0]
            if kind != "dml" or not isinstance(node.op, JoinDesc):
                continue
            desc: JoinDesc = node.op
            output = self._desc_view(node, "output 0", node.outputs[0], desc.output_tensor)
            root = self.home(node.outputs[0]).root
            offset = 0
            for port, (name, view_desc) in enumerate(zip(node.inputs, desc.input_tensors)):
                n = view_desc.sizes[desc.axis]
                region = output[(slice(None),) * desc.axis + (slice(offset, offset + n),)]
                offset += n
                if not self._placeable(graph, node, name):
                    continue
                maker = graph.producer(name)
                assert maker is not None  # a DML node made it
                made_as = maker.op.outputs[0]
                if reform(region, made_as.data_type.bits_dtype, made_as.sizes) is None:
                    continue
                info = graph.tensor(name)
                shape = info.static_shape
                if info.dtype is None or shape is None or binds(view_desc, info.dtype, shape):
                    continue
                self._homes[name] = _Home(root, as_bytes(region))
                in_place.add((node.id, port))
        return in_place

    def _placeable(self, graph: Graph, join: Node, name: str) -> bool:
        return (
            name in self._dml_made
            and name not in self._output_set
            and graph.consumer_count(name) == 1
            and graph.tensor(name).is_static
        )

    def _plan_memory(self, producer_step: dict[str, int], readers: dict[str, list[int]]) -> None:
        """Arena roots share buffers by lifetime: from the first write into any tensor homed
        in them to the last read of any of them."""
        spans: dict[int, list[int]] = {}
        for name, home in self._homes.items():
            if self._roots[home.root].kind is not RootKind.ARENA:
                continue
            start = producer_step[name]
            end = max(readers.get(name, [start]))
            span = spans.setdefault(home.root, [start, end])
            span[0], span[1] = min(span[0], start), max(span[1], end)
        arena = sorted(spans)
        lifetimes = [Lifetime(spans[r][0], spans[r][1], self._roots[r].nbytes) for r in arena]
        assigned, sizes = assign_buffers(lifetimes)
        self._arena = (len(sizes), sum(sizes), sum(lifetime.nbytes for lifetime in lifetimes))
        outputs = sum(root.nbytes for root in self._roots if root.kind is RootKind.OUTPUT)
        refuse_beyond_memory(self.graph, planned=sum(sizes) + outputs)
        buffers = [np.empty(size, dtype=np.uint8) for size in sizes]
        self._arena_views = {
            r: buffers[b][: self._roots[r].nbytes] for r, b in zip(arena, assigned)
        }

    # ------------------------------------------------------------------ steps
    def _step(
        self, graph: Graph, kind: str, nodes: list[Node], in_place: set[tuple[int, int]]
    ) -> _Step:
        if kind == "dml":
            return _DmlStep(self, graph, nodes[0], in_place)
        if kind == "runtime":
            return _RuntimeStep(self, graph, nodes[0])
        if kind == "control":
            return _ControlStep(self, graph, nodes[0])
        return _FallbackStep(self, graph, nodes)

    def root_locator(self, candidates: list[int]) -> Callable[[np.ndarray], int | None]:
        """Which of the candidate roots' proxies holds a view's element 0 (the first in
        ``candidates`` order). By bisection where the proxies are disjoint, as all but
        constants' are: a JOIN of thousands of inputs scanned every root for every move."""
        order = list(dict.fromkeys(candidates))
        spans = sorted(
            (address(proxy), max(proxy.size, 1), index)
            for index in order
            for proxy in (self._roots[index].proxy,)
        )
        starts = [start for start, _, _ in spans]
        disjoint = all(a[0] + a[1] <= b[0] for a, b in zip(spans, spans[1:]))

        def locate(view: np.ndarray) -> int | None:
            at = address(view)
            if disjoint:
                k = bisect_right(starts, at) - 1
                if k >= 0 and at < spans[k][0] + spans[k][1]:
                    return spans[k][2]
                return None
            for index in order:  # constants may share memory: the first, as listed
                proxy = self._roots[index].proxy
                start = address(proxy)
                if start <= at < start + max(proxy.size, 1):
                    return index
            return None

        return locate

    def instructions(self, phases: list[Phase], roots: list[int]) -> list[Instruction]:
        """An operator's phases of moves as calls (``distribute_phases``): over real memory
        when all their roots are the plan's own, else rebuilt from recipes each run."""
        recipes: list[_Recipes] = []
        static = True
        root_of = self.root_locator(roots)
        touched: set[int] = set()
        for phase in phases:
            recipes.append([])
            for destination, source in phase.moves:
                dst_root = root_of(destination)
                src_root = root_of(source)
                assert dst_root is not None
                touched.add(dst_root)
                if src_root is not None:
                    touched.add(src_root)
                dst = (dst_root, Recipe.of(destination, self._roots[dst_root].proxy))
                src = (
                    source
                    if src_root is None
                    else (src_root, Recipe.of(source, self._roots[src_root].proxy))
                )
                static = static and self._roots[dst_root].kind.static
                static = static and (src_root is None or self._roots[src_root].kind.static)
                recipes[-1].append((dst, src))
        rows = [phase.rows for phase in phases]
        if static:
            return _calls(self.threads, [_materialize(self._state.frame, r) for r in recipes], rows)
        relocatable = self._relocatable(phases, touched)
        if relocatable is not None:
            return relocatable
        return [_BoundPhases(self._state, self.threads, recipes, rows)]

    def _relocatable(self, phases: list[Phase], touched: set[int]) -> list[Instruction] | None:
        """Natively, the phases as programs built over the compile-time memory that each
        call moves to where the per-run roots lie in this run (the run state's
        ``addresses``): no views rebuilt when a run binds new memory. None where a list is
        not a native program. A program knows only the roots its moves ``touched`` (by their
        slots in ``addresses``): given every root of the plan, each build and each call cost
        time in proportion to the plan (quadratic in a graph of many outputs)."""
        if not (threads.native and Program is not None):
            return None
        slots = sorted(  # the arena's too: moves are built over proxies, not its buffers
            r for r in touched if self._roots[r].kind is not RootKind.CONSTANT
        )
        roots = [(address(self._roots[r].proxy), self._roots[r].nbytes) for r in slots]
        calls: list[Instruction] = []
        for lists in distribute_phases(phases, self.threads):
            if min(len(lists), self.threads) > MAX_THREADS:
                return None
            try:
                program = Program(lists, roots=roots, slots=slots,
                                  threads=min(len(lists), self.threads))
            except (TypeError, ValueError, BufferError):
                return None
            calls.append(partial(program, self._state.addresses))
        return calls

    def ir_reader(self, name: str) -> Callable[[], np.ndarray]:
        """How a fallback or run-time step reads a tensor: its IR dtype and shape (over the run
        state, not the plan: see ``_RunState``)."""
        graph, state = self.graph, self._state
        if name not in self._homes:
            value = graph.constant(name)
            if value is not None:
                return lambda: value
            if name in self._input_set or name not in self._dml_made:
                return partial(state.value, name)
        home = self._homes[name]
        info = graph.tensor(name)
        view = reform(home.data, np.dtype(info.dtype), tuple(info.static_shape or ()))
        if view is None:
            problem = numpy_rank_problem(name, info.static_shape, _BYTES_AXIS)
            why = problem or f"tensor {name!r} cannot be read in IR form"
            raise BackendError(f"{graph.source}: {why}")
        root = self._roots[home.root]
        if root.kind is RootKind.PRODUCED or root.kind is RootKind.INPUT:
            return partial(state.value, name)
        recipe = Recipe.of(view, root.proxy)
        frame, index = state.frame, home.root
        if root.kind.static:
            fixed = recipe.on(frame[index])  # type: ignore[arg-type]
            return lambda: fixed
        return lambda: recipe.on(frame[index])  # type: ignore[arg-type]

    # ------------------------------------------------------------------ running
    def run(
        self, feeds: Mapping[str, np.ndarray], outputs: Mapping[str, np.ndarray] | None = None
    ) -> tuple[dict[str, np.ndarray], tuple[NodeRun, ...]]:
        """Run once: ``feeds`` by input name; ``outputs`` binds caller arrays to outputs."""
        bound = dict(outputs or {})
        state = self._state
        with self._lock:
            frame = state.frame
            state.values = dict(feeds)
            try:
                for name, root in self._input_roots:
                    state.bind(root, _bytes(feeds[name]))
                handed: dict[str, np.ndarray] = {}
                for name, root in self._output_roots:
                    info = self.graph.tensor(name)
                    given = bound.get(name)
                    if given is not None and given.shape == info.static_shape:
                        state.bind(root, _bytes(given))
                        handed[name] = given
                    else:  # (a bound array of other sizes than planned, which a run that
                        # makes them writes after: ``_result``)
                        raw, handle = self._pool.take(self._roots[root].nbytes)
                        state.bind(root, raw)
                        handed[name] = handle.view(info.dtype).reshape(info.static_shape)
                for instruction in self._code:
                    instruction()
                made = {name: self._result(name, handed, bound) for name in self._outputs}
                # those not written in place, written once all fit (``write_all_bound``)
                late = {name: array for name, array in bound.items() if made[name] is not array}
                results = write_all_bound(late, made, self.graph) if late else made
                runs = self.static_runs
                if runs is None:
                    runs = tuple(r for step in self._steps for r in step.runs)
            finally:
                for index in self._per_run_roots:  # hold no caller memory between runs
                    frame[index] = None
                    state.addresses[index] = 0  # nor its address, for programs to read
                state.values = {}
        return results, runs

    def _result(
        self, name: str, handed: dict[str, np.ndarray], bound: dict[str, np.ndarray]
    ) -> np.ndarray:
        """An output's value: the bound array where the run wrote it in place, else what the
        run made, which ``run`` writes into a bound array once every one is found to fit (an
        output written in place is written as the run goes, as onnxruntime's IOBinding
        writes it: a later one's error leaves it written). A bound array not fitting a
        fallback's output failed after the outputs before it were written. A result comes
        back C-contiguous, as onnxruntime's do: onnx.reference's Transpose made a strided
        view, and ``np.empty_like`` of it (the README's way to bind) was refused as an
        output array."""
        value = handed[name] if name in handed else self.ir_reader(name)()
        if name in handed or name in bound:
            return value
        if name in self._input_set or self.graph.is_constant(name):
            # a copy: the caller's feed or the graph's constant
            return np.array(value, order="C")
        return value if value.flags.c_contiguous else np.ascontiguousarray(value)


# ---------------------------------------------------------------------- instructions
_Recipes = list[tuple[tuple[int, Recipe], "np.ndarray | tuple[int, Recipe]"]]


def _materialize(
    frame: list[np.ndarray | None] | dict[int, np.ndarray], recipes: _Recipes
) -> list[Move]:
    moves = []
    for (dst_root, dst), src in recipes:
        destination = dst.on(frame[dst_root])  # type: ignore[arg-type]
        source = (
            src if isinstance(src, np.ndarray) else src[1].on(frame[src[0]])  # type: ignore[arg-type]
        )
        moves.append((destination, source))
    return moves


#: Compiled forms bound phases keep, by the addresses they were built for: a caller that
#: alternates between bound outputs and pooled ones, or holds one result while it runs again
#: (two pool buffers in turn), replays without rebuilding (about 150 µs a phase).
BOUND_FORMS = 4


class _BoundPhases:
    """An operator's phases touching buffers bound per run. Their views are built from recipes
    over the bound addresses and kept, up to ``BOUND_FORMS`` sets of addresses (the same arrays
    run after run, a recycled output buffer, bound and pooled outputs in turn), so a replay
    costs no view building.

    The kept views hold no reference to the memory: they are only used in a run that has
    bound the same addresses, when that memory is alive and held by the run's frame.
    """

    __slots__ = ("state", "threads", "recipes", "rows", "roots", "forms")

    def __init__(
        self, state: _RunState, threads: int, recipes: list[_Recipes], rows: list[int | None]
    ) -> None:
        self.state, self.threads, self.recipes, self.rows = state, threads, recipes, rows
        roots = {dst[0] for phase in recipes for dst, _ in phase}
        roots.update(
            src[0] for phase in recipes for _, src in phase if not isinstance(src, np.ndarray)
        )
        self.roots = sorted(roots)
        self.forms: dict[tuple[int, ...], list[Instruction]] = {}

    def __call__(self) -> None:
        addresses = self.state.addresses
        key = tuple([addresses[r] for r in self.roots])
        calls = self.forms.get(key)
        if calls is None:
            frame = self.state.frame
            memory = {r: _unowned(frame[r]) for r in self.roots}  # type: ignore[arg-type]
            moves = [_materialize(memory, phase) for phase in self.recipes]
            calls = _calls(self.threads, moves, self.rows)
            if len(self.forms) >= BOUND_FORMS:
                del self.forms[next(iter(self.forms))]  # the oldest
            self.forms[key] = calls
        for call in calls:
            call()


def _calls(threads: int, moves: list[list[Move]], rows: list[int | None]) -> list[Instruction]:
    phases = [Phase(m, r) for m, r in zip(moves, rows)]
    return [compiled(lists, threads) for lists in distribute_phases(phases, threads)]


def _unowned(memory: np.ndarray) -> np.ndarray:
    """The same bytes through an array that does not keep them alive (see ``_BoundPhases``)."""
    raw = (ctypes.c_char * memory.size).from_address(address(memory))
    return np.frombuffer(raw, dtype=np.uint8)  # type: ignore[call-overload]  # a buffer


# ---------------------------------------------------------------------- steps
class _Step:
    """One unit of the schedule: the calls it adds to the plan and the runs it records."""

    code: list[Instruction]
    runs: tuple[NodeRun, ...]
    moves: int = 0


class _DmlStep(_Step):
    """One DirectML descriptor as moves over the homes of its tensors."""

    def __init__(
        self, plan: Plan, graph: Graph, node: Node, in_place: set[tuple[int, int]]
    ) -> None:
        desc: OperatorDesc = node.op
        if not plan.descriptors_valid:
            try:
                desc.validate(plan.level)
            except DmlgraphError as exc:
                raise BackendError(f"{graph.describe(node)}: {exc}") from None
        inputs = [
            plan._desc_view(node, f"input {port}", name, view)
            for port, (name, view) in enumerate(zip(node.inputs, desc.inputs))
        ]
        output = plan._desc_view(node, "output 0", node.outputs[0], desc.outputs[0])
        phases = operator_moves(desc, inputs, output)
        if isinstance(desc, JoinDesc):  # inputs already in place have nothing to move
            moves = [m for port, m in enumerate(phases[0].moves) if (node.id, port) not in in_place]
            phases = [Phase(moves)]
        roots = [plan.home(name).root for name in (*node.inputs, node.outputs[0])]
        self.code = plan.instructions([phase for phase in phases if phase.moves], roots)
        self.moves = sum(len(phase.moves) for phase in phases)
        self.runs = (
            NodeRun(node.name, desc.name, DML_ENGINE, notes=tuple(node.notes), node_id=node.id,
                    origin=getattr(graph, "origin_ids", {}).get(node.id)),
        )


class _PythonStep(_Step, abc.ABC):
    """A step whose one call is its ``run`` method. ``code`` makes that call afresh: a step
    that kept its own bound method would refer to itself, a cycle only the collector frees."""

    @property
    def code(self) -> list[Instruction]:  # type: ignore[override]
        return [self.run]

    @abc.abstractmethod
    def run(self) -> None: ...


class _FallbackStep(_PythonStep):
    """Consecutive ONNX nodes, run as one model by the fallback (prepared on first use)."""

    def __init__(self, plan: Plan, graph: Graph, nodes: list[Node]) -> None:
        self.state, self.fallback, self.nodes = plan._state, plan.fallback, nodes
        self.layout = plan.layout_rewrite
        self.segment = segment_graph(graph, nodes, plan.trust)
        self.readers = [(name, plan.ir_reader(name)) for name in self.segment.inputs]
        self.runner: Runner | None = None
        engine = plan.fallback.engine
        self.runs = self.plain_runs = tuple(
            NodeRun(n.name, n.op_type, engine, notes=tuple(n.notes), node_id=n.id) for n in nodes
        )
        self.said: dict[tuple[str, ...], str] = {}  # the runner's notes the runs carry

    def run(self) -> None:
        if self.runner is None:
            if isinstance(self.fallback, OnnxruntimeFallback):  # one NCHWc decision a model
                self.runner = self.fallback.prepare(self.segment, self.layout)
            else:
                self.runner = self.fallback.prepare(self.segment)
        fed = {name: read() for name, read in self.readers}
        results = _apart(self.runner(fed), fed)
        missing = [name for name in self.segment.outputs if name not in results]
        if missing:  # DML nodes would read an earlier run's memory for them
            raise BackendError(
                f"{self.state.source}: the fallback ({self.fallback.engine}) gave no value "
                f"for {missing}, made by node(s) {[n.name or n.op_type for n in self.nodes]}"
            )
        for name, value in results.items():
            self.state.produced(name, value)
        said = getattr(self.runner, "said", None)
        if said is not None and said != self.said:
            self._note(said)

    def _note(self, said: dict[tuple[str, ...], str]) -> None:
        """The records of the nodes with what the runner said of them in this run (a
        divergence the values they ran with make: ``fallback.ReferenceRun.said``)."""
        self.said = said
        wrong = getattr(self.runner, "wrong", {})
        self.runs = tuple(
            noted(r, said[key], wrong.get(key)) if (key := tuple(n.outputs)) in said else r
            for n, r in zip(self.nodes, self.plain_runs)
        )


#: Up to this many arrays fed and made, ``_apart`` compares results pair by pair
#: (``np.may_share_memory``: 0.3 µs a pair); beyond, by sorted spans (5 µs for one of each).
APART_PAIRS = 8


def _apart(results: Mapping[str, Any], fed: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """A fallback's results, each that may share memory (by bounds, as
    ``np.may_share_memory``) with what it was fed or with a result before it copied. A
    runner may hand back views of its feeds (onnx.reference's Reshape, Identity...): the
    plan's arena, which the next run overwrites, or the caller's input, which writing the
    result would change. onnxruntime's results are its own, so nothing is copied for them."""
    seen = [value for value in fed.values() if isinstance(value, np.ndarray)]
    if len(seen) + len(results) > APART_PAIRS:
        return _apart_by_spans(results, seen)
    apart: dict[str, Any] = {}
    for name, value in results.items():
        if isinstance(value, np.ndarray):
            for other in seen:
                if np.may_share_memory(value, other):
                    value = value.copy()
                    break
            seen.append(value)
        apart[name] = value
    return apart


def _apart_by_spans(results: Mapping[str, Any], fed: list[np.ndarray]) -> dict[str, Any]:
    """``_apart`` for many arrays: the fed spans sorted and merged once, each result looked
    up by bisection and its span added (a segment of thousands of outputs)."""
    taken: list[tuple[int, int]] = []
    for low, high in sorted(b for b in map(byte_bounds, fed) if b is not None):
        if taken and low < taken[-1][1]:
            taken[-1] = (taken[-1][0], max(taken[-1][1], high))
        else:
            taken.append((low, high))
    apart: dict[str, Any] = {}
    for name, value in results.items():
        span = byte_bounds(value)
        if span is not None:
            k = bisect_left(taken, (span[1],)) - 1  # the last span starting before its end
            if k >= 0 and taken[k][1] > span[0]:
                value = value.copy()
                span = byte_bounds(value)
            if span is not None:  # apart from every span now: the list stays disjoint
                insort(taken, span)
        apart[name] = value
    return apart


#: Parameter values whose lowering a run-time Slice/Concat/Pad keeps, the most recently run:
#: each keeps a sub-plan and its pooled output (300 values of a 2 MB slice held 520 MB).
RUNTIME_CACHE_LIMIT = 16


class _RuntimeStep(_PythonStep):
    """A Slice/Concat/Pad lowered when it runs, with the actual parameters and shapes."""

    def __init__(self, plan: Plan, graph: Graph, node: Node) -> None:
        self.state, self.node = plan._state, node
        self.level, self.fallback, self.threads = plan.level, plan.fallback, plan.threads
        self.lowering = RuntimeLowering(graph, node)
        self.readers = [(name, plan.ir_reader(name)) for name in node.inputs if name]
        self.cache: OrderedDict[tuple[Any, ...], tuple[LoweredGraph, Plan]] = OrderedDict()
        self.graph = plan.graph  # (a proxy, as the plan holds it)
        self.runs = ()

    def run(self) -> None:
        node = self.node
        arrays = {name: read() for name, read in self.readers}
        key = self.lowering.key(arrays)
        via = f"{RUNTIME_LOWERED} (cached)"
        if key not in self.cache:
            try:
                sub = self.lowering.lower(arrays, self.level)
            except NodeRuleError as exc:  # by the sizes that arrived, which a divergence made?
                hint = _rule_hint(self.graph, self.fallback, self.state.values,
                                  node.inputs, arrays, sized_reads(node.op_type, node.inputs))
                if not hint:
                    raise
                raise BackendError(f"{exc}{hint}") from None
            self.cache[key] = (sub, Plan(sub, self.level, self.fallback, self.threads))
            if len(self.cache) > RUNTIME_CACHE_LIMIT:  # the least recently run goes
                self.cache.popitem(last=False)
            via = RUNTIME_LOWERED
        self.cache.move_to_end(key)
        sub, sub_plan = self.cache[key]
        outputs, sub_runs = sub_plan.run({name: arrays[name] for name in sub.inputs})
        for name, sub_name in zip([o for o in node.outputs if o], sub.outputs):
            self.state.produced(name, outputs[sub_name])
        # what the lowering said of the node (divergences included) goes with every run of it
        said = tuple(note for record in sub.report() for note in record.notes)
        # an unnamed node by the first tensor it makes, as a subgraph's (``control._label``):
        # two unnamed run-time Slices were two "(unnamed) -> DML_OPERATOR_SLICE" lines
        name = node.name or holder_label("", node.outputs)
        runs = [] if sub_runs else [  # a constant (an empty result) or its input, unmoved
            NodeRun(name, node.op_type, NOTHING_RAN, via, said, node.id)
        ]
        runs += [  # the sub-graph's nodes ran for this node of the graph
            NodeRun(r.node or name, r.op, r.engine, via, tuple(dict.fromkeys(said + r.notes)),
                    node.id)
            for r in sub_runs
        ]
        self.runs = tuple(runs)


class _ControlStep(_PythonStep):
    """An If, Loop or Scan whose branch or body runs lowered, by a plan of its own (``control``);
    where it cannot (``Declined``), the fallback runs the node whole, and its record says
    why."""

    def __init__(self, plan: Plan, graph: Graph, node: Node) -> None:
        self.state, self.node = plan._state, node
        self.level, self.fallback, self.threads = plan.level, plan.fallback, plan.threads
        self.control = ControlFlow(graph, node, RUNTIME_CACHE_LIMIT)
        self.readers = [(name, plan.ir_reader(name)) for name in node.inputs if name]
        self.whole = _FallbackStep(plan, graph, [node])
        self.graph = plan.graph  # (a proxy, as the plan holds it)
        self.runs = ()

    def _plan(self, lowered: Graph) -> Plan:
        return Plan(lowered, self.level, self.fallback, self.threads)

    def run(self) -> None:
        node = self.node
        arrays = {name: read() for name, read in self.readers}
        try:
            outputs, runs = self.control.run(arrays, self.level, self._plan)
        except SubgraphRuleError as exc:
            hint = self._hint(exc, arrays) if exc.control is self.control else ""
            if not hint:
                raise
            raise BackendError(f"{exc}{hint}") from None
        except Declined as why:
            self.whole.run()
            note = f"ran whole on the fallback, not lowered: {why}"
            # (the record's ``wrong``, of its runner's note, kept: a Scan-8 it holds)
            self.runs = tuple(replace(r, notes=(*r.notes, note)) for r in self.whole.runs)
            return
        for name, value in zip(node.outputs, outputs):
            if name:
                self.state.produced(name, value)
        self.runs = tuple(runs) or (  # (an If's branch always runs: a Loop or Scan of none)
            NodeRun(node.name, node.op_type, NO_ITERATION, "", tuple(node.notes), node.id),
        )

    def _hint(self, broken: SubgraphRuleError, arrived: Mapping[str, np.ndarray]) -> str:
        """What a rule its subgraph breaks by the sizes that arrived adds where a node before
        it, up to the makers of the inputs the breaking node may read (``broken.reads``),
        diverges as onnxruntime makes other sizes than ONNX (a Squeeze by an empty axes
        list): the onnxruntime fallback made those sizes, and onnx.reference runs it as ONNX
        says (``fallback.reference_hint``, as for a main-graph node's rule). "" on another
        fallback, or where none does. A Squeeze's result read by a Concat in an If's branch
        ended with the branch's rule alone, where ``run --backend onnxruntime`` named it.
        A floating-point read that arrived of the dtype and sizes ONNX infers is passed
        (``fallback.diverged_reads``, the rule a main graph's failure follows too): a sum of
        the Squeeze's result, a scalar either way, got the hint where the Concat reading it
        failed on onnx.reference too."""
        return _rule_hint(self.graph, self.fallback, self.state.values, broken.reads, arrived)


#: The inputs of a Slice, Concat or Pad (by position; None: all) whose values its rules do
#: not read, only their sizes: its data (``fallback.diverged_reads``).
SIZED_READS: Mapping[str, frozenset[int] | None] = {
    "Concat": None, "Slice": frozenset({0}), "Pad": frozenset({0}),
}


def sized_reads(op_type: str, inputs: Sequence[str]) -> frozenset[str]:
    """The names among ``inputs`` (of a node of ``op_type``) read only at positions
    ``SIZED_READS`` lists: a name also read as a start or pad counts by its values."""
    positions = SIZED_READS.get(op_type, frozenset())
    sized = {name for k, name in enumerate(inputs) if positions is None or k in positions}
    valued = {name for k, name in enumerate(inputs) if positions is not None
              and k not in positions}
    return frozenset(name for name in sized - valued if name)


def _rule_hint(graph: Graph, fallback: Fallback, values: Mapping[str, np.ndarray],
               reads: Sequence[str], arrived: Mapping[str, np.ndarray],
               sized: Collection[str] = ()) -> str:
    """What a rule broken by the sizes that arrived (of a node reading ``reads`` of
    ``graph``: a run-time Slice/Concat/Pad's, or a node's in a subgraph) adds where a node
    before the makers of those reads that ``fallback.diverged_reads`` keeps diverges as
    onnxruntime makes other sizes than ONNX (``fallback.reference_hint``): the onnxruntime
    fallback made those sizes, and onnx.reference runs it as ONNX says. "" on another
    fallback, or where none does. ``sized``: reads whose values the rule does not read
    (``sized_reads``). One rule for ``_ControlStep`` and ``_RuntimeStep``."""
    if not isinstance(fallback, OnnxruntimeFallback):
        return ""
    kept = diverged_reads(graph, reads, arrived, sized)
    makers = {maker.id for name in kept if (maker := graph.producer(name))}
    before = set(makers).union(*(nx.ancestors(graph.nx, m) for m in makers))
    nodes = [node for node in graph.nodes if node.id in before]
    toward = {*kept, *(name for node in nodes for name in node.inputs)}  # (a holder's outputs)
    return reference_hint(graph, values, nodes, toward=toward) if nodes else ""


# ---------------------------------------------------------------------- scheduling
def _kind(graph: Graph, node: Node) -> str:
    if not node.is_onnx:
        return "dml"
    if runs_here(node):
        return "control"
    return "runtime" if needs_runtime_lowering(graph, node) else "onnx"


def _schedule(graph: Graph) -> list[tuple[str, list[Node]]]:
    """Topological order in runs of one kind: DML and run-time nodes one per step, ONNX nodes
    grouped (so the fallback prepares few, long segments). Among ready nodes the current kind
    goes first, lowest id first."""
    # edges from the graph's port indices, not networkx's degree/edge views: a view cached
    # on the graph refers back to it, which would keep a dropped graph for the collector
    kinds = {node.id: _kind(graph, node) for node in graph.nodes}
    indegree = {
        node.id: sum(1 for name in node.inputs if name and graph.producer(name) is not None)
        for node in graph.nodes
    }
    ready: dict[str, list[int]] = {"dml": [], "runtime": [], "control": [], "onnx": []}
    for n, degree in indegree.items():
        if degree == 0:
            heapq.heappush(ready[kinds[n]], n)
    steps: list[tuple[str, list[Node]]] = []
    current = ""
    while any(ready.values()):
        switched = not ready.get(current)
        if switched:
            current = min((heap[0], kind) for kind, heap in ready.items() if heap)[1]
        if switched or current != "onnx":
            steps.append((current, []))
        n = heapq.heappop(ready[current])
        steps[-1][1].append(graph.node(n))
        for out in graph.node(n).outputs:
            for consumer, _ in graph.consumers(out) if out else ():
                indegree[consumer.id] -= 1
                if indegree[consumer.id] == 0:
                    heapq.heappush(ready[kinds[consumer.id]], consumer.id)
    return steps


def segment_graph(
    graph: Graph, nodes: list[Node], trust: folding.PartialShapes | None = None
) -> Graph:
    """The nodes as a graph of their own: outside tensors they read become inputs, except constants
    (kept, so an engine can fold them); outputs are what anything else reads. An input whose
    inferred sizes onnxruntime may not give it (``trust.vector_unsure``: a Shape's vector keeps
    its length) is declared with its rank alone: with its sizes, onnxruntime refused the tensor
    its own kernel made ("Got invalid dimensions for input"), a PRelu's [B, 4] where onnx said
    [B, 1]. One whose rank onnxruntime may make otherwise too (a ConvTranspose's [N, 2, 3] where
    onnx said [N, 2]) is declared without a shape: canonical forms count no axis by such a rank
    (``canonical.normalize``), and the segment runs on what onnxruntime makes. A segment
    holding a Scan (a Scan-8, run whole) keeps each input's rank: onnxruntime's Scan refuses a
    body whose outputs inference gives no shape ("Subgraph must have the shape set for all
    outputs"), as one reading such an input was (a declared output's, its rank unsure)."""
    inside = {node.id for node in nodes}
    outputs = [
        out
        for node in nodes
        for out in node.outputs
        if out
        and (
            out in graph.outputs
            or any(consumer.id not in inside for consumer, _ in graph.consumers(out))
        )
    ]
    # the nodes in the model's order (a lowered graph's ``origin_ids``), not the lowered
    # graph's ids: a node the lowering gave back to ONNX after splitting it has a new id, and
    # messages naming the segment's first nodes skipped the model's first
    origins: Mapping[NodeId, NodeId] = getattr(graph, "origin_ids", {})
    segment = graph.extract(inside, outputs, keep_constants=True,
                            key=lambda i: (origins.get(i, i), i))
    if trust is not None:
        scans = any(node.op_type == "Scan" for node in nodes)
        for name in segment.inputs:
            info = segment.tensor(name)
            if info.shape is None or not trust.vector_unsure(graph, name):
                continue
            ranked = scans or not trust.rank_unsure(graph, name)
            sizes = (None,) * len(info.shape) if ranked else None
            segment.set_tensor(info.replace(shape=sizes))
    return segment
