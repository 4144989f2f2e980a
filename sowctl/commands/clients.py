"""sowctl clients: the clients of the organization, with their contacts (Group C)."""

from __future__ import annotations

import typer

from sowctl.commands._context import app_context
from sowctl.commands._options import Json, Quiet
from sowctl.commands.projects import Limit, Offset
from sowctl.output.options import output_options
from sowctl.output.render import Column, emit_rows

app = typer.Typer(no_args_is_help=True)  # its help: sowctl.commands.GROUPS


def contacts_summary(client: dict) -> str:
    """One cell for all contacts: "Maria Chen <maria@x> (primary); Jonas Berg <jonas@x>"."""
    parts = []
    for contact in client.get("contacts") or []:
        text = contact["name"]
        if contact.get("email"):
            text += f" <{contact['email']}>"
        if contact.get("isPrimary"):
            text += " (primary)"
        parts.append(text)
    return "; ".join(parts)


COLUMNS = [
    Column("ID", "id"),
    Column("PINNED", "isPinned", kind="flag", priority=3),
    Column("INDUSTRY", "industry", kind="text", priority=2),
    Column("NAME", "name", kind="text"),
    Column("CONTACTS", contacts_summary, kind="text", priority=2),
]


@app.command("list")
@output_options(columns=True, pager=True)
def list_clients(
    ctx: typer.Context,
    limit: Limit = None,
    offset: Offset = None,
    json_: Json = False,
    quiet: Quiet = False,
) -> None:
    """List clients: pinned first, then by name, each with its contacts (primary first).

    Example: sowctl clients list --json
    """
    body = app_context(ctx).call("clients.list", query={"limit": limit, "offset": offset})
    emit_rows(body["clients"], COLUMNS, json_mode=json_, quiet=quiet, body=body)
