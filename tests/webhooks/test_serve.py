"""Webhooks of a real ``sowctl serve``: a commit reaches a receiver signed, retries wait for the
service clock that /_admin/clock sets (whichever worker took it), and two servers on one
database deliver each attempt once."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.cli import run_main
from tests.support.doubles import ADMIN, ADMIN_TOKEN, ORG, SOW, bearer, load
from tests.support.receiver import Receiver, verify_standard_webhooks
from tests.support.server import Server, seed_demo

pytestmark = pytest.mark.database


def create_item(url: str, token: str, title: str) -> dict[str, Any]:
    with httpx.Client(base_url=url, timeout=10) as fresh:  # its own connection: any worker
        created = fresh.post(
            f"/api/sow/{SOW}/items", json={"title": title, "type": "task_item"}, headers=bearer(token)
        )
    assert created.status_code == 201, created.text
    return created.json()


def subscribe(client: httpx.Client, url: str, **fields: Any) -> dict[str, Any]:
    created = client.post(
        "/_admin/webhooks", json={"url": url, "organizationId": ORG, **fields}, headers=ADMIN
    )
    assert created.status_code == 201, created.text
    return created.json()


def wait_until(check: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "gave up waiting"
        time.sleep(0.05)


def test_a_commit_reaches_the_receiver_signed_and_is_logged(serve: Any, receiver: Receiver) -> None:
    server: Server = serve(None, "--workers", "2", "--admin-token", ADMIN_TOKEN)
    token = load(server.client)["token"]
    hook = subscribe(server.client, receiver.url)
    assert hook["secret"].startswith("whsec_")
    item = create_item(server.url, token, "Walls")
    (got,) = receiver.wait_for(1)
    assert verify_standard_webhooks(hook["secret"], got)
    assert got.event["resourceId"] == item["id"] and got.event["data"] == item
    listed = server.client.get("/_admin/webhooks", headers=ADMIN).json()
    assert [entry["id"] for entry in listed] == [hook["id"]] and "secret" not in listed[0]

    def logged() -> list[dict[str, Any]]:
        return server.client.get(f"/_admin/webhooks/{hook['id']}/deliveries", headers=ADMIN).json()

    wait_until(lambda: len(logged()) == 1)
    (entry,) = logged()
    assert (entry["eventId"], entry["status"], entry["outcome"]) == (got.event["id"], 200, "delivered")
    metrics = server.client.get("/metrics").text
    assert 'sowctl_event_deliveries_total{outcome="delivered"} 1.0' in metrics


def test_retries_wait_for_the_service_clock_and_pause(serve: Any, receiver: Receiver) -> None:
    server: Server = serve(None, "--workers", "2", "--admin-token", ADMIN_TOKEN)
    client = server.client
    token = load(client)["token"]
    frozen = client.post("/_admin/clock", json={"now": "2030-01-01T00:00:00Z"}, headers=ADMIN)
    assert frozen.status_code == 200
    receiver.default = 500
    hook = subscribe(client, receiver.url, maxFailures=2)
    create_item(server.url, token, "Walls")
    receiver.wait_for(1)

    def shown() -> dict[str, Any]:
        return client.get(f"/_admin/webhooks/{hook['id']}", headers=ADMIN).json()

    wait_until(lambda: shown()["consecutiveFailures"] == 1)
    assert shown()["nextAttemptAt"] == "2030-01-01T00:00:05Z" and shown()["status"] == "active"
    assert len(receiver.received) == 1  # the clock stands still: the retry is not due
    moved = client.post("/_admin/clock", json={"now": "2030-01-01T00:00:05Z"}, headers=ADMIN)
    assert moved.status_code == 200
    receiver.wait_for(2)
    wait_until(lambda: shown()["status"] == "paused")
    receiver.default = 200
    resumed = client.post(f"/_admin/webhooks/{hook['id']}/resume", headers=ADMIN)
    assert resumed.status_code == 200 and resumed.json()["status"] == "active"
    got = receiver.wait_for(3)
    assert got[2].body == got[0].body
    redelivered = client.post(
        f"/_admin/webhooks/{hook['id']}/redeliver", json={"eventId": got[0].event["id"]}, headers=ADMIN
    )
    assert redelivered.status_code == 202
    assert receiver.wait_for(4)[3].body == got[0].body


@pytest.mark.slow
def test_two_servers_on_one_database_deliver_each_event_once(
    serve: Any, receiver: Receiver, db_url: str
) -> None:
    database = db_url  # SQLite, or PostgreSQL in the suite's PostgreSQL pass
    first: Server = serve(database, "--workers", "2", "--admin-token", ADMIN_TOKEN)
    second: Server = serve(database, "--workers", "2", "--admin-token", ADMIN_TOKEN)
    token = load(first.client)["token"]
    hook = subscribe(first.client, receiver.url)
    titles = [f"Item {n}" for n in range(12)]
    for index, title in enumerate(titles):
        create_item((first, second)[index % 2].url, token, title)
    got = receiver.wait_for(len(titles))
    assert [r.event["data"]["title"] for r in got] == titles  # in commit order, each once
    for server in (first, second):
        assert create_item(server.url, token, "Last")
    receiver.wait_for(len(titles) + 2)
    path = f"/_admin/webhooks/{hook['id']}/deliveries"

    def logged() -> list[dict[str, Any]]:
        return second.client.get(path, params={"limit": 100}, headers=ADMIN).json()

    wait_until(lambda: len(logged()) >= len(titles) + 2)
    attempts = [entry["eventId"] for entry in logged()]
    assert len(attempts) == len(set(attempts)) == len(titles) + 2  # one attempt per event, all told
    assert len(receiver.received) == len(titles) + 2


def test_a_subscription_made_on_the_database_is_delivered_by_a_plain_server(
    serve: Any, receiver: Receiver, tmp_path: Path
) -> None:
    database = tmp_path / "plain.db"
    token, _ = seed_demo(str(database))
    created = run_main(
        "--db", str(database), "webhooks", "create", "--url", receiver.url, "--org", ORG, "--json"
    )
    assert created.exit_code == 0, created.stderr
    hook = created.json()
    server: Server = serve(database)  # no admin API: deliveries all the same
    item = create_item(server.url, token, "Walls")
    (got,) = receiver.wait_for(1)
    assert verify_standard_webhooks(hook["secret"], got) and got.event["resourceId"] == item["id"]


def test_a_restored_checkpoint_brings_back_subscriptions_that_deliver(serve: Any, receiver: Receiver) -> None:
    server: Server = serve(None, "--admin-token", ADMIN_TOKEN)
    token = load(server.client)["token"]
    hook = subscribe(server.client, receiver.url)
    saved = server.client.post("/_admin/checkpoints", json={"name": "hooked"}, headers=ADMIN)
    assert saved.status_code == 201
    create_item(server.url, token, "Walls")
    receiver.wait_for(1)
    restored = server.client.post("/_admin/checkpoints/hooked/restore", headers=ADMIN)
    assert restored.status_code == 200
    create_item(server.url, token, "Roof")  # the restored subscription delivers at once
    got = receiver.wait_for(2)
    assert got[1].event["data"]["title"] == "Roof"
    assert server.client.get(f"/_admin/webhooks/{hook['id']}", headers=ADMIN).json()["status"] == "active"
