"""sowctl serve: the whole HTTP API on the selected database, the web console and /docs."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from sowctl.commands import serve_exec
from sowctl.commands._context import app_context
from sowctl.commands.serve_options import buffer_cap, test_double_options, webhook_networks
from sowctl.foundation.errors import SowctlError
from sowctl.output.terminal import current
from sowctl.storage.created_files import new_sqlite_file, remove_sqlite_file


class LogFormat(StrEnum):
    text = "text"
    json = "json"


class ContractMode(StrEnum):
    off = "off"
    report = "report"
    strict = "strict"


def serve(
    ctx: typer.Context,
    host: Annotated[str, typer.Option("--host", help="Interface to listen on.")] = "127.0.0.1",
    port: Annotated[
        int, typer.Option("--port", min=0, max=65535, help="Port to listen on (0: any free port).")
    ] = 8000,
    workers: Annotated[int, typer.Option("--workers", min=1, help="Worker processes.")] = 1,
    threads: Annotated[int, typer.Option("--threads", min=1, help="Threads per worker.")] = 4,
    demo: Annotated[
        bool,
        typer.Option(
            "--demo",
            help="Load the demo dataset into an empty database, and print a token, an API key, "
            "a web console link and example commands.",
        ),
    ] = False,
    rate_per_minute: Annotated[
        int,
        typer.Option(
            "--rate-per-minute", min=1, help="Requests per API key per minute (po, budgets, contracts)."
        ),
    ] = 100,
    rate_per_day: Annotated[
        int,
        typer.Option("--rate-per-day", min=1, help="Requests per API key per day (po, budgets, contracts)."),
    ] = 5000,
    quiet: Annotated[bool, typer.Option("--quiet", help="No access log on stderr.")] = False,
    log_format: Annotated[
        LogFormat,
        typer.Option(
            "--log-format",
            help="The access log's lines: text, or json (one JSON object per request, with its "
            "request id and incoming traceparent).",
        ),
    ] = LogFormat.text,
    event_retention: Annotated[
        int,
        typer.Option(
            "--event-retention",
            min=0,
            help="Events the changes feed keeps, the oldest pruned first; 0: record no events.",
        ),
    ] = 100_000,
    cors: Annotated[
        list[str] | None,
        typer.Option(
            "--cors",
            metavar="ORIGIN",
            help='Allow browser calls from ORIGIN (repeatable; "*" for any). Default: no CORS.',
        ),
    ] = None,
    admin_token: Annotated[
        str | None,
        typer.Option(
            "--admin-token",
            envvar="SOWCTL_ADMIN_TOKEN",
            metavar="TOKEN",
            help="Enable the /_admin API (reset, datasets, tokens, faults, clock, request log) "
            "for callers sending Authorization: Bearer TOKEN.",
        ),
    ] = None,
    admin: Annotated[
        bool,
        typer.Option(
            "--admin", help='Enable the /_admin API with a new random token, printed as "Admin token: ...".'
        ),
    ] = False,
    latency: Annotated[
        str | None,
        typer.Option(
            "--latency", metavar="MIN..MAX", help="Add latency to API requests: 100ms, or 50ms..200ms."
        ),
    ] = None,
    fault_rate: Annotated[
        float,
        typer.Option("--fault-rate", min=0.0, max=1.0, help="Share of API requests that fail (0 to 1)."),
    ] = 0.0,
    fault_status: Annotated[
        int, typer.Option("--fault-status", min=400, max=599, help="HTTP status of an injected failure.")
    ] = 503,
    fault_mode: Annotated[
        str,
        typer.Option(
            "--fault-mode", help="error: an error response; drop: close the connection without one."
        ),
    ] = "error",
    fault_route: Annotated[
        list[str] | None,
        typer.Option(
            "--fault-route",
            metavar="PATTERN",
            help='Only these routes get latency and faults (repeatable): "/api/items/*", "GET /projects".',
        ),
    ] = None,
    seed: Annotated[
        int | None,
        typer.Option("--seed", help="Reproducible ids and tokens (implies a single worker)."),
    ] = None,
    fixed_clock: Annotated[
        str | None,
        typer.Option(
            "--clock", metavar="TIMESTAMP", help="Freeze the service clock, e.g. 2026-01-01T00:00:00Z."
        ),
    ] = None,
    record: Annotated[
        Path | None,
        typer.Option(
            "--record", metavar="FILE", help="Append every successful write request to FILE (JSON lines)."
        ),
    ] = None,
    exec_command: Annotated[
        str | None,
        typer.Option(
            "--exec",
            metavar="CMD",
            help="Start, run CMD (a shell command) with SOWCTL_SERVER, SOWCTL_TOKEN, SOWCTL_API_KEY, "
            "SOWCTL_ORG and SOWCTL_COMPANY set, stop, and exit with CMD's exit code.",
        ),
    ] = None,
    load: Annotated[
        Path | None,
        typer.Option(
            "--load",
            metavar="FILE",
            help="Replace the database's records with the dataset in FILE before serving (all or nothing).",
        ),
    ] = None,
    export_on_exit: Annotated[
        Path | None,
        typer.Option(
            "--export-on-exit", metavar="FILE", help="Write the whole database to FILE as a dataset on stop."
        ),
    ] = None,
    contract: Annotated[
        ContractMode,
        typer.Option(
            "--contract",
            help="report: name in the X-Sowctl-Contract header what a request relies on beyond the "
            "service's description (sowctl's own routes, parameters, values, leniencies); strict: "
            "refuse such a request with 400.",
        ),
    ] = ContractMode.off,
    webhook_allow_network: Annotated[
        list[str] | None,
        typer.Option(
            "--webhook-allow-network",
            metavar="CIDR",
            help="Let the webhooks of sandboxes reach this network besides public addresses "
            "(repeatable), e.g. 127.0.0.1/32 when CI jobs run their receivers on this host.",
        ),
    ] = None,
) -> None:
    """Serve the HTTP API until Ctrl-C or SIGTERM.

    Prints "Listening on URL" once the server accepts connections. The database
    is migrated before the workers start. With --demo an empty database gets the
    demo dataset; a non-empty one that holds the demo organization just gets a
    fresh token and API key.

    In a browser, URL/ is the web console (sign in with a bearer token) and
    URL/docs the interactive API documentation.

    As a test double: --admin-token (or --admin) enables /_admin (reset, datasets,
    tokens, keys, faults, clock, request log); --latency and --fault-* inject delays
    and failures; --seed and --clock make ids and timestamps reproducible; --record
    FILE keeps every successful write for 'sowctl replay'; --contract report|strict
    tells a client under test what would break against the real service.

    For operators: GET /healthz answers while the server is up, GET /readyz once the
    database answers with the schema this sowctl needs (503 otherwise; 'sowctl wait URL'
    waits for it), GET /metrics gives Prometheus metrics, --log-format json writes the
    access log as JSON lines, and the standard OTEL_* variables turn on OpenTelemetry
    traces (with sowctl's optional extra named otel installed).

    Every committed change is an event of the changes feed (GET /api/events, its
    Server-Sent Events stream /api/events/stream, 'sowctl events'); --event-retention
    bounds how many are kept.

    For one run of a test suite: --load FILE starts from a dataset, --exec CMD runs
    the suite against the server and exits with its exit code, --export-on-exit
    FILE keeps the state for the next run.

    Example: sowctl serve --demo
    """
    from sowctl.server.configuration import ServerSettings
    from sowctl.storage.database import close_database

    double = test_double_options(
        workers=workers,
        admin_token=admin_token,
        admin=admin,
        latency=latency,
        fault_rate=fault_rate,
        fault_status=fault_status,
        fault_mode=fault_mode,
        fault_route=fault_route or [],
        seed=seed,
        fixed_clock=fixed_clock,
        record=record,
    )
    double["contract"] = contract.value
    double["webhook_allowed_networks"] = webhook_networks(webhook_allow_network or [])
    buffer_bytes = buffer_cap()  # checked before anything is loaded or written
    if export_on_exit is not None:
        serve_exec.check_export_target(export_on_exit)
    db_url = _prepared_database(app_context(ctx), load, double)
    credentials = _demo_access() if demo else None
    if double["admin_token"]:
        from sowctl.server.testdouble.state import clear_runtime

        clear_runtime()  # faults and clock set through /_admin by an earlier run do not carry over
    exec_env = serve_exec.credentials(credentials) if exec_command is not None else {}
    if exec_command is not None and double["admin_token"]:
        exec_env[serve_exec.ENV_ADMIN_TOKEN] = double["admin_token"]
    close_database()  # each worker opens its own connection after the fork

    settings = ServerSettings(
        rate_per_minute=rate_per_minute,
        rate_per_day=rate_per_day,
        access_log=not quiet,
        log_format=log_format.value,
        cors_origins=tuple(cors or ()),
        # Writes waiting for the database never hold the last thread: reads keep flowing.
        write_slots=max(1, threads - 1),
        # Likewise whole-SOW reports (the chain): /healthz and ordinary requests find a thread.
        report_slots=max(1, threads - 1),
        max_buffered_bytes=buffer_bytes,
        event_retention=event_retention,
        **double,
    )
    server = _Server(db_url, settings, host, port, workers, threads, quiet)
    banner = _Banner(exec_command is not None, admin, credentials)
    if exec_command is None:
        server.run(banner.show)
        code = 0
    else:
        code = serve_exec.serve_and_exec(exec_command, lambda also: server.run(banner.show, also), exec_env)
    if export_on_exit is not None:
        serve_exec.export_file(db_url, export_on_exit)
    if code:
        raise typer.Exit(code)


def _prepared_database(context: Any, load: Path | None, double: dict[str, Any]) -> str:
    """The database opened and migrated, with the --clock set and the --load dataset in it;
    a refused dataset leaves nothing behind (not even the SQLite file it would have made)."""
    if context.settings.remote:
        context.open_local_database("serve")  # says why serve cannot run against --server
    # A file that cannot be read, or is not a dataset, is refused before the database exists.
    source = serve_exec.open_load(load) if load is not None else None
    created = new_sqlite_file(context.settings.database)
    context.open_local_database("serve")  # opens and migrates
    if double["fixed_now"] is not None:
        from sowctl.foundation import clock

        clock.set_fixed_now(double["fixed_now"])  # --demo data is stamped with it too
    if load is not None:
        try:
            loaded = serve_exec.load_file(load, source)
        except SowctlError:
            if created is not None:  # nothing starts, and nothing is left behind
                remove_sqlite_file(created)
            raise
        current().err.write(f"loaded {sum(loaded.values()):,} records from {load}\n")
    return str(context.settings.database)


@dataclass(frozen=True)
class _Banner:
    """What is printed once the server listens: the URL, and the demo's or admin's access."""

    for_a_command: bool  # --exec: CMD's stdout is often a CI log, so no banner and no secrets
    admin: bool
    credentials: tuple[str, str, bool] | None

    def show(self, url: str, settings: Any) -> None:
        if self.for_a_command:
            current().err.write(
                f"sowctl: serving on {url} while the command runs (credentials in its environment)\n"
            )
            current().err.flush()
            return
        if self.admin:
            _print(f"Admin token: {settings.admin_token}")
        _print(f"Listening on {url}")
        if self.credentials is not None:
            admin_token = settings.admin_token if self.admin else None
            _print(_demo_text(url, *self.credentials, admin_token=admin_token))


@dataclass(frozen=True)
class _Server:
    db_url: str
    settings: Any  # ServerSettings
    host: str
    port: int
    workers: int
    threads: int
    quiet: bool

    def run(
        self, banner: Callable[[str, Any], None], also_ready: Callable[[str], None] | None = None
    ) -> None:
        """Serve until stopped; ``banner`` and then ``also_ready`` are told the URL once it listens."""
        from functools import partial

        from sowctl.server.app import create_app
        from sowctl.server.runner import serve as run_server

        def on_ready(url: str) -> None:
            banner(url, self.settings)
            if also_ready is not None:
                also_ready(url)

        try:
            run_server(
                partial(create_app, self.db_url, self.settings),
                host=self.host,
                port=self.port,
                workers=self.workers,
                threads=self.threads,
                on_ready=on_ready,
                access_log=not self.quiet,
                settings=self.settings,
            )
        except KeyboardInterrupt:  # Ctrl-C is how a foreground server is meant to stop
            pass
        except OSError as exc:  # the port is taken, the host is not ours...
            from sowctl.foundation.errors import ServiceUnavailable

            raise ServiceUnavailable(
                f"cannot listen on {self.host}:{self.port}: {exc.strerror or exc}"
            ) from None


def _demo_access() -> tuple[str, str, bool]:
    from sowctl.services.demo import ensure_demo

    access = ensure_demo()
    return access.token, access.api_key, access.loaded


def _demo_text(url: str, token: str, key: str, loaded: bool, *, admin_token: str | None = None) -> str:
    """The demo's credentials, a ready console link and the lines to paste into another
    shell. The link carries the tokens in its fragment (``#token=...``), which a browser
    never sends to the server; a generated admin token (``--admin``) rides along, one
    given with ``--admin-token`` is not printed."""
    import shlex
    from urllib.parse import urlencode

    from sowctl.services.demo_data import DEMO_COMPANY, DEMO_ORG, DEMO_PROJECT_ID, DEMO_SOW

    state = "Demo dataset loaded." if loaded else "Demo dataset already present (not reloaded)."
    sowctl = _sowctl_command()
    exports = {
        "SOWCTL_SERVER": url,
        "SOWCTL_TOKEN": token,
        "SOWCTL_API_KEY": key,
        "SOWCTL_ORG": DEMO_ORG,
        "SOWCTL_COMPANY": DEMO_COMPANY,
    }
    fragment = urlencode({"token": token, **({"admin": admin_token} if admin_token else {})})
    lines = [
        state,
        f"  console:  {url}/#{fragment}",
        f"  token:    {token}",
        f"  API key:  {key}",
        f"  org:      {DEMO_ORG}",
        f"  company:  {DEMO_COMPANY}",
        "",
        "In another shell, paste:",
        "  unset SOWCTL_DB SOWCTL_PROFILE",
        "  export " + " ".join(f"{name}={shlex.quote(value)}" for name, value in exports.items()),
        "Then try:",
        f"  {sowctl} items list {DEMO_SOW}",
        f"  {sowctl} chain check {DEMO_SOW}",
        f"  {sowctl} budgets views --project {DEMO_PROJECT_ID}",
        f'  curl -H "Authorization: Bearer {token}" {url}/api/sow/{DEMO_SOW}/items',
        f'  curl -H "x-api-key: {key}" -H "x-organization-id: {DEMO_ORG}" '
        f'-H "x-company-id: {DEMO_COMPANY}" "{url}/api/external/budget-views?project_id={DEMO_PROJECT_ID}"',
    ]
    return "\n".join(lines)


def _sowctl_command() -> str:
    """``sowctl`` when another shell will find it on PATH, else this one's full path.

    A sowctl inside a virtual environment is on PATH only where that environment is
    active, which another shell usually is not.
    """
    import shlex
    import shutil

    in_venv = sys.prefix != sys.base_prefix
    script = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if script is not None and script.name == "sowctl" and script.exists():
        found = shutil.which("sowctl")
        if found and not in_venv and Path(found).resolve() == script.resolve():
            return "sowctl"
        return shlex.quote(os.path.abspath(script))
    return f"{shlex.quote(sys.executable)} -m sowctl"  # started as python -m sowctl


def _print(text: str) -> None:
    current().out.write(text + "\n")
    current().out.flush()
