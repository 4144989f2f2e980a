"""sowctl projects: the projects of the organization (Group C)."""

from __future__ import annotations

from typing import Annotated

import typer

from sowctl.commands._context import app_context
from sowctl.commands._options import Json, Quiet
from sowctl.output.options import output_options
from sowctl.output.render import Column, emit_rows
from sowctl.schemas.vocabulary import ProjectStatus

app = typer.Typer(no_args_is_help=True)  # its help: sowctl.commands.GROUPS

COLUMNS = [
    Column("ID", "id"),
    Column("STATUS", "status", kind="enum"),
    Column("PINNED", "isPinned", kind="flag", priority=3),
    Column("SOWS", "sowCount", justify="right", kind="number", priority=2),
    Column("CLIENT", "clientName", kind="text", priority=2),
    Column("NAME", "name", kind="text"),
]
Limit = Annotated[
    str | None,
    typer.Option("--limit", help="At most this many (digits; up to 100). Default: all.", show_default=False),
]
Offset = Annotated[
    str | None, typer.Option("--offset", help="Skip this many first (digits).", show_default=False)
]


@app.command("list")
@output_options(columns=True, pager=True)
def list_projects(
    ctx: typer.Context,
    status: Annotated[
        ProjectStatus | None,
        typer.Option("--status", help="active, on_hold, completed or archived.", show_default=False),
    ] = None,
    client: Annotated[
        str | None, typer.Option("--client", help="Only this client's projects (uuid).", show_default=False)
    ] = None,
    limit: Limit = None,
    offset: Offset = None,
    json_: Json = False,
    quiet: Quiet = False,
) -> None:
    """List projects: pinned first, then by name, with their client and SOW count.

    Example: sowctl projects list --status active --limit 10
    """
    query = {"status": status, "clientId": client, "limit": limit, "offset": offset}
    body = app_context(ctx).call("projects.list", query=query)
    emit_rows(body["projects"], COLUMNS, json_mode=json_, quiet=quiet, body=body)
