"""Who is calling, and which records they may see."""

from __future__ import annotations

from dataclasses import dataclass

from sowctl.foundation.errors import Forbidden, InvalidInput, NotFound
from sowctl.schemas.common import has_unstorable
from sowctl.schemas.vocabulary import Role
from sowctl.services.lookup import Lookup, hydrate
from sowctl.storage import models as m
from sowctl.storage.peewee_compat import tuples

LOCAL_USER_ID = "local"
ORGANIZATIONS_COMPARED = 1000  # a typo of --org is compared with at most this many ids


@dataclass(frozen=True)
class Caller:
    """The identity a request acts with.

    ``organization_id`` None means every organization: local mode, where the
    user has the database file and so full rights.
    """

    user_id: str | None
    organization_id: str | None
    role: Role = "admin"
    # Full rights only: the organization whose SOW an id means when several organizations
    # use that id (local mode's --org for items, dependencies and chains). Hides nothing.
    prefers: str | None = None
    # The organization was typed by the user (local mode's --org), not taken from a
    # credential: an empty answer must not hide that it does not exist.
    named: bool = False

    @classmethod
    def local(cls, organization_id: str | None = None, *, prefers: str | None = None) -> Caller:
        return cls(
            user_id=LOCAL_USER_ID,
            organization_id=organization_id,
            role="admin",
            prefers=prefers,
            named=organization_id is not None,
        )

    def require_named_organization(self) -> None:
        """NotFound if the organization the user named does not exist (checked on an empty answer)."""
        if self.named and self.organization_id is not None and not organization_exists(self.organization_id):
            raise named_organization_not_found(self.organization_id)

    def require_write(self) -> None:
        if self.role == "viewer":
            raise Forbidden("insufficient permissions: the token's role (viewer) is read-only")

    def sees(self, organization_id: str) -> bool:
        return self.organization_id is None or self.organization_id == organization_id


# Hot path (most Group A requests start here): SQL built once, see services.lookup.
# A SOW is found by its id within the caller's organization (ids are per organization);
# an item or dependency by its own id, with its SOW's shown id and organization.
_SOW_FIELDS = m.Sow._meta.sorted_fields
_SOW_IN_ORG = Lookup(
    lambda organization_id, sow_id: (
        m.Sow.select(*_SOW_FIELDS)
        .where((m.Sow.organization == organization_id) & (m.Sow.id == sow_id))
        .limit(1)
    ),
    arity=2,
)
_ITEM_FIELDS = m.Item._meta.sorted_fields
_ITEM = Lookup(
    lambda item_id: (
        m.Item.select(*_ITEM_FIELDS, m.Sow.id, m.Sow.project, m.Sow.organization)
        .join(m.Sow)
        .where(m.Item.id == item_id)
        .limit(1)
    )
)


def _with_project(sow: m.Sow) -> m.Sow:
    """``sow.project`` as a Project holding its id and organization (no further query)."""
    sow.__rel__["project"] = hydrate(
        m.Project, (m.Project.id, m.Project.organization), (sow.project_id, sow.organization_id)
    )
    return sow


def sow_for(caller: Caller, sow_id: str) -> m.Sow:
    """The caller's SOW with this id; otherwise 404, as if it did not exist (another
    organization's SOW of the same id is another SOW). ``sow.key`` is what items refer
    to; ``sow.project.organization_id`` is loaded with it.

    Full rights (local mode) see every organization: an id that several of them use
    is told apart with ``--org`` (``caller.prefers``), and is an error without it.
    """
    if caller.organization_id is not None:
        row = _SOW_IN_ORG.first(caller.organization_id, sow_id)
    else:
        rows = list(tuples(m.Sow.select(*_SOW_FIELDS).where(m.Sow.id == sow_id).limit(2)))
        if len(rows) > 1 and caller.prefers is not None:
            preferred = _SOW_IN_ORG.first(caller.prefers, sow_id)
            if preferred is None and not organization_exists(caller.prefers):
                raise named_organization_not_found(caller.prefers)  # as every command says it
            rows = [preferred] if preferred is not None else rows
        if len(rows) > 1:
            owners = sorted(tuples(m.Sow.select(m.Sow.organization).where(m.Sow.id == sow_id)))
            where = f"not in organization {caller.prefers} but " if caller.prefers is not None else ""
            raise InvalidInput.for_field(
                "sowId",
                f"SOW {sow_id} is {where}in several organizations ({', '.join(o for (o,) in owners)}): "
                "choose one with --org",
            )
        row = rows[0] if rows else None
    if row is None:
        raise NotFound(f"SOW {sow_id} not found")
    return _with_project(hydrate(m.Sow, _SOW_FIELDS, row))


def organization_exists(organization_id: str) -> bool:
    if has_unstorable(organization_id):  # a NUL names none (and PostgreSQL refuses it)
        return False
    return m.Organization.select().where(m.Organization.id == organization_id).exists()


def organization_not_found(organization_id: str) -> NotFound:
    return NotFound(f"organization {organization_id} not found")


def named_organization_not_found(organization_id: str) -> NotFound:
    """An organization the user typed (local mode's --org, which has full rights and so
    may be told the organizations there are): NotFound naming the option, with the
    closest existing id when it looks like a typo."""
    import difflib

    from sowctl.foundation.errors import quoted

    known = [org for (org,) in tuples(m.Organization.select(m.Organization.id).limit(ORGANIZATIONS_COMPARED))]
    # Ids often share a prefix ("org-"), so only a close match is offered: a transposition or
    # a missing letter, not any organization whose id also starts with "org-".
    close = difflib.get_close_matches(organization_id, known, n=1, cutoff=0.75)
    hint = f"; did you mean {quoted(close[0])}?" if close else ""
    return NotFound(f"organization {organization_id} not found (--org){hint}")


def item_for(caller: Caller, item_id: str) -> m.Item:
    """The item if it exists and is the caller's; ``item.sow`` (its key, shown id and
    project) and ``item.sow.project.organization_id`` are loaded."""
    row = _ITEM.first(item_id)
    if row is None or not caller.sees(row[-1]):
        raise item_not_found(item_id)
    item = hydrate(m.Item, _ITEM_FIELDS, row[:-3])
    sow = hydrate(m.Sow, (m.Sow.key, m.Sow.id, m.Sow.project, m.Sow.organization), (item.sow_id, *row[-3:]))
    item.__rel__["sow"] = _with_project(sow)
    return item


def item_not_found(item_id: str) -> NotFound:
    """An item that does not exist, or is another organization's: the same answer."""
    return NotFound(f"item {item_id} not found")


def organization_of_sow(sow: m.Sow) -> str:
    return sow.project.organization_id
