"""Group C's projects: the query of GET /projects and the projects it answers with."""

from __future__ import annotations

from typing import ClassVar

from sowctl.schemas.common import CamelOut, Timestamp
from sowctl.schemas.paging import Page, Uuid, UuidOut
from sowctl.schemas.vocabulary import ProjectStatus


class ProjectListQuery(Page):
    status: ProjectStatus | None = None
    client_id: Uuid | None = None


class ProjectOut(CamelOut):
    """A project; ``endDate`` and ``pinnedAt`` are null while unset."""

    wire_nulls: ClassVar[frozenset[str]] = frozenset({"end_date", "pinned_at"})

    id: UuidOut
    name: str
    description: str | None = None
    status: ProjectStatus
    client_id: UuidOut | None = None
    client_name: str | None = None
    contact_id: UuidOut | None = None
    start_date: Timestamp | None = None
    end_date: Timestamp | None
    owner_user_id: str | None = None
    organization_id: str
    is_pinned: bool
    pinned_at: Timestamp | None
    sow_count: int
    created_at: Timestamp
    updated_at: Timestamp


class ProjectList(CamelOut):
    projects: list[ProjectOut]
    total: int
