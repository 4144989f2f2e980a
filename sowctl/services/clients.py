"""Group C: the clients a caller may see, each with its contacts.

Visibility: the caller's organization; ``Caller.organization_id`` None (local mode) sees
every organization. A client's contacts: the primary contact first, then by name, then by
id. Queries per call: the page, ``total`` when paging, and the page's contacts (a
statement per ``bulk.ROWS`` clients).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import peewee as pw

from sowctl.schemas.clients import ClientOut, ContactOut
from sowctl.schemas.rows import from_row
from sowctl.services.access import Caller
from sowctl.services.bulk import chunks
from sowctl.services.pages import page_and_total
from sowctl.storage import models as m


def list_clients(caller: Caller, limit: int | None = None, offset: int = 0) -> tuple[list[ClientOut], int]:
    """A page of the visible clients, each with its contacts, and the number of all clients."""
    c = m.Client
    query = c.select()
    if caller.organization_id is not None:
        query = query.where(c.organization == caller.organization_id)
    query = query.order_by(c.is_pinned.desc(), pw.fn.LOWER(c.name), c.name, c.id)
    clients, total = page_and_total(query, limit, offset)
    if not total:
        caller.require_named_organization()
    contacts = _contacts([client.id for client in clients])
    return [_client_out(client, contacts.get(client.id, [])) for client in clients], total


def _contacts(client_ids: Sequence[str]) -> dict[str, list[ContactOut]]:
    k = m.Contact
    found: dict[str, list[ContactOut]] = defaultdict(list)
    for chunk in chunks(client_ids):
        query = k.select().where(k.client.in_(chunk)).order_by(k.is_primary.desc(), pw.fn.LOWER(k.name), k.id)
        for contact in query:
            found[contact.client_id].append(from_row(ContactOut, contact))
    return found


def _client_out(client: m.Client, contacts: list[ContactOut]) -> ClientOut:
    return from_row(ClientOut, client, contacts=contacts)
