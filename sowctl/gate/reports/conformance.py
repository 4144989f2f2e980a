"""Reports of ``sowctl conformance`` in the formats CI systems read: JUnit XML, Markdown, SARIF.

The summary is the one ``--json`` prints. JUnit: one test suite per server (and one for
the comparison), one test case per route and method with a difference, a ``<failure>``
per difference; a passing run is one passing case. Markdown: the counts by kind, then a
table of the differences. SARIF 2.1.0: one rule per kind of difference, one result (an
error) per difference, located at the request's URL on the server that answered it (a
comparison's, on the first server). Values go through the same escaping as ``chain check``'s
reports.
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

from sowctl.conformance.checks import KINDS
from sowctl.foundation.version import VERSION
from sowctl.gate.reports.junit import xml_attr, xml_text
from sowctl.gate.reports.markdown import md_text
from sowctl.gate.reports.sarif import SCHEMA_URI
from sowctl.output.safe import clean_text

# What each kind of difference means, as the SARIF rules describe them.
KIND_DESCRIPTIONS = {
    "status": "The answer's HTTP status is not one the description gives for this request",
    "headers": "A header the description requires is missing or wrong",
    "envelope": "An error answer is not in its group's error envelope",
    "shape": "The body's structure (fields present, required, extra) departs from the description",
    "type": "A value has another JSON type than the description's",
    "format": "A value does not have the description's format (date, date-time, money, enum)",
    "pagination": "Paging (limit, offset, totals) does not behave as described",
    "comparison": "The two servers answered the same request differently",
}

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


def sarif(summary: dict[str, Any]) -> str:
    rules = [
        {
            "id": f"conformance.{kind}",
            "shortDescription": {"text": KIND_DESCRIPTIONS[kind]},
            "defaultConfiguration": {"level": "error"},
        }
        for kind in KINDS
    ]
    first = summary["servers"][0] if summary["servers"] else ""
    results = [
        {
            "ruleId": f"conformance.{d['kind']}",
            "ruleIndex": KINDS.index(d["kind"]),
            "level": "error",
            "message": {"text": clean_text(f"{d['method']} {d['path']}: {d['where']}: {d['detail']}")},
            "locations": [_location(first if d["server"] == "comparison" else d["server"], d)],
        }
        for d in summary["differences"]
        if d["kind"] in KINDS
    ]
    driver = {"name": "sowctl conformance", "version": VERSION, "rules": rules}
    run = {"tool": {"driver": driver}, "results": results}
    document = {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}
    return json.dumps(document, ensure_ascii=False, indent=2) + "\n"


def _location(server: str, difference: dict[str, Any]) -> dict[str, Any]:
    uri = server.rstrip("/") + difference["path"]
    return {
        "physicalLocation": {"artifactLocation": {"uri": uri}},
        "logicalLocations": [{"name": f"{difference['method']} {difference['route']}", "kind": "function"}],
    }
