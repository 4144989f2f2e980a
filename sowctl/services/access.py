"""Who is calling, and which records they may see (contract §7.2)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from sowctl import models as m
from sowctl.errors import Forbidden, NotFound
from sowctl.services.lookup import Lookup, hydrate

Role = Literal["viewer", "member", "admin"]
LOCAL_USER_ID = "local"


@dataclass(frozen=True)
class Caller:
    """The identity a request acts with.

    ``organization_id`` None means every organization: local mode, where the
    user has the database file and so full rights (contract §2).
    """

    user_id: str | None
    organization_id: str | None
    role: Role = "admin"

    @classmethod
    def local(cls, organization_id: str | None = None) -> Caller:
        return cls(user_id=LOCAL_USER_ID, organization_id=organization_id, role="admin")

    def require_write(self) -> None:
        if self.role == "viewer":
            raise Forbidden("insufficient permissions: the token's role (viewer) is read-only")

    def sees(self, organization_id: str) -> bool:
        return self.organization_id is None or self.organization_id == organization_id


# Hot path (most Group A requests start here): SQL built once, see services.lookup.
_SOW_FIELDS = m.Sow._meta.sorted_fields
_SOW = Lookup(
    lambda sow_id: (
        m.Sow.select(*_SOW_FIELDS, m.Project.organization).join(m.Project).where(m.Sow.id == sow_id).limit(1)
    )
)
_ITEM_FIELDS = m.Item._meta.sorted_fields
_ITEM = Lookup(
    lambda item_id: (
        m.Item.select(*_ITEM_FIELDS, m.Sow.project, m.Project.organization)
        .join(m.Sow)
        .join(m.Project)
        .where(m.Item.id == item_id)
        .limit(1)
    )
)


def _with_project(sow: m.Sow, organization_id: str) -> m.Sow:
    """``sow.project`` as a Project holding its id and organization (no further query)."""
    sow.__rel__["project"] = hydrate(
        m.Project, (m.Project.id, m.Project.organization), (sow.project_id, organization_id)
    )
    return sow


def sow_for(caller: Caller, sow_id: str) -> m.Sow:
    """The SOW if it exists and is the caller's; otherwise 404, as if it did not exist.

    ``sow.project.organization_id`` is loaded with it.
    """
    row = _SOW.first(sow_id)
    if row is None or not caller.sees(row[-1]):
        raise NotFound(f"SOW {sow_id} not found")
    return _with_project(hydrate(m.Sow, _SOW_FIELDS, row[:-1]), row[-1])


def item_for(caller: Caller, item_id: str) -> m.Item:
    """The item if it exists and is the caller's; ``item.sow.project.organization_id`` is loaded."""
    row = _ITEM.first(item_id)
    if row is None or not caller.sees(row[-1]):
        raise NotFound(f"item {item_id} not found")
    item = hydrate(m.Item, _ITEM_FIELDS, row[:-2])
    sow = hydrate(m.Sow, (m.Sow.id, m.Sow.project), (item.sow_id, row[-2]))
    item.__rel__["sow"] = _with_project(sow, row[-1])
    return item


def organization_of_sow(sow: m.Sow) -> str:
    return sow.project.organization_id
