"""sowctl contract: contract mode of a sowctl test double, read and set over its admin API."""

from __future__ import annotations

import json
import shlex
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlsplit

import typer

from sowctl.commands._context import app_context
from sowctl.commands._options import AdminToken, Json
from sowctl.foundation.errors import InvalidInput, UsageError
from sowctl.foundation.files import write_file
from sowctl.gate.reports import contract as contract_reports
from sowctl.operations.groups import group_of_path
from sowctl.output.options import output_options
from sowctl.output.render import Column, emit_json, emit_rows, emit_summary
from sowctl.output.safe import clean
from sowctl.output.terminal import current
from sowctl.schemas.admin import PARTY_NAME, PARTY_NAME_RULE

app = typer.Typer(no_args_is_help=True)  # its help: sowctl.commands.GROUPS

ROUTE = "/_admin/contract"
PACT_ROUTE = "/_admin/requests/pact"
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


@app.command("pact")
@output_options()
def pact(
    ctx: typer.Context,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            metavar="FILE",
            help="Write the pact to FILE (default: standard output).",
            show_default=False,
        ),
    ] = None,
    consumer: Annotated[str, typer.Option("--consumer", help="The consumer's name in the pact.")] = (
        "sowctl-consumer"
    ),
    provider: Annotated[str, typer.Option("--provider", help="The provider's name in the pact.")] = "sowctl",
    start_state: Annotated[
        str | None,
        typer.Option(
            "--state",
            help="The provider state the first interaction names: where the consumer's run started "
            "(a checkpoint it restored).",
            show_default=False,
        ),
    ] = None,
    method: Annotated[str | None, typer.Option("--method", help="Only requests of this method.")] = None,
    path: Annotated[
        str | None, typer.Option("--path", help="Only paths matching this pattern (* and ?).")
    ] = None,
    status: Annotated[
        str | None, typer.Option("--status", help="Only this status (404) or class (4xx).")
    ] = None,
    group: Annotated[str | None, typer.Option("--group", help="Only this API group: A, B or C.")] = None,
    caller: Annotated[
        str | None, typer.Option("--caller", help="Only this user, organization, company or API key id.")
    ] = None,
    admin_token: AdminToken = None,
    json_: Json = False,
) -> None:
    """Export the requests a consumer made as a Pact contract (specification V3), and show how to verify it.

    One interaction per logged request of sowctl serve --admin, oldest first. The log holds no
    credential, so neither does the pact: the command printed adds the provider's own
    (pact_verifier_cli --header). Requests that cannot be replayed exactly (a body cut or
    masked, an injected fault) are left out and listed.

    Example: sowctl --server http://127.0.0.1:8000 contract pact --out pacts/web-sowctl.json --consumer web
    """
    for option, name in (("--consumer", consumer), ("--provider", provider), ("--state", start_state)):
        if name is not None and not PARTY_NAME.fullmatch(name.strip()):
            raise InvalidInput.for_field(option, PARTY_NAME_RULE)
    filters = {"method": method, "path": path, "status": status, "group": group, "caller": caller}
    named = {"consumer": consumer, "provider": provider, "state": start_state, **filters}
    query = {key: value for key, value in named.items() if value is not None}
    context = app_context(ctx)
    document = _admin_call(ctx, admin_token, "GET", PACT_ROUTE, query)
    target = None if out is None or str(out) == "-" else out.expanduser()
    if target is None:
        emit_json(document)  # the pact is the API's JSON body (--jq filters it)
    else:
        try:
            write_file(target, json.dumps(document, ensure_ascii=False, indent=2) + "\n")
        except OSError as exc:
            raise UsageError(f"cannot write {out}: {exc.strerror or exc}") from None
    summary = _pact_summary(document, context.settings.server or "", str(target or "pact.json"))
    if json_ and target is not None:
        emit_json(summary)
        return
    report = current().out if target is not None else current().err
    report.write(_summary_lines(summary, target))


def _pact_summary(document: dict[str, Any], server: str, file: str) -> dict[str, Any]:
    """What the pact holds, what it left out, and the verifier's command line for it."""
    interactions = document["interactions"]
    groups = {group_of_path(item["request"]["path"]) for item in interactions}
    url = urlsplit(server)
    command = ["pact_verifier_cli", "--file", file, "--provider-name", document["provider"]["name"]]
    command += [
        "--hostname",
        url.hostname or "127.0.0.1",
        "--port",
        str(url.port or (443 if url.scheme == "https" else 80)),
    ]
    if url.scheme == "https":
        command += ["--scheme", "https"]
    if url.path.strip("/"):  # a server under a path prefix
        command += ["--base-path", url.path.rstrip("/")]
    if groups - {"B"}:  # Groups A and C: the bearer token
        command += ["--header", "Authorization=Bearer $SOWCTL_TOKEN"]
    if "B" in groups:  # Group B: the API key (its organization and company headers are in the pact)
        command += ["--header", "X-API-Key=$SOWCTL_API_KEY"]
    states = interactions[0].get("providerStates", []) if interactions else []
    if states:  # the verifier asks this URL to set the state up (a handler of your own)
        command += ["--state-change-url", "$STATE_CHANGE_URL"]
    omitted = document["metadata"]["sowctl"]["omitted"]
    return {"file": file, "interactions": len(interactions), "omitted": omitted, "verify": command}


def _summary_lines(summary: dict[str, Any], target: Path | None) -> str:
    where = f" to {clean(str(target))}" if target is not None else ""
    count = summary["interactions"]
    lines = [
        f"Wrote {count} interaction{'' if count == 1 else 's'}{where}; {len(summary['omitted'])} left out"
    ]
    lines += [
        f"  #{item['id']} {clean(item['request'])}: {clean(item['reason'])}" for item in summary["omitted"]
    ]
    # Double quotes: the shell fills in $SOWCTL_TOKEN and $SOWCTL_API_KEY, never printed here.
    words = [f'"{word}"' if "$" in word else shlex.quote(word) for word in summary["verify"]]
    lines += ["Verify it against a provider with the same data:", "  " + clean(" ".join(words))]
    return "\n".join(lines) + "\n"


def _admin(ctx: typer.Context, admin_token: str | None, method: str, new_mode: Mode | None = None) -> Any:
    body = {"mode": new_mode.value} if new_mode is not None else None
    return _admin_call(ctx, admin_token, method, ROUTE, {}, body)


def _admin_call(
    ctx: typer.Context,
    admin_token: str | None,
    method: str,
    route: str,
    query: dict[str, str],
    body: Any = None,
) -> Any:
    context = app_context(ctx)
    if not context.settings.remote:
        raise UsageError("contract mode is a sowctl serve feature: give --server URL (and --admin-token)")
    if not admin_token:
        raise UsageError("--admin-token is required (or SOWCTL_ADMIN_TOKEN): /_admin takes the admin token")
    headers = {"Authorization": f"Bearer {admin_token}"}
    backend: Any = context.backend  # remote: it sends any route (sowctl api's raw call)
    return backend.raw(None, method, route, query, body, headers)


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
