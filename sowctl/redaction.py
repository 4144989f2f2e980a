"""What counts as a secret in logs and recordings, decided once.

The access log (``server.access_log``), gunicorn's error log (``server.error_log``) and the
test double's request log and recordings (``testdouble.state``) hide secrets with these
rules. No imports beyond the standard library: the WSGI runner uses it without loading the
application.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import unquote, unquote_plus

MASK = "***"
# Field, header and query-parameter names that hold secrets (compared lower-case, without
# - and _): the exact names, words that make any name containing them a secret's
# (``secretKey``, ``X-Private-Key``, ``Cookie2``), and endings (``x-auth``, ``signingKey``).
SECRET_FIELDS = frozenset(
    {"key", "auth", "authorization", "pass", "pwd", "sig", "session", "otp", "pin", "xapikey"}
)
_SECRET_WORDS = (
    "token",
    "secret",
    "password",
    "passwd",
    "passphrase",
    "credential",
    "apikey",
    "privatekey",
    "accesskey",
    "secretkey",
    "signature",
    "sessionid",
    "cookie",
)
_SECRET_SUFFIXES = ("key", "auth")
# Every secret sowctl issues starts with one of these: bearer tokens, API keys and the
# admin token of ``serve --admin``. A secret is known by its shape wherever it appears
# (a path, a query parameter's name or value, a free-text field).
TOKEN_PREFIX = "sowt_"
KEY_PREFIX = "sowk_"
ADMIN_TOKEN_PREFIX = "sowa_"
SECRET_PREFIXES = (TOKEN_PREFIX, KEY_PREFIX, ADMIN_TOKEN_PREFIX)
_SECRET_VALUE = re.compile("(?:" + "|".join(map(re.escape, SECRET_PREFIXES)) + r")[A-Za-z0-9_\-]+")


def is_secret_field(name: str) -> bool:
    key = name.lower().replace("_", "").replace("-", "")
    return key in SECRET_FIELDS or key.endswith(_SECRET_SUFFIXES) or any(w in key for w in _SECRET_WORDS)


# Headers that carry credentials: never stored anywhere (the request log keeps the others).
CREDENTIAL_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie", "x-api-key"})


def is_secret_header(name: str) -> bool:
    return name.lower() in CREDENTIAL_HEADERS or is_secret_field(name)


def redact(text: str) -> str:
    """``text`` with every sowctl token or key in it cut to its prefix and ``***``."""
    return _SECRET_VALUE.sub(lambda match: match[0][:5] + MASK, text)


def redact_text(text: str) -> str:
    """``redact``, and text still percent-encoded (a raw request line, a server's message
    quoting one) is judged decoded too: ``sowt%5F...`` is a secret as well."""
    redacted = redact(text)
    decoded = unquote(text, errors="replace")
    if decoded != text and _SECRET_VALUE.search(decoded):
        redacted = redact(decoded)
    return redacted


class RedactingStream:
    """A log stream (a WSGI ``wsgi.errors``) that writes every text through ``redact_text``:
    whatever the application, Bottle or the test double writes there (a traceback quoting
    a request) is cut like the access log."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream

    def write(self, text: str) -> Any:
        return self.stream.write(redact_text(text))

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        self.stream.flush()


def redact_value(value: Any) -> Any:
    """A JSON value for a log or record file: the values of secret-named fields replaced
    by ``***`` and every sowctl secret (in keys and strings) redacted, at any depth."""
    if isinstance(value, dict):
        return {
            redact(str(k)): (MASK if is_secret_field(str(k)) else redact_value(v)) for k, v in value.items()
        }
    if isinstance(value, list):
        return [redact_value(v) for v in value]
    if isinstance(value, str):
        return redact(value)
    return value


def redact_target(path: str, query: str) -> str:
    """A request target for a log: secrets in the path and in query parameter names
    redacted, and the value of every query parameter with a secret's name, or holding
    a sowctl secret, replaced by ``***``. A path still percent-encoded (the worker's own
    refusals log the raw request line) is judged decoded: ``sowt%5F...`` is a secret too."""
    target = redact_text(path)
    if not query:
        return target
    parts = []
    for part in query.split("&"):
        name, sep, value = part.partition("=")
        if _SECRET_VALUE.search(unquote_plus(name)):
            name = MASK
        if (
            sep
            and value
            and (is_secret_field(unquote_plus(name)) or _SECRET_VALUE.search(unquote_plus(value)))
        ):
            value = MASK
        parts.append(name + sep + value)
    return target + "?" + "&".join(parts)


def redact_header_value(value: str) -> str:
    """A header value for the request log: sowctl secrets redacted and, in a URL (a
    ``Referer``), the query redacted as ``redact_target`` does."""
    if "?" not in value:
        return redact(value)
    base, _, query = value.partition("?")
    query, hash_sign, fragment = query.partition("#")
    return redact_target(base, query) + hash_sign + redact(fragment)


def secret_hint(secret: str | None) -> str:
    """What listings, status and errors may show of a token or API key: its prefix and a
    few characters (``sowt_abcd…``), never enough to use it."""
    if not secret:
        return ""
    return secret[:9] + "…" if len(secret) > 12 else "…"
