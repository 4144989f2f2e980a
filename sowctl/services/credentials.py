"""Bearer tokens and API keys: random secrets stored only as SHA-256 hashes.

The secrets carry 256 random bits, so a fast hash is enough (no brute force is
feasible); lookups go by hash and the final comparison is constant-time.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sowctl.foundation import clock
from sowctl.foundation.errors import InvalidInput, NotFound, Unauthorized
from sowctl.foundation.redaction import KEY_PREFIX, TOKEN_PREFIX, secret_hint  # one list of secret prefixes
from sowctl.schemas.cli_output import KeyListed, TokenListed
from sowctl.schemas.rows import from_row
from sowctl.schemas.vocabulary import ROLES
from sowctl.services.access import Caller
from sowctl.services.lookup import Lookup, hydrate
from sowctl.storage import models as m
from sowctl.storage.database import write_transaction


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Issued:
    id: str
    secret: str


# --- tokens -------------------------------------------------------------------


def create_token(user_id: str, organization_id: str, role: str = "member") -> Issued:
    if role not in ROLES:
        raise InvalidInput.for_field("role", "must be one of: viewer, member, admin")
    if not user_id or not user_id.strip():
        raise InvalidInput.for_field("user", "must not be empty")
    if len(user_id) > m.User.id.max_length:  # PostgreSQL would refuse it with an error
        raise InvalidInput.for_field("user", f"must be at most {m.User.id.max_length} characters")
    if m.Organization.get_or_none(m.Organization.id == organization_id) is None:
        raise NotFound(f"organization {organization_id} not found")
    # BEGIN IMMEDIATE on SQLite: a deferred transaction that reads, then writes, fails at
    # once ("database is locked") when a running server wrote in between.
    with write_transaction("credentials"):
        user = m.User.get_or_none(m.User.id == user_id)
        if user is None:
            user = m.User.create(id=user_id, organization=organization_id, name=user_id)
        elif user.organization_id != organization_id:
            raise InvalidInput.for_field(
                "user", f"user {user_id} belongs to organization {user.organization_id}"
            )
        secret = clock.new_secret(TOKEN_PREFIX)
        token = m.ApiToken.create(
            id=clock.new_id(),
            token_hash=hash_secret(secret),
            hint=secret_hint(secret),
            user=user.id,
            organization=organization_id,
            role=role,
            created_at=clock.now(),
        )
    return Issued(token.id, secret)


def list_tokens() -> list[TokenListed]:
    return [
        from_row(TokenListed, t, token=t.hint, **_times(t))
        for t in m.ApiToken.select().order_by(m.ApiToken.created_at, m.ApiToken.id)
    ]


def _times(row: m.ApiToken | m.ApiKey) -> dict[str, str | None]:
    return {
        "created_at": clock.format_timestamp(row.created_at),
        "revoked_at": clock.format_timestamp(row.revoked_at),
    }


def revoke_token(id_or_secret: str) -> str:
    return _revoke(m.ApiToken, m.ApiToken.token_hash, id_or_secret, "token")


def authenticate_token(secret: str | None) -> Caller:
    if not secret:
        raise Unauthorized("missing bearer token")
    digest = hash_secret(secret)
    return token_caller(digest, _TOKEN.first(digest))  # every Group A/C request: SQL built once


def token_caller(digest: str, row: Sequence[Any] | None) -> Caller:
    """The Caller of a token found by its hash ``digest``: ``row`` holds ``TOKEN_COLUMNS``'
    values (None: no token has that hash). Unauthorized, worded for the client, otherwise.
    Every bearer token is judged here, alone or read with a record (``services.token_reads``)."""
    if row is None or not hmac.compare_digest(row[0], digest):
        raise Unauthorized("invalid bearer token")
    _, user_id, organization_id, role, revoked_at = row
    if revoked_at is not None:
        raise Unauthorized("bearer token has been revoked")
    return Caller(user_id=user_id, organization_id=organization_id, role=role)


TOKEN_COLUMNS = (
    m.ApiToken.token_hash,
    m.ApiToken.user,
    m.ApiToken.organization,
    m.ApiToken.role,
    m.ApiToken.revoked_at,
)
_TOKEN = Lookup(
    lambda digest: m.ApiToken.select(*TOKEN_COLUMNS).where(m.ApiToken.token_hash == digest).limit(1)
)


# --- API keys -----------------------------------------------------------------


def create_key(organization_id: str) -> Issued:
    if m.Organization.get_or_none(m.Organization.id == organization_id) is None:
        raise NotFound(f"organization {organization_id} not found")
    secret = clock.new_secret(KEY_PREFIX)
    key = m.ApiKey.create(
        id=clock.new_id(),
        key_hash=hash_secret(secret),
        hint=secret_hint(secret),
        organization=organization_id,
        created_at=clock.now(),
    )
    return Issued(key.id, secret)


def list_keys() -> list[KeyListed]:
    return [
        from_row(KeyListed, k, key=k.hint, **_times(k))
        for k in m.ApiKey.select().order_by(m.ApiKey.created_at, m.ApiKey.id)
    ]


def revoke_key(id_or_secret: str) -> str:
    return _revoke(m.ApiKey, m.ApiKey.key_hash, id_or_secret, "API key")


def authenticate_key(secret: str | None) -> m.ApiKey:
    if not secret:
        raise Unauthorized("missing API key (x-api-key header)")
    digest = hash_secret(secret)
    row = _KEY.first(digest)  # every Group B request: SQL built once (services.lookup)
    if row is None or not hmac.compare_digest(row[1], digest):
        raise Unauthorized("invalid API key")
    key = hydrate(m.ApiKey, _KEY_FIELDS, row)
    if key.revoked_at is not None:
        raise Unauthorized("API key has been revoked")
    return key


_KEY_FIELDS = m.ApiKey._meta.sorted_fields
_KEY = Lookup(lambda digest: m.ApiKey.select(*_KEY_FIELDS).where(m.ApiKey.key_hash == digest).limit(1))


def _revoke(model, hash_field, id_or_secret: str, what: str) -> str:
    row = model.get_or_none(model.id == id_or_secret) or model.get_or_none(
        hash_field == hash_secret(id_or_secret)
    )
    if row is None:
        shown = id_or_secret if len(id_or_secret) < 40 else secret_hint(id_or_secret)
        raise NotFound(f"{what} {shown} not found")
    if row.revoked_at is None:
        model.update(revoked_at=clock.now()).where(model.id == row.id).execute()
    return row.id
