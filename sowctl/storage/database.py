"""Opening the database (and bringing its schema up to date).

The migrations are in ``sowctl.storage.migrations``, the write transactions and retries in
``sowctl.storage.transactions``; their names are offered here too, the storage API its
callers have always imported from this module.
"""

from __future__ import annotations

import os
from pathlib import Path

import peewee as pw

from sowctl.foundation.errors import ServiceUnavailable, SowctlError, UsageError, quoted
from sowctl.storage import guards, models
from sowctl.storage.guards import GuardedSqliteDatabase, install_query_deadline
from sowctl.storage.migrations import SCHEMA_VERSION, apply_migrations, schema_version
from sowctl.storage.pg_writes import PostgresqlWrites
from sowctl.storage.transactions import (
    WRITE_ATTEMPTS,
    has_advisory_locks,
    hold_lock,
    is_serialization_failure,
    retry_serialization_failures,
    try_lock,
    with_reconnect,
    with_retries,
    write_transaction,
)

__all__ = [
    "SCHEMA_VERSION",
    "SQLITE_PRAGMAS",
    "WRITE_ATTEMPTS",
    "apply_migrations",
    "close_database",
    "connect",
    "database_epoch",
    "describe",
    "has_advisory_locks",
    "hold_lock",
    "is_serialization_failure",
    "is_sqlite",
    "open_database",
    "refuse_throwaway",
    "require_directory",
    "require_existing",
    "retry_serialization_failures",
    "schema_version",
    "sqlite_file",
    "try_lock",
    "with_reconnect",
    "with_retries",
    "write_transaction",
]

SQLITE_PRAGMAS = {
    "journal_mode": "wal",
    "foreign_keys": 1,
    # WAL + NORMAL survives a process crash (SIGKILL); only power loss can drop the tail.
    "synchronous": "normal",
    "cache_size": -32_000,
}


def connect(url_or_path: str | os.PathLike | None) -> pw.Database:
    """Build (not yet open) a Peewee database for a SQLite path or a database URL.

    The default database (in the per-user app dir) is the CLI's to choose:
    ``sowctl.backends.profiles.default_sqlite_path``.
    """
    target = os.fspath(url_or_path) if url_or_path is not None else ""
    if not target:
        raise ValueError("no database given: a SQLite path or a database URL")
    guards.check_settings()
    sqlite_path = sqlite_file(target)
    if sqlite_path is not None:
        return _sqlite(sqlite_path)
    scheme = target.split("://", 1)[0].lower()
    if scheme not in ("postgres", "postgresql", "cockroachdb", "crdb"):
        raise UsageError(
            f"unsupported database URL scheme {scheme!r}: use a SQLite file path, "
            "sqlite:///path or postgresql://user@host:port/db"
        )
    try:
        import psycopg2  # noqa: F401  (peewee would only say "psycopg2 postgres driver not found")
    except ImportError:
        raise SowctlError(
            f"{scheme}:// databases need the PostgreSQL driver, which is not installed: "
            "pip install psycopg2-binary"
        ) from None
    from urllib.parse import parse_qs, urlparse, urlsplit

    import playhouse.db_url as db_url

    install_query_deadline()
    options = guards.connection_options(set(parse_qs(urlsplit(target).query)))
    database = db_url.connect(target, **options)  # checks the URL, chooses the class
    if type(database) is pw.PostgresqlDatabase:  # not CockroachDB: its own class, no advisory locks
        return PostgresqlWrites(**{**db_url.parseresult_to_dict(urlparse(target)), **options})
    return database


def sqlite_file(target: str) -> str | None:
    """The SQLite file (or ``:memory:``) a path or ``sqlite:///`` URL names; None for a server URL."""
    if "://" not in target:
        return target
    scheme, rest = target.split("://", 1)
    if scheme.lower() == "sqlite":
        return rest[1:] or ":memory:"
    return None


def refuse_throwaway(url_or_path: str) -> None:
    """Refuse (exit 2) a --db that names SQLite's in-memory database (``:memory:``,
    ``sqlite:///``, ``sqlite:///:memory:``): it would be created empty for one command
    and thrown away, so a write would report success and keep nothing, and a read would
    show an empty database. Code (tests, an embedded server) may still open one itself."""
    if sqlite_file(url_or_path) == ":memory:":
        raise UsageError(
            f"--db (or SOWCTL_DB) {quoted(url_or_path)} names an in-memory SQLite database, which "
            "keeps nothing after the command: give a file path, sqlite:///path or postgresql://..."
        )


def _sqlite(path: str) -> pw.SqliteDatabase:
    if path != ":memory:":
        try:
            Path(path).expanduser().parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ServiceUnavailable(f"cannot open database {path}: {exc.strerror or exc}") from exc
        path = str(Path(path).expanduser())
    # Every thread gets its own connection (peewee keeps them thread-local), and the
    # pragmas are set on each new connection as it opens, whichever thread opens it.
    # Waiting writers queue for the write lock, but only for a bounded time (db_guards).
    pragmas = {**SQLITE_PRAGMAS, "busy_timeout": int(guards.LOCK_TIMEOUT_SECONDS * 1000)}
    return GuardedSqliteDatabase(path, pragmas=pragmas, check_same_thread=False)


def open_database(
    url_or_path: str | os.PathLike | None, *, migrate: bool = True, create: bool = True
) -> pw.Database:
    """Open the database, bind the models to it, and bring its schema up to date.

    ``create=False`` (a reader) refuses a SQLite file that does not exist instead of
    creating an empty one: reading a mistyped path must not look like reading no data.
    """
    if not create:
        require_existing(url_or_path)
    database = connect(url_or_path)
    models.database_proxy.initialize(database)
    try:
        database.connect(reuse_if_open=True)
    except pw.PeeweeException as exc:  # unreachable server, not a database file, no driver...
        raise ServiceUnavailable(f"cannot open database {describe(database)}: {_first_line(exc)}") from exc
    if migrate:
        try:
            apply_migrations(database)
        except pw.PeeweeException as exc:  # e.g. read-only file, locked past the busy timeout
            raise ServiceUnavailable(
                f"cannot migrate database {describe(database)}: {_first_line(exc)}"
            ) from exc
    return database


def require_existing(url_or_path: str | os.PathLike | None) -> None:
    """Refuse (exit 2) a SQLite file that does not exist; server URLs are the server's to check."""
    file = sqlite_file(os.fspath(url_or_path)) if url_or_path is not None else None
    if file in (None, ":memory:"):
        return
    path = Path(file).expanduser()
    if not path.exists():
        raise UsageError(
            f"database {path} does not exist (a command that writes creates it; check --db or SOWCTL_DB)"
        )


def require_directory(url_or_path: str | os.PathLike) -> None:
    """Refuse (exit 2) a SQLite file whose directory does not exist, rather than create it:
    a mistyped directory is far likelier than one meant to be made."""
    file = sqlite_file(os.fspath(url_or_path))
    if file in (None, ":memory:"):
        return
    parent = Path(file).expanduser().parent
    if not parent.is_dir():
        raise UsageError(f"cannot create database {file}: directory {parent} does not exist")


def close_database() -> None:
    """Close this process's connection (before a fork: each worker opens its own)."""
    if models.database_proxy.obj is not None:
        models.database_proxy.obj.close()


def describe(database: pw.Database) -> str:
    """Where a database is, for messages: its file, or its URL without the password."""
    if isinstance(database, pw.SqliteDatabase):
        return str(database.database)
    params = getattr(database, "connect_params", {}) or {}
    host = params.get("host") or "localhost"
    port = f":{params['port']}" if params.get("port") else ""
    user = f"{params['user']}@" if params.get("user") else ""
    return f"{user}{host}{port}/{database.database}"


def is_sqlite(database: pw.Database | None = None) -> bool:
    database = database or models.database_proxy.obj
    return isinstance(database, pw.SqliteDatabase)


# The database's own clock, to the second: one clock for every instance that shares it.
_SQLITE_EPOCH = "SELECT CAST(strftime('%s', 'now') AS INTEGER)"
_SERVER_EPOCH = "SELECT CAST(floor(extract(epoch FROM clock_timestamp())) AS BIGINT)"


def database_epoch() -> int:
    """The database server's current time as epoch seconds (SQLite: this machine's)."""
    database = models.database_proxy.obj
    sql = _SQLITE_EPOCH if is_sqlite(database) else _SERVER_EPOCH
    return int(database.execute_sql(sql).fetchone()[0])


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]
