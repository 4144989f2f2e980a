"""The requirement status rule (contract §7.2), once, on plain values.

A requirement's status is calculated from all its descendant task items: none,
its own stored status; all cancelled, ``cancelled``; otherwise, ignoring the
cancelled ones, all completed, ``completed``; all pending, ``pending``; else
``in_progress``. The API, the chain report and the demo data all call this.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable


def aggregate_status(own_status: str, descendant_task_statuses: Counter) -> str:
    """A requirement's status from its descendant task items (contract §7.2)."""
    total = sum(descendant_task_statuses.values())
    if total == 0:
        return own_status
    cancelled = descendant_task_statuses["cancelled"]
    if cancelled == total:
        return "cancelled"
    active = total - cancelled
    if descendant_task_statuses["completed"] == active:
        return "completed"
    if descendant_task_statuses["pending"] == active:
        return "pending"
    return "in_progress"


def calculated_statuses(rows: Iterable[tuple[str, str | None, str, str]]) -> dict[str, str]:
    """Shown status of every item, from (id, parent_id, type, status) rows of one SOW.

    One pass up the tree per item would be quadratic on deep trees; instead each
    node's descendant counts are summed children-first, which is linear.
    """
    rows = list(rows)
    children: dict[str | None, list[str]] = defaultdict(list)
    info: dict[str, tuple[str, str]] = {}
    for item_id, parent_id, item_type, status in rows:
        children[parent_id].append(item_id)
        info[item_id] = (item_type, status)

    counts: dict[str, Counter] = {}
    order: list[str] = []
    stack = [item_id for item_id, parent_id, _, _ in rows if parent_id not in info]
    seen: set[str] = set()
    while stack:  # pre-order; reversed, it visits children before parents
        node = stack.pop()
        if node in seen:  # a corrupt parent loop must not hang us
            continue
        seen.add(node)
        order.append(node)
        stack.extend(children.get(node, ()))
    for node in reversed(order):
        total: Counter = Counter()
        for child in children.get(node, ()):
            child_type, child_status = info[child]
            total += counts.get(child, Counter())
            if child_type == "task_item":
                total[child_status] += 1
        counts[node] = total

    shown: dict[str, str] = {}
    for item_id, (item_type, status) in info.items():
        if item_type == "requirement":
            shown[item_id] = aggregate_status(status, counts.get(item_id, Counter()))
        else:
            shown[item_id] = status
    return shown
