"""GitHub Actions workflow commands: ``::error``/``::warning``/``::notice`` annotations.

GitHub shows only the first few annotations of a step, so past ``MAX_ANNOTATIONS``
per kind one more line says how many were left out; the reports list everything.
Messages are made safe (``output.safe.clean``) and escaped as GitHub's toolkit does (``%``,
CR, LF; also ``:`` and ``,`` in properties), so no text from the data can end the line and
start a command of its own.
"""

from typing import Any

from sowctl.gate.risks import KIND_TITLES, RISK_KINDS
from sowctl.output.safe import clean

MAX_ANNOTATIONS = 50


def escape_data(text: str) -> str:
    """Workflow-command message escaping (GitHub's toolkit: %, CR, LF), after the text is made
    safe to print (``output.safe.clean``: line breaks become spaces, other controls visible)."""
    return clean(text).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _level(finding: dict[str, Any], fail_on: list[str]) -> str:
    if finding["fails"]:
        return "error"
    return "notice" if finding["state"] in ("accepted", "baseline") else "warning"


def _note(finding: dict[str, Any]) -> str:
    acceptance: dict[str, Any] = finding.get("acceptance") or {}  # given when accepted or expired
    if finding["state"] == "accepted":
        return f" (accepted by {acceptance['owner']} until {acceptance['expires']}: {acceptance['reason']})"
    if finding["state"] == "expired":
        return f" (acceptance by {acceptance['owner']} expired {acceptance['expires']})"
    return " (in baseline)" if finding["state"] == "baseline" else ""


def annotations(summary: dict[str, Any]) -> list[str]:
    """One line per finding: errors for those that fail the check, notices for accepted or
    baselined ones, warnings for kinds the check does not fail on."""
    lines: list[str] = []
    for kind in RISK_KINDS:
        found = [finding for finding in summary["findings"] if finding["kind"] == kind]
        title = escape_property(f"{KIND_TITLES[kind]} in SOW {summary['sowId']}")
        for finding in found[:MAX_ANNOTATIONS]:
            level = _level(finding, summary["failOn"])
            lines.append(f"::{level} title={title}::{escape_data(finding['message'] + _note(finding))}")
        if len(found) > MAX_ANNOTATIONS:
            level = "error" if any(f["fails"] for f in found[MAX_ANNOTATIONS:]) else "warning"
            more = len(found) - MAX_ANNOTATIONS
            lines.append(f"::{level} title={title}::{more} more {kind} issue(s) not annotated")
    return lines


def error_annotation(sow_id: str, message: str, exit_code: int) -> str:
    title = escape_property(f"sowctl chain check of SOW {sow_id} could not run")
    return f"::error title={title}::{escape_data(f'exit {exit_code}: {message}')}"
