"""Paging of Group C's lists (GET /projects, GET /clients) and its parameter types.

Query parameters arrive as strings. ``limit`` and ``offset`` must be strings of
digits and ``clientId`` a uuid; anything else is a BAD_REQUEST whose
issue names the parameter, e.g. ``{"path": ["limit"], "message": "must be a string
of digits"}``.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BeforeValidator, WithJsonSchema

from sowctl.foundation.budgets import MAX_PAGE_SIZE
from sowctl.schemas.common import CamelModel

DEFAULT_LIMIT = 20
MAX_LIMIT = MAX_PAGE_SIZE  # larger values are clamped, as for Groups A and B
_HUGE = 10**15  # beyond any table; keeps OFFSET inside a 64-bit integer
_DIGITS_RE = re.compile(r"^[0-9]+$")
_UUID_RE = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")


def _digits(value: Any) -> int:
    if not isinstance(value, str) or not _DIGITS_RE.match(value):
        raise ValueError("must be a string of digits")
    significant = value.lstrip("0") or "0"
    return int(significant) if len(significant) <= 15 else _HUGE


def _uuid(value: Any) -> str:
    if not isinstance(value, str) or not _UUID_RE.match(value):
        raise ValueError("must be a uuid")
    return value


Digits = Annotated[
    int,
    BeforeValidator(_digits),
    WithJsonSchema({"type": "string", "pattern": "^[0-9]+$"}),
]
Uuid = Annotated[
    str,
    BeforeValidator(_uuid),
    WithJsonSchema({"type": "string", "format": "uuid"}),
]

# Responses: documented as uuids (imports check them), not re-checked.
UuidOut = Annotated[str, WithJsonSchema({"type": "string", "format": "uuid"})]


# --- queries ----------------------------------------------------------------------


class Page(CamelModel):
    """limit: default 20, at most 100 (larger values are clamped); offset: default 0."""

    limit: Digits | None = None
    offset: Digits | None = None
