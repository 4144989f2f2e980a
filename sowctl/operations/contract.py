"""Where a request relies on more than the service's published description: contract mode.

``sowctl serve`` offers what the real service may not (its own routes, parameters and values)
and accepts some requests the description would not promise to accept. A client built against
sowctl can come to rely on them and break against the real service. ``DEPARTURES`` is the one
table of them (the docs print it); ``marks`` names the ones a request relies on.

Three kinds:

* **extension**: sowctl offers something the description does not (a route, a parameter, a value);
* **leniency**: sowctl accepts what the description does not promise to accept;
* **unspecified**: the description accepts the request but does not say what the answer holds,
  so the client relies on sowctl's choice. Strict mode refuses extensions and leniencies only.

The response side (``X-Total-Count``, ``Link``, ``X-RateLimit-*``, ``X-Error-Code``,
``X-Request-Id``) is in the table too, with no mark: a request cannot show that its client reads
a header.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from sowctl.foundation.budgets import MAX_MARK_DETAIL_CHARS, MAX_MARKS_PER_DEPARTURE
from sowctl.foundation.errors import clipped
from sowctl.operations import Operation

EXTENSION, LENIENCY, UNSPECIFIED = "extension", "leniency", "unspecified"
REFUSED_IN_STRICT_MODE = frozenset({EXTENSION, LENIENCY})


@dataclass(frozen=True)
class Departure:
    code: str
    kind: str
    what: str  # what sowctl does
    described: str  # what the service's description says, in its own words where it has them
    marked: bool = True  # False: a response feature, which no request shows a client relies on


@dataclass(frozen=True)
class Mark:
    code: str
    kind: str
    detail: str  # this request's instance: the route, parameter, field or header

    def as_dict(self) -> dict[str, str]:
        return {"code": self.code, "kind": self.kind, "detail": self.detail}


DEPARTURES: tuple[Departure, ...] = (
    Departure(
        "route.extension",
        EXTENSION,
        "SOW routes (/api/sows...), the purchase-order list and options routes, and the changes "
        "feed (/api/events and its event stream /api/events/stream)",
        "Endpoints for SOWs and tests: not shown. Group B: a purchase-order creation endpoint and "
        "read-only budget view, budget view snapshot and prime contract endpoints.",
    ),
    Departure(
        "query.extension",
        EXTENSION,
        "query parameters of sowctl's own: include= on the dependency chain",
        "Chain: query parameters sowId (string, required) and format (string, tree or flat).",
    ),
    Departure(
        "query.unknown",
        LENIENCY,
        "a query parameter the route does not take is ignored",
        "Each route lists its query parameters; others: not shown.",
    ),
    Departure(
        "query.limit_clamped",
        LENIENCY,
        "a limit above 100 is served as 100",
        "Pagination query parameter limit: default 20, maximum 100.",
    ),
    Departure(
        "body.extension",
        EXTENSION,
        "body fields of sowctl's own: an item's id chosen by the client on create",
        "Item create body: title, description, type, parentItemId, orderIndex.",
    ),
    Departure(
        "body.unknown",
        LENIENCY,
        "a body field the route does not take is ignored",
        "Each body lists its fields; others: not shown.",
    ),
    Departure(
        "value.cleared_date",
        EXTENSION,
        'slaDate or escalationDate given as "" or null clears the date',
        "slaDate, escalationDate: date (calendar date, ISO 8601, shape YYYY-MM-DD).",
    ),
    Departure(
        "header.scope_spelling",
        LENIENCY,
        "either spelling of the organization and company headers on every Group B route",
        "x-organization-id and x-company-id; for the purchase-order endpoint the organization and "
        "company headers are named organization-id and company-id (without the x- prefix).",
    ),
    Departure(
        "header.content_type",
        LENIENCY,
        "a body sent without Content-Type, or as another +json type, is read as JSON",
        "POST /api/external/create-purchase-order: body as section 2.3, JSON content type.",
    ),
    Departure(
        "answer.tree_shape",
        UNSPECIFIED,
        "format=tree nests each item's dependencies under it (sowctl's shape)",
        "The response shape for format=tree: not shown.",
    ),
    Departure(
        "answer.filter_rules",
        UNSPECIFIED,
        "type=critical and type=overdue select by sowctl's rules (critical risk, or an SLA date "
        "passed, on an active or blocked dependency)",
        "The exact selection criteria behind type=critical and type=overdue: not shown.",
    ),
    Departure(
        "response.headers",
        EXTENSION,
        "X-Total-Count and Link on Group A lists; X-RateLimit-* on every Group B answer; "
        "X-Error-Code, X-Error-Issues and X-Request-Id on answers",
        "The sample list responses of Group A and Group B show no pagination envelope.",
        marked=False,
    ),
)
BY_CODE = {departure.code: departure for departure in DEPARTURES}

# The query parameters the description gives each route (paged lists: page and limit too).
DESCRIBED_QUERY: dict[str, frozenset[str]] = {
    "chain.get": frozenset({"sowId", "format"}),
    "deps.list": frozenset({"itemId", "sowId", "type", "status", "page", "limit"}),
    "items.list": frozenset({"type", "parentId", "page", "limit"}),
    "projects.list": frozenset({"status", "clientId", "limit", "offset"}),
    "clients.list": frozenset({"limit", "offset"}),
    "finance.budget_views": frozenset({"project_id"}),
    "finance.snapshots": frozenset({"project_id"}),
    "finance.snapshot": frozenset({"project_id", "snapshot_id"}),
    "finance.prime_contract": frozenset({"project_id", "prime_contract_id"}),
}
# Body fields sowctl takes beyond the description's.
EXTENSION_BODY_FIELDS: dict[str, frozenset[str]] = {"items.create": frozenset({"id"})}
DATE_FIELDS = ("slaDate", "escalationDate")
PAGE_LIMIT = 100


@dataclass(frozen=True)
class Request:
    """What contract mode reads of a request: its operation and what it sent."""

    operation: Operation | None
    method: str
    path: str
    query: Mapping[str, str]
    body: Any  # the parsed JSON body; None when there is none
    headers: Mapping[str, str]  # names in lower case
    content_type: str = ""


def marks(request: Request) -> list[Mark]:
    """Every departure ``request`` relies on, in the table's order."""
    op = request.operation
    if op is None:  # no route: 404 here as against the service
        return []
    found: list[Mark] = []
    for check in _CHECKS:
        found.extend(check(request, op))
    order = {departure.code: index for index, departure in enumerate(DEPARTURES)}
    kept: list[Mark] = []
    per_code: dict[str, int] = {}
    for mark in sorted(found, key=lambda mark: order[mark.code]):
        per_code[mark.code] = per_code.get(mark.code, 0) + 1
        if per_code[mark.code] <= MAX_MARKS_PER_DEPARTURE:
            kept.append(mark)
    return kept


def refused_in_strict_mode(found: list[Mark]) -> list[Mark]:
    return [mark for mark in found if mark.kind in REFUSED_IN_STRICT_MODE]


def _mark(code: str, detail: str) -> Mark:
    return Mark(code, BY_CODE[code].kind, clipped(detail, MAX_MARK_DETAIL_CHARS))


def _route(request: Request, op: Operation) -> list[Mark]:
    return [_mark("route.extension", f"{op.method} {op.path}")] if op.extension else []


def _query(request: Request, op: Operation) -> list[Mark]:
    if op.extension:
        return []  # the route itself is marked
    described = DESCRIBED_QUERY.get(op.name, frozenset())
    taken = _query_names(op)
    out = []
    for name in request.query:
        if name in described:
            continue
        code = "query.extension" if name in taken else "query.unknown"
        out.append(_mark(code, f"query parameter {name}"))
    limit = request.query.get("limit", "")
    if "limit" in described and limit.isdigit() and int(limit) > PAGE_LIMIT:
        out.append(_mark("query.limit_clamped", f"limit={limit}"))
    return out


def _query_names(op: Operation) -> set[str]:
    if op.query is None:
        return set()
    return {field.alias or name for name, field in op.query.model_fields.items()}


def _body(request: Request, op: Operation) -> list[Mark]:
    if op.body is None or op.extension or not isinstance(request.body, dict):
        return []
    taken = {field.alias or name for name, field in op.body.model_fields.items()}
    ours = EXTENSION_BODY_FIELDS.get(op.name, frozenset())
    out = []
    for name in request.body:
        if name in ours:
            out.append(_mark("body.extension", f"body field {name}"))
        elif name not in taken:
            out.append(_mark("body.unknown", f"body field {name}"))
    for name in DATE_FIELDS:
        if name in request.body and request.body[name] in ("", None):
            shown = '""' if request.body[name] == "" else "null"
            out.append(_mark("value.cleared_date", f"{name}: {shown}"))
    return out


def _headers(request: Request, op: Operation) -> list[Mark]:
    out = []
    if op.group.uses_api_key:
        spelled = [name for name in op.group.other_scope_headers(op.path) if name in request.headers]
        out += [_mark("header.scope_spelling", f"header {name}") for name in spelled]
    if request.body is not None and request.content_type != "application/json":
        sent = request.content_type or "no Content-Type"
        out.append(_mark("header.content_type", f"body sent with {sent}"))
    return out


def _answer(request: Request, op: Operation) -> list[Mark]:
    out = []
    if op.name == "chain.get" and request.query.get("format") == "tree":
        out.append(_mark("answer.tree_shape", "format=tree"))
    if op.name == "deps.list" and request.query.get("type") in ("critical", "overdue"):
        out.append(_mark("answer.filter_rules", f"type={request.query['type']}"))
    return out


_CHECKS: tuple[Callable[[Request, Operation], list[Mark]], ...] = (_route, _query, _body, _headers, _answer)
