"""Group B scope: which organization and company an API-key request acts in.

The server authenticates the key (``credentials.authenticate_key``) and then calls
``resolve`` with the organization and company headers (``x-organization-id`` /
``x-company-id``, or ``organization-id`` / ``company-id`` on the purchase-order
endpoint). The key belongs to one organization; the headers must name it and one
of its companies. Another organization is "not found", exactly like an unknown one.

Every Group B lookup is scoped the same way (``company_for``, ``project_for``): the
caller's organization (None in local mode: any) and the company named in the request
(None in local mode: the project's own). A record outside that scope is "not found",
exactly as if it did not exist.
"""

from __future__ import annotations

from sowctl.foundation.errors import InvalidInput, Issue, NotFound
from sowctl.schemas.common import has_unstorable
from sowctl.schemas.external import MAX_ID
from sowctl.services.access import Caller, organization_exists, organization_not_found
from sowctl.services.lookup import Lookup, hydrate
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


# Every Group B read starts with these lookups: their SQL is built once (services.lookup).
_COMPANY_FIELDS = m.Company._meta.sorted_fields
_COMPANY = Lookup(
    lambda company_id: m.Company.select(*_COMPANY_FIELDS).where(m.Company.id == company_id).limit(1)
)
_PROJECT_FIELDS = m.FinancialProject._meta.sorted_fields
_PROJECT = Lookup(
    lambda project_id: (
        m.FinancialProject.select(*_PROJECT_FIELDS, *_COMPANY_FIELDS)
        .join(m.Company)
        .where(m.FinancialProject.id == project_id)
        .limit(1)
    )
)


def company_for(caller: Caller, company_id: str) -> m.Company:
    row = _COMPANY.first(company_id)
    company = None if row is None else hydrate(m.Company, _COMPANY_FIELDS, row)
    if company is None or not caller.sees(company.organization_id):
        # The organization is checked before its company (the server compares
        # it with the key's): local mode's --org may name none, and that is what is missing.
        organization_id = caller.organization_id
        if organization_id is not None and not organization_exists(organization_id):
            raise organization_not_found(organization_id)
        raise NotFound(f"company {company_id} not found")
    return company


def project_number(text: str) -> int | None:
    """The numeric project id a purchase order's ``project_id`` (a string) names, or None
    when it names none: not ASCII digits, or past the largest id. Such a string is well
    typed, so it is an unknown project (404), not a bad request. (The request model bounds
    it to 64 characters; the bound here keeps int() cheap whoever calls.)"""
    if not text.isascii() or not text.isdigit() or len(text) > 64:
        return None
    number = int(text)
    return number if number <= MAX_ID else None


def project_for(caller: Caller, company_id: str | None, project_id: int | str) -> m.FinancialProject:
    """The financial project if it is in the caller's organization and the named company.
    ``project_id`` as a string is a purchase order's (``"101"``); one that is no project
    number (``"abc"``) is not found like an unknown number, after the company is checked."""
    if company_id is not None:
        company_for(caller, company_id)
    number = project_id if isinstance(project_id, int) else project_number(project_id)
    row = _PROJECT.first(number) if number is not None else None
    project = None
    if row is not None:
        width = len(_PROJECT_FIELDS)
        project = hydrate(m.FinancialProject, _PROJECT_FIELDS, row[:width])
        project.__rel__["company"] = hydrate(m.Company, _COMPANY_FIELDS, row[width:])
    if (
        project is None
        or not caller.sees(project.company.organization_id)
        or (company_id is not None and project.company_id != company_id)
    ):
        raise NotFound(f"project {project_id} not found")
    return project
