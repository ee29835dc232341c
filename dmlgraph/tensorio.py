"""Tensors in and out: ``.npz`` files, ONNX test-data folders, and seeded random inputs.

Two formats, as ARCHITECTURE.md fixes them:

- ``.npz``: keys are tensor names. Files that hold several models' tensors under
  ``STEM__in0`` / ``STEM__out0`` keys (like ``models/reference_io.npz``) are read by position
  for the model whose file stem is STEM.
- an ONNX test-data folder: ``input_0.pb``, ``input_1.pb``, ... and ``output_0.pb``, ...,
  each a serialized TensorProto, by position (a proto's name, when it names a graph tensor,
  wins over its position).

``read`` binds what a file holds to a graph's inputs and outputs; ``write`` saves inputs and
outputs so a run can be replayed. ``generate`` makes inputs from a seed: uniform values in a
range per dtype kind (``VALUE_RANGES``) that exercise signs without overflowing.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import shutil
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import onnx
from onnx import numpy_helper

from dmlgraph import files
from dmlgraph.canonical import PARAMETER_PORTS
from dmlgraph.errors import DmlgraphError, as_array, shown
from dmlgraph.dml.scalars import is_integer
from dmlgraph.dtypes import DTYPE_TO_ELEM_TYPE, is_float, raw_bytes
from dmlgraph.ir import Graph, TensorInfo, dims_text
from dmlgraph.value_info import string_array


class TensorIOError(DmlgraphError):
    """Tensors cannot be read, bound to a graph, written or generated."""


@dataclass(frozen=True)
class TensorSet:
    """Inputs (every graph input) and outputs (those the source held), by tensor name."""

    inputs: dict[str, np.ndarray] = field(default_factory=dict)
    outputs: dict[str, np.ndarray] = field(default_factory=dict)


#: dtype kind -> [low, high) of generated values: signs for floats and signed integers,
#: small magnitudes so sums and products stay exact in every width.
VALUE_RANGES: Mapping[str, tuple[float, float]] = {
    "f": (-1.0, 1.0),  # float16/32/64 and ml_dtypes' floats (its int4/int2 take "i" or "u";
    # each range is cut to what the dtype holds: ``random_array``)
    "i": (-8, 8),
    "u": (0, 16),
}
_POSITIONAL = re.compile(r"^(input|output)_([0-9]+)\.pb$")  # ASCII digits only
_STEM_KEY = re.compile(r"^(?P<stem>.+)__(?P<kind>in|out)(?P<index>\d+)$")
#: The keys of this project's torch fixtures (models/MANIFEST.md): several cases a model.
_CASE_KEY = re.compile(r"^(?P<stem>.+?)__(?P<case>\d+)__(?:in|eager)__.+$")


# ----------------------------------------------------------------------------- reading


def read(
    path: str | os.PathLike[str],
    graph: Graph,
    *,
    stem: str | None = None,
    require_inputs: bool = True,
) -> TensorSet:
    """What ``path`` holds for ``graph``: its inputs (all of them, unless not required) and
    any outputs. ``stem`` selects ``STEM__inK`` keys of a multi-model .npz."""
    _check_arguments("read", path, graph)
    path = Path(path)
    if not path.exists():
        raise TensorIOError(f"{path}: no such file or folder")
    if path.is_dir():
        entries_in, entries_out = _read_folder(path)
    elif is_npz(path):
        entries_in, entries_out = _read_npz(path, graph, stem)
    else:
        raise TensorIOError(f"{path}: not an .npz file or an ONNX test-data folder")
    inputs = _bind(path, entries_in, graph, "input")
    outputs = _bind(path, entries_out, graph, "output")
    missing = [name for name in graph.inputs if name not in inputs]
    if require_inputs and missing:
        raise TensorIOError(
            f"{path}: holds no value for graph input(s) {missing} (it holds "
            f"{len(entries_in)} input(s))"
        )
    try:
        typed = {k: _typed(k, v, graph) for k, v in inputs.items()}
        stored = {k: _typed(k, v, graph) for k, v in outputs.items()}
    except TensorIOError as exc:
        raise TensorIOError(f"{path}: {exc}") from None
    for name, array in typed.items():
        _check_input(path, graph, name, array)
    for name, array in stored.items():
        check_output(path, graph, name, array)
    return TensorSet(typed, stored)


def check_output(path: Path | str, graph: Graph, name: str, array: np.ndarray) -> None:
    """A stored output of another tensor type is compared (and fails, naming both); one of
    no tensor type (raw bytes of another width, a record) cannot be, and ended the
    comparison in NumPy's TypeError, a traceback."""
    if array.dtype.kind == "V" and array.dtype not in DTYPE_TO_ELEM_TYPE:  # bfloat16 is "V"
        made = graph.tensor(name).dtype
        raise TensorIOError(
            f"{path}: output {name!r} is {array.dtype}, which is no tensor type"
            + (f"; the graph makes {made}" if made is not None else "")
        )


def _check_input(path: Path, graph: Graph, name: str, array: np.ndarray) -> None:
    """An input's dtype and fixed sizes, checked where the file is named (the backends check
    them again, naming the model)."""
    info = graph.tensor(name)
    if info.dtype is not None and array.dtype != info.dtype:
        raise TensorIOError(
            f"{path}: input {name!r} is {array.dtype}; the graph expects {info.dtype}"
        )
    if info.shape is not None and (
        array.ndim != len(info.shape)
        or any(type(d) is int and d != n for d, n in zip(info.shape, array.shape))
    ):
        raise TensorIOError(
            f"{path}: input {name!r} has shape {list(array.shape)}; the graph expects "
            f"{list(info.shape)}"
        )


@dataclass(frozen=True)
class _Entry:
    """One tensor as a source lists it: by name, by position, or both (a test-data file)."""

    array: np.ndarray
    name: str = ""
    index: int | None = None
    origin: str = ""  # the .npz key or the file it came from, for messages

    def way(self, how: str) -> str:
        return f"{how} ({self.origin})" if self.origin else how


_NUMPY_POSITIONAL = re.compile(r"^arr_(\d+)$")  # the keys of np.savez(path, a, b)


def positional_files(folder: Path) -> list[Path]:
    """The test-data files (input_0.pb, output_0.pb ...) a folder holds; none where it cannot
    be listed."""
    try:
        return [child for child in folder.iterdir() if _POSITIONAL.match(child.name)]
    except OSError:
        return []


def _read_folder(path: Path) -> tuple[list[_Entry], list[_Entry]]:
    found: dict[str, dict[int, Path]] = {"input": {}, "output": {}}
    for child in sorted(path.iterdir()):
        match = _POSITIONAL.match(child.name)
        if match:
            index = int(match[2])
            other = found[match[1]].get(index)
            if other is not None:  # input_0.pb and input_00.pb: which one was meant?
                raise TensorIOError(
                    f"{path}: {other.name} and {child.name} are both {match[1]} {index}; "
                    "keep one"
                )
            found[match[1]][index] = child
    if not found["input"] and not found["output"]:
        raise TensorIOError(f"{path}: an ONNX test-data folder holds input_0.pb ...; none found")
    entries: dict[str, list[_Entry]] = {}
    for kind, numbered in found.items():
        indexes = sorted(numbered)
        if indexes != list(range(len(indexes))):
            raise TensorIOError(f"{path}: {kind} files are numbered {indexes}; expected 0..n-1")
        entries[kind] = []
        for index in indexes:
            proto = onnx.TensorProto()
            try:
                data = numbered[index].read_bytes()
            except OSError as exc:
                raise TensorIOError(f"{numbered[index]}: cannot read: {exc.strerror or exc}") from None
            try:
                proto.ParseFromString(data)
            except Exception as exc:
                raise TensorIOError(
                    f"{numbered[index]}: not a serialized TensorProto: {type(exc).__name__}: {exc}"
                ) from None
            array = proto_array(proto, numbered[index])
            entries[kind].append(_Entry(array, proto.name, index, f"file {numbered[index].name!r}"))
    return entries["input"], entries["output"]


def proto_array(proto: onnx.TensorProto, file: Path) -> np.ndarray:
    """The array a test-data file's TensorProto holds, or an error naming the file and the
    field that is wrong. Sizes are checked first: NumPy reads a dimension of -1 as "the rest",
    and dims [-1, 3] without data gave a [0, 3] tensor that ran. STRING data is read as the
    importer reads it (``string_array``: whole, trailing NULs and all)."""
    what = f"{file}: TensorProto {proto.name!r}"
    if any(d < 0 for d in proto.dims):
        raise TensorIOError(f"{what} has dims {list(proto.dims)}; a dimension is a size >= 0")
    if proto.data_type == onnx.TensorProto.UNDEFINED or (
        proto.data_type not in onnx.TensorProto.DataType.values()
    ):
        raise TensorIOError(f"{what} has data_type {proto.data_type}, which is no ONNX element "
                            "type")
    if proto.data_type == onnx.TensorProto.STRING:  # never external data (ONNX's rule)
        try:
            return string_array(proto)
        except UnicodeDecodeError as exc:
            raise TensorIOError(f"{what}: a string is not UTF-8: {exc}") from None
        except ValueError as exc:
            raise TensorIOError(f"{what} holds {exc}") from None
    if proto.data_location == onnx.TensorProto.EXTERNAL:
        _check_external_length(proto, file, what)
    try:
        # external data lies beside the file, as ONNX's test runner reads it
        return np.array(numpy_helper.to_array(proto, base_dir=str(file.parent)))
    except Exception as exc:
        raise TensorIOError(
            f"{what} ({onnx.TensorProto.DataType.Name(proto.data_type)}, dims "
            f"{list(proto.dims)}) cannot be read: {type(exc).__name__}: {exc}"
        ) from None


def _check_external_length(proto: onnx.TensorProto, file: Path, what: str) -> None:
    """Refuse external data longer than the tensor's dims hold before onnx reads it: onnx
    reads it all (without a length, the file's rest), then fails to reshape it, so a [2]
    tensor over a 16 GiB file read 16 GiB first. Other faults are onnx's to word."""
    entries = {e.key: e.value for e in proto.external_data}
    try:
        size = (file.parent / entries.get("location", "")).stat().st_size
        offset = int(entries.get("offset", "0"))
        length = int(entries["length"]) if "length" in entries else size - offset
    except (OSError, ValueError):
        return
    need = raw_bytes(proto)
    if need is not None and length > need:
        raise TensorIOError(
            f"{what}: its external data {entries.get('location')!r} gives {length} bytes from "
            f"offset {offset}; dims {list(proto.dims)} of "
            f"{onnx.TensorProto.DataType.Name(proto.data_type)} hold {need}"
        )


#: How a zip archive's first local file header begins.
_ZIP_MAGIC = b"PK\x03\x04"


def _read_npz(path: Path, graph: Graph, stem: str | None) -> tuple[list[_Entry], list[_Entry]]:
    try:
        with open(path, "rb") as file:  # else NumPy takes it for a pickle, and says to trust it
            zipped = zipfile.is_zipfile(file)
            file.seek(0)
            zip_start = file.read(4) == _ZIP_MAGIC
    except OSError as exc:
        raise TensorIOError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if not zipped and zip_start:  # a zip's directory is at its end: what a cut copy loses
        raise TensorIOError(f"{path}: a zip archive without the directory at its end: truncated "
                            "or corrupt? (an .npz is a zip archive of .npy files)")
    if not zipped:
        raise TensorIOError(f"{path}: not an .npz file (an .npz is a zip archive of .npy files)")
    try:
        with np.load(path, allow_pickle=False) as data:
            if len(set(data.files)) != len(data.files):  # the zip's last member would win
                twice = sorted({key for key in data.files if data.files.count(key) > 1})
                raise TensorIOError(f"{path}: the .npz holds {twice} more than once; keep one")
            _refuse_cases(path, data.files, graph)
            wanted = _wanted_keys(data.files, graph, stem)
            _check_npz_memory(path, data, wanted)
            # a key nothing reads is refused below by its name: its data is never unpacked
            arrays = {
                key: _npz_array(path, data, key) if key in wanted else np.empty(0, np.uint8)
                for key in data.files
            }
    except TensorIOError:
        raise
    except Exception as exc:
        raise TensorIOError(
            f"{path}: cannot read the .npz: {type(exc).__name__}: {exc}"
        ) from None
    keyed = {key: m for key in arrays if (m := _STEM_KEY.match(key))}
    if keyed and len(keyed) == len(arrays) and not set(graph.inputs) & set(arrays):
        stems = sorted({m["stem"] for m in keyed.values()})
        if stem not in stems:
            raise TensorIOError(
                f"{path}: holds the tensors of models {stems}, none of {stem!r}; name the model "
                "file after one of them or give an .npz keyed by tensor names"
            )
        by_kind: dict[str, list[_Entry]] = {"in": [], "out": []}
        for key, m in keyed.items():
            if m["stem"] == stem:
                by_kind[m["kind"]].append(
                    _Entry(arrays[key], index=int(m["index"]), origin=f"key {key!r}")
                )
        return by_kind["in"], by_kind["out"]
    inputs: list[_Entry] = []
    outputs: list[_Entry] = []
    for key, array in arrays.items():
        named = key in graph.inputs or key in graph.outputs  # a name wins over a position
        positional = None if named else _NUMPY_POSITIONAL.match(key)
        if positional:
            inputs.append(_Entry(array, index=int(positional[1]), origin=f"key {key!r}"))
            continue
        if key in graph.outputs:
            outputs.append(_Entry(array, key))
        if key in graph.inputs or key not in graph.outputs:
            inputs.append(_Entry(array, key))
    return inputs, outputs


def _npz_array(path: Path, data: Any, key: str) -> np.ndarray:
    """One member's array, or an error naming its key. NumPy hands a member that is not an
    .npy file (a pickle named x.npy) back as its bytes, which reached the binding as a
    tensor (a traceback), and says only "Object arrays cannot be loaded" of a pickled one."""
    try:
        value = data[key]
    except Exception as exc:
        if isinstance(exc, ValueError) and "allow_pickle" in str(exc):
            raise TensorIOError(
                f"{path}: key {key!r} holds an object array, which an .npz stores as a "
                "pickle; dmlgraph loads no pickles: store strings as a NumPy string array "
                "(dtype str)"
            ) from None
        hint = ""
        if "descr" in str(exc) and "<f1" in str(exc):  # np.save of ml_dtypes' float8_e5m2
            hint = (" (NumPy cannot read back the float8_e5m2 arrays np.save writes: save "
                    "them as raw bytes, array.view('V1'), or with dmlgraph.tensorio.save_npz)")
        raise TensorIOError(
            f"{path}: key {key!r}: cannot read its array: {type(exc).__name__}: {exc}{hint}"
        ) from None
    if not isinstance(value, np.ndarray):
        raise TensorIOError(
            f"{path}: key {key!r} is not a NumPy array (its member is no .npy file, and "
            "dmlgraph loads no pickles); an .npz holds arrays written by np.save"
        )
    return value


def _refuse_cases(path: Path, keys: Sequence[str], graph: Graph) -> None:
    """An .npz of test cases keyed ``MODEL__CASE__in__NAME`` (the torch fixtures) holds
    several values for one input: say so, rather than that its first key is no input."""
    cases = [m for key in keys if (m := _CASE_KEY.match(key))]
    if not cases or len(cases) != len(keys) or set(graph.inputs) & set(keys):
        return
    models = sorted({m["stem"] for m in cases})
    raise TensorIOError(
        f"{path}: holds test cases keyed MODEL__CASE__in__NAME (models {models}), several "
        "values an input, which --inputs does not choose between; give an .npz keyed by "
        "tensor names (models/MANIFEST.md says how to take one case out)"
    )


def _wanted_keys(keys: Sequence[str], graph: Graph, stem: str | None) -> set[str]:
    """The keys of an .npz whose arrays ``read`` may bind: in a multi-model file, the
    model's own; else a graph input's or output's name, or a position (``arr_K``). The rest
    are refused by name, or not read, without their data."""
    keyed = {key: m for key in keys if (m := _STEM_KEY.match(key))}
    if keyed and len(keyed) == len(keys) and not set(graph.inputs) & set(keys):
        return {key for key, m in keyed.items() if m["stem"] == stem}
    names = set(graph.inputs) | set(graph.outputs)
    return {key for key in keys if key in names or _NUMPY_POSITIONAL.match(key)}


def _check_npz_memory(path: Path, data: Any, keys: set[str]) -> None:
    """Refuse, from the members' headers, arrays that would not fit in the memory this
    machine has free: an .npz compresses, and a 2 MB file held a 2 GB array that was
    unpacked before its key was even looked at."""
    sizes: dict[str, int] = {}
    members = set(data.zip.namelist())  # read once: an .npz may hold thousands of keys
    for key in keys:
        member = f"{key}.npy" if f"{key}.npy" in members else key
        try:
            with data.zip.open(member) as file:
                version = np.lib.format.read_magic(file)
                read_header = (
                    np.lib.format.read_array_header_1_0 if version == (1, 0)
                    else np.lib.format.read_array_header_2_0 if version == (2, 0)
                    else None
                )
                if read_header is None:  # a newer format: NumPy's own read checks it
                    continue
                shape, _, dtype = read_header(file)
        except Exception:  # NumPy's own read below says what is wrong with it
            continue
        sizes[key] = math.prod(shape) * dtype.itemsize
    free = available_memory()
    if sum(sizes.values()) > free:
        key = max(sizes, key=sizes.__getitem__)
        raise TensorIOError(
            f"{path}: holds {bytes_text(sum(sizes.values()))} of arrays (key {key!r}: "
            f"{bytes_text(sizes[key])}), more than this machine has free "
            f"({bytes_text(free)})"
        )


def bytes_text(count: float) -> str:
    """A byte count as people read it: 2.1 GB (infinite where the memory is not known)."""
    if math.isinf(count):
        return "unknown"
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if count >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{int(count)} bytes"


def _bind(path: Path, entries: list[_Entry], graph: Graph, kind: str) -> dict[str, np.ndarray]:
    """An entry goes to the graph tensor of its name, else to the one at its position."""
    names = graph.inputs if kind == "input" else graph.outputs
    bound: dict[str, np.ndarray] = {}
    how: dict[str, str] = {}  # how each was bound, for the message of a second value

    def bind(name: str, entry: _Entry, way: str) -> None:
        if name in bound and _listed_again(names, name, entry) and _same(bound[name], entry):
            return  # an output the graph lists twice: each position holds its value
        if name in bound:
            raise TensorIOError(
                f"{path}: holds two values for {kind} {name!r}: {how[name]} and {way}; "
                "keep one"
            )
        bound[name], how[name] = entry.array, way

    for entry in entries:
        if entry.name in names:
            bind(entry.name, entry, entry.way(
                f"by name {entry.name!r}"
                + (f" at #{entry.index}" if entry.index is not None else "")
            ))
        elif kind == "input" and entry.name in graph.initializer_inputs:  # by name, not place
            raise TensorIOError(f"{path}: {graph.not_an_input(entry.name)}")
        elif entry.index is not None and entry.index < len(names):
            bind(names[entry.index], entry, entry.way(f"by position #{entry.index}"))
        elif entry.index is not None:
            raise TensorIOError(
                f"{path}: {entry.way(f'{kind} #{entry.index}')} has no graph {kind} to bind to "
                f"(the graph has {len(names)}: {list(names)})"
            )
        else:
            raise TensorIOError(f"{path}: {unbound(graph, entry.name)}")
    return bound


def unbound(graph: Graph, name: object) -> str:
    """Why a tensor of ``name`` in a file of inputs and outputs binds to nothing of the graph
    (a mapping's keys: ``unbound_keys``, which names the keys taken and given)."""
    why = graph.not_an_input(name) if isinstance(name, str) else ""
    return why or (
        f"{name!r} is neither a graph input nor a graph output (inputs: "
        f"{listed_names(list(graph.inputs))}; outputs: {listed_names(list(graph.outputs))})"
    )


def unbound_keys(graph: Graph, given: Sequence[str], stem: str | None = None) -> str:
    """Why keys of a mapping of inputs and outputs bind to nothing of the graph, saying which
    keys it takes (its tensor names) and which were given; and, where they look like a
    bundle's ``MODEL__in<k>`` / ``MODEL__out<k>`` keys, how to map them
    (``positional_keys_hint``): check(expected=dict(np.load("models/reference_io.npz")))
    named one key as no input nor output, with no word of the scheme. "" where all bind."""
    unknown = [key for key in given if key not in graph.inputs and key not in graph.outputs]
    if not unknown:
        return ""
    takes = (f"inputs {listed_names(list(graph.inputs))}; "
             f"outputs {listed_names(list(graph.outputs))}")
    if len(unknown) == len(given):
        said = f"holds none of the keys taken, the graph's tensor names ({takes})"
    else:
        what = ("is neither a graph input nor a graph output" if len(unknown) == 1
                else "are neither graph inputs nor graph outputs")
        said = (f"{', '.join(map(repr, unknown[:_LISTED]))}{_more(unknown)} {what} (the keys "
                f"taken are the graph's tensor names: {takes})")
    reasons = [why for key in unknown if isinstance(key, str) and (why := graph.not_an_input(key))]
    return (
        f"{said}; given: {listed_names(list(given))}" + "".join(f"; {why}" for why in reasons)
        + positional_keys_hint(graph, unknown, stem=stem)
    )


#: How many names a message lists before it counts the rest.
_LISTED = 12


def listed_names(names: Sequence[object]) -> str:
    """Names as a message lists them: the first ``_LISTED``, then how many more."""
    return f"[{', '.join(repr(name) for name in names[:_LISTED])}{_more(names)}]"


def _more(names: Sequence[object]) -> str:
    return f", ... ({len(names) - _LISTED} more)" if len(names) > _LISTED else ""


def positional_keys_hint(graph: Graph, keys: Sequence[object], *, outputs: bool = True,
                         stem: str | None = None) -> str:
    """What an error adds where ``keys`` a graph does not take look like a bundle's
    ``MODEL__in<k>`` / ``MODEL__out<k>`` keys (``models/reference_io.npz``, MANIFEST.md):
    that they give input / output k of model MODEL by position, which a mapping does not
    read, the mapping to make instead (for ``stem``, else the graph's file stem, where the
    keys hold that model's), and that the .npz's path reads them. "" where none look so."""
    keyed = [m for key in keys if isinstance(key, str) and (m := _STEM_KEY.match(key))]
    if not keyed:
        return ""
    stems = sorted({m["stem"] for m in keyed})
    own = stem if stem is not None else Path(graph.source).stem
    model = own if own in stems else stems[0] if len(stems) == 1 else "MODEL"
    pairs = [(name, f"{model}__in{k}") for k, name in enumerate(graph.inputs)]
    if outputs:
        pairs += [(name, f"{model}__out{k}") for k, name in enumerate(graph.outputs)]
    mapping = ", ".join(f"{name!r}: d[{key!r}]" for name, key in pairs)
    return (
        f"; keys MODEL__in<k> / MODEL__out<k> (models {stems}, as models/reference_io.npz "
        "holds them) name graph input / output k of model MODEL by position, which a mapping "
        f"of tensor names does not read: map them, as {{{mapping}}} with d = np.load(the "
        ".npz), or give the .npz's path, read for the model file named MODEL.onnx"
    )


def _listed_again(names: Sequence[str], name: str, entry: _Entry) -> bool:
    """Whether the entry sits at another position of a name the graph lists more than once
    (ONNX lets a graph list an output twice; ``write`` writes it at each position)."""
    return names.count(name) > 1 and entry.index is not None and (
        entry.index < len(names) and names[entry.index] == name
    )


def _same(value: np.ndarray, entry: _Entry) -> bool:
    other = entry.array
    if value.dtype != other.dtype or value.shape != other.shape:
        return False
    if value.dtype.hasobject:
        return bool(np.array_equal(value, other))
    return value.tobytes() == other.tobytes()


def _typed(name: str, array: np.ndarray, graph: Graph) -> np.ndarray:
    """ml_dtypes arrays come back from .npz as raw void bytes: view them as the graph's dtype;
    other arrays come in the machine's byte order (``native_order``)."""
    dtype = graph.tensor(name).dtype
    if (
        dtype is not None
        and array.dtype.kind == "V"
        and array.dtype.fields is None  # raw bytes; a record is no tensor
        and array.dtype.itemsize == dtype.itemsize
        and not dtype.hasobject  # bytes are no STRING's references (NumPy raised TypeError)
    ):
        return array.view(dtype)
    return same_values(name, array, dtype)


def same_values(name: str, array: np.ndarray, dtype: np.dtype | None) -> np.ndarray:
    """``array`` as ``dtype`` where it holds the same values in another form: NumPy's
    strings (str or UTF-8 bytes) as STRING's str objects, another byte order in the
    machine's; otherwise as it is, for the caller to judge."""
    if dtype == np.dtype(object) and array.dtype.kind == "U":  # STRING, stored as NumPy's
        return array.astype(object)
    if dtype == np.dtype(object) and array.dtype.kind == "S":  # bytes: ONNX strings are UTF-8
        try:
            return np.vectorize(lambda b: b.decode("utf-8"), otypes=[object])(array)
        except UnicodeDecodeError as exc:
            raise TensorIOError(f"tensor {name!r}: a string is not UTF-8: {exc}") from None
    return native_order(array)


#: Python's own data, which has no dtype: NumPy's reading of it (float64, int64) is not the
#: caller's choice. (NumPy's scalars subclass some of these, and carry a dtype.)
PYTHON_DATA = (list, tuple, bool, int, float)


def feed_array(
    name: str, value: Any, dtype: np.dtype | None, where: str, error: type[DmlgraphError]
) -> np.ndarray:
    """A value fed to an input of ``dtype`` as an array: ``same_values``, and Python data
    (lists, numbers) in the input's type where that type holds every value, as onnxruntime
    reads a list as its input's type: an integer exactly, a float rounded to nearest as NumPy
    and onnxruntime round it (0.1 into float32), a finite one still finite. Where the type
    cannot hold a value (1.5 or 2**40 into int32, 1e6 into float16), ``error`` says so:
    onnxruntime truncates the first and makes the last inf, silently. An array of another
    dtype is returned as it is: the caller refuses it, naming both dtypes."""
    array = value if type(value) is np.ndarray else as_array(value, where, error)
    if dtype is None or array.dtype == dtype:
        return array
    try:
        array = same_values(name, array, dtype)
    except TensorIOError as exc:  # it names the tensor alone, as a file's: here ``where``
        raise error(f"{where}: {str(exc).removeprefix(f'tensor {name!r}: ')}") from None
    if array.dtype == dtype or not isinstance(value, PYTHON_DATA) or isinstance(
        value, np.generic
    ):
        return array
    typed = _python_data_as(value, array, dtype)
    if isinstance(typed, str):
        raise error(
            f"{where} is Python data (NumPy reads it as {array.dtype}) holding {typed}: the "
            f"graph expects {dtype}; give an array of {dtype}"
        )
    return typed


def _python_data_as(value: Any, array: np.ndarray, dtype: np.dtype) -> np.ndarray | str:
    """``array`` (NumPy's reading of Python data ``value``) in ``dtype``, or what it holds
    that ``dtype`` cannot."""
    integer, floating = dtype.kind in "iu", is_float(dtype)
    lost = array.dtype.kind == "O" or array.dtype.kind == "f" and integer and bool(
        np.any(np.abs(array) >= _EXACT_FLOATS))
    if lost and (integer or floating):  # NumPy's reading lost the values: Python's own
        return _exact_python_data_as(value, dtype, integer)
    if dtype.kind == "b" and array.dtype.kind in "iuf":  # 0 and 1, as onnxruntime reads them
        typed = array.astype(dtype)  # (it reads 2 as True too: refused, as 1.5 for an int)
        return typed if np.array_equal(typed, array) else "values other than 0 and 1"
    if array.dtype.kind not in "biuf" or not (integer or floating):
        return f"values that are not {dtype}'s"
    with np.errstate(over="ignore", invalid="ignore"):
        typed = array.astype(dtype)
        if integer and not np.array_equal(typed, array):
            return f"a value {dtype} cannot hold (a fraction, or beyond its range)"
        if floating and not np.array_equal(np.isfinite(typed), np.isfinite(array)):
            return f"a finite value beyond {dtype}'s range"
    return typed


#: Integers past this are not all floats: NumPy reads a list mixing integers past int64 with
#: others as float64, so [2**63 + 1, 0] fed a uint64 input ran as 2**63, silently (and
#: [2**64 - 1, 0] was refused as beyond uint64), where onnxruntime reads the list exactly.
_EXACT_FLOATS = 2.0**53


def _exact_python_data_as(value: Any, dtype: np.dtype, integer: bool) -> np.ndarray | str:
    """Python data in ``dtype`` from its own numbers (an integer exactly, a float rounded to
    nearest), where NumPy's reading of it (float64, or objects past uint64) lost them."""
    numbers = np.array(value, dtype=object)
    if not all(type(v) in (bool, int, float) for v in numbers.flat):
        return f"values that are not {dtype}'s"
    held = (f"a value {dtype} cannot hold (a fraction, or beyond its range)" if integer
            else f"a finite value beyond {dtype}'s range")
    try:
        with np.errstate(over="ignore", invalid="ignore"):
            typed = np.array(value, dtype=dtype)
    except (OverflowError, ValueError):  # NumPy refuses an integer out of range, or a NaN
        return held
    pairs = zip(typed.flat, numbers.flat)
    if integer and any(int(t) != v for t, v in pairs):
        return held
    if not integer and any(
        not np.isfinite(t) and not (type(v) is float and not math.isfinite(v)) for t, v in pairs
    ):
        return held
    return typed


def native_order(array: np.ndarray) -> np.ndarray:
    """The array in the machine's byte order (the same values; ONNX tensors are little-endian,
    and a file may hold big-endian ones)."""
    return array if array.dtype.isnative else array.astype(array.dtype.newbyteorder("="))


# ----------------------------------------------------------------------------- writing


def check_writable(path: str | Path, graph: Graph) -> None:
    """Refuse a test-data folder ``write`` could not make whole: a file where the folder
    goes, or test-data files it would not replace (another model's, which would be read
    with the new ones). Nothing to check for an .npz."""
    if files.names_folder(path) and is_npz(Path(path)):  # Path drops the slash
        raise TensorIOError(
            f"{path}: ends with a slash, so it names a folder, but an .npz name is written as "
            "a file: drop the slash, or name the test-data folder without .npz"
        )
    path = Path(path)
    if is_npz(path):
        return
    if path.exists() and not path.is_dir():
        raise TensorIOError(f"{path}: exists and is not a folder; use a .npz name or a folder")
    written = {f"input_{k}.pb" for k in range(len(graph.inputs))}
    written |= {f"output_{k}.pb" for k in range(len(graph.outputs))}
    try:
        children = list(path.iterdir()) if path.is_dir() else []
    except OSError as exc:
        raise TensorIOError(f"{path}: cannot list the folder: {exc.strerror or exc}") from None
    odd = sorted(c.name for c in children if c.name in written and not c.is_file())
    if odd:  # found only after other files were replaced, it left the folder half new
        raise TensorIOError(f"{path}: {', '.join(odd)} is not a file; it cannot be replaced")
    linked = sorted(c.name for c in children if c.name in written and c.is_symlink())
    if linked:  # written through, a file outside the folder was replaced by tensor bytes
        raise TensorIOError(
            f"{path}: {', '.join(linked)} is a symbolic link; dmlgraph writes test data into "
            "the folder's own files, never through a link to a file elsewhere: remove it, or "
            "write to a new or empty folder"
        )
    stale = sorted(c.name for c in children if _POSITIONAL.match(c.name) and c.name not in written)
    if stale:
        raise TensorIOError(
            f"{path}: holds test data this model does not write ({', '.join(stale)}), which "
            "would be read with its own; write to a new or empty folder"
        )


def write(
    path: str | Path,
    graph: Graph,
    inputs: Mapping[str, np.ndarray],
    outputs: Mapping[str, np.ndarray],
) -> None:
    """Save inputs and outputs: a ``.npz`` keyed by name, else a test-data folder (created)."""
    _check_arguments("write", path, graph)
    for kind, names, given in (("inputs", graph.inputs, inputs), ("outputs", graph.outputs, outputs)):
        if not isinstance(given, Mapping):
            raise TensorIOError(f"write: {kind} map tensor names to arrays, not a "
                                f"{type(given).__name__}")
        missing = [name for name in names if name not in given]
        if missing:
            raise TensorIOError(f"{path}: no {kind[:-1]} array for {missing} to write")
    check_writable(path, graph)
    path = Path(path)
    if is_npz(path):
        arrays = {**{n: inputs[n] for n in graph.inputs}, **{n: outputs[n] for n in graph.outputs}}
        try:
            save_npz(path, arrays)
        except OSError as exc:
            raise TensorIOError(f"{path}: cannot write: {exc.strerror or exc}") from None
        return
    created = not path.exists()
    try:
        path.mkdir(exist_ok=True)  # its parent must exist: a typo makes no tree of folders
        with contextlib.ExitStack() as stack:  # every file written before any replaces its own
            for kind, names, values in (
                ("input", graph.inputs, inputs),
                ("output", graph.outputs, outputs),
            ):
                for index, name in enumerate(names):
                    proto = numpy_helper.from_array(np.asarray(values[name]), name)
                    temporary = stack.enter_context(files.replacing(path / f"{kind}_{index}.pb"))
                    temporary.write_bytes(proto.SerializeToString())
    except OSError as exc:
        if created:
            shutil.rmtree(path, ignore_errors=True)
        raise TensorIOError(f"{path}: cannot write: {exc.strerror or exc}") from None


# ----------------------------------------------------------------------------- generating


def generate(
    graph: Graph, seed: int = 0, shapes: Mapping[str, Sequence[int]] | None = None
) -> dict[str, np.ndarray]:
    """Random inputs for every graph input (``VALUE_RANGES``), reproducible from ``seed``.

    Every dimension must be known: from the graph, or from ``shapes``. An input that feeds a
    Slice/Pad parameter directly is refused: random indices say nothing; give its value.
    """
    _require_graph("generate", graph)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise TensorIOError(f"seed {seed!r}: a seed is an integer >= 0 (NumPy's seeds)")
    rng = np.random.default_rng(seed)
    feeds: dict[str, np.ndarray] = {}
    for name in graph.inputs:
        for node, port in graph.consumers(name):
            fields = {p: f for f, p in PARAMETER_PORTS.get(node.op_type, {}).items()}
            if node.is_onnx and port in fields:
                raise TensorIOError(
                    f"{graph.source}: input {name!r} is parameter {fields[port]!r} of "
                    f"{node.label}; random values would be meaningless: give it with --inputs{_IN_PYTHON['inputs']}"
                )
        info = graph.tensor(name)
        shape = (
            _given_shape(graph, info, shapes[name]) if shapes and name in shapes
            else info.static_shape
        )
        if shape is None or info.dtype is None:
            raise TensorIOError(
                f"{graph.source}: input {name!r} is {info.dtype}"
                f"{list(info.shape) if info.shape is not None else ' of unknown rank'}; give "
                "its shape with "
                f"--input-shape {name}:D0,D1,..{_IN_PYTHON['input_shapes']} or its value with "
                f"--inputs{_IN_PYTHON['inputs']}"
            )
        if numpy_rank_problem(name, shape):
            raise TensorIOError(f"{graph.source}: input {numpy_rank_problem(name, shape)}")
        try:
            # drawn as float64 or int64 first: past the memory the machine has, Linux would
            # kill the process at first touch rather than raise MemoryError
            if math.prod(shape) * (8 + np.dtype(info.dtype).itemsize) > available_memory():
                raise MemoryError
            feeds[name] = random_array(rng, info.dtype, shape)
        except TensorIOError as exc:  # a type with no random values (strings)
            raise TensorIOError(
                f"{graph.source}: input {name!r}: {exc}; give its value with --inputs"
                f"{_IN_PYTHON['inputs']}"
            ) from None
        except MemoryError:
            raise TensorIOError(
                f"{graph.source}: input {name!r} is {info.dtype}{list(shape)}, "
                f"{math.prod(shape) * np.dtype(info.dtype).itemsize} bytes: too large to "
                f"generate here; give smaller shapes with --input-shape"
                f"{_IN_PYTHON['input_shapes']} or values with --inputs{_IN_PYTHON['inputs']}"
            ) from None
    return feeds


#: How the messages above name ``check``'s and ``generate``'s Python arguments beside the
#: command line's options: ``check(graph)`` said "give its shape with --input-shape".
_IN_PYTHON = {"inputs": " (inputs= in Python)", "input_shapes": " (input_shapes= in Python)"}


def _given_shape(graph: Graph, info: TensorInfo, given: object) -> tuple[int, ...]:
    """A shape given for an input: sizes from 0, of the input's rank, agreeing with the sizes
    it fixes (a [7] for a [1, 1, 2, 2] input was generated, and refused only by the run)."""
    sizes = tuple(given) if isinstance(given, Sequence) and not isinstance(given, str) else None
    declared = info.shape
    if (
        sizes is None
        or not all(is_integer(d) and d >= 0 for d in sizes)
        or (declared is not None and (
            len(sizes) != len(declared)
            or any(type(d) is int and d != s for d, s in zip(declared, sizes))
        ))
    ):
        raise TensorIOError(
            f"{graph.source}: shape {given!r} for input {info.name!r}: give sizes from 0 for "
            f"its dimensions {dims_text(declared)}"
        )
    return tuple(int(d) for d in sizes)


def _check_arguments(what: str, path: object, graph: object) -> None:
    if not isinstance(path, (str, os.PathLike)):
        raise TensorIOError(f"{what} takes a path, not {type(path).__name__}")
    _require_graph(what, graph)


def _require_graph(what: str, graph: object) -> None:
    if not isinstance(graph, Graph):
        raise TensorIOError(
            f"{what} takes a Graph (dmlgraph.load(model)), not {type(graph).__name__}"
        )


def _numpy_max_rank() -> int:
    """The most dimensions a NumPy array has here: 64 from NumPy 2, 32 before."""
    try:
        np.empty((0,) * 64)
    except ValueError:
        return 32
    return 64


#: The most dimensions a NumPy array, which holds every tensor dmlgraph reads, makes or
#: hands back, may have; ONNX sets no bound on rank.
NUMPY_MAX_RANK = _numpy_max_rank()


def numpy_rank_problem(name: str, shape: Sequence[object] | None, spare: int = 0) -> str:
    """Why tensor ``name`` of ``shape`` cannot be a NumPy array with ``spare`` dimensions to
    spare ("" where it can): NumPy's own ValueError escaped as a traceback from input
    generation and the NumPy backend (which views an element's bytes as one more axis)."""
    most = NUMPY_MAX_RANK - spare
    if shape is None or len(shape) <= most:
        return ""
    beside = f", less the {spare} this needs beside them" if spare else ""
    return (f"tensor {name!r} has rank {len(shape)}, more than {most}: NumPy arrays, which "
            f"hold the tensors here, have at most {NUMPY_MAX_RANK} dimensions{beside}")


#: Allocations of fewer bytes are not weighed against ``available_memory``: no machine
#: running this lacks them, and reading /proc/meminfo for each of 5,000 small resources and
#: dispatches took a quarter of ``dmlgraph dxdispatch``'s time.
UNWEIGHED_BYTES = 1 << 16


def available_memory() -> float:
    """Bytes this machine can still give (Linux's MemAvailable); infinite where unknown."""
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return float(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):  # not Linux, or a line it cannot parse
        return math.inf
    return math.inf  # a kernel older than MemAvailable


def random_array(rng: np.random.Generator, dtype: np.dtype, shape: Sequence[int]) -> np.ndarray:
    """Values of ``VALUE_RANGES`` for the dtype's kind, within what the dtype holds: ml_dtypes'
    types are NumPy kind "V", its int4/uint4/int2/uint2 integers (drawn as floats in [-1, 1)
    they truncated to 0: every generated value was 0, and a parity check of them tested
    nothing) and float8_e8m0fnu a float with no sign (a negative draw was NaN)."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    kind = dtype.kind
    if kind == "V" and dtype in DTYPE_TO_ELEM_TYPE:  # ml_dtypes
        kind = "f" if is_float(dtype) else "i" if ml_dtypes.iinfo(dtype).min < 0 else "u"
    if kind not in VALUE_RANGES:
        # by its ONNX name: "dtype object" is NumPy's word for a STRING tensor, not the model's
        named = "STRING" if dtype == np.dtype(object) else f"dtype {dtype}"
        raise TensorIOError(f"cannot generate values of {named}")
    low, high = VALUE_RANGES[kind]
    if kind == "f":
        low = max(low, float(ml_dtypes.finfo(dtype).min))
        return rng.uniform(low, high, size=shape).astype(dtype)
    held = ml_dtypes.iinfo(dtype)
    return rng.integers(max(int(low), int(held.min)), min(int(high), int(held.max) + 1),
                        size=shape).astype(dtype)


def is_npz(path: Path) -> bool:
    """An .npz name, in any case (``-o OUT.NPZ`` made a folder)."""
    return path.suffix.lower() == ".npz"


def npz_name(path: str | os.PathLike[str]) -> Path:
    """The file ``save_npz`` writes for ``path``: ``.npz`` added where it lacks it, as NumPy
    adds it."""
    target = Path(path)
    return target if is_npz(target) else target.with_name(target.name + ".npz")


#: A lone surrogate: a JSON escape ("\ud800") reads as one, and UTF-8 cannot encode it.
_SURROGATE = re.compile("[\ud800-\udfff]")


def save_npz(path: str | os.PathLike[str], arrays: Mapping[str, np.ndarray]) -> Path:
    """``np.savez`` by name, for any names (``np.savez(path, **arrays)`` takes a tensor named
    ``file`` or ``allow_pickle`` for its own argument), ``.npz`` added to a path without it,
    as it does. STRING tensors (object arrays) are written as NumPy strings, not pickles, so
    ``read`` (which loads no pickles) reads them back. Returns the path written."""
    target = npz_name(path)
    try:
        stored = {name: _storable(name, np.asanyarray(array)) for name, array in arrays.items()}
    except TensorIOError as exc:
        raise TensorIOError(f"{target}: {exc}") from None
    for name in stored:
        if not name.isprintable() and _SURROGATE.search(name):  # "\ud800" of a JSON file
            raise TensorIOError(  # zipfile failed encoding it: a traceback, or half a file
                f"{target}: tensor {shown(name)} has a name holding a lone surrogate, which no "
                "UTF-8 text (a zip member's name) holds; rename it, or (dmlgraph run -o) write "
                "a test-data folder"
            )
        if "\0" in name:  # zipfile ends a member's name at a NUL: "x\0y" was saved as "x"
            raise TensorIOError(
                f"{target}: tensor {shown(name)} has a NUL in its name, where a zip member's "
                f"name ends: it would read back as {shown(name.split(chr(0))[0])}; rename it, "
                "or (dmlgraph run -o) write a test-data folder"
            )
        # a zip member's name is at most 65535 bytes (zipfile: struct.error)
        if len(f"{name}.npy".encode("utf-8", "surrogatepass")) > 0xFFFF:
            raise TensorIOError(
                f"{target}: tensor {name[:40]!r}... has a name of {len(name)} characters; an "
                ".npz names a member in at most 65535 bytes: write a test-data folder instead"
            )
    with files.replacing(target) as temporary, zipfile.ZipFile(
        temporary, "w", zipfile.ZIP_STORED, allowZip64=True
    ) as archive:
        for name, array in stored.items():
            with archive.open(f"{name}.npy", "w", force_zip64=True) as member:
                np.lib.format.write_array(member, array)
    return target


def _storable(name: str, array: np.ndarray) -> np.ndarray:
    if array.dtype.type.__module__ == "ml_dtypes":  # as raw bytes, which ``_typed`` views back:
        return array.view(f"V{array.dtype.itemsize}")  # np.load refuses float8_e5m2's "<f1"
    if array.dtype != object:
        return array
    for kind in (str, bytes):
        if all(isinstance(v, kind) for v in array.flat):
            # a NumPy string array drops trailing NULs: "a\0" would read back as "a"
            nul = "\0" if kind is str else b"\0"
            ending = next((v for v in array.flat if v.endswith(nul)), None)
            if ending is not None:
                raise TensorIOError(
                    f"tensor {name!r}: the string {ending!r} ends with a NUL, which an .npz "
                    "(a NumPy string array) drops; write a test-data folder instead"
                )
            return array.astype(kind)
    raise TensorIOError(f"tensor {name!r}: an object array of strings or bytes alone is stored")
