"""The chain of a SOW (``GET /api/dependencies/chain``): its declaration, and its body
made of the service's ``ChainReport`` (``services.chain``).

Flat format (``format=flat``, the default)::

    {
      "sowId": "sow-1",
      "dependencies": [ENTRY, ...],            # oldest first (createdAt, then id)
      "issues": {
        "circular": [["item-a", "item-b"], ...],
        "overdue": [ENTRY, ...],
        "critical": [ENTRY, ...]
      },
    }

    ENTRY = {"id", "sourceItem": {"id", "title"}, "targetItem": {"id", "title"},
             "dependencyType", "riskLevel", "status"}

These are the spec's fields and no more, so a strict client of the real service
reads the body. Choices the spec leaves open, fixed here:

* An external dependency has no target item, so its ``targetItem`` is
  ``{"title": <externalTarget>}``: the id is left out rather than null, so every
  field keeps the spec's type (a string).
* Extensions come only when asked for, with ``include=`` (comma-separated):
  ``criticalPath`` adds the body's ``criticalPath``; ``external`` adds
  ``isExternal`` to every entry and ``externalTarget`` to the external ones;
  ``risks`` adds what the CI check's risk rules read (``gate.risks``):
  ``slaDate`` and ``escalationDate`` on entries that have them, ``type`` and
  (shown) ``status`` on every item reference with an id, and the body's ``asOf``,
  the server's date (UTC) the report was made on, so a client judges dates by the
  same day as the server's ``overdue``.
* ``issues.circular`` lists cycles in the *stored* data (an import may bring
  them; the API never creates one): one per tangled group of items, as item ids
  in waits-for order (each waits for the next, the last for the first), starting
  at the group's smallest id. See ``graph.find_cycles``.
* ``issues.overdue`` and ``issues.critical`` list the matching entries with the
  contract's definitions (open = status active or blocked).
* ``criticalPath`` (``include=criticalPath``) is the longest chain of items that must follow
  one another, counted in items, first item first, over the non-cancelled
  ordering edges minus those inside a cycle; ``[]`` when nothing is ordered.

Tree format (``format=tree``) nests the SOW's items in their hierarchy, each
with the dependencies it is the source of::

    {
      "sowId": "sow-1",
      "items": [{"id", "title", "type", "status", "dependencies": [ENTRY, ...],
                 "children": [ITEM, ...]}, ...],
      "issues": {...},                          # as in the flat format
      "criticalPath": [...]                     # with include=criticalPath
    }

Items come in ``orderIndex`` order within a level, and requirements show their
calculated status, as item lists do.
"""

from __future__ import annotations

from datetime import date
from typing import Any

from sowctl.foundation.errors import InvalidInput
from sowctl.operations import LazyModule, Request, Result, operation
from sowctl.operations.groups import Group
from sowctl.schemas.chain import ChainItem, ChainReport, ChainTreeRow
from sowctl.schemas.dependencies import ChainFlat, ChainQuery, ChainTree

service = LazyModule("sowctl.services.chain")
collector = LazyModule("sowctl.services.collector")
hierarchy = LazyModule("sowctl.services.hierarchy")


def parse_include(text: str | None) -> tuple[str, ...]:
    """``include=a,b`` as a tuple of names (unchecked: ``chain_report`` names a bad one)."""
    return tuple(dict.fromkeys(part.strip() for part in (text or "").split(",") if part.strip()))


def chain_report(request: Request) -> ChainReport:
    """What the chain operation answers, before it is made a body (the CI gate's input)."""
    query = request.query
    return service.chain_report(request.caller, query.sow_id, query.format, parse_include(query.include))


def chain_body(report: ChainReport, include: tuple[str, ...] = ()) -> dict[str, Any]:
    """The API's body of a ``ChainReport``, with the extensions in ``include``."""
    with_risks = "risks" in include
    with_external = "external" in include
    # One {"id", "title"} object per item, shared by every entry that names it: a
    # tenth of the allocations on a dense SOW. The body is only ever serialised.
    refs: dict[str | None, dict[str, Any]] = {}
    named = report.items

    def ref(item_id: str | None) -> dict[str, Any]:
        found = refs.get(item_id)
        if found is None:
            item = None if item_id is None else named.get(item_id)
            found = refs[item_id] = {"id": item_id, "title": None if item is None else item.title}
            if with_risks and item is not None and item.type is not None:
                found["type"], found["status"] = item.type, item.status
        return found

    entries: list[dict[str, Any]] = []
    for row in report.dependencies:
        dep_id, source_id, target_id, dep_type, risk, status, external, external_target, sla_date = row[:9]
        is_external = bool(external)
        entry: dict[str, Any] = {
            "id": dep_id,
            "sourceItem": ref(source_id),
            "targetItem": {"title": external_target} if is_external else ref(target_id),
            "dependencyType": dep_type,
            "riskLevel": risk,
            "status": status,
        }
        if with_external:
            entry["isExternal"] = is_external
            if is_external:
                entry["externalTarget"] = external_target
        if with_risks:
            if sla_date is not None:
                entry["slaDate"] = str(sla_date)
            if row[9] is not None:
                entry["escalationDate"] = str(row[9])
        entries.append(entry)
    issues = {
        "circular": report.circular,
        "overdue": [entries[position] for position in report.overdue],
        "critical": [entries[position] for position in report.critical],
    }
    if report.tree is None:
        body = {"sowId": report.sow_id, "dependencies": entries, "issues": issues}
    else:
        body = {"sowId": report.sow_id, "items": _item_tree(report.tree, report, entries), "issues": issues}
    if "criticalPath" in include:
        body["criticalPath"] = report.critical_path
    if with_risks and report.as_of is not None:
        body["asOf"] = report.as_of.isoformat()
    return body


def _item_tree(
    tree: list[ChainTreeRow], report: ChainReport, entries: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The SOW's items nested by parent (``hierarchy.nest``: no recursion, bounded
    nesting), each with the entries of the dependencies it is the source of."""
    by_source: dict[str, list[dict[str, Any]]] = {}
    for row, entry in zip(report.dependencies, entries, strict=True):
        by_source.setdefault(row[1], []).append(entry)
    nodes = {
        row.id: {
            "id": row.id,
            "title": row.title,
            "type": row.type,
            "status": row.status,
            "dependencies": by_source.get(row.id, []),
            "children": [],
        }
        for row in tree
    }
    return hierarchy.nest([(row.id, row.parent_id) for row in tree], nodes)


def read_report(body: dict[str, Any]) -> ChainReport:
    """A chain body read back into the report it was made of (remote mode): the rows of its
    entries, an item for each item reference, the issues' positions; for a tree body, its
    items too. An entry without ``isExternal`` (asked for without include=external) is
    external when its target has no id."""
    if "dependencies" in body:
        entries, tree = body["dependencies"], None
    elif "items" in body:
        entries, tree = _read_tree(body["items"])
    else:
        raise InvalidInput.for_field("format", "the chain body must be asked for with format=flat or tree")
    rows: list[tuple[Any, ...]] = []
    items: dict[str, ChainItem] = {}
    for entry in entries:
        source, target = entry["sourceItem"], entry["targetItem"]
        for ref in (source, target):
            if ref.get("id") is not None and ref["id"] not in items:
                items[ref["id"]] = ChainItem(ref["id"], ref.get("title"), ref.get("type"), ref.get("status"))
        external = entry.get("isExternal", target.get("id") is None)
        rows.append(
            (
                entry["id"],
                source.get("id"),
                target.get("id"),
                entry["dependencyType"],
                entry["riskLevel"],
                entry["status"],
                external,
                entry.get("externalTarget", target.get("title") if external else None),
                entry.get("slaDate"),
                entry.get("escalationDate"),
            )
        )
    for row in tree or ():
        items.setdefault(row.id, ChainItem(row.id, row.title, row.type, row.status))
    position = {row[0]: at for at, row in enumerate(rows)}
    issues = body["issues"]
    as_of = body.get("asOf")
    return ChainReport(
        sow_id=body["sowId"],
        as_of=None if as_of is None else date.fromisoformat(as_of),
        dependencies=rows,
        items=items,
        circular=issues["circular"],
        overdue=[position[entry["id"]] for entry in issues["overdue"]],
        critical=[position[entry["id"]] for entry in issues["critical"]],
        critical_path=body.get("criticalPath", []),
        tree=tree,
    )


def _read_tree(nodes: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[ChainTreeRow]]:
    """A tree body's entries and its items, depth-first: each item with the parent it is
    shown under (the one ``nest`` puts it under again), each entry after the one before it
    under its source item, so the report made a body again is the same body."""
    entries: list[dict[str, Any]] = []
    tree: list[ChainTreeRow] = []
    pending: list[tuple[dict[str, Any], str | None]] = [(node, None) for node in reversed(nodes)]
    while pending:  # no recursion: a body nests as deep as the server's bound
        node, parent_id = pending.pop()
        tree.append(ChainTreeRow(node["id"], parent_id, node["type"], node["status"], node["title"]))
        entries.extend(node["dependencies"])
        pending.extend((child, node["id"]) for child in reversed(node["children"]))
    return entries, tree


@operation(
    name="chain.get",
    method="GET",
    path="/api/dependencies/chain",
    group=Group.A,
    summary="Dependency chain of a SOW, with circular, overdue and critical issues "
    "(and, with include=criticalPath, the critical path)",
    query=ChainQuery,
    response=ChainFlat | ChainTree,
    report=True,
    typed=chain_report,
    read_back=read_report,
)
def get_chain(request: Request) -> Result:
    include = parse_include(request.query.include)
    # The body's containers all live until it is written: the collector would walk them for nothing.
    with collector.collector_paused():
        return Result(chain_body(chain_report(request), include))
