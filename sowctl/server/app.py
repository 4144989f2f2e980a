"""The Bottle application, built from the operation registry (``sowctl.operations``).

``create_app`` registers one route per operation, plus the operator's pages (``/healthz``,
``/readyz``, ``/metrics`` and ``/openapi.json``: ``sowctl.server.operator_pages``). Every
API route goes through ``Dispatcher.handle`` (``sowctl.server.dispatcher``): authenticate by
group, read and validate input, run the handler, and shape the response or the group's error
envelope. Bottle's own
errors (unknown route, wrong method) get the envelope of the group the path belongs to,
never an HTML page. The web console's pages and files (``/``, ``/docs``: ``sowctl.server.console``) come last.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import bottle
import peewee as pw

from sowctl import operations
from sowctl.foundation.errors import InvalidInput, MethodNotAllowed, SowctlError
from sowctl.foundation.redaction import mask_text
from sowctl.operations import Operation
from sowctl.operations.routes import match as operation_of
from sowctl.schemas.common import build_deferred_models
from sowctl.server import auth, cors, operator_pages
from sowctl.server.configuration import ServerSettings
from sowctl.server.dispatcher import Dispatcher
from sowctl.server.envelopes import HttpStatusError, InternalError, envelope, group_of_path
from sowctl.server.http import (
    EVERY_RESPONSE_HEADERS,
    JSON_CONTENT_TYPE,
    check_path,
    json_bytes,
    route_path,
)
from sowctl.server.observed import Observation, ObservedBody
from sowctl.server.responses import (
    REQUEST_ID_KEY,
    RedactingStream,
    log_exception,
    new_request_id,
    request_id_line,
)
from sowctl.server.routing import HTTP_METHODS, allowed_methods, method_phrase, route_order
from sowctl.services import events as outbox
from sowctl.storage import models
from sowctl.storage.database import open_database

EXPOSED_HEADERS = cors.EXPOSE_HEADERS


def create_app(
    database: str | os.PathLike | pw.Database,
    settings: ServerSettings | None = None,
) -> bottle.Bottle:
    """A WSGI application serving the whole API on ``database``.

    ``database`` is a SQLite path or a database URL (opened and migrated here, once per
    process) or an already opened Peewee database. Peewee keeps one connection per thread,
    so each worker thread opens its own on its first request and reuses it afterwards.
    """
    settings = settings or ServerSettings()
    outbox.set_retention(settings.event_retention)  # this process's writes prune by it
    if isinstance(database, pw.Database):
        models.database_proxy.initialize(database)
    else:
        database = open_database(database)
        if not _in_memory(database):
            # Threads connect on their first request; closing this one keeps the app
            # safe to build before a fork (no connection shared between processes).
            database.close()
    app = SowctlBottle(Dispatcher(database, settings))
    if settings.test_double:  # serve --admin, faults, clock, seed, --record: sowctl.server.testdouble.layer
        from sowctl.server.testdouble.admin_api import register
        from sowctl.server.testdouble.layer import install

        layer = install(app)
        if settings.admin_token:
            register(app, layer)
    return app


class SowctlBottle(bottle.Bottle):
    """Bottle with JSON errors everywhere, and routes taken from the registry."""

    def __init__(self, dispatcher: Dispatcher) -> None:
        super().__init__(catchall=True)
        self.dispatcher = dispatcher
        self.settings = dispatcher.settings
        # Routes that take larger bodies than settings.max_body_bytes (the test double's
        # dataset upload), by path: the limit, and who may send such a body, judged from
        # the Authorization header alone, before any of the body is read.
        self.body_limits: dict[str, tuple[int, Callable[[str | None], bool]]] = {}
        self.add_hook("before_request", _start_request)
        self.add_hook("after_request", self._finish_request)
        operator_pages.register(self, dispatcher)
        for op in sorted(operations.load_all().values(), key=route_order):
            self.route(
                route_path(op.path),
                op.method,
                _callback(dispatcher, op),
                name=op.name,
            )
        build_deferred_models()
        if self.settings.cors_origins:
            self.route("/<path:path>", "OPTIONS", self._preflight, name="cors-preflight")
        # The web console and /docs: after the API's routes, so no API request meets them.
        from sowctl.server import console

        console.register(self, admin=bool(self.settings.admin_token))

    def __call__(self, environ: dict, start_response: Callable[..., Any]) -> Any:
        # Here, not in a hook: Bottle.__call__ runs self.wsgi, which the test double replaces
        # with its layer (its injected faults are answers too) on the instance. The server's
        # log is redacted here too, for every line written to it (tracebacks included).
        if environ.get("wsgi.errors") is not None:
            environ["wsgi.errors"] = RedactingStream(environ["wsgi.errors"])

        def start(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            present = {name.lower() for name, _ in headers}
            extra = [
                (name, value) for name, value in EVERY_RESPONSE_HEADERS.items() if name.lower() not in present
            ]
            return start_response(status, [*headers, *extra], exc_info)

        observation = Observation(self.router, self.dispatcher.metrics, environ)
        try:
            body = self.wsgi(environ, observation.start_response(start))
        except ConnectionError:  # the test double's "drop" fault: no status reached anyone
            observation.finish("dropped")
            raise
        except BaseException:
            observation.finish("500")
            raise
        return ObservedBody(body, observation)

    def body_limit(self, path: str, authorization: str | None = None) -> int | None:
        """The largest request body a request to ``path`` with ``authorization`` may carry;
        ``sowctl serve``'s engine refuses a longer one (413) before reading it. None: the
        path takes larger bodies, but not from this caller (the engine answers 401 to one
        above ``settings.max_body_bytes``)."""
        special = self.body_limits.get(path)
        if special is None:
            return self.settings.max_body_bytes
        limit, allowed = special
        return limit if allowed(authorization) else None

    def is_heavy(self, method: str, path: str, body_bytes: int) -> bool | None:
        """Whether an API request is heavy from its head alone, so that ``sowctl serve`` runs
        it in a helper process (``sowctl.engine.heavy``): a body past
        ``settings.heavy_body_bytes`` (a reorder of thousands of items, an order of hundreds
        of lines) or a report (a whole SOW's chain, a page of purchase orders). The test
        double's ``/_admin`` routes stay in the worker. None for an event stream: it stays in
        the worker however much its caller spent (it waits without a thread there; a helper
        would be held for the stream's whole life)."""
        if path.startswith("/_admin/events/stream"):
            return None
        if not path.startswith("/api/"):
            return False
        try:
            found = operation_of(method, path)
        except MethodNotAllowed:
            return False
        if found is not None and found[0].stream:
            return None
        if body_bytes > self.settings.heavy_body_bytes:
            return True
        return found is not None and found[0].report

    # --- errors Bottle raises itself (routing), and the last resort -----------

    def default_error_handler(self, res: bottle.HTTPError) -> bytes:
        environ = bottle.request.environ
        path = bottle.request.path
        shown = mask_text(f"{bottle.request.method} {path}")  # the answer repeats what was asked
        status = res.status_code
        headers: dict[str, str] = {}
        if status == 404:
            error: SowctlError = HttpStatusError(404, f"no route for {shown}")
        elif status == 405:
            allowed = allowed_methods(res.headers.get("Allow", ""))
            headers["Allow"] = ", ".join(allowed)
            # A method HTTP does not define is not quoted: whatever a client sends there (a
            # token, by mistake) is not echoed.
            method = bottle.request.method if bottle.request.method in HTTP_METHODS else "this method"
            target = mask_text(path)
            error = HttpStatusError(
                405, f"{method_phrase(method)} not allowed for {target} (allowed: {', '.join(allowed)})"
            )
        elif status >= 500:
            if res.traceback:  # Bottle caught an exception (already written to wsgi.errors)
                request_id_line(environ)
            error = InternalError()
        elif isinstance(res.exception, SowctlError):  # refused before routing (_start_request)
            error = res.exception
        else:
            error = HttpStatusError(status, str(res.body or bottle.HTTP_CODES.get(status, "error")))
        group = group_of_path(path)
        response = envelope(group, error)
        headers.update(auth.uncharged_rate_headers(group, self.settings))  # no key was charged
        bottle.response.status = response.status
        for name, value in {**response.headers, **headers}.items():
            bottle.response.set_header(name, value)
        bottle.response.content_type = JSON_CONTENT_TYPE
        return json_bytes(response.body)

    def _cast(self, out: Any, peek: Any = None) -> Any:
        try:
            return super()._cast(out, peek)
        except Exception:  # an error while rendering an error: still JSON, never HTML
            log_exception(bottle.request.environ)
            bottle.response.status = 500
            bottle.response.content_type = JSON_CONTENT_TYPE
            body = json_bytes(envelope(group_of_path(bottle.request.path), InternalError()).body)
            bottle.response.set_header("Content-Length", str(len(body)))
            return [body]

    # --- CORS (rules in sowctl.server.cors) ----------------------------------------

    def _finish_request(self) -> None:
        request_id = bottle.request.environ.get(REQUEST_ID_KEY)
        if request_id:
            bottle.response.set_header("X-Request-Id", request_id)
        origin = bottle.request.get_header("Origin")
        for name, value in cors.response_headers(self.settings.cors_origins, origin):
            if name == "Vary":
                bottle.response.add_header(name, value)
            else:
                bottle.response.set_header(name, value)

    def _preflight(self, path: str) -> bottle.HTTPResponse:
        headers = cors.preflight_headers(
            self.settings.cors_origins,
            bottle.request.get_header("Origin"),
            bottle.request.get_header("Access-Control-Request-Method"),
        )
        return bottle.HTTPResponse(status=204, headers=headers)


# --- helpers ----------------------------------------------------------------------


def _callback(dispatcher: Dispatcher, op: Operation):
    def route(**params: str) -> bottle.HTTPResponse:
        return dispatcher.handle(op, params)

    route.__name__ = op.handler.__name__
    route.__doc__ = op.summary
    return route


def _start_request() -> None:
    environ = bottle.request.environ
    environ[REQUEST_ID_KEY] = new_request_id()
    try:
        check_path(environ.get("bottle.raw_path", ""))  # before routing, which decodes it
    except InvalidInput as exc:
        raise bottle.HTTPError(400, exc.message, exception=exc) from None


def _in_memory(database: pw.Database) -> bool:
    return isinstance(database, pw.SqliteDatabase) and database.database in (":memory:", "")
