"""The ordering graph that dependencies impose on items (contract §7.2).

An *ordering edge* ``(before, after)`` says that item ``before`` comes first.
``depends_on``, ``prerequisite`` and ``successor`` put the target before the
source; ``blocks`` puts the source before the target; ``related_to``, external
and cancelled dependencies impose no order. The non-cancelled dependencies must
never form a cycle in this order.

Cycles are *reported* in "waits-for" order: in ``A -> B -> C -> A`` each item
waits for the next one (A depends on B, B on C, C on A), which reads like the
requests that built it. For ``blocks`` the arrow therefore points from the
blocked item to the blocking one.

Two halves:

* Pure, in-memory algorithms (``ordering_edge``, ``strongly_connected_components``,
  ``find_cycles``, ``critical_path``, ``analyse`` for both at once): linear and
  iterative (chains thousands of items deep must not hit Python's recursion
  limit), no database.
* The cycle check on write (``find_closing_cycle``), which walks the indexed
  ``Dependency.before_item_id``/``after_item_id`` columns in SQL so that it reads
  only the part of the graph reachable from the new edge, with no query per edge.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Iterable, Mapping, Sequence

from sowctl import models as m

# Dependency types whose target comes before their source, and whose source comes first.
TARGET_FIRST = frozenset({"depends_on", "prerequisite", "successor"})
SOURCE_FIRST = frozenset({"blocks"})

Edge = tuple[str, str]


def ordering_edge(
    dependency_type: str,
    source_id: str,
    target_id: str | None,
    status: str,
    is_external: bool,
) -> Edge | None:
    """The ``(before, after)`` edge a dependency imposes, or None when it imposes none.

    This is what ``Dependency.before_item_id``/``after_item_id`` must hold; every
    writer of dependency rows (the service, the dataset importer) fills them with it.
    """
    if is_external or target_id is None or status == "cancelled":
        return None
    if dependency_type in TARGET_FIRST:
        return (target_id, source_id)
    if dependency_type in SOURCE_FIRST:
        return (source_id, target_id)
    return None  # related_to


# --- in-memory algorithms -------------------------------------------------------


def successors(edges: Iterable[Edge]) -> dict[str, list[str]]:
    """Adjacency lists with duplicate edges removed, in first-seen order."""
    out: dict[str, dict[str, None]] = {}
    for before, after in edges:
        nexts = out.get(before)
        if nexts is None:
            nexts = out[before] = {}
        nexts[after] = None
        if after not in out:
            out[after] = {}
    return {node: list(nexts) for node, nexts in out.items()}


def strongly_connected_components(succ: Mapping[str, Sequence[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative: every node in exactly one component, O(V + E)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    counter = 0
    for root in sorted(succ):
        if root in index:
            continue
        # Each frame: (node, position of the next successor to look at).
        work: list[tuple[str, int]] = [(root, 0)]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, position = work[-1]
            nexts = succ.get(node, ())
            if position < len(nexts):
                work[-1] = (node, position + 1)
                child = nexts[position]
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, 0))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(component)
    return components


def find_cycles(edges: Iterable[Edge]) -> list[list[str]]:
    """One cycle per tangled group of items, as item ids in waits-for order.

    Each strongly connected component with a cycle yields the shortest cycle
    through its smallest item id, starting at that id and not repeating it at
    the end. A component can hold further cycles; they share its items, and
    breaking the reported one is the first step to untangle it. Sorted by first id.
    """
    return analyse(edges)[0]


def analyse(edges: Iterable[Edge]) -> tuple[list[list[str]], list[str]]:
    """``(find_cycles(edges), critical_path(edges))`` in one linear pass, usually.

    Kahn's topological pass does both jobs on an acyclic graph: it orders every
    node, or leaves exactly the nodes on or after a cycle. Only then does Tarjan
    run, on those leftovers alone, and a second pass orders the graph without the
    edges inside cycles.
    """
    succ = successors(edges)
    order = _topological_order(succ)
    if len(order) == len(succ):
        return [], _longest_chain(succ, order)
    placed = set(order)
    leftover = {node: nexts for node, nexts in succ.items() if node not in placed}
    components = strongly_connected_components(leftover)
    component_of: dict[str, int] = {}
    for number, component in enumerate(components):
        for node in component:
            component_of[node] = number
    # An edge is inside a cycle when both ends are leftovers of the same component.
    dag = {
        node: [nxt for nxt in nexts if component_of.get(nxt) != component_of[node]]
        if node in component_of
        else nexts
        for node, nexts in succ.items()
    }
    return _cycles(succ, components), _longest_chain(dag, _topological_order(dag))


def _cycles(succ: Mapping[str, Sequence[str]], components: list[list[str]]) -> list[list[str]]:
    cycles: list[list[str]] = []
    for component in components:
        start = min(component)
        if len(component) == 1:
            if start in succ.get(start, ()):  # an item ordered before itself
                cycles.append([start])
            continue
        members = set(component)
        # Waits-for edges run against the ordering edges, so walk predecessors,
        # each list sorted so the cycle found does not depend on storage order.
        preds: dict[str, list[str]] = defaultdict(list)
        for node in sorted(members):
            for nxt in succ[node]:
                if nxt in members:
                    preds[nxt].append(node)
        cycles.append(_shortest_cycle(start, preds))
    return sorted(cycles, key=lambda cycle: cycle[0])


def _shortest_cycle(start: str, nexts: Mapping[str, Sequence[str]]) -> list[str]:
    """BFS from ``start`` back to itself along ``nexts``; the path without the repeat."""
    came_from: dict[str, str] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for nxt in nexts.get(node, ()):
            if nxt == start:
                path = [node]
                while path[-1] != start:
                    path.append(came_from[path[-1]])
                return path[::-1]
            if nxt not in came_from:
                came_from[nxt] = node
                queue.append(nxt)
    raise ValueError(f"{start} is on no cycle")  # callers pass a member of a cyclic component


def critical_path(edges: Iterable[Edge]) -> list[str]:
    """The longest chain of ordered items (by number of items), first item first.

    Edges inside a cycle are ignored, which leaves a DAG; on it a topological
    pass computes each item's longest chain ending there. Ties go to the smaller
    item id at every step, so the answer is deterministic. No edges: ``[]``.
    """
    return analyse(edges)[1]


def _topological_order(succ: Mapping[str, Sequence[str]]) -> list[str]:
    """Kahn's algorithm: the nodes it can order; those on or after a cycle are left out."""
    indegree = dict.fromkeys(succ, 0)
    for nexts in succ.values():
        for nxt in nexts:
            indegree[nxt] += 1
    order = [node for node, degree in indegree.items() if degree == 0]
    for node in order:  # the list grows while we walk it: a queue without the deque
        for nxt in succ[node]:
            indegree[nxt] -= 1
            if indegree[nxt] == 0:
                order.append(nxt)
    return order


def _longest_chain(dag: Mapping[str, Sequence[str]], order: list[str]) -> list[str]:
    """Longest path by node count in a DAG, given a topological order of it."""
    length = dict.fromkeys(order, 1)
    previous: dict[str, str] = {}
    for node in order:
        reach = length[node] + 1
        for nxt in dag[node]:
            best = length[nxt]
            if reach > best or (reach == best and node < previous[nxt]):
                length[nxt] = reach
                previous[nxt] = node
    if not previous:
        return []
    end = min(previous, key=lambda node: (-length[node], node))
    path = [end]
    while path[-1] in previous:
        path.append(previous[path[-1]])
    return path[::-1]


def is_acyclic(edges: Iterable[Edge]) -> bool:
    return not find_cycles(edges)


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
    # Name the cycle from the nodes the walk met before reaching ``before``: on a
    # dense graph that is a small ball around ``after``, not all it can reach.
    size = _discovery_rank(after, before)
    path = _shortest_path(_ball_edges(after, size), after, before) if size is not None else None
    if path is None:  # the database walked in another order the second time: read it all
        path = _shortest_path(reachable_edges(after), after, before)
    if path is None:  # only if the rows changed under us, which the lock prevents
        return [before, after, before]
    # ``path`` runs after -> ... -> before in ordering terms; reversed it is the
    # waits-for order, and the new edge (``after`` waits for ``before``) closes it.
    return [*reversed(path), before]


def _shortest_path(edges: Iterable[Edge], start: str, goal: str) -> list[str] | None:
    """BFS along ``edges``: the nodes of a shortest path ``start -> ... -> goal``, or None."""
    succ = successors(edges)
    came_from: dict[str, str] = {start: start}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        if node == goal:
            path = [goal]
            while path[-1] != start:
                path.append(came_from[path[-1]])
            return path[::-1]
        for nxt in succ.get(node, ()):
            if nxt not in came_from:
                came_from[nxt] = node
                queue.append(nxt)
    return None
