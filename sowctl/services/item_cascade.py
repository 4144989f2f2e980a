"""What deleting an item takes with it, said once: the item's descendants, and every
dependency whose source or target is the item or one of them.

``services.items.delete_item`` deletes so in the database; the CLI says beforehand what
will go, from the items and dependencies it read (``cascade``, on their API objects). Plain
values only: remote mode reads it without importing the database's models.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any


def cascade(
    item_id: str, items: Iterable[Mapping[str, Any]], deps: Iterable[Mapping[str, Any]]
) -> tuple[list[str], list[str]]:
    """The ids of ``item_id``'s descendants (parents before children) and of the dependencies
    that go with it, from API objects (``parentItemId``, ``sourceItemId``, ``targetItemId``)."""
    children: dict[str | None, list[str]] = defaultdict(list)
    for item in items:
        children[item.get("parentItemId")].append(item["id"])
    doomed, gone, stack = [item_id], {item_id}, [item_id]
    while stack:
        for child in children.get(stack.pop(), []):
            if child not in gone:
                doomed.append(child)
                gone.add(child)
                stack.append(child)
    linked = [d["id"] for d in deps if d.get("sourceItemId") in gone or d.get("targetItemId") in gone]
    return doomed[1:], linked
