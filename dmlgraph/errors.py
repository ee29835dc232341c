"""The one error hierarchy: every failure a user can cause is a DmlgraphError subclass.

The command line turns any DmlgraphError into one line on stderr and exit code 2, so every
message must stand alone: it names the file or node, the field, the value and the rule.
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np


def counted(count: int, noun: str) -> str:
    """``count`` and ``noun``, plural unless it is one: "1 element", "3 elements" (a message
    said "a flat buffer of 1 elements")."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


#: The most characters of one value a message shows: a JSON value misplaced whole (a desc
#: under "type", 200000 offsets under a command's "type") made a one-line error of 1.5 MB.
SHOWN_CHARS = 200


def cut(text: str, limit: int = SHOWN_CHARS) -> str:
    """``text`` as a message shows it: its first ``limit`` characters and how many it has."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text)} characters)"


def shown(value: object) -> str:
    """``repr(value)`` as a message shows it (``cut``)."""
    try:
        return cut(repr(value))
    except (ValueError, RecursionError):
        return unshowable(value)


def unshowable(value: object) -> str:
    """What a message says of a value Python cannot write out: an integer past
    ``sys.get_int_max_str_digits`` (a Python caller's 10**5000 for a desc's Sizes or a
    resource's sizeInBytes raised ValueError, a traceback), or one held in a container."""
    if isinstance(value, int):
        digits = int(max(value.bit_length() - 1, 0) * math.log10(2)) + 1
        return f"an integer of {digits} digits or more"
    return f"a {type(value).__name__} too large to show"


def shown_json(value: object) -> str:
    """A value read from a JSON document as JSON spells it (``null``, ``true``, ``"x"``,
    ``{"a": 1}``), cut as ``shown``: a DxDispatch model's author wrote no ``None``. What a
    terminal would act on or hide (ESC, U+202E, a lone surrogate) stays escaped, as ``repr``
    escapes it. A value JSON cannot hold (a Python caller's) is shown by its repr."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        return shown(value)
    return cut("".join(c if c.isprintable() else json.dumps(c)[1:-1] for c in text))


class DmlgraphError(Exception):
    """Base class of every error dmlgraph raises on bad input or unsupported models."""


class ModelLoadError(DmlgraphError):
    """The model file or bytes cannot be read as a valid ONNX model."""


class ModelValidationError(DmlgraphError):
    """The model is readable but a node or graph breaks an ONNX rule dmlgraph relies on."""


class NodeRuleError(ModelValidationError):
    """A Slice, Concat or Pad breaks its op's rule by the sizes and values it is given
    (``canonical``), or a Loop's or Scan's body declares an input of another type than it is
    fed: where a control-flow body is imported by the sizes that arrive, this one is the
    run's error, where another import error only sends the body to the fallback."""

    #: The outputs of the node whose rule it is, where ``canonical.check`` knows it (None:
    #: not known): whether a divergent tensor reaches it decides whether the divergence is
    #: named with the error (``backends.numpy.control.SubgraphRuleError``). Its outputs, not
    #: its name: names may be empty or shared, and an unnamed Concat failing apart from a
    #: Squeeze's result got the hint to run what fails there too.
    outputs: tuple[str, ...] | None = None


class UnsupportedError(DmlgraphError):
    """The model uses something dmlgraph does not know (an op version, a domain, a type)."""


class DmlValidationError(DmlgraphError):
    """A DirectML descriptor breaks a rule of the DirectML spec at a feature level.

    Carries the operator, field, value and rule separately so callers (lowering, CLI, reports)
    can add the ONNX node name without re-parsing the message.
    """

    def __init__(
        self,
        operator: str,
        field: str,
        value: object,
        rule: str,
        min_level: str | None = None,
        *,
        as_json: bool = False,
    ) -> None:
        """``as_json``: ``value`` came from a JSON document and is shown as JSON spells it."""
        self.operator = operator
        self.field = field
        self.value = value
        self.rule = rule
        self.min_level = min_level
        message = f"{operator}: {field} = {(shown_json if as_json else shown)(value)}: {rule}"
        if min_level is not None:
            message += f" (accepted from {min_level})"
        super().__init__(message)


class EnumValueError(DmlgraphError, ValueError):
    """A name or number that is no member of a DirectML enum (a feature level, a data type,
    a padding mode...). A ValueError too, as ``enum`` callers expect."""


class GraphInvariantError(DmlgraphError):
    """The IR breaks one of its own invariants (a bug in a pass or in code that built the IR).

    Distinct from ModelValidationError so a pass manager can tell "the model is bad" from
    "a pass broke the graph".
    """


def as_array(value: Any, where: str, error: type[DmlgraphError]) -> np.ndarray:
    """A value the user gave as an array, or ``error`` saying where it cannot be one (a
    ragged list, an object NumPy cannot read) instead of NumPy's own exception, or where it
    hides elements behind a mask (NumPy reads the data under it, as a bound output's is
    refused: ``backends.base.masked_out``)."""
    mask = np.ma.getmask(value) if isinstance(value, np.ma.MaskedArray) else np.ma.nomask
    if mask is not np.ma.nomask and mask.any():  # NumPy reads through it: the hidden data
        raise error(
            f"{where} is a masked array whose mask hides {int(np.count_nonzero(mask))} of its "
            "elements; a tensor has no mask, and its hidden data would be read (give "
            ".filled(value), or .data to mean it)"
        )
    try:
        return np.asarray(value)
    except (TypeError, ValueError) as exc:
        raise error(f"{where} cannot be read as an array: {exc}") from None
