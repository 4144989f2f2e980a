"""`sowctl chain check` as a CI gate: risk kinds, ready/blocked views, baselines, accepted risks and
reports, each in local mode and in remote mode (the Bottle app in process, no socket).

Every SARIF file a test produces is validated against the official SARIF 2.1.0 schema, every JUnit
file is parsed with junitparser, and every GitLab file is checked for GitLab's documented fields
(tests/support/ci_reports.py).
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from sowctl import operations
from sowctl.foundation import clock
from sowctl.gate import risks
from sowctl.operations.chain import read_report
from sowctl.schemas.items import ItemCreate
from sowctl.schemas.sows import SowCreate
from sowctl.services import items, sows
from sowctl.services.access import Caller
from tests.support import ci_reports
from tests.support.client import SERVER, route_remote_in_process

NOW = datetime(2026, 3, 16, 12, 0, 0)
TODAY = "2026-03-16"
MEMBER = Caller(user_id="user-ada", organization_id="acme", role="member")
ALL = "circular,critical,overdue,blocked,escalation,conflict,external"


@pytest.fixture(autouse=True)
def setup(db, monkeypatch: pytest.MonkeyPatch) -> None:
    clock.set_fixed_now(NOW)
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)


@pytest.fixture(params=["local", "remote"])
def run(request, cli, db_url, monkeypatch):
    """``sowctl ARGS`` in the test's mode; remote mode talks to the app in process."""
    if request.param == "local":
        return cli
    from sowctl.server.app import create_app
    from sowctl.services import credentials

    sows.default_project("acme")  # the organization must exist before it has a token
    token = credentials.create_token("user-ada", "acme").secret
    route_remote_in_process(monkeypatch, create_app(db_url))
    monkeypatch.delenv("SOWCTL_DB")

    def remote(*args: str, **kwargs):
        return cli("--server", SERVER, "--token", token, *args, **kwargs)

    return remote


def new_sow(title: str = "Tower A") -> str:
    return sows.create_sow(MEMBER, SowCreate(title=title)).id


def item(sow_id: str, title: str, status: str | None = None) -> str:
    made = items.create_item(MEMBER, sow_id, ItemCreate(title=title, type="task_item")).id
    if status is not None:
        operations.call_local("items.update", MEMBER, {"itemId": made}, body={"status": status})
    return made


def dep(source: str, target: str | None, dep_type: str = "depends_on", risk: str = "low", **extra) -> str:
    body = {"sourceItemId": source, "dependencyType": dep_type, "riskLevel": risk, **extra}
    if target is not None:
        body["targetItemId"] = target
    else:
        body.setdefault("externalTarget", "Vendor")
    clock.set_fixed_now(clock.now() + timedelta(seconds=1))
    return operations.call_local("deps.create", MEMBER, body=body)["id"]


def update(dep_id: str, **body) -> None:
    operations.call_local("deps.update", MEMBER, {"dependencyId": dep_id}, body=body)


def summary(result) -> dict:
    assert result.exit_code in (0, 1), result.stderr
    return result.json()


def kinds_of(result) -> list[tuple[str, str | None]]:
    return [(f["kind"], f["dependencyId"]) for f in summary(result)["findings"]]


# --- the new risk kinds -------------------------------------------------------------------------


def test_escalation_when_the_date_has_passed_while_open(run) -> None:
    sow = new_sow()
    a, b = item(sow, "A"), item(sow, "B")
    passed = dep(b, a, escalationDate="2026-03-15")
    today = dep(a, None, escalationDate=TODAY)  # not passed yet
    resolved = dep(b, None, escalationDate="2026-03-01")
    update(resolved, status="resolved")
    blocked = dep(a, None, "prerequisite", escalationDate="2026-03-01")
    update(blocked, status="blocked")
    result = run("chain", "check", sow, "--fail-on", "escalation", "--json")
    assert result.exit_code == 1
    found = [d for kind, d in kinds_of(result) if kind == "escalation"]
    assert found == [passed, blocked] and today not in found
    message = next(f["message"] for f in result.json()["findings"] if f["dependencyId"] == passed)
    assert message.endswith("; escalation date 2026-03-15 has passed")
    assert run("chain", "check", sow, "--fail-on", "critical").exit_code == 0


def test_conflict_when_a_started_item_waits_for_an_unfinished_one(run) -> None:
    sow = new_sow()
    slab = item(sow, "Pour slab")  # pending
    cure = item(sow, "Cure slab", "in_progress")
    strip = item(sow, "Strip formwork", "completed")
    waits = dep(cure, slab)  # Cure waits for Pour: Cure in progress, Pour pending -> conflict
    blocks = dep(slab, strip, "blocks")  # Strip waits for Pour: Strip completed -> conflict
    done = item(sow, "Survey", "completed")
    dep(cure, done)  # waits for a completed item: fine
    cancelled = dep(strip, cure)  # Strip (completed) waits for Cure (in progress)...
    update(cancelled, status="cancelled")  # ... but the dependency is cancelled: no wait
    related = dep(strip, slab, "related_to")  # orders nothing
    result = run("chain", "check", sow, "--fail-on", "conflict", "--json")
    assert result.exit_code == 1
    conflicts = [f for f in result.json()["findings"] if f["kind"] == "conflict"]
    assert [(f["dependencyId"], f["itemIds"]) for f in conflicts] == [
        (waits, [cure, slab]),
        (blocks, [strip, slab]),
    ]
    assert related not in [f["dependencyId"] for f in conflicts]
    assert conflicts[0]["message"].endswith(
        f"; Cure slab ({cure}) is in_progress but waits for Pour slab ({slab}), which is pending"
    )
    operations.call_local("items.update", MEMBER, {"itemId": slab}, body={"status": "completed"})
    assert run("chain", "check", sow, "--fail-on", "conflict").exit_code == 0


def test_external_due_within_the_window(run) -> None:
    sow = new_sow()
    a, b = item(sow, "A"), item(sow, "B")
    soon = dep(a, None, externalTarget="Steel mill", slaDate="2026-03-26")  # in 10 days
    due_today = dep(b, None, externalTarget="Permit", slaDate=TODAY)
    later = dep(a, None, externalTarget="Glass", slaDate="2026-04-30")
    blocked = dep(b, None, externalTarget="Crane", slaDate="2026-03-20")
    update(blocked, status="blocked")  # not active: blocked is its own kind
    dep(b, a, slaDate="2026-03-20")  # internal: never "external"
    default = run("chain", "check", sow, "--fail-on", "external", "--json")
    assert default.exit_code == 1
    assert [d for k, d in kinds_of(default) if k == "external"] == [soon, due_today]
    messages = {
        f["dependencyId"]: f["message"] for f in default.json()["findings"] if f["kind"] == "external"
    }
    assert messages[soon].endswith("; SLA date 2026-03-26 is in 10 day(s)")
    assert messages[due_today].endswith("; SLA date 2026-03-16 is today")
    week = run("chain", "check", sow, "--fail-on", "external", "--due-within", "1w", "--json")
    assert [d for k, d in kinds_of(week) if k == "external"] == [due_today]
    wide = run("chain", "check", sow, "--fail-on", "external", "--due-within", "60d", "--json")
    assert later in [d for k, d in kinds_of(wide) if k == "external"]
    bad = run("chain", "check", sow, "--due-within", "soon")
    assert bad.exit_code == 2 and "--due-within: 'soon' is not a number of days" in bad.stderr


def test_every_kind_is_in_every_format(run, tmp_path: Path) -> None:
    sow = new_sow()
    a, b = item(sow, "A"), item(sow, "B", "in_progress")
    dep(b, a, risk="critical", escalationDate="2026-03-01", slaDate="2026-03-01")  # critical, overdue, ...
    update(dep(a, None, slaDate="2026-03-20"), status="active")  # external
    update(dep(a, None, "prerequisite"), status="blocked")  # blocked
    paths = {fmt: tmp_path / f"r.{fmt}" for fmt in ("sarif", "junit", "gitlab", "markdown")}
    args = [arg for fmt, path in paths.items() for arg in ("--report", f"{fmt}={path}")]
    result = run("chain", "check", sow, "--fail-on", ALL, *args, "--json")
    assert result.exit_code == 1
    expected = {"critical", "overdue", "blocked", "escalation", "conflict", "external"}
    assert {f["kind"] for f in result.json()["findings"]} == expected
    sarif = ci_reports.sarif(paths["sarif"])
    assert {r["ruleId"] for r in sarif["runs"][0]["results"]} == expected
    suites = ci_reports.junit(paths["junit"])
    assert {
        kind for kind, cases in suites.items() if any(c["result"] == "failure" for c in cases)
    } == expected
    assert {i["check_name"] for i in ci_reports.gitlab(paths["gitlab"])} == {
        f"sowctl-chain-{k}" for k in expected
    }
    markdown = paths["markdown"].read_text()
    for kind in expected:
        assert f"| {kind} |" in markdown


def test_report_files_get_the_umask_mode_not_owner_only(run, tmp_path: Path) -> None:
    """A CI job often reads reports as another user than the one that wrote them."""
    import os
    import stat

    sow = new_sow()
    old = tmp_path / "old.xml"
    old.write_text("<previous/>")
    old.chmod(0o644)
    previous = os.umask(0o022)
    try:
        result = run(
            "chain", "check", sow, "--report", f"junit={old}", "--report", f"sarif={tmp_path / 'new.sarif'}"
        )
    finally:
        os.umask(previous)
    assert result.exit_code == 0, result.stderr
    for path in (old, tmp_path / "new.sarif"):
        assert stat.S_IMODE(path.stat().st_mode) == 0o644, path
    assert "<previous/>" not in old.read_text()


# --- ready and waiting --------------------------------------------------------------------------


def test_ready_and_blocked_views(run) -> None:
    sow = new_sow()
    pour = item(sow, "Pour", "completed")
    cure = item(sow, "Cure")  # waits for Pour (completed): ready
    strip = item(sow, "Strip")  # waits for Cure (pending): waiting
    paint = item(sow, "Paint", "in_progress")  # waits for an open external party: waiting
    alone = item(sow, "Survey")  # nothing to wait for: ready
    item(sow, "Done", "completed")  # completed: in neither list
    dep(cure, pour)
    first = dep(cure, strip, "blocks")
    external = dep(paint, None, externalTarget="Paint supplier")
    resolved = dep(alone, None, externalTarget="Old permit")
    update(resolved, status="resolved")
    ready = run("chain", "ready", sow, "--json").json()
    assert ready == {
        "sowId": sow,
        "ready": [
            {"id": cure, "title": "Cure", "status": "pending"},
            {"id": alone, "title": "Survey", "status": "pending"},
        ],
    }
    waiting = run("chain", "blocked", sow, "--json").json()["waiting"]
    assert waiting == [
        {
            "id": strip,
            "title": "Strip",
            "status": "pending",
            "waitsFor": [{"dependencyId": first, "itemId": cure, "title": "Cure", "status": "pending"}],
        },
        {
            "id": paint,
            "title": "Paint",
            "status": "in_progress",
            "waitsFor": [{"dependencyId": external, "title": "Paint supplier", "status": "active"}],
        },
    ]
    piped = run("chain", "blocked", sow).stdout.splitlines()
    assert piped == [
        f"{strip}\tpending\tStrip\t{cure} (pending)",
        f"{paint}\tin_progress\tPaint\texternal: Paint supplier (active)",
    ]
    assert run("chain", "ready", sow).stdout.splitlines() == [
        f"{cure}\tpending\tCure",
        f"{alone}\tpending\tSurvey",
    ]
    assert run("chain", "ready", "nope").exit_code == 3


# --- baselines and accepted risks ---------------------------------------------------------------


def test_baseline_fails_only_on_new_findings(run, tmp_path: Path) -> None:
    sow = new_sow()
    a, b, c = item(sow, "A"), item(sow, "B"), item(sow, "C")
    old = dep(b, a, risk="critical")
    baseline = tmp_path / "baseline.json"
    written = run("chain", "check", sow, "--write-baseline", baseline, "--json")
    assert written.exit_code == 0  # judged by the baseline it wrote
    assert [f["state"] for f in written.json()["findings"]] == ["baseline"]
    document = json.loads(baseline.read_text())
    assert [f["dependencyId"] for f in document["findings"]] == [old]
    # Unrelated edits: titles, other dependencies, reordering. The old finding stays known.
    operations.call_local("items.update", MEMBER, {"itemId": a}, body={"title": "Renamed"})
    dep(c, b)
    operations.call_local(
        "items.reorder",
        MEMBER,
        {"sowId": sow},
        body={"items": [{"id": c, "orderIndex": 0}, {"id": a, "orderIndex": 5}]},
    )
    again = run("chain", "check", sow, "--baseline", baseline, "--json")
    assert again.exit_code == 0, again.stdout
    assert again.json()["findings"][0]["fingerprint"] == document["findings"][0]["fingerprint"]
    new = dep(c, a, risk="critical")
    result = run("chain", "check", sow, "--baseline", baseline, "--json")
    assert result.exit_code == 1
    assert [(f["dependencyId"], f["state"], f["fails"]) for f in result.json()["findings"]] == [
        (old, "baseline", False),
        (new, "new", True),
    ]
    assert run("chain", "check", sow).exit_code == 1  # without the baseline, both fail
    sarif = tmp_path / "b.sarif"
    run("chain", "check", sow, "--baseline", baseline, "--report", f"sarif={sarif}")
    states = [r["baselineState"] for r in ci_reports.sarif(sarif)["runs"][0]["results"]]
    assert states == ["unchanged", "new"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{", "--baseline: not a JSON baseline file"),
        ('{"version": 1}', '--baseline: not a baseline file: expected an object with a "findings" list'),
        ('{"version": 2, "findings": []}', "--baseline: unsupported baseline version 2"),
        (
            '{"version": 1, "findings": [{}]}',
            "--baseline: findings[0].fingerprint: must be a non-empty string",
        ),
    ],
)
def test_bad_baseline_file(run, tmp_path: Path, content: str, message: str) -> None:
    sow = new_sow()
    path = tmp_path / "baseline.json"
    path.write_text(content)
    result = run("chain", "check", sow, "--baseline", path)
    assert (result.exit_code, result.stdout) == (2, "")
    assert message in result.stderr
    missing = run("chain", "check", sow, "--baseline", tmp_path / "none.json")
    assert missing.exit_code == 2 and f"--baseline: cannot read {tmp_path / 'none.json'}" in missing.stderr


def accepted_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "accepted.toml"
    path.write_text(text)
    return path


def test_accepted_risks_pass_until_they_expire(run, tmp_path: Path) -> None:
    sow = new_sow()
    a, b, c = item(sow, "A"), item(sow, "B"), item(sow, "C")
    by_id = dep(b, a, risk="critical")
    by_print = dep(c, a, risk="critical")
    fingerprint = risks.fingerprint("critical", sow, by_print, c, a)
    path = accepted_file(
        tmp_path,
        f'[[accepted]]\nkind = "critical"\ndependency = "{by_id}"\nowner = "Ada"\n'
        'reason = "Vendor confirmed"\nexpires = 2026-03-20\n\n'
        f'[[accepted]]\nfingerprint = "{fingerprint}"\nowner = "Bob"\nreason = "Known"\n'
        'expires = "2026-04-30"\n',
    )
    sarif, junit = tmp_path / "a.sarif", tmp_path / "a.xml"
    reports = ["--report", f"sarif={sarif}", "--report", f"junit={junit}"]
    result = run("chain", "check", sow, "--accepted-risks", path, *reports, "--json")
    assert result.exit_code == 0, result.stdout
    found = result.json()["findings"]
    assert [(f["state"], f["acceptance"]["owner"]) for f in found] == [
        ("accepted", "Ada"),
        ("accepted", "Bob"),
    ]
    results = ci_reports.sarif(sarif)["runs"][0]["results"]
    assert [r["suppressions"][0]["status"] for r in results] == ["accepted", "accepted"]
    assert "Vendor confirmed" in results[0]["suppressions"][0]["justification"]
    cases = ci_reports.junit(junit)["critical"]
    assert [c["result"] for c in cases] == ["skipped", "skipped"]
    assert cases[0]["message"] == "accepted by Ada until 2026-03-20: Vendor confirmed"
    # The day after the expiry date, the first one fails again.
    clock.set_fixed_now(datetime(2026, 3, 21, 9, 0))
    expired = run("chain", "check", sow, "--accepted-risks", path, *reports, "--json")
    assert expired.exit_code == 1
    assert [(f["state"], f["fails"]) for f in expired.json()["findings"]] == [
        ("expired", True),
        ("accepted", False),
    ]
    results = ci_reports.sarif(sarif)["runs"][0]["results"]
    assert [r["suppressions"][0]["status"] for r in results] == ["rejected", "accepted"]
    assert [c["result"] for c in ci_reports.junit(junit)["critical"]] == ["failure", "skipped"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "[[accepted]]\nowner = 'a'\nreason = 'b'\nexpires = 2026-01-01\n",
            "accepted[0].kind: give a fingerprint",
        ),
        (
            "[[accepted]]\nfingerprint = 'x'\nreason = 'b'\nexpires = 2026-01-01\n",
            "accepted[0].owner: is required",
        ),
        (
            "[[accepted]]\nfingerprint = 'x'\nowner = 'a'\nreason = ' '\nexpires = 2026-01-01\n",
            "accepted[0].reason",
        ),
        ("[[accepted]]\nfingerprint = 'x'\nowner = 'a'\nreason = 'b'\n", "accepted[0].expires: is required"),
        (
            "[[accepted]]\nfingerprint = 'x'\nowner = 'a'\nreason = 'b'\nexpires = '31/12'\n",
            "'31/12' is not a date",
        ),
        (
            "[[accepted]]\nkind = 'critical'\nowner = 'a'\nreason = 'b'\nexpires = 2026-01-01\n",
            ".dependency: is",
        ),
        (
            "[[accepted]]\nfingerprint = 'x'\nowner = 'a'\nreason = 'b'\nexpires = 2026-01-01\nwho = 1\n",
            ".who",
        ),
        ("accepted = 3", "expected [[accepted]] tables only"),
        ("[[accepted]\n", "not a TOML file"),
    ],
)
def test_bad_accepted_risks_file(run, tmp_path: Path, text: str, message: str) -> None:
    result = run("chain", "check", new_sow(), "--accepted-risks", accepted_file(tmp_path, text))
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr.startswith("error: --accepted-risks") and message in result.stderr


# --- reports ------------------------------------------------------------------------------------


@pytest.fixture
def risky() -> dict[str, str]:
    sow = new_sow()
    a, b = item(sow, "Pour slab"), item(sow, "Cure slab")
    return {"sow": sow, "a": a, "b": b, "critical": dep(b, a, risk="critical"), "blocked": blocked_dep(a)}


def blocked_dep(source: str) -> str:
    made = dep(source, None, externalTarget="Permit office")
    update(made, status="blocked")
    return made


def test_reports_of_a_failing_check(run, risky, tmp_path: Path) -> None:
    r = risky
    paths = {fmt: tmp_path / f"out.{fmt}" for fmt in ("sarif", "junit", "gitlab", "markdown")}
    args = [arg for fmt, path in paths.items() for arg in ("--report", f"{fmt}={path}")]
    result = run("chain", "check", r["sow"], *args)
    assert result.exit_code == 1
    assert result.stdout.splitlines()[-1] == "result\tfailed"  # the summary still prints
    sarif = ci_reports.sarif(paths["sarif"])
    (sarif_run,) = sarif["runs"]
    rules = sarif_run["tool"]["driver"]["rules"]
    assert [rule["id"] for rule in rules] == list(risks.RISK_KINDS)
    assert all(rule["help"]["text"] for rule in rules)
    critical, blocked = sarif_run["results"]
    assert (critical["ruleId"], critical["level"], blocked["ruleId"], blocked["level"]) == (
        "critical", "error", "blocked", "warning"
    )  # fmt: skip
    places = sarif_run["logicalLocations"]  # described once, named by index in the results
    refs = critical["locations"][0]["logicalLocations"]
    names = [(places[ref["index"]]["kind"], places[ref["index"]]["name"]) for ref in refs]
    assert names == [("sow", r["sow"]), ("dependency", r["critical"]), ("item", r["b"]), ("item", r["a"])]
    assert critical["partialFingerprints"]["sowctlFinding/v1"] == risks.fingerprint(
        "critical", r["sow"], r["critical"], r["b"], r["a"]
    )
    assert sarif_run["invocations"] == [{"executionSuccessful": True, "exitCode": 1}]

    suites = ci_reports.junit(paths["junit"])
    assert [c["result"] for c in suites["critical"]] == ["failure"]
    assert [c["result"] for c in suites["blocked"]] == ["passed"]  # a kind --fail-on leaves out
    assert [c["name"] for c in suites["circular"]] == ["no circular findings"]

    issues = ci_reports.gitlab(paths["gitlab"])
    assert [(i["check_name"], i["severity"]) for i in issues] == [
        ("sowctl-chain-critical", "critical"),
        ("sowctl-chain-blocked", "minor"),
    ]
    assert issues[0]["location"] == {"path": f"sow/{r['sow']}", "lines": {"begin": 1}}

    markdown = paths["markdown"].read_text()
    assert "| Critical dependency (critical) | 1 | 1 | 0 | 0 | yes |" in markdown
    assert "```mermaid\nflowchart LR\n" in markdown
    assert '  n1 ==>|"critical"| n2' in markdown
    assert "Permit office" not in markdown.split("```mermaid")[1]  # only the failing part is drawn


def test_report_to_stdout_and_a_passing_check(run, tmp_path: Path) -> None:
    sow = new_sow()
    result = run("chain", "check", sow, "--report", "sarif=-")
    assert result.exit_code == 0
    sarif = json.loads(result.stdout)  # nothing but the report on stdout
    ci_reports.validate_sarif(sarif)
    assert sarif["runs"][0]["results"] == []
    junit = run("chain", "check", sow, "--report", "junit=-")
    path = tmp_path / "j.xml"
    path.write_text(junit.stdout)
    assert all(case["result"] == "passed" for cases in ci_reports.junit(path).values() for case in cases)
    assert "## sowctl chain check of SOW" in run("chain", "check", sow, "--report", "markdown=-").stdout
    both = run("chain", "check", sow, "--report", "sarif=-", "--json")
    assert both.exit_code == 2 and "--report: - (stdout) cannot be combined with --json" in both.stderr
    twice = run("chain", "check", sow, "--report", "sarif=-", "--report", "junit=-")
    assert twice.exit_code == 2 and "only one report can go to stdout" in twice.stderr


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["nope"], 3, "SOW nope not found"),
        (["nope", "--fail-on", "late"], 2, "--fail-on: unknown issue kind 'late'"),
        (["nope", "--report", "pdf=x.pdf"], 2, "--report: unknown format 'pdf'"),
    ],
)
def test_every_report_is_written_when_the_check_cannot_run(
    run, tmp_path: Path, monkeypatch, args, code, message
) -> None:
    step = tmp_path / "step-summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    paths = {fmt: tmp_path / f"err.{fmt}" for fmt in ("sarif", "junit", "gitlab", "markdown")}
    for path in paths.values():
        path.write_text("stale")
    reports = [arg for fmt, path in paths.items() for arg in ("--report", f"{fmt}={path}")]
    result = run("chain", "check", args[0], *reports, *args[1:], env={"GITHUB_ACTIONS": "true"})
    assert (result.exit_code, result.stdout) == (code, "")
    annotation = f"::error title=sowctl chain check of SOW nope could not run::exit {code}: {message}"
    assert annotation in result.stderr.splitlines()[0] + result.stderr.splitlines()[-1] or any(
        line.startswith(annotation) for line in result.stderr.splitlines()
    )
    (sarif_run,) = ci_reports.sarif(paths["sarif"])["runs"]
    (invocation,) = sarif_run["invocations"]
    assert (invocation["executionSuccessful"], invocation["exitCode"]) == (False, code)
    assert message in invocation["toolExecutionNotifications"][0]["message"]["text"]
    (case,) = [case for cases in ci_reports.junit(paths["junit"]).values() for case in cases]
    assert case["result"] == "error" and message in case["message"]
    (issue,) = ci_reports.gitlab(paths["gitlab"])
    assert issue["severity"] == "blocker" and message in issue["description"]
    assert "could not run" in paths["markdown"].read_text()
    assert "could not run" in step.read_text()


def test_github_step_summary_is_appended(run, risky, tmp_path: Path, monkeypatch) -> None:
    step = tmp_path / "summary.md"
    step.write_text("# earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    result = run("chain", "check", risky["sow"], env={"GITHUB_ACTIONS": "true"})
    assert result.exit_code == 1
    text = step.read_text()
    assert text.startswith("# earlier step\n## sowctl chain check of SOW ") and "```mermaid" in text
    monkeypatch.setenv("GITHUB_ACTIONS", "false")
    step.write_text("")
    run("chain", "check", risky["sow"])
    assert step.read_text() == ""  # only on GitHub Actions


# --- hostile text ---------------------------------------------------------------------------------

HOSTILE = (
    'Evil\n::error::forged\r::warning::cr\r|col| ]]> </failure> & "q" `x` [l](http://x.example) '
    "@team \x01\x1b[31m #1"
)


def test_titles_cannot_forge_lines_or_break_the_formats(run, tmp_path: Path, monkeypatch) -> None:
    sow = new_sow()
    a = items.create_item(MEMBER, sow, ItemCreate(title="A", type="task_item")).id
    b = items.create_item(MEMBER, sow, ItemCreate(title="B", type="task_item")).id
    m_item = operations.call_local("items.update", MEMBER, {"itemId": b}, body={"title": HOSTILE})
    assert m_item["title"] == HOSTILE
    dep(b, a, risk="critical")
    dep(a, None, externalTarget=HOSTILE, slaDate="2026-03-20")
    paths = {fmt: tmp_path / f"h.{fmt}" for fmt in ("sarif", "junit", "gitlab", "markdown")}
    args = [arg for fmt, path in paths.items() for arg in ("--report", f"{fmt}={path}")]
    step = tmp_path / "step.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    result = run("chain", "check", sow, "--fail-on", ALL, *args, env={"GITHUB_ACTIONS": "true"})
    assert result.exit_code == 1
    lines = result.stdout.splitlines()  # splits at CR, LF and the other line breaks, as runners do
    assert not any(line.startswith(("::error::forged", "::warning::cr")) for line in lines)
    assert all(
        line.startswith("::")
        for line in lines
        if "forged" in line and not line.startswith(("critical", "external"))
    )
    annotations = [line for line in lines if line.startswith("::")]
    assert annotations and all("\n" not in line and "\r" not in line for line in annotations)
    # Each format still parses, and the text comes back whole where the format can carry it.
    (sarif_run,) = ci_reports.sarif(paths["sarif"])["runs"]
    assert "Evil\n::error::forged" in sarif_run["results"][0]["message"]["text"]
    cases = ci_reports.junit(paths["junit"])["critical"]
    assert "</failure>" in cases[0]["name"] and "\x01" not in cases[0]["name"]
    ci_reports.gitlab(paths["gitlab"])
    markdown = paths["markdown"].read_text()
    rows = [line for line in markdown.splitlines() if line.startswith("| critical |")]
    assert len(rows) == 1 and rows[0].count(" | ") == 4  # the | in the title did not add a column
    assert (
        "\\|col\\|" in rows[0] and "&#64;team" in rows[0] and "\\[l\\]" in rows[0] and "\x1b" not in markdown
    )
    diagram = markdown.split("```mermaid\n")[1].split("```")[0].splitlines()
    assert diagram[0] == "flowchart LR" and all(line.startswith("  ") for line in diagram[1:])
    assert not any(line.strip() == "::error::forged" for line in markdown.splitlines())
    assert step.read_text() == markdown


# --- the body the rules read --------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["sarif", "gitlab"])
def test_reports_on_stdout_carry_no_control_characters_in_both_modes(modes, fmt: str) -> None:
    made = modes.local(
        "items", "create", "sow-1", "--title", "Bell\x07 clear\x1b[2J", "--type", "task_item", "-q"
    )
    item_id = made.stdout.strip()
    other = modes.local(
        "items", "create", "sow-1", "--title", "B", "--type", "task_item", "-q"
    ).stdout.strip()
    dep = modes.local(
        "deps", "create", "--source", item_id, "--target", other, "--type", "depends_on", "--risk", "critical"
    )
    assert dep.exit_code == 0, dep.stderr
    for result in modes.both("chain", "check", "sow-1", "--fail-on", "critical", "--report", f"{fmt}=-"):
        assert result.exit_code == 1, result.stderr
        report = result.stdout[result.stdout.index("[" if fmt == "gitlab" else "{") :]
        document = json.loads(report[: report.rindex("]" if fmt == "gitlab" else "}") + 1])
        messages = (
            [issue["description"] for issue in document]
            if fmt == "gitlab"
            else [r["message"]["text"] for r in document["runs"][0]["results"]]
        )
        assert any("Bell" in m for m in messages)
        assert not any("\x07" in m or "\x1b" in m for m in messages), messages


def test_include_risks_adds_dates_statuses_and_as_of_only_when_asked(db) -> None:
    from sowctl.schemas.dependencies import ChainFlat, ChainTree

    sow = new_sow()
    other = new_sow("Elsewhere")
    a, b = item(sow, "A", "in_progress"), item(other, "B in another SOW", "completed")
    made = dep(a, b, slaDate="2026-04-01", escalationDate="2026-03-20")
    plain = operations.call_local("chain.get", MEMBER, query={"sowId": sow})
    assert set(plain) == {"sowId", "dependencies", "issues"}
    (entry,) = plain["dependencies"]
    assert set(entry) == {"id", "sourceItem", "targetItem", "dependencyType", "riskLevel", "status"}
    assert set(entry["targetItem"]) == {"id", "title"}
    body = operations.call_local("chain.get", MEMBER, query={"sowId": sow, "include": "risks"})
    (entry,) = body["dependencies"]
    assert body["asOf"] == TODAY and entry["id"] == made
    assert (entry["slaDate"], entry["escalationDate"]) == ("2026-04-01", "2026-03-20")
    assert entry["sourceItem"] == {"id": a, "title": "A", "type": "task_item", "status": "in_progress"}
    assert entry["targetItem"]["status"] == "completed"  # a target in another SOW too
    ChainFlat.model_validate(body)
    tree = operations.call_local(
        "chain.get", MEMBER, query={"sowId": sow, "format": "tree", "include": "risks"}
    )
    ChainTree.model_validate(tree)
    assert tree["asOf"] == TODAY
    with pytest.raises(Exception, match="include=external,risks"):
        risks.check_chain(read_report(plain))


def test_a_requirement_shows_its_calculated_status_to_the_rules(run) -> None:
    sow = new_sow()
    parent = items.create_item(MEMBER, sow, ItemCreate(title="Structure", type="requirement")).id
    child = items.create_item(MEMBER, sow, ItemCreate(title="Pour", type="task_item", parentItemId=parent)).id
    operations.call_local("items.update", MEMBER, {"itemId": child}, body={"status": "completed"})
    later = item(sow, "Fit-out", "in_progress")
    dep(later, parent)  # waits for the requirement, completed through its only task
    assert run("chain", "check", sow, "--fail-on", "conflict").exit_code == 0
    assert [row["id"] for row in run("chain", "ready", sow, "--json").json()["ready"]] == [later]


def test_unwritable_paths_name_their_option(run, tmp_path: Path) -> None:
    sow = new_sow()
    missing = tmp_path / "no-such-folder"
    report = run("chain", "check", sow, "--report", f"sarif={missing / 'r.sarif'}")
    assert report.exit_code == 2 and f"--report: cannot write {missing / 'r.sarif'}" in report.stderr
    baseline = run("chain", "check", sow, "--write-baseline", missing / "b.json")
    assert (
        baseline.exit_code == 2 and f"--write-baseline: cannot write {missing / 'b.json'}" in baseline.stderr
    )
    assert not missing.exists()


def test_reports_say_why_when_the_server_cannot_be_reached(cli, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("SOWCTL_DB")
    monkeypatch.setenv("SOWCTL_RETRIES", "0")
    sarif, junit = tmp_path / "down.sarif", tmp_path / "down.xml"
    args = ["--report", f"sarif={sarif}", "--report", f"junit={junit}"]
    result = cli("--server", "http://127.0.0.1:9", "--token", "t", "chain", "check", "sow-1", *args)
    assert (result.exit_code, result.stdout) == (5, "")
    (invocation,) = ci_reports.sarif(sarif)["runs"][0]["invocations"]
    assert (
        invocation["exitCode"] == 5
        and "cannot reach server" in invocation["toolExecutionNotifications"][0]["message"]["text"]
    )
    (case,) = [case for cases in ci_reports.junit(junit).values() for case in cases]
    assert case["result"] == "error" and "cannot reach server" in case["message"]


def test_reports_say_why_on_an_unexpected_error(cli, tmp_path: Path, monkeypatch) -> None:
    def broken(*args, **kwargs):
        raise RuntimeError("boom\nsecond line")

    monkeypatch.setattr(risks, "check_chain", broken)
    path = tmp_path / "r.gitlab"
    env = {"GITHUB_ACTIONS": "true"}
    result = cli("chain", "check", new_sow(), "--report", f"gitlab={path}", env=env, catch_exceptions=True)
    assert result.exit_code == 5 and "unexpected error: RuntimeError: boom" in result.stderr
    assert (
        "::error title=sowctl chain check of SOW" in result.stderr and "RuntimeError: boom" in result.stderr
    )
    (issue,) = ci_reports.gitlab(path)
    assert issue["description"] == "sowctl chain check could not run (exit 5): RuntimeError: boom"


def test_an_unwritable_step_summary_warns_and_keeps_the_verdict(
    cli, risky, tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "missing" / "summary.md"))
    result = cli("chain", "check", risky["sow"], env={"GITHUB_ACTIONS": "true"})
    assert result.exit_code == 1
    assert "warning: GITHUB_STEP_SUMMARY: cannot append to" in result.stderr
