"""JUnit XML (GitLab's ``artifacts:reports:junit``, Jenkins, any CI's test-report view).

Written as text with its own XML escaping (``xml_text``, ``xml_attr``): ElementTree cost more
than the rest of the check on a report of tens of thousands of cases. Names and messages are
first made safe by the rule every report uses (``output.safe``). One test suite per risk kind;
in it one test case per finding (a dependency, or a cycle), or a single passing case "no
findings". A finding that fails the check is a
``<failure>``; an accepted one or one in the baseline is ``<skipped>`` with why; a
finding of a kind ``--fail-on`` does not name passes, its text in ``<system-out>``.
When the check cannot run, one case with an ``<error>`` says why.
"""

from __future__ import annotations

from typing import Any

from sowctl.gate.risks import KIND_HELP, KIND_TITLES, RISK_KINDS
from sowctl.output.safe import clean, clean_text

# Characters XML 1.0 cannot carry at all, even escaped (C0 controls but tab, LF and CR;
# surrogates; U+FFFE, U+FFFF): each becomes U+FFFD, or no parser would read the file. One
# translation table per use does that and the escaping in a single pass over the text.
_NOT_XML = [c for c in range(0x20) if c not in (0x09, 0x0A, 0x0D)] + [*range(0xD800, 0xE000), 0xFFFE, 0xFFFF]
_TEXT = str.maketrans({c: "\ufffd" for c in _NOT_XML} | {"&": "&amp;", "<": "&lt;", ">": "&gt;"})
# In attributes, quotes and line breaks too: a parser would fold a raw line break into a space.
_ATTR = str.maketrans(
    {c: "\ufffd" for c in _NOT_XML}
    | {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "\n": "&#10;", "\r": "&#13;", "\t": "&#9;"}
)


def xml_text(value: Any) -> str:
    """Element content: made safe as in the other reports (``output.safe.clean_text``: controls and
    direction characters shown escaped, line feeds kept), then markup characters escaped and what
    XML cannot carry replaced."""
    return clean_text(str(value)).translate(_TEXT)


def xml_attr(value: Any) -> str:
    """A double-quoted attribute value (a test case's name, a message): one safe line
    (``output.safe.clean``), escaped as content plus quotes."""
    return clean(str(value)).translate(_ATTR)


def _open(tag: str, attrs: dict[str, Any], close: bool = False) -> str:
    inner = "".join(f' {key}="{xml_attr(value)}"' for key, value in attrs.items())
    return f"<{tag}{inner}{'/' if close else ''}>"


def _document(root_attrs: dict[str, Any], suites: list[str]) -> str:
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        + _open("testsuites", root_attrs)
        + "".join(suites)
        + "</testsuites>\n"
    )


def _why_skipped(finding: dict[str, Any]) -> str:
    acceptance = finding.get("acceptance")
    if finding["state"] == "accepted" and acceptance is not None:
        return f"accepted by {acceptance['owner']} until {acceptance['expires']}: {acceptance['reason']}"
    return "known: in the baseline"


def _case(finding: dict[str, Any], opening: str) -> tuple[str, str]:
    """A finding's test case, and what it counts as: failures, skipped or passed.

    ``opening`` is ``<testcase classname="..."``, escaped once per kind.
    """
    kind, message = finding["kind"], finding["message"]
    name = xml_attr(message)
    case = f'{opening} name="{name}">'
    if finding["fails"]:
        detail = KIND_HELP[kind]
        if finding["state"] == "expired":
            acceptance = finding["acceptance"]
            detail = f"acceptance by {acceptance['owner']} expired on {acceptance['expires']}. {detail}"
        # The message is in the attributes already: the body says what to do, and the fingerprint.
        body = xml_text(f"{detail}\nfingerprint: {finding['fingerprint']}")
        return (
            f'{case}<failure message="{name}" type="{kind}">{body}</failure></testcase>',
            "failures",
        )
    if finding["state"] in ("accepted", "baseline"):
        skipped = _open("skipped", {"message": _why_skipped(finding)}, close=True)
        return f"{case}{skipped}</testcase>", "skipped"
    out = xml_text(f"{message} (not checked: {kind} is not in --fail-on)")
    return f"{case}<system-out>{out}</system-out></testcase>", "passed"


def render(summary: dict[str, Any]) -> str:
    sow_id = summary["sowId"]
    by_kind: dict[str, list[dict[str, Any]]] = {kind: [] for kind in RISK_KINDS}
    for finding in summary["findings"]:
        by_kind[finding["kind"]].append(finding)
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    suites = []
    for kind, found in by_kind.items():
        classname = f"sowctl.chain.{sow_id}.{kind}"
        counts = {"tests": max(len(found), 1), "failures": 0, "errors": 0, "skipped": 0, "passed": 0}
        cases = []
        if not found:
            cases.append(
                _open("testcase", {"classname": classname, "name": f"no {kind} findings", "time": "0"}, True)
            )
        opening = f'<testcase classname="{xml_attr(classname)}"'
        for finding in found:
            case, outcome = _case(finding, opening)
            cases.append(case)
            counts[outcome] += 1
        del counts["passed"]
        name = f"{KIND_TITLES[kind]} ({kind}) in SOW {sow_id}"
        suites.append(
            _open("testsuite", {"name": name, **counts, "time": "0"}) + "".join(cases) + "</testsuite>"
        )
        for key in totals:
            totals[key] += counts[key]
    return _document({"name": f"sowctl chain check {sow_id}", **totals, "time": "0"}, suites)


def render_error(sow_id: str, message: str, exit_code: int) -> str:
    counts = {"tests": 1, "failures": 0, "errors": 1, "skipped": 0}
    text = f"sowctl chain check could not run (exit {exit_code}): {message}"
    case = (
        _open("testcase", {"classname": f"sowctl.chain.{sow_id}", "name": "chain check could run"})
        + _open("error", {"message": message, "type": f"exit {exit_code}"})
        + xml_text(text)
        + "</error></testcase>"
    )
    suite = (
        _open("testsuite", {"name": f"sowctl chain check of SOW {sow_id}", **counts}) + case + "</testsuite>"
    )
    return _document({"name": f"sowctl chain check {sow_id}", **counts}, [suite])
