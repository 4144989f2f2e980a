"""What commands print with ``--json`` where that is not an API answer as it is.

Commands that print an operation's body are described by the operation's response model;
these are the others (``sowctl schema COMMAND`` prints either as a JSON Schema). Fields may
be added in a later version of sowctl; none is removed or changes type without a new
output version (``sowctl.output.json_schemas.OUTPUT_VERSION``).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from sowctl.schemas.common import CamelModel
from sowctl.schemas.items import ItemOut
from sowctl.schemas.vocabulary import FindingState, ItemStatus, RunMode


class Identity(CamelModel):
    token: str | None = Field(description="the token's first characters, masked")
    api_key: str | None = Field(description="the API key's first characters, masked")
    org: str | None
    company: str | None


class StatusOut(CamelModel):
    mode: RunMode
    server: str | None = Field(description="remote mode: the server's URL, any password masked")
    timeout: float | None
    database: str | None = Field(description="local mode: the database, any password masked")
    profile: str
    identity: Identity
    reachable: bool
    detail: str
    schema_version: int | None = Field(default=None, description="local mode: the database's schema version")
    expected_schema_version: int | None = Field(default=None, description="local mode")
    credentials: dict[str, str] | None = Field(
        default=None, description='each credential given: "ok", or why it was refused or not checked'
    )


class TreeItem(ItemOut):
    """An item with its children, in orderIndex order (``items tree``)."""

    children: list[TreeItem]


class ReadyItem(CamelModel):
    id: str
    title: str
    status: ItemStatus


class Blocker(CamelModel):
    dependency_id: str
    item_id: str | None = Field(default=None, description="left out for an external party")
    title: str
    status: str = Field(description="the item's status, or the external dependency's")


class WaitingItem(ReadyItem):
    waits_for: list[Blocker]


class ChainReady(CamelModel):
    sow_id: str
    ready: list[ReadyItem]


class ChainWaiting(CamelModel):
    sow_id: str
    waiting: list[WaitingItem]


class Finding(CamelModel):
    kind: str
    fingerprint: str
    dependency_id: str | None
    item_ids: list[str]
    message: str
    state: FindingState
    in_baseline: bool
    fails: bool


class ChainCheck(CamelModel):
    sow_id: str
    as_of: str = Field(description="the date the check was made for (YYYY-MM-DD)")
    fail_on: list[str]
    due_within_days: int
    counts: dict[str, int]
    issues: dict[str, list[Any]]
    findings: list[Finding]
    uses_baseline: bool
    passed: bool


class ConformanceDifference(CamelModel):
    server: str = Field(description='the server\'s URL, or "comparison" for where two servers differ')
    step: str = Field(description="the scenario's name for the request")
    method: str
    path: str = Field(description="the path as sent, query included")
    route: str = Field(description="the description's path template")
    kind: Literal["status", "headers", "envelope", "shape", "type", "format", "pagination", "comparison"]
    where: str = Field(description="the field (a/0/b), the header, or status")
    detail: str


class Conformance(CamelModel):
    servers: list[str]
    read_only: bool
    requests: list[int] = Field(description="the requests each server was asked")
    counts: dict[str, int] = Field(description="differences by kind")
    differences: list[ConformanceDifference]
    skipped: list[str] = Field(description="what was not checked, and why")
    passed: bool


class OrganizationOut(CamelModel):
    id: str
    name: str


class OrganizationListed(OrganizationOut):
    sow_count: int


class TokenListed(CamelModel):
    id: str
    token: str = Field(description="the first characters, masked: the secret is never shown again")
    user_id: str
    organization_id: str
    role: str
    created_at: str
    revoked_at: str | None


class KeyListed(CamelModel):
    id: str
    key: str = Field(description="the first characters, masked: the secret is never shown again")
    organization_id: str
    created_at: str
    revoked_at: str | None


class Revoked(CamelModel):
    id: str
    revoked: bool


class ConfigList(CamelModel):
    current: str
    path: str
    profiles: dict[str, dict[str, Any]]


class Imported(CamelModel):
    imported: dict[str, int] = Field(description="records imported, by kind")


class Replayed(CamelModel):
    replayed: int
    failed: int
    skipped: int
    failures: list[Any]
    ids: dict[str, Any]
