"""Reset, replace and restore during writes: atomic for every request, never a 500.

A real ``sowctl serve --workers 2`` (so the gate must hold across processes as well
as threads); writers create items as fast as they can while the admin API resets,
replaces the dataset and restores a checkpoint. Every answer must be one a client
can expect after its data or credentials vanished (201, 401, 404), and the request
log must keep one row per request once the storm is over (PostgreSQL restarted its
sequences under concurrent log writes and lost rows). Bounded: ROUNDS admin changes.
"""

from __future__ import annotations

import threading
from collections import Counter

import httpx
import pytest

from tests.support.doubles import ADMIN, ADMIN_TOKEN, ORG, SOW, bearer, dataset
from tests.support.server import Server

# slow: real servers in subprocesses: the full suite (.ci/run), not the quick loop;
# database: the gate holds across processes with each backend's locks
pytestmark = [pytest.mark.slow, pytest.mark.database]

ROUNDS = 12
WRITERS = 4
ACCEPTABLE = {201, 401, 404}


def _token(admin: httpx.Client) -> str:
    issued = admin.post("/_admin/tokens", json={"userId": "user-ada", "organizationId": ORG})
    assert issued.status_code == 201, issued.text
    return issued.json()["token"]


def test_reset_replace_and_restore_during_writes_never_fail_a_request(db_url: str) -> None:
    server = Server(db_url, "--workers", "2", "--admin-token", ADMIN_TOKEN)
    statuses: Counter[int] = Counter()
    bodies: list[str] = []
    stop = threading.Event()
    current = {"token": ""}
    try:
        admin = httpx.Client(base_url=server.url, headers=ADMIN, timeout=30)
        admin.post("/_admin/dataset", json=dataset()).raise_for_status()
        admin.post("/_admin/checkpoints", json={"name": "start"}).raise_for_status()
        current["token"] = _token(admin)

        def write() -> None:
            with httpx.Client(base_url=server.url, timeout=30) as client:
                n = 0
                while not stop.is_set():
                    n += 1
                    response = client.post(
                        f"/api/sow/{SOW}/items",
                        json={"title": f"w{n}", "type": "requirement"},
                        headers=bearer(current["token"]),
                    )
                    statuses[response.status_code] += 1
                    if response.status_code not in ACCEPTABLE:
                        bodies.append(response.text)

        threads = [threading.Thread(target=write) for _ in range(WRITERS)]
        for thread in threads:
            thread.start()
        try:
            for round_ in range(ROUNDS):
                change = round_ % 3
                if change == 0:
                    admin.post("/_admin/reset").raise_for_status()
                    admin.post("/_admin/dataset", json=dataset()).raise_for_status()
                elif change == 1:
                    admin.post(
                        "/_admin/dataset", params={"replace": "true"}, json=dataset()
                    ).raise_for_status()
                else:
                    admin.post("/_admin/checkpoints/start/restore").raise_for_status()
                current["token"] = _token(admin)
        finally:
            stop.set()
            for thread in threads:
                thread.join(timeout=30)
        assert bodies == [], bodies[:3]
        assert set(statuses) <= ACCEPTABLE, statuses
        assert statuses[201] > 0, statuses

        # After the storm: one log row per request, none lost to a sequence restart.
        admin.post("/_admin/reset").raise_for_status()
        admin.post("/_admin/dataset", json=dataset()).raise_for_status()
        token = _token(admin)
        with httpx.Client(base_url=server.url, timeout=30) as client:
            for n in range(20):
                client.get(f"/api/sow/{SOW}/items", params={"n": n}, headers=bearer(token))
        log = admin.get("/_admin/requests", params={"limit": 1000}).json()
        assert [entry["query"]["n"] for entry in log] == [str(n) for n in range(20)]
    finally:
        server.stop()
        assert not any("Traceback" in line for line in server.stderr_lines), server.stderr_lines[-20:]


def test_the_gate_lets_requests_in_flight_finish_and_holds_new_ones(tmp_path) -> None:
    """In flight: shared holders finish before the exclusive one; later arrivals wait behind it."""
    import peewee as pw

    from sowctl.server.testdouble.reset_gate import Gate

    gate = Gate(pw.SqliteDatabase(str(tmp_path / "gate.db")))
    order: list[str] = []
    in_flight = threading.Event()
    release = threading.Event()

    def request(name: str, hold: threading.Event | None = None) -> None:
        with gate.shared():
            if hold is not None:
                in_flight.set()
                hold.wait(10)
            order.append(name)

    def reset() -> None:
        with gate.exclusive():
            order.append("reset")

    first = threading.Thread(target=request, args=("in flight", release))
    first.start()
    assert in_flight.wait(10)
    resetter = threading.Thread(target=reset)
    resetter.start()
    while not gate._threads._writers_waiting:  # the reset is queued behind the request
        threading.Event().wait(0.01)
    late = threading.Thread(target=request, args=("arrived later",))
    late.start()
    threading.Event().wait(0.1)
    assert order == []  # the reset waits for the request; the late request waits for the reset
    release.set()
    for thread in (first, resetter, late):
        thread.join(10)
    assert order == ["in flight", "reset", "arrived later"]
    assert (tmp_path / "gate.db-gate").exists()  # the lock other worker processes share
