"""``sowctl serve`` as a test double: the layer in front of the API for tests of client code.

``create_app`` installs it only when a test-double option is on
(``ServerSettings.test_double``); otherwise requests go straight to Bottle and
cost nothing extra. The web console's pages and files (``/``, ``/docs``,
``sowctl.server.console``) pass straight through, as ``/healthz`` does. Per request,
in this order:

1. **Shared state.** With the admin API on, the run-time settings that
   ``/_admin/faults`` and ``/_admin/clock`` store in the database are read (one
   query on ``Meta``) so that every worker process follows them at once, and
   the service clock is set from them. Without it, the start-up options apply.
2. **Latency and faults** (``sowctl.server.testdouble.faults``), decided before the
   handler runs, so an injected failure never changes stored data. Never for
   ``/healthz``, ``/_admin/*`` or CORS preflights.
3. **The API itself** (``HostApp``, i.e. ``Dispatcher.handle``).
4. **Request log** (admin API on): method, path, query, status, latency,
   caller identity and the masked, truncated bodies, in the database
   (``GET /_admin/requests``). ``/healthz`` and ``/_admin/*`` are not logged.
5. **Recording** (``--record FILE``, ``sowctl.server.testdouble.recorder``).
"""

from __future__ import annotations

import contextlib
import errno
import json
import random
import secrets
import threading
import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any

import bottle

from sowctl.foundation import clock
from sowctl.foundation.errors import SowctlError
from sowctl.foundation.redaction import mask_text, redact_value
from sowctl.operations.groups import Group
from sowctl.server import auth, cors
from sowctl.server.console import is_console_path
from sowctl.server.envelopes import HttpStatusError, envelope, group_of_path
from sowctl.server.event_stream import STREAM_KEY
from sowctl.server.http import JSON_CONTENT_TYPE, json_bytes, read_body
from sowctl.server.responses import REQUEST_ID_KEY, log
from sowctl.server.testdouble import contract_mode, runtime_settings
from sowctl.server.testdouble.faults import FAULT_HEADER, FAULT_MESSAGE, FaultConfig
from sowctl.server.testdouble.host import HostApp, WSGIApp
from sowctl.server.testdouble.recorder import MUTATING, Recorder
from sowctl.server.testdouble.request_facts import (
    CapturingInput,
    identity,
    json_or_none,
    json_value,
    query_of,
    request_headers,
)
from sowctl.server.testdouble.reset_gate import Gate
from sowctl.server.testdouble.watched import LOGGED_BYTES, Watched
from sowctl.services import sandbox_state, sandboxes
from sowctl.storage import failures

ADMIN_PREFIX = "/_admin"
# The operator's pages: probes and scrapes see the server as it is, and are never logged.
NEVER_FAULTED = ("/healthz", "/readyz", "/metrics")
CONTRACT_NOTE = "contract mode (strict): refused"
CONTRACT_MARKS_KEY = "sowctl.contract_marks"
IDENTITY_KEY = "sowctl.identity"


def install(app: HostApp) -> TestDouble:
    """Put the layer in front of ``app`` (the app adds the /_admin routes when an admin token is set)."""
    layer = TestDouble(app)
    # Bottle.__call__ delegates to self.wsgi: the layer takes its place on this instance.
    app.wsgi = layer
    app.test_double = layer  # type: ignore[attr-defined]
    return layer


def request_path(environ: dict) -> str:
    """PATH_INFO as text (WSGI gives latin-1 decoded bytes; Bottle decodes it the same way)."""
    return environ.get("PATH_INFO", "").encode("latin1").decode("utf8", "ignore") or "/"


def is_admin_path(path: str) -> bool:
    return path == ADMIN_PREFIX or path.startswith(ADMIN_PREFIX + "/")


class TestDouble:
    __test__ = False  # not a pytest test class

    def __init__(self, app: HostApp) -> None:
        self.app = app
        self.inner: WSGIApp = app.wsgi
        self.settings = app.settings
        self.shared = bool(self.settings.admin_token)  # run-time settings live in the database
        self.start_faults = self.settings.faults or FaultConfig()
        self.recorder = Recorder(self.settings.record_path) if self.settings.record_path else None
        self.rng = random.Random(self.settings.seed)  # latency and fault draws, never the ids
        self._faults = self.start_faults
        self._faults_raw: str | None = None
        self._count_lock = threading.Lock()
        self._count_left: int | None = None  # a start-up config's count, kept in this process
        self._now = self.settings.fixed_now
        self._clock_raw: str | None = None
        self._contract = self.settings.contract
        self._contract_raw: str | None = None
        self._sandbox_faults: dict[str, FaultConfig] = {}  # by organization (services.sandboxes)
        self._sandbox_faults_raw: str | None = None
        # Reset, replace and restore wait for requests in flight (sowctl.server.testdouble.reset_gate).
        self.gate = Gate(app.dispatcher.database)
        self.restart()

    def restart(self) -> None:
        """Back to the start-up state in this process: seeds and clock (``/_admin/reset``)."""
        if self.settings.seed is not None:
            clock.seed(self.settings.seed)
            self.rng.seed(self.settings.seed)
        self._faults, self._faults_raw = self.start_faults, None
        self._count_left = None
        self._now, self._clock_raw = self.settings.fixed_now, None
        self._contract, self._contract_raw = self.settings.contract, None
        self._sandbox_faults, self._sandbox_faults_raw = {}, None
        clock.set_fixed_now(self._now)

    # --- shared state ------------------------------------------------------------------

    @property
    def faults(self) -> FaultConfig:
        return self._faults

    def faults_of(self, organization_id: str) -> FaultConfig:
        """A sandbox's own fault config (none set: no faults)."""
        return self._sandbox_faults.get(organization_id) or FaultConfig()

    @property
    def contract_mode(self) -> str:
        """Contract mode now: the start-up option, or what /_admin/contract set."""
        return self._contract

    @property
    def fixed_now(self) -> datetime | None:
        """The frozen service time, None when the clock runs."""
        return self._now

    def sync(self) -> None:
        """Read the run-time settings (with the admin API on) and set the service clock."""
        if not self.shared:
            return
        from sowctl.server.testdouble import state

        try:
            self.app.dispatcher.ensure_connection()
            raw = state.read_runtime()
        except Exception:  # the database is away: the API itself will say so (503)
            return
        faults_raw = raw.get("faults")
        if faults_raw != self._faults_raw:
            self._faults = runtime_settings.stored_faults(faults_raw, self.start_faults)
            self._faults_raw = faults_raw
        contract_raw = raw.get("contract")
        if contract_raw != self._contract_raw:
            self._contract = runtime_settings.stored_contract(contract_raw, self.settings.contract)
            self._contract_raw = contract_raw
        sandbox_raw = raw.get(sandbox_state.FAULTS_KEY)
        if sandbox_raw != self._sandbox_faults_raw:
            self._sandbox_faults = runtime_settings.stored_sandbox_faults(sandbox_raw)
            self._sandbox_faults_raw = sandbox_raw
        clock_raw = raw.get("clock")
        if clock_raw != self._clock_raw:
            self._now = runtime_settings.stored_clock(clock_raw, self.settings.fixed_now)
            self._clock_raw = clock_raw
        clock.set_fixed_now(self._now)

    def _take(self, faults: FaultConfig, sandbox: str | None) -> bool:
        """One failure of a ``count``-limited config: in the database (shared), or here."""
        if faults.count is None:
            return True
        if sandbox is not None:
            try:
                return sandbox_state.take_fault(sandbox)
            except Exception:  # the database is away: no fault rather than a wrong count
                return False
        if self.shared and self._faults_raw is not None:
            from sowctl.server.testdouble import state

            try:
                return state.take_fault()
            except Exception:  # the database is away: no fault rather than a wrong count
                return False
        with self._count_lock:
            if self._count_left is None:
                self._count_left = faults.count
            if self._count_left <= 0:
                return False
            self._count_left -= 1
            return True

    # --- WSGI ------------------------------------------------------------------------------

    def __call__(self, environ: dict, start_response: Callable[..., Any]) -> Iterable[bytes]:
        started = time.perf_counter()
        path = request_path(environ)
        if path in NEVER_FAULTED or is_console_path(path):  # the console must load to show a fault
            return self.inner(environ, start_response)
        self.sync()
        if self.shared:
            self._sweep(environ)
        method = environ.get("REQUEST_METHOD", "GET").upper()
        if is_admin_path(path):
            return self.inner(environ, start_response)
        if not self.shared:  # without /_admin nothing replaces the database under a request
            return self._api(environ, start_response, path, method, started)
        gate = contextlib.ExitStack()
        try:
            gate.enter_context(self.gate.shared())  # on PostgreSQL, a lock the database gives out
        except Exception as exc:
            failure = failures.classify(exc)
            if failure is None:
                raise
            self.app.dispatcher.recover_connection()
            error = failure.error()
            return self._answer(environ, start_response, group_of_path(path), error, error.message)
        try:
            body = self._api(environ, start_response, path, method, started)
        except BaseException:
            gate.close()
            raise
        if isinstance(body, list) or environ.get(STREAM_KEY):  # answered whole, or an event stream
            gate.close()
            return body
        # A streamed body (a chain report) writes its log row when the server closes it:
        # the gate is held until then.
        return Watched(body, gate.close)

    def _api(
        self, environ: dict, start_response: Callable[..., Any], path: str, method: str, started: float
    ) -> Iterable[bytes]:
        refused: SowctlError | None = None
        if self._contract != "off":
            found = contract_mode.judge(environ, path, method, self.settings.max_body_bytes)
            if found:
                environ[CONTRACT_MARKS_KEY] = found  # for the request log
                start_response = contract_mode.reporting(start_response, found)
                refused = contract_mode.refusal(found) if self._contract == "strict" else None
        fault: dict[str, Any] | None = None
        faults, sandbox = self._faults, None
        if self._sandbox_faults:  # a sandbox's own config replaces the server's for its callers
            who = self._identity(environ, group_of_path(path), path)
            organization_id = who.get("organizationId") if who else None
            if organization_id in self._sandbox_faults:
                faults, sandbox = self._sandbox_faults[organization_id], organization_id
        if faults.active and method != "OPTIONS" and faults.matches(method, path):
            if faults.latency_ms is not None:
                low, high = faults.latency_ms
                delay = self.rng.uniform(low, high) if high > low else low
                time.sleep(delay / 1000)
            if faults.fails and self.rng.random() < faults.rate and self._take(faults, sandbox):
                fault = {"mode": faults.mode, "status": faults.status if faults.mode == "error" else None}
        log = self.shared
        record = self.recorder is not None and method in MUTATING
        if not (log or record):
            if refused is not None:
                return self._answer(environ, start_response, group_of_path(path), refused, CONTRACT_NOTE)
            if fault is None:
                return self.inner(environ, start_response)
            if fault["mode"] == "drop":
                self._drop(environ)
            return self._fault_response(environ, start_response, group_of_path(path), faults.status)
        how = (log, record, refused)
        return self._observed(environ, start_response, path, method, fault, started, how)

    def _observed(
        self,
        environ: dict,
        start_response: Callable[..., Any],
        path: str,
        method: str,
        fault: dict[str, Any] | None,
        started: float,
        how: tuple[bool, bool, SowctlError | None],
    ) -> Iterable[bytes]:
        """Run the request while keeping what the request log and the recorder need (``how``:
        whether to log, whether to record, and contract mode's refusal, if any)."""
        log, record, refused = how
        group = group_of_path(path)
        at = clock.format_timestamp(clock.now())
        tee = CapturingInput(environ.get("wsgi.input"), self.settings.max_body_bytes + 1)
        environ["wsgi.input"] = tee
        seen: dict[str, Any] = {}

        def capture(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            seen["status"], seen["headers"] = status, headers
            return start_response(status, headers, exc_info)

        if fault is not None and fault["mode"] == "drop":
            if log:
                try:  # read the body first, so that the log shows what was sent
                    read_body(environ, self.settings.max_body_bytes)
                except Exception:  # too large or broken: the log keeps what was read
                    pass
                self._log(environ, path, method, group, None, {}, tee.captured, b"", started, fault)
            self._drop(environ)
        if fault is not None:
            body: Iterable[bytes] = self._fault_response(environ, capture, group, fault["status"])
        elif refused is not None:
            body = self._answer(environ, capture, group, refused, CONTRACT_NOTE)
        else:
            body = self.inner(environ, capture)

        def finish(payload: bytes, complete: bool) -> None:
            """Log and record the answer; ``complete``: ``payload`` is its whole body."""
            status = int(str(seen.get("status", "500")).split(" ", 1)[0])
            headers = dict(seen.get("headers") or [])
            if log:
                response = (payload, started, fault, complete)
                self._log(environ, path, method, group, status, headers, tee.captured, *response)
            if record and fault is None and 200 <= status < 300 and complete:
                self._record(environ, path, method, group, status, tee.captured, payload, at)

        if not isinstance(body, list):
            # Streamed (a report of any size): passed on as it comes, and logged on close from
            # its first bytes, which are all the request log keeps of a body.
            return Watched(body, None, finish, LOGGED_BYTES)
        try:
            chunks = list(body)
        finally:
            close = getattr(body, "close", None)
            if close is not None:
                close()
        finish(b"".join(chunks), True)
        return chunks

    def _identity(self, environ: dict, group: Group, path: str) -> dict[str, Any] | None:
        """Who sends the request (``request_facts.identity``), looked up once per request."""
        if IDENTITY_KEY not in environ:
            environ[IDENTITY_KEY] = identity(environ, group, path)
        return environ[IDENTITY_KEY]

    def _sweep(self, environ: dict) -> None:
        """Remove expired sandboxes, at most once a minute (``services.sandboxes.sweep``)."""
        try:
            self.app.dispatcher.ensure_connection()
            sandboxes.sweep()
        except Exception as exc:  # never the client's failure: the next sweep tries again
            if failures.classify(exc) is not None:  # the request's own answer says so, once
                self.app.dispatcher.recover_connection()
                return
            log(environ, f"expired sandboxes not removed: {type(exc).__name__}")

    # --- faults ----------------------------------------------------------------------------

    def _fault_response(
        self, environ: dict, start_response: Callable[..., Any], group: Group, status: int
    ) -> list[bytes]:
        error = HttpStatusError(status, FAULT_MESSAGE)
        note = f"injected fault: HTTP {status}"
        return self._answer(environ, start_response, group, error, note, {FAULT_HEADER: "error"})

    def _answer(
        self,
        environ: dict,
        start_response: Callable[..., Any],
        group: Group,
        error: SowctlError,
        note: str,
        extra: dict[str, str] | None = None,
    ) -> list[bytes]:
        """Answer ``error`` here, without the API (an injected fault, a gate the database
        could not give), as the API would: its envelope and headers; ``note`` is the log line."""
        try:  # read the body, so that the request log shows what was sent
            read_body(environ, self.settings.max_body_bytes)
        except Exception:  # too large or broken: the log keeps what was read
            pass
        response = envelope(group, error)
        payload = json_bytes(response.body)
        request_id = _request_id(environ)
        headers = {**response.headers, "Content-Type": JSON_CONTENT_TYPE, **(extra or {})}
        headers.update(auth.uncharged_rate_headers(group, self.settings))  # the API never saw it
        headers["X-Request-Id"] = request_id
        if response.status in (429, 503):
            headers["Retry-After"] = "1"
        headers["Content-Length"] = str(len(payload))
        header_list = list(headers.items())
        header_list += cors.response_headers(self.settings.cors_origins, environ.get("HTTP_ORIGIN"))
        log(environ, note)
        status = response.status
        start_response(f"{status} {bottle.HTTP_CODES.get(status, 'Error')}", header_list)
        return [b""] if environ.get("REQUEST_METHOD") == "HEAD" else [payload]

    def _drop(self, environ: dict) -> None:
        """Cut the connection without an answer (what a crashed server or a proxy does).

        ``sowctl serve``'s engine cuts it after the status line and headers, before any of the
        body, as early as its parser lets an application (the client sees a broken answer); in
        process (no socket, e.g. httpx.WSGITransport) the caller gets this exception."""
        _request_id(environ)
        log(environ, "injected fault: connection dropped")
        raise ConnectionResetError(errno.ECONNRESET, "injected fault: connection dropped")

    # --- request log and recording ---------------------------------------------------------

    def _log(
        self,
        environ: dict,
        path: str,
        method: str,
        group: Group,
        status: int | None,
        headers: dict[str, str],
        request_body: bytes,
        response_body: bytes,
        started: float,
        fault: dict[str, Any] | None,
        response_complete: bool = True,
    ) -> None:
        from sowctl.server.testdouble import state

        request_text, request_truncated = state.body_text(request_body, environ.get("CONTENT_TYPE"))
        response_type = next((v for k, v in headers.items() if k.lower() == "content-type"), None)
        who = self._identity(environ, group, path)
        if response_complete:
            response_text, response_truncated = state.body_text(response_body, response_type)
        else:  # the first bytes of a longer streamed body
            response_text, response_truncated = state.head_text(response_body, response_type)
        try:
            entry = {
                "at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z",
                "request_id": headers.get("X-Request-Id") or environ.get(REQUEST_ID_KEY),
                "method": method,
                "path": mask_text(path),
                "query": json.dumps(redact_value(query_of(environ)), ensure_ascii=False),
                "status": status,
                "latency_ms": round((time.perf_counter() - started) * 1000, 1),
                "group": group,
                "identity": json_or_none(who),
                "organization_id": who.get("organizationId") if who else None,
                "request_body": request_text,
                "request_truncated": request_truncated,
                "response_body": response_text,
                "response_truncated": response_truncated,
                "fault": json_or_none(fault),
                "headers": json_or_none(request_headers(environ)),
                "contract": json_or_none(
                    [mark.as_dict() for mark in environ.get(CONTRACT_MARKS_KEY, ())] or None
                ),
            }
            self.app.dispatcher.ensure_connection()
            state.log_request(entry, self.settings.request_log_size)
        except Exception as exc:  # the log must never cost the client its answer
            failure = failures.classify(exc)
            if failure is not None:
                self.app.dispatcher.recover_connection()
                if status == 503:  # the answer's own log line already says the database failed
                    return
            reason = failure.describe() if failure else f"{type(exc).__name__}: {' '.join(str(exc).split())}"
            log(environ, f"request log not written: {reason}")

    def _record(
        self,
        environ: dict,
        path: str,
        method: str,
        group: Group,
        status: int,
        request_body: bytes,
        response_body: bytes,
        at: str | None,
    ) -> None:

        assert self.recorder is not None
        try:
            response = json_value(response_body)
            response_id = response.get("id") if isinstance(response, dict) else None
            self.recorder.append(
                {
                    "method": method,
                    "path": mask_text(path),
                    "query": redact_value(query_of(environ)),  # a ?token=... never reaches the file
                    "body": redact_value(json_value(request_body)),
                    "status": status,
                    "group": group,
                    "identity": identity(environ, group, path),
                    "at": at,
                    "responseId": response_id,
                }
            )
        except Exception as exc:
            log(environ, f"request not recorded: {type(exc).__name__}: {exc}")


# --- helpers ---------------------------------------------------------------------------------


def _request_id(environ: dict) -> str:
    """The id that the server log and X-Request-Id show for a request the API never saw."""

    return environ.setdefault(REQUEST_ID_KEY, secrets.token_hex(8))
