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

TIMESTAMP = {"type": "string", "format": "date-time", "pattern": r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$"}
DATE = {"type": "string", "format": "date", "pattern": r"^\d{4}-\d{2}-\d{2}$"}
UUID = {"type": "string", "format": "uuid"}
STRING = {"type": "string"}
NUMBER = {"type": "number"}
INTEGER = {"type": "integer"}
BOOLEAN = {"type": "boolean"}
DECIMAL_STRING = {"type": "string", "pattern": r"^-?\d+(\.\d+)?$"}

DEPENDENCY_TYPES = ["depends_on", "blocks", "related_to", "prerequisite", "successor"]
RISK_LEVELS = ["low", "medium", "high", "critical"]
DEPENDENCY_STATUSES = ["active", "resolved", "cancelled", "blocked"]
ITEM_TYPES = ["requirement", "task_item"]
ITEM_STATUSES = ["pending", "in_progress", "completed", "cancelled"]
PROJECT_STATUSES = ["active", "on_hold", "completed", "archived"]


def nullable(schema: dict) -> dict:
    return {"anyOf": [schema, {"type": "null"}]}


def enum(values: list[str]) -> dict:
    return {"type": "string", "enum": values}


def obj(required: dict[str, Any], optional: dict[str, Any] | None = None) -> dict:
    """A closed object: ``required`` keys always present, ``optional`` ones may be left out."""
    return {
        "type": "object",
        "properties": {**required, **(optional or {})},
        "required": list(required),
        "additionalProperties": False,
    }


def ref(name: str) -> dict:
    return {"$ref": f"#/components/schemas/{name}"}


def array(items: dict) -> dict:
    return {"type": "array", "items": items}


# --- resources ---------------------------------------------------------------------------

CHAIN_ENTRY = obj(
    {
        "id": STRING,
        "sourceItem": obj({"id": STRING, "title": STRING}),
        # An external dependency has no target item; the spec types id as a string.
        "targetItem": obj({"title": STRING}, {"id": STRING}),
        "dependencyType": enum(DEPENDENCY_TYPES),
        "riskLevel": enum(RISK_LEVELS),
        "status": enum(DEPENDENCY_STATUSES),
    }
)
CHAIN_ISSUES = obj(
    {
        "circular": array(array(STRING)),
        "overdue": array(ref("ChainEntry")),
        "critical": array(ref("ChainEntry")),
    }
)

SCHEMAS: dict[str, dict] = {
    "Dependency": obj(
        {
            "id": STRING,
            "sourceItemId": STRING,
            "targetItemId": nullable(STRING),
            "dependencyType": enum(DEPENDENCY_TYPES),
            "riskLevel": enum(RISK_LEVELS),
            "status": enum(DEPENDENCY_STATUSES),
            "isExternal": BOOLEAN,
            "createdAt": TIMESTAMP,
        },
        {
            "externalTarget": STRING,
            "externalOwner": STRING,
            "contactEmail": STRING,
            "vendor": STRING,
            "slaDate": DATE,
            "escalationDate": DATE,
            "notes": STRING,
            "createdByUserId": STRING,
            "updatedAt": TIMESTAMP,
        },
    ),
    "Item": obj(
        {
            "id": STRING,
            "title": STRING,
            "type": enum(ITEM_TYPES),
            "sowId": STRING,
            "parentItemId": nullable(STRING),
            "orderIndex": NUMBER,
            "status": enum(ITEM_STATUSES),
            "createdAt": TIMESTAMP,
            "updatedAt": TIMESTAMP,
        },
        {"description": STRING, "createdByUserId": STRING},
    ),
    "Message": obj({"message": STRING}),
    "ReorderResult": obj({"message": STRING, "items": array(obj({"id": STRING, "orderIndex": NUMBER}))}),
    "ChainEntry": CHAIN_ENTRY,
    "ChainFlat": obj({"sowId": STRING, "dependencies": array(ref("ChainEntry")), "issues": CHAIN_ISSUES}),
    # format=tree: "not shown" by the description; the service nests each item's
    # dependencies under it. The entries keep the flat format's shape.
    "ChainTree": obj(
        {"sowId": STRING, "items": array({"type": "object"}), "issues": CHAIN_ISSUES},
    ),
    "PurchaseOrder": obj(
        {
            "id": NUMBER,
            "number": STRING,
            "status": STRING,
            "title": STRING,
            "vendor": obj({"id": NUMBER, "name": STRING}),
            "original_amount": DECIMAL_STRING,
            "revised_amount": DECIMAL_STRING,
            "total_amount": DECIMAL_STRING,
            "line_items": array(
                obj(
                    {
                        "id": NUMBER,
                        "description": STRING,
                        "amount": DECIMAL_STRING,
                        "cost_code": obj({"id": NUMBER, "full_code": STRING, "name": STRING}),
                    }
                )
            ),
        }
    ),
    "BudgetView": obj(
        {
            "id": INTEGER,
            "name": STRING,
            "created_at": TIMESTAMP,
            "updated_at": TIMESTAMP,
            "project_id": INTEGER,
        },
        {"description": STRING},
    ),
    "SnapshotSummary": obj(
        {
            "id": INTEGER,
            "name": STRING,
            "created_at": TIMESTAMP,
            "budget_view_id": INTEGER,
            "project_id": INTEGER,
        },
        {
            "description": STRING,
            "created_by": obj({}, {"id": INTEGER, "name": STRING, "email": STRING}),
        },
    ),
    "PrimeContract": obj(
        {
            "id": INTEGER,
            "title": STRING,
            "status": STRING,
            "original_contract_value": NUMBER,
            "current_contract_value": NUMBER,
            "executed_change_orders_value": NUMBER,
            "pending_change_orders_value": NUMBER,
            "project_id": INTEGER,
        },
        {
            "description": STRING,
            "contract_number": STRING,
            "contract_date": TIMESTAMP,
            "start_date": TIMESTAMP,
            "estimated_completion_date": TIMESTAMP,
            "customer": obj(
                {},
                {
                    "id": INTEGER,
                    "name": STRING,
                    "contact_name": STRING,
                    "contact_email": STRING,
                    "contact_phone": STRING,
                },
            ),
            "payment_terms": obj(
                {},
                {
                    "type": STRING,
                    "payment_schedule": STRING,
                    "retention_percentage": NUMBER,
                    "days_until_due": INTEGER,
                },
            ),
        },
    ),
    "Project": obj(
        {
            "id": UUID,
            "name": STRING,
            "status": enum(PROJECT_STATUSES),
            "endDate": nullable(TIMESTAMP),
            "organizationId": STRING,
            "isPinned": BOOLEAN,
            "pinnedAt": nullable(TIMESTAMP),
            "sowCount": NUMBER,
            "createdAt": TIMESTAMP,
            "updatedAt": TIMESTAMP,
        },
        {
            "description": STRING,
            "clientId": UUID,
            "clientName": STRING,
            "contactId": UUID,
            "startDate": TIMESTAMP,
            "ownerUserId": STRING,
        },
    ),
    "Contact": obj(
        {
            "id": UUID,
            "clientId": UUID,
            "name": STRING,
            "isPrimary": BOOLEAN,
            "createdAt": TIMESTAMP,
            "updatedAt": TIMESTAMP,
        },
        {"email": STRING, "phone": STRING, "role": STRING},
    ),
    "Client": obj(
        {
            "id": UUID,
            "name": STRING,
            "organizationId": STRING,
            "isPinned": BOOLEAN,
            "pinnedAt": nullable(TIMESTAMP),
            "contacts": array(ref("Contact")),
            "createdAt": TIMESTAMP,
            "updatedAt": TIMESTAMP,
        },
        {"description": STRING, "website": STRING, "industry": STRING},
    ),
    "ErrorA": obj({"error": STRING}),
    "ErrorB": obj({"error": STRING}),
}

MONEY_NUMBERS = ["original_budget", "current_budget", "committed", "spent", "projected_total", "variance"]
SCHEMAS["SnapshotDetail"] = copy.deepcopy(SCHEMAS["SnapshotSummary"])
SCHEMAS["SnapshotDetail"]["properties"].update(
    {
        "line_items": array(
            obj(
                {"id": INTEGER, "code": STRING, **dict.fromkeys(MONEY_NUMBERS, NUMBER)},
                {"description": STRING},
            )
        ),
        "totals": obj(dict.fromkeys(MONEY_NUMBERS, NUMBER)),
    }
)
SCHEMAS["SnapshotDetail"]["required"] += ["line_items", "totals"]

# Group C: the codes of the spec's table, with their fixed texts, are all a client may meet
# too: the statuses beyond the table carry the nearest of them.
GROUP_C_CODES = {
    400: ("BAD_REQUEST", "invalid input data"),
    401: ("UNAUTHORIZED", "authorization not provided"),
    403: ("FORBIDDEN", "insufficient access"),
    404: ("NOT_FOUND", "not found"),
    405: ("BAD_REQUEST", "invalid input data"),
    413: ("BAD_REQUEST", "invalid input data"),
    429: ("BAD_REQUEST", "invalid input data"),
    500: ("INTERNAL_SERVER_ERROR", "internal server error"),
    503: ("INTERNAL_SERVER_ERROR", "internal server error"),
}


def group_c_error(status: int) -> dict:
    code, message = GROUP_C_CODES[status]
    issue = obj({"path": array({"type": ["string", "integer"]}), "message": STRING})
    return obj(
        {
            "code": {"const": code},
            "message": {"const": message} if message else STRING,
            "issues": array(issue),
        }
    )


# --- request bodies --------------------------------------------------------------------------

REQUESTS: dict[str, dict] = {
    "DependencyCreate": obj(
        {"sourceItemId": STRING, "dependencyType": enum(DEPENDENCY_TYPES), "riskLevel": enum(RISK_LEVELS)},
        {
            "targetItemId": STRING,
            "isExternal": BOOLEAN,
            "externalTarget": STRING,
            "externalOwner": STRING,
            "contactEmail": STRING,
            "vendor": STRING,
            "slaDate": DATE,
            "escalationDate": DATE,
            "notes": STRING,
        },
    ),
    "DependencyUpdate": obj(
        {},
        {
            "status": enum(DEPENDENCY_STATUSES),
            "riskLevel": enum(RISK_LEVELS),
            "slaDate": DATE,
            "escalationDate": DATE,
            "notes": STRING,
        },
    ),
    "ItemCreate": obj(
        {"title": STRING, "type": enum(ITEM_TYPES)},
        {"description": STRING, "parentItemId": STRING, "orderIndex": NUMBER},
    ),
    "ItemUpdate": obj(
        {}, {"title": STRING, "description": STRING, "status": enum(ITEM_STATUSES), "orderIndex": NUMBER}
    ),
    "ReorderRequest": obj({"items": array(obj({"id": STRING, "orderIndex": NUMBER}))}),
    "PurchaseOrderRequest": obj(
        {
            "project_id": STRING,
            "commitment_id": STRING,
            "title": STRING,
            "vendor_id": NUMBER,
            "status": STRING,
            "line_items": array(
                obj(
                    {"description": STRING, "amount": STRING, "cost_code_id": NUMBER},
                    {"quantity": NUMBER, "unit_cost": STRING},
                )
            ),
        }
    ),
}


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
