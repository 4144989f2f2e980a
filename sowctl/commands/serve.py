"""sowctl serve: the whole HTTP API on the selected database (contract §4)."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from sowctl.context import app_context


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
            help="Load the demo dataset into an empty database, and print a token, an API key "
            "and example commands.",
        ),
    ] = False,
    rate_per_minute: Annotated[
        int, typer.Option("--rate-per-minute", min=1, help="Group B requests per API key per minute.")
    ] = 100,
    rate_per_day: Annotated[
        int, typer.Option("--rate-per-day", min=1, help="Group B requests per API key per day.")
    ] = 5000,
    quiet: Annotated[bool, typer.Option("--quiet", help="No access log on stderr.")] = False,
) -> None:
    """Serve the HTTP API (Groups A, B and C) until Ctrl-C or SIGTERM.

    Prints "Listening on URL" once the server accepts connections. The database
    is migrated before the workers start. With --demo an empty database gets the
    demo dataset; a non-empty one that holds the demo organization just gets a
    fresh token and API key.
    """
    from functools import partial

    from sowctl import models
    from sowctl.server.app import create_app
    from sowctl.server.runner import serve as run_server
    from sowctl.server.settings import ServerSettings

    context = app_context(ctx)
    context.open_local_database("serve")  # refuses --server; opens and migrates
    db_url = context.settings.db
    credentials = _demo_credentials() if demo else None
    models.database_proxy.obj.close()  # each worker opens its own connection after the fork

    settings = ServerSettings(
        rate_per_minute=rate_per_minute, rate_per_day=rate_per_day, access_log=not quiet
    )

    def ready(url: str) -> None:
        _print(f"Listening on {url}")
        if credentials is not None:
            _print(_demo_text(url, *credentials))

    try:
        run_server(
            partial(create_app, db_url, settings),
            host=host,
            port=port,
            workers=workers,
            threads=threads,
            on_ready=ready,
            access_log=not quiet,
        )
    except KeyboardInterrupt:  # Ctrl-C is how a foreground server is meant to stop
        pass
    except OSError as exc:  # the port is taken, the host is not ours...
        from sowctl.errors import ServiceUnavailable

        raise ServiceUnavailable(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None


def _demo_credentials() -> tuple[str, str, bool]:
    """(token, API key, whether the dataset was loaded now) for the demo organization."""
    from sowctl import clock, demo_data
    from sowctl import models as m
    from sowctl.errors import UsageError
    from sowctl.services import credentials

    loaded = False
    if not m.Organization.select().exists():
        from sowctl.services.dataset import import_dataset

        import_dataset(demo_data.demo_dataset(clock.today()))
        loaded = True
    elif m.Organization.get_or_none(m.Organization.id == demo_data.DEMO_ORG) is None:
        raise UsageError(
            f"--demo: the database already holds data and no demo organization {demo_data.DEMO_ORG}; "
            "use an empty database (e.g. --db demo.db) for the demo"
        )
    token = credentials.create_token(demo_data.DEMO_USER, demo_data.DEMO_ORG, "admin").secret
    key = credentials.create_key(demo_data.DEMO_ORG).secret
    return token, key, loaded


def _demo_text(url: str, token: str, key: str, loaded: bool) -> str:
    from sowctl.demo_data import DEMO_COMPANY, DEMO_ORG, DEMO_PROJECT_ID, DEMO_SOW

    state = "Demo dataset loaded." if loaded else "Demo dataset already present (not reloaded)."
    lines = [
        state,
        f"  token:    {token}",
        f"  API key:  {key}",
        f"  org:      {DEMO_ORG}",
        f"  company:  {DEMO_COMPANY}",
        "",
        "Try:",
        f"  sowctl --server {url} --token {token} items list {DEMO_SOW}",
        f"  sowctl --server {url} --token {token} chain check {DEMO_SOW}",
        f'  curl -H "Authorization: Bearer {token}" {url}/api/sow/{DEMO_SOW}/items',
        f'  curl -H "x-api-key: {key}" -H "x-organization-id: {DEMO_ORG}" '
        f'-H "x-company-id: {DEMO_COMPANY}" "{url}/api/external/budget-views?project_id={DEMO_PROJECT_ID}"',
    ]
    return "\n".join(lines)


def _print(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()
