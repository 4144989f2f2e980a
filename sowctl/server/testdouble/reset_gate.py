"""The gate between API requests and whole-database changes (reset, replace, restore).

``/_admin/reset``, ``POST /_admin/dataset?replace=true`` and a checkpoint restore
replace the whole database. A request running meanwhile could pass a check (the
SOW exists) and then write after the reset emptied the table: a foreign-key
error, i.e. a 500. So every API request holds the gate *shared* from its first
read to its request-log row, and a whole-database change holds it *exclusive*:
requests in flight finish first, new ones wait until the change is committed.

One gate for every worker of one server:

* in a process, a writer-preferring reader/writer lock (a waiting reset is not
  starved by a stream of new requests);
* across workers, a lock the database host gives out: on PostgreSQL a session
  advisory lock (shared / exclusive, fair: a shared request waits behind a
  waiting exclusive one), on a SQLite file an ``flock`` of ``FILE-gate`` next
  to it (one descriptor per thread, so threads lock independently).
"""

from __future__ import annotations

import contextlib
import os
import threading
import zlib
from collections.abc import Iterator
from typing import Any

import peewee as pw

from sowctl.storage.database import has_advisory_locks

GATE_LOCK_ID = zlib.crc32(b"sowctl test-double gate")


class _ReadersWriter:
    """A reader/writer lock that lets a waiting writer go before new readers."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._readers = 0
        self._writer = False
        self._writers_waiting = 0

    def acquire_shared(self) -> None:
        with self._cond:
            while self._writer or self._writers_waiting:
                self._cond.wait()
            self._readers += 1

    def release_shared(self) -> None:
        with self._cond:
            self._readers -= 1
            if self._readers == 0:
                self._cond.notify_all()

    def acquire_exclusive(self) -> None:
        with self._cond:
            self._writers_waiting += 1
            try:
                while self._writer or self._readers:
                    self._cond.wait()
            finally:
                self._writers_waiting -= 1
            self._writer = True

    def release_exclusive(self) -> None:
        with self._cond:
            self._writer = False
            self._cond.notify_all()


class Gate:
    """``shared()`` around each API request, ``exclusive()`` around a whole-database change."""

    def __init__(self, database: pw.Database) -> None:
        self.database = database
        self._threads = _ReadersWriter()
        self._files = threading.local()
        self._path = _gate_file(database)

    @contextlib.contextmanager
    def shared(self) -> Iterator[None]:
        self._threads.acquire_shared()
        try:
            with self._across_workers(exclusive=False):
                yield
        finally:
            self._threads.release_shared()

    @contextlib.contextmanager
    def exclusive(self) -> Iterator[None]:
        self._threads.acquire_exclusive()
        try:
            with self._across_workers(exclusive=True):
                yield
        finally:
            self._threads.release_exclusive()

    # --- across worker processes ----------------------------------------------------

    @contextlib.contextmanager
    def _across_workers(self, *, exclusive: bool) -> Iterator[None]:
        if isinstance(self.database, pw.PostgresqlDatabase) and has_advisory_locks(self.database):
            with self._advisory(exclusive):
                yield
        elif self._path is not None:
            with self._flock(exclusive):
                yield
        else:  # an in-memory database lives in one process
            yield

    @contextlib.contextmanager
    def _advisory(self, exclusive: bool) -> Iterator[None]:
        suffix = "" if exclusive else "_shared"
        if self.database.is_closed():
            self.database.connect(reuse_if_open=True)
        connection = self.database.connection()
        self.database.execute_sql(f"SELECT pg_advisory_lock{suffix}(%s)", (GATE_LOCK_ID,))
        try:
            yield
        finally:
            # A request that lost its connection lost the lock with it: nothing to release.
            # (is_closed first: connection() would open a new one, or fail with the database away.)
            if not self.database.is_closed() and self.database.connection() is connection:
                try:
                    self.database.execute_sql(f"SELECT pg_advisory_unlock{suffix}(%s)", (GATE_LOCK_ID,))
                except Exception:
                    with contextlib.suppress(Exception):
                        self.database.close()  # closing the session releases its locks

    @contextlib.contextmanager
    def _flock(self, exclusive: bool) -> Iterator[None]:
        import fcntl

        fd = getattr(self._files, "fd", None)
        if fd is None:
            assert self._path is not None
            try:
                fd = os.open(self._path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            except OSError:
                # A read-only directory: one worker is still fully gated, and a request is
                # never refused for want of a lock file.
                yield
                return
            self._files.fd = fd
        fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)


def _gate_file(database: Any) -> str | None:
    if not isinstance(database, pw.SqliteDatabase):
        return None
    name = str(database.database or "")
    if not name or name == ":memory:" or name.startswith("file:"):
        return None
    return name + "-gate"
