"""Error envelopes, one per group, built in this one place (contract §7).

Groups A and B answer ``{"error": message}``. Group C answers
``{"code", "message", "issues"}``: the message is the spec's fixed text for the
code (§7.3), and the specific detail goes into ``issues`` as
``{"path": [...], "message": ...}`` elements.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import peewee as pw

from sowctl.errors import GROUP_C_MESSAGES, Issue, ServiceUnavailable, SowctlError

INTERNAL_ERROR_MESSAGE = "internal server error"

# Paths of Group C (the listing API); everything else answers in Group A/B style.
GROUP_C_PREFIXES = ("/projects", "/clients")


class InternalError(SowctlError):
    """An unexpected failure: the body says only "internal server error"."""

    status = 500

    def __init__(self) -> None:
        super().__init__(INTERNAL_ERROR_MESSAGE)


@dataclass
class ErrorResponse:
    status: int
    body: dict
    headers: dict[str, str] = field(default_factory=dict)


def group_of_path(path: str) -> str:
    """Which group's envelope a path gets, for errors raised before any route matched."""
    for prefix in GROUP_C_PREFIXES:
        if path == prefix or path.startswith(prefix + "/"):
            return "C"
    if path == "/api/external" or path.startswith("/api/external/"):
        return "B"
    return "A"


def envelope(group: str, error: SowctlError) -> ErrorResponse:
    """The response for ``error`` in ``group``'s envelope, with the headers it implies."""
    status = error.status
    if group == "C":
        code = error.code
        if status >= 500:
            issues: list[dict] = []  # nothing the caller sent is at fault
        else:
            issues = [issue.as_dict() for issue in error.issues] or [Issue((), error.message).as_dict()]
        body = {"code": code, "message": GROUP_C_MESSAGES[code], "issues": issues}
    else:
        body = {"error": error.api_message}
    headers: dict[str, str] = {}
    if status == 401 and group in ("A", "C"):
        headers["WWW-Authenticate"] = 'Bearer realm="sowctl"'
    retry_after = getattr(error, "retry_after", None)
    if retry_after is not None:
        headers["Retry-After"] = str(max(1, int(retry_after)))
    elif status == 503:
        headers["Retry-After"] = "1"
    return ErrorResponse(status, body, headers)


class HttpStatusError(SowctlError):
    """An error known only by its HTTP status (Bottle's routing errors)."""

    def __init__(self, status: int, message: str, issues: list[Issue] | None = None) -> None:
        super().__init__(message, issues or [])
        self.status = status


_TRANSIENT_DB_ERRORS = (
    "locked",
    "busy",
    "could not serialize",
    "deadlock",
    "restart transaction",
    "connection",
    "server closed",
    "timeout",
    "terminating",
)


# The disk under the database failed: nothing was stored, and retrying later may work.
_STORAGE_ERRORS = ("disk is full", "disk i/o error", "readonly database", "removed or replaced")


def is_storage_error(exc: Exception) -> bool:
    """Whether ``exc`` says the disk under the database failed (full, I/O error, removed)."""
    text = str(exc).lower()
    return isinstance(exc, pw.OperationalError | pw.InternalError) and any(
        marker in text for marker in _STORAGE_ERRORS
    )


def database_error(exc: Exception) -> SowctlError | None:
    """A 503 for a database that is busy, unreachable or cannot store; None for anything
    else (a 500)."""
    if isinstance(exc, pw.InterfaceError):
        return ServiceUnavailable("the database is unavailable; retry later")
    if isinstance(exc, pw.OperationalError | pw.InternalError):
        text = str(exc).lower()
        if is_storage_error(exc):
            return ServiceUnavailable("the database cannot store anything now; retry later")
        if any(marker in text for marker in _TRANSIENT_DB_ERRORS):
            return ServiceUnavailable("the database is busy; retry later")
    return None
