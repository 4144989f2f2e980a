"""Reports of ``sowctl conformance`` in the formats CI systems read: JUnit XML and Markdown.

The summary is the one ``--json`` prints. JUnit: one test suite per server (and one for
the comparison), one test case per route and method with a difference, a ``<failure>``
per difference; a passing run is one passing case. Markdown: the counts by kind, then a
table of the differences. Values go through the same escaping as ``chain check``'s reports.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from sowctl.gate.reports.junit import xml_attr, xml_text
from sowctl.gate.reports.markdown import md_text

MAX_ROWS = 200


def _by_server(summary: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    grouped: dict[str, list[dict[str, Any]]] = {server: [] for server in summary["servers"]}
    for difference in summary["differences"]:
        grouped.setdefault(difference["server"], []).append(difference)
    return grouped


def _failure(d: dict[str, Any]) -> str:
    message = xml_attr(f"{d['kind']} at {d['where']}")
    return (
        f'<failure message="{message}" type="{xml_attr(d["kind"])}">'
        f"{xml_text(d['step'] + ': ' + d['path'] + ': ' + d['detail'])}</failure>"
    )


def junit(summary: dict[str, Any]) -> str:
    suites = []
    total = 0
    for server, found in _by_server(summary).items():
        cases: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for difference in found:
            cases[f"{difference['method']} {difference['route']}"].append(difference)
        body = []
        for name, differences in cases.items():
            failed_checks = "".join(_failure(d) for d in differences)
            body.append(
                f'<testcase classname="{xml_attr(server)}" name="{xml_attr(name)}">{failed_checks}</testcase>'
            )
        if not body:
            body.append(f'<testcase classname="{xml_attr(server)}" name="no differences"/>')
        total += len(body)
        failed = len(cases)
        suite = f'name="conformance of {xml_attr(server)}" tests="{len(body)}" failures="{failed}" errors="0"'
        suites.append(f"<testsuite {suite}>" + "".join(body) + "</testsuite>")
    failures = len({(d["server"], d["method"], d["route"]) for d in summary["differences"]})
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<testsuites name="sowctl conformance" tests="{total}" failures="{failures}">'
        + "".join(suites)
        + "</testsuites>\n"
    )


def markdown(summary: dict[str, Any]) -> str:
    servers = ", ".join(md_text(server) for server in summary["servers"])
    verdict = "passed" if summary["passed"] else f"failed: {len(summary['differences'])} differences"
    lines = [f"## Conformance of {servers}", "", f"**{verdict}**", ""]
    if summary["counts"]:
        lines += ["| Kind | Differences |", "| --- | ---: |"]
        lines += [f"| {md_text(kind)} | {count} |" for kind, count in summary["counts"].items()]
        lines.append("")
    if summary["differences"]:
        lines += ["| Server | Request | Kind | Where | Detail |", "| --- | --- | --- | --- | --- |"]
        for d in summary["differences"][:MAX_ROWS]:
            request = md_text(f"{d['method']} {d['path']}")
            lines.append(
                f"| {md_text(d['server'])} | {request} | {md_text(d['kind'])} | {md_text(d['where'])} "
                f"| {md_text(d['detail'])} |"
            )
        if len(summary["differences"]) > MAX_ROWS:
            lines.append(f"\n{len(summary['differences']) - MAX_ROWS} more differences are in --json.")
        lines.append("")
    if summary["skipped"]:
        lines += ["Not checked:", ""] + [f"- {md_text(reason)}" for reason in summary["skipped"]] + [""]
    return "\n".join(lines)
