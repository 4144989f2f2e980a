"""/_admin checkpoints (save, restore, list, drop) and request verification with near-miss reports."""

from __future__ import annotations

import json

import httpx
import pytest

from sowctl.storage import models as m
from tests.support.doubles import ADMIN, SOW, bearer, in_process, load

pytestmark = pytest.mark.database  # checkpoints: each backend's own statements


@pytest.fixture
def client(migrated_db_url: str) -> httpx.Client:
    return in_process(migrated_db_url)


def _items(client: httpx.Client, token: str) -> list[str]:
    response = client.get(f"/api/sow/{SOW}/items", params={"limit": 100}, headers=bearer(token))
    assert response.status_code == 200, response.text
    return sorted(item["title"] for item in response.json())


# --- checkpoints ------------------------------------------------------------------------------


def test_a_checkpoint_brings_back_records_credentials_and_settings(client: httpx.Client) -> None:
    access = load(client)
    before = _items(client, access["token"])
    client.put("/_admin/faults", json={"latencyMs": 1}, headers=ADMIN).raise_for_status()
    saved = client.post("/_admin/checkpoints", json={"name": "loaded"}, headers=ADMIN)
    assert saved.status_code == 201, saved.text
    assert saved.json()["name"] == "loaded" and saved.json()["records"] > 10

    # Change everything: a new item, the faults cleared, then a reset on top.
    created = client.post(
        f"/api/sow/{SOW}/items",
        json={"title": "Extra", "type": "requirement"},
        headers=bearer(access["token"]),
    )
    assert created.status_code == 201, created.text
    client.delete("/_admin/faults", headers=ADMIN).raise_for_status()
    client.post("/_admin/reset", headers=ADMIN).raise_for_status()
    assert m.Item.select().count() == 0

    restored = client.post("/_admin/checkpoints/loaded/restore", headers=ADMIN)
    assert restored.status_code == 200, restored.text
    # What came back, not when it was saved: no createdAt in a restore's answer.
    assert restored.text == f'{{"name":"loaded","records":{saved.json()["records"]}}}'
    assert list(saved.json()) == ["name", "createdAt", "records"]
    assert _items(client, access["token"]) == before  # the token issued before the checkpoint works
    assert client.get("/_admin/faults", headers=ADMIN).json()["latencyMs"] == [1, 1]
    # Restoring twice gives the same state again (the copy is not consumed).
    client.post(
        f"/api/sow/{SOW}/items",
        json={"title": "Again", "type": "requirement"},
        headers=bearer(access["token"]),
    )
    client.post("/_admin/checkpoints/loaded/restore", headers=ADMIN).raise_for_status()
    assert _items(client, access["token"]) == before


def test_checkpoints_are_listed_replaced_and_dropped(client: httpx.Client) -> None:
    load(client)
    assert client.get("/_admin/checkpoints", headers=ADMIN).json() == []
    for name in ("a", "b", "a"):
        client.post("/_admin/checkpoints", json={"name": name}, headers=ADMIN).raise_for_status()
    listed = client.get("/_admin/checkpoints", headers=ADMIN).json()
    assert [entry["name"] for entry in listed] == ["a", "b"]
    assert [list(entry) for entry in listed] == [["name", "createdAt", "records"]] * 2
    assert client.delete("/_admin/checkpoints/a", headers=ADMIN).json() == {"deleted": "a"}
    assert [entry["name"] for entry in client.get("/_admin/checkpoints", headers=ADMIN).json()] == ["b"]
    missing = client.post("/_admin/checkpoints/a/restore", headers=ADMIN)
    assert missing.status_code == 404 and missing.json() == {"error": "checkpoint a not found"}


@pytest.mark.parametrize("name", [None, "", "a b", "x" * 49, "../etc", 3])
def test_a_bad_checkpoint_name_is_a_400_naming_the_field(client: httpx.Client, name: object) -> None:
    response = client.post("/_admin/checkpoints", json={"name": name}, headers=ADMIN)
    assert response.status_code == 400
    assert response.json()["error"].startswith("name: must be 1 to 48 letters")


# --- request log filters and verification ---------------------------------------------------


def _traffic(client: httpx.Client) -> str:
    access = load(client)
    token = access["token"]
    client.post(f"/api/sow/{SOW}/items", json={"title": "Wall", "type": "requirement"}, headers=bearer(token))
    client.get(f"/api/sow/{SOW}/items", headers=bearer(token))
    client.get("/api/items/nope", headers=bearer(token))
    return token


def test_the_request_log_filters_by_method_path_status_group_and_caller(client: httpx.Client) -> None:
    _traffic(client)

    def paths(**query: str) -> list[tuple[str, str, int]]:
        response = client.get("/_admin/requests", params=query, headers=ADMIN)
        assert response.status_code == 200, response.text
        return [(entry["method"], entry["path"], entry["status"]) for entry in response.json()]

    assert paths(method="post") == [("POST", f"/api/sow/{SOW}/items", 201)]
    assert paths(path="/api/items/*") == [("GET", "/api/items/nope", 404)]
    assert paths(status="4xx") == [("GET", "/api/items/nope", 404)]
    assert len(paths(group="A")) == 3 and paths(group="B") == []
    assert len(paths(caller="user-ada")) == 3 and paths(caller="someone-else") == []
    bad = client.get("/_admin/requests", params={"status": "abc"}, headers=ADMIN)
    assert bad.status_code == 400 and bad.json()["error"].startswith("status: must be an HTTP status")


def test_verify_answers_200_when_the_count_holds(client: httpx.Client) -> None:
    _traffic(client)
    pattern = {"method": "POST", "path": "/api/sow/*/items", "body": {"title": "Wall"}}
    for count in ({"exactly": 1}, {"atLeast": 1}, {"atMost": 1}, {}):
        response = client.post("/_admin/requests/verify", json={**pattern, **count}, headers=ADMIN)
        assert response.status_code == 200, (count, response.text)
        assert response.json()["matched"] == 1
    none = {"method": "DELETE", "atMost": 0}
    assert client.post("/_admin/requests/verify", json=none, headers=ADMIN).status_code == 200


def test_verify_answers_409_with_the_closest_requests_and_what_differed(client: httpx.Client) -> None:
    _traffic(client)
    pattern = {"method": "POST", "path": f"/api/sow/{SOW}/items", "body": {"title": "Walls"}, "exactly": 1}
    response = client.post("/_admin/requests/verify", json=pattern, headers=ADMIN)
    assert response.status_code == 409
    report = response.json()
    pattern_text = f'POST /api/sow/{SOW}/items with body {{"title": "Walls"}}'
    assert report["error"] == f"expected exactly 1 request matching {pattern_text}, found 0"
    closest = report["closest"][0]
    assert (closest["method"], closest["status"]) == ("POST", 201)
    assert closest["differences"] == ['body.title: expected "Walls", got "Wall"']
    # The next closest differ in more than the body.
    assert all(len(entry["differences"]) >= 1 for entry in report["closest"])


def test_verify_with_too_many_matches_lists_them(client: httpx.Client) -> None:
    _traffic(client)
    response = client.post("/_admin/requests/verify", json={"method": "GET", "atMost": 1}, headers=ADMIN)
    assert response.status_code == 409
    assert response.json()["matched"] == 2
    assert [entry["method"] for entry in response.json()["requests"]] == ["GET", "GET"]


@pytest.mark.parametrize(
    ("body", "error"),
    [
        ([], "pattern: the body must be a JSON object: a request pattern and a count"),
        ({"verb": "GET"}, "verb: unknown field"),
        ({"exactly": 1, "atMost": 2}, "atMost: give one of exactly, atLeast, atMost, not several"),
        ({"exactly": -1}, "exactly: must be a whole number from 0"),
        ({"query": "a=1"}, "query: must be an object of parameter names and values"),
    ],
)
def test_a_bad_verification_is_a_400_naming_the_field(client: httpx.Client, body: object, error: str) -> None:
    response = client.post("/_admin/requests/verify", json=body, headers=ADMIN)
    assert response.status_code == 400
    assert response.json()["error"].startswith(error)


def test_the_log_keeps_headers_but_never_a_credential_and_verify_matches_them(client: httpx.Client) -> None:
    access = load(client)
    headers = {
        **bearer(access["token"]),
        "X-Correlation-Id": "abc-123",
        "Cookie": "session=s3cret",
        "x-api-key": access["key"],
        "X-Trace": f"carries {access['token']}",
    }
    client.get(f"/api/sow/{SOW}/items", headers=headers)
    entry = client.get("/_admin/requests", headers=ADMIN).json()[-1]
    assert entry["headers"]["x-correlation-id"] == "abc-123"
    assert not {"authorization", "cookie", "x-api-key"} & set(entry["headers"])
    assert access["token"] not in json.dumps(entry)
    assert entry["headers"]["x-trace"] == "carries sowt_***"

    hit = client.post(
        "/_admin/requests/verify",
        json={"headers": {"X-Correlation-Id": "abc-123"}, "exactly": 1},
        headers=ADMIN,
    )
    assert hit.status_code == 200, hit.text
    miss = client.post(
        "/_admin/requests/verify", json={"headers": {"x-correlation-id": "abc-124"}}, headers=ADMIN
    )
    assert miss.status_code == 409
    assert miss.json()["closest"][0]["differences"] == [
        "headers.x-correlation-id: expected 'abc-124', got 'abc-123'"
    ]
    secret = client.post("/_admin/requests/verify", json={"headers": {"Authorization": "x"}}, headers=ADMIN)
    assert secret.status_code == 400
    assert secret.json()["error"].startswith("headers: Authorization carries credentials")


def test_a_checkpoint_from_an_older_schema_is_refused_not_half_restored(client: httpx.Client) -> None:
    load(client)
    client.post("/_admin/checkpoints", json={"name": "old"}, headers=ADMIN).raise_for_status()
    row = m.Meta.get_by_id("checkpoint:old")
    entry = json.loads(row.value)
    entry["schema"] = 1
    m.Meta.update(value=json.dumps(entry)).where(m.Meta.key == row.key).execute()
    items = m.Item.select().count()
    refused = client.post("/_admin/checkpoints/old/restore", headers=ADMIN)
    assert refused.status_code == 400
    assert refused.json()["error"].startswith("name: checkpoint old was saved by an older sowctl (schema 1")
    assert m.Item.select().count() == items


def test_near_misses_name_query_status_and_caller_differences(client: httpx.Client) -> None:
    token = _traffic(client)
    client.get("/api/sows", params={"projectId": "p-1"}, headers=bearer(token))
    pattern = {
        "method": "GET",
        "path": "/api/sows",
        "query": {"projectId": "p-2"},
        "status": 404,
        "caller": "bob",
    }
    report = client.post("/_admin/requests/verify", json=pattern, headers=ADMIN).json()
    assert report["closest"][0]["path"] == "/api/sows"
    assert report["closest"][0]["differences"] == [
        "status: expected 404, got 200",
        "caller: expected bob, got user-ada",
        "query.projectId: expected 'p-2', got 'p-1'",
    ]
