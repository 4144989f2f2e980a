"""The test double's ``POST /_admin/dataset`` keeps the budgets of ``sowctl import``: nesting past
``limits.MAX_JSON_DEPTH`` is refused before the body is parsed, a nested list past its maximum by
its count, and a file with thousands of problems is answered with the first and a count. Nothing
is loaded, and the request log records a refused API request (reading a deep body for the log never fails)."""

from __future__ import annotations

import json

import httpx
import pytest

from sowctl.foundation.budgets import MAX_FAULT_ROUTES, MAX_JSON_DEPTH, MAX_LINE_ITEMS
from tests.support.doubles import ADMIN, bearer, dataset, in_process, load


@pytest.fixture
def client(migrated_db_url: str) -> httpx.Client:
    return in_process(migrated_db_url)


def loaded(client: httpx.Client) -> dict[str, int]:
    exported = client.get("/_admin/dataset", headers=ADMIN).json()
    return {kind: len(records) for kind, records in exported.items()}


@pytest.mark.parametrize("levels", [MAX_JSON_DEPTH, 20_000, 1_000_000])
def test_a_dataset_nested_past_the_limit_is_refused_and_logged(client: httpx.Client, levels: int) -> None:
    load(client)
    before = loaded(client)
    data = dataset()
    data["items"] = [dict(data["items"][0], id="deep", description="DEEP")]
    text = json.dumps(data).replace('"DEEP"', "[" * levels + "]" * levels)

    response = client.post("/_admin/dataset?replace=true", content=text.encode(), headers=ADMIN)

    assert response.status_code == 400
    column = text.index("[[") + MAX_JSON_DEPTH - 2  # the description is level 4
    assert response.json() == {
        "error": f"request body: arrays and objects are nested more than {MAX_JSON_DEPTH} levels deep "
        f"(line 1, column {column})"
    }
    assert loaded(client) == before


def test_an_api_body_nested_past_the_limit_is_refused_and_logged(client: httpx.Client) -> None:
    token = load(client)["token"]
    body = '{"title": "x", "projectId": "p", "extra": ' + "[" * 100_000 + "]" * 100_000 + "}"

    response = client.post("/api/sows", content=body.encode(), headers=bearer(token))

    assert response.status_code == 400
    assert response.json()["error"].startswith("request body: arrays and objects are nested more than")
    log = client.get("/_admin/requests", params={"path": "/api/sows"}, headers=ADMIN).json()
    assert [(entry["method"], entry["status"]) for entry in log] == [("POST", 400)]


def test_a_dataset_order_with_too_many_lines_is_refused_by_its_count(client: httpx.Client) -> None:
    data = dataset()
    data["purchaseOrders"][0]["line_items"] = [{}] * (MAX_LINE_ITEMS + 1)

    response = client.post("/_admin/dataset", json=data, headers=ADMIN)

    order = data["purchaseOrders"][0]["id"]
    assert response.status_code == 400
    assert response.json() == {
        "error": f"purchaseOrders[0] (id {order}): line_items: must contain at most {MAX_LINE_ITEMS} "
        f"line items (this one has {MAX_LINE_ITEMS + 1})"
    }
    assert loaded(client).get("purchaseOrders", 0) == 0


def test_a_dataset_with_thousands_of_problems_is_answered_in_a_few_lines(client: httpx.Client) -> None:
    data = dataset()
    data["items"] = [{"id": f"bad-{index}"} for index in range(5000)]  # each lacks sowId, title, type

    response = client.post("/_admin/dataset", json=data, headers=ADMIN)

    assert response.status_code == 400
    assert len(response.content) < 1000
    assert response.json()["error"].startswith("items[0] (id bad-0): sowId: is required (and ")
    assert response.json()["error"].endswith(" more problems)")
    assert loaded(client).get("items", 0) == 0


def test_a_fault_config_of_too_many_routes_is_refused_by_its_count(client: httpx.Client) -> None:
    # Every request is matched against each pattern: 100,000 of them slowed every request.
    before = client.get("/_admin/faults", headers=ADMIN).json()
    routes = ["/api/items/*"] * (MAX_FAULT_ROUTES + 1)

    response = client.put("/_admin/faults", json={"rate": 1.0, "routes": routes}, headers=ADMIN)

    assert response.status_code == 400
    too_many = f"must contain at most {MAX_FAULT_ROUTES} route patterns (this one has {len(routes)})"
    assert response.json() == {"error": f"routes: {too_many}"}
    assert client.get("/_admin/faults", headers=ADMIN).json() == before
    assert client.put("/_admin/faults", json={"routes": routes[:-1]}, headers=ADMIN).status_code == 200


def test_serve_refuses_too_many_fault_routes(cli, fake_runner: dict) -> None:
    options = [arg for _ in range(MAX_FAULT_ROUTES + 1) for arg in ("--fault-route", "/api/*")]

    result = cli("serve", "--fault-rate", "0.5", *options)

    assert result.exit_code == 2
    too_many = f"must contain at most {MAX_FAULT_ROUTES} route patterns (this one has {MAX_FAULT_ROUTES + 1})"
    assert result.stderr == f"error: --fault-route: {too_many}\n"
    assert "app" not in fake_runner
