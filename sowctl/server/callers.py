"""Who sent a request: the credential that authenticates it on its route.

The engine gives each caller its own turn for a worker's threads and its own share of the
processor (``sowctl.engine.turns``), and the report slots hold at most all but one per
caller (``server.slots``); both ask this module who the caller is.
"""

from __future__ import annotations

import hashlib
from collections.abc import Hashable

from sowctl.operations.groups import API_KEY_ENVIRON, group_of_path
from sowctl.server.auth import bearer_secret


def _digest(secret: str) -> bytes:
    return hashlib.blake2b(secret.encode("latin-1", "replace"), digest_size=16).digest()


def caller_key(path: str, authorization: str | None, api_key: str | None, host: Hashable) -> Hashable:
    """The credential that authenticates a request on its route, as a digest (the API key
    under ``/api/external``, where ``Authorization`` is ignored; the bearer token elsewhere,
    read as authentication reads it: any case of ``Bearer``, spaces trimmed), so one
    credential is one caller however its header is spelt; without one, the client's host
    (one machine's connections are one caller)."""
    by_key = group_of_path(path).uses_api_key
    secret = (api_key or "").strip() if by_key else bearer_secret(authorization)
    return _digest(secret) if secret else host


def caller_of_environ(environ: dict) -> Hashable:
    """``caller_key`` of a request (its head only: a body's bytes never name the caller)."""
    return caller_key(
        environ.get("PATH_INFO", ""),
        environ.get("HTTP_AUTHORIZATION"),
        environ.get(API_KEY_ENVIRON),
        environ.get("REMOTE_ADDR"),
    )
