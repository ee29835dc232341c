"""If, Loop and Scan run by the NumPy backend itself, their subgraphs lowered when they run.

onnxruntime's DirectML provider partitions a control-flow node's subgraphs as it partitions
the main graph, so a Slice, Concat or Pad inside a Loop body runs as a DirectML operator
there. The NumPy backend does the same: the branch an If takes, or a Loop's or Scan's body,
becomes a model of its own (the enclosing graph's tensors it reads as inputs of the sizes
that arrive, or as initializers where they are constants of at most
``INFERENCE_CONSTANT_LIMIT`` elements), imported, lowered at the plan's feature level and
run by a plan of its own, kept for the 16 most recently run input types
(``RUNTIME_CACHE_LIMIT``). A Loop iterates as the ONNX spec says: ``M`` trips at most while
``cond`` holds, the carried values fed back, the scan outputs stacked on a new axis 0. A
Scan (version 9 on) runs its body once for each slice of its scan inputs along their axes
(last to first where reversed), the state variables fed back, each scan output stacked along
its axis (last to first where reversed).

Where that cannot be done, the node runs whole on the fallback, as every control-flow node
did before, and its run record says why (``Declined``): a subgraph reading or making
sequences or optionals, a subgraph dmlgraph's importer refuses (but for one that breaks an
ONNX rule by the sizes that arrive: an error, as in the main graph), a Loop with neither ``M``
nor ``cond`` (it ends only by its body's condition, which the fallback checks as fast as it
can), a Loop that makes scan outputs in zero iterations where onnx's inference of its body
fails or gives an output no element type, or a size the body's lowering was planned for that
an engine made otherwise. A Loop of zero iterations otherwise gives its initial carried
values and, as onnxruntime does, scan outputs empty along axis 0 of the element shapes
inference gives its body's outputs from the model (``ControlFlow._no_trip``; ONNX leaves
them open); a Scan of empty scan inputs with scan outputs is an error, as no fallback runs
it. A Scan-8 (batches of sequences) is left to the fallback always.
"""

from __future__ import annotations

from collections import Counter, OrderedDict
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import onnx
from onnx import helper

from backends.base import (
    NOTHING_RAN,
    RUNTIME_LOWERED,
    BackendError,
    NodeRun,
    SizeMismatch,
    first_line,
)
from dmlgraph import folding
from dmlgraph.canonical import LOWERED_OPS
from dmlgraph.dml.enums import FeatureLevel
from dmlgraph.dtypes import DTYPE_TO_ELEM_TYPE, ELEM_TYPE_TO_DTYPE
from dmlgraph.errors import DmlgraphError, GraphInvariantError, NodeRuleError
from dmlgraph.ir import Graph, Node, Subgraph, TensorInfo, split_inputs
from dmlgraph.parity import DIVERGENCE, REFUSES, RUN_AS_ONNX
from dmlgraph.reach import ENCLOSING, defined_values, reach, reached_outputs, scan_body_wrong
from dmlgraph.subgraphs import (
    ScanForm,
    defined_names,
    fed_arrays_problem,
    graphs_within,
    holder_label,
    lowered_when_run,
    scan_axis,
    scan_form,
    subgraph_model,
)
from dmlgraph.value_info import value_info

if TYPE_CHECKING:
    from backends.numpy.plan import Plan
    from lowering.report import LoweredGraph


#: A Loop whose body makes its iteration number itself a scan output: onnxruntime (1.32,
#: measured) fills every element with the trip count reached, its counter's buffer reused,
#: where ONNX stacks 0, 1, 2, ... (an Identity of it between gives those).
_COUNTER_SCANNED = (
    "divergence: scan output(s) {outputs} of the Loop are its body's iteration number itself, "
    "which onnxruntime fills with the trip count reached for every iteration; ONNX stacks "
    "0, 1, 2, ..."
)


#: A Loop whose body makes its iteration number itself a carried value's next value:
#: onnxruntime (1.32, measured) gives the number of trips run (its counter's buffer, counted
#: on), where ONNX and onnx.reference give the last trip's number, one less.
_COUNTER_CARRIED = (
    "divergence: carried value(s) {outputs} of the Loop are its body's iteration number "
    "itself, which onnxruntime gives as the number of iterations run; ONNX gives the last "
    "iteration's number (one less)"
)


#: An If whose branch taken makes one tensor two or more of its outputs: onnxruntime (1.32,
#: measured) gives all but the last of those outputs whatever their buffers held (zeros,
#: uninitialized values), as it does a Scan's (``_REPEATED``); ONNX gives each the tensor.
_BRANCH_REPEATED = (
    "divergence: the If's {branch} makes {names} more than one of its outputs, which "
    "onnxruntime gets wrong (all but the last of those outputs hold whatever their buffers "
    "held); ONNX gives each the tensor's value"
)


#: A Scan whose body makes one of its own inputs an output, unchanged (a state variable passed
#: through, a scan input's slice stacked as it is): onnxruntime (1.32, measured) gives that
#: output, and the state variables fed back from it, whatever their buffers held (zeros, stale
#: values, uninitialized memory); ONNX passes the input through (an Identity between gives it).
_PASSED_THROUGH = (
    "divergence: the Scan's body makes its input(s) {names} output(s) as they are, which "
    "onnxruntime gets wrong (those outputs, and the state variables fed back from them, hold "
    "whatever their buffers held); ONNX passes them through"
)


#: A Scan whose body makes one tensor two or more of its outputs (a state variable's next value
#: also stacked as a scan output, one tensor as two scan outputs): onnxruntime (1.32, measured)
#: gives all but the last of those outputs, and the state variables fed back from them,
#: whatever their buffers held (zeros); ONNX gives each output the tensor's value.
_REPEATED = (
    "divergence: the Scan's body makes {names} more than one of its outputs, which "
    "onnxruntime gets wrong (all but the last of those outputs, and the state variables fed "
    "back from them, hold whatever their buffers held); ONNX gives each the tensor's value"
)


#: A Loop of no iteration making scan outputs: ONNX leaves their element shape open;
#: onnxruntime (1.32) takes the shape its inference of the model gives each body output, its
#: unknown sizes 0 (a body output of unknown rank: [0]), which the NumPy backend reproduces.
_NO_TRIP = (
    "the Loop ran no iteration: its carried values are the initial ones, and each scan "
    "output is empty along axis 0, its elements of the shape inference gives the body's "
    "output (ONNX leaves it open; an unknown size 0, as onnxruntime)"
)


#: The same, where onnxruntime's inference of the model may know fewer sizes than dmlgraph's
#: types that shape comes from (ONNX fixes none): sizes that arrived in an If's, Loop's or
#: Scan's subgraph, sizes of a tensor the enclosing graph computes (a Reshape of x [N, 3] to
#: [-1] and dimension 1 of its Shape: onnxruntime [0, 0, 0]; one folding made a constant) or
#: a feed may override (an initializer listed as a graph input), or data propagation over a
#: shape partly known; ``check`` names it for what it reaches.
_NO_TRIP_OPEN = (
    f"{DIVERGENCE} the Loop ran no iteration: each scan output is empty along axis 0, its "
    "elements of the shape inference gives the body's output from sizes onnxruntime's "
    "inference of the model may not know (sizes that arrived in a subgraph, of tensors the "
    "enclosing graph computes or a feed may override, or propagated over a shape partly "
    "known; it makes those 0); ONNX leaves that shape open"
)


#: A Scan of empty scan inputs and no scan outputs: ONNX's loop runs no iteration. A known
#: divergence: onnxruntime 1.32 fails on it ("Invalid dim0_offset of 0"), and ``check``
#: compares what it reaches with onnx.reference (it exited 2 with onnxruntime's error).
_NO_ITERATION = (
    f"{DIVERGENCE} its scan inputs are empty (sequence length 0): the body ran no iteration, "
    "and its final state variables are the initial ones, as ONNX and onnx.reference say "
    "(onnxruntime 1.32 fails on such a Scan)"
)


#: A Scan input of another rank than onnx's inference gives it (``ControlFlow.
#: _inferred_ranks``): made by an op onnxruntime computes to another rank than onnx infers.
_OTHER_RANK = (
    "{where}: its input {index} ({name!r}) arrives {made}, where onnx's inference gives it "
    "rank {rank}: onnxruntime 1.32 sizes a Scan body's outputs by that inference and fails on "
    "it (\"The output OrtValue provided for output ... has shape ... but the computed output "
    "shape for this run is ...\"), whatever the body declares. What made it was computed as "
    "onnxruntime computes it, to another rank than onnx infers (a PRelu whose slope has more "
    "axes than X, which ONNX does not allow: its slope broadcasts to X one way)"
)


#: A Scan of empty scan inputs making scan outputs: no iteration gives their element shape.
#: It ran whole on the fallback, where onnxruntime 1.32 fails on it ("Invalid dim0_offset of
#: 0", scan axis 0) or kills the process with SIGFPE (another scan axis, measured), and
#: onnx.reference fails ("need at least one array to concatenate").
_SCANNED_NOTHING = (
    "{where}: its scan inputs are empty (sequence length 0), so its scan outputs are made by "
    "no iteration and their shape is unknown; neither onnxruntime (which fails on such a "
    "Scan, or dies of SIGFPE) nor onnx.reference runs it"
)


def inferred_ranks(graph: Graph, names: Sequence[str]) -> list[int | None]:
    """The ranks onnx's inference gives these tensors of the graph (None: unknown)."""
    return [None if (info := graph.tensors.get(name)) is None or info.shape is None
            else len(info.shape) for name in names]


def other_rank(
    where: str, names: Sequence[str], ranks: Sequence[int | None], values: Sequence[Any]
) -> str | None:
    """Why a Scan (a Scan-8 too) cannot take ``values`` (its explicit inputs, None where left
    out or unknown; ``ranks`` as onnx's inference gives them): one arrives of another rank,
    and onnxruntime sizes the body's outputs by that inference and fails (``_OTHER_RANK``)."""
    for index, (value, rank) in enumerate(zip(values, ranks)):
        if value is not None and rank is not None and np.ndim(value) != rank:
            return _OTHER_RANK.format(where=where, index=index, name=names[index],
                                      made=f"{value.dtype}{list(np.shape(value))}", rank=rank)
    return None


class _Subgraph(Protocol):
    """How ``_if``, ``_loop`` and ``_scan`` run a subgraph by its attribute's name, with feeds
    of its own inputs (those named in ``unchecked`` not held to the subgraph's declarations):
    its outputs, and its records."""

    def __call__(
        self, attr: str, feeds: Mapping[str, np.ndarray], unchecked: Collection[str] = ()
    ) -> tuple[list[np.ndarray], tuple[NodeRun, ...]]: ...


class SubgraphRuleError(BackendError):
    """A branch or body that, by the sizes that arrived, breaks a node's rule (``ControlFlow.
    _lowered``). ``reads``: the enclosing graph's tensors (by their names there) the node
    breaking it may read, its holder's (``control``) inputs it is not provably apart from;
    the plan names a known divergence that made one of them (``fallback.reference_hint``),
    as the main graph's run does where a size made otherwise breaks a node's rule."""

    def __init__(self, message: str, control: ControlFlow, reads: tuple[str, ...]) -> None:
        super().__init__(message)
        self.control, self.reads = control, reads


class Declined(Exception):
    """The node cannot run lowered this time; the fallback runs it whole (the reason)."""


def runs_here(node: Node) -> bool:
    """Whether the backend runs this node's subgraphs lowered (an If, Loop or Scan-9+ of
    ONNX's: ``lowered_when_run``)."""
    return node.is_onnx and bool(lowered_when_run(node.op))


def _made_constants(graph: Graph, constants: Mapping[str, np.ndarray]) -> frozenset[str]:
    """Of the enclosing ``constants`` a Loop's body reads (by the names the model gives them),
    those onnxruntime's inference of the model knows no value of: not the model's own
    (``Graph.given_constants``: folding made them), or an initializer a feed may override
    (onnxruntime: "will not be treated as constant"); none where the graph does not say."""
    given = graph.given_constants
    if given is None:
        return frozenset()
    overridable = graph.initializer_inputs
    return frozenset(name for name in constants if name not in given or name in overridable)


class ControlFlow:
    """An If's, Loop's or Scan's subgraphs as models, lowered and planned by the types they
    run with.

    Holds what it needs of the enclosing graph, not the graph (a plan holds this, and the
    backend's cache of plans is keyed weakly by the graph)."""

    def __init__(self, graph: Graph, node: Node, cache_limit: int) -> None:
        op = node.op
        self.op_type, self.name = node.op_type, node.name or node.op_type
        self.label = holder_label(node.name, node.outputs)
        self.where = graph.describe(node)  # the source file, the node
        self.opset_imports, self.ir_version = dict(graph.opset_imports), graph.ir_version
        self.node_id = node.id
        self.outputs = tuple(node.outputs)  # (named in errors)
        self.explicit_names, self.outer = split_inputs(node)  # outer: old name -> now
        # a large one (a weight) is fed, as the tensors that arrive are: as an initializer it
        # was copied into every model made (one per input types, 16 kept) and each plan's
        # sessions, 57 MB a key for 16 MB; what a lowering folds by value is small
        self.constants = {
            old: value
            for old, new in self.outer.items()
            if (value := graph.constant(new)) is not None
            and value.size <= folding.INFERENCE_CONSTANT_LIMIT
        }
        self.subgraphs: dict[str, Subgraph] = {
            attr: op.attrs[attr] for attr in lowered_when_run(op)
        }
        graphs = {
            attr: onnx.GraphProto.FromString(sub.data) for attr, sub in self.subgraphs.items()
        }
        #: each subgraph's inputs as it declares them: what arrives is checked against them
        self.declared = {attr: list(graph.input) for attr, graph in graphs.items()}
        self.scan: ScanForm | None = None
        self.body_names: list[str] = []  # a Scan body's inputs
        self.passed: list[str] = []  # a Scan body's inputs it makes outputs as they are
        self.repeated: list[str] = []  # tensors a Scan body makes two or more of its outputs
        #: tensors each If branch makes two or more of its outputs (onnxruntime's divergence)
        self.branch_repeated: dict[str, list[str]] = {}
        if self.op_type == "If":
            self.branch_repeated = {attr: _repeated(graph) for attr, graph in graphs.items()}
        if self.op_type == "Scan":  # its attributes as the import checked them
            body = graphs["body"]
            self.scan = scan_form(
                op.attrs, len(self.explicit_names), len(node.outputs), len(body.input),
                len(body.output),
            )
            self.body_names = [value.name for value in body.input]
            self.passed = [value.name for value in body.output if value.name in self.body_names]
            self.repeated = _repeated(body)
        #: a Scan's inputs' ranks as onnx's inference gives them (None: unknown), by which
        #: onnxruntime sizes its body's outputs (``_inferred_ranks``)
        self.ranks: list[int | None] = (
            [] if self.op_type != "Scan" else inferred_ranks(graph, self.explicit_names)
        )
        #: the enclosing tensors a Loop's body reads, as the enclosing graph types them (not
        #: as they arrive): a Loop of no iteration takes its scan outputs' shapes from them
        self.outer_infos: dict[str, TensorInfo | None] = {} if self.op_type != "Loop" else {
            old: graph.tensors.get(new) for old, new in self.outer.items()
            if old not in self.constants
        }
        self.no_trip: list[tuple[np.dtype | None, tuple[int, ...]]] | None = None  # (``_no_trip``)
        self.no_trip_note = _NO_TRIP  # or ``_NO_TRIP_OPEN``, as ``_no_trip`` finds
        #: the enclosing tensors a Loop's body reads that onnxruntime knows as ``outer_infos``
        #: does: the enclosing graph's declared inputs (of the model, not of a subgraph
        #: typed as it ran); of the others it may know only the element type
        self.declared_outer = frozenset() if getattr(graph, "typed_on_arrival", False) else (
            frozenset(old for old, new in self.outer.items() if new in graph.inputs))
        #: the enclosing constants a Loop's body reads whose values onnxruntime's inference
        #: of the model does not know: those folding made (a ConstantOfShape of x [N, 3]'s
        #: Shape), and initializers a feed may override (``Graph.initializer_inputs``); all
        #: are known where the graph does not say which the model gave. Of every holder
        #: (``made_outer``): its subgraphs' models take them for none of the model's own
        self.made_outer = _made_constants(graph, self.constants)
        self.made_constants = self.made_outer if self.op_type == "Loop" else frozenset()
        self.cache_limit = cache_limit
        self.cache: OrderedDict[tuple[Any, ...], tuple[LoweredGraph, Plan, tuple[str, ...]]] = (
            OrderedDict()
        )
        #: the divergence notes lowering said of a subgraph's nodes, by key, each with the
        #: outputs of this node it reaches (``_said``)
        self.said: dict[tuple[Any, ...], dict[str, tuple[str, ...] | None]] = {}
        #: the records of a subgraph's last run, as its plan gave them and as this node says
        #: them, by key: a Loop's iterations give equal records, built once, not every trip
        self.worded: dict[tuple[Any, ...], tuple[tuple[NodeRun, ...], tuple[NodeRun, ...]]] = {}

    # ------------------------------------------------------------------ running
    def run(
        self,
        arrays: Mapping[str, np.ndarray],
        level: FeatureLevel,
        make_plan: Callable[[Graph], Plan],
    ) -> tuple[list[np.ndarray], list[NodeRun]]:
        """The node's outputs for its inputs (by their names now), and what ran for it."""
        for name, value in arrays.items():
            if not isinstance(value, np.ndarray):
                raise Declined(f"input {name!r} is a {type(value).__name__}, not a tensor")
        outer = {old: arrays[new] for old, new in self.outer.items() if old not in self.constants}
        # an input left out ("") is None
        explicit = [arrays[name] if name else None for name in self.explicit_names]

        def subgraph(
            attr: str, feeds: Mapping[str, np.ndarray], unchecked: Collection[str] = ()
        ) -> tuple[list[np.ndarray], tuple[NodeRun, ...]]:
            return self._run_subgraph(attr, feeds, outer, level, make_plan, unchecked)

        if self.op_type == "If":
            return self._if(explicit, subgraph)
        if self.op_type == "Scan":
            return self._scan(explicit, subgraph)
        return self._loop(explicit, subgraph, outer)

    def _if(
        self, explicit: list[np.ndarray | None], subgraph: _Subgraph
    ) -> tuple[list[np.ndarray], list[NodeRun]]:
        cond = explicit[0]
        if cond is None or cond.size != 1:
            raise BackendError(
                f"{self.where}: its condition holds {0 if cond is None else cond.size} "
                "elements; If takes one"
            )
        branch = "then_branch" if bool(cond.reshape(-1)[0]) else "else_branch"
        outputs, ran = subgraph(branch, {})
        runs: Sequence[NodeRun] = ran
        repeated = self.branch_repeated.get(branch)
        if repeated:  # onnxruntime's own reading, named for ``check``
            # (the If's outputs those are, by position: onnxruntime computes the others)
            made = [value.name for value in onnx.GraphProto.FromString(
                self.subgraphs[branch].data).output]
            runs = _noted(runs, _BRANCH_REPEATED.format(branch=branch, names=repeated), self,
                          via=f"{branch}, lowered at run time", wrong=tuple(
                              out for out, name in zip(self.outputs, made)
                              if out and name in repeated))
        return outputs, _unique(runs)

    def _loop(
        self, explicit: list[np.ndarray | None], subgraph: _Subgraph,
        outer: Mapping[str, np.ndarray],
    ) -> tuple[list[np.ndarray], list[NodeRun]]:
        trips, cond, carried = explicit[0], explicit[1], list(explicit[2:])
        if trips is None and cond is None:
            raise Declined("it has neither a trip count nor a condition")
        for what, value in (("trip count", trips), ("condition", cond)):
            if value is not None and value.size != 1:
                raise BackendError(
                    f"{self.where}: its {what} holds {value.size} elements; Loop takes one"
                )
        body = onnx.GraphProto.FromString(self.subgraphs["body"].data)
        names = [value.name for value in body.input]
        scans_count = len(body.output) - 1 - len(carried)
        limit = None if trips is None else int(trips.reshape(-1)[0])
        going = True if cond is None else bool(cond.reshape(-1)[0])
        if scans_count and (not going or (limit is not None and limit <= 0)):
            scanned = [np.empty(shape, dtype) for dtype, shape in self._no_trip(body, outer)]
            initial = [np.array(v) for v in carried if v is not None]
            # (its note concerns the scan outputs: the carried values are the initial ones,
            # as onnxruntime gives them; a wrong one was excused)
            return initial + scanned, _noted([], self.no_trip_note, self, via="", wrong=self._at(
                range(len(carried), len(carried) + scans_count)))
        scans: list[list[np.ndarray]] = [[] for _ in range(scans_count)]
        runs: list[NodeRun] = []
        last_runs: tuple[NodeRun, ...] | None = None
        values = [v for v in carried if v is not None]
        # carried values are held to the body's declarations as the Loop is given them; on
        # later trips they are what the body made, which ONNX lets change shape from trip to
        # trip (onnx's inference clears their shapes), and onnxruntime runs so
        if going and (limit is None or limit > 0):
            problem = fed_arrays_problem(body.input[2:], dict(zip(names[2:], values)), "body")
            if problem is not None:
                raise BackendError(f"{self.where}: {problem}")
        trip = 0
        while going and (limit is None or trip < limit):
            feeds = {names[0]: np.array(trip, dtype=np.int64), names[1]: np.array(going)}
            feeds.update(zip(names[2:], values))
            outputs, body_runs = subgraph("body", feeds, names[2:])
            if body_runs is not last_runs:  # (the same records, iteration after iteration)
                runs += body_runs
                last_runs = body_runs
            # the body's condition ends the loop even without a ``cond`` input: the spec's
            # pseudo-code says it is ignored then, but onnxruntime and onnx.reference stop
            made = outputs[0]
            if made.size != 1:
                raise BackendError(
                    f"{self.where}: its body made a condition of {made.size} elements"
                )
            going = bool(made.reshape(-1)[0])
            values = outputs[1 : 1 + len(values)]
            for kept, value in zip(scans, outputs[1 + len(values) :]):
                kept.append(value)
            trip += 1
        stacked = [
            self._stacked(kept, 0, index, len(carried) + index, reverse=False)
            for index, kept in enumerate(scans)
        ]
        counted = [
            index for index, value in enumerate(body.output[1 + len(carried) :])
            if value.name == names[0]
        ]
        if counted:  # onnxruntime's own reading, named for ``check``: those outputs alone
            # (a scan output of 2 * the iteration number beside it it computes, measured)
            runs = _noted(runs, _COUNTER_SCANNED.format(outputs=counted), self,
                          wrong=self._at(len(carried) + index for index in counted))
        counted = [
            index for index, value in enumerate(body.output[1 : 1 + len(carried)])
            if value.name == names[0]
        ]
        if counted and trip:  # the same, of a carried value (no trip: the initial one)
            runs = _noted(runs, _COUNTER_CARRIED.format(outputs=counted), self,
                          wrong=self._counter_carried(body, counted))
        return [np.array(v) for v in values] + stacked, _unique(runs)

    def _no_trip(
        self, body: onnx.GraphProto, outer: Mapping[str, np.ndarray]
    ) -> list[tuple[np.dtype | None, tuple[int, ...]]]:
        """Each scan output of the Loop run for no iteration, as onnxruntime makes it: empty
        along axis 0, its elements of the shape onnx's inference gives the body's output from
        the model alone (``_body_types``), an unknown size 0, an unknown rank none ([0]).
        Declined where inference fails or gives no element type (it ran on the fallback)."""
        if self.no_trip is None:
            known = self._inferred_outputs(body, self._body_types(body, outer), self.constants,
                                           propagate=True)
            if isinstance(known, str):
                raise Declined("its scan outputs are made by no iteration, and onnx's "
                               f"inference of its body fails: {known}")
            made = self.no_trip = _scan_elements(known[len(body.input) - 1 :])
            made_constants = self.made_constants
            least = self._inferred_outputs(
                body, self._body_types(body, outer, least=True),
                {name: value for name, value in self.constants.items()
                 if name not in made_constants},
                propagate=False,
            )
            if isinstance(least, str) or _scan_elements(
                least[len(body.input) - 1 :], refuse=False
            ) != made:  # onnxruntime knows from least to known
                self.no_trip_note = _NO_TRIP_OPEN
            return made
        return self.no_trip

    def _inferred_outputs(
        self, body: onnx.GraphProto, types: dict[str, onnx.TypeProto],
        constants: Mapping[str, np.ndarray], *, propagate: bool,
    ) -> list[onnx.ValueInfoProto] | str:
        """The body's outputs as onnx's inference types them from ``types`` and
        ``constants``; the first line of its error where it fails."""
        model = subgraph_model(self.subgraphs["body"], f"{self.name}.body", types, constants,
                               self.opset_imports, self.ir_version)
        try:
            inferred = onnx.shape_inference.infer_shapes(model, data_prop=propagate)
        except Exception as exc:
            return first_line(exc)
        return list(inferred.graph.output)

    def _body_types(
        self, body: onnx.GraphProto, outer: Mapping[str, np.ndarray], least: bool = False
    ) -> dict[str, onnx.TypeProto]:
        """The Loop body's inputs as it declares them (onnxruntime clears a carried value's
        shape before it infers the body: the body's declaration alone gives it), and the
        enclosing tensors it reads as the enclosing graph types them (onnxruntime's inference
        of the model; a constant is an initializer: its values fix a Slice's sizes); by the
        dtype that arrives where the graph knows none. ``least``: what onnxruntime knows of
        them at least: the declared inputs' types, the others' element types, a constant's
        values only where the model gave it (``made_constants``: its element type alone)."""
        types = {value.name: value.type for value in body.input}
        for name, info in self.outer_infos.items():
            if info is None or info.dtype is None or (least and name not in self.declared_outer):
                info = TensorInfo(name, dtype=outer[name].dtype)
            types[name] = value_info(TensorInfo(name, dtype=info.dtype, shape=info.shape)).type
        for name in self.made_constants if least else ():
            types[name] = value_info(TensorInfo(name, dtype=self.constants[name].dtype)).type
        return types

    def _scan(
        self, explicit: list[np.ndarray | None], subgraph: _Subgraph
    ) -> tuple[list[np.ndarray], list[NodeRun]]:
        form = self.scan
        assert form is not None
        for index, value in enumerate(explicit):
            if value is None:
                raise BackendError(f"{self.where}: its input {index} is left out; Scan takes all")
        self._inferred_ranks(explicit)
        states = [value for value in explicit[: form.states] if value is not None]
        scanned = [value for value in explicit[form.states :] if value is not None]
        names = self.body_names
        axes = [self._axis(a, x.ndim, "scan_input_axes", k)
                for k, (a, x) in enumerate(zip(form.input_axes, scanned))]
        lengths = [x.shape[axis] for x, axis in zip(scanned, axes)]
        if len(set(lengths)) != 1:
            raise BackendError(
                f"{self.where}: its scan inputs are {lengths} long along their scan axes; "
                "a Scan's scan inputs are all as long (its sequence length)"
            )
        length = lengths[0]
        made = len(form.output_axes)
        if made and not length:  # no fallback runs it: onnxruntime 1.32 fails, or dies
            raise BackendError(_SCANNED_NOTHING.format(where=self.where))
        if not length:  # onnx.reference's reading; onnxruntime 1.32 fails on it
            # (no "lowered at run time": no body ran, so ``run`` lists nothing it became)
            return [np.array(v) for v in states], _noted([], _NO_ITERATION, self, via="")
        scans: list[list[np.ndarray]] = [[] for _ in range(made)]
        runs: list[NodeRun] = []
        last_runs: tuple[NodeRun, ...] | None = None
        for step in range(length):
            feeds = dict(zip(names, states))
            for name, x, axis, back in zip(names[form.states :], scanned, axes,
                                           form.input_reversed):
                # a view (of rank 0 too: the Ellipsis keeps a 0-d array, not a scalar, and
                # np.ascontiguousarray made one of rank 1), a copy where it is strided
                at = (slice(None),) * axis + (length - 1 - step if back else step, ...)
                piece = x[at]
                feeds[name] = piece if piece.flags.c_contiguous else piece.copy()
            outputs, body_runs = subgraph("body", feeds)
            if body_runs is not last_runs:  # (the same records, iteration after iteration)
                runs += body_runs
                last_runs = body_runs
            self._same_states(states, outputs[: form.states], step)
            states = outputs[: form.states]
            for kept, value in zip(scans, outputs[form.states :]):
                kept.append(value)
        if self.passed:  # onnxruntime's own reading, named for ``check``
            runs = _noted(runs, _PASSED_THROUGH.format(names=self.passed) + RUN_AS_ONNX, self,
                          wrong=self._body_wrong())
        if self.repeated:  # the same, of a tensor made two outputs
            runs = _noted(runs, _REPEATED.format(names=self.repeated) + RUN_AS_ONNX, self,
                          wrong=self._body_wrong())
        stacked = []
        for index, (kept, axis, back) in enumerate(
            zip(scans, form.output_axes, form.output_reversed)
        ):
            along = self._axis(axis, kept[0].ndim + 1, "scan_output_axes", index)
            stacked.append(self._stacked(kept, along, index, form.states + index, back))
        return [np.array(v) for v in states] + stacked, _unique(runs)

    def _inferred_ranks(self, explicit: Sequence[np.ndarray | None]) -> None:
        """Refuse a Scan input that arrives of another rank than onnx's inference gives it
        (``other_rank``), where the body was run by what arrived (it declared no shape) and
        exited 0."""
        problem = other_rank(self.where, self.explicit_names, self.ranks, explicit)
        if problem is not None:
            raise BackendError(problem)

    def _stacked(
        self, kept: Sequence[np.ndarray], axis: int, index: int, output: int, reverse: bool
    ) -> np.ndarray:
        """Scan output ``index`` (the node's output ``output``) stacked along ``axis``; one
        that changed shape or type from an iteration to another is refused, naming both (ONNX
        stacks them; onnxruntime fails: "Inconsistent shape in loop output")."""
        first = kept[0]
        for step, value in enumerate(kept):
            if value.shape != first.shape or value.dtype != first.dtype:
                name = self.outputs[output] if output < len(self.outputs) else ""
                raise BackendError(
                    f"{self.where}: its scan output {index} ({name!r}) is "
                    f"{value.dtype}{list(value.shape)} in iteration {step}, "
                    f"{first.dtype}{list(first.shape)} in iteration 0; a {self.op_type}'s "
                    "scan outputs keep their shape and type from iteration to iteration (its "
                    "iterations' values are stacked)"
                )
        return np.stack(kept[::-1] if reverse else kept, axis=axis)

    def _same_states(
        self, taken: Sequence[np.ndarray], made: Sequence[np.ndarray], step: int
    ) -> None:
        """Refuse a step whose body made a state variable of another shape or type than it
        took: ONNX requires a Scan's outputs "to have the same shape in each iteration"
        (onnxruntime refuses such a body at load where its inference sees it)."""
        for index, (before, after) in enumerate(zip(taken, made)):
            if before.shape != after.shape or before.dtype != after.dtype:
                raise BackendError(
                    f"{self.where}: its body made state variable {index} "
                    f"({self.body_names[index]!r}) {after.dtype}{list(after.shape)} from "
                    f"{before.dtype}{list(before.shape)} in step {step}; a Scan's state "
                    "variables keep their shape and type from step to step (ONNX requires it)"
                )

    def _axis(self, axis: int, rank: int, attribute: str, index: int) -> int:
        try:
            return scan_axis(axis, rank, attribute, index)
        except ValueError as exc:
            raise BackendError(f"{self.where}: {exc}") from None

    def _run_subgraph(
        self,
        attr: str,
        feeds: Mapping[str, np.ndarray],
        outer: Mapping[str, np.ndarray],
        level: FeatureLevel,
        make_plan: Callable[[Graph], Plan],
        unchecked: Collection[str] = (),
    ) -> tuple[list[np.ndarray], tuple[NodeRun, ...]]:
        arrays = {**outer, **feeds}
        key = (attr, *((name, a.dtype.str, a.shape) for name, a in sorted(arrays.items())))
        if key not in self.cache:
            declared = self.declared[attr]
            if unchecked:
                declared = [value for value in declared if value.name not in unchecked]
            problem = fed_arrays_problem(declared, feeds, attr)
            if problem is not None:  # as a main graph's feed of another type or size is
                raise BackendError(f"{self.where}: {problem}")
            lowered = self._lowered(attr, arrays, level)
            plan = make_plan(lowered)
            self.cache[key] = (lowered, plan, tuple(lowered.outputs))
            self.said[key] = self._said(attr, lowered)
            if len(self.cache) > self.cache_limit:  # the least recently run goes
                gone = self.cache.popitem(last=False)[0]
                self.said.pop(gone, None)
                self.worded.pop(gone, None)
        self.cache.move_to_end(key)
        lowered, plan, outputs = self.cache[key]
        try:
            results, sub_runs = plan.run({name: arrays[name] for name in lowered.inputs})
        except SizeMismatch as exc:
            raise Declined(f"its {attr}'s lowering was planned for other sizes ({exc})") from None
        except SubgraphRuleError as exc:  # a node's deeper, nothing there diverging: its
            if exc.control is self:  # reads are told of as this node's inputs reaching them
                raise
            raise SubgraphRuleError(str(exc), self, self._reads(attr, None, exc.reads)) from None
        except NodeRuleError as exc:  # a run-time Slice/Concat/Pad's, nothing there diverging:
            # its reads told of as this node's inputs reaching it, as at ``_lowered`` (a top-
            # level Squeeze's result passed through a Loop in a branch to a Concat there
            # ended with the Concat's rule alone)
            raise SubgraphRuleError(str(exc), self, self._reads(attr, exc.outputs)) from None
        worded = self.worded.get(key)
        if worded is not None and worded[0] == sub_runs:
            return [results[name] for name in outputs], worded[1]
        # what the lowering said of a node as divergences goes with every run of the
        # subgraph: ``check`` names them for the outputs this node reaches
        said = self.said.get(key, {})
        held = f"{self.op_type} {self.label} {attr}"
        runs = [
            concerning(
                NodeRun(_label(lowered, r), r.op, r.engine,
                        f"{held}: {r.via}" if r.via else f"{held}, lowered at run time",
                        node_id=self.node_id, wrong=()),
                tuple(dict.fromkeys((*r.notes, *said))), _merged({
                    note: self._reached(attr, lowered, r, note) for note in r.notes
                    if note.startswith(DIVERGENCE)}, said))
            for r in sub_runs
        ]
        if not runs:  # its results are constants or its inputs: nothing moved them
            runs = [concerning(NodeRun(self.name, self.op_type, NOTHING_RAN,
                                       f"{held}, lowered at run time", node_id=self.node_id,
                                       wrong=()), tuple(said), said)]
        self.worded[key] = (sub_runs, tuple(runs))
        return [results[name] for name in outputs], self.worded[key][1]

    def _at(self, positions: Iterable[int]) -> tuple[str, ...]:
        """This node's outputs at ``positions``, those named."""
        return tuple(self.outputs[k] for k in positions if k < len(self.outputs)
                     and self.outputs[k])

    def _counter_carried(self, body: onnx.GraphProto,
                         counted: Sequence[int]) -> tuple[str, ...] | None:
        """The outputs a Loop's carried values ``counted`` (its body's iteration number
        itself) concern: those, and what the body makes of them fed back, as onnxruntime
        feeds its counter's buffer back too (measured: a scan output of the carried value
        read [7, 1, 2, 3] where ONNX stacks [7, 0, 1, 2]; one of 2 * the iteration number,
        [0, 2, 4, 6], it computes). None (all) where not known."""
        fed = reached_outputs("Loop", len(self.explicit_names), 0, body, [
            ((), body.input[2 + index].name) for index in counted
            if 2 + index < len(body.input)], self.outputs)
        return _either(self._at(counted), fed)

    def _body_wrong(self) -> tuple[str, ...]:
        """The outputs of this Scan its body's note concerns (``reach.scan_body_wrong``): a
        Relu of its rows beside a state passed through was "not compared" with it."""
        body = onnx.GraphProto.FromString(self.subgraphs["body"].data)
        return self._at(scan_body_wrong(body, self.scan.states if self.scan else 0))

    def _said(self, attr: str, lowered: LoweredGraph) -> dict[str, tuple[str, ...] | None]:
        """The divergence notes lowering said of the nodes of its subgraph ``attr`` (each
        run's record carries them), each with the outputs of this node the nodes it is of
        reach (``_made_reach``). Each record then counted all of them: a Slice's note in a
        Loop's body making only its scan output left its carried value's mismatch excused
        too."""
        notes: dict[str, tuple[str, ...] | None] = {}
        source = lowered.source_graph
        for record in lowered.report():
            node_id = getattr(record, "node_id", None)
            made = None if source is None or node_id is None or node_id not in source.nx else (
                source.node(node_id).outputs)
            for note in record.notes:
                if note.startswith(DIVERGENCE):
                    notes = _merged(notes, {note: self._made_reach(attr, made, [note])})
        return notes

    def _reached(self, attr: str, lowered: Graph, run: NodeRun,
                 note: str) -> tuple[str, ...] | None:
        """This node's outputs that the outputs of a node of its subgraph ``attr`` (``run``,
        of ``lowered``: those its divergence ``note`` concerns, else all) reach, what the
        note concerns of this node's record:
        ``check`` leaves only those at its notes, as it does the top-level node's own. A
        Scan-8 in an If's branch passing its state through left the If's every output "not
        compared", the branch's Relu of its rows too. (): none; None (all) where it cannot
        tell."""
        made = run.concerned(note)
        if made is None and run.node_id is not None:
            try:
                node = lowered.node(run.node_id)
            except GraphInvariantError:  # (an id of a graph lowered again)
                return None
            # a node lowering made computes part of its origin's outputs, the body's names
            origin = getattr(lowered, "origin_ids", {}).get(node.id)
            source = getattr(lowered, "source_graph", None)
            made = source.node(origin).outputs if (
                source is not None and origin in source.nx) else node.outputs
        return self._made_reach(attr, made, [note])

    def _made_reach(self, attr: str, made: Sequence[str] | None,
                    notes: Sequence[str]) -> tuple[str, ...] | None:
        """This node's outputs that the tensors ``made`` of its subgraph ``attr`` (at any
        depth: ``reach.reached_outputs``) reach, at ``notes``: (): none; None (all) where
        not known (a tensor the body does not define), or where a note is onnxruntime's
        refusal (it fails this node too: a carried value the refused Scan-8 does not reach
        was compared on a run that failed again, exit 2)."""
        if made is None or any(REFUSES in note for note in notes):
            return None
        if not any(made):
            return ()
        body = onnx.GraphProto.FromString(self.subgraphs[attr].data)
        found = defined_values(body, [name for name in made if name])
        return None if found is None else reached_outputs(
            self.op_type, len(self.explicit_names), self.scan.states if self.scan else 0,
            body, found, self.outputs)

    def _lowered(
        self, attr: str, arrays: Mapping[str, np.ndarray], level: FeatureLevel
    ) -> LoweredGraph:
        from dmlgraph.importer import load
        from lowering import lower

        model = self._model(attr, arrays)
        try:
            graph = load(model)
            if graph.given_constants is not None and self.made_outer:
                # (an enclosing constant folding made is not the model's there either: a Loop
                # of no trip held in the subgraph notes what onnxruntime cannot know of it)
                graph.given_constants = frozenset(graph.given_constants) - self.made_outer
            # its errors name the file and the node, not the model made here
            graph.source = f"{self.where}, its {attr}"
            lowered = lower(graph, level)
            lowered.typed_on_arrival = True
            return lowered
        except NodeRuleError as exc:
            # by the sizes that arrived, a node breaks its op's rule, as it would in the main
            # graph: the fallback ran it anyway (onnxruntime's Concat of a [1, 0] and a
            # [1, 2] made a [2, 2] of memory never written)
            detail = str(exc).removeprefix(f"<ModelProto {model.graph.name}>: ")
            sizes = ", ".join(f"{name!r}: {list(array.shape)}" for name, array in arrays.items())
            raise SubgraphRuleError(
                f"{self.where}: its {attr}, run with {sizes or 'no inputs'}, breaks a rule: "
                f"{detail}", self, self._reads(attr, exc.outputs),
            ) from None
        except DmlgraphError as exc:
            raise Declined(f"its {attr} cannot be lowered on its own: {exc}") from None

    def _reads(self, attr: str, failed: Sequence[str] | None,
               inner: Collection[str] | None = None) -> tuple[str, ...]:
        """The node's inputs (by the enclosing graph's names) that reach, in its subgraph
        ``attr``, the node making ``failed`` there (all of them where no node there is known
        to make them), or, ``inner`` given, one of those tensors of the subgraph (what a node
        held deeper may read: ``SubgraphRuleError.reads``): a rule that node breaks is not
        provably apart from what they arrived as. By what the node makes, not its name:
        names may be empty or shared (an unnamed node's rule was near every input)."""
        body = onnx.GraphProto.FromString(self.subgraphs[attr].data)
        inputs = [value.name for value in body.input]
        # a Loop's explicit inputs from the third, a Scan's all, are its body's inputs
        first = {"If": len(self.explicit_names), "Loop": 2}.get(self.op_type, 0)
        carried = {old: [new] for old, new in self.outer.items()}
        for name, value in zip(inputs[first:], self.explicit_names[first:]):
            carried.setdefault(name, []).append(value)
        made = {name for graph in graphs_within(body) for name in defined_names(graph)}
        target = inner if inner is not None else [name for name in failed or () if name]
        known = inner is not None or (bool(target) and made.issuperset(target))
        found: dict[str, None] = {}
        for name, outer in carried.items():
            # (a body input, or an enclosing tensor the body reads, which an input hides)
            reached = reach(body, {((), name), (ENCLOSING, name)})
            if not known or any(got in target for _, got in reached):
                found.update(dict.fromkeys(value for value in outer if value))
        return tuple(found)

    def _model(self, attr: str, arrays: Mapping[str, np.ndarray]) -> onnx.ModelProto:
        """The subgraph as a model: its own inputs and the enclosing tensors it reads typed as
        they arrive, the enclosing constants it reads as initializers."""
        return subgraph_model(
            self.subgraphs[attr], f"{self.name}.{attr}",
            {name: _type(array, name) for name, array in arrays.items()}, self.constants,
            self.opset_imports, self.ir_version,
        )


def _either(*reached: tuple[str, ...] | None) -> tuple[str, ...] | None:
    """The outputs any of ``reached`` names (as ``NodeRun.wrong``): None (all) where one is."""
    if any(found is None for found in reached):
        return None
    return tuple(dict.fromkeys(name for found in reached for name in found or ()))


Concerns = Mapping[str, "tuple[str, ...] | None"]


def _merged(*concerns: Concerns) -> dict[str, tuple[str, ...] | None]:
    """Notes with the outputs each concerns (``NodeRun.concerned``), a note of several
    ``concerns`` concerning what any of them names (``_either``)."""
    merged: dict[str, tuple[str, ...] | None] = {}
    for each in concerns:
        for note, wrong in each.items():
            merged[note] = _either(merged[note], wrong) if note in merged else wrong
    return merged


def _concerns(run: NodeRun) -> dict[str, tuple[str, ...] | None]:
    """What each divergence note of ``run`` concerns (``NodeRun.concerned``)."""
    return {note: run.concerned(note) for note in run.notes if note.startswith(DIVERGENCE)}


def noted(run: NodeRun, note: str, wrong: tuple[str, ...] | None) -> NodeRun:
    """``run`` with the divergence ``note`` concerning ``wrong`` (``NodeRun.wrong``), its
    own divergence notes each keeping what it concerns (``concerning``)."""
    return concerning(run, (*run.notes, note), _merged(_concerns(run), {note: wrong}))


def concerning(run: NodeRun, notes: tuple[str, ...], concerns: Concerns) -> NodeRun:
    """``run`` with ``notes``, each divergence note among them concerning the outputs
    ``concerns`` names for it (one missing: all), ``wrong`` their union: a record of a
    Scan's body in a Loop's, whose Slice's note concerned the Loop's scan output TT and the
    Scan's (its state passed by name) the carried value V, counted both for each, so the
    Scan's note, which no oracle checks, reached TT, and a wrong TT passed as it, not
    compared with onnx.reference (``parity._excused_by_spec``)."""
    said = {note: concerns.get(note) for note in notes if note.startswith(DIVERGENCE)}
    return replace(run, notes=notes, wrong=_either(*said.values()) if said else run.wrong,
                   concerns=tuple(said.items()) if len(said) > 1 else ())


def _scan_elements(
    outputs: Sequence[onnx.ValueInfoProto], refuse: bool = True
) -> list[tuple[np.dtype | None, tuple[int, ...]]]:
    """A Loop's scan outputs made by no iteration, from the types inference gives its body's
    outputs: each element type, and shape empty along axis 0, an unknown size 0 (of unknown
    rank: [0]), as onnxruntime makes them. ``refuse``: Declined where an element type is
    unknown (it ran on the fallback); else None."""
    made: list[tuple[np.dtype | None, tuple[int, ...]]] = []
    for value in outputs:
        tensor = value.type.tensor_type
        dtype = ELEM_TYPE_TO_DTYPE.get(tensor.elem_type)
        if refuse and (not value.type.HasField("tensor_type") or dtype is None):
            raise Declined(f"its scan output {value.name!r} is made by no iteration, and "
                           "inference gives it no element type")
        dims = tensor.shape.dim if tensor.HasField("shape") else []
        made.append((dtype, (0, *(d.dim_value for d in dims))))
    return made


def _type(array: np.ndarray, name: str) -> onnx.TypeProto:
    elem = DTYPE_TO_ELEM_TYPE.get(array.dtype)
    if elem is None:
        raise Declined(f"{name!r} is of dtype {array.dtype}, which ONNX has no type for")
    return helper.make_tensor_type_proto(elem, list(array.shape))


def _label(graph: Graph, run: NodeRun) -> str:
    """A subgraph node's name in its run's record; an unnamed one named by the first tensor it
    makes (``holder_label``): exporters leave a body's nodes unnamed, and the records of a
    body's three unnamed Slices were merged into one "(unnamed) -> DML_OPERATOR_SLICE"."""
    if run.node or run.node_id is None:
        return run.node
    try:
        node = graph.node(run.node_id)
    except GraphInvariantError:
        return ""
    if run.op not in (node.op_type, getattr(node.op, "name", None)) and not (
        run.via.startswith(RUNTIME_LOWERED) and node.op_type in LOWERED_OPS
    ):  # (a Slice/Concat/Pad lowered when it ran is recorded as the operator it became)
        return ""  # an id of the graph it was lowered from (a run lowered it again)
    return holder_label("", node.outputs)


def _noted(
    runs: Sequence[NodeRun], note: str, control: ControlFlow,
    via: str = "body, lowered at run time", wrong: tuple[str, ...] | None = None,
) -> list[NodeRun]:
    """``runs`` each with ``note`` (a divergence of the node, which ``check`` names for the
    outputs it reaches: ``wrong`` of them, None all), or one record of it, ``via``, where
    nothing ran."""
    return [noted(r, note, wrong) for r in runs] or [
        NodeRun(control.name, control.op_type, NOTHING_RAN, via, (note,), control.node_id,
                wrong)
    ]


def scan_body_divergence(body: onnx.GraphProto) -> str:
    """The note of a Scan whose body makes outputs onnxruntime gets wrong: its inputs as they
    are (``_PASSED_THROUGH``), or a tensor two or more of them (``_REPEATED``); "" where none.
    What the fallbacks say of a Scan they run whole (a Scan-8), as a Scan run here says."""
    names = {value.name for value in body.input}
    passed = [value.name for value in body.output if value.name in names]
    if passed:
        return _PASSED_THROUGH.format(names=passed)
    repeated = _repeated(body)
    return _REPEATED.format(names=repeated) if repeated else ""


def _repeated(graph: onnx.GraphProto) -> list[str]:
    """The tensors a subgraph makes two or more of its outputs."""
    made = Counter(value.name for value in graph.output)
    return [name for name, count in made.items() if count > 1]


def _unique(runs: Sequence[NodeRun]) -> list[NodeRun]:
    """One record per node and engine, however many iterations ran it, notes merged."""
    merged: dict[tuple[str, str, str, str], NodeRun] = {}
    for r in runs:
        key = (r.node, r.op, r.engine, r.via)
        seen = merged.get(key)
        if seen is None:
            merged[key] = r
        elif not set(r.notes) <= set(seen.notes) or _concerns(r) != _concerns(seen):
            merged[key] = concerning(
                NodeRun(r.node, r.op, r.engine, r.via, node_id=r.node_id, wrong=()),
                tuple(dict.fromkeys(seen.notes + r.notes)),
                _merged(_concerns(seen), _concerns(r)))
    return list(merged.values())
