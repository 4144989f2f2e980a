"""The test double's state in the database: reset, run-time settings, and the request log.

Everything here lives in the database so that every worker process of one
``sowctl serve`` shares it:

* ``reset_database`` empties every table (data, credentials, rate counters,
  request log) and the run-time settings; only the schema version stays.
* Run-time settings are ``Meta`` rows holding JSON: ``faults`` (the
  ``/_admin/faults`` config) and ``clock`` (``{"now": timestamp or null}``). A
  missing row means "as the server was started".
* The request log (``RequestLog``) keeps the last ``keep`` API requests, their
  bodies masked by ``redaction.mask_body`` whatever their shape (JSON, a form,
  multipart, text, cut short: the values of fields such as ``token`` or
  ``password`` become ``"***"``) and truncated to ``MAX_BODY_CHARS``, and the
  request headers without any credential header (``redaction.is_secret_header``).
"""

from __future__ import annotations

import json
from typing import Any

from sowctl.foundation.redaction import mask_body

# The reset is the core's (services.reset); named here too, where the admin API
# and the checkpoints reach it.
from sowctl.services.reset import RUNTIME_KEYS
from sowctl.services.reset import data_tables as data_tables
from sowctl.services.reset import reset_database as reset_database
from sowctl.storage import models as m
from sowctl.storage.database import write_transaction
from sowctl.storage.peewee_compat import tuples

MAX_BODY_CHARS = 4096

# --- run-time settings shared by the workers ------------------------------------------


def read_runtime() -> dict[str, str]:
    """The raw JSON text of each run-time setting that is set (one query)."""
    query = m.Meta.select(m.Meta.key, m.Meta.value).where(m.Meta.key.in_(RUNTIME_KEYS))
    return dict(tuples(query))


def write_runtime(key: str, value: Any) -> None:
    if key not in RUNTIME_KEYS:
        raise ValueError(key)
    text = json.dumps(value, separators=(",", ":"))
    m.Meta.insert(key=key, value=text).on_conflict(
        conflict_target=[m.Meta.key], update={m.Meta.value: text}
    ).execute()


def take_fault() -> bool:
    """Use up one failure of a ``count``-limited fault config; False when none is left.

    Atomic across workers: the check and the decrement run in one write transaction.
    """
    with write_transaction("faults"):
        row = m.Meta.get_or_none(m.Meta.key == "faults")
        config = json.loads(row.value) if row is not None else None
        if not isinstance(config, dict) or config.get("count") is None:
            return True
        if config["count"] <= 0:
            return False
        config["count"] -= 1
        write_runtime("faults", config)
    return True


def clear_runtime() -> None:
    """Forget run-time settings: the server's start-up options apply again."""
    m.Meta.delete().where(m.Meta.key.in_(RUNTIME_KEYS)).execute()


# --- masking and truncating bodies ------------------------------------------------------


def body_text(raw: bytes, content_type: str | None = None) -> tuple[str | None, bool]:
    """(stored text, truncated) of a body, masked by the one rule whatever its shape
    (``redaction.mask_body``); None when empty."""
    if not raw:
        return None, False
    # What was captured may stop anywhere (a body over the limit, one the API stopped
    # reading): it is read as text cut short, so a cut inside a character is no failure.
    text = mask_body(raw, content_type, truncated=True)
    if len(text) > MAX_BODY_CHARS:
        return text[:MAX_BODY_CHARS], True
    return text, False


def head_text(head: bytes, content_type: str | None = None) -> tuple[str | None, bool]:
    """(stored text, truncated) of the first bytes of a longer body (a streamed report): its
    text as far as it goes, masked as a body cut short, and marked truncated."""
    return mask_body(head, content_type, truncated=True)[:MAX_BODY_CHARS], True


def _body_out(text: str | None, truncated: bool) -> Any:
    if text is None or truncated:
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text


# --- the request log -----------------------------------------------------------------------


def log_request(entry: dict[str, Any], keep: int) -> None:
    """Add one request (the keys of ``RequestLog``) and prune all but the last ``keep``."""
    with m.database_proxy.atomic():
        row_id = m.RequestLog.insert(**entry).execute()
        if row_id and row_id > keep:
            m.RequestLog.delete().where(m.RequestLog.id <= row_id - keep).execute()


def recent_requests(limit: int, organization_id: str | None = None) -> list[dict[str, Any]]:
    """The last ``limit`` requests, oldest first; with ``organization_id``, of its callers only
    (a sandbox's admin token)."""
    query = m.RequestLog.select()
    if organization_id is not None:
        query = query.where(m.RequestLog.organization_id == organization_id)
    rows = list(query.order_by(m.RequestLog.id.desc()).limit(limit))
    return [_entry_out(row) for row in reversed(rows)]


def clear_requests(organization_id: str | None = None) -> int:
    query = m.RequestLog.delete()
    if organization_id is not None:
        query = query.where(m.RequestLog.organization_id == organization_id)
    return query.execute()


def contract_departures() -> list[dict[str, Any]]:
    """What the logged requests relied on beyond the service's description, by departure:
    how many requests, and one instance (the log is bounded, so is this)."""
    counted: dict[str, dict[str, Any]] = {}
    for (text,) in tuples(
        m.RequestLog.select(m.RequestLog.contract).where(m.RequestLog.contract.is_null(False))
    ):
        for mark in {mark["code"]: mark for mark in json.loads(text)}.values():  # once a request
            entry = counted.setdefault(
                mark["code"],
                {"code": mark["code"], "kind": mark["kind"], "requests": 0, "example": mark["detail"]},
            )
            entry["requests"] += 1
    return sorted(counted.values(), key=lambda entry: (-entry["requests"], entry["code"]))


def _entry_out(row: m.RequestLog) -> dict[str, Any]:
    return {
        "id": row.id,
        "at": row.at,
        "requestId": row.request_id,
        "method": row.method,
        "path": row.path,
        "query": json.loads(row.query) if row.query else {},
        "status": row.status,
        "latencyMs": row.latency_ms,
        "group": row.group,
        "identity": json.loads(row.identity) if row.identity else None,
        "requestBody": _body_out(row.request_body, row.request_truncated),
        "requestBodyTruncated": row.request_truncated,
        "responseBody": _body_out(row.response_body, row.response_truncated),
        "responseBodyTruncated": row.response_truncated,
        "fault": json.loads(row.fault) if row.fault else None,
        "headers": json.loads(row.headers) if row.headers else {},
        "contract": json.loads(row.contract) if row.contract else [],
    }
