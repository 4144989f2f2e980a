"""A PostgreSQL that stops, restarts, starts up, is full of clients, locks or turns read-only:
every surface answers 503 with ``Retry-After`` (which clients retry), with one log line and
no traceback, and serves again by itself once the database is back.

Each test runs its own cluster (tests/support/pg_cluster.py), whatever ``SOWCTL_TEST_DB``
says: the shared one is never stopped. Most go through the app in process; one runs the
real ``sowctl serve``. The audit before these: 288 answers of 500 (576 tracebacks) while the
database was starting up, and 136 of 240 with ``max_connections`` reached.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import pytest

from sowctl.storage import models as m
from sowctl.storage.database import open_database
from tests.support.cli import run_main
from tests.support.client import app_client, bearer
from tests.support.doubles import ADMIN, FINANCIAL_PROJECT, SOW, in_process, load
from tests.support.doubles import external as external_headers
from tests.support.pg_cluster import Cluster
from tests.support.server import Server, seed_demo

# Each test starts a PostgreSQL cluster of its own, seeds it, and stops and starts it.
pytestmark = pytest.mark.slow

ITEMS = f"/api/sow/{SOW}/items"
NEW_ITEM = {"title": "while away", "type": "task_item"}
NO_HANG = 60  # a guard against a hang, not a speed assertion


class Served:
    """An in-process app on a cluster, with a member token and an API key of the demo org."""

    def __init__(self, cluster: Cluster, client: httpx.Client, token: str, key: str) -> None:
        self.cluster = cluster
        self.client = client
        self.auth = bearer(token)
        self.external = external_headers(key)

    def get(self, path: str, **kwargs) -> httpx.Response:
        return self.client.get(path, headers=self.auth, **kwargs)

    def create(self, title: str = NEW_ITEM["title"]) -> httpx.Response:
        return self.client.post(ITEMS, json={**NEW_ITEM, "title": title}, headers=self.auth)

    def group_b(self) -> httpx.Response:
        query = {"project_id": FINANCIAL_PROJECT}
        return self.client.get("/api/external/purchase-order-options", params=query, headers=self.external)

    def log_lines(self) -> list[str]:
        return self.client.errors.getvalue().splitlines()  # type: ignore[attr-defined]


@pytest.fixture
def served(pg_cluster) -> Iterator[Served]:
    cluster = pg_cluster()
    token, key = seed_demo(cluster.url)
    client = app_client(cluster.url)
    yield Served(cluster, client, token, key)
    client.close()
    m.database_proxy.obj.close()


def assert_unavailable(answer: httpx.Response, word: str = "") -> None:
    """503 with Retry-After in the group's envelope; ``word`` in Groups A/B's message."""
    assert answer.status_code == 503, answer.text
    assert answer.headers["Retry-After"] == "1"
    if answer.request.url.path.startswith("/api/external/"):  # on every Group B answer
        assert answer.headers["X-RateLimit-Limit"] and answer.headers["X-RateLimit-Remaining"]
    body = answer.json()
    if "code" in body:  # Group C: the documented code; the status says 503
        assert body["code"] == "INTERNAL_SERVER_ERROR" and body["issues"] == []
    else:
        assert set(body) == {"error"} and word in body["error"], body


def assert_one_line_each(lines: list[str], failures: int, *words: str) -> None:
    """One log line per failed request, naming the failure, and no traceback."""
    assert not any("Traceback" in line for line in lines), lines
    named = [line for line in lines if all(word in line for word in words)]
    assert len(named) == failures == len(lines), lines


def test_a_stopped_database_is_503_everywhere_and_service_resumes_when_it_is_back(served) -> None:
    assert served.get(ITEMS).status_code == 200
    served.cluster.stop()
    answers = [
        served.get(ITEMS),
        served.create(),
        served.group_b(),
        served.client.get("/projects", headers=served.auth),
    ]
    for answer in answers:
        assert_unavailable(answer, "unavailable")
    health = served.client.get("/readyz")
    assert health.status_code == 503 and health.headers["Retry-After"] == "1"
    assert served.client.get("/healthz").json() == {"status": "ok"}  # alive: it asks no database
    assert_one_line_each(served.log_lines(), len(answers) + 1, "database unavailable (08001")
    assert (
        f'sowctl_database_errors_total{{kind="unavailable"}} {len(answers) + 1}.0'
        in served.client.get("/metrics").text.splitlines()
    )

    served.cluster.start()  # the same app, not restarted
    assert served.client.get("/readyz").status_code == 200
    assert served.create("after").status_code == 201
    assert served.group_b().status_code == 200
    titles = {item["title"] for item in served.get(ITEMS).json()}
    assert "after" in titles and NEW_ITEM["title"] not in titles  # the refused write was not stored


def test_the_first_request_after_a_restart_is_answered(served) -> None:
    """The thread's connection died with the server it was open to: it is replaced before
    the request, not found dead by it (before: 503 or 500 once per thread)."""
    assert served.get(ITEMS).status_code == 200
    served.cluster.stop()
    served.cluster.start()
    assert served.get(ITEMS).status_code == 200
    assert served.create("first write").status_code == 201
    assert served.log_lines() == []


def test_a_database_starting_up_is_503_then_served_once_it_accepts_connections(served) -> None:
    """57P03 cannot_connect_now: a standby in recovery refuses connections as a database
    starting up does (before: 500 with two tracebacks per request)."""
    served.cluster.stop()
    served.cluster.start(standby=True)
    assert_unavailable(served.get(ITEMS), "unavailable")
    assert_unavailable(served.create(), "unavailable")
    assert_unavailable(served.group_b(), "unavailable")
    assert served.client.get("/readyz").status_code == 503
    assert_one_line_each(served.log_lines(), 4, "database unavailable (57P03 cannot_connect_now")

    served.cluster.promote()
    assert served.create("after recovery").status_code == 201
    assert served.client.get("/readyz").status_code == 200


def test_max_connections_reached_is_503_and_served_once_a_connection_is_free(pg_cluster) -> None:
    """53300 too_many_connections (before: 136 of 240 requests answered 500)."""
    cluster = pg_cluster(max_connections="3", superuser_reserved_connections="0")
    token, key = seed_demo(cluster.url)
    client = app_client(cluster.url)
    served = Served(cluster, client, token, key)
    try:
        held = [cluster.connect() for _ in range(3)]
        assert_unavailable(served.get(ITEMS), "busy")
        assert_unavailable(served.create(), "busy")
        assert_unavailable(served.group_b(), "busy")
        assert served.client.get("/readyz").status_code == 503
        assert_one_line_each(served.log_lines(), 4, "database busy (53300 too_many_connections")
        held.pop().close()
        # PostgreSQL frees the slot when the closed connection's backend has exited, in its
        # own time: until then the create is still (rightly) refused 503.
        deadline = time.monotonic() + 10
        while (created := served.create("once free")).status_code == 503 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert created.status_code == 201
        assert served.client.get("/readyz").status_code == 200
    finally:
        for connection in held:
            connection.close()
        client.close()
        m.database_proxy.obj.close()


def test_a_lock_timeout_is_503_busy_and_nothing_is_stored(served) -> None:
    """55P03 lock_not_available: the database's lock_timeout ends a wait for a lock that
    another session holds (before: 500)."""
    served.cluster.sql("ALTER DATABASE sowctl SET lock_timeout = '200ms'")
    m.database_proxy.obj.close()  # the setting applies to new sessions
    holder = served.cluster.connect()
    holder.autocommit = False
    try:
        with holder.cursor() as cursor:
            cursor.execute('LOCK TABLE "item" IN ACCESS EXCLUSIVE MODE')
            assert_unavailable(served.create("locked out"), "busy")
            assert_unavailable(served.get(ITEMS), "busy")
        holder.rollback()
    finally:
        holder.close()
    # The bearer token is read first, outside any transaction (a prepared statement).
    holder = served.cluster.connect()
    holder.autocommit = False
    try:
        with holder.cursor() as cursor:
            cursor.execute('LOCK TABLE "api_token" IN ACCESS EXCLUSIVE MODE')
            assert_unavailable(served.get(ITEMS), "busy")
        holder.rollback()
    finally:
        holder.close()
    assert_one_line_each(served.log_lines(), 3, "database busy (55P03 lock_not_available")
    assert served.create("after the lock").status_code == 201
    titles = {item["title"] for item in served.get(ITEMS).json()}
    assert "after the lock" in titles and "locked out" not in titles


def test_a_read_only_database_refuses_writes_with_503_and_readyz_says_so_until_writable(served) -> None:
    """25006 read_only_sql_transaction (a replica after a failover, a database set read-only):
    writes and Group B's counted requests are refused, reads go on (before: 500)."""
    served.cluster.sql("ALTER DATABASE sowctl SET default_transaction_read_only = on")
    m.database_proxy.obj.close()  # the setting applies to new sessions
    assert_unavailable(served.create("refused"), "cannot store")
    assert served.get(ITEMS).status_code == 200
    assert_unavailable(served.group_b(), "cannot store")  # counting the request is a write
    assert served.client.get("/readyz").status_code == 503
    lines = served.log_lines()
    assert_one_line_each(lines[:2], 2, "database cannot store (25006 read_only_sql_transaction")

    served.cluster.sql("ALTER DATABASE sowctl SET default_transaction_read_only = off", "postgres")
    assert served.client.get("/readyz").status_code == 200  # its probe write succeeds again
    assert served.create("writable again").status_code == 201
    titles = {item["title"] for item in served.get(ITEMS).json()}
    assert "writable again" in titles and "refused" not in titles


def test_the_test_doubles_gate_and_admin_api_answer_503_while_the_database_is_away(pg_cluster) -> None:
    """With the admin API on, every request first takes the gate, an advisory lock on
    PostgreSQL: with the database stopped that raised out of the app (a 500 from the server)."""
    cluster = pg_cluster()
    client = in_process(cluster.url)
    try:
        auth = bearer(load(client)["token"])
        assert client.get(ITEMS, headers=auth).status_code == 200
        cluster.stop()
        assert_unavailable(client.get(ITEMS, headers=auth), "unavailable")
        assert_unavailable(client.get("/_admin/requests", headers=ADMIN), "unavailable")
        assert_unavailable(client.post("/_admin/reset", headers=ADMIN), "unavailable")
        lines = client.errors.getvalue().splitlines()  # type: ignore[attr-defined]
        assert_one_line_each(lines, 3, "database unavailable")
        cluster.start()
        assert client.get(ITEMS, headers=auth).status_code == 200
        assert client.get("/_admin/requests", headers=ADMIN).status_code == 200
    finally:
        client.close()
        m.database_proxy.obj.close()


def test_a_database_stopped_in_the_middle_of_a_request_through_the_test_double_is_a_503(
    pg_cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The request lost its connection, and the gate's lock with it: releasing the gate must
    not open a new connection (before: it did, failed, and the app raised: a 500)."""
    from sowctl.services import items

    cluster = pg_cluster()
    client = in_process(cluster.url)
    try:
        auth = bearer(load(client)["token"])
        real = items.list_items

        def stopped_first(*args, **kwargs):
            cluster.stop()
            return real(*args, **kwargs)

        with monkeypatch.context() as patch:
            patch.setattr(items, "list_items", stopped_first)
            assert_unavailable(client.get(ITEMS, headers=auth), "unavailable")
        lines = client.errors.getvalue().splitlines()  # type: ignore[attr-defined]
        assert_one_line_each(lines, 1, "database unavailable")
        cluster.start()
        assert client.get(ITEMS, headers=auth).status_code == 200
    finally:
        client.close()
        m.database_proxy.obj.close()


def test_the_cli_in_local_mode_exits_5_with_one_line_saying_why(pg_cluster) -> None:
    cluster = pg_cluster()
    seed_demo(cluster.url)
    cluster.sql("ALTER DATABASE sowctl SET default_transaction_read_only = on", "postgres")
    refused = run_main("--db", cluster.url, "items", "create", SOW, "--title", "refused")
    assert refused.exit_code == 5
    assert refused.stderr == (
        "error: database cannot store (25006 read_only_sql_transaction): "
        "cannot execute INSERT in a read-only transaction\n"
    )
    assert run_main("--db", cluster.url, "items", "list", SOW).exit_code == 0  # reads go on

    cluster.stop()
    cluster.start(standby=True)
    starting = run_main("--db", cluster.url, "items", "list", SOW)
    assert starting.exit_code == 5 and starting.stderr.count("\n") == 1
    assert starting.stderr.startswith("error: cannot open database postgres@127.0.0.1:")
    # A standby says "starting up" until its start-up ends, then "not accepting connections".
    assert "the database system is starting up" in starting.stderr or (
        "the database system is not accepting connections" in starting.stderr
    )

    cluster.stop()
    stopped = run_main("--db", cluster.url, "items", "list", SOW)
    assert stopped.exit_code == 5 and stopped.stderr.count("\n") == 1
    assert "Connection refused" in stopped.stderr


def test_sowctl_serve_rides_out_a_restart_and_a_start_up_without_500s(pg_cluster) -> None:
    """The audit's run on the real server: every answer while the database is stopped or
    starting up is 503 with Retry-After, the log has one line per failure and no traceback,
    and every worker serves again once the database accepts connections."""
    cluster = pg_cluster()
    token, _ = seed_demo(cluster.url)
    server = Server(cluster.url, "--workers", "2", "--threads", "2")
    auth = bearer(token)
    acknowledged: list[str] = []
    try:
        with httpx.Client(base_url=server.url, timeout=NO_HANG, headers=auth) as client:
            for n in range(8):  # every thread of both workers opens its connection
                created = client.post(ITEMS, json={**NEW_ITEM, "title": f"before {n}"})
                assert created.status_code == 201, created.text
                acknowledged.append(created.json()["id"])
            cluster.stop()
            cluster.start(standby=True)
            during = [client.get(ITEMS) for _ in range(8)] + [
                client.post(ITEMS, json=NEW_ITEM) for _ in range(8)
            ]
            assert {(answer.status_code, answer.headers.get("Retry-After")) for answer in during} == {
                (503, "1")
            }
            assert client.get("/readyz").status_code == 503
            cluster.promote()
            deadline = time.monotonic() + NO_HANG
            while client.get("/readyz").status_code != 200:
                assert time.monotonic() < deadline, "no recovery once the database accepted connections"
                time.sleep(0.1)
            after = [client.post(ITEMS, json={**NEW_ITEM, "title": f"after {n}"}) for n in range(8)]
            assert [answer.status_code for answer in after] == [201] * 8, [a.text for a in after]
            acknowledged += [answer.json()["id"] for answer in after]
    finally:
        server.stop()
    assert not any("Traceback" in line for line in server.stderr_lines), server.stderr_lines
    failures = [line for line in server.stderr_lines if "57P03 cannot_connect_now" in line]
    assert len(failures) >= len(during)  # each refused request says why, once (and /readyz)
    database = open_database(cluster.url)
    try:
        stored = {row.id for row in m.Item.select(m.Item.id).where(m.Item.id.in_(acknowledged))}
        assert stored == set(acknowledged)
        assert m.Item.select().where(m.Item.title == NEW_ITEM["title"]).count() == 0
    finally:
        database.close()
