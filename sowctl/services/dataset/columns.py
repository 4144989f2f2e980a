"""Dataset key -> database column, per kind: what import writes and export reads."""

from __future__ import annotations

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
# Import stores the record attribute behind each key in its column; export selects
# each column under its key. Both are read off the dataset record (``schemas.dataset``):
# each field, under its key, goes to the column of its name, a link ``x_id`` to the
# foreign key ``x``. Nested parts (contacts, lines, vendor, cost_code) are handled by hand.

_Columns = dict[str, pw.Field]
Progress = Callable[[int, int], None]  # (done, total), called as import or export goes


def _columns(
    record: type[BaseModel],
    table: type[m.BaseModel],
    *,
    renamed: dict[str, str] | None = None,
    nested: tuple[str, ...] = (),
) -> tuple[type[m.BaseModel], _Columns]:
    """``record``'s keys, in its order, each with its column of ``table`` (``renamed``: a field
    whose column has another name); ``nested``: the fields written to other tables, or not
    stored (a KeyError names any other field without a column)."""
    fields = table._meta.fields
    columns: _Columns = {}
    for name, info in record.model_fields.items():
        if name in nested:
            continue
        column = (renamed or {}).get(name) or (name if name in fields else name.removesuffix("_id"))
        columns[info.alias or name] = fields[column]
    return table, columns


# A Group B record's project_id names its financial project.
_FINANCIAL = {"project_id": "financial_project"}

COLUMNS: dict[str, tuple[type[m.BaseModel], _Columns]] = {
    "organizations": _columns(s.OrganizationRecord, m.Organization),
    "users": _columns(s.UserRecord, m.User),
    "clients": _columns(s.ClientRecord, m.Client, nested=("contacts",)),
    "contacts": _columns(s.ContactRecord, m.Contact),
    "projects": _columns(s.ProjectRecord, m.Project),
    "sows": _columns(s.SowRecord, m.Sow),
    # organizationId is the SOW's (written only where a SOW id alone is ambiguous).
    "items": _columns(
        s.ItemRecord, m.Item, renamed={"parent_item_id": "parent"}, nested=("organization_id",)
    ),
    "dependencies": _columns(s.DependencyRecord, m.Dependency),
    "companies": _columns(s.CompanyRecord, m.Company),
    "financialProjects": _columns(s.FinancialProjectRecord, m.FinancialProject),
    "vendors": _columns(s.VendorRecord, m.Vendor),
    "costCodes": _columns(s.CostCodeRecord, m.CostCode),
    "commitments": _columns(s.CommitmentRecord, m.Commitment, renamed=_FINANCIAL),
    "budgetViews": _columns(s.BudgetViewRecord, m.BudgetView, renamed=_FINANCIAL),
    "budgetViewSnapshots": _columns(
        s.BudgetViewSnapshotRecord, m.BudgetViewSnapshot, renamed=_FINANCIAL, nested=("line_items",)
    ),
    "snapshotLines": _columns(s.SnapshotLineRecord, m.SnapshotLineItem),
    "primeContracts": _columns(s.PrimeContractRecord, m.PrimeContract, renamed=_FINANCIAL),
    "purchaseOrders": _columns(
        s.PurchaseOrderRecord, m.PurchaseOrder, renamed=_FINANCIAL, nested=("vendor", "line_items")
    ),
    "purchaseOrderLines": _columns(s.PurchaseOrderLineRecord, m.PurchaseOrderLine, nested=("cost_code",)),
}
_RECORD_MODEL = {
    **s.RECORD_MODELS,
    "contacts": s.ContactRecord,
    "snapshotLines": s.SnapshotLineRecord,
    "purchaseOrderLines": s.PurchaseOrderLineRecord,
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
    model = _RECORD_MODEL[kind]
    for name, info in model.model_fields.items():
        if (info.alias or name) == key:
            return name
    raise KeyError(key)
