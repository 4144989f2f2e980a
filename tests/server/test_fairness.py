"""Callers take turns for a worker's threads (sowctl.server.fairness): a caller who keeps
many slow requests waiting no longer puts everyone else behind all of them."""

from __future__ import annotations

import datetime
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from sowctl import demo_data
from sowctl import models as m
from sowctl.db import open_database
from sowctl.errors import ServiceUnavailable
from sowctl.server.fairness import TakingTurns, caller_of, caller_of_environ
from sowctl.server.slots import Slots
from sowctl.services import credentials
from sowctl.services.dataset import import_dataset
from tests.support.server import Server


def _wait_until(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 10
    while not condition():
        assert time.monotonic() < deadline, "the pool did not get there"
        time.sleep(0.005)


def test_a_freed_thread_goes_to_the_caller_with_fewest_running() -> None:
    turns = TakingTurns()
    started: list[str] = []
    gates: dict[str, threading.Event] = {}

    def add(caller: str, name: str, pool: ThreadPoolExecutor) -> None:
        gates[name] = threading.Event()
        turns.add(caller, lambda: (started.append(name), gates[name].wait(10)))
        pool.submit(turns.run_next)

    with ThreadPoolExecutor(2) as pool:
        for name in ("a1", "a2", "a3", "a4"):
            add("A", name, pool)
        _wait_until(lambda: len(started) == 2)
        add("B", "b1", pool)
        add("B", "b2", pool)
        assert started == ["a1", "a2"] and turns.waiting() == 4  # no thread free
        for finished, expected in (("a1", "b1"), ("a2", "a3"), ("b1", "b2")):
            count = len(started)
            gates[finished].set()
            _wait_until(lambda count=count: len(started) > count)
            assert started[-1] == expected, started  # A ran one and B none: B first, though A came first
        for gate in gates.values():
            gate.set()
    assert started == ["a1", "a2", "b1", "a3", "b2", "a4"] and turns.waiting() == 0


def test_a_callers_own_requests_keep_their_order() -> None:
    turns = TakingTurns()
    started: list[int] = []
    for n in range(5):
        turns.add("A", lambda n=n: started.append(n))
    for _ in range(5):
        turns.run_next()
    assert started == [0, 1, 2, 3, 4] and turns.waiting() == 0


HOST = ("10.0.0.1", 5000)


def _request(path: str, *headers: str, body: bytes = b"") -> bytes:
    lines = [f"GET {path} HTTP/1.1", "Host: x", *headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


@pytest.mark.parametrize(
    "spelling", ["Authorization: bearer T", "AUTHORIZATION:   BEARER   T  ", "authorization:\tBearer T"]
)
def test_a_token_is_one_caller_however_its_header_is_spelt(spelling: str) -> None:
    reference = caller_of(_request("/api/sows", "Authorization: Bearer T"), HOST)
    assert caller_of(_request("/api/sows", spelling), ("10.0.0.2", 1)) == reference
    assert caller_of(_request("/api/sows", "Authorization: Bearer U"), HOST) != reference
    secret = caller_of(_request("/api/sows", "Authorization: Bearer sowt_abcdefghijklmnop"), HOST)
    assert isinstance(secret, bytes) and len(secret) == 16 and b"abcdefghijkl" not in secret  # a digest


@pytest.mark.parametrize("junk", ["Authorization: junk1", "Authorization: Bearer junk2", "Authorization: x"])
def test_an_api_key_is_one_caller_whatever_authorization_comes_with_it(junk: str) -> None:
    """Group B authenticates by ``x-api-key`` alone: ``Authorization`` values do not make a
    key many callers (a key holding every report slot that way was found by an audit)."""
    path = "/api/external/purchase-orders"
    reference = caller_of(_request(path, "x-api-key: K"), HOST)
    assert caller_of(_request(path, junk, "X-API-KEY:  K "), HOST) == reference
    environ = {"PATH_INFO": path, "HTTP_AUTHORIZATION": junk.split(": ", 1)[1], "HTTP_X_API_KEY": "K"}
    assert caller_of_environ(environ) == reference  # the worker and the application agree
    assert caller_of(_request(path, "x-api-key: L"), HOST) != reference


def test_without_a_credential_a_caller_is_its_host() -> None:
    plain = _request("/healthz")
    assert caller_of(plain, ("10.0.0.1", 5000)) == caller_of(plain, ("10.0.0.1", 5001)) == "10.0.0.1"
    assert caller_of(plain, ("10.0.0.2", 5000)) == "10.0.0.2"
    # A credential of the other group's kind, or in the body, names no caller.
    assert caller_of(_request("/api/sows", "x-api-key: K"), HOST) == "10.0.0.1"
    assert caller_of(_request("/api/external/budget-views", "Authorization: Bearer T"), HOST) == "10.0.0.1"
    assert caller_of(_request("/healthz", body=b"\r\nAuthorization: Bearer T\r\n"), HOST) == "10.0.0.1"


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


def test_one_caller_holds_all_slots_but_one_and_another_gets_the_last() -> None:
    slots = Slots(3, wait=0.05, busy_message="busy")
    slots.acquire("A")
    slots.acquire("A")
    with pytest.raises(ServiceUnavailable):
        slots.acquire("A")  # its share is taken and none of its own finished within the wait
    slots.acquire("B")  # the slot kept for everyone else
    slots.release(caller="A")
    slots.acquire("A")  # one of its own finished: its share has room again
    with pytest.raises(ServiceUnavailable):
        slots.acquire("C")  # every slot is held now
    for caller in ("A", "A", "B"):
        slots.release(caller=caller)
    with slots.held("C"), slots.held("C"):
        pass
    slots.acquire("A")
    slots.acquire("A")  # all three free again: nothing of the refusals was kept


def test_a_single_slot_is_everyones() -> None:
    slots = Slots(1, wait=0.05, busy_message="busy")
    with slots.held("A"), pytest.raises(ServiceUnavailable):
        slots.acquire("B")
    with slots.held("B"):
        pass


def test_the_application_sees_the_same_caller_as_the_worker() -> None:
    token = {"PATH_INFO": "/api/sows", "HTTP_AUTHORIZATION": "bearer  one"}
    assert caller_of_environ(token) == caller_of(_request("/api/sows", "Authorization: Bearer one"), HOST)
    assert caller_of_environ({"PATH_INFO": "/api/sows", "REMOTE_ADDR": "10.0.0.9"}) == "10.0.0.9"
