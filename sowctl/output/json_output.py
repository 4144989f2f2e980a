"""``json.dumps(value, indent=2, ensure_ascii=False)``, faster for lists of flat records.

With ``indent`` the standard library encodes in pure Python, value by value: for
``items list --json`` of 1,000 items that was about a tenth of the command's run
time. A list of records whose values are all scalars (what every list command
prints) is written here with the C string encoder instead; anything else goes to
``json.dumps``. The text is identical either way (tests/output/test_json_text.py).
"""

from __future__ import annotations

import json
from json.encoder import encode_basestring  # the C implementation when available
from typing import Any

_LITERALS = {True: "true", False: "false", None: "null"}


def dumps_indented(value: Any) -> str:
    """``value`` as JSON indented by two spaces, non-ASCII characters kept."""
    if not isinstance(value, list) or not value:
        return _dumps(value)
    return "[\n" + ",\n".join(_record(item) for item in value) + "\n]"


def _dumps(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


def _record(item: Any) -> str:
    """One element of a top-level list, indented as json.dumps indents it."""
    if isinstance(item, dict) and item:
        lines = []
        for key, field in item.items():
            scalar = _scalar(field)
            if scalar is None or not isinstance(key, str):
                break
            lines.append(f"    {encode_basestring(key)}: {scalar}")
        else:
            return "  {\n" + ",\n".join(lines) + "\n  }"
    # Raw newlines in json.dumps' output are all structure (a newline in a string is \\n).
    return "  " + _dumps(item).replace("\n", "\n  ")


def _scalar(value: Any) -> str | None:
    """The JSON text of a string, integer, boolean or null; None for anything else."""
    kind = type(value)
    if kind is str:
        return encode_basestring(value)
    if kind is int:
        return int.__repr__(value)
    if value is None or kind is bool:
        return _LITERALS[value]
    return None  # floats (NaN, Infinity), subclasses, containers: json.dumps decides
