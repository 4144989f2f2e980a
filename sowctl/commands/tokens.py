"""sowctl tokens: bearer tokens for Groups A and C (admin, local mode only)."""

from __future__ import annotations

from typing import Annotated

import typer

from sowctl.commands._context import app_context
from sowctl.commands._options import Json, Quiet, Yes, confirm, needs_confirmation
from sowctl.foundation.redaction import secret_hint
from sowctl.output.options import output_options
from sowctl.output.render import Column, emit_message, emit_rows
from sowctl.output.terminal import current
from sowctl.schemas.vocabulary import Role

app = typer.Typer(no_args_is_help=True)  # its help: sowctl.commands.GROUPS

COLUMNS = [
    Column("ID", "id"),
    Column("TOKEN", "token"),
    Column("USER", "userId"),
    Column("ORG", "organizationId", priority=2),
    Column("ROLE", "role", kind="enum"),
    Column("CREATED", "createdAt", kind="datetime", priority=3),
    Column("REVOKED", "revokedAt", kind="datetime", priority=2),
]


@app.command("create")
def create_token(
    ctx: typer.Context,
    user: Annotated[str, typer.Option("--user", help="User id (created in the org if new).")],
    org: Annotated[str, typer.Option("--org", help="Organization id.")],
    role: Annotated[Role, typer.Option("--role", help="viewer, member or admin.")] = "member",
) -> None:
    """Print a new bearer token, and only the token.

    Example: sowctl tokens create --user ada --org org-1 --role viewer
    """
    from sowctl.services import credentials

    app_context(ctx).open_local_database("tokens create")
    issued = credentials.create_token(user, org, role)
    current().out.write(issued.secret + "\n")


@app.command("list")
@output_options(columns=True, pager=True)
def list_tokens(ctx: typer.Context, json_: Json = False, quiet: Quiet = False) -> None:
    """List tokens (secrets masked).

    Example: sowctl tokens list
    """
    from sowctl.schemas.common import dump
    from sowctl.services import credentials

    app_context(ctx).open_local_database("tokens list", write=False)
    emit_rows(dump(credentials.list_tokens()), COLUMNS, json_mode=json_, quiet=quiet)


@app.command("revoke")
@output_options()
def revoke_token(
    ctx: typer.Context,
    token: Annotated[str, typer.Argument(help="The token's id, or the token itself.")],
    yes: Yes = False,
    json_: Json = False,
) -> None:
    """Revoke a token: it is refused from the next request on.

    Example: sowctl tokens revoke TOKEN_ID
    """
    from sowctl.commands._fields import refuse_empty
    from sowctl.services import credentials

    refuse_empty({"TOKEN": token})
    app_context(ctx).open_local_database("tokens revoke")
    if needs_confirmation(yes):
        confirm(
            f"Revoke token {secret_hint(token) if token.startswith('sow') else token}? It is refused at once"
        )
    token_id = credentials.revoke_token(token)
    emit_message(f"token {token_id} revoked", json_mode=json_, body={"id": token_id, "revoked": True})
