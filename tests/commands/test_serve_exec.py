"""``sowctl serve --exec CMD``, ``--load FILE`` and ``--export-on-exit FILE``, run as a user runs them."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.support.doubles import FINANCIAL_PROJECT, SOW, dataset

pytestmark = pytest.mark.slow  # real servers in subprocesses: the full suite (.ci/run), not the quick loop

# CMD in these tests: a Python script that calls the server with what --exec put in its environment.
CHECK = f"""
import os, sys, httpx
server = os.environ["SOWCTL_SERVER"]
token = {{"Authorization": "Bearer " + os.environ["SOWCTL_TOKEN"]}}
items = httpx.get(server + "/api/sow/{SOW}/items", headers=token)
external = httpx.get(
    server + "/api/external/budget-views",
    params={{"project_id": "{FINANCIAL_PROJECT}"}},
    headers={{
        "x-api-key": os.environ["SOWCTL_API_KEY"],
        "x-organization-id": os.environ["SOWCTL_ORG"],
        "x-company-id": os.environ["SOWCTL_COMPANY"],
    }},
)
open(os.environ["OUT"], "w").write(server)
print("statuses", items.status_code, external.status_code)
sys.exit(int(sys.argv[1]))
"""


def _python(script: Path, *args: str) -> str:
    return shlex.join([sys.executable, str(script), *args])


def _serve(tmp_path: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SOWCTL_")}
    env["OUT"] = str(tmp_path / "server-url")
    command = [sys.executable, "-m", "sowctl", "--db", str(tmp_path / "exec.db"), "serve", "--port", "0"]
    return subprocess.run(
        [*command, "--quiet", *args], capture_output=True, text=True, env=env, timeout=timeout, cwd=tmp_path
    )


def _gone(url: str) -> bool:
    """Whether nothing answers at ``url`` any more (the server was stopped)."""
    try:
        httpx.get(url + "/healthz", timeout=2)
    except httpx.TransportError:
        return True
    return False


@pytest.mark.parametrize("code", [0, 1, 3])
def test_exec_runs_the_command_with_credentials_and_passes_its_exit_code(tmp_path: Path, code: int) -> None:
    script = tmp_path / "check.py"
    script.write_text(CHECK)
    done = _serve(tmp_path, "--demo", "--exec", _python(script, str(code)))
    assert done.returncode == code, done.stderr
    assert "statuses 200 200" in done.stdout
    assert "Traceback" not in done.stderr
    assert _gone((tmp_path / "server-url").read_text())


def test_exec_stops_the_server_when_the_command_is_killed(tmp_path: Path) -> None:
    pid_file = tmp_path / "cmd.pid"
    command = f'echo "$SOWCTL_SERVER" > "$OUT"; echo $$ > {shlex.quote(str(pid_file))}; exec sleep 60'
    env = {k: v for k, v in os.environ.items() if not k.startswith("SOWCTL_")}
    env["OUT"] = str(tmp_path / "server-url")
    serve = [sys.executable, "-m", "sowctl", "--db", str(tmp_path / "exec.db"), "serve", "--port", "0"]
    process = subprocess.Popen(
        [*serve, "--quiet", "--exec", command],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        deadline = time.monotonic() + 30
        while not (pid_file.exists() and pid_file.read_text().strip()) and time.monotonic() < deadline:
            time.sleep(0.05)
        url = (tmp_path / "server-url").read_text().strip()
        assert httpx.get(url + "/healthz", timeout=5).status_code == 200
        os.kill(int(pid_file.read_text()), signal.SIGKILL)
        assert process.wait(timeout=30) == 128 + signal.SIGKILL
        assert _gone(url)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_exec_without_an_organization_still_gives_the_server(tmp_path: Path) -> None:
    command = 'test -n "$SOWCTL_SERVER" && test -z "$SOWCTL_TOKEN" && test -n "$SOWCTL_ADMIN_TOKEN"'
    done = _serve(tmp_path, "--admin-token", "t0k", "--exec", command)
    assert done.returncode == 0, done.stderr


def test_load_then_export_on_exit_keeps_state_between_runs(tmp_path: Path) -> None:
    start = tmp_path / "start.json"
    start.write_text(json.dumps(dataset()))
    script = tmp_path / "create.py"
    script.write_text(
        "import os, httpx\n"
        'auth = {"Authorization": "Bearer " + os.environ["SOWCTL_TOKEN"]}\n'
        f'r = httpx.post(os.environ["SOWCTL_SERVER"] + "/api/sow/{SOW}/items", headers=auth,\n'
        '               json={"title": "Made in run 1", "type": "requirement"})\n'
        "assert r.status_code == 201, r.text\n"
    )
    state = tmp_path / "state.json"
    first = _serve(tmp_path, "--load", str(start), "--export-on-exit", str(state), "--exec", _python(script))
    assert first.returncode == 0, first.stderr
    assert "exported" in first.stderr
    titles = [item["title"] for item in json.loads(state.read_text())["items"]]
    assert "Made in run 1" in titles
    # A second run on another database starts from what the first one left.
    (tmp_path / "exec.db").unlink()
    check = f'test "$(sowctl items list {SOW} --json | grep -c "Made in run 1")" = 1'
    bin_dir = str(Path(sys.executable).parent)
    second = _serve(tmp_path, "--load", str(state), "--exec", f'PATH={shlex.quote(bin_dir)}:"$PATH"; {check}')
    assert second.returncode == 0, (second.stdout, second.stderr)


def test_a_bad_load_file_names_the_problem_and_starts_nothing(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"sows": [{"id": "s", "projectId": "missing", "title": "x"}]}))
    done = _serve(tmp_path, "--load", str(bad), "--exec", "true")
    assert done.returncode == 2
    assert done.stderr.startswith(f"error: --load {bad}: ")
    assert "Listening" not in done.stdout and "Traceback" not in done.stderr


def test_export_on_exit_into_a_missing_directory_is_refused_at_start(tmp_path: Path) -> None:
    done = _serve(tmp_path, "--export-on-exit", str(tmp_path / "no" / "such" / "x.json"), "--exec", "true")
    assert done.returncode == 2
    assert "--export-on-exit: cannot write" in done.stderr


def test_the_readme_exec_example_runs(tmp_path: Path) -> None:
    """The test-double guide's `serve --exec` example (the README's too), as written, with a
    dataset and a test script of a user's."""
    root = Path(__file__).resolve().parents[2]
    section = (root / "docs" / "test-double.md").read_text().split("## Any language: `serve --exec`", 1)[1]
    command = section.split("```sh\n", 1)[1].split("```\n", 1)[0]
    readme = (root / "README.md").read_text().split("### A local instance for your tests", 1)[1]
    assert readme.split("```sh\n", 1)[1].split("```\n", 1)[0] == command
    (tmp_path / "dataset.json").write_text(json.dumps(dataset()))
    script = tmp_path / "integration-tests.sh"
    script.write_text(
        "#!/bin/sh\n"
        "set -e\n"
        f'sowctl items list {SOW} --json | grep -q "Foundations and substructure"\n'
        'curl -fsS -H "Authorization: Bearer $SOWCTL_TOKEN" "$SOWCTL_SERVER/api/sows" > /dev/null\n'
        "exit 3\n"  # the suite's own exit code comes back
    )
    script.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SOWCTL_")}
    env["PATH"] = f"{Path(sys.executable).parent}:{env.get('PATH', '')}"
    done = subprocess.run(
        ["bash", "-c", command], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 3, (done.stdout, done.stderr)
    assert json.loads((tmp_path / "after.json").read_text())["sows"]


@pytest.mark.parametrize("before", [None, "/their/own/metrics"])
def test_the_command_gets_no_metrics_directory_of_the_servers(tmp_path: Path, monkeypatch, before) -> None:
    """The workers' metrics directory is the server's; a Python program under CMD that uses
    prometheus_client keeps what its environment said before."""
    if before is None:
        monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)
    else:
        monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", before)
    show = "import os; print('dir', os.environ.get('PROMETHEUS_MULTIPROC_DIR', 'unset'))"
    done = _serve(tmp_path, "--exec", shlex.join([sys.executable, "-c", show]))
    assert done.returncode == 0, done.stderr
    assert f"dir {before or 'unset'}" in done.stdout


def test_serve_demo_exec_prints_no_banner_and_no_secret_on_stdout(tmp_path: Path) -> None:
    printer = "import os; print('cmd sees', bool(os.environ['SOWCTL_TOKEN']))"
    done = _serve(tmp_path, "--demo", "--exec", f'{sys.executable} -c "{printer}"')
    assert done.returncode == 0, done.stderr
    assert done.stdout == "cmd sees True\n"
    assert "sowt_" not in done.stderr and "sowk_" not in done.stderr
    assert "serving on http://" in done.stderr


def test_serve_load_of_a_bad_dataset_leaves_no_new_database_and_an_old_one_unchanged(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"organizations": [{"id": "o", "name": "O"}], "sows": "not a list"}))
    done = _serve(tmp_path, "--load", str(bad), "--exec", "true")
    assert done.returncode == 2 and done.stderr.startswith("error: --load")
    assert list(tmp_path.glob("exec.db*")) == []
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps({"users": [{"id": "u", "organizationId": "nope", "name": "U"}]}))
    done = _serve(tmp_path, "--load", str(wrong), "--exec", "true")  # a record refused
    assert done.returncode == 2 and "organization nope not found" in done.stderr
    assert list(tmp_path.glob("exec.db*")) == []
    assert _serve(tmp_path, "--demo", "--exec", "true").returncode == 0  # now it exists, with data
    done = _serve(tmp_path, "--load", str(wrong), "--exec", "true")
    assert done.returncode == 2 and (tmp_path / "exec.db").exists()
    with contextlib.closing(sqlite3.connect(tmp_path / "exec.db")) as database:
        assert database.execute("SELECT count(*) FROM sow").fetchone()[0] > 0  # the demo's are kept
