"""Group B's budgets: a project's budget views, their snapshots and a snapshot's lines
and totals, amounts as JSON numbers with the decimal's exact digits (``MoneyNumber``)."""

from __future__ import annotations

from sowctl.schemas.common import ApiOut, Field, Timestamp
from sowctl.schemas.external import MoneyNumber, ProjectQuery, QueryId

# --- requests ---------------------------------------------------------------------


class SnapshotQuery(ProjectQuery):
    snapshot_id: QueryId = Field(description="Budget view snapshot id.")


# --- responses --------------------------------------------------------------------


class BudgetViewOut(ApiOut):
    id: int
    name: str
    description: str | None = None
    created_at: Timestamp
    updated_at: Timestamp
    project_id: int


class BudgetViewList(ApiOut):
    data: list[BudgetViewOut]


class UserRef(ApiOut):
    id: int | None = None
    name: str | None = None
    email: str | None = None


class SnapshotSummary(ApiOut):
    id: int
    name: str
    description: str | None = None
    created_at: Timestamp
    budget_view_id: int
    project_id: int
    created_by: UserRef | None = None


class SnapshotTotals(ApiOut):
    original_budget: MoneyNumber
    current_budget: MoneyNumber
    committed: MoneyNumber
    spent: MoneyNumber
    projected_total: MoneyNumber
    variance: MoneyNumber


class SnapshotLine(ApiOut):
    id: int
    code: str
    description: str | None = None
    original_budget: MoneyNumber
    current_budget: MoneyNumber
    committed: MoneyNumber
    spent: MoneyNumber
    projected_total: MoneyNumber
    variance: MoneyNumber


class SnapshotDetail(SnapshotSummary):
    line_items: list[SnapshotLine]
    totals: SnapshotTotals


class SnapshotList(ApiOut):
    data: list[SnapshotSummary]


class SnapshotResponse(ApiOut):
    data: SnapshotDetail
