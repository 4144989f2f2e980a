"""The requirement status rule, once, on plain values.

A requirement's status is calculated from all its descendant task items: none,
its own stored status; all cancelled, ``cancelled``; otherwise, ignoring the
cancelled ones, all completed, ``completed``; all pending, ``pending``; else
``in_progress``. The API, the chain report and the demo data all call this, on the
counts each item stores (``storage.tallies``) or on counts made from rows.

The hierarchy is at most ``MAX_HIERARCHY_DEPTH`` levels deep (``depth_problem``, checked
on create and import). Data made before that limit may be deeper, so every walk here is
iterative, and ``nest`` never nests deeper than the limit: what lies below it is shown
at the last level, right after its ancestor there, in depth-first order.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Container, Iterable, Sequence
from typing import Any

from sowctl.foundation.budgets import MAX_HIERARCHY_DEPTH
from sowctl.storage.tallies import NONE_BELOW, count_below


def aggregate_status(own_status: str, below: Sequence[int]) -> str:
    """A requirement's status from the task items below it: ``below`` is their number
    per status, in ``tallies.STATUSES`` order."""
    pending, _in_progress, completed, cancelled = below
    total = sum(below)
    if total == 0:
        return own_status
    if cancelled == total:
        return "cancelled"
    active = total - cancelled
    if completed == active:
        return "completed"
    if pending == active:
        return "pending"
    return "in_progress"


def shown_status(item_type: str, own_status: str, below: Sequence[int]) -> str:
    """The status the API shows: a requirement's is calculated, any other item's is its own."""
    if item_type != "requirement":
        return own_status
    return aggregate_status(own_status, below)


def calculated_statuses(rows: Iterable[tuple[str, str | None, str, str]]) -> dict[str, str]:
    """Shown status of every item, from (id, parent_id, type, status) rows of one SOW,
    counting what lies below each item (linear: ``tallies.count_below``). The items'
    stored counts make this unneeded for reading them; the chain report and the checks
    of those counts use it."""
    rows = list(rows)
    counts = count_below(rows)
    return {
        item_id: shown_status(item_type, status, counts.get(item_id, NONE_BELOW))
        for item_id, _, item_type, status in rows
    }


def depth_problem(parent_depth: int) -> str | None:
    """Why an item under a parent at level ``parent_depth`` (0: no parent) is refused, if it is."""
    if parent_depth + 1 > MAX_HIERARCHY_DEPTH:
        return (
            f"the hierarchy would be deeper than {MAX_HIERARCHY_DEPTH} levels "
            "(choose a parent item higher up)"
        )
    return None


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


def parents_first(ids: Sequence[str], parents: Sequence[str | None], known: Container[str]) -> list[int]:
    """Indexes of the items, each parent before its children and otherwise in the given order:
    a child that comes before its parent waits, and goes right after it.

    ``parents[i]`` is the parent of ``ids[i]``; only a parent in ``known`` is waited for (one
    elsewhere, or none, places the item at once). Items on a parent loop, or below one, never
    get their turn: they are left out (the importer reports them; ``len`` tells).
    """
    order: list[int] = []
    placed: set[str] = set()
    waiting: dict[str, list[int]] = defaultdict(list)
    for i, parent_id in enumerate(parents):
        if parent_id is not None and parent_id in known and parent_id not in placed and parent_id != ids[i]:
            waiting[parent_id].append(i)
            continue
        stack = [i]
        while stack:
            j = stack.pop()
            order.append(j)
            placed.add(ids[j])
            stack.extend(reversed(waiting.pop(ids[j], ())))
    return order
