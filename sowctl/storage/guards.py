"""Guards that turn a failing disk or database server into a clear refusal, never a lost write.

* **A SQLite file removed or replaced while open**: the open connections keep writing
  into the deleted inode, so every write would be acknowledged and then lost at the
  next start. ``GuardedSqliteDatabase`` remembers the file's identity (device and
  inode) and ``check_file`` refuses writes, and ``/healthz``, once the path no
  longer names that file.
* **A SQLite file that cannot be written when a connection opens** (made immutable with
  ``chattr +i``, its permissions or mount changed): SQLite opens it read-only without a
  word, and that connection would refuse every write ("attempt to write a readonly
  database") long after the file became writable again. ``GuardedSqliteDatabase``
  notes such a connection (opened while the file was unwritable, or met that error) and
  ``reopen_if_writable``, which the server calls before each request, replaces it once
  the file can be written. Meanwhile ``check_writable`` refuses every write alike
  (a connection opened earlier could still write into the WAL).
* **An outside process holding SQLite's write lock** (a long import, a backup, a
  ``sqlite3`` shell left in a transaction): a write waits for the lock at most
  ``LOCK_TIMEOUT_SECONDS`` (``SOWCTL_DB_LOCK_TIMEOUT``, SQLite's busy timeout), then
  fails with "database is locked", which the server answers 503 with ``Retry-After``;
  nothing of it was written. Reads do not wait for that lock (WAL).
* **Writers of one process passed over**: SQLite's busy handler makes a waiting writer
  sleep and poll (longer and longer, up to 100 ms a time), so a writer that keeps
  coming back takes the lock again in the gaps and one that waits can wait past the
  busy timeout behind writes shorter than it. ``WriteTurns`` queues the threads of
  one process that want the write lock, one line per lock key (an organization), the
  lines taking turns, each writer woken as the one before commits; only writers in
  other processes still meet the polling.
* **A database server that stops answering** (frozen, partitioned): libpq has no
  deadline of its own for a query, so psycopg2 runs with a wait callback that gives
  every call, connecting included, ``DB_TIMEOUT_SECONDS`` (``SOWCTL_DB_TIMEOUT``),
  after which the call fails and the server answers 503 instead of hanging. ``/healthz``
  gives its own calls a shorter one (``deadline``), so that it says 503 soon. The
  connection also asks the kernel to give up on a peer that stops acknowledging
  (``tcp_user_timeout``) and to probe idle connections (keepalives): libpq's
  ``connect_timeout`` does not apply to the asynchronous connections this mode makes.
* **A database server that restarted, failed over or ended a connection** while a
  thread's connection sat idle between requests: the server closed it, but the
  client learns so only when it next sends a query, which would then fail.
  ``drop_dead_connection``, which the server calls before each request, closes a
  connection the server has already spoken on or hung up (an idle connection has
  nothing to read unless the server ended it), so the request opens a new one.
"""

from __future__ import annotations

import collections
import contextlib
import os
import select
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import peewee as pw

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

from sowctl.foundation.errors import ServiceUnavailable
from sowctl.storage import failures
from sowctl.storage.peewee_compat import connection_state


def _seconds(name: str, default: float) -> float:
    """A positive number of seconds from environment variable ``name``; a bad value is
    reported by ``check_settings`` when a database is opened (not at import)."""
    text = os.environ.get(name) or ""
    try:
        value = float(text) if text else default
    except ValueError:
        return default
    return value if 0 < value < 1e9 else default


def check_settings() -> None:
    """Refuse (exit 2) a timeout variable that is not a positive number of seconds."""
    from sowctl.foundation.errors import UsageError, quoted

    for name in ("SOWCTL_DB_TIMEOUT", "SOWCTL_DB_LOCK_TIMEOUT", "SOWCTL_DB_HEALTH_TIMEOUT"):
        text = os.environ.get(name) or ""
        try:
            ok = not text or 0 < float(text) < 1e9
        except ValueError:
            ok = False
        if not ok:
            raise UsageError(f"{name} must be a positive number of seconds, not {quoted(text)}")


DB_TIMEOUT_SECONDS = _seconds("SOWCTL_DB_TIMEOUT", 30)
# /healthz must say 503 well before a load balancer's own probe gives up.
HEALTH_TIMEOUT_SECONDS = _seconds("SOWCTL_DB_HEALTH_TIMEOUT", 2)
# Short enough that writers queued behind an outside lock give their threads back soon,
# long enough to ride out any write of ours (milliseconds) and most imports' batches.
LOCK_TIMEOUT_SECONDS = _seconds("SOWCTL_DB_LOCK_TIMEOUT", 5)
# Idle connections are probed after this long, then every interval, and dropped after
# count unanswered probes: a database gone while a worker sat idle is noticed by the kernel.
_KEEPALIVE = {"keepalives": 1, "keepalives_idle": 10, "keepalives_interval": 5, "keepalives_count": 3}

_override = threading.local()


@contextlib.contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Give this thread's database calls inside the block at most ``seconds`` each
    (never more than ``DB_TIMEOUT_SECONDS``)."""
    previous = getattr(_override, "seconds", None)
    _override.seconds = min(seconds, DB_TIMEOUT_SECONDS)
    try:
        yield
    finally:
        _override.seconds = previous


def current_timeout() -> float:
    """The deadline of one database call on this thread, in seconds."""
    return getattr(_override, "seconds", None) or DB_TIMEOUT_SECONDS


def connection_options(given: set[str]) -> dict[str, int]:
    """libpq options that bound a connection at the TCP level, except those the URL sets."""
    options = {**_KEEPALIVE, "tcp_user_timeout": int(DB_TIMEOUT_SECONDS * 1000)}
    return {name: value for name, value in options.items() if name not in given}


_QUEUED_TOO_LONG = "database is locked (waited for this server's other writes)"


class WriteTurns:
    """Whose turn it is to write: one holder at a time, with a deadline for the others.

    Waiting writers stand in one line per lock key (``write_transaction``'s: an
    organization, ``import``...), each line first come first served, and the lines take
    turns: the writer after the holder is the first of the line that was served longest
    ago. So one organization's writes queued by the dozen delay another organization's
    write by at most one of theirs. A writer whose deadline passes leaves its line and
    fails with SQLite's own "database is locked", which the server answers 503."""

    def __init__(self) -> None:
        self._changed = threading.Condition(threading.Lock())
        self._lines: dict[str, collections.deque[object]] = {}  # in the order of their turns
        self._holder: object | None = None

    @contextlib.contextmanager
    def turn(self, key: str, timeout: float) -> Iterator[None]:
        ticket = object()
        with self._changed:
            if self._holder is None and not self._lines:
                self._holder = ticket
            else:
                self._lines.setdefault(key, collections.deque()).append(ticket)
                deadline = time.monotonic() + timeout
                while self._holder is not ticket:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        self._leave(key, ticket)
                        raise pw.OperationalError(_QUEUED_TOO_LONG)
                    self._changed.wait(remaining)
        try:
            yield
        finally:
            with self._changed:
                self._holder = self._next()
                self._changed.notify_all()

    def _next(self) -> object | None:
        """The first writer of the line whose turn it is; that line goes to the back."""
        key = next(iter(self._lines), None)
        if key is None:
            return None
        line = self._lines.pop(key)
        ticket = line.popleft()
        if line:
            self._lines[key] = line
        return ticket

    def _leave(self, key: str, ticket: object) -> None:
        line = self._lines[key]
        line.remove(ticket)
        if not line:
            del self._lines[key]

    @property
    def waiting(self) -> int:
        """Writers holding or waiting for a turn (for tests)."""
        with self._changed:
            return (self._holder is not None) + sum(len(line) for line in self._lines.values())


# Whether this process's SQLite writers take turns with other processes' too (``serve``: its
# workers and their helper processes write the same file), and how long a writer of this
# process waits, after this process last wrote, before it looks for the turn.
_TURNS_BETWEEN_PROCESSES = False
_STEP_ASIDE_SECONDS = 0.002
# How often a writer waiting for another process's writer looks whether it is done.
_POLL_SECONDS = 0.001


def share_write_turns_between_processes(step_aside: float = 0.002) -> None:
    """Have this process's SQLite writers take turns with those of other processes that call
    this too (``sowctl serve``: a worker and its helper process). ``step_aside``: seconds a
    writer waits after this process's last write before it asks for the turn, so that a
    writer of another process already waiting gets it first (a helper process, whose writes
    are heavy ones, steps aside longer than a worker)."""
    global _TURNS_BETWEEN_PROCESSES, _STEP_ASIDE_SECONDS
    _TURNS_BETWEEN_PROCESSES = True
    _STEP_ASIDE_SECONDS = step_aside


class ProcessTurns:
    """The turn to write a SQLite file between processes: an exclusive ``flock`` on a file
    beside it (``<database>-writers``; flock locks never meet SQLite's own POSIX locks).

    SQLite's busy handler makes a writer of another process sleep and poll, longer and longer
    (up to 100 ms a time), so a process whose writers follow each other (a helper running
    several heavy writes) keeps the lock in the gaps. Here a waiting writer looks every
    millisecond, and a process that just released the turn waits a while before it takes it
    again (``share_write_turns_between_processes``), so a writer of another process gets the
    next turn."""

    def __init__(self, path: str) -> None:
        self.path = path + "-writers"
        self._fd: int | None = None
        self._released = 0.0

    @contextlib.contextmanager
    def hold(self, timeout: float) -> Iterator[None]:
        if self._fd is None and fcntl is not None:
            with contextlib.suppress(OSError):  # a directory that cannot be written: no file
                self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        if self._fd is None or fcntl is None:  # the busy handler alone (as on Windows)
            yield
            return
        since = time.monotonic() - self._released
        if since < _STEP_ASIDE_SECONDS:
            time.sleep(_STEP_ASIDE_SECONDS - since)
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise pw.OperationalError(_QUEUED_TOO_LONG) from None
                time.sleep(_POLL_SECONDS)
        try:
            yield
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            self._released = time.monotonic()


class GuardedSqliteDatabase(pw.SqliteDatabase):
    """A SQLite database that notices when its file is removed or replaced, and whose
    writers in this process take turns (``write_turn``)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._identity: tuple[int, int] | None = None
        self.turns = WriteTurns()
        self._process_turns: ProcessTurns | None = None

    def write_turn(self, key: str) -> contextlib.AbstractContextManager[None]:
        """This thread's turn to write, in ``key``'s line, for a transaction that takes the
        write lock; a nested transaction already has it."""
        if self.transaction_depth() > 0:
            return contextlib.nullcontext()
        if self.database in ("", ":memory:") or not _TURNS_BETWEEN_PROCESSES:
            return self.turns.turn(key, LOCK_TIMEOUT_SECONDS)
        return self._turn_between_processes(key)

    @contextlib.contextmanager
    def _turn_between_processes(self, key: str) -> Iterator[None]:
        if self._process_turns is None:
            self._process_turns = ProcessTurns(self.database)
        with self.turns.turn(key, LOCK_TIMEOUT_SECONDS), self._process_turns.hold(LOCK_TIMEOUT_SECONDS):
            yield

    def _file_identity(self) -> tuple[int, int] | None:
        try:
            info = os.stat(self.database)
        except OSError:
            return None
        return info.st_dev, info.st_ino

    def _connect(self):
        connection = super()._connect()
        if self.database not in ("", ":memory:"):
            identity = self._file_identity()
            if self._identity is None:
                self._identity = identity
            elif identity != self._identity:
                connection.close()
                raise DatabaseFileReplaced(self.database)
            # SQLite fell back to read-only if it could not open the file for writing.
            connection_state(self).read_only_connection = (
                None if os.access(self.database, os.W_OK) else connection
            )
        return connection

    def execute_sql(self, sql, params=None):
        try:
            return super().execute_sql(sql, params)
        except pw.OperationalError as exc:
            self._note_read_only(exc)
            raise

    def commit(self):
        try:
            return super().commit()
        except pw.OperationalError as exc:
            self._note_read_only(exc)
            raise

    def _note_read_only(self, exc: pw.OperationalError) -> None:
        # SQLITE_READONLY: this connection cannot write, whatever the file allows now.
        if failures.is_read_only(exc) and not self.is_closed():
            connection_state(self).read_only_connection = connection_state(self).conn

    def reopen_if_writable(self) -> None:
        """Close this thread's connection if it was opened while the file could not be
        written and the file can be written now: the next query opens a read-write one.
        Call it between transactions (at the start of a request)."""
        stale = getattr(connection_state(self), "read_only_connection", None)
        if stale is None:
            return
        if connection_state(self).conn is not stale:  # closed since, and perhaps reopened writable
            connection_state(self).read_only_connection = None
        elif os.access(self.database, os.W_OK) and not self.in_transaction():
            self.close()

    def check_file(self) -> None:
        """Raise ServiceUnavailable when the path no longer names the file that was opened."""
        if self._identity is None or self.database in ("", ":memory:"):
            return
        if self._file_identity() != self._identity:
            raise DatabaseFileReplaced(self.database)

    def check_writable(self) -> None:
        """Raise ServiceUnavailable while the file cannot be written. Asked before a write
        (not by every transaction: reading a read-only file is fine): a connection opened
        earlier could still write into the WAL, so writes would succeed or fail by chance."""
        self.check_file()  # a removed file says so, not merely that it cannot be written
        if self.database not in ("", ":memory:") and not os.access(self.database, os.W_OK):
            raise DatabaseFileUnwritable(self.database)


class DatabaseFileReplaced(ServiceUnavailable):
    """The database path names another file now; the path is for the operator, not API clients."""

    _CONSEQUENCE = "nothing more can be stored until the server restarts"

    def __init__(self, path: str) -> None:
        super().__init__(f"the database file {path} was removed or replaced; {self._CONSEQUENCE}")

    @property
    def api_message(self) -> str:
        return f"the database file was removed or replaced; {self._CONSEQUENCE}"


class DatabaseFileUnwritable(ServiceUnavailable):
    """The database file cannot be written now (made immutable, read-only, on a read-only mount)."""

    def __init__(self, path: str) -> None:
        super().__init__(f"the database file {path} cannot be written; retry when it can")

    @property
    def api_message(self) -> str:
        return "the database cannot store anything now; retry later"


def check_storage(database: pw.Database) -> None:
    """Raise ServiceUnavailable when writes to ``database`` could not be kept."""
    if isinstance(database, GuardedSqliteDatabase):
        database.check_file()


def check_writable(database: pw.Database) -> None:
    """``check_storage``, and raise ServiceUnavailable while ``database``'s file cannot be
    written (the server asks before each write and in /healthz)."""
    if isinstance(database, GuardedSqliteDatabase):
        database.check_writable()


def drop_dead_connection(database: pw.Database) -> None:
    """Close this thread's PostgreSQL connection if the server ended it while it was idle.

    Call it between transactions (at the start of a request); a healthy idle connection
    has nothing to read, so a readable one carries the server's farewell (FATAL 57P01
    "terminating connection", a shutdown, a restart) or its end of file."""
    if not isinstance(database, pw.PostgresqlDatabase) or database.is_closed() or database.in_transaction():
        return
    connection = connection_state(database).conn
    try:
        dead = bool(connection.closed) or _readable(connection.fileno())
    except Exception:  # psycopg2 refuses fileno() on a connection it knows is broken
        dead = True
    if dead:
        with contextlib.suppress(Exception):  # closing a broken connection may fail; it is gone
            database.close()


def _readable(fileno: int) -> bool:
    poller = select.poll()  # not select(): a server with many sockets has descriptors above 1024
    poller.register(fileno, select.POLLIN | select.POLLPRI)
    return bool(poller.poll(0))


def install_query_deadline() -> None:
    """Give every psycopg2 call a deadline (idempotent; a no-op without psycopg2)."""
    global _wait_with_deadline
    try:
        import psycopg2
        import psycopg2.extensions as extensions
    except ImportError:
        return
    if _wait_with_deadline is None:
        _wait_with_deadline = _deadline_wait(
            extensions.POLL_OK, extensions.POLL_READ, extensions.POLL_WRITE, psycopg2.OperationalError
        )
    if extensions.get_wait_callback() is not _wait_with_deadline:
        extensions.set_wait_callback(_wait_with_deadline)


_wait_with_deadline: Callable[[Any], None] | None = None  # made once psycopg2 is found


def _deadline_wait(ok: int, read: int, write: int, failure: type[Exception]) -> Callable[[Any], None]:
    """psycopg2's wait callback, with the driver's poll states and error bound once: it runs
    for every statement."""

    def wait(connection: Any) -> None:
        seconds = current_timeout()
        deadline = time.monotonic() + seconds
        while True:
            state = connection.poll()
            if state == ok:
                return
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise failure(f"timeout: the database did not answer within {seconds:g} s")
            fileno = connection.fileno()
            if state == read:
                select.select([fileno], [], [], remaining)
            elif state == write:
                select.select([], [fileno], [], remaining)
            else:  # pragma: no cover - psycopg2 documents no other state
                raise failure(f"bad poll state {state}")

    return wait
