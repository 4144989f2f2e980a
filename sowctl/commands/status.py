"""sowctl status: which mode, target and identity are in effect, and whether the target answers."""

from __future__ import annotations

from typing import Any

import typer

from sowctl.commands._context import app_context
from sowctl.commands._options import Json
from sowctl.output.options import output_options
from sowctl.output.render import emit_json, emit_object
from sowctl.output.terminal import current

HEALTH_TIMEOUT = 3.0  # seconds; status must answer quickly even when the server does not


@output_options(columns=True, pager=True)
def status(ctx: typer.Context, json_: Json = False) -> None:
    """Show the mode, server or database, profile and identity in effect, and whether it answers.

    Example: sowctl --server http://127.0.0.1:8000 status
    """
    from sowctl.backends.profiles import mask_url
    from sowctl.foundation.redaction import secret_hint

    context = app_context(ctx)
    settings = context.settings
    report: dict[str, Any] = {
        "mode": "remote" if settings.remote else "local",
        "server": mask_url(settings.server) if settings.remote else None,
        "timeout": settings.timeout if settings.remote else None,
        "database": None,
        "profile": settings.profile,
        "identity": {
            "token": secret_hint(settings.token) or None,
            "apiKey": secret_hint(settings.api_key) or None,
            "org": settings.org,
            "company": settings.company,
        },
    }
    failure = 5  # the exit code when the target does not answer
    if settings.remote:
        from sowctl.backends.remote import RemoteBackend

        backend = RemoteBackend(settings)
        try:
            ok, detail = backend.health(min(HEALTH_TIMEOUT, settings.timeout or HEALTH_TIMEOUT))
            report.update(reachable=ok, detail=detail)
            if ok:
                report["credentials"] = _check_credentials(backend, settings)
        finally:
            backend.close()
    else:
        report["database"] = mask_url(settings.database)
        health, failure = _database_health(settings.database)
        report.update(health)
        unused = {"token": settings.token, "apiKey": settings.api_key}
        if any(unused.values()):  # given, but nothing will send them: say so
            report["credentials"] = {
                name: "not used: local mode (no server)" for name, value in unused.items() if value
            }
    if json_:
        emit_json(report)
    else:
        flat = {key: value for key, value in report.items() if key not in ("identity", "credentials")}
        for group in ("identity", "credentials"):
            flat.update({f"{group}.{key}": value for key, value in (report.get(group) or {}).items()})
        emit_object({key: value for key, value in flat.items() if value is not None}, json_mode=False)
    if not report["reachable"]:
        current().err.write(f"error: {report['detail']}\n")
        raise typer.Exit(failure)
    refused = [
        f"{name}: {state}"
        for name, state in (report.get("credentials") or {}).items()
        if state.startswith("refused")
    ]
    if refused:
        current().err.write(f"error: the server refused the credentials ({'; '.join(refused)})\n")
        raise typer.Exit(4)


def _check_credentials(backend: Any, settings: Any) -> dict[str, str]:
    """Each credential given, tried on the server as ``gh auth status`` does: "ok" or why not.

    The token with the cheapest call it may make (one project); the API key with the
    organization and company headers on a budget-view list of project 0, which a valid
    key answers with "project 0 not found" (and counts once against its rate limit).
    """
    from sowctl.foundation.errors import NotFound, SowctlError

    checks: dict[str, str] = {}
    if settings.token:
        try:
            backend.call("projects.list", query={"limit": "1"}, all_pages=False)
            checks["token"] = "ok"
        except SowctlError as exc:
            checks["token"] = f"refused: {exc.message}"
    if settings.api_key:
        if not (settings.org and settings.company):
            checks["apiKey"] = "not checked: needs --org and --company"
        else:
            try:
                backend.call("finance.budget_views", query={"project_id": "0"})
                checks["apiKey"] = "ok"
            except NotFound as exc:
                checks["apiKey"] = "ok" if exc.message.startswith("project") else f"refused: {exc.message}"
            except SowctlError as exc:
                checks["apiKey"] = f"refused: {exc.message}"
    return checks


def _database_health(db: str) -> tuple[dict[str, Any], int]:
    """Open the database without creating or migrating it; report its schema version, and
    the exit code if it is not usable: 2 for a file that does not exist, as every command
    that reads says (a mistyped --db is the user's to fix), 5 for one that is unusable."""
    from sowctl.foundation.errors import SowctlError
    from sowctl.storage import database as database_module

    try:
        database = database_module.open_database(db, migrate=False, create=False)
        try:
            version = database_module.schema_version() if _has_meta(database) else 0
        finally:
            database.close()
    except SowctlError as exc:  # a missing file among them: the UsageError every reader gives
        health = {"reachable": False, "detail": exc.message, "schemaVersion": None}
        return {**health, "expectedSchemaVersion": database_module.SCHEMA_VERSION}, int(exc.exit_code)
    except Exception as exc:  # a driver error: the database is there but unusable
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return {"reachable": False, "detail": f"cannot open database: {first}", "schemaVersion": None}, 5
    expected = database_module.SCHEMA_VERSION
    if version == expected:
        detail = "ok"
    elif version < expected:
        detail = f"ok (schema version {version}; the next command migrates it to {expected})"
    else:
        detail = f"schema version {version} is newer than this sowctl ({expected}); upgrade sowctl"
    return {
        "reachable": version <= expected,
        "detail": detail,
        "schemaVersion": version,
        "expectedSchemaVersion": expected,
    }, 5


def _has_meta(database: Any) -> bool:
    from sowctl.storage import models

    return database.table_exists(models.Meta._meta.table_name)
