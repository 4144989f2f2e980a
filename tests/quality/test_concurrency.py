"""Concurrent writers against a real ``sowctl serve --workers 2``.

One server per module, on the backend SOWCTL_TEST_DB selects (a SQLite file, or a
PostgreSQL database of its own), driven over HTTP by real concurrent clients: two
client processes (spawned once per module), each firing its share of a round from
one thread and one keep-alive connection per request, all released at the same
instant. Every round works on fresh records (a new SOW, project or API key), so the
rounds are independent and the server is started only once.

The last tests need no server: serialization failures (SQLSTATE 40001, what
CockroachDB answers to conflicting transactions) make a write run again.
"""

from __future__ import annotations

import concurrent.futures
import json
import multiprocessing
import os
import random
import shutil
import subprocess
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from http.client import HTTPConnection
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import peewee as pw
import pytest

from sowctl.foundation import clock
from sowctl.services import credentials
from sowctl.storage import models as m
from sowctl.storage.database import open_database
from tests.support.client import bearer, wsgi_client
from tests.support.minutes import in_one_minute
from tests.support.server import Server

# slow: property runs, fuzzing, real servers: the full suite only; database: on each backend
pytestmark = [pytest.mark.slow, pytest.mark.database]

WORKERS = 2
ROUNDS = 20
CLIENT_PROCESSES = 2
ORG = "org-conc"
USER = "user-conc"
PROJECT = "proj-conc"
COMPANY = "comp-conc"
VENDOR = 70
COST_CODE = 71


# --- the server and its database --------------------------------------------------------------


@dataclass
class Live:
    url: str
    port: int
    server: Server
    database: pw.Database
    token: str

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    def bind(self) -> None:
        """Point the models at the server's database (other modules rebind them)."""
        m.database_proxy.initialize(self.database)
        self.database.connect(reuse_if_open=True)


@pytest.fixture(scope="module")
def database_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A database of this module's own: the suite's shared one is emptied before each test."""
    target = os.environ.get("SOWCTL_TEST_DB", "sqlite")
    if not target.startswith("postgres"):
        yield str(tmp_path_factory.mktemp("concurrency") / "concurrency.db")
        return
    from tests.support.pg import _admin_connection

    name = f"sowctl_conc_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    admin = _admin_connection(target)
    try:
        with admin.cursor() as cur:
            cur.execute(f'CREATE DATABASE "{name}"')
        yield urlunsplit(urlsplit(target)._replace(path="/" + name))
    finally:
        with admin.cursor() as cur:
            cur.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", (name,))
            cur.execute(f'DROP DATABASE IF EXISTS "{name}"')
        admin.close()


@pytest.fixture(scope="module")
def live(database_url: str) -> Iterator[Live]:
    database = open_database(database_url)
    now = clock.now()
    m.Organization.create(id=ORG, name="Concurrency")
    m.Project.create(id=PROJECT, organization=ORG, name="P", created_at=now, updated_at=now)
    m.Company.create(id=COMPANY, organization=ORG, name="Concurrency LLC")
    m.Vendor.create(id=VENDOR, company=COMPANY, name="Steel Co")
    m.CostCode.create(id=COST_CODE, company=COMPANY, full_code="05-120", name="Steel")
    token = credentials.create_token(USER, ORG, "member").secret
    server = Server(database_url, "--workers", str(WORKERS), "--quiet")  # type: ignore[arg-type]
    try:
        yield Live(server.url, urlsplit(server.url).port or 0, server, database, token)
        assert server.stop() == 0
    finally:
        if server.process.poll() is None:
            server.process.kill()
            server.process.wait()
        database.close()
    log = "\n".join(server.stderr_lines)
    # Nothing went wrong on the server's side in any test: no busy database, no crash.
    assert "Traceback" not in log, log
    assert "database is locked" not in log and "database unavailable" not in log, log


@pytest.fixture
def srv(live: Live) -> Live:
    live.bind()
    return live


# --- real concurrent clients ---------------------------------------------------------------------


@dataclass(frozen=True)
class Call:
    method: str
    path: str
    headers: dict[str, str] | None = None
    json: Any = None
    repeat: int = 1  # requests sent one after the other on this call's connection


@dataclass(frozen=True)
class Reply:
    status: int
    body: Any
    headers: dict[str, str]


def _send(connection: HTTPConnection, call: Call) -> Reply:
    headers = {"Content-Type": "application/json", **(call.headers or {})}
    body = None if call.json is None else json.dumps(call.json)
    connection.request(call.method, call.path, body=body, headers=headers)
    response = connection.getresponse()
    raw = response.read()
    try:
        payload = json.loads(raw)
    except ValueError:
        payload = raw.decode(errors="replace")
    return Reply(response.status, payload, {k.lower(): v for k, v in response.getheaders()})


def fire(url: str, calls: list[Call], start_at: float) -> list[list[Reply]]:
    """In a client process: a thread and a connection per call, all released at ``start_at``.

    http.client rather than httpx: a client per thread and round must be cheap (httpx
    builds an SSL context for each), or the clients, not the server, set the pace.
    """
    parts = urlsplit(url)
    replies: list[list[Reply]] = [[] for _ in calls]
    errors: list[BaseException] = []

    def run(index: int, call: Call) -> None:
        connection = HTTPConnection(parts.hostname, parts.port, timeout=60)
        try:
            _send(connection, Call("GET", "/healthz"))  # connected before the start
            time.sleep(max(0.0, start_at - time.time()))
            replies[index] = [_send(connection, call) for _ in range(call.repeat)]
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i, call)) for i, call in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return replies


def _ready() -> int:
    return os.getpid()


@pytest.fixture(scope="module")
def clients() -> Iterator[concurrent.futures.ProcessPoolExecutor]:
    """Client processes, spawned (not forked: this process holds database connections)."""
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(CLIENT_PROCESSES, mp_context=context) as pool:
        pids = {pool.submit(_ready).result(timeout=60) for _ in range(CLIENT_PROCESSES * 2)}
        assert os.getpid() not in pids
        yield pool


def burst(pool: concurrent.futures.ProcessPoolExecutor, url: str, calls: list[Call]) -> list[list[Reply]]:
    """Send ``calls`` at once from the client processes (call i from process i % n).

    The start is a moment far enough ahead for every thread to have connected (a
    late thread just sends at once: still concurrent with the rest of the burst).
    """
    start_at = time.time() + 0.05 + 0.003 * len(calls)
    shares = [calls[k::CLIENT_PROCESSES] for k in range(CLIENT_PROCESSES)]
    futures = [pool.submit(fire, url, share, start_at) for share in shares]
    results = [future.result(timeout=120) for future in futures]
    replies: list[list[Reply]] = [[] for _ in calls]
    for k, result in enumerate(results):
        for j, reply in enumerate(result):
            replies[k + j * CLIENT_PROCESSES] = reply
    return replies


def flat(replies: list[list[Reply]]) -> list[Reply]:
    return [reply for per_call in replies for reply in per_call]


# --- records for a round ----------------------------------------------------------------------


def new_sow(items: int) -> tuple[str, list[str]]:
    now = clock.now()
    key = clock.new_id()
    organization = m.Project.get_by_id(PROJECT).organization_id
    sow = m.Sow.create(
        key=key, id=key, organization=organization, project=PROJECT, title="round", created_at=now
    )
    ids = [clock.new_id() for _ in range(items)]
    m.Item.insert_many(
        [
            {
                "id": item_id,
                "sow": sow.key,
                "type": "task_item",
                "title": f"t{index}",
                "order_index": index,
                "status": "pending",
                "created_at": now,
                "updated_at": now,
            }
            for index, item_id in enumerate(ids)
        ]
    ).execute()
    return sow.id, ids


def new_key() -> str:
    return credentials.create_key(ORG).secret


# --- dependency cycles --------------------------------------------------------------------------


def dependency(source: str, target: str) -> dict[str, str]:
    return {
        "sourceItemId": source,
        "targetItemId": target,
        "dependencyType": "depends_on",
        "riskLevel": "low",
    }


def test_two_creates_that_close_a_cycle_never_both_succeed(srv: Live, clients) -> None:
    for _ in range(ROUNDS):
        _, (a, b) = new_sow(2)
        calls = [Call("POST", "/api/dependencies", srv.auth, dependency(x, y)) for x, y in ((a, b), (b, a))]
        (first,), (second,) = burst(clients, srv.url, calls)
        assert sorted((first.status, second.status)) == [201, 400], (first, second)
        loser, (source, target) = (second, (b, a)) if first.status == 201 else (first, (a, b))
        # The refused request waits for an item that already waits for it.
        assert loser.body == {"error": f"circular dependency: {target} -> {source} -> {target}"}
        stored = m.Dependency.select().where(m.Dependency.source_item.in_([a, b])).count()
        assert stored == 1


def test_three_creates_that_close_a_triangle_leave_it_open(srv: Live, clients) -> None:
    """a on b, b on c, c on a at once: any two may pass, the third closes the cycle."""
    for _ in range(ROUNDS):
        _, (a, b, c) = new_sow(3)
        pairs = ((a, b), (b, c), (c, a))
        calls = [Call("POST", "/api/dependencies", srv.auth, dependency(x, y)) for x, y in pairs]
        replies = [reply for (reply,) in burst(clients, srv.url, calls)]
        assert sorted(reply.status for reply in replies) == [201, 201, 400], replies
        (refused,) = [reply for reply in replies if reply.status == 400]
        path = refused.body["error"].removeprefix("circular dependency: ").split(" -> ")
        assert len(path) == 4 and path[0] == path[-1] and set(path) == {a, b, c}, refused.body


# --- Group B rate limits --------------------------------------------------------------------------


def test_150_concurrent_group_b_requests_on_a_fresh_key_exactly_100_pass(srv: Live, clients) -> None:
    """50 connections, 3 requests each, over both workers: the counters are shared."""
    project_id = new_financial_project()
    path = f"/api/external/budget-views?project_id={project_id}"

    def fresh_key_burst() -> list[Reply]:
        headers = {"x-api-key": new_key(), "x-organization-id": ORG, "x-company-id": COMPANY}
        return flat(burst(clients, srv.url, [Call("GET", path, headers, repeat=3)] * 50))

    for _ in range(ROUNDS):
        replies = in_one_minute(fresh_key_burst)  # the windows are the database clock's minutes
        statuses = Counter(reply.status for reply in replies)
        assert statuses == {200: 100, 429: 50}, statuses
        for reply in replies:
            assert {"x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset"} <= set(reply.headers)
            if reply.status == 429:
                assert reply.headers["x-ratelimit-remaining"] == "0"
                assert int(reply.headers["retry-after"]) >= 1
        remaining = sorted(int(r.headers["x-ratelimit-remaining"]) for r in replies if r.status == 200)
        assert remaining == list(range(100)), remaining  # each count handed out exactly once


# --- purchase-order numbers ----------------------------------------------------------------------


def new_financial_project() -> int:
    project_id = (
        m.FinancialProject.select(pw.fn.COALESCE(pw.fn.MAX(m.FinancialProject.id), 1000)).scalar() + 1
    )
    m.FinancialProject.create(id=project_id, company=COMPANY, name=f"FP {project_id}")
    m.Commitment.create(id=f"c{project_id}", financial_project=project_id, title="Steel", vendor=VENDOR)
    return project_id


def test_concurrent_purchase_orders_never_share_a_number(srv: Live, clients) -> None:
    orders = 10
    for _ in range(ROUNDS):
        project_id = new_financial_project()
        headers = {"x-api-key": new_key(), "organization-id": ORG, "company-id": COMPANY}
        body = {
            "project_id": str(project_id),
            "commitment_id": f"c{project_id}",
            "title": "Steel package",
            "vendor_id": VENDOR,
            "status": "draft",
            "line_items": [{"description": "beams", "amount": "10.10", "cost_code_id": COST_CODE}],
        }
        calls = [Call("POST", "/api/external/create-purchase-order", headers, body)] * orders
        replies = flat(burst(clients, srv.url, calls))
        assert [reply.status for reply in replies] == [200] * orders, replies
        numbers = sorted(reply.body["number"] for reply in replies)
        assert numbers == [f"PO-{project_id}-{n:04d}" for n in range(1, orders + 1)]
        assert len({reply.body["id"] for reply in replies}) == orders


# --- reorders -------------------------------------------------------------------------------------


def test_concurrent_reorders_leave_one_request_s_order(srv: Live, clients) -> None:
    requests, size = 8, 12
    rng = random.Random(7)
    for _ in range(ROUNDS):
        sow_id, ids = new_sow(size)
        wanted: list[dict[str, int]] = []
        for k in range(requests):
            positions = rng.sample(range(size), size)
            # Request k's indexes are k*100 + a position: each names its request.
            wanted.append({item_id: k * 100 + p for item_id, p in zip(ids, positions, strict=True)})
        calls = [
            Call(
                "PUT",
                f"/api/sow/{sow_id}/items/reorder",
                srv.auth,
                {"items": [{"id": i, "orderIndex": v} for i, v in order.items()]},
            )
            for order in wanted
        ]
        replies = flat(burst(clients, srv.url, calls))
        assert [reply.status for reply in replies] == [200] * requests, replies
        final = dict(m.Item.select(m.Item.id, m.Item.order_index).where(m.Item.sow == sow_id).tuples())
        winners = {value // 100 for value in final.values()}
        assert len(winners) == 1, final  # no mix of two requests
        assert final == wanted[winners.pop()]


# --- a write-heavy burst ----------------------------------------------------------------------------


def test_a_write_heavy_burst_never_meets_a_busy_database(srv: Live, clients) -> None:
    """Creates, updates, dependencies and reorders at once: no 'database is locked', no 503."""
    connections = 40
    for _ in range(ROUNDS):
        sow_id, ids = new_sow(10)
        calls: list[Call] = []
        for k in range(connections):
            kind = k % 4
            if kind == 0:
                calls.append(
                    Call(
                        "POST", f"/api/sow/{sow_id}/items", srv.auth, {"title": f"n{k}", "type": "task_item"}
                    )
                )
            elif kind == 1:
                calls.append(Call("PUT", f"/api/items/{ids[k % 10]}", srv.auth, {"status": "in_progress"}))
            elif kind == 2:
                # Later items depend on earlier ones only: acyclic whatever the order.
                source, target = sorted(random.sample(range(10), 2), reverse=True)
                calls.append(
                    Call("POST", "/api/dependencies", srv.auth, dependency(ids[source], ids[target]))
                )
            else:
                order = [{"id": item_id, "orderIndex": 10 - n} for n, item_id in enumerate(ids)]
                calls.append(Call("PUT", f"/api/sow/{sow_id}/items/reorder", srv.auth, {"items": order}))
        replies = flat(burst(clients, srv.url, calls))
        statuses = Counter(reply.status for reply in replies)
        assert set(statuses) <= {200, 201}, [reply for reply in replies if reply.status >= 300]


# --- several workers: connections spread, nothing kept in process memory ------------------------


def worker_pids(master: int) -> set[int]:
    pids = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    ppid = int(stat.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            if ppid == master:
                pids.add(int(entry))
    return pids


def connection_owner(server_port: int, client_port: int, pids: set[int]) -> int | None:
    """The worker process holding the server side of the connection from ``client_port``."""
    wanted = f":{server_port:04X}", f":{client_port:04X}"
    inode = None
    with open("/proc/net/tcp") as table:
        for line in table.readlines()[1:]:
            fields = line.split()
            if fields[1].endswith(wanted[0]) and fields[2].endswith(wanted[1]):
                inode = fields[9]
    if inode is None:
        return None
    for pid in pids:
        try:
            links = {os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")}
        except OSError:
            continue
        if f"socket:[{inode}]" in links:
            return pid
    return None


def open_connections(srv: Live, count: int, path: str = "/healthz") -> list[HTTPConnection]:
    connections = []
    for _ in range(count):
        connection = HTTPConnection("127.0.0.1", srv.port, timeout=10)
        connection.request("GET", path)
        response = connection.getresponse()
        response.read()
        assert response.status == 200
        connections.append(connection)
    return connections


def get(connection: HTTPConnection, path: str, headers: dict[str, str]) -> int:
    connection.request("GET", path, headers=headers)
    response = connection.getresponse()
    response.read()
    return response.status


@pytest.mark.skipif(not os.path.exists("/proc/net/tcp"), reason="reads Linux's /proc")
def test_keep_alive_connections_spread_over_every_worker(srv: Live) -> None:
    workers = worker_pids(srv.server.process.pid)
    assert len(workers) == WORKERS, workers
    connections = open_connections(srv, 32)
    try:
        owners = [
            connection_owner(srv.port, connection.sock.getsockname()[1], workers)
            for connection in connections
        ]
    finally:
        for connection in connections:
            connection.close()
    assert None not in owners, owners
    # reuse_port: the kernel spreads connections over the workers' own sockets.
    assert set(owners) == workers, Counter(owners)


@pytest.mark.skipif(shutil.which("ss") is None, reason="needs ss (iproute2)")
def test_the_listen_backlog_is_not_five(srv: Live) -> None:
    out = subprocess.run(
        ["ss", "-Hltn", f"sport = :{srv.port}"], capture_output=True, text=True, timeout=5
    ).stdout
    backlogs = [int(line.split()[2]) for line in out.splitlines() if line.strip()]  # Send-Q of LISTEN
    with open("/proc/sys/net/core/somaxconn") as somaxconn:
        expected = min(2048, int(somaxconn.read()))
    assert len(backlogs) >= WORKERS and set(backlogs) == {expected}, out


def test_a_revoked_token_is_refused_at_once_by_every_worker(srv: Live) -> None:
    token = credentials.create_token(USER, ORG, "viewer")
    headers = {"Authorization": f"Bearer {token.secret}"}
    connections = open_connections(srv, 16)
    try:
        assert [get(c, "/api/sows", headers) for c in connections] == [200] * 16
        credentials.revoke_token(token.id)
        assert [get(c, "/api/sows", headers) for c in connections] == [401] * 16
    finally:
        for connection in connections:
            connection.close()


# --- serialization failures are retried (no server) -----------------------------------------------


class _SerializationFailure(Exception):
    """What psycopg2 raises for SQLSTATE 40001 (peewee wraps it in OperationalError)."""

    pgcode = "40001"


def _fail_once_after_insert(monkeypatch: pytest.MonkeyPatch, model: type[m.BaseModel]) -> list[int]:
    """Inserting a ``model`` row writes it, then the first time the transaction 'fails'.

    As CockroachDB does: the conflict is found late, the transaction is rolled back
    (its row with it), and the client is told to restart it.
    """
    from sowctl.services import dependencies

    calls: list[int] = []
    original = dependencies.insert_row

    def insert_row(target: type[m.BaseModel], values: dict[str, Any]) -> Any:
        row = original(target, values)
        if target is model:
            calls.append(1)
            if len(calls) == 1:
                raise pw.OperationalError(
                    _SerializationFailure("restart transaction: TransactionRetryWithProtoRefreshError")
                )
        return row

    monkeypatch.setattr(dependencies, "insert_row", insert_row)
    return calls


def _seed_items() -> tuple[str, str]:
    now = clock.now()
    m.Organization.create(id=ORG, name="Concurrency")
    m.Project.create(id=PROJECT, organization=ORG, name="P", created_at=now, updated_at=now)
    _, (a, b) = new_sow(2)
    return a, b


def test_a_serialization_failure_reruns_the_write_on_the_server(db, monkeypatch) -> None:
    from sowctl.server.app import create_app

    a, b = _seed_items()
    token = credentials.create_token(USER, ORG, "member").secret
    calls = _fail_once_after_insert(monkeypatch, m.Dependency)
    with wsgi_client(create_app(db)) as client:
        response = client.post("/api/dependencies", json=dependency(a, b), headers=bearer(token))
    assert response.status_code == 201, response.text
    assert len(calls) == 2  # the first attempt was rolled back and run again
    assert [d.id for d in m.Dependency.select()] == [response.json()["id"]]


def test_a_serialization_failure_reruns_the_write_in_local_mode(db, monkeypatch) -> None:
    from sowctl import operations
    from sowctl.services.access import Caller

    a, b = _seed_items()
    calls = _fail_once_after_insert(monkeypatch, m.Dependency)
    created = operations.call_local("deps.create", Caller.local(), body=dependency(a, b))
    assert len(calls) == 2
    assert [d.id for d in m.Dependency.select()] == [created["id"]]


def test_retries_give_up_and_leave_other_errors_alone(db, monkeypatch) -> None:
    from sowctl.storage.database import WRITE_ATTEMPTS, retry_serialization_failures

    monkeypatch.setattr(time, "sleep", lambda seconds: None)
    attempts: list[int] = []

    def always(exc: Exception):
        def operation() -> None:
            attempts.append(1)
            raise exc

        return operation

    failure = pw.OperationalError(_SerializationFailure("could not serialize access"))
    with pytest.raises(pw.OperationalError):
        retry_serialization_failures(always(failure))
    assert len(attempts) == WRITE_ATTEMPTS

    attempts.clear()
    with pytest.raises(pw.IntegrityError):
        retry_serialization_failures(always(pw.IntegrityError("duplicate key")))
    assert len(attempts) == 1

    attempts.clear()
    with pytest.raises(pw.OperationalError), db.atomic():  # an outer transaction is aborted too
        retry_serialization_failures(always(failure))
    assert len(attempts) == 1


def test_the_rate_limit_counter_reruns_after_a_serialization_failure(db, monkeypatch) -> None:
    from sowctl.services import ratelimit

    m.Organization.create(id=ORG, name="Concurrency")
    key = credentials.create_key(ORG)
    key_id = m.ApiKey.get(m.ApiKey.key_hash == credentials.hash_secret(key.secret)).id
    original = ratelimit._hit
    calls: list[int] = []

    def flaky(api_key_id: str, limits: ratelimit.RateLimits) -> ratelimit.RateState:
        calls.append(1)
        if len(calls) == 1:
            raise pw.OperationalError(_SerializationFailure("restart transaction"))
        return original(api_key_id, limits)

    monkeypatch.setattr(ratelimit, "_hit", flaky)
    state = ratelimit.hit(key_id, ratelimit.RateLimits())
    assert state.allowed and state.remaining == 99 and len(calls) == 2
