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
from json.encoder import encode_basestring
from typing import Any
from urllib.parse import quote

from sowctl.foundation.version import VERSION
from sowctl.gate.risks import KIND_HELP, KIND_TITLES, RISK_KINDS
from sowctl.output.safe import clean_text

SCHEMA_URI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
FINGERPRINT_KEY = "sowctlFinding/v1"


def location_path(sow_id: str) -> str:
    """The pseudo-path every report points at for a SOW's findings (a relative URI)."""
    return "sow/" + quote(sow_id, safe="")


def _driver(fail_on: list[str]) -> dict[str, Any]:
    return {
        "name": "sowctl",
        "version": VERSION,
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


def _dump(value: Any) -> str:
    # Compact on purpose: with ``indent`` the json module falls back from its C encoder to pure
    # Python, four times slower on a report of tens of thousands of results.
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _results(summary: dict[str, Any]) -> tuple[list[str], list[dict[str, Any]]]:
    """Each result as JSON text, and the run's logical locations they point at by index.

    Each SOW, dependency and item is described once in ``run.logicalLocations``; a result
    names it by ``index`` alone, as SARIF allows: a tenth of the size on a report where
    one item appears in many findings. A result is written as text around its one free-text
    field (``message.text``, JSON-escaped), twice as fast as building and dumping a dict
    for each of tens of thousands of results; every other value in it is a known word, a
    number, a hex fingerprint or JSON dumped whole (the schema test reads every report).
    """
    sow_id = summary["sowId"]
    fail_on = set(summary["failOn"])
    uses_baseline = bool(summary.get("usesBaseline"))
    places: list[dict[str, Any]] = [{"name": sow_id, "fullyQualifiedName": sow_id, "kind": "sow"}]
    indexes: dict[tuple[str, str], int] = {}

    def place(kind: str, name: str) -> str:
        index = indexes.get((kind, name))
        if index is None:
            index = indexes[(kind, name)] = len(places)
            places.append({"name": name, "fullyQualifiedName": f"{sow_id}/{name}", "kind": kind})
        return f'{{"index":{index}}}'

    physical = _dump({"artifactLocation": {"uri": location_path(sow_id)}, "region": {"startLine": 1}})
    levels = {kind: "error" if kind in fail_on else "warning" for kind in RISK_KINDS}
    heads = {
        kind: f'{{"ruleId":"{kind}","ruleIndex":{index},"level":"{levels[kind]}",'
        for index, kind in enumerate(RISK_KINDS)
    }
    results = []
    for finding in summary["findings"]:
        dep_id = finding["dependencyId"]
        logical = ['{"index":0}'] if dep_id is None else ['{"index":0}', place("dependency", dep_id)]
        logical += [place("item", item) for item in finding["itemIds"]]
        extra = ""
        if uses_baseline:
            extra += f',"baselineState":"{"unchanged" if finding.get("inBaseline") else "new"}"'
        acceptance = finding.get("acceptance")
        if acceptance is not None:
            expired = finding["state"] == "expired"
            suppression = {
                "kind": "external",
                "status": "rejected" if expired else "accepted",
                "justification": clean_text(
                    f"{acceptance['reason']} (owner {acceptance['owner']}, "
                    f"{'expired' if expired else 'expires'} {acceptance['expires']})"
                ),
            }
            extra += f',"suppressions":[{_dump(suppression)}]'
        results.append(
            f'{heads[finding["kind"]]}"message":{{"text":{encode_basestring(clean_text(finding["message"]))}}},'
            f'"locations":[{{"physicalLocation":{physical},"logicalLocations":[{",".join(logical)}]}}],'
            f'"partialFingerprints":{{"{FINGERPRINT_KEY}":"{finding["fingerprint"]}"}}{extra}}}'
        )
    return results, places


def _log(run: dict[str, Any], results: list[str]) -> str:
    head = _dump({"$schema": SCHEMA_URI, "version": "2.1.0"})[:-1]
    return f'{head},"runs":[{_dump(run)[:-1]},"results":[{",".join(results)}]}}]}}\n'


def render(summary: dict[str, Any]) -> str:
    sow_id = summary["sowId"]
    results, places = _results(summary)
    run = {
        "tool": {"driver": _driver(summary["failOn"])},
        "automationDetails": {"id": f"sowctl/chain-check/{sow_id}/"},
        "invocations": [{"executionSuccessful": True, "exitCode": 0 if summary["passed"] else 1}],
        "logicalLocations": places,
    }
    return _log(run, results)


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
                            "message": {"text": clean_text(f"sowctl chain check could not run: {message}")},
                        }
                    ],
                }
            ],
        },
        [],
    )
