"""Dependency routes of Group A (the chain of a SOW is ``operations.chain``).

Server note: ``/api/dependencies/chain`` is a literal path that
``/api/dependencies/{dependencyId}`` would also match, so the server must
register the chain route first (or match literal segments before parameters).
"""

from __future__ import annotations

from sowctl.operations import LazyModule, Request, Result, operation
from sowctl.operations.groups import Group
from sowctl.schemas.common import dump
from sowctl.schemas.dependencies import (
    DependencyCreate,
    DependencyListQuery,
    DependencyOut,
    DependencyUpdate,
)
from sowctl.schemas.items import Message

service = LazyModule("sowctl.services.dependencies")


@operation(
    name="deps.list",
    method="GET",
    path="/api/dependencies",
    group=Group.A,
    summary="List dependencies, filtered by source item, SOW, status or kind (critical, overdue, external)",
    query=DependencyListQuery,
    response=list[DependencyOut],
    paginated=True,
)
def list_dependencies(request: Request) -> Result:
    query = request.query
    deps, total = service.list_dependencies(
        request.caller,
        item_id=query.item_id,
        sow_id=query.sow_id,
        status=query.status,
        kind=query.type,
        offset=request.offset,
        limit=request.limit,
    )
    return Result(dump(deps), total)


@operation(
    name="deps.get",
    method="GET",
    path="/api/dependencies/{dependencyId}",
    group=Group.A,
    summary="Retrieve one dependency",
    response=DependencyOut,
)
def get_dependency(request: Request) -> Result:
    return Result(dump(service.get_dependency(request.caller, request.params["dependencyId"])))


@operation(
    name="deps.create",
    method="POST",
    path="/api/dependencies",
    group=Group.A,
    summary="Create an internal or external dependency (refused if it would close a cycle)",
    body=DependencyCreate,
    response=DependencyOut,
    status=201,
    write=True,
)
def create_dependency(request: Request) -> Result:
    return Result(dump(service.create_dependency(request.caller, request.body)))


@operation(
    name="deps.update",
    method="PUT",
    path="/api/dependencies/{dependencyId}",
    group=Group.A,
    summary="Update a dependency's status, riskLevel, slaDate, escalationDate or notes",
    body=DependencyUpdate,
    response=DependencyOut,
    write=True,
)
def update_dependency(request: Request) -> Result:
    dep = service.update_dependency(request.caller, request.params["dependencyId"], request.body)
    return Result(dump(dep))


@operation(
    name="deps.delete",
    method="DELETE",
    path="/api/dependencies/{dependencyId}",
    group=Group.A,
    summary="Delete a dependency",
    response=Message,
    write=True,
)
def delete_dependency(request: Request) -> Result:
    return Result(dump(service.delete_dependency(request.caller, request.params["dependencyId"])))
