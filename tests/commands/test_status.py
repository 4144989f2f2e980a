"""`sowctl status`: mode, target, identity, and whether the server or database answers."""

from __future__ import annotations

from sowctl.storage.database import SCHEMA_VERSION
from tests.support.client import SERVER, remote_backend
from tests.support.sockets import closed_url

TOKEN = "sowt_status-token-0123456789"
KEY = "sowk_status-key-0123456789"


def test_local_database_opens(cli, db_url, db):  # the db fixture creates and migrates it
    result = cli("--org", "org-acme", "status", "--json")
    assert result.exit_code == 0, result.stderr
    assert result.json() == {
        "mode": "local",
        "server": None,
        "timeout": None,
        "database": db_url,
        "profile": "default",
        "identity": {"token": None, "apiKey": None, "org": "org-acme", "company": None},
        "reachable": True,
        "detail": "ok",
        "schemaVersion": SCHEMA_VERSION,
        "expectedSchemaVersion": SCHEMA_VERSION,
    }


def test_local_status_piped_is_key_value_lines(cli, db_url, db):
    result = cli("status")
    assert result.exit_code == 0
    lines = dict(line.split("\t", 1) for line in result.stdout.splitlines())
    assert lines["mode"] == "local"
    assert lines["database"] == db_url
    assert lines["reachable"] == "true"
    assert lines["schemaVersion"] == str(SCHEMA_VERSION)


def test_local_missing_database_is_not_created(cli, tmp_path):
    missing = tmp_path / "nothing-here.db"
    result = cli("--db", missing, "status", "--json")
    # A mistyped --db: the user's to fix, so exit 2 and the words of every command that reads.
    assert result.exit_code == 2
    assert result.json()["reachable"] is False
    assert result.stderr == (
        f"error: database {missing} does not exist "
        "(a command that writes creates it; check --db or SOWCTL_DB)\n"
    )
    assert not missing.exists()


def test_local_database_that_is_not_a_database(cli, tmp_path):
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not sqlite" * 100)
    result = cli("--db", junk, "status", "--json")
    assert result.exit_code == 5
    assert result.json()["reachable"] is False
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1


def test_database_url_password_is_masked(cli):
    url = "postgresql://ada:hunter2@127.0.0.1:1/sowctl"
    result = cli("--db", url, "status", "--json")
    assert result.exit_code == 5
    assert result.json()["database"] == "postgresql://ada:***@127.0.0.1:1/sowctl"
    assert "hunter2" not in result.stdout + result.stderr


def test_remote_server_answers(cli, server):
    args = ("--server", server.url, "--token", TOKEN, "--api-key", KEY, "--org", "org-acme")
    result = cli(*args, "--company", "comp-acme-llc", "status", "--json")
    assert result.exit_code == 0, result.stderr
    assert result.json() == {
        "mode": "remote",
        "server": server.url,
        "timeout": 10.0,
        "database": None,
        "profile": "default",
        "identity": {
            "token": "sowt_stat…",
            "apiKey": "sowk_stat…",
            "org": "org-acme",
            "company": "comp-acme-llc",
        },
        "reachable": True,
        "detail": "ok",
        "credentials": {"token": "ok", "apiKey": "ok"},  # the scripted server accepts anything
    }
    # Health first, then each credential with one cheap call (as `gh auth status` does).
    assert [path for _, path in server.script.requests] == [
        "/readyz",
        "/projects?limit=1",
        "/api/external/budget-views?project_id=0",
    ]
    assert TOKEN not in result.stdout and KEY not in result.stdout


def test_remote_server_down_exit_5(cli):
    url = closed_url()
    result = cli("--server", url, "status", "--json")
    assert result.exit_code == 5
    assert result.json()["reachable"] is False
    assert result.stderr == f"error: cannot reach server at {url}: connection refused\n"


def test_remote_server_unhealthy(cli, server):
    server.script.default = (503, {}, {"status": "starting"})
    result = cli("--server", server.url, "status")
    assert result.exit_code == 5
    assert "GET /readyz answered HTTP 503" in result.stderr
    assert "reachable\tfalse" in result.stdout


def test_a_server_without_readyz_is_asked_its_healthz(cli, server):
    server.script.responses = [(404, {}, {"error": "no route for GET /readyz"})]
    result = cli("--server", server.url, "status", "--json")
    assert result.exit_code == 0, result.stderr
    assert result.json()["detail"] == "ok"
    assert [path for _, path in server.script.requests][:2] == ["/readyz", "/healthz"]


def test_remote_server_slow(cli, server, monkeypatch):
    from sowctl.commands import status

    monkeypatch.setattr(status, "HEALTH_TIMEOUT", 0.2)
    server.script.delay = 2.0
    result = cli("--server", server.url, "status", "--json")
    assert result.exit_code == 5
    assert "did not answer within 0.2 s" in result.stderr


def test_remote_password_in_server_url_masked(cli):
    url = closed_url().replace("http://", "http://ada:hunter2@")
    result = cli("--server", url, "status", "--json")
    assert result.exit_code == 5
    assert "hunter2" not in result.stdout + result.stderr
    assert result.json()["server"].startswith("http://ada:***@127.0.0.1:")


def test_status_against_the_real_app(cli, tmp_path):
    """The server's own /readyz, through WSGITransport (no socket)."""
    from sowctl.backends.settings import Settings
    from sowctl.server.app import create_app

    app = create_app(str(tmp_path / "served.db"))
    backend = remote_backend(app, Settings(server=SERVER))
    assert backend.health() == (True, "ok")


def test_status_never_prints_a_token_with_a_control_character(modes):
    modes.monkeypatch.delenv("SOWCTL_DB", raising=False)
    result = modes.cli("status", env={"SOWCTL_SERVER": SERVER, "SOWCTL_TOKEN": modes.token + "\x0b1"})
    assert result.exit_code == 2
    assert modes.token not in result.stderr + result.stdout
