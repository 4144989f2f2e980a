"""What counts as a secret in logs and recordings, decided once.

The access log (``server.runner``) and the test double's request log and recordings
(``services.admin``) both hide secrets with these rules. No imports beyond the standard
library: the WSGI runner uses it without loading the application.
"""

from __future__ import annotations

import re
from urllib.parse import unquote_plus

MASK = "***"
# Field and query-parameter names that hold secrets (lower-case, without - and _).
SECRET_FIELDS = frozenset(
    {
        "token",
        "apikey",
        "key",
        "password",
        "secret",
        "accesstoken",
        "refreshtoken",
        "clientsecret",
        "auth",
        "authorization",
        "xapikey",
    }
)
_SECRET_SUFFIXES = ("token", "secret", "password", "apikey")
# A sowctl token or key wherever it appears (a path, a free-text value), known by its shape.
_SECRET_VALUE = re.compile(r"sow[tk]_[A-Za-z0-9_\-]+")


def is_secret_field(name: str) -> bool:
    key = name.lower().replace("_", "").replace("-", "")
    return key in SECRET_FIELDS or key.endswith(_SECRET_SUFFIXES)


def redact(text: str) -> str:
    """``text`` with every sowctl token or key in it cut to its prefix and ``***``."""
    return _SECRET_VALUE.sub(lambda match: match[0][:5] + MASK, text)


def redact_target(path: str, query: str) -> str:
    """A request target for a log: tokens in the path redacted, and the value of every
    query parameter with a secret's name, or holding a sowctl token, replaced by ``***``."""
    target = redact(path)
    if not query:
        return target
    parts = []
    for part in query.split("&"):
        name, sep, value = part.partition("=")
        if (
            sep
            and value
            and (is_secret_field(unquote_plus(name)) or _SECRET_VALUE.search(unquote_plus(value)))
        ):
            value = MASK
        parts.append(name + sep + value)
    return target + "?" + "&".join(parts)
