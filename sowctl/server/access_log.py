"""The access log of ``sowctl serve``: one line per request on stderr, never any header.

``127.0.0.1 - "GET /api/items/x?q=1 HTTP/1.1" 200 123 1.2ms``. Requests the application
answers are logged by the WSGI middleware :class:`AccessLog`; requests the engine refuses
itself (408, 413, 414, 431, 503...) by :func:`log_refusal`.
A body that was not sent to its end ends the line with ``cut-short`` (the client went
away, or the application failed mid-body), or ``cut-short:too-slow`` when the engine cut
a client that took it too slowly (``sowctl.engine.pacing``); the size is then what the
application had handed over, not what the client received.
Secrets anywhere in the line are cut by the one redaction rule.
"""

from __future__ import annotations

import re
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from sowctl.engine.hooks import CUT_SHORT_KEY
from sowctl.redaction import redact_target, redact_text  # secrets never reach the log

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

    def __init__(self, app: WSGIApplication) -> None:
        self.app = app

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
        _write_line(environ.get("REMOTE_ADDR", "-"), request, status, size, seconds, cut)


def _cut(environ: dict[str, Any], whole: bool) -> str:
    """The line's mark for a body not sent whole ("" for one that was)."""
    # The engine says in the environ whether it cut a slow reader.
    if environ.get(CUT_SHORT_KEY) == "too-slow":
        return "cut-short:too-slow"
    return "" if whole else "cut-short"


def log_refusal(client: str, method: str, target: str, protocol: str, status: int) -> None:
    """The line of a request the engine answered before the application saw it."""
    path, _, query = target.partition("?")
    target = redact_target(path, query) or "-"
    if len(target) > _REFUSED_TARGET_CHARS:
        target = target[:_REFUSED_TARGET_CHARS] + "..."
    _write_line(client or "-", (method or "-", target, protocol or "-"), str(status), 0, 0.0)


def _write_line(
    remote: str, request: tuple[str, str, str], status: str, size: int, seconds: float, cut: str = ""
) -> None:
    # The method and version too: a refused request may carry anything there (a token).
    method, target, protocol = (_UNSAFE.sub(_percent_escape, redact_text(part)) for part in request)
    mark = f" {cut}" if cut else ""
    line = f'{remote} - "{method} {target} {protocol}" {status} {size} {seconds * 1000:.1f}ms{mark}\n'

    with _lock:
        try:
            sys.stderr.write(line)
            sys.stderr.flush()
        except (OSError, ValueError):  # a closed or broken stderr must not fail requests
            pass


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
            close = getattr(self._body, "close", None)
            if close is not None:
                close()
        finally:
            self._log(self._size, self._whole)
