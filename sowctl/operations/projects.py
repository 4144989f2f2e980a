"""GET /projects (Group C).

``limit`` (default 20; above 100 clamped to 100, as Group A's lists do) and
``offset`` (default 0) are strings of digits. ``total`` counts every match. In
local mode (``request.unpaged``) a list without ``limit`` returns every record, as
the remote backend does by following the offsets.
"""

from __future__ import annotations

from sowctl.operations import LazyModule, Request, Result, operation
from sowctl.operations.groups import Group
from sowctl.schemas.common import dump
from sowctl.schemas.paging import DEFAULT_LIMIT, MAX_LIMIT
from sowctl.schemas.projects import ProjectList, ProjectListQuery

service = LazyModule("sowctl.services.projects")


def page(request: Request) -> tuple[int | None, int]:
    """(limit, offset) of a Group C list request."""
    query = request.query
    if query.limit is None:
        limit = None if request.unpaged else DEFAULT_LIMIT
    else:
        limit = min(query.limit, MAX_LIMIT)
    return limit, query.offset or 0


@operation(
    name="projects.list",
    method="GET",
    path="/projects",
    group=Group.C,
    summary="List the projects of the caller's organization (pinned first, then by name)",
    query=ProjectListQuery,
    response=ProjectList,
    list_key="projects",
)
def list_projects(request: Request) -> Result:
    limit, offset = page(request)
    query = request.query
    projects, total = service.list_projects(
        request.caller, status=query.status, client_id=query.client_id, limit=limit, offset=offset
    )
    return Result({"projects": dump(projects), "total": total}, total)
