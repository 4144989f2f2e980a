"""Text from records in the reports of ``sowctl chain check``: every format neutralises controls and
direction characters by the one rule (``output.safe``), and the Markdown report's Mermaid diagram
labels nodes as ``chain show --format mermaid`` does (``chart.mermaid_node``)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from sowctl import operations
from sowctl.schemas.items import ItemCreate
from sowctl.schemas.sows import SowCreate
from sowctl.services import items, sows
from sowctl.services.access import Caller
from tests.support import ci_reports
from tests.support.dataset import store_raw_ordering_edges

MEMBER = Caller(user_id="user-ada", organization_id="acme", role="member")
# A carriage return and line feed, a tab, a right-to-left override and an escape sequence.
TRICKY = "Pour\r\nslab\tnow \u202eevil\u202c \x1b[31mred"


@pytest.fixture
def chain(db) -> dict[str, str]:
    sow = sows.create_sow(MEMBER, SowCreate(title="Tower A")).id
    a = items.create_item(MEMBER, sow, ItemCreate(title=TRICKY, type="task_item")).id
    b = items.create_item(MEMBER, sow, ItemCreate(title="Fish &amp; chips <b>", type="task_item")).id
    body = {"sourceItemId": b, "targetItemId": a, "dependencyType": "depends_on", "riskLevel": "critical"}
    operations.call_local("deps.create", MEMBER, body=body)
    return {"sow": sow, "a": a, "b": b}


def test_junit_neutralises_names_and_messages_as_the_other_formats_do(cli, chain, tmp_path: Path) -> None:
    junit, sarif = tmp_path / "r.xml", tmp_path / "r.sarif"
    result = cli("chain", "check", chain["sow"], "--report", f"junit={junit}", "--report", f"sarif={sarif}")
    assert result.exit_code == 1, result.stderr
    sarif_text = ci_reports.sarif(sarif)["runs"][0]["results"][0]["message"]["text"]
    assert "\\u202e" in sarif_text and "\\x1b" in sarif_text  # the rule every report follows
    raw = junit.read_text(encoding="utf-8")
    for character in ("\r", "\t", "\u202e", "\u202c", "\x1b", "\ufffd", "&#13;", "&#10;", "&#9;"):
        assert character not in raw, repr(character)
    (case,) = ci_reports.junit(junit)["critical"]  # junitparser reads it
    # The same text as SARIF's, on one line (a test case's name is one line).
    assert case["name"] == case["message"] == sarif_text.replace("\n", " ")
    assert "\\u202eevil\\u202c \\x1b[31mred" in case["name"]
    tree = ET.parse(junit)  # and so does ElementTree
    (testcase,) = [c for c in tree.iter("testcase") if c.get("classname", "").endswith(".critical")]
    assert testcase.get("name") == case["name"]
    assert "Fish &amp; chips <b>" in testcase.get("name")  # XML escaping still gives the text back


def test_junit_error_report_neutralises_the_message(cli, tmp_path: Path) -> None:
    junit = tmp_path / "r.xml"
    result = cli("chain", "check", "no-such-sow\u202e\x1b", "--report", f"junit={junit}")
    assert result.exit_code in (2, 3), result.stderr
    raw = junit.read_text(encoding="utf-8")
    assert "\u202e" not in raw and "\x1b" not in raw and "\ufffd" not in raw
    ET.parse(junit)


def node_labels(diagram: str) -> set[str]:
    """The labels of a Mermaid flowchart's nodes (``  n1["..."]``), without their short ids."""
    return {
        line.strip().split("[", 1)[1]
        for line in diagram.splitlines()
        if line.strip()[:1] in "nx" and "[" in line
    }


def test_the_markdown_diagram_labels_nodes_as_chain_show_does(cli, db) -> None:
    """A cycle's finding names item ids only; its items are still drawn as title over id, and "&"
    is escaped for Mermaid so "&amp;" in a title shows as written."""

    sow = sows.create_sow(MEMBER, SowCreate(title="Tower A")).id
    a = items.create_item(MEMBER, sow, ItemCreate(title="Title a", type="task_item")).id
    b = items.create_item(MEMBER, sow, ItemCreate(title='Fish &amp; chips & "#1" <b>', type="task_item")).id
    # Stored data can hold a cycle (an import, an older version): the service refuses to make one.
    store_raw_ordering_edges(sow, [(a, b), (b, a)])
    report = cli("chain", "check", sow, "--report", "markdown=-")
    assert report.exit_code == 1, report.stderr
    diagram = report.stdout.split("```mermaid\n")[1].split("```")[0]
    shown = cli("chain", "show", sow, "--format", "mermaid")
    assert shown.exit_code == 0, shown.stderr
    expected = {
        f'"Title a<br/>{a}"]',
        f'"Fish #amp;amp; chips #amp; #quot;#35;1#quot; #lt;b#gt;<br/>{b}"]',
    }
    assert node_labels(diagram) == node_labels(shown.stdout) == expected
