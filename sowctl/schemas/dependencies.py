"""Dependency request and response models.

Cross-field rules (internal needs targetItemId, external needs externalTarget,
no self-dependency) live in ``sowctl.services.dependencies``: they need the
database (which items exist, who may see them) and must name the field in the
same way whichever rule fails.
"""

from __future__ import annotations

import re
from datetime import date
from typing import Annotated, ClassVar

from pydantic import AfterValidator, PlainSerializer, PlainValidator, WithJsonSchema

from sowctl.schemas.common import (
    MAX_TEXT,
    CamelBody,
    CamelModel,
    CamelOut,
    DateStr,
    Field,
    NonEmptyStr,
    StrictBool,
    StrictStr,
    Timestamp,
    parse_date,
)
from sowctl.schemas.vocabulary import (
    ChainFormat,
    DependencyKind,
    DependencyStatus,
    DependencyType,
    ItemStatus,
    ItemType,
    RiskLevel,
)

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


class DependencyCreate(CamelBody):
    """POST /api/dependencies. ``isExternal`` omitted means "external when only
    ``externalTarget`` is given", so a client may send either form. ``targetItemId``
    may be null (an external dependency has no target item); other fields may be
    left out but not sent as null."""

    null_allowed = frozenset({"target_item_id"})

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


def _clearable_date(value: object) -> date | None:
    return None if value == "" else parse_date(value)


# A date, or "" to remove it: sowctl's extension, since the spec types the field as a
# date and gives no way to clear one. Null is refused, as for every typed field.
ClearableDate = Annotated[
    date | None,
    PlainValidator(_clearable_date),
    PlainSerializer(lambda d: d.isoformat() if d else None),
    WithJsonSchema(
        {
            "type": "string",
            "format": "date",
            "description": 'YYYY-MM-DD; "" removes the date (sowctl extension)',
        }
    ),
]


class DependencyUpdate(CamelBody):
    """PUT /api/dependencies/{id}: every field optional; only the fields sent change.

    null is refused for every field. An empty string clears ``notes``, and, as a
    sowctl extension, ``slaDate`` or ``escalationDate``.
    """

    status: DependencyStatus | None = None
    risk_level: RiskLevel | None = None
    sla_date: ClearableDate = None
    escalation_date: ClearableDate = None
    notes: Notes | None = None


class DependencyOut(CamelOut):
    """A dependency. A field without a value is left out;
    ``targetItemId`` is null for an external dependency, and
    ``updatedAt`` appears once the dependency has been updated."""

    wire_nulls: ClassVar[frozenset[str]] = frozenset({"target_item_id"})

    id: str
    source_item_id: str
    target_item_id: str | None
    dependency_type: DependencyType
    risk_level: RiskLevel
    status: DependencyStatus
    is_external: bool
    external_target: str | None = None
    external_owner: str | None = None
    contact_email: str | None = None
    vendor: str | None = None
    sla_date: DateStr | None = None
    escalation_date: DateStr | None = None
    notes: str | None = None
    created_at: Timestamp
    created_by_user_id: str | None = None
    updated_at: Timestamp | None = None


class DependencyListQuery(CamelModel):
    item_id: StrictStr | None = None
    sow_id: StrictStr | None = None
    status: DependencyStatus | None = None
    type: DependencyKind | None = None


class ChainQuery(CamelModel):
    sow_id: NonEmptyStr
    format: ChainFormat = "flat"
    include: StrictStr | None = Field(
        default=None,
        description="Extensions, comma-separated: criticalPath (the body's criticalPath), "
        "external (isExternal on every entry, externalTarget on external ones), risks (slaDate and "
        "escalationDate on entries, type and status on item references, the body's asOf).",
        json_schema_extra={"example": "criticalPath,external"},
    )


# --- chain (GET /api/dependencies/chain) ------------------------------------------
# The chain service builds plain dicts (tens of thousands of entries per report), so
# these models document the shape for OpenAPI rather than validate it per request.


class ChainItemRef(CamelOut):
    id: str | None = Field(default=None, description="item id; left out when the target is external")
    title: str = Field(description="item title, or the external target's name")
    type: ItemType | None = Field(default=None, description="with include=risks, on items")
    status: ItemStatus | None = Field(
        default=None, description="with include=risks, on items: the shown (calculated) status"
    )


class ChainDependency(CamelOut):
    id: str
    source_item: ChainItemRef
    target_item: ChainItemRef
    dependency_type: DependencyType
    risk_level: RiskLevel
    status: DependencyStatus
    is_external: bool | None = Field(default=None, description="with include=external")
    external_target: str | None = Field(
        default=None, description="with include=external, on external dependencies"
    )
    sla_date: DateStr | None = Field(default=None, description="with include=risks, when set")
    escalation_date: DateStr | None = Field(default=None, description="with include=risks, when set")


class ChainIssues(CamelOut):
    circular: list[list[str]] = Field(description="one cycle of item ids per tangled group")
    overdue: list[ChainDependency]
    critical: list[ChainDependency]


_CRITICAL_PATH = "with include=criticalPath: the longest ordering chain of item ids, first item first"
_AS_OF = "with include=risks: the server's date (UTC) the report was made on"


class ChainFlat(CamelOut):
    sow_id: str
    dependencies: list[ChainDependency]
    issues: ChainIssues
    critical_path: list[str] | None = Field(default=None, description=_CRITICAL_PATH)
    as_of: DateStr | None = Field(default=None, description=_AS_OF)


class ChainTreeItem(CamelOut):
    id: str
    title: str
    type: ItemType
    status: ItemStatus
    dependencies: list[ChainDependency]
    children: list[ChainTreeItem]


class ChainTree(CamelOut):
    sow_id: str
    items: list[ChainTreeItem]
    issues: ChainIssues
    critical_path: list[str] | None = Field(default=None, description=_CRITICAL_PATH)
    as_of: DateStr | None = Field(default=None, description=_AS_OF)
