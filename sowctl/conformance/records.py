"""The service's records and request bodies as JSON Schema, written by hand from its published
description (``sowctl.conformance.description`` puts them in the operations' document)."""

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
