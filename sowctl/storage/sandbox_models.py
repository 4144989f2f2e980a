"""Sandboxes of a shared test double (schema v13): ``services.sandboxes`` owns the rules."""

from __future__ import annotations

import peewee as pw

from sowctl.storage.models import BaseModel, Organization


class Sandbox(BaseModel):
    """An organization handed to one CI job on a shared ``sowctl serve``: its own admin token
    (only its SHA-256 hash is stored), acting on that organization only, until ``expires_at``.

    Both times are the wall clock's, never the service clock's: a test that freezes or moves
    the service clock must not expire, or keep alive, anyone's sandbox."""

    organization = pw.ForeignKeyField(Organization, primary_key=True, on_delete="CASCADE")
    organization_id: str
    name = pw.TextField()
    admin_token_hash = pw.CharField(max_length=64, unique=True)
    hint = pw.CharField(max_length=16)
    created_at = pw.DateTimeField()
    expires_at = pw.DateTimeField(index=True)


# Not dataset records (neither exported nor imported); emptied by ``POST /_admin/reset``.
V13_MODELS: list[type[BaseModel]] = [Sandbox]
