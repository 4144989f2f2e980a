"""Writing checked rows: multi-row INSERTs in batches under the database's variable limit."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import peewee as pw

from sowctl.storage import models as m

BATCH_ROWS = 1000
MAX_VARIABLES = 32766  # SQLite >= 3.32 (PostgreSQL allows 65535)


def _insert_rows(model: type[m.BaseModel], fields: list[pw.Field], rows: list[tuple]) -> Iterator[int]:
    """Multi-row INSERTs of ``rows`` (values in ``fields`` order); yields each batch's size.

    Peewee's ``insert_many`` builds its SQL node by node for every value (about
    3 µs each: 25 s for 100,000 items and dependencies); the statement is the same
    for every full batch, so it is written once and only the parameters change.
    Values are converted where the stored form differs (exact money as text, JSON
    as text), as peewee itself would do.
    """
    database = m.database_proxy.obj
    size = max(1, min(BATCH_ROWS, MAX_VARIABLES // len(fields)))
    open_quote, close_quote = database.quote[0], database.quote[-1]
    head = "INSERT INTO {}{}{} ({}) VALUES ".format(
        open_quote,
        model._meta.table_name,
        close_quote,
        ", ".join(f"{open_quote}{field.column_name}{close_quote}" for field in fields),
    )
    group = "(" + ", ".join([database.param] * len(fields)) + ")"
    converted = [(k, convert) for k, field in enumerate(fields) if (convert := _db_converter(field))]
    statements: dict[int, str] = {}
    for start in range(0, len(rows), size):
        batch = rows[start : start + size]
        if converted:
            batch = [_convert(row, converted) for row in batch]
        sql = statements.get(len(batch))
        if sql is None:
            sql = statements[len(batch)] = head + ", ".join([group] * len(batch))
        database.execute_sql(sql, [value for row in batch for value in row])
        yield len(batch)


def _db_converter(field: pw.Field) -> Callable[[Any], Any] | None:
    """The few fields whose stored form differs from the validated value."""
    if isinstance(field, m.MoneyField):
        return field.db_value  # exact decimal text
    if isinstance(field, pw.JSONField):
        # peewee wraps JSON in a SQL function; a plain JSON text parameter is the same value.
        return _json_text
    return None


def _json_text(value: Any) -> str | None:
    return None if value is None else json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _convert(row: tuple, converted: list[tuple[int, Callable[[Any], Any]]]) -> tuple:
    values = list(row)
    for k, db_value in converted:
        values[k] = db_value(values[k])
    return tuple(values)


IMPORT_CACHE_KIB = 8_000  # SQLite page cache while an import writes (the connection's is 32 MB)


@contextlib.contextmanager
def small_page_cache() -> Iterator[None]:
    """SQLite: a smaller page cache while an import writes, the connection's own after.

    The rows go in mostly in key order, so a bigger cache hardly saves time (measured: the
    same CPU time), while its pages count fully in the importing process's memory, which a
    streamed import otherwise keeps near the size of the file."""
    database = m.database_proxy.obj
    if not isinstance(database, pw.SqliteDatabase):
        yield
        return
    before = database.execute_sql("PRAGMA cache_size").fetchone()[0]
    database.execute_sql(f"PRAGMA cache_size = {-IMPORT_CACHE_KIB}")
    try:
        yield
    finally:
        database.execute_sql(f"PRAGMA cache_size = {int(before)}")


def _advance_sequences(models: Iterable[type[m.BaseModel]]) -> None:
    """PostgreSQL: explicit ids do not move a serial's sequence; move it past them."""
    database = m.database_proxy.obj
    if not isinstance(database, pw.PostgresqlDatabase):
        return
    for model in models:
        if model in (m.PurchaseOrder, m.PurchaseOrderLine):
            table = model._meta.table_name
            database.execute_sql(
                f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT MAX(id) FROM \"{table}\"))"
            )
