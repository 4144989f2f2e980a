"""Storage: default location, SQLite pragmas, versioned migrations."""

from __future__ import annotations

import os
import sqlite3
import threading
from datetime import datetime
from pathlib import Path

import peewee as pw
import pytest
import typer

from sowctl.backends import profiles
from sowctl.foundation.errors import ServiceUnavailable, SowctlError, UsageError
from sowctl.storage import database as db_module
from sowctl.storage import migrations
from sowctl.storage import models as m

T0 = datetime(2026, 3, 16, 9, 30, 0)

sqlite_only = pytest.mark.skipif(
    os.environ.get("SOWCTL_TEST_DB", "sqlite").startswith("postgres"), reason="SQLite storage"
)


def pragmas(database: pw.Database) -> dict[str, object]:
    return {
        name: database.execute_sql(f"PRAGMA {name}").fetchone()[0]
        for name in ("journal_mode", "foreign_keys", "busy_timeout")
    }


EXPECTED_PRAGMAS = {"journal_mode": "wal", "foreign_keys": 1, "busy_timeout": 5_000}  # SOWCTL_DB_LOCK_TIMEOUT


# --- where the database lives -------------------------------------------------------------


def test_default_database_is_in_the_per_user_app_dir(cli, tmp_path, monkeypatch):
    monkeypatch.delenv("SOWCTL_DB")  # no --db, no SOWCTL_DB, no profile
    expected = tmp_path / "xdg" / "sowctl" / "sowctl.db"  # XDG_CONFIG_HOME is tmp_path/xdg
    assert Path(typer.get_app_dir("sowctl")) / "sowctl.db" == expected
    assert profiles.default_sqlite_path() == expected
    assert not expected.exists()
    result = cli("sows", "create", "S", "--id", "s1")
    assert result.exit_code == 0, result.stderr
    assert expected.is_file()
    with sqlite3.connect(expected) as raw:
        assert raw.execute("SELECT id FROM sow").fetchall() == [("s1",)]
    assert cli("sows", "list", "-q").stdout == "s1\n"


@sqlite_only
@pytest.mark.parametrize(
    ("spec", "where"),
    [
        ("plain.db", "cwd/plain.db"),
        ("nested/dirs/made.db", "cwd/nested/dirs/made.db"),
        ("sqlite:///relative.db", "cwd/relative.db"),
        ("sqlite:///@abs/absolute.db", "abs/absolute.db"),
        ("~/home.db", "home/home.db"),
    ],
)
def test_database_paths_and_sqlite_urls(tmp_path, monkeypatch, spec, where):
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    database = db_module.open_database(spec.replace("@", str(tmp_path) + "/"))
    try:
        assert Path(database.database).resolve() == (tmp_path / where).resolve()
        assert (tmp_path / where).is_file()
    finally:
        database.close()


def test_in_memory_database(monkeypatch):
    database = db_module.open_database("sqlite:///:memory:")
    assert database.database == ":memory:"
    assert m.Meta.get_by_id("schema_version").value == str(db_module.SCHEMA_VERSION)
    database.close()


def test_an_unsupported_url_is_a_usage_error():
    with pytest.raises(UsageError, match="unsupported database URL scheme 'mysql'"):
        db_module.connect("mysql://user@host/db")


# --- SQLite pragmas, on every connection ---------------------------------------------------


@sqlite_only
def test_sqlite_pragmas(db, db_url):
    assert pragmas(db) == EXPECTED_PRAGMAS
    with sqlite3.connect(db_url) as raw:  # WAL is a property of the file, not just the connection
        assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


@sqlite_only
def test_every_thread_connection_gets_the_pragmas(db):
    seen: dict[str, object] = {}

    def worker() -> None:
        seen["pragmas"] = pragmas(db)
        seen["connection"] = id(db.connection())
        db.close()

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    assert seen["pragmas"] == EXPECTED_PRAGMAS
    assert seen["connection"] != id(db.connection())  # its own connection, not the main one


@sqlite_only
def test_a_connection_may_be_used_from_another_thread(db):
    connection = db.connection()  # opened by this thread
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            connection.execute("SELECT count(*) FROM item").fetchone()
        except BaseException as exc:  # check_same_thread=True would raise ProgrammingError
            errors.append(exc)

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    assert errors == []


@sqlite_only
def test_foreign_keys_are_enforced(db):
    with pytest.raises(pw.IntegrityError):
        m.Sow.create(
            key="s", id="s", organization="no-such-org", project="no-such-project", title="t", created_at=T0
        )
    assert m.Sow.select().count() == 0


# --- migrations -----------------------------------------------------------------------------
# On a fresh SQLite file whatever SOWCTL_TEST_DB says: the suite's PostgreSQL database is
# shared by the session (emptied, not recreated), so it is never "new", and a test that
# marked it newer would break every test after it.


@pytest.fixture
def fresh(tmp_path) -> str:
    return str(tmp_path / "fresh.db")


def test_schema_version_is_recorded(db):
    assert db_module.schema_version() == db_module.SCHEMA_VERSION == len(migrations.MIGRATIONS)
    assert m.Meta.get_by_id("schema_version").value == str(db_module.SCHEMA_VERSION)
    for model in m.ALL_MODELS:
        assert model.table_exists(), model.__name__


def _seed() -> None:
    m.Organization.create(id="org", name="Org")
    project = m.Project.create(id="p", organization="org", name="P", created_at=T0, updated_at=T0)
    sow = m.Sow.create(key="s", id="s", organization="org", project=project, title="S", created_at=T0)
    m.Item.create(id="i", sow=sow, type="task_item", title="kept", created_at=T0, updated_at=T0)


def _counting(monkeypatch) -> list[int]:
    """Wrap every migration so that the test sees which ones run."""
    calls: list[int] = []
    wrapped = []
    for number, step in enumerate(migrations.MIGRATIONS, start=1):

        def run(database, step=step, number=number):
            calls.append(number)
            step(database)

        wrapped.append(run)
    monkeypatch.setattr(migrations, "MIGRATIONS", wrapped)
    return calls


def test_a_second_open_is_a_no_op(fresh, monkeypatch):
    calls = _counting(monkeypatch)
    db_module.open_database(fresh).close()
    assert calls == list(range(1, db_module.SCHEMA_VERSION + 1))
    _seed()
    db_module.open_database(fresh)
    assert calls == list(range(1, db_module.SCHEMA_VERSION + 1))  # nothing ran again
    assert db_module.schema_version() == db_module.SCHEMA_VERSION
    assert m.Item.get_by_id("i").title == "kept"


def test_a_database_of_this_version_migrates_under_the_next_one(fresh, monkeypatch):
    db_module.open_database(fresh).close()
    _seed()
    current = db_module.SCHEMA_VERSION
    runs: list[str] = []

    def v_next(database: pw.Database) -> None:
        runs.append("ran")
        database.execute_sql("CREATE TABLE extra_note (item_id VARCHAR(64) NOT NULL, note TEXT)")
        database.execute_sql("INSERT INTO extra_note (item_id, note) SELECT id, title FROM item")

    monkeypatch.setattr(migrations, "MIGRATIONS", [*migrations.MIGRATIONS, v_next])
    monkeypatch.setattr(migrations, "SCHEMA_VERSION", current + 1)

    database = db_module.open_database(fresh)
    assert runs == ["ran"]
    assert db_module.schema_version() == current + 1
    assert m.Item.get_by_id("i").title == "kept"  # the data survives
    assert database.execute_sql("SELECT item_id, note FROM extra_note").fetchall() == [("i", "kept")]
    db_module.open_database(fresh)
    assert runs == ["ran"]  # once only


def test_a_failed_migration_changes_nothing(fresh, monkeypatch):
    db_module.open_database(fresh).close()
    _seed()
    current = db_module.SCHEMA_VERSION

    def v_broken(database: pw.Database) -> None:
        database.execute_sql("CREATE TABLE half_done (x INTEGER)")
        database.execute_sql("UPDATE item SET title = 'changed'")
        database.execute_sql("SELECT * FROM no_such_table")  # fails half-way

    monkeypatch.setattr(migrations, "MIGRATIONS", [*migrations.MIGRATIONS, v_broken])
    monkeypatch.setattr(migrations, "SCHEMA_VERSION", current + 1)
    with pytest.raises(ServiceUnavailable, match="cannot migrate database"):
        db_module.open_database(fresh)
    monkeypatch.undo()
    db_module.open_database(fresh)
    assert db_module.schema_version() == current
    assert m.Item.get_by_id("i").title == "kept"
    assert "half_done" not in m.database_proxy.obj.get_tables()


def test_a_newer_database_is_refused(fresh):
    db_module.open_database(fresh)
    _seed()
    newer = db_module.SCHEMA_VERSION + 3
    m.Meta.update(value=str(newer)).where(m.Meta.key == "schema_version").execute()
    with pytest.raises(SowctlError) as info:
        db_module.open_database(fresh)
    assert f"schema version {newer}" in info.value.message
    assert f"({db_module.SCHEMA_VERSION})" in info.value.message
    assert info.value.exit_code == 5
    assert m.Meta.get_by_id("schema_version").value == str(newer)  # left as it was
    assert m.Item.get_by_id("i").title == "kept"


def test_the_cli_refuses_a_newer_database_in_one_line(cli, fresh):
    assert cli("--db", fresh, "sows", "create", "S").exit_code == 0
    newer = db_module.SCHEMA_VERSION + 1
    m.Meta.update(value=str(newer)).where(m.Meta.key == "schema_version").execute()
    result = cli("--db", fresh, "sows", "list")
    assert result.exit_code == 5
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert str(newer) in result.stderr and f"({db_module.SCHEMA_VERSION})" in result.stderr
    assert "upgrade sowctl" in result.stderr
