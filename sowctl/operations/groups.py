"""The API's three groups, and what belonging to one means, said once.

Every operation names its group; the server, the backends, the OpenAPI document and the
test double ask the group how a request is authenticated, how an error is enveloped, how
a list is paged and whether requests are counted, instead of comparing its letter.
"""

from __future__ import annotations

from enum import StrEnum


class Authentication(StrEnum):
    """How a caller proves who it is."""

    # ``Authorization: Bearer <token>``; a token has a role (a viewer cannot write).
    BEARER_TOKEN = "bearer token"
    # ``x-api-key`` plus the organization and company headers; a key has no role.
    API_KEY = "api key"
    # ``Authorization: Bearer <admin token>`` of ``serve --admin-token``: the test double's own.
    ADMIN_TOKEN = "admin token"

    @property
    def has_roles(self) -> bool:
        return self is Authentication.BEARER_TOKEN


class Envelope(StrEnum):
    """How an error answer's body is shaped."""

    # ``{"error": message}``; the issues, when small, in the X-Error-Issues header.
    MESSAGE = "message"
    # ``{"code", "message", "issues"}``: a fixed message per code, the detail in issues.
    CODE_MESSAGE_ISSUES = "code, message, issues"


class Paging(StrEnum):
    """How a list operation is paged."""

    # ``page`` and ``limit`` in the query; X-Total-Count and Link headers.
    PAGE_LIMIT = "page, limit"
    # ``limit`` and ``offset`` in the query; the total in the body, beside the records.
    LIMIT_OFFSET = "limit, offset"


API_KEY_HEADER = "x-api-key"
API_KEY_ENVIRON = "HTTP_X_API_KEY"  # its name in a WSGI environ
# The purchase-order endpoint names its scope headers without the x- prefix.
PLAIN_SCOPE_HEADER_PATHS = frozenset({"/api/external/create-purchase-order"})


class Group(StrEnum):
    """A group of the API; its value is its letter (as logged, counted and documented)."""

    authentication: Authentication
    envelope: Envelope
    paging: Paging
    # Requests are counted against the caller's key (X-RateLimit-* on every answer).
    rate_limited: bool
    # Records are reached within one organization (a local run's --org scopes them); else by
    # id, whichever organization holds them.
    organization_scoped: bool
    # The key holding a page's records in a list body, when the records are wrapped.
    list_wrapper: str | None
    description: str

    def __new__(
        cls,
        letter: str,
        authentication: Authentication,
        envelope: Envelope,
        paging: Paging,
        rate_limited: bool,
        organization_scoped: bool,
        list_wrapper: str | None,
        description: str,
    ) -> Group:
        member = str.__new__(cls, letter)
        member._value_ = letter
        member.authentication = authentication
        member.envelope = envelope
        member.paging = paging
        member.rate_limited = rate_limited
        member.organization_scoped = organization_scoped
        member.list_wrapper = list_wrapper
        member.description = description
        return member

    A = (
        "A",
        Authentication.BEARER_TOKEN,
        Envelope.MESSAGE,
        Paging.PAGE_LIMIT,
        False,
        False,
        None,
        "Group A: work tracking (bearer token)",
    )
    B = (
        "B",
        Authentication.API_KEY,
        Envelope.MESSAGE,
        Paging.PAGE_LIMIT,
        True,
        True,
        "data",
        "Group B: external financial API (API key, organization and company headers, rate limited)",
    )
    C = (
        "C",
        Authentication.BEARER_TOKEN,
        Envelope.CODE_MESSAGE_ISSUES,
        Paging.LIMIT_OFFSET,
        False,
        True,
        None,
        "Group C: listing API (bearer token)",
    )
    # The test double's /_admin API (``sowctl.operations.admin``): never in the API's registry.
    ADMIN = (
        "admin",
        Authentication.ADMIN_TOKEN,
        Envelope.MESSAGE,
        Paging.PAGE_LIMIT,
        False,
        False,
        None,
        "The test double's /_admin API (admin token)",
    )

    @property
    def uses_api_key(self) -> bool:
        return self.authentication is Authentication.API_KEY

    @property
    def error_key(self) -> str:
        """The body key of an error answer's message."""
        return "error" if self.envelope is Envelope.MESSAGE else "message"

    def scope_headers(self, path: str) -> tuple[str, ...]:
        """The organization and company header names ``path`` documents (none without a key).

        The server accepts either spelling on every route; clients send the documented one.
        """
        if not self.uses_api_key:
            return ()
        prefix = "" if path in PLAIN_SCOPE_HEADER_PATHS else "x-"
        return f"{prefix}organization-id", f"{prefix}company-id"

    def other_scope_headers(self, path: str) -> tuple[str, ...]:
        """The spelling a route also accepts (the one it does not document)."""
        return tuple(
            name.removeprefix("x-") if name.startswith("x-") else "x-" + name
            for name in self.scope_headers(path)
        )


# Paths of Group C (the listing API) and of Group B (the external API).
_PREFIXES = ((Group.C, ("/projects", "/clients")), (Group.B, ("/api/external",)))


def group_of_path(path: str) -> Group:
    """Which group a path belongs to, for answers made before any route matched."""
    for group, prefixes in _PREFIXES:
        for prefix in prefixes:
            if path == prefix or path.startswith(prefix + "/"):
                return group
    return Group.A


def as_group(group: Group | str) -> Group:
    """The group a letter names (a ``Group`` is returned as it is)."""
    if isinstance(group, Group):
        return group
    for member in Group:
        if member.value == group:
            return member
    raise ValueError(f"no group {group!r}")
