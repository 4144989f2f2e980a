"""Callers take turns for a worker's threads (sowctl.server.fairness): a caller who keeps
many slow requests waiting no longer puts everyone else behind all of them."""

from __future__ import annotations

import datetime
import threading
import time
from collections.abc import Callable, Hashable
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


@pytest.mark.parametrize(
    ("head", "same_as"),
    [
        (b"GET / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer one\r\n\r\n", b"authorization:   Bearer one"),
        (b"GET / HTTP/1.1\r\nx-api-key: k1\r\n\r\n", b"X-API-KEY: k1"),
    ],
)
def test_a_caller_is_its_credential_whatever_the_spelling(head: bytes, same_as: bytes) -> None:
    other = b"GET /x HTTP/1.1\r\n" + same_as + b"\r\n\r\n"
    assert caller_of(head, ("10.0.0.1", 1)) == caller_of(other, ("10.0.0.2", 2))
    another = head.replace(b"one", b"two").replace(b"k1", b"k2")
    assert caller_of(head, ("10.0.0.1", 1)) != caller_of(another, ("10.0.0.1", 1))
    digest = caller_of(head, None)
    assert isinstance(digest, bytes) and b"one" not in digest and b"k1" not in digest  # no secret kept


def test_without_a_credential_a_caller_is_its_host() -> None:
    head = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
    first: Hashable = caller_of(head, ("10.0.0.1", 5000))
    assert first == caller_of(head, ("10.0.0.1", 5001)) == "10.0.0.1"
    assert first != caller_of(head, ("10.0.0.2", 5000))


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
    head = b"POST /api/items HTTP/1.1\r\nAuthorization: Bearer one\r\n\r\n"
    assert caller_of_environ({"HTTP_AUTHORIZATION": "Bearer one"}) == caller_of(head, ("h", 1))
    keyed = b"GET / HTTP/1.1\r\nx-api-key: k1\r\n\r\n"
    assert caller_of_environ({"HTTP_X_API_KEY": "k1"}) == caller_of(keyed, None)
    assert caller_of_environ({"REMOTE_ADDR": "10.0.0.9"}) == "10.0.0.9"
