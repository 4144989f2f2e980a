"""The exported pact passes Pact's own verifier (pact-python 4, the Pact core through pact_ffi).

A consumer's session against ``sowctl serve --admin --seed N --clock T`` (reads of the three
groups, writes, refused requests) is exported with ``sowctl contract pact``, the server is reset
to the same dataset, and pact-python's Verifier replays the pact with the provider's credentials
as custom headers: it passes. A pact with one expected field edited, or a provider whose data
differ, fails. The verifier replays the interactions in the file's order, which the writes (and
the reads of what they made) rely on.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from pact import Verifier

from tests.support.cli import run_main
from tests.support.client import bearer
from tests.support.doubles import ADMIN, ADMIN_TOKEN, COMPANY, ORG, SOW, dataset, external, load

pytestmark = pytest.mark.slow

SEEDED = ("--seed", "42", "--clock", "2026-01-01T00:00:00Z", "--admin-token", ADMIN_TOKEN)
PROVIDER = "sowctl"
PO_BODY = {
    "project_id": "101",
    "commitment_id": "5001",
    "title": "Upper tier steel",
    "vendor_id": 7,
    "status": "draft",
    "line_items": [{"description": "Columns", "amount": "0.10", "cost_code_id": 3}],
}


def consumer_session(client: httpx.Client, access: dict[str, str]) -> None:
    """What a consumer does: reads of Groups A, B and C, creates, an update, refused requests."""
    token, key = bearer(access["token"]), external(access["key"])

    def call(method: str, path: str, expected: int, **kwargs: Any) -> Any:
        response = client.request(method, path, **kwargs)
        assert response.status_code == expected, (method, path, response.text)
        return response.json() if response.content else None

    call("GET", "/api/sows", 200, headers=token)
    call("GET", "/projects", 200, headers=token)
    call("GET", "/clients", 200, headers=token)
    call("GET", "/api/external/purchase-orders", 200, params={"project_id": "101"}, headers=key)
    first = call(
        "POST", f"/api/sow/{SOW}/items", 201, json={"title": "A", "type": "task_item"}, headers=token
    )
    second = call(
        "POST", f"/api/sow/{SOW}/items", 201, json={"title": "B", "type": "task_item"}, headers=token
    )
    link = {"sourceItemId": first["id"], "targetItemId": second["id"], "dependencyType": "depends_on"}
    call("POST", "/api/dependencies", 201, json={**link, "riskLevel": "high"}, headers=token)
    cycle = {**link, "sourceItemId": second["id"], "targetItemId": first["id"], "riskLevel": "low"}
    call("POST", "/api/dependencies", 400, json=cycle, headers=token)  # a cycle: refused
    call("PUT", f"/api/items/{first['id']}", 200, json={"status": "completed"}, headers=token)
    call("GET", f"/api/items/{first['id']}", 200, headers=token)
    call("GET", "/api/items/no-such-item", 404, headers=token)
    scope = {"x-api-key": access["key"], "organization-id": ORG, "company-id": COMPANY}
    call("POST", "/api/external/create-purchase-order", 200, json=PO_BODY, headers=scope)


def export(url: str, target: Path, *filters: str) -> dict[str, Any]:
    """``sowctl contract pact --out TARGET`` against the server at ``url``."""
    args = ("--server", url, "contract", "pact", "--out", str(target), "--admin-token", ADMIN_TOKEN)
    result = run_main(*args, "--consumer", "web", "--provider", PROVIDER, *filters)
    assert result.exit_code == 0, result.stderr
    assert "pact_verifier_cli --file" in result.stdout
    return json.loads(target.read_text())


def reset_to(client: httpx.Client, data: dict[str, Any] | None = None) -> dict[str, str]:
    """Back to the start-up state (seed and clock included), the dataset and credentials again."""
    assert client.post("/_admin/reset", headers=ADMIN).status_code == 200
    return load(client, data)


def verifier(url: str, pact_file: Path, access: dict[str, str]) -> Verifier:
    """pact-python's Verifier on the server at ``url``, the provider's credentials added to
    every request (the pact has none): a bearer token for Groups A and C, an API key for B."""
    host = httpx.URL(url).host
    return (
        Verifier(PROVIDER, host=host)
        .add_transport(url=url)
        .add_source(pact_file)
        .add_custom_headers({"Authorization": f"Bearer {access['token']}", "X-API-Key": access["key"]})
    )


def failed_descriptions(checked: Verifier) -> set[str]:
    """The descriptions of the interactions the verifier found a mismatch in."""
    prefix = f"Verifying a pact between web and {PROVIDER} - "
    return {error["interaction"].removeprefix(prefix) for error in checked.results.get("errors", [])}


def test_the_exported_pact_passes_pacts_verifier_on_a_server_reset_to_the_same_data(serve, tmp_path) -> None:
    server = serve(tmp_path / "provider.db", *SEEDED)
    consumer_session(server.client, load(server.client))
    document = export(server.url, tmp_path / "web-sowctl.json")
    assert len(document["interactions"]) == 12 and document["metadata"]["sowctl"]["omitted"] == []
    statuses = [item["response"]["status"] for item in document["interactions"]]
    assert statuses == [200, 200, 200, 200, 201, 201, 201, 400, 200, 200, 404, 200]
    access = reset_to(server.client)
    checked = verifier(server.url, tmp_path / "web-sowctl.json", access).verify()
    assert checked.results["result"] is True, checked.results


def test_an_edited_expectation_fails_the_verifier_and_names_the_interaction(serve, tmp_path) -> None:
    server = serve(tmp_path / "provider.db", *SEEDED)
    consumer_session(server.client, load(server.client))
    document = export(server.url, tmp_path / "web-sowctl.json")
    edited = copy.deepcopy(document)
    created = next(item for item in edited["interactions"] if item["request"]["method"] == "POST")
    created["response"]["body"]["title"] = "Not what the server answers"
    (tmp_path / "edited.json").write_text(json.dumps(edited))
    access = reset_to(server.client)
    with pytest.raises(RuntimeError, match="Failed to execute verifier"):
        checked = verifier(server.url, tmp_path / "edited.json", access)
        checked.verify()
    assert failed_descriptions(checked) == {created["description"]}


def test_a_provider_whose_data_differ_fails_the_verifier(serve, tmp_path) -> None:
    server = serve(tmp_path / "provider.db", *SEEDED)
    consumer_session(server.client, load(server.client))
    document = export(server.url, tmp_path / "web-sowctl.json")
    other_data = dataset()
    other_data["sows"][0]["title"] = "Renamed on the other provider"
    other = serve(tmp_path / "other.db", *SEEDED)
    access = load(other.client, other_data)
    with pytest.raises(RuntimeError):
        checked = verifier(other.url, tmp_path / "web-sowctl.json", access)
        checked.verify()
    sows_read = document["interactions"][0]
    assert sows_read["request"]["path"] == "/api/sows"
    assert sows_read["description"] in failed_descriptions(checked)


def test_ids_and_timestamps_made_per_run_are_matched_by_shape(serve, tmp_path) -> None:
    server = serve(tmp_path / "provider.db", *SEEDED)
    consumer_session(server.client, load(server.client))
    creates = export(server.url, tmp_path / "creates.json", "--method", "POST", "--path", "/api/sow/*/items")
    made = {item["response"]["body"]["id"] for item in creates["interactions"]}
    assert len(made) == 2
    # another seed, another clock: other ids and timestamps, the same data
    fresh = serve(
        tmp_path / "fresh.db", "--seed", "43", "--clock", "2027-06-01T00:00:00Z", "--admin-token", ADMIN_TOKEN
    )
    checked = verifier(fresh.url, tmp_path / "creates.json", load(fresh.client)).verify()
    assert checked.results["result"] is True, checked.results
    answered = fresh.client.get("/_admin/requests", params={"method": "POST"}, headers=ADMIN).json()
    assert {entry["responseBody"]["id"] for entry in answered}.isdisjoint(made)


def test_a_pact_that_starts_from_a_checkpoint_replays_after_the_state_handler_restores_it(
    serve, tmp_path
) -> None:
    server = serve(tmp_path / "provider.db", *SEEDED)
    client = server.client
    access = load(client)
    assert client.post("/_admin/checkpoints", json={"name": "loaded"}, headers=ADMIN).status_code == 201
    # the consumer's tests start from the checkpoint (restoring it also restores the seed and clock)
    assert client.post("/_admin/checkpoints/loaded/restore", headers=ADMIN).status_code == 200
    consumer_session(client, access)
    document = export(server.url, tmp_path / "web-sowctl.json", "--state", "loaded")
    assert document["interactions"][0]["providerStates"] == [{"name": "loaded"}]
    consumer_session(client, access)  # the provider moves on: other items, other ids
    restored: list[str] = []

    def restore(action: str) -> None:
        response = client.post("/_admin/checkpoints/loaded/restore", headers=ADMIN)
        assert response.status_code == 200, response.text
        restored.append(action)

    unrestored = verifier(server.url, tmp_path / "web-sowctl.json", access)
    with pytest.raises(RuntimeError):  # without the state, the writes meet what is there now
        unrestored.state_handler({"loaded": lambda action: None}).verify()
    assert failed_descriptions(unrestored)
    checked = verifier(server.url, tmp_path / "web-sowctl.json", access).state_handler({"loaded": restore})
    checked.verify()
    assert checked.results["result"] is True, checked.results
    assert restored == ["setup"]  # once, before the first interaction
