"""Group B budget views and their snapshots.

Authenticated and scoped as every Group B route (see ``operations.purchase_orders``).
"""

from __future__ import annotations

from sowctl.operations import LazyModule, Request, Result, operation
from sowctl.operations.groups import Group
from sowctl.schemas.budgets import BudgetViewList, SnapshotList, SnapshotQuery, SnapshotResponse
from sowctl.schemas.common import dump
from sowctl.schemas.external import ProjectQuery

service = LazyModule("sowctl.services.budgets")


@operation(
    name="finance.budget_views",
    method="GET",
    path="/api/external/budget-views",
    group=Group.B,
    summary="List the budget views of a project",
    query=ProjectQuery,
    response=BudgetViewList,
)
def budget_views(request: Request) -> Result:
    views = service.list_budget_views(request.caller, request.company_id, request.query.project_id)
    return Result(dump(views))


@operation(
    name="finance.snapshots",
    method="GET",
    path="/api/external/budget-view-snapshots",
    group=Group.B,
    summary="List the budget view snapshots of a project (summary form)",
    query=ProjectQuery,
    response=SnapshotList,
)
def snapshots(request: Request) -> Result:
    found = service.list_snapshots(request.caller, request.company_id, request.query.project_id)
    return Result(dump(found))


@operation(
    name="finance.snapshot",
    method="GET",
    path="/api/external/budget-view-snapshot",
    group=Group.B,
    summary="Retrieve one budget view snapshot with its line items and exact column totals",
    query=SnapshotQuery,
    response=SnapshotResponse,
)
def snapshot(request: Request) -> Result:
    query = request.query
    found = service.get_snapshot(request.caller, request.company_id, query.project_id, query.snapshot_id)
    return Result(dump(found))
