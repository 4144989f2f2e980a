"""The dependency chain of a SOW and its issues.

``chain_report`` reads the SOW's dependencies (those whose source item is in the
SOW) in one query, the titles of the items they name in another, and does the graph
work in memory, linearly, so a SOW of 10,000 items and 50,000 dependencies reports
well under a second. It answers a ``ChainReport``: the dependencies as the driver's
rows (``CHAIN_COLUMNS``), oldest first, with the items they name (``ChainItem``, one
per item, shared by every row that names it) and the issues as positions in those
rows; ``operations.chain`` makes the API's body of it (its module doc shows the body).

* ``circular`` lists cycles in the *stored* data (an import may bring them; the API
  never creates one): one per tangled group of items, as item ids in waits-for order
  (each waits for the next, the last for the first), starting at the group's smallest
  id. See ``graph.find_cycles``.
* ``overdue`` and ``critical`` are the matching dependencies, with the contract's
  definitions (open = status active or blocked).
* ``critical_path`` is the longest chain of items that must follow one another,
  counted in items, first item first, over the non-cancelled ordering edges minus
  those inside a cycle; ``[]`` when nothing is ordered.
* With ``risks`` asked for, every item carries its type and shown status (a
  requirement's calculated from its task items, as item lists show it), and
  ``as_of`` is the server's date (UTC) the report was made on.
* The tree format adds the SOW's items (``ChainTreeRow``) in sibling order:
  ``orderIndex``, then creation, then id.
"""

from __future__ import annotations

import peewee as pw

from sowctl.foundation import clock
from sowctl.foundation.errors import InvalidInput, quoted
from sowctl.schemas.chain import ChainItem, ChainReport, ChainTreeRow
from sowctl.schemas.vocabulary import ChainFormat
from sowctl.services import dependency_rules as rules
from sowctl.services import graph, items
from sowctl.services.access import Caller, sow_for
from sowctl.services.collector import collector_paused
from sowctl.services.item_rules import calculated_statuses
from sowctl.storage import models as m
from sowctl.storage.peewee_compat import tuples

INCLUDES = ("criticalPath", "external", "risks")  # the extensions a chain body adds on request
_CHUNK = 500  # ids per IN (...): under every backend's parameter limit
_UNKNOWN = (None, None)  # the type and status of an item whose state was not read


def chain_report(
    caller: Caller, sow_id: str, fmt: ChainFormat = "flat", include: tuple[str, ...] = ()
) -> ChainReport:
    """The SOW's dependency chain for ``format``, with what the extensions named in
    ``include`` need (see the module doc)."""
    unknown = [name for name in include if name not in INCLUDES]
    if unknown:
        choices = ", ".join(INCLUDES)
        raise InvalidInput.for_field("include", f"unknown {quoted(unknown[0])} (choose from {choices})")
    sow = sow_for(caller, sow_id)
    with collector_paused():
        return _report(sow, fmt, "risks" in include)


def _report(sow: m.Sow, fmt: str, with_risks: bool) -> ChainReport:
    today = clock.today()
    edges: list[graph.Edge] = []
    overdue: list[int] = []
    critical: list[int] = []
    rows, titles = _chain_rows(sow.key)
    states = _item_states(sow.key, rows) if with_risks else {}
    # Every item of the SOW and every target elsewhere, whether a dependency names it or not:
    # one record per item is cheaper than asking, per dependency, whether its items have one.
    if with_risks:
        named = {
            item_id: ChainItem(item_id, title, *states.get(item_id, _UNKNOWN))
            for item_id, title in titles.items()
        }
    else:
        named = {item_id: ChainItem(item_id, title) for item_id, title in titles.items()}
    for position, row in enumerate(rows):
        _dep_id, source_id, target_id, dep_type, risk, status, external, _target, sla_date = row[:9]
        is_external = bool(external)
        # Computed from the row, not read from before/after columns: the report must be
        # right even for rows a writer stored without those columns.
        edge = graph.ordering_edge(dep_type, source_id, target_id, status, is_external)
        if edge is not None:
            edges.append(edge)
        if rules.is_critical(risk, status):
            critical.append(position)
        if rules.is_overdue(sla_date, status, today):
            overdue.append(position)
    cycles, path = graph.analyse(edges)
    tree = _item_tree(sow.key) if fmt == "tree" else None
    as_of = today if with_risks else None
    return ChainReport(sow.id, as_of, rows, named, cycles, overdue, critical, path, tree)


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


def _item_tree(sow_key: str) -> list[ChainTreeRow]:
    """The SOW's items, siblings in (orderIndex, createdAt, id) order, with their shown statuses."""
    rows = list(
        tuples(
            m.Item.select(m.Item.id, m.Item.parent, m.Item.type, m.Item.status, m.Item.title)
            .where(m.Item.sow == sow_key)
            .order_by(m.Item.order_index, m.Item.created_at, m.Item.id)
        )
    )
    shown = calculated_statuses((item_id, parent, kind, status) for item_id, parent, kind, status, _ in rows)
    return [
        ChainTreeRow(item_id, parent, kind, shown.get(item_id, status), title)
        for item_id, parent, kind, status, title in rows
    ]
