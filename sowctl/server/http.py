"""Reading HTTP requests and shaping responses, in one place for every route.

Decisions (documented in docs/server.md and docs/api.md):

* A body larger than ``max_body_bytes`` (1 MiB) is refused with 413, whether it
  announces its length (``Content-Length``, refused before it is read) or
  streams it (chunked, refused once the limit is passed).
* A body must be UTF-8 JSON without duplicated object keys, NaN or Infinity,
  nesting arrays and objects at most ``limits.MAX_JSON_DEPTH`` levels (checked before
  it is parsed); otherwise 400. A body sent with a ``Content-Type`` other than
  ``application/json`` (or ``*/*+json``) is refused with 400 (the spec's answer
  to an invalid request; no group lists 415); a body without any ``Content-Type``
  is read as JSON.
* A query parameter given twice is refused with 400 naming it (an ambiguous
  request is an error, not a guess).
* Group A/B lists take ``page`` (default 1) and ``limit`` (default 20; larger
  than 100 is clamped to 100); anything but a positive integer is a 400 naming
  the parameter.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode

import pydantic_core

from sowctl.foundation import json_input
from sowctl.foundation.errors import InvalidInput, Issue, PayloadTooLarge, quoted
from sowctl.schemas.rows import PlainObjects

JSON_CONTENT_TYPE = "application/json"
# Headers of every response, whoever answers (the application, the test double, the worker):
# nosniff, so that a JSON body quoting the request (a 404 naming the path) is never run as
# a page or script by a browser that guesses its type.
EVERY_RESPONSE_HEADERS = {"X-Content-Type-Options": "nosniff"}
_CHUNK = 64 * 1024


# --- body ---------------------------------------------------------------------


def declared_length(environ: dict) -> int | None:
    """The request's Content-Length, None when absent; 400 when it is not a number."""
    text = (environ.get("CONTENT_LENGTH") or "").strip()
    if not text:
        return None
    if not (text.isascii() and text.isdigit()):  # "²".isdigit() is true, int("²") fails
        raise InvalidInput("invalid Content-Length header", [Issue(("Content-Length",), "must be a number")])
    return int(text) if len(text) < 20 else 10**20  # no int() of thousands of digits


def check_declared_length(environ: dict, max_bytes: int) -> None:
    """413 before reading anything when the announced body is too large."""
    length = declared_length(environ)
    if length is not None and length > max_bytes:
        raise too_large(max_bytes)


def too_large(max_bytes: int) -> PayloadTooLarge:
    return PayloadTooLarge.over(max_bytes)


def read_body(environ: dict, max_bytes: int) -> bytes:
    """The raw body, at most ``max_bytes`` of it; a longer one is a 413."""
    stream = environ.get("wsgi.input")
    if stream is None:
        return b""
    length = declared_length(environ)
    if length is not None:
        if length > max_bytes:
            raise too_large(max_bytes)
        return _read(stream, length)
    if "chunked" not in (environ.get("HTTP_TRANSFER_ENCODING") or "").lower():
        return b""  # no length and not chunked: no body (PEP 3333)
    data = _read(stream, max_bytes + 1)
    if len(data) > max_bytes:
        raise too_large(max_bytes)
    return data


def _read(stream: Any, size: int) -> bytes:
    parts: list[bytes] = []
    remaining = size
    while remaining > 0:
        chunk = stream.read(min(remaining, _CHUNK))
        if not chunk:
            break
        parts.append(chunk)
        remaining -= len(chunk)
    return b"".join(parts)


def require_json_content_type(environ: dict) -> None:
    content_type = (environ.get("CONTENT_TYPE") or "").split(";", 1)[0].strip().lower()
    if content_type and content_type != JSON_CONTENT_TYPE and not content_type.endswith("+json"):
        raise InvalidInput(
            f"request body must be JSON (Content-Type: {JSON_CONTENT_TYPE}), not {content_type}",
            [Issue(("Content-Type",), f"must be {JSON_CONTENT_TYPE}")],
        )


def _reject_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _DuplicateKey(key)
        result[key] = value
    return result


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


class _DuplicateKey(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def parse_json(raw: bytes) -> Any:
    """The JSON value of a body; None for an empty body; 400 for anything malformed."""
    if not raw.strip():
        return None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _malformed(f"request body is not valid UTF-8 (byte {exc.start})") from None
    try:
        return json_input.loads(text, object_pairs_hook=_reject_duplicates, parse_constant=_reject_constant)
    except _DuplicateKey as exc:
        raise InvalidInput(
            f"malformed JSON: duplicated key {quoted(exc.key)}",
            [Issue((exc.key,), "is given more than once")],
        ) from None
    except json_input.JsonTooDeep as exc:
        raise _malformed(f"request body: {exc}") from None
    except json.JSONDecodeError as exc:
        raise _malformed(f"malformed JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except ValueError as exc:
        raise _malformed(f"malformed JSON: {exc}") from None


def _malformed(message: str) -> InvalidInput:
    return InvalidInput(message, [Issue((), message)])


def read_json_body(environ: dict, max_bytes: int) -> Any:
    raw = read_body(environ, max_bytes)
    if raw.strip():
        require_json_content_type(environ)
    return parse_json(raw)


# --- path and query string -------------------------------------------------------


def check_path(raw_path: str) -> None:
    """The request path (WSGI gives its bytes as latin-1 text) must be UTF-8, as the query
    string must: Bottle would drop the bytes that are not, so ``/api/items/a%FFb`` would
    read item ``ab``, and a 404 would name a path that was not asked for."""
    try:
        raw_path.encode("latin-1").decode("utf-8")
    except UnicodeError:
        raise _query_error((), "path is not valid UTF-8") from None


def parse_query(query_string: str) -> dict[str, str]:
    """The query string as a dict of str; a parameter given twice is a 400."""
    try:
        pairs = parse_qsl(query_string or "", keep_blank_values=True, errors="strict")
    except UnicodeDecodeError:
        raise _query_error((), "query string is not valid UTF-8") from None
    except ValueError as exc:
        raise _query_error((), f"malformed query string: {exc}") from None
    query: dict[str, str] = {}
    for key, value in pairs:
        if key in query:
            raise _query_error(
                (key,), "is given more than once", f"query parameter {key} is given more than once"
            )
        query[key] = value
    return query


def _query_error(path: tuple[str, ...], message: str, full: str | None = None) -> InvalidInput:
    return InvalidInput(full or message, [Issue(path, message)])


# --- pagination (Groups A and B) ------------------------------------------------


def pagination(
    query: dict[str, str], *, default_limit: int, max_limit: int, max_page: int
) -> tuple[int, int]:
    """``(page, limit)`` taken out of ``query``; ``limit`` above the maximum is clamped."""
    page = _positive(query.pop("page", None), "page", 1)
    if page > max_page:
        raise InvalidInput.for_field("page", f"must be at most {max_page}")
    limit = _positive(query.pop("limit", None), "limit", default_limit)
    return page, min(limit, max_limit)


def _positive(text: str | None, name: str, default: int) -> int:
    if text is None:
        return default
    stripped = text.strip()
    if not stripped.isascii() or not stripped.isdigit():
        raise InvalidInput.for_field(name, "must be a positive integer")
    # No int() of a huge string: past 4,300 digits Python refuses it (a 500), and it costs.
    significant = stripped.lstrip("0")
    value = int(significant or "0") if len(significant) < 20 else 10**20
    if value < 1:
        raise InvalidInput.for_field(name, "must be a positive integer")
    return value


# A host as a Host header may name it: a name or IPv4 address, or [IPv6], and a port.
_HOST = re.compile(
    r"(?:[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?\Z"
)


def request_origin(environ: dict[str, Any]) -> tuple[str, str]:
    """The scheme and host a client asked for, as Bottle's ``request.urlparts`` reads them:
    the proxy's ``X-Forwarded-Proto`` and ``X-Forwarded-Host`` first, then the URL scheme and
    ``Host`` header, then (an HTTP/1.0 client) the server's name and a port other than the
    scheme's own, PEP 3333's reconstruction. Without the path, whose quoting ``urlparts``
    does on every page for nothing the ``Link`` header uses."""
    scheme = environ.get("HTTP_X_FORWARDED_PROTO") or environ.get("wsgi.url_scheme", "http")
    host = environ.get("HTTP_X_FORWARDED_HOST") or environ.get("HTTP_HOST")
    if not host:
        host = environ.get("SERVER_NAME", "127.0.0.1")
        port = environ.get("SERVER_PORT")
        if port and port != ("80" if scheme == "http" else "443"):
            host += ":" + port
    return scheme, host


def public_base(scheme: str, netloc: str) -> str:
    """``scheme://host`` for absolute links, from what the client sent (Host and
    X-Forwarded-Proto); "" (links relative to this server) when either is not a plain
    http(s) scheme and host, so a forged header cannot put another URL into ``Link``."""
    if scheme not in ("http", "https") or not _HOST.match(netloc):
        return ""
    return f"{scheme}://{netloc}"


def link_header(base_url: str, path: str, query: dict[str, str], page: int, limit: int, total: int) -> str:
    """RFC 8288 ``Link`` with next/prev (and first/last) pages, same query otherwise."""
    last = max(1, math.ceil(total / limit))
    links: list[tuple[str, int]] = []
    if page < last:
        links.append(("next", page + 1))
    if page > 1:
        links.append(("prev", min(page - 1, last)))
    links.append(("first", 1))
    links.append(("last", last))
    target = base_url + quote(path, safe="/:@!$&'()*+,;=-._~")
    # The other parameters are the same in every link: encoded once (page and limit last,
    # as urlencode of {**query, "page": ..., "limit": ...} would put them).
    rest = {key: value for key, value in query.items() if key not in ("page", "limit")}
    common = f"{target}?{urlencode(rest)}&" if rest else f"{target}?"
    return ", ".join(f'<{common}page={number}&limit={limit}>; rel="{rel}"' for rel, number in links)


# --- responses ------------------------------------------------------------------


def json_bytes(data: Any) -> bytes:
    if type(data) is PlainObjects:
        # Strings, integers, booleans and nulls only: pydantic's encoder writes them as
        # json.dumps below does, byte for byte (tests/server/test_json_bytes.py), three
        # times faster (pydantic_core comes with pydantic, which sowctl depends on).
        return pydantic_core.to_json(data)
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")


def route_path(path: str) -> str:
    """A declared path as Bottle routes it: ``/api/sow/{sowId}/items`` → ``/api/sow/<sowId>/items``."""
    return "/".join(
        f"<{part[1:-1]}>" if part.startswith("{") and part.endswith("}") else part for part in path.split("/")
    )
