"""SARIF 2.1.0 (GitHub code scanning and other SARIF viewers).

One rule per risk kind, with its help text; one result per finding with a stable
``partialFingerprints`` entry; the SOW, the dependency and the items as logical
locations. Dependencies live in a database, not a file, so each result's physical
location is a pseudo-path ``sow/<SOW id>`` (line 1): code scanning needs one to show
an alert. Baseline findings have ``baselineState: unchanged`` (new ones ``new``);
accepted ones carry an accepted suppression (an expired acceptance a rejected one).
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

import sowctl
from sowctl.services.chain_risks import KIND_HELP, KIND_TITLES, RISK_KINDS

SCHEMA_URI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
FINGERPRINT_KEY = "sowctlFinding/v1"


def location_path(sow_id: str) -> str:
    """The pseudo-path every report points at for a SOW's findings (a relative URI)."""
    return "sow/" + quote(sow_id, safe="")


def _driver(fail_on: list[str]) -> dict[str, Any]:
    return {
        "name": "sowctl",
        "version": sowctl.__version__,
        "rules": [
            {
                "id": kind,
                "name": "".join(word.capitalize() for word in KIND_TITLES[kind].split()),
                "shortDescription": {"text": KIND_TITLES[kind]},
                "fullDescription": {"text": KIND_HELP[kind]},
                "help": {"text": KIND_HELP[kind]},
                "defaultConfiguration": {"level": "error" if kind in fail_on else "warning"},
            }
            for kind in RISK_KINDS
        ],
    }


def _result(finding: dict[str, Any], sow_id: str, fail_on: list[str], uses_baseline: bool) -> dict[str, Any]:
    logical = [{"name": sow_id, "fullyQualifiedName": sow_id, "kind": "sow"}]
    if finding["dependencyId"] is not None:
        logical.append(
            {
                "name": finding["dependencyId"],
                "fullyQualifiedName": f"{sow_id}/{finding['dependencyId']}",
                "kind": "dependency",
            }
        )
    logical.extend(
        {"name": item, "fullyQualifiedName": f"{sow_id}/{item}", "kind": "item"}
        for item in finding["itemIds"]
    )
    result: dict[str, Any] = {
        "ruleId": finding["kind"],
        "ruleIndex": RISK_KINDS.index(finding["kind"]),
        "level": "error" if finding["kind"] in fail_on else "warning",
        "message": {"text": finding["message"]},
        "locations": [
            {
                "physicalLocation": {
                    "artifactLocation": {"uri": location_path(sow_id)},
                    "region": {"startLine": 1},
                },
                "logicalLocations": logical,
            }
        ],
        "partialFingerprints": {FINGERPRINT_KEY: finding["fingerprint"]},
        "properties": {"state": finding["state"], "failsCheck": finding["fails"]},
    }
    if uses_baseline:
        result["baselineState"] = "unchanged" if finding.get("inBaseline") else "new"
    acceptance = finding.get("acceptance")
    if acceptance is not None:
        expired = finding["state"] == "expired"
        result["suppressions"] = [
            {
                "kind": "external",
                "status": "rejected" if expired else "accepted",
                "justification": f"{acceptance['reason']} (owner {acceptance['owner']}, "
                f"{'expired' if expired else 'expires'} {acceptance['expires']})",
            }
        ]
    return result


def _log(run: dict[str, Any]) -> str:
    return (
        json.dumps({"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}, indent=2, ensure_ascii=False)
        + "\n"
    )


def render(summary: dict[str, Any]) -> str:
    sow_id = summary["sowId"]
    uses_baseline = bool(summary.get("usesBaseline"))
    return _log(
        {
            "tool": {"driver": _driver(summary["failOn"])},
            "automationDetails": {"id": f"sowctl/chain-check/{sow_id}/"},
            "invocations": [{"executionSuccessful": True, "exitCode": 0 if summary["passed"] else 1}],
            "results": [
                _result(finding, sow_id, summary["failOn"], uses_baseline) for finding in summary["findings"]
            ],
        }
    )


def render_error(sow_id: str, message: str, exit_code: int) -> str:
    return _log(
        {
            "tool": {"driver": _driver([])},
            "automationDetails": {"id": f"sowctl/chain-check/{sow_id}/"},
            "invocations": [
                {
                    "executionSuccessful": False,
                    "exitCode": exit_code,
                    "toolExecutionNotifications": [
                        {
                            "level": "error",
                            "message": {"text": f"sowctl chain check could not run: {message}"},
                        }
                    ],
                }
            ],
            "results": [],
        }
    )
