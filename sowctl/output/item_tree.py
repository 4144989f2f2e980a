"""The item hierarchy as a tree, built from an item list (works for either backend)."""

from __future__ import annotations

from collections import defaultdict

from sowctl.output.terminal import current
from sowctl.services.hierarchy import nest, walk

STATUS_STYLE = {
    "pending": "yellow",
    "in_progress": "cyan",
    "completed": "green",
    "cancelled": "dim",
}


def build_tree(items: list[dict]) -> list[dict]:
    """Nest items under their parents, siblings in orderIndex order (the core's ``nest``:
    no recursion, nesting bounded however deep the stored hierarchy is)."""
    ordered = sorted(items, key=lambda k: (k["orderIndex"], k["createdAt"], k["id"]))
    nodes = {item["id"]: {**item, "children": []} for item in ordered}
    return nest([(item["id"], item.get("parentItemId")) for item in ordered], nodes)


def render_tree(sow_id: str, roots: list[dict], *, rich: bool) -> None:
    if not rich:
        _plain(roots)
        return
    from rich.tree import Tree

    from sowctl.output.cells import styled
    from sowctl.output.render import console, deepest_tree_level

    longest_id = max((len(str(node["id"])) for _, node in walk(roots)), default=0)
    if console().width < longest_id + 8:  # not even a top-level id fits whole beside its guide
        _plain(roots)
        return
    tree = Tree(styled(("SOW " + sow_id, "bold")))
    # Deeper nodes are drawn at the deepest level, not dropped; that level also leaves room
    # for the longest id on a line of its own, since Rich would split an id that cannot fit.
    # Such a node says how many levels deeper it is (">> T ...": two levels below its guide).
    deepest = max(0, min(deepest_tree_level(), (console().width - longest_id - 1) // 4 - 1))
    branches = [tree]  # branches[level] takes the nodes of that level
    for level, node in walk(roots):
        deeper = max(0, level - deepest)
        level = min(level, deepest)
        style = STATUS_STYLE.get(node["status"], "")
        kind = "R" if node["type"] == "requirement" else "T"
        label = styled(
            (">" * deeper + " " if deeper else "", "dim"),
            (kind, "bold"),
            f" {node['title']} ",
            (node["status"], style),
            " ",
            (node["id"], "dim"),
        )
        del branches[level + 1 :]
        branches.append(branches[level].add(label))
    console().print(tree)


def _plain(roots: list[dict]) -> None:
    """One line per item, indented two spaces per level; a title's tabs and newlines become spaces."""
    from sowctl.output.render import text

    for level, node in walk(roots):
        cells = ["  " * level + text(node["title"]), *(text(node[key]) for key in ("type", "status", "id"))]
        current().out.write("\t".join(cells) + "\n")


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
