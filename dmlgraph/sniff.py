"""What a file the user gave holds, when it is not what the command reads: an error can then
say so (a DxDispatch JSON given to ``lower``, an ONNX model given to ``dxdispatch``, an .npz
given as a model) rather than call it corrupt."""

from __future__ import annotations

import codecs
import re

#: Each kind, and the command or option that takes it.
_ONNX_HINT = "an ONNX model (make a DxDispatch model of it with `dmlgraph lower MODEL --format " \
    "dxdispatch -o MODEL.json`)"
_JSON_HINT = "a JSON file (a DxDispatch model runs with `dmlgraph dxdispatch MODEL.json`)"
_ZIP_HINT = "a zip archive (an .npz of tensors goes to --inputs or --expected)"
_LOWERED_HINT = "dmlgraph's lowered-graph JSON (`dmlgraph lower -o`), which no command reads " \
    "back (`dmlgraph lower MODEL --format dxdispatch -o OUT.json` writes a DxDispatch model, " \
    "which `dmlgraph dxdispatch` runs)"

#: How ``lower -o``'s JSON begins (``reporting.lowered_to_json`` puts the level first): the
#: JSON hint sent it to ``dxdispatch``, which refused its 'feature_level'.
_LOWERED_START = re.compile(rb'\{\s*"feature_level"\s*:\s*"DML_FEATURE_LEVEL_')


def described(data: bytes) -> str:
    """What ``data`` looks like, as a phrase ("a JSON file (...)"), or "" when unknown."""
    if data.startswith(b"PK\x03\x04"):
        return _ZIP_HINT
    head = data[:_SAMPLE].lstrip()
    if is_lowered_json(data):
        return _LOWERED_HINT
    if head.startswith((b"{", b"//", b"/*")):
        return _JSON_HINT
    if _is_onnx(data):
        return _ONNX_HINT
    if not head:
        return "an empty file"
    return "a text file" if _is_text(head, whole=len(data) <= _SAMPLE) else ""


def is_lowered_json(data: bytes) -> bool:
    """Whether ``data`` is the JSON ``dmlgraph lower -o`` writes."""
    return _LOWERED_START.match(data[:_SAMPLE].lstrip()) is not None


#: How much of a file is read to tell what it holds.
_SAMPLE = 4096

#: C0 control characters text does not hold (tab, newline, form feed and CR it does): a
#: protobuf's field tags and lengths are such bytes, and a truncated model's may decode as
#: UTF-8 (100 bytes of a model's header and doc string do).
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f]")


def _is_text(head: bytes, whole: bool) -> bool:
    """UTF-8 without control characters; a character the sample cuts short counts as text
    unless ``whole`` (the sample is the whole file)."""
    try:
        text = codecs.getincrementaldecoder("utf-8")().decode(head, final=whole)
    except UnicodeDecodeError:
        return False
    return not _CONTROL.search(text)


def _is_onnx(data: bytes) -> bool:
    import onnx

    proto = onnx.ModelProto()
    try:
        proto.ParseFromString(data)
    except Exception:  # not a protobuf at all
        return False
    return proto.HasField("graph") and proto.ir_version > 0
