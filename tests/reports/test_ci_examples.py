"""The CI gate guide's examples (docs/ci-gate.md) work as pasted: each job definition is valid
YAML, wires the reports it writes to the right CI feature, and its `sowctl` commands run
against a server (remote mode, the app in process) with the guide's accepted-risks file and a
baseline made by the guide's own command."""

from __future__ import annotations

import os
import shlex
from datetime import datetime
from pathlib import Path

import pytest
import yaml

import sowctl
from sowctl.foundation import clock
from sowctl.services import demo_data
from tests.support import ci_reports
from tests.support.client import SERVER, route_remote_in_process

ROOT = Path(__file__).resolve().parents[2]
SECTION = (ROOT / "docs" / "ci-gate.md").read_text()
README = (ROOT / "README.md").read_text()
NOW = datetime(2026, 3, 16, 12, 0, 0)


def blocks(language: str) -> list[str]:
    return [part.split("```", 1)[0] for part in SECTION.split(f"```{language}\n")[1:]]


def sowctl_commands(lines: list[str]) -> list[str]:
    return [line for line in lines if line.startswith("sowctl ")]


EXAMPLES = [yaml.safe_load(text) for text in blocks("yaml")]
# The GitHub workflow in plain steps (the one through action.yml: tests/deploy/test_action.py)
# and the GitLab job.
(GITHUB,) = [
    example
    for example in EXAMPLES
    if any("run" in step for job in example.get("jobs", {}).values() for step in job["steps"])
]
(GITLAB,) = [example for example in EXAMPLES if "script" in example.get("chain-check", {})]


def github_steps() -> list[dict]:
    (job,) = GITHUB["jobs"].values()
    return job["steps"]


def github_commands() -> list[str]:
    return sowctl_commands([step["run"] for step in github_steps() if "run" in step])


def gitlab_commands() -> list[str]:
    (job,) = GITLAB.values()
    return sowctl_commands(job["script"])


def report_path(command: str, fmt: str) -> str:
    args = shlex.split(command)
    specs = [args[i + 1] for i, arg in enumerate(args) if arg == "--report"]
    (path,) = [spec.split("=", 1)[1] for spec in specs if spec.startswith(f"{fmt}=")]
    return path


def test_the_examples_wire_each_report_to_its_ci_feature() -> None:
    (check,) = github_commands()
    upload = next(step for step in github_steps() if "upload-sarif" in step.get("uses", ""))
    assert upload["uses"].startswith("github/codeql-action/upload-sarif@")
    assert upload["with"]["sarif_file"] == report_path(check, "sarif")
    assert upload["if"] == "always()"  # the findings are uploaded when the check fails too
    (job,) = GITHUB["jobs"].values()
    assert job["permissions"]["security-events"] == "write"
    (command,) = gitlab_commands()
    (gitlab_job,) = GITLAB.values()
    reports = gitlab_job["artifacts"]["reports"]
    assert gitlab_job["artifacts"]["when"] == "always"
    assert reports["junit"] == report_path(command, "junit")
    assert reports["codequality"] == report_path(command, "gitlab")


@pytest.fixture
def server(db, cli, db_url, monkeypatch, tmp_path):
    """The demo dataset behind an in-process server, reached through SOWCTL_SERVER/SOWCTL_TOKEN as
    the examples' CI variables would set them, from a checkout holding the guide's files."""
    from sowctl.server.app import create_app
    from sowctl.services import credentials
    from sowctl.services.dataset import import_dataset

    clock.set_fixed_now(NOW)
    import_dataset(demo_data.demo_dataset(NOW.date()))
    token = credentials.create_token(demo_data.DEMO_USER, demo_data.DEMO_ORG).secret
    route_remote_in_process(monkeypatch, create_app(db_url))
    monkeypatch.delenv("SOWCTL_DB")
    monkeypatch.setenv("SOWCTL_SERVER", SERVER)
    monkeypatch.setenv("SOWCTL_TOKEN", token)
    monkeypatch.setenv("SOW_ID", demo_data.DEMO_SOW)
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".sowctl").mkdir()
    (accepted,) = blocks("toml")
    (tmp_path / ".sowctl" / "accepted-risks.toml").write_text(accepted)

    def run(command: str, env: dict[str, str] | None = None):
        return cli(*shlex.split(os.path.expandvars(command))[1:], env=env)

    (record,) = sowctl_commands(blocks("sh")[0].splitlines())
    first = run(record)
    assert first.exit_code == 0, first.stderr  # judged by the baseline it has just written
    assert (tmp_path / ".sowctl" / "baseline.json").is_file()
    return run


def test_the_github_example_runs(server, tmp_path, monkeypatch) -> None:
    summary = tmp_path / "step-summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    (command,) = github_commands()
    result = server(command, env={"GITHUB_ACTIONS": "true"})
    assert result.exit_code == 0, result.stdout + result.stderr
    sarif = ci_reports.sarif(tmp_path / report_path(command, "sarif"))
    results = sarif["runs"][0]["results"]
    accepted = [r for r in results if r.get("suppressions")]
    assert [r["ruleId"] for r in accepted] == ["critical"]  # the guide's accepted risk
    assert {r["baselineState"] for r in results} == {"unchanged"}
    assert "## sowctl chain check of SOW" in summary.read_text()


def test_the_gitlab_example_runs(server, tmp_path) -> None:
    (command,) = gitlab_commands()
    result = server(command)
    assert result.exit_code == 0, result.stdout + result.stderr
    suites = ci_reports.junit(tmp_path / report_path(command, "junit"))
    skipped = [case for cases in suites.values() for case in cases if case["result"] == "skipped"]
    assert skipped  # the accepted risk and the baseline's findings
    issues = ci_reports.gitlab(tmp_path / report_path(command, "gitlab"))
    assert issues and all(issue["severity"] == "info" for issue in issues)
    assert (tmp_path / report_path(command, "markdown")).read_text().startswith("## sowctl chain check")


def test_the_example_gate_fails_on_a_new_risk(server, tmp_path) -> None:
    """The examples' baseline does not hide what comes after it."""
    from sowctl import operations
    from sowctl.services.access import Caller

    local = Caller.local()
    target = {"dependencyId": demo_data.DEMO_OVERDUE_DEPENDENCY}
    operations.call_local("deps.update", local, target, body={"riskLevel": "critical"})
    (command,) = gitlab_commands()
    result = server(command)
    assert result.exit_code == 1
    failures = [
        case
        for cases in ci_reports.junit(tmp_path / report_path(command, "junit")).values()
        for case in cases
        if case["result"] == "failure"
    ]
    assert [case["name"].split(":")[0] for case in failures] == [demo_data.DEMO_OVERDUE_DEPENDENCY]


def test_the_examples_install_sowctl_as_the_readme_says() -> None:
    """Both jobs install the release wheel with the one line the docs give for it; .ci/wheel
    installs that wheel into a fresh environment and uses it."""
    line = "pip install vendor/sowctl-*.whl"
    assert [step["run"] for step in github_steps() if "pip install" in step.get("run", "")] == [line]
    (job,) = GITLAB.values()
    assert [command for command in job["script"] if "pip install" in command] == [line]
    assert f"pip install sowctl-{sowctl.__version__}-py3-none-any.whl" in README
    assert f"&& {line} >/dev/null" in (ROOT / ".ci" / "wheel").read_text()  # run there, as written
