"""External financial routes of Group B, plus our purchase-order listing.

The server authenticates these with an API key, the organization and company
headers and the rate limit (``services.external_scope``, ``services.ratelimit``),
then hands the handler ``request.caller`` (the key's organization) and
``request.company_id``. In local mode both may be None: any organization, and the
project's own company.
"""

from __future__ import annotations

from sowctl.operations import LazyModule, Request, Result, operation
from sowctl.operations.groups import Group
from sowctl.schemas.common import dump
from sowctl.schemas.finance import (
    BudgetViewList,
    PrimeContractQuery,
    PrimeContractResponse,
    ProjectQuery,
    PurchaseOrderIn,
    PurchaseOrderList,
    PurchaseOrderOptions,
    PurchaseOrderOut,
    SnapshotList,
    SnapshotQuery,
    SnapshotResponse,
)
from sowctl.schemas.lazy import LazyArray

service = LazyModule("sowctl.services.finance")


@operation(
    name="finance.create_po",
    method="POST",
    path="/api/external/create-purchase-order",
    group=Group.B,
    summary="Create a purchase order for a project commitment (amounts are exact decimal strings)",
    body=PurchaseOrderIn,
    response=PurchaseOrderOut,
    status=200,
    write=True,
)
def create_purchase_order(request: Request) -> Result:
    order = service.create_purchase_order(request.caller, request.company_id, request.body)
    return Result(dump(order))


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


@operation(
    name="finance.prime_contract",
    method="GET",
    path="/api/external/prime-contract-details",
    group=Group.B,
    summary="Retrieve the details of a prime contract (data: an array of one object)",
    query=PrimeContractQuery,
    response=PrimeContractResponse,
)
def prime_contract(request: Request) -> Result:
    query = request.query
    found = service.get_prime_contract(
        request.caller, request.company_id, query.project_id, query.prime_contract_id
    )
    return Result(dump(found))


@operation(
    name="finance.list_pos",
    method="GET",
    path="/api/external/purchase-orders",
    group=Group.B,
    summary="List the purchase orders of a project (sowctl extension)",
    query=ProjectQuery,
    response=PurchaseOrderList,
    extension=True,
    paginated=True,
    report=True,  # 100 orders of up to 1,000 lines each: streamed, as made (services.finance)
)
def list_purchase_orders(request: Request) -> Result:
    orders, total = service.list_purchase_orders(
        request.caller,
        request.company_id,
        request.query.project_id,
        offset=request.offset,
        limit=request.limit,
    )
    # Each order made into JSON as the server writes it (schemas.lazy): the page is never held whole.
    return Result({"data": LazyArray(dump(order) for order in orders)}, total)


@operation(
    name="finance.po_options",
    method="GET",
    path="/api/external/purchase-order-options",
    group=Group.B,
    summary="The vendors, cost codes and commitments a purchase order of a project may use "
    "(sowctl extension)",
    query=ProjectQuery,
    response=PurchaseOrderOptions,
    extension=True,
)
def purchase_order_options(request: Request) -> Result:
    found = service.purchase_order_options(request.caller, request.company_id, request.query.project_id)
    return Result(dump(found))
