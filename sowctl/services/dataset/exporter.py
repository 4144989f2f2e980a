"""Export: every table except credentials and rate counters, ordered so equal data exports alike."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable
from contextvars import ContextVar
from decimal import Decimal
from operator import itemgetter
from typing import Any

import peewee as pw

from sowctl.foundation import clock
from sowctl.schemas import dataset as s
from sowctl.services.dataset.columns import COLUMNS, REFERENCES, Progress
from sowctl.services.item_rules import parents_first
from sowctl.services.organization_rows import rows_of
from sowctl.storage import models as m
from sowctl.storage.peewee_compat import tuples

# A sandbox's export (``services.sandboxes``): that organization's records only.
_scope: ContextVar[str | None] = ContextVar("export_scope", default=None)


def export_dataset(
    *, progress: Progress | None = None, scope: str | None = None
) -> dict[str, list[dict[str, Any]]]:
    """The whole database as a dataset, by id (items: each parent first); no credentials.

    ``progress(done, total)`` is called after each kind (``total``: the number of kinds).
    ``scope``: one organization's records only (a sandbox's).
    """
    token = _scope.set(scope)
    try:
        return _export(progress)
    finally:
        _scope.reset(token)


def _export(progress: Progress | None) -> dict[str, list[dict[str, Any]]]:
    result: dict[str, list[dict[str, Any]]] = {}
    database = m.database_proxy.obj
    # One consistent view of every table, even while others write. SQLite (WAL): a
    # deferred BEGIN reads one snapshot from its first read on. PostgreSQL's default,
    # READ COMMITTED, takes a new snapshot per statement (an order read after its lines
    # would have none), so the outermost transaction asks for REPEATABLE READ.
    with database.atomic():
        if isinstance(database, pw.PostgresqlDatabase) and database.transaction_depth() == 1:
            database.execute_sql("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        for done, kind in enumerate(s.KINDS, start=1):
            result[kind] = _EXPORTERS.get(kind, _export_flat)(kind)
            if progress is not None:
                progress(done, len(s.KINDS))
    return result


def _timestamp_out(value: Any) -> str | None:
    """Stored timestamp -> ``YYYY-MM-DDThh:mm:ssZ``; SQLite's text form is rewritten directly."""
    if value is None:
        return None
    if isinstance(value, str):
        if len(value) == 19 and value[10] == " ":
            return f"{value[:10]}T{value[11:]}Z"
        value = pw.format_date_time(value, pw.DateTimeField.formats)  # type: ignore[attr-defined]  # not in the stubs
        if isinstance(value, str):  # not a form peewee writes: leave it as it is
            return value
    return clock.format_timestamp(value)


def _date_out(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return value.isoformat()


def _number_out(value: Any) -> float | None:
    """Snapshot and prime-contract amounts are JSON numbers."""
    return None if value is None else float(Decimal(value))


def _money_out(value: Any) -> str | None:
    """Purchase-order amounts are decimal strings, exactly as stored."""
    return None if value is None else str(Decimal(value))


def _quantity_out(value: Any) -> int | float | None:
    if value is None:
        return None
    number = Decimal(value)
    return int(number) if number.as_tuple().exponent == 0 else float(number)


def _json_out(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


def _bool_out(value: Any) -> bool | None:
    return None if value is None else bool(value)


def _converter(kind: str, key: str, column: pw.Field) -> Callable[[Any], Any] | None:
    """How a raw database value becomes its dataset form (None: as it is)."""
    if isinstance(column, pw.DateTimeField):
        return _timestamp_out
    if isinstance(column, pw.DateField):
        return _date_out
    if isinstance(column, pw.BooleanField):
        return _bool_out
    if isinstance(column, pw.JSONField):
        return _json_out
    if isinstance(column, m.MoneyField):
        if kind == "purchaseOrderLines" and key == "quantity":
            return _quantity_out
        return _money_out if kind in ("purchaseOrders", "purchaseOrderLines") else _number_out
    return None


def _select(
    kind: str, extra: dict[str, pw.Field] | None = None, join: tuple | None = None
) -> list[dict[str, Any]]:
    """Rows of a kind as dataset records (keys of COLUMNS, then ``extra``), in id order.

    Rows are read from the cursor and converted here: peewee's per-value conversion
    costs more than the query itself on 100,000-row tables.
    """
    model, columns = COLUMNS[kind]
    columns = {**columns, **(extra or {})}
    query = model.select(*columns.values())
    if join is not None:
        query = query.join(*join)
    scope = _scope.get()
    if scope is not None:
        query = query.where(rows_of(model, scope))
    keys = list(columns)
    converters = [
        (k, convert)
        for k, (key, column) in enumerate(columns.items())
        if (convert := _converter(kind, key, column)) is not None
    ]
    rows = []
    for raw in m.database_proxy.obj.execute(query):
        values = list(raw)
        for k, convert in converters:
            values[k] = convert(values[k])
        rows.append(dict(zip(keys, values, strict=True)))
    rows.sort(key=itemgetter("id"))
    return rows


def _export_flat(kind: str) -> list[dict[str, Any]]:
    return _select(kind)


def _grouped(rows: list[dict[str, Any]], owner: str, position: str | None = None) -> dict[Any, list[dict]]:
    """Child records by owner id, ordered by position (then id); the helper keys are removed."""
    if position is not None:
        rows.sort(key=lambda row: (row[position], row["id"]))
    groups: dict[Any, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        key = row.pop(owner)
        if position is not None:
            del row[position]
        groups[key].append(row)
    return groups


def _export_clients(kind: str) -> list[dict[str, Any]]:
    contacts = _grouped(_select("contacts", {"_client": m.Contact.client}), "_client")
    clients = _select(kind)
    for client in clients:
        client["contacts"] = contacts.get(client["id"], [])
    return clients


def _export_snapshots(kind: str) -> list[dict[str, Any]]:
    lines = _select(
        "snapshotLines", {"_snapshot": m.SnapshotLineItem.snapshot, "_position": m.SnapshotLineItem.position}
    )
    by_snapshot = _grouped(lines, "_snapshot", "_position")
    snapshots = _select(kind)
    for snapshot in snapshots:
        snapshot["line_items"] = by_snapshot.get(snapshot["id"], [])
    return snapshots


def _export_purchase_orders(kind: str) -> list[dict[str, Any]]:
    position: dict[str, pw.Field] = {
        "_order": m.PurchaseOrderLine.purchase_order,
        "_position": m.PurchaseOrderLine.position,
    }
    lines = _select_naming("purchaseOrderLines", position)
    for k, line in enumerate(lines):
        lines[k] = {key: line[key] for key in (*_LINE_KEYS, "_order", "_position")}
    by_order = _grouped(lines, "_order", "_position")
    result = []
    for order in _select_naming(kind):
        order["line_items"] = by_order.get(order["id"], [])
        result.append({key: order[key] for key in _ORDER_KEYS})
    return result


def _select_naming(kind: str, extra: dict[str, pw.Field] | None = None) -> list[dict[str, Any]]:
    """``_select`` of a kind whose records name another record as an object (``REFERENCES``:
    a purchase order's vendor), that object nested under its key as the API answers it."""
    ((field, (table, columns)),) = REFERENCES[kind].items()
    named = {f"_{field}.{key}": column for key, column in columns.items()}
    link = getattr(COLUMNS[kind][0], field)
    rows = _select(
        kind, {**(extra or {}), **named}, join=(table, pw.JOIN.INNER, link == table._meta.primary_key)
    )
    for row in rows:
        row[field] = {key: row.pop(f"_{field}.{key}") for key in columns}
    return rows


def _api_order(record: Any) -> tuple[str, ...]:
    """A record's keys as the API answers it (its output model's order), then the keys
    only a dataset has (links, the creation time, the optional request fields)."""
    fields = record.model_fields
    answered = tuple(fields[name].alias or name for name in record.answered.model_fields if name in fields)
    keys = (info.alias or name for name, info in fields.items())
    return (*answered, *(key for key in keys if key not in answered))


_ORDER_KEYS = _api_order(s.PurchaseOrderRecord)
_LINE_KEYS = _api_order(s.PurchaseOrderLineRecord)


def _export_items(kind: str) -> list[dict[str, Any]]:
    """Items name their SOW by its shown id, not by the stored key (``models.Sow``); in id
    order, except that a parent comes before its children: the import reads such a file once."""
    rows = _select(kind, extra={"sowId": m.Sow.id, "organizationId": m.Sow.organization}, join=(m.Sow,))
    organizations = pw.fn.COUNT(m.Sow.organization.distinct())
    # One organization's export says nothing of which ids others use.
    shared = (
        {sow_id for (sow_id,) in tuples(m.Sow.select(m.Sow.id).group_by(m.Sow.id).having(organizations > 1))}
        if _scope.get() is None
        else set()
    )
    for k, row in enumerate(rows):  # the SOW's organization, where its id alone would not say which
        organization = row.pop("organizationId")
        if row["sowId"] in shared:
            fields = list(row.items())
            fields.insert(2, ("organizationId", organization))  # after sowId
            rows[k] = dict(fields)
    ids = [row["id"] for row in rows]
    order = parents_first(ids, [row["parentItemId"] for row in rows], frozenset(ids))
    if len(order) < len(rows):  # a parent loop (stored before the rule): those at the end
        order += sorted(set(range(len(rows))).difference(order))
    return [rows[i] for i in order]


_EXPORTERS: dict[str, Callable[[str], list[dict[str, Any]]]] = {
    "items": _export_items,
    "clients": _export_clients,
    "budgetViewSnapshots": _export_snapshots,
    "purchaseOrders": _export_purchase_orders,
}
