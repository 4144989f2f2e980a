"""Who is calling, and which records they may see (contract §7.2)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from sowctl import models as m
from sowctl.errors import Forbidden, NotFound

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


def sow_for(caller: Caller, sow_id: str) -> m.Sow:
    """The SOW if it exists and is the caller's; otherwise 404, as if it did not exist."""
    row = m.Sow.select(m.Sow, m.Project.organization).join(m.Project).where(m.Sow.id == sow_id).first()
    if row is None or not caller.sees(row.project.organization_id):
        raise NotFound(f"SOW {sow_id} not found")
    return row


def item_for(caller: Caller, item_id: str) -> m.Item:
    row = (
        m.Item.select(m.Item, m.Sow.id, m.Project.id, m.Project.organization)
        .join(m.Sow)
        .join(m.Project)
        .where(m.Item.id == item_id)
        .first()
    )
    if row is None or not caller.sees(row.sow.project.organization_id):
        raise NotFound(f"item {item_id} not found")
    return row


def organization_of_sow(sow: m.Sow) -> str:
    return sow.project.organization_id
