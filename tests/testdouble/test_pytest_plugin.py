"""The pytest plugin as a user meets it: a throw-away project outside this repository that
depends on the installed sowctl and uses nothing but the plugin, run by pytest in a subprocess
(alone, and with ``-n 2``). Every test of it passes but one, which fails on purpose with the
near-miss report of a request verification. The last tests call the plugin in process: a
dataset marker that cannot be used fails the test with a message, not a traceback.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.support.doubles import FINANCIAL_PROJECT, SOW, dataset

REPO = Path(__file__).resolve().parents[2]

PROJECT_TESTS = f'''
import os

import pytest

from sowctl import NotFound, RemoteError

SOW = "{SOW}"
pytestmark = pytest.mark.sowctl_dataset("data/dataset.json")


@pytest.fixture(autouse=True)
def note_the_server(sowctl_server):
    """Which server each xdist worker used (the outer test checks: one per worker)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    with open(os.environ["SERVERS_SEEN"], "a") as seen:
        seen.write(f"{{worker}} {{sowctl_server.url}}\\n")


def titles(service):
    return sorted(item["title"] for item in service.client.items.list(SOW))


def test_a_write_is_gone_in_the_next_test_first(sowctl_service):
    sowctl_service.client.items.create(SOW, title="Scratch", type="requirement")
    assert "Scratch" in titles(sowctl_service)


def test_a_write_is_gone_in_the_next_test_second(sowctl_service):
    assert "Scratch" not in titles(sowctl_service)
    assert len(titles(sowctl_service)) == {len([i for i in dataset()["items"] if i["sowId"] == SOW])}


@pytest.mark.sowctl_dataset({{"organizations": [{{"id": "org-x", "name": "X"}}]}})
def test_a_test_can_bring_its_own_dataset(sowctl_service):
    assert sowctl_service.org == "org-x"
    with pytest.raises(NotFound):
        sowctl_service.client.items.list(SOW)


@pytest.mark.sowctl_faults(rate=1, status=503, count=1, routes=["GET /api/sow/*/items"])
def test_a_fault_fails_the_next_request_only(sowctl_service):
    with pytest.raises(RemoteError) as failed:
        sowctl_service.client.items.list(SOW)
    assert failed.value.status == 503
    assert titles(sowctl_service)
    sowctl_service.admin.verify("GET", "/api/sow/*/items", status=503, exactly=1)


@pytest.mark.sowctl_clock("2030-01-02T03:04:05Z")
def test_a_frozen_clock(sowctl_service):
    item = sowctl_service.client.items.create(SOW, title="Dated", type="requirement")
    assert item["createdAt"].startswith("2030-01-02T03:04:05")


def test_group_b_credentials(sowctl_service):
    views = sowctl_service.client.finance.budget_views({FINANCIAL_PROJECT})
    assert views


def test_verify_holds(sowctl_service):
    sowctl_service.client.items.create(SOW, title="Wall", type="requirement")
    sowctl_service.admin.verify("POST", "/api/sow/*/items", body={{"title": "Wall"}}, exactly=1)


def test_verify_near_miss_fails_on_purpose(sowctl_service):
    sowctl_service.client.items.create(SOW, title="Wall", type="requirement")
    sowctl_service.admin.verify("POST", "/api/sow/*/items", body={{"title": "Walls"}}, exactly=1)


def test_a_checkpoint_of_my_own(sowctl_service):
    admin, client = sowctl_service.admin, sowctl_service.client
    before = titles(sowctl_service)
    admin.checkpoint("mine")
    client.items.create(SOW, title="Temporary", type="requirement")
    admin.restore("mine")
    assert titles(sowctl_service) == before
'''


def _project(root: Path) -> Path:
    project = root / "integration-project"
    (project / "tests" / "data").mkdir(parents=True)
    (project / "pyproject.toml").write_text(
        textwrap.dedent(
            """\
            [project]
            name = "integration-project"
            version = "0.1"
            dependencies = ["sowctl"]

            [tool.pytest.ini_options]
            testpaths = ["tests"]
            """
        )
    )
    (project / "tests" / "data" / "dataset.json").write_text(json.dumps(dataset()))
    (project / "tests" / "test_integration.py").write_text(PROJECT_TESTS)
    return project


def _pytest(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SOWCTL_", "PYTEST_"))}
    env.pop("PYTHONPATH", None)
    env["SERVERS_SEEN"] = str(project / "servers-seen.txt")
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-p", "no:randomly", *args],
        cwd=project,
        capture_output=True,
        text=True,
        env=env,
        timeout=180,
    )


def _check(done: subprocess.CompletedProcess[str]) -> None:
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert "1 failed, 8 passed" in output, output
    assert "FAILED tests/test_integration.py::test_verify_near_miss_fails_on_purpose" in output, output
    expected = (
        'expected exactly 1 request matching POST /api/sow/*/items with body {"title": "Walls"}, found 0',
        "closest recorded requests:",
        'body.title: expected "Walls", got "Wall"',
    )
    for line in expected:
        assert line in output, output
    assert "Traceback" not in output


@pytest.mark.slow
def test_a_project_using_only_the_plugin(tmp_path: Path) -> None:
    project = _project(tmp_path)
    assert REPO not in project.parents
    _check(_pytest(project))
    assert len(set(_servers(project).values())) == 1


@pytest.mark.slow
@pytest.mark.parametrize(
    "own_database",
    [False, pytest.param(True, marks=pytest.mark.database)],  # the plugin makes worker databases
    ids=["temporary-sqlite", "sowctl-db"],
)
def test_a_project_using_only_the_plugin_under_xdist(tmp_path: Path, db_url: str, own_database: bool) -> None:
    """One server per worker; with --sowctl-db (this run's backend: SQLite or PostgreSQL) one
    database per worker too (NAME_gwN, created by the plugin)."""
    project = _project(tmp_path)
    options = ["--sowctl-db", db_url] if own_database else []
    try:
        _check(_pytest(project, "-n", "2", *options))
    finally:
        if own_database and db_url.startswith("postgres"):
            _drop_worker_databases(db_url)
    servers = _servers(project)
    assert sorted(servers) == ["gw0", "gw1"]
    assert len(set(servers.values())) == 2  # one server per worker


def _servers(project: Path) -> dict[str, str]:
    """worker -> the server URL its tests used (each worker must have used one only)."""
    seen: dict[str, set[str]] = {}
    for line in (project / "servers-seen.txt").read_text().splitlines():
        worker, url = line.split()
        seen.setdefault(worker, set()).add(url)
    assert all(len(urls) == 1 for urls in seen.values()), seen
    return {worker: urls.pop() for worker, urls in seen.items()}


def _drop_worker_databases(url: str) -> None:
    import psycopg2

    name = url.rsplit("/", 1)[1]
    conn = psycopg2.connect(url.rsplit("/", 1)[0] + "/postgres")
    conn.autocommit = True
    try:
        with conn.cursor() as cursor:
            for worker in ("gw0", "gw1"):
                cursor.execute(f'DROP DATABASE IF EXISTS "{name}_{worker}"')
    finally:
        conn.close()


@pytest.mark.slow
@pytest.mark.database  # checkpoints on the run's backend
def test_a_project_against_an_already_running_server(
    tmp_path: Path, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import httpx

    from sowctl.testing import AdminClient, AdminError, SandboxSession
    from tests.support.server import Server

    project = _project(tmp_path)
    server = Server(db_url, "--admin-token", "sowa_given")
    try:
        with AdminClient(server.url, "sowa_given") as admin:
            # Another job's sandbox on the same server, with a SOW and a logged request.
            other = admin.create_sandbox(ttl="1h", name="another job")
            with AdminClient(server.url, other["adminToken"]) as other_admin:
                token = {"Authorization": f"Bearer {other['token']}"}
                made = httpx.post(
                    f"{server.url}/api/sows", json={"id": SOW, "title": "Theirs"}, headers=token
                )
                assert made.status_code == 201, made.text
                options = ["--sowctl-server", server.url, "--sowctl-admin-token", "sowa_given"]
                done = _pytest(project, *options, "-k", "checkpoint or fault or near_miss or bring")
                # Twice: the first session's sandbox is gone, so the same dataset loads again.
                again = _pytest(project, *options, "-k", "checkpoint")
                kept = httpx.get(f"{server.url}/api/sows/{SOW}", headers=token)
                assert kept.status_code == 200 and kept.json()["title"] == "Theirs", kept.text
                assert [entry["path"] for entry in other_admin.requests()] == [
                    "/api/sows",
                    f"/api/sows/{SOW}",
                ]
            assert [entry["organizationId"] for entry in admin.sandboxes()] == [other["organizationId"]]
            # A job that made its sandbox itself hands the plugin that sandbox's admin token.
            scoped = ["--sowctl-server", server.url, "--sowctl-admin-token", other["adminToken"]]
            in_own = _pytest(project, *scoped, "-k", "checkpoint or fault")
            assert [entry["organizationId"] for entry in admin.sandboxes()] == [other["organizationId"]]
            monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw1")  # one sandbox, two workers: refused
            with (
                pytest.raises(AdminError, match="serves one session"),
                SandboxSession.opened(server.url, other["adminToken"]),
            ):
                pass
    finally:
        server.stop()
    assert in_own.returncode == 0 and "2 passed" in in_own.stdout, in_own.stdout + in_own.stderr
    output = done.stdout + done.stderr
    # The dataset's organization became the sandbox's: "org-x" is not what the test gets.
    assert done.returncode == 1 and "2 failed, 2 passed" in output, output
    assert "test_a_test_can_bring_its_own_dataset" in output and "Traceback" not in output
    assert again.returncode == 0 and "1 passed" in again.stdout, again.stdout + again.stderr
    assert set(_servers(project).values()) == {server.url}
    missing = _pytest(project, "--sowctl-server", server.url, "-k", "checkpoint")
    assert missing.returncode != 0
    assert (
        "--sowctl-server needs --sowctl-admin-token TOKEN (or SOWCTL_ADMIN_TOKEN)"
        in missing.stdout + missing.stderr
    )


# --- the dataset marker fails a test cleanly, in process ------------------------------------------


class _Marker:
    def __init__(self, *args):
        self.args, self.kwargs = args, {}


class _Node:
    def __init__(self, path, marker):
        self.path, self._marker = path, marker

    def get_closest_marker(self, name):
        return self._marker


class _Request:
    def __init__(self, node):
        self.node = node


def test_dataset_marker_with_a_missing_file_fails_without_a_traceback(tmp_path: Path) -> None:
    from sowctl.testing import plugin

    request = _Request(_Node(tmp_path / "test_x.py", _Marker("missing.json")))
    with pytest.raises(pytest.fail.Exception) as failure:
        plugin._dataset(request)
    assert failure.value.pytrace is False
    assert "sowctl_dataset" in str(failure.value) and str(tmp_path / "missing.json") in str(failure.value)


def test_dataset_marker_with_a_refused_dataset_fails_without_a_traceback() -> None:
    from sowctl.testing import plugin
    from sowctl.testing.admin import AdminError

    class Admin:
        def reset(self):
            pass

        def load(self, data, replace):
            raise AdminError("POST /_admin/dataset: HTTP 400: items[0].staus: unknown field")

    class Server:
        prepared: set = set()
        admin = Admin()

    with pytest.raises(pytest.fail.Exception) as failure:
        plugin._prepare(Server(), {"items": [{"staus": "x"}]})
    assert failure.value.pytrace is False and "staus: unknown field" in str(failure.value)


STRICT_TESTS = """
import httpx
import pytest

DATASET = {
    "organizations": [{"id": "org-1", "name": "Acme"}],
    "users": [{"id": "u-1", "organizationId": "org-1"}],
}


@pytest.mark.sowctl_dataset(DATASET)
def test_a_described_route_passes(sowctl_service):
    auth = {"Authorization": f"Bearer {sowctl_service.token}"}
    assert httpx.get(f"{sowctl_service.url}/projects", headers=auth).status_code == 200


@pytest.mark.sowctl_dataset(DATASET)
def test_an_extension_is_refused(sowctl_service):
    auth = {"Authorization": f"Bearer {sowctl_service.token}"}
    refused = httpx.get(f"{sowctl_service.url}/api/sows", headers=auth)
    assert refused.status_code == 400 and "route.extension" in refused.text
"""


@pytest.mark.slow
def test_the_plugin_serves_in_strict_contract_mode_on_request(tmp_path: Path) -> None:
    (tmp_path / "test_strict.py").write_text(STRICT_TESTS)
    done = _pytest(tmp_path, "--sowctl-contract", "strict", "test_strict.py")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed" in done.stdout
    shared = _pytest(
        tmp_path,
        *("--sowctl-contract", "strict", "--sowctl-server", "http://127.0.0.1:9"),
        *("--sowctl-admin-token", "t" * 32, "test_strict.py"),
    )
    assert shared.returncode != 0
    assert "contract mode is the whole server's" in shared.stdout + shared.stderr
