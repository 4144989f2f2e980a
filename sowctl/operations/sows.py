"""SOW routes: an extension of ours (the service spec shows none), in Group A's style."""

from __future__ import annotations

from sowctl.operations import LazyModule, Request, Result, operation
from sowctl.operations.groups import Group
from sowctl.schemas.common import CamelModel, StrictStr, dump
from sowctl.schemas.sows import SowCreate, SowDeleted, SowOut, SowUpdate

service = LazyModule("sowctl.services.sows")


class SowListQuery(CamelModel):
    project_id: StrictStr | None = None


@operation(
    name="sows.list",
    method="GET",
    path="/api/sows",
    group=Group.A,
    summary="List the SOWs of the caller's organization, oldest first (sowctl extension)",
    query=SowListQuery,
    response=list[SowOut],
    paginated=True,
    extension=True,
)
def list_sows(request: Request) -> Result:
    sows, total = service.list_sows(
        request.caller, request.query.project_id, offset=request.offset, limit=request.limit
    )
    return Result(dump(sows), total)


@operation(
    name="sows.create",
    method="POST",
    path="/api/sows",
    group=Group.A,
    summary="Create a SOW (sowctl extension)",
    body=SowCreate,
    response=SowOut,
    status=201,
    write=True,
    extension=True,
)
def create_sow(request: Request) -> Result:
    return Result(dump(service.create_sow(request.caller, request.body)))


@operation(
    name="sows.get",
    method="GET",
    path="/api/sows/{sowId}",
    group=Group.A,
    summary="Retrieve one SOW with its item count (sowctl extension)",
    response=SowOut,
    extension=True,
)
def get_sow(request: Request) -> Result:
    return Result(dump(service.get_sow(request.caller, request.params["sowId"])))


@operation(
    name="sows.update",
    method="PUT",
    path="/api/sows/{sowId}",
    group=Group.A,
    summary="Change a SOW's title (sowctl extension)",
    body=SowUpdate,
    response=SowOut,
    write=True,
    extension=True,
)
def update_sow(request: Request) -> Result:
    return Result(dump(service.update_sow(request.caller, request.params["sowId"], request.body)))


@operation(
    name="sows.delete",
    method="DELETE",
    path="/api/sows/{sowId}",
    group=Group.A,
    summary="Delete a SOW, its items and every dependency touching them (sowctl extension)",
    response=SowDeleted,
    write=True,
    extension=True,
)
def delete_sow(request: Request) -> Result:
    return Result(dump(service.delete_sow(request.caller, request.params["sowId"])))
