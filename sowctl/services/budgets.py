"""Group B budget views and their snapshots (line items with exact column totals).

Every lookup is scoped (``services.external_scope``): a record outside the caller's
organization and company is "not found", exactly as if it did not exist.
"""

from __future__ import annotations

from collections.abc import Sequence

from sowctl.foundation import money
from sowctl.foundation.errors import NotFound
from sowctl.schemas.budgets import (
    BudgetViewList,
    BudgetViewOut,
    SnapshotDetail,
    SnapshotLine,
    SnapshotList,
    SnapshotResponse,
    SnapshotSummary,
    SnapshotTotals,
    UserRef,
)
from sowctl.schemas.rows import from_row, row_values
from sowctl.services.access import Caller
from sowctl.services.external_scope import project_for
from sowctl.services.lookup import Lookup, hydrate
from sowctl.storage import models as m

MONEY_COLUMNS = ("original_budget", "current_budget", "committed", "spent", "projected_total")

# A snapshot and its lines: SQL built once (services.lookup).
_SNAPSHOT_FIELDS = m.BudgetViewSnapshot._meta.sorted_fields
_SNAPSHOT = Lookup(
    lambda snapshot_id, project_id: (
        m.BudgetViewSnapshot.select(*_SNAPSHOT_FIELDS)
        .where(
            (m.BudgetViewSnapshot.id == snapshot_id) & (m.BudgetViewSnapshot.financial_project == project_id)
        )
        .limit(1)
    ),
    arity=2,
)
_LINE_FIELDS = m.SnapshotLineItem._meta.sorted_fields
_LINES = Lookup(
    lambda snapshot_id: (
        m.SnapshotLineItem.select(*_LINE_FIELDS)
        .where(m.SnapshotLineItem.snapshot == snapshot_id)
        .order_by(m.SnapshotLineItem.position, m.SnapshotLineItem.row_id)
    )
)


def list_budget_views(caller: Caller, company_id: str | None, project_id: int) -> BudgetViewList:
    project = project_for(caller, company_id, project_id)
    views = (
        m.BudgetView.select().where(m.BudgetView.financial_project == project.id).order_by(m.BudgetView.id)
    )
    return BudgetViewList(
        data=[from_row(BudgetViewOut, view, project_id=view.financial_project_id) for view in views]
    )


def _summary_fields(snapshot: m.BudgetViewSnapshot) -> dict:
    created_by = snapshot.created_by
    return row_values(
        SnapshotSummary,
        snapshot,
        project_id=snapshot.financial_project_id,
        created_by=UserRef.model_validate(created_by) if isinstance(created_by, dict) else None,
    )


def list_snapshots(caller: Caller, company_id: str | None, project_id: int) -> SnapshotList:
    project = project_for(caller, company_id, project_id)
    snapshots = (
        m.BudgetViewSnapshot.select()
        .where(m.BudgetViewSnapshot.financial_project == project.id)
        .order_by(m.BudgetViewSnapshot.id)
    )
    return SnapshotList(data=[SnapshotSummary(**_summary_fields(s)) for s in snapshots])


def snapshot_line(row: m.SnapshotLineItem) -> SnapshotLine:
    variance = row.variance
    if variance is None:  # computed when not stored
        variance = money.subtract(row.current_budget, row.projected_total)
    return from_row(SnapshotLine, row, variance=variance)


def snapshot_totals(lines: Sequence[SnapshotLine]) -> SnapshotTotals:
    """Exact column sums of the line items (Decimal, never float)."""
    columns = (*MONEY_COLUMNS, "variance")
    return SnapshotTotals(**{name: money.total(getattr(line, name) for line in lines) for name in columns})


def get_snapshot(
    caller: Caller, company_id: str | None, project_id: int, snapshot_id: int
) -> SnapshotResponse:
    project = project_for(caller, company_id, project_id)
    row = _SNAPSHOT.first(snapshot_id, project.id)
    if row is None:
        raise NotFound(f"snapshot {snapshot_id} not found in project {project_id}")
    snapshot = hydrate(m.BudgetViewSnapshot, _SNAPSHOT_FIELDS, row)
    lines = [
        snapshot_line(hydrate(m.SnapshotLineItem, _LINE_FIELDS, line)) for line in _LINES.all(snapshot.id)
    ]
    return SnapshotResponse(
        data=SnapshotDetail(**_summary_fields(snapshot), line_items=lines, totals=snapshot_totals(lines))
    )
