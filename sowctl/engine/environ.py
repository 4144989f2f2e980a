"""A request as the parser handed it (an ASGI scope) made a WSGI environ (PEP 3333).

One copy of the rules a WSGI server applies: the path percent-decoded into bytes and given
as latin-1 text, a header named with ``_`` dropped (``X_Api_Key`` must never pass for
``X-Api-Key`` in ``HTTP_X_API_KEY``), repeated headers joined with commas, and the body given
whole with its length (already de-chunked, so no ``Transfer-Encoding`` is passed on).
"""

from __future__ import annotations

import io
import sys
from typing import Any
from urllib.parse import unquote_to_bytes

_SPECIAL = {"content-type": "CONTENT_TYPE", "content-length": "CONTENT_LENGTH"}
_VERSIONS = {"1": "HTTP/1.0", "1.0": "HTTP/1.0", "1.1": "HTTP/1.1", "2": "HTTP/2"}
# Framing the parser has applied; the application gets the body as it is.
_FRAMING = frozenset({"transfer-encoding", "content-length"})


def protocol(scope: dict[str, Any]) -> str:
    return _VERSIONS.get(str(scope.get("http_version", "1.1")), "HTTP/1.1")


def raw_path(scope: dict[str, Any]) -> bytes:
    """The request path as it was sent (percent-encoded), without the query."""
    raw = scope.get("raw_path")
    if raw is None:
        raw = scope.get("path", "/").encode("utf-8")
    return raw.split(b"?", 1)[0]


def target(scope: dict[str, Any]) -> str:
    """The request target as sent, as text (for limits and the access log)."""
    query = scope.get("query_string") or b""
    text = raw_path(scope) + (b"?" + query if query else b"")
    return text.decode("latin-1")


def header_bytes(scope: dict[str, Any]) -> int:
    """The size of the header block as sent (each line ``name: value`` and its CRLF)."""
    return sum(len(name) + len(value) + 4 for name, value in scope.get("headers", ()))


def header_values(scope: dict[str, Any], name: bytes) -> list[str]:
    """Every value of header ``name`` (lower case), as latin-1 text, in order."""
    return [value.decode("latin-1") for key, value in scope.get("headers", ()) if key == name]


def header(scope: dict[str, Any], name: bytes) -> str | None:
    """The first value of header ``name`` (lower case), as latin-1 text."""
    for key, value in scope.get("headers", ()):
        if key == name:
            return value.decode("latin-1")
    return None


def build(scope: dict[str, Any], body: bytes, *, multiprocess: bool) -> dict[str, Any]:
    server = scope.get("server") or ("localhost", "80")
    client = scope.get("client") or ("", "")
    environ: dict[str, Any] = {
        "REQUEST_METHOD": scope.get("method", "GET"),
        "SCRIPT_NAME": "",
        "PATH_INFO": unquote_to_bytes(raw_path(scope)).decode("latin-1"),
        "QUERY_STRING": (scope.get("query_string") or b"").decode("latin-1"),
        "SERVER_NAME": str(server[0]),
        "SERVER_PORT": str(server[1]),
        "SERVER_PROTOCOL": protocol(scope),
        "REMOTE_ADDR": str(client[0]),
        "REMOTE_PORT": str(client[1]),
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": scope.get("scheme", "http"),
        "wsgi.input": io.BytesIO(body),
        "wsgi.input_terminated": True,
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": multiprocess,
        "wsgi.run_once": False,
    }
    for name, value in scope.get("headers", ()):
        key = name.decode("latin-1").lower()
        if "_" in key or key in _FRAMING:
            continue
        text = value.decode("latin-1")
        variable = _SPECIAL.get(key) or "HTTP_" + key.upper().replace("-", "_")
        environ[variable] = f"{environ[variable]},{text}" if variable in environ else text
    if body or header(scope, b"content-length") is not None or header(scope, b"transfer-encoding"):
        environ["CONTENT_LENGTH"] = str(len(body))
    return environ
