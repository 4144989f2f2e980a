"""What a printed cell is: a column's declaration, its kind, and its value as safe text.

Shared by ``sowctl.output.render`` (which decides the format) and ``sowctl.output.table``
(which draws tables and records), so neither imports the other.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sowctl.output.safe import clean, clean_json

Getter = str | Callable[[dict], Any]

# Column kinds. Every kind but TEXT is printed whole: never wrapped, never cut.
ID, ENUM, DATE, TIME, MONEY, NUMBER, FLAG, TEXT = (
    "id",
    "enum",
    "date",
    "datetime",
    "money",
    "number",
    "flag",
    "text",
)


@dataclass(frozen=True)
class Column:
    header: str
    value: Getter
    justify: str = "left"  # "right" for money and counts
    style: Callable[[dict], str | None] | None = None  # Rich style per row, e.g. red variance
    kind: str | Callable[[dict], str] = ID  # per column, or per row (an id, or an external party's name)
    priority: int = 1  # 1: essential; higher numbers are left out first when the terminal is narrow
    # The priority when every cell is text, so the column would only show shortened names:
    # such a column gives way before short values that show whole (a dependency's RISK).
    text_priority: int | None = None
    default: bool = True  # False: shown only when named in --columns

    def get(self, row: dict) -> Any:
        return self.value(row) if callable(self.value) else row.get(self.value)

    def kind_of(self, row: dict) -> str:
        return self.kind(row) if callable(self.kind) else self.kind


def text(value: Any) -> str:
    """A value as one safe line of plain text: empty for null, JSON for nested values."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        import json

        return clean_json(json.dumps(value, ensure_ascii=False, separators=(",", ":")))
    return clean(str(value))


def shown(value: Any, kind: str = ID) -> str:
    """A cell for a person: ``text`` with timestamps in the local zone."""
    if kind == TIME and isinstance(value, str):
        from sowctl.output.shaping import readable_time

        return readable_time(value)
    return text(value)


def styled(*parts: str | tuple[str, str]) -> Any:
    """A Rich ``Text`` of safe parts: plain strings, or (text, style) pairs; no markup is read."""
    from rich.text import Text

    result = Text()
    for part in parts:
        content, style = (part, "") if isinstance(part, str) else part
        result.append(clean(content), style=style)
    return result
