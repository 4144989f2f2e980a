"""sowctl contract: contract mode of a sowctl test double, read and set over its admin API."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

import typer

from sowctl.commands._context import app_context
from sowctl.commands._options import AdminToken, Json
from sowctl.foundation.errors import InvalidInput, UsageError
from sowctl.gate.reports import contract as contract_reports
from sowctl.output.options import output_options
from sowctl.output.render import Column, emit_json, emit_rows, emit_summary
from sowctl.output.terminal import current

app = typer.Typer(no_args_is_help=True)  # its help: sowctl.commands.GROUPS

ROUTE = "/_admin/contract"
KINDS = ("extension", "leniency", "unspecified")
COLUMNS = [
    Column("DEPARTURE", "code"),
    Column("KIND", "kind", kind="enum"),
    Column("REQUESTS", "requests", justify="right", kind="number"),
    Column("EXAMPLE", "example", kind="text", priority=2),
]


class Mode(StrEnum):
    off = "off"
    report = "report"
    strict = "strict"


class ReportFormat(StrEnum):
    text = "text"
    markdown = "markdown"
    junit = "junit"
    sarif = "sarif"


@app.command("report")
@output_options()
def report(
    ctx: typer.Context,
    fail_on: Annotated[
        str,
        typer.Option(
            "--fail-on",
            help="The kinds that fail (exit 1), comma-separated: extension, leniency, unspecified.",
        ),
    ] = "extension,leniency",
    report_format: Annotated[
        ReportFormat, typer.Option("--format", help="text (a table or lines), markdown, junit or sarif.")
    ] = ReportFormat.text,
    admin_token: AdminToken = None,
    json_: Json = False,
) -> None:
    """What the logged requests relied on beyond the service's description; exit 1 on --fail-on.

    By departure (sowctl serve --contract report): how many requests, and one of them. Exit 1
    when a kind in --fail-on is among them, so a CI step can gate on it.

    Example: sowctl --server http://127.0.0.1:8000 contract report --format sarif
    """
    kinds = _kinds(fail_on)
    body = _admin(ctx, admin_token, "GET")
    code = 1 if contract_reports.failing(body, kinds) else 0
    current().decide_exit(code)
    if report_format is not ReportFormat.text and not json_:
        current().out.write(getattr(contract_reports, report_format.value)(body, kinds))
    else:
        emit_summary(body, json_=json_, table=_table, lines=_lines)
    if code:
        raise typer.Exit(code)


@app.command("mode")
@output_options()
def mode(
    ctx: typer.Context,
    new_mode: Annotated[
        Mode | None, typer.Argument(help="off, report or strict; none: show the mode.", show_default=False)
    ] = None,
    admin_token: AdminToken = None,
    json_: Json = False,
) -> None:
    """Show contract mode, or set it until the server's next reset.

    Example: sowctl --server http://127.0.0.1:8000 contract mode strict
    """
    body = _admin(ctx, admin_token, "GET" if new_mode is None else "PUT", new_mode)
    if json_:
        emit_json(body)
    else:
        current().out.write(f"{body['mode']}\n")


def _admin(ctx: typer.Context, admin_token: str | None, method: str, new_mode: Mode | None = None) -> Any:
    context = app_context(ctx)
    if not context.settings.remote:
        raise UsageError("contract mode is a sowctl serve feature: give --server URL (and --admin-token)")
    if not admin_token:
        raise UsageError("--admin-token is required (or SOWCTL_ADMIN_TOKEN): /_admin takes the admin token")
    body = {"mode": new_mode.value} if new_mode is not None else None
    headers = {"Authorization": f"Bearer {admin_token}"}
    backend: Any = context.backend  # remote: it sends any route (sowctl api's raw call)
    return backend.raw(None, method, ROUTE, {}, body, headers)


def _kinds(text: str) -> tuple[str, ...]:
    kinds = tuple(dict.fromkeys(part.strip().lower() for part in text.split(",") if part.strip()))
    unknown = [kind for kind in kinds if kind not in KINDS]
    if unknown:
        raise InvalidInput.for_field(
            "--fail-on", f"unknown kind {unknown[0]!r} (choose from {', '.join(KINDS)})"
        )
    return kinds


def _table(body: dict[str, Any]) -> None:
    current().out.write(f"Contract mode: {body['mode']}\n")
    emit_rows(body["departures"], COLUMNS, json_mode=False, quiet=False)


def _lines(body: dict[str, Any]) -> None:
    emit_rows(body["departures"], COLUMNS, json_mode=False, quiet=False)
