"""The risks a CI gate checks on a SOW's chain, and which task items are ready: the rules, once.

Pure functions on the chain (``GET /api/dependencies/chain`` with
``include=external,risks``): ``chain check``'s on its flat report, ``chain ready`` and
``chain blocked``'s on its tree report (``schemas.chain.ChainReport``: made in process in
local mode, read back from the server's body in remote mode), so local and remote mode
give the same answers. Dates are judged by the report's ``asOf``, the server's day, like
the server's own ``overdue``.

Kinds of risk, one finding each:

* ``circular``: a cycle in the stored ordering (one finding per tangled group);
* ``critical``: risk ``critical`` while open (active or blocked);
* ``overdue``: ``slaDate`` before today while open;
* ``blocked``: status ``blocked``;
* ``escalation``: ``escalationDate`` before today while open;
* ``conflict``: item statuses contradict the order: an item is ``in_progress`` or
  ``completed`` while an item it waits for (through an open dependency) is not
  ``completed``;
* ``external``: an ``active`` external dependency whose ``slaDate`` is today or
  within the next N days (``--due-within``); a passed one is ``overdue``.

*Waits for*: an open dependency of type depends_on, prerequisite or successor makes
its source wait for its target (an item, or an external party); ``blocks`` makes its
target wait for its source; ``related_to`` orders nothing. A resolved or cancelled
dependency no longer makes anyone wait.

Every finding has a fingerprint: a hash of its kind, the SOW and the ids of the
dependency and items involved (never titles, dates or positions), so it survives
unrelated edits and reordering, and a baseline or an accepted risk keeps matching it.
"""

from __future__ import annotations

import hashlib
import re
from datetime import date, timedelta
from typing import Any

from sowctl.foundation.errors import InvalidInput, quoted, suggestion
from sowctl.operations.chain import chain_body
from sowctl.schemas.chain import ChainReport, DependencyRow
from sowctl.services import dependency_rules as rules
from sowctl.services import hierarchy
from sowctl.services.graph_algorithms import SOURCE_FIRST, TARGET_FIRST

RISK_KINDS = ("circular", "critical", "overdue", "blocked", "escalation", "conflict", "external")
DEFAULT_FAIL_ON = ("circular", "critical", "overdue")
DEFAULT_DUE_WITHIN_DAYS = 14
# What a chain body must be asked for with, for these rules to see every field they read.
INCLUDE = "external,risks"
INCLUDED = ("external", "risks")

# Title and help text of each kind: the reports' rule descriptions (SARIF rules, JUnit
# suites, the Markdown table) and docs/ci-gate.md say the same.
KIND_TITLES = {
    "circular": "Circular dependency",
    "critical": "Critical dependency",
    "overdue": "Overdue dependency",
    "blocked": "Blocked dependency",
    "escalation": "Escalation date passed",
    "conflict": "Status contradicts the order",
    "external": "External dependency due soon",
}
KIND_HELP = {
    "circular": "Items wait for each other in a loop, so none of them can start. Cancel or change "
    "one of the dependencies named in the cycle.",
    "critical": "An open (active or blocked) dependency with risk level critical. Resolve it, or "
    "lower its risk level once the risk is under control.",
    "overdue": "An open dependency whose SLA date has passed. Resolve it, or agree a new SLA date.",
    "blocked": "A dependency with status blocked: the work it guards cannot go on.",
    "escalation": "An open dependency whose escalation date has passed: escalate it to its owner, "
    "or set a new escalation date.",
    "conflict": "An item is in progress or completed while an item it waits for is not completed. "
    "Correct the statuses, or the dependency.",
    "external": "An active external dependency whose SLA date falls within the look-ahead window "
    "(--due-within). Confirm the external party will deliver.",
}
STARTED = ("in_progress", "completed")
DONE = "completed"
_DURATION = re.compile(r"(\d{1,5})\s*([dw]?)")


def parse_fail_on(text: str | None) -> tuple[str, ...]:
    """``--fail-on`` as a tuple of risk kinds; None means the default set."""
    if text is None:
        return DEFAULT_FAIL_ON
    kinds = tuple(dict.fromkeys(part.strip().lower() for part in text.split(",") if part.strip()))
    unknown = [kind for kind in kinds if kind not in RISK_KINDS]
    if unknown or not kinds:
        shown = f"unknown issue kind {quoted(unknown[0])}" if unknown else "no issue kind given"
        hint = suggestion(unknown[0], list(RISK_KINDS)) if unknown else ""
        raise InvalidInput.for_field("--fail-on", f"{shown} (choose from {', '.join(RISK_KINDS)}){hint}")
    return kinds


def parse_due_within(text: str | None) -> int:
    """``--due-within``: days as ``14d``, ``2w`` or a plain number of days."""
    if text is None:
        return DEFAULT_DUE_WITHIN_DAYS
    match = _DURATION.fullmatch(text.strip().lower())
    if not match:
        problem = f"{quoted(text)} is not a number of days (e.g. 14d or 2w)"
        raise InvalidInput.for_field("--due-within", problem)
    return int(match.group(1)) * (7 if match.group(2) == "w" else 1)


def fingerprint(kind: str, sow_id: str, *ids: str) -> str:
    """A stable id of a finding: its kind, its SOW and the ids of what it involves."""
    return hashlib.sha256("\x1f".join((kind, sow_id, *ids)).encode()).hexdigest()


# --- describing a dependency ---------------------------------------------------------
# On a body's entry (``chain show`` shows bodies).


def is_external(entry: dict[str, Any]) -> bool:
    return entry.get("isExternal", entry["targetItem"].get("id") is None)


def item_label(ref: dict[str, Any]) -> str:
    return ref["title"] if ref.get("id") is None else f"{ref['title']} ({ref['id']})"


def describe(kind: str, issue: Any, *, with_id: bool = True) -> str:
    """One line for a finding's subject: a cycle's path, or a dependency and what it links."""
    if kind == "circular":
        return "circular dependency: " + " -> ".join([*issue, issue[0]])
    target = issue["targetItem"]
    target_text = f"external: {target['title']}" if is_external(issue) else item_label(target)
    return (
        f"{issue['id'] + ': ' if with_id else ''}{item_label(issue['sourceItem'])} {issue['dependencyType']} "
        f"{target_text} (risk {issue['riskLevel']}, {issue['status']})"
    )


# --- waits-for --------------------------------------------------------------------------


def _row_waits_for(row: DependencyRow) -> tuple[str, str | None] | None:
    """(waiting item id, the item it waits for; None for the external party) for an open
    dependency row that orders two things (see *Waits for* above); None otherwise."""
    _id, source_id, target_id, kind, _risk, status, external = row[:7]
    if not rules.is_open(status):
        return None
    if external:
        return (source_id, None) if kind in TARGET_FIRST else None
    if kind in TARGET_FIRST:
        return source_id, target_id
    if kind in SOURCE_FIRST:
        return target_id, source_id
    return None


# --- findings ---------------------------------------------------------------------------


class _Labels:
    """The words of a report's dependencies, as a body's entries would give them."""

    def __init__(self, report: ChainReport) -> None:
        self.items = report.items

    def item(self, item_id: str | None) -> tuple[str | None, str | None, str]:
        """(title, shown status, label) of an item a dependency names."""
        item = None if item_id is None else self.items.get(item_id)
        title = None if item is None else item.title
        status = None if item is None else item.status
        return title, status, str(title) if item_id is None else f"{title} ({item_id})"

    def describe(self, row: DependencyRow) -> str:
        dep_id, source_id, target_id, kind, risk, status, external, external_target = row[:8]
        target = f"external: {external_target}" if external else self.item(target_id)[2]
        return f"{dep_id}: {self.item(source_id)[2]} {kind} {target} (risk {risk}, {status})"


def _require_risk_fields(report: ChainReport) -> date:
    if report.as_of is None:
        raise InvalidInput.for_field("include", f"the chain body must be asked for with include={INCLUDE}")
    return report.as_of


def _text(value: Any) -> str | None:
    """A date as a body writes it (the driver gives text on SQLite, a date on PostgreSQL)."""
    return None if value is None else str(value)


def findings(report: ChainReport, due_within_days: int = DEFAULT_DUE_WITHIN_DAYS) -> list[dict[str, Any]]:
    """Every finding of every kind in a flat chain report, kind by kind, in the report's order.

    Each: ``{"kind", "fingerprint", "dependencyId" (None for a cycle), "itemIds",
    "message", "subject"}``; the subject is the cycle (item ids) or the position of the
    dependency in the report's rows.
    """
    today = _require_risk_fields(report)
    horizon = (today + timedelta(days=due_within_days)).isoformat()
    today_text = today.isoformat()
    sow_id = report.sow_id
    found: dict[str, list[dict[str, Any]]] = {kind: [] for kind in RISK_KINDS}
    for cycle in report.circular:
        ids = sorted(cycle)
        found["circular"].append(
            {
                "kind": "circular",
                "fingerprint": fingerprint("circular", sow_id, *ids),
                "dependencyId": None,
                "itemIds": list(cycle),
                "message": describe("circular", cycle),
                "subject": cycle,
            }
        )
    labels = _Labels(report)
    described: dict[int, str] = {}  # a dependency's description, once however many kinds it has

    def add(kind: str, position: int, item_ids: list[str], detail: str = "") -> None:
        row = report.dependencies[position]
        text = described.get(position)
        if text is None:
            text = described[position] = labels.describe(row)
        found[kind].append(
            {
                "kind": kind,
                "fingerprint": fingerprint(kind, sow_id, row[0], *item_ids),
                "dependencyId": row[0],
                "itemIds": item_ids,
                "message": text + detail,
                "subject": position,
            }
        )

    critical, overdue = set(report.critical), set(report.overdue)
    for position, row in enumerate(report.dependencies):
        _id, source_id, target_id, _kind, _risk, status, external, _target = row[:8]
        sla, escalation = _text(row[8]), _text(row[9])
        ids = [source_id] if external or target_id is None else [source_id, target_id]
        if position in critical:
            add("critical", position, ids)
        if position in overdue:
            add("overdue", position, ids, f"; SLA date {sla} has passed")
        if status == "blocked":
            add("blocked", position, ids)
        if escalation is not None and escalation < today_text and rules.is_open(status):
            add("escalation", position, ids, f"; escalation date {escalation} has passed")
        waiter_id, before_id = (None if external else _row_waits_for(row)) or (None, None)
        if waiter_id is not None and before_id is not None:  # ordered, between two items
            _, waiter_status, waiter = labels.item(waiter_id)
            _, before_status, before = labels.item(before_id)
            if waiter_status in STARTED and before_status != DONE:
                detail = f"; {waiter} is {waiter_status} but waits for {before}, which is {before_status}"
                add("conflict", position, [waiter_id, before_id], detail)
        if status == "active" and external and sla is not None and today_text <= sla <= horizon:
            days = (date.fromisoformat(sla) - today).days
            when = "today" if days == 0 else f"in {days} day(s)"
            add("external", position, ids, f"; SLA date {sla} is {when}")
    return [finding for kind in RISK_KINDS for finding in found[kind]]


def check_chain(
    report: ChainReport,
    fail_on: tuple[str, ...] = DEFAULT_FAIL_ON,
    due_within_days: int = DEFAULT_DUE_WITHIN_DAYS,
) -> dict[str, Any]:
    """The CI verdict on a flat chain report (asked for with ``include=external,risks``).

    ``{"sowId", "asOf", "failOn", "dueWithinDays", "counts", "issues", "findings", "usesBaseline",
    "passed"}``:
    ``issues`` lists each kind's subjects (cycles, the dependencies' entries as the chain's
    body gives them), ``findings`` each finding with its fingerprint, ``state`` (``new``
    until a baseline or an accepted risk says otherwise, see ``gate.verdict``) and whether
    it ``fails`` the check.
    """
    found = findings(report, due_within_days)
    entries: list[dict[str, Any]] = []
    if any(finding["dependencyId"] is not None for finding in found):
        entries = chain_body(report, INCLUDED)["dependencies"]
    issues: dict[str, list[Any]] = {kind: [] for kind in RISK_KINDS}
    out = []
    for finding in found:
        subject = finding["subject"]
        issues[finding["kind"]].append(subject if finding["dependencyId"] is None else entries[subject])
        out.append(
            {key: value for key, value in finding.items() if key != "subject"}
            | {"state": "new", "inBaseline": False, "fails": finding["kind"] in fail_on}
        )
    as_of = _require_risk_fields(report)
    return {
        "sowId": report.sow_id,
        "asOf": as_of.isoformat(),
        "failOn": list(fail_on),
        "dueWithinDays": due_within_days,
        "counts": {kind: len(subjects) for kind, subjects in issues.items()},
        "issues": issues,
        "findings": out,
        "usesBaseline": False,
        "passed": not any(finding["fails"] for finding in out),
    }


def titles(report: ChainReport) -> dict[str, str | None]:
    """The titles of the items the report's dependencies name, by id (the reports' words)."""
    found: dict[str, str | None] = {}
    for row in report.dependencies:
        for item_id in (row[1], None if row[6] else row[2]):
            if item_id is not None:
                item = report.items.get(item_id)
                found[item_id] = None if item is None else item.title
    return found


# --- ready and waiting task items -------------------------------------------------------


def readiness(report: ChainReport) -> dict[str, Any]:
    """Task items of a tree chain report (``format=tree``, ``include=external,risks``) that are
    not completed or cancelled, split into those whose every prerequisite is completed
    (``ready``) and those still waiting (``waiting``, each with what it waits for).

    ``{"sowId", "ready": [ITEM], "waiting": [ITEM + "waitsFor": [{"dependencyId",
    "itemId" (absent for an external party), "title", "status" (the item's, or the
    external dependency's)}]]}``, items in the tree body's order (hierarchy, then orderIndex),
    an item's prerequisites in the order of its items' dependencies there.
    """
    _require_risk_fields(report)
    if report.tree is None:
        raise InvalidInput.for_field("format", "the chain must be asked for with format=tree")
    order = hierarchy.depth_first([(row.id, row.parent_id) for row in report.tree])
    by_source: dict[str, list[DependencyRow]] = {}
    for row in report.dependencies:
        by_source.setdefault(row[1], []).append(row)
    waiting_for: dict[str, list[dict[str, Any]]] = {}
    for source_id in order:
        for row in by_source.get(source_id, ()):
            blocker = _blocker(report, row)
            if blocker is not None:
                waiting_for.setdefault(blocker[0], []).append(blocker[1])
    tree = {row.id: row for row in report.tree}
    ready, waiting = [], []
    for item_id in order:
        item = tree[item_id]
        if item.type != "task_item" or item.status in (DONE, "cancelled"):
            continue
        shown = {"id": item.id, "title": item.title, "status": item.status}
        blockers = waiting_for.get(item_id)
        if blockers:
            waiting.append(shown | {"waitsFor": blockers})
        else:
            ready.append(shown)
    return {"sowId": report.sow_id, "ready": ready, "waiting": waiting}


def _blocker(report: ChainReport, row: DependencyRow) -> tuple[str, dict[str, Any]] | None:
    """(waiting item id, what it waits for, as ``readiness`` shows it) for a dependency that
    still makes an item wait: open, ordering, and not on a completed item."""
    found = _row_waits_for(row)
    if found is None:
        return None
    waiter_id, before_id = found
    dep_id, status, external, external_target = row[0], row[5], row[6], row[7]
    if external:
        return waiter_id, {"dependencyId": dep_id, "title": external_target, "status": status}
    before = report.items.get(str(before_id))
    before_status = None if before is None else before.status
    if before_status == DONE:
        return None
    title = None if before is None else before.title
    return waiter_id, {"dependencyId": dep_id, "itemId": before_id, "title": title, "status": before_status}
