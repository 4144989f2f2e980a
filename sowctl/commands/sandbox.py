"""sowctl sandbox: sandboxes of a shared sowctl test double, made and removed over its admin API.

A sandbox is an organization with its own bearer token, API key and an admin token scoped to
it (``/_admin`` then acts on that organization only). ``create`` prints them as shell
``export`` lines, in the variables sowctl itself reads, so a CI job runs
``eval "$(sowctl --server URL sandbox create --ttl 1h)"`` and every later ``sowctl`` command,
and the pytest plugin, use the sandbox.
"""

from __future__ import annotations

import shlex
from typing import Annotated, Any

import typer

from sowctl.commands._context import app_context
from sowctl.commands._fields import speak_cli
from sowctl.commands._options import AdminToken, Json, Quiet
from sowctl.foundation.errors import InvalidInput, SowctlError, UsageError
from sowctl.operations.admin import ADMIN, path_of
from sowctl.output.options import output_options
from sowctl.output.render import Column, emit_json, emit_message, emit_rows
from sowctl.output.terminal import current

app = typer.Typer(no_args_is_help=True)  # its help: sowctl.commands.GROUPS

COLUMNS = [
    Column("ORGANIZATION", "organizationId"),
    Column("NAME", "name", kind="text"),
    Column("CREATED", "createdAt", kind="date", priority=2),
    Column("EXPIRES", "expiresAt", kind="date"),
]
# The variables a created sandbox is exported in: those sowctl reads (cli.py's options, and
# SOWCTL_ADMIN_TOKEN for the commands and the pytest plugin that call /_admin).
EXPORTED = (
    ("SOWCTL_SERVER", "server"),
    ("SOWCTL_TOKEN", "token"),
    ("SOWCTL_API_KEY", "apiKey"),
    ("SOWCTL_ORG", "organizationId"),
    ("SOWCTL_ADMIN_TOKEN", "adminToken"),
)


@app.command("create")
@output_options()
def create(
    ctx: typer.Context,
    ttl: Annotated[
        str,
        typer.Option("--ttl", help="How long it lives: seconds, or 30m, 1h, 2d (at most 7 days)."),
    ] = "1h",
    name: Annotated[str | None, typer.Option("--name", help="A label for listings.")] = None,
    admin_token: AdminToken = None,
    json_: Json = False,
) -> None:
    """Make a sandbox on the server and print its credentials as shell export lines.

    The server removes it, with everything it holds, once --ttl is over. The secrets are
    shown once: with --json, the server's whole answer. In a CI job:
    eval "$(sowctl --server URL sandbox create)".

    Example: sowctl --server https://sowctl.ci.example sandbox create --ttl 1h --name job-42
    """
    body = {"ttl": ttl, **({"name": name} if name is not None else {})}
    made = _admin(ctx, admin_token, "admin.sandboxes.create", body=body)
    if json_:
        emit_json(made)
        return
    values = {**made, "server": app_context(ctx).settings.server}
    unprintable = [key for _, key in EXPORTED if not str(values[key]).isprintable()]
    if unprintable:  # quoted for the shell, but a terminal would still act on it
        raise SowctlError(f"the server's answer holds an unprintable {unprintable[0]}: not printed")
    lines = [f"export {variable}={shlex.quote(str(values[key]))}" for variable, key in EXPORTED]
    expires = shlex.quote(str(made["expiresAt"]))
    current().out.write(
        "\n".join([*lines, f"# sandbox {made['organizationId']} expires at {expires}"]) + "\n"
    )


@app.command("list")
@output_options(columns=True, pager=True)
def list_sandboxes(
    ctx: typer.Context, admin_token: AdminToken = None, json_: Json = False, quiet: Quiet = False
) -> None:
    """List the server's live sandboxes (no secrets); with a sandbox's admin token, its own.

    Example: sowctl --server https://sowctl.ci.example sandbox list
    """
    rows = _admin(ctx, admin_token, "admin.sandboxes.list")
    emit_rows(rows, COLUMNS, json_mode=json_, quiet=quiet, id_key="organizationId")


@app.command("delete")
@output_options()
def delete(
    ctx: typer.Context,
    organization_id: Annotated[
        str, typer.Argument(help="The sandbox's organization id.", show_default=False)
    ],
    admin_token: AdminToken = None,
    json_: Json = False,
) -> None:
    """Remove a sandbox now: its records, credentials, request log and checkpoints.

    Example: sowctl --server https://sowctl.ci.example sandbox delete sbx-3f2b8c1e7d4a
    """
    path = {"organizationId": organization_id}
    body = _admin(ctx, admin_token, "admin.sandboxes.delete", path_params=path)
    emit_message(f"Deleted sandbox {organization_id}", json_mode=json_, body=body)


def _admin(
    ctx: typer.Context,
    admin_token: str | None,
    name: str,
    *,
    body: Any = None,
    path_params: dict[str, str] | None = None,
) -> Any:
    context = app_context(ctx)
    if not context.settings.remote:
        raise UsageError("sandboxes live on a sowctl serve: give --server URL (and --admin-token)")
    if not admin_token:
        raise UsageError("--admin-token is required (or SOWCTL_ADMIN_TOKEN): /_admin takes the admin token")
    op = ADMIN[name]
    headers = {"Authorization": f"Bearer {admin_token}"}
    backend: Any = context.backend  # remote: it sends any route (sowctl api's raw call)
    try:
        return backend.raw(None, op.method, path_of(name, path_params), {}, body, headers)
    except InvalidInput as error:  # named by the options typed: --ttl, not ttl
        raise speak_cli(error, body or {}) from None
