"""Dataset key -> database column, per kind: what import writes and export reads."""

from __future__ import annotations

import typing
from collections.abc import Callable, Iterable
from datetime import datetime
from operator import attrgetter
from typing import Any

import peewee as pw
from pydantic import BaseModel

from sowctl.schemas import dataset as s
from sowctl.storage import models as m

# --- columns: dataset key -> database column, per kind ----------------------------
#
# Import stores the record attribute behind each key in its column; export selects each
# column under its key. Both are read off the dataset record (``schemas.dataset``, itself
# read off the API's output model): each field, under its key, goes to the column of its
# name, a link ``x_id`` to the foreign key ``x``. A field that holds records is kept whole in
# a JSON column of its name (a contract's customer), or else written and read by hand (contacts
# and lines in their own tables, a purchase order's vendor and a line's cost code as links);
# any other field without a column is an error here, when the module is imported.

_Columns = dict[str, pw.Field]
Progress = Callable[[int, int], None]  # (done, total), called as import or export goes

# Where each kind is kept (the kinds held inside another's records after that kind).
_TABLES: dict[str, type[m.BaseModel]] = {
    "organizations": m.Organization,
    "users": m.User,
    "clients": m.Client,
    "contacts": m.Contact,
    "projects": m.Project,
    "sows": m.Sow,
    "items": m.Item,
    "dependencies": m.Dependency,
    "companies": m.Company,
    "financialProjects": m.FinancialProject,
    "vendors": m.Vendor,
    "costCodes": m.CostCode,
    "commitments": m.Commitment,
    "budgetViews": m.BudgetView,
    "budgetViewSnapshots": m.BudgetViewSnapshot,
    "snapshotLines": m.SnapshotLineItem,
    "primeContracts": m.PrimeContract,
    "purchaseOrders": m.PurchaseOrder,
    "purchaseOrderLines": m.PurchaseOrderLine,
}
# The links whose foreign key is named otherwise than ``x`` for ``x_id``: an item's parent,
# and a Group B record's project_id, which names its financial project.
_LINKED_AS = {"parent_item_id": "parent", "project_id": "financial_project"}
# Fields a dataset has that are stored nowhere: the organization of an item's SOW (written
# only where a SOW id alone is ambiguous, and read to find the SOW).
_NOT_STORED = {"items": ("organization_id",)}


def columns_of(record: type[BaseModel], table: type[m.BaseModel], *, kind: str = "") -> _Columns:
    """``record``'s keys, in its order, each with its column of ``table``; a field that holds
    records and is no JSON column, or one of ``_NOT_STORED[kind]``, has none (a KeyError names
    any other)."""
    fields = table._meta.fields
    columns: _Columns = {}
    for name, info in record.model_fields.items():
        if _holds_records(info.annotation):  # kept whole in a JSON column of its name, or by hand
            if isinstance(fields.get(name), pw.JSONField):
                columns[info.alias or name] = fields[name]
            continue
        column = next(
            (c for c in (name, name.removesuffix("_id"), _LINKED_AS.get(name)) if c in fields), None
        )
        if column is None and name in _NOT_STORED.get(kind, ()):
            continue
        if column is None:
            raise KeyError(f"{record.__name__}.{name} has no column in {table.__name__}")
        columns[info.alias or name] = fields[column]
    return columns


def _holds_records(annotation: Any) -> bool:
    kinds = (annotation, *typing.get_args(annotation))
    return any(
        typing.get_origin(kind) is list or (isinstance(kind, type) and issubclass(kind, BaseModel))
        for kind in kinds
    )


COLUMNS: dict[str, tuple[type[m.BaseModel], _Columns]] = {
    kind: (table, columns_of(s.STORED_RECORDS[kind], table, kind=kind)) for kind, table in _TABLES.items()
}
_RECORD_MODEL = s.STORED_RECORDS
# The records a kind names as an object (a key of its own, a link in its table), with the
# columns of the table linked to behind that object's keys: a purchase order's vendor.
REFERENCES: dict[str, dict[str, tuple[type[m.BaseModel], _Columns]]] = {
    "purchaseOrders": {"vendor": (m.Vendor, columns_of(s.VendorRef, m.Vendor))},
    "purchaseOrderLines": {"cost_code": (m.CostCode, columns_of(s.CostCodeRef, m.CostCode))},
}


def _getter(kind: str) -> Callable[[Any], tuple]:
    """The record's values in COLUMNS order, as one C-level call per record."""
    attribute = {info.alias or name: name for name, info in _RECORD_MODEL[kind].model_fields.items()}
    names = [attribute[key] for key in COLUMNS[kind][1]]
    return attrgetter(*names)


def _stamp(records: Iterable[Any], moment: datetime, *names: str) -> None:
    """Timestamps missing from a record are set at import time."""
    for record in records:
        for name in names:
            if getattr(record, name) is None:
                setattr(record, name, moment)


def _getter_name(kind: str, key: str) -> str:
    """The attribute of ``kind``'s records behind the dataset key ``key``."""
    for name, info in _RECORD_MODEL[kind].model_fields.items():
        if (info.alias or name) == key:
            return name
    raise KeyError(key)
