"""SOWs, and the default organization and project that let a user start from nothing."""

from __future__ import annotations

import peewee as pw

from sowctl.foundation import clock
from sowctl.foundation.errors import InvalidInput, NotFound, UsageError
from sowctl.schemas.rows import from_row
from sowctl.schemas.sows import SowCreate, SowDeleted, SowOut, SowUpdate
from sowctl.services import events
from sowctl.services.access import Caller, named_organization_not_found, organization_exists, sow_for
from sowctl.storage import models as m
from sowctl.storage.database import write_transaction
from sowctl.storage.peewee_compat import tuples

DEFAULT_ORG_ID = "local"
DEFAULT_PROJECT_NAME = "Default project"
ORGANIZATIONS_LISTED = 10  # a refusal to choose lists at most this many


def default_project(organization_id: str) -> m.Project:
    """The organization's default project, created (with the org) when missing."""
    m.Organization.get_or_create(id=organization_id, defaults={"name": "Local organization"})
    project = (
        m.Project.select()
        .where((m.Project.organization == organization_id) & (m.Project.name == DEFAULT_PROJECT_NAME))
        .first()
    )
    if project is None:
        moment = clock.now()
        project = m.Project.create(
            id=clock.new_id(),
            organization=organization_id,
            name=DEFAULT_PROJECT_NAME,
            description="Created by sowctl for SOWs made without --project",
            status="active",
            created_at=moment,
            updated_at=moment,
        )
    return project


def create_sow(caller: Caller, data: SowCreate) -> SowOut:
    """A SOW in the caller's organization (or the project's, with full rights). Its id is
    unique within that organization only: whether another organization uses the same id
    changes nothing in the answer to a caller of one organization.

    Full rights (local mode) never invent an organization: without --org the SOW goes to
    the only organization there is (``local``, made now, on an empty database) and several
    are refused; an --org naming none is not found; an id another organization uses is
    refused unless --org chose the organization."""
    caller.require_write()
    organization_id = caller.organization_id
    if caller.named and organization_id is not None and not organization_exists(organization_id):
        raise named_organization_not_found(organization_id)
    given = None
    if data.project_id is not None:
        given = m.Project.get_or_none(m.Project.id == data.project_id)
        if given is None or not caller.sees(given.organization_id):
            raise NotFound(f"project {data.project_id} not found")
        organization_id = given.organization_id
    elif organization_id is None:
        organization_id = _only_organization()
    if data.id is not None and caller.organization_id is None:
        _refuse_id_of_another_organization(data.id, organization_id)
    with write_transaction(f"org:{organization_id}"):
        project = default_project(organization_id) if given is None else given
        sow_id = data.id or clock.new_id()
        taken = m.Sow.select().where((m.Sow.organization == organization_id) & (m.Sow.id == sow_id))
        if taken.exists():
            raise InvalidInput.for_field("id", f"SOW {sow_id} already exists")
        sow = _insert(sow_id, organization_id, project.id, data.title)
        created = from_row(SowOut, sow, project_id=project.id, item_count=0)
        events.record(organization_id, "sow", "created", sow.id, created)
    return created


def _only_organization() -> str:
    """The organization a SOW made with full rights and no --org goes to: the only one, or
    ``local`` on an empty database; several are refused, listed."""
    first = m.Organization.select(m.Organization.id).order_by(m.Organization.id)
    ids = [org for (org,) in tuples(first.limit(ORGANIZATIONS_LISTED + 1))]
    if not ids:
        return DEFAULT_ORG_ID
    if len(ids) == 1:
        return ids[0]
    total = len(ids) if len(ids) <= ORGANIZATIONS_LISTED else m.Organization.select().count()
    shown = ", ".join(ids[:ORGANIZATIONS_LISTED]) + (", …" if total > ORGANIZATIONS_LISTED else "")
    raise UsageError(
        f"the database holds {total} organizations ({shown}): choose one with --org (or SOWCTL_ORG)"
    )


def _refuse_id_of_another_organization(sow_id: str, organization_id: str) -> None:
    """Full rights without --org: an id another organization's SOW has would make every later
    command on that id ask which one is meant, so it is refused."""
    others = m.Sow.select(m.Sow.organization).where(
        (m.Sow.id == sow_id) & (m.Sow.organization != organization_id)
    )
    owner = others.scalar()
    if owner is not None:
        raise InvalidInput.for_field(
            "id",
            f"SOW {sow_id} already exists in organization {owner}: to make another, choose it with --org",
        )


def _insert(sow_id: str, organization_id: str, project_id: str, title: str) -> m.Sow:
    """Store a SOW under the key ``sow_id`` or, when another organization's SOW holds that
    key, under a fresh one (the key is never shown). A savepoint makes the taken key no
    error of the transaction, whichever organization's writer got there first."""
    fields = {"id": sow_id, "organization": organization_id, "project": project_id, "title": title}
    try:
        with m.database_proxy.atomic():
            return m.Sow.create(key=sow_id, created_at=clock.now(), **fields)
    except pw.IntegrityError:
        return m.Sow.create(key=clock.new_id(), created_at=clock.now(), **fields)


def list_sows(
    caller: Caller, project_id: str | None = None, *, offset: int = 0, limit: int | None = None
) -> tuple[list[SowOut], int]:
    """A page of the caller's SOWs, oldest first, and the number of all matches (``limit``
    None and no ``offset``: every SOW, as local mode lists them).

    A page is chosen by its keys alone (sorted without the titles, which may be long), then
    its rows are read; item counts are read for the page's SOWs only. So a page costs about
    the same whatever the organization holds besides it."""
    matches = m.Sow.select(m.Sow.key).join(m.Project)
    if caller.organization_id is not None:
        matches = matches.where(m.Sow.organization == caller.organization_id)
    if project_id is not None:
        matches = matches.where(m.Sow.project == project_id)
    order = (m.Sow.created_at, m.Sow.id, m.Sow.key)
    paged = bool(offset) or limit is not None
    total = matches.count() if paged else None
    keys = matches.order_by(*order)
    if limit is not None:
        keys = keys.limit(limit)
    if offset:
        keys = keys.offset(offset)
    columns = (m.Sow.key, m.Sow.id, m.Sow.project, m.Sow.title, m.Sow.created_at)
    # Unpaged, every match is wanted: the filter itself names them, not a parameter each.
    sows = list(m.Sow.select(*columns).where(m.Sow.key.in_(keys if paged else matches)).order_by(*order))
    counts = _item_counts([sow.key for sow in sows] if paged else matches) if sows else {}
    out = [from_row(SowOut, sow, item_count=counts.get(sow.key, 0)) for sow in sows]
    return out, total if total is not None else len(out)


def _item_counts(keys: list[str] | pw.SelectQuery) -> dict[str, int]:
    """Items per SOW key, for the SOWs ``keys`` names (a list, or a query of keys)."""
    count = pw.fn.COUNT(m.Item.id)
    query = m.Item.select(m.Item.sow, count).where(m.Item.sow.in_(keys)).group_by(m.Item.sow)
    return dict(tuples(query))


def _out(sow: m.Sow, item_count: int | None = None) -> SowOut:
    if item_count is None:
        item_count = m.Item.select().where(m.Item.sow == sow.key).count()
    return from_row(SowOut, sow, item_count=item_count)


def get_sow(caller: Caller, sow_id: str) -> SowOut:
    """The caller's SOW with its item count (local mode: --org tells apart a shared id)."""
    return _out(sow_for(caller, sow_id))


def update_sow(caller: Caller, sow_id: str, data: SowUpdate) -> SowOut:
    """A new title; the id, project and organization of a SOW never change."""
    caller.require_write()
    sow = sow_for(caller, sow_id)
    with write_transaction(f"org:{sow.organization_id}"):
        updated = m.Sow.update(title=data.title).where(m.Sow.key == sow.key).execute()
        if not updated:  # deleted since it was read
            raise NotFound(f"SOW {sow_id} not found")
        sow.title = data.title
        updated = _out(sow)
        events.record(sow.organization_id, "sow", "updated", sow.id, updated)
    return updated


def delete_sow(caller: Caller, sow_id: str) -> SowDeleted:
    """Delete a SOW with its items and every dependency touching them (also another SOW's
    dependency on one of its items), and say how many went. The database's cascades do
    the deleting, in the same transaction as the counting."""
    caller.require_write()
    sow = sow_for(caller, sow_id)
    organization_id = sow.organization_id
    with write_transaction(f"org:{organization_id}"):
        items = m.Item.select(m.Item.id).where(m.Item.sow == sow.key)
        touching = (m.Dependency.source_item.in_(items)) | (m.Dependency.target_item.in_(items))
        # The ids, not only their counts: each is an event (``services.events``).
        item_ids = [row[0] for row in tuples(items.order_by(m.Item.id))]
        linked = m.Dependency.select(m.Dependency.id).where(touching).order_by(m.Dependency.id)
        dependency_ids = [row[0] for row in tuples(linked)]
        if not m.Sow.delete().where(m.Sow.key == sow.key).execute():
            raise NotFound(f"SOW {sow_id} not found")
        events.record_many(organization_id, "dependency", "deleted", [(dep, None) for dep in dependency_ids])
        events.record_many(organization_id, "item", "deleted", [(item, None) for item in item_ids])
        events.record(organization_id, "sow", "deleted", sow.id, None)
    item_count, dependency_count = len(item_ids), len(dependency_ids)
    return SowDeleted(
        message=f"SOW {sow_id} deleted successfully",
        deleted_items=item_count,
        deleted_dependencies=dependency_count,
    )
