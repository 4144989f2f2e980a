"""Group C listing models: projects, clients and contacts.

Query parameters arrive as strings. ``limit`` and ``offset`` must be strings of
digits and ``clientId`` a uuid; anything else is a BAD_REQUEST whose
issue names the parameter, e.g. ``{"path": ["limit"], "message": "must be a string
of digits"}``.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, ClassVar

from pydantic import BeforeValidator, WithJsonSchema

from sowctl.foundation.budgets import MAX_PAGE_SIZE
from sowctl.schemas.common import CamelModel, CamelOut, Timestamp
from sowctl.schemas.vocabulary import ProjectStatus

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

# Responses: documented as uuids (spec 2.8, 2.9; imports check them), not re-checked.
UuidOut = Annotated[str, WithJsonSchema({"type": "string", "format": "uuid"})]


# --- queries ----------------------------------------------------------------------


class Page(CamelModel):
    """limit: default 20, at most 100 (larger values are clamped); offset: default 0."""

    limit: Digits | None = None
    offset: Digits | None = None


class ProjectListQuery(Page):
    status: ProjectStatus | None = None
    client_id: Uuid | None = None


class ClientListQuery(Page):
    pass


# --- responses --------------------------------------------------------------------


class ContactOut(CamelOut):
    id: UuidOut
    client_id: UuidOut
    name: str
    email: str | None = None
    phone: str | None = None
    role: str | None = None
    is_primary: bool
    created_at: Timestamp
    updated_at: Timestamp


class ClientOut(CamelOut):
    """A client; ``pinnedAt`` is null while it is not pinned."""

    wire_nulls: ClassVar[frozenset[str]] = frozenset({"pinned_at"})

    id: UuidOut
    name: str
    description: str | None = None
    website: str | None = None
    industry: str | None = None
    organization_id: str
    is_pinned: bool
    pinned_at: Timestamp | None
    contacts: list[ContactOut]
    created_at: Timestamp
    updated_at: Timestamp


class ProjectOut(CamelOut):
    """A project; ``endDate`` and ``pinnedAt`` are null while unset."""

    wire_nulls: ClassVar[frozenset[str]] = frozenset({"end_date", "pinned_at"})

    id: UuidOut
    name: str
    description: str | None = None
    status: ProjectStatus
    client_id: UuidOut | None = None
    client_name: str | None = None
    contact_id: UuidOut | None = None
    start_date: Timestamp | None = None
    end_date: Timestamp | None
    owner_user_id: str | None = None
    organization_id: str
    is_pinned: bool
    pinned_at: Timestamp | None
    sow_count: int
    created_at: Timestamp
    updated_at: Timestamp


class ProjectList(CamelOut):
    projects: list[ProjectOut]
    total: int


class ClientList(CamelOut):
    clients: list[ClientOut]
    total: int
