"""Responses and the server log, shared by the API, its test double and the admin API.

Kept apart from ``server.app`` so that the test double (``sowctl.server.testdouble``) uses
them without importing the application it wraps.
"""

from __future__ import annotations

import secrets
import sys
import traceback
from collections.abc import Iterable
from typing import Any

import bottle

from sowctl.foundation.errors import SowctlError
from sowctl.foundation.redaction import mask_text, redact
from sowctl.operations.groups import Group
from sowctl.server.envelopes import envelope
from sowctl.server.http import JSON_CONTENT_TYPE, json_bytes
from sowctl.storage import failures

REQUEST_ID_KEY = "sowctl.request_id"


class RedactingStream:
    """A log stream (a WSGI ``wsgi.errors``) that writes every text through ``mask_text``:
    whatever the application, Bottle or the test double writes there (a traceback quoting
    a request) is masked like the access log."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream

    def write(self, text: str) -> Any:
        return self.stream.write(mask_text(text))

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        self.stream.flush()


def new_request_id() -> str:
    """The ``X-Request-Id`` of a new request (also of one the worker refuses unread)."""
    return secrets.token_hex(8)


def json_response(
    status: int, payload: bytes | Iterable[bytes], headers: dict[str, str]
) -> bottle.HTTPResponse:
    """A JSON answer; ``payload`` is the body, or an iterable that writes it (``server.streaming``)."""
    response = bottle.HTTPResponse(body=payload, status=status, headers=headers)
    response.content_type = JSON_CONTENT_TYPE
    return response


def error_response(group: Group | str, error: SowctlError, headers: dict[str, str]) -> bottle.HTTPResponse:
    response = envelope(group, error)
    if error.api_message != error.message:  # the operator's log keeps what the answer leaves out
        log(bottle.request.environ, error.message)
    return json_response(response.status, json_bytes(response.body), {**headers, **response.headers})


def log(environ: dict, message: str) -> None:
    stream = environ.get("wsgi.errors") or RedactingStream(sys.stderr)
    try:
        stream.write(f"[sowctl] {_describe(environ)}: {message}\n")
        stream.flush()
    except Exception:  # a closed log stream must not turn a response into a crash
        pass


def log_exception(environ: dict) -> None:
    """The traceback of the exception being handled, once, in the server's log."""
    log(environ, "unexpected error\n" + traceback.format_exc().rstrip())


def log_failure(environ: dict, exc: BaseException) -> None:
    """Call while handling ``exc``: a database failure (``storage.failures``) in one line, which
    says all there is to say; the traceback of anything else, a bug."""
    failure = failures.classify(exc)
    if failure is None:
        log_exception(environ)
    else:
        log(environ, failure.describe())


def request_id_line(environ: dict) -> None:
    log(environ, "unexpected error (traceback above)")


def _describe(environ: dict) -> str:
    request_id = environ.get(REQUEST_ID_KEY, "-")
    path = "".join(c if c.isprintable() and c != " " else "?" for c in redact(environ.get("PATH_INFO", "?")))
    return f"{environ.get('REQUEST_METHOD', '?')} {path} request-id={request_id}"
