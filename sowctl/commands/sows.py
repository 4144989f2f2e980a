"""sowctl sows: create and list SOWs, so a user can start from an empty database."""

from __future__ import annotations

from typing import Annotated

import typer

from sowctl.commands._context import app_context
from sowctl.commands._options import (
    Json,
    Quiet,
    QuietCreate,
    SowArgument,
    Yes,
    confirm,
    emit_created,
    needs_confirmation,
)
from sowctl.output.options import output_options
from sowctl.output.render import Column, emit_message, emit_object, emit_rows
from sowctl.output.terminal import current

app = typer.Typer(no_args_is_help=True)  # its help: sowctl.commands.GROUPS

COLUMNS = [
    Column("ID", "id"),
    Column("PROJECT", "projectId", priority=3),
    Column("ITEMS", "itemCount", justify="right", kind="number", priority=2),
    Column("CREATED", "createdAt", kind="datetime", priority=2),
    Column("TITLE", "title", kind="text"),
]


@app.command("create")
@output_options()
def create_sow(
    ctx: typer.Context,
    title: Annotated[str, typer.Argument(help="Title of the SOW.")],
    project: Annotated[
        str | None,
        typer.Option("--project", help="Project id (default: the organization's default project)."),
    ] = None,
    sow_id: Annotated[str | None, typer.Option("--id", help="Choose the SOW's id.")] = None,
    json_: Json = False,
    quiet: QuietCreate = False,
) -> None:
    """Create a SOW in an organization's default project (made when missing), or in --project.

    Local mode: the SOW goes to the organization --org names, which must exist
    ('sowctl orgs list' shows them, 'sowctl orgs create' makes one). Without --org it
    goes to the only organization; on an empty database one named 'local' is made; with
    several, --org is required. An --id another organization uses needs --org too.
    Remote mode: the token's organization.

    Example: sowctl sows create "Tower A, phase 1" --id sow-1
    """
    body = {"title": title}
    if project:
        body["projectId"] = project
    if sow_id:
        body["id"] = sow_id
    emit_created(app_context(ctx).call("sows.create", body=body), json_mode=json_, quiet=quiet)


@app.command("list")
@output_options(columns=True, pager=True)
def list_sows(
    ctx: typer.Context,
    project: Annotated[str | None, typer.Option("--project", help="Only this project's SOWs.")] = None,
    json_: Json = False,
    quiet: Quiet = False,
) -> None:
    """List every SOW, oldest first, with its item count (from a server: every page).

    Example: sowctl sows list --json
    """
    sows = app_context(ctx).call("sows.list", query={"projectId": project})
    emit_rows(sows, COLUMNS, json_mode=json_, quiet=quiet)


@app.command("get")
@output_options(columns=True, pager=True)
def get_sow(ctx: typer.Context, sow_id: SowArgument, json_: Json = False) -> None:
    """Show one SOW with its item count.

    Example: sowctl sows get sow-1
    """
    emit_object(app_context(ctx).call("sows.get", {"sowId": sow_id}), json_mode=json_)


@app.command("update")
@output_options()
def update_sow(
    ctx: typer.Context,
    sow_id: SowArgument,
    title: Annotated[str, typer.Option("--title", help="The SOW's new title.")],
    json_: Json = False,
    quiet: QuietCreate = False,
) -> None:
    """Change a SOW's title (its id, project and organization never change).

    Example: sowctl sows update sow-1 --title "Tower A, phase 2"
    """
    sow = app_context(ctx).call("sows.update", {"sowId": sow_id}, body={"title": title})
    emit_created(sow, json_mode=json_, quiet=quiet)


@app.command("delete")
@output_options()
def delete_sow(ctx: typer.Context, sow_id: SowArgument, yes: Yes = False, json_: Json = False) -> None:
    """Delete a SOW with all its items and every dependency touching them.

    On a terminal it first shows how many items go with it and asks; --yes skips the
    question (scripts, whose input is not a terminal, are never asked). What went with it
    is said on stderr (with --json, counted in the body).

    Example: sowctl sows delete sow-1 --yes
    """

    from sowctl.output import render

    context = app_context(ctx)
    if needs_confirmation(yes):
        sow = context.call("sows.get", {"sowId": sow_id})
        items = sow.get("itemCount")
        confirm(
            f"Delete SOW {render.text(sow_id)} ({render.text(sow.get('title'))}), "
            f"{items} item{'' if items == 1 else 's'} and their dependencies?"
        )
    result = context.call("sows.delete", {"sowId": sow_id})
    emit_message(result["message"], json_mode=json_, body=result)
    if json_:
        return  # the body counts what went
    items, deps = result["deletedItems"], result["deletedDependencies"]
    current().err.write(
        f"deleted with it: {items} item{'' if items == 1 else 's'} and "
        f"{deps} dependenc{'y' if deps == 1 else 'ies'}\n"
    )
