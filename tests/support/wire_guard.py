"""Every HTTP response the suite receives, checked against the service's own description.

``install()`` wraps httpx's WSGI and HTTP transports, so the in-process app, the
CLI's remote backend and real ``sowctl serve`` processes are all covered. Each
response to a route of the specification (``sowctl/conformance/description.py``) must have a
status the operation lists, a JSON body of the documented shape for that status
(types, formats, no field the spec does not list, no null where it shows none),
and an unknown route or method must answer 404 or 405 in its group's envelope.

Not checked, on purpose: answers that sowctl did not give (fake servers in the
remote backend's tests have no ``X-Request-Id``, which sowctl sets on every
answer), sowctl's own routes (``/api/sows``, ``/_admin``, routes a test
registers: their errors must still use the group's envelope), bodies asked for
with ``include=`` (extensions, by request), failures injected by the test double
(``X-Sowctl-Fault``), and OPTIONS/HEAD.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

import httpx

from sowctl.conformance import records as spec_records
from sowctl.conformance.checks import group_of, route_of, validator

_EXTENSION_ROUTES = ("/api/sows", "/api/external/purchase-orders", "/api/external/purchase-order-options")
_FAULT_HEADER = "x-sowctl-fault"
_MAX_BODY = 8 * 1024 * 1024  # larger bodies (bulk tests) are left to the other checks
_lock = threading.Lock()


def problems(
    method: str, path: str, query: str, status: int, headers: httpx.Headers, body: bytes
) -> list[str]:
    """What is wrong with this response, as the service's description sees it ([] if nothing)."""
    method = method.lower()
    if method in ("options", "head") or _FAULT_HEADER in headers or "x-request-id" not in headers:
        return []
    if path.startswith(_EXTENSION_ROUTES) or (group := group_of(path)) is None:
        return []
    route = route_of(path)
    found: list[str] = []
    if route is None and status < 400:
        return []  # a route of sowctl's or of a test's own
    if route is None or method not in route[1]:
        if route is not None and status != 405:
            found.append(f"{status} for a method the route does not have (expected 405)")
            return found
        if status not in spec_records.GROUP_C_CODES:
            return [f"status {status} is not one the service answers"]
        schema = spec_records.group_c_error(status) if group == "C" else spec_records.ref("ErrorA")
        return found + _body_problems(schema, headers, body)
    operation = route[1][method]
    listed = operation["responses"].get(str(status))
    if listed is None:
        allowed = ", ".join(sorted(operation["responses"]))
        return [f"status {status} is not one the service lists for {method.upper()} {route[0]} ({allowed})"]
    if status < 400 and "include" in parse_qs(query):
        return []  # an extension the caller asked for
    return _body_problems(listed["content"]["application/json"]["schema"], headers, body)


def _body_problems(schema: dict, headers: httpx.Headers, body: bytes) -> list[str]:
    content_type = headers.get("content-type", "")
    if not content_type.startswith("application/json"):
        return [f"content type {content_type!r}, not application/json"]
    if len(body) > _MAX_BODY:
        return []
    try:
        data = json.loads(body)
    except ValueError as exc:
        return [f"body is not JSON ({exc}): {body[:200]!r}"]
    errors = sorted(validator(schema).iter_errors(data), key=lambda error: list(error.absolute_path))
    return [
        f"at {'/'.join(map(str, error.absolute_path)) or '(root)'}: {error.message[:300]}"
        for error in errors[:5]
    ]


@dataclass
class Findings:
    """Violations seen since the last ``take``; filled from any thread."""

    found: list[str] = field(default_factory=list)

    def add(self, request: httpx.Request, response_status: int, issues: list[str]) -> None:
        query = "?" + request.url.query.decode() if request.url.query else ""
        where = f"{request.method} {request.url.path}{query}"
        with _lock:
            self.found.extend(f"{where} -> {response_status}: {issue}" for issue in issues)

    def take(self) -> list[str]:
        with _lock:
            taken, self.found[:] = list(self.found), []
        return taken


FINDINGS = Findings()


def _checked(handle: Any) -> Any:
    def handle_request(self: Any, request: httpx.Request) -> httpx.Response:
        response = handle(self, request)
        if group_of(request.url.path) is None:
            return response
        if response.headers.get("content-type", "").startswith("text/event-stream"):
            return response  # an event stream (sowctl's own) is read as it comes, not whole here
        content = response.read()
        issues = problems(
            request.method,
            request.url.path,
            request.url.query.decode(errors="replace"),
            response.status_code,
            response.headers,
            content,
        )
        if issues:
            FINDINGS.add(request, response.status_code, issues)
        return httpx.Response(
            response.status_code,
            headers=response.headers,
            content=content,
            request=request,
            extensions=response.extensions,
        )

    handle_request.__wrapped__ = handle  # type: ignore[attr-defined]
    return handle_request


def install() -> None:
    """Check every response of httpx's WSGI and HTTP transports (idempotent)."""
    for transport in (httpx.WSGITransport, httpx.HTTPTransport):
        if not hasattr(transport.handle_request, "__wrapped__"):
            transport.handle_request = _checked(transport.handle_request)  # type: ignore[method-assign]
