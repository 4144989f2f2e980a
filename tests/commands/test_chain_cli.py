"""`sowctl deps ...` and `sowctl chain show|check` through the real CLI entry point (local mode)."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from sowctl import operations
from sowctl.foundation import clock
from sowctl.gate import risks
from sowctl.operations.chain import read_report
from sowctl.output import render
from sowctl.schemas.items import ItemCreate
from sowctl.schemas.sows import SowCreate
from sowctl.services import items, sows
from sowctl.services.access import Caller
from sowctl.storage import models as m

NOW = datetime(2026, 3, 16, 12, 0, 0)
MEMBER = Caller(user_id="user-ada", organization_id="acme", role="member")


@pytest.fixture(autouse=True)
def setup(db, monkeypatch: pytest.MonkeyPatch) -> None:
    clock.set_fixed_now(NOW)
    # These tests may themselves run in GitHub Actions; annotations only where asked for.
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)


def new_sow(title: str = "Tower A") -> str:
    return sows.create_sow(MEMBER, SowCreate(title=title)).id


def item(sow_id: str, title: str) -> str:
    return items.create_item(MEMBER, sow_id, ItemCreate(title=title, type="task_item")).id


def dep(source: str, target: str | None, dep_type: str = "depends_on", risk: str = "low", **extra) -> str:
    body = {"sourceItemId": source, "dependencyType": dep_type, "riskLevel": risk, **extra}
    if target is not None:
        body["targetItemId"] = target
    clock.set_fixed_now(clock.now() + timedelta(seconds=1))
    return operations.call_local("deps.create", MEMBER, body=body)["id"]


def set_status(dep_id: str, status: str) -> None:
    operations.call_local("deps.update", MEMBER, {"dependencyId": dep_id}, body={"status": status})


def flat(sow_id: str) -> dict:
    """The chain as the CLI's own views ask for it: with the critical path and external flags."""
    query = {"sowId": sow_id, "include": "criticalPath,external"}
    return operations.call_local("chain.get", MEMBER, query=query)


def risk_body(sow_id: str) -> dict:
    """The chain as `chain check` asks for it."""
    return operations.call_local("chain.get", MEMBER, query={"sowId": sow_id, "include": "external,risks"})


@pytest.fixture
def risky() -> dict[str, str]:
    """A SOW with one active critical dependency, one blocked one and nothing overdue."""
    sow_id = new_sow()
    a, b, c = item(sow_id, "Pour slab"), item(sow_id, "Cure slab"), item(sow_id, 'Strip "formwork"')
    made = {"sow": sow_id, "a": a, "b": b, "c": c}
    made["critical"] = dep(b, a, risk="critical")
    made["blocked"] = dep(c, b, "blocks", "medium")
    set_status(made["blocked"], "blocked")
    return made


@pytest.fixture
def clean() -> str:
    """A SOW whose only risky dependency is resolved, plus a future SLA."""
    sow_id = new_sow("Clean")
    a, b = item(sow_id, "A"), item(sow_id, "B")
    set_status(dep(b, a, risk="critical", slaDate="2026-01-01"), "resolved")
    dep(a, None, externalTarget="Vendor", slaDate="2026-04-01")
    return sow_id


# --- chain check -------------------------------------------------------------------------------


def test_check_fails_on_an_active_critical_dependency(cli, risky) -> None:
    r = risky
    result = cli("chain", "check", r["sow"])
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [
        "circular\t0\tpass",
        "critical\t1\tfail",
        "overdue\t0\tpass",
        "blocked\t1\tignored",
        "escalation\t0\tignored",
        "conflict\t0\tignored",
        "external\t0\tignored",
        f"critical\t{r['critical']}\tCure slab ({r['b']}) depends_on Pour slab ({r['a']}) "
        "(risk critical, active)\tnew",
        f'blocked\t{r["blocked"]}\tStrip "formwork" ({r["c"]}) blocks Cure slab ({r["b"]}) '
        "(risk medium, blocked)\tnew",
        "result\tfailed",
    ]
    assert result.stderr == ""


def test_check_passes_on_a_clean_sow(cli, clean) -> None:
    result = cli("chain", "check", clean)
    assert result.exit_code == 0
    assert result.stdout.splitlines() == [
        "circular\t0\tpass",
        "critical\t0\tpass",
        "overdue\t0\tpass",
        "blocked\t0\tignored",
        "escalation\t0\tignored",
        "conflict\t0\tignored",
        "external\t0\tignored",
        "result\tpassed",
    ]


def test_check_overdue_follows_the_clock(cli, clean) -> None:
    clock.set_fixed_now(datetime(2026, 4, 2))
    assert cli("chain", "check", clean).exit_code == 1
    assert cli("chain", "check", clean, "--fail-on", "critical,circular").exit_code == 0


@pytest.mark.parametrize(
    ("fail_on", "code"),
    [("blocked", 1), ("circular", 0), ("overdue", 0), ("critical", 1), ("circular,overdue", 0)],
)
def test_fail_on_selects_the_failing_kinds(cli, risky, fail_on: str, code: int) -> None:
    assert cli("chain", "check", risky["sow"], "--fail-on", fail_on).exit_code == code


def test_check_cannot_run(cli, risky) -> None:
    missing = cli("chain", "check", "nope")
    assert (missing.exit_code, missing.stdout, missing.stderr) == (3, "", "error: SOW nope not found\n")
    bad = cli("chain", "check", "nope", "--fail-on", "critical,late")
    assert bad.exit_code == 2 and bad.stdout == ""  # checked before looking the SOW up
    assert "--fail-on: unknown issue kind 'late'" in bad.stderr


def test_check_json_summary(cli, risky) -> None:
    result = cli("chain", "check", risky["sow"], "--json", "--fail-on", "circular")
    assert result.exit_code == 0
    summary = result.json()
    assert summary == risks.check_chain(read_report(risk_body(risky["sow"])), ("circular",))
    assert summary["counts"] == {
        "circular": 0, "critical": 1, "overdue": 0, "blocked": 1,
        "escalation": 0, "conflict": 0, "external": 0,
    }  # fmt: skip
    assert (summary["failOn"], summary["passed"]) == (["circular"], True)


def test_github_annotations(cli, risky) -> None:
    r = risky
    result = cli("chain", "check", r["sow"], env={"GITHUB_ACTIONS": "true"})
    assert result.exit_code == 1
    notes = [line for line in result.stdout.splitlines() if line.startswith("::")]
    assert notes == [
        f"::error title=Critical dependency in SOW {r['sow']}::{r['critical']}: Cure slab ({r['b']}) "
        f"depends_on Pour slab ({r['a']}) (risk critical, active)",
        f"::warning title=Blocked dependency in SOW {r['sow']}::{r['blocked']}: "
        f'Strip "formwork" ({r["c"]}) blocks Cure slab ({r["b"]}) (risk medium, blocked)',
    ]
    # With --json, stdout stays pure JSON and the annotations go to stderr.
    result = cli("chain", "check", r["sow"], "--json", "--fail-on", "blocked", env={"GITHUB_ACTIONS": "true"})
    assert result.exit_code == 1 and result.json()["passed"] is False
    assert [line.split("::")[1].split(" ")[0] for line in result.stderr.splitlines()] == ["warning", "error"]
    # Not in GitHub Actions: no annotation at all.
    assert "::" not in cli("chain", "check", r["sow"], env={"GITHUB_ACTIONS": "false"}).stdout


def test_annotation_text_is_escaped(risky) -> None:
    from sowctl.gate.reports.github import annotations

    body = risk_body(risky["sow"])
    body["sowId"] = "a:b,c"
    body["issues"]["critical"][0]["sourceItem"]["title"] = "50%\nline"
    line = annotations(risks.check_chain(read_report(body)))[0]
    assert line.startswith("::error title=Critical dependency in SOW a%3Ab%2Cc::")
    assert "50%25 line" in line and "\n" not in line  # a newline in a value is a space: one line


def test_annotations_are_capped_per_kind(risky) -> None:
    from sowctl.gate.reports.github import MAX_ANNOTATIONS, annotations

    summary = risks.check_chain(read_report(risk_body(risky["sow"])))
    summary["findings"] = summary["findings"][:1] * (MAX_ANNOTATIONS + 10)
    lines = [line for line in annotations(summary) if "Critical" in line]
    assert len(lines) == MAX_ANNOTATIONS + 1
    assert lines[-1].endswith("::10 more critical issue(s) not annotated")


def test_check_summary_table_on_a_terminal(cli, risky, monkeypatch) -> None:

    monkeypatch.setattr(render, "is_tty", lambda: True)  # a person reads the summary
    result = cli("chain", "check", risky["sow"])
    assert result.exit_code == 1
    assert "FAILS THE CHECK" in result.stdout and result.stdout.rstrip().endswith("failed")


# --- chain show ----------------------------------------------------------------------------------


def test_show_json_is_the_api_body(cli, risky) -> None:
    plain = operations.call_local("chain.get", MEMBER, query={"sowId": risky["sow"]})
    assert cli("chain", "show", risky["sow"], "--format", "json").json() == plain
    assert cli("chain", "show", risky["sow"], "--json").json() == plain
    assert set(plain) == {"sowId", "dependencies", "issues"}
    extended = cli("chain", "show", risky["sow"], "--json", "--include", "criticalPath,external")
    assert extended.json() == flat(risky["sow"])
    bad = cli("chain", "show", risky["sow"], "--json", "--include", "everything")
    assert bad.exit_code == 2 and "include: unknown 'everything'" in bad.stderr


def test_show_table_piped(cli, risky) -> None:
    r = risky
    result = cli("chain", "show", r["sow"])
    assert result.exit_code == 0
    assert result.stdout.splitlines() == [
        f"{r['critical']}\t{r['b']}\t{r['a']}\tdepends_on\tcritical\tactive\tcritical",
        f"{r['blocked']}\t{r['c']}\t{r['b']}\tblocks\tmedium\tblocked\t",
    ]


def test_show_tree_piped(cli, risky) -> None:
    r = risky
    ext = dep(r["a"], None, externalTarget="Concrete Co", slaDate="2026-03-01")
    assert cli("chain", "show", r["sow"], "-f", "tree").stdout.splitlines() == [
        f"Pour slab\ttask_item\tpending\t{r['a']}",
        f"  -> depends_on\texternal: Concrete Co\tlow\tactive\toverdue\t{ext}",
        f"Cure slab\ttask_item\tpending\t{r['b']}",
        f"  -> depends_on\t{r['a']}\tcritical\tactive\tcritical\t{r['critical']}",
        f'Strip "formwork"\ttask_item\tpending\t{r["c"]}',
        f"  -> blocks\t{r['b']}\tmedium\tblocked\t\t{r['blocked']}",
    ]


def test_show_mermaid(cli, risky) -> None:
    r = risky
    dep(r["a"], None, externalTarget="Lab <report>", slaDate="2026-03-01")
    out = cli("chain", "show", r["sow"], "--format", "mermaid").stdout
    lines = out.splitlines()
    assert lines[0] == "flowchart LR"
    assert f'  n1["Cure slab<br/>{r["b"]}"]' in lines
    assert f'  n3["Strip #quot;formwork#quot;<br/>{r["c"]}"]' in lines  # quotes escaped
    assert '  x4[/"Lab #lt;report#gt;"/]' in lines
    assert '  n1 ==>|"depends_on / critical"| n2' in lines
    assert '  n3 -->|"blocks / blocked"| n1' in lines
    assert '  n2 ==>|"depends_on / overdue"| x4' in lines
    assert "  linkStyle 0 stroke:#d62728,stroke-width:3px" in lines  # critical: red
    assert "  linkStyle 2 stroke:#ff7f0e,stroke-width:3px" in lines  # overdue: orange
    assert not any(line.startswith("  linkStyle 1 ") for line in lines)


def test_show_dot(cli, risky) -> None:
    r = risky
    out = cli("chain", "show", r["sow"], "--format", "dot").stdout
    assert out.startswith(f'digraph "{r["sow"]}" {{\n') and out.endswith("}\n")
    assert (
        '  n1 -> n2 [label="depends_on / critical", color="#d62728", fontcolor="#d62728", penwidth=2.5];'
        in out
    )
    assert '  n3 -> n1 [label="blocks / blocked"];' in out
    # Items on the critical path get a bold border; a title's quotes are escaped.
    path = flat(r["sow"])["criticalPath"]
    assert len(path) == 2 and path[1] == r["b"]
    for short, key, title in (
        ("n1", "b", "Cure slab"),
        ("n2", "a", "Pour slab"),
        ("n3", "c", 'Strip \\"formwork\\"'),
    ):
        bold = ', penwidth=2.5, style="rounded,bold"' if r[key] in path else ""
        assert f'  {short} [label="{title}\\n{r[key]}"{bold}];' in out


def test_show_unknown_sow(cli) -> None:
    result = cli("chain", "show", "nope", "--format", "dot")
    assert (result.exit_code, result.stdout) == (3, "")


# --- deps commands ---------------------------------------------------------------------------


def test_deps_create_get_update_delete(cli) -> None:
    sow_id = new_sow()
    a, b = item(sow_id, "A"), item(sow_id, "B")
    made = cli(
        "deps", "create", "--source", a, "--target", b, "--type", "depends_on", "--risk", "high", "--json"
    )
    assert made.exit_code == 0, made.stderr
    body = made.json()
    assert (body["sourceItemId"], body["targetItemId"], body["riskLevel"]) == (a, b, "high")
    assert body["createdByUserId"] == "local"
    assert cli("deps", "get", body["id"], "--json").json() == body

    changed = cli("deps", "update", body["id"], "--status", "blocked", "--sla", "2026-05-01", "--json").json()
    assert (changed["status"], changed["slaDate"]) == ("blocked", "2026-05-01")
    cleared = cli("deps", "update", body["id"], "--sla", "none", "--json").json()
    assert cleared["status"] == "blocked" and "slaDate" not in cleared

    gone = cli("deps", "delete", body["id"])
    assert (gone.exit_code, gone.stdout) == (0, f"Dependency {body['id']} deleted successfully\n")
    missing = cli("deps", "get", body["id"])
    assert (missing.exit_code, missing.stderr) == (3, f"error: dependency {body['id']} not found\n")


def test_deps_create_external(cli) -> None:
    a = item(new_sow(), "A")
    result = cli(
        "deps", "create", "--source", a, "--external", "City permit", "--type", "depends_on",
        "--risk", "medium", "--owner", "Permit desk", "--email", "permits@city.example",
        "--vendor", "City", "--sla", "2026-04-01", "--escalation", "2026-04-05",
        "--notes", "chase weekly", "--json",
    )  # fmt: skip
    body = result.json()
    assert (body["isExternal"], body["targetItemId"], body["externalTarget"]) == (True, None, "City permit")
    assert (body["externalOwner"], body["contactEmail"], body["vendor"]) == (
        "Permit desk",
        "permits@city.example",
        "City",
    )
    assert (body["slaDate"], body["escalationDate"], body["notes"]) == (
        "2026-04-01",
        "2026-04-05",
        "chase weekly",
    )


def test_deps_create_refusals_leave_the_database_unchanged(cli) -> None:
    sow_id = new_sow()
    a, b = item(sow_id, "A"), item(sow_id, "B")
    dep(a, b)
    before = list(m.Dependency.select().tuples())
    args = ["deps", "create", "--source", b, "--type", "depends_on", "--risk", "low"]
    cycle = cli(*args, "--target", a)
    assert (cycle.exit_code, cycle.stdout) == (2, "")
    assert cycle.stderr == f"error: circular dependency: {a} -> {b} -> {a}\n"
    both = cli(*args, "--target", a, "--external", "X")
    neither = cli(*args)
    assert both.exit_code == neither.exit_code == 2
    assert both.stderr == "error: give exactly one of --target ITEM_ID or --external NAME\n"
    bad_date = cli(*args, "--external", "X", "--sla", "31/12/2026")
    assert bad_date.exit_code == 2 and bad_date.stderr.startswith("error: invalid --sla ")
    assert cli(*args, "--target", "nope").exit_code == 3
    assert list(m.Dependency.select().tuples()) == before


def test_deps_list_filters_and_quiet(cli) -> None:
    sow_id = new_sow()
    a, b, c = item(sow_id, "A"), item(sow_id, "B"), item(sow_id, "C")
    first = dep(a, b, risk="critical")
    second = dep(b, c)
    third = dep(c, None, externalTarget="Vendor", slaDate="2026-03-01")
    assert cli("deps", "list", "-q").stdout.split() == [first, second, third]
    assert cli("deps", "list", "--type", "critical", "-q").stdout.split() == [first]
    assert cli("deps", "list", "--type", "overdue", "-q").stdout.split() == [third]
    assert cli("deps", "list", "--type", "external", "--sow", sow_id, "-q").stdout.split() == [third]
    assert cli("deps", "list", "--item", b, "-q").stdout.split() == [second]
    assert cli("deps", "list", "--status", "resolved", "-q").stdout == ""
    assert [d["id"] for d in cli("deps", "list", "--json").json()] == [first, second, third]
    rows = cli("deps", "list", "--item", c).stdout.splitlines()
    assert rows == [f"{third}\t{c}\texternal: Vendor\tdepends_on\tlow\tactive\t2026-03-01"]
    bad = cli("deps", "list", "--status", "done")
    assert bad.exit_code == 2 and bad.stderr.startswith("error: Invalid value for '--status'")
    assert cli("deps", "list", "--sow", "nope").exit_code == 3


@pytest.mark.parametrize("command", ["show", "check"])
def test_ambiguous_positional_sow_id_is_named_sow_id(cli, command) -> None:
    assert cli("sows", "create", "A", "--id", "s").exit_code == 0
    assert cli("orgs", "create", "o2").exit_code == 0
    assert cli("--org", "o2", "sows", "create", "B", "--id", "s").exit_code == 0
    result = cli("chain", command, "s")
    assert result.exit_code == 2, result.stderr
    assert "invalid SOW_ID 's'" in result.stderr and "--sow" not in result.stderr


def test_deps_list_still_names_its_sow_option(cli) -> None:
    assert cli("sows", "create", "A", "--id", "s").exit_code == 0
    assert cli("orgs", "create", "o2").exit_code == 0
    assert cli("--org", "o2", "sows", "create", "B", "--id", "s").exit_code == 0
    result = cli("deps", "list", "--sow", "s")
    assert result.exit_code == 2, result.stderr
    assert "--sow" in result.stderr
