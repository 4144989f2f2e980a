"""Replaying a ``serve --record`` file (``sowctl replay``), in local or remote mode.

Each line of the file is one successful write request (``sowctl.server.testdouble.recorder``).
Replaying finds its operation in the registry by method and path pattern and
runs it again:

* locally, with ``operations.call_local`` and a ``Caller`` built from the
  recorded identity (user, organization and role of a token; organization and
  company of an API key), so the same visibility and rules apply;
* remotely, as the same HTTP request, authenticated with the replayer's own
  ``--token`` / ``--api-key`` (the file holds no secret). The Group B scope
  headers come from ``--org``/``--company``, or else from the recorded identity.

Generated ids differ between the recording and the replay unless both draw them
from the same seed in the same order (``serve --seed N`` and ``replay --seed N``).
So that later requests still find what earlier ones created, a create's
recorded ``responseId`` is mapped to the id the replay got, and every path
segment, query value and body string equal to a mapped id is rewritten before
the request is sent.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from sowctl import operations
from sowctl.foundation import json_input
from sowctl.foundation.errors import ExitCode, InvalidInput, Issue, SowctlError, Unauthorized, UsageError
from sowctl.foundation.redaction import mask_text
from sowctl.schemas.vocabulary import ROLES, Role
from sowctl.services.access import Caller

if TYPE_CHECKING:
    from sowctl.backends.remote import RemoteBackend
    from sowctl.operations import Operation

REQUIRED_KEYS = ("method", "path")


@dataclass(frozen=True)
class Entry:
    """One recorded request."""

    line: int
    method: str
    path: str
    query: dict[str, str] = field(default_factory=dict)
    body: Any = None
    group: str | None = None
    identity: dict[str, Any] | None = None
    response_id: Any = None

    def describe(self) -> str:
        return f"line {self.line}: {self.method} {self.path}"


@dataclass
class Outcome:
    replayed: int = 0
    failures: list[dict[str, Any]] = field(default_factory=list)
    skipped: int = 0
    ids: dict[str, str] = field(default_factory=dict)

    @property
    def exit_code(self) -> int:
        return int(self.failures[0]["exitCode"]) if self.failures else int(ExitCode.OK)

    def summary(self) -> dict[str, Any]:
        return {
            "replayed": self.replayed,
            "failed": len(self.failures),
            "skipped": self.skipped,
            "failures": self.failures,
            "ids": self.ids,
        }


# --- reading ---------------------------------------------------------------------


def read_entries(lines: Iterable[str], name: str = "the record file") -> list[Entry]:
    """Every recorded request; a malformed line is an InvalidInput naming it."""
    entries: list[Entry] = []
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        try:
            data = json_input.loads(text)
        except json_input.JsonTooDeep as exc:
            message = f"arrays and objects are nested more than {exc.limit} levels deep (column {exc.column})"
            raise _bad_line(name, number, message) from None
        except ValueError as exc:
            raise _bad_line(name, number, f"not valid JSON ({exc})") from None
        if not isinstance(data, dict):
            raise _bad_line(name, number, "must be a JSON object")
        for key in REQUIRED_KEYS:
            if not isinstance(data.get(key), str) or not data[key]:
                raise _bad_line(name, number, f"{key}: is required")
        query = data["query"] if data.get("query") is not None else {}
        identity = data.get("identity")
        if not isinstance(query, dict) or not (identity is None or isinstance(identity, dict)):
            raise _bad_line(name, number, "query and identity must be objects")
        entries.append(
            Entry(
                line=number,
                method=data["method"].upper(),
                path=data["path"],
                query={str(k): str(v) for k, v in query.items()},
                body=data.get("body"),
                group=data.get("group"),
                identity=identity,
                response_id=data.get("responseId"),
            )
        )
    return entries


def read_file(path: Path) -> list[Entry]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise InvalidInput(f"{path} is not UTF-8 text") from None
    return read_entries(text.splitlines(), str(path))


def _bad_line(name: str, number: int, message: str) -> InvalidInput:
    return InvalidInput(f"{name}, line {number}: {message}", [Issue((number,), message)])


# --- matching operations --------------------------------------------------------------


def find_operation(method: str, path: str) -> tuple[Operation, dict[str, str]]:
    """The registry operation serving ``method path``, and its path parameters."""
    segments = path.split("/")
    candidates = sorted(operations.load_all().values(), key=_route_order)
    for op in candidates:
        if op.method.upper() != method.upper():
            continue
        pattern = op.path.split("/")
        if len(pattern) != len(segments):
            continue
        params: dict[str, str] = {}
        for expected, actual in zip(pattern, segments, strict=True):
            if expected.startswith("{") and expected.endswith("}"):
                if not actual:
                    break
                params[expected[1:-1]] = actual
            elif expected != actual:
                break
        else:
            return op, params
    raise InvalidInput(f"no API operation for {method} {path}")


def _route_order(op: Operation) -> tuple:
    """Literal segments before parameters (``/items/reorder`` before ``/items/{itemId}``)."""
    return tuple(part.startswith("{") for part in op.path.split("/")), op.path


# --- id mapping ------------------------------------------------------------------------


class IdMap:
    """Recorded id -> replayed id, for the objects the replay created anew."""

    def __init__(self) -> None:
        self.ids: dict[str, str] = {}

    def learn(self, recorded: Any, replayed: Any) -> None:
        if isinstance(recorded, str) and isinstance(replayed, str) and recorded != replayed:
            self.ids[recorded] = replayed

    def path(self, path: str) -> str:
        return "/".join(self.ids.get(segment, segment) for segment in path.split("/"))

    def value(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.ids.get(value, value)
        if isinstance(value, list):
            return [self.value(v) for v in value]
        if isinstance(value, dict):
            return {k: self.value(v) for k, v in value.items()}
        return value


# --- replaying -------------------------------------------------------------------------

# (operation, path parameters, query, body, entry) -> the response body
Runner = Callable[["Operation", dict[str, str], dict[str, str], Any, Entry], Any]


def replay(
    entries: list[Entry],
    run: Runner,
    *,
    continue_on_error: bool = False,
    on_failure: Callable[[dict[str, Any]], None] | None = None,
) -> Outcome:
    """Run every entry in order; stop at the first failure unless ``continue_on_error``."""
    outcome = Outcome()
    ids = IdMap()
    for index, entry in enumerate(entries):
        try:
            op, params = find_operation(entry.method, ids.path(entry.path))
            body = run(op, params, ids.value(entry.query), ids.value(entry.body), entry)
        except SowctlError as exc:
            failure = _failure(entry, exc.message, int(exc.exit_code))
        except Exception as exc:  # e.g. a database constraint: still one failure, not a crash
            failure = _failure(entry, f"{type(exc).__name__}: {exc}", int(ExitCode.FAILURE))
        else:
            outcome.replayed += 1
            if isinstance(body, dict):
                ids.learn(entry.response_id, body.get("id"))
            continue
        outcome.failures.append(failure)
        if on_failure is not None:
            on_failure(failure)
        if not continue_on_error:
            outcome.skipped = len(entries) - index - 1
            break
    outcome.ids = dict(ids.ids)
    return outcome


def _failure(entry: Entry, message: str, exit_code: int) -> dict[str, Any]:
    # A failure repeats what the server or the core said, which may quote the entry.
    return {
        "line": entry.line,
        "method": entry.method,
        "path": mask_text(entry.path),
        "error": mask_text(message),
        "exitCode": exit_code,
    }


def caller_for(identity: dict[str, Any] | None) -> tuple[Caller, str | None]:
    """The local Caller (and Group B company) of a recorded identity; full rights when unknown."""
    if not identity:
        return Caller.local(), None
    organization_id = identity.get("organizationId")
    if identity.get("apiKeyId") is not None or "companyId" in identity:
        return Caller(user_id=None, organization_id=organization_id, role="member"), identity.get("companyId")
    recorded = identity.get("role")
    role = cast(Role, recorded) if recorded in ROLES else "member"
    return Caller(user_id=identity.get("userId"), organization_id=organization_id, role=role), None


def run_local(op: Operation, params: dict[str, str], query: dict[str, str], body: Any, entry: Entry) -> Any:
    """Replay one entry in process (the database is already open)."""
    caller, company_id = caller_for(entry.identity)
    if op.write:
        caller.require_write()
    return operations.call_local(op.name, caller, params, query, body, company_id=company_id)


def remote_runner(backend: RemoteBackend) -> Runner:
    """Replay entries as HTTP requests through ``backend`` (its retries and error mapping)."""
    from sowctl.backends.remote import group_b_headers

    def run(op: Operation, params: dict[str, str], query: dict[str, str], body: Any, entry: Entry) -> Any:
        if op.group.uses_api_key:
            identity = entry.identity or {}
            settings = backend.settings
            key = settings.api_key
            if not key:
                raise Unauthorized("remote mode needs --api-key (or SOWCTL_API_KEY) for Group B requests")
            org = settings.org or identity.get("organizationId")
            company = settings.company or identity.get("companyId")
            if not org or not company:
                raise UsageError(f"{entry.describe()}: needs --org and --company (not in the record)")
            headers = group_b_headers(op, key, org, company)
        else:
            headers = backend.auth_headers(op)
        response = backend.request(op, backend.url_for(op, params), query, body, headers=headers)
        if not response.content:
            return None
        try:
            return response.json()
        except ValueError:
            return None

    return run
