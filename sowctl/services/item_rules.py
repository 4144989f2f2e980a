"""The requirement status rule, once, on plain values.

A requirement's status is calculated from all its descendant task items: none,
its own stored status; all cancelled, ``cancelled``; otherwise, ignoring the
cancelled ones, all completed, ``completed``; all pending, ``pending``; else
``in_progress``. The API, the chain report and the demo data all call this, on the
counts each item stores (``storage.tallies``) or on counts made from rows.

The hierarchy is at most ``MAX_HIERARCHY_DEPTH`` levels deep (``depth_problem``, checked
on create and import). Data made before that limit may be deeper, so every walk here is
iterative; nesting rows into a tree is ``services.hierarchy``'s (no storage there).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Container, Iterable, Sequence

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
