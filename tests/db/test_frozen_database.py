"""A frozen PostgreSQL (SIGSTOP, a partition): 503 with Retry-After within the deadline, then
recovery, and nothing acknowledged lost.

The shared PostgreSQL is never stopped: ``sowctl serve`` reaches it through a TCP proxy
in this test that can freeze, i.e. stop forwarding in both directions without closing
anything, which is what a stopped server looks like from the client's side.
"""

from __future__ import annotations

import os
import selectors
import socket
import threading
import time
from collections.abc import Iterator
from urllib.parse import urlsplit, urlunsplit

import httpx
import pytest

from sowctl.services import demo_data
from sowctl.storage.database import open_database
from tests.support.server import Server, seed_demo

pytestmark = pytest.mark.skipif(
    not os.environ.get("SOWCTL_TEST_DB", "sqlite").startswith("postgres"),
    reason="PostgreSQL only (set SOWCTL_TEST_DB=postgresql://...)",
)

DB_TIMEOUT = 2  # SOWCTL_DB_TIMEOUT for the server under test
# Generous guard against a hang (what the test is about), not a speed assertion.
NO_HANG = 30


class FreezableProxy:
    """Forwards 127.0.0.1:port to the database; ``frozen`` stops every byte both ways."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.frozen = threading.Event()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.listener, selectors.EVENT_READ)
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stopping.is_set():
            for key, _ in self.selector.select(timeout=0.05):
                if key.fileobj is self.listener:
                    client, _ = self.listener.accept()
                    server = socket.create_connection(self.upstream)
                    self.selector.register(client, selectors.EVENT_READ, server)
                    self.selector.register(server, selectors.EVENT_READ, client)
                elif not self.frozen.is_set():
                    self._forward(key.fileobj, key.data)
            if self.frozen.is_set():
                time.sleep(0.05)  # unread bytes keep the sockets readable: do not spin

    def _forward(self, source: socket.socket, target: socket.socket) -> None:
        try:
            data = source.recv(65536)
            if data:
                target.sendall(data)
                return
        except OSError:
            pass
        for sock in (source, target):
            try:
                self.selector.unregister(sock)
            except (KeyError, ValueError):
                pass
            sock.close()

    def close(self) -> None:
        self.stopping.set()
        self.thread.join(timeout=5)
        for key in list(self.selector.get_map().values()):
            key.fileobj.close()
        self.selector.close()


@pytest.fixture
def proxy(db_url: str) -> Iterator[FreezableProxy]:
    parts = urlsplit(db_url)
    running = FreezableProxy((parts.hostname or "127.0.0.1", parts.port or 5432))
    yield running
    running.close()


def _through(db_url: str, port: int) -> str:
    parts = urlsplit(db_url)
    return urlunsplit(parts._replace(netloc=f"{parts.username or 'postgres'}@127.0.0.1:{port}"))


def test_a_frozen_database_answers_503_in_time_and_recovers_losing_nothing(db_url, proxy) -> None:
    """Before: with PostgreSQL stopped, every request and /readyz hung without end."""
    token, key = seed_demo(db_url)
    server = Server(
        _through(db_url, proxy.port),
        "--threads",
        "4",
        env={"SOWCTL_DB_TIMEOUT": str(DB_TIMEOUT), "SOWCTL_DB_HEALTH_TIMEOUT": "1"},
    )
    auth = {"Authorization": f"Bearer {token}"}
    items = f"/api/sow/{demo_data.DEMO_SOW}/items"
    acknowledged: list[str] = []
    try:
        with httpx.Client(base_url=server.url, timeout=NO_HANG, headers=auth) as client:
            assert client.get("/readyz").status_code == 200
            created = client.post(items, json={"title": "before", "type": "task_item"})
            assert created.status_code == 201
            acknowledged.append(created.json()["id"])

            proxy.frozen.set()
            health = client.get("/readyz")
            assert health.status_code == 503 and health.headers["Retry-After"]
            read = client.get(items)
            assert read.status_code == 503, read.text
            assert read.headers["Retry-After"] and read.json()["error"]  # Group A's envelope
            write = client.post(items, json={"title": "during", "type": "task_item"})
            assert write.status_code == 503, write.text
            assert write.headers["Retry-After"]
            external = {"x-api-key": key, "organization-id": demo_data.DEMO_ORG}
            group_b = client.get(
                f"/api/external/purchase-order-options?project_id={demo_data.DEMO_PROJECT_ID}",
                headers={**external, "company-id": demo_data.DEMO_COMPANY},
            )
            assert group_b.status_code == 503 and group_b.headers["Retry-After"], group_b.text
            assert set(group_b.json()) == {"error"}
            group_c = client.get("/projects")
            assert group_c.status_code == 503 and group_c.headers["Retry-After"], group_c.text
            assert group_c.json()["code"] == "INTERNAL_SERVER_ERROR"  # documented; the status says 503

            proxy.frozen.clear()
            deadline = time.monotonic() + NO_HANG
            while client.get("/readyz").status_code != 200:
                assert time.monotonic() < deadline, "no recovery after the database came back"
                time.sleep(0.2)
            created = client.post(items, json={"title": "after", "type": "task_item"})
            assert created.status_code == 201, created.text
            acknowledged.append(created.json()["id"])
    finally:
        server.stop()
    assert not any("Traceback" in line for line in server.stderr_lines)

    database = open_database(db_url)
    try:
        from sowctl.storage import models as m

        stored = {row.id for row in m.Item.select(m.Item.id).where(m.Item.id.in_(acknowledged))}
        assert stored == set(acknowledged)
        # The write refused with 503 may have been stored or not; never half of it.
        assert m.Item.select().where(m.Item.title == "during").count() <= 1
    finally:
        database.close()
