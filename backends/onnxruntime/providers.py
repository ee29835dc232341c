"""Which onnxruntime execution providers a session gets, and the session it makes.

Preference, as data: DirectML (onnxruntime-directml, Windows) before CUDA before CPU. A caller
may name providers instead; each must be available in this onnxruntime build. CPU always ends
the list so nodes a GPU provider refuses still run.
"""

from __future__ import annotations

import itertools
import mmap
import os
import re
import weakref
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache

import onnx
import onnxruntime as ort

from backends.base import (
    LOAD,
    RUN,
    BackendError,
    EngineWords,
    engine_hint,
    engine_text,
    engine_words,
)
from dmlgraph import folding
from dmlgraph.ir import Graph, subgraphs
from dmlgraph.subgraphs import attribute_graphs, nested_nodes

#: Providers in order of preference; the first available one leads the session's list.
PREFERENCE: tuple[str, ...] = (
    "DmlExecutionProvider",
    "CUDAExecutionProvider",
    "CPUExecutionProvider",
)
CPU = "CPUExecutionProvider"
#: Short names a user may give (any case), as the command line's help names them.
ALIASES: dict[str, str] = {
    "cpu": CPU,
    "cuda": "CUDAExecutionProvider",
    "dml": "DmlExecutionProvider",
    "directml": "DmlExecutionProvider",
}


def provider_name(name: str) -> str:
    """A provider's onnxruntime name: ``CPU`` or ``cpu`` is ``CPUExecutionProvider``."""
    return ALIASES.get(name.lower(), name)


def _names(requested: object) -> list[str]:
    """Provider names as a list of strings, one string as one name ("CPU" was read as the
    providers C, P and U); a BackendError for anything else (a number, a mapping, a list
    holding None)."""
    if isinstance(requested, str):
        return [requested]
    if isinstance(requested, Iterable) and not isinstance(requested, (bytes, Mapping)):
        names = list(requested)
        if all(isinstance(name, str) for name in names):
            return names
    raise BackendError(
        f"providers = {requested!r}: give onnxruntime provider names, as a list of strings "
        "or one string (CPU, CUDA, DML, or their onnxruntime names)"
    )


def available_providers() -> list[str]:
    return list(ort.get_available_providers())


def select_providers(
    requested: Sequence[str] | None = None, available: Sequence[str] | None = None
) -> list[str]:
    """The providers for a session: ``requested`` (checked) or the preferred available one,
    then CPU. Raises BackendError naming a requested provider this build lacks."""
    have = list(available) if available is not None else available_providers()
    names = [] if requested is None else _names(requested)
    if names:
        wanted = [provider_name(p) for p in names]
        unknown = [p for p in wanted if p not in have]
        if unknown:
            raise BackendError(
                f"onnxruntime provider(s) {unknown} not available in this build "
                f"(available: {have})"
            )
        chosen = list(dict.fromkeys(wanted))
    else:
        chosen = [next((p for p in PREFERENCE if p in have), CPU)]
    if CPU not in chosen and CPU in have:
        chosen.append(CPU)
    return chosen


#: Options dmlgraph gives a provider, by name. The CUDA provider multiplies float32 in TF32
#: by default (use_tf32=1: products from 10-bit mantissas), which on an H200 put
#: squeezenet's outputs 6.6e-4 from the CPU's and failed ``check`` at float32's 1e-5, on
#: every bundled model but one: parity would measure TF32, not the lowering.
PROVIDER_OPTIONS: Mapping[str, Mapping[str, str]] = {
    "CUDAExecutionProvider": {"use_tf32": "0"},
}

#: onnxruntime's optimizers that rewrite a graph by the shapes its inference gives:
#: ConstantFolding folds a Shape or Size of a tensor inference sizes wholly, ReshapeFusion
#: merges a Reshape and what follows into a Reshape to the inferred shape, ExpandElimination
#: drops an Expand to the inferred shape. A session over a graph dmlgraph made (a fallback's
#: segment, a lowered graph translated back) goes without them: dmlgraph folded every shape
#: it trusts, and left the others to run (``folding.input_available``) because inference may
#: size them otherwise than the kernels make them (a MaxPool with ceil_mode: onnx says 4
#: columns, the kernel and the spec 3; ReshapeFusion turned a Squeeze by an empty axes list
#: into a Reshape to onnx's [1, 1, K], where the kernel squeezes to [K]). onnxruntime ignores
#: a name it does not know. ConstantFolding is kept where the graph holds no Shape or Size
#: (``_reads_shapes``): it then folds only what constants compute, as the run would, and the
#: reference folds alike. Without it, a weight dmlgraph left unfolded (an Expand grown past
#: ``folding.FOLD_GROWTH_LIMIT_BYTES``) stayed a computed tensor in the segment and a
#: constant in ``check``'s reference, whose Conv, MatMul, Gemm and ConvTranspose then ran
#: other kernels (prepacked, NCHWc) and rounded otherwise: 4.9e-4 apart, failing ``check``.
SHAPE_REWRITES: tuple[str, ...] = ("ConstantFolding", "ReshapeFusion", "ExpandElimination")
#: The ops whose result ConstantFolding takes from inferred shapes rather than values.
_SHAPE_READERS = frozenset({"Shape", "Size"})

#: onnxruntime's optimizers that change what a graph computes (onnxruntime 1.32; a helper's
#: sweep of 120,000 random models, each divergence bisected to the optimizer, the
#: unoptimized session agreeing with NumPy and the spec): QDQ propagation re-quantizes as
#: uint8 an int8 DequantizeLinear without a zero point (negatives came out 0; at opset 21,
#: with one, the session refuses to load); the transpose optimizer, under both of its names,
#: quantizes a Transpose's input that is also a graph output; the layer-norm fusions fuse a
#: variance by Pow(d, 3) and ignore ReduceMean's keepdims=0; DivMulFusion drops the rank a
#: Div broadcasts to; the QDQ pair remover, bias quantization and selector fusions move
#: values off the model's quantization grid (a float Conv bias of -0.39 rounded to 0); and
#: GemmTransposeFusion and PreShapeNodeElimination make models that fail to load;
#: GatherToSliceFusion makes a Gather by Range(n - 1, -1, -1) over a symbolic n a Slice ending
#: at -1, so x[:, ::-1] came out empty (models/torch/reversed_index_select.onnx loaded with
#: its dimension 1 named). A session
#: over a graph dmlgraph made goes without them, so a fallback computes what the model does;
#: ``check``'s reference keeps them, and ``check`` names onnxruntime's optimizer where it
#: departs (``parity``). Without a node they rewrite, disabling them changes nothing.
VALUE_REWRITES: tuple[str, ...] = (
    "QDQPropagationTransformer", "TransposeOptimizer", "TransposeOptimizer_CPUExecutionProvider",
    "LayerNormFusionL1", "LayerNormFusionL2", "SimplifiedLayerNormFusion", "DivMulFusion",
    "DoubleQDQPairsRemover", "WeightBiasQuantization", "QDQSelectorActionTransformer",
    "GemmTransposeFusion", "PreShapeNodeElimination", "GatherToSliceFusion",
)

#: onnxruntime's NCHWc layout transformer (an ORT_ENABLE_ALL optimizer) kills the process
#: (SIGFPE) when a pool it rewrote makes an empty output (onnxruntime 1.32: a MaxPool of
#: kernel 3 over 2 rows; the unoptimized session gives the empty result). A session over a
#: model with a pool whose spatial output sizes are not all known to be positive goes
#: without it (``_pools_may_be_empty``, ``layout_rewrite_safe``); others keep its faster
#: convolutions. Its convolutions round otherwise, so every session over one model (the
#: fallback's segments, ``check``'s reference, the cross-check) must decide alike.
LAYOUT_REWRITE = "NchwcTransformer"
_POOL_OPS = frozenset({"MaxPool", "AveragePool", "LpPool"})

#: Whether this process's onnxruntime has its global thread pools (None: not known yet).
_global_pools: bool | None = None
#: onnxruntime's refusal of a session with its own pools once the global ones exist.
_POOLS_TAKEN = "use_per_session_threads must be false when using a global thread pool"


def share_global_thread_pools() -> bool:
    """Create onnxruntime's process-wide thread pools at its default sizes, unless they exist;
    True when sessions can run on them. Opt-in, because it binds the whole process: from then
    on onnxruntime refuses every session with its own pools, the caller's too (dmlgraph's own
    sessions switch). What it buys: many small sessions each with its own pool contend; the
    NumPy backend's 9 fallback segments of squeezenet ran 9-12 ms a run on their own pools,
    5-9 ms on shared ones. An onnxruntime without the API gives False."""
    global _global_pools
    if not _global_pools:
        create = getattr(ort, "set_global_thread_pool_sizes", None)
        try:
            if create is not None:
                create(0, 0)
                _global_pools = True
        except Exception as exc:  # onnxruntime's Fail: "... have already been created ..."
            _global_pools = "already been created" in str(exc)
    return bool(_global_pools)


@cache
def share_cpu_arena() -> bool:
    """Register one CPU arena with onnxruntime's environment, once; True when it is there.
    Only sessions that ask (``session.use_env_allocators``) use it, so unlike the thread pools
    it binds no one else. Sessions that share it do not each grow an arena: the NumPy
    backend's first run of squeezenet (9 fallback sessions) raised RSS by 30 MB instead of
    39, the same speed."""
    try:
        info = ort.OrtMemoryInfo(
            "Cpu", ort.OrtAllocatorType.ORT_ARENA_ALLOCATOR, 0, ort.OrtMemType.DEFAULT
        )
        ort.create_and_register_allocator(info, None)
    except Exception:  # an onnxruntime without the API: each session keeps its own
        return False
    return True


def session_options(
    providers: Sequence[str],
    *,
    shared_threads: bool = False,
    shared_arena: bool = False,
    spin: bool = True,
    optimize: bool = True,
) -> ort.SessionOptions:
    """Quiet options; DirectML needs memory patterns off and sequential execution (ORT docs),
    and node placement is recorded where this onnxruntime can. ``shared_threads``: run on the
    process-wide pools (which must exist: ``share_global_thread_pools``); ``shared_arena``:
    allocate on CPU from the environment's arena (``share_cpu_arena``) where there is one;
    ``spin=False``: intra-op threads sleep when idle instead of spinning; ``optimize=False``:
    no graph optimizations (``ORT_DISABLE_ALL``), the model's nodes as written."""
    options = ort.SessionOptions()
    if not optimize:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    if shared_threads:
        options.use_per_session_threads = False
    if not spin:
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    if shared_arena and share_cpu_arena():
        options.add_session_config_entry("session.use_env_allocators", "1")
    options.log_severity_level = 4  # errors come back as exceptions, not as log lines
    if providers and providers[0] == "DmlExecutionProvider":
        options.enable_mem_pattern = False
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.add_session_config_entry("session.record_ep_graph_assignment_info", "1")
    return options


#: What a refusal to make a session says before onnxruntime's own words (``make_session``).
CANNOT_LOAD = "onnxruntime cannot load the model: "
#: onnxruntime's refusals of a model it cannot run at all though the model is valid, by a
#: phrase of its error: no kernel for a node (its CPU provider's Pad on int16, uint16 or the
#: 8-bit floats, which DirectML runs), or a node it inserts breaking its own checker
#: (``INSERTED_CAST``). ``check`` compares such a model against onnx.reference instead; a
#: fallback segment refused so says ``--fallback reference`` runs it. With CUDA's provider
#: first, a node no provider has a kernel for is refused by an assertion of onnxruntime's
#: memcpy pass instead ("... !node_provider_type.empty() was false. Provider type for Pad
#: node with name 'pad' is not set."; onnxruntime-gpu 1.31.1 on an H200, an int16 edge Pad):
#: check stopped with exit 2 there, where the CPU provider's words sent it to onnx.reference.
#: Nor does it load a model holding a complex tensor, which ONNX's Slice, Concat and Pad-13 on
#: take ("Exception during loading: MLDataType for: tensor(complex64) is not currently
#: registered or supported"): check of such a Pad, lowered whole, stopped with exit 2.
CANNOT_RUN: tuple[str, ...] = (
    "NOT_IMPLEMENTED",
    "Could not find an implementation",
    "!node_provider_type.empty() was false",
    "is not currently registered or supported",
)
#: How onnxruntime names the Casts it inserts around a float16 node its CPU provider has no
#: float16 kernel for (a Pad), then the input's name (a "_token_0" after it where the model
#: has a node so named). It cannot run the model where one is refused
#: (``inserted_cast_refused``): its own checker refuses the Cast-6 before a Pad-2 in an
#: opset 2..5 model (that opset's Cast-1 takes ``to`` as a string), and a model naming a
#: tensor as the Cast's output ("InsertedPrecisionFreeCast_x" beside a float16 Pad of x, at
#: any opset: a valid model) is refused for defining the name twice.
INSERTED_CAST = "InsertedPrecisionFreeCast_"
#: Where onnxruntime's checker's refusal begins, in its own words (``_INSERTED_CAST_SAYS``).
_CHECKER = 'In Node, ('
#: The checker's refusal of the inserted Cast, named <INSERTED_CAST>N: 'In Node, ("<N>",
#: Cast, "", -1) : ("X": tensor(T),) -> ("<N>": tensor(U),) , Error Mismatched attribute
#: type in '<N> : to''.
_INSERTED_CAST_SAYS = re.compile(
    r'"{cast}(?P<n>.*?)", Cast, "", -1\) : \(".*?": tensor\(\w+\),\) -> \("{cast}(?P=n)": '
    r"tensor\(\w+\),\) , Error Mismatched attribute type in '{cast}(?P=n) : to'"
    .format(cast=INSERTED_CAST), re.DOTALL)
#: The refusal of a model naming a tensor as an inserted Cast's output, from its first word.
_INSERTED_CAST_CLASHES = re.compile(
    r"\w+: \[ONNXRuntimeError\] : \d+ : \w+ : This is an invalid model\. Error: Duplicate "
    r"definition of name \(" + INSERTED_CAST)


#: onnxruntime's failures, when a fallback segment it loaded runs, on what ONNX allows and
#: onnx.reference runs, by a phrase of its error (``fails_when_run``): a Scan whose body makes
#: an output its inference gives no shape, as one adding a tensor the segment is fed without
#: a shape (an If's result of a rank its branches differ on, which onnxruntime's graph
#: optimizations settle in the whole model: without them it fails there too). A segment
#: failing so says ``--fallback reference`` runs it, as one ``CANNOT_RUN`` refuses.
FAILS_WHEN_RUN: tuple[str, ...] = ("Subgraph must have the shape set for all outputs",)


def fails_when_run(failure: str) -> bool:
    """Whether onnxruntime's ``failure`` running a segment is one of ``FAILS_WHEN_RUN``, by
    the status message of the node it failed at, its words after the last "Status Message: "
    (a node's name, which it quotes before them, may hold a phrase: a Split so named,
    failing on split sizes past its axis, was compared with onnx.reference, "parity holds")."""
    return _fails_by(own_words(failure))


def _fails_by(own: str) -> bool:
    """``fails_when_run`` of onnxruntime's words, their quoted names masked (``own``)."""
    _, found, status = own.rpartition(_STATUS)
    return bool(found) and status.startswith(FAILS_WHEN_RUN)


#: What onnxruntime's failure running a node says before the node's own status message.
_STATUS = "Status Message: "

#: Where onnxruntime's errors quote what the model's author chose (onnxruntime 1.32's texts,
#: CUDA's as onnxruntime-gpu 1.31.1 words it): node names ("node with name 'N'", "Name:'N'
#: Status Message: ", "Node (N) Op (T)", a Type Error's "in node (N) is invalid" and "input
#: parameter (X)"), op types (a custom domain's) and the double-quoted names of a checker's
#: "In Node, ("N", T, "", -1) : ("x": ...)" and "Mismatched attribute type in 'N : to'".
#: A greedy one (``last``) runs to the last closing delimiter on the line: a name may hold
#: the delimiter, and masking onnxruntime's words with it only makes a phrase go unmatched
#: (onnxruntime's error stands), never matched.
@dataclass(frozen=True)
class _Quoted:
    """A name onnxruntime quotes: after ``opener``, before ``closer`` on the same line (the
    last one if ``last``, else the first; a name may hold it, as re.sub's ``.*?`` tries again
    after an empty name). Not ``one_line``: up to the first closer on any line, never holding
    it (an op type, as ``[^)]*``). ``delimiters`` masks the two as well."""

    opener: re.Pattern[str]
    closer: re.Pattern[str]
    last: bool
    delimiters: bool = False
    one_line: bool = True


def _quoted(opener: str, closer: str, last: bool, **how: bool) -> _Quoted:
    return _Quoted(re.compile(opener), re.compile(closer), last, **how)


_USER_CHOSEN: tuple[_Quoted, ...] = (
    _quoted(re.escape("Name:'"), re.escape("' Status Message: "), last=True),
    _quoted(re.escape("node with name '"), "'", last=True),
    _quoted(re.escape("Node ("), re.escape(") Op ("), last=True),
    _quoted(re.escape(") Op ("), re.escape(")"), last=False, one_line=False),
    _quoted(re.escape(" in node ("), re.escape(") is invalid"), last=True),
    _quoted(re.escape("of input parameter ("), re.escape(") of operator ("), last=True),
    _quoted(re.escape("of operator ("), re.escape(") in node ("), last=True),
    _quoted("while running ", re.escape(" node. Name:'"), last=False),
    _quoted("implementation for ", r"\(\d+\) node with name '", last=False),
    _quoted("Provider type for ", " node with name '", last=False),
    _quoted('"', '"', last=True, delimiters=True),
    # a checker's "Mismatched attribute type in 'N : to'" (the Cast onnxruntime inserts
    # too: ``inserted_cast_refused`` reads its refusal whole)
    _quoted("Mismatched attribute type in '", r" : \w+'", last=True),
)
#: What stands for each character of a masked name (``own_words``): in no phrase.
_MASK = "\0"


def _opener(
    text: str, opener: re.Pattern[str], at: int, consumed: bool
) -> re.Match[str] | None:
    """The first ``opener`` ending at ``at`` or after, as a regex's lookbehind finds it: one
    may start in the name before (``_OPENER_SPAN`` characters at most); the first starting
    there where the match holds it (``consumed``)."""
    found = opener.search(text, at if consumed else max(at - _OPENER_SPAN, 0))
    while found is not None and found.end() < at:
        found = opener.search(text, found.start() + 1)
    return found


#: The longest opener of ``_USER_CHOSEN``'s.
_OPENER_SPAN = 64


def _start(found: re.Match[str]) -> int:
    return found.start()


def _spans(text: str, quoted: _Quoted) -> Iterator[tuple[int, int]]:
    """Where ``quoted`` names stand in ``text``, in one pass: a regex's ``.*`` between the
    two, retried at each opener, took 13 s on a 100 KB name of 17,000 "Name:'" (onnxruntime
    quotes it whole: check of an int16 Pad so named took 38 s, 0.3 s named "pad")."""
    at, line_end = 0, -1
    while (opened := _opener(text, quoted.opener, at, quoted.delimiters)) is not None:
        start = opened.end()
        if start > line_end:
            line_end = text.find("\n", start) if quoted.one_line else -1
            line_end = len(text) if line_end < 0 else line_end
        if quoted.last:  # the last closer on the line
            closed = max(quoted.closer.finditer(text, start, line_end), key=_start,
                         default=None)
        else:
            closed = quoted.closer.search(text, start, line_end)
            if closed is not None and closed.start() == start and quoted.one_line:
                closed = quoted.closer.search(text, start + 1, line_end)
        if closed is None:  # none on this line, after any later opener on it either
            at = line_end + 1
            continue
        if quoted.delimiters:
            yield opened.start(), closed.end()
            at = closed.end()
        else:
            yield start, closed.start()
            at = closed.start() if closed.start() > start else start + 1


def own_words(text: str) -> str:
    """``text`` with what onnxruntime quotes of the model (``_USER_CHOSEN``) masked,
    character for character, so that a phrase matches onnxruntime's own words only: a Split
    named NOT_IMPLEMENTED, refused for split sizes past its axis, was taken for a node
    onnxruntime has no kernel for, compared with onnx.reference, "parity holds". The same
    length: an index into it is one into ``text``. The one rule for every phrase matched."""
    for quoted in _USER_CHOSEN:
        chars = list(text)
        for begin, end in _spans(text, quoted):
            chars[begin:end] = _MASK * (end - begin)
        text = "".join(chars)
    return text


def _own(said: EngineWords) -> str:
    """onnxruntime's ``said`` words with what it echoes of dmlgraph's (a model's path) and
    the names it quotes (``own_words``) masked: what a phrase may match."""
    text = said.line
    for echoed in filter(None, said.echoed):
        text = text.replace(echoed, _MASK * len(echoed))
    return own_words(text)


#: What a failed run of a whole model says before onnxruntime's own words (``backend``).
FAILS = "onnxruntime fails: "


def refused(where: str, words: str, echoed: tuple[str, ...] = ()) -> BackendError:
    """onnxruntime's refusal to make a session (its ``words``), as dmlgraph says it: after
    ``where`` and ``CANNOT_LOAD``, their first line, its words kept apart (``EngineWords``)
    for what reads them. ``echoed``: what onnxruntime was given that its words may repeat
    (the path)."""
    said = EngineWords(LOAD, words, echoed)
    return BackendError(f"{where}: {CANNOT_LOAD}{said.line}", engine_words=said)


def failed(where: str, words: str) -> BackendError:
    """onnxruntime's failure running a whole model (its ``words``), as dmlgraph says it:
    after ``where`` and ``FAILS``, their first line, its words kept apart (``EngineWords``)."""
    said = EngineWords(RUN, words)
    return BackendError(f"{where}: {FAILS}{said.line}", engine_words=said)


def fails_at_run(failure: BaseException) -> str | None:
    """onnxruntime's words where its failure running a whole model (``failed``) is one of
    ``FAILS_WHEN_RUN``; None for any other error. ``check`` then compares with
    onnx.reference, as for a model ``CANNOT_RUN`` refuses."""
    said = engine_words(failure, RUN)
    return said.line if said is not None and _fails_by(_own(said)) else None


#: What onnxruntime's failure on a whole model it cannot run adds (``may_run_hint``): the
#: way out, said, not taken. A segment's failure says ``fallback._MAY_RUN`` instead.
MAY_RUN = engine_hint(
    "onnxruntime cannot run the model; the numpy backend runs it lowered, any ONNX node left "
    "on onnx.reference, and check compares it with onnx.reference",
    "--backend numpy --fallback reference", "get_backend('numpy', fallback='reference')",
)


def may_run_hint(failure: BaseException) -> str:
    """``MAY_RUN`` where onnxruntime's ``failure`` on a whole model is one it cannot run at
    all: refused at load (``CANNOT_RUN``: an int16 Pad) or failing at its run
    (``FAILS_WHEN_RUN``: a Scan whose body makes an output inference gives no shape, where
    ``run --backend onnxruntime`` and ``check`` said onnxruntime's words alone); else ""."""
    if cannot_run(failure) is None and fails_at_run(failure) is None:
        return ""
    return MAY_RUN


def cannot_run(refusal: BaseException) -> str | None:
    """onnxruntime's words where its refusal to load a model (``refused``) is one of
    ``CANNOT_RUN``; None for any other error. Its words alone are read, never the path or
    node names dmlgraph says before them (``EngineWords``)."""
    said = engine_words(refusal, LOAD)
    if said is not None and (any(phrase in _own(said) for phrase in CANNOT_RUN)
                             or inserted_cast_refused(words_of(refusal))):
        return said.line
    return None


def inserted_cast_refused(words: str) -> bool:
    """Whether onnxruntime's ``words`` refusing a model are its refusal of a Cast it inserts
    (``INSERTED_CAST``), read whole where its own words open it (``_CHECKER``, in
    ``own_words``; a clash from its first word): as a phrase, the refusal of an input named
    'a"b' (or holding a newline) went unmatched, the quote's mask running past it, and a
    tensor so named made the model one onnxruntime refuses otherwise: check exited 2 where
    it compares with onnx.reference. A model's own Cast-1 to an int so named, or a model
    defining such a name twice, fails dmlgraph's import (the ONNX checker) first."""
    if _INSERTED_CAST_CLASHES.match(words):
        return True
    at = own_words(words).find(_CHECKER)
    return at >= 0 and _INSERTED_CAST_SAYS.match(words, at + len(_CHECKER)) is not None


def make_session(
    model: onnx.ModelProto | bytes | str,
    providers: Sequence[str],
    where: str,
    *,
    shared_threads: bool = False,
    shared_arena: bool = False,
    spin: bool = True,
    optimize: bool = True,
    shape_rewrites: bool = True,
    layout: bool | None = None,
) -> ort.InferenceSession:
    """An InferenceSession; onnxruntime's refusal becomes a BackendError naming ``where``.
    It runs on the process-wide thread pools when asked (``share_global_thread_pools``) or
    when they exist, as onnxruntime then allows nothing else. ``shape_rewrites=False`` (a
    graph dmlgraph made): without the optimizers that rewrite by inferred shapes
    (``SHAPE_REWRITES``), nor those that change what it computes (``VALUE_REWRITES``), the
    others kept. ``layout``: whether ``LAYOUT_REWRITE`` may run, as decided for the whole
    model (``layout_rewrite_safe``); None decides from ``model`` alone. The outputs
    onnxruntime dies of omitting are named in a copy (``session_model``), whoever asks."""
    global _global_pools
    given = session_model(model)
    shared = bool(_global_pools) or (shared_threads and share_global_thread_pools())
    disabled = [] if shape_rewrites else [
        *(r for r in SHAPE_REWRITES if r != "ConstantFolding" or _reads_shapes(model)),
        *VALUE_REWRITES,
    ]
    if optimize and (layout is False or (layout is None and _pools_may_be_empty(model))):
        disabled.append(LAYOUT_REWRITE)
    try:
        try:
            return _session(
                given, providers, shared, shared_arena, spin, optimize, disabled or None
            )
        except Exception as exc:
            if shared or _POOLS_TAKEN not in str(exc):
                raise
            _global_pools = True  # someone else made them
            return _session(
                given, providers, True, shared_arena, spin, optimize, disabled or None
            )
    except Exception as exc:  # onnxruntime raises its own pybind exception types
        raise refused(where, engine_text(exc), (model,) if isinstance(model, str) else ()
                      ) from None


#: Ops onnxruntime 1.32 kills the process running (SIGSEGV, optimized or not) where an output
#: is omitted (named ""), each named it runs (probed one model a subprocess, CPU provider):
#: a Split of x[2, 4] into ["", "A"], ["A", ""] or ["", "", "B"] (opsets 11, 13, 18); a
#: BatchNormalization omitting a running mean or variance (training_mode=1 at opsets 14
#: and 15; opset 9's mean or var); a Loop omitting a final carried value (["", "scan"],
#: ["c", ""] of two carried); an If omitting an output (optimized; unoptimized it refuses).
#: The same in a subgraph or a model-local function. Omitted so elsewhere, the optional
#: outputs run: Dropout's mask, LSTM/GRU/RNN's Y, Y_h or Y_c, MaxPool's Indices, Unique's
#: indices, inverse_indices and counts, LayerNormalization's Mean and InvStdDev,
#: SoftmaxCrossEntropyLoss's log_prob, Attention-23's presents; a Scan's or TopK's and
#: DynamicQuantizeLinear's are refused at load. ``omits_fatally`` finds them;
#: ``name_omitted`` names them.
OMITTED_OUTPUT_KILLS = frozenset({"Split", "BatchNormalization", "Loop", "If"})
#: The bytes a serialized NodeProto of one of ``OMITTED_OUTPUT_KILLS`` holds (op_type, field
#: 4), and those of an omitted output (output, field 2, ""): a model lacking either holds
#: none, and is not parsed (``_may_omit``; one regex pass: 0.2 s over 200 MB of weights,
#: four ``bytes.find`` took 0.8 s, parsing it 0.34 s).
_KILLS_BYTES = re.compile(b"\x22(?:" + b"|".join(
    re.escape(bytes([len(op)]) + op.encode()) for op in sorted(OMITTED_OUTPUT_KILLS)) + b")")
_OMITTED_BYTES = b"\x12\x00"


def _omits(node: onnx.NodeProto) -> bool:
    return (node.op_type in OMITTED_OUTPUT_KILLS and node.domain in ("", "ai.onnx")
            and "" in node.output)


def _model_nodes(model: onnx.ModelProto) -> Iterator[onnx.NodeProto]:
    """Every node of ``model``: its graph's, its model-local functions', their subgraphs'."""
    yield from nested_nodes(model.graph)
    for function in model.functions:
        for node in function.node:
            yield node
            for attr in node.attribute:
                for sub in attribute_graphs(attr):
                    yield from nested_nodes(sub)


def omits_fatally(graph: onnx.GraphProto | onnx.ModelProto) -> bool:
    """Whether a node of ``graph`` (of its subgraphs; a model's: of its functions too) is one
    onnxruntime dies running (``OMITTED_OUTPUT_KILLS``)."""
    nodes = _model_nodes(graph) if isinstance(graph, onnx.ModelProto) else nested_nodes(graph)
    return any(_omits(node) for node in nodes)


def fatal_omission(model: onnx.ModelProto) -> str | None:
    """The first node of ``model`` onnxruntime dies running (``OMITTED_OUTPUT_KILLS``), as
    an error names it ("node 'n' (Split) omitting output 0"); None where none."""
    for node in _model_nodes(model):
        if _omits(node):
            return (f"node {node.name!r} ({node.op_type}) omitting output "
                    f"{list(node.output).index('')}")
    return None


def name_omitted(model: onnx.ModelProto) -> onnx.ModelProto:
    """``model`` with the omitted outputs of the nodes onnxruntime dies running
    (``OMITTED_OUTPUT_KILLS``) named, each a fresh name nothing reads, in a copy: what every
    session dmlgraph makes is given (``make_session``; a Split of x[4] into ["", "b"] killed
    ``run`` and ``check``, exit 139 and no word). ``model`` itself where there are none."""
    if not omits_fatally(model):
        return model
    model = onnx.ModelProto.FromString(model.SerializeToString())
    taken = {name for node in _model_nodes(model) for name in (*node.input, *node.output)}
    taken |= {i.name for i in (*model.graph.input, *model.graph.initializer)}
    taken |= {name for f in model.functions for name in (*f.input, *f.output)}
    fresh = (name for i in itertools.count() if (name := f"omitted_{i}") not in taken)
    for node in _model_nodes(model):
        if _omits(node):
            for i, name in enumerate(node.output):
                if not name:
                    node.output[i] = next(fresh)
    return model


def _may_omit(content: bytes | mmap.mmap) -> bool:
    """Whether serialized model ``content`` may hold a node ``name_omitted`` names: the
    bytes of one of its ops and of an omitted output (``_KILLS_BYTES``). False: it holds
    none, and needs no parsing (a model file is read once more only where it may)."""
    return content.find(_OMITTED_BYTES) >= 0 and _KILLS_BYTES.search(content) is not None


def _file_may_omit(path: str) -> bool:
    """``_may_omit`` of a model file, mapped rather than read; True where it cannot be
    mapped (then parsed: an empty file, a special one)."""
    try:
        with open(path, "rb") as file, mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as m:
            return _may_omit(m)
    except (OSError, ValueError):
        return True


@dataclass(frozen=True)
class SessionModel:
    """What ``make_session`` gives onnxruntime: ``content`` (serialized, or a file's path),
    and ``folder``, where a file's external data lies when ``content`` is its named copy
    (serialized, it has no path of its own for onnxruntime to find them by); else None."""

    content: bytes | str
    folder: str | None = None


def session_model(model: onnx.ModelProto | bytes | str) -> SessionModel:
    """``model`` as a session takes it, with the omitted outputs onnxruntime dies of named
    in a copy (``name_omitted``): never the caller's ModelProto or file. A model that
    cannot be read as ONNX is passed as given, for onnxruntime to refuse in its words."""
    if isinstance(model, onnx.ModelProto):
        return SessionModel(name_omitted(model).SerializeToString())
    if isinstance(model, bytes) and not _may_omit(model):
        return SessionModel(model)
    if isinstance(model, str) and not _file_may_omit(model):
        return SessionModel(model)
    try:
        proto = (onnx.load_model_from_string(model) if isinstance(model, bytes)
                 else onnx.load(model, load_external_data=False))
    except Exception:
        return SessionModel(model)
    named = name_omitted(proto)
    if named is proto:
        return SessionModel(model)
    folder = os.path.dirname(os.path.abspath(model)) if isinstance(model, str) else None
    return SessionModel(named.SerializeToString(), folder)


def layout_rewrite_safe(graph: Graph) -> bool:
    """Whether sessions over ``graph``'s model may use ``LAYOUT_REWRITE``: no pool of it
    (nor any in a subgraph) may make an empty output, by the sizes dmlgraph knows of the
    graph it was lowered from and trusts onnxruntime to make (``PartialShapes.unsure``).
    Decided for the model, not per session: a fallback segment without a pool kept the
    rewrite while the reference over the whole model went without it, and their
    convolutions differed by 4e-4 (retinanet) to 7e-3 (maskrcnn), failing ``check``."""
    decided = getattr(graph, "layout_decided", None)  # a run's lowering again: its model's
    if decided is not None:
        return bool(decided)
    source = getattr(graph, "source_graph", None) or graph
    trust = folding.PartialShapes(source.declared_sizes)
    for node in source.nodes:
        if not node.is_onnx:
            continue
        if node.op.holds_subgraphs and any(
            op in _POOL_OPS for sub in subgraphs(node.op) for op in sub.ops
        ):
            return False
        if node.op_type not in _POOL_OPS or not node.outputs:
            continue
        info = source.tensors.get(node.outputs[0])
        shape = info.shape if info is not None else None  # the batch may be dynamic
        if shape is None or len(shape) < 3 or any(
            type(size) is not int or size < 1 for size in shape[2:]
        ):
            return False
        if trust.unsure(source, node.outputs[0]):
            return False
    return True


def _reads_shapes(model: onnx.ModelProto | bytes | str) -> bool:
    """Whether a node of the model (its subgraphs and functions included) reads a tensor's
    shape (``_SHAPE_READERS``): onnxruntime's ConstantFolding would fold it by the shape
    inference gives (``SHAPE_REWRITES``). A model that cannot be read says yes."""
    try:
        if not isinstance(model, onnx.ModelProto):
            model = (
                onnx.load_model_from_string(model) if isinstance(model, bytes)
                else onnx.load(model, load_external_data=False)
            )
    except Exception:
        return True
    functions = [onnx.helper.make_graph(f.node, f.name, [], []) for f in model.functions]
    return any(
        node.op_type in _SHAPE_READERS
        for graph in (model.graph, *functions)
        for node in nested_nodes(graph)
    )


def _pools_may_be_empty(model: onnx.ModelProto | bytes | str) -> bool:
    """Whether a pool of the model may make an output empty on a spatial axis: one whose
    spatial sizes are not all positive and known, from the model's value infos or else from
    onnx's inference (``LAYOUT_REWRITE``). A model that cannot be read says yes."""
    try:
        if not isinstance(model, onnx.ModelProto):
            model = (
                onnx.load_model_from_string(model) if isinstance(model, bytes)
                else onnx.load(model, load_external_data=False)
            )
        if any(n.op_type in _POOL_OPS for f in model.functions for n in f.node):
            return True
        pools = [n.output[0] for n in model.graph.node if n.op_type in _POOL_OPS and n.output]
        if not pools:
            return False
        infos = {vi.name: vi for vi in (*model.graph.value_info, *model.graph.output)}
        if any(name not in infos for name in pools):
            inferred = onnx.shape_inference.infer_shapes(model).graph
            infos = {vi.name: vi for vi in (*inferred.value_info, *inferred.output)}
    except Exception:
        return True
    for name in pools:
        info = infos.get(name)
        tensor = info.type.tensor_type if info is not None else None
        if tensor is None or not tensor.HasField("shape") or len(tensor.shape.dim) < 3:
            return True
        if any(not d.HasField("dim_value") or d.dim_value < 1 for d in tensor.shape.dim[2:]):
            return True
    return False


def _session(
    given: SessionModel,
    providers: Sequence[str],
    threads: bool,
    arena: bool,
    spin: bool,
    optimize: bool,
    disabled: list[str] | None,
) -> ort.InferenceSession:
    options = session_options(
        providers, shared_threads=threads, shared_arena=arena, spin=spin, optimize=optimize
    )
    if given.folder is not None:
        options.add_session_config_entry(EXTERNAL_DATA_FOLDER, given.folder)
    session = ort.InferenceSession(
        given.content, options, providers=with_options(providers), disabled_optimizers=disabled
    )
    _NAMED_SESSIONS.add(session)
    return session


#: The session option naming where a model given serialized finds its external data.
EXTERNAL_DATA_FOLDER = "session.model_external_initializers_file_folder_path"
#: The sessions ``make_session`` made: their models' omitted outputs are named
#: (``session_model``), so running one needs no look at its model (``fatal_omission_in``).
_NAMED_SESSIONS: weakref.WeakSet[ort.InferenceSession] = weakref.WeakSet()
#: ``fatal_omission_in`` of sessions made elsewhere, once each.
_FOREIGN: weakref.WeakKeyDictionary[ort.InferenceSession, str | None] = (
    weakref.WeakKeyDictionary()
)


def fatal_omission_in(session: ort.InferenceSession) -> str | None:
    """``fatal_omission`` of the model a session was made over, as onnxruntime's Python
    session keeps it (its path or bytes); None for a session ``make_session`` made, or one
    whose model is not kept or cannot be read. onnxruntime dies running the others
    (``OMITTED_OUTPUT_KILLS``), and a made session cannot be renamed: its caller refuses."""
    if session in _NAMED_SESSIONS:
        return None
    if session in _FOREIGN:
        return _FOREIGN[session]
    path = getattr(session, "_model_path", None)
    content = getattr(session, "_model_bytes", None)
    found = None
    try:
        if isinstance(content, bytes) and _may_omit(content):
            found = fatal_omission(onnx.load_model_from_string(content))
        elif isinstance(path, str) and _file_may_omit(path):
            found = fatal_omission(onnx.load(path, load_external_data=False))
    except Exception:  # not ONNX as onnx reads it: onnxruntime made it, and runs it
        found = None
    _FOREIGN[session] = found
    return found


def with_options(providers: Sequence[str]) -> list[str | tuple[str, dict[str, str]]]:
    """``providers`` as InferenceSession takes them, each with its ``PROVIDER_OPTIONS``."""
    return [
        (name, dict(PROVIDER_OPTIONS[name])) if name in PROVIDER_OPTIONS else name
        for name in providers
    ]


def placements(session: ort.InferenceSession) -> list[tuple[str, str, str]]:
    """(node name, op type, provider) of every node, where this onnxruntime reports it
    (``get_provider_graph_assignment_info``, newer builds); else empty."""
    getter = getattr(session, "get_provider_graph_assignment_info", None)
    if getter is None:
        return []
    try:
        return [
            (node.name, node.op_type, sub.ep_name) for sub in getter() for node in sub.get_nodes()
        ]
    except Exception:  # recording disabled or unsupported: placement stays unknown
        return []


def words_of(failure: BaseException | str) -> str:
    """onnxruntime's own words of a ``failure``, for what reads the nodes they name: a string
    is taken as them (a segment's error, as onnxruntime raised it); an error, the words it
    carries (``EngineWords``), the path they echo masked; "" where it carries none. Never the
    path or names dmlgraph wrote before them: a folder named "'pad'" made every failure one
    at a divergent node 'pad', and a wrong output went not compared (exit 0)."""
    if isinstance(failure, str):
        return failure
    said = getattr(failure, "engine_words", None)
    if not isinstance(said, EngineWords):
        return ""
    text = said.text
    for echoed in filter(None, said.echoed):
        text = text.replace(echoed, _MASK * len(echoed))
    return text


#: How onnxruntime's failure running a node begins, and quotes its op type and name; the
#: status message after it may begin with the failure of a node of its subgraph, alike.
_RUNNING = "Non-zero status code returned while running "
_NAMED = " node. Name:'"
_NAME_ENDS = "' Status Message: "
#: Where onnxruntime's refusals at load quote the node refused, (before, after) its name: no
#: kernel (CPU) or no provider (CUDA), inference's refusal, a Type Error, the checker's.
_REFUSED_AT: tuple[tuple[str, str], ...] = (
    ("node with name '", "'"),
    ("Node (", ") Op ("),
    (" in node (", ") is invalid"),
    ('In Node, ("', '", '),
)


def _name_at(text: str, begin: int, closer: str, names: Collection[str]) -> str | None:
    """The node name onnxruntime quotes from ``begin`` to a ``closer``: the longest of the
    graph's ``names`` that ends at one (a name may hold the closer, or begin with another
    node's name), else up to the first closer; None without one."""
    fits = [name for name in names if text.startswith(closer, begin + len(name))
            and text.startswith(name, begin)]
    if fits:
        return max(fits, key=len)
    end = text.find(closer, begin)
    return None if end < 0 else text[begin:end]


def failed_chain(failure: BaseException | str, names: Collection[str] = ()
                 ) -> list[tuple[str, str]]:
    """(op type, name) of each node onnxruntime's run ``failure`` says it failed at: the
    graph's, then, where that one holds subgraphs, the one inside it, and so on inwards. Read
    in onnxruntime's order from its first words (never from a name: ``own_words``), each
    name matched whole against ``names`` (``_name_at``): a regex's ``[^']*`` read a Loop
    named "lo'op" as 'lo'."""
    text = words_of(failure)
    at = own_words(text).find(_RUNNING)
    chain: list[tuple[str, str]] = []
    while at >= 0:
        start = at + len(_RUNNING)
        named = text.find(_NAMED, start)
        name = None if named < 0 else _name_at(text, named + len(_NAMED), _NAME_ENDS, names)
        if name is None:
            break
        chain.append((text[start:named], name))
        at = named + len(_NAMED) + len(name) + len(_NAME_ENDS)
        at = at if text.startswith(_RUNNING, at) else -1
    return chain


def refused_at(failure: BaseException | str, names: Collection[str] = ()) -> list[str]:
    """The names of the nodes onnxruntime's refusal at load quotes as refused
    (``_REFUSED_AT``), where its own words put them (``own_words``), matched whole against
    ``names`` (``_name_at``)."""
    text = words_of(failure)
    own = own_words(text)
    found = []
    for opener, closer in _REFUSED_AT:
        at = own.find(opener)
        while at >= 0:
            name = _name_at(text, at + len(opener), closer, names)
            if name is not None:
                found.append(name)
            at = own.find(opener, at + len(opener))
    return found
