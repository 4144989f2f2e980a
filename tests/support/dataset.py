"""Dataset helpers shared by the import/export suites: the smallest full dataset, every
row of every table (to prove a refused import changed nothing), and a wipe."""

from __future__ import annotations

from typing import Any

from sowctl.storage import models as m

DATA_MODELS = [model for model in m.ALL_MODELS if model is not m.Meta]


def database_rows() -> dict[str, list[tuple]]:
    """Every row of every table, to prove that a refused import changed nothing."""
    return {
        model.__name__: sorted(model.select().tuples(), key=lambda row: tuple(map(str, row)))
        for model in DATA_MODELS
    }


def wipe() -> None:
    for model in reversed(DATA_MODELS):
        model.delete().execute()


def minimal() -> dict[str, Any]:
    """The smallest dataset with one record of every Group A/C kind."""
    return {
        "organizations": [{"id": "org-1", "name": "Org"}],
        "users": [{"id": "user-1", "organizationId": "org-1", "name": "Ada"}],
        "clients": [
            {
                "id": "00000000-0000-4000-8000-00000000c001",
                "organizationId": "org-1",
                "name": "Client",
                "contacts": [{"id": "00000000-0000-4000-8000-00000000d001", "name": "Cleo"}],
            }
        ],
        "projects": [
            {
                "id": "00000000-0000-4000-8000-00000000a001",
                "organizationId": "org-1",
                "name": "Project",
                "clientId": "00000000-0000-4000-8000-00000000c001",
                "contactId": "00000000-0000-4000-8000-00000000d001",
            }
        ],
        "sows": [{"id": "sow-1", "projectId": "00000000-0000-4000-8000-00000000a001", "title": "SOW"}],
        "items": [
            {"id": "req-1", "sowId": "sow-1", "title": "Requirement", "type": "requirement"},
            {"id": "task-1", "sowId": "sow-1", "title": "Task", "type": "task_item", "parentItemId": "req-1"},
            {
                "id": "task-2",
                "sowId": "sow-1",
                "title": "Task 2",
                "type": "task_item",
                "parentItemId": "req-1",
            },
        ],
        "dependencies": [
            {
                "id": "dep-1",
                "sourceItemId": "task-2",
                "targetItemId": "task-1",
                "dependencyType": "depends_on",
                "riskLevel": "low",
            }
        ],
    }


def store_raw_ordering_edges(sow: str, edges: list[tuple[str, str]]) -> None:
    """``depends_on`` dependencies (``after`` waits for ``before``) written straight to the
    table, as an import or an older version may have left them: no cycle check, no ranks."""
    from datetime import datetime

    for number, (before, after) in enumerate(edges):
        m.Dependency.create(
            id=f"raw-{number}",
            sow=sow,
            source_item=after,
            target_item=before,
            dependency_type="depends_on",
            risk_level="low",
            status="active",
            created_at=datetime(2026, 1, 1),
            before_item_id=before,
            after_item_id=after,
        )
