"""Group C's clients: the query of GET /clients and the clients (with contacts) it answers with."""

from __future__ import annotations

from typing import ClassVar

from sowctl.schemas.common import CamelOut, Timestamp
from sowctl.schemas.paging import Page, UuidOut


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


class ClientList(CamelOut):
    clients: list[ClientOut]
    total: int
