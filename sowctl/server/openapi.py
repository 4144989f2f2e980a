"""The OpenAPI 3.1 document, generated from the operation registry and its Pydantic models."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from pydantic import TypeAdapter

from sowctl.foundation.errors import ERROR_CODE_HEADER, ERROR_CODES, ERROR_ISSUES_HEADER, MAX_ISSUES_HEADER
from sowctl.foundation.version import VERSION
from sowctl.operations import Operation
from sowctl.operations.admin import TAG as ADMIN_TAG
from sowctl.operations.groups import API_KEY_HEADER, Authentication, Envelope, Group
from sowctl.server import event_stream
from sowctl.server.configuration import ServerSettings
from sowctl.server.envelopes import GROUP_C_MESSAGES

REF = "#/components/schemas/{model}"
# The paging limits the document states: the server's defaults.
PAGING = ServerSettings()

ERROR_SCHEMAS: dict[str, dict] = {
    "ErrorA": {
        "type": "object",
        "description": "Error body of Groups A and B.",
        "properties": {"error": {"type": "string", "description": "What went wrong, naming the field."}},
        "required": ["error"],
    },
    "ErrorC": {
        "type": "object",
        "description": "Error body of Group C.",
        "properties": {
            "code": {
                "type": "string",
                "enum": list(GROUP_C_MESSAGES),
            },
            "message": {"type": "string", "description": "The fixed text of the code."},
            "issues": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "path": {"type": "array", "items": {"type": ["string", "integer"]}},
                        "message": {"type": "string"},
                    },
                    "required": ["path", "message"],
                },
            },
        },
        "required": ["code", "message", "issues"],
    },
}

ERROR_DESCRIPTIONS = {
    400: "Invalid input: malformed JSON, a wrong type or value, or a missing field (named in the error)",
    401: "Missing, invalid or revoked credentials",
    403: "Insufficient permissions (a viewer token writing)",
    404: "Not found, or not visible to the caller's organization",
    413: "Request body larger than 1 MiB",
    429: "Rate limit exceeded (see Retry-After)",
    500: "Unexpected server error (no details in the body)",
    503: "Database busy or unavailable; retry later",
}

ADMIN_SCHEME = "adminToken"
SECURITY_SCHEMES = {
    Authentication.BEARER_TOKEN: "bearerAuth",
    Authentication.API_KEY: "apiKey",
    Authentication.ADMIN_TOKEN: ADMIN_SCHEME,
}
ADMIN_DESCRIPTION = (
    "The test double's /_admin API (sowctl serve --admin-token): reset, datasets, credentials, "
    "faults, clock, request log and verification, checkpoints. Not part of the service's API."
)
# Answers other than success and errors, by status (an operation's ``answers``).
ANSWER_DESCRIPTIONS = {409: "The expectation does not hold: the closest requests and what differed"}

RATE_HEADERS = {
    "X-RateLimit-Limit": "Requests allowed in the current window",
    "X-RateLimit-Remaining": "Requests left in the current window",
    "X-RateLimit-Reset": "When the current window ends (epoch seconds)",
}


def build_openapi(registry: Iterable[Operation], admin: Iterable[Operation] = ()) -> dict[str, Any]:
    """An OpenAPI 3.1 document for every operation of ``registry``, plus health and docs;
    ``admin``: the test double's admin operations (``sowctl.operations.admin``), under their
    own tag and the admin token's security scheme."""
    api = sorted(registry, key=lambda op: (op.path, op.method))
    admin = sorted(admin, key=lambda op: (op.path, op.method))
    ops = [*api, *admin]
    inputs: list[tuple[Any, Any, TypeAdapter]] = []
    for op in ops:
        if op.query is not None:
            inputs.append(((op.name, "query"), "validation", TypeAdapter(op.query)))
        if op.body is not None:
            inputs.append(((op.name, "body"), "validation", TypeAdapter(op.body)))
        if op.response is not None:
            inputs.append(((op.name, "response"), "serialization", TypeAdapter(op.response)))
        for status, model in op.answers.items():
            inputs.append(((op.name, status), "serialization", TypeAdapter(model)))
    schemas, definitions = TypeAdapter.json_schemas(inputs, ref_template=REF) if inputs else ({}, {})
    components: dict[str, Any] = dict(definitions.get("$defs", {}))

    paths: dict[str, dict[str, Any]] = {}
    query_components: set[str] = set()
    for op in ops:
        query_schema = schemas.get(((op.name, "query"), "validation"))
        if query_schema is not None:
            query_components.add(_ref_name(query_schema))
        paths.setdefault(op.path, {})[op.method.lower()] = _operation(op, schemas, components)
    _drop_unreferenced(components, query_components, paths)
    components.update(ERROR_SCHEMAS)
    _user_text(components)
    _user_text(paths)

    paths.update(_server_pages())
    document: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {
            "title": "Project Delivery Service (sowctl)",
            "version": VERSION,
            "description": "Groups A (work tracking), B (external financial API) and C (listings). "
            "Operations marked x-sowctl-extension are sowctl's own additions.",
        },
        "tags": [
            {"name": name, "description": description}
            for name, description in sorted({_tag(op): op.group.description for op in api}.items())
        ]
        + [{"name": "server", "description": "Health, readiness, metrics and documentation"}],
        "paths": dict(sorted(paths.items())),
        "components": {
            "schemas": dict(sorted(components.items())),
            "securitySchemes": dict(_SECURITY_SCHEMES),
        },
    }
    if admin:
        document["tags"].append({"name": ADMIN_TAG, "description": ADMIN_DESCRIPTION})
        document["components"]["securitySchemes"][ADMIN_SCHEME] = {
            "type": "http",
            "scheme": "bearer",
            "description": "The admin token of `sowctl serve --admin-token TOKEN` (or `--admin`'s)",
        }
    return document


# Docstrings are written for developers (reStructuredText, notes on internal documents);
# what /openapi.json and /docs show is for API users: Markdown, no internal references.
_RST_LITERAL = re.compile(r"``(.+?)``", re.DOTALL)
_INTERNAL_REFERENCE = re.compile(r"\s*\((?:spec|contract)\b[^)]*\)|\s*\bas the (?:spec|contract) shows\b")

_SECURITY_SCHEMES = {
    "bearerAuth": {
        "type": "http",
        "scheme": "bearer",
        "description": "A token from `sowctl tokens create` (Groups A and C)",
    },
    "apiKey": {
        "type": "apiKey",
        "in": "header",
        "name": API_KEY_HEADER,
        "description": "A key from `sowctl keys create` (Group B)",
    },
}


def _server_pages() -> dict[str, dict[str, Any]]:
    """The server's own pages: health, readiness, metrics and this document."""
    pages: dict[str, dict[str, Any]] = {}
    status_ok = {"type": "object", "properties": {"status": {"const": "ok"}}, "required": ["status"]}
    status_unavailable = {"type": "object", "properties": {"status": {"const": "unavailable"}}}
    pages["/healthz"] = _server_page(
        "healthz",
        "Liveness (no authentication): the server answers; the database is not asked",
        {"200": _json_response("The server answers", status_ok)},
    )
    pages["/readyz"] = _server_page(
        "readyz",
        "Readiness (no authentication): the database answers, can be written, and holds the "
        "schema this server needs",
        {
            "200": _json_response("Ready to serve", status_ok),
            "503": _json_response("Not ready (Retry-After says when to ask again)", status_unavailable),
        },
    )
    pages["/metrics"] = _server_page(
        "metrics",
        "Prometheus metrics (no authentication): counts and latencies by route template, no ids",
        {
            "200": {
                "description": "The Prometheus text format",
                "content": {"text/plain": {"schema": {"type": "string"}}},
            }
        },
    )
    pages["/openapi.json"] = {
        "get": {
            "operationId": "openapi",
            "summary": "This OpenAPI document (no authentication)",
            "tags": ["server"],
            "security": [],
            "x-sowctl-extension": True,
            "responses": {"200": _json_response("The OpenAPI 3.1 document", {"type": "object"})},
        }
    }
    return pages


def user_text(text: str) -> str:
    """A description as an API user reads it: Markdown code spans, no spec/contract notes."""
    return _RST_LITERAL.sub(r"`\1`", _INTERNAL_REFERENCE.sub("", text))


def _user_text(node: Any) -> None:
    """Rewrite every ``description`` and ``summary`` under ``node`` in place."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("description", "summary") and isinstance(value, str):
                node[key] = user_text(value)
            else:
                _user_text(value)
    elif isinstance(node, list):
        for value in node:
            _user_text(value)


def _paging_parameters() -> list[dict[str, Any]]:
    return [
        {
            "name": "page",
            "in": "query",
            "required": False,
            "description": "Page number, from 1",
            "schema": {"type": "integer", "minimum": 1, "maximum": PAGING.max_page, "default": 1},
        },
        {
            "name": "limit",
            "in": "query",
            "required": False,
            # No "maximum": larger values are accepted and clamped.
            "description": f"Page size; larger values are clamped to {PAGING.max_limit}",
            "schema": {"type": "integer", "minimum": 1, "default": PAGING.default_limit},
        },
    ]


def _error_responses(op: Operation) -> dict[str, Any]:
    """The error answers ``op`` may give, by status, with the headers that come with them."""
    error_model = "ErrorC" if op.group.envelope is Envelope.CODE_MESSAGE_ISSUES else "ErrorA"
    error_schema = {"$ref": REF.format(model=error_model)}
    responses: dict[str, Any] = {}
    for status in _error_statuses(op):
        response = _json_response(_error_description(op, status), error_schema)
        error_headers: dict[str, Any] = {}
        if op.group.rate_limited:
            error_headers = {
                name: {"description": text, "schema": {"type": "integer"}}
                for name, text in RATE_HEADERS.items()
            }
        if status in (429, 503):
            error_headers["Retry-After"] = {
                "description": "Seconds to wait before retrying",
                "schema": {"type": "integer"},
            }
        error_headers.update(_error_detail_headers(op, status))
        response["headers"] = error_headers
        responses[str(status)] = response
    return responses


def _operation(op: Operation, schemas: dict, components: dict) -> dict[str, Any]:
    parameters = [
        {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
        for name in op.path_params
    ]
    parameters += _query_parameters(schemas.get(((op.name, "query"), "validation")), components)
    if op.paginated:
        parameters += _paging_parameters()
    if op.group.uses_api_key:
        parameters += _scope_headers(op.group, op.path)

    success_schema = schemas.get(((op.name, "response"), "serialization"), {})
    success: dict[str, Any] = _json_response(_success_description(op), success_schema)
    if op.stream:  # each message of the stream: its data is the declared response, as JSON text
        success = {
            "description": event_stream.DESCRIPTION,
            "content": {"text/event-stream": {"schema": event_stream.message_schema(success_schema)}},
        }
    headers: dict[str, Any] = {}
    if op.paginated:
        headers["X-Total-Count"] = {
            "description": "Number of records of the whole list",
            "schema": {"type": "integer"},
        }
        headers["Link"] = {
            "description": 'RFC 8288 links to the rel="next", "prev", "first" and "last" pages',
            "schema": {"type": "string"},
        }
    if op.group.rate_limited:
        headers.update(
            {
                name: {"description": text, "schema": {"type": "integer"}}
                for name, text in RATE_HEADERS.items()
            }
        )
    if headers:
        success["headers"] = headers

    responses: dict[str, Any] = {str(op.status): success, **_error_responses(op)}
    for status, _model in sorted(op.answers.items()):
        answer = _json_response(ANSWER_DESCRIPTIONS[status], schemas[((op.name, status), "serialization")])
        responses[str(status)] = answer
    responses = dict(sorted(responses.items()))

    spec: dict[str, Any] = {
        "operationId": op.name,
        "summary": op.summary,
        "tags": [_tag(op)],
        "security": [{SECURITY_SCHEMES[op.group.authentication]: []}],
        "parameters": parameters,
        "responses": responses,
    }
    if not parameters:
        del spec["parameters"]
    body_schema = schemas.get(((op.name, "body"), "validation"))
    if body_schema is not None:
        spec["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": body_schema}},
        }
    if op.extension:
        spec["x-sowctl-extension"] = True
    return spec


def _error_detail_headers(op: Operation, status: int) -> dict[str, Any]:
    """sowctl's own headers on a refusal: its stable code, and (Groups A and B, whose envelope
    holds a message only) the issues by field. A client of the real service must not rely on
    them: marked as an extension."""
    headers: dict[str, Any] = {
        ERROR_CODE_HEADER: {
            "description": "sowctl extension: the refusal's stable code (" + ", ".join(ERROR_CODES) + ")",
            "schema": {"type": "string"},
            "x-sowctl-extension": True,
        }
    }
    if op.group.envelope is Envelope.MESSAGE and status < 500:
        headers[ERROR_ISSUES_HEADER] = {
            "description": "sowctl extension: a JSON array of {path, message}, one per problem, "
            f"sent when it fits in {MAX_ISSUES_HEADER} characters",
            "schema": {"type": "string"},
            "x-sowctl-extension": True,
        }
    return headers


def _error_statuses(op: Operation) -> list[int]:
    statuses = [400, 401]
    if op.write and op.group.authentication.has_roles:
        statuses.append(403)
    if op.group is not Group.ADMIN or op.path_params:
        statuses.append(404)
    if op.body is not None:
        statuses.append(413)
    if op.group.rate_limited or op.stream:  # a stream: its caller's streams are capped
        statuses.append(429)
    return [*statuses, 500, 503]


def _query_parameters(schema: dict | None, components: dict) -> list[dict]:
    if schema is None:
        return []
    model = components.get(_ref_name(schema), schema)
    required = set(model.get("required", ()))
    parameters = []
    for name, prop in model.get("properties", {}).items():
        prop = _not_null(prop)
        description = prop.pop("description", None)
        prop.pop("title", None)
        parameter = {"name": name, "in": "query", "required": name in required, "schema": prop}
        if description:
            parameter["description"] = description
        parameters.append(parameter)
    return parameters


def _not_null(schema: dict) -> dict:
    """A query parameter's schema without the ``null`` of an optional field (absent, not null)."""
    schema = dict(schema)
    if schema.get("default", ...) is None:
        del schema["default"]
    options = schema.get("anyOf")
    if options:
        kept = [option for option in options if option != {"type": "null"}]
        if len(kept) == 1:
            del schema["anyOf"]
            schema = {**kept[0], **schema}
        else:
            schema["anyOf"] = kept
    return schema


def _scope_headers(group: Group, path: str) -> list[dict]:
    organization, company = group.scope_headers(path)
    other_org, other_company = group.other_scope_headers(path)
    return [
        {
            "name": organization,
            "in": "header",
            "required": True,
            "description": f"Organization of the API key (also accepted as {other_org})",
            "schema": {"type": "string"},
        },
        {
            "name": company,
            "in": "header",
            "required": True,
            "description": f"A company of that organization (also accepted as {other_company})",
            "schema": {"type": "string"},
        },
    ]


def _success_description(op: Operation) -> str:
    if op.status == 201:
        return "Created"
    if op.paginated:
        return "One page of the list (a plain JSON array); see X-Total-Count and Link"
    return "Success"


def _server_page(operation_id: str, summary: str, responses: dict[str, Any]) -> dict[str, Any]:
    """A route of the server itself, outside the API: no credential, a sowctl extension."""
    return {
        "get": {
            "operationId": operation_id,
            "summary": summary,
            "tags": ["server"],
            "security": [],
            "x-sowctl-extension": True,
            "responses": responses,
        }
    }


def _json_response(description: str, schema: dict) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _error_description(op: Operation, status: int) -> str:
    if status == 413 and op.max_body_bytes is not None:
        return f"Request body larger than {op.max_body_bytes // 2**20} MiB"
    if status == 401 and op.group is Group.ADMIN:
        return "Missing or wrong admin token"
    if status == 404 and op.group is Group.ADMIN:
        return "No such checkpoint"
    if status == 429 and op.stream:
        return "Too many event streams of this caller are open (see Retry-After)"
    return ERROR_DESCRIPTIONS[status]


def _tag(op: Operation) -> str:
    return ADMIN_TAG if op.group is Group.ADMIN else op.name.split(".", 1)[0]


def _ref_name(schema: dict) -> str:
    ref = schema.get("$ref", "")
    return ref.rsplit("/", 1)[-1] if ref else ""


def _drop_unreferenced(components: dict, candidates: set[str], paths: dict) -> None:
    """Query models are flattened into parameters; drop their own component if unused."""
    for name in sorted(candidates):
        if not name or name not in components:
            continue
        others = {key: value for key, value in components.items() if key != name}
        text = json.dumps([others, paths])
        if f'"{REF.format(model=name)}"' not in text:
            del components[name]
