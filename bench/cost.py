"""What a measured run costs per request, whatever else the machine is doing.

Requests per second on two CPUs shared with wrk, PostgreSQL and other work follow the
machine's load; the work one request makes does not. Around a measured run, ``Meter``
reads:

* the server's CPU time: user + system time (``/proc/PID/stat``) of the server process
  and every process below it (its workers);
* on PostgreSQL, the CPU time of the backends serving the run's database (their pids from
  ``pg_stat_activity``, their time from ``/proc``; this runs on the database's machine).
  A backend that ends during a run takes its time with it: the servers keep theirs open.
  Only client backends count: autovacuum's work on the run's database, which runs on its
  own schedule rather than the requests', is left out;
  ``pg_stat_statements`` would give exact figures per statement, but it needs
  ``shared_preload_libraries`` and a restart of a server the machine shares;
* statements and round trips sent by the server, counted in each of its processes: a
  server started with ``environment(directory)`` loads ``bench/costhook/sitecustomize.py``,
  which counts every statement Peewee sends (``execute_sql``, prepared executions, and the
  ``BEGIN``/``COMMIT``/``ROLLBACK`` of transactions) into a small file per process,
  mapped in memory (no system call per statement). A round trip is one call into the
  driver; ``BEGIN; SELECT pg_advisory_xact_lock(...)`` is two statements in one round
  trip. On SQLite the "round trips" are calls into the library, in the process; there, every
  statement SQLite itself runs is counted too (``set_trace_callback`` on every connection the
  process opens through ``sqlite3.connect``, whatever library opens it: datasette's too).
  A peer on SQLAlchemy (``bench/peer_crud.py``) has its engine counted the same way by
  ``count_sqlalchemy``: each cursor statement, and each ``BEGIN``/``COMMIT``/``ROLLBACK``.

Per request, figures divide by the requests wrk counted: ``Cost``.
"""

from __future__ import annotations

import ctypes
import mmap
import os
from dataclasses import dataclass
from pathlib import Path

COUNTS_ENV = "SOWCTL_BENCH_COUNTS"
HOOK_DIR = Path(__file__).resolve().parent / "costhook"
FIELDS = ("statements", "round_trips", "connections", "sqlite_statements")
_TICKS = os.sysconf("SC_CLK_TCK")


# --- in the server's processes: counting what is sent ------------------------------------


class _Counts:
    """This process's counters, in a file of its own under the directory (made on first use,
    so a worker forked after the counting was installed gets its own)."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.pid = 0
        self.values = None

    def add(self, statements: int, field: int = 1) -> None:
        if self.pid != os.getpid():
            self._open()
        self.values[0] += statements
        self.values[field] += 1

    def bump(self, field: int) -> None:
        if self.pid != os.getpid():
            self._open()
        self.values[field] += 1

    def _open(self) -> None:
        pid = os.getpid()
        path = os.path.join(self.directory, str(pid))
        with open(path, "wb+") as handle:
            handle.write(bytes(8 * len(FIELDS)))
            handle.flush()
            self._map = mmap.mmap(handle.fileno(), 8 * len(FIELDS))
        self.values = (ctypes.c_uint64 * len(FIELDS)).from_buffer(self._map)
        # Last: another thread that sees this pid finds the counters ready.
        self.pid = pid


def _statements_in(sql: object) -> int:
    text = str(sql).strip().rstrip(";")
    return text.count(";") + 1


_this_process: _Counts | None = None  # set by count_in_this_process


def count_in_this_process(directory: str) -> None:
    """Count what Peewee sends from this process (and its forks) into ``directory``."""
    global _this_process
    counts = _this_process = _Counts(directory)
    _trace_sqlite(counts)
    try:
        import peewee as pw
    except ImportError:  # a peer without Peewee: SQLite's own count only
        return
    connection_field = FIELDS.index("connections")

    def wrap(cls: type, name: str, statements) -> None:
        original = cls.__dict__[name]

        def counted(self, *args, **kwargs):
            counts.add(statements(args))
            return original(self, *args, **kwargs)

        setattr(cls, name, counted)

    for cls in (pw.Database, pw.SqliteDatabase, pw.PostgresqlDatabase):
        if "_execute_cursor" in cls.__dict__:
            wrap(cls, "_execute_cursor", lambda args: _statements_in(args[0]) if args else 1)
        for name in ("begin", "commit", "rollback"):
            if name in cls.__dict__:
                wrap(cls, name, lambda args: 1)
        if "_connect" in cls.__dict__:
            original_connect = cls.__dict__["_connect"]

            def connect(self, *args, _original=original_connect, **kwargs):
                counts.add(0, connection_field)
                return _original(self, *args, **kwargs)

            cls._connect = connect


def count_sqlalchemy(engine) -> None:
    """Count what a SQLAlchemy ``engine`` sends, as Peewee's statements are counted: every
    statement of a cursor, and the ``BEGIN`` (the driver's, before the first statement),
    ``COMMIT`` and ``ROLLBACK`` of each transaction, each one round trip. For a peer of the
    benchmarks (``bench/peer_crud.py``) in a process started with ``environment``."""
    counts = _this_process
    if counts is None:
        return
    from sqlalchemy import event

    def statement(*_args) -> None:
        counts.add(1)

    event.listen(engine, "before_cursor_execute", statement)
    for name in ("begin", "commit", "rollback"):
        event.listen(engine, name, statement)


def _trace_sqlite(counts: _Counts) -> None:
    """Count every statement SQLite runs, for any library of the process (datasette too)."""
    import sqlite3
    import sqlite3.dbapi2

    field = FIELDS.index("sqlite_statements")
    original = sqlite3.connect

    def connect(*args, **kwargs):
        connection = original(*args, **kwargs)
        connection.set_trace_callback(lambda _sql: counts.bump(field))
        return connection

    # Both names: SQLAlchemy's driver calls sqlite3.dbapi2.connect, a reference of its own.
    sqlite3.connect = sqlite3.dbapi2.connect = connect


def environment(directory: Path, base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for a server process whose statements are to be counted in ``directory``."""
    env = dict(os.environ if base is None else base)
    path = env.get("PYTHONPATH", "")
    env["PYTHONPATH"] = str(HOOK_DIR) + (os.pathsep + path if path else "")
    env[COUNTS_ENV] = str(directory)
    return env


# --- in the benchmark: reading the costs ------------------------------------------------


def cpu_seconds(pid: int) -> float | None:
    """user + system CPU seconds of one process, None once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / _TICKS


def process_tree(root: int) -> list[int]:
    """``root`` and every live process below it."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                parent = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(entry))
    tree, pending = [], [root]
    while pending:
        pid = pending.pop()
        tree.append(pid)
        pending += children.get(pid, [])
    return tree


def counted(directory: Path) -> list[int]:
    """Statements, round trips and connections opened, summed over the processes counting
    into ``directory``."""
    totals = [0] * len(FIELDS)
    for path in directory.iterdir() if directory.is_dir() else ():
        raw = path.read_bytes()
        if len(raw) == 8 * len(FIELDS):
            for k in range(len(FIELDS)):
                totals[k] += int.from_bytes(raw[8 * k : 8 * k + 8], "little")
    return totals


@dataclass
class Snapshot:
    server_cpu: float
    backend_cpu: dict[int, float]
    counts: list[int]


@dataclass
class Cost:
    """What one request cost, on average over a run."""

    requests: int
    server_us: float
    db_us: float | None  # None: SQLite (the database's work is in server_us)
    statements: float | None  # sent by Peewee; None: the server was not started counting
    round_trips: float | None  # calls into the driver (PostgreSQL: round trips)
    connections: float | None  # connections opened
    sqlite_statements: float | None = None  # statements SQLite ran (its trace callback)

    @property
    def total_us(self) -> float:
        return self.server_us + (self.db_us or 0.0)


class Meter:
    """The costs of one server (the process ``pid`` and below), counting into ``counts``,
    and, given ``pg_url`` and ``database``, of the PostgreSQL backends serving that database."""

    def __init__(self, pid: int, counts: Path | None = None, pg_url: str | None = None, database: str = ""):
        self.pid, self.counts, self.database = pid, counts, database
        self._monitor = None
        if pg_url:
            import psycopg2

            self._monitor = psycopg2.connect(pg_url)
            self._monitor.autocommit = True

    def backend_pids(self) -> list[int]:
        if self._monitor is None:
            return []
        with self._monitor.cursor() as cursor:
            cursor.execute(
                "SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()"
                " AND backend_type = 'client backend'",
                (self.database,),
            )
            return [pid for (pid,) in cursor.fetchall()]

    def snapshot(self) -> Snapshot:
        server = sum(cpu_seconds(pid) or 0.0 for pid in process_tree(self.pid))
        backends = {pid: cpu for pid in self.backend_pids() if (cpu := cpu_seconds(pid)) is not None}
        counts = counted(self.counts) if self.counts is not None else []
        return Snapshot(server, backends, counts)

    def cost(self, before: Snapshot, after: Snapshot, requests: int) -> Cost:
        n = max(requests, 1)
        db = None
        if self._monitor is not None:
            db = sum(cpu - before.backend_cpu.get(pid, 0.0) for pid, cpu in after.backend_cpu.items())
        per = [(a - b) / n for a, b in zip(after.counts, before.counts, strict=True)] or [None] * len(FIELDS)
        return Cost(
            requests,
            (after.server_cpu - before.server_cpu) / n * 1e6,
            None if db is None else db / n * 1e6,
            *per,
        )

    def close(self) -> None:
        if self._monitor is not None:
            self._monitor.close()
            self._monitor = None
