"""Opening the database, schema migrations, and serialised write transactions."""

from __future__ import annotations

import contextlib
import os
import random
import time
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import peewee as pw

from sowctl.foundation.errors import ServiceUnavailable, SowctlError, UsageError, quoted
from sowctl.storage import failures, guards, models, tallies
from sowctl.storage.guards import GuardedSqliteDatabase, check_storage, install_query_deadline
from sowctl.storage.pg_writes import LockedTransaction, PostgresqlWrites

SQLITE_PRAGMAS = {
    "journal_mode": "wal",
    "foreign_keys": 1,
    # WAL + NORMAL survives a process crash (SIGKILL); only power loss can drop the tail.
    "synchronous": "normal",
    "cache_size": -32_000,
}

T = TypeVar("T")

# Advisory-lock namespace for migrations on PostgreSQL (any constant works).
_MIGRATION_LOCK = 0x50C7


def connect(url_or_path: str | os.PathLike) -> pw.Database:
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


# --- migrations ---------------------------------------------------------------


# The database's own clock, to the second: one clock for every instance that shares it.
_SQLITE_EPOCH = "SELECT CAST(strftime('%s', 'now') AS INTEGER)"
_SERVER_EPOCH = "SELECT CAST(floor(extract(epoch FROM clock_timestamp())) AS BIGINT)"


def database_epoch() -> int:
    """The database server's current time as epoch seconds (SQLite: this machine's)."""
    database = models.database_proxy.obj
    sql = _SQLITE_EPOCH if is_sqlite(database) else _SERVER_EPOCH
    return int(database.execute_sql(sql).fetchone()[0])


def _v1_initial(database: pw.Database) -> None:
    database.create_tables(models.ALL_MODELS, safe=True)


def _v2_request_log(database: pw.Database) -> None:
    database.create_tables(models.V2_MODELS, safe=True)


def _v3_item_topo_rank(database: pw.Database) -> None:
    """``Item.topo_rank`` and its index (``services.graph``'s maintained topological order).

    A database created at v3 or later already has both (v1 creates the current
    models), so each is added only when it is missing.
    """
    from playhouse.migrate import SchemaMigrator, migrate

    table = models.Item._meta.table_name
    migrator = SchemaMigrator.from_database(database)
    operations = []
    if "topo_rank" not in {column.name for column in database.get_columns(table)}:
        operations.append(migrator.add_column(table, "topo_rank", pw.BigIntegerField(null=True)))
    if not any(index.columns == ["topo_rank"] for index in database.get_indexes(table)):
        operations.append(migrator.add_index(table, ("topo_rank",), False))
    migrate(*operations)


def _v4_po_high_water(database: pw.Database) -> None:
    """``FinancialProject.po_high_water``: purchase-order numbers without a scan."""
    from playhouse.migrate import SchemaMigrator, migrate

    table = models.FinancialProject._meta.table_name
    if "po_high_water" not in {column.name for column in database.get_columns(table)}:
        migrator = SchemaMigrator.from_database(database)
        migrate(migrator.add_column(table, "po_high_water", pw.BigIntegerField(null=True)))


def _v5_request_log_headers(database: pw.Database) -> None:
    """``RequestLog.headers``: the non-secret request headers, for ``/_admin/requests/verify``."""
    from playhouse.migrate import SchemaMigrator, migrate

    table = models.RequestLog._meta.table_name
    if "headers" not in {column.name for column in database.get_columns(table)}:
        migrator = SchemaMigrator.from_database(database)
        migrate(migrator.add_column(table, "headers", pw.TextField(null=True)))


def _v6_sow_ids_per_organization(database: pw.Database) -> None:
    """SOW ids unique per organization (``models.Sow``): the stored key stays in column
    ``id`` (items and dependencies keep pointing at it); the shown id moves to
    ``public_id`` and the organization is copied from the project, under a unique index
    on both. Existing keys were globally unique, so each old SOW keeps its id as key.

    A database created at v6 or later already has all of it (v1 creates the current
    models). A migrated SQLite file keeps the two new columns nullable (tightening them
    would rebuild the table under its items); every writer fills them.
    """
    from playhouse.migrate import SchemaMigrator, migrate

    table = models.Sow._meta.table_name
    columns = {column.name for column in database.get_columns(table)}
    if "public_id" in columns:
        return
    migrator = SchemaMigrator.from_database(database)
    migrate(
        migrator.add_column(table, "public_id", pw.CharField(max_length=64, null=True)),
        migrator.add_column(table, "organization_id", pw.CharField(max_length=64, null=True)),
    )
    project = models.Project._meta.table_name
    database.execute_sql(
        f'UPDATE "{table}" SET public_id = id, organization_id = '
        f'(SELECT p.organization_id FROM "{project}" p WHERE p.id = "{table}".project_id)'
    )
    operations = [migrator.add_index(table, ("organization_id", "public_id"), True)]
    if not isinstance(database, pw.SqliteDatabase):
        operations += [
            migrator.add_not_null(table, "public_id"),
            migrator.add_not_null(table, "organization_id"),
            migrator.add_foreign_key_constraint(
                table, "organization_id", models.Organization._meta.table_name, "id", on_delete="CASCADE"
            ),
        ]
    migrate(*operations)


def _v7_item_list_order_index(database: pw.Database) -> None:
    """The item index in list order (``services.item_pages``): ``(sow_id, order_index,
    created_at, id)`` replaces ``(sow_id, order_index)``, a prefix of it."""
    from playhouse.migrate import SchemaMigrator, migrate

    table = models.Item._meta.table_name
    wanted = ["sow_id", "order_index", "created_at", "id"]
    indexes = database.get_indexes(table)
    migrator = SchemaMigrator.from_database(database)
    operations = []
    if not any(index.columns == wanted for index in indexes):
        operations.append(migrator.add_index(table, tuple(wanted), False))
    operations += [
        migrator.drop_index(table, index.name)
        for index in indexes
        if index.columns == ["sow_id", "order_index"] and not index.unique
    ]
    migrate(*operations)


def _v8_dependency_list_order(database: pw.Database) -> None:
    """``Dependency.organization_id``, filled from the SOW, and the indexes in list order
    (``services.dependencies.list_dependencies``): ``(organization_id, created_at, id)``
    and ``(sow_id, created_at, id)``, from which a page's ids are read without the rows.
    A database created at v8 or later already has them (v1 creates the current models)."""
    from playhouse.migrate import SchemaMigrator, migrate

    table = models.Dependency._meta.table_name
    migrator = SchemaMigrator.from_database(database)
    if "organization_id" not in {column.name for column in database.get_columns(table)}:
        migrate(migrator.add_column(table, "organization_id", pw.CharField(max_length=64, null=True)))
        sow = models.Sow._meta.table_name
        database.execute_sql(
            f'UPDATE "{table}" SET organization_id = '
            f'(SELECT s.organization_id FROM "{sow}" s WHERE s.id = "{table}".sow_id)'
        )
    present = [index.columns for index in database.get_indexes(table)]
    wanted = (["organization_id", "created_at", "id"], ["sow_id", "created_at", "id"])
    missing = [columns for columns in wanted if columns not in present]
    migrate(*(migrator.add_index(table, tuple(columns), False) for columns in missing))


def _v9_item_tallies(database: pw.Database) -> None:
    """The counts of task items below each item, by status (``db_tallies``), so that a
    requirement's status is read without its subtree: the columns, then every item's
    counts made from the rows already there."""
    table = models.Item._meta.table_name
    columns = {column.name for column in database.get_columns(table)}
    for field in tallies.FIELDS:
        if field.column_name not in columns:
            database.execute_sql(
                f'ALTER TABLE "{table}" ADD COLUMN "{field.column_name}" INTEGER NOT NULL DEFAULT 0'
            )
    tallies.recount(database=database)


# Append new steps here; never edit a released one. Each runs in the migration transaction.
MIGRATIONS: list[Callable[[pw.Database], None]] = [
    _v1_initial,
    _v2_request_log,
    _v3_item_topo_rank,
    _v4_po_high_water,
    _v5_request_log_headers,
    _v6_sow_ids_per_organization,
    _v7_item_list_order_index,
    _v8_dependency_list_order,
    _v9_item_tallies,
]
SCHEMA_VERSION = len(MIGRATIONS)


def _version_if_known(database: pw.Database) -> int | None:
    """The schema version, read outside any lock; None before the first migration."""
    if not database.table_exists(models.Meta._meta.table_name):
        return None
    return schema_version()


def schema_version() -> int:
    row = models.Meta.get_or_none(models.Meta.key == "schema_version")
    return int(row.value) if row else 0


def apply_migrations(database: pw.Database) -> int:
    """Apply every pending migration in one transaction; safe when workers race.

    A database already at this version is only read, without the write lock: a reader (a
    CLI command, a server worker starting or restarting) must not wait for, or fail on,
    a write lock that another program holds on the SQLite file."""
    if _version_if_known(database) == SCHEMA_VERSION:
        return SCHEMA_VERSION
    with _serialised(database, "migrations"):
        database.create_tables([models.Meta], safe=True)
        current = schema_version()
        if current > SCHEMA_VERSION:
            raise SowctlError(
                f"the database has schema version {current}, newer than this sowctl "
                f"({SCHEMA_VERSION}); upgrade sowctl"
            )
        for version in range(current + 1, SCHEMA_VERSION + 1):
            MIGRATIONS[version - 1](database)
        if current != SCHEMA_VERSION:
            models.Meta.insert(key="schema_version", value=str(SCHEMA_VERSION)).on_conflict(
                conflict_target=[models.Meta.key], update={models.Meta.value: str(SCHEMA_VERSION)}
            ).execute()
    return SCHEMA_VERSION


# --- write serialisation ------------------------------------------------------


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
        try:
            with turn, database.atomic("IMMEDIATE"):
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


def hold_lock(lock_key: str) -> None:
    """Inside a write transaction, also take ``lock_key``'s lock until commit.

    For a writer that learns late which organizations it touches (the dataset
    importer). PostgreSQL only: SQLite's transaction already excludes every writer.
    Take several keys in sorted order, so that two such writers cannot deadlock.
    """
    database = models.database_proxy.obj
    if has_advisory_locks(database):
        database.execute_sql("SELECT pg_advisory_xact_lock(%s)", (_lock_id(lock_key),))


@contextlib.contextmanager
def write_transaction(lock_key: str = "global") -> Iterator[None]:
    """A transaction that serialises writers sharing ``lock_key`` (e.g. an organization).

    SQLite has one writer at a time anyway; PostgreSQL takes an advisory lock held
    until commit, so two requests that would together close a cycle run one after
    the other and the second sees the first's row.
    """
    with _serialised(models.database_proxy.obj, lock_key):
        yield


def with_retries(operation: Callable[[], object], attempts: int = 5) -> object:
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


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]
