"""``sowctl conformance``, black-box: sowctl's own server conforms; a server altered to differ
(a field renamed, a status changed, an error envelope changed) is reported, each difference
naming the route and the field; two servers are compared; a run that cannot happen exits 2-5.

The servers are the real app in process (its HTTP answers altered by a small WSGI layer when
a test says so) and, once, ``sowctl serve`` in a subprocess. An altered answer carries no
``X-Request-Id``, so the suite's own wire guard leaves it to the command under test.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from junitparser import JUnitXml

from sowctl.conformance.scenario import READ_ONLY_SKIPPED
from sowctl.output import render
from tests.support.ci_reports import validate_sarif
from tests.support.cli import run_main
from tests.support.client import transport
from tests.support.server import Server, seed_demo

FIRST, SECOND = "http://first.test", "http://second.test"
SOW, PROJECT, PRIME_CONTRACT = "sow-tower-a-ph1", "101", "31"
DEMO_SCOPE = ("--org", "org-acme", "--company", "comp-acme-llc")


class Altered:
    """A WSGI layer over the app that changes the answers ``change`` picks (and drops X-Request-Id)."""

    def __init__(self, app: Any, change: Callable[[str, str, int, Any], tuple[int, Any]]) -> None:
        self.app, self.change = app, change

    def __call__(self, environ: dict, start_response: Callable) -> list[bytes]:
        seen: dict[str, Any] = {}

        def capture(status: str, headers: list, exc_info: Any = None) -> Callable:
            seen["status"], seen["headers"] = status, headers
            return lambda data: None

        body = b"".join(self.app(environ, capture))
        status = int(seen["status"].split()[0])
        headers = [(name, value) for name, value in seen["headers"] if name.lower() != "x-request-id"]
        try:
            data = json.loads(body)
        except ValueError:
            data = None
        path, method = environ["PATH_INFO"], environ["REQUEST_METHOD"]
        new_status, new_data = self.change(method, path, status, data)
        if (new_status, new_data) != (status, data):
            body = json.dumps(new_data).encode()
            headers = [(n, v) for n, v in headers if n.lower() != "content-length"]
            headers.append(("Content-Length", str(len(body))))
        reason = httpx.codes.get_reason_phrase(new_status)
        start_response(f"{new_status} {reason}", headers)
        return [body]


class Hosts(httpx.BaseTransport):
    """Requests to each host go to its own app, in process."""

    def __init__(self, apps: dict[str, Any]) -> None:
        self.transports = {httpx.URL(url).host: transport(app) for url, app in apps.items()}

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        return self.transports[request.url.host].handle_request(request)


@pytest.fixture
def demo(migrated_db_url: str) -> dict[str, Any]:
    from sowctl.server.app import create_app

    token, key = seed_demo(migrated_db_url)
    return {"db": migrated_db_url, "token": token, "key": key, "app": create_app(migrated_db_url)}


@pytest.fixture
def servers(monkeypatch: pytest.MonkeyPatch) -> Callable[[dict[str, Any]], None]:
    """Route the remote backend's requests to in-process apps by host."""
    from sowctl.backends.remote import RemoteBackend

    def route(apps: dict[str, Any]) -> None:
        hosts = Hosts(apps)
        original = RemoteBackend.__init__

        def init(self: RemoteBackend, settings: Any, transport: Any = None) -> None:
            original(self, settings, transport or hosts)

        monkeypatch.setattr(RemoteBackend, "__init__", init)

    return route


def conformance(demo: dict[str, Any], *args: str, reads: bool = True) -> Any:
    data = ("--project", PROJECT, "--prime-contract", PRIME_CONTRACT) if reads else ()
    credentials = ("--token", demo["token"], "--api-key", demo["key"], *DEMO_SCOPE)
    return run_main(*credentials, "conformance", "--against", FIRST, *data, *args)


def row_count(db: str, table: str) -> int:
    with sqlite3.connect(db) as connection:
        return connection.execute(f"select count(*) from {table}").fetchone()[0]


PURCHASE_ORDER = {
    "project_id": PROJECT,
    "commitment_id": "5001",
    "title": "Conformance order",
    "vendor_id": 7,
    "status": "draft",
    "line_items": [{"description": "Bolts", "amount": "10.50", "cost_code_id": 3}],
}


# --- sowctl conforms -------------------------------------------------------------------------


def test_sowctl_answers_as_described_read_only(demo: dict[str, Any], servers: Callable) -> None:
    servers({FIRST: demo["app"]})
    result = conformance(demo, "--json")
    assert result.exit_code == 0, result.stdout + result.stderr
    summary = result.json()
    assert summary["passed"] is True and summary["differences"] == []
    assert summary["readOnly"] is True
    assert summary["requests"][0] >= 25
    assert any("--allow-writes" in reason for reason in summary["skipped"])


def test_sowctl_answers_as_described_with_writes(
    demo: dict[str, Any], servers: Callable, tmp_path: Path
) -> None:
    """Items and dependencies it creates are deleted again; the purchase order given is created."""
    servers({FIRST: demo["app"]})
    order = tmp_path / "order.json"
    order.write_text(json.dumps(PURCHASE_ORDER))
    items, orders = row_count(demo["db"], "item"), row_count(demo["db"], "purchase_order")
    result = conformance(demo, "--allow-writes", "--sow", SOW, "--purchase-order", str(order), "--json")
    assert result.exit_code == 0, result.stdout + result.stderr
    summary = result.json()
    assert summary["readOnly"] is False and summary["differences"] == []
    assert not any("--allow-writes" in reason for reason in summary["skipped"])
    assert row_count(demo["db"], "item") == items
    assert row_count(demo["db"], "purchase_order") == orders + 1


def test_read_only_sends_nothing_that_writes(demo: dict[str, Any], servers: Callable) -> None:
    sent: list[str] = []

    def record(method: str, path: str, status: int, data: Any) -> tuple[int, Any]:
        sent.append(method)
        return status, data

    servers({FIRST: Altered(demo["app"], record)})
    result = conformance(demo)
    assert result.exit_code == 0, result.stdout
    assert sent and set(sent) == {"GET"}


@pytest.mark.slow  # a real server
def test_sowctl_serve_in_a_subprocess_conforms(db_url: str, serve: Callable[..., Server]) -> None:
    token, key = seed_demo(db_url)
    server = serve(db_url)
    credentials = ("--token", token, "--api-key", key, *DEMO_SCOPE)
    result = run_main(*credentials, "conformance", "--against", server.url, "--project", PROJECT)
    assert result.exit_code == 0, result.stdout + result.stderr
    assert result.stdout.splitlines()[-1].startswith("result\tpassed\t")


def test_a_test_double_with_its_admin_token_is_written_to(migrated_db_url: str, servers: Callable) -> None:
    from sowctl.server.app import create_app
    from sowctl.server.configuration import ServerSettings

    token, key = seed_demo(migrated_db_url)
    demo = {"token": token, "key": key}
    servers({FIRST: create_app(migrated_db_url, ServerSettings(admin_token="admin-secret"))})
    items = row_count(migrated_db_url, "item")
    result = conformance(demo, "--admin-token", "admin-secret", "--json")
    assert result.exit_code == 0, result.stdout + result.stderr
    assert result.json()["readOnly"] is False
    assert row_count(migrated_db_url, "item") == items
    wrong = conformance(demo, "--admin-token", "not-the-admin-token")
    assert wrong.exit_code == 2
    assert "is not a sowctl test double with this admin token" in wrong.stderr


def test_an_admin_token_does_not_make_another_server_writable(
    demo: dict[str, Any], servers: Callable
) -> None:
    servers({FIRST: demo["app"]})  # no admin API
    result = conformance(demo, "--admin-token", "admin-secret")
    assert result.exit_code == 2
    assert "(GET /_admin/faults: HTTP 404)" in result.stderr


# --- an altered server ------------------------------------------------------------------------


def rename_risk_level(method: str, path: str, status: int, data: Any) -> tuple[int, Any]:
    if (
        method == "GET"
        and path.startswith("/api/dependencies/")
        and isinstance(data, dict)
        and "riskLevel" in data
    ):
        data = {("risk_level" if key == "riskLevel" else key): value for key, value in data.items()}
    return status, data


def clients_created(method: str, path: str, status: int, data: Any) -> tuple[int, Any]:
    return (201 if path == "/clients" and status == 200 else status), data


def message_envelope(method: str, path: str, status: int, data: Any) -> tuple[int, Any]:
    if path.startswith("/api/items/") and status == 404:
        return status, {"message": data["error"]}
    return status, data


@pytest.mark.parametrize(
    ("change", "kind", "route", "where"),
    [
        (rename_risk_level, "shape", "/api/dependencies/{dependencyId}", "risk_level"),
        (rename_risk_level, "shape", "/api/dependencies/{dependencyId}", "riskLevel"),
        (clients_created, "status", "/clients", "status"),
        (message_envelope, "envelope", "/api/items/{itemId}", "error"),
        (message_envelope, "envelope", "/api/items/{itemId}", "message"),
    ],
)
def test_each_difference_of_an_altered_server_names_its_route_and_field(
    demo: dict[str, Any], servers: Callable, change: Callable, kind: str, route: str, where: str
) -> None:
    servers({FIRST: Altered(demo["app"], change)})
    result = conformance(demo, "--json")
    assert result.exit_code == 1, result.stdout + result.stderr
    found = [(d["kind"], d["route"], d["where"]) for d in result.json()["differences"]]
    assert (kind, route, where) in found
    assert {d[1] for d in found} == {route}


def test_a_renamed_field_says_which_field_went_missing(demo: dict[str, Any], servers: Callable) -> None:
    servers({FIRST: Altered(demo["app"], rename_risk_level)})
    result = conformance(demo)
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert any(
        line.startswith("shape\tGET /api/dependencies/") and "'riskLevel' is a required" in line
        for line in lines
    )
    assert any("'risk_level' was unexpected" in line for line in lines)
    assert lines[-1].startswith("result\tfailed (")


def test_on_a_terminal_the_differences_are_a_table(
    demo: dict[str, Any], servers: Callable, monkeypatch: pytest.MonkeyPatch
) -> None:

    monkeypatch.setattr(render, "is_tty", lambda: True)  # a person reads the summary
    servers({FIRST: Altered(demo["app"], clients_created)})
    result = conformance(demo)
    assert result.exit_code == 1
    assert "DIFFERENCE" in result.stdout and "GET /clients" in result.stdout
    assert "expected 200, got 201" in result.stdout
    assert "failed (3 differences) (31 requests)" in result.stdout  # the list and two pages


def test_reports_in_junit_markdown_and_sarif(demo: dict[str, Any], servers: Callable, tmp_path: Path) -> None:
    servers({FIRST: Altered(demo["app"], clients_created)})
    junit, markdown, sarif = tmp_path / "conformance.xml", tmp_path / "conformance.md", tmp_path / "c.sarif"
    result = conformance(
        demo, "--report", f"junit={junit}", "--report", f"markdown={markdown}", "--report", f"sarif={sarif}"
    )
    assert result.exit_code == 1
    document = json.loads(sarif.read_text())
    validate_sarif(document)
    results = document["runs"][0]["results"]
    assert {r["ruleId"] for r in results} == {"conformance.status"}
    assert all(r["level"] == "error" for r in results)
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results}
    assert uris and all(uri.startswith(FIRST.rstrip("/") + "/clients") for uri in uris)
    cases = [case for suite in JUnitXml.fromfile(str(junit)) for case in suite]
    failing = [case.name for case in cases if not case.is_passed]
    assert failing == ["GET /clients"]
    assert "| status |" in markdown.read_text() and "/clients" in markdown.read_text()


def test_an_offset_answering_the_same_record_again_is_a_pagination_difference(
    demo: dict[str, Any], servers: Callable
) -> None:
    def offset_ignored(environ: dict, start_response: Callable) -> Any:
        environ["QUERY_STRING"] = environ.get("QUERY_STRING", "").replace("offset=1", "offset=0")
        return demo["app"](environ, start_response)

    servers({FIRST: offset_ignored})
    result = conformance(demo, "--json")
    assert result.exit_code == 1
    found = [(d["kind"], d["path"]) for d in result.json()["differences"]]
    assert found == [
        ("pagination", "/projects?limit=1&offset=1"),
        ("pagination", "/clients?limit=1&offset=1"),
    ]


def test_credentials_and_server_come_from_a_profile(demo: dict[str, Any], servers: Callable) -> None:
    servers({FIRST: demo["app"]})
    for key, value in (("server", FIRST), ("token", demo["token"]), ("api_key", demo["key"])):
        assert run_main("config", "set", key, value, "--profile", "pds").exit_code == 0
    result = run_main("--profile", "pds", *DEMO_SCOPE, "conformance", "--project", PROJECT, "--json")
    assert result.exit_code == 0, result.stdout + result.stderr
    assert result.json()["skipped"] == [
        "a prime contract's details: give --prime-contract",
        READ_ONLY_SKIPPED,
    ]


def test_a_rate_limit_is_waited_out_not_reported(
    demo: dict[str, Any], servers: Callable, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sowctl.backends import remote

    limited = {"/api/external/budget-views": 1}

    def rate_limited_once(environ: dict, start_response: Callable) -> Any:
        if limited.get(environ["PATH_INFO"], 0) > 0:
            limited[environ["PATH_INFO"]] -= 1
            start_response(
                "429 Too Many Requests", [("Content-Type", "application/json"), ("Retry-After", "2")]
            )
            return [b'{"error": "rate limit exceeded"}']
        return demo["app"](environ, start_response)

    waits: list[float] = []
    monkeypatch.setattr(remote, "_sleep", waits.append)
    servers({FIRST: rate_limited_once})
    result = conformance(demo, "--json")
    assert result.exit_code == 0, result.stdout
    assert waits == [2.0]


# --- two servers ----------------------------------------------------------------------------


def test_two_sowctl_servers_on_the_same_data_answer_alike(demo: dict[str, Any], servers: Callable) -> None:
    from sowctl.server.app import create_app

    servers({FIRST: demo["app"], SECOND: create_app(demo["db"])})
    result = conformance(demo, "--compare", SECOND, "--json")
    assert result.exit_code == 0, result.stdout
    assert result.json()["requests"][0] == result.json()["requests"][1]


def other_ids_and_times(method: str, path: str, status: int, data: Any) -> tuple[int, Any]:
    if path != "/projects" or not isinstance(data, dict) or "projects" not in data:
        return status, data
    projects = [
        {
            **project,
            "id": str(uuid.uuid4()),
            "organizationId": "org-other",
            "createdAt": "2001-02-03T04:05:06Z",
            "updatedAt": "2001-02-03T04:05:07Z",
        }
        for project in data["projects"]
    ]
    return status, {**data, "projects": projects}


def test_compare_ignores_ids_and_timestamps(demo: dict[str, Any], servers: Callable) -> None:
    servers({FIRST: demo["app"], SECOND: Altered(demo["app"], other_ids_and_times)})
    result = conformance(demo, "--compare", SECOND, "--json")
    assert result.exit_code == 0, result.stdout


def test_compare_reports_where_two_servers_answer_differently(
    demo: dict[str, Any], servers: Callable
) -> None:
    servers({FIRST: demo["app"], SECOND: Altered(demo["app"], clients_created)})
    result = conformance(demo, "--compare", SECOND, "--json")
    assert result.exit_code == 1
    compared = [d for d in result.json()["differences"] if d["server"] == "comparison"]
    assert compared and all(d["route"] == "/clients" and d["where"] == "status" for d in compared)
    assert compared[0]["detail"] == "200 against 201"


# --- a run that cannot happen ---------------------------------------------------------------


def test_without_credentials_it_is_a_usage_error() -> None:
    result = run_main("conformance", "--against", FIRST)
    assert result.exit_code == 2
    assert "--token" in result.stderr


def test_a_refused_token_exits_4(demo: dict[str, Any], servers: Callable) -> None:
    servers({FIRST: demo["app"]})
    result = run_main("--token", "not-a-token", "conformance", "--against", FIRST)
    assert result.exit_code == 4
    assert "refused --token" in result.stderr


def test_an_unreachable_server_exits_5() -> None:
    result = run_main("--token", "t", "conformance", "--against", "http://127.0.0.1:9")
    assert result.exit_code == 5
    assert "cannot reach server" in result.stderr


def test_without_jsonschema_it_says_how_to_install_it(
    demo: dict[str, Any], servers: Callable, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    servers({FIRST: demo["app"]})
    monkeypatch.setitem(sys.modules, "jsonschema", None)  # as if it were not installed
    for module in [name for name in sys.modules if name.startswith("sowctl.conformance")]:
        monkeypatch.delitem(sys.modules, module)
    monkeypatch.delitem(sys.modules, "sowctl.commands.conformance_run", raising=False)
    result = conformance(demo)
    assert result.exit_code == 2
    assert "pip install 'sowctl[conformance]'" in result.stderr
