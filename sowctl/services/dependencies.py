"""Dependencies between items, or from an item to an external party.

Rules kept here, for every surface alike:

* An internal dependency names a target item of the source item's organization
  (any SOW of it); an external one names ``externalTarget`` and has no target item.
* No item depends on itself, and the non-cancelled dependencies never form a
  cycle in the contract's ordering (``services.graph``). The check and the write
  share one ``write_transaction(f"org:{org}")``, so two concurrent requests that
  would together close a cycle cannot both pass. The check runs against the
  organization's maintained topological order (``graph.add_ordering_edge``), which
  it updates for the new edge; removing an edge needs no update.
* ``Dependency.sow`` is the source item's SOW, and ``before_item_id``/``after_item_id``
  always hold ``graph.ordering_edge`` of the row.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from functools import reduce

import peewee as pw

from sowctl.foundation import clock
from sowctl.foundation.errors import CycleDetected, InvalidInput, NotFound
from sowctl.schemas.dependencies import DependencyCreate, DependencyOut, DependencyUpdate
from sowctl.schemas.items import Message
from sowctl.schemas.rows import from_row
from sowctl.schemas.vocabulary import DEPENDENCY_KINDS, DependencyKind, DependencyStatus
from sowctl.services import dependency_rules as rules
from sowctl.services import events, graph
from sowctl.services.access import Caller, item_for, sow_for
from sowctl.services.lookup import insert_row
from sowctl.storage import models as m
from sowctl.storage.database import write_transaction


def to_out(dep: m.Dependency) -> DependencyOut:
    return from_row(DependencyOut, dep)


def _visible(caller: Caller, dependency_id: str) -> tuple[m.Dependency, str]:
    """The dependency and its organization id; 404 when missing or another organization's."""
    row = (
        m.Dependency.select(m.Dependency, m.Project.organization)
        .join(m.Sow)
        .join(m.Project)
        .where(m.Dependency.id == dependency_id)
        .first()
    )
    if row is None or not caller.sees(row.sow.project.organization_id):
        raise NotFound(f"dependency {dependency_id} not found")
    return row, row.sow.project.organization_id


# --- queries ------------------------------------------------------------------


def list_dependencies(
    caller: Caller,
    *,
    item_id: str | None = None,
    sow_id: str | None = None,
    status: DependencyStatus | None = None,
    kind: DependencyKind | None = None,
    offset: int = 0,
    limit: int | None = None,
) -> tuple[list[DependencyOut], int]:
    """Dependencies the caller may see, oldest first, with the total before paging.

    ``item_id`` filters by source item, ``sow_id`` by the source item's SOW (an unknown
    or foreign item or SOW is a 404, as for items); ``kind`` is ``critical``,
    ``overdue`` or ``external`` as the dependency filters define them.
    """
    conditions = []
    if sow_id is not None:  # the caller's own SOW (sow_for): its dependencies are the caller's
        conditions.append(m.Dependency.sow == sow_for(caller, sow_id).key)
    elif caller.organization_id is not None:
        conditions.append(m.Dependency.organization_id == caller.organization_id)
    if item_id is not None:
        conditions.append(m.Dependency.source_item == item_id)
    if status is not None:
        conditions.append(m.Dependency.status == status)
    if kind is not None:
        conditions.append(kind_condition(kind))
    where = reduce(operator.and_, conditions) if conditions else pw.SQL("1 = 1")
    paged = bool(offset) or limit is not None
    total = m.Dependency.select(m.Dependency.id).where(where).count() if paged else None
    query = _page(where, offset, limit) if paged else m.Dependency.select().where(where).order_by(*LIST_ORDER)
    rows = list(query)
    total = total if total is not None else len(rows)
    if item_id is not None and total == 0:
        # A filter naming no item is a 404, as an unknown SOW is (its own or another
        # organization's alike); an item with no dependencies lists none. Only an empty
        # answer needs the lookup: a listed dependency's source item is the caller's.
        item_for(caller, item_id)
    return [to_out(row) for row in rows], total


# The list order; the indexes on (organization_id, created_at, id) and (sow_id, created_at, id)
# hold it, so a page's ids are read from an index in order (schema v8).
LIST_ORDER = (m.Dependency.created_at, m.Dependency.id)


def _page(where: pw.Expression | pw.SQL, offset: int, limit: int | None) -> pw.ModelSelect[m.Dependency]:
    """The page ``offset``/``limit`` of the dependencies ``where`` selects, in list order.

    Its ids are chosen first, from an index in list order, where ``OFFSET`` skips index
    entries; only the page's rows are then read. Ordering and skipping whole rows made a
    deep page read and sort every row before it (page 200 of 20,000 dependencies cost
    four times page 1)."""
    ids = m.Dependency.select(m.Dependency.id).where(where).order_by(*LIST_ORDER).offset(offset)
    if limit is not None:
        ids = ids.limit(limit)
    return m.Dependency.select().where(m.Dependency.id.in_(ids)).order_by(*LIST_ORDER)


def kind_condition(kind: str) -> pw.Expression:
    """The SQL condition of a ``type`` filter value: ``dependency_rules`` written as SQL."""
    open_ = m.Dependency.status.in_(rules.OPEN_STATUSES)
    if kind == "critical":
        return (m.Dependency.risk_level == rules.CRITICAL_RISK) & open_
    if kind == "overdue":
        return (m.Dependency.sla_date < clock.today()) & open_
    if kind == "external":
        return m.Dependency.is_external == True  # noqa: E712 (a SQL expression, not a test)
    raise InvalidInput.for_field("type", "must be one of: " + ", ".join(DEPENDENCY_KINDS))


def get_dependency(caller: Caller, dependency_id: str) -> DependencyOut:
    return to_out(_visible(caller, dependency_id)[0])


# --- changes ------------------------------------------------------------------


def _is_external(data: DependencyCreate) -> bool:
    return rules.is_external(data.is_external, data.target_item_id, data.external_target)


def _check_shape(data: DependencyCreate, external: bool) -> None:
    """Internal/external rules that need no database, each naming its field."""
    problems = rules.shape_problems(external, data.source_item_id, data.target_item_id, data.external_target)
    if problems:
        raise InvalidInput.for_field(*problems[0])


def _locate(item_ids: Sequence[str], organization_id: str | None = None) -> dict[str, tuple]:
    """``item id -> (SOW id, organization id, ordering rank, stale mark)`` of the items that
    exist, in one query; the rank and the organization's stale mark (``graph``) only when
    ``organization_id`` is given, else None.

    Plain SQL on purpose: a create runs this twice (to pick the lock, then under
    it), and building the equivalent three-model Peewee query costs more than
    running it. Under the lock it also reads what the cycle check starts from, so
    that a create needs no round trip of its own for that.
    """
    item, sow, project = m.Item._meta, m.Sow._meta, m.Project._meta
    param = m.database_proxy.param
    marks = ", ".join([param] * len(item_ids))
    if organization_id is None:
        extra, values = "NULL, NULL", tuple(item_ids)
    else:
        meta = m.Meta._meta.table_name
        extra = f"i.{m.Item.topo_rank.column_name}, (SELECT value FROM {meta} WHERE key = {param})"
        values = (graph.stale_key(organization_id), *item_ids)
    sql = (
        f"SELECT i.{m.Item.id.column_name}, i.{m.Item.sow.column_name}, "
        f"p.{m.Project.organization.column_name}, {extra} "
        f"FROM {item.table_name} i "
        f"JOIN {sow.table_name} s ON s.{m.Sow.key.column_name} = i.{m.Item.sow.column_name} "
        f"JOIN {project.table_name} p ON p.{m.Project.id.column_name} = s.{m.Sow.project.column_name} "
        f"WHERE i.{m.Item.id.column_name} IN ({marks})"
    )
    return {row[0]: row[1:] for row in m.database_proxy.execute_sql(sql, values)}


def _endpoints(
    caller: Caller, data: DependencyCreate, external: bool, locked: str | None = None
) -> tuple[str, str, dict[str, tuple]]:
    """The source item's SOW and organization, and what ``_locate`` found; 404 for a
    missing or invisible item. ``locked``: the organization whose lock is held.

    The target must be visible too and belong to the source's organization (any SOW).
    """
    # An internal dependency names its target (DependencyCreate checks it), an external one none.
    targets = [] if external or data.target_item_id is None else [data.target_item_id]
    wanted = [data.source_item_id, *targets]
    found = _locate(wanted, locked)
    for item_id in wanted:
        if item_id not in found or not caller.sees(found[item_id][1]):
            raise NotFound(f"item {item_id} not found")
    sow_id, organization_id = found[data.source_item_id][:2]
    if any(found[target][1] != organization_id for target in targets):
        raise InvalidInput.for_field("targetItemId", "must be an item of the source item's organization")
    return sow_id, organization_id, found


def create_dependency(caller: Caller, data: DependencyCreate) -> DependencyOut:
    caller.require_write()
    external = _is_external(data)
    _check_shape(data, external)
    # The lock is the items' organization. A caller of one organization sees only its
    # own items, so that is the one to lock (items it cannot see are a 404 under it); in
    # local mode the items are looked up once to learn it. Under the lock they are looked
    # up (again), where they can no longer disappear before the insert.
    organization_id = caller.organization_id
    if organization_id is None:
        _, organization_id, _ = _endpoints(caller, data, external)
    # On SQLite the re-ranking's walks (thousands of items for a long chain) run before the
    # lock that every writer waits for; under it they are taken if nothing changed meanwhile.
    ordering = graph.ordering_edge(
        data.dependency_type, data.source_item_id, data.target_item_id, "active", external
    )
    planned = graph.prewalk_ordering_edge(organization_id, *ordering) if ordering is not None else None
    with write_transaction(f"org:{organization_id}"):
        sow_id, _, found = _endpoints(caller, data, external, locked=organization_id)
        edge = graph.ordering_edge(
            data.dependency_type, data.source_item_id, data.target_item_id, "active", external
        )
        # The maintained order decides, and is updated for the new edge. Refusing inside
        # the transaction rolls back everything, ranks recomputed on the way included.
        cycle = None
        if edge is not None:
            before, after = edge
            known = (found[before][3], found[before][2], found[after][2])  # mark, ranks
            cycle = graph.add_ordering_edge(organization_id, before, after, known=known, planned=planned)
        if cycle is not None:
            raise CycleDetected(cycle)
        dep = insert_row(
            m.Dependency,
            {
                "id": clock.new_id(),
                "sow": sow_id,
                "source_item": data.source_item_id,
                "target_item": data.target_item_id,
                "dependency_type": data.dependency_type,
                "risk_level": data.risk_level,
                "status": "active",
                "is_external": external,
                "external_target": data.external_target,
                "external_owner": data.external_owner,
                "contact_email": data.contact_email,
                "vendor": data.vendor,
                "sla_date": data.sla_date,
                "escalation_date": data.escalation_date,
                "notes": data.notes,
                "created_by_user_id": caller.user_id,
                "created_at": clock.now(),
                "updated_at": None,
                "before_item_id": edge[0] if edge else None,
                "after_item_id": edge[1] if edge else None,
                "organization_id": organization_id,
            },
        )
        created = to_out(dep)
        events.record(organization_id, "dependency", "created", dep.id, created)
    return created


_UPDATABLE = {
    "status": m.Dependency.status,
    "risk_level": m.Dependency.risk_level,
    "sla_date": m.Dependency.sla_date,
    "escalation_date": m.Dependency.escalation_date,
    "notes": m.Dependency.notes,
}


def update_dependency(caller: Caller, dependency_id: str, data: DependencyUpdate) -> DependencyOut:
    """Change status, riskLevel, slaDate, escalationDate or notes.

    Leaving ``cancelled`` puts the dependency's order back into force, so that
    change must pass the cycle check exactly like a create.
    """
    caller.require_write()
    sent = data.model_fields_set & set(_UPDATABLE)  # null was refused; None here is a cleared date
    _, organization_id = _visible(caller, dependency_id)
    with write_transaction(f"org:{organization_id}"):
        # Re-read under the lock: the reactivation check must see the current status.
        dep = m.Dependency.get_or_none(m.Dependency.id == dependency_id)
        if dep is None:
            raise NotFound(f"dependency {dependency_id} not found")
        status = data.status if "status" in sent and data.status is not None else dep.status
        edge = graph.ordering_edge(
            dep.dependency_type, dep.source_item_id, dep.target_item_id, status, dep.is_external
        )
        if dep.status == "cancelled" and edge is not None:
            cycle = graph.add_ordering_edge(organization_id, *edge)
            if cycle is not None:
                raise CycleDetected(cycle)
        updates = {_UPDATABLE[name]: getattr(data, name) for name in sent}
        updates[m.Dependency.updated_at] = clock.now()
        updates[m.Dependency.before_item_id] = edge[0] if edge else None
        updates[m.Dependency.after_item_id] = edge[1] if edge else None
        m.Dependency.update(updates).where(m.Dependency.id == dependency_id).execute()
        updated = to_out(m.Dependency.get_by_id(dependency_id))
        events.record(organization_id, "dependency", "updated", dependency_id, updated)
    return updated


def delete_dependency(caller: Caller, dependency_id: str) -> Message:
    caller.require_write()
    _, organization_id = _visible(caller, dependency_id)
    with write_transaction(f"org:{organization_id}"):
        deleted = m.Dependency.delete().where(m.Dependency.id == dependency_id).execute()
        if not deleted:  # removed by a concurrent request between the lookup and the lock
            raise NotFound(f"dependency {dependency_id} not found")
        events.record(organization_id, "dependency", "deleted", dependency_id, None)
    return Message(message=f"Dependency {dependency_id} deleted successfully")
