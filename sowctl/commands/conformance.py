"""sowctl conformance: does a server answer as the service's description says? (or as another server)"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from sowctl.foundation.errors import UsageError
from sowctl.output.options import output_options


@output_options()
def conformance(
    ctx: typer.Context,
    against: Annotated[
        str | None,
        typer.Option(
            "--against", metavar="URL", help="The server to check (default: --server or the profile's)."
        ),
    ] = None,
    compare: Annotated[
        str | None,
        typer.Option(
            "--compare",
            metavar="URL2",
            help="Run the scenario against this server too, and report where the two answer differently "
            "(ids and timestamps ignored).",
        ),
    ] = None,
    allow_writes: Annotated[
        bool,
        typer.Option(
            "--allow-writes",
            help="Also create, change and delete items and dependencies (in the SOW read) and send the "
            "requests with a body the server must refuse. Without it the run only reads.",
        ),
    ] = False,
    admin_token: Annotated[
        str | None,
        typer.Option(
            "--admin-token",
            envvar="SOWCTL_ADMIN_TOKEN",
            metavar="TOKEN",
            help="The admin token of a sowctl test double (serve --admin): when each server accepts it on "
            "/_admin, writes are allowed as with --allow-writes.",
        ),
    ] = None,
    sow: Annotated[
        str | None,
        typer.Option(
            "--sow", metavar="SOW_ID", help="The SOW to read (default: the SOW of a dependency found)."
        ),
    ] = None,
    project: Annotated[
        int | None,
        typer.Option(
            "--project",
            metavar="ID",
            help="The financial project whose budgets and prime contract to read (skipped without it).",
        ),
    ] = None,
    prime_contract: Annotated[
        int | None,
        typer.Option("--prime-contract", metavar="ID", help="A prime contract of --project to read."),
    ] = None,
    purchase_order: Annotated[
        Path | None,
        typer.Option(
            "--purchase-order",
            metavar="FILE",
            help="A create-purchase-order body (JSON) to send, with --allow-writes "
            "(its ids must be the server's).",
        ),
    ] = None,
    report: Annotated[
        list[str] | None,
        typer.Option(
            "--report",
            metavar="FORMAT=PATH",
            help="Also write a report: junit, markdown or sarif; PATH - for stdout.",
        ),
    ] = None,
    json_: Annotated[bool, typer.Option("--json", help="Print the summary as JSON, nothing else.")] = False,
) -> None:
    """Check a server's answers against the service's description: every route of the three
    groups, the documented refusals (401, 404, 400 for a missing field, a dependency cycle),
    and pagination; each answer's status, headers, shape, types, formats and error envelope.

    Credentials are the CLI's (--token for dependencies, items, projects and clients; --api-key,
    --org and --company for purchase orders, budgets and prime contracts; or a --profile).
    Read-only unless --allow-writes. Exit 0: no difference; 1: a difference; 2-5: the run
    could not happen (usage, credentials refused, server unreachable).
    Needs the jsonschema package: pip install 'sowctl[conformance]'.

    Example: sowctl --token "$TOKEN" conformance --against https://api.example.com --sow sow-1
    """
    try:
        from sowctl.commands.conformance_run import Options, run
    except ModuleNotFoundError as exc:
        if exc.name != "jsonschema":
            raise
        raise UsageError(
            "sowctl conformance needs the jsonschema package, which is not installed: "
            "pip install 'sowctl[conformance]'"
        ) from None

    options = Options(
        against,
        compare,
        allow_writes,
        admin_token,
        sow,
        project,
        prime_contract,
        purchase_order,
        report or [],
        json_,
    )
    raise typer.Exit(run(ctx, options))
