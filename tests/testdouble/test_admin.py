"""The /_admin API of ``sowctl serve`` as a test double: off by default, token-guarded, and what it does."""

from __future__ import annotations

import json

import httpx
import pytest

from sowctl.storage import models as m
from tests.support.client import wsgi_client
from tests.support.doubles import (
    ADMIN,
    ADMIN_TOKEN,
    ORG,
    SOW,
    bearer,
    dataset,
    external,
    in_process,
    load,
)

pytestmark = pytest.mark.database  # replace and reset: each backend's own statements

ROUTES = [
    ("POST", "/_admin/reset"),
    ("GET", "/_admin/dataset"),
    ("POST", "/_admin/dataset"),
    ("POST", "/_admin/tokens"),
    ("POST", "/_admin/keys"),
    ("GET", "/_admin/faults"),
    ("PUT", "/_admin/faults"),
    ("POST", "/_admin/faults"),
    ("DELETE", "/_admin/faults"),
    ("GET", "/_admin/clock"),
    ("POST", "/_admin/clock"),
    ("GET", "/_admin/requests"),
    ("DELETE", "/_admin/requests"),
]


@pytest.fixture
def client(migrated_db_url: str) -> httpx.Client:
    return in_process(migrated_db_url)


# --- off, and guarded ----------------------------------------------------------------------


@pytest.mark.parametrize(("method", "path"), ROUTES)
def test_admin_routes_do_not_exist_unless_enabled(db_url: str, method: str, path: str) -> None:
    client = in_process(db_url, admin=False)
    response = client.request(method, path, headers=ADMIN)
    unknown = client.request(method, path.replace("/_admin/", "/_nothing/"), headers=ADMIN)
    assert response.status_code == unknown.status_code == 404
    assert response.json() == {"error": f"no route for {method} {path}"}
    assert set(response.headers) == set(unknown.headers)


@pytest.mark.parametrize(("method", "path"), ROUTES)
@pytest.mark.parametrize(
    ("headers", "error"),
    [
        ({}, "missing admin token (send Authorization: Bearer <admin token>)"),
        ({"Authorization": "Bearer wrong"}, "invalid admin token"),
        (
            {"Authorization": f"Basic {ADMIN_TOKEN}"},
            "missing admin token (send Authorization: Bearer <admin token>)",
        ),
    ],
)
def test_admin_routes_need_the_admin_token(
    client: httpx.Client, method: str, path: str, headers: dict, error: str
) -> None:
    response = client.request(method, path, headers=headers, json={} if method != "GET" else None)
    assert response.status_code == 401
    assert response.json() == {"error": error}
    assert response.headers["www-authenticate"].startswith("Bearer")


def test_an_api_token_is_not_an_admin_token(client: httpx.Client) -> None:
    token = load(client)["token"]
    assert client.post("/_admin/reset", headers=bearer(token)).status_code == 401


# --- dataset, reset, credentials ------------------------------------------------------------


def test_load_a_dataset_then_call_the_api_with_new_credentials(client: httpx.Client) -> None:
    data = dataset()
    loaded = client.post("/_admin/dataset", json=data, headers=ADMIN)
    assert loaded.status_code == 200
    assert loaded.json()["imported"]["items"] == len(data["items"])
    token = client.post(
        "/_admin/tokens", json={"userId": "user-new", "organizationId": ORG}, headers=ADMIN
    )  # a user the dataset does not list: created, as by 'sowctl tokens create'
    assert token.status_code == 201
    assert {k: v for k, v in token.json().items() if k not in ("token", "id")} == {
        "userId": "user-new",
        "organizationId": ORG,
        "role": "member",
    }
    items = client.get(f"/api/sow/{SOW}/items", headers=bearer(token.json()["token"]))
    assert items.status_code == 200 and int(items.headers["x-total-count"]) > 0
    key = client.post("/_admin/keys", json={"organizationId": ORG}, headers=ADMIN).json()["key"]
    views = client.get("/api/external/budget-views", params={"project_id": 101}, headers=external(key))
    assert views.status_code == 200 and views.json()["data"]


@pytest.mark.parametrize(
    ("path", "body", "status", "error"),
    [
        ("/_admin/tokens", {"organizationId": ORG}, 400, "userId: is required"),
        ("/_admin/tokens", {"userId": "u", "organizationId": ORG, "role": "owner"}, 400, "role: must be"),
        (
            "/_admin/tokens",
            {"userId": "u", "organizationId": "org-none"},
            404,
            "organization org-none not found",
        ),
        ("/_admin/tokens", [], 400, "the request body must be a JSON object"),
        ("/_admin/keys", {"organizationId": 7}, 400, "organizationId: must be a non-empty string"),
        ("/_admin/keys", {"organizationId": "org-none"}, 404, "organization org-none not found"),
    ],
)
def test_credential_requests_are_checked(
    client: httpx.Client, path: str, body: object, status: int, error: str
) -> None:
    load(client)
    response = client.post(path, json=body, headers=ADMIN)
    assert response.status_code == status
    assert response.json()["error"].startswith(error)


def test_an_invalid_dataset_names_record_and_field_and_writes_nothing(client: httpx.Client) -> None:
    data = dataset()
    data["items"][3]["type"] = "epic"
    response = client.post("/_admin/dataset", json=data, headers=ADMIN)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error.startswith(f"items[3] (id {data['items'][3]['id']}): type: ")
    assert client.get("/_admin/dataset", headers=ADMIN).json() == {
        kind: [] for kind in client.get("/_admin/dataset", headers=ADMIN).json()
    }
    broken = client.post("/_admin/dataset", content=b'{"items": [', headers=ADMIN)
    assert broken.status_code == 400 and broken.json()["error"].startswith("malformed JSON")


def test_a_dataset_with_an_unknown_field_is_refused(client: httpx.Client) -> None:
    data = dataset()
    data["dependencies"][0]["staus"] = data["dependencies"][0].pop("status")
    answer = client.post("/_admin/dataset", json=data, headers=ADMIN)
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"].startswith("dependencies[0]")
    assert "staus: unknown field" in answer.text


def test_export_returns_what_was_loaded(client: httpx.Client) -> None:
    data = dataset()
    client.post("/_admin/dataset", json=data, headers=ADMIN)
    exported = client.get("/_admin/dataset", headers=ADMIN).json()
    for kind in ("organizations", "sows", "items", "dependencies", "purchaseOrders"):
        assert sorted(str(r["id"]) for r in exported[kind]) == sorted(str(r["id"]) for r in data[kind])


def test_loading_twice_is_refused_unless_replace(client: httpx.Client) -> None:
    credentials = load(client)
    again = client.post("/_admin/dataset", json=dataset(), headers=ADMIN)
    assert again.status_code == 400 and "already exists" in again.json()["error"]
    replaced = client.post("/_admin/dataset?replace=true", json=dataset(), headers=ADMIN)
    assert replaced.status_code == 200
    # replace resets first: the old credentials are gone with everything else
    assert client.get(f"/api/sow/{SOW}/items", headers=bearer(credentials["token"])).status_code == 401


def test_bad_admin_values_are_refused_not_ignored(client: httpx.Client) -> None:
    refused = client.post("/_admin/dataset?replace=maybe", json=dataset(), headers=ADMIN)
    assert refused.status_code == 400 and "replace" in refused.json()["error"]
    assert client.get("/_admin/dataset", headers=ADMIN).json().get("sows", []) == []  # nothing loaded
    wrong_group = client.get("/_admin/requests?group=D", headers=ADMIN)
    assert wrong_group.status_code == 400 and "group" in wrong_group.json()["error"]


def test_a_failed_replace_keeps_the_old_data(client: httpx.Client) -> None:
    token = load(client)["token"]
    data = dataset()
    data["sows"][0]["projectId"] = "no-such-project"
    response = client.post("/_admin/dataset?replace=1", json=data, headers=ADMIN)
    assert response.status_code == 400 and "projectId" in response.json()["error"]
    assert client.get(f"/api/sow/{SOW}/items", headers=bearer(token)).status_code == 200


def test_reset_empties_every_table_but_keeps_the_schema(client: httpx.Client) -> None:
    from sowctl.storage import database

    credentials = load(client)
    client.get(f"/api/sow/{SOW}/items", headers=bearer(credentials["token"]))
    client.get("/api/external/budget-views?project_id=101", headers=external(credentials["key"]))
    client.put("/_admin/faults", json={"latencyMs": 1}, headers=ADMIN)
    assert m.RateCounter.select().count() and m.RequestLog.select().count() == 2
    response = client.post("/_admin/reset", headers=ADMIN)
    assert response.status_code == 200 and response.json() == {"message": "database reset"}
    for model in [*m.ALL_MODELS, *m.V2_MODELS]:
        if model is not m.Meta:
            assert model.select().count() == 0, model.__name__
    assert database.schema_version() == database.SCHEMA_VERSION
    assert client.get("/_admin/faults", headers=ADMIN).json()["latencyMs"] is None
    assert client.get("/_admin/requests", headers=ADMIN).json() == []
    assert client.get(f"/api/sow/{SOW}/items", headers=bearer(credentials["token"])).status_code == 401
    load(client)  # and the next test can start again


# --- the request log ---------------------------------------------------------------------------


def test_the_request_log_shows_calls_without_secrets(client: httpx.Client) -> None:
    credentials = load(client)
    token, key = credentials["token"], credentials["key"]
    created = client.post(
        f"/api/sow/{SOW}/items",
        json={"title": "Logged", "type": "task_item", "password": "hunter2"},
        headers=bearer(token),
    )
    assert created.status_code == 201
    client.get(
        "/api/external/budget-views", params={"project_id": 101, "token": "t0p"}, headers=external(key)
    )
    client.get("/api/items/nope", headers=bearer(token))
    client.get("/healthz")
    log = client.get("/_admin/requests", headers=ADMIN).json()
    assert [(e["method"], e["path"], e["status"]) for e in log] == [
        ("POST", f"/api/sow/{SOW}/items", 201),
        ("GET", "/api/external/budget-views", 200),
        ("GET", "/api/items/nope", 404),
    ]
    post, views, missing = log
    assert post["identity"] == {"userId": "user-ada", "organizationId": ORG, "role": "member"}
    assert post["requestBody"] == {"title": "Logged", "type": "task_item", "password": "***"}
    assert post["responseBody"] == created.json() and post["group"] == "A"
    assert post["requestId"] == created.headers["x-request-id"]
    assert isinstance(post["latencyMs"], float) and post["fault"] is None
    assert views["identity"]["organizationId"] == ORG and views["identity"]["companyId"] == "comp-acme-llc"
    assert set(views["identity"]) == {"apiKeyId", "organizationId", "companyId"}
    assert views["query"] == {"project_id": "101", "token": "***"} and views["group"] == "B"
    assert missing["responseBody"] == {"error": "item nope not found"}
    text = json.dumps(log)
    assert token not in text and key not in text and "hunter2" not in text and "t0p" not in text


def test_the_request_log_truncates_large_bodies(client: httpx.Client) -> None:
    token = load(client)["token"]
    client.post(
        f"/api/sow/{SOW}/items", json={"title": "x" * 10_000, "type": "task_item"}, headers=bearer(token)
    )
    (entry,) = client.get("/_admin/requests?limit=1", headers=ADMIN).json()
    assert entry["requestBodyTruncated"] is True and isinstance(entry["requestBody"], str)
    assert len(entry["requestBody"]) == 4096 and entry["requestBody"].startswith('{"title":"xxx')
    assert entry["responseBodyTruncated"] is True


def test_the_request_log_is_bounded_limited_and_cleared(db_url: str) -> None:
    client = in_process(db_url, request_log_size=5)
    token = load(client)["token"]
    for index in range(8):
        client.get(f"/api/items/item-{index}", headers=bearer(token))
    log = client.get("/_admin/requests", headers=ADMIN).json()
    assert [e["path"] for e in log] == [f"/api/items/item-{i}" for i in range(3, 8)]
    assert m.RequestLog.select().count() == 5
    assert [e["path"] for e in client.get("/_admin/requests?limit=2", headers=ADMIN).json()] == [
        "/api/items/item-6",
        "/api/items/item-7",
    ]
    bad = client.get("/_admin/requests?limit=zero", headers=ADMIN)
    assert bad.status_code == 400 and bad.json()["error"].startswith("limit:")
    assert client.delete("/_admin/requests", headers=ADMIN).json() == {"deleted": 5}
    assert client.get("/_admin/requests", headers=ADMIN).json() == []


# --- the serve options ------------------------------------------------------------------------


def test_serve_admin_prints_a_generated_token_that_works(cli, fake_runner: dict) -> None:
    result = cli("serve", "--admin", "--port", "8123")
    assert result.exit_code == 0, result.stderr
    first, second = result.stdout.splitlines()
    assert first.startswith("Admin token: sowa_") and second == "Listening on http://127.0.0.1:8123"
    token = first.removeprefix("Admin token: ")
    with wsgi_client(fake_runner["app"]) as client:
        assert client.get("/_admin/clock", headers=bearer(token)).status_code == 200
        assert client.get("/_admin/clock", headers=ADMIN).status_code == 401


def test_serve_admin_token_from_the_environment(cli, fake_runner: dict) -> None:
    result = cli("serve", env={"SOWCTL_ADMIN_TOKEN": ADMIN_TOKEN})
    assert result.exit_code == 0 and result.stdout == "Listening on http://127.0.0.1:8000\n"
    with wsgi_client(fake_runner["app"]) as client:
        assert client.get("/_admin/clock", headers=ADMIN).status_code == 200


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (
            ["--admin", "--admin-token", "x"],
            "use --admin (a generated token) or --admin-token TOKEN, not both",
        ),
        (["--admin-token", " "], "--admin-token must not be empty"),
    ],
)
def test_serve_refuses_conflicting_admin_options(cli, fake_runner: dict, args: list[str], error: str) -> None:
    result = cli("serve", *args)
    assert result.exit_code == 2 and result.stderr == f"error: {error}\n"
    assert "app" not in fake_runner
