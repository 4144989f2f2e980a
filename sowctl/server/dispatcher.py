"""The API's dispatcher: one operation per request, the single place where requests are
handled (``Dispatcher.handle``): authenticate by group, read and validate input, run the
handler within the write and report slots, and shape the response or the group's error
envelope; a database failure becomes 503 with one log line (``failure_response``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

import bottle
import peewee as pw

from sowctl import operations
from sowctl.foundation import trace_context
from sowctl.foundation.errors import InvalidInput, PayloadTooLarge, RateLimited, SowctlError
from sowctl.operations import Operation
from sowctl.operations.groups import Group, as_group
from sowctl.server import auth, event_stream, tracing
from sowctl.server.callers import caller_of_environ
from sowctl.server.configuration import ServerSettings
from sowctl.server.envelopes import InternalError
from sowctl.server.http import (
    check_declared_length,
    json_bytes,
    link_header,
    pagination,
    parse_query,
    public_base,
    read_json_body,
    request_origin,
)
from sowctl.server.metrics import Metrics
from sowctl.server.responses import (
    error_response,
    json_response,
    log_exception,
)
from sowctl.server.slots import Slots
from sowctl.server.streaming import StreamedJson
from sowctl.storage import failures, guards, lock_share, models
from sowctl.storage.database import with_reconnect, with_retries
from sowctl.storage.failures import Kind
from sowctl.storage.guards import GuardedSqliteDatabase, check_writable

REPORTS_BUSY = "the server is busy with other large answers; retry later"


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


def _length(body: Any) -> int:
    return len(body) if isinstance(body, list) else 0
