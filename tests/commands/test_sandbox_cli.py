"""sowctl sandbox create|list|delete: a CI job's sandbox on a shared server, its credentials
printed as shell exports that the next sowctl commands read."""

from __future__ import annotations

import json
import shlex
import subprocess
from typing import Any

import pytest

from sowctl.server.app import create_app
from sowctl.server.configuration import ServerSettings
from tests.support.client import SERVER, route_remote_in_process, wsgi_client
from tests.support.doubles import ADMIN_TOKEN

pytestmark = pytest.mark.database


@pytest.fixture
def served(migrated_db_url: str, monkeypatch: pytest.MonkeyPatch, cli: Any) -> Any:
    app = create_app(migrated_db_url, ServerSettings(admin_token=ADMIN_TOKEN))
    route_remote_in_process(monkeypatch, app)
    monkeypatch.delenv("SOWCTL_DB")
    monkeypatch.setenv("SOWCTL_ADMIN_TOKEN", ADMIN_TOKEN)
    return wsgi_client(app)


def _exports(text: str) -> dict[str, str]:
    found = {}
    for line in text.splitlines():
        words = shlex.split(line, comments=True)
        if words:
            assert words[0] == "export", line
            name, _, value = words[1].partition("=")
            found[name] = value
    return found


def test_the_printed_exports_are_credentials_the_next_commands_use(
    served: Any, cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = cli("--server", SERVER, "sandbox", "create", "--ttl", "30m", "--name", "job 7")
    assert made.exit_code == 0, made.stderr
    exports = _exports(made.stdout)
    assert sorted(exports) == [
        "SOWCTL_ADMIN_TOKEN",
        "SOWCTL_API_KEY",
        "SOWCTL_ORG",
        "SOWCTL_SERVER",
        "SOWCTL_TOKEN",
    ]
    assert exports["SOWCTL_SERVER"] == SERVER and exports["SOWCTL_ORG"].startswith("sbx-")
    # What a shell makes of the lines: the same values (eval "$(sowctl sandbox create)").
    shell = subprocess.run(
        ["bash", "-c", 'eval "$1"; printf %s "$SOWCTL_TOKEN"', "bash", made.stdout],
        capture_output=True,
        text=True,
        check=True,
    )
    assert shell.stdout == exports["SOWCTL_TOKEN"]
    for name, value in exports.items():
        monkeypatch.setenv(name, value)
    sow = cli("sows", "create", "From CI", "--id", "ci-1", "--json")
    assert sow.exit_code == 0, sow.stderr
    assert json.loads(sow.stdout)["id"] == "ci-1"
    scoped = {"Authorization": f"Bearer {exports['SOWCTL_ADMIN_TOKEN']}"}
    logged = served.get("/_admin/requests", headers=scoped).json()
    assert [(entry["method"], entry["path"], entry["status"]) for entry in logged] == [
        ("POST", "/api/sows", 201)
    ]

    # The scoped admin token (now SOWCTL_ADMIN_TOKEN) lists its own sandbox and makes none.
    listed = cli("--server", SERVER, "sandbox", "list", "-q")
    assert listed.stdout.split() == [exports["SOWCTL_ORG"]]
    refused = cli("--server", SERVER, "sandbox", "create")
    assert refused.exit_code == 4 and "making sandboxes is the whole server's" in refused.stderr, (
        refused.stderr
    )


def test_list_json_and_delete(served: Any, cli: Any) -> None:
    made = cli("--server", SERVER, "sandbox", "create", "--json")
    assert made.exit_code == 0, made.stderr
    body = json.loads(made.stdout)
    assert {"organizationId", "adminToken", "token", "apiKey", "expiresAt"} <= body.keys()
    listed = cli("--server", SERVER, "sandbox", "list", "--json")
    assert [entry["organizationId"] for entry in json.loads(listed.stdout)] == [body["organizationId"]]
    assert body["adminToken"] not in listed.stdout and body["token"] not in listed.stdout
    deleted = cli("--server", SERVER, "sandbox", "delete", body["organizationId"])
    assert deleted.exit_code == 0 and body["organizationId"] in deleted.stdout
    again = cli("--server", SERVER, "sandbox", "delete", body["organizationId"])
    assert again.exit_code == 3 and "not found" in again.stderr, (again.exit_code, again.stderr)


def test_bad_input_is_named_and_local_mode_is_refused(served: Any, cli: Any) -> None:
    wrong = cli("--server", SERVER, "sandbox", "create", "--ttl", "forever")
    assert wrong.exit_code == 2 and "invalid --ttl 'forever': must be a duration" in wrong.stderr, (
        wrong.stderr
    )
    local = cli("sandbox", "list")
    assert local.exit_code == 2 and "--server" in local.stderr
