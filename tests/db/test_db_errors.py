"""The one classifier of database failures (sowctl/storage/failures.py): by SQLSTATE and SQLite
result code, with words read only where a driver gives no code.

The SQLite errors are real ones, raised through peewee as the server meets them; the
PostgreSQL ones are real where a private cluster can be put in that state
(tests/db/test_database_outages.py serves through them), and made up with the code the
driver would carry where it cannot (a full disk).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import peewee as pw
import psycopg2
import psycopg2.errors
import pytest

from sowctl.foundation.errors import ExitCode
from sowctl.storage import failures
from sowctl.storage.failures import Kind, classify

# --- SQLite: real errors, through peewee ------------------------------------------------------


def _table(path: Path, rows: int = 0) -> None:
    connection = sqlite3.connect(path)
    connection.execute("CREATE TABLE t (x TEXT UNIQUE)")
    connection.executemany("INSERT INTO t VALUES (?)", [(f"{n:0100d}",) for n in range(rows)])
    connection.commit()
    connection.close()


def _busy(path: Path) -> None:
    _table(path)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process's write lock
    try:
        pw.SqliteDatabase(str(path), pragmas={"busy_timeout": 0}).execute_sql("INSERT INTO t VALUES ('x')")
    finally:
        holder.close()


def _read_only(path: Path) -> None:
    _table(path)
    pw.SqliteDatabase(f"file:{path}?mode=ro", uri=True).execute_sql("INSERT INTO t VALUES ('x')")


def _full(path: Path) -> None:
    _table(path)
    database = pw.SqliteDatabase(str(path))
    pages = database.execute_sql("PRAGMA page_count").fetchone()[0]
    database.execute_sql(f"PRAGMA max_page_count = {pages}")
    database.execute_sql("INSERT INTO t VALUES (?)", ("x" * 100_000,))


def _not_a_database(path: Path) -> None:
    path.write_bytes(b"this is no SQLite file " * 200)
    pw.SqliteDatabase(str(path)).execute_sql("SELECT * FROM sqlite_master")


def _corrupt(path: Path) -> None:
    _table(path, rows=2000)
    data = bytearray(path.read_bytes())
    data[4096:8192] = b"\xff" * 4096  # the table's first page after the schema's
    path.write_bytes(bytes(data))
    pw.SqliteDatabase(str(path)).execute_sql("SELECT count(*), max(x) FROM t").fetchall()


def _cannot_open(path: Path) -> None:
    pw.SqliteDatabase(str(path.parent / "no such directory" / "x.db")).connect()


def _constraint(path: Path) -> None:
    _table(path)
    pw.SqliteDatabase(str(path)).execute_sql("INSERT INTO t VALUES ('a'), ('a')")


def _sql_error(path: Path) -> None:
    pw.SqliteDatabase(str(path)).execute_sql("SELECT * FROM no_such_table")


@pytest.mark.parametrize(
    ("provoke", "kind", "code", "rerun"),
    [
        (_busy, Kind.BUSY, "SQLITE_BUSY", True),
        (_read_only, Kind.STORAGE, "SQLITE_READONLY", False),
        (_full, Kind.STORAGE, "SQLITE_FULL", False),
        (_not_a_database, Kind.STORAGE, "SQLITE_NOTADB", False),
        (_corrupt, Kind.STORAGE, "SQLITE_CORRUPT", False),
        (_cannot_open, Kind.UNAVAILABLE, "SQLITE_CANTOPEN", False),
    ],
)
def test_sqlite_failures_are_classified_by_their_result_code(
    tmp_path: Path, provoke: Callable[[Path], None], kind: Kind, code: str, rerun: bool
) -> None:
    with pytest.raises(pw.PeeweeException) as raised:
        provoke(tmp_path / "x.db")
    failure = classify(raised.value)
    assert failure is not None, raised.value
    assert (failure.kind, failure.code, failure.rerun, failure.inferred) == (kind, code, rerun, False)
    assert failures.is_read_only(raised.value) == (code == "SQLITE_READONLY")


@pytest.mark.parametrize("provoke", [_constraint, _sql_error])
def test_other_sqlite_errors_are_bugs(tmp_path: Path, provoke: Callable[[Path], None]) -> None:
    with pytest.raises(pw.PeeweeException) as raised:
        provoke(tmp_path / "x.db")
    assert classify(raised.value) is None


def test_the_sqlite3_modules_own_refusals_are_bugs(tmp_path: Path) -> None:
    connection = sqlite3.connect(tmp_path / "x.db")
    connection.close()
    with pytest.raises(sqlite3.ProgrammingError) as raised:
        connection.execute("SELECT 1")  # no result code: the module refused, not SQLite
    assert classify(raised.value) is None


# --- PostgreSQL: the SQLSTATE, and libpq's code-less connection failures ------------------------


def _pg_error(code: str, message: str = "the database says so") -> pw.PeeweeException:
    """What peewee raises for a psycopg2 error of SQLSTATE ``code`` (as its wrapper builds it)."""
    carrying = type("WithCode", (psycopg2.OperationalError,), {"pgcode": code})(message)
    return pw.OperationalError(carrying, *carrying.args)


@pytest.mark.parametrize(
    ("code", "kind", "name"),
    [
        ("40001", Kind.CONFLICT, "serialization_failure"),
        ("40P01", Kind.CONFLICT, "deadlock_detected"),
        ("55P03", Kind.BUSY, "lock_not_available"),
        ("57014", Kind.BUSY, "query_canceled"),
        ("53300", Kind.BUSY, "too_many_connections"),
        ("53200", Kind.BUSY, "out_of_memory"),
        ("57P01", Kind.UNAVAILABLE, "admin_shutdown"),
        ("57P02", Kind.UNAVAILABLE, "crash_shutdown"),
        ("57P03", Kind.UNAVAILABLE, "cannot_connect_now"),
        ("08006", Kind.UNAVAILABLE, "connection_failure"),
        ("08XYZ", Kind.UNAVAILABLE, ""),  # any code of class 08
        ("53100", Kind.STORAGE, "disk_full"),
        ("58030", Kind.STORAGE, "io_error"),
        ("25006", Kind.STORAGE, "read_only_sql_transaction"),
        ("XX001", Kind.STORAGE, "data_corrupted"),
    ],
)
def test_postgresql_failures_are_classified_by_their_sqlstate(code: str, kind: Kind, name: str) -> None:
    failure = classify(_pg_error(code))
    assert failure is not None
    assert (failure.kind, failure.code, failure.name, failure.inferred) == (kind, code, name, False)
    assert failure.rerun == (kind is Kind.CONFLICT)


def test_a_disk_full_is_described_in_one_line_and_answered_without_the_databases_words() -> None:
    failure = classify(
        _pg_error("53100", 'could not extend file "base/16384/2619": No space left\non device')
    )
    assert failure is not None
    assert failure.describe() == (
        'database cannot store (53100 disk_full): could not extend file "base/16384/2619": '
        "No space left on device"
    )
    error = failure.error()
    assert error.status == 503 and error.exit_code == ExitCode.FAILURE
    assert error.api_message == "the database cannot store anything now; retry later"


@pytest.mark.parametrize("code", ["23505", "42P01", "22001", "40002"])
def test_postgresql_errors_of_the_request_itself_are_bugs(code: str) -> None:
    assert classify(_pg_error(code)) is None


@pytest.mark.parametrize(
    ("message", "kind", "code"),
    [
        # What psycopg2 raises, pgcode None, for what the server or the network said while
        # connecting (the messages are libpq's, as seen).
        (
            'connection to server at "127.0.0.1", port 5432 failed: '
            "FATAL:  the database system is starting up\n",
            Kind.UNAVAILABLE,
            "57P03",
        ),
        (
            "FATAL:  the database system is not accepting connections\n"
            "DETAIL:  Hot standby mode is disabled.\n",
            Kind.UNAVAILABLE,
            "57P03",
        ),
        ("FATAL:  sorry, too many clients already\n", Kind.BUSY, "53300"),
        (
            'connection to server at "127.0.0.1", port 5 failed: Connection refused\n\tIs the server running '
            "on that host and accepting TCP/IP connections?\n",
            Kind.UNAVAILABLE,
            "08001",
        ),
        (
            "server closed the connection unexpectedly\n"
            "\tThis probably means the server terminated abnormally\n",
            Kind.UNAVAILABLE,
            "08006",
        ),
        ("timeout: the database did not answer within 30 s", Kind.UNAVAILABLE, "08006"),
        ("SSL SYSCALL error: EOF detected", Kind.UNAVAILABLE, "08006"),  # nothing known: still a connection
    ],
)
def test_libpq_failures_without_a_code_are_connection_failures(message: str, kind: Kind, code: str) -> None:
    for raised in (
        psycopg2.OperationalError(message),
        pw.OperationalError(psycopg2.OperationalError(message)),
    ):
        failure = classify(raised)
        assert failure is not None
        assert (failure.kind, failure.code, failure.inferred) == (kind, code, True)
        assert "\n" not in failure.describe() and failure.describe().endswith(" ".join(message.split()))


def test_a_closed_psycopg2_connection_is_unavailable_and_other_code_less_errors_are_bugs() -> None:
    failure = classify(pw.InterfaceError(psycopg2.InterfaceError("connection already closed")))
    assert failure is not None and failure.kind is Kind.UNAVAILABLE
    assert classify(psycopg2.ProgrammingError("can't execute an empty query")) is None


def _code_less(message: str) -> pw.PeeweeException:
    return pw.OperationalError(psycopg2.OperationalError(message))


@pytest.mark.parametrize(
    ("raised", "hung_up"),
    [
        (_pg_error("57P01", "terminating connection due to administrator command"), True),
        (_pg_error("57P02"), True),
        (_pg_error("57P05"), True),
        (_code_less("server closed the connection unexpectedly\n"), True),
        (pw.InterfaceError(psycopg2.InterfaceError("connection already closed")), True),
        (_code_less("SSL SYSCALL error: EOF detected"), True),
        # A database that does not answer is not asked again: the deadline's words name no hang-up.
        (_code_less("timeout: the database did not answer within 30 s"), False),
        (_pg_error("57P03"), False),
        (_pg_error("53300"), False),
        (_pg_error("40001"), False),
        (pw.OperationalError("database is locked"), False),
        (ValueError("server closed the connection"), False),
    ],
)
def test_a_connection_the_server_ended_is_told_from_other_failures(raised: Exception, hung_up: bool) -> None:
    """What a read may run again on a new connection for (storage.transactions.with_reconnect)."""
    assert failures.is_hung_up(raised) is hung_up


def test_words_are_read_only_without_a_driver_exception() -> None:
    # Raised by peewee or sowctl: the words are all there is.
    failure = classify(pw.OperationalError("database is locked"))
    assert failure is not None and (failure.kind, failure.code, failure.inferred) == (
        Kind.BUSY,
        "SQLITE_BUSY",
        True,
    )
    assert classify(pw.OperationalError("something else entirely")) is None
    assert classify(pw.IntegrityError("UNIQUE constraint failed: item.id")) is None
    # A driver's code wins over the words of its message.
    assert classify(_pg_error("23505", "duplicate key; the database is locked")) is None
    # Not a database error at all.
    assert classify(ValueError("database is locked")) is None
    assert classify(KeyError("timeout")) is None


def test_the_error_found_under_sowctls_own_wrapping() -> None:
    try:
        try:
            raise _pg_error("57P03", "the database system is starting up")
        except pw.OperationalError as exc:
            raise RuntimeError("while opening") from exc
    except RuntimeError as wrapped:
        failure = classify(wrapped)
    assert failure is not None and failure.code == "57P03"


# --- PostgreSQL: real errors from a cluster of the test's own -----------------------------------


@pytest.mark.slow  # a PostgreSQL cluster of its own
def test_real_postgresql_errors_carry_the_codes_the_classifier_reads(pg_cluster) -> None:
    cluster = pg_cluster(max_connections="4", superuser_reserved_connections="0")
    cluster.sql("CREATE TABLE t (id int PRIMARY KEY, n int)")
    cluster.sql("INSERT INTO t VALUES (1, 0)")
    first, second = cluster.connect(), cluster.connect()
    try:
        # 40001: two SERIALIZABLE transactions that each read what the other writes.
        for connection in (first, second):
            connection.autocommit = False
            connection.cursor().execute("SET TRANSACTION ISOLATION LEVEL SERIALIZABLE")
            connection.cursor().execute("SELECT n FROM t WHERE id = 1")
        first.cursor().execute("UPDATE t SET n = 1 WHERE id = 1")
        first.commit()
        with pytest.raises(psycopg2.Error) as conflict:
            second.cursor().execute("UPDATE t SET n = 2 WHERE id = 1")
        second.rollback()
        assert _kind_and_code(conflict.value) == (Kind.CONFLICT, "40001")

        # 55P03: a lock wait ended by lock_timeout; 57014: a statement ended by statement_timeout.
        first.cursor().execute("LOCK TABLE t IN ACCESS EXCLUSIVE MODE")
        second.cursor().execute("SET lock_timeout = '100ms'")
        with pytest.raises(psycopg2.Error) as locked:
            second.cursor().execute("SELECT * FROM t")
        second.rollback()
        first.rollback()
        assert _kind_and_code(locked.value) == (Kind.BUSY, "55P03")
        second.cursor().execute("SET statement_timeout = '100ms'")
        with pytest.raises(psycopg2.Error) as slow:
            second.cursor().execute("SELECT pg_sleep(5)")
        second.rollback()
        assert _kind_and_code(slow.value) == (Kind.BUSY, "57014")

        # 25006: a write in a read-only transaction.
        second.cursor().execute("SET default_transaction_read_only = on")
        second.commit()
        with pytest.raises(psycopg2.Error) as read_only:
            second.cursor().execute("UPDATE t SET n = 3")
        second.rollback()
        assert _kind_and_code(read_only.value) == (Kind.STORAGE, "25006")

        # 53300 at connect time (no code from libpq: read from the server's words).
        held = [cluster.connect(), cluster.connect()]
        with pytest.raises(psycopg2.OperationalError) as crowded:
            cluster.connect()
        for connection in held:
            connection.close()
        assert _kind_and_code(crowded.value) == (Kind.BUSY, "53300")

        # 57P01 on a connection the server ended (pg_terminate_backend; a fast shutdown does the same).
        with first.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            pid = cursor.fetchone()[0]
        first.rollback()
        second.autocommit = True
        second.cursor().execute("SELECT pg_terminate_backend(%s)", (pid,))
        with pytest.raises(psycopg2.Error) as ended:
            first.cursor().execute("SELECT 1")
        assert _kind_and_code(ended.value)[0] is Kind.UNAVAILABLE
    finally:
        first.close()
        second.close()


def _kind_and_code(exc: BaseException) -> tuple[Kind, str] | None:
    failure = classify(exc)
    return (failure.kind, failure.code) if failure else None
