"""The access log of ``sowctl serve``: one line per request on stderr, never any header.

``127.0.0.1 - "GET /api/items/x?q=1 HTTP/1.1" 200 123 1.2ms``. Requests the application
answers are logged by the WSGI middleware :class:`AccessLog`; requests the engine refuses
itself (408, 413, 414, 431, 503...) by :func:`log_refusal`.
A body that was not sent to its end ends the line with ``cut-short`` (the client went
away, or the application failed mid-body), or ``cut-short:too-slow`` when the engine cut
a client that took it too slowly (``sowctl.engine.pacing``); the size is then what the
application had handed over, not what the client received.
Secrets anywhere in the line are cut by the one redaction rule.

With ``serve --log-format json`` each line is a JSON object instead, with the same facts and
the request's id (its ``X-Request-Id``) and incoming W3C ``traceparent``:
``{"time": "2026-01-01T00:00:00.000Z", "remote": "127.0.0.1", "method": "GET", "target":
"/api/items/x?q=1", "protocol": "HTTP/1.1", "status": 200, "bytes": 123, "duration_ms": 1.2,
"request_id": "9f...", "traceparent": "00-..."}`` (``status`` null when none was sent,
``cut`` present when the body was cut short, ``traceparent`` when one came).
"""

from __future__ import annotations

import json
import re
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

from sowctl.engine.hooks import CUT_SHORT_KEY
from sowctl.foundation.redaction import redact_target, redact_text  # secrets never reach the log

WSGIApplication = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]

_lock = threading.Lock()  # one whole line at a time from the worker's threads and its loop
# A refused request line is cut to this many characters in the log.
_REFUSED_TARGET_CHARS = 200

# Anything but printable ASCII, and '"' which closes the quoted request field.
_UNSAFE = re.compile(r"[^\x21\x23-\x7e]")


def _percent_escape(match: re.Match[str]) -> str:
    # WSGI strings are latin-1 decoded bytes, so ord() is the byte on the wire.
    char = match[0]
    raw = bytes([ord(char)]) if char <= "\xff" else char.encode("utf-8", "backslashreplace")
    return "".join(f"%{b:02X}" for b in raw)


class AccessLog:
    """WSGI middleware: one line per request on stderr, never any header.

    ``127.0.0.1 - "GET /api/items/x?q=1 HTTP/1.1" 200 123 1.2ms``; bytes and time
    are counted until the server closes the body, i.e. after it was sent.
    """

    def __init__(self, app: WSGIApplication, *, json_lines: bool = False) -> None:
        self.app = app
        self.json_lines = json_lines

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        started = time.perf_counter()
        status = "-"

        def logging_start_response(status_line: str, headers: Any, exc_info: Any = None) -> Any:
            nonlocal status
            status = status_line.split(" ", 1)[0]
            return start_response(status_line, headers, exc_info)

        try:
            body = self.app(environ, logging_start_response)
        except ConnectionError:
            # The connection is gone (a client hang-up, or the test double's "drop"
            # fault): no status reached anyone, so none is logged.
            self._write(environ, "-", 0, started)
            raise
        except BaseException:
            self._write(environ, "500", 0, started)
            raise
        return LoggedBody(
            body, lambda size, whole: self._write(environ, status, size, started, _cut(environ, whole))
        )

    def _write(self, environ: dict[str, Any], status: str, size: int, started: float, cut: str = "") -> None:
        target = redact_target(
            environ.get("SCRIPT_NAME", "") + environ.get("PATH_INFO", ""), environ.get("QUERY_STRING", "")
        )
        request = (environ.get("REQUEST_METHOD", "-"), target, environ.get("SERVER_PROTOCOL", "-"))
        seconds = time.perf_counter() - started
        ids = _ids(environ) if self.json_lines else {}
        remote = environ.get("REMOTE_ADDR", "-")
        _write(_line(remote, request, status, size, seconds, cut, self.json_lines, ids))


def _cut(environ: dict[str, Any], whole: bool) -> str:
    """The line's mark for a body not sent whole ("" for one that was)."""
    # The engine says in the environ whether it cut a slow reader.
    if environ.get(CUT_SHORT_KEY) == "too-slow":
        return "cut-short:too-slow"
    return "" if whole else "cut-short"


def _ids(environ: dict[str, Any]) -> dict[str, str | None]:
    """The request's id and incoming ``traceparent``, for a JSON line."""
    # Imported here: the runner imports this module before serve runs, with the standard library only.
    from sowctl.server.responses import REQUEST_ID_KEY
    from sowctl.server.tracing import traceparent

    return {"request_id": environ.get(REQUEST_ID_KEY), "traceparent": traceparent(environ)}


def log_refusal(
    client: str,
    method: str,
    target: str,
    protocol: str,
    status: int,
    headers: Sequence[tuple[str, str]] = (),
    *,
    json_lines: bool = False,
) -> None:
    """The line of a request the engine answered before the application saw it (``headers``:
    the answer's, whose ``X-Request-Id`` the line repeats)."""
    path, _, query = target.partition("?")
    target = redact_target(path, query) or "-"
    if len(target) > _REFUSED_TARGET_CHARS:
        target = target[:_REFUSED_TARGET_CHARS] + "..."
    request_id = next((value for name, value in headers if name.lower() == "x-request-id"), None)
    request = (method or "-", target, protocol or "-")
    _write(_line(client or "-", request, str(status), 0, 0.0, "", json_lines, {"request_id": request_id}))


def _line(
    remote: str,
    request: tuple[str, str, str],
    status: str,
    size: int,
    seconds: float,
    cut: str,
    json_lines: bool,
    ids: dict[str, str | None],
) -> str:
    # The method and version too: a refused request may carry anything there (a token).
    method, target, protocol = (_UNSAFE.sub(_percent_escape, redact_text(part)) for part in request)
    if not json_lines:
        mark = f" {cut}" if cut else ""
        return f'{remote} - "{method} {target} {protocol}" {status} {size} {seconds * 1000:.1f}ms{mark}\n'
    record: dict[str, Any] = {
        "time": datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "remote": _UNSAFE.sub(_percent_escape, remote),
        "method": method,
        "target": target,
        "protocol": protocol,
        "status": int(status) if status.isdigit() else None,
        "bytes": size,
        "duration_ms": round(seconds * 1000, 1),
        **{name: value for name, value in ids.items() if value},
    }
    if cut:
        record["cut"] = cut
    return json.dumps(record, ensure_ascii=True) + "\n"


def _write(line: str) -> None:
    with _lock:
        try:
            sys.stderr.write(line)
            sys.stderr.flush()
        except (OSError, ValueError):  # a closed or broken stderr must not fail requests
            pass


def close_app_body(body: Iterable[bytes]) -> None:
    """Call the application's ``close()`` on its answer, as a WSGI server must, where it has one."""
    close = getattr(body, "close", None)
    if close is not None:
        close()


class LoggedBody:
    """The app's response iterable, counting bytes; logs on close() with the size and
    whether the body was iterated to its end.

    A class rather than a generator: a server may close() without ever
    iterating (client gone), and the line and the app's own close() must
    still happen.
    """

    def __init__(self, body: Iterable[bytes], log: Callable[[int, bool], None]) -> None:
        self._body = body
        self._log = log
        self._size = 0
        self._whole = False

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self._body:
            self._size += len(chunk)
            yield chunk
        self._whole = True

    def close(self) -> None:
        try:
            close_app_body(self._body)
        finally:
            self._log(self._size, self._whole)
