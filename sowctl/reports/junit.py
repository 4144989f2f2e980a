"""JUnit XML (GitLab's ``artifacts:reports:junit``, Jenkins, any CI's test-report view).

One test suite per risk kind; in it one test case per finding (a dependency, or a
cycle), or a single passing case "no findings". A finding that fails the check is a
``<failure>``; an accepted one or one in the baseline is ``<skipped>`` with why; a
finding of a kind ``--fail-on`` does not name passes, its text in ``<system-out>``.
When the check cannot run, one case with an ``<error>`` says why.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import Any

from sowctl.services.chain_risks import KIND_HELP, KIND_TITLES, RISK_KINDS

# Characters XML 1.0 cannot carry at all, even escaped (C0 controls but tab, CR, LF; surrogates;
# U+FFFE/U+FFFF): each becomes U+FFFD. ElementTree escapes the rest (&, <, >, quotes, newlines
# in attributes) but writes these through, producing a file no parser reads.
_NOT_XML = re.compile("[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_text(value: Any) -> str:
    return _NOT_XML.sub("\ufffd", str(value))


def _element(parent: ET.Element | None, tag: str, text: str | None = None, **attrs: Any) -> ET.Element:
    clean = {key: xml_text(value) for key, value in attrs.items()}
    element = ET.Element(tag, clean) if parent is None else ET.SubElement(parent, tag, clean)
    if text is not None:
        element.text = xml_text(text)
    return element


def _serialise(root: ET.Element) -> str:
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _why_skipped(finding: dict[str, Any]) -> str:
    acceptance = finding.get("acceptance")
    if finding["state"] == "accepted" and acceptance is not None:
        return f"accepted by {acceptance['owner']} until {acceptance['expires']}: {acceptance['reason']}"
    return "known: in the baseline"


def render(summary: dict[str, Any]) -> str:
    sow_id = summary["sowId"]
    by_kind: dict[str, list[dict[str, Any]]] = {kind: [] for kind in RISK_KINDS}
    for finding in summary["findings"]:
        by_kind[finding["kind"]].append(finding)
    root = _element(None, "testsuites", name=f"sowctl chain check {sow_id}")
    totals = {"tests": 0, "failures": 0, "skipped": 0}
    for kind, found in by_kind.items():
        suite = _element(root, "testsuite", name=f"{KIND_TITLES[kind]} ({kind}) in SOW {sow_id}")
        classname = f"sowctl.chain.{sow_id}.{kind}"
        counts = {"tests": max(len(found), 1), "failures": 0, "skipped": 0}
        if not found:
            _element(suite, "testcase", classname=classname, name=f"no {kind} findings", time="0")
        for finding in found:
            case = _element(suite, "testcase", classname=classname, name=finding["message"], time="0")
            if finding["fails"]:
                counts["failures"] += 1
                detail = KIND_HELP[kind]
                if finding["state"] == "expired":
                    acceptance = finding["acceptance"]
                    detail = (
                        f"acceptance by {acceptance['owner']} expired on {acceptance['expires']}. " + detail
                    )
                text = f"{finding['message']}\n\n{detail}\nfingerprint: {finding['fingerprint']}"
                _element(case, "failure", text, message=finding["message"], type=kind)
            elif finding["state"] in ("accepted", "baseline"):
                counts["skipped"] += 1
                _element(case, "skipped", message=_why_skipped(finding))
            else:
                _element(
                    case, "system-out", f"{finding['message']} (not checked: {kind} is not in --fail-on)"
                )
        suite.attrib.update({key: str(value) for key, value in counts.items()} | {"errors": "0", "time": "0"})
        for key in totals:
            totals[key] += counts[key]
    root.attrib.update({key: str(value) for key, value in totals.items()} | {"errors": "0", "time": "0"})
    return _serialise(root)


def render_error(sow_id: str, message: str, exit_code: int) -> str:
    root = _element(
        None, "testsuites", name=f"sowctl chain check {sow_id}", tests=1, failures=0, errors=1, skipped=0
    )
    suite = _element(
        root,
        "testsuite",
        name=f"sowctl chain check of SOW {sow_id}",
        tests=1,
        failures=0,
        errors=1,
        skipped=0,
    )
    case = _element(suite, "testcase", classname=f"sowctl.chain.{sow_id}", name="chain check could run")
    _element(case, "error", f"sowctl chain check could not run (exit {exit_code}): {message}",
             message=message, type=f"exit {exit_code}")  # fmt: skip
    return _serialise(root)
