"""What only PostgreSQL (or a PostgreSQL-compatible database) does; the rest of the suite
runs on PostgreSQL as well when SOWCTL_TEST_DB names one.

* the dataset importer's PostgreSQL paths: explicit ids must move the serial
  sequences past them, and multi-row INSERTs in several batches;
* ``write_transaction``'s advisory lock: one key at a time, different keys in parallel;
* a real serialization failure (SQLSTATE 40001) is recognized as retryable;
* CockroachDB URLs (no server here): its dialect, and no advisory locks.
"""

from __future__ import annotations

import os
import threading
import time
from datetime import date
from typing import Any

import peewee as pw
import pytest

from sowctl.foundation import clock
from sowctl.services.access import Caller
from sowctl.storage import database as db_module
from sowctl.storage import models as m

on_postgres = pytest.mark.skipif(
    not os.environ.get("SOWCTL_TEST_DB", "sqlite").startswith("postgres"),
    reason="PostgreSQL only (set SOWCTL_TEST_DB=postgresql://...)",
)


# --- the importer ---------------------------------------------------------------------------------


@on_postgres
def test_imported_purchase_orders_move_the_sequences_past_their_ids(db) -> None:
    from sowctl.schemas.purchase_orders import PurchaseOrderIn
    from sowctl.services import demo_data, purchase_orders
    from sowctl.services.dataset import import_dataset

    data = demo_data.demo_dataset(date(2026, 3, 16))
    import_dataset(data)
    imported = [order["id"] for order in data["purchaseOrders"]]
    line_ids = [line["id"] for order in data["purchaseOrders"] for line in order["line_items"]]
    order = data["purchaseOrders"][0]
    company = m.FinancialProject.get_by_id(order["project_id"]).company_id
    created = purchase_orders.create_purchase_order(
        Caller.local(),
        company,
        PurchaseOrderIn.model_validate(
            {
                "project_id": str(order["project_id"]),
                "commitment_id": str(order["commitment_id"]),
                "title": "After the import",
                "vendor_id": order["vendor"]["id"],
                "status": "draft",
                "line_items": [
                    {"description": "more", "amount": "1.00", "cost_code_id": line["cost_code"]["id"]}
                    for line in order["line_items"]
                ],
            }
        ),
    )
    # Without setval the sequences would still be at 1: a duplicate key on the next insert.
    assert created.id == max(imported) + 1
    assert min(line.id for line in created.line_items) == max(line_ids) + 1


@on_postgres
def test_multi_row_inserts_in_several_batches_round_trip(db) -> None:
    from sowctl.services.dataset import BATCH_ROWS, export_dataset, import_dataset

    count = BATCH_ROWS * 2 + 37  # two full batches and a short one
    data: dict[str, Any] = {
        "organizations": [{"id": "org-1", "name": "Acme"}],
        "projects": [{"id": "6f1c2a9e-0b7d-4c1e-9a51-3d2f8e4b7c12", "organizationId": "org-1", "name": "P"}],
        "sows": [{"id": "sow-1", "projectId": "6f1c2a9e-0b7d-4c1e-9a51-3d2f8e4b7c12", "title": "S"}],
        "items": [
            {
                "id": f"item-{n:05d}",
                "sowId": "sow-1",
                "title": f"Task {n} — “quoted”, 'single' and \\ backslash",
                "type": "task_item",
                "orderIndex": n,
            }
            for n in range(count)
        ],
        "dependencies": [
            {
                "id": f"dep-{n:05d}",
                "sourceItemId": f"item-{n + 1:05d}",
                "targetItemId": f"item-{n:05d}",
                "dependencyType": "depends_on",
                "riskLevel": "low",
                "slaDate": "2026-12-01",
            }
            for n in range(count - 1)
        ],
    }
    counts = import_dataset(data)
    assert (counts["items"], counts["dependencies"]) == (count, count - 1)
    exported = export_dataset()
    assert [item["title"] for item in exported["items"]] == [item["title"] for item in data["items"]]
    assert {dep["slaDate"] for dep in exported["dependencies"]} == {"2026-12-01"}
    assert m.Dependency.select().where(m.Dependency.before_item_id.is_null()).count() == 0


# --- write_transaction's advisory lock -------------------------------------------------------------


def _holds(lock_key: str, entered: threading.Event, release: threading.Event) -> None:
    try:
        with db_module.write_transaction(lock_key):
            m.Organization.select().count()  # the lock is taken with the first statement
            entered.set()
            release.wait(10)
    finally:
        m.database_proxy.close()


def _enters_while_held(held: str, wanted: str) -> bool:
    """Whether a writer on ``wanted`` gets in while another holds ``held``."""
    entered, release = threading.Event(), threading.Event()
    holder = threading.Thread(target=_holds, args=(held, entered, release))
    holder.start()
    assert entered.wait(10)
    second, never = threading.Event(), threading.Event()
    never.set()
    waiter = threading.Thread(target=_holds, args=(wanted, second, never))
    waiter.start()
    got_in = second.wait(0.5)
    release.set()
    holder.join(10)
    waiter.join(10)
    assert second.is_set()  # it gets in once the first commits, in any case
    return got_in


@on_postgres
def test_writers_of_one_key_take_turns_and_of_two_keys_do_not(db) -> None:
    assert not _enters_while_held("org:a", "org:a")
    assert _enters_while_held("org:a", "org:b")


@on_postgres
def test_the_second_writer_sees_the_first_writer_s_row(db) -> None:
    """READ COMMITTED + the lock: what the first committed is visible after the wait."""
    now = clock.now()
    m.Organization.create(id="org-1", name="Acme")
    seen: list[int] = []
    entered, release = threading.Event(), threading.Event()

    def first() -> None:
        try:
            with db_module.write_transaction("org:org-1"):
                m.Project.create(
                    id="6f1c2a9e-0b7d-4c1e-9a51-3d2f8e4b7c12",
                    organization="org-1",
                    name="P",
                    created_at=now,
                    updated_at=now,
                )
                entered.set()
                release.wait(10)
        finally:
            m.database_proxy.close()

    def second() -> None:
        try:
            with db_module.write_transaction("org:org-1"):
                seen.append(m.Project.select().count())
        finally:
            m.database_proxy.close()

    one = threading.Thread(target=first)
    one.start()
    assert entered.wait(10)
    two = threading.Thread(target=second)
    two.start()
    time.sleep(0.2)
    assert seen == []  # still waiting for the lock
    release.set()
    one.join(10)
    two.join(10)
    assert seen == [1]


def _sent(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The texts Peewee hands the driver from now on (every statement but COMMIT/ROLLBACK)."""
    texts: list[str] = []
    original = pw.Database.execute_sql

    def recording(self, sql, params=None):
        texts.append(sql)
        return original(self, sql, params)

    monkeypatch.setattr(pw.Database, "execute_sql", recording)
    return texts


def _advisory_locks_held() -> int:
    cursor = m.database_proxy.obj.execute_sql(
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()"
    )
    return cursor.fetchone()[0]


@on_postgres
def test_a_write_opens_in_the_round_trip_of_its_first_statement(db, monkeypatch) -> None:
    m.Organization.create(id="org-1", name="Acme")
    sent = _sent(monkeypatch)
    with db_module.write_transaction("org:org-1"):
        assert sent == []  # nothing yet: the opening waits for the first statement
        count = m.Organization.select().count()
        held = _advisory_locks_held()
        m.Organization.create(id="org-2", name="Two")
    assert count == 1 and held == 1
    assert sent[0].startswith("BEGIN; SELECT pg_advisory_xact_lock(") and "SELECT COUNT" in sent[0].upper()
    assert len(sent) == 3  # the count (with the opening), the lock query, the insert
    assert not sent[2].startswith("BEGIN") and _advisory_locks_held() == 0  # committed, released
    assert m.Organization.select().count() == 2


@on_postgres
def test_a_write_that_sends_no_statement_sends_nothing(db, monkeypatch) -> None:
    sent = _sent(monkeypatch)
    with db_module.write_transaction("org:org-1"):
        pass
    assert sent == []
    assert not db.in_transaction()
    assert _advisory_locks_held() == 0
    assert sent == ["SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()"]


@on_postgres
def test_a_driver_cursor_taken_first_in_a_write_runs_after_the_opening(db) -> None:
    """executemany / execute_values take the driver's cursor: the lock is held before they run."""
    with db_module.write_transaction("org:org-1"):
        cursor = db.cursor()
        cursor.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()")
        held = cursor.fetchone()[0]
        cursor.execute("INSERT INTO organization (id, name) VALUES ('org-3', 'Three')")
    assert held == 1
    assert m.Organization.select().where(m.Organization.id == "org-3").count() == 1


@on_postgres
def test_a_write_refused_in_its_first_statement_is_rolled_back(db) -> None:
    m.Organization.create(id="org-1", name="Acme")
    with pytest.raises(pw.IntegrityError), db_module.write_transaction("org:org-1"):
        m.Organization.create(id="org-1", name="Again")
    assert not db.in_transaction() and _advisory_locks_held() == 0
    assert [o.name for o in m.Organization.select()] == ["Acme"]


# --- serialization failures -----------------------------------------------------------------------


@on_postgres
def test_a_real_serialization_failure_is_recognized(db) -> None:
    """Two SERIALIZABLE transactions that each read what the other writes: one fails (40001)."""
    m.Organization.create(id="org-0", name="Zero")
    mine_read = threading.Event()
    errors: list[BaseException] = []

    def other() -> None:
        try:
            mine_read.wait(10)
            with db.atomic():
                db.execute_sql("SET TRANSACTION ISOLATION LEVEL SERIALIZABLE")
                db.execute_sql("SELECT count(*) FROM organization")
                db.execute_sql("INSERT INTO organization (id, name) VALUES ('org-2', 'Two')")
        except BaseException as exc:
            errors.append(exc)
        finally:
            db.close()

    thread = threading.Thread(target=other)
    thread.start()
    with pytest.raises(pw.OperationalError) as failure, db.atomic():
        db.execute_sql("SET TRANSACTION ISOLATION LEVEL SERIALIZABLE")
        db.execute_sql("SELECT count(*) FROM organization")
        mine_read.set()
        thread.join(10)
        db.execute_sql("INSERT INTO organization (id, name) VALUES ('org-1', 'One')")
    assert errors == []
    assert db_module.is_serialization_failure(failure.value), repr(failure.value)
    assert not db_module.is_serialization_failure(pw.IntegrityError("duplicate key"))


# --- CockroachDB (no server needed) ------------------------------------------------------------------


@pytest.mark.parametrize("scheme", ["cockroachdb", "crdb"])
def test_cockroachdb_urls_use_its_dialect_and_no_advisory_locks(scheme: str) -> None:
    from playhouse.cockroachdb import CockroachDatabase

    database = db_module.connect(f"{scheme}://root@127.0.0.1:26257/sowctl")
    assert isinstance(database, CockroachDatabase)
    assert db_module.describe(database) == "root@127.0.0.1:26257/sowctl"
    assert not db_module.has_advisory_locks(database)
    assert db_module.has_advisory_locks(db_module.connect("postgresql://u@127.0.0.1:5432/x"))
    assert not db_module.has_advisory_locks(db_module.connect("sqlite:///:memory:"))
