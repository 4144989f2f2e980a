"""Group C listings: the projects and the clients (with contacts) a caller may see.

Visibility: the caller's organization; ``Caller.organization_id``
None (local mode) sees every organization.

Order: pinned records first, then by name (case-insensitive), then by id, so that
pages never overlap or skip a record. A client's contacts: the primary contact
first, then by name, then by id.

Queries per call, whatever the page size: one for the page (projects joined with
their client's name), one for ``total`` (only when paging), and one for the page's
SOW counts or contacts (chunked in 500s to stay under every backend's parameter
limit when local mode lists everything).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import TypeVar

import peewee as pw

from sowctl.schemas.listing import ClientOut, ContactOut, ProjectOut
from sowctl.schemas.rows import from_row
from sowctl.services.access import Caller
from sowctl.storage import models as m
from sowctl.storage.peewee_compat import tuples

_CHUNK = 500
M = TypeVar("M", bound=pw.Model)


def list_projects(
    caller: Caller,
    status: str | None = None,
    client_id: str | None = None,
    limit: int | None = None,
    offset: int = 0,
) -> tuple[list[ProjectOut], int]:
    """A page of the visible projects and the number of all matches (``limit`` None: all)."""
    p = m.Project
    query = p.select(p, m.Client.name.alias("client_name")).join(
        m.Client, pw.JOIN.LEFT_OUTER, on=(p.client == m.Client.id)
    )
    conditions = []
    if caller.organization_id is not None:
        conditions.append(p.organization == caller.organization_id)
    if status is not None:
        conditions.append(p.status == status)
    if client_id is not None:
        # Uuid hex digits are case-insensitive on input (RFC 4122); ids are kept as imported.
        conditions.append(pw.fn.LOWER(p.client) == client_id.lower())
    if conditions:
        query = query.where(*conditions)
    query = query.order_by(p.is_pinned.desc(), pw.fn.LOWER(p.name), p.name, p.id).objects()
    projects, total = _page(query, limit, offset)
    if not total:
        caller.require_named_organization()
    sow_counts = _sow_counts([project.id for project in projects])
    return [_project_out(project, sow_counts.get(project.id, 0)) for project in projects], total


def list_clients(caller: Caller, limit: int | None = None, offset: int = 0) -> tuple[list[ClientOut], int]:
    """A page of the visible clients, each with its contacts, and the number of all clients."""
    c = m.Client
    query = c.select()
    if caller.organization_id is not None:
        query = query.where(c.organization == caller.organization_id)
    query = query.order_by(c.is_pinned.desc(), pw.fn.LOWER(c.name), c.name, c.id)
    clients, total = _page(query, limit, offset)
    if not total:
        caller.require_named_organization()
    contacts = _contacts([client.id for client in clients])
    return [_client_out(client, contacts.get(client.id, [])) for client in clients], total


# --- helpers ------------------------------------------------------------------------


def _page(query: pw.ModelSelect[M], limit: int | None, offset: int) -> tuple[list[M], int]:
    if limit is None and not offset:
        rows = list(query)
        return rows, len(rows)
    total = query.order_by().count()
    if limit is not None:
        query = query.limit(limit)
    if offset:
        query = query.offset(offset)
    return list(query), total


def _chunks(values: Sequence[str]) -> Iterable[Sequence[str]]:
    for start in range(0, len(values), _CHUNK):
        yield values[start : start + _CHUNK]


def _sow_counts(project_ids: Sequence[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for chunk in _chunks(project_ids):
        query = (
            m.Sow.select(m.Sow.project, pw.fn.COUNT(m.Sow.id))
            .where(m.Sow.project.in_(chunk))
            .group_by(m.Sow.project)
        )
        counts.update(tuples(query))
    return counts


def _contacts(client_ids: Sequence[str]) -> dict[str, list[ContactOut]]:
    k = m.Contact
    found: dict[str, list[ContactOut]] = defaultdict(list)
    for chunk in _chunks(client_ids):
        query = k.select().where(k.client.in_(chunk)).order_by(k.is_primary.desc(), pw.fn.LOWER(k.name), k.id)
        for contact in query:
            found[contact.client_id].append(from_row(ContactOut, contact))
    return found


def _project_out(project: m.Project, sow_count: int) -> ProjectOut:
    return from_row(ProjectOut, project, sow_count=sow_count)


def _client_out(client: m.Client, contacts: list[ContactOut]) -> ClientOut:
    return from_row(ClientOut, client, contacts=contacts)
