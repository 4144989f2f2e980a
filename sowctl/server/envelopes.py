"""Error envelopes, one per group, built in this one place.

Groups A and B answer ``{"error": message}``. Group C answers
``{"code", "message", "issues"}``: the message is the spec's fixed text for the
code, and the specific detail goes into ``issues`` as
``{"path": [...], "message": ...}`` elements.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from sowctl.foundation.errors import (
    ERROR_CODE_HEADER,
    ERROR_ISSUES_HEADER,
    GROUP_C_MESSAGES,
    MAX_ISSUES_HEADER,
    Issue,
    SowctlError,
    error_code,
)
from sowctl.foundation.redaction import redact
from sowctl.operations.groups import Authentication, Envelope, Group, as_group, group_of_path

INTERNAL_ERROR_MESSAGE = "internal server error"


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


__all__ = ["ErrorResponse", "HttpStatusError", "InternalError", "envelope", "group_of_path"]


def envelope(group: Group | str, error: SowctlError) -> ErrorResponse:
    """The response for ``error`` in ``group``'s envelope, with the headers it implies."""
    group = as_group(group)
    status = error.status
    if group.envelope is Envelope.CODE_MESSAGE_ISSUES:
        code = error.code
        if status >= 500:
            issues: list[dict] = []  # nothing the caller sent is at fault
        else:
            issues = [_issue(issue) for issue in error.issues] or [_issue(Issue((), error.message))]
        body = {"code": code, "message": GROUP_C_MESSAGES[code], "issues": issues}
    else:
        body = {"error": redact(error.api_message)}
    headers: dict[str, str] = {ERROR_CODE_HEADER: error_code(error)}
    if group.envelope is Envelope.MESSAGE and status < 500 and error.issues:
        # A message-only envelope: the issues go in a header, when small.
        listed = json.dumps([_issue(issue) for issue in error.issues], ensure_ascii=True)
        listed = listed.replace("\x7f", "\\u007f")  # a header value holds visible ASCII only
        if len(listed) <= MAX_ISSUES_HEADER:
            headers[ERROR_ISSUES_HEADER] = listed
    if status == 401 and group.authentication is Authentication.BEARER_TOKEN:
        headers["WWW-Authenticate"] = 'Bearer realm="sowctl"'
    retry_after = getattr(error, "retry_after", None)
    if retry_after is not None:
        headers["Retry-After"] = str(max(1, int(retry_after)))
    elif status == 503:
        headers["Retry-After"] = "1"
    return ErrorResponse(status, body, headers)


def _issue(issue: Issue) -> dict:
    """An issue as answered. Values a message repeats are masked where it is made
    (``errors.quoted``); a sowctl secret anywhere in it (a key of the body naming the
    field) is cut here, the last place before the answer."""
    path = [redact(part) if isinstance(part, str) else part for part in issue.path]
    return {"path": path, "message": redact(issue.message)}


class HttpStatusError(SowctlError):
    """An error known only by its HTTP status (Bottle's routing errors)."""

    def __init__(self, status: int, message: str, issues: list[Issue] | None = None) -> None:
        super().__init__(message, issues or [])
        self.status = status
