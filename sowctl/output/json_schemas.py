"""The JSON each command prints with ``--json``, as a versioned JSON Schema (``sowctl schema``).

A command that prints an operation's answer is described by that operation's response model
(the same model the server's OpenAPI document uses); the others by a model of
``sowctl.schemas.cli_output`` (or the API model of what it prints, as ``po list``'s orders of
every page). One table names which, once per command.
"""

from __future__ import annotations

import importlib
from typing import Any

# Raised when a field is removed or renamed or changes type; added fields keep the version.
OUTPUT_VERSION = 1
DIALECT = "https://json-schema.org/draft/2020-12/schema"

# command -> "op:NAME" (that operation's response) or "model:MODULE.NAME" (a model of
# sowctl.schemas.MODULE); "[]" after either: an array of them.
SOURCES: dict[str, str] = {
    "status": "model:cli_output.StatusOut",
    "import": "model:cli_output.Imported",
    "replay": "model:cli_output.Replayed",
    "sows create": "op:sows.create",
    "sows list": "op:sows.list",
    "sows get": "op:sows.get",
    "sows update": "op:sows.update",
    "sows delete": "op:sows.delete",
    "items list": "op:items.list",
    "items get": "op:items.get",
    "items create": "op:items.create",
    "items update": "op:items.update",
    "items delete": "op:items.delete",
    "items reorder": "op:items.reorder",
    "items tree": "model:cli_output.TreeItem[]",
    "deps list": "op:deps.list",
    "deps get": "op:deps.get",
    "deps create": "op:deps.create",
    "deps update": "op:deps.update",
    "deps delete": "op:deps.delete",
    "chain show": "op:chain.get",
    "chain check": "model:cli_output.ChainCheck",
    "conformance": "model:cli_output.Conformance",
    "contract report": "model:admin.ContractReport",
    "contract mode": "model:admin.ContractReport",
    "chain ready": "model:cli_output.ChainReady",
    "chain blocked": "model:cli_output.ChainWaiting",
    "po create": "op:finance.create_po",
    "po list": "model:purchase_orders.PurchaseOrderOut[]",  # the orders of every page, one array
    "po options": "op:finance.po_options",
    "budgets views": "op:finance.budget_views",
    "budgets snapshots": "op:finance.snapshots",
    "budgets snapshot": "op:finance.snapshot",
    "contracts show": "op:finance.prime_contract",
    "projects list": "op:projects.list",
    "clients list": "op:clients.list",
    "orgs create": "model:cli_output.OrganizationOut",
    "orgs list": "model:cli_output.OrganizationListed[]",
    "tokens list": "model:cli_output.TokenListed[]",
    "tokens revoke": "model:cli_output.Revoked",
    "keys list": "model:cli_output.KeyListed[]",
    "keys revoke": "model:cli_output.Revoked",
    "config list": "model:cli_output.ConfigList",
    "webhooks create": "model:webhooks.WebhookCreated",
    "webhooks list": "model:webhooks.WebhookOut[]",
    "webhooks delete": "model:webhooks.WebhookDeleted",
    "webhooks resume": "model:webhooks.WebhookOut",
    "webhooks deliveries": "model:webhooks.WebhookDeliveryOut[]",
    "webhooks redeliver": "model:webhooks.WebhookRedelivery",
    "sandbox create": "model:admin.SandboxIssued",
    "sandbox list": "model:admin.SandboxOut[]",
    "sandbox delete": "model:admin.SandboxDeleted",
    "events list": "op:events.list",
    "events tail": "model:events.EventOut",  # JSON lines: each line is one event
    "events trigger": "model:events.EventOut",  # JSON lines: each line is one event
}
# Commands whose --json prints JSON lines (one object a line, as they come): the schema is a line's.
JSON_LINES = frozenset({"events tail", "events trigger"})
# Commands whose --json prints whatever the server answered: no fixed shape.
ANY_JSON = {
    "api": "the answer's JSON body, as the route returns it",
    "contract pact": "the Pact file (Pact Specification 3.0.0); with --out FILE, a summary of what it holds "
    "(interactions, what was left out and why, the verifier's command line)",
}


def commands() -> list[str]:
    """Every command that prints JSON, in table order."""
    return [*SOURCES, *ANY_JSON]


def _shape(source: str) -> Any:
    kind, _, name = source.partition(":")
    many = name.endswith("[]")
    name = name.removesuffix("[]")
    if kind == "op":
        from sowctl import operations

        shape = operations.load_all()[name].response
    else:
        module, _, model = name.rpartition(".")
        shape = getattr(importlib.import_module(f"sowctl.schemas.{module}"), model)
    return list[shape] if many else shape  # type: ignore[valid-type]


def schema(command: str) -> dict[str, Any]:
    """The JSON Schema of ``sowctl COMMAND --json``'s output; KeyError for a command without one."""
    from pydantic import TypeAdapter

    head = {
        "$schema": DIALECT,
        "$id": f"urn:sowctl:output:v{OUTPUT_VERSION}:{command.replace(' ', '-')}",
        "title": f"sowctl {command} --json",
        "x-sowctl-output-version": OUTPUT_VERSION,
    }
    if command in ANY_JSON:
        return head | {"description": ANY_JSON[command]}
    body = TypeAdapter(_shape(SOURCES[command])).json_schema(by_alias=True, mode="serialization")
    if command in JSON_LINES:
        head = head | {"x-sowctl-json-lines": True, "description": "JSON lines: each line is one such object"}
    return body | head
