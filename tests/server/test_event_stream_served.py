"""The changes feed's event streams under the real ``sowctl serve``: idle streams hold no
thread (the engine's Pause), a commit reaches an open stream, Last-Event-ID resumes."""

from __future__ import annotations

import json
import queue
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from sowctl.schemas.events import stream_messages
from tests.support.server import Server

pytestmark = pytest.mark.slow

ORG = "org-events"


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Server, dict[str, str], dict[str, str]]]:
    """``serve --threads 1 --admin``, an organization and two member tokens of it."""
    server = Server(tmp_path / "events.db", "--threads", "1", "--admin")
    admin = {"Authorization": f"Bearer {server.admin_token}"}
    loaded = server.client.post(
        "/_admin/dataset", json={"organizations": [{"id": ORG, "name": "E"}]}, headers=admin
    )
    assert loaded.status_code == 200, loaded.text
    tokens = [
        server.client.post("/_admin/tokens", json={"userId": f"u{n}", "organizationId": ORG}, headers=admin)
        for n in range(2)
    ]
    members = [{"Authorization": f"Bearer {answer.json()['token']}"} for answer in tokens]
    try:
        yield server, members[0], members[1]
    finally:
        server.stop()


def follow(url: str, headers: dict[str, str], found: queue.Queue, opened: threading.Event) -> None:
    """Read a stream, putting each event on ``found``, until the server ends it or the test does."""
    try:
        with httpx.stream("GET", url, headers=headers, timeout=httpx.Timeout(30, read=60)) as response:
            found.put(("status", response.status_code))
            opened.set()
            for event_id, event in stream_messages(response.iter_lines()):
                found.put((event_id, event))
    except httpx.HTTPError:  # the server stopped at the test's end, mid-stream
        pass


def test_idle_streams_hold_no_thread_and_a_commit_reaches_them(served) -> None:
    server, member, other = served
    assert server.client.post("/api/sows", json={"title": "S", "id": "s1"}, headers=member).status_code == 201
    first_id = server.client.get("/api/events", headers=member).json()["lastEventId"]
    found: queue.Queue = queue.Queue()
    openers = []
    for headers in (member, other, {**member, "Last-Event-ID": first_id}):
        opened = threading.Event()
        thread = threading.Thread(
            target=follow, args=(server.url + "/api/events/stream", headers, found, opened)
        )
        thread.daemon = True
        thread.start()
        openers.append(opened)
    assert all(opened.wait(30) for opened in openers)
    # Three idle streams on a one-thread server: ordinary requests are still answered.
    for _ in range(5):
        assert server.client.get("/healthz").status_code == 200
        assert server.client.get("/api/sows", headers=member).status_code == 200
    created = server.client.post(
        "/api/sow/s1/items", json={"title": "Late", "type": "task_item"}, headers=member
    )
    assert created.status_code == 201
    seen: dict[str, list] = {"status": [], "events": []}
    while len(seen["events"]) < 5:  # two streams from the start see sow.created; each sees item.created
        key, value = found.get(timeout=30)
        seen["status" if key == "status" else "events"].append(value if key == "status" else (key, value))
    assert [event["type"] for _, event in seen["events"]].count("item.created") == 3
    assert all(
        event["data"] == created.json() for _, event in seen["events"] if event["type"] == "item.created"
    )
    resumed = [event_id for event_id, event in seen["events"] if event_id == first_id]
    assert len(resumed) == 2  # the two streams from the start saw sow.created; the resumed one did not


def test_a_fifth_stream_of_one_caller_is_refused_while_four_are_open(served) -> None:
    server, member, _ = served
    found: queue.Queue = queue.Queue()
    openers = []
    for _ in range(4):  # the default cap per caller
        opened = threading.Event()
        thread = threading.Thread(
            target=follow, args=(server.url + "/api/events/stream", member, found, opened)
        )
        thread.daemon = True
        thread.start()
        openers.append(opened)
    assert all(opened.wait(30) for opened in openers)
    refused = server.client.get("/api/events/stream", headers=member)
    assert refused.status_code == 429
    assert json.loads(refused.text)["error"].startswith("this caller has 4 event streams open")
    assert refused.headers["retry-after"] == "5"
