"""SOW routes: an extension of ours (the service spec shows none), in Group A's style."""

from __future__ import annotations

from sowctl.operations import LazyModule, Request, Result, operation
from sowctl.schemas.common import CamelModel, StrictStr, dump
from sowctl.schemas.sows import SowCreate, SowOut

service = LazyModule("sowctl.services.sows")


class SowListQuery(CamelModel):
    project_id: StrictStr | None = None


@operation(
    name="sows.list",
    method="GET",
    path="/api/sows",
    group="A",
    summary="List SOWs (sowctl extension)",
    query=SowListQuery,
    response=list[SowOut],
    extension=True,
)
def list_sows(request: Request) -> Result:
    return Result(dump(service.list_sows(request.caller, request.query.project_id)))


@operation(
    name="sows.create",
    method="POST",
    path="/api/sows",
    group="A",
    summary="Create a SOW (sowctl extension)",
    body=SowCreate,
    response=SowOut,
    status=201,
    write=True,
    extension=True,
)
def create_sow(request: Request) -> Result:
    return Result(dump(service.create_sow(request.caller, request.body)))
