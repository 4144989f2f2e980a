"""sowctl orgs: organizations, made only on purpose (local mode only)."""

from __future__ import annotations

from typing import Annotated

import typer

from sowctl.commands._context import app_context
from sowctl.commands._options import Json, Quiet, QuietCreate, emit_created
from sowctl.output.options import output_options
from sowctl.output.render import Column, emit_rows
from sowctl.schemas.common import dump

app = typer.Typer(no_args_is_help=True)  # its help: sowctl.commands.GROUPS

COLUMNS = [
    Column("ID", "id"),
    Column("SOWS", "sowCount", justify="right", kind="number", priority=2),
    Column("NAME", "name", kind="text"),
]


@app.command("create")
@output_options()
def create_org(
    ctx: typer.Context,
    org_id: Annotated[str, typer.Argument(help="The new organization's id.")],
    name: Annotated[str | None, typer.Option("--name", help="Its name (default: the id).")] = None,
    json_: Json = False,
    quiet: QuietCreate = False,
) -> None:
    """Create an organization (no other command makes one, except the first
    'sows create' on an empty database, which makes 'local').

    Example: sowctl orgs create org-2 --name "Second company"
    """
    from sowctl.commands._fields import refuse_empty
    from sowctl.services import organizations

    refuse_empty({"ORG_ID": org_id})
    app_context(ctx).open_local_database("orgs create")
    emit_created(dump(organizations.create_organization(org_id, name)), json_mode=json_, quiet=quiet)


@app.command("list")
@output_options(columns=True, pager=True)
def list_orgs(ctx: typer.Context, json_: Json = False, quiet: Quiet = False) -> None:
    """List the organizations of the database, with their SOW counts.

    Example: sowctl orgs list
    """
    from sowctl.services import organizations

    app_context(ctx).open_local_database("orgs list", write=False)
    emit_rows(dump(organizations.list_organizations()), COLUMNS, json_mode=json_, quiet=quiet)
