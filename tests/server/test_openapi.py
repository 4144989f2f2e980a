"""The OpenAPI document: valid 3.1, and a faithful picture of the operation registry."""

from __future__ import annotations

import re

import pytest

from sowctl import operations
from sowctl.server.openapi import build_openapi
from tests.support.client import app_client


@pytest.fixture(scope="module")
def registry() -> dict[str, operations.Operation]:
    return dict(operations.load_all())


@pytest.fixture
def document(migrated_db_url: str) -> dict:
    with app_client(migrated_db_url) as client:
        response = client.get("/openapi.json")  # no token needed
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    return response.json()


def test_document_is_valid_openapi_3_1(document: dict) -> None:
    import openapi_spec_validator as validator

    assert document["openapi"].startswith("3.1")
    validator.validate(document)


def test_every_registered_route_is_documented(document: dict, registry) -> None:
    documented = {(path, method.upper()) for path, item in document["paths"].items() for method in item}
    expected = {(op.path, op.method) for op in registry.values()}
    assert expected <= documented
    assert documented - expected == {
        ("/healthz", "GET"),
        ("/readyz", "GET"),
        ("/metrics", "GET"),
        ("/openapi.json", "GET"),
    }
    for op in registry.values():
        assert document["paths"][op.path][op.method.lower()]["operationId"] == op.name


def spec_of(document: dict, registry, name: str) -> dict:
    op = registry[name]
    return document["paths"][op.path][op.method.lower()]


def test_items_list_is_paginated_with_its_filters(document: dict, registry) -> None:
    spec = spec_of(document, registry, "items.list")
    params = {(p["in"], p["name"]): p for p in spec["parameters"]}
    assert params["path", "sowId"]["required"] is True
    assert params["query", "type"]["schema"]["enum"] == ["requirement", "task_item"]
    assert params["query", "parentId"]["required"] is False  # by alias, camelCase
    # Larger limits are clamped, not refused, so the document sets no maximum for them.
    assert "maximum" not in params["query", "limit"]["schema"]
    assert "100" in params["query", "limit"]["description"]
    assert params["query", "page"]["schema"]["maximum"] == 10_000_000
    assert params["query", "page"]["schema"]["default"] == 1
    ok = spec["responses"]["200"]
    assert set(ok["headers"]) == {"X-Total-Count", "Link"}
    assert ok["content"]["application/json"]["schema"] == {
        "type": "array",
        "items": {"$ref": "#/components/schemas/ItemOut"},
    }
    assert spec["security"] == [{"bearerAuth": []}]


def test_create_documents_body_status_and_errors(document: dict, registry) -> None:
    spec = spec_of(document, registry, "items.create")
    body = spec["requestBody"]["content"]["application/json"]["schema"]
    assert body == {"$ref": "#/components/schemas/ItemCreate"}
    item_create = document["components"]["schemas"]["ItemCreate"]
    assert set(item_create["required"]) == {"title", "type"}
    assert "parentItemId" in item_create["properties"]
    # a server ignores an id in the body (only local mode chooses one): not offered
    assert "id" not in item_create["properties"]
    assert set(spec["responses"]) == {"201", "400", "401", "403", "404", "413", "500", "503"}
    assert spec["responses"]["400"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/ErrorA"
    }
    assert "403" not in spec_of(document, registry, "items.get")["responses"]


def test_error_envelopes_and_security_schemes(document: dict) -> None:
    schemas = document["components"]["schemas"]
    assert schemas["ErrorA"]["required"] == ["error"]
    assert set(schemas["ErrorC"]["required"]) == {"code", "message", "issues"}
    schemes = document["components"]["securitySchemes"]
    assert schemes["bearerAuth"] == {**schemes["bearerAuth"], "type": "http", "scheme": "bearer"}
    assert schemes["apiKey"]["in"] == "header" and schemes["apiKey"]["name"] == "x-api-key"
    health = document["paths"]["/healthz"]["get"]
    assert health["security"] == [] and health["x-sowctl-extension"] is True


def test_extensions_are_marked(document: dict, registry) -> None:
    for op in registry.values():
        spec = spec_of(document, registry, op.name)
        assert spec.get("x-sowctl-extension", False) is op.extension, op.name
    assert spec_of(document, registry, "sows.create")["x-sowctl-extension"] is True


def test_group_b_routes_document_headers_and_rate_limits(document: dict, registry) -> None:
    group_b = [op for op in registry.values() if op.group == "B"]
    assert len(group_b) == 7  # the five of the service, two sowctl extensions
    for op in group_b:
        spec = spec_of(document, registry, op.name)
        headers = {p["name"] for p in spec["parameters"] if p["in"] == "header"}
        if op.path == "/api/external/create-purchase-order":
            assert headers == {"organization-id", "company-id"}
        else:
            assert headers == {"x-organization-id", "x-company-id"}
        assert spec["security"] == [{"apiKey": []}]
        assert "Retry-After" in spec["responses"]["429"]["headers"]
        assert "X-RateLimit-Remaining" in spec["responses"][str(op.status)]["headers"]


def test_a_purchase_order_s_project_id_is_any_string_id(document: dict) -> None:
    """Any string is taken (one that names no project is a 404), so a generated client must
    not refuse one that is not digits before sending it."""
    project_id = document["components"]["schemas"]["PurchaseOrderIn"]["properties"]["project_id"]
    assert project_id["type"] == "string" and "pattern" not in project_id


def test_group_c_routes_use_the_group_c_envelope(registry) -> None:
    fake = operations.Operation(
        name="test.list",
        method="GET",
        path="/projects-test",
        group="C",
        handler=lambda request: operations.Result({}),
        summary="test",
        list_key="projects",
    )
    document = build_openapi([*registry.values(), fake])
    responses = document["paths"]["/projects-test"]["get"]["responses"]
    assert responses["401"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/ErrorC"
    }
    assert "X-Total-Count" not in responses["200"].get("headers", {})


def test_query_models_are_flattened_into_parameters(document: dict) -> None:
    assert "ItemListQuery" not in document["components"]["schemas"]
    assert "SowListQuery" not in document["components"]["schemas"]


# The only values the service itself shows as null; every other field is left out when
# it has no value, so the document must type it optional and not nullable.
SPEC_NULLS = {
    ("DependencyOut", "targetItemId"),
    ("DependencyCreate", "targetItemId"),
    ("ItemOut", "parentItemId"),
    ("ItemCreate", "parentItemId"),
    ("ProjectOut", "endDate"),
    ("ProjectOut", "pinnedAt"),
    ("ClientOut", "pinnedAt"),
    ("EventPage", "lastEventId"),  # sowctl's changes feed: null before the first event
}


def test_only_the_spec_nulls_are_nullable(document: dict) -> None:
    nullable = {
        (name, prop)
        for name, schema in document["components"]["schemas"].items()
        for prop, spec in schema.get("properties", {}).items()
        if {"type": "null"} in spec.get("anyOf", []) or "null" in spec.get("type", [])
    }
    assert nullable == SPEC_NULLS


def test_optional_response_fields_are_not_required(document: dict) -> None:
    schemas = document["components"]["schemas"]
    dependency = schemas["DependencyOut"]
    always = {"id", "sourceItemId", "targetItemId", "dependencyType", "riskLevel", "status", "isExternal"}
    assert set(dependency["required"]) == always | {"createdAt"}
    assert "description" not in schemas["ItemOut"]["required"]
    assert "criticalPath" not in schemas["ChainFlat"]["required"]
    assert "include" in [p["name"] for p in document["paths"]["/api/dependencies/chain"]["get"]["parameters"]]


# JSON Schema 2020-12 (core, applicator, validation, meta-data, format, content) and the
# OpenAPI 3.1 schema additions. Anything else in a schema ("ge", "min_length"...) is a
# Python-side name leaking out, which validators and code generators silently ignore.
SCHEMA_KEYWORDS = frozenset(
    [
        "$schema",
        "$id",
        "$ref",
        "$defs",
        "$comment",
        "$anchor",
        "$dynamicRef",
        "$dynamicAnchor",
        "$vocabulary",
        "title",
        "description",
        "default",
        "examples",
        "example",
        "deprecated",
        "readOnly",
        "writeOnly",
        "type",
        "enum",
        "const",
        "multipleOf",
        "maximum",
        "exclusiveMaximum",
        "minimum",
        "exclusiveMinimum",
        "maxLength",
        "minLength",
        "pattern",
        "maxItems",
        "minItems",
        "uniqueItems",
        "maxContains",
        "minContains",
        "maxProperties",
        "minProperties",
        "required",
        "dependentRequired",
        "properties",
        "patternProperties",
        "additionalProperties",
        "unevaluatedProperties",
        "items",
        "prefixItems",
        "contains",
        "unevaluatedItems",
        "propertyNames",
        "allOf",
        "anyOf",
        "oneOf",
        "not",
        "if",
        "then",
        "else",
        "dependentSchemas",
        "format",
        "contentEncoding",
        "contentMediaType",
        "contentSchema",
        "discriminator",
        "xml",
        "externalDocs",
    ]
)
_SUBSCHEMA = ("items", "contains", "additionalProperties", "unevaluatedProperties", "unevaluatedItems")
_SUBSCHEMA += ("propertyNames", "not", "if", "then", "else", "contentSchema")
_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "dependentSchemas")


def _schemas(document: dict):
    """(where, schema) for every schema the document holds, nested ones included."""
    found = [
        (f"components.schemas.{name}", schema) for name, schema in document["components"]["schemas"].items()
    ]

    def media(where: str, content: dict) -> None:
        found.extend(
            (f"{where}.{kind}", body["schema"]) for kind, body in content.items() if "schema" in body
        )

    for path, item in document["paths"].items():
        for method, op in item.items():
            where = f"{method.upper()} {path}"
            found.extend(
                (f"{where} {p['name']}", p["schema"]) for p in op.get("parameters", []) if "schema" in p
            )
            media(f"{where} body", op.get("requestBody", {}).get("content", {}))
            for status, response in op.get("responses", {}).items():
                media(f"{where} {status}", response.get("content", {}))
                for header, spec in response.get("headers", {}).items():
                    found.append((f"{where} {status} {header}", spec.get("schema", {})))
    while found:
        where, schema = found.pop()
        yield where, schema
        for key in _SUBSCHEMA:
            if isinstance(schema.get(key), dict):
                found.append((f"{where}.{key}", schema[key]))
        for key in ("allOf", "anyOf", "oneOf", "prefixItems"):
            found.extend((f"{where}.{key}[{i}]", sub) for i, sub in enumerate(schema.get(key, [])))
        for key in _SCHEMA_MAPS:
            found.extend((f"{where}.{key}.{name}", sub) for name, sub in schema.get(key, {}).items())


def test_every_schema_keyword_is_json_schema_or_openapi(document: dict) -> None:
    unknown = [
        f"{where}: {key}"
        for where, schema in _schemas(document)
        for key in schema
        if key not in SCHEMA_KEYWORDS and not key.startswith("x-")
    ]
    assert unknown == []
    order_index = document["components"]["schemas"]["ItemCreate"]["properties"]["orderIndex"]
    assert (order_index["minimum"], order_index["maximum"]) == (0, 2**31 - 1)


def test_every_refusal_documents_the_error_code_header_it_is_sent_with(
    document: dict, registry, migrated_db_url: str
) -> None:
    from sowctl.foundation.errors import ERROR_CODES

    for path, methods in document["paths"].items():
        for method, spec in methods.items():
            for status, response in spec["responses"].items():
                if int(status) < 400 or spec["operationId"] not in registry:  # /readyz is no operation
                    continue
                headers = response["headers"]
                assert headers["X-Error-Code"]["x-sowctl-extension"] is True, (method, path, status)
                c_group = response["content"]["application/json"]["schema"]["$ref"].endswith("ErrorC")
                assert ("X-Error-Issues" in headers) == (not c_group and int(status) < 500), (path, status)
    with app_client(migrated_db_url) as client:
        refused = client.post(
            "/api/sow/none/items", json={"title": ""}, headers={"Authorization": "Bearer x"}
        )
    assert refused.status_code == 401
    assert refused.headers["X-Error-Code"] in ERROR_CODES
    assert (
        refused.headers["X-Error-Code"]
        in document["paths"]["/api/sow/{sowId}/items"]["post"]["responses"]["401"]["headers"]["X-Error-Code"][
            "description"
        ]
    )


def _texts(node):
    """Every description and summary in the document."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("description", "summary") and isinstance(value, str):
                yield value
            else:
                yield from _texts(value)
    elif isinstance(node, list):
        for value in node:
            yield from _texts(value)


def test_descriptions_cite_no_internal_document_and_use_markdown(document: dict) -> None:
    texts = list(_texts(document))
    assert texts
    for text in texts:
        # "prime contract" is a thing of the domain; "contract" with a section sign or a section
        # number ("(contract 7.4)") cites a document the reader does not have.
        assert not re.search(r"\bspec\b|\u00a7|\bcontract\s*[\u00a7\d]", text, re.IGNORECASE), text
        assert "``" not in text, text
    assert any("`parentItemId`" in text for text in texts)
