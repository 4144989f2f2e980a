"""Every value printed is made safe here, and only here.

A title or id comes from whoever wrote the record. Printed raw, a newline forges a
line (a fake ``::error::`` in a CI log, a fake row for ``cut``), an escape sequence
clears or retitles the reader's terminal, a bidirectional override reorders what the
reader sees. So: whitespace controls become a space (one record stays one line),
every other control or invisible direction character is shown escaped (``\\x1b``),
and text meant for Rich is handed over as ``Text``, never parsed as markup.
"""

from __future__ import annotations

import re

# C0 and C1 controls, DEL, line/paragraph separators, bidi embeddings/overrides/isolates
# and marks, the byte-order mark: each can move the cursor, end a line or reorder text.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff]")
_SPACES = frozenset("\t\n\r\v\f\x1c\x1d\x1e\x1f\x85\u2028\u2029")


def _replacement(match: re.Match[str]) -> str:
    char = match.group()
    if char in _SPACES:
        return " "
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def clean(text: str) -> str:
    """``text`` as one line that prints as what it is: no control takes effect."""
    if text.isprintable():  # the common case: nothing to replace (and fast)
        return text
    return _UNSAFE.sub(_replacement, text)


def clean_text(text: str) -> str:
    """``text`` for a format that carries line breaks (a SARIF or GitLab message): each
    line made safe by ``clean``, the line feeds kept (JSON escapes them)."""
    if text.isprintable():
        return text
    return "\n".join(clean(line) for line in text.split("\n"))


# In JSON text these can only stand inside strings; \\u escapes keep the value identical.
_JSON_UNSAFE = re.compile("[\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff]")


def clean_json(text: str) -> str:
    """JSON text with the characters ``json.dumps(ensure_ascii=False)`` leaves raw escaped.

    ``json.dumps`` already escapes C0 controls; DEL, C1 controls and the direction
    characters it does not. The parsed value is unchanged.
    """
    if text.isascii() and "\x7f" not in text:
        return text
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
