"""How many task items lie below each item, by status: stored on the item's row.

A requirement's shown status is calculated from these counts and its own status
(``services.item_rules.aggregate_status``, the one place of that rule), so reading a
requirement costs what reading a task item does, however large its subtree. Every
write that changes them does so in its own transaction:

* ``add_to_ancestors``: one statement adds a change to an item and to every item above
  it (a task item created or deleted below, a task item's status changed); at most the
  hierarchy's depth in rows (``limits.MAX_HIERARCHY_DEPTH``).
* ``recount``: the counts of whole SOWs made again from their rows, written only where
  they differ (a dataset import, the upgrade of a database made before the counts).

A SOW's items never move to another parent, so the only changes are those above.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Sequence

import peewee as pw

from sowctl.storage import models as m

# The order of the counts everywhere: columns, ``count_below``'s lists, ``aggregate_status``.
STATUSES: tuple[str, ...] = ("pending", "in_progress", "completed", "cancelled")
FIELDS: tuple[pw.Field, ...] = (
    m.Item.pending_below,
    m.Item.in_progress_below,
    m.Item.completed_below,
    m.Item.cancelled_below,
)
NONE_BELOW: tuple[int, ...] = (0,) * len(STATUSES)
_POSITION = {status: k for k, status in enumerate(STATUSES)}


def one_task(status: str) -> list[int]:
    """The counts of one task item of ``status``."""
    return _plus(NONE_BELOW, status, 1)


def task_moved(before: str, after: str) -> list[int]:
    """The change when a task item's status goes from ``before`` to ``after``."""
    return _plus(_plus(NONE_BELOW, after, 1), before, -1)


def subtree_gone(item_type: str, status: str, below: Sequence[int]) -> list[int]:
    """The change when an item goes with everything below it (``below``: its counts)."""
    gone = [-int(number) for number in below]
    return _plus(gone, status, -1) if item_type == "task_item" else gone


def _plus(counts: Sequence[int], status: str, number: int) -> list[int]:
    """``counts`` with ``number`` added at ``status`` (a status outside the list counts nowhere,
    as in ``count_below``)."""
    result = list(counts)
    if status in _POSITION:
        result[_POSITION[status]] += number
    return result


def count_below(rows: Iterable[tuple[str, str | None, str, str]]) -> dict[str, list[int]]:
    """From (id, parent_id, type, status) rows: per item with task items below it, their
    number per status (``STATUSES`` order); items with none are left out.

    Children are summed before their parents, so the cost is linear however deep the
    tree; items on a parent loop (corrupt data) are not reached and count nothing."""
    parent_of: dict[str, str | None] = {}
    kind: dict[str, tuple[str, str]] = {}
    for item_id, parent_id, item_type, status in rows:
        parent_of[item_id] = parent_id
        kind[item_id] = (item_type, status)
    children: dict[str, list[str]] = defaultdict(list)
    roots = []
    for item_id, parent_id in parent_of.items():
        if parent_id in parent_of:
            children[parent_id].append(item_id)
        else:
            roots.append(item_id)
    order: list[str] = []  # pre-order: reversed, every child comes before its parent
    stack, seen = roots, set()
    while stack:
        node = stack.pop()
        if node not in seen:
            seen.add(node)
            order.append(node)
            stack.extend(children.get(node, ()))
    counts: dict[str, list[int]] = {}
    for node in reversed(order):
        parent = parent_of[node]
        if parent not in parent_of:
            continue
        item_type, status = kind[node]
        own = counts.get(node)
        task = _POSITION.get(status) if item_type == "task_item" else None
        if own is None and task is None:
            continue
        total = counts.setdefault(parent, [0] * len(STATUSES))
        if own is not None:
            for k, number in enumerate(own):
                total[k] += number
        if task is not None:
            total[task] += 1
    return counts


def _sql_names() -> tuple[str, str, str]:
    table = m.Item._meta.table_name
    return table, m.Item.parent.column_name, m.database_proxy.param


def _ancestors_update() -> str:
    table, parent, param = _sql_names()
    sets = ", ".join(f"{field.column_name} = {field.column_name} + {param}" for field in FIELDS)
    # CAST: PostgreSQL wants one type for both terms of the recursion (id is varchar).
    return (
        f"UPDATE {table} SET {sets} WHERE id IN (WITH RECURSIVE up(id) AS (SELECT CAST({param} AS TEXT) "
        f"UNION SELECT CAST(i.{parent} AS TEXT) FROM {table} i JOIN up ON i.id = up.id "
        f"WHERE i.{parent} IS NOT NULL) SELECT id FROM up)"
    )


def add_to_ancestors(item_id: str, change: Sequence[int]) -> None:
    """Add ``change`` (counts in ``STATUSES`` order) to the item and every item above it:
    one statement, whatever the depth (``UNION`` ends even on a corrupt parent loop)."""
    if any(change):
        m.database_proxy.obj.execute_sql(_ancestors_update(), (*change, item_id))


def stored(values: Sequence[int]) -> tuple[int, ...]:
    """Counts as read from the ``FIELDS`` columns of a row (any driver's integers)."""
    return tuple(int(value) for value in values)


def recount(sow_keys: Collection[str] | None = None, database: pw.Database | None = None) -> int:
    """Make the counts of these SOWs' items (of every item when None) again from their
    rows and write those that differ; returns how many items were corrected."""
    database = database or m.database_proxy.obj
    rows = _rows(database, sow_keys)
    counts = count_below(row[:4] for row in rows)
    changed = []
    for row in rows:
        wanted = tuple(counts.get(row[0], NONE_BELOW))
        if wanted != stored(row[4:]):
            changed.append((*wanted, row[0]))
    _write(database, changed)
    return len(changed)


def _rows(database: pw.Database, sow_keys: Collection[str] | None) -> list[tuple]:
    table, parent, param = _sql_names()
    columns = ", ".join(["id", parent, "type", "status", *(field.column_name for field in FIELDS)])
    if sow_keys is None:
        return list(database.execute_sql(f"SELECT {columns} FROM {table}").fetchall())
    keys, rows = list(sow_keys), []
    sow = m.Item.sow.column_name
    for start in range(0, len(keys), 500):
        chunk = keys[start : start + 500]
        marks = ", ".join([param] * len(chunk))
        sql = f"SELECT {columns} FROM {table} WHERE {sow} IN ({marks})"
        rows += database.execute_sql(sql, chunk).fetchall()
    return rows


def _write(database: pw.Database, changed: list[tuple]) -> None:
    """Each (counts..., id) row's counts: one statement per thousand rows on PostgreSQL
    (psycopg2's ``execute_values``), the driver's ``executemany`` on SQLite (no round trips)."""
    if not changed:
        return
    table, _, param = _sql_names()
    names = [field.column_name for field in FIELDS]
    cursor = database.cursor()
    if isinstance(database, pw.SqliteDatabase):
        sets = ", ".join(f"{name} = {param}" for name in names)
        cursor.executemany(f"UPDATE {table} SET {sets} WHERE id = {param}", changed)
        return
    from psycopg2.extras import execute_values

    sets = ", ".join(f"{name} = v.{name}" for name in names)
    sql = f"UPDATE {table} SET {sets} FROM (VALUES %s) AS v({', '.join(names)}, id) WHERE {table}.id = v.id"
    execute_values(cursor, sql, changed, page_size=1000)
