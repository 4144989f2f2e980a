"""Each credential's share of SQLite's write lock (``sowctl.storage.lock_share``): a caller
whose writes have held the lock more than its share waits, or past the wait is refused with
429 and ``Retry-After`` in its group's envelope, having written nothing, while another
caller's writes go on; alone, it is never held back.

SQLite only (PostgreSQL's organizations each have a lock of their own): these tests make
their own SQLite file whatever ``SOWCTL_TEST_DB`` says. The clock of the buckets is a fake
one where the test says when time passes; the holds charged over HTTP are measured, and
only their being above zero matters.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from sowctl.operations import get as get_op
from sowctl.server.callers import caller_key
from sowctl.services import credentials, demo_data
from sowctl.storage import lock_share
from sowctl.storage import models as m
from sowctl.storage.lock_share import Budget, LockShare, WriteShareSpent
from tests.support.raw_wsgi import Env, dump, make_env

A, B = b"caller-a", b"caller-b"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_caller_past_its_share_waits_for_the_refill_while_another_writes(tmp_path: Path) -> None:
    clock = Clock()
    share = LockShare(
        Budget(burst=1.0, share=0.25, window=1.0, wait=1.0), str(tmp_path / "db-lockshare"), clock
    )
    assert share.admit(A) == 0  # a full bucket
    share.charge(A, 1.1)  # its holds took the burst and 0.1 s more
    assert share.level(A) == pytest.approx(-0.1)
    assert share.admit(A) == 0  # alone: the whole lock is its own
    assert share.admit(B) == 0  # another caller asks for the lock
    assert share.admit(A) == pytest.approx(0.4)  # 0.1 s of debt at a quarter-second per second
    assert share.admit(B) == 0  # B, within its share, never waits for A's debt
    clock.now += 2.0  # B quiet for longer than the window: A is alone again
    share.charge(A, 1.0)
    assert share.admit(A) == 0


def test_a_caller_whose_debt_is_longer_than_the_wait_is_refused_with_retry_after(tmp_path: Path) -> None:
    clock = Clock()
    share = LockShare(
        Budget(burst=1.0, share=0.25, window=1.0, wait=1.0), str(tmp_path / "db-lockshare"), clock
    )
    share.charge(A, 1.6)  # 0.6 s of debt: 2.4 s to refill
    share.admit(B)
    with pytest.raises(WriteShareSpent) as refused:
        share.admit(A)
    assert refused.value.status == 429 and refused.value.retry_after == 3
    clock.now += 2.0  # refilled to -0.1: waits 0.4 s now
    share.admit(B)
    assert share.admit(A) == pytest.approx(0.4)


def test_the_processes_of_one_server_share_the_buckets(tmp_path: Path) -> None:
    """Two maps of one file, as a worker and its helper process have: a debt run up in one
    holds in the other, and a caller seen by one is another caller for the other."""
    clock = Clock()
    path = str(tmp_path / "db-lockshare")
    worker, helper = LockShare(Budget(), path, clock), LockShare(Budget(), path, clock)
    helper.charge(A, 1.2)
    assert worker.level(A) == pytest.approx(-0.2)
    worker.admit(B)
    assert helper.admit(A) == pytest.approx(0.8)


def test_a_share_of_zero_holds_nobody_back(tmp_path: Path) -> None:
    share = LockShare(Budget(share=0.0), str(tmp_path / "db-lockshare"), Clock())
    share.charge(A, 100.0)
    share.admit(B)
    assert share.admit(A) == 0


@pytest.fixture
def env(tmp_path: Path) -> Iterator[Env]:
    """The server in process on a SQLite file, with a burst of a tenth of a second that is
    never refilled (a share of a millionth) and a window so long that a caller stays active
    all test long."""
    served = make_env(str(tmp_path / "share.db"))
    lock_share.enable(Budget(burst=0.1, share=1e-6, window=3600.0, wait=1.0))
    try:
        yield served
    finally:
        lock_share.enable(None)
        m.database_proxy.obj.close()


def _other_credential(env: Env) -> Env:
    token = credentials.create_token(demo_data.DEMO_USER, demo_data.DEMO_ORG, "member").secret
    return Env(env.app, token, env.api_key, env.errors)


def test_a_credential_looping_heavy_writes_is_refused_once_past_its_lock_share(env: Env) -> None:
    other = _other_credential(env)
    reorder = get_op("items.reorder")
    # The other credential writes (a millisecond or two of its tenth of a second): it is active.
    assert other.send(get_op("items.create"), body={"title": "B's", "type": "task_item"}).status == 201
    statuses = []
    while len(statuses) < 2000 and 429 not in statuses:  # each reorder's hold is charged
        statuses.append(env.send(reorder).status)
    assert statuses[-1] == 429 and set(statuses[:-1]) == {200}, statuses
    before = dump()
    refused = env.send(reorder)
    assert refused.status == 429, refused.body
    assert int(refused.headers["retry-after"]) >= 1
    assert set(refused.json()) == {"error"} and "write lock" in refused.json()["error"]
    assert refused.headers["x-error-code"] == "rate_limited"
    created = env.send(get_op("items.create"), body={"title": "A's", "type": "task_item"})
    assert created.status == 429  # every write of that credential, not only heavy ones
    assert dump() == before  # refused before the lock: nothing written
    # The other credential, within its share, keeps writing; reads are never held back.
    assert other.send(get_op("items.create"), body={"title": "B's too", "type": "task_item"}).status == 201
    assert env.send(get_op("items.list"), params={"sowId": demo_data.DEMO_SOW}).status == 200


def test_a_credential_alone_is_never_held_back(env: Env) -> None:
    reorder = get_op("items.reorder")
    statuses = []
    buckets = lock_share.of(m.database_proxy.obj)
    assert buckets is not None
    caller = caller_key("/api/sow", f"Bearer {env.token}", None, "127.0.0.1")
    while len(statuses) < 2000 and buckets.level(caller) >= 0:
        statuses.append(env.send(reorder).status)
    statuses += [env.send(reorder).status for _ in range(3)]  # past its share, and alone
    assert set(statuses) == {200} and buckets.level(caller) < 0
