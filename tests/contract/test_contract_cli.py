"""sowctl contract report|mode: contract mode of a test double over its admin API, as a CI step."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sowctl.server.app import create_app
from sowctl.server.configuration import ServerSettings
from tests.support.ci_reports import validate_sarif
from tests.support.client import SERVER, bearer, route_remote_in_process, wsgi_client
from tests.support.doubles import ADMIN_TOKEN, SOW, load

pytestmark = pytest.mark.database


@pytest.fixture
def served(migrated_db_url: str, monkeypatch: pytest.MonkeyPatch, cli: Any) -> dict[str, Any]:
    app = create_app(migrated_db_url, ServerSettings(admin_token=ADMIN_TOKEN, contract="report"))
    client = wsgi_client(app)
    credentials = load(client)
    route_remote_in_process(monkeypatch, app)
    monkeypatch.delenv("SOWCTL_DB")
    monkeypatch.setenv("SOWCTL_ADMIN_TOKEN", ADMIN_TOKEN)
    return {"client": client, "token": bearer(credentials["token"])}


def run(cli: Any, *args: str) -> Any:
    return cli("--server", SERVER, "contract", *args)


def test_report_passes_with_no_departure_and_fails_on_an_extension(served: dict[str, Any], cli: Any) -> None:
    served["client"].get(f"/api/sow/{SOW}/items", headers=served["token"])
    clean = run(cli, "report", "--json")
    assert clean.exit_code == 0, clean.stderr
    assert json.loads(clean.stdout) == {"mode": "report", "departures": []}
    served["client"].get("/api/sows", headers=served["token"])
    served["client"].get(f"/api/dependencies/chain?sowId={SOW}&format=tree", headers=served["token"])
    caught = run(cli, "report", "--json")
    assert caught.exit_code == 1
    codes = [departure["code"] for departure in json.loads(caught.stdout)["departures"]]
    assert sorted(codes) == ["answer.tree_shape", "route.extension"]
    only_unspecified = run(cli, "report", "--fail-on", "unspecified")
    assert only_unspecified.exit_code == 1
    lines = only_unspecified.stdout.splitlines()
    assert any(line.startswith("route.extension\textension\t1\t") for line in lines), lines
    assert run(cli, "report", "--fail-on", "leniency").exit_code == 0
    wrong = run(cli, "report", "--fail-on", "extensions")
    assert wrong.exit_code == 2 and "--fail-on" in wrong.stderr


def test_report_formats_say_the_same(served: dict[str, Any], cli: Any) -> None:
    served["client"].get("/api/sows", headers=served["token"])
    sarif = run(cli, "report", "--format", "sarif")
    assert sarif.exit_code == 1
    document = json.loads(sarif.stdout)
    validate_sarif(document)
    (result,) = document["runs"][0]["results"]
    assert result["ruleId"] == "route.extension" and result["level"] == "error"
    expected = "1 request relied on an extension (route.extension), for example GET /api/sows"
    assert result["message"]["text"] == expected
    junit = run(cli, "report", "--format", "junit")
    assert 'failures="1"' in junit.stdout and 'name="route.extension"' in junit.stdout
    markdown = run(cli, "report", "--format", "markdown")
    assert "## sowctl contract mode: fails" in markdown.stdout
    assert "| `route.extension` | extension | 1 | GET /api/sows | yes |" in markdown.stdout


def test_mode_shows_and_sets_the_servers_mode(served: dict[str, Any], cli: Any) -> None:
    assert run(cli, "mode").stdout == "report\n"
    assert run(cli, "mode", "strict").stdout == "strict\n"
    assert served["client"].get("/api/sows", headers=served["token"]).status_code == 400
    assert json.loads(run(cli, "mode", "off", "--json").stdout)["mode"] == "off"
    assert served["client"].get("/api/sows", headers=served["token"]).status_code == 200


def test_contract_needs_a_server_and_the_admin_token(served: dict[str, Any], cli: Any, monkeypatch) -> None:
    monkeypatch.delenv("SOWCTL_ADMIN_TOKEN")
    missing = run(cli, "report")
    assert missing.exit_code == 2 and "--admin-token" in missing.stderr
    wrong = run(cli, "report", "--admin-token", "not-it")
    assert wrong.exit_code == 4
    local = cli("--db", "x.db", "contract", "mode")
    assert local.exit_code == 2 and "--server" in local.stderr
