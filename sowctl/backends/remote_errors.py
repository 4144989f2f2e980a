"""What a server's error answer says: its message, and the fields its issues name, read
the way local mode's errors hold them (so both modes print the same)."""

from __future__ import annotations

import json
import re

import httpx

from sowctl.foundation import json_input
from sowctl.foundation.budgets import MAX_MESSAGE_CHARS
from sowctl.foundation.errors import ERROR_ISSUES_HEADER, GROUP_C_MESSAGES, MAX_ISSUES_HEADER, Issue
from sowctl.operations import Operation

NOT_JSON = (json.JSONDecodeError, UnicodeDecodeError, RecursionError)
# Group C's message texts: they say less than the issues that come with them.
GENERIC_MESSAGES = frozenset(GROUP_C_MESSAGES.values())

# How an envelope without issues names its fields: Group A "field: problem", Group B
# "Invalid parameter line_items[0].amount in query parameters: problem" and
# "Missing required parameter name".
_FIELD_PROBLEM = re.compile(r"([A-Za-z_][\w.]*): (.+)")
_GROUP_B_PROBLEM = re.compile(
    r"(?:Invalid|Missing required) parameter ([\w.\[\]]+)(?: in [a-z ]+)?(?:: (.+))?"
)


def header_issues(response: httpx.Response) -> list[Issue]:
    """The issues a sowctl server sends beside a Group A/B message (ERROR_ISSUES_HEADER)."""
    text = response.headers.get(ERROR_ISSUES_HEADER, "")
    if not text or len(text) > MAX_ISSUES_HEADER:
        return []
    try:
        listed = json_input.loads(text)
    except ValueError:
        return []
    return [
        Issue(tuple(entry["path"]), str(entry["message"]))
        for entry in listed
        if isinstance(listed, list)
        if isinstance(entry, dict) and isinstance(entry.get("path"), list) and "message" in entry
    ]


def issues_in(message: str) -> list[Issue]:
    """The issues of an envelope that carries only a message (Groups A and B), as local
    mode's error holds them: every "; "-separated part names a field, or there are none.
    A message longer than any sowctl sends (another server's) is not read for them."""
    if len(message) > MAX_MESSAGE_CHARS:
        return []
    issues = []
    for part in message.split("; "):
        match = _GROUP_B_PROBLEM.fullmatch(part) or _FIELD_PROBLEM.fullmatch(part)
        if match is None:
            return []
        keys = match.group(1).replace("[", ".").replace("]", "").split(".")
        problem = match.group(2) or "is required"
        issues.append(Issue(tuple(int(key) if key.isdigit() else key for key in keys if key), problem))
    return issues


def error_message(op: Operation, response: httpx.Response) -> tuple[str, list[Issue]]:
    """The server's own words: ``error`` (Groups A/B) or ``message`` + issues (Group C)."""
    try:
        body = response.json()
    except NOT_JSON:
        body = None
    reason = response.reason_phrase or "no details"
    fallback = reason if response.status_code >= 500 else f"HTTP {response.status_code} {reason}"
    if not isinstance(body, dict):
        return fallback, []
    issues = []
    for raw in body.get("issues") or []:
        if isinstance(raw, dict):
            path = raw.get("path") or []
            issues.append(
                Issue(tuple(path) if isinstance(path, list) else (str(path),), str(raw.get("message", "")))
            )
    message = body.get(op.group.error_key)
    if not isinstance(message, str) or not message:
        message = body.get("error") or body.get("message") or fallback
    details = [issue.describe() for issue in issues if issue.describe() not in message]
    if details and str(message).lower() in GENERIC_MESSAGES:
        message = "; ".join(details)  # what local mode says: the issues themselves
    elif details:
        message = f"{message}: {'; '.join(details)}"
    return str(message), issues
