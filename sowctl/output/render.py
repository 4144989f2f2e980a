"""Output, decided once for every command.

``--json``: exactly the API body (``--jq`` filters it). A TTY: tables, records and
trees drawn by Rich, fitted to the terminal. Piped: tab-separated lines with no
header, colour or truncation. ``-q``: ids only. Every value goes through
``sowctl.output.safe`` on its way out. Rich is imported only when a human is
looking, so scripted calls start fast.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from sowctl.output.cells import (
    ID,
    TEXT,
    TIME,
    Column,
    shown,
    text,
)
from sowctl.output.safe import clean, clean_json
from sowctl.output.terminal import current


def is_tty() -> bool:
    return current().is_tty()


def emit_json(data: Any) -> None:
    jq = current().shape.jq
    if jq is not None:
        from sowctl.output.shaping import jq_lines, run_jq

        results = run_jq(jq, data)
        current().out.write("".join(line + "\n" for line in jq_lines(results, pretty=is_tty())))
        return
    from sowctl.output.json_output import dumps_indented  # imported when used, like Rich

    current().out.write(clean_json(dumps_indented(data)) + "\n")


def no_columns(view: str) -> None:
    """Refuse --columns for a view that has none (a tree, a diagram), before printing anything."""
    if current().shape.columns:
        from sowctl.foundation.errors import UsageError

        raise UsageError(f"--columns applies to the table; {view} has no columns")


def _chosen(columns: Sequence[Column]) -> list[Column]:
    """The columns --columns names (each then essential), or the default ones."""
    names = current().shape.columns
    if not names:
        return [col for col in columns if col.default]
    from sowctl.output.shaping import choose

    return [replace(columns[i], priority=1) for i in choose(names, [col.header for col in columns])]


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
    footer_source: dict | None = None,
) -> None:
    """Show a list. ``body`` is the API body for --json when it is not ``rows`` itself.
    ``footer``: a TTY footer's cells by header; ``footer_source``: the API object they
    show, which the columns' ``style`` rules colour as they colour rows."""
    if json_mode:
        emit_json(rows if body is None else body)
        return
    if quiet:
        current().out.write("".join(text(row.get(id_key)) + "\n" for row in rows))
        return
    columns = _chosen(columns)
    if not is_tty():
        for row in rows:
            current().out.write("\t".join(text(col.get(row)) for col in columns) + "\n")
        return
    from sowctl.output.table import print_table

    print_table(console(), rows, columns, title=title, footer=footer, footer_source=footer_source)


def emit_summary(
    summary: Any, *, json_: bool, table: Callable[[Any], None], lines: Callable[[Any], None]
) -> None:
    """A report's summary: the JSON body with --json, ``table`` for a person, ``lines`` piped."""
    if json_:
        emit_json(summary)
    elif is_tty():
        table(summary)
    else:
        lines(summary)


def emit_object(data: dict, *, json_mode: bool = False, fields: Sequence[str] | None = None) -> None:
    """Show one resource: key/value pairs (a table on a TTY)."""
    if json_mode:
        emit_json(data)
        return
    keys = list(fields) if fields else list(data)
    columns = current().shape.columns
    if columns:
        from sowctl.output.shaping import choose

        keys = [keys[i] for i in choose(columns, keys)]
    if not is_tty():
        current().out.write("".join(f"{text(key)}\t{text(data.get(key))}\n" for key in keys))
        return
    from sowctl.output.table import print_record

    kinds = [_key_kind(key) for key in keys]
    print_record(
        console(),
        [(key, shown(data.get(key), kind)) for key, kind in zip(keys, kinds, strict=True)],
        whole=[kind != TEXT for kind in kinds],
    )


# Keys that name a moment: ``createdAt``, ``updated_at``, and the spec's timestamps named
# for a date (``contract_date``, ``start_date``, ``estimated_completion_date`` of a prime contract;
# ``startDate``, ``endDate`` of a project). A calendar date (``slaDate``) has no time or zone:
# ``shown`` changes only values in the exact timestamp shape, so it stays as it is.
_TIME_KEY_SUFFIXES = ("At", "_at", "Date", "_date")


def _key_kind(key: str) -> str:
    """The kind of a record's value, from its key: a moment, an id (``id``, ``sowId``,
    ``project_id``, a flattened ``customer.id``), else text."""
    name = key.rsplit(".", 1)[-1]
    if name.endswith(_TIME_KEY_SUFFIXES):
        return TIME
    if name == "id" or name.endswith(("Id", "_id")):
        return ID
    return TEXT


def emit_message(message: str, *, json_mode: bool = False, body: Any = None) -> None:
    if json_mode:
        emit_json(body if body is not None else {"message": message})
    else:
        current().out.write(clean(message) + "\n")


def emit_line(message: str, style: str | None = None) -> None:
    """One line of text: styled on a TTY (never read as markup), plain when piped."""
    if not is_tty():
        current().out.write(clean(message) + "\n")
        return
    from rich.text import Text

    console().print(Text(clean(message), style=style or ""))  # wraps between words: ids stay whole


def console():
    from rich.console import Console

    if _console is not None:  # one a test installed
        return _console
    terminal = current()
    if terminal.rich is None:
        terminal.rich = Console(file=terminal.stdout, width=terminal.columns, soft_wrap=False)
    return terminal.rich


def deepest_tree_level() -> int:
    """How deep a Rich tree may nest on this terminal: each level's guide takes 4 columns,
    and Rich silently drops what no longer fits, so deeper nodes are drawn at this level."""
    return max(1, (console().width - 30) // 4)


def error_console():
    from rich.console import Console

    terminal = current()
    return Console(file=terminal.stderr, stderr=terminal.stderr is None, width=terminal.columns)


_console = None
