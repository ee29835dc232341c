"""What every backend shares: the run record, feed checking and a per-graph cache.

A backend's ``run(graph, feeds)`` returns the outputs; ``execute`` returns them with a
``RunRecord`` saying what actually ran: which engine and provider, and where each node went.
Parity reads the record to name known divergences and to show the user what was compared.
"""

from __future__ import annotations

import math
import os
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, NoReturn, Protocol, TypeVar

import numpy as np

from dmlgraph.dml.binding import unbound_tensors
from dmlgraph.errors import DmlgraphError
from dmlgraph.ir import Graph, string_problem
from dmlgraph import folding, tensorio
from dmlgraph.tensorio import bytes_text

T = TypeVar("T")
#: How a DirectML operator's name begins (``OperatorType.full_name``), as run records hold it.
DML_OPERATOR = "DML_OPERATOR_"
#: How run records name the engine of a node lowered at run time to a constant (an empty
#: result) or to its input.
NOTHING_RAN = "nothing (folded or eliminated when lowered at run time)"
#: How run records name the engine of a Loop or Scan whose body ran no iteration (its
#: outputs its initial values, or empty): it was recorded as NOTHING_RAN, "folded or
#: eliminated", which it was not.
NO_ITERATION = "nothing (its body ran no iteration)"
#: How the record of a Slice/Concat/Pad lowered when it ran begins its ``via``.
RUNTIME_LOWERED = "lowered at run time"


#: The stages an engine fails at (``EngineWords.stage``): making a session, running it.
LOAD, RUN = "load", "run"


@dataclass(frozen=True)
class EngineWords:
    """An engine's own words on its failure, kept apart from what dmlgraph says before them
    (the model's path, its nodes' names), so that what classifies the failure reads the
    engine's alone: a '"' in a model's path masked onnxruntime's refusal from the quote on
    (``providers.own_words``), and check of a model onnxruntime cannot run exited 2 instead
    of comparing with onnx.reference. ``stage``: ``LOAD`` or ``RUN``; ``text``: all it
    said (``engine_text``: a name it quotes may hold a newline), the message ending with its
    first ``line``; ``echoed``: what dmlgraph gave the engine that its words may repeat (a
    model's path: "Load model from P failed:")."""

    stage: str
    text: str
    echoed: tuple[str, ...] = ()

    @property
    def line(self) -> str:
        """The first line of its words, as the message (one line) says them."""
        return self.text.splitlines()[0] if self.text else ""


class BackendError(DmlgraphError):
    """A graph cannot run on a backend: bad feeds, an engine failure, an inexpressible node.
    ``engine_words``: the engine's own, where it failed (None: dmlgraph's refusal)."""

    def __init__(self, *args: object, engine_words: EngineWords | None = None) -> None:
        super().__init__(*args)
        self.engine_words = engine_words

    def with_hint(self, hint: str) -> BackendError:
        """This error with ``hint`` ending its message, the engine's words kept."""
        return BackendError(f"{self}{hint}", engine_words=self.engine_words)


def engine_words(error: BaseException, stage: str) -> EngineWords | None:
    """The engine's own words of ``error`` where it failed at ``stage``; else None."""
    said = getattr(error, "engine_words", None)
    return said if isinstance(said, EngineWords) and said.stage == stage else None


class SizeMismatch(BackendError):
    """A node made a tensor of another type than the one the lowered graph was planned for:
    onnx's inference sized it otherwise than the engine computing it (``tensor``, what
    ``maker`` made, and what inference said)."""

    def __init__(
        self,
        message: str,
        tensor: str,
        maker: str,
        made: tuple[np.dtype, tuple[int, ...]],
        inferred: tuple[np.dtype, tuple[int, ...]],
    ) -> None:
        super().__init__(message)
        self.tensor, self.maker, self.made, self.inferred = tensor, maker, made, inferred


def refuse_beyond_memory(graph: Graph, planned: int = 0) -> None:
    """Refuse, before anything is allocated, a run that cannot fit in the memory this machine
    has free: a tensor of static size larger than it, the graph's outputs together, or the
    ``planned`` bytes a backend allocates at once. Allocated outright, a Pad to 10^12
    elements failed in onnxruntime's arena with its C++ message, and 15.7 GB in NumPy named
    no node; the message names the node, the tensor, its type and size."""
    free = tensorio.available_memory()
    trust = folding.PartialShapes(graph.declared_sizes)
    sizes: dict[str, int] = {}  # static tensors, of sizes the engine is sure to make

    def size(name: str) -> int:
        if name not in sizes:
            info = graph.tensors.get(name)
            sizes[name] = 0 if (
                info is None or info.dtype is None or info.static_shape is None
            ) else math.prod(info.static_shape) * np.dtype(info.dtype).itemsize
            if sizes[name] > free and trust.unsure(graph, name):  # a declaration's: the
                sizes[name] = 0  # node makes what it makes (a Reshape to [2, 2])
        return sizes[name]

    largest, where = 0, ""
    for node in graph.nodes:
        for name in node.outputs:
            nbytes = size(name) if name else 0
            if nbytes > largest:
                info = graph.tensors[name]
                largest, where = nbytes, (
                    f"{graph.describe(node)} makes {name!r}, {info.dtype} "
                    f"{list(info.static_shape or ())}: {bytes_text(nbytes)}"
                )
    if largest > free:
        raise BackendError(f"{where}, more than this machine has free ({bytes_text(free)})")
    outputs = sum(size(name) for name in dict.fromkeys(graph.outputs))
    needed = max(outputs, planned)
    if needed > free:
        what = "its outputs take" if outputs >= planned else "its run allocates"
        if not where:  # no node makes one: the largest is an input or constant given back
            name = max(dict.fromkeys(graph.outputs), key=size)
            info = graph.tensors[name]
            where = (f"{name!r}, {info.dtype} {list(info.static_shape or ())}: "
                     f"{bytes_text(size(name))}")
        raise BackendError(
            f"{graph.source}: {what} {bytes_text(needed)} at once (the largest tensor: "
            f"{where.removeprefix(graph.source + ': ')}), more than this machine has free "
            f"({bytes_text(free)})"
        )


def engine_hint(what: str, option: str, python: str) -> str:
    """What an error adds where another engine may do what failed: said, not done (the user
    chooses the engine), as the CLI's option and the Python argument."""
    return f" ({what}: {option}, {python} in Python)"


def first_line(exc: BaseException) -> str:
    """An engine's exception as one line (the CLI prints errors on one line)."""
    return engine_text(exc).splitlines()[0]


def engine_text(exc: BaseException) -> str:
    """An engine's exception whole, as ``first_line`` begins it."""
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


@dataclass(frozen=True)
class NodeRun:
    """One node as it ran: its ONNX name, the op (ONNX op type or DML operator name), the
    engine that computed it, how it got there (``via``) and the notes it carried."""

    node: str
    op: str
    engine: str
    via: str = ""
    notes: tuple[str, ...] = ()
    node_id: int | None = None  # its id in the graph that ran (None where unknown)
    # the node's outputs its divergence notes concern (``fallback.OrtRun.wrong``): (): none
    # of them (a divergence inside a subgraph that reaches none of its holder's outputs);
    # None: not known, so all
    wrong: tuple[str, ...] | None = None
    # each divergence note's own outputs where the record holds several (``concerned``):
    # ``wrong`` is their union, which counted every note's for each
    concerns: tuple[tuple[str, tuple[str, ...] | None], ...] = ()
    # the id of the model's node a descriptor lowered ahead of time came from (a lowered
    # graph's ``origin_ids``): a node's several descriptors count as one node; None elsewhere
    origin: int | None = None

    def counted_as(self) -> tuple[object, ...]:
        """What tells this run's node from others' (``RunRecord.engine_nodes``): its origin,
        else where it ran (a subgraph's, or lowered at run time), its id and its name."""
        return ("origin", self.origin) if self.origin is not None else (
            self.via, self.node_id, self.node)

    def concerned(self, note: str) -> tuple[str, ...] | None:
        """The outputs ``note``, one of this record's divergence notes, concerns: its own
        in ``concerns``, else ``wrong`` (as ``wrong`` says them)."""
        return next((wrong for said, wrong in self.concerns if said == note), self.wrong)


@dataclass(frozen=True)
class RunRecord:
    """What one run did: backend name, provider (the engine under it), every node's run."""

    backend: str
    provider: str
    nodes: tuple[NodeRun, ...]
    notes: tuple[str, ...] = ()  # what the run did otherwise than the graph says
    # whether the graph ran lowered again (a size proved inference wrong): then ``nodes``
    # name their ids in the graph it was lowered from, not in the graph given
    relowered: bool = False

    def engines(self) -> dict[str, int]:
        """Runs per engine: a node each, but a descriptor each of the DirectML operators (a
        node may be several); ``engine_nodes`` counts the nodes."""
        counts: dict[str, int] = {}
        for run in self.nodes:
            counts[run.engine] = counts.get(run.engine, 0) + 1
        return counts

    def engine_nodes(self) -> dict[str, int]:
        """Nodes per engine, a node lowered to several descriptors counted once."""
        seen: dict[str, set[tuple[object, ...]]] = {}
        for run in self.nodes:
            seen.setdefault(run.engine, set()).add(run.counted_as())
        return {engine: len(keys) for engine, keys in seen.items()}

    def ran_text(self) -> str:
        """What ran where, saying what is counted: "8 nodes as 36 descriptors on numpy
        DirectML emulator, 2 nodes on onnxruntime:CPUExecutionProvider" (``run`` and
        ``check`` print it); "-" for nothing."""
        descriptors = {run.engine for run in self.nodes if run.op.startswith(DML_OPERATOR)}
        nodes = self.engine_nodes()
        said = []
        for engine, runs in self.engines().items():
            count = _nodes_text(nodes[engine])
            if engine in descriptors:
                said.append(f"{count} as {runs} descriptor{'s' * (runs != 1)} on {engine}")
            elif engine in (NOTHING_RAN, NO_ITERATION):
                said.append(f"{count}: {engine}")
            else:
                said.append(f"{count} on {engine}")
        return ", ".join(said) or "-"

    def lowered_when_run(self) -> tuple[NodeRun, ...]:
        """The DirectML operators of nodes lowered as the graph ran, not ahead of time (``via``
        says how: a Slice of run-time parameters, a node of an If's branch or a Loop's or
        Scan's body), and those that became nothing to run: what the lowering report cannot
        list, as their sizes were known only then. (ONNX nodes of a subgraph ran on the
        fallback.)"""
        return tuple(
            run for run in self.nodes
            if run.via and (run.op.startswith(DML_OPERATOR) or run.engine == NOTHING_RAN)
        )


def _nodes_text(count: int) -> str:
    return f"{count} node{'s' * (count != 1)}"


@dataclass(frozen=True)
class RunResult:
    outputs: dict[str, np.ndarray]
    record: RunRecord


class Backend(Protocol):
    """The common interface ``get_backend`` returns."""

    name: str

    def run(
        self,
        graph: Graph,
        feeds: Mapping[str, np.ndarray],
        outputs: Mapping[str, np.ndarray] | None = None,
    ) -> dict[str, np.ndarray]: ...

    def execute(
        self,
        graph: Graph,
        feeds: Mapping[str, np.ndarray],
        outputs: Mapping[str, np.ndarray] | None = None,
    ) -> RunResult: ...


def check_arguments(
    graph: object, feeds: object, outputs: object = None
) -> None:
    """A backend's run takes a Graph, a mapping of feeds and one of bound outputs:
    anything else is one clear error, not an AttributeError from deep inside."""
    if not isinstance(graph, Graph):
        raise not_a_graph(graph)
    for name, given in (("feeds", feeds), ("outputs", outputs)):
        if (given is not None or name == "feeds") and not isinstance(given, Mapping):
            raise BackendError(
                f"{graph.source}: {name} map tensor names to arrays, not a "
                f"{type(given).__name__}"
            )


#: How many candidate solutions ``np.shares_memory`` may weigh before ``share_elements``
#: gives up.
SHARE_WORK = 1 << 16


def share_elements(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two arrays have an element in common: by their bounds first (cheap, and exact
    for contiguous ones), then exactly, with a bound on the work (too hard to tell: they
    count as sharing). By bounds alone, an array between the elements of a strided one
    ("every third float", DirectML's interleaved tensors) was taken as sharing its memory."""
    if not np.may_share_memory(a, b):
        return False
    try:
        # (NumPy's stubs list only -1 and 0; it takes any bound, as its docs say)
        return bool(np.shares_memory(a, b, max_work=SHARE_WORK))  # type: ignore[arg-type]
    except np.exceptions.TooHardError:
        return True


def masked_out(array: np.ndarray) -> str:
    """Why a bound output cannot be a masked array that hides elements ("" where it can):
    results are written into its data, under a mask that would still hide them (NumPy's
    reductions skip them, printing shows ``--``), so the caller would read a result that is
    not the run's."""
    mask = np.ma.getmask(array)
    if mask is np.ma.nomask or not mask.any():
        return ""
    return (
        f"a masked array whose mask hides {int(np.count_nonzero(mask))} of its elements "
        "(the results would go into its data, still hidden; bind an unmasked array)"
    )


def bind_outputs(
    graph: Graph,
    feeds: Mapping[str, np.ndarray],
    outputs: Mapping[str, Any],
    trust: folding.PartialShapes | None = None,
) -> dict[str, np.ndarray]:
    """The arrays a caller binds to outputs (``check_outputs``), none sharing memory with a
    feed or with another bound output: writing a result would change an input (on the numpy
    backend, while it is read) or overwrite part of another result."""
    bound = check_outputs(graph, outputs, trust)
    earlier: dict[str, np.ndarray] = {}
    for name, array in bound.items():
        for feed, value in feeds.items():
            if share_elements(array, value):
                raise BackendError(
                    f"{graph.source}: bound output {name!r} shares memory with input "
                    f"{feed!r}; writing the result would change the input while it is read"
                )
        for other, value in earlier.items():
            if share_elements(array, value):
                raise BackendError(
                    f"{graph.source}: bound outputs {other!r} and {name!r} share memory; "
                    "each result would overwrite part of the other"
                )
        earlier[name] = array
    return bound


def check_outputs(
    graph: Graph, outputs: Mapping[str, Any], trust: folding.PartialShapes | None = None
) -> dict[str, np.ndarray]:
    """Bound output arrays, once each is a graph output's dtype and shape, contiguous and
    writable (the results are written into them, nothing is reallocated).

    An output takes an array agreeing with the sizes inference knows (``_unlike``); where
    ``trust`` says onnxruntime may size it otherwise (an If whose branch declares [6] and
    makes [1, 2, 3]: inference says [6], onnxruntime makes [1, 2, 3]), the sizes, and the
    rank where that is unsure too, are left to the run, which writes the array only where
    its result has the array's shape (``write_all_bound``), as onnxruntime's IOBinding takes a
    pre-allocated output of a dynamic shape and fails a run whose shape differs. An array
    of the run's shape was refused there ("expected [6]"), and one of the inferred shape
    failed after the run. The numpy plan writes an output in place only into an array of
    the size its buffer was planned for (``Plan.run``), so no plan buffer is sized by the
    array."""
    checked: dict[str, np.ndarray] = {}
    for name, array in outputs.items():
        if name not in graph.outputs:
            raise BackendError(
                f"{graph.source}: no output named {name!r} to bind an array to (outputs: "
                f"{tensorio.listed_names(list(graph.outputs))})"
            )
        info = graph.tensor(name)
        if not isinstance(array, np.ndarray):
            raise BackendError(f"{graph.source}: bound output {name!r} must be a numpy array")
        if info.dtype is None:
            raise BackendError(
                f"{graph.source}: output {name!r} has no known dtype ({info!r}) to bind an "
                "array to"
            )
        problems = []
        if array.dtype != info.dtype:
            problems.append(f"dtype {array.dtype} (expected {np.dtype(info.dtype)})")
        if wrong := _unlike(graph, name, array, trust):
            problems.append(f"shape {list(array.shape)} (expected {wrong})")
        if not array.flags.c_contiguous:
            problems.append("not C-contiguous")
        if not array.flags.writeable:
            problems.append("read-only")
        if hidden := masked_out(array):
            problems.append(hidden)
        if problems:
            raise BackendError(
                f"{graph.source}: bound output {name!r} cannot take the result: "
                + ", ".join(problems)
            )
        checked[name] = array
    return checked


def _unlike(
    graph: Graph, name: str, array: np.ndarray, trust: folding.PartialShapes | None
) -> str:
    """What a bound array's shape should be, where inference already says it is not the
    output's ("" where it may be): the inferred sizes, where onnxruntime is sure to make
    them; where it may make others (``trust.unsure``: an If's output, of the sizes its
    branch makes whatever the branch declares) only the rank, where that is sure, and
    nothing where it is not: the run decides (``write_all_bound``)."""
    known = graph.tensor(name).shape
    if known is None or array.ndim == len(known) and all(
        type(d) is not int or d == n for d, n in zip(known, array.shape)
    ):
        return ""  # it agrees: no need to ask trust (a walk over the producers)
    if trust is None or not trust.unsure(graph, name):
        return str(list(known))
    if trust.rank_unsure(graph, name) or array.ndim == len(known):
        return ""
    return f"rank {len(known)}"


def write_all_bound(
    bound: Mapping[str, np.ndarray], values: Mapping[str, np.ndarray], graph: Graph
) -> dict[str, np.ndarray]:
    """The results, those with a bound array written into it, once every bound array has been
    found to be of the dtype and shape the run made (where inference sized an output
    otherwise, an If whose branch declares other sizes than it makes, those the run made:
    ``check_outputs`` let the run decide). A run's results that reach the caller all at once
    leave no array written when another does not fit (written in turn, an error on the second
    left the first overwritten)."""
    for name, target in bound.items():
        _check_bound(target, values[name], name, graph)
    for name, target in bound.items():
        np.copyto(target, values[name])
    return {name: bound.get(name, value) for name, value in values.items()}


def _check_bound(target: np.ndarray, value: np.ndarray, name: str, graph: Graph) -> None:
    """Refuse a bound array not of the result's dtype and shape, saying where inference sized
    the output otherwise than the run (not where it only left a size open: ['N', 3] and a
    run's [2, 3] agree, and the array of [4, 3] is simply not the result's)."""
    if target.shape != value.shape or target.dtype != value.dtype:
        info = graph.tensors.get(name)
        known = None if info is None else info.shape
        inferred = "" if known is None or len(known) == value.ndim and all(
            type(d) is not int or d == n for d, n in zip(known, value.shape)) else (
            f", where onnx infers {list(known)}: an output has the sizes its nodes make "
            "as onnxruntime runs them, not those inference foresaw (an If's are its branch's, "
            "whatever the branch declares)"
        )
        raise BackendError(
            f"{graph.source}: output {name!r} is {value.dtype}{list(value.shape)} in this run; "
            f"the array bound to it is {target.dtype}{list(target.shape)}{inferred}. A bound "
            f"array takes the run's result as it is: bind a {value.dtype} array of shape "
            f"{list(value.shape)}, or none"
        )


def refuse_unbound(graph: Graph) -> None:
    """Refuse, before a plan or a session is made, a graph ``lower`` made whose descriptors
    do not bind its tensors as they now are (``unbound_tensors``): it was edited afterwards.
    (A graph of descriptors built by hand may read a tensor through strides, or otherwise
    than lowering's packed rule: the plan and the translation judge it.)"""
    from lowering.report import LoweredGraph  # lowering imports nothing of the backends

    if not isinstance(graph, LoweredGraph):
        return
    problems = unbound_tensors(graph, require_static=False)
    if problems:
        raise BackendError(
            f"{graph.source}: the graph's tensors no longer fit its descriptors (edited after "
            f"lower()? lower the edited graph again): {problems[0]}"
            + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else "")
        )


def refuse_invalid_descriptors(graph: Graph) -> None:
    """Refuse a graph holding a descriptor that breaks DirectML's rules at the graph's feature
    level (6_4 for a graph ``lower`` did not make), naming the node, as the numpy backend's
    plan does for each one it runs. The onnxruntime translation writes a descriptor as the
    ONNX op nearest it, which clamps what DirectML forbids: a SLICE reading past its input
    ran there and made [1, 2] where its output tensor says [2, 2]. A graph ``lower`` made and
    nobody changed since is known valid (``descriptors_valid``)."""
    from dmlgraph.dml.enums import FeatureLevel  # as ``refuse_unbound`` imports lowering's

    level = getattr(graph, "feature_level", None) or FeatureLevel.L6_4
    check = getattr(graph, "descriptors_valid", None)
    if check is not None and check(level):
        return
    for node in graph.nodes:
        if node.is_onnx:
            continue
        try:
            node.op.validate(level)
        except DmlgraphError as exc:
            raise BackendError(f"{graph.describe(node)}: {exc}") from None


def not_a_graph(graph: object) -> BackendError:
    return BackendError(
        f"run takes a Graph (dmlgraph.load, or lowering.lower of one), not {type(graph).__name__}"
    )


def check_feeds(graph: Graph, feeds: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """The feeds as arrays, once every graph input is present with its dtype and shape.

    Symbolic dimensions must agree across inputs (every ``N`` one size).
    """
    missing = [name for name in graph.inputs if name not in feeds]
    extra = [name for name in feeds if name not in graph.inputs]
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"missing {missing}")
        if extra:
            parts.append(f"unknown {extra}")
            parts += [why for name in extra if (why := graph.not_an_input(name))]
            made = [name for name in extra if name in graph.outputs]
            if made:  # dict(np.load(run -o's .npz)) holds both: the file form takes it
                what = "is a graph output" if len(made) == 1 else "are graph outputs"
                parts.append(f"{tensorio.listed_names(made)} {what}, which a run makes "
                             "(check's expected= takes outputs to compare with)")
        raise BackendError(
            f"{graph.source}: feeds do not match the graph inputs {graph.inputs}: "
            + "; ".join(parts) + tensorio.positional_keys_hint(graph, extra, outputs=False)
        )
    arrays: dict[str, np.ndarray] = {}
    symbols: dict[str, tuple[int, str, int]] = {}  # name -> (size, input, axis)
    for name in graph.inputs:
        array = feeds[name]
        info = graph.tensor(name)
        if type(array) is not np.ndarray or array.dtype != info.dtype:
            # Python data, NumPy's strings, another byte order: as onnxruntime takes them
            array = tensorio.feed_array(
                name, array, info.dtype, f"{graph.source}: input {name!r}", BackendError
            )
        if info.dtype is not None and array.dtype != info.dtype:
            raise BackendError(
                f"{graph.source}: input {name!r} is {array.dtype}; the graph expects {info.dtype}"
            )
        if (problem := string_problem(array)) is not None:
            # onnxruntime writes str() of it: None ran as "None", b"a" as "b'a'"
            raise BackendError(f"{graph.source}: input {name!r} {problem}")
        if array.shape == info.shape:  # static and equal: the checks below would all pass
            arrays[name] = array
            continue
        if info.shape is not None:
            if array.ndim != len(info.shape) or any(
                isinstance(d, int) and d != n for d, n in zip(info.shape, array.shape)
            ):
                raise BackendError(
                    f"{graph.source}: input {name!r} has shape {list(array.shape)}; the graph "
                    f"expects {list(info.shape)}"
                )
            for axis, (dim, size) in enumerate(zip(info.shape, array.shape)):
                if isinstance(dim, str):
                    seen = symbols.setdefault(dim, (size, name, axis))
                    if seen[0] != size:
                        raise BackendError(
                            f"{graph.source}: dimension {dim!r} is {seen[0]} in input "
                            f"{seen[1]!r} (axis {seen[2]}) but {size} in input {name!r} "
                            f"(axis {axis})"
                        )
        arrays[name] = array
    return arrays


def fingerprint(graph: Graph) -> tuple[Any, ...]:
    """Changes whenever a node, a port, a tensor or the I/O lists change (``Graph.version``
    counts the first three), in time independent of the graph's size."""
    if not isinstance(graph, Graph):  # read on every run: the plan's key
        raise not_a_graph(graph)
    return (
        graph.version,
        tuple(graph.inputs),
        tuple(graph.outputs),
        getattr(graph, "feature_level", None),
    )


class GraphCache(Generic[T]):
    """Something built from a graph (a plan, a session), rebuilt when the graph changes and
    dropped when the graph is freed, and in a forked child: a plan a parent's thread was
    running is left mid-run there (its lock held for ever), and onnxruntime's sessions do
    not survive a fork."""

    _live: weakref.WeakSet[GraphCache[Any]] = weakref.WeakSet()
    #: What forked children forgot, kept (see ``forget_all``).
    _forgotten: list[Any] = []

    @classmethod
    def forget_all(cls) -> None:
        """In a forked child: every cache starts empty, and what they held is kept, never
        freed. Freed, an onnxruntime session whose thread pool's workers were waiting in the
        parent waits in its destructor for them (``pthread_cond_destroy``), which the child
        does not have: the child hung in the fork's own handler, before any code of its own
        ran, once the parent had run a plan with a fallback node or the onnxruntime
        backend. (At exit, onnxruntime's own teardown hangs such a child too, plain
        onnxruntime as well: it should leave by ``os._exit``, as multiprocessing's do.)"""
        for cache in list(cls._live):
            cls._forgotten.append((list(cache._entries.values()), cache._last))
            cache._entries = weakref.WeakKeyDictionary()
            cache._last = None

    def __init__(self) -> None:
        GraphCache._live.add(self)
        self._entries: weakref.WeakKeyDictionary[Graph, tuple[tuple[Any, ...], T]] = (
            weakref.WeakKeyDictionary()
        )
        #: the last graph asked for, looked up first: a run's megabytes evict the weak
        #: dictionary's Python code from cache, and its look-up then cost 40-70 us a run
        self._last: tuple[weakref.ref[Graph], tuple[Any, ...], T] | None = None
        # the last graph's weak reference calls back through a weak reference to the cache:
        # a bound method there made a cycle (cache, entry, reference, method, cache), and a
        # dropped backend's plans, arenas and sessions waited for the collector
        cache = weakref.ref(self)

        def forget(ref: weakref.ref[Graph]) -> None:
            held = cache()
            if held is not None:
                held._forget(ref)

        self._forget_last = forget

    def get(self, graph: Graph, build: Callable[[], T]) -> T:
        key = fingerprint(graph)
        last = self._last
        if last is not None and last[0]() is graph and last[1] == key:
            return last[2]
        entry = self._entries.get(graph)
        if entry is None or entry[0] != key:
            entry = (key, build())
            self._entries[graph] = entry
        self._last = (weakref.ref(graph, self._forget_last), key, entry[1])
        return entry[1]

    def _forget(self, ref: weakref.ref[Graph]) -> None:
        """The last graph is gone: what was built from it goes with it."""
        if self._last is not None and self._last[0] is ref:
            self._last = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=GraphCache.forget_all)


class ChildKilled(BackendError):
    """A forked child (``run_forked``) died of a signal: ``signal`` its number."""

    def __init__(self, signal: int) -> None:
        super().__init__(f"a forked child died of {signal_name(signal)} (signal {signal})")
        self.signal = signal


def signal_name(number: int) -> str:
    """SIGFPE for 8; "an unknown signal" where the platform names none."""
    import signal

    try:
        return signal.Signals(number).name
    except ValueError:
        return "an unknown signal"


def can_fork() -> bool:
    """Whether ``run_forked`` runs its work in a child (else in this process)."""
    return hasattr(os, "fork")


def run_forked(work: Callable[[], T]) -> T:
    """``work()`` in a forked child, its result (or the exception it raised) handed back
    pickled through a pipe: an engine that kills its process (onnxruntime 1.32 dies of SIGFPE
    on some Scans) takes the child, not the caller, and the caller gets ``ChildKilled``.
    Without ``os.fork`` (Windows) the work runs here. The pipe is read while the child writes,
    so outputs of any size pass (pickle writes an array's buffer once)."""
    import gc
    import pickle
    import signal
    import warnings

    if not can_fork():
        return work()
    read, write = os.pipe()
    frozen = gc.get_freeze_count()  # objects a caller froze: all then stay frozen here
    gc.freeze()  # the child finalizes nothing it inherits (``_answer``), from its first hook
    pid = -1
    try:
        with warnings.catch_warnings():  # Python 3.12's "multi-threaded, use of fork()": the
            warnings.simplefilter("ignore", DeprecationWarning)  # child runs no parent
            pid = os.fork()  # thread's code (GraphCache.forget_all, the pools' fork handlers)
    finally:
        if pid != 0 and not frozen:  # the parent, forked or not
            gc.unfreeze()
    if pid == 0:
        _answer(work, read, write)  # never returns
    os.close(write)
    reaped = False
    try:
        with os.fdopen(read, "rb") as reader:
            try:
                outcome = pickle.load(reader)
            except Exception:  # the child ended before a whole answer
                outcome = None
        code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
        reaped = True
    finally:
        if not reaped:  # interrupted: the child is not left running
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
    if code < 0:
        raise ChildKilled(-code)
    if outcome is None:
        raise BackendError(f"a forked child ended (exit code {code}) without its result")
    returned, value = outcome
    if not returned:
        raise value
    return value  # type: ignore[no-any-return]


def _answer(work: Callable[[], Any], read: int, write: int) -> NoReturn:
    """In ``run_forked``'s child: run ``work`` and write (True, its result) or (False, the
    exception) to ``write``, then leave by ``os._exit`` (onnxruntime's teardown at a forked
    child's exit hangs: ``GraphCache.forget_all``), with no faulthandler traceback and no core
    file where the work dies of a signal: the caller says what happened. Nothing the child
    inherited is finalized there: ``run_forked`` froze it before forking (``gc.freeze``), as
    a collection may start at any allocation, Python's own after-fork hooks' too. A garbage
    cycle the parent had not yet collected, holding an onnxruntime session, was collected in
    a child: its teardown waited in ``pthread_cond_destroy`` for the parent's pool threads,
    which a child has not (a suite run hung 5 minutes in ``check``'s forked reference), and
    with CUDA's provider one segfaulted in ``threading._after_fork`` (an H200)."""
    import faulthandler
    import pickle

    code = 1
    try:
        os.close(read)
        faulthandler.disable()
        try:
            import resource

            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        except (ImportError, ValueError, OSError):
            pass
        try:
            outcome: tuple[bool, Any] = (True, work())
        except BaseException as exc:
            outcome = (False, _portable(exc))
        with os.fdopen(write, "wb") as out:
            pickle.dump(outcome, out, protocol=pickle.HIGHEST_PROTOCOL)
        code = 0
    finally:
        os._exit(code)


def _portable(exc: BaseException) -> BaseException:
    """``exc`` as it pickles back, else one of its base's kind with its words (an exception
    whose constructor takes other arguments than its message does not unpickle)."""
    import pickle

    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:
        kind = BackendError if isinstance(exc, DmlgraphError) else RuntimeError
        return kind(str(exc))
