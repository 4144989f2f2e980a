"""The dependency chain of a SOW and its issues.

``chain_report`` answers ``GET /api/dependencies/chain``. It reads the SOW's
dependencies (those whose source item is in the SOW) with both items' titles in
one query and does the graph work in memory, linearly, so a SOW of 10,000 items
and 50,000 dependencies reports well under a second.

Flat format (``format=flat``, the default)::

    {
      "sowId": "sow-1",
      "dependencies": [ENTRY, ...],            # oldest first (createdAt, then id)
      "issues": {
        "circular": [["item-a", "item-b"], ...],
        "overdue": [ENTRY, ...],
        "critical": [ENTRY, ...]
      },
    }

    ENTRY = {"id", "sourceItem": {"id", "title"}, "targetItem": {"id", "title"},
             "dependencyType", "riskLevel", "status"}

These are the spec's fields and no more, so a strict client of the real service
reads the body. Choices the spec leaves open, fixed here:

* An external dependency has no target item, so its ``targetItem`` is
  ``{"title": <externalTarget>}``: the id is left out rather than null, so every
  field keeps the spec's type (a string).
* Extensions come only when asked for, with ``include=`` (comma-separated):
  ``criticalPath`` adds the body's ``criticalPath``; ``external`` adds
  ``isExternal`` to every entry and ``externalTarget`` to the external ones;
  ``risks`` adds what the CI check's risk rules read (``gate.risks``):
  ``slaDate`` and ``escalationDate`` on entries that have them, ``type`` and
  (shown) ``status`` on every item reference with an id, and the body's ``asOf``,
  the server's date (UTC) the report was made on, so a client judges dates by the
  same day as the server's ``overdue``.
* ``issues.circular`` lists cycles in the *stored* data (an import may bring
  them; the API never creates one): one per tangled group of items, as item ids
  in waits-for order (each waits for the next, the last for the first), starting
  at the group's smallest id. See ``graph.find_cycles``.
* ``issues.overdue`` and ``issues.critical`` list the matching entries with the
  contract's definitions (open = status active or blocked).
* ``criticalPath`` (``include=criticalPath``) is the longest chain of items that must follow
  one another, counted in items, first item first, over the non-cancelled
  ordering edges minus those inside a cycle; ``[]`` when nothing is ordered.

Tree format (``format=tree``) nests the SOW's items in their hierarchy, each
with the dependencies it is the source of::

    {
      "sowId": "sow-1",
      "items": [{"id", "title", "type", "status", "dependencies": [ENTRY, ...],
                 "children": [ITEM, ...]}, ...],
      "issues": {...},                          # as in the flat format
      "criticalPath": [...]                     # with include=criticalPath
    }

Items come in ``orderIndex`` order within a level, and requirements show their
calculated status, as item lists do.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import peewee as pw

from sowctl.foundation import clock
from sowctl.foundation.errors import InvalidInput, quoted
from sowctl.schemas.vocabulary import ChainFormat
from sowctl.services import dependency_rules as rules
from sowctl.services import graph, items
from sowctl.services.access import Caller, sow_for
from sowctl.services.collector import collector_paused
from sowctl.services.item_rules import calculated_statuses, nest
from sowctl.storage import models as m
from sowctl.storage.peewee_compat import tuples

INCLUDES = ("criticalPath", "external", "risks")  # the extensions a chain body adds on request
_CHUNK = 500  # ids per IN (...): under every backend's parameter limit


def chain_report(
    caller: Caller, sow_id: str, fmt: ChainFormat = "flat", include: tuple[str, ...] = ()
) -> dict[str, Any]:
    """The SOW's dependency chain as the API body of ``format`` with the extensions
    named in ``include`` (see the module doc)."""
    unknown = [name for name in include if name not in INCLUDES]
    if unknown:
        choices = ", ".join(INCLUDES)
        raise InvalidInput.for_field("include", f"unknown {quoted(unknown[0])} (choose from {choices})")
    sow = sow_for(caller, sow_id)
    with collector_paused():
        return _report(sow, fmt, frozenset(include))


def parse_include(text: str | None) -> tuple[str, ...]:
    """``include=a,b`` as a tuple of names (unchecked: ``chain_report`` names a bad one)."""
    return tuple(dict.fromkeys(part.strip() for part in (text or "").split(",") if part.strip()))


def _report(sow: m.Sow, fmt: str, include: frozenset[str]) -> dict[str, Any]:
    today = clock.today()
    entries: list[dict[str, Any]] = []
    edges: list[graph.Edge] = []
    overdue: list[dict[str, Any]] = []
    critical: list[dict[str, Any]] = []
    with_risks = "risks" in include
    rows, titles = _chain_rows(sow.key)
    states = _item_states(sow.key, rows) if with_risks else {}
    # One {"id", "title"} object per item, shared by every entry that names it: a
    # tenth of the allocations on a dense SOW. The body is only ever serialised.
    refs: dict[str, dict[str, Any]] = {}

    def ref(item_id: str) -> dict[str, Any]:
        found = refs.get(item_id)
        if found is None:
            found = refs[item_id] = {"id": item_id, "title": titles.get(item_id)}
            if with_risks and item_id in states:
                found["type"], found["status"] = states[item_id]
        return found

    with_external = "external" in include
    for row in rows:
        dep_id, source_id, target_id, dep_type, risk, status, external, external_target, sla_date = row[:9]
        is_external = bool(external)
        entry: dict[str, Any] = {
            "id": dep_id,
            "sourceItem": ref(source_id),
            "targetItem": {"title": external_target} if is_external else ref(target_id),
            "dependencyType": dep_type,
            "riskLevel": risk,
            "status": status,
        }
        if with_external:
            entry["isExternal"] = is_external
            if is_external:
                entry["externalTarget"] = external_target
        if with_risks:
            if sla_date is not None:
                entry["slaDate"] = str(sla_date)
            if row[9] is not None:
                entry["escalationDate"] = str(row[9])
        entries.append(entry)
        # Computed from the row, not read from before/after columns: the report must be
        # right even for rows a writer stored without those columns.
        edge = graph.ordering_edge(dep_type, source_id, target_id, status, is_external)
        if edge is not None:
            edges.append(edge)
        if rules.is_critical(risk, status):
            critical.append(entry)
        if rules.is_overdue(sla_date, status, today):
            overdue.append(entry)
    cycles, path = graph.analyse(edges)
    issues = {"circular": cycles, "overdue": overdue, "critical": critical}
    if fmt == "flat":
        body = {"sowId": sow.id, "dependencies": entries, "issues": issues}
    else:
        body = {"sowId": sow.id, "items": _item_tree(sow.key, entries), "issues": issues}
    if "criticalPath" in include:
        body["criticalPath"] = path
    if with_risks:
        body["asOf"] = today.isoformat()
    return body


def _chain_rows(sow_key: str) -> tuple[list[tuple], dict[str, str]]:
    """Every dependency of the SOW (by its stored key), oldest first, and the titles of the items they name.

    Two plain queries (the dependencies, then the titles of the SOW's items and of
    any target in another SOW) joined in a dict: on SQLite that is three times
    faster than joining the item table twice per dependency, and reading the raw
    cursor skips Peewee's per-value conversion, which would cost more than the
    rest of the report on a 50,000-dependency SOW.
    """
    dep = m.Dependency
    query = (
        dep.select(
            dep.id,
            dep.source_item,
            dep.target_item,
            dep.dependency_type,
            dep.risk_level,
            dep.status,
            dep.is_external,
            dep.external_target,
            dep.sla_date,
            dep.escalation_date,
        )
        .where(dep.sow == sow_key)
        .order_by(dep.created_at, dep.id)
    )
    rows = m.database_proxy.execute(query).fetchall()
    titles = dict(m.database_proxy.execute(_titles().where(m.Item.sow == sow_key)))
    elsewhere = sorted({row[2] for row in rows if row[2] is not None and row[2] not in titles})
    for start in range(0, len(elsewhere), _CHUNK):
        chunk = elsewhere[start : start + _CHUNK]
        titles.update(m.database_proxy.execute(_titles().where(m.Item.id.in_(chunk))))
    return rows, titles


def _item_states(sow_key: str, rows: list[tuple]) -> dict[str, tuple[str, str]]:
    """Item id -> (type, shown status) of the SOW's items and of targets in other SOWs.

    A requirement shows the status calculated from its task items,
    as everywhere else in the API; a requirement in another SOW is calculated from
    its own subtree.
    """
    own = items.sow_rows(sow_key)
    shown = calculated_statuses(own)
    states = {item_id: (kind, shown[item_id]) for item_id, _parent, kind, _status in own}
    elsewhere = sorted({row[2] for row in rows if row[2] is not None and row[2] not in states})
    for start in range(0, len(elsewhere), _CHUNK):
        found = items.subtree_rows(elsewhere[start : start + _CHUNK])
        shown = calculated_statuses(found)
        wanted = set(elsewhere)
        states.update((i, (kind, shown[i])) for i, _parent, kind, _status in found if i in wanted)
    return states


def _titles() -> pw.ModelSelect[m.Item]:
    """(id, title) of items; the caller adds the WHERE."""
    return m.Item.select(m.Item.id, m.Item.title)


def _item_tree(sow_key: str, entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The SOW's items nested by parent (``item_rules.nest``: no recursion, bounded
    nesting), each with its outgoing dependency entries, siblings in (orderIndex,
    createdAt, id) order."""
    rows = list(
        tuples(
            m.Item.select(
                m.Item.id,
                m.Item.parent,
                m.Item.type,
                m.Item.status,
                m.Item.title,
                m.Item.order_index,
                m.Item.created_at,
            )
            .where(m.Item.sow == sow_key)
            .order_by(m.Item.order_index, m.Item.created_at, m.Item.id)
        )
    )
    shown = calculated_statuses((item_id, parent, kind, status) for item_id, parent, kind, status, *_ in rows)
    by_source: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for entry in entries:
        by_source[entry["sourceItem"]["id"]].append(entry)
    nodes = {
        item_id: {
            "id": item_id,
            "title": title,
            "type": kind,
            "status": shown.get(item_id, status),
            "dependencies": by_source.get(item_id, []),
            "children": [],
        }
        for item_id, _parent, kind, status, title, _order, _created in rows
    }
    return nest([(item_id, parent) for item_id, parent, *_ in rows], nodes)
