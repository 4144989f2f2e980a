"""Group B purchase orders: create one, and our listing of a project's orders and of the
options an order may use (sowctl extensions).

The server authenticates Group B routes with an API key, the organization and company
headers and the rate limit (``services.external_scope``, ``services.ratelimit``),
then hands the handler ``request.caller`` (the key's organization) and
``request.company_id``. In local mode both may be None: any organization, and the
project's own company. Every Group B operation's name keeps the ``finance.`` prefix.
"""

from __future__ import annotations

from sowctl.operations import LazyModule, Request, Result, operation
from sowctl.operations.groups import Group
from sowctl.schemas.common import dump
from sowctl.schemas.external import ProjectQuery
from sowctl.schemas.lazy import LazyArray
from sowctl.schemas.purchase_orders import (
    PurchaseOrderIn,
    PurchaseOrderList,
    PurchaseOrderOptions,
    PurchaseOrderOut,
)

service = LazyModule("sowctl.services.purchase_orders")


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
    name="finance.list_pos",
    method="GET",
    path="/api/external/purchase-orders",
    group=Group.B,
    summary="List the purchase orders of a project (sowctl extension)",
    query=ProjectQuery,
    response=PurchaseOrderList,
    extension=True,
    paginated=True,
    report=True,  # 100 orders of up to 1,000 lines each: streamed, as made (services.purchase_orders)
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
