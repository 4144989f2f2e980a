"""The ordering graph that dependencies impose on items.

An *ordering edge* ``(before, after)`` says that item ``before`` comes first.
``depends_on``, ``prerequisite`` and ``successor`` put the target before the
source; ``blocks`` puts the source before the target; ``related_to``, external
and cancelled dependencies impose no order. The non-cancelled dependencies must
never form a cycle in this order.

Cycles are *reported* in "waits-for" order: in ``A -> B -> C -> A`` each item
waits for the next one (A depends on B, B on C, C on A), which reads like the
requests that built it. For ``blocks`` the arrow therefore points from the
blocked item to the blocking one.

Three parts:

* Pure, in-memory algorithms (``ordering_edge``, ``strongly_connected_components``,
  ``find_cycles``, ``critical_path``, ``analyse`` for both at once) live in
  ``graph_algorithms`` (no database) and are re-exported here.
* The cycle check on write (``find_closing_cycle``), which walks the indexed
  ``Dependency.before_item_id``/``after_item_id`` columns in SQL so that it reads
  only the part of the graph reachable from the new edge, with no query per edge.
* The maintained topological order (``add_ordering_edge``, ``mark_ranks_stale``):
  a rank per item that every ordering edge agrees with, so that most new edges need
  no walk at all and the others only a walk between the two ranks (Pearce-Kelly).
  The dependency service checks new edges with it; ``find_closing_cycle`` remains
  the fallback while stored edges hold a cycle.
"""

from __future__ import annotations

import hashlib
import heapq
import json
from collections.abc import Callable, Iterable
from itertools import pairwise

from sowctl.services import graph_ranks as ranks
from sowctl.services.graph_algorithms import (  # re-exported: graph.X is the public name
    SOURCE_FIRST,
    TARGET_FIRST,
    Edge,
    analyse,
    critical_path,
    find_cycles,
    is_acyclic,
    ordering_edge,
    shortest_path,
    strongly_connected_components,
    successors,
)
from sowctl.storage import models as m
from sowctl.storage.database import hold_lock

__all__ = [
    "SOURCE_FIRST",
    "TARGET_FIRST",
    "Edge",
    "analyse",
    "critical_path",
    "find_cycles",
    "is_acyclic",
    "ordering_edge",
    "strongly_connected_components",
    "successors",
]

# --- the cycle check on write ------------------------------------------------------


def _reach_cte() -> str:
    table = m.Dependency._meta.table_name
    param = m.database_proxy.param
    # CAST to TEXT on both sides: PostgreSQL insists that the recursive term's column
    # type equals the anchor's exactly, and a varchar(64) column is not a text literal.
    # UNION (not UNION ALL) drops nodes already seen, so each node and edge is read once.
    return (
        f"WITH RECURSIVE reach(id) AS ("
        f"SELECT CAST({param} AS TEXT) "
        f"UNION SELECT CAST(d.after_item_id AS TEXT) FROM {table} d "
        f"JOIN reach ON d.before_item_id = reach.id) "
    )


def reaches(start: str, goal: str) -> bool:
    """Whether ``goal`` can be reached from ``start`` along stored ordering edges.

    One recursive query. It reads only the part of the graph reachable from
    ``start`` (through the index on ``before_item_id``), and the database stops
    as soon as ``goal`` turns up.
    """
    param = m.database_proxy.param
    sql = _reach_cte() + f"SELECT 1 FROM reach WHERE id = {param} LIMIT 1"
    return m.database_proxy.execute_sql(sql, (start, goal)).fetchone() is not None


def _has_predecessor(node: str) -> bool:
    """Whether any stored ordering edge ends at ``node``: one index probe.

    Nothing can reach an item with no predecessor, so a new edge out of such an
    item (say, a new prerequisite of old work) needs no walk at all.
    """
    table = m.Dependency._meta.table_name
    param = m.database_proxy.param
    sql = f"SELECT 1 FROM {table} WHERE after_item_id = {param} LIMIT 1"
    return m.database_proxy.execute_sql(sql, (node,)).fetchone() is not None


def _discovery_rank(start: str, goal: str) -> int | None:
    """How many nodes the walk from ``start`` emits up to and including ``goal``.

    The walk emits nodes breadth first (SQLite's queue is FIFO, PostgreSQL works
    level by level), so those nodes hold a shortest path to ``goal``. Numbering
    the rows as they stream lets both databases stop the walk at ``goal``.
    """
    param = m.database_proxy.param
    sql = _reach_cte() + (
        f"SELECT n FROM (SELECT id, ROW_NUMBER() OVER () AS n FROM reach) AS walk WHERE id = {param} LIMIT 1"
    )
    row = m.database_proxy.execute_sql(sql, (start, goal)).fetchone()
    return None if row is None else int(row[0])


def reachable_edges(start: str) -> list[Edge]:
    """Every stored ordering edge leaving a node reachable from ``start``, in one query."""
    table = m.Dependency._meta.table_name
    sql = (
        _reach_cte() + f"SELECT d.before_item_id, d.after_item_id FROM {table} d "
        "JOIN reach ON d.before_item_id = reach.id"
    )
    return list(m.database_proxy.execute_sql(sql, (start,)).fetchall())


def _ball_edges(start: str, size: int) -> list[Edge]:
    """Ordering edges leaving the first ``size`` nodes of the walk from ``start``, in one query.

    Same walk, same data (we hold the write lock), so the same first nodes.
    """
    table = m.Dependency._meta.table_name
    param = m.database_proxy.param
    sql = (
        _reach_cte().rstrip() + f", ball(id) AS (SELECT id FROM reach LIMIT {param}) "
        f"SELECT d.before_item_id, d.after_item_id FROM {table} d JOIN ball ON d.before_item_id = ball.id"
    )
    return list(m.database_proxy.execute_sql(sql, (start, size)).fetchall())


def find_closing_cycle(before: str, after: str) -> list[str] | None:
    """The cycle that a new ordering edge ``before -> after`` would close, or None.

    The edge closes a cycle exactly when ``before`` is already reachable from
    ``after``. The common answer "no" costs an index probe (``before`` has no
    predecessor) or one recursive query; only a refusal reads the edges near
    ``after`` (two more queries) to name a shortest such cycle. The
    result is in waits-for order and ends where it starts, ready for
    ``errors.CycleDetected``. Call it inside the write transaction that inserts
    the edge, so that no concurrent writer can slip in between.
    """
    if before == after:
        return [before, before]
    if not _has_predecessor(before) or not reaches(after, before):
        return None
    return _name_cycle(before, after)


def _name_cycle(before: str, after: str) -> list[str]:
    """The cycle closed by a new edge ``before -> after`` when ``before`` is reachable from ``after``."""
    # Name the cycle from the nodes the walk met before reaching ``before``: on a
    # dense graph that is a small ball around ``after``, not all it can reach.
    size = _discovery_rank(after, before)
    path = shortest_path(_ball_edges(after, size), after, before) if size is not None else None
    if path is None:  # the database walked in another order the second time: read it all
        path = shortest_path(reachable_edges(after), after, before)
    if path is None:  # only if the rows changed under us, which the lock prevents
        return [before, after, before]
    # ``path`` runs after -> ... -> before in ordering terms; reversed it is the
    # waits-for order, and the new edge (``after`` waits for ``before``) closes it.
    return [*reversed(path), before]


# --- the maintained topological order (Pearce-Kelly) ---------------------------------
#
# Invariant, per organization (no ordering edge joins two organizations): unless the
# organization is marked "ranks stale", both ends of every stored ordering edge have a
# rank (``Item.topo_rank``) and rank(before) < rank(after). An item that never had an
# edge may have none. So a new edge that agrees with the ranks cannot close a cycle and
# is accepted without a walk. One that disagrees needs a walk bounded by the two ranks
# (Pearce and Kelly, "A dynamic topological sort algorithm for directed acyclic graphs",
# 2006): forward from ``after`` through items ranked at most rank(before), which meets
# ``before`` exactly when the edge closes a cycle (ranks rise along every path); if it
# does not, backward from ``before`` through items ranked at least rank(after). Then the
# smaller of the two sets moves into the free ranks next to the other end (ranks are
# handed out with gaps, ``graph_ranks``), or, once no gap holds it, the ranks of both
# sets are dealt out again, the backward set first. Removing an edge never breaks the
# invariant.
#
# Ranks come from one counter shared by all organizations (``GAP`` past the highest
# rank, or before the lowest, for an item placed after or before everything); they only
# need to be distinct and ordered within an organization, which its write lock guarantees.
#
# Bulk writers (the importer) store edges without ranks and mark each organization
# they touch with ``mark_ranks_stale``: a ``Meta`` row ``ranks-stale:<org>``. The next
# edge added there first recomputes the organization's ranks (Kahn). Stored edges may
# hold a cycle (an import may bring one): then no order exists, the organization stays
# stale and its checks fall back to ``find_closing_cycle``; the row remembers the
# dependency ids of one such cycle, so later checks recompute only once one is gone.

STALE_PREFIX = "ranks-stale:"
_STALE = "1"
_CYCLIC = "cycle:"  # value prefix: still stale, and these dependencies (JSON ids) formed a cycle
_BATCH = 500  # ids per statement: under every backend's parameter limit


def stale_key(organization_id: str) -> str:
    """The ``Meta`` key that marks an organization's ranks stale (hashed if it would not fit)."""
    key = STALE_PREFIX + organization_id
    if len(key) <= m.Meta.key.max_length:
        return key
    return STALE_PREFIX + "#" + hashlib.sha256(organization_id.encode()).hexdigest()[:40]


def mark_ranks_stale(organization_ids: Iterable[str | None]) -> None:
    """Say that these organizations' ordering edges were written without ranks.

    For bulk writers of dependency rows, inside their write transaction. On
    PostgreSQL it also takes each organization's write lock (sorted, so two bulk
    writers cannot deadlock): a dependency create running there finishes first, and
    the next one waits for this transaction and then sees the mark.
    """
    ids = sorted({org for org in organization_ids if org is not None})
    for organization_id in ids:
        hold_lock(f"org:{organization_id}")
    for start in range(0, len(ids), _BATCH):
        rows = [{"key": stale_key(org), "value": _STALE} for org in ids[start : start + _BATCH]]
        m.Meta.insert_many(rows).on_conflict(conflict_target=[m.Meta.key], preserve=[m.Meta.value]).execute()


def ranks_stale(organization_id: str) -> bool:
    return _stale_mark(organization_id) is not None


def add_ordering_edge(
    organization_id: str,
    before: str,
    after: str,
    known: tuple[str | None, int | None, int | None] | None = None,
    planned: ranks.Prewalk | None = None,
) -> list[str] | None:
    """Make room for a new ordering edge ``before -> after`` in the organization's order.

    Returns the cycle the edge would close, exactly as ``find_closing_cycle`` names
    it, having changed no rank; or None, having updated ranks so that the edge agrees
    with them: insert it then. Call it inside ``write_transaction(f"org:{org}")``,
    the one that inserts the edge; refuse by raising inside it, so that ranks a stale
    organization had recomputed roll back with everything else. ``known``: the stale
    mark and both ranks, read under that lock by the caller's own query. ``planned``: the
    re-ranking decided before the lock (``prewalk_ordering_edge``), taken when ``known`` shows
    ranks in force and nothing was committed since; checked before this transaction writes.
    """
    if before == after:
        return [before, before]
    if planned is not None and known is not None and known[0] is None and planned.holds(known[1], known[2]):
        if planned.cycle is None:
            ranks.store(planned.moves)
        return planned.cycle
    for _attempt in range(2):
        # One query for the usual case (ranks in force): the stale mark and both ranks.
        mark, low, high = known or _mark_and_ranks(organization_id, before, after)
        known = None
        if mark is not None:
            if not _in_force(organization_id, mark):
                return find_closing_cycle(before, after)
            low, high = _ranks_of(before, after)  # just recomputed
        if low is not None and high is not None:
            break
        # An item without a rank has no edge, unless a bulk writer forgot to say so.
        if (low is None and _has_edges(before)) or (high is None and _has_edges(after)):
            _write_mark(organization_id, _STALE)
            continue
        low, high = _place(before, after, low, high)
        break
    else:  # still unranked edges after a recompute: trust nothing but a full walk
        return find_closing_cycle(before, after)
    if low < high:
        return None
    return _reorder(before, after, low, high)


def recompute_ranks(organization_id: str) -> bool:
    """Rank every item with an ordering edge of the organization in a topological order.

    Kahn's algorithm, always taking the smallest ready item id, on the edges read in
    one query; the new ranks follow every rank in use. Clears the stale mark and
    returns True, or, when the stored edges hold a cycle, leaves the organization
    stale (remembering that cycle's dependency ids) and returns False.
    """
    rows = _organization_edges(organization_id)
    succ = successors((before, after) for _, before, after in rows)
    indegree = dict.fromkeys(succ, 0)
    for nexts in succ.values():
        for nxt in nexts:
            indegree[nxt] += 1
    ready = [node for node, degree in indegree.items() if degree == 0]
    heapq.heapify(ready)
    order: list[str] = []
    while ready:
        node = heapq.heappop(ready)
        order.append(node)
        for nxt in succ[node]:
            indegree[nxt] -= 1
            if indegree[nxt] == 0:
                heapq.heappush(ready, nxt)
    if len(order) < len(succ):
        dependency_of: dict[Edge, str] = {}
        for dependency_id, before, after in rows:
            dependency_of.setdefault((before, after), dependency_id)
        cycle = find_cycles((before, after) for _, before, after in rows)[0]
        # Waits-for order: each item waits for the next, so the ordering edge is (next, item).
        ring = [dependency_of[(nxt, node)] for node, nxt in pairwise([*cycle, cycle[0]])]
        _write_mark(organization_id, _CYCLIC + json.dumps(ring))
        return False
    base = ranks.top()
    ranks.store([(node, base + ranks.GAP * position) for position, node in enumerate(order)])
    m.Meta.delete().where(m.Meta.key == stale_key(organization_id)).execute()
    return True


def _stale_mark(organization_id: str) -> str | None:
    table = m.Meta._meta.table_name
    param = m.database_proxy.param
    sql = f"SELECT value FROM {table} WHERE key = {param}"
    row = m.database_proxy.execute_sql(sql, (stale_key(organization_id),)).fetchone()
    return None if row is None else row[0]


def _write_mark(organization_id: str, value: str) -> None:
    m.Meta.insert(key=stale_key(organization_id), value=value).on_conflict(
        conflict_target=[m.Meta.key], preserve=[m.Meta.value]
    ).execute()


def _in_force(organization_id: str, mark: str | None) -> bool:
    """Whether the invariant holds for the organization whose stale mark is ``mark``,
    recomputing stale ranks if need be."""
    if mark is None:
        return True
    if mark.startswith(_CYCLIC) and _all_ordering(json.loads(mark[len(_CYCLIC) :])):
        return False  # the remembered cycle is still there: no order exists
    return recompute_ranks(organization_id)


def _all_ordering(dependency_ids: list[str]) -> bool:
    """Whether every one of these dependencies still imposes an ordering edge."""
    table = m.Dependency._meta.table_name
    wanted = sorted(set(dependency_ids))
    found = 0
    for start in range(0, len(wanted), _BATCH):
        chunk = wanted[start : start + _BATCH]
        marks = ", ".join([m.database_proxy.param] * len(chunk))
        sql = f"SELECT COUNT(*) FROM {table} WHERE id IN ({marks}) AND before_item_id IS NOT NULL"
        found += m.database_proxy.execute_sql(sql, tuple(chunk)).fetchone()[0]
    return found == len(wanted)


def _organization_edges(organization_id: str) -> list[tuple[str, str, str]]:
    """``(dependency id, before, after)`` of every stored ordering edge of the organization."""
    dep, sow, project = m.Dependency._meta, m.Sow._meta, m.Project._meta
    param = m.database_proxy.param
    sql = (
        f"SELECT d.id, d.before_item_id, d.after_item_id FROM {dep.table_name} d "
        f"JOIN {sow.table_name} s ON s.id = d.{m.Dependency.sow.column_name} "
        f"JOIN {project.table_name} p ON p.id = s.{m.Sow.project.column_name} "
        f"WHERE p.{m.Project.organization.column_name} = {param} AND d.before_item_id IS NOT NULL"
    )
    return list(m.database_proxy.execute_sql(sql, (organization_id,)).fetchall())


def _mark_and_ranks(
    organization_id: str, before: str, after: str
) -> tuple[str | None, int | None, int | None]:
    """The organization's stale mark and the ranks of ``before`` and ``after``: one round trip."""
    meta, item = m.Meta._meta.table_name, m.Item._meta.table_name
    param = m.database_proxy.param
    sql = (
        f"SELECT (SELECT value FROM {meta} WHERE key = {param}), "
        f"(SELECT topo_rank FROM {item} WHERE id = {param}), "
        f"(SELECT topo_rank FROM {item} WHERE id = {param})"
    )
    row = m.database_proxy.execute_sql(sql, (stale_key(organization_id), before, after)).fetchone()
    return row[0], row[1], row[2]


def _ranks_of(before: str, after: str) -> tuple[int | None, int | None]:
    table = m.Item._meta.table_name
    param = m.database_proxy.param
    sql = f"SELECT id, topo_rank FROM {table} WHERE id IN ({param}, {param})"
    ranks = dict(m.database_proxy.execute_sql(sql, (before, after)).fetchall())
    return ranks.get(before), ranks.get(after)


def _has_edges(node: str) -> bool:
    """Whether a stored ordering edge starts or ends at ``node``: two index probes, one query."""
    table = m.Dependency._meta.table_name
    param = m.database_proxy.param
    sql = (
        f"SELECT 1 FROM {table} WHERE before_item_id = {param} "
        f"UNION ALL SELECT 1 FROM {table} WHERE after_item_id = {param} LIMIT 1"
    )
    return m.database_proxy.execute_sql(sql, (node, node)).fetchone() is not None


def _place(before: str, after: str, low: int | None, high: int | None) -> tuple[int, int]:
    """Rank the unranked end(s) of a new edge so that the edge agrees with the order.

    An unranked item has no edge yet: nothing comes before it, nothing after it. So
    ``before`` can go before every item and ``after`` after every item.
    """
    if low is not None:  # only ``after`` is unranked
        high = ranks.top()
        ranks.store([(after, high)])
        return low, high
    if high is not None:  # only ``before`` is unranked
        low = ranks.bottom()
        ranks.store([(before, low)])
        return low, high
    low = ranks.top()
    high = low + ranks.GAP
    ranks.store([(before, low), (after, high)])
    return low, high


def prewalk_ordering_edge(organization_id: str, before: str, after: str) -> ranks.Prewalk | None:
    """The re-ranking of a new edge ``before -> after`` against the order, decided from one
    snapshot before the write lock, on SQLite (whose one lock every writer waits for): its
    walks, up to every item of both sides, then run outside the lock, and under it
    ``add_ordering_edge`` writes the moves once it knows that nothing was committed since
    (``Prewalk.holds``), else walks again. None when the edge needs no walk, or elsewhere."""
    version = ranks.data_version()
    database = m.database_proxy.obj
    if version is None or before == after or database.in_transaction():
        return None
    moves: list[tuple[str, int]] = []
    with database.atomic():  # a read transaction: every read sees one snapshot
        mark, low, high = _mark_and_ranks(organization_id, before, after)
        if mark is not None or low is None or high is None or low < high:
            return None
        cycle = _reorder(before, after, low, high, store=moves.extend)
    return ranks.Prewalk(version, low, high, cycle, moves)


def _reorder(
    before: str, after: str, low: int, high: int, store: Callable[[list[tuple[str, int]]], None] = ranks.store
) -> list[str] | None:
    """Pearce-Kelly for an edge against the order (rank(before) = low > high = rank(after)).

    The forward side (``after`` and what it reaches ranked up to ``low``) must end up after
    the backward side (``before`` and what reaches it ranked from ``high``); the edge closes
    a cycle exactly when the two meet, and one side walked whole without meeting the other
    end rules that out. Each side is first walked only ``PROBE`` items deep: a side found
    whole moves into the gap next to the other end, its items alone rewritten. Otherwise the
    forward side is walked whole, the backward side only as far as it is long, and the
    smaller moves into its gap; only when none holds it are both sides' ranks dealt out.
    """
    forward = ranks.walk(after, high, forward=True, within=low, limit=ranks.PROBE)
    if before in forward:
        return _name_cycle(before, after)
    backward = ranks.walk(before, low, forward=False, within=high, limit=ranks.PROBE)
    if after in backward:
        return _name_cycle(before, after)
    sides = [(forward, low, True), (backward, high, False)]
    if _move_smaller([entry for entry in sides if len(entry[0]) < ranks.PROBE], store):  # walked whole
        return None
    if len(forward) >= ranks.PROBE:
        forward = ranks.walk(after, high, forward=True, within=low)
        if before in forward:
            return _name_cycle(before, after)
    # The two sets are disjoint (an item in both would close the cycle ruled out above).
    if len(backward) >= ranks.PROBE:  # longer than the forward side: no need to know how long
        backward = ranks.walk(before, low, forward=False, within=high, limit=len(forward) + 1)
    shorter = len(backward) <= len(forward)  # and so walked whole
    if _move_smaller([(forward, low, True), *([(backward, high, False)] if shorter else [])], store):
        return None
    if not shorter:
        backward = ranks.walk(before, low, forward=False, within=high)
        if _move_smaller([(backward, high, False)], store):
            return None
    store(ranks.deal_out(forward, backward))
    return None


def _move_smaller(
    sides: list[tuple[ranks.Ranked, int, bool]], store: Callable[[list[tuple[str, int]]], None]
) -> bool:
    """Move the smallest of these sides that fits into the gap beyond the other end's rank."""
    for side, edge_rank, above in sorted(sides, key=lambda entry: len(entry[0])):
        moved = ranks.into_gap(side, edge_rank, above=above)
        if moved is not None:
            store(moved)
            return True
    return False
