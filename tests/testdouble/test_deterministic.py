"""Deterministic mode: ``serve --seed N --clock T`` and ``/_admin/clock`` make responses reproducible."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from tests.support.doubles import (
    ADMIN,
    ADMIN_TOKEN,
    COMPANY,
    ORG,
    SOW,
    bearer,
    dataset,
    in_process,
    load,
)

PROJECT_UUID = "abbe5264-4eb1-5dfa-b9a9-8c1bb5169ea4"  # the demo's Tower A project
PO_BODY = {
    "project_id": "101",
    "commitment_id": "5001",
    "title": "Upper tier steel",
    "vendor_id": 7,
    "status": "draft",
    "line_items": [{"description": "Columns", "amount": "0.10", "cost_code_id": 3}],
}


def session(client: httpx.Client) -> list[tuple[int, Any]]:
    """The same requests, in the same order: every status and body, credentials included."""
    seen: list[tuple[int, Any]] = []

    def call(method: str, path: str, **kwargs: Any) -> Any:
        response = client.request(method, path, **kwargs)
        assert response.status_code < 300, (method, path, response.text)
        seen.append((response.status_code, response.json()))
        return response.json()

    call("POST", "/_admin/dataset", json=dataset(), headers=ADMIN)
    token = call("POST", "/_admin/tokens", json={"userId": "user-ada", "organizationId": ORG}, headers=ADMIN)
    key = call("POST", "/_admin/keys", json={"organizationId": ORG}, headers=ADMIN)
    auth = bearer(token["token"])
    sow = call("POST", "/api/sows", json={"title": "Deterministic", "projectId": PROJECT_UUID}, headers=auth)
    parent = call(
        "POST", f"/api/sow/{sow['id']}/items", json={"title": "R", "type": "requirement"}, headers=auth
    )
    task = call(
        "POST",
        f"/api/sow/{sow['id']}/items",
        json={"title": "T", "type": "task_item", "parentItemId": parent["id"]},
        headers=auth,
    )
    other = call(
        "POST", f"/api/sow/{sow['id']}/items", json={"title": "U", "type": "task_item"}, headers=auth
    )
    body = {"sourceItemId": task["id"], "targetItemId": other["id"], "dependencyType": "depends_on"}
    call(
        "POST", "/api/dependencies", json={**body, "riskLevel": "high", "slaDate": "2025-12-01"}, headers=auth
    )
    call("PUT", f"/api/items/{task['id']}", json={"status": "completed"}, headers=auth)
    scope = {"x-api-key": key["key"], "organization-id": ORG, "company-id": COMPANY}
    call("POST", "/api/external/create-purchase-order", json=PO_BODY, headers=scope)
    call("GET", f"/api/sow/{sow['id']}/items", headers=auth)
    call("GET", "/api/dependencies/chain", params={"sowId": sow["id"]}, headers=auth)
    call("GET", "/api/dependencies", params={"type": "overdue", "sowId": sow["id"]}, headers=auth)
    return seen


@pytest.mark.slow
def test_same_seed_and_clock_give_identical_responses(serve, tmp_path) -> None:
    args = ("--seed", "42", "--clock", "2026-01-01T00:00:00Z", "--admin-token", ADMIN_TOKEN)
    first = serve(tmp_path / "first.db", *args)
    second = serve(tmp_path / "second.db", *args)
    recorded = session(first.client)
    assert session(second.client) == recorded
    created = [body for status, body in recorded if status == 201 and "createdAt" in body]
    assert created and all(body["createdAt"] == "2026-01-01T00:00:00Z" for body in created)
    overdue = recorded[-1][1]
    assert len(overdue) == 1 and overdue[0]["slaDate"] == "2025-12-01"  # computed against the clock
    # a reset starts the seeded sequence again: a test suite gets the same ids in every test
    assert first.client.post("/_admin/reset", headers=ADMIN).status_code == 200
    assert session(first.client) == recorded


def test_overdue_is_computed_against_the_service_clock(db_url: str) -> None:
    client = in_process(db_url)
    token = load(client)["token"]
    auth = bearer(token)
    overdue_dependency = next(
        d for d in dataset()["dependencies"] if d["id"] == "dep-010"
    )  # slaDate 2025-12-27

    def overdue() -> tuple[list[str], list[str]]:
        listed = client.get(
            "/api/dependencies", params={"type": "overdue", "sowId": SOW}, headers=auth
        ).json()
        chain = client.get("/api/dependencies/chain", params={"sowId": SOW}, headers=auth).json()
        return [d["id"] for d in listed], [d["id"] for d in chain["issues"]["overdue"]]

    client.post("/_admin/clock", json={"now": "2025-12-27T12:00:00Z"}, headers=ADMIN)
    listed, in_chain = overdue()
    assert overdue_dependency["id"] not in listed and overdue_dependency["id"] not in in_chain
    client.post("/_admin/clock", json={"now": "2025-12-28T00:00:00Z"}, headers=ADMIN)
    listed, in_chain = overdue()
    assert overdue_dependency["id"] in listed and overdue_dependency["id"] in in_chain


def test_clock_routes(db_url: str) -> None:
    client = in_process(db_url)
    token = load(client)["token"]
    running = client.get("/_admin/clock", headers=ADMIN).json()
    assert running["frozen"] is False
    assert abs((datetime.fromisoformat(running["now"]) - datetime.now(UTC)).total_seconds()) < 60
    frozen = client.post("/_admin/clock", json={"now": "2026-02-03T04:05:06+01:00"}, headers=ADMIN)
    assert frozen.json() == {"now": "2026-02-03T03:05:06Z", "frozen": True}
    assert client.get("/_admin/clock", headers=ADMIN).json() == frozen.json()
    item = client.post(
        f"/api/sow/{SOW}/items", json={"title": "t", "type": "task_item"}, headers=bearer(token)
    )
    assert item.json()["createdAt"] == item.json()["updatedAt"] == "2026-02-03T03:05:06Z"
    unfrozen = client.post("/_admin/clock", json={"now": None}, headers=ADMIN).json()
    assert unfrozen["frozen"] is False and unfrozen["now"] != "2026-02-03T03:05:06Z"


@pytest.mark.parametrize(
    ("body", "error"),
    [
        ({}, "now: is required"),
        ({"now": "yesterday"}, "now: 'yesterday' is not a timestamp"),
        ({"now": 1767225600}, "now: must be a timestamp string or null"),
    ],
)
def test_bad_clock_requests(db_url: str, body: dict, error: str) -> None:
    client = in_process(db_url)
    response = client.post("/_admin/clock", json=body, headers=ADMIN)
    assert response.status_code == 400 and response.json()["error"].startswith(error)


def test_reset_restores_the_startup_clock(db_url: str) -> None:
    client = in_process(db_url, fixed_now=datetime(2026, 1, 1))
    assert client.get("/_admin/clock", headers=ADMIN).json() == {
        "now": "2026-01-01T00:00:00Z",
        "frozen": True,
    }
    client.post("/_admin/clock", json={"now": None}, headers=ADMIN)
    assert client.get("/_admin/clock", headers=ADMIN).json()["frozen"] is False
    client.post("/_admin/reset", headers=ADMIN)
    assert client.get("/_admin/clock", headers=ADMIN).json() == {
        "now": "2026-01-01T00:00:00Z",
        "frozen": True,
    }


# --- the serve options -----------------------------------------------------------------------------


def test_serve_seed_and_clock_reach_the_app(cli, fake_runner: dict) -> None:
    result = cli("serve", "--seed", "7", "--clock", "2026-01-01T00:00:00Z")
    assert result.exit_code == 0, result.stderr
    settings = fake_runner["app"].settings
    assert settings.seed == 7 and settings.fixed_now == datetime(2026, 1, 1)


def test_seed_refuses_several_workers(cli, fake_runner: dict) -> None:
    result = cli("serve", "--seed", "7", "--workers", "2")
    assert result.exit_code == 2
    assert result.stderr == (
        "error: --seed needs a single worker: each worker would generate the same ids and tokens "
        "(got --workers 2)\n"
    )
    assert "app" not in fake_runner


def test_serve_refuses_a_bad_clock(cli, fake_runner: dict) -> None:
    result = cli("serve", "--clock", "noon")
    assert result.exit_code == 2
    assert result.stderr == "error: --clock: 'noon' is not a timestamp such as 2026-01-01T00:00:00Z\n"
