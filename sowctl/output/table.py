"""Tables and records on a terminal, drawn by Rich within the widths ``layout.fit`` chose.

Every cell is a Rich ``Text`` of safe text (markup in a value is shown, not read).
Columns of ids, enums, dates and money are exactly as wide as their widest cell and
never wrap; text columns are shortened with ``…``. Columns left out to fit are named
under the table; rows that cannot fit even so are shown as blocks of "NAME value" lines.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from sowctl.output import layout

if TYPE_CHECKING:
    from rich.console import Console

    from sowctl.output.cells import Column


def print_table(
    console: Console,
    rows: Sequence[dict],
    columns: Sequence[Column],
    *,
    title: str | None = None,
    footer: dict | None = None,
    footer_source: dict | None = None,
) -> None:
    """``footer``: the footer's cells by column header; ``footer_source``: the API object
    they show (a snapshot's ``totals``), styled by each column's own row rule."""
    from rich import box
    from rich.cells import cell_len
    from rich.table import Table
    from rich.text import Text

    from sowctl.output.cells import TEXT, shown, styled

    cells = [[_cell(col, row, shown, TEXT) for col in columns] for row in rows]
    footers = [shown(footer.get(col.header)) if footer else "" for col in columns]
    footer_styles = [_style(col, footer_source) for col in columns]
    needs = []
    for i, col in enumerate(columns):
        whole = [cell_len(col.header), cell_len(footers[i])]
        text = [cell_len(row[i][0]) for row in cells if row[i][1]]
        whole += [cell_len(row[i][0]) for row in cells if not row[i][1]]
        all_text = col.text_priority is not None and len(text) == len(cells) > 0
        priority = col.text_priority if all_text and col.text_priority is not None else col.priority
        needs.append(layout.need(whole, text, priority))
    fit = layout.fit(needs, console.width)
    if fit is None:
        _print_records(console, rows, columns, cells, (footers, footer_styles), title)
        return
    table = Table(
        title=styled(title) if title else None,
        box=box.SIMPLE,
        show_edge=False,
        pad_edge=False,
        padding=(0, 1, 0, 0),
        show_footer=footer is not None,
        header_style="bold",
    )
    for i in fit.shown:
        col = columns[i]
        table.add_column(
            Text(col.header),
            footer=Text(footers[i], style=footer_styles[i] or "", overflow="ellipsis", no_wrap=True),
            justify=col.justify,  # type: ignore[arg-type]
            width=fit.widths[i],
            no_wrap=True,
            overflow="ellipsis",
        )
    for row, raw in zip(cells, rows, strict=True):
        table.add_row(*(_text(row[i][0], columns[i], raw) for i in fit.shown))
    console.print(table)
    if not rows:
        console.print(Text("no results", style="dim"))
    if fit.hidden:
        names = ", ".join(columns[i].header.lower().replace(" ", "-") for i in fit.hidden)
        console.print(
            Text(f"not shown at {console.width} columns: {names} (--columns to choose)", style="dim")
        )


def _cell(col: Column, row: dict, shown: Any, text_kind: str) -> tuple[str, bool]:
    kind = col.kind_of(row)
    return shown(col.get(row), kind), kind == text_kind


def _style(col: Column, row: dict | None) -> str | None:
    """The column's Rich style for ``row``: the one rule for body rows and the footer."""
    return col.style(row) if col.style and row is not None else None


def _text(content: str, col: Column, row: dict) -> Any:
    from rich.text import Text

    return Text(content, style=_style(col, row) or "", no_wrap=True, overflow="ellipsis")


def _print_records(
    console: Console,
    rows: Sequence[dict],
    columns: Sequence[Column],
    cells: list[list[tuple[str, bool]]],
    footer: tuple[list[str], list[str | None]],
    title: str | None,
) -> None:
    """Each row as a block of "NAME value" lines: nothing is cut, whatever the width."""
    from rich.text import Text

    from sowctl.output.cells import TEXT, styled

    if title:
        console.print(styled((title, "bold")))
    for n, (row, raw) in enumerate(zip(cells, rows, strict=True)):
        if n or title:
            console.print()
        shown = [i for i in range(len(columns)) if row[i][0]]  # an empty value says nothing here
        print_record(
            console,
            [(columns[i].header, row[i][0]) for i in shown],
            styles=[_style(columns[i], raw) for i in shown],
            whole=[not row[i][1] for i in shown],  # every kind but text is printed whole
        )
    footers, footer_styles = footer
    if any(footers):
        console.print()
        shown = [i for i in range(len(columns)) if footers[i]]
        print_record(
            console,
            [(columns[i].header, footers[i]) for i in shown],
            styles=[footer_styles[i] for i in shown],
            whole=[columns[i].kind != TEXT for i in shown],  # a per-row kind is never text here
        )
    if not rows:
        console.print(Text("no results", style="dim"))


def print_record(
    console: Console,
    pairs: Sequence[tuple[str, str]],
    *,
    styles: Sequence[str | None] | None = None,
    whole: Sequence[bool] | None = None,
) -> None:
    """NAME value lines; a long text value wraps under itself.

    A value printed whole (``whole``: an id, a date, an amount) that does not fit beside
    its name goes on the next line, unbroken, rather than split after the name; only one
    longer than the line itself folds.
    """
    from rich.cells import cell_len
    from rich.table import Table
    from rich.text import Text

    from sowctl.output.cells import text

    names = [text(name) for name, _ in pairs]
    # Every segment of the record gets this width, so the values stay in one column.
    name_width = max((cell_len(name) for name in names), default=0)
    # Names so long that too little is left beside them (``customer.contact_email`` at 40
    # columns): every value goes under its name, at the line's width, rather than in a sliver.
    stacked = console.width - name_width - _GAP < _MIN_VALUE_WIDTH
    table: Table | None = None
    for n, (name, (_, value)) in enumerate(zip(names, pairs, strict=True)):
        shown = Text(text(value), style=(styles[n] if styles else None) or "")
        if stacked or (whole and whole[n] and name_width + _GAP + shown.cell_len > console.width):
            if table is not None:
                console.print(table)
                table = None
            console.print(Text(name, style="bold cyan"), no_wrap=True, overflow="ellipsis")
            # One word (an id, an amount, an e-mail address): unbroken, indented only if it fits so.
            if (whole and whole[n]) or not any(c.isspace() for c in shown.plain):
                indent = _GAP if shown.cell_len + _GAP <= console.width else 0
                console.print(Text(" " * indent) + shown, overflow="fold")
            else:  # text wraps under itself, every line indented
                from rich.padding import Padding

                shown.overflow = "fold"
                console.print(Padding(shown, (0, 0, 0, _GAP)))
            continue
        if table is None:
            table = Table(show_header=False, box=None, pad_edge=False, padding=(0, _GAP, 0, 0))
            table.add_column(style="bold cyan", no_wrap=True, min_width=name_width)
            table.add_column(overflow="fold")
        table.add_row(Text(name), shown)
    if table is not None:
        console.print(table)


_GAP = 2  # cells between a name and its value
_MIN_VALUE_WIDTH = 16  # narrower than this beside the names, values go under them
