"""The API, declared once: every operation with its route, models and handler.

The Bottle server builds its routes and the OpenAPI document from this
registry, the local backend calls the handlers directly, and the remote backend
turns the same declarations into HTTP requests. So an operation validates its
input and shapes its output identically whichever way it is reached.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from sowctl.foundation.errors import NotFound
from sowctl.operations.groups import Group, as_group
from sowctl.schemas.common import escape_unstorable, has_unstorable, parse
from sowctl.schemas.lazy import materialize

if TYPE_CHECKING:
    from sowctl.services.access import Caller

# Operation name prefix -> the module (or modules) that register it, so a CLI command imports
# only its own. Group B's operations keep their public prefix "finance" across three resources.
MODULES: dict[str, str | tuple[str, ...]] = {
    "items": "sowctl.operations.items",
    "sows": "sowctl.operations.sows",
    "chain": "sowctl.operations.chain",  # before deps: the registry's order is the MCP tools' order
    "deps": "sowctl.operations.dependencies",
    "finance": (
        "sowctl.operations.budgets",
        "sowctl.operations.contracts",
        "sowctl.operations.purchase_orders",
    ),
    "events": "sowctl.operations.events",
    "projects": "sowctl.operations.projects",
    "clients": "sowctl.operations.clients",
}


class LazyModule:
    """A module imported on first use. Operation modules reach their services through
    one, so that remote mode, which only reads the declarations, never imports the
    services, the models and Peewee behind them."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._module: Any = None

    def __getattr__(self, attribute: str) -> Any:
        if self._module is None:  # every request reaches its service through here: import once
            self._module = importlib.import_module(self._name)
        return getattr(self._module, attribute)


@dataclass
class Request:
    """What a handler gets: who calls, path parameters, validated query and body."""

    caller: Caller
    params: dict[str, str] = field(default_factory=dict)
    query: Any = None  # an instance of Operation.query, or None
    raw_query: dict[str, str] = field(default_factory=dict)
    body: Any = None  # an instance of Operation.body, or None
    offset: int = 0
    limit: int | None = None  # None: every record (local mode, or unpaged routes)
    # True in local mode: lists return every record unless the query itself limits them
    # (Group C's limit/offset are query parameters, so its handlers look at this).
    unpaged: bool = False
    # Group B: the company named in the request headers (None in local mode: any).
    company_id: str | None = None


@dataclass
class Result:
    """A handler's answer: the JSON body and, for paginated lists, the total count."""

    body: Any
    total: int | None = None


# What an Operation.token_read answers: the caller its token names, and the handler's Result.
TokenAnswer = tuple["Caller", Result]


@dataclass
class Operation:
    name: str
    method: str
    path: str  # OpenAPI style: /api/sow/{sowId}/items
    group: Group
    handler: Callable[[Request], Result]
    summary: str
    query: type[BaseModel] | None = None
    body: type[BaseModel] | None = None
    response: Any = None  # a type Pydantic can build a JSON schema for
    status: int = 200
    paginated: bool = False  # a list paged by page+limit (Paging.PAGE_LIMIT), X-Total-Count
    list_key: str | None = None  # a list paged by limit/offset: the body key of its records
    write: bool = False
    # An answer whose size the caller chooses: a whole-SOW report, whose body grows with the
    # SOW's data times the titles it repeats, or a page of purchase orders of up to 1,000 lines
    # each (its orders a ``schemas.lazy.LazyArray``, made as they are written). The server
    # streams its body and bounds how many run at once (ServerSettings.report_slots).
    report: bool = False
    # Extension routes are ours, not the service's; documented as such in OpenAPI.
    extension: bool = False
    # An answer of Server-Sent Events (text/event-stream) that follows new events: the handler
    # returns the stream's filters and the server makes the stream (``server.event_stream``),
    # bounded in time and in how many are open. No CLI call or MCP tool runs it.
    stream: bool = False
    # Answers other than ``status`` that carry a body of their own model (status -> model):
    # the test double's verification answers 409 with its report.
    answers: dict[int, Any] = field(default_factory=dict)
    # A larger body than the server's default limit, for the admin token only (a dataset upload).
    max_body_bytes: int | None = None
    # "query", "body": parts whose declared model describes input that the handler checks by
    # rules of its own (a dataset's records, a fault config, a request pattern), as sent.
    checked_by_handler: tuple[str, ...] = ()
    # The handler's answer with the bearer token authenticated in the same statement as the
    # read (``services.token_reads``): given the token's secret and the path parameters, the
    # caller and the Result ``handler`` would give that caller; Unauthorized for the token,
    # as authentication words it. The server takes it instead of authenticating and then
    # running ``handler`` when nothing checked in between would refuse the request (see
    # ``token_read_applies``), so an operation declaring it takes no query, body or paging.
    token_read: Callable[[str, dict[str, str]], TokenAnswer] | None = None
    # The handler's answer before it is made JSON (a record, not a body), for a client in
    # process, and the same record read back from a body, for a client of a server: the
    # chain's report, which the CI gate reads (``Backend.call_typed``).
    typed: Callable[[Request], Any] | None = None
    read_back: Callable[[Any], Any] | None = None

    def __post_init__(self) -> None:
        self.group = as_group(self.group)  # a letter names its group
        if self.token_read is not None and (
            self.write or self.paginated or self.report or self.query is not None or self.body is not None
        ):
            raise ValueError(f"{self.name}: a token read takes no query, body or paging and writes nothing")

    @property
    def path_params(self) -> list[str]:
        return [part[1:-1] for part in self.path.split("/") if part.startswith("{")]

    def run(self, request: Request) -> Result:
        """Run the handler; a write runs again when the database aborted its transaction
        with a serialization failure (SQLSTATE 40001, as CockroachDB requires clients to
        handle). The server and the local backend both run operations through here."""
        if not self.write:
            return self.handler(request)
        from sowctl.storage.database import retry_serialization_failures

        return retry_serialization_failures(lambda: self.handler(request))


REGISTRY: dict[str, Operation] = {}


def operation(**spec: Any) -> Callable[[Callable[[Request], Result]], Callable]:
    """Register the decorated handler as the operation described by ``spec``."""

    def register(handler: Callable[[Request], Result]) -> Callable[[Request], Result]:
        op = Operation(handler=handler, **spec)
        REGISTRY[op.name] = op
        return handler

    return register


def _modules(prefix: str) -> tuple[str, ...]:
    found = MODULES[prefix]
    return (found,) if isinstance(found, str) else found


def get(name: str) -> Operation:
    if name not in REGISTRY:
        for module in _modules(name.split(".", 1)[0]):
            importlib.import_module(module)
    return REGISTRY[name]


def load_all() -> dict[str, Operation]:
    for module in dict.fromkeys(module for prefix in MODULES for module in _modules(prefix)):
        importlib.import_module(module)  # a missing module would silently shrink the API: fail instead
    return REGISTRY


def token_read_applies(op: Operation, params: dict[str, str]) -> bool:
    """Whether ``op.token_read`` may answer a request with these path parameters: the
    operation declares one, and ``build_request`` would take them (otherwise the request
    goes the ordinary way, and is refused after its authentication, as always)."""
    return op.token_read is not None and not any(
        isinstance(value, str) and has_unstorable(value) for value in params.values()
    )


def build_request(
    op: Operation,
    caller: Caller,
    params: dict[str, str] | None = None,
    query: dict[str, str] | None = None,
    body: Any = None,
    **extra: Any,
) -> Request:
    """Validate query and body exactly as the server does, into a handler Request."""
    for name, value in (params or {}).items():
        if isinstance(value, str) and has_unstorable(value):  # no record can have such an id
            raise NotFound(f"{name} {escape_unstorable(value)} not found")
    raw_query = {key: value for key, value in (query or {}).items() if value is not None}
    parsed_query = parse(op.query, raw_query) if op.query is not None else None
    if op.body is not None and caller.organization_id is not None and isinstance(body, dict):
        body = _without_full_rights_fields(op.body, body)
    parsed_body = parse(op.body, body) if op.body is not None else None
    return Request(
        caller=caller,
        params=params or {},
        query=parsed_query,
        raw_query=raw_query,
        body=parsed_body,
        **extra,
    )


def _without_full_rights_fields(model: type[BaseModel], body: dict[str, Any]) -> dict[str, Any]:
    """``body`` without the fields only a full-rights (local mode) caller may set. A client
    of the service sends what it read back (an item's ``id``) and the service ignores what
    it does not take, so a scoped caller's value is dropped before validation, whatever
    its type, rather than refused."""
    dropped: frozenset[str] = getattr(model, "full_rights_only", frozenset())
    if not dropped or not dropped & body.keys():
        return body
    return {key: value for key, value in body.items() if key not in dropped}


def call_local(
    name: str,
    caller: Caller,
    params: dict[str, str] | None = None,
    query: dict[str, str] | None = None,
    body: Any = None,
    **extra: Any,
) -> Any:
    """Run an operation in process, unpaged, and return its JSON body (lazy arrays made lists)."""
    op = get(name)
    missing = [p for p in op.path_params if not (params or {}).get(p)]
    if missing:
        raise NotFound(f"missing path parameter {missing[0]}")
    request = build_request(op, caller, params, query, body, unpaged=True, **extra)
    return materialize(op.run(request).body)


def call_local_typed(
    name: str,
    caller: Caller,
    params: dict[str, str] | None = None,
    query: dict[str, str] | None = None,
    **extra: Any,
) -> Any:
    """Run an operation that declares ``typed`` in process: its answer before it is made JSON."""
    op = get(name)
    if op.typed is None:
        raise ValueError(f"{name} declares no typed answer")
    return op.typed(build_request(op, caller, params, query, unpaged=True, **extra))
