"""Contract mode's findings (``GET /_admin/contract``) as Markdown, JUnit XML and SARIF 2.1.0.

One finding per departure from the service's description that the logged requests relied on
(``sowctl.operations.contract``): its code, kind, how many requests and one instance. A
departure of a kind in ``fail_on`` fails; the others are shown as notes.
"""

from __future__ import annotations

import json
from typing import Any

from sowctl.foundation.version import VERSION
from sowctl.gate.reports.sarif import SCHEMA_URI
from sowctl.operations.contract import BY_CODE, DEPARTURES
from sowctl.output.safe import clean, clean_text

CONTRACT_LOCATION = "contract/requests"  # a pseudo-path: the findings come from a request log


def failing(report: dict[str, Any], fail_on: tuple[str, ...]) -> list[dict[str, Any]]:
    return [departure for departure in report["departures"] if departure["kind"] in fail_on]


def markdown(report: dict[str, Any], fail_on: tuple[str, ...]) -> str:
    failed = failing(report, fail_on)
    verdict = "fails" if failed else "passes"
    lines = [
        f"## sowctl contract mode: {verdict}",
        "",
        f"Mode `{report['mode']}`; failing kinds: {', '.join(fail_on) or 'none'}.",
        "",
    ]
    if not report["departures"]:
        return "\n".join([*lines, "No logged request relied on more than the service's description.", ""])
    lines += ["| Departure | Kind | Requests | Example | Fails |", "|---|---|---:|---|---|"]
    for departure in report["departures"]:
        fails = "yes" if departure["kind"] in fail_on else "no"
        row = [f"`{clean(departure['code'])}`", departure["kind"], str(departure["requests"])]
        lines.append("| " + " | ".join([*row, _cell(departure["example"]), fails]) + " |")
    return "\n".join([*lines, ""])


def junit(report: dict[str, Any], fail_on: tuple[str, ...]) -> str:
    from xml.sax.saxutils import quoteattr

    cases = []
    for departure in report["departures"]:
        name = quoteattr(clean_text(departure["code"]))
        text = quoteattr(clean_text(_message(departure)))
        failure = f"<failure message={text}/>" if departure["kind"] in fail_on else ""
        cases.append(f'<testcase classname="sowctl.contract" name={name}>{failure}</testcase>')
    if not cases:
        cases.append('<testcase classname="sowctl.contract" name="no departures"/>')
    failures = len(failing(report, fail_on))
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<testsuites name="sowctl contract" tests="{len(cases)}" failures="{failures}">'
        f'<testsuite name="contract mode" tests="{len(cases)}" failures="{failures}" errors="0">'
        + "".join(cases)
        + "</testsuite></testsuites>\n"
    )


def sarif(report: dict[str, Any], fail_on: tuple[str, ...]) -> str:
    rules = [
        {
            "id": departure.code,
            "shortDescription": {"text": departure.what},
            "fullDescription": {"text": f"{departure.kind}: {departure.what}. {departure.described}"},
            "defaultConfiguration": {"level": "error" if departure.kind in fail_on else "note"},
        }
        for departure in DEPARTURES
    ]
    location = {
        "physicalLocation": {"artifactLocation": {"uri": CONTRACT_LOCATION}, "region": {"startLine": 1}}
    }
    results = [
        {
            "ruleId": departure["code"],
            "ruleIndex": _rule_index(departure["code"]),
            "level": "error" if departure["kind"] in fail_on else "note",
            "message": {"text": clean_text(_message(departure))},
            "locations": [location],
        }
        for departure in report["departures"]
        if departure["code"] in BY_CODE
    ]
    document = {
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {"driver": {"name": "sowctl", "version": VERSION, "rules": rules}},
                "results": results,
            }
        ],
    }
    return json.dumps(document, ensure_ascii=False, indent=2) + "\n"


def _message(departure: dict[str, Any]) -> str:
    count = departure["requests"]
    what = {"extension": "an extension", "leniency": "a leniency"}.get(
        departure["kind"], "an unspecified answer"
    )
    return (
        f"{count} request{'' if count == 1 else 's'} relied on {what} "
        f"({departure['code']}), for example {departure['example']}"
    )


def _rule_index(code: str) -> int:
    return next(index for index, departure in enumerate(DEPARTURES) if departure.code == code)


def _cell(text: str) -> str:
    return clean(text).replace("|", "\\|").replace("`", "'")
