"""Items of a SOW: hierarchy rules, ordering, status aggregation."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import peewee as pw

from sowctl.foundation import clock
from sowctl.foundation.budgets import MAX_HIERARCHY_DEPTH
from sowctl.foundation.errors import HierarchyViolation, InvalidInput, Issue, NotFound
from sowctl.schemas.items import (
    ItemCreate,
    ItemOut,
    ItemUpdate,
    Message,
    ReorderedItem,
    ReorderRequest,
    ReorderResult,
)
from sowctl.schemas.rows import from_row
from sowctl.schemas.vocabulary import MAX_ORDER_INDEX, ItemType
from sowctl.services import bulk, events, item_pages, token_reads
from sowctl.services.access import Caller, item_for, sow_for
from sowctl.services.item_rules import depth_problem, shown_status
from sowctl.storage import models as m
from sowctl.storage import tallies
from sowctl.storage.database import is_sqlite, write_transaction
from sowctl.storage.peewee_compat import tuples


def sow_rows(sow_id: str) -> list[tuple[str, str | None, str, str]]:
    return list(
        tuples(
            m.Item.select(m.Item.id, m.Item.parent, m.Item.type, m.Item.status).where(m.Item.sow == sow_id)
        )
    )


def subtree_rows(root_ids: Sequence[str]) -> list[tuple[str, str | None, str, str]]:
    """(id, parent_id, type, status) of these items and everything below them: one
    recursive query down the parent index, each item once however the subtrees nest."""
    table = m.Item._meta.table_name
    parent = m.Item.parent.column_name
    param = m.database_proxy.param
    marks = ", ".join([param] * len(root_ids))
    sql = (
        f"WITH RECURSIVE sub(id) AS (SELECT id FROM {table} WHERE id IN ({marks}) "
        f"UNION SELECT i.id FROM {table} i JOIN sub ON i.{parent} = sub.id) "
        f"SELECT i.id, i.{parent}, i.type, i.status FROM {table} i JOIN sub ON sub.id = i.id"
    )
    return list(m.database_proxy.execute_sql(sql, tuple(root_ids)).fetchall())


def item_level(item_id: str) -> int:
    """The level of a stored item (1: top level), counted up its parents in one recursive
    query that stops just past ``MAX_HIERARCHY_DEPTH`` (enough to refuse a child, and
    bounded on older, deeper data or a corrupt parent loop)."""
    table = m.Item._meta.table_name
    parent = m.Item.parent.column_name
    param = m.database_proxy.param
    sql = (
        f"WITH RECURSIVE up(id, parent, level) AS (SELECT id, {parent}, 1 FROM {table} WHERE id = {param} "
        f"UNION ALL SELECT i.id, i.{parent}, up.level + 1 FROM {table} i JOIN up ON i.id = up.parent "
        f"WHERE up.level <= {param}) SELECT MAX(level) FROM up"
    )
    row = m.database_proxy.execute_sql(sql, (item_id, MAX_HIERARCHY_DEPTH)).fetchone()
    return int(row[0] or 0)


def to_out(item: m.Item, sow_id: str) -> ItemOut:
    """The API's item; ``sow_id`` is its SOW's shown id (``item.sow_id`` is the stored key).
    A requirement's status is calculated from the counts stored on its own row."""
    below = [getattr(item, field.name) for field in tallies.FIELDS]
    return from_row(
        ItemOut,
        item,
        sow_id=sow_id,
        parent_item_id=item.parent_id,
        status=shown_status(item.type, item.status, below),
    )


# --- queries ------------------------------------------------------------------


def list_items(
    caller: Caller,
    sow_id: str,
    *,
    item_type: ItemType | None = None,
    parent_id: str | None = None,
    offset: int = 0,
    limit: int | None = None,
) -> tuple[item_pages.ItemRows, int]:
    """Items of a SOW in ``orderIndex`` order, as rows of ``ItemOut``'s values and the
    counts below each (``services.item_pages``), with the total count before paging."""
    sow = sow_for(caller, sow_id)
    rows, total = item_pages.read_page(
        sow.key, item_type=item_type, parent_id=parent_id, offset=offset, limit=limit
    )
    if parent_id is not None and total == 0 and not _in_sow(parent_id, sow.key):
        # A filter naming no item of the SOW is a 404 (create's wording); an item with no
        # children lists none. Only an empty answer needs the lookup.
        raise NotFound(f"parent item {parent_id} not found in SOW {sow_id}")
    return item_pages.ItemRows(rows, sow.id), total


def _in_sow(item_id: str, sow_key: str) -> bool:
    return m.Item.select().where((m.Item.id == item_id) & (m.Item.sow == sow_key)).exists()


def get_item(caller: Caller, item_id: str) -> ItemOut:
    item = item_for(caller, item_id)
    return to_out(item, item.sow.id)


def get_item_with_token(secret: str, item_id: str) -> tuple[Caller, item_pages.ItemRows]:
    """The caller a bearer token names and the item ``get_item(caller, item_id)`` gives, as
    a list page's row, the token read in the item's statement (``services.token_reads``)."""
    return token_reads.item_for_token(secret, item_id)


# --- changes ------------------------------------------------------------------


def create_item(caller: Caller, sow_id: str, data: ItemCreate) -> ItemOut:
    caller.require_write()
    sow = sow_for(caller, sow_id)
    with write_transaction(f"org:{sow.project.organization_id}"):
        parent = None
        if data.parent_item_id is not None:
            parent = m.Item.get_or_none(m.Item.id == data.parent_item_id)
            if parent is None or parent.sow_id != sow.key:
                raise NotFound(f"parent item {data.parent_item_id} not found in SOW {sow_id}")
            if parent.type == "task_item" and data.type == "requirement":
                raise HierarchyViolation(
                    f"a task item cannot contain a requirement (parentItemId {parent.id} is a task_item)",
                    [Issue(("parentItemId",), "a task item cannot contain a requirement")],
                )
            problem = depth_problem(item_level(parent.id))
            if problem is not None:
                raise InvalidInput.for_field("parentItemId", problem)
        order_index = data.order_index
        if order_index is None:
            siblings = m.Item.select(pw.fn.MAX(m.Item.order_index)).where(
                (m.Item.sow == sow.key)
                & (m.Item.parent.is_null() if parent is None else (m.Item.parent == parent.id))
            )
            highest = siblings.scalar()
            order_index = 0 if highest is None else highest + 1
            if order_index > MAX_ORDER_INDEX:
                raise InvalidInput.for_field(
                    "orderIndex", f"must be given: a sibling already has the largest one ({MAX_ORDER_INDEX})"
                )
        # Item ids are one namespace across organizations: a chosen id could collide with,
        # and so reveal, another organization's item. Only full rights (local mode) choose
        # one; a scoped caller's is ignored, as the service ignores fields it does not take.
        chosen = data.id if caller.organization_id is None else None
        item_id = chosen or clock.new_id()
        if chosen is not None and m.Item.get_or_none(m.Item.id == item_id) is not None:
            raise InvalidInput.for_field("id", f"item {item_id} already exists")
        moment = clock.now()
        item = m.Item.create(
            id=item_id,
            sow=sow.key,
            parent=parent.id if parent else None,
            type=data.type,
            title=data.title,
            description=data.description,
            order_index=order_index,
            status="pending",
            created_by_user_id=caller.user_id,
            created_at=moment,
            updated_at=moment,
        )
        if parent is not None and data.type == "task_item":
            tallies.add_to_ancestors(parent.id, tallies.one_task("pending"))
        created = to_out(item, sow.id)
        events.record(sow.project.organization_id, "item", "created", item.id, created)
    return created


def update_item(caller: Caller, item_id: str, data: ItemUpdate) -> ItemOut:
    caller.require_write()
    item = item_for(caller, item_id)
    sent = data.model_fields_set  # the model refused null, so every field sent has a value
    changes: dict[pw.Field, Any] = {
        m.Item.title: data.title,
        m.Item.description: data.description,
        m.Item.status: data.status,
        m.Item.order_index: data.order_index,
    }
    names = {"title", "description", "status", "order_index"}
    updates = {field: value for field, value in changes.items() if field.name in (sent & names)}
    updates[m.Item.updated_at] = clock.now()
    with write_transaction(f"org:{item.sow.project.organization_id}"):
        if "status" in sent and item.type == "task_item" and item.parent_id is not None:
            # Read again under the lock: the status a concurrent update left is the one to move.
            before = m.Item.select(m.Item.status).where(m.Item.id == item_id).scalar()
            if before is not None and data.status is not None and before != data.status:
                tallies.add_to_ancestors(item.parent_id, tallies.task_moved(before, data.status))
        m.Item.update(updates).where(m.Item.id == item_id).execute()
        updated = get_item(caller, item_id)
        events.record(item.sow.project.organization_id, "item", "updated", item_id, updated)
    return updated


def delete_item(caller: Caller, item_id: str) -> Message:
    """Delete an item, its descendants, and every dependency touching any of them (the rule
    of ``item_cascade``, which the CLI shows before it deletes).

    Under the organization's write lock, the subtree and the dependencies touching it are
    read (the events name each, ``services.events``), then on SQLite the dependencies and
    the items go, children before parents, a thousand per statement. PostgreSQL checks
    each deleted row's foreign keys with a query of its own anyway, and lets those queries
    do the deleting in half the time: there the item alone is deleted and
    the cascade takes its descendants and their dependencies."""
    caller.require_write()
    item = item_for(caller, item_id)
    organization_id = item.sow.project.organization_id
    with write_transaction(f"org:{organization_id}"):
        # Read under the lock: the events name exactly what goes, an item made under the
        # subtree meanwhile included.
        if not m.Item.select().where(m.Item.id == item_id).exists():
            raise NotFound(f"item {item_id} not found")  # deleted meanwhile: nothing to record
        doomed = _subtree(item_id)
        linked = _touching(doomed)
        _take_from_ancestors(item_id)
        if not is_sqlite():
            bulk.delete_where_in(m.Item, m.Item.id, [item_id])
        else:
            bulk.delete_where_in(m.Dependency, m.Dependency.id, linked)
            bulk.delete_where_in(m.Item, m.Item.id, doomed[::-1])
        events.record_many(organization_id, "dependency", "deleted", [(dep, None) for dep in linked])
        events.record_many(organization_id, "item", "deleted", [(gone, None) for gone in doomed])
    return Message(message=f"Item {item_id} deleted successfully")


def _take_from_ancestors(item_id: str) -> None:
    """The items above one about to be deleted lose the task items of its subtree: the
    counts on its row (read under the lock, so they include a task added meanwhile) and
    itself if it is one."""
    row = (
        m.Item.select(m.Item.parent, m.Item.type, m.Item.status, *tallies.FIELDS)
        .where(m.Item.id == item_id)
        .tuples()
        .first()
    )
    if row is None or row[0] is None:
        return
    parent_id, item_type, status, *below = row
    tallies.add_to_ancestors(parent_id, tallies.subtree_gone(item_type, status, below))


def reorder_items(caller: Caller, sow_id: str, data: ReorderRequest) -> ReorderResult:
    """Set ``orderIndex`` of several items at once: all of them or none.

    Everything that can be is checked before the organization's write lock is taken (a
    refused reorder never takes it); under it, the new indexes go in with one statement
    per thousand items, and the count of rows they updated shows that every item is
    still there (an item deleted meanwhile refuses the whole reorder)."""
    caller.require_write()
    sow = sow_for(caller, sow_id)
    ids = [entry.id for entry in data.items]
    repeated = [item_id for item_id, times in Counter(ids).items() if times > 1]
    if repeated:
        raise InvalidInput.for_field("items", f"item {repeated[0]} is listed more than once")
    _require_in_sow(ids, sow.key, sow_id)
    rows = [(entry.id, entry.order_index) for entry in data.items]
    moment = clock.now()
    with write_transaction(f"org:{sow.project.organization_id}"):
        updated = bulk.update_rows(
            m.Item, [m.Item.order_index], rows, fixed={m.Item.updated_at: moment}, where=(m.Item.sow, sow.key)
        )
        if updated != len(rows):
            _require_in_sow(ids, sow.key, sow_id)  # names the item gone; raising undoes the rest
            raise NotFound(f"an item of the reorder left SOW {sow_id}")  # only if it came back
        events.record_many(sow.project.organization_id, "item", "updated", _moved(ids, sow.key, sow.id))
    return ReorderResult(
        message="Items reordered successfully",
        items=[ReorderedItem(id=e.id, order_index=e.order_index) for e in data.items],
    )


def _moved(ids: Sequence[str], sow_key: str, sow_id: str) -> list[tuple[str, ItemOut]]:
    """Each reordered item as the API now shows it, in the order the request listed them."""
    found: dict[str, ItemOut] = {}
    for chunk in bulk.chunks(ids):
        query = m.Item.select().where(m.Item.id.in_(list(chunk)) & (m.Item.sow == sow_key))
        found.update((item.id, to_out(item, sow_id)) for item in query)
    return [(item_id, found[item_id]) for item_id in ids]


def _require_in_sow(ids: Sequence[str], sow_key: str, sow_id: str) -> None:
    """404 naming the first of ``ids`` that is not an item of the SOW: one query per thousand."""
    table, sow_column = m.Item._meta.table_name, m.Item.sow.column_name
    param = m.database_proxy.param
    known: set[str] = set()
    for chunk in bulk.chunks(ids):
        marks = ", ".join([param] * len(chunk))
        sql = f"SELECT id FROM {table} WHERE id IN ({marks}) AND {sow_column} = {param}"
        known.update(row[0] for row in m.database_proxy.execute_sql(sql, [*chunk, sow_key]))
    missing = next((item_id for item_id in ids if item_id not in known), None)
    if missing is not None:
        raise NotFound(f"item {missing} not found in SOW {sow_id}")


def _touching(item_ids: Sequence[str]) -> list[str]:
    """Ids of the dependencies whose source or target is one of ``item_ids``, each once."""
    found: dict[str, None] = {}
    for chunk in bulk.chunks(item_ids):
        touching = m.Dependency.source_item.in_(list(chunk)) | m.Dependency.target_item.in_(list(chunk))
        query = m.Dependency.select(m.Dependency.id).where(touching).order_by(m.Dependency.id)
        found.update((row[0], None) for row in tuples(query))
    return list(found)


def _subtree(root_id: str) -> list[str]:
    """Ids of ``root_id`` and all its descendants, parents before children: one recursive
    query down the parent index (each level comes out after the one above it)."""
    table, parent = m.Item._meta.table_name, m.Item.parent.column_name
    param = m.database_proxy.param
    sql = (
        f"WITH RECURSIVE sub(id) AS (SELECT CAST({param} AS TEXT) "
        f"UNION SELECT CAST(i.id AS TEXT) FROM {table} i JOIN sub ON i.{parent} = sub.id) SELECT id FROM sub"
    )
    return [row[0] for row in m.database_proxy.execute_sql(sql, (root_id,))]
