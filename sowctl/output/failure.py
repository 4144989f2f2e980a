"""How the CLI reports a failure: one line for a person, or one JSON object for a program.

With ``--json`` on the command line (or ``SOWCTL_ERRORS=json``) a failure is written to
stderr as one JSON object (docs/cli-json.md documents it): a stable ``code`` naming the
kind of error, the coarse ``category`` its exit code stands for, the ``message`` a person
would read, the ``exitCode``, and, when present, the ``issues`` (field path, the option
that set it, what is wrong), the HTTP ``status`` and ``requestId`` of a server's answer
and ``retryAfter`` of a rate limit. The exit codes are the same either way."""

from __future__ import annotations

import json
import os
from typing import Any

from sowctl.foundation.errors import RateLimited, SowctlError, error_code
from sowctl.output.terminal import current

# The coarse category of each exit code.
CATEGORIES = {
    1: "check_failed",
    2: "invalid_input",
    3: "not_found",
    4: "auth",
    5: "failure",
    130: "interrupted",
}


def wants_json(args: list[str]) -> bool:
    """Whether failures are for a program: ``--json`` before any ``--``, or SOWCTL_ERRORS=json."""
    if os.environ.get("SOWCTL_ERRORS", "").strip().lower() == "json":
        return True
    words = args[: args.index("--")] if "--" in args else args
    return "--json" in words


def code_of(error: SowctlError) -> str:
    """The error's stable code: the one the server sent with its answer (remote mode), else its own."""
    return error.answered_code or error_code(error)


def report(
    message: str,
    *,
    as_json: bool,
    code: str,
    exit_code: int,
    error: SowctlError | None = None,
    issues: list[dict[str, Any]] | None = None,
) -> None:
    """Write one failure to stderr: ``error: MESSAGE``, or its JSON object."""
    from sowctl.output.safe import clean  # a value quoted in a message is printed safely too

    if not as_json:
        current().err.write("error: " + clean(message) + "\n")
    else:
        body: dict[str, Any] = {
            "code": code,
            "category": "cancelled" if code == "aborted" else CATEGORIES.get(exit_code, "failure"),
            "message": message,
            "exitCode": exit_code,
        }
        issues = issues if issues is not None else _issues(error)
        if issues:
            body["issues"] = issues
        if error is not None:
            body.update(_answer(error))
        current().err.write(json.dumps(body, ensure_ascii=True) + "\n")
    current().err.flush()


def _issues(error: SowctlError | None) -> list[dict[str, Any]]:
    out = []
    for issue in error.issues if error is not None else []:
        entry: dict[str, Any] = {"path": list(issue.path), "message": issue.message}
        if issue.option is not None:
            entry["option"] = issue.option
        out.append(entry)
    return out


def _answer(error: SowctlError) -> dict[str, Any]:
    """What a server's answer adds: its status, request id and Retry-After."""
    extra: dict[str, Any] = {}
    if error.answered_status is not None:
        extra["status"] = error.answered_status
    if error.request_id:
        extra["requestId"] = error.request_id
    if isinstance(error, RateLimited):
        extra["retryAfter"] = error.retry_after
    return extra
