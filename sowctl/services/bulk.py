"""Many rows written with a few statements, for the writes that run under an organization's lock.

A per-row statement through Peewee costs about 0.1 ms of Python to build and a round trip
to send; 10,000 of them held the write lock for seconds (a reorder of a whole SOW). Here
each chunk of rows is one statement whose text is built once per chunk size:

* ``update_rows``: ``UPDATE t SET c = v.column2 ... FROM (VALUES (?, ?), ...) AS v WHERE
  t.key = v.column1``. SQLite has ``UPDATE ... FROM`` since 3.33 and names a ``VALUES``
  table's columns ``column1``, ``column2``... as PostgreSQL does (it takes no column list
  after the alias); an older SQLite runs one ``UPDATE`` per row through the driver's
  ``executemany``, which is still one call from Python.
* ``delete_where_in``: ``DELETE FROM t WHERE c IN (?, ...)`` per chunk.

Both return how many rows the database says they touched, so that a caller can check,
under its lock, that every row it meant to write was there.
"""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Sequence
from typing import Any

import peewee as pw

from sowctl.storage import models as m
from sowctl.storage.peewee_compat import primary_key

UPDATE_FROM_VALUES = sqlite3.sqlite_version_info >= (3, 33, 0)
# Bound parameters per statement: SQLite's limit is 32,766 since 3.32 and 999 before;
# psycopg2 writes the values into the text, so PostgreSQL has none that matters here.
_PARAMETERS = 30_000 if sqlite3.sqlite_version_info >= (3, 32, 0) else 900
ROWS = 1_000  # rows per statement: 10,000 rows are ten statements


def chunks(values: Sequence[Any], per_row: int = 1) -> list[Sequence[Any]]:
    """``values`` in runs that one statement of ``per_row`` parameters a row can take."""
    size = max(1, min(ROWS, _PARAMETERS // per_row))
    return [values[start : start + size] for start in range(0, len(values), size)]


def _values_update(database: pw.Database) -> bool:
    return UPDATE_FROM_VALUES or not isinstance(database, pw.SqliteDatabase)


@functools.lru_cache(maxsize=64)
def _update_sql(
    param: str,
    values_form: bool,
    table: str,
    key: str,
    columns: tuple[str, ...],
    casts: tuple[str, ...],
    fixed: tuple[str, ...],
    where: str,
    rows: int,
) -> str:
    """The text of one chunk's UPDATE (``rows`` rows), cached: building it is most of the cost."""
    assignments = [f"{column} = {param}" for column in fixed]
    if not values_form:  # one row per execution (executemany)
        assignments += [f"{column} = {param}" for column in columns]
        return f"UPDATE {table} SET {', '.join(assignments)} WHERE {key} = {param}{where}"
    assignments += [f"{column} = v.column{n + 2}" for n, column in enumerate(columns)]
    cells = ", ".join([param] + [f"CAST({param} AS {cast})" for cast in casts])
    values = ", ".join([f"({cells})"] * rows)
    return (
        f"UPDATE {table} SET {', '.join(assignments)} FROM (VALUES {values}) AS v "
        f"WHERE {table}.{key} = v.column1{where}"
    )


def update_rows(
    model: type[pw.Model],
    columns: Sequence[pw.Field],
    rows: Sequence[tuple[Any, ...]],
    *,
    fixed: dict[pw.Field, Any] | None = None,
    where: tuple[pw.Field, Any] | None = None,
) -> int:
    """Set ``columns`` of the rows whose primary key is each row's first value to the
    row's other values, and every ``fixed`` column to its one value, only where the
    ``where`` column equals its value. Returns the number of rows updated."""
    if not rows:
        return 0
    database = m.database_proxy.obj
    table, key = model._meta.table_name, primary_key(model).column_name
    names = tuple(field.column_name for field in columns)
    casts = tuple("BIGINT" if isinstance(field, pw.BigIntegerField) else "INTEGER" for field in columns)
    fixed = fixed or {}
    fixed_names = tuple(field.column_name for field in fixed)
    fixed_values = [field.db_value(value) for field, value in fixed.items()]
    condition, condition_values = "", []
    if where is not None:
        condition, condition_values = f" AND {table}.{where[0].column_name} = {database.param}", [where[1]]
    values_form = _values_update(database)
    updated = 0
    for chunk in chunks(rows, per_row=len(names) + 1):
        sql = _update_sql(
            database.param, values_form, table, key, names, casts, fixed_names, condition, len(chunk)
        )
        if values_form:
            flat = [value for row in chunk for value in row]
            updated += database.execute_sql(sql, [*fixed_values, *flat, *condition_values]).rowcount
        else:
            params = [(*fixed_values, *row[1:], row[0], *condition_values) for row in chunk]
            cursor = database.cursor()
            cursor.executemany(sql, params)
            updated += cursor.rowcount
    return updated


def delete_where_in(model: type[pw.Model], column: pw.Field, values: Sequence[Any]) -> int:
    """Delete the rows whose ``column`` is one of ``values``; the number deleted."""
    database = m.database_proxy.obj
    table = model._meta.table_name
    deleted = 0
    for chunk in chunks(values):
        marks = ", ".join([database.param] * len(chunk))
        sql = f"DELETE FROM {table} WHERE {column.column_name} IN ({marks})"
        deleted += database.execute_sql(sql, list(chunk)).rowcount
    return deleted
