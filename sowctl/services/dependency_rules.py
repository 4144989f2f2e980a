"""What makes a dependency well formed, open, critical or overdue: the rules, once.

Pure functions on plain values, so the API (``services.dependencies``), the chain
report (``services.chain``), the importer (``services.dataset``) and the SQL
filters all apply the same definitions:

* a dependency is *open* while its status is ``active`` or ``blocked``;
* *critical*: risk ``critical`` and open;
* *overdue*: an ``slaDate`` before today (UTC) and open;
* an *external* dependency names ``externalTarget`` and no target item; an
  internal one names a target item other than its source, and no external target.
"""

from __future__ import annotations

from datetime import date

OPEN_STATUSES = ("active", "blocked")
CRITICAL_RISK = "critical"


def is_open(status: str) -> bool:
    return status in OPEN_STATUSES


def is_critical(risk_level: str, status: str) -> bool:
    return risk_level == CRITICAL_RISK and status in OPEN_STATUSES


def is_overdue(sla_date: date | str | None, status: str, today: date) -> bool:
    """``sla_date`` as a date or as ISO text (SQLite hands dates back as text)."""
    if sla_date is None or status not in OPEN_STATUSES:
        return False
    if isinstance(sla_date, str):
        return sla_date < today.isoformat()
    return sla_date < today


def is_external(explicit: bool | None, target_item_id: str | None, external_target: str | None) -> bool:
    """An explicit ``isExternal`` wins; without it, a target name and no target item mean external."""
    if explicit is not None:
        return explicit
    return target_item_id is None and external_target is not None


def shape_problems(
    external: bool, source_item_id: str, target_item_id: str | None, external_target: str | None
) -> list[tuple[str, str]]:
    """``(field, message)`` for each way the dependency's shape is wrong; [] when it is right."""
    if external:
        found = []
        if target_item_id is not None:
            found.append(("targetItemId", "must be null for an external dependency"))
        if external_target is None or not external_target.strip():
            found.append(("externalTarget", "is required for an external dependency"))
        return found
    if target_item_id is None:
        return [
            (
                "targetItemId",
                "is required for an internal dependency "
                "(for an external one send isExternal: true and externalTarget)",
            )
        ]
    if external_target is not None:
        return [("externalTarget", "is only allowed on an external dependency (isExternal: true)")]
    if target_item_id == source_item_id:
        return [("targetItemId", "an item cannot depend on itself")]
    return []
