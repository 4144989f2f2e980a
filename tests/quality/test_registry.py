"""The API and the CLI, pinned: a lost module fails here instead of shipping a smaller tool."""

from __future__ import annotations

import typer.main

from sowctl import operations

# Every operation: name, method, route. The service's routes plus sowctl's extensions.
OPERATIONS = {
    ("items.list", "GET", "/api/sow/{sowId}/items"),
    ("items.get", "GET", "/api/items/{itemId}"),
    ("items.create", "POST", "/api/sow/{sowId}/items"),
    ("items.update", "PUT", "/api/items/{itemId}"),
    ("items.delete", "DELETE", "/api/items/{itemId}"),
    ("items.reorder", "PUT", "/api/sow/{sowId}/items/reorder"),
    ("sows.list", "GET", "/api/sows"),
    ("sows.create", "POST", "/api/sows"),
    ("sows.get", "GET", "/api/sows/{sowId}"),
    ("sows.update", "PUT", "/api/sows/{sowId}"),
    ("sows.delete", "DELETE", "/api/sows/{sowId}"),
    ("chain.get", "GET", "/api/dependencies/chain"),
    ("deps.list", "GET", "/api/dependencies"),
    ("deps.get", "GET", "/api/dependencies/{dependencyId}"),
    ("deps.create", "POST", "/api/dependencies"),
    ("deps.update", "PUT", "/api/dependencies/{dependencyId}"),
    ("deps.delete", "DELETE", "/api/dependencies/{dependencyId}"),
    ("finance.create_po", "POST", "/api/external/create-purchase-order"),
    ("finance.budget_views", "GET", "/api/external/budget-views"),
    ("finance.snapshots", "GET", "/api/external/budget-view-snapshots"),
    ("finance.snapshot", "GET", "/api/external/budget-view-snapshot"),
    ("finance.prime_contract", "GET", "/api/external/prime-contract-details"),
    ("finance.list_pos", "GET", "/api/external/purchase-orders"),
    ("finance.po_options", "GET", "/api/external/purchase-order-options"),
    ("projects.list", "GET", "/projects"),
    ("clients.list", "GET", "/clients"),
    ("events.list", "GET", "/api/events"),
    ("events.stream", "GET", "/api/events/stream"),
}
EXTENSIONS = {
    "sows.list",
    "sows.create",
    "sows.get",
    "sows.update",
    "sows.delete",
    "finance.list_pos",
    "finance.po_options",
    "events.list",
    "events.stream",
}

# The test double's admin API (sowctl.operations.admin): never in the registry above.
ADMIN_OPERATIONS = {
    ("admin.reset", "POST", "/_admin/reset"),
    ("admin.dataset.export", "GET", "/_admin/dataset"),
    ("admin.dataset.load", "POST", "/_admin/dataset"),
    ("admin.tokens.create", "POST", "/_admin/tokens"),
    ("admin.keys.create", "POST", "/_admin/keys"),
    ("admin.faults.get", "GET", "/_admin/faults"),
    ("admin.faults.replace", "PUT", "/_admin/faults"),
    ("admin.faults.set", "POST", "/_admin/faults"),
    ("admin.faults.clear", "DELETE", "/_admin/faults"),
    ("admin.clock.get", "GET", "/_admin/clock"),
    ("admin.clock.set", "POST", "/_admin/clock"),
    ("admin.contract.get", "GET", "/_admin/contract"),
    ("admin.contract.set", "PUT", "/_admin/contract"),
    ("admin.requests.list", "GET", "/_admin/requests"),
    ("admin.requests.clear", "DELETE", "/_admin/requests"),
    ("admin.requests.verify", "POST", "/_admin/requests/verify"),
    ("admin.requests.pact", "GET", "/_admin/requests/pact"),
    ("admin.checkpoints.list", "GET", "/_admin/checkpoints"),
    ("admin.checkpoints.save", "POST", "/_admin/checkpoints"),
    ("admin.checkpoints.restore", "POST", "/_admin/checkpoints/{name}/restore"),
    ("admin.checkpoints.delete", "DELETE", "/_admin/checkpoints/{name}"),
    ("admin.webhooks.create", "POST", "/_admin/webhooks"),
    ("admin.webhooks.list", "GET", "/_admin/webhooks"),
    ("admin.webhooks.get", "GET", "/_admin/webhooks/{id}"),
    ("admin.webhooks.delete", "DELETE", "/_admin/webhooks/{id}"),
    ("admin.webhooks.resume", "POST", "/_admin/webhooks/{id}/resume"),
    ("admin.webhooks.deliveries", "GET", "/_admin/webhooks/{id}/deliveries"),
    ("admin.webhooks.redeliver", "POST", "/_admin/webhooks/{id}/redeliver"),
    ("admin.webhooks.faults.get", "GET", "/_admin/webhook-faults"),
    ("admin.webhooks.faults.set", "PUT", "/_admin/webhook-faults"),
    ("admin.webhooks.faults.clear", "DELETE", "/_admin/webhook-faults"),
    ("admin.sandboxes.create", "POST", "/_admin/sandboxes"),
    ("admin.sandboxes.list", "GET", "/_admin/sandboxes"),
    ("admin.sandboxes.delete", "DELETE", "/_admin/sandboxes/{organizationId}"),
    ("admin.events.list", "GET", "/_admin/events"),
    ("admin.events.stream", "GET", "/_admin/events/stream"),
}

COMMANDS = {
    "budgets", "chain", "clients", "config", "conformance", "contract", "contracts", "deps", "events",
    "export", "import", "items", "keys", "mcp", "api", "orgs", "po", "projects", "replay", "sandbox",
    "schema", "serve", "skill", "sows", "status", "tokens", "validate", "wait", "webhooks",
}  # fmt: skip


def test_every_operation_is_registered_with_its_route() -> None:
    registry = operations.load_all()
    assert {(op.name, op.method, op.path) for op in registry.values()} == OPERATIONS
    assert {op.name for op in registry.values() if op.extension} == EXTENSIONS


def test_every_admin_operation_is_declared_with_its_route() -> None:
    from sowctl.operations.admin import ADMIN

    assert {(op.name, op.method, op.path) for op in ADMIN.values()} == ADMIN_OPERATIONS
    assert not ADMIN.keys() & operations.load_all().keys()


def test_every_command_is_registered() -> None:
    from sowctl.cli import app

    assert set(typer.main.get_command(app).commands) == COMMANDS
