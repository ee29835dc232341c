"""The ``dmlgraph`` command line.

Exit codes (ARCHITECTURE.md): 0 success, 1 parity fails, 2 bad input or unsupported model,
reported as one line on stderr without a traceback.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, NoReturn, Sequence

import numpy as np

from dmlgraph import files
from dmlgraph.dml.enums import FeatureLevel
from dmlgraph.errors import DmlgraphError
from dmlgraph.printable import counted, shown, visible

if TYPE_CHECKING:
    from rich.table import Table

    from backends.base import Backend
    from dmlgraph.ir import Graph
    from dmlgraph.parity import OutputComparison, ParityReport


def _feature_level(text: str) -> FeatureLevel:
    try:
        return FeatureLevel.parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


#: A number as the command line takes it: ASCII digits, no "_" (Python's int("1_0") is 10),
#: no other script's digits; for floats, a point and an exponent (and inf, nan).
_INTEGER = re.compile(r"[0-9]+")
_FLOAT = re.compile(r"\+?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?|\+?inf(inity)?|nan", re.I)


_INPUT_SHAPE_HELP = ("fix a graph input's dynamic dimensions: its whole shape, every dimension "
                     "a size (repeatable, once per input)")


def _input_shape(text: str) -> tuple[str, list[int]]:
    name, sep, dims = text.rpartition(":")
    parts = [d.strip() for d in dims.split(",")] if dims else []
    shape = [int(d) for d in parts] if all(_INTEGER.fullmatch(d) for d in parts) else None
    if not sep or not name or shape is None:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not NAME:D0,D1,... with non-negative integer dimensions"
        )
    return name, shape


def _path(text: str) -> Path:
    """A file or folder path; an empty one is an error (``Path("")`` is the current folder)."""
    if not text:
        raise argparse.ArgumentTypeError("an empty path names no file")
    return Path(text)


def _file_path(text: str) -> Path:
    """An output file's path: ``Path`` drops a trailing slash, and ``-o out.json/`` wrote a
    file, where the slash names a folder."""
    if text.endswith(("/", os.sep)):
        raise argparse.ArgumentTypeError(
            f"{text!r} ends with a slash, so it names a folder; this command writes a file"
        )
    return _path(text)


def _run_output(text: str) -> Path:
    """``run -o``: a folder (test-data files) or an .npz file, which a trailing slash is not
    (``Path`` drops it: ``-o x.npz/`` wrote a file)."""
    path = _path(text)
    if text.endswith(("/", os.sep)) and path.suffix.lower() == ".npz":
        raise argparse.ArgumentTypeError(
            f"{text!r} ends with a slash, so it names a folder, but an .npz name is written as "
            "a file: drop the slash, or name the test-data folder without .npz"
        )
    return path


def _tolerance(text: str) -> tuple[str, float]:
    """``VALUE`` (the default, name "") or ``NAME:VALUE`` (one output); ``:VALUE`` names no
    output, and is not taken for the default."""
    name, colon, value = text.rpartition(":")
    from dmlgraph.parity import TOLERANCE_RULE, is_tolerance

    number = float(value) if _FLOAT.fullmatch(value.strip()) else -1.0
    if not is_tolerance(number):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not [NAME:]VALUE: {TOLERANCE_RULE}")
    if colon and not name:
        raise argparse.ArgumentTypeError(
            f"{text!r} names no output before ':'; give VALUE alone for every output")
    return name, number


def _seed(text: str) -> int:
    seed = int(text) if _INTEGER.fullmatch(text.strip()) else -1
    if seed < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer >= 0 (NumPy's seeds)")
    return seed


def _depth(text: str) -> int:
    depth = int(text) if _INTEGER.fullmatch(text.strip()) else -1
    if depth < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of edges >= 0")
    return depth


def _refuse(message: str) -> NoReturn:
    raise DmlgraphError(message)


def _check_inputs(args: argparse.Namespace) -> None:
    """--seed draws generated inputs: an error where the inputs come from a file. check's
    --expected runs the inputs stored with its outputs (or --inputs), never generated ones."""
    if "seed" not in args.given:
        return
    if args.inputs is not None:
        _refuse("--seed draws generated inputs; it does nothing with --inputs")
    if getattr(args, "expected", None) is not None:
        _refuse("--seed draws generated inputs; it does nothing with --expected, whose outputs "
                "are compared on the inputs stored with them")


def _check_output(
    output: Path | None, *read: Path | None, folder: bool = False, onnx_model: bool = True
) -> None:
    """Refuse, before any work, an output path the command could not write (its folder
    missing; a folder where a file goes, unless ``folder`` allows one; a read-only file,
    which ``files.replacing`` refuses only after the work) or that names a file
    this command reads: the model or its tensors must never be overwritten. ``read``: the
    model first, then the other files the command reads; ``onnx_model``: the first is an ONNX
    model, whose external data it reads too (a DxDispatch model has none)."""
    if output is None:
        return
    if not output.parent.is_dir():
        what = "is a file, not a folder" if output.parent.exists() else "does not exist"
        _refuse(f"{output}: cannot write: the folder {str(output.parent)!r} {what}")
    _probe_folder(output, output if folder and output.is_dir() else output.parent)
    if not output.exists():
        return
    if output.is_dir() and not folder:
        _refuse(f"{output}: cannot write: is a folder; name a file")
    from dmlgraph import tensorio
    from dmlgraph.importer import external_data_files

    # what a folder's test-data files would overwrite, through a link or not
    targets = [output] + (sorted(tensorio.positional_files(output)) if output.is_dir() else [])
    given = [s for s in read if s is not None and s.exists()]
    sources = {s: str(s) for s in given}
    sources |= {f: f"{f} in {s}" for s in given if s.is_dir() for f in tensorio.positional_files(s)}
    model = read[0] if onnx_model else None  # its external data: read only for a model
    if model is not None and model.is_file():
        sources |= {f: f"{model}'s external data {f.name}" for f in external_data_files(model)}
    for target in targets:
        for source, what in sources.items():
            if target.exists() and target.samefile(source):
                # by its own name, the file needs no naming twice ("a.npz: is a.npz, ...")
                which = "this command reads it" if what == str(target) else (
                    f"is {what}, which this command reads")
                _refuse(f"{target}: {which}; write the output elsewhere")
    if output.is_file() and not os.access(output, os.W_OK):  # a link: the file it names
        _refuse(f"{output}: cannot write: the file is read-only; make it writable (chmod u+w) "
                "or name another file")


def _probe_folder(output: Path, folder: Path) -> None:
    """Refuse a folder no file can be made in (read-only, /proc) before the work, rather than
    after it: a file made and removed there at once tells."""
    import errno
    import tempfile

    try:
        tempfile.TemporaryFile(dir=folder).close()
    except OSError as exc:
        # /proc answers a new file in it "No such file or directory": the folder is there
        reason = ("it takes no new files" if exc.errno == errno.ENOENT and folder.is_dir()
                  else exc.strerror or str(exc))
        _refuse(f"{output}: cannot write in {str(folder)!r}: {reason}")


def _shapes(args: argparse.Namespace) -> dict[str, list[int]] | None:
    return _one_each(args.input_shape, "--input-shape", "shapes") if args.input_shape else None


def _one_each(pairs: Sequence[tuple[str, Any]], option: str, what: str) -> dict[str, Any]:
    """An option given per name, once per name: two values for one name are an error (the
    last would win without a word)."""
    values: dict[str, Any] = {}
    for name, value in pairs:
        if values.get(name, value) != value:
            shown = repr(name) if name else "every output"
            _refuse(f"{option} gives {shown} two {what}: {values[name]} and {value}")
        values[name] = value
    return values


def cmd_run(args: argparse.Namespace) -> int:
    from backends import get_backend
    from dmlgraph import tensorio
    from dmlgraph.importer import load
    from lowering import lower

    _check_inputs(args)
    if args.backend == "numpy" and args.lowered:
        _refuse("--lowered is for --backend onnxruntime (the numpy backend always runs the "
                "lowered graph)")
    if args.backend == "onnxruntime" and args.fallback is not None:
        _refuse("--fallback is for --backend numpy (onnxruntime runs every node itself)")
    if args.backend == "onnxruntime" and "feature_level" in args.given:
        args.lowered = True  # a level names a lowering: that one runs, translated back
    if args.backend == "numpy" and args.fallback == "reference" and args.provider:
        _refuse("--provider chooses onnxruntime's providers; --fallback reference runs no "
                "onnxruntime")
    _check_output(args.output, args.model, args.inputs,
                  folder=args.output is not None and not tensorio.is_npz(args.output))
    graph = load(args.model, _shapes(args))
    if args.output is not None:  # before running, not after
        tensorio.check_writable(args.output, graph)
    if args.inputs is not None:
        feeds = tensorio.read(args.inputs, graph, stem=args.model.stem).inputs
        source = str(args.inputs)
    else:
        feeds, source = tensorio.generate(graph, args.seed), f"generated (seed {args.seed})"
    target: Graph
    if args.backend == "numpy":
        backend = get_backend("numpy", fallback=args.fallback or "onnxruntime",
                              providers=args.provider)
        target = lower(graph, args.feature_level)
        what = f"lowered at FL {args.feature_level.short}"
    else:
        backend = get_backend("onnxruntime", providers=args.provider)
        target = lower(graph, args.feature_level) if args.lowered else graph
        what = f"lowered at FL {args.feature_level.short}" if args.lowered else "imported"
    try:
        if args.backend == "onnxruntime":  # in a child where onnxruntime may die of the model
            from dmlgraph.parity import run_apart

            result = run_apart(target, lambda: backend.execute(target, feeds), str(args.model))
        else:
            result = backend.execute(target, feeds)
    except DmlgraphError as exc:
        if args.backend != "onnxruntime":
            raise
        from backends.base import BackendError
        from backends.onnxruntime.providers import MAY_RUN

        # the message without the backend's hint (``providers.may_run_hint``), onnxruntime's
        # own words kept apart (``EngineWords``): what names the node failed at reads them
        words = BackendError(str(exc).removesuffix(MAY_RUN),
                             engine_words=getattr(exc, "engine_words", None))
        hint = (_divergence_hint(graph, target, args.feature_level, words)
                or _run_divergence_hint(graph, feeds, words, backend))
        if not hint:  # the backend's own may stand
            raise
        # a divergence's hint, where one applies, instead of the backend's
        raise DmlgraphError(f"{words}{hint}") from None
    outputs = {name: result.outputs[t] for name, t in zip(graph.outputs, target.outputs)}
    print(visible(f"model: {args.model} ({what}); inputs: {source}"))
    print(f"backend: {result.record.backend} ({result.record.provider}); ran: "
          f"{result.record.ran_text()}")
    for line in _lowered_when_run(result.record):
        print(visible(line))
    for note in result.record.notes:
        print(f"  note: {visible(note)}")
    for line in _divergences_run(result.record):
        print(visible(line))
    for name, value in outputs.items():
        print(f"  output {visible(name)}: {value.dtype}{list(value.shape)} {_preview(value)}")
    if not graph.outputs:
        print("  (the graph declares no outputs)")
    if args.output:
        tensorio.write(args.output, graph, feeds, outputs)
        npz = tensorio.is_npz(args.output)
        where = args.output if npz else (
            f"the test-data folder {args.output}{os.sep}")  # a name without .npz is a folder
        # a folder holds a file for each listing of an output, an .npz a key for each name
        saved = len(outputs) if npz else len(graph.outputs)
        print(visible(f"saved {len(feeds)} input(s) and {saved} output(s) to {where}"))
    return 0


def _divergence_hint(
    graph: Graph, target: Graph, level: FeatureLevel, failure: DmlgraphError
) -> str:
    """``parity.divergence_hint`` for onnxruntime's failure on ``target`` (the imported graph,
    lowered here only to read its divergence notes, or the lowered one)."""
    from dmlgraph.parity import divergence_hint
    from lowering import lower

    try:
        lowered = target if target is not graph else lower(graph, level)
        return divergence_hint(graph, lowered, failure)
    except DmlgraphError:  # no lowering, no note: onnxruntime's words stand alone
        return ""


def _run_divergence_hint(graph: Graph, feeds: Mapping[str, Any], failure: Exception,
                         backend: Backend) -> str:
    """What onnxruntime's failure (on ``backend``'s providers, which what it read is run
    again on) adds where, by the values fed, a node diverges as the numpy backend's
    fallbacks watch for (``fallback.run_divergence``: a Squeeze by an empty axes list,
    which onnxruntime squeezes whole, fails a node past it): that the numpy backend runs it
    on onnx.reference (``run --backend onnxruntime`` said only onnxruntime's words)."""
    from backends.base import engine_hint
    from backends.numpy.fallback import run_divergence
    from backends.onnxruntime.backend import OnnxruntimeBackend
    from backends.onnxruntime.providers import words_of

    providers = backend.providers if isinstance(backend, OnnxruntimeBackend) else ()
    found = run_divergence(graph, feeds, failure=words_of(failure), providers=providers)
    if found is None:
        return ""
    note, node = found
    return f"; {note}" + engine_hint(
        f"{node} is a known divergence onnx.reference runs as ONNX says, which the numpy "
        "backend runs there and check names", "--backend numpy --fallback reference",
        "get_backend('numpy', fallback='reference')")


#: How many nodes lowered as the graph ran ``run`` and ``check`` list (``check --json``: all).
LOWERED_WHEN_RUN_SHOWN = 30


def _divergences_run(record: Any) -> list[str]:
    """One line per known divergence a node ran at (its run record's note), once each: its
    value is not onnxruntime's (a Scan-8's final states of no step, which onnxruntime leaves
    uninitialized, were printed with no word)."""
    from dmlgraph.parity import DIVERGENCE

    said = dict.fromkeys(
        (run.node, note) for run in getattr(record, "nodes", ()) for note in run.notes
        if note.startswith(DIVERGENCE)
    )
    return [f"  note: node {node!r}: {note}" if node else f"  note: {note}"
            for node, note in said]


def _lowered_when_run(record: Any) -> list[str]:
    """One line per node lowered as the graph ran, and the descriptors it became
    (``RunRecord.lowered_when_run``): the lowering report cannot list them. The record
    holds a run per descriptor: a reversed slice of 16 at FL 1_0 took 17 lines, and the
    nodes past the first 30 descriptors were hidden behind "... and N more"."""
    runs = record.lowered_when_run() if hasattr(record, "lowered_when_run") else ()
    nodes: dict[tuple[str, int | None, str, int], list[str]] = {}
    key: tuple[str, int | None, str, int] | None = None
    for r in runs:  # a node's descriptors run one after another
        if key is None or key[:3] != (r.node, r.node_id, r.via):
            key = (r.node, r.node_id, r.via, len(nodes))
        nodes.setdefault(key, []).append(r.op)
    lines = [
        f"  lowered when it ran: {shown(node or '(unnamed)')} -> {counted(ops)} ({via})"
        for (node, _, via, _), ops in list(nodes.items())[:LOWERED_WHEN_RUN_SHOWN]
    ]
    if len(nodes) > LOWERED_WHEN_RUN_SHOWN:
        lines.append(f"  ... and {len(nodes) - LOWERED_WHEN_RUN_SHOWN} more nodes (check "
                     "--json lists them all)")
    return lines


def _preview(value: np.ndarray) -> str:
    flat = value.reshape(-1)
    if value.dtype.hasobject:  # a STRING tensor: onnx.reference's elements are np.str_, whose
        # repr NumPy 2 prints (np.str_('ab')) beside onnxruntime's str ('ab') in one output
        flat = np.array([str(v) for v in flat[:7]], dtype=object)
    shown = np.array2string(flat[:6], separator=", ", threshold=6, precision=5)
    return shown[:-1] + ", ...]" if flat.size > 6 else shown


def cmd_check(args: argparse.Namespace) -> int:
    import json

    from dmlgraph.parity import check

    _check_inputs(args)
    with _progress(f"checking {args.model} at FL {args.feature_level.short}"):
        report = check(
            args.model,
            feature_level=args.feature_level,
            inputs=args.inputs,
            expected=args.expected,
            input_shapes=_shapes(args),
            seed=args.seed if "seed" in args.given else None,
            atol=_one_each(args.atol, "--atol", "tolerances") if args.atol else None,
            rtol=_one_each(args.rtol, "--rtol", "tolerances") if args.rtol else None,
            fallback=args.fallback or "onnxruntime",
            providers=args.provider,
            cross_check=args.cross_check,
        )
    if args.json:
        print(json.dumps(report.to_json(), indent=2))
    else:
        _print_report(report)
    return report.exit_code


def _progress(what: str) -> Any:
    """A spinner on stderr while slow work runs, when a person watches (stderr is a TTY)."""
    import contextlib

    if not sys.stderr.isatty():
        return contextlib.nullcontext()
    from rich.console import Console

    return Console(stderr=True).status(what)


def _number(value: float | int | None) -> str:
    """A float to 3 digits; an int (an integer output's exact error) in full."""
    if value is None:
        return "-"
    return str(value) if isinstance(value, int) else f"{value:.3g}"


def _print_report(report: ParityReport) -> None:
    """The report as rich tables: lowering, then one table per comparison."""
    from rich.console import Console
    from rich.markup import escape

    from dmlgraph.canonical import LOWERED_OPS
    from dmlgraph.reporting import PLAIN_ROWS_ABOVE, aligned_text

    console = Console(file=sys.stdout, width=None if sys.stdout.isatty() else 140)

    def say(text: str) -> None:  # names, notes: the model's text, control codes shown
        console.print(visible(text), highlight=False, markup=False)

    say(f"model: {report.model}  feature level: {report.feature_level.short}  "
        f"inputs: {report.inputs}")
    for record in report.runs:
        ran = record.ran_text()
        say(f"ran: {record.backend} ({record.provider}){': ' + ran if ran != '-' else ''}")
        for line in _lowered_when_run(record):
            say(line)
        for note in getattr(record, "notes", ()):
            say(f"  note: {note}")
    statuses = ("lowered", "decomposed", "folded", "eliminated", "fallback")
    lowering = _table(("op", *statuses), title="Slice / Concat / Pad after lowering")
    for op, counts in report.lowering_summary().items():
        lowering.add_row(op, *(str(counts.get(s, 0)) for s in statuses))
    console.print(lowering)
    if report.held:  # as ``inspect`` counts them: a table of zeros hid them
        held = sum((Counter(h.ops) for h in report.held), Counter[str]())
        listed = ", ".join(f"{n} {op}" for op, n in sorted(held.items()))
        say(f"  (and {held.total()} in the subgraphs of {len(report.held)} control-flow "
            f"node(s), {', '.join(h.label for h in report.held)}: {listed}; `dmlgraph lower` "
            "lists what they become, 'lowered when it ran' above what this run made of them)")
    for record in report.lowering:
        if record.op_type in LOWERED_OPS and str(record.status) == "fallback":
            say(f"  fallback {record.op_type} {shown(record.name or '(unnamed)')}: "
                f"{'; '.join(record.notes)}")
    for comparison in report.comparisons:
        columns = ("output", "verdict", "dtype", "shape", "max abs", "max rel", "mismatches",
                   "atol / rtol", "needs atol", "needs rtol")
        # the file names in it shown as every command shows them
        title = escape(f"{visible(comparison.actual)}\n  vs {visible(comparison.expected)}")
        style = {"pass": "green", "fail": "bold red"}
        if len(comparison.outputs) > PLAIN_ROWS_ABOVE:  # as ``lower``'s report past them
            say(comparison.actual)
            say(f"  vs {comparison.expected}")
            rows = [[visible(cell) for cell in _cells(o)] for o in comparison.outputs]
            console.print(aligned_text(columns, rows),
                          markup=False, highlight=False, emoji=False, soft_wrap=True)
        elif console.width >= NARROW:
            table = _table(columns, title)
            for o in comparison.outputs:
                table.add_row(*(escape(visible(cell)) for cell in _cells(o)),
                              style=style.get(str(o.verdict), "yellow"))
            console.print(table)
        else:  # one table of two columns per output: ten columns would be a letter wide
            for o in comparison.outputs:
                table = _table(("", ""), title, header=False)
                for column, cell in zip(columns, _cells(o)):
                    table.add_row(column, escape(visible(cell)),
                                  style=style.get(str(o.verdict), "yellow"))
                console.print(table)
        if comparison.note:
            say(f"  note: {comparison.note}")
        for o in comparison.outputs:
            if o.message:
                say(f"  {shown(o.name)}: {o.message}")
            for reason in o.divergences:
                say(f"  {shown(o.name)}: known divergence at {reason}")
    caveats = report.caveats
    for note in caveats[:len(report.notes)]:
        say(f"note: {note}")
    if not report.passed:
        console.print("[bold red]parity FAILS[/]")
    elif report.compared:
        console.print("[green]parity holds[/]")
        for note in caveats[len(report.notes):]:  # what "parity holds" covers
            say(f"note: {note}")
    else:
        console.print("[yellow]nothing compared[/]: every output is a known divergence (above), "
                      "so no parity is shown")


#: Terminals narrower than this get ``check``'s comparison one output at a time.
NARROW = 100


def _table(columns: Sequence[str], title: str, *, header: bool = True) -> Table:
    """A table whose cells wrap where the terminal is narrow (``lower``'s do too): the
    default cut every cell of ``check``'s ten columns to "…" at 40 columns, verdict and all."""
    from rich.table import Table

    table = Table(title=title, title_justify="left", show_header=header)
    for column in columns:
        table.add_column(column, overflow="fold")
    return table


def _cells(o: OutputComparison) -> list[str]:
    """One output's row: what was compared, the errors and the tolerance that would pass
    (rounded up, so that given back it passes); a very long name shortened as ``lower``'s
    table and a drawing shorten it (``printable.shown``; ``--json`` keeps it whole)."""
    from dmlgraph.parity import passing_text

    if not o.compared:
        return [shown(o.name), str(o.verdict), o.actual_dtype, str(list(o.actual_shape)), "-", "-",
                "not compared", "-", "-", "-"]
    dtype = o.expected_dtype if o.actual_dtype == o.expected_dtype else (
        f"{o.actual_dtype} vs {o.expected_dtype}")
    shape = str(list(o.expected_shape)) if o.actual_shape == o.expected_shape else (
        f"{list(o.actual_shape)} vs {list(o.expected_shape)}")
    nan = f" ({o.nan_mismatches} NaN)" if o.nan_mismatches else ""
    counted = "shapes differ" if o.mismatches is None else f"{o.mismatches}/{o.size}{nan}"
    tolerance = "exact" if o.exact else f"{o.tolerance.atol:g} / {o.tolerance.rtol:g}"
    return [shown(o.name), str(o.verdict), dtype, shape, _number(o.max_abs_error),
            _number(o.max_rel_error), counted, tolerance,
            passing_text(o.required_atol), passing_text(o.required_rtol)]


def cmd_lower(args: argparse.Namespace) -> int:
    import json

    from rich.console import Console

    from dmlgraph.importer import load
    from dmlgraph.reporting import lowered_to_json, print_held, print_report
    from lowering import lower

    dxdispatch = args.format == "dxdispatch"
    for flag, used, why in (
        ("--json", args.json and dxdispatch, "prints the lowering report as JSON"),
        ("--all", args.all and dxdispatch, "lists every node of the report"),
        ("--inputs", args.inputs is not None and not dxdispatch,
         "gives a DxDispatch model (--format dxdispatch) its input values"),
    ):
        if used:
            _refuse(f"{flag} {why}; it does not go with --format {args.format}")
    if args.all and args.json:  # the JSON report holds every node, whatever --all says
        _refuse("--all lists every node in the printed table; --json prints every node "
                "already")
    if args.output is not None and args.output.suffix.lower() != ".json":
        _refuse(f"{args.output}: lower writes JSON (--format {args.format}); name the output "
                "*.json")
    if dxdispatch and args.output is None:
        _refuse("--format dxdispatch needs -o OUT.json")
    _check_output(args.output, args.model, args.inputs)
    graph = load(args.model, _shapes(args))
    if dxdispatch:
        from dmlgraph import tensorio
        from dmlgraph.dxdispatch_export import write_dxdispatch

        feeds = None
        if args.inputs:
            from backends.base import check_feeds

            feeds = tensorio.read(args.inputs, graph, stem=args.model.stem).inputs
            # the values fix the sizes a dynamic input leaves open, as --input-shape would:
            # DxDispatch runs static descriptors, and these nodes stayed ONNX without them
            # (every 'N' one size, as a run checks it)
            sized = {name: list(value.shape) for name, value in check_feeds(graph, feeds).items()
                     if graph.tensor(name).static_shape is None}
            if sized:
                graph = load(args.model, {**(_shapes(args) or {}), **sized})
        print(visible(write_dxdispatch(lower(graph, args.feature_level), args.output, feeds)))
        return 0
    lowered = lower(graph, args.feature_level)
    # the JSON only where asked for: every descriptor's JSON, validated again, took as long
    # as the lowering (18 of 51 s for 35,000 descriptors) for a table that does not show it
    document = lowered_to_json(lowered) if args.output is not None or args.json else None
    if args.output is not None:
        files.write_text(args.output, json.dumps(document, indent=2) + "\n")
    if args.json:
        print(json.dumps(document, indent=2))
    else:
        console = Console(file=sys.stdout, width=None if sys.stdout.isatty() else 140)
        print_report(lowered, console, every_node=args.all)
        print_held(lowered, console, every_node=args.all)
        if args.output is not None:
            console.print(visible(f"wrote {args.output}"), markup=False, highlight=False)
    return 0


def cmd_viz(args: argparse.Namespace) -> int:
    from dmlgraph.importer import load
    from dmlgraph.viz import DEFAULT_DEPTH, check_target, focus_on, write_viz
    from lowering import lower

    html = args.output.suffix.lower() in (".html", ".htm")
    if args.check and not html:
        _refuse(f"{args.output}: --check shows its results in the HTML report; write .html")
    _check_inputs(args)
    for flag, used, why in (
        ("--inputs", args.inputs is not None, "gives the inputs of"),
        ("--seed", "seed" in args.given, "gives the inputs of"),
        ("--fallback", args.fallback is not None, "chooses an engine of"),
        ("--provider", bool(args.provider), "chooses an engine of"),
    ):
        if used and not args.check:
            _refuse(f"{flag} {why} --check; add --check (and write .html)")
    if args.depth is not None and not args.focus:
        _refuse(f"--depth {args.depth} says how far --focus reaches; add --focus NAME")
    depth = DEFAULT_DEPTH if args.depth is None else args.depth
    _check_output(args.output, args.model, args.inputs)
    check_target(args.output)
    graph = load(args.model, _shapes(args))
    if args.focus:
        focus_on(graph, args.focus, depth)  # an unknown name: said before lowering
    lowered = lower(graph, args.feature_level)
    parity = None
    if args.check:
        from dmlgraph.parity import check

        with _progress(f"checking {args.model} at FL {args.feature_level.short}"):
            parity = check(
                args.model,
                feature_level=args.feature_level,
                inputs=args.inputs,
                input_shapes=_shapes(args),
                seed=args.seed if "seed" in args.given else None,
                fallback=args.fallback or "onnxruntime",
                providers=args.provider,
            )
    print(visible(write_viz(args.output, graph, lowered, parity, focus=args.focus,
                            depth=depth)))
    return 0 if parity is None else parity.exit_code


def cmd_dxdispatch(args: argparse.Namespace) -> int:
    from dmlgraph import tensorio
    from dmlgraph.dxdispatch import load_model, run_model

    if args.output is not None:
        if not tensorio.is_npz(args.output):  # NumPy's habit of adding .npz hid the name given
            _refuse(f"{args.output}: dxdispatch saves its resources as an .npz; name the "
                    "output *.npz")
        _check_output(args.output, args.model, onnx_model=False)
    # the model's text (resource names, one-byte values printed as characters) and a file
    # name reach the terminal as every command shows them
    model = run_model(load_model(args.model), args.feature_level,
                      echo=lambda line: print(visible(line)))
    if args.output:
        arrays = {name: r.values() for name, r in model.resources.items()}
        written = tensorio.save_npz(args.output, arrays)
        print(visible(f"saved {len(arrays)} resources to {written}"))
    return 0


def cmd_inspect(args: argparse.Namespace) -> int:
    from dmlgraph.inspect import describe

    shapes = _shapes(args)
    print(describe(args.model, shapes))
    return 0


class _StoreOnce(argparse._StoreAction):
    """argparse's ``store``, refusing an option given again with another value: argparse
    keeps the last, so ``lower -o a.json -o b.json`` wrote b.json alone and ``--inputs a.npz
    ... --inputs b.npz`` checked b.npz, without a word. The same value twice is harmless."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        given: dict[str, Any] = namespace.__dict__.setdefault(_GIVEN_ONCE, {})
        if self.option_strings and self.dest in given and given[self.dest] != values:
            raise argparse.ArgumentError(
                self, f"given twice, as {str(given[self.dest])!r} and {str(values)!r}; give it "
                "once")
        given[self.dest] = values
        super().__call__(parser, namespace, values, option_string)


#: Where ``_StoreOnce`` keeps the values given in one parse; removed once it ends.
_GIVEN_ONCE = "_given_once"


class _Parser(argparse.ArgumentParser):
    """argparse's parser with its usage errors on one line, as every error here is, and its
    single-valued options given once (``_StoreOnce``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.register("action", None, _StoreOnce)
        self.register("action", "store", _StoreOnce)

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {' '.join(message.split())}; see {self.prog} --help\n")


class _CommandParser(_Parser):
    """A subcommand's parser: it refuses the arguments it does not know itself, so the error
    points at its own help ("see dmlgraph viz --help"); argparse leaves them to the top
    parser, whose help lists no command's options."""

    def parse_known_args(  # type: ignore[override]  # typeshed types it by overloads
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        parsed, extras = super().parse_known_args(args, namespace)
        vars(parsed).pop(_GIVEN_ONCE, None)
        if extras:
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed, extras


def _version() -> str:
    """dmlgraph's version and the versions of what it checks against."""
    from importlib.metadata import PackageNotFoundError, version

    def of(package: str) -> str:
        try:
            return version(package)
        except PackageNotFoundError:
            return "not installed"

    import onnx
    import onnxruntime  # its package may be onnxruntime-directml, -gpu...: asked, not looked up

    return (f"dmlgraph {of('dmlgraph')} (onnx {onnx.__version__}, onnxruntime "
            f"{onnxruntime.__version__}, numpy {np.__version__})")


class _VersionAction(argparse.Action):
    """``--version``, whose text is made only when asked for: reading the installed versions
    (importlib.metadata, and onnxruntime's import) cost every command 50 ms."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS,
                 default: Any = argparse.SUPPRESS, help: str | None = None) -> None:
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        print(_version())
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="dmlgraph",
        description="Lower ONNX Slice, Concat and Pad to DirectML descriptors, run them, check "
        "parity.",
    )
    parser.add_argument("--version", action=_VersionAction,
                        help="show the versions of dmlgraph, onnx, onnxruntime and NumPy")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                     parser_class=_CommandParser)

    inspect = commands.add_parser(
        "inspect", help="load a model, fold computed Slice/Pad parameters, summarise it"
    )
    inspect.add_argument("model", type=_path, help="an .onnx file")
    inspect.add_argument("--input-shape", action="append", type=_input_shape,
                         metavar="NAME:D0,D1,..", help=_INPUT_SHAPE_HELP)
    inspect.set_defaults(run=cmd_inspect)

    lower = commands.add_parser(
        "lower", help="lower Slice/Concat/Pad to DirectML descriptors and report every node"
    )
    _add_lowering_arguments(lower)
    lower.add_argument("-o", "--output", type=_file_path, metavar="OUT.json",
                       help="write the lowered graph (descriptors, tensors, report) as JSON")
    lower.add_argument("--format", choices=("json", "dxdispatch"), default="json",
                       help="json: dmlgraph's own form (default); dxdispatch: a DxDispatch model")
    lower.add_argument("--inputs", type=_path, metavar="IN",
                       help="dxdispatch: initial values of the graph inputs (.npz or test-data)")
    lower.add_argument("--json", action="store_true", help="print the JSON form")
    lower.add_argument("--all", action="store_true",
                       help="list every node in the table, not just Slice/Concat/Pad "
                       "(--json lists every node)")
    lower.set_defaults(run=cmd_lower)

    viz = commands.add_parser(
        "viz", help="draw the lowered graph: DOT, SVG (with Graphviz) or a self-contained HTML"
    )
    _add_lowering_arguments(viz)
    viz.add_argument("-o", "--output", type=_file_path, required=True, metavar="OUT.dot|.svg|.html",
                     help="the file to write, its format by its suffix: .dot (or .gv), .svg "
                     "(through Graphviz's dot), .html (or .htm; both graphs, side by side)")
    viz.add_argument("--check", action="store_true",
                     help="run the parity check and show its results (HTML)")
    viz.add_argument("--focus", action="append", metavar="NAME",
                     help="draw only this node (an ONNX node's name, or a tensor's: the nodes "
                     "making and reading it), the nodes near it and what they became, each "
                     "edge to a node left out ending at a stub (repeatable)")
    # default 2: dmlgraph.viz.focus.DEFAULT_DEPTH, which every command's parser would import
    # (24 ms) to name; test_cli holds the two equal
    viz.add_argument("--depth", type=_depth, metavar="K",
                     help="with --focus: how many edges from the named nodes, either way, "
                     "a node may be and still be drawn (default 2)")
    _add_engine_arguments(viz, " (with --check)")
    viz.set_defaults(run=cmd_viz)

    run = commands.add_parser("run", help="run a model on a backend and print its outputs")
    _add_model_arguments(run)
    run.add_argument("--backend", choices=("numpy", "onnxruntime"), default="numpy",
                     help="numpy: the lowered graph on the DirectML emulator (default); "
                     "onnxruntime: the imported graph, or the lowered one with --lowered or "
                     "--feature-level")
    run.add_argument("--lowered", action="store_true",
                     help="onnxruntime: run the lowered graph, translated back to ONNX "
                     "(implied by --feature-level: a level names a lowering)")
    run.add_argument("-o", "--output", type=_run_output, metavar="OUT",
                     help="save inputs and outputs to an .npz or a test-data folder")
    run.set_defaults(run=cmd_run)

    check = commands.add_parser(
        "check", help="compare the lowered graph on the NumPy backend with onnxruntime"
    )
    _add_model_arguments(check)
    check.add_argument("--expected", type=_path, metavar="OUT",
                       help="also compare with the outputs stored in an .npz or test-data folder")
    check.add_argument("--atol", action="append", type=_tolerance, metavar="[NAME:]VALUE",
                       help=_tolerance_help("atol"))
    check.add_argument("--rtol", action="append", type=_tolerance, metavar="[NAME:]VALUE",
                       help=_tolerance_help("rtol"))
    check.add_argument("--cross-check", action="store_true",
                       help="also run the lowered graph on onnxruntime, translated to ONNX")
    check.add_argument("--json", action="store_true", help="print the report as JSON")
    check.set_defaults(run=cmd_check)

    dxdispatch = commands.add_parser(
        "dxdispatch", help="run a DxDispatch JSON model's DML operators on the NumPy executor"
    )
    dxdispatch.add_argument("model", type=_path, help="a DxDispatch model .json")
    dxdispatch.add_argument("--feature-level", type=_feature_level, default=FeatureLevel.L6_4,
                            help="DML_FEATURE_LEVEL to validate at (default 6_4)")
    dxdispatch.add_argument("-o", "--output", type=_file_path, metavar="OUT.npz",
                            help="save every resource to an .npz")
    dxdispatch.set_defaults(run=cmd_dxdispatch)
    return parser


def _tolerance_help(kind: str) -> str:
    """--atol's or --rtol's help, naming the defaults ``check`` applies (parity's table)."""
    from dmlgraph.parity import DEFAULT_TOLERANCES, FALLBACK_TOLERANCE

    dtypes: dict[float, list[str]] = {}
    for dtype, tolerance in DEFAULT_TOLERANCES.items():
        dtypes.setdefault(getattr(tolerance, kind), []).append(dtype)
    defaults = ", ".join(f"{' and '.join(names)} {value:g}" for value, names in dtypes.items())
    what = "absolute" if kind == "atol" else "relative"
    return (f"{what} tolerance, for all outputs or one (repeatable); default by dtype: "
            f"{defaults}, other floats {getattr(FALLBACK_TOLERANCE, kind):g}; integers, bools "
            "and strings compare exactly, whatever is given")


def _add_lowering_arguments(parser: argparse.ArgumentParser) -> None:
    """What every command that lowers a model takes: the model, the level, input shapes."""
    parser.add_argument("model", type=_path, help="an .onnx file")
    parser.add_argument("--feature-level", type=_feature_level,
                        help="DML_FEATURE_LEVEL to lower at, as 6_4, 6.4, "
                        "DML_FEATURE_LEVEL_6_4 or 0x6400 (default 6_4)")
    parser.add_argument("--input-shape", action="append", type=_input_shape,
                        metavar="NAME:D0,D1,..", help=_INPUT_SHAPE_HELP)


def _add_model_arguments(parser: argparse.ArgumentParser) -> None:
    """What run and check share: the lowering arguments, inputs, the engines."""
    _add_lowering_arguments(parser)
    _add_engine_arguments(parser)


def _add_engine_arguments(parser: argparse.ArgumentParser, only: str = "") -> None:
    """The inputs and engines of a run: run's, check's, and viz's for its --check (``only``
    says so in the help)."""
    parser.add_argument("--inputs", type=_path, metavar="IN",
                        help="an .npz (keys = tensor names) or an ONNX test-data folder; "
                        f"default: random inputs from --seed{only}")
    parser.add_argument("--seed", type=_seed, help=f"seed of generated inputs (0){only}")
    parser.add_argument("--fallback", choices=("onnxruntime", "reference"),
                        help="engine of the ONNX nodes the lowering leaves (default "
                        f"onnxruntime){only}")
    parser.add_argument("--provider", action="append", metavar="NAME",
                        help="onnxruntime execution provider to use: its full name or CPU, "
                        f"CUDA, DML (repeatable; default: DirectML, else CUDA, else CPU){only}")


def _silence(stream: Any) -> None:
    """Point the stream's file descriptor at /dev/null: what it still buffers goes nowhere
    at exit, rather than failing there (Python says "Exception ignored" and exits 120)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # no descriptor (a test's StringIO):
        return  # nothing buffers below it, so nothing can fail at exit


class _ReaderMayLeave:
    """stdout for a reader that may stop early (``dmlgraph lower --json | head``): once its
    pipe closes, the rest is dropped, and the command still ends with its own exit code. A
    write that fails otherwise (a full disk) is one error saying so, wherever it is met."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self._closed = False

    def write(self, text: str) -> int:
        self._call(self._stream.write, text)
        return len(text)

    def flush(self) -> None:
        self._call(self._stream.flush)

    def _call(self, method: Callable[..., Any], *args: Any) -> None:
        if self._closed:
            return
        try:
            method(*args)
        except BrokenPipeError:
            self._closed = True
            _silence(self._stream)
        except OSError as exc:  # a full disk, a size limit, met mid-command or at the end
            self._closed = True
            _silence(self._stream)
            raise DmlgraphError(f"cannot write the output: {exc.strerror or exc}") from None

    def __getattr__(self, name: str) -> Any:  # isatty, encoding, fileno...
        return getattr(self._stream, name)


#: Options whose default is filled in after parsing, so that a command can tell one given
#: where it would do nothing (``args.given``).
_LATE_DEFAULTS: dict[str, Any] = {"seed": 0, "feature_level": FeatureLevel.L6_4}


def _defaults(args: argparse.Namespace) -> None:
    args.given = {k for k in _LATE_DEFAULTS if getattr(args, k, None) is not None}
    for name, value in _LATE_DEFAULTS.items():
        if hasattr(args, name) and getattr(args, name) is None:
            setattr(args, name, value)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    _defaults(args)
    run: Callable[[argparse.Namespace], int] = args.run
    stdout = sys.stdout
    if stdout is not None:  # None when fd 1 is closed: print() then writes nowhere
        sys.stdout = _ReaderMayLeave(stdout)  # type: ignore[assignment]
    code: int | None = None
    error = ""
    try:
        code = run(args)
    except DmlgraphError as exc:
        error = str(exc)
    except OSError as exc:  # "PATH: reason", not Python's "[Errno 2] reason: 'PATH'"
        where = f"{exc.filename}: " if exc.filename is not None else ""
        error = f"{where}{exc.strerror or exc}"
    except MemoryError as exc:
        error = f"out of memory ({str(exc) or 'the tensors are too large for this machine'})"
    finally:
        if stdout is not None:  # what the pipe still buffers, on every path
            wrapper, sys.stdout = sys.stdout, stdout
            try:
                wrapper.flush()
            except DmlgraphError as exc:  # a full disk, a size limit (_call said which)
                if code is not None:  # else the command's own error is the one to say
                    error, code = str(exc), None
    if code is not None:
        return code
    # one line: messages may quote other tools' (the ONNX checker's context lines), and a
    # model's text (a resource's name) shown as every command shows it
    print(f"dmlgraph: error: {visible(' '.join(error.split()))}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
