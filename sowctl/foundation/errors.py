"""Typed errors raised by the domain core.

Each error carries what every edge needs to translate it: the HTTP status
(server), the Group C code, and the CLI exit code. Surfaces map
them in exactly one place each (``sowctl.server.envelopes`` and ``sowctl.cli``).
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum

from sowctl.foundation.budgets import ECHO_LIMIT, MAX_MESSAGE_CHARS, MAX_REPORTED_ISSUES


class ExitCode(IntEnum):
    """CLI exit codes, fixed: scripts and CI gates rely on them."""

    OK = 0
    CHECK_FAILED = 1
    INVALID_INPUT = 2
    NOT_FOUND = 3
    AUTH = 4
    FAILURE = 5


def exit_code_for_status(status: int) -> ExitCode:
    """Map an HTTP status to the contract's exit code."""
    if status < 400:
        return ExitCode.OK
    if status == 404:
        return ExitCode.NOT_FOUND
    if status in (401, 403):
        return ExitCode.AUTH
    if status in (400, 405, 409, 413, 415, 422):  # 409/415/422: a server other than sowctl
        return ExitCode.INVALID_INPUT
    return ExitCode.FAILURE


# The Group C codes the service documents, with their fixed message texts. Only these are
# sent: a client decodes ``code`` as one of them, so a status beyond the five (405, 413,
# 429, 503, ...) carries BAD_REQUEST or INTERNAL_SERVER_ERROR (``group_c_code``).
GROUP_C_MESSAGES = {
    "BAD_REQUEST": "invalid input data",
    "UNAUTHORIZED": "authorization not provided",
    "FORBIDDEN": "insufficient access",
    "NOT_FOUND": "not found",
    "INTERNAL_SERVER_ERROR": "internal server error",
}


_CODE_OF_STATUS = {400: "BAD_REQUEST", 401: "UNAUTHORIZED", 403: "FORBIDDEN", 404: "NOT_FOUND"}


def group_c_code(status: int) -> str:
    """The documented code of an error of ``status``: its own for the five the service
    lists; any other refusal (405, 408, 413, 414, 429, 431) is BAD_REQUEST, any other
    failure (503) INTERNAL_SERVER_ERROR. The HTTP status and ``issues`` say which."""
    return _CODE_OF_STATUS.get(status, "BAD_REQUEST" if status < 500 else "INTERNAL_SERVER_ERROR")


def quoted(value: object) -> str:
    """``value`` as an error message repeats it: quoted, secrets in it masked (a sowctl
    token, the value after ``password=``: ``redaction.mask_text``), and cut after
    ``ECHO_LIMIT`` characters, so a 20,000-character title does not fill the terminal."""
    from sowctl.foundation.redaction import mask_text  # only when a message is made

    text = value if isinstance(value, str) else str(value)
    masked = mask_text(text)
    if len(masked) > ECHO_LIMIT:
        return repr(masked[:ECHO_LIMIT])[:-1] + "…" + repr(masked[:ECHO_LIMIT])[-1]
    return repr(masked) if isinstance(value, str) or masked != text else repr(value)


def suggestion(value: object, choices: list[str]) -> str:
    """``; did you mean 'x'?`` for the closest choice to a typo (or the one choice it
    abbreviates, as ``req`` does ``requirement``), or nothing. Every fixed-value option's
    error uses it: click's choices, the API's "must be one of", ``--fail-on``."""
    if not isinstance(value, str) or not value:
        return ""
    lowered = value.lower()
    starting = [choice for choice in choices if choice.lower().startswith(lowered)]
    if len(starting) == 1:
        return f"; did you mean {quoted(starting[0])}?"
    close = difflib.get_close_matches(lowered, choices, n=1, cutoff=0.5)
    return f"; did you mean {quoted(close[0])}?" if close else ""


def clipped(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """``text`` cut to ``limit`` characters, an ellipsis marking the cut.

    The cut is in the middle: a message usually ends with what went wrong ("SOW 0000… not
    found"), which a cut at the end would lose."""
    if len(text) <= limit:
        return text
    tail = limit // 4
    return text[: limit - 1 - tail] + "…" + text[len(text) - tail :]


@dataclass(frozen=True)
class Issue:
    """One offending input: where it is and what is wrong with it.

    Both are cut to size: a path names keys the caller chose (a key of a megabyte in a
    dataset record), and an error repeats them."""

    path: tuple[str | int, ...]
    message: str
    option: str | None = None  # the CLI option that set the field, when a command built the call

    def __post_init__(self) -> None:
        if any(isinstance(part, str) and len(part) > ECHO_LIMIT for part in self.path):
            path = tuple(clipped(part, ECHO_LIMIT) if isinstance(part, str) else part for part in self.path)
            object.__setattr__(self, "path", path)
        if len(self.message) > MAX_MESSAGE_CHARS:
            object.__setattr__(self, "message", clipped(self.message))

    def as_dict(self) -> dict:
        return {"path": list(self.path), "message": self.message}

    def describe(self) -> str:
        where = ".".join(str(part) for part in self.path)
        return f"{where}: {self.message}" if where else self.message


def more_problems(count: int) -> str:
    """What an error says of the problems it does not list: "and 3 more problems"."""
    return f"and {count} more problem{'' if count == 1 else 's'}"


def bounded_issues(issues: Sequence[Issue], total: int | None = None) -> list[Issue]:
    """The first ``MAX_REPORTED_ISSUES`` of ``issues`` and, when ``total`` (all of them, by
    default ``len(issues)``) is more, one last issue counting the rest ("and 4980 more
    problems"): an answer lists a bounded number whatever the caller sent."""
    total = len(issues) if total is None else total
    kept = list(issues[:MAX_REPORTED_ISSUES])
    if total > len(kept):
        kept.append(Issue((), more_problems(total - len(kept))))
    return kept


def listed(descriptions: Sequence[str], total: int | None = None) -> str:
    """The first ``MAX_REPORTED_ISSUES`` descriptions joined with "; ", then "(and K more
    problems)" when ``total`` is more: the message of a refusal with many problems."""
    total = len(descriptions) if total is None else total
    shown = list(descriptions[:MAX_REPORTED_ISSUES])
    text = "; ".join(shown)
    return f"{text} ({more_problems(total - len(shown))})" if total > len(shown) else text


class SowctlError(Exception):
    """Base of every error the core raises on purpose.

    Its message and issues are bounded here, once for every surface (the HTTP envelopes,
    the CLI's line on stderr): at most ``MAX_MESSAGE_CHARS`` characters, and at most
    ``MAX_REPORTED_ISSUES`` issues plus one counting the rest (``bounded_issues``; a list
    bounded already, as one error's issues passed on to another, is kept as it is)."""

    status: int = 500
    # Set by the CLI's remote mode when a server answered: its HTTP status and X-Request-Id.
    answered_status: int | None = None
    request_id: str | None = None
    answered_code: str | None = None  # the answer's ERROR_CODE_HEADER

    def __init__(self, message: str, issues: Sequence[Issue] = ()) -> None:
        message = clipped(message)
        super().__init__(message)
        self.message = message
        self.issues = list(issues)
        if len(self.issues) > MAX_REPORTED_ISSUES + 1:
            self.issues = bounded_issues(self.issues)

    @property
    def code(self) -> str:
        """The Group C ``code`` this error is answered with (``group_c_code``)."""
        return group_c_code(self.status)

    @property
    def exit_code(self) -> ExitCode:
        return exit_code_for_status(self.status)

    @property
    def api_message(self) -> str:
        """What an HTTP answer says; a message naming server internals (a file path) overrides it."""
        return self.message


class InvalidInput(SowctlError):
    """A request that can never succeed as sent (HTTP 400, exit 2)."""

    status = 400

    @classmethod
    def for_field(cls, field: str, message: str) -> InvalidInput:
        return cls(f"{field}: {message}", [Issue((field,), message)])


class CycleDetected(InvalidInput):
    """A dependency change would close a cycle; ``path`` is the cycle's item ids."""

    def __init__(self, path: Sequence[str]) -> None:
        self.path = list(path)
        super().__init__("circular dependency: " + " -> ".join(self.path))


class HierarchyViolation(InvalidInput):
    """An item placement the hierarchy rules forbid."""


class NotFound(SowctlError):
    status = 404


class Unauthorized(SowctlError):
    status = 401


class Forbidden(SowctlError):
    status = 403


class MethodNotAllowed(SowctlError):
    status = 405


class PayloadTooLarge(SowctlError):
    status = 413

    @classmethod
    def over(cls, max_bytes: int) -> PayloadTooLarge:
        """The one wording of a body over its limit: the server's 413, and the CLI's refusal
        to read or send one."""
        return cls(
            f"request body too large: the limit is {max_bytes} bytes",
            [Issue((), f"request body exceeds {max_bytes} bytes")],
        )


class RateLimited(SowctlError):
    status = 429

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class ServiceUnavailable(SowctlError):
    """The server or database could not be reached or gave up (exit 5)."""

    status = 503


class UsageError(SowctlError):
    """The command line itself is wrong (exit 2), e.g. --db with --server."""

    status = 400


class Interrupted(SowctlError):
    """Ctrl-C while a request was out (exit 130), saying what may have happened."""

    @property
    def exit_code(self) -> ExitCode:
        return 130  # type: ignore[return-value]


class RemoteError(SowctlError):
    """An HTTP error answered by a remote server; keeps the server's status."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


# The stable code of an error (``error_code``), sent by the server in this header with every
# refusal, so the CLI's remote mode reports the code local mode does (``--json`` errors).
ERROR_CODE_HEADER = "X-Error-Code"
# Groups A and B answer a message only; their issues are sent in this header (a JSON array of
# {"path", "message"}), when it stays under MAX_ISSUES_HEADER characters.
ERROR_ISSUES_HEADER = "X-Error-Issues"
MAX_ISSUES_HEADER = 4096
# The code of each typed error, most specific first.
_ERROR_CODES: list[tuple[type[SowctlError], str]] = [
    (CycleDetected, "cycle_detected"),
    (HierarchyViolation, "hierarchy_violation"),
    (InvalidInput, "invalid_input"),
    (UsageError, "usage"),
    (NotFound, "not_found"),
    (Unauthorized, "unauthorized"),
    (Forbidden, "forbidden"),
    (RateLimited, "rate_limited"),
    (ServiceUnavailable, "unavailable"),
    (PayloadTooLarge, "too_large"),
    (MethodNotAllowed, "method_not_allowed"),
    (Interrupted, "interrupted"),
]
_CODE_OF_EXIT = {2: "invalid_input", 3: "not_found", 4: "auth", 5: "failure"}
# Every code ``error_code`` can give, in the order the docs list them.
ERROR_CODES = (*(code for _, code in _ERROR_CODES), "server_error", "auth", "failure")


def error_code(error: SowctlError) -> str:
    """A stable name of what went wrong (docs/cli-json.md lists them)."""
    for kind, code in _ERROR_CODES:
        if isinstance(error, kind):
            return code
    if error.status >= 500:
        return "server_error"
    return _CODE_OF_EXIT.get(int(error.exit_code), "failure")
