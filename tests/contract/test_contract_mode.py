"""serve --contract: report names what a request relies on beyond the service's description;
strict refuses it with 400 in the group's envelope and runs nothing."""

from __future__ import annotations

import pytest

from sowctl.storage import models as m
from tests.support.doubles import ADMIN, ORG, SOW, bearer, external, in_process, load

pytestmark = pytest.mark.database


def _session(db_url: str, mode: str):
    client = in_process(db_url, contract=mode)
    credentials = load(client)
    return client, bearer(credentials["token"]), external(credentials["key"])


def test_report_mode_serves_the_request_and_names_each_departure(db_url: str) -> None:
    client, token, _ = _session(db_url, "report")
    listed = client.get("/api/sows", headers=token)
    assert listed.status_code == 200
    assert listed.headers["X-Sowctl-Contract"] == "route.extension"
    created = client.post(
        f"/api/sow/{SOW}/items",
        json={"title": "T", "type": "task_item", "id": "mine", "x": 1},
        headers=token,
    )
    assert created.status_code == 201, created.text
    assert created.headers["X-Sowctl-Contract"] == "body.extension, body.unknown"
    described = client.get(f"/api/sow/{SOW}/items", params={"type": "task_item"}, headers=token)
    assert described.status_code == 200
    assert "X-Sowctl-Contract" not in described.headers


def test_strict_mode_refuses_an_extension_in_the_group_s_envelope_and_writes_nothing(db_url: str) -> None:
    client, token, key = _session(db_url, "strict")
    before = m.Item.select().count()
    refused = client.post(
        f"/api/sow/{SOW}/items", json={"title": "T", "type": "task_item", "id": "mine"}, headers=token
    )
    assert refused.status_code == 400
    assert "contract mode (strict)" in refused.json()["error"]
    assert "body field id (body.extension)" in refused.json()["error"]
    assert refused.headers["X-Sowctl-Contract"] == "body.extension"
    assert m.Item.select().count() == before
    swapped = {**key, "organization-id": ORG}
    swapped.pop("x-organization-id")
    budget = client.get("/api/external/budget-views", params={"project_id": "1"}, headers=swapped)
    assert budget.status_code == 400
    assert "header organization-id" in budget.json()["error"]
    logged = client.get("/_admin/requests", headers=ADMIN).json()
    assert any(row["status"] == 400 and row["path"] == "/api/external/budget-views" for row in logged)


def test_strict_mode_serves_what_the_description_covers_and_what_it_leaves_open(db_url: str) -> None:
    client, token, _ = _session(db_url, "strict")
    plain = client.post(f"/api/sow/{SOW}/items", json={"title": "T", "type": "task_item"}, headers=token)
    assert plain.status_code == 201, plain.text
    assert "X-Sowctl-Contract" not in plain.headers
    tree = client.get("/api/dependencies/chain", params={"sowId": SOW, "format": "tree"}, headers=token)
    assert tree.status_code == 200
    assert tree.headers["X-Sowctl-Contract"] == "answer.tree_shape"


def test_group_c_refusals_use_group_c_s_envelope(db_url: str) -> None:
    client, token, _ = _session(db_url, "strict")
    refused = client.get("/projects", params={"page": "2"}, headers=token)
    assert refused.status_code == 400
    body = refused.json()
    assert body["code"] == "BAD_REQUEST"
    assert body["issues"] == [{"path": ["query.unknown"], "message": "leniency: query parameter page"}]


def test_off_is_the_default_and_marks_nothing(db_url: str) -> None:
    client = in_process(db_url)
    credentials = load(client)
    listed = client.get("/api/sows", headers=bearer(credentials["token"]))
    assert listed.status_code == 200
    assert "X-Sowctl-Contract" not in listed.headers


def test_the_admin_api_sets_the_mode_at_run_time_and_sums_up_the_request_log(db_url: str) -> None:
    client, token, _ = _session(db_url, "off")
    assert client.get("/_admin/contract", headers=ADMIN).json() == {"mode": "off", "departures": []}
    assert "X-Sowctl-Contract" not in client.get("/api/sows", headers=token).headers
    set_to = client.put("/_admin/contract", json={"mode": "report"}, headers=ADMIN)
    assert set_to.status_code == 200 and set_to.json()["mode"] == "report"
    for _ in range(2):
        assert client.get("/api/sows", headers=token).headers["X-Sowctl-Contract"] == "route.extension"
    client.get(f"/api/sow/{SOW}/items", params={"status": "x", "color": "y"}, headers=token)
    logged = client.get("/_admin/requests", params={"limit": 1}, headers=ADMIN).json()[0]
    assert [mark["code"] for mark in logged["contract"]] == ["query.unknown", "query.unknown"]
    summary = client.get("/_admin/contract", headers=ADMIN).json()
    assert summary["departures"] == [
        {"code": "route.extension", "kind": "extension", "requests": 2, "example": "GET /api/sows"},
        {"code": "query.unknown", "kind": "leniency", "requests": 1, "example": "query parameter color"},
    ]
    assert client.put("/_admin/contract", json={"mode": "strict"}, headers=ADMIN).status_code == 200
    assert client.get("/api/sows", headers=token).status_code == 400
    refused = client.put("/_admin/contract", json={"mode": "loose"}, headers=ADMIN)
    assert refused.status_code == 400 and "mode" in refused.json()["error"]
    assert client.post("/_admin/reset", headers=ADMIN).status_code == 200
    assert client.get("/_admin/contract", headers=ADMIN).json()["mode"] == "off"  # the start-up mode


def test_a_verification_can_require_that_no_request_relied_on_more_than_the_description(db_url: str) -> None:
    client, token, _ = _session(db_url, "report")
    client.get(f"/api/sow/{SOW}/items", headers=token)
    clean = client.post("/_admin/requests/verify", json={"contract": "any", "exactly": 0}, headers=ADMIN)
    assert clean.status_code == 200, clean.text
    client.get("/api/sows", headers=token)
    caught = client.post("/_admin/requests/verify", json={"contract": "any", "exactly": 0}, headers=ADMIN)
    assert caught.status_code == 409
    assert caught.json()["requests"][-1]["path"] == "/api/sows"
    by_code = client.post("/_admin/requests/verify", json={"contract": "route.extension"}, headers=ADMIN)
    assert by_code.status_code == 200 and by_code.json()["matched"] == 1
    missing = client.post(
        "/_admin/requests/verify",
        json={"path": "/api/sow/*/items", "contract": "route.extension"},
        headers=ADMIN,
    )
    assert missing.status_code == 409
    differences = [text for near in missing.json()["closest"] for text in near["differences"]]
    assert "contract: expected route.extension, got none" in differences
