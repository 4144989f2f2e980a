"""``sowctl serve`` for real: a subprocess on a free port, real sockets, real signals.

The first tests drive the command in process with the production runner replaced
by a fake (options, demo credentials, what is printed); the rest start the real
server with ``python -m sowctl serve --port 0`` and talk to it with httpx.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from sowctl.foundation.budgets import MAX_MESSAGE_CHARS
from sowctl.services import demo_data
from tests.support.client import api_key, wsgi_client
from tests.support.server import Server, demo_secrets

STARTUP_TIMEOUT = 20.0


# --- the command, with a fake runner (tests/support/cli.py) --------------------------------------


def test_serve_passes_its_options_to_the_runner(cli, fake_runner: dict) -> None:
    result = cli("serve", "--host", "0.0.0.0", "--port", "0", "--workers", "3", "--threads", "2", "--quiet")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "Listening on http://0.0.0.0:54321\n"
    assert {k: fake_runner[k] for k in ("host", "port", "workers", "threads", "access_log")} == {
        "host": "0.0.0.0",
        "port": 0,
        "workers": 3,
        "threads": 2,
        "access_log": False,
    }
    # The runner refuses bodies by the application's own limit (one setting for both).
    assert fake_runner["settings"] is fake_runner["app"].settings
    with wsgi_client(fake_runner["app"]) as client:
        assert client.get("/healthz").json() == {"status": "ok"}


def test_serve_refuses_remote_mode(cli, fake_runner: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SOWCTL_DB")
    result = cli("--server", "http://example.test", "serve")
    assert result.exit_code == 2
    assert "local mode" in result.stderr and "app" not in fake_runner


@pytest.mark.parametrize("args", [["--port", "70000"], ["--workers", "0"], ["--rate-per-minute", "0"]])
def test_serve_rejects_bad_options(cli, fake_runner: dict, args: list[str]) -> None:
    result = cli("serve", *args)
    assert result.exit_code == 2 and "app" not in fake_runner


def test_serve_reports_a_port_in_use(cli) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = cli("serve", "--port", str(port))
    assert result.exit_code == 5
    assert result.stderr.startswith(f"error: cannot listen on 127.0.0.1:{port}: ")
    assert "in use" in result.stderr


def test_serve_demo_loads_once_and_prints_working_credentials(cli, fake_runner: dict) -> None:
    first = cli("serve", "--demo", "--port", "8123")
    assert first.exit_code == 0, first.stderr
    lines = first.stdout.splitlines()
    assert lines[0] == "Listening on http://127.0.0.1:8123"
    assert sum(line.startswith("Listening on") for line in lines) == 1
    assert "Demo dataset loaded." in lines
    token, key = demo_secrets(first.stdout)
    assert f"org:      {demo_data.DEMO_ORG}" in first.stdout
    assert f"company:  {demo_data.DEMO_COMPANY}" in first.stdout
    assert (
        f"  export SOWCTL_SERVER=http://127.0.0.1:8123 SOWCTL_TOKEN={token} SOWCTL_API_KEY={key} "
        f"SOWCTL_ORG={demo_data.DEMO_ORG} SOWCTL_COMPANY={demo_data.DEMO_COMPANY}" in lines
    )
    assert any(line.endswith(f" items list {demo_data.DEMO_SOW}") for line in lines)
    with wsgi_client(fake_runner["app"]) as client:
        items = client.get(
            f"/api/sow/{demo_data.DEMO_SOW}/items", headers={"Authorization": f"Bearer {token}"}
        )
        assert items.status_code == 200 and items.json()
        views = client.get(
            f"/api/external/budget-views?project_id={demo_data.DEMO_PROJECT_ID}",
            headers=api_key(key, demo_data.DEMO_ORG, demo_data.DEMO_COMPANY),
        )
        assert views.status_code == 200, views.text

    second = cli("serve", "--demo", "--port", "8123")  # same database: not reloaded, fresh secrets
    assert second.exit_code == 0, second.stderr
    assert "Demo dataset already present (not reloaded)." in second.stdout
    assert demo_secrets(second.stdout)[0] != token


def test_serve_demo_refuses_a_database_of_other_data(cli, fake_runner: dict, db_url: str) -> None:
    from sowctl.storage import models as m
    from sowctl.storage.database import open_database

    open_database(db_url)
    m.Organization.create(id="org-mine", name="Mine")
    result = cli("serve", "--demo")
    assert result.exit_code == 2
    assert "no demo organization" in result.stderr and "app" not in fake_runner


def test_serve_load_of_a_missing_file_names_load(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SOWCTL_")}
    command = [sys.executable, "-m", "sowctl", "--db", str(tmp_path / "exec.db"), "serve", "--port", "0"]
    done = subprocess.run(
        [*command, "--load", str(tmp_path / "nonexistent.json"), "--exec", "true"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        cwd=tmp_path,
    )
    assert done.returncode == 2
    assert done.stderr.startswith("error: --load: cannot read ")
    assert list(tmp_path.glob("exec.db*")) == []  # "nothing starts": no database was made


# --- the real server -------------------------------------------------------------------------------


@pytest.fixture
def start(tmp_path: Path) -> Iterator:
    servers: list[Server] = []

    def run(*args: str, db: Path | None = None) -> Server:
        server = Server(db or tmp_path / "e2e.db", *args, quiet=False)
        servers.append(server)
        return server

    yield run
    for server in servers:
        if server.process.poll() is None:
            server.stop(signal.SIGKILL)


def make_token(db: Path) -> str:
    from sowctl.services import credentials
    from sowctl.storage.database import open_database

    database = open_database(db)
    try:
        from sowctl.foundation import clock
        from sowctl.storage import models as m

        now = clock.now()
        m.Organization.get_or_create(id="org-e2e", defaults={"name": "E2E"})
        m.Project.get_or_create(
            id="proj-e2e",
            defaults={"organization": "org-e2e", "name": "P", "created_at": now, "updated_at": now},
        )
        return credentials.create_token("user-e2e", "org-e2e", "member").secret
    finally:
        database.close()


def test_real_server_serves_logs_and_stops_cleanly(start, tmp_path: Path) -> None:
    db = tmp_path / "e2e.db"
    server = start(db=db)
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+", server.url)
    token = make_token(db)  # written while the server runs: workers see it at once
    auth = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=server.url, timeout=30) as client:
        assert client.get("/healthz").json() == {"status": "ok"}
        created = client.post(
            "/api/sows", json={"title": "E2E", "projectId": "proj-e2e", "id": "sow-e2e"}, headers=auth
        )
        assert created.status_code == 201, created.text
        for index in range(3):
            response = client.post(
                "/api/sow/sow-e2e/items", json={"title": f"t{index}", "type": "task_item"}, headers=auth
            )
            assert response.status_code == 201, response.text
        page = client.get("/api/sow/sow-e2e/items?limit=2", headers=auth)
        assert page.headers["x-total-count"] == "3" and len(page.json()) == 2
        assert httpx.URL(page.links["next"]["url"]).host == "127.0.0.1"
        missing = client.get("/api/items/nope", headers=auth)
        assert missing.status_code == 404 and missing.json() == {"error": "item nope not found"}
        refused = client.get("/api/sows")
        assert refused.status_code == 401 and set(refused.json()) == {"error"}
        bad = client.post("/api/sows", content=b'{"title": "a", "title": "b"}', headers=auth)
        assert bad.status_code == 400 and "duplicated key" in bad.json()["error"]
        big = client.post("/api/sows", content=b"x" * (1024 * 1024 + 1), headers=auth)
        assert big.status_code == 413 and set(big.json()) == {"error"}
        assert client.get("/openapi.json").json()["openapi"].startswith("3.1")
    assert server.wait_for_stderr("/healthz"), server.stderr_lines  # the access log
    assert server.stop(signal.SIGTERM) == 0
    assert not any("Traceback" in line for line in server.stderr_lines), server.stderr_lines


@pytest.mark.slow  # a real server; test_real_server_serves_logs_and_stops_cleanly stays in the quick loop
def test_quiet_server_has_no_access_log_and_stops_on_sigint(start) -> None:
    server = start("--quiet")
    with httpx.Client(base_url=server.url, timeout=30) as client:
        assert client.get("/healthz").status_code == 200
    assert server.stop(signal.SIGINT) == 0
    assert not any("/healthz" in line for line in server.stderr_lines), server.stderr_lines
    assert not any("Traceback" in line for line in server.stderr_lines), server.stderr_lines


@pytest.mark.slow  # a real server; test_real_server_serves_logs_and_stops_cleanly stays in the quick loop
def test_demo_server_prints_a_token_that_works(start) -> None:
    server = start("--demo", "--quiet")
    lines = server.read_stdout_until("/api/external/budget-views")
    token, key = demo_secrets("\n".join(lines))
    with httpx.Client(base_url=server.url, timeout=30) as client:
        items = client.get(
            f"/api/sow/{demo_data.DEMO_SOW}/items", headers={"Authorization": f"Bearer {token}"}
        )
        assert items.status_code == 200 and len(items.json()) > 0
        assert int(items.headers["x-total-count"]) >= len(items.json())
        views = client.get(
            "/api/external/budget-views",
            params={"project_id": demo_data.DEMO_PROJECT_ID},
            headers=api_key(key, demo_data.DEMO_ORG, demo_data.DEMO_COMPANY),
        )
        assert views.status_code == 200, views.text
        assert views.headers["x-ratelimit-limit"] == "100"
    # the printed export line and example command work when pasted
    exports = next(line.strip() for line in lines if line.startswith("  export SOWCTL_SERVER="))
    example = next(line.strip() for line in lines if " items list " in line)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SOWCTL_")}
    env.update(pair.split("=", 1) for pair in shlex.split(exports)[1:])
    result = subprocess.run(
        [*shlex.split(example), "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=20,
    )
    assert result.returncode == 0, result.stderr
    assert any(item["sowId"] == demo_data.DEMO_SOW for item in json.loads(result.stdout))
    assert server.stop() == 0


@pytest.mark.slow  # a real server; test_real_server_serves_logs_and_stops_cleanly stays in the quick loop
def test_long_urls_reach_the_application_and_protocol_errors_are_refused(start, tmp_path: Path) -> None:
    db = tmp_path / "e2e.db"
    server = start(db=db)
    auth = {"Authorization": f"Bearer {make_token(db)}"}
    with httpx.Client(base_url=server.url, timeout=30) as client:
        # Ids and query values up to the API's 10,000 characters fit the request line.
        long_id = "0" * 9_000
        response = client.get("/api/dependencies/chain", params={"sowId": long_id}, headers=auth)
        assert response.status_code == 404, response.text
        # The message repeats the id cut short: an answer stays small whatever was sent.
        message = response.json()["error"]
        assert message.startswith("SOW 0000") and message.endswith("0 not found")
        assert len(message) == MAX_MESSAGE_CHARS and "…" in message
        response = client.get("/api/dependencies/chain", params={"sowId": "0" * 20_000}, headers=auth)
        assert response.status_code == 400
        assert response.json() == {"error": "sowId: string should have at most 10000 characters"}
        # Headers over the limit never reach the application: still JSON.
        response = client.get("/api/sows", headers={**auth, "X-Padding": "x" * 20_000})
        assert response.status_code == 431
        assert response.headers["content-type"] == "application/json"
        assert response.json()["error"].startswith("request header fields too large")
    host, port = httpx.URL(server.url).host, httpx.URL(server.url).port
    with socket.create_connection((host, port), timeout=5) as raw:
        raw.sendall(b"GET /api/sows HTTP/9.9\r\nHost: x\r\n\r\n")
        reply = raw.recv(65536).decode("latin-1")
    head, _, body = reply.partition("\r\n\r\n")
    # Refused by the parser itself, before sowctl sees it: no body, so never a quote of the request.
    assert head.startswith("HTTP/1.1 400 ") and "connection: close" in head.lower() and body == ""
