"""Group C: the projects a caller may see, each with its client's name and its SOW count.

Visibility: the caller's organization; ``Caller.organization_id`` None (local mode) sees
every organization. Queries per call: the page (projects joined with their client's name),
``total`` when paging, and the page's SOW counts (a statement per ``bulk.ROWS`` projects).
"""

from __future__ import annotations

from collections.abc import Sequence

import peewee as pw

from sowctl.schemas.projects import ProjectOut
from sowctl.schemas.rows import from_row
from sowctl.services.access import Caller
from sowctl.services.bulk import chunks
from sowctl.services.pages import page_and_total
from sowctl.storage import models as m
from sowctl.storage.peewee_compat import tuples


def list_projects(
    caller: Caller,
    status: str | None = None,
    client_id: str | None = None,
    limit: int | None = None,
    offset: int = 0,
) -> tuple[list[ProjectOut], int]:
    """A page of the visible projects and the number of all matches (``limit`` None: all)."""
    p = m.Project
    query = p.select(p, m.Client.name.alias("client_name")).join(
        m.Client, pw.JOIN.LEFT_OUTER, on=(p.client == m.Client.id)
    )
    conditions = []
    if caller.organization_id is not None:
        conditions.append(p.organization == caller.organization_id)
    if status is not None:
        conditions.append(p.status == status)
    if client_id is not None:
        # Uuid hex digits are case-insensitive on input (RFC 4122); ids are kept as imported.
        conditions.append(pw.fn.LOWER(p.client) == client_id.lower())
    if conditions:
        query = query.where(*conditions)
    query = query.order_by(p.is_pinned.desc(), pw.fn.LOWER(p.name), p.name, p.id).objects()
    projects, total = page_and_total(query, limit, offset)
    if not total:
        caller.require_named_organization()
    sow_counts = _sow_counts([project.id for project in projects])
    return [_project_out(project, sow_counts.get(project.id, 0)) for project in projects], total


def _sow_counts(project_ids: Sequence[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for chunk in chunks(project_ids):
        query = (
            m.Sow.select(m.Sow.project, pw.fn.COUNT(m.Sow.id))
            .where(m.Sow.project.in_(chunk))
            .group_by(m.Sow.project)
        )
        counts.update(tuples(query))
    return counts


def _project_out(project: m.Project, sow_count: int) -> ProjectOut:
    return from_row(ProjectOut, project, sow_count=sow_count)
