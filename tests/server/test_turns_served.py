"""Callers take turns for a worker's threads (sowctl.engine.turns), end to end: a caller who
keeps many slow requests waiting no longer puts everyone else behind all of them."""

from __future__ import annotations

import datetime
import threading
from pathlib import Path

import httpx
import pytest

from sowctl.services import credentials, demo_data
from sowctl.services.dataset import import_dataset
from sowctl.storage import models as m
from sowctl.storage.database import open_database
from tests.support.server import Server


@pytest.mark.slow
def test_another_callers_request_does_not_wait_behind_one_callers_queue(tmp_path: Path) -> None:
    """``serve --threads 2`` with a second of latency on ``GET /api/sows``: one token sends 8 of
    those at once, then another token lists items. In one line the list waited for all 8
    (about 4 s, answered last); in turns it takes the first thread that frees."""
    path = tmp_path / "turns.db"
    open_database(str(path))
    import_dataset(demo_data.demo_dataset(datetime.date.today()))
    busy, other = (
        credentials.create_token(demo_data.DEMO_USER, demo_data.DEMO_ORG, "member").secret for _ in range(2)
    )
    m.database_proxy.obj.close()
    server = Server(path, "--threads", "2", "--latency", "1000ms", "--fault-route", "GET /api/sows")
    finished: list[str] = []
    lock = threading.Lock()

    def fetch(name: str, url: str, token: str) -> None:
        reply = httpx.get(server.url + url, headers={"Authorization": f"Bearer {token}"}, timeout=30)
        with lock:
            finished.append(f"{name} {reply.status_code}")

    try:
        slow = [threading.Thread(target=fetch, args=("sows", "/api/sows", busy)) for _ in range(8)]
        for thread in slow:
            thread.start()
        slow[0].join(timeout=0.5)  # let them all reach the worker first (sequencing, not an assertion)
        fetch("items", f"/api/sow/{demo_data.DEMO_SOW}/items", other)
        for thread in slow:
            thread.join(timeout=30)
    finally:
        server.stop()
    assert sorted(finished) == ["items 200"] + ["sows 200"] * 8
    assert finished.index("items 200") <= 3, finished  # 8th in one line; now with the first freed thread
