"""The Bottle application, built from the operation registry (``sowctl.operations``).

``create_app`` registers one route per operation, plus the operator's pages (``/healthz``,
``/readyz``, ``/metrics`` and ``/openapi.json``: ``sowctl.server.operator_pages``). Every
API route goes through ``Dispatcher.handle``: authenticate by group, read and validate
input, run the handler, and shape the response or the group's error envelope. Bottle's own
errors (unknown route, wrong method) get the envelope of the group the path belongs to,
never an HTML page. The web console's pages and files (``/``, ``/docs``: ``sowctl.server.console``) come last.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

import bottle
import peewee as pw

from sowctl import operations
from sowctl.foundation import trace_context
from sowctl.foundation.errors import InvalidInput, MethodNotAllowed, PayloadTooLarge, RateLimited, SowctlError
from sowctl.foundation.redaction import mask_text
from sowctl.operations import Operation
from sowctl.operations.groups import Group, as_group
from sowctl.operations.routes import match as operation_of
from sowctl.schemas.common import build_deferred_models
from sowctl.server import auth, cors, event_stream, operator_pages, tracing
from sowctl.server.callers import caller_of_environ
from sowctl.server.configuration import ServerSettings
from sowctl.server.envelopes import HttpStatusError, InternalError, envelope, group_of_path
from sowctl.server.http import (
    EVERY_RESPONSE_HEADERS,
    JSON_CONTENT_TYPE,
    check_declared_length,
    check_path,
    json_bytes,
    link_header,
    pagination,
    parse_query,
    public_base,
    read_json_body,
    request_origin,
    route_path,
)
from sowctl.server.metrics import Metrics
from sowctl.server.observed import Observation, ObservedBody
from sowctl.server.responses import (
    REQUEST_ID_KEY,
    RedactingStream,
    error_response,
    json_response,
    log_exception,
    new_request_id,
    request_id_line,
)
from sowctl.server.routing import HTTP_METHODS, allowed_methods, method_phrase, route_order
from sowctl.server.slots import Slots
from sowctl.server.streaming import StreamedJson
from sowctl.services import events as outbox
from sowctl.storage import failures, guards, lock_share, models
from sowctl.storage.database import open_database, with_reconnect, with_retries
from sowctl.storage.failures import Kind
from sowctl.storage.guards import GuardedSqliteDatabase, check_writable

EXPOSED_HEADERS = cors.EXPOSE_HEADERS
REPORTS_BUSY = "the server is busy with other large answers; retry later"


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


class Dispatcher:
    """Runs one operation per request: the single place where requests are handled."""

    def __init__(self, database: pw.Database, settings: ServerSettings) -> None:
        self.database = database
        self.settings = settings
        # Set when a write failed for want of storage (disk full, I/O error): /healthz
        # answers 503 until a probe write succeeds again.
        self.storage_failure: str | None = None
        self.metrics = Metrics()
        # Writes stuck behind a database lock, and whole-SOW reports, never hold every
        # thread of a worker (sowctl.server.slots).
        self._write_slots = (
            Slots(
                settings.write_slots,
                settings.write_slot_wait,
                "the database is busy; retry later",
                partial(self.metrics.slot_wait, "write"),
            )
            if settings.write_slots
            else None
        )
        self._report_slots = (
            Slots(
                settings.report_slots,
                settings.report_slot_wait,
                REPORTS_BUSY,
                partial(self.metrics.slot_wait, "report"),
            )
            if settings.report_slots
            else None
        )
        # Open event streams of this process, in all and per caller (sowctl.server.event_stream).
        self.event_streams = event_stream.Streams(
            settings.event_streams, settings.event_streams_per_caller, settings.event_stream_seconds
        )

    # --- database -----------------------------------------------------------

    def ensure_connection(self, *, probe_idle: bool = True) -> None:
        """Connect this thread; ``probe_idle``: first drop a connection the server ended
        while it sat idle (PostgreSQL restarted since the last request; one system call)."""
        if models.database_proxy.obj is not self.database:  # several apps in one process (tests)
            models.database_proxy.initialize(self.database)
        if isinstance(self.database, GuardedSqliteDatabase):
            self.database.reopen_if_writable()
        if probe_idle:
            guards.drop_dead_connection(self.database)
        if self.database.is_closed():
            self.database.connect(reuse_if_open=True)

    def recover_connection(self) -> None:
        """After a database error, drop this thread's connection unless it is SQLite's
        (whose read-only connections ``ensure_connection`` replaces)."""
        if isinstance(self.database, pw.SqliteDatabase):
            return
        try:
            self.database.close()
        except Exception:  # a broken connection may fail to close; it is gone either way
            pass

    # --- requests -----------------------------------------------------------

    def handle(self, op: Operation, params: dict[str, str]) -> bottle.HTTPResponse:
        environ = bottle.request.environ
        if op.token_read is not None:
            answered = self._token_read(op, params, environ)
            if answered is not None:
                return answered
        headers: dict[str, str] = {}
        release: Callable[[], None] | None = None  # a report slot this request holds
        try:
            check_declared_length(environ, self.settings.max_body_bytes)
            self.ensure_connection()
            if op.group.uses_api_key:
                # Counting the request against its key's rate limit is a write.
                with self._write_slot(True):
                    caller, company_id = auth.external_caller(environ, op.path, self.settings, headers)
            else:
                caller, company_id = auth.bearer_caller(environ.get("HTTP_AUTHORIZATION")), None
            if op.write:
                caller.require_write()
            query = parse_query(environ.get("QUERY_STRING", ""))
            page = limit = None
            if op.paginated:
                page, limit = pagination(
                    query,
                    default_limit=self.settings.default_limit,
                    max_limit=self.settings.max_limit,
                    max_page=self.settings.max_page,
                )
            body = read_json_body(environ, self.settings.max_body_bytes) if op.body is not None else None
            request = operations.build_request(
                op,
                caller,
                params,
                query,
                body,
                offset=(page - 1) * limit if page and limit else 0,
                limit=limit,
                company_id=company_id,
            )
            if op.stream:  # Server-Sent Events, made as events commit
                return self.event_streams.respond(environ, caller.organization_id, request.query, headers)
            if op.write:
                check_writable(self.database)  # refused alike by every connection, not by chance
            if op.report and self._report_slots is not None:
                self._report_slots.acquire(caller_of_environ(environ))
                release = partial(self._report_slots.release, caller=caller_of_environ(environ))
            with (
                # The caller's share of SQLite's write lock, waited for before a write slot is taken.
                lock_share.acting_for(caller_of_environ(environ), self.database if op.write else None),
                self._write_slot(op.write),
                trace_context.serving(tracing.traceparent(environ)),
            ):
                result = self._run(op, request)
            if op.paginated and page is not None and limit is not None:
                total = result.total if result.total is not None else _length(result.body)
                headers["X-Total-Count"] = str(total)
                headers["Link"] = link_header(
                    public_base(*request_origin(environ)),
                    bottle.request.script_name.rstrip("/") + bottle.request.path,
                    query,
                    page,
                    limit,
                    total,
                )
            if op.report:
                # Written as it is sent, and the slot held until the server closes the body
                # (sent, or the client gone): a report's size is the caller's to choose.
                streamed = StreamedJson(result.body, environ, release)
                release = None
                payload: bytes | StreamedJson = streamed.small() or streamed
            else:
                payload = json_bytes(result.body)
        except Exception as exc:
            if release is not None:
                release()
            return self.failure_response(environ, op.group, exc, headers)
        return json_response(op.status, payload, headers)

    def _token_read(self, op: Operation, params: dict[str, str], environ: dict) -> bottle.HTTPResponse | None:
        """``handle``'s answer in one statement (``Operation.token_read``): the token
        authenticated in the read's statement. None when the ordinary path must answer: no
        usable bearer header, or a query string or path parameter that path refuses after
        authenticating; so every refusal comes in the order it always does."""
        secret = auth.bearer_secret(environ.get("HTTP_AUTHORIZATION"))
        if secret is None or not operations.token_read_applies(op, params):
            return None
        query_string = environ.get("QUERY_STRING", "")
        if query_string:
            try:
                parse_query(query_string)  # taken by no token read, but refused when malformed
            except InvalidInput:
                return None
        try:
            check_declared_length(environ, self.settings.max_body_bytes)
            # Not probed first: the read itself finds a connection the server ended (one
            # system call less on the hot path) and runs again on a new one.
            self.ensure_connection(probe_idle=False)
            read = partial(auth.token_read, op, secret, params)
            _, result = with_reconnect(
                partial(with_retries, read, attempts=self.settings.read_attempts), self._reconnect
            )
            payload = json_bytes(result.body)
        except Exception as exc:
            return self.failure_response(environ, op.group, exc, {})
        return json_response(op.status, payload, {})

    def _reconnect(self) -> None:
        self.recover_connection()
        self.ensure_connection()

    def failure_response(
        self, environ: dict, group: Group | str, exc: Exception, headers: dict[str, str]
    ) -> bottle.HTTPResponse:
        """The one answer to a failed request (the API's and /_admin's alike): a typed
        error in the group's envelope; a database failure (``storage.failures``: busy, unreachable,
        cannot store), 503 with one log line, and /healthz says so until a write succeeds
        when it cannot store; anything else, 500 with its traceback in the log."""
        group = as_group(group)
        if group.rate_limited and "X-RateLimit-Limit" not in headers:  # failed before the key was charged
            headers = {**headers, **auth.uncharged_rate_headers(group, self.settings)}
        if isinstance(exc, SowctlError):
            if isinstance(exc, RateLimited):
                self.metrics.rate_limited.inc()
            elif isinstance(exc, PayloadTooLarge):
                self.metrics.budget_refusals.labels("body-size").inc()
            return error_response(group, exc, headers)
        failure = failures.classify(exc)
        if failure is not None or isinstance(exc, pw.PeeweeException):
            self.recover_connection()
            self.metrics.database_error(failure.kind.value if failure is not None else "unexpected")
        if failure is None:
            log_exception(environ)
            return error_response(group, InternalError(), headers)
        if failure.kind is Kind.STORAGE:
            self.storage_failure = failure.describe()
        return error_response(group, failure.error(), headers)  # which logs its one line

    def _run(self, op: Operation, request: operations.Request) -> operations.Result:
        if op.write:
            return op.run(request)  # retried after a serialization failure (SQLSTATE 40001)
        # Reads are safe to repeat: ride out a briefly locked database before giving up.
        return with_retries(lambda: op.handler(request), attempts=self.settings.read_attempts)

    @contextlib.contextmanager
    def _write_slot(self, writes: bool) -> Iterator[None]:
        """Hold one of the worker's write slots (``ServerSettings.write_slots``) while a
        write runs (never while a body is read: a slow client must not hold one); the
        rule of waiting and refusing is ``server.slots``'."""
        if not writes or self._write_slots is None:
            yield
            return
        with self._write_slots.held():  # shared: a caller's parallel writes must not wait on each other
            yield


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


def _length(body: Any) -> int:
    return len(body) if isinstance(body, list) else 0
