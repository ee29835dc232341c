"""What a file the user gave holds, when it is not what the command reads: an error can then
say so (a DxDispatch JSON given to ``lower``, an ONNX model given to ``dxdispatch``, an .npz
given as a model) rather than call it corrupt."""

from __future__ import annotations

#: Each kind, and the command or option that takes it.
_ONNX_HINT = "an ONNX model (make a DxDispatch model of it with `dmlgraph lower MODEL --format " \
    "dxdispatch -o MODEL.json`)"
_JSON_HINT = "a JSON file (a DxDispatch model runs with `dmlgraph dxdispatch MODEL.json`)"
_ZIP_HINT = "a zip archive (an .npz of tensors goes to --inputs or --expected)"


def described(data: bytes) -> str:
    """What ``data`` looks like, as a phrase ("a JSON file (...)"), or "" when unknown."""
    if data.startswith(b"PK\x03\x04"):
        return _ZIP_HINT
    head = data[:4096].lstrip()
    if head.startswith((b"{", b"//", b"/*")):
        return _JSON_HINT
    if _is_onnx(data):
        return _ONNX_HINT
    try:
        head.decode("utf-8")
    except UnicodeDecodeError:
        return ""
    return "a text file" if head else "an empty file"


def _is_onnx(data: bytes) -> bool:
    import onnx

    proto = onnx.ModelProto()
    try:
        proto.ParseFromString(data)
    except Exception:  # not a protobuf at all
        return False
    return proto.HasField("graph") and proto.ir_version > 0
