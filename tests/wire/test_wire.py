"""The wire matches the service's specification: each example of what broke clients, fixed.

Driven over HTTP (the in-process app through httpx), so the body checked is the
exact body a client receives; the wire guard (tests/support/wire_guard.py) checks every
one of these responses against the service's description as well.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from sowctl.conformance import description as service_spec
from sowctl.services import demo_data
from sowctl.storage import models as m
from tests.support import wire_guard
from tests.support.doubles import bearer, dataset, in_process, load

SOW = demo_data.DEMO_SOW


@pytest.fixture
def api(migrated_db_url: str) -> tuple[httpx.Client, dict[str, str]]:
    client = in_process(migrated_db_url)
    return client, load(client)


def items_of_sow(client: httpx.Client, auth: dict[str, str]) -> list[dict]:
    return client.get(f"/api/sow/{SOW}/items", params={"limit": 100}, headers=auth).json()


def a_task(client: httpx.Client, auth: dict[str, str], **extra: Any) -> dict:
    made = client.post(
        f"/api/sow/{SOW}/items", json={"title": "T", "type": "task_item", **extra}, headers=auth
    )
    assert made.status_code == 201, made.text
    return made.json()


def group_b(key: str, *, purchase_order: bool = False) -> dict[str, str]:
    prefix = "" if purchase_order else "x-"
    return {
        "x-api-key": key,
        f"{prefix}organization-id": demo_data.DEMO_ORG,
        f"{prefix}company-id": demo_data.DEMO_COMPANY,
    }


def po_body(**changes: Any) -> dict:
    body = {
        "project_id": str(demo_data.DEMO_PROJECT_ID),
        "commitment_id": "5001",
        "title": "Anchor bolts",
        "vendor_id": 7,
        "status": "draft",
        "line_items": [{"description": "Bolts", "amount": "120.50", "cost_code_id": 3}],
    }
    return {**body, **changes}


# --- 1. no null where the spec types a value ---------------------------------------------


def test_a_dependency_without_optional_values_has_no_null(api) -> None:
    client, creds = api
    auth = bearer(creds["token"])
    a, b = a_task(client, auth), a_task(client, auth)
    body = {"sourceItemId": a["id"], "targetItemId": b["id"], "dependencyType": "blocks", "riskLevel": "low"}
    created = client.post("/api/dependencies", json=body, headers=auth).json()
    assert None not in created.values()
    for absent in ("slaDate", "escalationDate", "notes", "externalOwner", "contactEmail", "vendor",
                   "externalTarget", "updatedAt"):  # fmt: skip
        assert absent not in created
    updated = client.put(
        f"/api/dependencies/{created['id']}", json={"status": "blocked"}, headers=auth
    ).json()
    assert "updatedAt" in updated and None not in updated.values()
    for listed in client.get("/api/dependencies", params={"sowId": SOW, "limit": 100}, headers=auth).json():
        nulls = [key for key, value in listed.items() if value is None]
        assert nulls in ([], ["targetItemId"]) and (not nulls or listed["isExternal"])


def test_an_item_without_description_has_no_null_but_a_top_level_parent_is_null(api) -> None:
    client, creds = api
    item = a_task(client, bearer(creds["token"]))
    assert "description" not in item and item["parentItemId"] is None
    for listed in items_of_sow(client, bearer(creds["token"])):
        assert [key for key, value in listed.items() if value is None] in ([], ["parentItemId"])


def test_a_project_without_contact_has_no_contact_id(db_url: str) -> None:
    data = dataset()
    data["projects"][0].pop("contactId")
    client = in_process(db_url)
    token = load(client, data)["token"]
    projects = client.get("/projects", headers=bearer(token)).json()["projects"]
    bare = next(p for p in projects if p["id"] == data["projects"][0]["id"])
    assert "contactId" not in bare
    assert all(
        p["endDate"] is None or isinstance(p["endDate"], str) for p in projects
    )  # the spec's null stays


# --- 2. the spec's endpoints send the spec's fields ---------------------------------------


def test_the_chain_sends_the_spec_fields_and_extensions_on_request(api) -> None:
    client, creds = api
    auth = bearer(creds["token"])
    plain = client.get("/api/dependencies/chain", params={"sowId": SOW}, headers=auth).json()
    assert set(plain) == {"sowId", "dependencies", "issues"}
    spec_keys = {"id", "sourceItem", "targetItem", "dependencyType", "riskLevel", "status"}
    assert all(set(entry) == spec_keys for entry in plain["dependencies"])
    external = [entry for entry in plain["dependencies"] if "id" not in entry["targetItem"]]
    assert external and all(set(entry["targetItem"]) == {"title"} for entry in external)
    extended = client.get(
        "/api/dependencies/chain", params={"sowId": SOW, "include": "criticalPath,external"}, headers=auth
    ).json()
    assert "criticalPath" in extended
    assert all(entry["isExternal"] == ("id" not in entry["targetItem"]) for entry in extended["dependencies"])
    tree = client.get("/api/dependencies/chain", params={"sowId": SOW, "format": "tree"}, headers=auth).json()
    assert set(tree) == {"sowId", "items", "issues"}
    unknown = client.get("/api/dependencies/chain", params={"sowId": SOW, "include": "all"}, headers=auth)
    assert unknown.status_code == 400 and "include" in unknown.json()["error"]


# --- 3. the spec's types on input ------------------------------------------------------------


@pytest.mark.parametrize("raw", ["2.0", "2e0", "2E0", "2"])
def test_a_whole_json_number_is_an_integer_everywhere(api, raw: str) -> None:
    client, creds = api
    auth = {**bearer(creds["token"]), "Content-Type": "application/json"}
    created = client.post(
        f"/api/sow/{SOW}/items",
        content=f'{{"title": "T", "type": "task_item", "orderIndex": {raw}}}',
        headers=auth,
    )
    assert created.status_code == 201 and created.json()["orderIndex"] == 2
    item_id = created.json()["id"]
    updated = client.put(f"/api/items/{item_id}", content=f'{{"orderIndex": {raw}}}', headers=auth)
    assert updated.status_code == 200 and updated.json()["orderIndex"] == 2
    reordered = client.put(
        f"/api/sow/{SOW}/items/reorder",
        content=f'{{"items": [{{"id": "{item_id}", "orderIndex": {raw}}}]}}',
        headers=auth,
    )
    assert reordered.status_code == 200 and reordered.json()["items"] == [{"id": item_id, "orderIndex": 2}]
    order = client.post(
        "/api/external/create-purchase-order",
        content=json.dumps(po_body()).replace('"vendor_id": 7', f'"vendor_id": {raw.replace("2", "7")}'),
        headers={**group_b(creds["key"], purchase_order=True), "Content-Type": "application/json"},
    )
    assert order.status_code == 200 and order.json()["vendor"]["id"] == 7


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"vendor_id": "7"}, "vendor_id"),
        ({"commitment_id": 5001}, "commitment_id"),
        ({"project_id": demo_data.DEMO_PROJECT_ID}, "project_id"),
        (
            {"line_items": [{"description": "B", "amount": "1.00", "cost_code_id": "3"}]},
            "line_items[0].cost_code_id",
        ),
        (
            {"line_items": [{"description": "B", "amount": "1.00", "cost_code_id": 3, "quantity": "2"}]},
            "line_items[0].quantity",
        ),
        ({"vendor_id": None}, "vendor_id"),
    ],
)
def test_a_purchase_order_field_of_the_wrong_json_type_is_400_and_stores_nothing(api, change, field) -> None:
    client, creds = api
    before = m.PurchaseOrder.select().count()
    refused = client.post(
        "/api/external/create-purchase-order",
        json=po_body(**change),
        headers=group_b(creds["key"], purchase_order=True),
    )
    assert refused.status_code == 400 and field in refused.json()["error"]
    assert m.PurchaseOrder.select().count() == before


@pytest.mark.parametrize("field", ["notes", "slaDate", "escalationDate", "status", "riskLevel"])
def test_null_for_a_typed_field_in_an_update_is_400(api, field: str) -> None:
    client, creds = api
    auth = bearer(creds["token"])
    dep_id = demo_data.DEMO_CRITICAL_DEPENDENCY
    before = client.get(f"/api/dependencies/{dep_id}", headers=auth).json()
    refused = client.put(f"/api/dependencies/{dep_id}", json={field: None}, headers=auth)
    assert refused.status_code == 400 and field in refused.json()["error"]
    assert client.get(f"/api/dependencies/{dep_id}", headers=auth).json() == before


# --- 4. statuses within the spec's tables -------------------------------------------------


def test_a_body_that_is_not_json_is_400_not_415(api) -> None:
    client, creds = api
    sent = client.post(
        f"/api/sow/{SOW}/items",
        content=b"title=T&type=task_item",
        headers={**bearer(creds["token"]), "Content-Type": "text/plain"},
    )
    assert sent.status_code == 400 and "Content-Type" in sent.json()["error"]


def test_group_c_names_a_wrong_method_with_trpc_code(api) -> None:
    client, creds = api
    sent = client.post("/projects", json={}, headers=bearer(creds["token"]))
    assert sent.status_code == 405
    assert sent.json()["code"] == "BAD_REQUEST"


# --- 5. uuids are case-insensitive ------------------------------------------------------


def test_client_id_matches_in_any_case(api) -> None:
    client, creds = api
    auth = bearer(creds["token"])
    lower = client.get("/projects", params={"clientId": demo_data.CLIENT_NORTHWIND}, headers=auth).json()
    upper = client.get(
        "/projects", params={"clientId": demo_data.CLIENT_NORTHWIND.upper()}, headers=auth
    ).json()
    assert lower["total"] >= 1 and upper == lower


# --- the guard itself ---------------------------------------------------------------------


def _headers(**extra: str) -> httpx.Headers:
    return httpx.Headers({"content-type": "application/json", "x-request-id": "1", **extra})


def _dependency(**changes: Any) -> bytes:
    body = {
        "id": "d",
        "sourceItemId": "a",
        "targetItemId": "b",
        "dependencyType": "blocks",
        "riskLevel": "low",
        "status": "active",
        "isExternal": False,
        "createdAt": "2026-01-01T00:00:00Z",
        **changes,
    }
    return json.dumps(body).encode()


def _error_c(code: str, message: str) -> bytes:
    return json.dumps({"code": code, "message": message, "issues": []}).encode()


def _chain(**extra: Any) -> bytes:
    empty = {"circular": [], "overdue": [], "critical": []}
    return json.dumps({"sowId": "s", "dependencies": [], "issues": empty, **extra}).encode()


@pytest.mark.parametrize(
    ("method", "path", "query", "status", "body", "headers", "caught"),
    [
        ("GET", "/api/dependencies/d", "", 200, _dependency(), None, False),
        ("GET", "/api/dependencies/d", "", 200, _dependency(slaDate=None), None, True),
        ("GET", "/api/dependencies/d", "", 200, _dependency(slaDate="2026-1-1"), None, True),
        ("GET", "/api/dependencies/d", "", 200, _dependency(createdAt="2026-01-01T00:00:00.5Z"), None, True),
        ("GET", "/api/dependencies/d", "", 200, _dependency(criticalPath=[]), None, True),
        ("GET", "/api/dependencies/d", "", 415, b'{"error": "x"}', None, True),
        ("GET", "/api/dependencies/d", "", 200, _dependency(slaDate=None), {"x-sowctl-fault": "1"}, False),
        ("GET", "/api/dependencies/d", "", 200, _dependency(slaDate=None), {"x-request-id": ""}, False),
        ("POST", "/projects", "", 405, _error_c("METHOD_NOT_ALLOWED", "m"), None, True),
        ("POST", "/projects", "", 405, _error_c("BAD_REQUEST", "invalid input data"), None, False),
        ("GET", "/projects", "", 404, _error_c("NOT_FOUND", "gone"), None, True),
        ("GET", "/api/dependencies/chain", "sowId=s", 200, _chain(criticalPath=[]), None, True),
        ("GET", "/api/dependencies/chain", "sowId=s", 200, _chain(), None, False),
        ("GET", "/api/dependencies/chain", "include=criticalPath", 200, _chain(criticalPath=[]), None, False),
        ("GET", "/api/nowhere", "", 200, b"{}", None, False),
        ("GET", "/api/nowhere", "", 404, b"<html>", {"content-type": "text/html"}, True),
    ],
)  # fmt: skip
def test_the_guard_catches_what_the_spec_forbids(method, path, query, status, body, headers, caught) -> None:
    all_headers = _headers(**(headers or {}))
    if headers and headers.get("x-request-id") == "":
        del all_headers["x-request-id"]
    problems = wire_guard.problems(method, path, query, status, all_headers, body)
    assert bool(problems) is caught, problems


def test_the_service_description_is_valid_openapi() -> None:
    from openapi_spec_validator import validate

    validate(service_spec.document())
