"""Markdown summary (GitHub's job summary, merge-request notes): a table of the risk kinds,
the findings, and a Mermaid diagram of the failing part of the chain.

Every value from the data goes through ``md_text`` (table cells) or
``chart.mermaid_text`` (diagram labels): a title cannot break the table, open a link,
mention someone, inject HTML or end the diagram.
"""

from __future__ import annotations

import re
from typing import Any

from sowctl.chart import mermaid_text
from sowctl.services.chain_risks import KIND_TITLES, RISK_KINDS

MAX_ROWS = 200  # findings listed; the counts above the list cover them all
MAX_EDGES = 100  # arrows drawn; past that the diagram says how many were left out
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
# CommonMark lets any ASCII punctuation be escaped with a backslash; these are the ones that
# start or end inline syntax (emphasis, code, links, tables, autolinks, strikethrough).
_PUNCTUATION = re.compile(r"([\\`*_{}\[\]()#+\-.!|~])")
_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "@": "&#64;"}


def md_text(value: Any) -> str:
    """Text safe in a Markdown table cell or paragraph: one line, no markup, no HTML, no mention."""
    text = " ".join(_CONTROL.sub(" ", str(value)).split())
    text = _PUNCTUATION.sub(r"\\\1", text)
    # Entities last: their own "#" must not be escaped.
    return "".join(_ENTITIES.get(char, char) for char in text)


def _counts(summary: dict[str, Any]) -> list[str]:
    lines = [
        "| Risk | Findings | Failing | Accepted | In baseline | Fails the check |",
        "| --- | ---: | ---: | ---: | ---: | --- |",
    ]
    for kind in RISK_KINDS:
        found = [f for f in summary["findings"] if f["kind"] == kind]
        failing = sum(f["fails"] for f in found)
        accepted = sum(f["state"] == "accepted" for f in found)
        baseline = sum(f["state"] == "baseline" for f in found)
        checked = "yes" if kind in summary["failOn"] else "no"
        cells = [f"{KIND_TITLES[kind]} ({kind})", len(found), failing, accepted, baseline, checked]
        lines.append("| " + " | ".join(map(str, cells)) + " |")
    return lines


def _state(finding: dict[str, Any]) -> str:
    acceptance = finding.get("acceptance")
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
    dependency (source to target) or per step of a cycle (each waits for the next)."""
    nodes: dict[str, str] = {}
    edges: dict[tuple[str, str], list[str]] = {}

    def node(key: str, title: str | None) -> str:
        if key not in nodes:
            nodes[key] = f"n{len(nodes) + 1}"
            label = mermaid_text(key) if title is None else f"{mermaid_text(title)}<br/>{mermaid_text(key)}"
            shape = f'[/"{label}"/]' if key.startswith("external: ") else f'["{label}"]'
            lines.append(f"  {nodes[key]}{shape}")
        return nodes[key]

    lines = ["```mermaid", "flowchart LR"]
    failing = [f for f in summary["findings"] if f["fails"]]
    entries, titles = _index(summary)
    for finding in failing:
        if finding["kind"] == "circular":
            cycle = finding["itemIds"]
            for before, after in zip(cycle, [*cycle[1:], cycle[0]], strict=True):
                key = (node(before, titles.get(before)), node(after, titles.get(after)))
                edges.setdefault(key, []).append("circular")
            continue
        entry = entries[finding["dependencyId"]]
        source = node(entry["sourceItem"]["id"], entry["sourceItem"]["title"])
        if entry["targetItem"].get("id") is None:
            target = node(f"external: {entry['targetItem']['title']}", None)
        else:
            target = node(entry["targetItem"]["id"], entry["targetItem"]["title"])
        edges.setdefault((source, target), []).append(finding["kind"])
    shown = list(edges.items())[:MAX_EDGES]
    for (source, target), kinds in shown:
        lines.append(f'  {source} ==>|"{mermaid_text(" / ".join(dict.fromkeys(kinds)))}"| {target}')
    if len(edges) > MAX_EDGES:
        lines.append(f"  %% {len(edges) - MAX_EDGES} more failing link(s) not drawn")
    lines.append("```")
    return lines


def _index(summary: dict[str, Any]) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """Chain entries by dependency id, and item titles by item id, from the summary's issues."""
    entries: dict[str, dict[str, Any]] = {}
    titles: dict[str, str] = {}
    for subjects in summary["issues"].values():
        for subject in subjects:
            if isinstance(subject, dict):
                entries[subject["id"]] = subject
                for ref in (subject["sourceItem"], subject["targetItem"]):
                    if ref.get("id") is not None:
                        titles[ref["id"]] = ref["title"]
    return entries, titles


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
