"""What one caller can make a worker do with the chain report: its body is streamed, and at
most ``report_slots`` reports hold threads at once.

Before: a member token made 2,000 duplicate dependencies between two items with
10,000-character titles, and the report, built as one bytes object, took a worker to about
1 GB; eight reports of a 40,000-dependency SOW held all four threads of a worker, and
``/healthz`` waited up to 13 s.
"""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sowctl import operations
from sowctl.foundation import clock
from sowctl.operations.chain import chain_body
from sowctl.schemas.items import ItemCreate
from sowctl.schemas.sows import SowCreate
from sowctl.server.app import create_app
from sowctl.server.configuration import ServerSettings
from sowctl.server.http import json_bytes
from sowctl.services import chain, credentials, graph, items, sows
from sowctl.services.access import Caller
from sowctl.storage import models as m
from tests.support.client import bearer, wsgi_client
from tests.support.raw_wsgi import start_get

MEMBER = Caller(user_id="user-ada", organization_id="acme", role="member")
LONG = "\U0001f600" * 2_000  # titles that make each entry some 16 KB of JSON
NO_HANG = 10


@pytest.fixture
def site(migrated_db_url: str) -> Iterator[dict[str, Any]]:
    """An app on a SOW whose report is several chunks long: a requirement with two tasks,
    a third task, duplicate and external dependencies, critical and overdue ones, and a
    stored cycle (as an import may bring)."""
    app = create_app(migrated_db_url, ServerSettings(report_slots=1, report_slot_wait=0.2))
    sow_id = sows.create_sow(MEMBER, SowCreate(title="Tower A", id="sow-big")).id
    frame = _item(sow_id, "Frame " + LONG, "requirement")
    steel = _item(sow_id, "Steel " + LONG, parent=frame)
    deck = _item(sow_id, "Deck", parent=frame)
    roof = _item(sow_id, "Roof " + LONG)
    for _ in range(30):  # duplicates are accepted: each one repeats both titles in the report
        _dep(deck, steel, "depends_on", "critical", slaDate="2020-01-01")
    _dep(roof, deck, "prerequisite", "high", slaDate="2099-03-15")
    _dep(steel, None, "depends_on", "medium", externalTarget="Steel mill " + LONG)
    _dep(roof, steel, "related_to", "critical")
    _stored_edge(sow_id, steel, roof)  # roof already waits for steel: a cycle in stored data
    token = credentials.create_token("user-ada", "acme", "member").secret
    client = wsgi_client(app, headers=bearer(token))
    yield {"app": app, "client": client, "token": token, "sow": sow_id, "item": roof}
    client.close()


def _item(sow_id: str, title: str, kind: str = "task_item", parent: str | None = None) -> str:
    return items.create_item(MEMBER, sow_id, ItemCreate(title=title, type=kind, parent_item_id=parent)).id


def _dep(source: str, target: str | None, dep_type: str, risk: str, **extra: str) -> None:
    body = {"sourceItemId": source, "dependencyType": dep_type, "riskLevel": risk, **extra}
    if target is not None:
        body["targetItemId"] = target
    clock.set_fixed_now(clock.now() + timedelta(seconds=1))  # distinct createdAt: a known order
    operations.call_local("deps.create", MEMBER, body=body)


def _stored_edge(sow_id: str, source: str, target: str) -> None:
    edge = graph.ordering_edge("depends_on", source, target, "active", False)
    sow_key = m.Sow.get(m.Sow.id == sow_id).key
    m.Dependency.create(
        id=clock.new_id(),
        sow=sow_key,
        source_item=source,
        target_item=target,
        dependency_type="depends_on",
        risk_level="low",
        status="active",
        created_at=clock.now() + timedelta(days=1),
        before_item_id=edge[0] if edge else None,
        after_item_id=edge[1] if edge else None,
    )


def _chain_url(site: dict[str, Any], fmt: str = "flat") -> str:
    return f"/api/dependencies/chain?sowId={site['sow']}&format={fmt}&include=criticalPath"


# --- (a) the streamed body is the body ---------------------------------------------------------


@pytest.mark.parametrize("fmt", ["flat", "tree"])
def test_a_large_report_is_streamed_and_byte_identical(site: dict[str, Any], fmt: str) -> None:
    from sowctl.server.streaming import CHUNK_CHARS

    include = ("criticalPath",)
    expected = json_bytes(chain_body(chain.chain_report(MEMBER, site["sow"], fmt, include), include))
    assert len(expected) > 4 * CHUNK_CHARS  # several chunks
    body = json.loads(expected)
    assert body["issues"]["circular"] and body["issues"]["critical"] and body["issues"]["overdue"]

    response = site["client"].get(_chain_url(site, fmt))
    assert response.status_code == 200
    assert response.content == expected
    assert response.headers["content-type"] == "application/json"
    assert response.headers["x-content-type-options"] == "nosniff" and response.headers["x-request-id"]

    # The server gets chunks of about CHUNK_CHARS characters, never the whole body at once, and
    # no Content-Length: it sends them as they come (chunked on HTTP/1.1).
    chunks, status, close = _raw_get(site["app"], _chain_url(site, fmt), site["token"])
    try:
        sizes = [len(chunk) for chunk in chunks]
    finally:
        close()
    assert status[0].startswith("200") and "content-length" not in {name.lower() for name, _ in status[1]}
    assert len(sizes) > 3 and max(sizes) < 4 * (2 * CHUNK_CHARS + 20_000)  # UTF-8: 4 bytes a character


def test_a_small_report_is_answered_whole_as_before(site: dict[str, Any]) -> None:
    small = sows.create_sow(MEMBER, SowCreate(title="Small", id="sow-small")).id
    a, b = _item(small, "A"), _item(small, "B")
    _dep(a, b, "depends_on", "low")
    response = site["client"].get(f"/api/dependencies/chain?sowId={small}")
    expected = json_bytes(chain_body(chain.chain_report(MEMBER, small)))
    assert response.content == expected and response.headers["content-length"] == str(len(expected))


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=6) | st.dictionaries(st.text(max_size=4), inner, max_size=5),
    max_leaves=60,
)


@given(json_values, st.sampled_from([1, 5, 64]))
def test_the_streamed_encoding_is_json_bytes_exactly(value: Any, chunk_chars: int) -> None:
    from sowctl.server.streaming import iter_json

    assert b"".join(iter_json(value, chunk_chars)) == json_bytes(value)


# --- (b) report slots ------------------------------------------------------------------------


def _raw_get(app: Any, url: str, token: str) -> tuple[Iterator[bytes], tuple[str, list], Any]:
    """GET ``url`` from ``app`` as a WSGI server does; (body iterator, (status, headers), close)."""
    return start_get(app, url, {"Authorization": f"Bearer {token}"})


@pytest.fixture
def blocked(site: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> Iterator[threading.Event]:
    """A chain request holding the only report slot inside the report, until the event is set."""
    entered, release = threading.Event(), threading.Event()
    real = chain.chain_report

    def slow_report(*args: Any, **kwargs: Any) -> Any:
        if not entered.is_set():
            entered.set()
            release.wait(NO_HANG)
        return real(*args, **kwargs)

    monkeypatch.setattr(chain, "chain_report", slow_report)
    answers: list[httpx.Response] = []

    def first() -> None:
        with wsgi_client(site["app"], headers=bearer(site["token"])) as client:
            answers.append(client.get(_chain_url(site)))

    holder = threading.Thread(target=first)
    holder.start()
    assert entered.wait(NO_HANG)
    yield release
    release.set()
    holder.join(NO_HANG)
    assert answers and answers[0].status_code == 200


def test_with_every_report_slot_held_other_requests_go_on_and_one_more_report_gets_503(
    site: dict[str, Any], blocked: threading.Event
) -> None:
    client = site["client"]
    assert client.get("/healthz").status_code == 200
    assert client.get(f"/api/items/{site['item']}").status_code == 200
    for _ in range(2):  # waits a while, then at once while no report finishes
        refused = client.get(_chain_url(site))
        assert refused.status_code == 503
        assert refused.headers["retry-after"] == "1"
        assert refused.json() == {"error": "the server is busy with other large answers; retry later"}
        assert refused.headers["x-request-id"] and refused.headers["x-content-type-options"] == "nosniff"
    blocked.set()


def test_the_slot_is_held_while_the_body_is_sent_and_freed_when_it_is_read_or_closed(
    site: dict[str, Any],
) -> None:
    app, token, url = site["app"], site["token"], _chain_url(site)
    # Read to its end: the slot is free before the server even closes the body.
    chunks, status, close = _raw_get(app, url, token)
    assert status[0].startswith("200")
    next(chunks)
    assert _raw_get(app, url, token)[1][0].startswith("503")  # still being sent: the slot is held
    for _ in chunks:
        pass
    again, status, close_again = _raw_get(app, url, token)
    assert status[0].startswith("200")
    # A client that goes away mid-body: the server closes the body unread.
    next(again)
    close_again()
    close()
    assert site["client"].get(url).status_code == 200
    # HEAD: the body is never sent, and the slot is freed at once.
    assert site["client"].head(url).status_code == 200
    assert site["client"].get(url).status_code == 200


def test_the_test_double_streams_a_report_logs_its_start_and_frees_its_gate(migrated_db_url: str) -> None:
    from tests.support.doubles import ADMIN, ADMIN_TOKEN

    settings = ServerSettings(admin_token=ADMIN_TOKEN, report_slots=1)
    app = create_app(migrated_db_url, settings)
    sow_id = sows.create_sow(MEMBER, SowCreate(title="T", id="sow-double")).id
    a, b = _item(sow_id, "A " + LONG), _item(sow_id, "B " + LONG)
    for _ in range(20):
        _dep(a, b, "depends_on", "low")
    token = credentials.create_token("user-ada", "acme", "member").secret
    url = f"/api/dependencies/chain?sowId={sow_id}"
    with wsgi_client(app, headers=bearer(token)) as client:
        response = client.get(url)
        assert response.status_code == 200
        assert response.content == json_bytes(chain_body(chain.chain_report(MEMBER, sow_id)))
        logged = client.get("/_admin/requests", headers=ADMIN).json()
        row = next(r for r in logged if r["path"] == "/api/dependencies/chain")
        assert row["status"] == 200 and row["responseBodyTruncated"] is True
        assert row["responseBody"].startswith('{"sowId":"sow-double","dependencies":[')
        # The gate is free once the body is closed: a reset does not wait for it.
        done: list[int] = []
        resetter = threading.Thread(
            target=lambda: done.append(client.post("/_admin/reset", headers=ADMIN).status_code)
        )
        resetter.start()
        resetter.join(NO_HANG)
        assert done == [200]


# --- (c) a real server: memory, and a slot held by a client that does not read ------------------


@pytest.fixture
def big_db(tmp_path: Path) -> tuple[Path, str, str]:
    """A SQLite file whose chain report is about 72 MB: (file, SOW id, member token)."""
    from sowctl.storage.database import open_database

    db = tmp_path / "big.db"
    database = open_database(str(db))
    sow_id = sows.create_sow(MEMBER, SowCreate(title="Big", id="sow-big")).id
    a, b = _item(sow_id, "\U0001f600" * 10_000), _item(sow_id, "\U0001f601" * 10_000)
    for _ in range(300):  # each entry 80 KB, listed under dependencies, critical and overdue
        _dep(a, b, "related_to", "critical", slaDate="2020-01-01")
    token = credentials.create_token("user-ada", "acme", "member").secret
    database.close()
    return db, sow_id, token


def _get(server_url: str, path: str, headers: dict[str, str]) -> tuple[int, dict[str, str], int]:
    """(status, headers, body size) over http.client, the body read in pieces and dropped (httpx's
    wire guard would hold the whole body in this process)."""
    url = httpx.URL(server_url)
    connection = http.client.HTTPConnection(url.host, url.port, timeout=NO_HANG * 3)
    try:
        connection.request("GET", path, headers=headers)
        response = connection.getresponse()
        size = 0
        while chunk := response.read(1 << 20):
            size += len(chunk)
        return response.status, {k.lower(): v for k, v in response.getheaders()}, size
    finally:
        connection.close()


@pytest.mark.slow
def test_a_worker_does_not_hold_a_large_report_whole(big_db: tuple[Path, str, str]) -> None:
    from tests.support.server import Server

    db, sow_id, token = big_db
    server = Server(db)
    try:
        worker = int(
            Path(f"/proc/{server.process.pid}/task/{server.process.pid}/children").read_text().split()[0]
        )
        assert server.client.get("/healthz").status_code == 200
        before = _status_kib(worker, "VmRSS")
        status, headers, size = _get(server.url, f"/api/dependencies/chain?sowId={sow_id}", bearer(token))
        peak = _status_kib(worker, "VmHWM")
    finally:
        server.stop()
    assert status == 200 and headers["transfer-encoding"] == "chunked" and size > 70_000_000
    # Built whole, the body was held as text and as bytes: more than twice its size.
    assert (peak - before) * 1024 < 30_000_000, (before, peak)


@pytest.mark.slow
def test_a_client_that_stops_reading_holds_its_slot_and_frees_it_when_it_goes(
    big_db: tuple[Path, str, str],
) -> None:
    from tests.support.server import Server

    db, sow_id, token = big_db
    path = f"/api/dependencies/chain?sowId={sow_id}"
    server = Server(db, "--threads", "2")  # one report slot
    try:
        url = httpx.URL(server.url)
        stalled = socket.create_connection((url.host, url.port), timeout=NO_HANG)
        stalled.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\r\n".encode())
        assert stalled.recv(64).startswith(b"HTTP/1.1 200")  # and then it reads no more
        status, headers, _ = _get(server.url, path, bearer(token))
        assert status == 503 and headers["retry-after"] == "1"
        assert server.client.get("/healthz").status_code == 200
        assert server.client.get("/api/sows", headers=bearer(token)).status_code == 200
        stalled.close()  # the server's next write fails: the body is closed, the slot freed
        deadline = time.monotonic() + NO_HANG
        while (status := _get(server.url, path, bearer(token))[0]) == 503 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert status == 200
    finally:
        server.stop()


def _status_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)
