"""One answer judged against the service's description: each way it departs, as a ``Difference``.

The description (``sowctl.conformance.description``) says, per route and method, which
statuses the service answers and the JSON body of each: its shape (required fields, no
other field), types, formats, and for a refusal the group's error envelope. The schemas
are JSON Schema 2020-12, checked by ``jsonschema``: an optional dependency
(``pip install 'sowctl[conformance]'``), which the command asks for by name when it is missing.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass
from typing import Any

import jsonschema

from sowctl.conformance import description

DOCUMENT = description.document()
COMPONENTS = DOCUMENT["components"]

# What a difference is about, in the order reports list them.
KINDS = ("status", "headers", "envelope", "shape", "type", "format", "pagination", "comparison")
_KIND_OF_KEYWORD = {
    "required": "shape",
    "additionalProperties": "shape",
    "minItems": "shape",
    "maxItems": "shape",
    "type": "type",
    "enum": "type",
    "const": "type",
    "anyOf": "type",
    "oneOf": "type",
    "format": "format",
    "pattern": "format",
}
_MAX_ERRORS_PER_ANSWER = 20


@dataclass(frozen=True)
class Difference:
    """One way an answer departs from the description (or, for ``comparison``, from the other server's)."""

    step: str  # the scenario's name for the request
    method: str
    path: str  # the path as sent, query included
    route: str  # the description's path template
    kind: str
    where: str  # the field (a/b/0/c), header, or "status"
    detail: str

    def as_dict(self) -> dict[str, str]:
        return {
            "step": self.step,
            "method": self.method,
            "path": self.path,
            "route": self.route,
            "kind": self.kind,
            "where": self.where,
            "detail": self.detail,
        }


def _template_regex(template: str) -> re.Pattern:
    pattern = re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(template))
    return re.compile(f"^{pattern}$")


# Literal paths first, so /api/dependencies/chain never matches /api/dependencies/{id}.
ROUTES = sorted(
    ((_template_regex(path), path, item) for path, item in DOCUMENT["paths"].items()),
    key=lambda route: route[1].count("{"),
)


def route_of(path: str) -> tuple[str, dict] | None:
    """The description's template and path item for a concrete path (None: not one of its routes)."""
    return next(((template, item) for regex, template, item in ROUTES if regex.match(path)), None)


def group_of(path: str) -> str | None:
    if path in ("/projects", "/clients") or path.startswith(("/projects/", "/clients/")):
        return "C"
    if path == "/api/external" or path.startswith("/api/external/"):
        return "B"
    if path == "/api" or path.startswith("/api/"):
        return "A"
    return None


_VALIDATORS: dict[str, Any] = {}
_lock = threading.Lock()


def validator(schema: dict) -> Any:
    """A cached Draft 2020-12 validator of ``schema`` (its ``$ref``s resolve in the description)."""
    key = json.dumps(schema, sort_keys=True)
    with _lock:
        found = _VALIDATORS.get(key)
        if found is None:
            found = jsonschema.Draft202012Validator(
                {**schema, "components": COMPONENTS}, format_checker=jsonschema.FormatChecker()
            )
            _VALIDATORS[key] = found
    return found


def schema_errors(schema: dict, data: Any) -> list[tuple[str, str, str]]:
    """(field, keyword, message) of each way ``data`` breaks ``schema``, fields in order.

    A missing or unexpected field is named itself, not the object that lacks or has it."""
    found: list[tuple[str, str, str]] = []
    for error in validator(schema).iter_errors(data):
        parent = [str(part) for part in error.absolute_path]
        keyword, message = str(error.validator), error.message[:300]
        instance = error.instance if isinstance(error.instance, dict) else {}
        if keyword == "required":
            names = [name for name in error.validator_value if name not in instance]
        elif keyword == "additionalProperties":
            names = sorted(set(instance) - set(error.schema.get("properties", {})))
        else:
            names = []
        for name in names or [None]:
            where = "/".join(parent + ([name] if name else [])) or "(root)"
            found.append((where, keyword, message if len(names) < 2 else _one_field(keyword, name)))
    found.sort(key=lambda error: error[0])
    return found[:_MAX_ERRORS_PER_ANSWER]


def _one_field(keyword: str, name: str | None) -> str:
    return f"{name!r} is a required property" if keyword == "required" else f"{name!r} was unexpected"


def response_schema(route: dict, method: str, status: int) -> dict | None:
    """The body schema the description gives ``method`` on ``route`` for ``status`` (None: not listed)."""
    listed = route.get(method.lower(), {}).get("responses", {}).get(str(status))
    if listed is None:
        return None
    return listed["content"]["application/json"]["schema"]


@dataclass(frozen=True)
class Answer:
    """What a server answered one request of the scenario."""

    status: int
    headers: dict[str, str]  # lower-case names
    body: bytes

    def json(self) -> Any:
        try:
            return json.loads(self.body)
        except (ValueError, RecursionError):
            return None


def differences(step: str, method: str, path: str, expected: int, answer: Answer) -> list[Difference]:
    """Every way ``answer`` departs from what the description promises for this request."""
    bare_path = path.split("?", 1)[0]
    found_route = route_of(bare_path)
    if found_route is None:
        raise ValueError(f"{bare_path} is not a route of the description")
    template, route = found_route

    def diff(kind: str, where: str, detail: str) -> Difference:
        return Difference(step, method, path, template, kind, where, detail)

    found: list[Difference] = []
    schema = response_schema(route, method, answer.status)
    if answer.status != expected:
        listed = "" if schema is not None else " (a status the description does not list for it)"
        found.append(diff("status", "status", f"expected {expected}, got {answer.status}{listed}"))
    if schema is None:
        return found
    content_type = answer.headers.get("content-type", "")
    if not content_type.startswith("application/json"):
        return [*found, diff("headers", "content-type", f"expected application/json, got {content_type!r}")]
    data = answer.json()
    if data is None and answer.body.strip() != b"null":
        return [*found, diff("shape", "(root)", f"body is not JSON: {answer.body[:120]!r}")]
    refusal = answer.status >= 400
    for where, keyword, message in schema_errors(schema, data):
        kind = "envelope" if refusal else _KIND_OF_KEYWORD.get(keyword, "shape")
        found.append(diff(kind, where, message))
    return found
