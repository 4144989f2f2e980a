"""Who is calling: bearer tokens (Groups A and C) and API keys with scope headers (Group B)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sowctl.foundation.errors import Issue, RateLimited, Unauthorized
from sowctl.operations import Operation, TokenAnswer
from sowctl.operations.groups import API_KEY_ENVIRON, Group
from sowctl.services import credentials
from sowctl.services.access import Caller

if TYPE_CHECKING:
    from sowctl.server.configuration import ServerSettings


def bearer_secret(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header (scheme in any case); None if
    the header is missing or of another form. Every bearer check reads the header here."""
    scheme, _, secret = (authorization or "").strip().partition(" ")
    if scheme.lower() != "bearer" or not secret.strip():
        return None
    return secret.strip()


def bearer_caller(authorization: str | None) -> Caller:
    """The Caller of an ``Authorization: Bearer <token>`` header; 401 otherwise."""
    if not authorization or not authorization.strip():
        raise _unauthorized("missing bearer token (send Authorization: Bearer <token>)")
    secret = bearer_secret(authorization)
    if secret is None:
        raise _unauthorized("the Authorization header must be 'Bearer <token>'")
    try:
        return credentials.authenticate_token(secret)
    except Unauthorized as exc:
        raise _unauthorized(exc.message) from None


def token_read(op: Operation, secret: str, params: dict[str, str]) -> TokenAnswer:
    """``op.token_read``'s caller and answer; its token's refusal worded as ``bearer_caller``'s."""
    assert op.token_read is not None
    try:
        return op.token_read(secret, params)
    except Unauthorized as exc:  # only the token is refused so (an Operation.token_read's promise)
        raise _unauthorized(exc.message) from None


def _unauthorized(message: str) -> Unauthorized:
    """A 401 whose issue names the header at fault (Group C's ``issues``)."""
    return Unauthorized(message, [Issue(("Authorization",), message)])


def scope_header_names(path: str) -> tuple[tuple[str, str], tuple[str, str]]:
    """(documented, alternative) WSGI names of the organization and company headers."""
    organization, company = Group.B.scope_headers(path)
    other_org, other_company = Group.B.other_scope_headers(path)
    return (_wsgi(organization), _wsgi(other_org)), (_wsgi(company), _wsgi(other_company))


def _wsgi(header: str) -> str:
    return "HTTP_" + header.upper().replace("-", "_")


def _header(environ: dict, names: tuple[str, str]) -> str | None:
    """The first spelling that is present (the documented one is preferred)."""
    for name in names:
        value = environ.get(name)
        if value is not None and value.strip():
            return value.strip()
    return None


def external_caller(
    environ: dict, path: str, settings: ServerSettings, headers: dict[str, str]
) -> tuple[Caller, str]:
    """Authenticate a Group B request, count it, and resolve its organization and company.

    The rate-limit headers go into ``headers`` as soon as the key is known, so they
    are on the response even when a later step (scope headers, validation) fails.
    """
    from sowctl.services import external_scope, ratelimit

    try:
        api_key = credentials.authenticate_key((environ.get(API_KEY_ENVIRON) or "").strip() or None)
    except Unauthorized:
        headers.update(uncharged_rate_headers(Group.B, settings))
        raise
    state = ratelimit.hit(api_key.id, rate_limits(settings))
    headers.update(state.headers())
    if state.retry_after is not None:
        raise RateLimited(
            f"rate limit exceeded: {state.limit} requests; retry in {state.retry_after} s",
            state.retry_after,
        )
    organization_names, company_names = scope_header_names(path)
    return external_scope.resolve(
        api_key, _header(environ, organization_names), _header(environ, company_names)
    )


def uncharged_rate_headers(group: Group, settings: ServerSettings) -> dict[str, str]:
    """The rate-limit headers of a response charged to no key, the one rule for all of them.

    Every response of a rate-limited group carries ``X-RateLimit-*``, also those no key
    is charged for: a missing or refused key, an unknown route or method, an injected
    fault, a request the worker refuses unread. They show the minute window with
    nothing counted. Other groups have no rate limit: no headers.
    """
    if not group.rate_limited:
        return {}
    from sowctl.services import ratelimit

    return ratelimit.uncounted(rate_limits(settings)).headers()


def rate_limits(settings: ServerSettings):
    from sowctl.services.ratelimit import RateLimits

    return RateLimits(per_minute=settings.rate_per_minute, per_day=settings.rate_per_day)
