"""The stored ranks of the maintained topological order (``services.graph``): the walks
between two ranks, the gaps between ranks, and writing ranks in bulk.

Ranks are handed out ``GAP`` apart (a new item goes ``GAP`` past every rank in use, a
recomputed order is spaced ``GAP`` apart), so that an edge against the order can usually
be met by moving only one side of it into the free ranks next to the other side, and only
the smaller side: putting one new item before a 10,000-item chain rewrites one rank, not
10,000. Moved items are spread evenly over the gap, so that the next move there finds room
too; only once a gap is used up is the old way (``deal_out``, both sides' ranks dealt out
again) needed. At ``GAP`` = 2**24, 2**39 items can be placed past the last before the
64-bit column runs out, and a gap takes 24 single moves into its middle before it is full.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import peewee as pw

from sowctl.services import bulk
from sowctl.storage import models as m

GAP = 1 << 24
# Items a walk reads before the other side of the edge is looked at: a small side is then
# found, and moved, without reading all of a large one.
PROBE = 256

Ranked = dict[str, int]  # item id -> rank


def bound(function: str) -> int | None:
    """MAX or MIN of every rank in use, or None when none is: one end of the index."""
    sql = f"SELECT {function}(topo_rank) FROM {m.Item._meta.table_name}"
    value = m.database_proxy.execute_sql(sql).fetchone()[0]
    return None if value is None else int(value)


def top() -> int:
    """The rank a new last item gets: ``GAP`` past every rank in use."""
    highest = bound("MAX")
    return GAP if highest is None else highest + GAP


def bottom() -> int:
    """The rank a new first item gets: ``GAP`` before every rank in use."""
    lowest = bound("MIN")
    return -GAP if lowest is None else lowest - GAP


def _neighbour(rank: int, *, above: bool) -> int | None:
    """The next rank in use above (or below) ``rank``, any organization's: one index probe."""
    function, compare = ("MIN", ">") if above else ("MAX", "<")
    table, param = m.Item._meta.table_name, m.database_proxy.param
    sql = f"SELECT {function}(topo_rank) FROM {table} WHERE topo_rank {compare} {param}"
    value = m.database_proxy.execute_sql(sql, (rank,)).fetchone()[0]
    return None if value is None else int(value)


def walk_sql(forward: bool) -> str:
    """The recursive query of ``walk``: parameters start, its rank, the bound of ranks."""
    dep, item = m.Dependency._meta.table_name, m.Item._meta.table_name
    param = m.database_proxy.param
    near, far, compare = (
        ("before_item_id", "after_item_id", "<=") if forward else ("after_item_id", "before_item_id", ">=")
    )
    # ``topo_rank + 0``: the rank filters the items the edges lead to and must never drive
    # the walk. With the index on it in reach, PostgreSQL's planner, whose statistics lag
    # behind ranks just moved (a reorder puts thousands past the histogram's end), took a
    # range of ranks for a few rows and read every item in it at each step of the walk: a
    # 5,000-item walk ran past the 30 s deadline. The expression keeps the index out of the
    # plan on both databases.
    return (
        f"WITH RECURSIVE walk(id, r) AS (SELECT CAST({param} AS TEXT), CAST({param} AS BIGINT) "
        f"UNION SELECT CAST(d.{far} AS TEXT), i.topo_rank FROM {dep} d JOIN walk ON d.{near} = walk.id "
        f"JOIN {item} i ON i.id = d.{far} WHERE i.topo_rank + 0 {compare} {param}) "
        f"SELECT id, r FROM walk"
    )


def walk(start: str, start_rank: int, *, forward: bool, within: int, limit: int | None = None) -> Ranked:
    """``{item: rank}`` of ``start`` and every item it reaches (forward) or that reaches it
    (backward) through items ranked at most (forward) or at least (backward) ``within``;
    at most ``limit`` of them (fewer: all of them).

    One recursive query; the index on the edge columns drives it and each item's rank
    is read by primary key as it is met, so the database stops once ``limit`` are found.
    """
    sql = walk_sql(forward)
    values: tuple = (start, start_rank, within)
    if limit is not None:
        sql, values = f"{sql} LIMIT {m.database_proxy.param}", (*values, limit)
    rows = m.database_proxy.execute_sql(sql, values).fetchall()
    return {node: int(rank) for node, rank in rows}


def into_gap(side: Ranked, edge_rank: int, *, above: bool) -> list[tuple[str, int]] | None:
    """New ranks for ``side`` in the free ranks just above (or below) ``edge_rank``, in the
    side's own order, spread evenly; None when the gap is too small for all of them.

    Moving the forward side (what the edge's later end reaches) to just above the earlier
    end's rank keeps every other edge in order: what those items reach and was not walked
    is ranked above the gap; what reaches them is ranked below them already. The backward
    side, to just below the later end, likewise. A gap is free of every organization's
    ranks, which is more than needed (ranks are compared within one organization only).
    """
    order = sorted(side, key=side.__getitem__)
    count = len(order)
    neighbour = _neighbour(edge_rank, above=above)
    if neighbour is None:  # nothing beyond: room without end
        start, step = (edge_rank, GAP) if above else (edge_rank - GAP * (count + 1), GAP)
    else:
        low, high = (edge_rank, neighbour) if above else (neighbour, edge_rank)
        step = min(GAP, (high - low) // (count + 1))
        if step < 1:
            return None
        start = low if above else high - step * (count + 1)
    return [(node, start + step * (n + 1)) for n, node in enumerate(order)]


def deal_out(forward: Ranked, backward: Ranked) -> list[tuple[str, int]]:
    """Pearce-Kelly's own move: the ranks of both sides dealt out again, first to the
    backward side, then to the forward side, each in its old order; only the items whose
    rank changes are returned. Every other item keeps its rank."""
    old = {**forward, **backward}
    pool = sorted(old.values())
    order = sorted(backward, key=backward.__getitem__) + sorted(forward, key=forward.__getitem__)
    return [(node, rank) for node, rank in zip(order, pool, strict=True) if old[node] != rank]


def store(ranks: Sequence[tuple[str, int]]) -> None:
    """Store ``(item id, rank)`` pairs: one statement per thousand."""
    bulk.update_rows(m.Item, [m.Item.topo_rank], ranks)


def data_version() -> int | None:
    """On SQLite, the count of commits other connections made to the file that this thread's
    connection has seen (``PRAGMA data_version``: its own commits do not count); None elsewhere."""
    database = m.database_proxy.obj
    if not isinstance(database, pw.SqliteDatabase):
        return None
    return int(database.execute_sql("PRAGMA data_version").fetchone()[0])


@dataclass(frozen=True)
class Prewalk:
    """A re-ranking decided before the write lock (``graph.prewalk_ordering_edge``): the
    ``data_version`` read before its snapshot, the two ranks it started from, and the cycle
    it found or the ranks to write."""

    version: int
    low: int
    high: int
    cycle: list[str] | None
    moves: list[tuple[str, int]]

    def holds(self, low: int | None, high: int | None) -> bool:
        """Whether it still holds under the lock, where ``low`` and ``high`` were read: the same
        ranks, and no other connection committed anything since it began reading (so every row
        it read is as it was). Ask before the transaction writes: its own writes do not count."""
        return (low, high) == (self.low, self.high) and data_version() == self.version
