"""Serialised write transactions (one writer per lock key), and running again what the
database refused for a reason that may not recur (a lock, a serialization failure)."""

from __future__ import annotations

import contextlib
import contextvars
import random
import time
import zlib
from collections.abc import Callable, Iterator
from typing import TypeVar

import peewee as pw

from sowctl.storage import failures, lock_share, models
from sowctl.storage.guards import GuardedSqliteDatabase, check_storage
from sowctl.storage.pg_writes import LockedTransaction

T = TypeVar("T")

# Advisory-lock namespace for migrations on PostgreSQL (any constant works).
_MIGRATION_LOCK = 0x50C7


@contextlib.contextmanager
def _serialised(database: pw.Database, lock_key: str) -> Iterator[None]:
    if isinstance(database, pw.SqliteDatabase):
        # IMMEDIATE takes the write lock up front: the check-then-write sequences
        # inside (cycle checks, numbering) see no concurrent writer.
        turn = (
            database.write_turn(lock_key)
            if isinstance(database, GuardedSqliteDatabase)
            else contextlib.nullcontext()
        )
        # The caller's share of the lock (``lock_share``): waited for before the turn, the
        # hold charged after the commit; a nested transaction is its outer one's.
        share = (
            lock_share.accounted(database) if database.transaction_depth() == 0 else contextlib.nullcontext()
        )
        try:
            with share as hold, turn, database.atomic("IMMEDIATE"):
                if hold is not None:
                    hold.started()
                yield
                # Checked before the commit: a write into a removed file is refused, not lost.
                check_storage(database)
        except pw.OperationalError as exc:
            # SQLite rolls back by itself after SQLITE_FULL or an I/O error; peewee's own
            # ROLLBACK then fails and would hide the error that says what happened.
            cause: BaseException | None = exc
            while cause is not None and "no transaction is active" in str(cause):
                cause = cause.__context__
            if cause is not None and cause is not exc:
                raise cause from None
            raise
        return
    if database.transaction_depth() == 0 and has_advisory_locks(database):
        with LockedTransaction(database, _lock_id(lock_key)):
            yield
        return
    with database.atomic():
        yield


def has_advisory_locks(database: pw.Database) -> bool:
    """PostgreSQL, but not CockroachDB, whose advisory-lock functions are missing or no-ops
    in most versions. CockroachDB runs every transaction SERIALIZABLE instead: of two
    transactions that would together break a check-then-write rule, one is aborted with
    SQLSTATE 40001, and ``retry_serialization_failures`` runs it again, now seeing the other.
    """
    if not isinstance(database, pw.PostgresqlDatabase):
        return False
    from playhouse.cockroachdb import CockroachDatabase

    return not isinstance(database, CockroachDatabase)


def _lock_id(lock_key: str) -> int:
    return zlib.crc32(lock_key.encode()) ^ _MIGRATION_LOCK


# The lock key of this thread's outermost write transaction, if one is open.
_held_key: contextvars.ContextVar[str | None] = contextvars.ContextVar("sowctl_write_lock", default=None)


def hold_lock(lock_key: str) -> None:
    """Inside a write transaction, also take ``lock_key``'s lock until commit.

    For a writer that learns late which organizations it touches (the dataset
    importer). PostgreSQL only: SQLite's transaction already excludes every writer.
    Take several keys in sorted order, so that two such writers cannot deadlock.
    """
    if _held_key.get() == lock_key:
        return  # the transaction was opened with this lock
    database = models.database_proxy.obj
    if has_advisory_locks(database):
        database.execute_sql("SELECT pg_advisory_xact_lock(%s)", (_lock_id(lock_key),))


def try_lock(lock_key: str) -> bool:
    """Inside a write transaction, take ``lock_key``'s lock until commit if no other
    transaction holds it; whether it was taken. For work that one writer may do for all
    (pruning the events): it never waits, so it may come after any other lock. SQLite:
    always true (its transaction already excludes every writer)."""
    database = models.database_proxy.obj
    if not has_advisory_locks(database):
        return True
    row = database.execute_sql("SELECT pg_try_advisory_xact_lock(%s)", (_lock_id(lock_key),)).fetchone()
    return bool(row[0])


@contextlib.contextmanager
def write_transaction(lock_key: str = "global") -> Iterator[None]:
    """A transaction that serialises writers sharing ``lock_key`` (e.g. an organization).

    SQLite has one writer at a time anyway; PostgreSQL takes an advisory lock held
    until commit, so two requests that would together close a cycle run one after
    the other and the second sees the first's row.
    """
    outermost = _held_key.get() is None
    token = _held_key.set(lock_key) if outermost else None
    try:
        with _serialised(models.database_proxy.obj, lock_key):
            yield
    finally:
        if token is not None:
            _held_key.reset(token)


def with_retries(operation: Callable[[], T], attempts: int = 5) -> T:
    """Run ``operation`` (reads), again after a failure whose statements may simply run
    again (``db_errors``: a briefly locked SQLite file, a serialization failure), with backoff."""
    for attempt in range(attempts):
        try:
            return operation()
        except (pw.OperationalError, pw.InternalError) as exc:
            if not failures.is_rerunnable(exc) or attempt == attempts - 1:
                raise
            time.sleep(0.05 * 2**attempt)
    raise AssertionError("unreachable")


def with_reconnect(operation: Callable[[], T], reconnect: Callable[[], None]) -> T:
    """Run ``operation`` (a read, outside any transaction), and once more after
    ``reconnect()`` when it found that the server had ended this thread's connection while
    it sat idle (``failures.is_hung_up``: a restart since the last request). A caller that
    lets the read find that out saves asking the kernel before every request."""
    try:
        return operation()
    except (pw.OperationalError, pw.InterfaceError) as exc:
        if not failures.is_hung_up(exc) or models.database_proxy.obj.in_transaction():
            raise
    reconnect()
    return operation()


WRITE_ATTEMPTS = 5


def is_serialization_failure(exc: BaseException) -> bool:
    """Whether the database aborted ``exc``'s transaction so that it may be run again
    (SQLSTATE 40001 serialization_failure, CockroachDB's "restart transaction" included,
    and 40P01 deadlock_detected: ``db_errors``)."""
    return failures.is_conflict(exc)


def retry_serialization_failures(operation: Callable[[], T], attempts: int = WRITE_ATTEMPTS) -> T:
    """Run ``operation`` (whole transactions), and again after a serialization failure.

    Distributed PostgreSQL-compatible databases (CockroachDB, YugabyteDB) abort one of
    two conflicting transactions with SQLSTATE 40001 and expect the client to retry;
    PostgreSQL does it too for deadlocks and SERIALIZABLE transactions. The aborted
    transaction was rolled back, so running ``operation`` again from the start is safe;
    the backoff is exponential with jitter, so that the contenders do not collide again.
    Inside an outer transaction nothing is retried: that one is aborted as well, and only
    its owner can start over.
    """
    for attempt in range(attempts):
        try:
            return operation()
        except (pw.OperationalError, pw.InternalError) as exc:
            database = models.database_proxy.obj
            nested = database is not None and database.transaction_depth() > 0
            if nested or attempt == attempts - 1 or not failures.is_conflict(exc):
                raise
            time.sleep(0.01 * 2**attempt * (1 + random.random()))
    raise AssertionError("unreachable")
