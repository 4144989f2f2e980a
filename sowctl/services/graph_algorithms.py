"""The ordering graph's pure algorithms: no database, linear and iterative.

An *ordering edge* ``(before, after)`` says that item ``before`` comes first
(``ordering_edge``). Cycles are reported in "waits-for" order (see
``sowctl.services.graph``). Chains thousands of items deep must not hit Python's
recursion limit, so every walk is iterative.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Iterable, Mapping, Sequence

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


def shortest_path(edges: Iterable[Edge], start: str, goal: str) -> list[str] | None:
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
