"""One module per command group or top-level command: registration and thin functions only.

Each group's help is written here, beside its name, so ``sowctl --help`` lists every
group without importing its module: a run imports only the group it invokes.
"""

from __future__ import annotations

import importlib
from typing import Any

# (name, help) of each command group, in the order help lists them; the group is the
# ``app`` of ``sowctl.commands.<name>``.
GROUPS: list[tuple[str, str]] = [
    ("sows", 'Statements of Work.\n\nExample: sowctl sows create "Tower A, phase 1" --id sow-1'),
    (
        "items",
        "Requirements and task items of a SOW, in their hierarchy."
        "\n\nExample: sowctl items create sow-1 --title Structure --type requirement",
    ),
    (
        "deps",
        "Dependencies between items, or on external systems and vendors."
        "\n\nExample: sowctl deps create --source slab --target rebar --type depends_on --risk high",
    ),
    (
        "chain",
        "The dependency chain of a SOW: show it, or check it in CI.\n\nExample: sowctl chain check sow-1",
    ),
    (
        "po",
        "Purchase orders of a financial project: create them (exact decimal amounts) and list them."
        "\n\nExample: sowctl po list --project 101",
    ),
    (
        "budgets",
        "Budget views and budget view snapshots of a financial project."
        "\n\nExample: sowctl budgets views --project 101",
    ),
    (
        "contracts",
        "Prime contracts of a financial project.\n\nExample: sowctl contracts show 31 --project 101",
    ),
    (
        "events",
        "The changes feed: every committed change as an event (sowctl extension). List it, follow "
        "it, make an event on purpose, or forward a server's webhook deliveries to a local URL."
        "\n\nExample: sowctl events tail --type 'item.*'",
    ),
    ("projects", "Projects of the organization.\n\nExample: sowctl projects list --status active"),
    ("clients", "Clients of the organization and their contacts.\n\nExample: sowctl clients list"),
    (
        "contract",
        "Contract mode of a sowctl test double: what clients relied on beyond the service's "
        "description.\n\nExample: sowctl --server http://127.0.0.1:8000 contract report",
    ),
    (
        "webhooks",
        "Webhook subscriptions of a sowctl server: create, list, delete, resume, their delivery log,"
        " redelivery.\n\nExample: sowctl webhooks create --url https://ci.example.test/hook"
        " --event item.created",
    ),
    (
        "sandbox",
        "Sandboxes of a shared sowctl test double: an organization and credentials per CI job."
        "\n\nExample: sowctl --server https://sowctl.ci.example sandbox create --ttl 1h",
    ),
    (
        "orgs",
        "Organizations (local mode only): create one on purpose, list them."
        "\n\nExample: sowctl orgs create org-2",
    ),
    (
        "tokens",
        "Bearer tokens (stored hashed; local mode only)."
        "\n\nExample: sowctl tokens create --user ada --org org-1",
    ),
    (
        "keys",
        "API keys for the external API (stored hashed; local mode only)."
        "\n\nExample: sowctl keys create --org org-1",
    ),
    (
        "config",
        "Profiles of connection settings (server, token, api_key, org, company, db, timeout)."
        "\n\nExample: sowctl config set server http://127.0.0.1:8000 --profile dev",
    ),
]
# (module, function, name) of each top-level command; the function's docstring is its help.
COMMANDS: list[tuple[str, str, str]] = [
    ("sowctl.commands.dataset", "import_command", "import"),
    ("sowctl.commands.dataset", "export_command", "export"),
    ("sowctl.commands.serve", "serve", "serve"),
    ("sowctl.commands.status", "status", "status"),
    ("sowctl.commands.wait", "wait", "wait"),
    ("sowctl.commands.validate", "validate", "validate"),
    ("sowctl.commands.replay", "replay", "replay"),
    ("sowctl.commands.api", "api_command", "api"),
    ("sowctl.commands.schema", "schema", "schema"),
    ("sowctl.commands.skill", "skill", "skill"),
    ("sowctl.commands.mcp", "mcp", "mcp"),
    ("sowctl.commands.conformance", "conformance", "conformance"),
]
GROUP_NAMES = frozenset(name for name, _ in GROUPS)
# A group whose command name is an abbreviation lives in the module named for the resource.
GROUP_MODULES = {"deps": "dependencies"}


def group_app(name: str) -> Any:
    """The Typer app of group ``name`` (its module is imported now: a missing one fails loudly)."""
    return importlib.import_module(f"sowctl.commands.{GROUP_MODULES.get(name, name)}").app


def command_function(module: str, function: str) -> Any:
    return getattr(importlib.import_module(module), function)
