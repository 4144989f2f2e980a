"""Output, decided once for every command (contract §3).

``--json``: exactly the API body. A TTY: Rich tables and trees. Piped: tab-separated
lines with no header, colour or truncation. ``-q``: ids only. Rich is imported only
when a human is looking, so scripted calls start fast.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

Getter = str | Callable[[dict], Any]


@dataclass(frozen=True)
class Column:
    header: str
    value: Getter
    justify: str = "left"  # "right" for money and counts
    style: Callable[[dict], str | None] | None = None  # Rich style per row, e.g. red variance

    def get(self, row: dict) -> Any:
        return self.value(row) if callable(self.value) else row.get(self.value)


def is_tty() -> bool:
    return sys.stdout.isatty()


def emit_json(data: Any) -> None:
    import json  # imported when used, like Rich: `sowctl --help` needs neither

    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def text(value: Any) -> str:
    """A cell as plain text: empty for null, JSON for nested values."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        import json

        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    # CR too: GitHub's runner (like most line readers) ends a line at a lone CR, so a title
    # holding "\r::error::..." would otherwise print a workflow command of its own.
    return str(value).replace("\t", " ").replace("\n", " ").replace("\r", " ")


def emit_rows(
    rows: Sequence[dict],
    columns: Sequence[Column],
    *,
    json_mode: bool = False,
    quiet: bool = False,
    body: Any = None,
    id_key: str = "id",
    title: str | None = None,
    footer: dict | None = None,
) -> None:
    """Show a list. ``body`` is the API body for --json when it is not ``rows`` itself."""
    if json_mode:
        emit_json(rows if body is None else body)
        return
    if quiet:
        for row in rows:
            sys.stdout.write(text(row.get(id_key)) + "\n")
        return
    if not is_tty():
        for row in rows:
            sys.stdout.write("\t".join(text(col.get(row)) for col in columns) + "\n")
        return
    from rich.table import Table

    table = Table(title=title, show_footer=footer is not None, header_style="bold")
    for col in columns:
        table.add_column(
            col.header,
            justify=col.justify,  # type: ignore[arg-type]
            footer=text(footer.get(col.header)) if footer else "",
            overflow="fold",
        )
    for row in rows:
        cells = []
        for col in columns:
            style = col.style(row) if col.style else None
            cell = text(col.get(row))
            cells.append(f"[{style}]{_escape(cell)}[/]" if style else _escape(cell))
        table.add_row(*cells)
    console().print(table)
    if not rows:
        console().print("[dim]no results[/]")


def emit_object(data: dict, *, json_mode: bool = False, fields: Sequence[str] | None = None) -> None:
    """Show one resource: key/value pairs (a table on a TTY)."""
    if json_mode:
        emit_json(data)
        return
    keys = list(fields) if fields else list(data)
    if not is_tty():
        for key in keys:
            sys.stdout.write(f"{key}\t{text(data.get(key))}\n")
        return
    from rich.table import Table

    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold cyan")
    table.add_column(overflow="fold")
    for key in keys:
        table.add_row(key, _escape(text(data.get(key))))
    console().print(table)


def emit_message(message: str, *, json_mode: bool = False, body: Any = None) -> None:
    if json_mode:
        emit_json(body if body is not None else {"message": message})
    else:
        sys.stdout.write(message + "\n")


def console():
    from rich.console import Console

    global _console
    if _console is None:
        _console = Console(soft_wrap=False)
    return _console


def error_console():
    from rich.console import Console

    return Console(stderr=True)


def _escape(value: str) -> str:
    from rich.markup import escape

    return escape(value)


_console = None
