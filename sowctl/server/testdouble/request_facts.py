"""What the test double's request log records of a request: who sent it (without any
secret), its headers (credentials left out, values redacted), its query and the first
bytes of its JSON body (``CapturingInput``)."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qsl

from sowctl.foundation.redaction import is_secret_header, redact_header_value
from sowctl.operations.groups import API_KEY_ENVIRON, Group
from sowctl.server import auth

MAX_HEADER_CHARS = 512  # per header value in the request log


def identity(environ: dict, group: Group, path: str) -> dict[str, Any] | None:
    """Who sent the request, without any secret; None when the credentials are unknown."""
    from sowctl.services.credentials import hash_secret
    from sowctl.storage import models as m

    try:
        if group.uses_api_key:
            secret = (environ.get(API_KEY_ENVIRON) or "").strip()
            key = m.ApiKey.get_or_none(m.ApiKey.key_hash == hash_secret(secret)) if secret else None
            if key is None:
                return None
            _, company_names = auth.scope_header_names(path)
            company = next(
                (environ[n].strip() for n in company_names if (environ.get(n) or "").strip()), None
            )
            return {"apiKeyId": key.id, "organizationId": key.organization_id, "companyId": company}
        secret = auth.bearer_secret(environ.get("HTTP_AUTHORIZATION"))
        if secret is None:
            return None
        token = m.ApiToken.get_or_none(m.ApiToken.token_hash == hash_secret(secret))
        if token is None:
            return None
        return {"userId": token.user_id, "organizationId": token.organization_id, "role": token.role}
    except Exception:  # a broken database: the request log shows no identity
        return None


def request_headers(environ: dict) -> dict[str, str] | None:
    """The request's headers (lower-case names) without any credential one, values redacted."""
    found: dict[str, str] = {}
    for key, value in environ.items():
        if key.startswith("HTTP_"):
            name = key[5:].replace("_", "-").lower()
        elif key in ("CONTENT_TYPE", "CONTENT_LENGTH") and value:
            name = key.replace("_", "-").lower()
        else:
            continue
        if not is_secret_header(name):
            found[name] = redact_header_value(str(value))[:MAX_HEADER_CHARS]
    return found or None


def query_of(environ: dict) -> dict[str, str]:
    return dict(parse_qsl(environ.get("QUERY_STRING", ""), keep_blank_values=True, errors="replace"))


def json_value(raw: bytes) -> Any:
    if not raw.strip():
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return None


def json_or_none(value: Any) -> str | None:
    return None if value is None else json.dumps(value, ensure_ascii=False, separators=(",", ":"))


class CapturingInput:
    """``wsgi.input`` that keeps a copy of the first ``limit`` bytes read through it."""

    def __init__(self, stream: Any, limit: int) -> None:
        self._stream = stream
        self._limit = limit
        self._parts: list[bytes] = []
        self._size = 0

    @property
    def captured(self) -> bytes:
        return b"".join(self._parts)

    def _keep(self, data: bytes) -> bytes:
        if data and self._size < self._limit:
            part = data[: self._limit - self._size]
            self._parts.append(part)
            self._size += len(part)
        return data

    def read(self, *args: Any) -> bytes:
        return self._keep(self._stream.read(*args)) if self._stream is not None else b""

    def readline(self, *args: Any) -> bytes:
        return self._keep(self._stream.readline(*args)) if self._stream is not None else b""

    def readlines(self, *args: Any) -> list[bytes]:
        lines = self._stream.readlines(*args) if self._stream is not None else []
        for line in lines:
            self._keep(line)
        return lines

    def __iter__(self):
        return iter(self.readline, b"")
