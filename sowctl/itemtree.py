"""The item hierarchy as a tree, built from an item list (works for either backend)."""

from __future__ import annotations

import sys
from collections import defaultdict

STATUS_STYLE = {
    "pending": "yellow",
    "in_progress": "cyan",
    "completed": "green",
    "cancelled": "dim",
}


def build_tree(items: list[dict]) -> list[dict]:
    """Nest items under their parents, siblings in orderIndex order."""
    children: dict[str | None, list[dict]] = defaultdict(list)
    ids = {item["id"] for item in items}
    for item in items:
        parent = item.get("parentItemId")
        children[parent if parent in ids else None].append(item)

    def node(item: dict, path: frozenset) -> dict:
        kids = [] if item["id"] in path else children.get(item["id"], [])
        ordered = sorted(kids, key=lambda k: (k["orderIndex"], k["createdAt"], k["id"]))
        inner = path | {item["id"]}
        return {**item, "children": [node(kid, inner) for kid in ordered]}

    roots = sorted(children.get(None, []), key=lambda k: (k["orderIndex"], k["createdAt"], k["id"]))
    return [node(root, frozenset()) for root in roots]


def render_tree(sow_id: str, roots: list[dict], *, rich: bool) -> None:
    if not rich:
        _plain(roots, 0)
        return
    from rich.markup import escape
    from rich.tree import Tree

    from sowctl.render import console

    tree = Tree(f"[bold]SOW {escape(sow_id)}[/]")

    def add(branch, node: dict) -> None:
        style = STATUS_STYLE.get(node["status"], "")
        kind = "R" if node["type"] == "requirement" else "T"
        label = (
            f"[bold]{kind}[/] {escape(node['title'])} "
            f"[{style}]{node['status']}[/] [dim]{escape(node['id'])}[/]"
        )
        sub = branch.add(label)
        for child in node["children"]:
            add(sub, child)

    for root in roots:
        add(tree, root)
    console().print(tree)


def _plain(nodes: list[dict], depth: int) -> None:
    """One line per item, indented two spaces per level; a title's tabs and newlines become spaces."""
    from sowctl.render import text

    for node in nodes:
        cells = ["  " * depth + text(node["title"]), node["type"], node["status"], node["id"]]
        sys.stdout.write("\t".join(cells) + "\n")
        _plain(node["children"], depth + 1)


def cascade(item_id: str, items: list[dict], deps: list[dict]) -> tuple[list[str], list[str]]:
    """What deleting ``item_id`` takes with it: its descendants' ids and the ids of the
    dependencies whose source or target is the item or one of them (as the API deletes)."""
    children: dict[str | None, list[str]] = defaultdict(list)
    for item in items:
        children[item.get("parentItemId")].append(item["id"])
    doomed, stack = [item_id], [item_id]
    while stack:
        for child in children.get(stack.pop(), []):
            if child not in doomed:
                doomed.append(child)
                stack.append(child)
    gone = set(doomed)
    linked = [d["id"] for d in deps if d.get("sourceItemId") in gone or d.get("targetItemId") in gone]
    return doomed[1:], linked
