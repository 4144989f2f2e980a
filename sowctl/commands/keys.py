"""sowctl keys: Group B API keys (admin, local mode only)."""

from __future__ import annotations

from typing import Annotated

import typer

from sowctl.commands._context import app_context
from sowctl.commands._options import Json, Quiet, Yes, confirm, needs_confirmation
from sowctl.foundation.redaction import secret_hint
from sowctl.output.options import output_options
from sowctl.output.render import Column, emit_message, emit_rows
from sowctl.output.terminal import current

app = typer.Typer(no_args_is_help=True)  # its help: sowctl.commands.GROUPS

COLUMNS = [
    Column("ID", "id"),
    Column("KEY", "key"),
    Column("ORG", "organizationId", priority=2),
    Column("CREATED", "createdAt", kind="datetime", priority=3),
    Column("REVOKED", "revokedAt", kind="datetime", priority=2),
]


@app.command("create")
def create_key(
    ctx: typer.Context,
    org: Annotated[str, typer.Option("--org", help="Organization id.")],
) -> None:
    """Print a new API key, and only the key.

    Example: sowctl keys create --org org-1
    """
    from sowctl.services import credentials

    app_context(ctx).open_local_database("keys create")
    current().out.write(credentials.create_key(org).secret + "\n")


@app.command("list")
@output_options(columns=True, pager=True)
def list_keys(ctx: typer.Context, json_: Json = False, quiet: Quiet = False) -> None:
    """List API keys (secrets masked).

    Example: sowctl keys list
    """
    from sowctl.schemas.common import dump
    from sowctl.services import credentials

    app_context(ctx).open_local_database("keys list", write=False)
    emit_rows(dump(credentials.list_keys()), COLUMNS, json_mode=json_, quiet=quiet)


@app.command("revoke")
@output_options()
def revoke_key(
    ctx: typer.Context,
    key: Annotated[str, typer.Argument(help="The key's id, or the key itself.")],
    yes: Yes = False,
    json_: Json = False,
) -> None:
    """Revoke an API key: it is refused from the next request on.

    Example: sowctl keys revoke KEY_ID
    """
    from sowctl.commands._fields import refuse_empty
    from sowctl.services import credentials

    refuse_empty({"KEY": key})
    app_context(ctx).open_local_database("keys revoke")
    if needs_confirmation(yes):
        confirm(f"Revoke API key {secret_hint(key) if key.startswith('sow') else key}? It is refused at once")
    key_id = credentials.revoke_key(key)
    emit_message(f"API key {key_id} revoked", json_mode=json_, body={"id": key_id, "revoked": True})
