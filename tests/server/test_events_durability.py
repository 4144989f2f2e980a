"""An event is committed with its write: a server killed (SIGKILL, master and workers) right
after answering loses none of the events of the writes it acknowledged, and records none for a
write that did not commit."""

from __future__ import annotations

import threading

import httpx
import pytest

from sowctl.services import demo_data
from tests.support.server import Server, seed_demo

pytestmark = pytest.mark.database  # the outbox row and the item commit together on each backend

ADMIN_TOKEN = "durability-admin-token-0123456789"


def _creates_until_killed(server: Server, token: str, acknowledged: list[str], stop: threading.Event) -> None:
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=server.url, headers=headers, timeout=10) as client:
        number = 0
        while not stop.is_set():
            number += 1
            try:
                answer = client.post(
                    f"/api/sow/{demo_data.DEMO_SOW}/items",
                    json={"title": f"Killed {number}", "type": "requirement"},
                )
            except httpx.TransportError:
                return  # the server is gone
            if answer.status_code == 201:
                acknowledged.append(answer.json()["id"])


def test_a_sigkill_after_commits_loses_no_event_of_an_acknowledged_write(db_url: str) -> None:
    token, _key = seed_demo(db_url)
    first = Server(db_url, "--admin-token", ADMIN_TOKEN)
    acknowledged: list[str] = []
    stop = threading.Event()
    writer = threading.Thread(target=_creates_until_killed, args=(first, token, acknowledged, stop))
    writer.start()
    try:
        while len(acknowledged) < 20 and writer.is_alive():
            writer.join(0.01)
        first.kill()  # mid-flight: the writer's next request may or may not have committed
    finally:
        stop.set()
        writer.join(15)
    assert len(acknowledged) >= 20

    second = Server(db_url, "--admin-token", ADMIN_TOKEN)
    try:
        admin = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
        page = second.client.get(
            "/_admin/events", params={"limit": 1000, "type": "item.created"}, headers=admin
        ).json()
        recorded = [event["resourceId"] for event in page["events"]]
        assert set(acknowledged) <= set(recorded)  # every acknowledged create has its event
        bearer = {"Authorization": f"Bearer {token}"}
        stored = {
            item
            for item in recorded
            if second.client.get(f"/api/items/{item}", headers=bearer).status_code == 200
        }
        assert set(recorded) <= stored  # and no event stands for a write that did not commit
        assert len(recorded) in (len(acknowledged), len(acknowledged) + 1)  # at most the one in flight
    finally:
        second.stop()
