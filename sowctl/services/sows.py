"""SOWs, and the default organization and project that let a user start from nothing."""

from __future__ import annotations

import peewee as pw

from sowctl import clock
from sowctl import models as m
from sowctl.db import write_transaction
from sowctl.errors import InvalidInput, NotFound
from sowctl.schemas.sows import SowCreate, SowOut
from sowctl.services.access import Caller

DEFAULT_ORG_ID = "local"
DEFAULT_PROJECT_NAME = "Default project"


def default_project(organization_id: str) -> m.Project:
    """The organization's default project, created (with the org) when missing."""
    m.Organization.get_or_create(id=organization_id, defaults={"name": "Local organization"})
    project = (
        m.Project.select()
        .where((m.Project.organization == organization_id) & (m.Project.name == DEFAULT_PROJECT_NAME))
        .first()
    )
    if project is None:
        moment = clock.now()
        project = m.Project.create(
            id=clock.new_id(),
            organization=organization_id,
            name=DEFAULT_PROJECT_NAME,
            description="Created by sowctl for SOWs made without --project",
            status="active",
            created_at=moment,
            updated_at=moment,
        )
    return project


def create_sow(caller: Caller, data: SowCreate) -> SowOut:
    caller.require_write()
    organization_id = caller.organization_id or DEFAULT_ORG_ID
    with write_transaction(f"org:{organization_id}"):
        if data.project_id is None:
            project = default_project(organization_id)
        else:
            project = m.Project.get_or_none(m.Project.id == data.project_id)
            if project is None or not caller.sees(project.organization_id):
                raise NotFound(f"project {data.project_id} not found")
        sow_id = data.id or clock.new_id()
        if m.Sow.get_or_none(m.Sow.id == sow_id) is not None:
            raise InvalidInput.for_field("id", f"SOW {sow_id} already exists")
        sow = m.Sow.create(id=sow_id, project=project.id, title=data.title, created_at=clock.now())
    return SowOut(id=sow.id, project_id=project.id, title=sow.title, created_at=sow.created_at, item_count=0)


def list_sows(caller: Caller, project_id: str | None = None) -> list[SowOut]:
    count = pw.fn.COUNT(m.Item.id)
    query = (
        m.Sow.select(m.Sow, count.alias("item_count"))
        .join(m.Project)
        .switch(m.Sow)
        .join(m.Item, pw.JOIN.LEFT_OUTER)
        .group_by(m.Sow.id)
        .order_by(m.Sow.created_at, m.Sow.id)
    )
    if caller.organization_id is not None:
        query = query.where(m.Project.organization == caller.organization_id)
    if project_id is not None:
        query = query.where(m.Sow.project == project_id)
    return [
        SowOut(
            id=sow.id,
            project_id=sow.project_id,
            title=sow.title,
            created_at=sow.created_at,
            item_count=sow.item_count,
        )
        for sow in query
    ]
