"""The schema migrations: each version's step, applied in order, all in one transaction."""

from __future__ import annotations

from collections.abc import Callable

import peewee as pw

from sowctl.foundation.errors import SowctlError
from sowctl.storage import models, sandbox_models, tallies, webhook_models
from sowctl.storage.transactions import _serialised


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
def _v10_request_log_contract(database: pw.Database) -> None:
    """``RequestLog.contract``: what contract mode found a request relies on."""
    from playhouse.migrate import SchemaMigrator, migrate

    table = models.RequestLog._meta.table_name
    if "contract" not in {column.name for column in database.get_columns(table)}:
        migrator = SchemaMigrator.from_database(database)
        migrate(migrator.add_column(table, "contract", pw.TextField(null=True)))


def _v11_events(database: pw.Database) -> None:
    """The events outbox (``models.Event``): the changes feed and webhooks read it."""
    database.create_tables(models.V11_MODELS, safe=True)


def _v12_webhooks(database: pw.Database) -> None:
    """Webhook subscriptions, their delivery log and redelivery queue (``webhook_models``)."""
    database.create_tables(webhook_models.V12_MODELS, safe=True)


def _v13_sandboxes(database: pw.Database) -> None:
    """Sandboxes (``sandbox_models.Sandbox``) and ``RequestLog.organization_id`` with its index, so that
    a sandbox's admin token reads and clears its own requests only."""
    from playhouse.migrate import SchemaMigrator, migrate

    database.create_tables(sandbox_models.V13_MODELS, safe=True)
    table = models.RequestLog._meta.table_name
    migrator = SchemaMigrator.from_database(database)
    if "organization_id" not in {column.name for column in database.get_columns(table)}:
        migrate(migrator.add_column(table, "organization_id", pw.CharField(max_length=64, null=True)))
    if not any(index.columns == ["organization_id", "id"] for index in database.get_indexes(table)):
        migrate(migrator.add_index(table, ("organization_id", "id"), False))


def _v14_event_traceparent(database: pw.Database) -> None:
    """``Event.traceparent``: the W3C trace context of the request that made the change, which
    its webhook deliveries carry."""
    from playhouse.migrate import SchemaMigrator, migrate

    table = models.Event._meta.table_name
    if "traceparent" not in {column.name for column in database.get_columns(table)}:
        migrator = SchemaMigrator.from_database(database)
        migrate(migrator.add_column(table, "traceparent", pw.CharField(max_length=64, null=True)))


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
    _v10_request_log_contract,
    _v11_events,
    _v12_webhooks,
    _v13_sandboxes,
    _v14_event_traceparent,
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
