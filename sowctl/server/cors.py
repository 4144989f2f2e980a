"""CORS for browser front ends: off unless ``serve --cors ORIGIN`` (repeatable, ``*`` for any).

* Off (no origins): no ``Access-Control-*`` header on any response, and OPTIONS
  is an unknown method (405) like any other.
* On: a response to a request whose ``Origin`` is allowed carries
  ``Access-Control-Allow-Origin`` (the origin itself, or ``*`` when every origin
  is allowed) and ``Access-Control-Expose-Headers`` (paging, rate-limit,
  Retry-After and request-id headers, so scripts can read them). With a list of
  origins every response also says ``Vary: Origin``, so caches keep answers for
  different origins apart.
* A preflight (OPTIONS with ``Access-Control-Request-Method``) from an allowed
  origin gets 204 with the allowed methods and request headers (the
  credentials and scope headers of every group) and ``Max-Age``. From another
  origin it gets 204 without them, and the browser refuses the real request.
* Origins compare as the browser sends them (scheme, host and port), case-insensitively.
  No cookies are used, so ``Access-Control-Allow-Credentials`` is never sent.
"""

from __future__ import annotations

from collections.abc import Sequence

ALLOW_METHODS = "GET, HEAD, POST, PUT, DELETE, OPTIONS"
ALLOW_HEADERS = (
    "Authorization, Content-Type, x-api-key, x-organization-id, x-company-id, organization-id, company-id"
)
EXPOSE_HEADERS = (
    "X-Total-Count, Link, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, "
    "Retry-After, X-Request-Id, X-Error-Code, X-Error-Issues"
)
MAX_AGE = "600"


def allowed_origin(origins: Sequence[str], origin: str | None) -> str | None:
    """The value of Access-Control-Allow-Origin for ``origin``; None when it is not allowed."""
    if not origins or not origin:
        return None
    if "*" in origins:
        return "*"
    wanted = origin.strip().rstrip("/").lower()
    for allowed in origins:
        if allowed.strip().rstrip("/").lower() == wanted:
            return origin.strip()
    return None


def response_headers(origins: Sequence[str], origin: str | None) -> list[tuple[str, str]]:
    """Headers every response gets when CORS is on (none when it is off)."""
    if not origins:
        return []
    headers: list[tuple[str, str]] = []
    allowed = allowed_origin(origins, origin)
    if allowed:
        headers.append(("Access-Control-Allow-Origin", allowed))
        headers.append(("Access-Control-Expose-Headers", EXPOSE_HEADERS))
    if "*" not in origins:
        headers.append(("Vary", "Origin"))
    return headers


def preflight_headers(
    origins: Sequence[str], origin: str | None, request_method: str | None
) -> dict[str, str]:
    """The headers of a 204 answer to OPTIONS (besides those of ``response_headers``)."""
    if not request_method or allowed_origin(origins, origin) is None:
        return {}
    return {
        "Access-Control-Allow-Methods": ALLOW_METHODS,
        "Access-Control-Allow-Headers": ALLOW_HEADERS,
        "Access-Control-Max-Age": MAX_AGE,
    }
