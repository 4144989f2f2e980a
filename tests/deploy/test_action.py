"""action.yml, the composite GitHub Action: its shell steps run here as a runner runs them
(bash -eo pipefail, inputs substituted, GITHUB_OUTPUT, GITHUB_PATH and GITHUB_STEP_SUMMARY
files), against a local sowctl serve with the demo dataset; the SARIF upload step, which
needs GitHub, is checked for what it would upload."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from sowctl.services import demo_data
from tests.support.server import Server, seed_demo

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
ACTION = yaml.safe_load((ROOT / "action.yml").read_text())
EXPRESSION = re.compile(r"\$\{\{\s*(.+?)\s*\}\}")
FULL_SHA = re.compile(r"@[0-9a-f]{40}(\s|$)")
INSTALL_TIMEOUT = 900  # seconds pip may take to install sowctl: a guard against a hang


@dataclass
class Run:
    """One run of the action's steps: what each step did."""

    exit_codes: list[int] = field(default_factory=list)
    outputs: dict[str, dict[str, str]] = field(default_factory=dict)
    uploads: list[dict[str, str]] = field(default_factory=list)
    summary: str = ""


class Runner:
    """Runs the action's steps the way a GitHub runner does, in one workspace."""

    def __init__(self, tmp: Path) -> None:
        self.temp = tmp / "runner-temp"
        self.workspace = tmp / "workspace"
        self.temp.mkdir()
        self.workspace.mkdir()
        self.path: list[str] = []

    def run(self, inputs: dict[str, str], env: dict[str, str], steps: list[dict] | None = None) -> Run:
        values = {name: spec.get("default", "") for name, spec in ACTION["inputs"].items()}
        values.update(inputs)
        run = Run()
        summary = self.temp / "summary.md"
        summary.write_text("")
        for step in steps if steps is not None else ACTION["runs"]["steps"]:
            resolve = lambda text: EXPRESSION.sub(lambda m: _evaluate(m.group(1), values, run), str(text))  # noqa: E731
            if "if" in step and resolve(step["if"]) != "true":
                continue
            if "uses" in step:
                run.uploads.append({key: resolve(value) for key, value in step["with"].items()})
                continue
            code = self._shell(step, resolve, env, run, summary)
            run.exit_codes.append(code)
            if code != 0:
                break
        run.summary = summary.read_text()
        return run

    def _shell(self, step: dict, resolve, env: dict[str, str], run: Run, summary: Path) -> int:
        output, path_file = self.temp / "output", self.temp / "path"
        output.write_text("")
        path_file.write_text("")
        step_env = {
            **env,
            **{key: resolve(value) for key, value in step.get("env", {}).items()},
            "PATH": os.pathsep.join([*self.path, "/usr/local/bin", "/usr/bin", "/bin"]),
            "GITHUB_ACTIONS": "true",
            "GITHUB_ACTION_PATH": str(ROOT),
            "GITHUB_WORKSPACE": str(self.workspace),
            "RUNNER_TEMP": str(self.temp),
            "GITHUB_OUTPUT": str(output),
            "GITHUB_PATH": str(path_file),
            "GITHUB_STEP_SUMMARY": str(summary),
        }
        assert step["shell"] == "bash"
        done = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", resolve(step["run"])],
            cwd=self.workspace,
            env=step_env,
            capture_output=True,
            text=True,
            timeout=INSTALL_TIMEOUT,
        )
        for line in output.read_text().splitlines():
            key, _, value = line.partition("=")
            run.outputs.setdefault(step.get("id", ""), {})[key] = value
        self.path = [*reversed(path_file.read_text().split()), *self.path]
        return done.returncode


def _evaluate(expression: str, inputs: dict[str, str], run: Run) -> str:
    """The few expressions action.yml uses: an input, a step's output, an input compared."""
    compared = re.fullmatch(r"inputs\.([\w-]+) == '([^']*)'", expression)
    if compared:
        return "true" if inputs[compared.group(1)] == compared.group(2) else "false"
    if expression.startswith("inputs."):
        return inputs[expression.removeprefix("inputs.")]
    step_output = re.fullmatch(r"steps\.([\w-]+)\.outputs\.([\w-]+)", expression)
    if step_output:
        return run.outputs.get(step_output.group(1), {}).get(step_output.group(2), "")
    raise AssertionError(f"this runner does not know the expression {expression!r}")


@pytest.fixture(scope="module")
def runner(tmp_path_factory: pytest.TempPathFactory) -> Runner:
    """A runner on which the install step ran once (pip installs sowctl from this checkout)."""
    runner = Runner(tmp_path_factory.mktemp("action"))
    install = [step for step in ACTION["runs"]["steps"] if step["name"] == "Install sowctl"]
    installed = runner.run({"sow": "-"}, {"HOME": str(runner.temp)}, steps=install)
    assert installed.exit_codes == [0]
    assert (runner.temp / "sowctl-action" / "bin" / "sowctl").exists()
    return runner


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[Server, str]]:
    db = tmp_path / "demo.db"
    token, _ = seed_demo(str(db))
    served = Server(db)
    try:
        yield served, token
    finally:
        served.stop()


def _checks(runner: Runner, inputs: dict[str, str], token: str) -> Run:
    steps = [step for step in ACTION["runs"]["steps"] if step["name"] != "Install sowctl"]
    return runner.run(inputs, {"HOME": str(runner.temp), "SOWCTL_TOKEN": token}, steps=steps)


def _sarif_results(path: Path) -> list[dict]:
    sarif = json.loads(path.read_text())
    assert sarif["version"] == "2.1.0"
    return sarif["runs"][0]["results"]


def test_a_failing_chain_fails_the_action_after_its_sarif_report_and_summary(runner, server) -> None:
    served, token = server
    run = _checks(runner, {"sow": demo_data.DEMO_SOW, "server": served.url}, token)

    assert run.outputs["check"]["exit-code"] == "1"
    assert run.exit_codes == [0, 1]  # the check step records, the last step fails
    sarif = runner.workspace / "sowctl.sarif"
    rules = {result["ruleId"] for result in _sarif_results(sarif)}
    assert {"critical", "overdue"} <= rules
    assert run.uploads == [{"sarif_file": "sowctl.sarif", "category": "sowctl-chain"}]
    heading = run.summary.splitlines()[0]  # sowctl's Markdown report, its text escaped
    assert heading.startswith("## sowctl chain check of SOW ") and heading.endswith(": failed")
    assert '==>|"critical"|' in run.summary


def test_a_baseline_of_the_known_findings_lets_the_action_pass(runner, server, tmp_path: Path) -> None:
    served, token = server
    baseline = runner.workspace / "baseline.json"
    sowctl = runner.temp / "sowctl-action" / "bin" / "sowctl"
    written = subprocess.run(
        [sowctl, "--server", served.url, "chain", "check", demo_data.DEMO_SOW, "--write-baseline", baseline],
        env={"HOME": str(tmp_path), "SOWCTL_TOKEN": token, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert baseline.exists(), written.stderr
    inputs = {
        "sow": demo_data.DEMO_SOW,
        "server": served.url,
        "baseline": "baseline.json",
        "sarif-file": "reports/chain.sarif",
        "upload-sarif": "false",
    }
    (runner.workspace / "reports").mkdir(exist_ok=True)
    run = _checks(runner, inputs, token)

    assert run.outputs["check"]["exit-code"] == "0"
    assert run.exit_codes == [0, 0]
    assert run.uploads == []
    assert _sarif_results(runner.workspace / "reports" / "chain.sarif")


def test_a_check_that_cannot_run_fails_the_action_with_its_exit_code(runner, server) -> None:
    served, token = server
    run = _checks(runner, {"sow": "no-such-sow", "server": served.url, "sarif-file": "missing.sarif"}, token)

    assert run.outputs["check"]["exit-code"] == "3"  # unknown SOW
    assert run.exit_codes == [0, 3]
    assert (runner.workspace / "missing.sarif").exists()  # the report says why


def test_action_yml_follows_the_github_actions_schema() -> None:
    import sys

    check = Path(sys.executable).with_name("check-jsonschema")
    done = subprocess.run(
        [check, "--builtin-schema", "vendor.github-actions", ROOT / "action.yml"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_action_the_action_and_the_docs_use_is_pinned_by_a_full_commit() -> None:
    texts = {name: (ROOT / name).read_text() for name in ("action.yml", "README.md", "docs/ci-gate.md")}
    unpinned = [
        (name, line.strip())
        for name, text in texts.items()
        for line in text.splitlines()
        if re.match(r"\s*(- )?uses: ", line) and not FULL_SHA.search(line)
    ]
    assert unpinned == []
    assert any("uses: " in line for line in texts["README.md"].splitlines())


def test_the_guide_s_workflow_passes_the_action_only_inputs_it_declares_and_the_token_by_env() -> None:
    guide = (ROOT / "docs" / "ci-gate.md").read_text()
    workflows = [yaml.safe_load(part.split("```", 1)[0]) for part in guide.split("```yaml\n")[1:]]
    steps = [
        step
        for workflow in workflows
        for job in workflow.get("jobs", {}).values()
        for step in job["steps"]
        if "/sowctl@" in step.get("uses", "")
    ]
    assert len(steps) == 1
    (step,) = steps
    assert set(step["with"]) <= set(ACTION["inputs"])
    assert {name for name, spec in ACTION["inputs"].items() if spec.get("required")} <= set(step["with"])
    assert step["env"] == {"SOWCTL_TOKEN": "${{ secrets.SOWCTL_TOKEN }}"}
