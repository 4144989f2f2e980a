"""Sandboxes of a shared ``sowctl serve``: one organization per CI job, with its own credentials.

A sandbox is an organization made for one job, a bearer token and an API key of its own
(the job's API credentials), and an admin token scoped to that organization: with it the
job resets, loads, checkpoints and fails its own organization's requests, and no one
else's (``server.testdouble.admin_api``). Every secret is stored as its SHA-256 hash only.

A sandbox lives until ``expires_at``, measured on the wall clock: tests freeze and move the
service clock (``/_admin/clock``), and must not expire, or keep alive, another job's
sandbox by doing so. An expired sandbox is removed lazily (``sweep``): when a sandbox is
created or listed, and at most once a minute from a request; each sweep removes at most
``SWEEP_BATCH`` sandboxes, so no request pays for a backlog.
"""

from __future__ import annotations

import re
import secrets
import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from sowctl.foundation import clock
from sowctl.foundation.budgets import MAX_SANDBOX_TTL_SECONDS, MAX_SANDBOXES
from sowctl.foundation.errors import Forbidden, InvalidInput, NotFound
from sowctl.foundation.redaction import ADMIN_TOKEN_PREFIX, KEY_PREFIX, TOKEN_PREFIX, secret_hint
from sowctl.schemas.admin import SandboxDeleted, SandboxIssued, SandboxOut
from sowctl.services import sandbox_state
from sowctl.services.credentials import hash_secret
from sowctl.services.organization_rows import rows_of
from sowctl.storage import models as m
from sowctl.storage import sandbox_models
from sowctl.storage.database import write_transaction
from sowctl.storage.peewee_compat import tuples

DEFAULT_TTL_SECONDS = 3600
SWEEP_BATCH = 10  # expired sandboxes one sweep removes
SWEEP_INTERVAL_SECONDS = 60.0  # a request sweeps at most this often (per process)
_TTL = re.compile(r"^\s*(\d{1,9})\s*([smhd]?)\s*$", re.IGNORECASE)
_UNIT_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}
MAX_NAME_CHARS = 100

_last_sweep = 0.0
_sweep_lock = threading.Lock()


def wall_now() -> datetime:
    """The wall clock (naive UTC, the storage convention), never the service clock."""
    return datetime.now(UTC).replace(tzinfo=None, microsecond=0)


def parse_ttl(value: Any) -> int:
    """Seconds of a time to live: a whole number of seconds, or ``"90s"``, ``"30m"``, ``"1h"``, ``"2d"``."""
    rule = f"must be a duration such as 3600, 30m, 1h or 2d, at most {MAX_SANDBOX_TTL_SECONDS // 86400} days"
    if isinstance(value, bool):
        raise InvalidInput.for_field("ttl", rule)
    if isinstance(value, int):
        seconds = value
    elif isinstance(value, str) and (match := _TTL.match(value)):
        seconds = int(match[1]) * _UNIT_SECONDS[match[2].lower()]
    else:
        raise InvalidInput.for_field("ttl", rule)
    if not 1 <= seconds <= MAX_SANDBOX_TTL_SECONDS:
        raise InvalidInput.for_field("ttl", rule)
    return seconds


def create_sandbox(name: str | None, ttl: Any) -> SandboxIssued:
    """A new sandbox: its organization, user, bearer token, API key and scoped admin token.
    The secrets are in this answer only."""
    seconds = DEFAULT_TTL_SECONDS if ttl is None else parse_ttl(ttl)
    if name is not None and (not name.strip() or len(name) > MAX_NAME_CHARS or not name.isprintable()):
        raise InvalidInput.for_field("name", f"must be 1 to {MAX_NAME_CHARS} printable characters")
    sweep(force=True)
    organization_id = "sbx-" + secrets.token_hex(6)
    user_id = sandbox_state.sandbox_user(organization_id)
    # Not clock.new_secret: a server started with --seed makes those reproducible, and a
    # shared server's secrets must not be.
    admin_token = ADMIN_TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    key = KEY_PREFIX + secrets.token_urlsafe(32)
    created = wall_now()
    expires = created + timedelta(seconds=seconds)
    with write_transaction("sandboxes"):
        if sandbox_models.Sandbox.select().count() >= MAX_SANDBOXES:
            raise Forbidden(f"this server holds {MAX_SANDBOXES} sandboxes already: delete one, or wait")
        m.Organization.create(id=organization_id, name=name or organization_id)
        m.User.create(id=user_id, organization=organization_id, name=user_id)
        now = clock.now()
        token_id, key_id = clock.new_id(), clock.new_id()
        m.ApiToken.create(
            id=token_id,
            token_hash=hash_secret(token),
            hint=secret_hint(token),
            user=user_id,
            organization=organization_id,
            role="admin",
            created_at=now,
        )
        m.ApiKey.create(
            id=key_id,
            key_hash=hash_secret(key),
            hint=secret_hint(key),
            organization=organization_id,
            created_at=now,
        )
        sandbox_models.Sandbox.create(
            organization=organization_id,
            name=name or organization_id,
            admin_token_hash=hash_secret(admin_token),
            hint=secret_hint(admin_token),
            created_at=created,
            expires_at=expires,
        )
    listed = _listed(organization_id, name or organization_id, created, expires)
    return SandboxIssued(**listed.model_dump(), adminToken=admin_token, token=token, apiKey=key)


def _listed(organization_id: str, name: str, created: datetime, expires: datetime) -> SandboxOut:
    return SandboxOut.model_validate(
        {
            "organizationId": organization_id,
            "name": name,
            "userId": sandbox_state.sandbox_user(organization_id),
            "createdAt": clock.format_timestamp(created),
            "expiresAt": clock.format_timestamp(expires),
        }
    )


def list_sandboxes() -> list[SandboxOut]:
    """The live sandboxes, oldest first (no secret, not even a hint)."""
    sweep(force=True)
    query = sandbox_models.Sandbox.select(
        sandbox_models.Sandbox.organization,
        sandbox_models.Sandbox.name,
        sandbox_models.Sandbox.created_at,
        sandbox_models.Sandbox.expires_at,
    )
    return [
        _listed(*row)
        for row in tuples(
            query.order_by(sandbox_models.Sandbox.created_at, sandbox_models.Sandbox.organization)
        )
    ]


def delete_sandbox(organization_id: str) -> SandboxDeleted:
    """Remove a sandbox: its records, credentials, request log, checkpoints and organization."""
    if sandbox_models.Sandbox.get_or_none(sandbox_models.Sandbox.organization == organization_id) is None:
        raise NotFound(f"sandbox {organization_id} not found")
    _remove(organization_id)
    return SandboxDeleted(deleted=organization_id)


def scope_of(secret: str) -> str | None:
    """The organization a sandbox's admin token acts on; None when it is no live sandbox's."""
    row = sandbox_models.Sandbox.get_or_none(sandbox_models.Sandbox.admin_token_hash == hash_secret(secret))
    if row is None or row.expires_at <= wall_now():
        return None
    return row.organization_id


def sweep(force: bool = False) -> int:
    """Remove up to ``SWEEP_BATCH`` expired sandboxes; unless ``force``, at most once a
    ``SWEEP_INTERVAL_SECONDS`` in this process. How many were removed."""
    global _last_sweep
    if not force:
        with _sweep_lock:
            if time.monotonic() - _last_sweep < SWEEP_INTERVAL_SECONDS:
                return 0
            _last_sweep = time.monotonic()
    expired = [
        row[0]
        for row in tuples(
            sandbox_models.Sandbox.select(sandbox_models.Sandbox.organization)
            .where(sandbox_models.Sandbox.expires_at <= wall_now())
            .order_by(sandbox_models.Sandbox.expires_at)
            .limit(SWEEP_BATCH)
        )
    ]
    for organization_id in expired:
        _remove(organization_id)
    for organization_id in sandbox_state.orphaned_checkpoints(SWEEP_BATCH):
        with write_transaction(f"org:{organization_id}"):
            sandbox_state.drop_checkpoints(organization_id)
    return len(expired)


def _remove(organization_id: str) -> None:
    with write_transaction(f"org:{organization_id}"):
        sandbox_state.drop_checkpoints(organization_id)
        sandbox_state.empty_organization(organization_id, keep_credentials=False)
        for model in (sandbox_models.Sandbox, m.Organization):
            model.delete().where(rows_of(model, organization_id)).execute()
        sandbox_state.forget_faults(organization_id)
