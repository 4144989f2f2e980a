"""Organizations: made only when asked (``sowctl orgs create``), never as a side effect."""

from __future__ import annotations

import peewee as pw

from sowctl.foundation.errors import InvalidInput
from sowctl.schemas.cli_output import OrganizationListed, OrganizationOut
from sowctl.schemas.common import has_unstorable
from sowctl.storage import models as m
from sowctl.storage.database import write_transaction
from sowctl.storage.peewee_compat import tuples


def create_organization(organization_id: str, name: str | None = None) -> OrganizationOut:
    """A new organization; an id in use, empty, too long or unstorable is refused."""
    if not organization_id.strip() or has_unstorable(organization_id):
        raise InvalidInput.for_field("id", "must be a non-empty id")
    if len(organization_id) > m.Organization.id.max_length:
        raise InvalidInput.for_field("id", f"must be at most {m.Organization.id.max_length} characters")
    with write_transaction("organizations"):
        if m.Organization.get_or_none(m.Organization.id == organization_id) is not None:
            raise InvalidInput.for_field("id", f"organization {organization_id} already exists")
        m.Organization.create(id=organization_id, name=name or organization_id)
    return OrganizationOut(id=organization_id, name=name or organization_id)


def list_organizations() -> list[OrganizationListed]:
    """Every organization, by id, with how many SOWs it holds."""
    counts = dict(
        tuples(m.Sow.select(m.Sow.organization, pw.fn.COUNT(m.Sow.key)).group_by(m.Sow.organization))
    )
    rows = tuples(m.Organization.select(m.Organization.id, m.Organization.name).order_by(m.Organization.id))
    return [OrganizationListed(id=org, name=name, sow_count=counts.get(org, 0)) for org, name in rows]
