"""The risks a CI gate checks on a SOW's chain, and which task items are ready: the rules, once.

Pure functions on the API's chain body (``GET /api/dependencies/chain`` with
``include=external,risks``, see ``services.chain``), so ``chain check``,
``chain ready`` and ``chain blocked`` give the same answers in local mode (the body
built in process) and remote mode (the body read from the server). Dates are judged
by the body's ``asOf``, the server's day, like the server's own ``overdue``.

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
from sowctl.services import dependency_rules as rules
from sowctl.services.graph_algorithms import SOURCE_FIRST, TARGET_FIRST

RISK_KINDS = ("circular", "critical", "overdue", "blocked", "escalation", "conflict", "external")
DEFAULT_FAIL_ON = ("circular", "critical", "overdue")
DEFAULT_DUE_WITHIN_DAYS = 14
# What a chain body must be asked for with, for these rules to see every field they read.
INCLUDE = "external,risks"

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


def is_external(entry: dict[str, Any]) -> bool:
    return entry.get("isExternal", entry["targetItem"].get("id") is None)


def item_label(ref: dict[str, Any]) -> str:
    return ref["title"] if ref.get("id") is None else f"{ref['title']} ({ref['id']})"


def target_label(entry: dict[str, Any]) -> str:
    return (
        f"external: {entry['targetItem']['title']}" if is_external(entry) else item_label(entry["targetItem"])
    )


def describe(kind: str, issue: Any, *, with_id: bool = True) -> str:
    """One line for a finding's subject: a cycle's path, or a dependency and what it links."""
    if kind == "circular":
        return "circular dependency: " + " -> ".join([*issue, issue[0]])
    return (
        f"{issue['id'] + ': ' if with_id else ''}{item_label(issue['sourceItem'])} {issue['dependencyType']} "
        f"{target_label(issue)} (risk {issue['riskLevel']}, {issue['status']})"
    )


# --- waits-for --------------------------------------------------------------------------


def waits_for(entry: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """(waiting item id, what it waits for: an item reference or the external target)
    for an open dependency that orders two things; None otherwise."""
    if not rules.is_open(entry["status"]):
        return None
    kind = entry["dependencyType"]
    if is_external(entry):
        return (entry["sourceItem"]["id"], entry["targetItem"]) if kind in TARGET_FIRST else None
    if kind in TARGET_FIRST:
        return entry["sourceItem"]["id"], entry["targetItem"]
    if kind in SOURCE_FIRST:
        return entry["targetItem"]["id"], entry["sourceItem"]
    return None


def _conflict(entry: dict[str, Any]) -> tuple[dict, dict] | None:
    """(the started item, the unfinished item it waits for), when the dependency shows one."""
    found = waits_for(entry)
    if found is None or is_external(entry):
        return None
    waiter_id, before = found
    waiter = entry["sourceItem"] if entry["sourceItem"]["id"] == waiter_id else entry["targetItem"]
    if waiter.get("status") in STARTED and before.get("status") != DONE:
        return waiter, before
    return None


# --- findings ---------------------------------------------------------------------------


def _require_risk_fields(report: dict[str, Any]) -> date:
    if "asOf" not in report:
        raise InvalidInput.for_field("include", f"the chain body must be asked for with include={INCLUDE}")
    return date.fromisoformat(report["asOf"])


def findings(report: dict[str, Any], due_within_days: int = DEFAULT_DUE_WITHIN_DAYS) -> list[dict[str, Any]]:
    """Every finding of every kind in a flat chain body, kind by kind, in the body's order.

    Each: ``{"kind", "fingerprint", "dependencyId" (None for a cycle), "itemIds",
    "message", "subject"}``; the subject is the cycle (item ids) or the chain entry.
    """
    today = _require_risk_fields(report)
    horizon = (today + timedelta(days=due_within_days)).isoformat()
    today_text = today.isoformat()
    sow_id = report["sowId"]
    found: dict[str, list[dict[str, Any]]] = {kind: [] for kind in RISK_KINDS}
    for cycle in report["issues"]["circular"]:
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

    described: dict[str, str] = {}  # an entry's description, once however many kinds it has

    def add(kind: str, entry: dict[str, Any], item_ids: list[str], detail: str = "") -> None:
        text = described.get(entry["id"])
        if text is None:
            text = described[entry["id"]] = describe(kind, entry)
        found[kind].append(
            {
                "kind": kind,
                "fingerprint": fingerprint(kind, sow_id, entry["id"], *item_ids),
                "dependencyId": entry["id"],
                "itemIds": item_ids,
                "message": text + detail,
                "subject": entry,
            }
        )

    critical = {entry["id"] for entry in report["issues"]["critical"]}
    overdue = {entry["id"] for entry in report["issues"]["overdue"]}
    for entry in report["dependencies"]:
        status = entry["status"]
        ids = [ref["id"] for ref in (entry["sourceItem"], entry["targetItem"]) if ref.get("id") is not None]
        if entry["id"] in critical:
            add("critical", entry, ids)
        if entry["id"] in overdue:
            add("overdue", entry, ids, f"; SLA date {entry.get('slaDate')} has passed")
        if status == "blocked":
            add("blocked", entry, ids)
        escalation = entry.get("escalationDate")
        if escalation is not None and escalation < today_text and rules.is_open(status):
            add("escalation", entry, ids, f"; escalation date {escalation} has passed")
        conflict = _conflict(entry)
        if conflict is not None:
            waiter, before = conflict
            detail = (
                f"; {item_label(waiter)} is {waiter.get('status')} but waits for "
                f"{item_label(before)}, which is {before.get('status')}"
            )
            add("conflict", entry, [waiter["id"], before["id"]], detail)
        sla = entry.get("slaDate")
        if status == "active" and is_external(entry) and sla is not None and today_text <= sla <= horizon:
            days = (date.fromisoformat(sla) - today).days
            add(
                "external", entry, ids, f"; SLA date {sla} is {'today' if days == 0 else f'in {days} day(s)'}"
            )
    return [finding for kind in RISK_KINDS for finding in found[kind]]


def check_chain(
    report: dict[str, Any],
    fail_on: tuple[str, ...] = DEFAULT_FAIL_ON,
    due_within_days: int = DEFAULT_DUE_WITHIN_DAYS,
) -> dict[str, Any]:
    """The CI verdict on a flat chain body (asked for with ``include=external,risks``).

    ``{"sowId", "asOf", "failOn", "dueWithinDays", "counts", "issues", "findings", "usesBaseline",
    "passed"}``:
    ``issues`` lists each kind's subjects (cycles, chain entries), ``findings`` each
    finding with its fingerprint, ``state`` (``new`` until a baseline or an accepted
    risk says otherwise, see ``gate.verdict``) and whether it ``fails`` the check.
    """
    found = findings(report, due_within_days)
    issues: dict[str, list[Any]] = {kind: [] for kind in RISK_KINDS}
    out = []
    for finding in found:
        issues[finding["kind"]].append(finding["subject"])
        out.append(
            {key: value for key, value in finding.items() if key != "subject"}
            | {"state": "new", "inBaseline": False, "fails": finding["kind"] in fail_on}
        )
    return {
        "sowId": report["sowId"],
        "asOf": report["asOf"],
        "failOn": list(fail_on),
        "dueWithinDays": due_within_days,
        "counts": {kind: len(subjects) for kind, subjects in issues.items()},
        "issues": issues,
        "findings": out,
        "usesBaseline": False,
        "passed": not any(finding["fails"] for finding in out),
    }


# --- ready and waiting task items -------------------------------------------------------


def readiness(tree: dict[str, Any]) -> dict[str, Any]:
    """Task items of a tree chain body (``format=tree``, ``include=external,risks``) that are
    not completed or cancelled, split into those whose every prerequisite is completed
    (``ready``) and those still waiting (``waiting``, each with what it waits for).

    ``{"sowId", "ready": [ITEM], "waiting": [ITEM + "waitsFor": [{"dependencyId",
    "itemId" (absent for an external party), "title", "status" (the item's, or the
    external dependency's)}]]}``, items in the tree's order (hierarchy, then orderIndex).
    """
    _require_risk_fields(tree)
    nodes: list[dict[str, Any]] = []
    stack = list(reversed(tree["items"]))
    while stack:  # depth-first, in the tree's order, without recursion
        node = stack.pop()
        nodes.append(node)
        stack.extend(reversed(node["children"]))
    waiting_for: dict[str, list[dict[str, Any]]] = {}
    for node in nodes:
        for entry in node["dependencies"]:
            found = waits_for(entry)
            if found is None:
                continue
            waiter_id, before = found
            if is_external(entry):
                blocker = {"dependencyId": entry["id"], "title": before["title"], "status": entry["status"]}
            elif before.get("status") != DONE:
                blocker = {
                    "dependencyId": entry["id"],
                    "itemId": before["id"],
                    "title": before["title"],
                    "status": before.get("status"),
                }
            else:
                continue
            waiting_for.setdefault(waiter_id, []).append(blocker)
    ready, waiting = [], []
    for node in nodes:
        if node["type"] != "task_item" or node["status"] in (DONE, "cancelled"):
            continue
        row = {"id": node["id"], "title": node["title"], "status": node["status"]}
        blockers = waiting_for.get(node["id"])
        if blockers:
            waiting.append(row | {"waitsFor": blockers})
        else:
            ready.append(row)
    return {"sowId": tree["sowId"], "ready": ready, "waiting": waiting}
