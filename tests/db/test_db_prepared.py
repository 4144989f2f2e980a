"""Prepared statements for the hot-path reads (``sowctl.storage.prepared``): used on PostgreSQL
outside transactions, never inside one, and given up at once, with the right answer,
where a transaction pooler (PgBouncer) makes them unreliable."""

from __future__ import annotations

import os
import threading

import peewee as pw
import pytest

from sowctl.services import credentials
from sowctl.services.access import Caller, item_for
from sowctl.storage import models as m
from sowctl.storage import prepared
from sowctl.storage.database import connect, write_transaction

on_postgres = pytest.mark.skipif(
    not os.environ.get("SOWCTL_TEST_DB", "sqlite").startswith("postgres"),
    reason="PostgreSQL only (set SOWCTL_TEST_DB=postgresql://...)",
)


def test_the_prepared_texts_number_the_parameters():
    statement = prepared.Prepared("SELECT a FROM t WHERE b = %s AND c = %s LIMIT %s", 3)
    assert statement.prepare_sql == (
        f"PREPARE {statement.name} AS SELECT a FROM t WHERE b = $1 AND c = $2 LIMIT $3"
    )
    assert statement.execute_sql == f"EXECUTE {statement.name}(%s, %s, %s)"
    assert prepared.Prepared("SELECT 1", 0).execute_sql == "EXECUTE " + prepared.Prepared("SELECT 1", 0).name


def test_only_postgresql_itself_prepares(tmp_path, monkeypatch):
    assert prepared.Prepared.of(connect(str(tmp_path / "x.db")), "SELECT %s", 1) is None
    postgres = connect("postgresql://postgres@127.0.0.1:1/x")
    assert prepared.Prepared.of(postgres, "SELECT %s", 1) is not None
    assert prepared.Prepared.of(postgres, "SELECT '%%' || %s", 1) is None  # a literal percent
    assert prepared.usable(postgres)
    assert not prepared.usable(connect(str(tmp_path / "x.db")))
    assert not prepared.usable(connect("cockroachdb://root@127.0.0.1:1/x"))
    monkeypatch.setenv("SOWCTL_PG_PREPARE", "off")
    assert not prepared.usable(connect("postgresql://postgres@127.0.0.1:1/x"))


def _fixture(db) -> tuple[str, str]:
    from datetime import datetime

    moment = datetime(2026, 1, 1)
    m.Organization.create(id="org-p", name="P")
    m.Project.create(id="p-p", organization="org-p", name="P", created_at=moment, updated_at=moment)
    m.Sow.create(key="sow-p", id="sow-p", organization="org-p", project="p-p", title="S", created_at=moment)
    m.Item.create(id="item-p", sow="sow-p", type="task_item", title="T", created_at=moment, updated_at=moment)
    return credentials.create_token("user-p", "org-p", "member").secret, "item-p"


def _prepared_names(database: pw.Database) -> set[str]:
    rows = database.execute_sql("SELECT name FROM pg_prepared_statements").fetchall()
    return {name for (name,) in rows}


@on_postgres
def test_reads_outside_a_transaction_are_prepared_once_per_connection(db):
    token, item_id = _fixture(db)
    assert prepared.usable(db)
    for _ in range(3):
        caller = credentials.authenticate_token(token)
        assert item_for(caller, item_id).title == "T"
    names = _prepared_names(db)
    assert sum(name.startswith("sowctl_") for name in names) == 2  # the token, the item
    with write_transaction("org:org-p"):
        before = _prepared_names(db)
        item_for(Caller.local(), item_id)
        assert _prepared_names(db) == before  # nothing prepared inside a transaction


@on_postgres
def test_a_pooler_that_loses_the_statements_turns_preparing_off_with_the_right_answer(db):
    """Behind PgBouncer in transaction mode the next statement may run on a server
    connection that does not hold ours: DEALLOCATE ALL makes this one such a connection."""
    token, item_id = _fixture(db)
    caller = credentials.authenticate_token(token)
    assert item_for(caller, item_id).id == item_id
    db.execute_sql("DEALLOCATE ALL")  # SQLSTATE 26000 on the next EXECUTE
    assert item_for(caller, item_id).id == item_id
    assert not prepared.usable(db)
    assert credentials.authenticate_token(token).organization_id == "org-p"


@on_postgres
def test_a_statement_already_prepared_by_another_client_turns_preparing_off(db):
    """On a pooled server connection another client may have prepared the same name first
    (SQLSTATE 42P05 on PREPARE): the answer is still right."""
    token, _ = _fixture(db)
    statement = credentials._TOKEN._sql(db)[3]
    db.execute_sql(statement.prepare_sql)  # as if another client had, on this server connection
    assert credentials.authenticate_token(token).user_id == "user-p"
    assert not prepared.usable(db)


@on_postgres
def test_each_thread_prepares_on_its_own_connection(db):
    token, item_id = _fixture(db)
    failures: list[BaseException] = []

    def work() -> None:
        try:
            for _ in range(20):
                assert item_for(credentials.authenticate_token(token), item_id).id == item_id
        except BaseException as exc:  # reported to the main thread
            failures.append(exc)
        finally:
            db.close()

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    assert prepared.usable(db)  # no thread ever met a missing statement
