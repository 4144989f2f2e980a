"""GET /_admin/requests/pact and sowctl contract pact: the request log as a Pact V3 contract.

What the document holds (in process); that Pact's own verifier accepts it is in
tests/contract/test_pact_verifier.py, against real servers.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import httpx
import pytest

from sowctl.commands.contract import _pact_summary
from sowctl.server.testdouble import pact
from tests.support.client import SERVER, bearer, route_remote_in_process
from tests.support.doubles import ADMIN, ADMIN_TOKEN, ORG, SOW, external, in_process, load

pytestmark = pytest.mark.database

UUID = pact.UUID_REGEX
ITEM = {"title": "Pact item", "type": "task_item"}


@pytest.fixture
def double(migrated_db_url: str) -> tuple[httpx.Client, dict[str, str]]:
    client = in_process(migrated_db_url, seed=7, fixed_now=datetime(2026, 1, 1))
    return client, load(client)


def export(client: httpx.Client, **query: str) -> dict[str, Any]:
    response = client.get("/_admin/requests/pact", params=query, headers=ADMIN)
    assert response.status_code == 200, response.text
    return response.json()


def test_each_request_is_an_interaction_in_order_with_generated_values_matched_by_shape(
    double: tuple[httpx.Client, dict[str, str]],
) -> None:
    client, access = double
    token = bearer(access["token"])
    created = client.post(f"/api/sow/{SOW}/items", json=ITEM, headers=token)
    assert created.status_code == 201, created.text
    item = created.json()
    assert client.get(f"/api/items/{item['id']}", headers=token).status_code == 200
    assert client.get("/api/items/missing", headers=token).status_code == 404
    orders = client.get("/api/external/purchase-orders?project_id=101", headers=external(access["key"]))
    assert orders.status_code == 200

    document = export(client, consumer="web app", provider="pds")
    assert document["consumer"] == {"name": "web app"} and document["provider"] == {"name": "pds"}
    assert document["metadata"]["pactSpecification"] == {"version": "3.0.0"}
    assert document["metadata"]["sowctl"] == {"interactions": 4, "omitted": []}
    first, read, missing, external_read = document["interactions"]
    assert first["description"].startswith(f"POST /api/sow/{SOW}/items #")
    assert first["request"] == {
        "method": "POST",
        "path": f"/api/sow/{SOW}/items",
        "headers": {"Content-Type": "application/json"},
        "body": ITEM,
    }
    assert first["response"]["status"] == 201 and first["response"]["body"] == item
    assert first["response"]["headers"] == {"Content-Type": "application/json"}
    rules = first["response"]["matchingRules"]["body"]
    assert rules["$.id"] == {"matchers": [{"match": "regex", "regex": UUID}], "combine": "AND"}
    assert rules["$.createdAt"]["matchers"][0]["match"] == "regex"
    assert "$.title" not in rules and "$.sowId" not in rules  # what the consumer sent stays exact
    # the id a create made is matched by shape wherever it shows up later
    assert read["request"] == {"method": "GET", "path": f"/api/items/{item['id']}"}
    assert read["response"]["matchingRules"]["body"]["$.id"]["matchers"] == [
        {"match": "regex", "regex": UUID}
    ]
    assert missing["response"] == {
        "status": 404,
        "headers": {"Content-Type": "application/json"},
        "body": {"error": "item missing not found"},
    }
    assert external_read["request"]["query"] == {"project_id": ["101"]}
    assert external_read["request"]["headers"]["x-organization-id"] == ORG
    # no credential anywhere: the verifier adds the provider's own
    text = json.dumps(document)
    assert access["token"] not in text and access["key"] not in text
    assert "authorization" not in text.lower() and "x-api-key" not in text.lower()


def test_requests_that_cannot_be_replayed_exactly_are_left_out_with_their_reason(
    double: tuple[httpx.Client, dict[str, str]],
) -> None:
    client, access = double
    token = bearer(access["token"])
    long_list = client.get(f"/api/sow/{SOW}/items", headers=token)  # the demo's items: over 4 KiB
    assert long_list.status_code == 200 and len(long_list.content) > 4096
    masked = client.post(f"/api/sow/{SOW}/items", json={**ITEM, "password": "hunter2"}, headers=token)
    assert masked.status_code in (201, 400)
    faults = {"rate": 1.0, "count": 1, "status": 503, "routes": ["GET /projects"]}
    assert client.put("/_admin/faults", json=faults, headers=ADMIN).status_code == 200
    assert client.get("/projects", headers=token).status_code == 503
    assert client.get("/projects", headers=token).status_code == 200
    drop = {"rate": 1.0, "count": 1, "mode": "drop", "routes": ["GET /clients"]}
    assert client.put("/_admin/faults", json=drop, headers=ADMIN).status_code == 200
    with pytest.raises(ConnectionResetError):
        client.get("/clients", headers=token)

    document = export(client)
    assert [item["request"]["path"] for item in document["interactions"]] == ["/projects"]
    omitted = document["metadata"]["sowctl"]["omitted"]
    assert [(item["request"], item["reason"]) for item in omitted] == [
        (f"GET /api/sow/{SOW}/items", "a body was cut at the request log's limit"),
        (f"POST /api/sow/{SOW}/items", "a value was masked as a secret in the log"),
        ("GET /projects", "answered by an injected fault, not by the service"),
        ("GET /clients", "the connection was dropped (an injected fault)"),
    ]
    assert "hunter2" not in json.dumps(document)


def test_a_refusal_of_strict_contract_mode_is_left_out(migrated_db_url: str) -> None:
    client = in_process(migrated_db_url, contract="strict")
    token = bearer(load(client)["token"])
    assert client.get("/api/sows", headers=token).status_code == 400  # an extension: refused
    assert client.get("/api/items/missing", headers=token).status_code == 404  # the service's own
    document = export(client)
    assert [item["request"]["path"] for item in document["interactions"]] == ["/api/items/missing"]
    (refused,) = document["metadata"]["sowctl"]["omitted"]
    assert refused["request"] == "GET /api/sows"
    assert refused["reason"] == "refused by contract mode (strict), not by the service"


def test_the_request_logs_filters_choose_the_interactions_and_names_are_checked(
    double: tuple[httpx.Client, dict[str, str]],
) -> None:
    client, access = double
    token = bearer(access["token"])
    client.get("/projects", headers=token)
    client.get("/api/items/missing", headers=token)
    client.post(f"/api/sow/{SOW}/items", json=ITEM, headers=token)
    only_4xx = export(client, status="4xx")
    assert [item["response"]["status"] for item in only_4xx["interactions"]] == [404]
    only_posts = export(client, method="POST", path="/api/sow/*")
    assert [item["request"]["method"] for item in only_posts["interactions"]] == ["POST"]
    defaults = export(client)
    assert (defaults["consumer"], defaults["provider"]) == ({"name": "sowctl-consumer"}, {"name": "sowctl"})
    assert all("providerStates" not in item for item in defaults["interactions"])
    started = export(client, state="loaded")["interactions"]
    assert started[0]["providerStates"] == [{"name": "loaded"}]  # the first only: the run's start
    assert all("providerStates" not in item for item in started[1:])
    for field, value in (
        ("consumer", ""),
        ("provider", "x" * 101),
        ("consumer", "a\nb"),
        ("consumer", "a;rm"),
    ):
        refused = client.get("/_admin/requests/pact", params={field: value}, headers=ADMIN)
        assert refused.status_code == 400, (field, value)
        assert refused.json()["error"].startswith(f"{field}: must be 1 to 100 letters"), refused.text
    assert client.get("/_admin/requests/pact", params={"status": "abc"}, headers=ADMIN).status_code == 400
    assert client.get("/_admin/requests/pact").status_code == 401


def test_the_pact_stops_at_its_size_limit_and_says_so(
    double: tuple[httpx.Client, dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    client, access = double
    token = bearer(access["token"])
    for _ in range(3):
        client.get("/api/items/missing", headers=token)
    one = len(json.dumps(export(client)["interactions"][0], ensure_ascii=False))
    monkeypatch.setattr(pact, "MAX_PACT_BYTES", one * 2)
    document = export(client)
    assert len(document["interactions"]) == 2
    (cut,) = document["metadata"]["sowctl"]["omitted"]
    assert cut["reason"] == f"the pact reached its size limit ({one * 2} bytes)"


# --- sowctl contract pact ---------------------------------------------------------------------


@pytest.fixture
def served(migrated_db_url: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    client = in_process(migrated_db_url, seed=7)
    access = load(client)
    route_remote_in_process(monkeypatch, client.app)  # type: ignore[attr-defined]
    monkeypatch.delenv("SOWCTL_DB", raising=False)
    monkeypatch.setenv("SOWCTL_ADMIN_TOKEN", ADMIN_TOKEN)
    return {"client": client, "token": bearer(access["token"]), "key": external(access["key"])}


def test_cli_writes_the_pact_and_prints_the_verifier_command(
    served: dict[str, Any], cli: Any, tmp_path
) -> None:
    client = served["client"]
    client.get("/projects", headers=served["token"])
    client.get("/api/external/purchase-orders?project_id=101", headers=served["key"])
    client.get("/api/items/missing", headers=served["token"])
    target = tmp_path / "pacts" / "web-pds.json"
    target.parent.mkdir()
    args = (
        "--server",
        SERVER,
        "contract",
        "pact",
        "--out",
        str(target),
        "--consumer",
        "web",
        "--provider",
        "pds",
    )
    result = cli(*args, "--method", "GET")
    assert result.exit_code == 0, result.stderr
    document = json.loads(target.read_text())
    assert [item["request"]["path"] for item in document["interactions"]] == [
        "/projects",
        "/api/external/purchase-orders",
        "/api/items/missing",
    ]
    lines = result.stdout.splitlines()
    assert lines[0] == f"Wrote 3 interactions to {target}; 0 left out"
    assert lines[-1] == (
        f"  pact_verifier_cli --file {target} --provider-name pds --hostname sowctl.test --port 80"
        ' --header "Authorization=Bearer $SOWCTL_TOKEN" --header "X-API-Key=$SOWCTL_API_KEY"'
    )
    summary = cli(*args, "--group", "B", "--json")
    assert summary.exit_code == 0, summary.stderr
    assert summary.json()["verify"][-2:] == ["--header", "X-API-Key=$SOWCTL_API_KEY"]
    assert "Authorization=Bearer $SOWCTL_TOKEN" not in summary.json()["verify"]


def test_cli_prints_the_pact_without_out_and_its_summary_on_stderr(served: dict[str, Any], cli: Any) -> None:
    client = served["client"]
    client.get("/projects", headers=served["token"])
    faults = {"rate": 1.0, "count": 1, "status": 500, "routes": ["GET /clients"]}
    assert client.put("/_admin/faults", json=faults, headers=ADMIN).status_code == 200
    assert client.get("/clients", headers=served["token"]).status_code == 500
    result = cli("--server", SERVER, "contract", "pact", "--path", "/[pc]*")
    assert result.exit_code == 0, result.stderr
    assert [item["request"]["path"] for item in result.json()["interactions"]] == ["/projects"]
    (omitted,) = result.json()["metadata"]["sowctl"]["omitted"]
    assert result.stderr.startswith(
        f"Wrote 1 interaction; 1 left out\n  #{omitted['id']} GET /clients: answered by an injected fault"
    )
    assert "pact_verifier_cli --file pact.json" in result.stderr
    counted = cli("--server", SERVER, "contract", "pact", "--jq", ".metadata.sowctl.interactions")
    assert counted.exit_code == 0 and counted.stdout == "1\n", counted.stderr


def test_cli_refuses_bad_names_missing_tokens_and_unwritable_files(
    served: dict[str, Any], cli: Any, monkeypatch, tmp_path
) -> None:
    bad = cli("--server", SERVER, "contract", "pact", "--consumer", "two\nlines")
    assert bad.exit_code == 2 and "--consumer: must be 1 to 100 letters" in bad.stderr
    unwritable = cli("--server", SERVER, "contract", "pact", "--out", str(tmp_path / "none" / "p.json"))
    assert unwritable.exit_code == 2 and "cannot write" in unwritable.stderr
    monkeypatch.delenv("SOWCTL_ADMIN_TOKEN")
    missing = cli("--server", SERVER, "contract", "pact")
    assert missing.exit_code == 2 and "--admin-token is required" in missing.stderr


def test_the_verifier_command_follows_the_servers_url_and_the_groups_in_the_pact() -> None:
    document = {
        "provider": {"name": "pds"},
        "interactions": [{"request": {"path": "/projects"}}],
        "metadata": {"sowctl": {"omitted": []}},
    }
    summary = _pact_summary(document, "https://pds.example/sowctl/", "web.json")
    assert summary["verify"] == [
        "pact_verifier_cli", "--file", "web.json", "--provider-name", "pds", "--hostname", "pds.example",
        "--port", "443", "--scheme", "https", "--base-path", "/sowctl",
        "--header", "Authorization=Bearer $SOWCTL_TOKEN",
    ]  # fmt: skip
    document["interactions"][0]["providerStates"] = [{"name": "loaded"}]
    with_state = _pact_summary(document, "http://127.0.0.1:8000", "web.json")["verify"]
    assert with_state[-2:] == ["--state-change-url", "$STATE_CHANGE_URL"]
