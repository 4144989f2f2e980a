"""The operator's pages: ``/healthz`` (alive: no database), ``/readyz`` (the database
answers, can be written, holds the schema this sowctl needs), ``/metrics`` (Prometheus) and
``/openapi.json``. Open to anyone; no API operation, so not in the registry."""

from __future__ import annotations

from typing import Any, Protocol

import bottle
import peewee as pw

from sowctl.operations import REGISTRY
from sowctl.server.configuration import ServerSettings
from sowctl.server.envelopes import InternalError
from sowctl.server.http import json_bytes
from sowctl.server.metrics import Metrics
from sowctl.server.responses import error_response, json_response, log, log_exception
from sowctl.services.lookup import Lookup
from sowctl.storage import failures, guards, models
from sowctl.storage.database import SCHEMA_VERSION, write_transaction
from sowctl.storage.guards import check_writable


class PagesDispatcher(Protocol):
    """What the pages need of the API's dispatcher (``sowctl.server.dispatcher.Dispatcher``)."""

    database: pw.Database
    settings: ServerSettings
    metrics: Metrics
    storage_failure: str | None

    def ensure_connection(self) -> None: ...

    def recover_connection(self) -> None: ...


# The schema version as migrations.schema_version reads it, its SQL built once (and prepared
# on PostgreSQL): /readyz's one statement, which a load balancer may send every second.
_SCHEMA_VERSION = Lookup(
    lambda key: models.Meta.select(models.Meta.value).where(models.Meta.key == key).limit(1)
)


def stored_schema_version() -> int:
    row = _SCHEMA_VERSION.first("schema_version")
    return int(row[0]) if row else 0


def register(app: Any, dispatcher: PagesDispatcher) -> None:
    pages = OperatorPages(dispatcher)
    app.route("/healthz", "GET", pages.healthz, name="healthz")
    app.route("/readyz", "GET", pages.readyz, name="readyz")
    app.route("/metrics", "GET", pages.metrics_text, name="metrics")
    app.route("/openapi.json", "GET", pages.openapi, name="openapi")


class OperatorPages:
    def __init__(self, dispatcher: PagesDispatcher) -> None:
        self.dispatcher = dispatcher
        self._openapi: bytes | None = None

    def healthz(self) -> bottle.HTTPResponse:
        """Alive: this worker answers (the database is /readyz's to check)."""
        return json_response(200, json_bytes({"status": "ok"}), {})

    def readyz(self) -> bottle.HTTPResponse:
        """Ready: the database answers, can be written, and holds the schema this sowctl needs."""
        try:
            # Its own short deadline: a frozen database is reported, not waited for.
            with guards.deadline(guards.HEALTH_TIMEOUT_SECONDS):
                self.dispatcher.ensure_connection()
                version = stored_schema_version()  # one statement: the database answers, with its schema
                check_writable(self.dispatcher.database)  # check_storage's, and that the file can be written
                if self.dispatcher.storage_failure is not None:
                    self._probe_write()
        except Exception as exc:
            self.dispatcher.recover_connection()
            failure = failures.classify(exc)
            self.dispatcher.metrics.database_error(
                failure.kind.value if failure is not None else "unexpected"
            )
            reason = failure.describe() if failure else f"{type(exc).__name__}: {' '.join(str(exc).split())}"
            return self._not_ready(reason)
        if version != SCHEMA_VERSION:
            return self._not_ready(f"the database schema is version {version}, sowctl's is {SCHEMA_VERSION}")
        return json_response(200, json_bytes({"status": "ok"}), {})

    def _not_ready(self, reason: str) -> bottle.HTTPResponse:
        log(bottle.request.environ, f"readiness check failed: {reason}")
        return json_response(503, json_bytes({"status": "unavailable"}), {"Retry-After": "1"})

    def metrics_text(self) -> bottle.HTTPResponse:
        from prometheus_client import CONTENT_TYPE_LATEST

        try:
            text = self.dispatcher.metrics.exposition()
        except Exception:
            log_exception(bottle.request.environ)
            return error_response("A", InternalError(), {})
        return bottle.HTTPResponse(body=text, status=200, headers={"Content-Type": CONTENT_TYPE_LATEST})

    def _probe_write(self) -> None:
        """A write that leaves nothing behind but needs room on the disk (64 KiB): raises
        while the database cannot take it."""
        meta = models.Meta
        with write_transaction("healthz"):
            meta.insert(key="healthz-probe", value="x" * 65_536).execute()
            meta.delete().where(meta.key == "healthz-probe").execute()
        self.dispatcher.storage_failure = None

    def openapi(self) -> bottle.HTTPResponse:
        try:
            if self._openapi is None:
                from sowctl.operations.admin import ADMIN
                from sowctl.server.openapi import build_openapi

                # A server with an admin token serves the test double's admin API: documented.
                admin = ADMIN.values() if self.dispatcher.settings.admin_token else ()
                self._openapi = json_bytes(build_openapi(REGISTRY.values(), admin))
        except Exception:
            log_exception(bottle.request.environ)
            return error_response("A", InternalError(), {})
        return json_response(200, self._openapi, {})
