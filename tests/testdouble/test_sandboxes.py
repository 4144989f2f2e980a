"""Sandboxes of a shared test double: two organizations on one server, each with its own admin
token, reset, checkpointed, faulted and expired without touching the other."""

from __future__ import annotations

import datetime
import uuid
from typing import Any

import httpx
import pytest

from sowctl.services import sandboxes
from sowctl.storage import models as m
from sowctl.storage import sandbox_models
from tests.support.doubles import ADMIN, ORG, bearer, dataset, in_process

pytestmark = pytest.mark.database  # a sandbox's rows picked by subqueries: each backend's SQL


@pytest.fixture
def client(migrated_db_url: str) -> httpx.Client:
    return in_process(migrated_db_url)


def _sandbox(client: httpx.Client, **body: Any) -> dict[str, Any]:
    made = client.post("/_admin/sandboxes", json=body, headers=ADMIN)
    assert made.status_code == 201, made.text
    return made.json()


def _admin(sandbox: dict[str, Any]) -> dict[str, str]:
    return {"Authorization": f"Bearer {sandbox['adminToken']}"}


def _sow(client: httpx.Client, sandbox: dict[str, Any], sow_id: str, *titles: str) -> None:
    made = client.post("/api/sows", json={"id": sow_id, "title": sow_id}, headers=bearer(sandbox["token"]))
    assert made.status_code == 201, made.text
    for title in titles:
        item = client.post(
            f"/api/sow/{sow_id}/items",
            json={"title": title, "type": "requirement"},
            headers=bearer(sandbox["token"]),
        )
        assert item.status_code == 201, item.text


def _titles(client: httpx.Client, sandbox: dict[str, Any], sow_id: str) -> list[str] | int:
    listed = client.get(f"/api/sow/{sow_id}/items", headers=bearer(sandbox["token"]))
    if listed.status_code != 200:
        return listed.status_code
    return sorted(item["title"] for item in listed.json())


def _logged(client: httpx.Client, sandbox: dict[str, Any]) -> list[str]:
    listed = client.get("/_admin/requests", params={"limit": 1000}, headers=_admin(sandbox))
    assert listed.status_code == 200, listed.text
    return [f"{entry['method']} {entry['path']}" for entry in listed.json()]


def test_one_sandbox_reset_and_restored_while_the_other_keeps_its_data_and_log(client: httpx.Client) -> None:
    first, second = _sandbox(client, name="job 1", ttl="1h"), _sandbox(client, ttl=600)
    assert first["organizationId"] != second["organizationId"] and first["name"] == "job 1"
    _sow(client, first, "sow-1", "Walls")
    _sow(client, second, "sow-1", "Roof")  # the same SOW id: SOW ids are per organization
    second_log = _logged(client, second)
    assert second_log == ["POST /api/sows", "POST /api/sow/sow-1/items"]

    # Both save a checkpoint of the same name: neither overwrites the other's.
    for sandbox in (first, second):
        saved = client.post("/_admin/checkpoints", json={"name": "base"}, headers=_admin(sandbox))
        assert saved.status_code == 201, saved.text
        assert saved.json()["records"] == 3  # the default project, the SOW and its item
    _sow(client, first, "sow-2", "Floors")
    restored = client.post("/_admin/checkpoints/base/restore", headers=_admin(first))
    assert restored.status_code == 200, restored.text
    assert restored.text == '{"name":"base","records":3}'  # no createdAt, as the server's restore
    assert _titles(client, first, "sow-1") == ["Walls"] and _titles(client, first, "sow-2") == 404
    listed = client.get("/_admin/checkpoints", headers=_admin(first)).json()
    assert [entry["name"] for entry in listed] == ["base"]
    assert list(listed[0]) == ["name", "createdAt", "records"]
    dropped = client.delete("/_admin/checkpoints/base", headers=_admin(second))
    assert dropped.text == '{"deleted":"base"}'
    client.post("/_admin/checkpoints", json={"name": "base"}, headers=_admin(second)).raise_for_status()

    reset = client.post("/_admin/reset", headers=_admin(first))
    assert reset.status_code == 200, reset.text
    assert _titles(client, first, "sow-1") == 404  # its token still works: the SOW is gone
    assert _logged(client, first) == ["GET /api/sow/sow-1/items"]  # only what came after the reset
    # The other sandbox: its records, and its request log, as they were.
    assert _titles(client, second, "sow-1") == ["Roof"]
    assert _logged(client, second)[:2] == second_log
    restored = client.post("/_admin/checkpoints/base/restore", headers=_admin(second))
    assert restored.status_code == 200 and _titles(client, second, "sow-1") == ["Roof"]


def test_a_sandbox_token_cannot_touch_another_organization_or_the_server(client: httpx.Client) -> None:
    first, second = _sandbox(client), _sandbox(client)
    refused = [
        client.get("/_admin/contract", headers=_admin(first)),
        client.put("/_admin/contract", json={"mode": "strict"}, headers=_admin(first)),
        client.post("/_admin/clock", json={"now": "2030-01-01T00:00:00Z"}, headers=_admin(first)),
        client.post("/_admin/sandboxes", json={}, headers=_admin(first)),
        client.delete(f"/_admin/sandboxes/{second['organizationId']}", headers=_admin(first)),
        client.post(
            "/_admin/tokens",
            json={"userId": "intruder", "organizationId": second["organizationId"]},
            headers=_admin(first),
        ),
        client.post("/_admin/keys", json={"organizationId": second["organizationId"]}, headers=_admin(first)),
    ]
    assert [response.status_code for response in refused] == [403] * len(refused)
    assert "sandbox" in refused[2].json()["error"]
    assert client.get("/_admin/contract", headers=ADMIN).json()["mode"] == "off"
    assert client.get("/_admin/clock", headers=ADMIN).json()["frozen"] is False
    assert m.User.get_or_none(m.User.id == "intruder") is None
    assert client.get("/_admin/clock", headers=_admin(first)).status_code == 200  # reading it is fine
    own = client.get("/_admin/sandboxes", headers=_admin(first))
    assert [entry["organizationId"] for entry in own.json()] == [first["organizationId"]]
    issued = client.post(
        "/_admin/tokens",
        json={"userId": "dev", "organizationId": first["organizationId"]},
        headers=_admin(first),
    )
    assert issued.status_code == 201, issued.text
    # A token of no sandbox, or a sandbox's token for /_admin of the API: 401.
    assert client.post("/_admin/reset", headers=bearer(first["token"])).status_code == 401


def test_faults_of_a_sandbox_fail_only_its_callers(client: httpx.Client) -> None:
    first, second = _sandbox(client), _sandbox(client)
    config = {"rate": 1, "status": 503, "count": 1, "latencyMs": [2, 4]}
    set_ = client.put("/_admin/faults", json=config, headers=_admin(first))
    assert set_.status_code == 200 and set_.json()["count"] == 1, set_.text
    assert client.get("/_admin/faults", headers=ADMIN).json()["rate"] == 0  # the server's: untouched
    assert client.get("/api/sows", headers=bearer(second["token"])).status_code == 200
    assert client.get("/api/sows", headers=bearer(first["token"])).status_code == 503
    assert client.get("/api/sows", headers=bearer(first["token"])).status_code == 200  # count used up
    # Stored, counted down and read back, whole milliseconds stay whole numbers.
    assert client.get("/_admin/faults", headers=_admin(first)).text == (
        '{"latencyMs":[2,4],"rate":1.0,"status":503,"mode":"error","routes":[],"count":0}'
    )
    assert [entry.split()[0] for entry in _logged(client, second)] == ["GET"]
    verified = client.post(
        "/_admin/requests/verify",
        json={"method": "GET", "path": "/api/sows", "exactly": 2},
        headers=_admin(first),
    )
    assert verified.status_code == 200, verified.text
    cleared = client.delete("/_admin/requests", headers=_admin(first))
    assert cleared.json()["deleted"] == 2 and len(_logged(client, second)) == 1


def test_a_sandbox_loads_only_its_own_records(client: httpx.Client) -> None:
    sandbox = _sandbox(client)
    org, project = sandbox["organizationId"], str(uuid.uuid4())
    own = {
        "organizations": [{"id": org, "name": "mine"}],
        "projects": [{"id": project, "organizationId": org, "name": "P"}],
        "sows": [{"id": "sow-9", "projectId": project, "title": "Nine"}],
    }
    _sow(client, _sandbox(client), "sow-9")  # another sandbox's SOW of the same id (and key)
    loaded = client.post("/_admin/dataset", json=own, headers=_admin(sandbox))
    assert loaded.status_code == 200, loaded.text
    assert loaded.json()["imported"]["sows"] == 1

    everything = client.post("/_admin/dataset", json=dataset(), headers=_admin(sandbox))
    assert everything.status_code == 403 and "organizations[0]" in everything.json()["error"]
    client.post("/_admin/dataset", json=dataset(), headers=ADMIN).raise_for_status()
    elsewhere = {"sows": [{"id": "sow-x", "projectId": m.Project.get(m.Project.organization == ORG).id}]}
    refused = client.post("/_admin/dataset", json=elsewhere, headers=_admin(sandbox))
    assert refused.status_code == 400 and "sows[0]" in refused.json()["error"], refused.text
    taken = {
        "projects": [
            {"id": m.Project.get(m.Project.organization == ORG).id, "organizationId": org, "name": "x"}
        ]
    }
    refused = client.post("/_admin/dataset", json=taken, headers=_admin(sandbox))
    assert refused.status_code == 400 and "another organization" in refused.json()["error"], refused.text
    assert m.Sow.select().where(m.Sow.organization == org).count() == 1
    replaced = client.post("/_admin/dataset?replace=true", json=own, headers=_admin(sandbox))
    assert replaced.status_code == 200, replaced.text
    exported = client.get("/_admin/dataset", headers=_admin(sandbox)).json()  # its own records only
    assert exported["organizations"] == [{"id": org, "name": org}]
    assert [sow["id"] for sow in exported["sows"]] == ["sow-9"] and exported["companies"] == []
    assert [user["id"] for user in exported["users"]] == [sandbox["userId"]]
    assert m.Sow.select().where(m.Sow.organization == ORG).count() > 0  # the server's records stay


def test_an_expired_sandbox_is_removed_with_everything_it_held(client: httpx.Client) -> None:
    doomed, kept = _sandbox(client), _sandbox(client)
    _sow(client, doomed, "sow-1", "Walls")
    saved = client.post("/_admin/checkpoints", json={"name": "base"}, headers=_admin(doomed))
    assert saved.status_code == 201
    past = datetime.datetime(2000, 1, 1)  # the wall clock decides: moved back, not waited for
    sandbox_models.Sandbox.update(expires_at=past).where(
        sandbox_models.Sandbox.organization == doomed["organizationId"]
    ).execute()
    assert client.post("/_admin/reset", headers=_admin(doomed)).status_code == 401  # expired: no access
    listed = client.get("/_admin/sandboxes", headers=ADMIN)
    assert [entry["organizationId"] for entry in listed.json()] == [kept["organizationId"]]
    org = doomed["organizationId"]
    assert m.Organization.get_or_none(m.Organization.id == org) is None
    assert m.Sow.select().where(m.Sow.organization == org).count() == 0
    assert m.ApiToken.select().where(m.ApiToken.organization == org).count() == 0
    assert m.Meta.get_or_none(m.Meta.key == f"sandbox-checkpoints:{org}") is None
    assert client.get("/api/sows", headers=bearer(doomed["token"])).status_code == 401
    assert client.get("/api/sows", headers=bearer(kept["token"])).status_code == 200


def test_deleting_a_sandbox_and_the_bounds_of_making_one(
    client: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    sandbox = _sandbox(client)
    assert "adminToken" not in client.get("/_admin/sandboxes", headers=ADMIN).text
    stored = sandbox_models.Sandbox.get(sandbox_models.Sandbox.organization == sandbox["organizationId"])
    assert sandbox["adminToken"] not in (stored.admin_token_hash, stored.hint)
    deleted = client.delete(f"/_admin/sandboxes/{sandbox['organizationId']}", headers=ADMIN)
    assert deleted.status_code == 200 and deleted.json() == {"deleted": sandbox["organizationId"]}
    assert client.delete(f"/_admin/sandboxes/{sandbox['organizationId']}", headers=ADMIN).status_code == 404
    for ttl, status in (("abc", 400), ("8d", 400), (0, 400), (True, 400), ("7d", 201)):
        made = client.post("/_admin/sandboxes", json={"ttl": ttl}, headers=ADMIN)
        assert made.status_code == status, (ttl, made.text)
        if status == 400:
            assert made.json()["error"].startswith("ttl:")
    monkeypatch.setattr(sandboxes, "MAX_SANDBOXES", 2)
    assert client.post("/_admin/sandboxes", json={}, headers=ADMIN).status_code == 201
    full = client.post("/_admin/sandboxes", json={}, headers=ADMIN)
    assert full.status_code == 403 and "2 sandboxes" in full.json()["error"]


def test_an_api_request_sweeps_expired_sandboxes_at_most_once_a_minute(
    client: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    doomed, kept = _sandbox(client), _sandbox(client)
    past = datetime.datetime(2000, 1, 1)
    sandbox_models.Sandbox.update(expires_at=past).where(
        sandbox_models.Sandbox.organization == doomed["organizationId"]
    ).execute()
    monkeypatch.setattr(sandboxes, "_last_sweep", -1e9)  # a minute and more since the last sweep
    assert client.get("/api/sows", headers=bearer(kept["token"])).status_code == 200
    assert m.Organization.get_or_none(m.Organization.id == doomed["organizationId"]) is None
    # Within the minute, no request sweeps again: an expired one waits for the next sweep.
    monkeypatch.setattr(sandboxes, "_last_sweep", 1e12)  # swept "just now", whatever the clock says
    sandbox_models.Sandbox.update(expires_at=past).where(
        sandbox_models.Sandbox.organization == kept["organizationId"]
    ).execute()
    assert client.get("/api/sows", headers=bearer(kept["token"])).status_code == 200
    assert (
        sandbox_models.Sandbox.get_or_none(sandbox_models.Sandbox.organization == kept["organizationId"])
        is not None
    )


def test_checkpoints_of_a_sandbox_a_server_reset_removed_are_dropped(client: httpx.Client) -> None:
    sandbox = _sandbox(client)
    org = sandbox["organizationId"]
    _sow(client, sandbox, "sow-1", "Walls")
    database = m.database_proxy.obj
    before = set(database.get_tables())  # a shared PostgreSQL test database keeps others' tables
    assert (
        client.post("/_admin/checkpoints", json={"name": "base"}, headers=_admin(sandbox)).status_code == 201
    )
    copies = set(database.get_tables()) - before
    assert copies and all(name.startswith("sowctl_sbx_") for name in copies)
    assert client.post("/_admin/reset", headers=ADMIN).status_code == 200  # the server's: every sandbox goes
    assert client.get("/_admin/sandboxes", headers=ADMIN).json() == []
    assert m.Meta.get_or_none(m.Meta.key == f"sandbox-checkpoints:{org}") is None
    assert not copies & set(database.get_tables())


def test_a_sandbox_sees_and_resets_only_its_own_webhooks(client: httpx.Client) -> None:
    first, second = _sandbox(client), _sandbox(client)
    hooks = {}
    for sandbox in (first, second):
        made = client.post(
            "/_admin/webhooks", json={"url": "http://93.184.215.14:9/hook"}, headers=_admin(sandbox)
        )
        assert made.status_code == 201, made.text
        assert made.json()["organizationId"] == sandbox["organizationId"]  # its own, unnamed
        hooks[sandbox["organizationId"]] = made.json()["id"]
    other = {"url": "http://127.0.0.1:9/hook", "organizationId": second["organizationId"]}
    refused = client.post("/_admin/webhooks", json=other, headers=_admin(first))
    assert refused.status_code == 403 and "organizationId" in refused.text
    listed = client.get("/_admin/webhooks", headers=_admin(first)).json()
    assert [hook["id"] for hook in listed] == [hooks[first["organizationId"]]]
    theirs = hooks[second["organizationId"]]
    assert client.get(f"/_admin/webhooks/{theirs}", headers=_admin(first)).status_code == 404
    assert client.delete(f"/_admin/webhooks/{theirs}", headers=_admin(first)).status_code == 404
    assert client.get("/_admin/webhook-faults", headers=_admin(first)).status_code == 403

    assert client.post("/_admin/reset", headers=_admin(first)).status_code == 200
    assert client.get("/_admin/webhooks", headers=_admin(first)).json() == []
    kept = client.get("/_admin/webhooks", headers=_admin(second)).json()
    assert [hook["id"] for hook in kept] == [theirs]
