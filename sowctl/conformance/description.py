"""The service as its specification describes it, written by hand as an OpenAPI 3.1 document.

Written from the service's published description alone, never generated from sowctl's
models: sowctl's own ``/openapi.json`` describes sowctl, so it drifts with the code and
cannot catch the drift. This document does not move when the code does.
``sowctl conformance`` checks a server's answers against it
(``sowctl.conformance.checks``); the test suite checks every HTTP response it receives
against it too, and generates a client from it.

What it holds, and why:

* every field the spec lists, with the spec's type; no other field
  (``additionalProperties: false``), so an extension that leaks into a spec
  endpoint fails;
* ``null`` only where the description shows it (an external dependency's
  ``targetItemId``, a top-level item's ``parentItemId``, ``endDate`` and
  ``pinnedAt`` of projects and clients);
* timestamps in the exact shape ``YYYY-MM-DDThh:mm:ssZ``, dates
  ``YYYY-MM-DD``, Group C ids as uuids;
* per operation, only the statuses of the group's table plus those any route
  may answer (405, 413, 429 for Group B, 503), each with the group's error envelope;
  Group C's ``code`` and ``message`` fixed per status.
"""

from __future__ import annotations

import copy
from typing import Any

from sowctl.conformance.records import (
    DEPENDENCY_STATUSES,
    INTEGER,
    ITEM_TYPES,
    NUMBER,
    PROJECT_STATUSES,
    REQUESTS,
    SCHEMAS,
    STRING,
    UUID,
    array,
    enum,
    group_c_error,
    obj,
    ref,
)

# --- operations ----------------------------------------------------------------------------

GROUP_ERRORS = {
    "A": [400, 401, 403, 404, 413, 500, 503],
    "B": [400, 401, 404, 413, 429, 500, 503],
    "C": [400, 401, 403, 404, 413, 500, 503],
}
# Group C error bodies are declared per status (their code is fixed by it).
GROUP_ERROR_SCHEMA = {"A": "ErrorA", "B": "ErrorB"}


def query(name: str, schema: dict | None = None, required: bool = False) -> dict:
    return {"name": name, "in": "query", "required": required, "schema": schema or STRING}


def path_param(name: str) -> dict:
    return {"name": name, "in": "path", "required": True, "schema": STRING}


def header(name: str) -> dict:
    return {"name": name, "in": "header", "required": True, "schema": STRING}


PAGE = [query("page", INTEGER), query("limit", INTEGER)]
SCOPE = [header("x-organization-id"), header("x-company-id")]
PO_SCOPE = [header("organization-id"), header("company-id")]


def op(
    op_id: str,
    group: str,
    success: dict,
    *,
    status: int = 200,
    parameters: list[dict] | None = None,
    body: str | None = None,
) -> dict:
    responses: dict[str, Any] = {
        str(status): {"description": "success", "content": {"application/json": {"schema": success}}}
    }
    for code in GROUP_ERRORS[group]:
        schema = group_c_error(code) if group == "C" else ref(GROUP_ERROR_SCHEMA[group])
        responses[str(code)] = {"description": "error", "content": {"application/json": {"schema": schema}}}
    operation: dict[str, Any] = {
        "operationId": op_id,
        "tags": [f"group-{group.lower()}"],
        "parameters": parameters or [],
        "responses": responses,
        "security": [{"apiKey": []}] if group == "B" else [{"bearer": []}],
    }
    if body is not None:
        operation["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{body}"}}},
        }
    return operation


PATHS = {
    "/api/dependencies": {
        "get": op(
            "listDependencies",
            "A",
            array(ref("Dependency")),
            parameters=[
                query("itemId"),
                query("sowId"),
                query("type", enum(["critical", "overdue", "external"])),
                query("status", enum(DEPENDENCY_STATUSES)),
                *PAGE,
            ],
        ),
        "post": op("createDependency", "A", ref("Dependency"), status=201, body="DependencyCreate"),
    },
    "/api/dependencies/chain": {
        "get": op(
            "getDependencyChain",
            "A",
            {"anyOf": [ref("ChainFlat"), ref("ChainTree")]},
            parameters=[query("sowId", required=True), query("format", enum(["flat", "tree"]))],
        ),
    },
    "/api/dependencies/{dependencyId}": {
        "parameters": [path_param("dependencyId")],
        "get": op("getDependency", "A", ref("Dependency")),
        "put": op("updateDependency", "A", ref("Dependency"), body="DependencyUpdate"),
        "delete": op("deleteDependency", "A", ref("Message")),
    },
    "/api/sow/{sowId}/items": {
        "parameters": [path_param("sowId")],
        "get": op(
            "listItems",
            "A",
            array(ref("Item")),
            parameters=[query("type", enum(ITEM_TYPES)), query("parentId"), *PAGE],
        ),
        "post": op("createItem", "A", ref("Item"), status=201, body="ItemCreate"),
    },
    "/api/sow/{sowId}/items/reorder": {
        "parameters": [path_param("sowId")],
        "put": op("reorderItems", "A", ref("ReorderResult"), body="ReorderRequest"),
    },
    "/api/items/{itemId}": {
        "parameters": [path_param("itemId")],
        "get": op("getItem", "A", ref("Item")),
        "put": op("updateItem", "A", ref("Item"), body="ItemUpdate"),
        "delete": op("deleteItem", "A", ref("Message")),
    },
    "/api/external/create-purchase-order": {
        "post": op(
            "createPurchaseOrder", "B", ref("PurchaseOrder"), parameters=PO_SCOPE, body="PurchaseOrderRequest"
        ),
    },
    "/api/external/budget-views": {
        "get": op(
            "listBudgetViews",
            "B",
            obj({"data": array(ref("BudgetView"))}),
            parameters=[*SCOPE, query("project_id", INTEGER, required=True)],
        ),
    },
    "/api/external/budget-view-snapshots": {
        "get": op(
            "listBudgetViewSnapshots",
            "B",
            obj({"data": array(ref("SnapshotSummary"))}),
            parameters=[*SCOPE, query("project_id", INTEGER, required=True)],
        ),
    },
    "/api/external/budget-view-snapshot": {
        "get": op(
            "getBudgetViewSnapshot",
            "B",
            obj({"data": ref("SnapshotDetail")}),
            parameters=[
                *SCOPE,
                query("project_id", INTEGER, required=True),
                query("snapshot_id", INTEGER, required=True),
            ],
        ),
    },
    "/api/external/prime-contract-details": {
        "get": op(
            "getPrimeContractDetails",
            "B",
            obj({"data": array(ref("PrimeContract"))}),
            parameters=[
                *SCOPE,
                query("project_id", INTEGER, required=True),
                query("prime_contract_id", INTEGER, required=True),
            ],
        ),
    },
    "/projects": {
        "get": op(
            "listProjects",
            "C",
            obj({"projects": array(ref("Project")), "total": NUMBER}),
            parameters=[
                query("status", enum(PROJECT_STATUSES)),
                query("clientId", UUID),
                query("limit"),
                query("offset"),
            ],
        ),
    },
    "/clients": {
        "get": op(
            "listClients",
            "C",
            obj({"clients": array(ref("Client")), "total": NUMBER}),
            parameters=[query("limit"), query("offset")],
        ),
    },
}


def document() -> dict:
    """The OpenAPI 3.1 document (a fresh copy: callers may change it)."""
    return copy.deepcopy(
        {
            "openapi": "3.1.0",
            "info": {"title": "Project Delivery Service", "version": "1.0.0"},
            "paths": PATHS,
            "components": {
                "schemas": {**SCHEMAS, **REQUESTS},
                "securitySchemes": {
                    "bearer": {"type": "http", "scheme": "bearer"},
                    "apiKey": {"type": "apiKey", "in": "header", "name": "x-api-key"},
                },
            },
        }
    )
