"""A dataset narrowed to one organization's records, that organization renamed: what a
sandbox of a shared server loads from a dataset written for a server of its own (the pytest
plugin's ``--sowctl-server``). Records are kept by the references that tie them to the
organization: its own ``organizationId``, or a parent kept before it."""

from __future__ import annotations

from typing import Any

from sowctl.schemas.dataset import KINDS

# kind -> (the reference field, the kind it names), in reference order: parents come first.
_PARENT: dict[str, tuple[str, str]] = {
    "sows": ("projectId", "projects"),
    "items": ("sowId", "sows"),
    "dependencies": ("sourceItemId", "items"),
    "financialProjects": ("companyId", "companies"),
    "vendors": ("companyId", "companies"),
    "costCodes": ("companyId", "companies"),
    "commitments": ("project_id", "financialProjects"),
    "budgetViews": ("project_id", "financialProjects"),
    "budgetViewSnapshots": ("project_id", "financialProjects"),
    "primeContracts": ("project_id", "financialProjects"),
    "purchaseOrders": ("project_id", "financialProjects"),
}
_OWNED = ("users", "clients", "projects", "companies")


def narrowed(data: dict[str, Any], organization_id: str, renamed: str) -> dict[str, Any]:
    """``data``'s records of ``organization_id``, that organization called ``renamed``."""
    kept: dict[str, Any] = {"organizations": [{"id": renamed, "name": renamed}]}
    ids: dict[str, set[Any]] = {}
    for kind in [*KINDS, *(kind for kind in data if kind not in KINDS)]:
        records = data.get(kind)
        if kind == "organizations" or not isinstance(records, list):
            continue
        if kind in _OWNED:
            mine = [r for r in records if isinstance(r, dict) and r.get("organizationId") == organization_id]
            mine = [{**r, "organizationId": renamed} for r in mine]
        elif kind in _PARENT:
            field, parent = _PARENT[kind]
            mine = [r for r in records if isinstance(r, dict) and r.get(field) in ids.get(parent, ())]
            if kind == "items":  # an item may say its SOW's organization (ids of SOWs repeat)
                mine = [
                    {**r, "organizationId": renamed} if r.get("organizationId") == organization_id else r
                    for r in mine
                    if r.get("organizationId") in (None, organization_id)
                ]
        else:
            mine = records  # a kind sowctl does not know: the importer says so
        kept[kind] = mine
        ids[kind] = {r.get("id") for r in mine if isinstance(r, dict)}
    return kept
