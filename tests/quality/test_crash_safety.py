"""Crash safety: SIGKILL in the middle of an import or of a stream of writes loses no
acknowledged write and leaves no half-written one; an export taken while writers run is a
consistent snapshot. On the suite's backend (SQLite file or PostgreSQL, ``db_url``).

The server runs as ``sowctl serve`` in its own process group, so SIGKILL takes the
server and its workers down at once, as a crash or an OOM kill would.
"""

from __future__ import annotations

import datetime
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import httpx
import peewee as pw
import pytest

from sowctl.schemas.purchase_orders import PurchaseOrderIn
from sowctl.services import demo_data, purchase_orders
from sowctl.services.access import Caller
from sowctl.services.dataset import export_dataset, import_dataset
from sowctl.storage import models as m
from sowctl.storage.database import open_database
from tests.support.server import Server, seed_demo

# slow: property runs, fuzzing, real servers: the full suite only; database: on each backend
pytestmark = [pytest.mark.slow, pytest.mark.database]

STARTUP_TIMEOUT = 30.0
LINES_PER_ORDER = 3
ACME = Caller(user_id=None, organization_id=demo_data.DEMO_ORG, role="member")


@pytest.fixture
def servers() -> Iterator[list[Server]]:
    started: list[Server] = []
    yield started
    for server in started:
        if server.process.poll() is None:
            server.kill()


def po_body(index: int) -> dict:
    return {
        "project_id": str(demo_data.DEMO_PROJECT_ID),
        "commitment_id": "5001",
        "title": f"crash {index}",
        "vendor_id": 7,
        "status": "draft",
        "line_items": [
            {"description": f"line {n}", "amount": f"{index}.{n}5", "cost_code_id": 3}
            for n in range(LINES_PER_ORDER)
        ],
    }


def check_orders(orders: list[dict]) -> None:
    """Every purchase order whole: all its lines, and totals that are their sum."""
    for order in orders:
        lines = order["line_items"]
        total = sum((Decimal(line["amount"]) for line in lines), Decimal(0))
        if order["title"].startswith("crash "):
            assert len(lines) == LINES_PER_ORDER, order
        assert lines, order
        assert Decimal(order["total_amount"]) == total == Decimal(order["original_amount"]), order


def integrity_ok(db_url: str) -> None:
    database = open_database(db_url)
    try:
        if isinstance(database, pw.SqliteDatabase):
            assert database.execute_sql("PRAGMA integrity_check").fetchone()[0] == "ok"
            assert database.execute_sql("PRAGMA foreign_key_check").fetchall() == []
    finally:
        database.close()


# --- SIGKILL during a stream of writes --------------------------------------------------------


def test_sigkill_during_writes_keeps_every_acknowledged_write_whole(db_url: str, servers) -> None:
    token, key = seed_demo(db_url)
    server = Server(db_url, "--threads", "4", "--rate-per-minute", "1000000", "--rate-per-day", "10000000")
    servers.append(server)
    acked_items: list[str] = []
    acked_orders: list[int] = []
    stop = threading.Event()

    def create_items() -> None:
        headers = {"Authorization": f"Bearer {token}"}
        with httpx.Client(base_url=server.url, timeout=5, headers=headers) as client:
            for index in range(100_000):
                if stop.is_set():
                    return
                try:
                    reply = client.post(
                        f"/api/sow/{demo_data.DEMO_SOW}/items",
                        json={"title": f"crash {index}", "type": "task_item"},
                    )
                except httpx.HTTPError:
                    return  # the server is gone: this write was never acknowledged
                if reply.status_code == 201:
                    acked_items.append(reply.json()["id"])

    def create_orders() -> None:
        headers = {
            "x-api-key": key,
            "organization-id": demo_data.DEMO_ORG,
            "company-id": demo_data.DEMO_COMPANY,
        }
        with httpx.Client(base_url=server.url, timeout=5, headers=headers) as client:
            for index in range(100_000):
                if stop.is_set():
                    return
                try:
                    reply = client.post("/api/external/create-purchase-order", json=po_body(index))
                except httpx.HTTPError:
                    return
                if reply.status_code == 200:
                    acked_orders.append(reply.json()["id"])

    writers = [threading.Thread(target=target) for target in (create_items, create_items, create_orders)]
    for writer in writers:
        writer.start()
    # Kill while both kinds of write are under way: once each has been acknowledged (on a
    # loaded CI machine the first ones take longer than the 1.2 s this used to wait).
    deadline = time.monotonic() + 20
    while not (acked_items and acked_orders) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)
    server.kill()
    stop.set()
    for writer in writers:
        writer.join(timeout=10)
    assert acked_items and acked_orders, "the writers got nothing done before the kill"

    integrity_ok(db_url)
    database = open_database(db_url)
    try:
        stored_items = {item_id for (item_id,) in m.Item.select(m.Item.id).tuples()}
        assert set(acked_items) <= stored_items
        data = export_dataset()
        orders = {order["id"]: order for order in data["purchaseOrders"]}
        assert set(acked_orders) <= set(orders)
        check_orders(list(orders.values()))
        # no line without its order (an order written halfway)
        assert (
            not m.PurchaseOrderLine.select()
            .where(m.PurchaseOrderLine.purchase_order.not_in(m.PurchaseOrder.select(m.PurchaseOrder.id)))
            .exists()
        )
        numbers = [order["number"] for order in orders.values()]
        assert len(numbers) == len(set(numbers))
    finally:
        database.close()

    # the database opens again under a new server, which serves what was acknowledged
    again = Server(db_url)
    servers.append(again)
    with httpx.Client(base_url=again.url, timeout=10) as client:
        assert client.get("/readyz").json() == {"status": "ok"}
        reply = client.get(f"/api/items/{acked_items[-1]}", headers={"Authorization": f"Bearer {token}"})
        assert reply.status_code == 200
    assert again.stop() == 0


# --- SIGKILL during an import -------------------------------------------------------------------


def big_dataset(items: int) -> dict:
    org, project, sow = "org-crash", "6f1c2a9e-0b7d-4c1e-9a51-3d2f8e4b7c11", "sow-crash"
    now = "2026-01-05T09:00:00Z"
    return {
        "organizations": [{"id": org, "name": "Crash"}],
        "projects": [{"id": project, "organizationId": org, "name": "P", "status": "active"}],
        "sows": [{"id": sow, "projectId": project, "title": "S"}],
        "items": [
            {
                "id": f"ci-{n}",
                "sowId": sow,
                "title": f"item {n} " + "x" * 40,
                "type": "task_item",
                "parentItemId": None,
                "orderIndex": n,
                "status": "pending",
                "createdAt": now,
                "updatedAt": now,
            }
            for n in range(items)
        ],
        "dependencies": [
            {
                "id": f"cd-{n}",
                "sourceItemId": f"ci-{n + 1}",
                "targetItemId": f"ci-{n}",
                "dependencyType": "depends_on",
                "riskLevel": "low",
                "status": "active",
                "createdAt": now,
            }
            for n in range(items - 1)
        ],
    }


def writer_busy(db_url: str) -> bool:
    """Whether some connection holds the write transaction an import runs in."""
    if db_url.startswith("postgres"):
        import psycopg2

        conn = psycopg2.connect(db_url)
        try:
            with conn.cursor() as cur:
                cur.execute(
                    "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted "
                    "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
                )
                return cur.fetchone()[0] > 0
        finally:
            conn.close()
    import sqlite3

    conn = sqlite3.connect(db_url, timeout=0, isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("ROLLBACK")
        return False
    except sqlite3.OperationalError:  # "database is locked": the importer holds the write lock
        return True
    finally:
        conn.close()


def test_sigkill_during_an_import_leaves_all_or_nothing(db_url: str, servers, tmp_path: Path) -> None:
    items = 30_000
    payload = json.dumps(big_dataset(items)).encode()
    seed_demo(db_url)
    admin = "adm-" + os.urandom(8).hex()
    server = Server(db_url, "--admin-token", admin)
    servers.append(server)
    outcome: list[object] = []

    def load() -> None:
        try:
            with httpx.Client(base_url=server.url, timeout=60) as client:
                outcome.append(
                    client.post(
                        "/_admin/dataset",
                        content=payload,
                        headers={"Authorization": f"Bearer {admin}", "Content-Type": "application/json"},
                    ).status_code
                )
        except httpx.HTTPError as exc:
            outcome.append(exc)

    loader = threading.Thread(target=load)
    loader.start()
    deadline = time.monotonic() + 20
    while not writer_busy(db_url) and time.monotonic() < deadline and not outcome:
        time.sleep(0.01)
    time.sleep(0.3)  # well inside the write transaction: rows are going in
    server.kill()
    loader.join(timeout=20)
    assert outcome and not isinstance(outcome[0], int), f"the import finished before the kill: {outcome}"

    integrity_ok(db_url)
    database = open_database(db_url)
    try:
        counts = (
            m.Organization.select().where(m.Organization.id == "org-crash").count(),
            m.Item.select().where(m.Item.sow == "sow-crash").count(),
            m.Dependency.select().where(m.Dependency.sow == "sow-crash").count(),
        )
        assert counts in ((0, 0, 0), (1, items, items - 1)), counts
        assert m.Item.select().where(m.Item.sow == demo_data.DEMO_SOW).exists()  # the rest untouched
    finally:
        database.close()


def test_sigkill_during_a_cli_import_leaves_all_or_nothing(db_url: str, tmp_path: Path) -> None:
    items = 30_000
    path = tmp_path / "big.json"
    path.write_text(json.dumps(big_dataset(items)))
    env = {k: v for k, v in os.environ.items() if not k.startswith("SOWCTL_")}
    process = subprocess.Popen(
        [sys.executable, "-m", "sowctl", "--db", db_url, "import", str(path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 30
        while process.poll() is None and not writer_busy(db_url) and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.3)
        finished = process.poll() is not None
        if not finished:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:  # it ended between the poll and the kill
                finished = True
    finally:
        process.wait(timeout=10)
    stderr = process.stderr.read().decode(errors="replace") if process.stderr else ""
    assert not finished, f"the import ended before the kill (exit {process.returncode}): {stderr[-2000:]}"
    integrity_ok(db_url)
    database = open_database(db_url)
    try:
        count = m.Item.select().count()
        assert count in (0, items), count
        assert m.Dependency.select().count() in (0, items - 1)
    finally:
        database.close()


# --- an export while writers run is one snapshot ------------------------------------------------


def test_an_export_during_writes_is_a_consistent_snapshot(db_url: str, db) -> None:
    import_dataset(demo_data.demo_dataset(datetime.date.today()))
    company = demo_data.DEMO_COMPANY
    stop = threading.Event()
    written: list[int] = []
    errors: list[BaseException] = []

    def write() -> None:
        try:
            index = 0
            while not stop.is_set():
                data = PurchaseOrderIn.model_validate(po_body(index))
                written.append(purchase_orders.create_purchase_order(ACME, company, data).id)
                index += 1
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)
        finally:
            m.database_proxy.obj.close()

    writer = threading.Thread(target=write)
    writer.start()
    exports = 0
    try:
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            check_orders(export_dataset()["purchaseOrders"])
            exports += 1
    finally:
        stop.set()
        writer.join(timeout=20)
    assert not errors, errors
    assert exports >= 3 and len(written) >= 10, (exports, len(written))
    check_orders(export_dataset()["purchaseOrders"])
