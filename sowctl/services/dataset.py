"""Import and export of whole datasets (contract §5 and §9).

Import is all or nothing: every record is validated (types, enums, required
fields, via ``sowctl.schemas.dataset``), then every reference is resolved against
the file and the database, and only a file without a single problem is written,
in one transaction. A problem is reported as ``items[42] (id item-43):
parentItemId: item item-9 not found``; the database is left unchanged.

Decisions:

* Import adds records; it never updates. An id that already exists in the
  database is an error naming the record (import into a fresh database, or
  delete the records first).
* ``createdByUserId`` and a project's ``ownerUserId`` are free strings, as in the
  API (tokens may name users the dataset does not list): not checked.
* Dependency cycles are not rejected: the file is the record of what exists, and
  the chain report lists cycles under ``issues.circular``. Self-dependencies and
  dependencies across organizations are rejected.
* Missing ``createdAt``/``updatedAt`` (and snake_case ``created_at``/``updated_at``)
  are set to the import time, except a dependency's ``updatedAt``, which stays
  null (the API shows it only once a dependency was updated).
* Export writes every table except credentials (token and key hashes) and rate
  counters: a dataset is data, not access. Records are ordered by id (lines by
  position), so equal databases export to identical JSON.

Speed: one ``TypeAdapter`` call per kind validates in pydantic's Rust core, the
reference checks use dicts built from the file plus one query per referenced
table (none when the database is empty), and rows go in as multi-row INSERTs in
batches sized under SQLite's variable limit, all inside one transaction.
"""

from __future__ import annotations

import contextlib
import gc
import json
import re
from collections import defaultdict
from collections.abc import Callable, Container, Iterable, Iterator, Sequence
from datetime import datetime
from decimal import Decimal
from functools import cached_property
from operator import attrgetter, itemgetter
from typing import Any

import peewee as pw
from pydantic import ValidationError

from sowctl import clock
from sowctl import models as m
from sowctl.db import write_transaction
from sowctl.errors import InvalidInput, Issue
from sowctl.schemas import dataset as s
from sowctl.schemas.common import (
    UNSTORABLE_MESSAGE,
    escape_unstorable,
    unstorable_text,
    validation_error,
)
from sowctl.schemas.vocabulary import MAX_ORDER_INDEX
from sowctl.services import dependency_rules as rules
from sowctl.services.graph import (
    mark_ranks_stale,  # imported edges carry no topological rank
    ordering_edge,  # the one rule for before/after (contract §7.2)
)

Progress = Callable[[int, int], None]

MAX_ISSUES = 100  # a broken file can have 100,000 problems; the first hundred are plenty
BATCH_ROWS = 1000
MAX_VARIABLES = 32766  # SQLite >= 3.32 (PostgreSQL allows 65535)


# --- problems -------------------------------------------------------------------


class _Problems:
    """Collects what is wrong with a file; raises one InvalidInput for all of it."""

    def __init__(self) -> None:
        self.issues: list[Issue] = []
        self.lines: list[str] = []
        self.total = 0

    def add(self, kind: str, index: int | None, record_id: Any, field: str, message: str) -> None:
        self.total += 1
        if len(self.issues) >= MAX_ISSUES:
            return
        where = kind if index is None else f"{kind}[{index}]"
        if record_id is not None:
            where += f" (id {record_id})"
        self.lines.append(f"{where}: {field}: {message}" if field else f"{where}: {message}")
        path: tuple[str | int, ...] = (kind,) if index is None else (kind, index)
        self.issues.append(Issue(path + ((field,) if field else ()), message))

    def raise_if_any(self) -> None:
        if not self.total:
            return
        message = self.lines[0]
        if self.total > 1:
            message += f" (and {self.total - 1} more problem{'s' if self.total > 2 else ''})"
        raise InvalidInput(message, self.issues)


def _field_path(loc: Sequence[str | int]) -> str:
    """("contacts", 1, "email") -> "contacts[1].email"."""
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += ("." if text else "") + part
    return text


# --- validation -----------------------------------------------------------------


def validate_dataset(data: Any) -> dict[str, list]:
    """Every record of ``data`` as its model, per kind; InvalidInput naming each bad field."""
    if not isinstance(data, dict):
        raise InvalidInput(
            "a dataset must be a JSON object with keys such as organizations, items, dependencies",
            [Issue((), "must be a JSON object")],
        )
    unknown = [key for key in data if key not in s.RECORD_MODELS]
    if unknown:
        raise InvalidInput(
            f"unknown record kind {unknown[0]!r} (expected: {', '.join(s.KINDS)})",
            [Issue((key,), "unknown record kind") for key in unknown],
        )
    problems = _Problems()
    records: dict[str, list] = {}
    for kind in s.KINDS:
        raw = data.get(kind)
        if raw is None:
            records[kind] = []
            continue
        if not isinstance(raw, list):
            problems.add(kind, None, None, "", "must be an array of records")
            continue
        _check_storable(kind, raw, problems)
        try:
            records[kind] = s.ADAPTERS[kind].validate_python(raw)
        except ValidationError as exc:
            for issue in validation_error(exc).issues:
                index, *field = issue.path
                record = raw[index] if isinstance(index, int) and index < len(raw) else None
                record_id = record.get("id") if isinstance(record, dict) else None
                message = issue.message
                if message.startswith("input should be a valid dictionary"):
                    message = "must be an object"
                problems.add(
                    kind, index if isinstance(index, int) else None, record_id, _field_path(field), message
                )
    problems.raise_if_any()
    return records


_ESCAPED_UNSTORABLE = re.compile(r"\\x00|\\ud[89a-f]")


def _check_storable(kind: str, raw: list, problems: _Problems) -> None:
    """NUL characters and lone surrogates: refused as the API refuses them (on every backend)."""
    # repr() escapes both as \x00 and \udXXX, at C speed (~0.5 s per 100,000 records);
    # the exact walk runs only on a hit (or on a backslash-x00 typed in the data).
    if not _ESCAPED_UNSTORABLE.search(repr(raw)):
        return
    for index, record in enumerate(raw):
        path = unstorable_text(record)
        if path is not None:
            record_id = record.get("id") if isinstance(record, dict) else None
            if isinstance(record_id, str):
                record_id = escape_unstorable(record_id)
            problems.add(kind, index, record_id, _field_path(path), UNSTORABLE_MESSAGE)


# --- columns: dataset key -> database column, per kind ----------------------------
#
# Import stores the record attribute behind each key in its column; export selects
# each column under its key. Nested parts (contacts, lines, vendor, cost_code) and
# derived columns (a dependency's SOW and ordering edge) are handled by hand.

_Columns = dict[str, pw.Field]

COLUMNS: dict[str, tuple[type[m.BaseModel], _Columns]] = {
    "organizations": (m.Organization, {"id": m.Organization.id, "name": m.Organization.name}),
    "users": (
        m.User,
        {"id": m.User.id, "organizationId": m.User.organization, "name": m.User.name, "email": m.User.email},
    ),
    "clients": (
        m.Client,
        {
            "id": m.Client.id,
            "organizationId": m.Client.organization,
            "name": m.Client.name,
            "description": m.Client.description,
            "website": m.Client.website,
            "industry": m.Client.industry,
            "isPinned": m.Client.is_pinned,
            "pinnedAt": m.Client.pinned_at,
            "createdAt": m.Client.created_at,
            "updatedAt": m.Client.updated_at,
        },
    ),
    "contacts": (
        m.Contact,
        {
            "id": m.Contact.id,
            "clientId": m.Contact.client,
            "name": m.Contact.name,
            "email": m.Contact.email,
            "phone": m.Contact.phone,
            "role": m.Contact.role,
            "isPrimary": m.Contact.is_primary,
            "createdAt": m.Contact.created_at,
            "updatedAt": m.Contact.updated_at,
        },
    ),
    "projects": (
        m.Project,
        {
            "id": m.Project.id,
            "organizationId": m.Project.organization,
            "name": m.Project.name,
            "description": m.Project.description,
            "status": m.Project.status,
            "clientId": m.Project.client,
            "contactId": m.Project.contact,
            "startDate": m.Project.start_date,
            "endDate": m.Project.end_date,
            "ownerUserId": m.Project.owner_user_id,
            "isPinned": m.Project.is_pinned,
            "pinnedAt": m.Project.pinned_at,
            "createdAt": m.Project.created_at,
            "updatedAt": m.Project.updated_at,
        },
    ),
    "sows": (
        m.Sow,
        {"id": m.Sow.id, "projectId": m.Sow.project, "title": m.Sow.title, "createdAt": m.Sow.created_at},
    ),
    "items": (
        m.Item,
        {
            "id": m.Item.id,
            "sowId": m.Item.sow,
            "title": m.Item.title,
            "description": m.Item.description,
            "type": m.Item.type,
            "parentItemId": m.Item.parent,
            "orderIndex": m.Item.order_index,
            "status": m.Item.status,
            "createdByUserId": m.Item.created_by_user_id,
            "createdAt": m.Item.created_at,
            "updatedAt": m.Item.updated_at,
        },
    ),
    "dependencies": (
        m.Dependency,
        {
            "id": m.Dependency.id,
            "sourceItemId": m.Dependency.source_item,
            "targetItemId": m.Dependency.target_item,
            "dependencyType": m.Dependency.dependency_type,
            "riskLevel": m.Dependency.risk_level,
            "status": m.Dependency.status,
            "isExternal": m.Dependency.is_external,
            "externalTarget": m.Dependency.external_target,
            "externalOwner": m.Dependency.external_owner,
            "contactEmail": m.Dependency.contact_email,
            "vendor": m.Dependency.vendor,
            "slaDate": m.Dependency.sla_date,
            "escalationDate": m.Dependency.escalation_date,
            "notes": m.Dependency.notes,
            "createdByUserId": m.Dependency.created_by_user_id,
            "createdAt": m.Dependency.created_at,
            "updatedAt": m.Dependency.updated_at,
        },
    ),
    "companies": (
        m.Company,
        {"id": m.Company.id, "organizationId": m.Company.organization, "name": m.Company.name},
    ),
    "financialProjects": (
        m.FinancialProject,
        {
            "id": m.FinancialProject.id,
            "companyId": m.FinancialProject.company,
            "name": m.FinancialProject.name,
            "projectId": m.FinancialProject.project,
        },
    ),
    "vendors": (m.Vendor, {"id": m.Vendor.id, "companyId": m.Vendor.company, "name": m.Vendor.name}),
    "costCodes": (
        m.CostCode,
        {
            "id": m.CostCode.id,
            "companyId": m.CostCode.company,
            "full_code": m.CostCode.full_code,
            "name": m.CostCode.name,
        },
    ),
    "commitments": (
        m.Commitment,
        {
            "id": m.Commitment.id,
            "project_id": m.Commitment.financial_project,
            "title": m.Commitment.title,
            "vendor_id": m.Commitment.vendor,
        },
    ),
    "budgetViews": (
        m.BudgetView,
        {
            "id": m.BudgetView.id,
            "project_id": m.BudgetView.financial_project,
            "name": m.BudgetView.name,
            "description": m.BudgetView.description,
            "created_at": m.BudgetView.created_at,
            "updated_at": m.BudgetView.updated_at,
        },
    ),
    "budgetViewSnapshots": (
        m.BudgetViewSnapshot,
        {
            "id": m.BudgetViewSnapshot.id,
            "budget_view_id": m.BudgetViewSnapshot.budget_view,
            "project_id": m.BudgetViewSnapshot.financial_project,
            "name": m.BudgetViewSnapshot.name,
            "description": m.BudgetViewSnapshot.description,
            "created_at": m.BudgetViewSnapshot.created_at,
            "created_by": m.BudgetViewSnapshot.created_by,
        },
    ),
    "snapshotLines": (
        m.SnapshotLineItem,
        {
            "id": m.SnapshotLineItem.id,
            "code": m.SnapshotLineItem.code,
            "description": m.SnapshotLineItem.description,
            "original_budget": m.SnapshotLineItem.original_budget,
            "current_budget": m.SnapshotLineItem.current_budget,
            "committed": m.SnapshotLineItem.committed,
            "spent": m.SnapshotLineItem.spent,
            "projected_total": m.SnapshotLineItem.projected_total,
            "variance": m.SnapshotLineItem.variance,
        },
    ),
    "primeContracts": (
        m.PrimeContract,
        {
            "id": m.PrimeContract.id,
            "project_id": m.PrimeContract.financial_project,
            "title": m.PrimeContract.title,
            "description": m.PrimeContract.description,
            "contract_number": m.PrimeContract.contract_number,
            "status": m.PrimeContract.status,
            "contract_date": m.PrimeContract.contract_date,
            "start_date": m.PrimeContract.start_date,
            "estimated_completion_date": m.PrimeContract.estimated_completion_date,
            "original_contract_value": m.PrimeContract.original_contract_value,
            "current_contract_value": m.PrimeContract.current_contract_value,
            "executed_change_orders_value": m.PrimeContract.executed_change_orders_value,
            "pending_change_orders_value": m.PrimeContract.pending_change_orders_value,
            "customer": m.PrimeContract.customer,
            "payment_terms": m.PrimeContract.payment_terms,
        },
    ),
    "purchaseOrders": (
        m.PurchaseOrder,
        {
            "id": m.PurchaseOrder.id,
            "number": m.PurchaseOrder.number,
            "status": m.PurchaseOrder.status,
            "title": m.PurchaseOrder.title,
            "original_amount": m.PurchaseOrder.original_amount,
            "revised_amount": m.PurchaseOrder.revised_amount,
            "total_amount": m.PurchaseOrder.total_amount,
            "project_id": m.PurchaseOrder.financial_project,
            "commitment_id": m.PurchaseOrder.commitment,
            "created_at": m.PurchaseOrder.created_at,
        },
    ),
    "purchaseOrderLines": (
        m.PurchaseOrderLine,
        {
            "id": m.PurchaseOrderLine.id,
            "description": m.PurchaseOrderLine.description,
            "amount": m.PurchaseOrderLine.amount,
            "quantity": m.PurchaseOrderLine.quantity,
            "unit_cost": m.PurchaseOrderLine.unit_cost,
        },
    ),
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
    """Timestamps missing from a record are set at import time (contract §9)."""
    for record in records:
        for name in names:
            if getattr(record, name) is None:
                setattr(record, name, moment)


# --- import ---------------------------------------------------------------------


def import_dataset(data: dict, *, progress: Progress | None = None) -> dict[str, int]:
    """Load a dataset, all or nothing; returns the number of records per kind.

    ``progress(done, total)`` is called after each inserted batch (rows of all tables).
    """
    with gc_paused():
        records = validate_dataset(data)
        with write_transaction("import"):
            importer = _Importer(records, clock.now())
            importer.check_and_build()
            importer.problems.raise_if_any()
            importer.insert(progress)
            mark_ranks_stale(importer.ordered_organizations)
            # Imported numbers may be above a project's mark: count again at the next order.
            if records["purchaseOrders"]:
                m.FinancialProject.update(po_high_water=None).where(
                    m.FinancialProject.po_high_water.is_null(False)
                ).execute()
        return importer.counts()


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Hundreds of thousands of new, long-lived objects would set off the cyclic collector
    over and over (a third of the import time) for nothing: they are garbage only at the end.
    Nests: only the outermost pause turns the collector back on.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


_Table = tuple[type[m.BaseModel], list[pw.Field], list[tuple]]


class _Importer:
    """Checks references (file first, then database) and builds the rows to insert."""

    def __init__(self, records: dict[str, list], moment: datetime) -> None:
        self.records = records
        self.now = moment
        self.problems = _Problems()
        self.tables: list[_Table] = []
        self.ordered_organizations: set[str] = set()  # given ordering edges by this import
        # Every record hangs off an organization: none means an empty database, no lookups.
        self.database_empty = not m.Organization.select().exists()

    def counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for kind in s.KINDS:
            counts[kind] = len(self.records[kind])
            if kind == "clients":
                counts["contacts"] = sum(len(client.contacts) for client in self.records[kind])
        return counts

    # -- what the database already holds: one query per table, none when it is empty --

    def _load(self, *columns: pw.Field) -> dict:
        """{first column: second column (or the rest as a tuple)} for every row."""
        if self.database_empty:
            return {}
        query = columns[0].model.select(*columns)
        if len(columns) == 1:
            return {row[0]: None for row in query.tuples()}
        if len(columns) == 2:
            return dict(query.tuples())
        return {row[0]: row[1:] for row in query.tuples()}

    @cached_property
    def db_organizations(self) -> dict[str, None]:
        return self._load(m.Organization.id)

    @cached_property
    def db_clients(self) -> dict[str, str]:
        return self._load(m.Client.id, m.Client.organization)

    @cached_property
    def db_contacts(self) -> dict[str, str]:
        return self._load(m.Contact.id, m.Contact.client)

    @cached_property
    def db_projects(self) -> dict[str, str]:
        return self._load(m.Project.id, m.Project.organization)

    @cached_property
    def db_sows(self) -> dict[str, str]:
        if self.database_empty:
            return {}
        return dict(m.Sow.select(m.Sow.id, m.Project.organization).join(m.Project).tuples())

    @cached_property
    def db_items(self) -> dict[str, tuple[str, str]]:
        return self._load(m.Item.id, m.Item.sow, m.Item.type)

    @cached_property
    def db_companies(self) -> dict[str, str]:
        return self._load(m.Company.id, m.Company.organization)

    @cached_property
    def db_financial_projects(self) -> dict[int, str]:
        return self._load(m.FinancialProject.id, m.FinancialProject.company)

    @cached_property
    def db_commitments(self) -> dict[str, int]:
        return self._load(m.Commitment.id, m.Commitment.financial_project)

    @cached_property
    def db_budget_views(self) -> dict[int, int]:
        return self._load(m.BudgetView.id, m.BudgetView.financial_project)

    @cached_property
    def db_purchase_orders(self) -> dict[int, tuple[int, str]]:
        return self._load(m.PurchaseOrder.id, m.PurchaseOrder.financial_project, m.PurchaseOrder.number)

    # -- helpers --

    def _unique(self, kind: str, label: str, records: Sequence[Any], existing: Container) -> dict[Any, int]:
        """id -> index of the file's records; a repeated or already stored id is a problem."""
        index: dict[Any, int] = {}
        for i, record in enumerate(records):
            if record.id in index:
                self.problems.add(kind, i, record.id, "id", f"duplicate id (also {kind}[{index[record.id]}])")
            elif record.id in existing:
                self.problems.add(
                    kind, i, record.id, "id", f"{label} {record.id} already exists in the database"
                )
            else:
                index[record.id] = i
        return index

    def _missing(self, kind: str, index: int, record_id: Any, field: str, label: str, value: Any) -> None:
        self.problems.add(kind, index, record_id, field, f"{label} {value} not found")

    def _table(self, kind: str, rows: list[tuple], extra: Sequence[pw.Field] = ()) -> None:
        model, columns = COLUMNS[kind]
        self.tables.append((model, [*columns.values(), *extra], rows))

    def _flat(self, kind: str, records: Sequence[Any]) -> None:
        getter = _getter(kind)
        self._table(kind, [getter(record) for record in records])

    def _owned(
        self, kind: str, label: str, field: str, owners: Container, existing: Container, owner_label: str
    ) -> None:
        """The common case: unique ids and one reference (e.g. a user's organizationId)."""
        records = self.records[kind]
        self._unique(kind, label, records, existing)
        attribute = _getter_name(kind, field)
        for i, record in enumerate(records):
            value = getattr(record, attribute)
            if value not in owners:
                self._missing(kind, i, record.id, field, owner_label, value)

    # -- the checks, kind by kind, in reference order --

    def check_and_build(self) -> None:
        records, now = self.records, self.now
        # Group A/C
        self._unique("organizations", "organization", records["organizations"], self.db_organizations)
        self._flat("organizations", records["organizations"])
        organizations = {**self.db_organizations, **{r.id: None for r in records["organizations"]}}

        users = records["users"]
        self._owned("users", "user", "organizationId", organizations, self._load(m.User.id), "organization")
        self._flat("users", users)

        client_org, contact_client = self._clients(organizations)
        project_org = self._projects(organizations, client_org, contact_client)

        sows = records["sows"]
        self._owned("sows", "SOW", "projectId", project_org, self.db_sows, "project")
        _stamp(sows, now, "created_at")
        self._flat("sows", sows)
        sow_org = {**self.db_sows, **{r.id: project_org.get(r.project_id) for r in sows}}

        item_info = self._items(sow_org)
        self._dependencies(item_info, sow_org)

        # Group B
        companies = records["companies"]
        self._owned(
            "companies", "company", "organizationId", organizations, self.db_companies, "organization"
        )
        self._flat("companies", companies)
        company_org = {**self.db_companies, **{r.id: r.organization_id for r in companies}}

        fp_company = self._financial_projects(company_org, project_org)
        vendor_company = self._master_data("vendors", "vendor", m.Vendor, company_org)
        cost_code_company = self._master_data("costCodes", "cost code", m.CostCode, company_org)
        commitment_fp = self._commitments(fp_company, vendor_company)

        views = records["budgetViews"]
        self._owned("budgetViews", "budget view", "project_id", fp_company, self.db_budget_views, "project")
        _stamp(views, now, "created_at", "updated_at")
        self._flat("budgetViews", views)
        view_fp = {**self.db_budget_views, **{r.id: r.project_id for r in views}}

        self._snapshots(view_fp, fp_company)

        contracts = records["primeContracts"]
        existing = self._load(m.PrimeContract.id)
        self._owned("primeContracts", "prime contract", "project_id", fp_company, existing, "project")
        for r in contracts:
            r.customer = r.customer.model_dump(mode="json") if r.customer is not None else None
            r.payment_terms = r.payment_terms.model_dump(mode="json") if r.payment_terms is not None else None
        self._flat("primeContracts", contracts)

        self._purchase_orders(fp_company, commitment_fp, vendor_company, cost_code_company)

    def _clients(self, organizations: Container) -> tuple[dict[str, str], dict[str, str]]:
        records, now = self.records["clients"], self.now
        self._owned("clients", "client", "organizationId", organizations, self.db_clients, "organization")
        contact_client = dict(self.db_contacts)
        contact_where: dict[str, str] = {}
        contacts = []
        for i, r in enumerate(records):
            for j, c in enumerate(r.contacts):
                field = f"contacts[{j}]"
                if c.id in contact_where:
                    message = f"duplicate contact id (also {contact_where[c.id]})"
                    self.problems.add("clients", i, r.id, f"{field}.id", message)
                    continue
                if c.id in contact_client:
                    message = f"contact {c.id} already exists in the database"
                    self.problems.add("clients", i, r.id, f"{field}.id", message)
                    continue
                if c.client_id is not None and c.client_id != r.id:
                    message = f"must be the enclosing client's id {r.id}"
                    self.problems.add("clients", i, r.id, f"{field}.clientId", message)
                c.client_id = r.id
                contact_where[c.id] = f"clients[{i}].{field}"
                contact_client[c.id] = r.id
                contacts.append(c)
        _stamp(records, now, "created_at", "updated_at")
        _stamp(contacts, now, "created_at", "updated_at")
        self._flat("clients", records)
        self._flat("contacts", contacts)
        return {**self.db_clients, **{r.id: r.organization_id for r in records}}, contact_client

    def _projects(
        self, organizations: dict[str, None], client_org: dict[str, str], contact_client: dict[str, str]
    ) -> dict[str, str]:
        records = self.records["projects"]
        self._owned("projects", "project", "organizationId", organizations, self.db_projects, "organization")
        add = self.problems.add
        for i, r in enumerate(records):
            org, client = r.organization_id, r.client_id
            if client is not None:
                if client not in client_org:
                    self._missing("projects", i, r.id, "clientId", "client", client)
                elif client_org[client] != org and {client_org[client], org} <= organizations.keys():
                    message = f"client {client} belongs to organization {client_org[client]}, not {org}"
                    add("projects", i, r.id, "clientId", message)
            if r.contact_id is not None:
                owner = contact_client.get(r.contact_id)
                if owner is None:
                    self._missing("projects", i, r.id, "contactId", "contact", r.contact_id)
                elif client is not None and client in client_org and owner != client:
                    message = f"contact {r.contact_id} is not a contact of client {client}"
                    add("projects", i, r.id, "contactId", message)
                elif client is None and client_org.get(owner) != org:
                    message = f"contact {r.contact_id} belongs to another organization"
                    add("projects", i, r.id, "contactId", message)
        _stamp(records, self.now, "created_at", "updated_at")
        self._flat("projects", records)
        return {**self.db_projects, **{r.id: r.organization_id for r in records}}

    def _items(self, sow_org: dict[str, str]) -> dict[str, tuple[str, str]]:
        """Hierarchy checks, then rows in an order that puts every parent before its children."""
        records = self.records["items"]
        position = self._unique("items", "item", records, self.db_items)
        db_items, add = self.db_items, self.problems.add
        for i, r in enumerate(records):
            if r.sow_id not in sow_org:
                self._missing("items", i, r.id, "sowId", "SOW", r.sow_id)
                continue  # its parent's SOW cannot be compared: one problem is enough
            parent_id = r.parent_item_id
            if parent_id is None:
                continue
            if parent_id == r.id:
                add("items", i, r.id, "parentItemId", "an item cannot be its own parent")
                continue
            if parent_id in position:
                parent = records[position[parent_id]]
                parent_sow, parent_type = parent.sow_id, parent.type
            elif parent_id in db_items:
                parent_sow, parent_type = db_items[parent_id]
            else:
                self._missing("items", i, r.id, "parentItemId", "item", parent_id)
                continue
            if parent_sow != r.sow_id:
                message = f"parent item {parent_id} is in SOW {parent_sow}, not {r.sow_id}"
                add("items", i, r.id, "parentItemId", message)
            elif parent_type == "task_item" and r.type == "requirement":
                message = f"a task item cannot contain a requirement ({parent_id} is a task_item)"
                add("items", i, r.id, "parentItemId", message)
        order = self._parents_first(records, position)
        self._fill_order_indexes(records)
        _stamp(records, self.now, "created_at", "updated_at")
        getter = _getter("items")
        self._table("items", [getter(records[i]) for i in order])
        return {**db_items, **{r.id: (r.sow_id, r.type) for r in records}}

    def _parents_first(self, records: Sequence[s.ItemRecord], position: dict[str, int]) -> list[int]:
        """Indexes of ``records``, parents before children; parent loops are problems."""
        order: list[int] = []
        placed: set[str] = set()
        waiting: dict[str, list[int]] = defaultdict(list)
        for i, r in enumerate(records):
            parent_id = r.parent_item_id
            if parent_id in position and parent_id not in placed and parent_id != r.id:
                waiting[parent_id].append(i)
                continue
            stack = [i]
            while stack:
                j = stack.pop()
                order.append(j)
                placed.add(records[j].id)
                stack.extend(reversed(waiting.pop(records[j].id, ())))
        if waiting:
            stuck = sorted(j for group in waiting.values() for j in group)
            self._report_parent_loops(records, position, stuck)
        return order

    def _report_parent_loops(
        self, records: Sequence[s.ItemRecord], position: dict[str, int], stuck: list[int]
    ) -> None:
        explained: set[str] = set()  # items on or below a loop already walked
        for i in stuck:
            chain: list[str] = []
            seen: dict[str, int] = {}
            node: str | None = records[i].id
            while node in position and node not in seen and node not in explained:
                seen[node] = len(chain)
                chain.append(node)
                node = records[position[node]].parent_item_id
            if node in seen:
                loop = chain[seen[node] :]
                start = loop.index(min(loop, key=position.__getitem__))
                loop = loop[start:] + loop[:start]
                message = "circular parent chain: " + " -> ".join([*loop, loop[0]])
                self.problems.add("items", position[loop[0]], loop[0], "parentItemId", message)
            explained.update(chain)

    def _fill_order_indexes(self, records: Sequence[s.ItemRecord]) -> None:
        """A missing orderIndex: one more than the largest among earlier siblings (file, database)."""
        if all(r.order_index is not None for r in records):
            return
        highest: dict[tuple[str, str | None], int] = {}
        if not self.database_empty:
            top = pw.fn.MAX(m.Item.order_index)
            query = m.Item.select(m.Item.sow, m.Item.parent, top).group_by(m.Item.sow, m.Item.parent)
            highest = {(sow, parent): value for sow, parent, value in query.tuples()}
        for i, r in enumerate(records):
            level = (r.sow_id, r.parent_item_id)
            if r.order_index is None:
                r.order_index = highest[level] + 1 if level in highest else 0
                if r.order_index > MAX_ORDER_INDEX:
                    message = f"must be given: a sibling already has the largest one ({MAX_ORDER_INDEX})"
                    self.problems.add("items", i, r.id, "orderIndex", message)
            highest[level] = max(r.order_index, highest.get(level, r.order_index))

    def _dependencies(self, item_info: dict[str, tuple[str, str]], sow_org: dict[str, str]) -> None:
        kind = "dependencies"
        records = self.records[kind]
        self._unique(kind, "dependency", records, self._load(m.Dependency.id))
        add = self.problems.add
        getter = _getter(kind)
        rows = []
        _stamp(records, self.now, "created_at")  # updatedAt stays null: never updated
        for i, r in enumerate(records):
            source = item_info.get(r.source_item_id)
            if source is None:
                self._missing(kind, i, r.id, "sourceItemId", "item", r.source_item_id)
            target_id = r.target_item_id
            # The API's rules for the shape (dependency_rules), so an import refuses what it refuses.
            r.is_external = rules.is_external(r.is_external, target_id, r.external_target)
            shape = rules.shape_problems(r.is_external, r.source_item_id, target_id, r.external_target)
            for field, message in shape:
                add(kind, i, r.id, field, message)
            if not shape and not r.is_external:
                self._check_target(i, r, source, item_info, sow_org)
            edge = ordering_edge(r.dependency_type, r.source_item_id, target_id, r.status, r.is_external)
            before, after = edge if edge is not None else (None, None)
            rows.append((*getter(r), source[0] if source else None, before, after))
        self._table(
            kind, rows, extra=(m.Dependency.sow, m.Dependency.before_item_id, m.Dependency.after_item_id)
        )
        self.ordered_organizations = {sow_org.get(row[-3]) for row in rows if row[-2] is not None} - {None}

    def _check_target(self, i: int, r: Any, source: Any, item_info: dict, sow_org: dict[str, str]) -> None:
        """An internal dependency's target exists and is in the source item's organization."""
        target_id = r.target_item_id
        if target_id not in item_info:
            self._missing("dependencies", i, r.id, "targetItemId", "item", target_id)
        elif source is not None and _differ(sow_org.get(source[0]), sow_org.get(item_info[target_id][0])):
            message = f"item {target_id} belongs to another organization than item {r.source_item_id}"
            self.problems.add("dependencies", i, r.id, "targetItemId", message)

    # -- Group B --

    def _financial_projects(self, company_org: dict[str, str], project_org: dict[str, str]) -> dict[int, str]:
        kind = "financialProjects"
        records = self.records[kind]
        existing = self.db_financial_projects
        self._owned(kind, "financial project", "companyId", company_org, existing, "company")
        for i, r in enumerate(records):
            if r.project_id is None:
                continue
            if r.project_id not in project_org:
                self._missing(kind, i, r.id, "projectId", "project", r.project_id)
            elif r.company_id in company_org and project_org[r.project_id] != company_org[r.company_id]:
                message = (
                    f"project {r.project_id} belongs to another organization than company {r.company_id}"
                )
                self.problems.add(kind, i, r.id, "projectId", message)
        self._flat(kind, records)
        return {**existing, **{r.id: r.company_id for r in records}}

    def _master_data(
        self, kind: str, label: str, model: type[m.BaseModel], company_org: dict[str, str]
    ) -> dict[int, str]:
        """Vendors and cost codes: an id and a company each."""
        records = self.records[kind]
        existing = self._load(model.id, model.company)
        self._owned(kind, label, "companyId", company_org, existing, "company")
        self._flat(kind, records)
        return {**existing, **{r.id: r.company_id for r in records}}

    def _commitments(self, fp_company: dict[int, str], vendor_company: dict[int, str]) -> dict[str, int]:
        kind = "commitments"
        records = self.records[kind]
        self._owned(kind, "commitment", "project_id", fp_company, self.db_commitments, "project")
        for i, r in enumerate(records):
            if r.vendor_id is None:
                continue
            if r.vendor_id not in vendor_company:
                self._missing(kind, i, r.id, "vendor_id", "vendor", r.vendor_id)
            elif r.project_id in fp_company and vendor_company[r.vendor_id] != fp_company[r.project_id]:
                message = f"vendor {r.vendor_id} is not a vendor of the project's company"
                self.problems.add(kind, i, r.id, "vendor_id", message)
        self._flat(kind, records)
        return {**self.db_commitments, **{r.id: r.project_id for r in records}}

    def _snapshots(self, view_fp: dict[int, int], fp_company: dict[int, str]) -> None:
        kind = "budgetViewSnapshots"
        records = self.records[kind]
        self._owned(
            kind,
            "budget view snapshot",
            "project_id",
            fp_company,
            self._load(m.BudgetViewSnapshot.id),
            "project",
        )
        line_getter = _getter("snapshotLines")
        lines = []
        for i, r in enumerate(records):
            view = r.budget_view_id
            if view not in view_fp:
                self._missing(kind, i, r.id, "budget_view_id", "budget view", view)
            elif view_fp[view] != r.project_id:
                message = f"budget view {view} belongs to project {view_fp[view]}, not {r.project_id}"
                self.problems.add(kind, i, r.id, "budget_view_id", message)
            r.created_by = r.created_by.model_dump(mode="json") if r.created_by is not None else None
            lines.extend((*line_getter(line), r.id, k) for k, line in enumerate(r.line_items))
        _stamp(records, self.now, "created_at")
        self._flat(kind, records)
        self._table("snapshotLines", lines, extra=(m.SnapshotLineItem.snapshot, m.SnapshotLineItem.position))

    def _purchase_orders(
        self,
        fp_company: dict[int, str],
        commitment_fp: dict[str, int],
        vendor_company: dict[int, str],
        cost_code_company: dict[int, str],
    ) -> None:
        kind = "purchaseOrders"
        records = self.records[kind]
        add = self.problems.add
        self._owned(kind, "purchase order", "project_id", fp_company, self.db_purchase_orders, "project")
        numbers = {(fp, number): None for fp, number in self.db_purchase_orders.values()}
        number_where: dict[tuple[int, str], int] = {}
        line_ids = self._load(m.PurchaseOrderLine.id)
        line_where: dict[int, str] = {}
        file_line_ids = [line.id for r in records for line in r.line_items if line.id is not None]
        next_line_id = max([0, *line_ids, *file_line_ids]) + 1
        line_getter = _getter("purchaseOrderLines")
        lines = []
        for i, r in enumerate(records):
            company = fp_company.get(r.project_id)
            key = (r.project_id, r.number)
            if key in number_where:
                also = f"{kind}[{number_where[key]}]"
                message = f"duplicate number {r.number} in project {r.project_id} (also {also})"
                add(kind, i, r.id, "number", message)
            elif key in numbers:
                add(kind, i, r.id, "number", f"number {r.number} already exists in project {r.project_id}")
            number_where.setdefault(key, i)
            if r.commitment_id is not None:
                if r.commitment_id not in commitment_fp:
                    self._missing(kind, i, r.id, "commitment_id", "commitment", r.commitment_id)
                elif commitment_fp[r.commitment_id] != r.project_id:
                    message = (
                        f"commitment {r.commitment_id} belongs to project {commitment_fp[r.commitment_id]}"
                    )
                    add(kind, i, r.id, "commitment_id", message)
            if r.vendor.id not in vendor_company:
                self._missing(kind, i, r.id, "vendor.id", "vendor", r.vendor.id)
            elif company is not None and vendor_company[r.vendor.id] != company:
                add(
                    kind,
                    i,
                    r.id,
                    "vendor.id",
                    f"vendor {r.vendor.id} is not a vendor of the project's company",
                )
            total = Decimal("0")
            for k, line in enumerate(r.line_items):
                where = f"line_items[{k}]"
                if line.id is None:
                    line.id, next_line_id = next_line_id, next_line_id + 1
                elif line.id in line_where:
                    add(kind, i, r.id, f"{where}.id", f"duplicate line id (also {line_where[line.id]})")
                elif line.id in line_ids:
                    message = f"purchase order line {line.id} already exists in the database"
                    add(kind, i, r.id, f"{where}.id", message)
                line_where.setdefault(line.id, f"{kind}[{i}].{where}")
                code = line.cost_code.id
                if code not in cost_code_company:
                    self._missing(kind, i, r.id, f"{where}.cost_code.id", "cost code", code)
                elif company is not None and cost_code_company[code] != company:
                    message = f"cost code {code} is not a cost code of the project's company"
                    add(kind, i, r.id, f"{where}.cost_code.id", message)
                total += line.amount
                lines.append((*line_getter(line), r.id, k, code))
            # Left out, the amounts of a purchase order are the sum of its lines (contract §7.3).
            for name in ("original_amount", "revised_amount", "total_amount"):
                if getattr(r, name) is None:
                    setattr(r, name, total)
        _stamp(records, self.now, "created_at")
        getter = _getter(kind)
        self._table(kind, [(*getter(r), r.vendor.id) for r in records], extra=(m.PurchaseOrder.vendor,))
        self._table(
            "purchaseOrderLines",
            lines,
            extra=(
                m.PurchaseOrderLine.purchase_order,
                m.PurchaseOrderLine.position,
                m.PurchaseOrderLine.cost_code,
            ),
        )

    # -- writing --

    def insert(self, progress: Progress | None) -> None:
        total = sum(len(rows) for _, _, rows in self.tables)
        done = 0
        if progress is not None:
            progress(0, total)
        for model, fields, rows in self.tables:
            for count in _insert_rows(model, fields, rows):
                done += count
                if progress is not None:
                    progress(done, total)
        _advance_sequences([model for model, _, rows in self.tables if rows])


def _insert_rows(model: type[m.BaseModel], fields: list[pw.Field], rows: list[tuple]) -> Iterator[int]:
    """Multi-row INSERTs of ``rows`` (values in ``fields`` order); yields each batch's size.

    Peewee's ``insert_many`` builds its SQL node by node for every value (about
    3 µs each: 25 s for 100,000 items and dependencies); the statement is the same
    for every full batch, so it is written once and only the parameters change.
    Values are converted where the stored form differs (exact money as text, JSON
    as text), as peewee itself would do.
    """
    database = m.database_proxy.obj
    size = max(1, min(BATCH_ROWS, MAX_VARIABLES // len(fields)))
    open_quote, close_quote = database.quote[0], database.quote[-1]
    head = "INSERT INTO {}{}{} ({}) VALUES ".format(
        open_quote,
        model._meta.table_name,
        close_quote,
        ", ".join(f"{open_quote}{field.column_name}{close_quote}" for field in fields),
    )
    group = "(" + ", ".join([database.param] * len(fields)) + ")"
    converted = [(k, convert) for k, field in enumerate(fields) if (convert := _db_converter(field))]
    statements: dict[int, str] = {}
    for start in range(0, len(rows), size):
        batch = rows[start : start + size]
        if converted:
            batch = [_convert(row, converted) for row in batch]
        sql = statements.get(len(batch))
        if sql is None:
            sql = statements[len(batch)] = head + ", ".join([group] * len(batch))
        database.execute_sql(sql, [value for row in batch for value in row])
        yield len(batch)


def _db_converter(field: pw.Field) -> Callable[[Any], Any] | None:
    """The few fields whose stored form differs from the validated value."""
    if isinstance(field, m.MoneyField):
        return field.db_value  # exact decimal text
    if isinstance(field, pw.JSONField):
        # peewee wraps JSON in a SQL function; a plain JSON text parameter is the same value.
        return _json_text
    return None


def _json_text(value: Any) -> str | None:
    return None if value is None else json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _convert(row: tuple, converted: list[tuple[int, Callable[[Any], Any]]]) -> tuple:
    values = list(row)
    for k, db_value in converted:
        values[k] = db_value(values[k])
    return tuple(values)


def _differ(first: str | None, second: str | None) -> bool:
    """Two known organizations that differ (an unknown one is reported where it is named)."""
    return first is not None and second is not None and first != second


def _getter_name(kind: str, key: str) -> str:
    model = _RECORD_MODEL[kind]
    for name, info in model.model_fields.items():
        if (info.alias or name) == key:
            return name
    raise KeyError(key)


def _advance_sequences(models: Iterable[type[m.BaseModel]]) -> None:
    """PostgreSQL: explicit ids do not move a serial's sequence; move it past them."""
    database = m.database_proxy.obj
    if not isinstance(database, pw.PostgresqlDatabase):
        return
    for model in models:
        if model in (m.PurchaseOrder, m.PurchaseOrderLine):
            table = model._meta.table_name
            database.execute_sql(
                f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT MAX(id) FROM \"{table}\"))"
            )


# --- export ---------------------------------------------------------------------


def export_dataset(*, progress: Progress | None = None) -> dict[str, list[dict[str, Any]]]:
    """The whole database as a dataset (contract §9), ordered by id; no credentials.

    ``progress(done, total)`` is called after each kind (``total``: the number of kinds).
    """
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
        value = pw.format_date_time(value, pw.DateTimeField.formats)
        if isinstance(value, str):  # not a form peewee writes: leave it as it is
            return value
    return clock.format_timestamp(value)


def _date_out(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return value.isoformat()


def _number_out(value: Any) -> float | None:
    """Snapshot and prime-contract amounts are JSON numbers (spec §2.6, §2.7)."""
    return None if value is None else float(Decimal(value))


def _money_out(value: Any) -> str | None:
    """Purchase-order amounts are decimal strings, exactly as stored (spec §2.4)."""
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
    extra = {
        "_order": m.PurchaseOrderLine.purchase_order,
        "_position": m.PurchaseOrderLine.position,
        "_code_id": m.CostCode.id,
        "_full_code": m.CostCode.full_code,
        "_code_name": m.CostCode.name,
    }
    lines = _select(
        "purchaseOrderLines",
        extra,
        join=(m.CostCode, pw.JOIN.INNER, m.PurchaseOrderLine.cost_code == m.CostCode.id),
    )
    for k, line in enumerate(lines):
        code = {
            "id": line.pop("_code_id"),
            "full_code": line.pop("_full_code"),
            "name": line.pop("_code_name"),
        }
        quantity, unit_cost = line.pop("quantity"), line.pop("unit_cost")
        # The 2.4 line's keys in its order, then the optional request fields.
        lines[k] = {**line, "cost_code": code, "quantity": quantity, "unit_cost": unit_cost}
    by_order = _grouped(lines, "_order", "_position")
    extra = {"_vendor_id": m.Vendor.id, "_vendor_name": m.Vendor.name}
    orders = _select(kind, extra, join=(m.Vendor, pw.JOIN.INNER, m.PurchaseOrder.vendor == m.Vendor.id))
    result = []
    for order in orders:
        vendor = {"id": order.pop("_vendor_id"), "name": order.pop("_vendor_name")}
        # The 2.4 response's keys in its order, then the links and the creation time.
        result.append(
            {
                "id": order["id"],
                "number": order["number"],
                "status": order["status"],
                "title": order["title"],
                "vendor": vendor,
                "original_amount": order["original_amount"],
                "revised_amount": order["revised_amount"],
                "total_amount": order["total_amount"],
                "line_items": by_order.get(order["id"], []),
                "project_id": order["project_id"],
                "commitment_id": order["commitment_id"],
                "created_at": order["created_at"],
            }
        )
    return result


_EXPORTERS: dict[str, Callable[[str], list[dict[str, Any]]]] = {
    "clients": _export_clients,
    "budgetViewSnapshots": _export_snapshots,
    "purchaseOrders": _export_purchase_orders,
}
