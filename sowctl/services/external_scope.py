"""Group B scope: which organization and company an API-key request acts in.

The server authenticates the key (``credentials.authenticate_key``) and then calls
``resolve`` with the organization and company headers (``x-organization-id`` /
``x-company-id``, or ``organization-id`` / ``company-id`` on the purchase-order
endpoint). The key belongs to one organization; the headers must name it and one
of its companies. Another organization is "not found", exactly like an unknown one.
"""

from __future__ import annotations

from sowctl.foundation.errors import InvalidInput, Issue, NotFound
from sowctl.schemas.common import has_unstorable
from sowctl.services.access import Caller, organization_not_found
from sowctl.services.finance import company_for
from sowctl.storage import models as m

ORGANIZATION_HEADER = "x-organization-id"
COMPANY_HEADER = "x-company-id"


def _missing_header(name: str) -> InvalidInput:
    bare = name.removeprefix("x-")
    return InvalidInput(
        f"Missing required header {name} ({bare} on create-purchase-order)",
        [Issue((name,), "is required")],
    )


def resolve(api_key: m.ApiKey, organization_id: str | None, company_id: str | None) -> tuple[Caller, str]:
    """The caller (the key's organization, member rights) and the checked company id."""
    organization_id = (organization_id or "").strip()
    company_id = (company_id or "").strip()
    if not organization_id:
        raise _missing_header(ORGANIZATION_HEADER)
    if not company_id:
        raise _missing_header(COMPANY_HEADER)
    if organization_id != api_key.organization_id:
        raise organization_not_found(organization_id)
    # A NUL names no company, and PostgreSQL would refuse it as a query parameter.
    if has_unstorable(company_id):
        raise NotFound(f"company {company_id} not found")
    caller = Caller(user_id=None, organization_id=api_key.organization_id, role="member")
    return caller, company_for(caller, company_id).id
