"""The item hierarchy's shape on plain values: nesting rows into a tree, walking one.

No storage here, so remote mode (``chain ready``, ``items tree``) nests what the server
sent without loading the database layer. The hierarchy is at most ``MAX_HIERARCHY_DEPTH``
levels deep (checked on create and import, ``item_rules.depth_problem``); data made before
that limit may be deeper, so every walk is iterative, and ``nest`` never nests deeper than
the limit.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from sowctl.foundation.budgets import MAX_HIERARCHY_DEPTH


def nest(rows: Sequence[tuple[str, str | None]], nodes: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Roots of the tree of ``nodes`` (each gets its children in its ``"children"`` list).

    ``rows`` are (id, parent_id) in sibling order. An item whose parent is not among them
    is a root; so is one on a parent loop (corrupt data), so that every item is shown
    once. Nesting stops at ``MAX_HIERARCHY_DEPTH``: deeper items are listed at that
    level, right after their ancestor there, in depth-first order, so that no encoder
    or decoder, ours or a client's, ever meets more than a bounded nesting.
    """
    children: dict[str | None, list[str]] = defaultdict(list)
    for item_id, parent_id in rows:
        children[parent_id if parent_id in nodes and parent_id != item_id else None].append(item_id)
    roots: list[dict[str, Any]] = []
    placed: set[str] = set()
    candidates = [*children.get(None, ()), *(item_id for item_id, _ in rows)]
    for root in candidates:
        if root in placed:
            continue
        # (item, level, the children list it goes into)
        stack: list[tuple[str, int, list[dict[str, Any]]]] = [(root, 1, roots)]
        while stack:
            item_id, level, siblings = stack.pop()
            if item_id in placed:
                continue
            placed.add(item_id)
            node = nodes[item_id]
            siblings.append(node)
            below = node["children"] if level < MAX_HIERARCHY_DEPTH else siblings
            stack.extend((kid, level + 1, below) for kid in reversed(children.get(item_id, ())))
    return roots


def walk(roots: Sequence[dict[str, Any]]) -> Iterable[tuple[int, dict[str, Any]]]:
    """(level, node) of a nested tree in depth-first order, level 0 for the roots; no recursion."""
    stack = [(0, node) for node in reversed(roots)]
    while stack:
        level, node = stack.pop()
        yield level, node
        stack.extend((level + 1, kid) for kid in reversed(node.get("children", ())))


def depth_first(rows: Sequence[tuple[str, str | None]]) -> list[str]:
    """The ids of ``rows`` (id, parent_id, in sibling order) in the order ``walk`` meets
    them in ``nest``'s tree: the order a tree body lists its items in."""
    nodes: dict[str, dict[str, Any]] = {item_id: {"id": item_id, "children": []} for item_id, _ in rows}
    return [node["id"] for _, node in walk(nest(rows, nodes))]
