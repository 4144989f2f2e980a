"""GET /clients (Group C): paged as GET /projects is (``operations.projects.page``)."""

from __future__ import annotations

from sowctl.operations import LazyModule, Request, Result, operation
from sowctl.operations.groups import Group
from sowctl.operations.projects import page
from sowctl.schemas.clients import ClientList, ClientListQuery
from sowctl.schemas.common import dump

service = LazyModule("sowctl.services.clients")


@operation(
    name="clients.list",
    method="GET",
    path="/clients",
    group=Group.C,
    summary="List the clients of the caller's organization, each with its contacts",
    query=ClientListQuery,
    response=ClientList,
    list_key="clients",
)
def list_clients(request: Request) -> Result:
    limit, offset = page(request)
    clients, total = service.list_clients(request.caller, limit=limit, offset=offset)
    return Result({"clients": dump(clients), "total": total}, total)
