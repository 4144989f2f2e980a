"""Checkpoints of the whole test-double state: save once, restore before every test.

A checkpoint copies every data table (records, credentials, rate counters, the
request log, the changes feed's events) into tables of its own in the same database, with
``INSERT ... SELECT``: the rows never travel through Python, so saving and
restoring 10,000 records takes milliseconds, not the seconds a dataset import
costs (``bench/bench_checkpoints.py``). The run-time settings (faults, clock)
are kept with it. Checkpoints survive ``/_admin/reset`` and server restarts;
``DELETE /_admin/checkpoints/NAME`` drops one.

The list lives in ``Meta`` rows ``checkpoint:NAME`` holding JSON
``{"slot", "schema", "createdAt", "records", "runtime"}``; the slot numbers the copies'
tables (``sowctl_ckpt_<slot>_<table>``), so a name never reaches SQL.
Callers hold the gate exclusive (``sowctl.server.testdouble.reset_gate``): no request runs
while a checkpoint is saved or restored.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import peewee as pw

from sowctl.foundation.errors import InvalidInput, NotFound
from sowctl.schemas.admin import CHECKPOINT_NAME, CHECKPOINT_NAME_RULE, CheckpointOut
from sowctl.server.testdouble import state
from sowctl.services import webhook_dispatch
from sowctl.storage import models as m
from sowctl.storage.database import SCHEMA_VERSION, write_transaction

PREFIX = "checkpoint:"
NAME, NAME_RULE = CHECKPOINT_NAME, CHECKPOINT_NAME_RULE  # the rule the admin API declares


def check_name(name: Any) -> str:
    if not isinstance(name, str) or not NAME.match(name):
        raise InvalidInput.for_field("name", NAME_RULE)
    return name


def _tables() -> list[type[m.BaseModel]]:
    """Parents first: the order rows can be inserted in."""
    return list(reversed(state.data_tables()))


def _copy_name(slot: int, model: type[m.BaseModel]) -> str:
    return f"sowctl_ckpt_{slot}_{model._meta.table_name}"


def _columns(model: type[m.BaseModel]) -> str:
    return ", ".join(f'"{field.column_name}"' for field in model._meta.sorted_fields)


def _sql(statement: str) -> None:
    m.database_proxy.obj.execute_sql(statement)


def _entries() -> dict[str, dict[str, Any]]:
    rows = m.Meta.select().where(m.Meta.key.startswith(PREFIX))
    return {row.key[len(PREFIX) :]: json.loads(row.value) for row in rows}


def list_checkpoints() -> list[CheckpointOut]:
    return [
        CheckpointOut(name=name, createdAt=entry["createdAt"], records=entry["records"])
        for name, entry in sorted(_entries().items())
    ]


def save(name: str) -> CheckpointOut:
    """Copy the whole state under ``name`` (replacing a checkpoint of that name)."""
    check_name(name)
    with write_transaction("global"):
        entries = _entries()
        if name in entries:
            _drop(entries.pop(name)["slot"])
            m.Meta.delete().where(m.Meta.key == PREFIX + name).execute()
        used = {entry["slot"] for entry in entries.values()}
        slot = next(n for n in range(1, len(used) + 2) if n not in used)
        records = 0
        for model in _tables():
            copy = _copy_name(slot, model)
            _sql(f'DROP TABLE IF EXISTS "{copy}"')
            _sql(f'CREATE TABLE "{copy}" AS SELECT {_columns(model)} FROM "{model._meta.table_name}"')
            if model is not m.RequestLog and model not in m.V11_MODELS:  # records, not logs or events
                records += model.select().count()
        created = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        entry = {
            "slot": slot,
            "schema": SCHEMA_VERSION,
            "createdAt": created,
            "records": records,
            "runtime": state.read_runtime(),
        }
        m.Meta.insert(key=PREFIX + name, value=json.dumps(entry)).execute()
    return CheckpointOut(name=name, createdAt=created, records=records)


def restore(name: str) -> CheckpointOut:
    """Bring back the state saved as ``name``: every table as it was, all or nothing. The
    answer leaves ``createdAt`` unset: it says what was restored, not when it was saved."""
    entry = _entry(name)
    slot = entry["slot"]
    if entry.get("schema") != SCHEMA_VERSION:  # its copies lack columns added since
        raise InvalidInput.for_field(
            "name",
            f"checkpoint {name} was saved by an older sowctl (schema {entry.get('schema', 'unknown')}, "
            f"now {SCHEMA_VERSION}): save it again",
        )
    with _without_foreign_key_checks(), write_transaction("global"):
        _skip_reference_triggers()
        _empty_tables()
        for model in _tables():
            columns = _columns(model)
            table = model._meta.table_name
            _sql(f'INSERT INTO "{table}" ({columns}) SELECT {columns} FROM "{_copy_name(slot, model)}"')
        state.clear_runtime()
        for key, value in (entry.get("runtime") or {}).items():
            m.Meta.insert(key=key, value=value).execute()
        webhook_dispatch.forget_leases()  # the attempts they stood for are not this state's
        _continue_sequences()
    return CheckpointOut(name=name, records=entry["records"])


def _skip_reference_triggers() -> None:
    """PostgreSQL: a role allowed to (a superuser, as in most test set-ups) skips the per-row
    foreign-key triggers for this transaction (``session_replication_role = replica``): two
    thirds of a restore. Others keep the checks: slower, just as right."""
    database = m.database_proxy.obj
    if not isinstance(database, pw.PostgresqlDatabase):
        return
    try:
        with database.atomic():  # a savepoint: a refusal must not abort the restore
            _sql("SET LOCAL session_replication_role = replica")
    except pw.DatabaseError:
        pass


def _empty_tables() -> None:
    # DELETE, not TRUNCATE: on PostgreSQL, TRUNCATE of every table (new files for each
    # table and index) took twice as long as deleting 10,000 rows without their triggers.
    for model in reversed(_tables()):  # children first
        _sql(f'DELETE FROM "{model._meta.table_name}"')


@contextlib.contextmanager
def _without_foreign_key_checks() -> Iterator[None]:
    """SQLite: the rows come from a consistent copy, so checking each reference again only
    costs time (a third of a restore), and with checks off ``DELETE FROM`` drops whole pages.
    The pragma cannot change inside a transaction, so it wraps it, on this connection only."""
    database = m.database_proxy.obj
    if not isinstance(database, pw.SqliteDatabase):
        yield
        return
    database.execute_sql("PRAGMA foreign_keys = OFF")
    try:
        yield
    finally:
        database.execute_sql("PRAGMA foreign_keys = ON")


def delete(name: str) -> None:
    entry = _entry(name)
    with write_transaction("global"):
        _drop(entry["slot"])
        m.Meta.delete().where(m.Meta.key == PREFIX + name).execute()


def _entry(name: str) -> dict[str, Any]:
    check_name(name)
    row = m.Meta.get_or_none(m.Meta.key == PREFIX + name)
    if row is None:
        raise NotFound(f"checkpoint {name} not found")
    return json.loads(row.value)


def _drop(slot: int) -> None:
    for model in _tables():
        _sql(f'DROP TABLE IF EXISTS "{_copy_name(slot, model)}"')


def _continue_sequences() -> None:
    """PostgreSQL: serial ids go on after the restored rows (SQLite takes max(id) + 1 itself)."""
    database = m.database_proxy.obj
    if not isinstance(database, pw.PostgresqlDatabase):
        return
    for model in _tables():
        key = model._meta.primary_key
        if isinstance(key, pw.AutoField):
            table, column = model._meta.table_name, key.column_name
            database.execute_sql(
                f'SELECT setval(pg_get_serial_sequence(%s, %s), COALESCE(MAX("{column}"), 0) + 1, false) '
                f'FROM "{table}"',
                (table, column),
            )
