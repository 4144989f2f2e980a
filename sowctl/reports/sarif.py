"""SARIF 2.1.0 (GitHub code scanning and other SARIF viewers).

One rule per risk kind, with its help text; one result per finding with a stable
``partialFingerprints`` entry; the SOW, the dependency and the items as logical
locations (described once in the run, named by index in results). Dependencies live
in a database, not a file, so each result's physical location is a pseudo-path
``sow/<SOW id>`` (line 1): code scanning needs one to show an alert. With a baseline,
results in it have ``baselineState: unchanged`` (the others ``new``); accepted ones carry
an accepted suppression (an expired acceptance a rejected one).
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


def _results(summary: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The results, and the run's logical locations they point at by index.

    Each SOW, dependency and item is described once in ``run.logicalLocations``; a result
    names it by ``index`` alone, as SARIF allows: a tenth of the size on a report where
    one item appears in many findings.
    """
    sow_id = summary["sowId"]
    fail_on = set(summary["failOn"])
    uses_baseline = bool(summary.get("usesBaseline"))
    places: list[dict[str, Any]] = [{"name": sow_id, "fullyQualifiedName": sow_id, "kind": "sow"}]
    indexes: dict[tuple[str, str], dict[str, int]] = {}

    def place(kind: str, name: str) -> dict[str, int]:
        ref = indexes.get((kind, name))
        if ref is None:
            ref = indexes[(kind, name)] = {"index": len(places)}
            places.append({"name": name, "fullyQualifiedName": f"{sow_id}/{name}", "kind": kind})
        return ref

    sow = {"index": 0}
    # The same for every result: built once and shared (the report is only serialised).
    physical = {"artifactLocation": {"uri": location_path(sow_id)}, "region": {"startLine": 1}}
    rule_index = {kind: index for index, kind in enumerate(RISK_KINDS)}
    results = []
    for finding in summary["findings"]:
        kind, dep_id = finding["kind"], finding["dependencyId"]
        logical = [sow] if dep_id is None else [sow, place("dependency", dep_id)]
        logical += [place("item", item) for item in finding["itemIds"]]
        result: dict[str, Any] = {
            "ruleId": kind,
            "ruleIndex": rule_index[kind],
            "level": "error" if kind in fail_on else "warning",
            "message": {"text": finding["message"]},
            "locations": [{"physicalLocation": physical, "logicalLocations": logical}],
            "partialFingerprints": {FINGERPRINT_KEY: finding["fingerprint"]},
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
        results.append(result)
    return results, places


def _log(run: dict[str, Any]) -> str:
    # Compact on purpose: with ``indent`` the json module falls back from its C encoder to pure
    # Python, four times slower on a report of tens of thousands of results.
    document = {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}
    return json.dumps(document, ensure_ascii=False, separators=(",", ":")) + "\n"


def render(summary: dict[str, Any]) -> str:
    sow_id = summary["sowId"]
    results, places = _results(summary)
    return _log(
        {
            "tool": {"driver": _driver(summary["failOn"])},
            "automationDetails": {"id": f"sowctl/chain-check/{sow_id}/"},
            "invocations": [{"executionSuccessful": True, "exitCode": 0 if summary["passed"] else 1}],
            "results": results,
            "logicalLocations": places,
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
