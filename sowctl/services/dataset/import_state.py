"""What the importer's checks share: the records being read, the problems found, the rows
built, and what the database already holds (read once, on first use)."""

from __future__ import annotations

from collections.abc import Container, Sequence
from datetime import datetime
from functools import cached_property
from typing import Any

import peewee as pw

from sowctl.services.dataset.columns import COLUMNS, Progress, _getter, _getter_name
from sowctl.services.dataset.problems import _Problems
from sowctl.services.dataset.source import DatasetSource
from sowctl.services.dataset.validation import validated_batches
from sowctl.services.dataset.writer import _insert_rows
from sowctl.services.organization_rows import rows_of
from sowctl.storage import models as m
from sowctl.storage.peewee_compat import tuples


class _Records:
    """Validated records of one kind at a time, read from the source when first asked for."""

    def __init__(self, source: DatasetSource, invalid: _Problems) -> None:
        self.source = source
        self.invalid = invalid
        self.loaded: dict[str, list] = {}

    def __getitem__(self, kind: str) -> list:
        if kind not in self.loaded:
            batches = validated_batches(kind, self.source, self.invalid)
            self.loaded[kind] = [record for _, batch in batches for record in batch]
        return self.loaded[kind]


_Table = tuple[type[m.BaseModel], list[pw.Field], list[tuple]]


class ImportState:
    """The state and helpers of an import; the checks (``ItemChecks``, ``ExternalChecks``) build on it."""

    def __init__(
        self, source: DatasetSource, moment: datetime, progress: Progress | None, scope: str | None = None
    ) -> None:
        self.source = source
        # A sandbox's load (``services.sandboxes``): the database shows only this organization's
        # rows, so a record that names another organization's is refused as not found.
        self.scope = scope
        self.invalid = _Problems()  # problems of the records themselves: reported alone
        self.records = _Records(source, self.invalid)
        self.now = moment
        self.problems = _Problems()
        self.tables: list[_Table] = []
        self.inserted: list[type[m.BaseModel]] = []
        self.counted: dict[str, int] = {}
        self.progress = progress
        self.done = 0
        if progress is not None:
            progress(0, source.total)
        self.ordered_organizations: set[str] = set()  # given ordering edges by this import
        self.sow_shown_ids: dict[str, str] = {}  # key -> id of the file's SOWs
        self.item_sows: set[str] = set()  # keys of the SOWs the file's items go in
        # Every record hangs off an organization: none means an empty database, no lookups.
        self.database_empty = not m.Organization.select().exists()

    def _done(self, kind: str) -> None:
        """``kind`` checked: its rows go in (unless the import is already refused), its records go."""
        records = self.records.loaded.pop(kind, [])
        self.counted[kind] = self.counted.get(kind, 0) + len(records)  # (streamed kinds count themselves)
        if kind == "clients":
            self.counted["contacts"] = sum(len(client.contacts) for client in records)
        del records
        self.insert()

    def insert(self) -> None:
        """The rows built so far, unless a problem already dooms the import (then: just checks)."""
        tables, self.tables = self.tables, []
        if self.problems.total or self.invalid.total:
            return
        for model, fields, rows in tables:
            if rows:
                self.inserted.append(model)
            for count in _insert_rows(model, fields, rows):
                self.done += count
                if self.progress is not None:
                    self.progress(self.done, self.source.total)

    # -- what the database already holds: one query per table, none when it is empty --

    def _load(self, *columns: pw.Field) -> dict:
        """{first column: second column (or the rest as a tuple)} for every row."""
        if self.database_empty:
            return {}
        query = self._visible(columns[0].model.select(*columns), columns[0].model)
        if len(columns) == 1:
            return {row[0]: None for row in tuples(query)}
        if len(columns) == 2:
            return dict(tuples(query))
        return {row[0]: row[1:] for row in tuples(query)}

    def _visible(self, query: pw.SelectQuery, model: type[m.BaseModel]) -> pw.SelectQuery:
        return query if self.scope is None else query.where(rows_of(model, self.scope))

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
    def db_sows(self) -> list[tuple[str, str, str]]:
        """(key, id, organization) of every stored SOW."""
        if self.database_empty:
            return []
        return list(tuples(self._visible(m.Sow.select(m.Sow.key, m.Sow.id, m.Sow.organization), m.Sow)))

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
