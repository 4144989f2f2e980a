"""The test double's admin API (``/_admin``): what its requests carry and its answers hold.

The small bodies (credentials, the clock, a checkpoint's name) are validated by these models,
worded as the admin API always worded them. A dataset, a fault config and a request pattern
have rules of their own (records checked against each other, routes, near misses), checked by
the test double; their models here describe them for the OpenAPI document.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from sowctl.foundation.errors import Issue

CHECKPOINT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,47}$")
CHECKPOINT_NAME_RULE = "must be 1 to 48 letters, digits, '.', '_' or '-', starting with a letter or digit"
# A pact's consumer or provider name: what a Pact Broker and a file name take without quoting.
PARTY_NAME = re.compile(r"[\w .:@/+-]{1,100}")
PARTY_NAME_RULE = "must be 1 to 100 letters, digits, spaces or . _ : @ / + -"
TRUE_WORDS = frozenset({"1", "true", "yes"})
FALSE_WORDS = frozenset({"", "0", "false", "no"})
NOW_REQUIRED = 'is required: a timestamp such as "2026-01-01T00:00:00Z", or null'


class AdminModel(BaseModel):
    """Wire names are the field names (camelCase); unknown fields are ignored, as before."""

    model_config = ConfigDict(extra="ignore", defer_build=True)

    @classmethod
    def describe_errors(cls, issues: list[Issue]) -> str:
        """The admin API's message names the first problem (the issues list them all)."""
        return issues[0].describe()


def _required_text(value: Any) -> str:
    if value is None:
        raise ValueError("is required")
    return _text(value)


def _optional_text(value: Any) -> str | None:
    return None if value is None else _text(value)


def _text(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError("must be a non-empty string")
    return value.strip()


def _checkpoint_name(value: Any) -> str:
    if not isinstance(value, str) or not CHECKPOINT_NAME.match(value):
        raise ValueError(CHECKPOINT_NAME_RULE)
    return value


def _boolean_word(value: Any) -> bool:
    given = value.strip().lower() if isinstance(value, str) else None
    if given is None or given not in TRUE_WORDS | FALSE_WORDS:
        raise ValueError("must be true or false")
    return given in TRUE_WORDS


_NO_NOW = object()  # "now" absent, which differs from "now": null (let the clock run)


def _now(value: Any) -> str | None:
    if value is _NO_NOW:
        raise ValueError(NOW_REQUIRED)
    if value is not None and not isinstance(value, str):
        raise ValueError("must be a timestamp string or null")
    return value


RequiredText = Annotated[str, BeforeValidator(_required_text)]
OptionalText = Annotated[str | None, BeforeValidator(_optional_text)]


# --- requests ------------------------------------------------------------------------------------


class DatasetLoadQuery(AdminModel):
    replace: Annotated[bool, BeforeValidator(_boolean_word)] = Field(
        False, description="Empty every table first, in the same transaction (true/false, 1/0, yes/no)"
    )


class TokenCreate(AdminModel):
    userId: RequiredText = Field(description="The user; created in the organization when new")
    organizationId: RequiredText
    role: OptionalText = Field(None, description="viewer, member (the default) or admin")


class KeyCreate(AdminModel):
    organizationId: RequiredText


class FaultConfigBody(AdminModel):
    """Latency and failures injected in front of the API; every field optional."""

    latencyMs: float | str | list[float] | None = Field(
        None, description='A delay: milliseconds, "250ms", "1s", or [min, max] drawn at random'
    )
    rate: float = Field(0.0, ge=0, le=1, description="The share of matching requests that fail")
    status: int = Field(503, ge=400, le=599, description="The status of an injected error")
    mode: Literal["error", "drop"] = Field("error", description="Answer an error, or drop the connection")
    routes: list[str] = Field(
        default_factory=list, description='Route patterns ("GET /api/items/*"); none: every route'
    )
    count: int | None = Field(None, ge=0, description="Fail this many requests, then stop; null: no limit")


class ClockSet(AdminModel):
    now: Annotated[str | None, BeforeValidator(_now)] = Field(
        description="A timestamp to freeze the service clock at, or null to let it run"
    )

    @model_validator(mode="before")
    @classmethod
    def _absent_now(cls, data: Any) -> Any:
        if isinstance(data, dict) and "now" not in data:
            return {**data, "now": _NO_NOW}
        return data


class RequestLogQuery(AdminModel):
    limit: int = Field(100, ge=1, description="The last N matching requests (at most the log's size)")
    method: str | None = None
    path: str | None = Field(None, description="A path pattern (fnmatch: * and ?)")
    status: str | None = Field(None, description="A status (404) or a class (4xx)")
    group: Literal["A", "B", "C"] | None = None
    caller: str | None = Field(None, description="A user, organization, company or API key id")


class PactQuery(AdminModel):
    consumer: str = Field("sowctl-consumer", description="The consumer's name in the pact")
    provider: str = Field("sowctl", description="The provider's name in the pact")
    state: str | None = Field(
        None, description="The provider state the first interaction names: where the consumer's run started"
    )
    method: str | None = None
    path: str | None = Field(None, description="A path pattern (fnmatch: * and ?)")
    status: str | None = Field(None, description="A status (404) or a class (4xx)")
    group: Literal["A", "B", "C"] | None = None
    caller: str | None = Field(None, description="A user, organization, company or API key id")


class PactDocument(AdminModel):
    """A Pact Specification V3 document: one interaction per logged request that can be replayed;
    ``metadata.sowctl.omitted`` lists the others and why."""

    consumer: dict[str, str]
    provider: dict[str, str]
    interactions: list[dict[str, Any]]
    metadata: dict[str, Any]


class RequestPattern(AdminModel):
    """A request pattern and how many requests must match it (default: at least one)."""

    method: str | None = None
    path: str | None = Field(None, description="A path pattern (fnmatch: * and ?)")
    query: dict[str, Any] | None = Field(None, description="Parameters the request's query must hold")
    headers: dict[str, str] | None = Field(None, description="Headers the request must carry")
    body: Any = Field(None, description="A subset of the request's JSON body")
    status: int | str | None = None
    group: Literal["A", "B", "C"] | None = None
    caller: str | None = None
    contract: str | None = Field(
        None, description="What contract mode marked: a departure's code, any (at least one) or none"
    )
    exactly: int | None = Field(None, ge=0)
    atLeast: int | None = Field(None, ge=0)
    atMost: int | None = Field(None, ge=0)


class CheckpointCreate(AdminModel):
    name: Annotated[str, BeforeValidator(_checkpoint_name)] = Field(description=CHECKPOINT_NAME_RULE)

    @model_validator(mode="before")
    @classmethod
    def _absent_name(cls, data: Any) -> Any:
        if isinstance(data, dict) and "name" not in data:  # worded as a wrong name, as always
            return {**data, "name": None}
        return data


# --- answers ---------------------------------------------------------------------------------


class AdminMessage(AdminModel):
    message: str


class DatasetImported(AdminModel):
    imported: dict[str, int] = Field(description="Records imported, by kind")


class Dataset(AdminModel):
    """A whole dataset: organizations, users, projects, SOWs, items, dependencies, finance."""

    model_config = ConfigDict(extra="allow", defer_build=True)


class TokenIssued(AdminModel):
    token: str
    id: str
    userId: str
    organizationId: str
    role: str


class KeyIssued(AdminModel):
    key: str
    id: str
    organizationId: str


class FaultConfigOut(AdminModel):
    latencyMs: list[float] | None
    rate: float
    status: int
    mode: Literal["error", "drop"]
    routes: list[str]
    count: int | None


class ClockOut(AdminModel):
    now: str = Field(description="The service's current time")
    frozen: bool


ContractModeName = Literal["off", "report", "strict"]


class ContractMark(AdminModel):
    code: str = Field(description="The departure's code (docs: contract mode)")
    kind: Literal["extension", "leniency", "unspecified"]
    detail: str = Field(description="This request's instance: the route, parameter, field or header")


class ContractModeSet(AdminModel):
    mode: ContractModeName


class ContractDeparture(AdminModel):
    code: str
    kind: Literal["extension", "leniency", "unspecified"]
    requests: int = Field(description="Requests in the request log that rely on it")
    example: str = Field(description="One request's instance of it")


class ContractReport(AdminModel):
    mode: ContractModeName
    departures: list[ContractDeparture] = Field(
        description="What the requests in the request log relied on, most requests first"
    )


class LoggedRequest(AdminModel):
    id: int
    at: str
    requestId: str | None
    method: str
    path: str
    query: dict[str, Any]
    status: int | None = Field(description="null: the connection was dropped")
    latencyMs: float
    group: str
    identity: dict[str, Any] | None
    requestBody: Any
    requestBodyTruncated: bool
    responseBody: Any
    responseBodyTruncated: bool
    fault: dict[str, Any] | None
    headers: dict[str, str]
    contract: list[ContractMark] = Field(
        description="What contract mode found the request relies on beyond the service's description"
    )


class Deleted(AdminModel):
    deleted: int = Field(description="How many were deleted")


class VerificationReport(AdminModel):
    model_config = ConfigDict(extra="allow", defer_build=True)

    matched: int
    expected: dict[str, int]
    pattern: str
    requests: list[dict[str, Any]] = Field(description="The last matching requests")
    error: str | None = Field(None, description="What was expected and found (409 only)")
    closest: list[dict[str, Any]] | None = Field(
        None, description="The closest requests and how they differed (409 only)"
    )


class CheckpointOut(AdminModel):
    name: str
    createdAt: str | None = None
    records: int = Field(description="Records in the saved state (the request log aside)")


class CheckpointDeleted(AdminModel):
    deleted: str


# --- sandboxes of a shared server -------------------------------------------------------------


class SandboxCreate(AdminModel):
    name: OptionalText = Field(None, description="A label for listings (default: the organization's id)")
    ttl: int | str | None = Field(
        None,
        description="How long the sandbox lives: seconds, or 90s, 30m, 1h, 2d (default 1h, at most 7 days)",
    )


class SandboxOut(AdminModel):
    organizationId: str
    name: str
    userId: str = Field(description="The user of the sandbox's bearer token")
    createdAt: str
    expiresAt: str = Field(description="When it is removed (the wall clock, not the service clock)")


class SandboxIssued(SandboxOut):
    adminToken: str = Field(description="The admin token scoped to this organization (shown once)")
    token: str = Field(description="A bearer token of the organization (role admin; shown once)")
    apiKey: str = Field(description="An API key of the organization (shown once)")


class SandboxDeleted(AdminModel):
    deleted: str = Field(description="The sandbox's organization")
