"""Markdown summary (GitHub's job summary, merge-request notes): a table of the risk kinds,
the findings, and a Mermaid diagram of the failing part of the chain.

Every value from the data goes through ``md_text`` (table cells) or
``chart.mermaid_text`` (diagram labels): a title cannot break the table, open a link,
mention someone, inject HTML or end the diagram.
"""

from __future__ import annotations

import re
from typing import Any

from sowctl.gate.reports import ITEM_TITLES
from sowctl.gate.risks import KIND_TITLES, RISK_KINDS
from sowctl.output.chart import mermaid_node, mermaid_text
from sowctl.output.safe import clean

MAX_ROWS = 200  # findings listed; the counts above the list cover them all
MAX_EDGES = 100  # arrows drawn; past that the diagram says how many were left out
EXTERNAL = "external: "  # a diagram key of an external party, never an item id
# CommonMark lets any ASCII punctuation be escaped with a backslash; these are the ones that
# start or end inline syntax (emphasis, code, links, tables, autolinks, strikethrough).
_PUNCTUATION = re.compile(r"([\\`*_{}\[\]()#+\-.!|~])")
_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "@": "&#64;"}


def md_text(value: Any) -> str:
    """Text safe in a Markdown table cell or paragraph: one line, no markup, no HTML, no mention."""
    text = " ".join(clean(str(value)).split())
    text = _PUNCTUATION.sub(r"\\\1", text)
    # Entities last: their own "#" must not be escaped.
    return "".join(_ENTITIES.get(char, char) for char in text)


def _counts(summary: dict[str, Any]) -> list[str]:
    lines = [
        "| Risk | Findings | Failing | Accepted | In baseline | Fails the check |",
        "| --- | ---: | ---: | ---: | ---: | --- |",
    ]
    tally = {kind: [0, 0, 0, 0] for kind in RISK_KINDS}  # findings, failing, accepted, in baseline
    for finding in summary["findings"]:
        counts = tally[finding["kind"]]
        counts[0] += 1
        counts[1] += finding["fails"]
        counts[2] += finding["state"] == "accepted"
        counts[3] += finding["state"] == "baseline"
    for kind, (found, failing, accepted, baseline) in tally.items():
        checked = "yes" if kind in summary["failOn"] else "no"
        cells = [f"{KIND_TITLES[kind]} ({kind})", found, failing, accepted, baseline, checked]
        lines.append("| " + " | ".join(map(str, cells)) + " |")
    return lines


def _state(finding: dict[str, Any]) -> str:
    acceptance: dict[str, Any] = finding.get("acceptance") or {}  # given when accepted or expired
    if finding["state"] == "accepted":
        return f"accepted by {acceptance['owner']} until {acceptance['expires']}: {acceptance['reason']}"
    if finding["state"] == "expired":
        return f"acceptance by {acceptance['owner']} expired {acceptance['expires']}"
    return finding["state"]


def _findings(summary: dict[str, Any]) -> list[str]:
    findings = summary["findings"]
    if not findings:
        return ["No findings."]
    lines = ["| Risk | Dependency | Fails | State | Finding |", "| --- | --- | --- | --- | --- |"]
    for finding in findings[:MAX_ROWS]:
        cells = [
            finding["kind"],
            md_text(finding["dependencyId"] or "-"),
            "**yes**" if finding["fails"] else "no",
            md_text(_state(finding)),
            md_text(finding["message"]),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    if len(findings) > MAX_ROWS:
        lines.append(f"\n{len(findings) - MAX_ROWS} more finding(s) not listed; the reports list them all.")
    return lines


def _diagram(summary: dict[str, Any]) -> list[str]:
    """The failing findings as a flowchart: items and external parties, an arrow per
    dependency (source to target) or per step of a cycle (each waits for the next).

    At most ``MAX_EDGES`` arrows (a diagram of thousands renders as nothing): the first
    ones in the findings' order, then a comment says how many links were left out.
    """
    # Titles of the items a cycle names (its finding carries ids only), when the caller gave them.
    titles: dict[str, str] = dict(summary.get(ITEM_TITLES) or {})
    edges: dict[tuple[str, str], list[str]] = {}  # (source key, target key) -> kinds
    left_out = 0
    # issues[kind][i] is the subject of the i-th finding of that kind (see risks.check_chain).
    subjects = {kind: iter(found) for kind, found in summary["issues"].items()}
    for finding in summary["findings"]:
        subject = next(subjects[finding["kind"]])
        if not finding["fails"]:
            continue
        if finding["kind"] == "circular":
            cycle = finding["itemIds"]
            pairs = list(zip(cycle, [*cycle[1:], cycle[0]], strict=True))
        else:
            source, target = subject["sourceItem"], subject["targetItem"]
            titles[source["id"]] = source["title"]
            if target.get("id") is None:
                pairs = [(source["id"], EXTERNAL + target["title"])]
            else:
                titles[target["id"]] = target["title"]
                pairs = [(source["id"], target["id"])]
        for pair in pairs:
            kinds = edges.get(pair)
            if kinds is None:
                if len(edges) >= MAX_EDGES:
                    left_out += 1
                    continue
                kinds = edges[pair] = []
            kinds.append(finding["kind"])
    nodes: dict[str, str] = {}
    lines = ["```mermaid", "flowchart LR"]
    arrows = []
    for (source, target), kinds in edges.items():
        for key in (source, target):
            if key not in nodes:
                nodes[key] = f"n{len(nodes) + 1}"
                if key.startswith(EXTERNAL):
                    lines.append(mermaid_node(nodes[key], key[len(EXTERNAL) :], None))
                else:
                    lines.append(mermaid_node(nodes[key], titles.get(key), key))
        label = mermaid_text(" / ".join(dict.fromkeys(kinds)))
        arrows.append(f'  {nodes[source]} ==>|"{label}"| {nodes[target]}')
    lines += arrows
    if left_out:
        lines.append(f"  %% {left_out} more failing link(s) not drawn")
    lines.append("```")
    return lines


def render(summary: dict[str, Any]) -> str:
    verdict = "passed" if summary["passed"] else "failed"
    lines = [
        f"## sowctl chain check of SOW {md_text(summary['sowId'])}: {verdict}",
        "",
        f"As of {summary['asOf']}; fails on: {', '.join(summary['failOn'])}; "
        f"external dependencies due within {summary['dueWithinDays']} day(s).",
        "",
        *_counts(summary),
        "",
        "### Findings",
        "",
        *_findings(summary),
        "",
    ]
    if any(finding["fails"] for finding in summary["findings"]):
        lines += ["### Failing part of the chain", "", *_diagram(summary), ""]
    return "\n".join(lines) + "\n"


def render_error(sow_id: str, message: str, exit_code: int) -> str:
    return (
        f"## sowctl chain check of SOW {md_text(sow_id)}: could not run\n\n"
        f"Exit code {exit_code}: {md_text(message)}\n"
    )
