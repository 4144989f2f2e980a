"""An outside process holding SQLite's write lock (issue 14, item 7): reads keep being
answered, a write waits a bounded time and is then refused with 503 and ``Retry-After``
in its group's envelope, and nothing is half-written.

SQLite only: the lock is SQLite's (PostgreSQL's calls have their own deadline, see
tests/db/test_storage_faults.py), so these tests make their own SQLite file whatever
``SOWCTL_TEST_DB`` says.
"""

from __future__ import annotations

import contextlib
import datetime
import fcntl
import os
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import peewee as pw
import pytest

from sowctl.operations import get as get_op
from sowctl.services import credentials, demo_data
from sowctl.services.dataset import import_dataset
from sowctl.storage import guards
from sowctl.storage import models as m
from sowctl.storage.database import open_database, write_transaction
from tests.support.cli import run_main
from tests.support.raw_wsgi import dump, make_env
from tests.support.server import Server

NEW_ITEM = {"title": "Written while locked?", "type": "task_item"}


@contextlib.contextmanager
def outside_write_lock(path: Path) -> Iterator[sqlite3.Connection]:
    """Another process's view: a connection that holds the write lock until the block ends."""
    connection = sqlite3.connect(path, isolation_level=None, timeout=5)
    try:
        connection.execute("BEGIN IMMEDIATE")
        yield connection
        connection.execute("ROLLBACK")
    finally:
        connection.close()


def test_a_write_behind_an_outside_lock_is_refused_with_503_and_reads_go_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(guards, "LOCK_TIMEOUT_SECONDS", 0.3)
    path = tmp_path / "locked.db"
    env = make_env(str(path))
    try:
        before = dump()
        with outside_write_lock(path):
            listed = env.send(get_op("items.list"), params={"sowId": demo_data.DEMO_SOW})
            assert listed.status == 200
            assert env.send(get_op("projects.list"), query={}).status == 200
            # Every Group B request is counted against its key's rate limit, a write:
            # refused like one, in Group B's envelope.
            counted = env.send(get_op("finance.list_pos"))
            assert counted.status == 503 and counted.headers["retry-after"] == "1"
            refused = env.send(get_op("items.create"), body=NEW_ITEM)
            assert refused.status == 503, refused.body
            assert refused.headers["retry-after"] == "1"
            assert set(refused.json()) == {"error"} and "busy" in refused.json()["error"]
            order = env.send(get_op("finance.create_po"))
            assert order.status == 503 and set(order.json()) == {"error"}
            assert dump() == before  # nothing half-written
        assert env.send(get_op("items.create"), body=NEW_ITEM).status == 201  # and it passes after
    finally:
        m.database_proxy.obj.close()


def test_a_write_finding_the_write_slots_taken_and_stalled_is_refused_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The dispatcher's write slots, in process: one slot, held by a write stuck behind the
    outside lock; a second write is refused with 503 (it would otherwise hold a second
    thread), a read is answered, and the stuck write is stored once the lock goes."""
    from sowctl.server.app import create_app
    from sowctl.server.configuration import ServerSettings
    from tests.support.raw_wsgi import Env

    monkeypatch.setattr(guards, "LOCK_TIMEOUT_SECONDS", 20)
    path = tmp_path / "slots.db"
    settings = ServerSettings(write_slots=1, write_slot_wait=0.2, access_log=False)
    app = create_app(str(path), settings)
    import_dataset(demo_data.demo_dataset(datetime.date.today()))
    token = credentials.create_token(demo_data.DEMO_USER, demo_data.DEMO_ORG, "member").secret
    env = Env(app, token, credentials.create_key(demo_data.DEMO_ORG).secret)
    stuck: list[int] = []

    def stuck_write() -> None:
        try:
            stuck.append(env.send(get_op("items.create"), body={**NEW_ITEM, "title": "stuck"}).status)
        finally:
            m.database_proxy.obj.close()

    try:
        with outside_write_lock(path):
            writer = threading.Thread(target=stuck_write)
            writer.start()
            writer.join(timeout=0.5)  # let it take the slot (sequencing, not an assertion)
            second = env.send(get_op("items.create"), body={**NEW_ITEM, "title": "second"})
            assert second.status == 503 and second.headers["retry-after"] == "1"
            third = env.send(get_op("items.create"), body={**NEW_ITEM, "title": "third"})
            assert third.status == 503  # no write finished since: refused without a wait
            assert env.send(get_op("items.list"), params={"sowId": demo_data.DEMO_SOW}).status == 200
            assert stuck == []  # the first write still waits for the lock
        writer.join(timeout=30)
        assert stuck == [201]
        titles = {title for (title,) in m.Item.select(m.Item.title).tuples()}
        assert "stuck" in titles and not {"second", "third"} & titles
        assert env.send(get_op("items.create"), body={**NEW_ITEM, "title": "after"}).status == 201
    finally:
        m.database_proxy.obj.close()


def _demo_file(path: Path) -> str:
    """A demo database at ``path``, closed; the bearer token of a member."""
    open_database(str(path))
    import_dataset(demo_data.demo_dataset(datetime.date.today()))
    token = credentials.create_token(demo_data.DEMO_USER, demo_data.DEMO_ORG, "member").secret
    m.database_proxy.obj.close()
    return token


def test_a_reader_opens_a_file_whose_write_lock_another_program_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Opening a database at the current schema version takes no write lock: a CLI read
    while another program writes is answered at once (it waited for the lock, then
    failed with "cannot migrate database", before)."""
    monkeypatch.setattr(guards, "LOCK_TIMEOUT_SECONDS", 0.3)
    path = tmp_path / "busy.db"
    _demo_file(path)
    with outside_write_lock(path):
        listed = run_main("--db", str(path), "items", "list", demo_data.DEMO_SOW, "--json")
        assert listed.exit_code == 0, listed.stderr
        assert {item["sowId"] for item in listed.json()} == {demo_data.DEMO_SOW}
        written = run_main("--db", str(path), "sows", "create", "Locked out", "--id", "sow-locked", "-q")
        assert written.exit_code != 0 and "Traceback" not in written.stderr
    open_database(str(path))
    try:
        assert not m.Sow.select().where(m.Sow.id == "sow-locked").exists()
    finally:
        m.database_proxy.obj.close()


@pytest.mark.slow
def test_serve_starts_and_answers_reads_while_another_program_holds_the_write_lock(tmp_path: Path) -> None:
    """``serve`` and its worker open a migrated file without its write lock, so a server
    (re)started while another program writes answers reads (each waited for the lock
    before: the master 20 s here, then every worker as it booted)."""
    path = tmp_path / "held.db"
    token = _demo_file(path)
    with outside_write_lock(path):
        server = Server(path, env={"SOWCTL_DB_LOCK_TIMEOUT": "20"})
        try:
            read = server.client.get(
                f"/api/sow/{demo_data.DEMO_SOW}/items", headers={"Authorization": f"Bearer {token}"}
            )
            assert read.status_code == 200 and read.json()
        finally:
            server.stop()


@pytest.mark.slow
def test_writers_queued_behind_an_outside_lock_never_hold_every_thread(tmp_path: Path) -> None:
    """A real ``serve`` (4 threads): six writes and four Group B requests (each counted
    against the rate limit: a write) stuck behind the lock leave a thread for reads,
    which are answered while the lock is still held; the writes that waited are stored
    when it goes, the others were refused with 503 and ``Retry-After``. The reads are
    another caller's: the writers' own caller holds at most all but one thread and, past its
    share of the processor on a busy machine, runs one request at a time (the engine's
    turns), so its own read could rightly wait behind its writes."""
    path = tmp_path / "served.db"
    token = _demo_file(path)
    open_database(str(path))
    key = credentials.create_key(demo_data.DEMO_ORG).secret
    reader = credentials.create_token("user-reader", demo_data.DEMO_ORG, "member").secret
    m.database_proxy.obj.close()
    group_b = {
        "x-api-key": key,
        "x-organization-id": demo_data.DEMO_ORG,
        "x-company-id": demo_data.DEMO_COMPANY,
    }
    budget_views = f"/api/external/budget-views?project_id={demo_data.DEMO_PROJECT_ID}"
    auth = {"Authorization": f"Bearer {token}"}
    reading = {"Authorization": f"Bearer {reader}"}
    items_url = f"/api/sow/{demo_data.DEMO_SOW}/items"
    # The server's writers would wait 20 s: longer than this test holds the lock.
    server = Server(path, quiet=False, env={"SOWCTL_DB_LOCK_TIMEOUT": "20"})  # its log, if it fails
    replies: list[httpx.Response] = []
    counted: list[httpx.Response] = []

    def write(n: int) -> None:
        with httpx.Client(base_url=server.url, timeout=30) as client:
            replies.append(client.post(items_url, json={**NEW_ITEM, "title": f"w{n}"}, headers=auth))

    def count() -> None:
        with httpx.Client(base_url=server.url, timeout=30) as client:
            counted.append(client.get(budget_views, headers=group_b))

    try:
        with outside_write_lock(path):
            writers = [threading.Thread(target=write, args=(n,)) for n in range(6)]
            writers += [threading.Thread(target=count) for _ in range(4)]
            for writer in writers:
                writer.start()
            writers[0].join(timeout=1.0)  # give them time to reach the lock (not an assertion)
            for _ in range(5):
                # Inside the writers' 20 s: a read that waited for them would time out.
                # (5 s, then 10 s, timed out once each on a CI machine running two suites
                # on four pytest workers and two CPUs; the writers' wait is what matters.)
                try:
                    read = httpx.get(server.url + items_url, headers=reading, timeout=17)
                except httpx.TimeoutException:
                    pytest.fail(
                        "a read waited for the writers; the server's log:\n" + "\n".join(server.stderr)
                    )
                assert read.status_code == 200
            assert not any(reply.status_code in (200, 201) for reply in replies + counted)  # still held
        for writer in writers:
            writer.join(timeout=30)
    finally:
        server.stop()
    statuses = sorted(reply.status_code for reply in replies)
    assert len(statuses) == 6 and set(statuses) <= {201, 503} and 201 in statuses, statuses
    assert len(counted) == 4 and {reply.status_code for reply in counted} <= {200, 503}
    assert all(reply.headers.get("retry-after") for reply in replies + counted if reply.status_code == 503)
    open_database(str(path))
    try:
        stored = m.Item.select().where(m.Item.title.in_([f"w{n}" for n in range(6)])).count()
        assert stored == statuses.count(201)  # every acknowledged write, and only those
    finally:
        m.database_proxy.obj.close()


# --- this process's writers take turns --------------------------------------------------


def _queued(database: guards.GuardedSqliteDatabase, count: int) -> None:
    """Wait until ``count`` writers hold or wait for a turn (a thread gets there at once)."""
    for _ in range(500):
        if database.turns.waiting == count:
            return
        threading.Event().wait(0.01)
    raise AssertionError(f"{database.turns.waiting} writers queued, not {count}")


@contextlib.contextmanager
def _held_write_lock() -> Iterator[threading.Event]:
    """A thread of this process inside a write transaction until the event is set."""
    entered, release = threading.Event(), threading.Event()

    def hold() -> None:
        try:
            with write_transaction("org:holder"):
                m.Item.select().count()
                entered.set()
                release.wait(30)
        finally:
            m.database_proxy.close()

    holder = threading.Thread(target=hold)
    holder.start()
    assert entered.wait(10)
    try:
        yield release
    finally:
        release.set()
        holder.join(30)


def test_writers_of_one_process_take_turns_by_lock_key_first_come_first_served(tmp_path: Path) -> None:
    """SQLite's busy handler lets waiting writers poll, longer and longer; one that keeps
    coming back wins the gaps. This process's writers queue instead, one line per lock
    key (an organization), in the order they came, and the lines take turns: three writes
    of one organization queued first delay another organization's write by one."""
    database = open_database(str(tmp_path / "turns.db"))
    order: list[str] = []

    def write(key: str, name: str) -> None:
        try:
            with write_transaction(key):
                order.append(name)
        finally:
            m.database_proxy.close()

    arrivals = [("org:a", "a0"), ("org:a", "a1"), ("org:a", "a2"), ("org:b", "b0"), ("org:c", "c0")]
    arrivals.append(("org:a", "a3"))
    try:
        with _held_write_lock():
            writers = []
            for number, (key, name) in enumerate(arrivals):
                writers.append(threading.Thread(target=write, args=(key, name)))
                writers[-1].start()
                _queued(database, number + 2)  # the holder, and each writer in its turn
        for writer in writers:
            writer.join(30)
        assert order == ["a0", "b0", "c0", "a1", "a2", "a3"]
        assert database.turns.waiting == 0
    finally:
        database.close()


def test_a_writer_queued_past_the_lock_timeout_is_refused_and_the_queue_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(guards, "LOCK_TIMEOUT_SECONDS", 0.3)
    database = open_database(str(tmp_path / "turns.db"))
    failures: list[str] = []

    def write() -> None:
        try:
            with write_transaction("org:late"):
                m.Item.select().count()
        except pw.OperationalError as exc:
            failures.append(str(exc))
        finally:
            m.database_proxy.close()

    try:
        with _held_write_lock():
            late = threading.Thread(target=write)
            late.start()
            late.join(30)
        assert len(failures) == 1 and "database is locked" in failures[0]
        assert database.turns.waiting == 0  # the abandoned turn is skipped
        with write_transaction("org:after"):  # the next writer gets the lock at once
            m.Item.select().count()
    finally:
        database.close()


def test_writers_of_processes_that_share_turns_wait_for_each_other_and_then_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``serve``'s worker and helper processes take turns for SQLite's write lock
    (``guards.ProcessTurns``, a ``flock`` beside the file): a writer waits while another
    process holds the turn, is refused as SQLite's own lock would be past the wait, and
    writes once the turn is free."""
    monkeypatch.setattr(guards, "LOCK_TIMEOUT_SECONDS", 0.3)
    monkeypatch.setattr(guards, "_TURNS_BETWEEN_PROCESSES", False)
    monkeypatch.setattr(guards, "_STEP_ASIDE_SECONDS", guards._STEP_ASIDE_SECONDS)
    guards.share_write_turns_between_processes(0.0)
    path = tmp_path / "shared.db"
    database = open_database(str(path))
    try:
        other = os.open(str(path) + "-writers", os.O_RDWR | os.O_CREAT, 0o600)  # another process's
        try:
            fcntl.flock(other, fcntl.LOCK_EX)
            with pytest.raises(pw.OperationalError, match="database is locked"), write_transaction("org:x"):
                m.Organization.create(id="org-x", name="Not written")
            fcntl.flock(other, fcntl.LOCK_UN)
            with write_transaction("org:x"):
                m.Organization.create(id="org-x", name="Written")
        finally:
            os.close(other)
        assert m.Organization.get_by_id("org-x").name == "Written"
    finally:
        database.close()
