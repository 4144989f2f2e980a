"""sowctl budgets: budget views and their snapshots."""

from __future__ import annotations

from typing import Annotated

import typer

from sowctl.commands._context import app_context
from sowctl.commands._options import Json, Quiet
from sowctl.output import render
from sowctl.output.options import output_options
from sowctl.output.render import Column, emit_json, emit_rows

app = typer.Typer(no_args_is_help=True)  # its help: sowctl.commands.GROUPS

Project = Annotated[str, typer.Option("--project", help="Financial project id, e.g. 101.")]
MONEY_COLUMNS = [
    ("ORIGINAL", "original_budget"),
    ("CURRENT", "current_budget"),
    ("COMMITTED", "committed"),
    ("SPENT", "spent"),
    ("PROJECTED", "projected_total"),
    ("VARIANCE", "variance"),
]


def money_cell(key: str):
    """Money for a table cell: thousands separators for people, plain digits when piped."""

    def cell(row: dict) -> str:
        from sowctl.foundation import money  # imported when a cell is shown (decimal): keeps start-up light

        return money.display(row.get(key), grouping=render.is_tty())

    return cell


def negative_red(key: str):
    """Rich style of a row whose ``key`` is negative (an overrun)."""

    def style(row: dict) -> str | None:
        value = row.get(key)
        return "red" if isinstance(value, int | float) and value < 0 else None

    return style


VIEW_COLUMNS = [
    Column("ID", "id", justify="right", kind="number"),
    Column("NAME", "name", kind="text"),
    Column("DESCRIPTION", "description", kind="text", priority=2),
    Column("CREATED", "created_at", kind="datetime", priority=3),
    Column("UPDATED", "updated_at", kind="datetime", priority=2),
]
SNAPSHOT_COLUMNS = [
    Column("ID", "id", justify="right", kind="number"),
    Column("NAME", "name", kind="text"),
    Column("VIEW", "budget_view_id", justify="right", kind="number", priority=2),
    Column("CREATED", "created_at", kind="datetime"),
    Column("CREATED BY", lambda row: (row.get("created_by") or {}).get("name"), kind="text", priority=3),
    Column("DESCRIPTION", "description", kind="text", priority=2),
]
LINE_COLUMNS = [
    Column("ID", "id", justify="right", kind="number", priority=2),
    Column("CODE", "code", kind="enum"),
    Column("DESCRIPTION", "description", kind="text"),
    *(
        Column(
            header,
            money_cell(key),
            justify="right",
            style=negative_red(key) if key == "variance" else None,
            kind="money",
        )
        for header, key in MONEY_COLUMNS
    ),
]


@app.command("views")
@output_options(columns=True, pager=True)
def views(ctx: typer.Context, project: Project, json_: Json = False, quiet: Quiet = False) -> None:
    """List the budget views of a project.

    Example: sowctl budgets views --project 101
    """
    result = app_context(ctx).call("finance.budget_views", query={"project_id": project})
    emit_rows(result["data"], VIEW_COLUMNS, json_mode=json_, quiet=quiet, body=result)


@app.command("snapshots")
@output_options(columns=True, pager=True)
def snapshots(ctx: typer.Context, project: Project, json_: Json = False, quiet: Quiet = False) -> None:
    """List the budget view snapshots of a project (summary form).

    Example: sowctl budgets snapshots --project 101
    """
    result = app_context(ctx).call("finance.snapshots", query={"project_id": project})
    emit_rows(result["data"], SNAPSHOT_COLUMNS, json_mode=json_, quiet=quiet, body=result)


@app.command("snapshot")
@output_options(columns=True, pager=True)
def snapshot(
    ctx: typer.Context,
    snapshot_id: Annotated[str, typer.Argument(help="The snapshot's id.")],
    project: Project,
    json_: Json = False,
) -> None:
    """Show one snapshot: its line items and their exact column totals (negative variance in red).

    Example: sowctl budgets snapshot 21 --project 101
    """
    result = app_context(ctx).call(
        "finance.snapshot",
        query={"project_id": project, "snapshot_id": snapshot_id},
        positional=frozenset({"snapshot_id"}),
    )
    if json_:
        emit_json(result)
        return
    from sowctl.foundation import money

    detail = result["data"]
    totals = detail.get("totals") or {}
    footer = {"DESCRIPTION": "Total", **{h: money.display(totals.get(k)) for h, k in MONEY_COLUMNS}}
    title = f"Snapshot {detail.get('id')}: {detail.get('name')} (budget view {detail.get('budget_view_id')})"
    emit_rows(detail.get("line_items") or [], LINE_COLUMNS, title=title, footer=footer, footer_source=totals)
