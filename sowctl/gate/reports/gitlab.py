"""GitLab Code Quality JSON (``artifacts:reports:codequality``): a list of issues.

Each finding is one issue with GitLab's documented fields: ``description``,
``check_name`` (the risk kind), ``fingerprint`` (the finding's stable fingerprint),
``severity`` (``info``, ``minor``, ``major``, ``critical`` or ``blocker``) and
``location.path`` / ``location.lines.begin`` (the pseudo-path ``sow/<SOW id>``, line 1:
dependencies live in a database, not in a file of the repository).
"""

from __future__ import annotations

import hashlib
import json
from json.encoder import encode_basestring
from typing import Any

from sowctl.gate.reports.sarif import location_path
from sowctl.output.safe import clean_text

# Severity of a finding that fails the check, by kind; one that does not is minor, and an
# accepted or baselined one info (GitLab has no notion of either, so the text says which).
FAILING_SEVERITY = {"circular": "blocker", "critical": "critical"}


def _severity(finding: dict[str, Any]) -> str:
    if finding["fails"]:
        return FAILING_SEVERITY.get(finding["kind"], "major")
    if finding["state"] in ("accepted", "baseline"):
        return "info"
    return "minor"


def _description(finding: dict[str, Any]) -> str:
    """The issue's text, made safe like every other surface's (no control characters)."""
    return clean_text(_raw_description(finding))


def _raw_description(finding: dict[str, Any]) -> str:
    acceptance = finding.get("acceptance")
    if finding["state"] == "accepted" and acceptance is not None:
        return (
            f"[accepted by {acceptance['owner']} until {acceptance['expires']}: {acceptance['reason']}] "
            + finding["message"]
        )
    if finding["state"] == "expired" and acceptance is not None:
        return f"[acceptance expired on {acceptance['expires']}] " + finding["message"]
    if finding["state"] == "baseline":
        return "[in baseline] " + finding["message"]
    return finding["message"]


def _issue(description: str, check: str, fingerprint: str, severity: str, sow_id: str) -> dict[str, Any]:
    return {
        "type": "issue",
        "description": description,
        "check_name": check,
        "fingerprint": fingerprint,
        "severity": severity,
        "categories": ["Bug Risk"],
        "location": {"path": location_path(sow_id), "lines": {"begin": 1}},
    }


def _dump(value: Any) -> str:
    # Compact: with ``indent`` the json module leaves its C encoder (see reports.sarif).
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def render(summary: dict[str, Any]) -> str:
    """Each issue written as text around its one free-text field (``description``, JSON-escaped):
    twice as fast as a dict per issue (see reports.sarif); the other values are known words and
    hex fingerprints."""
    location = _dump({"path": location_path(summary["sowId"]), "lines": {"begin": 1}})
    issues = [
        f'{{"type":"issue","description":{encode_basestring(_description(finding))},'
        f'"check_name":"sowctl-chain-{finding["kind"]}","fingerprint":"{finding["fingerprint"]}",'
        f'"severity":"{_severity(finding)}","categories":["Bug Risk"],"location":{location}}}'
        for finding in summary["findings"]
    ]
    return "[" + ",".join(issues) + "]\n"


def render_error(sow_id: str, message: str, exit_code: int) -> str:
    fingerprint = hashlib.sha256(f"error\x1f{sow_id}".encode()).hexdigest()
    text = clean_text(f"sowctl chain check could not run (exit {exit_code}): {message}")
    return _dump([_issue(text, "sowctl-chain-error", fingerprint, "blocker", sow_id)]) + "\n"
