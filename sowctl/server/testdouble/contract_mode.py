"""Contract mode on a served request: judged before the API runs (``sowctl.operations.contract``).

``report`` serves the request as always and names the departures it relies on in the
``X-Sowctl-Contract`` header (their codes, in the table's order); ``strict`` refuses a request
that relies on an extension or a leniency with 400 in its group's envelope, one issue per
departure, and runs nothing.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

from sowctl.foundation import json_input
from sowctl.foundation.errors import InvalidInput, Issue, MethodNotAllowed
from sowctl.operations.contract import Mark, Request, marks, refused_in_strict_mode
from sowctl.operations.routes import match
from sowctl.server.http import declared_length
from sowctl.server.testdouble.request_facts import query_of

MODES = ("off", "report", "strict")
CONTRACT_HEADER = "X-Sowctl-Contract"


def judge(environ: dict, path: str, method: str, max_body_bytes: int) -> list[Mark]:
    """The departures of this request. Its body is read here (at most the server's limit) and
    put back for the API; a body the API will refuse anyway (too large, not JSON) is not judged."""
    try:
        found = match(method, path)
    except MethodNotAllowed:
        return []  # 405 here as against the service
    if found is None:
        return []
    content_type = (environ.get("CONTENT_TYPE") or "").split(";", 1)[0].strip().lower()
    body = _body(environ, max_body_bytes)
    request = Request(
        operation=found[0],
        method=method,
        path=path,
        query=query_of(environ),
        body=body,
        headers=_header_names(environ),
        content_type=content_type,
    )
    return marks(request)


def refusal(found: list[Mark]) -> InvalidInput | None:
    """Strict mode's 400 for these departures, None when none of them is refused."""
    refused = refused_in_strict_mode(found)
    if not refused:
        return None
    named = "; ".join(f"{mark.detail} ({mark.code})" for mark in refused)
    return InvalidInput(
        f"contract mode (strict): this request relies on what the service's description does not "
        f"promise: {named}",
        [Issue((mark.code,), f"{mark.kind}: {mark.detail}") for mark in refused],
    )


def header_value(found: list[Mark]) -> str:
    return ", ".join(dict.fromkeys(mark.code for mark in found))


def reporting(start_response: Callable[..., Any], found: list[Mark]) -> Callable[..., Any]:
    """``start_response`` with the marks' header added."""
    value = header_value(found)

    def start(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
        return start_response(status, [*headers, (CONTRACT_HEADER, value)], exc_info)

    return start


def _body(environ: dict, max_body_bytes: int) -> Any:
    """The JSON body, read as the API will read it and put back for it; None when there is
    none, or when the API refuses it anyway (a bad or too large length, not JSON)."""
    stream = environ.get("wsgi.input")
    if stream is None:
        return None
    try:
        length = declared_length(environ)
    except InvalidInput:
        return None
    if length is not None:
        if length > max_body_bytes:
            return None  # unread: the API answers 413 before reading it
        raw = stream.read(length)
    elif "chunked" in (environ.get("HTTP_TRANSFER_ENCODING") or "").lower():
        raw = stream.read(max_body_bytes + 1)  # one byte more: the API still sees it is too large
    else:
        return None
    environ["wsgi.input"] = io.BytesIO(raw)
    if not raw.strip() or len(raw) > max_body_bytes:
        return None
    try:
        return json_input.loads(raw)
    except ValueError:  # not JSON, or nested too deep: the API says so
        return None


def _header_names(environ: dict) -> dict[str, str]:
    return {
        key[5:].replace("_", "-").lower(): str(value)
        for key, value in environ.items()
        if key.startswith("HTTP_")
    }
