"""Dependency request and response models (spec §2.1, §4.1; contract §7.2).

Cross-field rules (internal needs targetItemId, external needs externalTarget,
no self-dependency) live in ``sowctl.services.dependencies``: they need the
database (which items exist, who may see them) and must name the field in the
same way whichever rule fails.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, ConfigDict

from sowctl.schemas.common import (
    MAX_TEXT,
    CamelModel,
    DateStr,
    Field,
    NonEmptyStr,
    StrictBool,
    StrictStr,
    Timestamp,
    not_nullable,
)

DependencyType = Literal["depends_on", "blocks", "related_to", "prerequisite", "successor"]
RiskLevel = Literal["low", "medium", "high", "critical"]
DependencyStatus = Literal["active", "resolved", "cancelled", "blocked"]
DependencyKind = Literal["critical", "overdue", "external"]

DEPENDENCY_TYPES: tuple[str, ...] = DependencyType.__args__
RISK_LEVELS: tuple[str, ...] = RiskLevel.__args__
DEPENDENCY_STATUSES: tuple[str, ...] = DependencyStatus.__args__
DEPENDENCY_KINDS: tuple[str, ...] = DependencyKind.__args__

# Deliberately simple (one "@", a dot in the domain, no spaces): it catches typos
# without rejecting the odd but valid addresses a full RFC 5322 parser would allow.
_EMAIL_RE = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s.]+$")
MAX_NOTES = 100_000


def _email(value: str) -> str:
    if not _EMAIL_RE.match(value):
        raise ValueError("must be an e-mail address such as name@example.com")
    return value


Email = Annotated[StrictStr, Field(max_length=320), AfterValidator(_email)]
Notes = Annotated[StrictStr, Field(max_length=MAX_NOTES)]
Text = Annotated[StrictStr, Field(max_length=MAX_TEXT)]


class DependencyCreate(CamelModel):
    """POST /api/dependencies. ``isExternal`` omitted means "external when only
    ``externalTarget`` is given", so a client may send either form."""

    source_item_id: NonEmptyStr
    target_item_id: StrictStr | None = None
    dependency_type: DependencyType
    risk_level: RiskLevel
    is_external: StrictBool | None = None
    external_target: NonEmptyStr | None = None
    external_owner: Text | None = None
    contact_email: Email | None = None
    vendor: Text | None = None
    sla_date: DateStr | None = None
    escalation_date: DateStr | None = None
    notes: Notes | None = None


class DependencyUpdate(CamelModel):
    """PUT /api/dependencies/{id}: every field optional; only the fields sent change.

    An explicit null clears slaDate, escalationDate or notes; status and riskLevel
    cannot be cleared (the service refuses null for them).
    """

    model_config = ConfigDict(json_schema_extra=not_nullable("status", "riskLevel"))

    status: DependencyStatus | None = None
    risk_level: RiskLevel | None = None
    sla_date: DateStr | None = None
    escalation_date: DateStr | None = None
    notes: Notes | None = None


class DependencyOut(CamelModel):
    """The dependency object. Every key is always present (null when empty), so
    scripts can index it without guards; ``updatedAt`` is null until the first update."""

    id: str
    source_item_id: str
    target_item_id: str | None
    dependency_type: DependencyType
    risk_level: RiskLevel
    status: DependencyStatus
    is_external: bool
    external_target: str | None
    external_owner: str | None
    contact_email: str | None
    vendor: str | None
    sla_date: DateStr | None
    escalation_date: DateStr | None
    notes: str | None
    created_at: Timestamp
    created_by_user_id: str | None
    updated_at: Timestamp | None


class DependencyListQuery(CamelModel):
    item_id: StrictStr | None = None
    sow_id: StrictStr | None = None
    status: DependencyStatus | None = None
    type: DependencyKind | None = None


class ChainQuery(CamelModel):
    sow_id: NonEmptyStr
    format: Literal["flat", "tree"] = "flat"


# --- chain (GET /api/dependencies/chain) ------------------------------------------
# The chain service builds plain dicts (tens of thousands of entries per report), so
# these models document the shape for OpenAPI rather than validate it per request.


class ChainItemRef(CamelModel):
    id: str | None = Field(description="item id; null when the target is external")
    title: str | None = Field(description="item title, or the external target's name")


class ChainDependency(CamelModel):
    id: str
    source_item: ChainItemRef
    target_item: ChainItemRef
    dependency_type: DependencyType
    risk_level: RiskLevel
    status: DependencyStatus
    is_external: bool
    external_target: str | None = Field(default=None, description="present on external entries only")


class ChainIssues(CamelModel):
    circular: list[list[str]] = Field(description="one cycle of item ids per tangled group")
    overdue: list[ChainDependency]
    critical: list[ChainDependency]


class ChainFlat(CamelModel):
    sow_id: str
    dependencies: list[ChainDependency]
    issues: ChainIssues
    critical_path: list[str] = Field(description="longest ordering chain, first item first")


class ChainTreeItem(CamelModel):
    id: str
    title: str
    type: Literal["requirement", "task_item"]
    status: str
    dependencies: list[ChainDependency]
    children: list[ChainTreeItem]


class ChainTree(CamelModel):
    sow_id: str
    items: list[ChainTreeItem]
    issues: ChainIssues
    critical_path: list[str]
