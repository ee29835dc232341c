"""Text from a model (names, notes) as a terminal or a drawing can show it.

A model is anyone's file: its names may hold an escape sequence (ESC [31m recolours a
terminal, others retitle the window), newlines that break a table's rows, bidirectional
controls that show text in another order than it has (U+202E turns the rest of a line
around), lone surrogates (Python's decoding of an undecodable byte of a file name) or
characters XML cannot hold.
Every place dmlgraph shows such text, it shows these characters by their codes.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

import numpy as np

from dmlgraph.dtypes import is_float

#: Characters shown by their code: control characters (C0, DEL, C1: XML allows no C0 one but
#: tab and newlines in any form, HTML parses each as an error, Graphviz drops tabs and
#: newlines and fails on a label left empty, and a terminal obeys them), Unicode's
#: bidirectional controls (the marks ALM, LRM, RLM; the embeddings, overrides and isolates
#: U+202A-U+202E, U+2066-U+2069: a terminal or a browser reorders text around them), lone
#: surrogates (no UTF-8 holds them) and U+FFFE and U+FFFF (XML allows neither).
CONTROL = re.compile(
    "[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff"
    "\ufffe\uffff]"
)


def code(char: str) -> str:
    """``xNN`` (for a surrogate, the byte it stands for, as Python decodes file names), or
    ``uNNNN``."""
    value = ord(char)
    if 0xDC80 <= value <= 0xDCFF:
        value -= 0xDC00
    return f"x{value:02x}" if value <= 0xFF else f"u{value:04x}"


def visible(text: str) -> str:
    """``text`` with each ``CONTROL`` character written as ``\\xNN`` or ``\\uNNNN``."""
    return CONTROL.sub(lambda m: "\\" + code(m.group()), text)


#: The most characters of one text (a name) a table or a drawing shows: a longer one is shown
#: by its two ends and its length. Graphviz refuses a quoted or HTML-like string over 16384
#: bytes, and a label holds several texts; a terminal table folded a 5,000-character name
#: into 51 rows. JSON output keeps every name whole.
TEXT_LIMIT = 300

#: The most characters of one note shown: a note may quote a long name (its own limit, so
#: that it still says what it adds); the longest notes of the models here are about 250
#: characters.
NOTE_LIMIT = 2 * TEXT_LIMIT


def shown(text: str, limit: int = TEXT_LIMIT, whole: str = "") -> str:
    """``text``, or past ``limit`` characters its two ends and its length; ``whole`` names
    what the length counts where the text is more than the long name it quotes (a note)."""
    if len(text) <= limit:
        return text
    keep = (limit - 40) // 2
    return f"{text[:keep]}\u2026{text[-keep:]} ({whole}{len(text)} characters)"


def shown_note(text: str) -> str:
    """A note, shortened past ``NOTE_LIMIT`` as a name is past ``TEXT_LIMIT``."""
    return shown(text, NOTE_LIMIT, whole="a note of ")


def counted(items: Iterable[str]) -> str:
    """``SLICE x3, JOIN``: each item once, in first-seen order, with its count past one (how
    the lowering report and the "lowered when it ran" lines say a node's descriptors)."""
    return ", ".join(f"{item} x{n}" if n > 1 else item for item, n in Counter(items).items())


def values_text(data: np.ndarray) -> str:
    """Values as Python lists them, a NaN other than its dtype's own with its bits: the fill
    value -nan or a payload NaN is another descriptor's (lowering keeps them bit for bit),
    where "nan" alone said the same of both."""
    text = str(data.tolist())
    if not is_float(data.dtype) or not np.isnan(data).any():
        return text
    own = np.array(np.nan, data.dtype).tobytes()
    width = 2 * data.dtype.itemsize
    shown = [
        f"nan(0x{int.from_bytes(v.tobytes(), 'little'):0{width}x})"
        if np.isnan(v) and v.tobytes() != own else repr(v.item())
        for v in data.reshape(-1)
    ]
    return shown[0] if data.ndim == 0 else "[" + ", ".join(shown) + "]"
