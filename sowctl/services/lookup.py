"""Lookups on the request hot path, with their SQL built once instead of per call.

Every request authenticates (a token or key by hash) and most then look one
record up (an item, a SOW). Peewee builds a query's SQL from its node tree on
every execution, and for these one-row lookups that costs more Python time than
the database spends running them: about 0.3 ms per query on the benchmark
machine, most of a request to ``GET /api/items/{id}``. A ``Lookup`` asks peewee
for the SQL once per kind of database (the text differs between dialects, not
between databases of one dialect) and from then on only executes it; on PostgreSQL
as a prepared statement (``sowctl.storage.prepared``), so the database does not parse and
plan it again either.

Rows become model instances the way peewee's cursor wrapper would make them
(each value through its field's ``python_value``), minus its per-row overhead.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import peewee as pw

from sowctl.storage import models as m
from sowctl.storage.prepared import Prepared
from sowctl.storage.prepared import execute as execute_prepared

M = TypeVar("M", bound=pw.Model)

# The parameters a query is built with, found again in the built parameters: integers
# (an integer field would not take a string) that no real value uses, and that a text
# field turns into the same digits.
_MARKERS = tuple(-7_301_000_001 - k for k in range(8))


class Lookup:
    """A statement built by ``build(*parameters)`` once per dialect, then only executed.

    ``build`` must use each parameter at least once, each time in a plain comparison
    or value (peewee converts it with the field's ``db_value``; the markers survive that).
    """

    def __init__(self, build: Callable[..., pw.Query], arity: int = 1) -> None:
        self._build = build
        self._arity = arity
        self._compiled: dict[tuple[type, str], tuple[str, list[Any], list[list[int]], Prepared | None]] = {}

    def _sql(self, database: pw.Database) -> tuple[str, list[Any], list[list[int]], Prepared | None]:
        key = (type(database), database.param)
        compiled = self._compiled.get(key)
        if compiled is None:
            markers = _MARKERS[: self._arity]
            sql, params = database.get_sql_context().sql(self._build(*markers)).query()
            texts = [str(marker) for marker in markers]
            positions = [[k for k, value in enumerate(params) if str(value) == text] for text in texts]
            if any(not found for found in positions):
                raise ValueError(f"a Lookup query must use every parameter: {sql}")
            prepared = Prepared.of(database, sql, len(params))
            compiled = self._compiled[key] = (sql, list(params), positions, prepared)
        return compiled

    def execute(self, *values: Any) -> Any:
        """Run the statement with ``values`` for its parameters; the DB-API cursor."""
        database = m.database_proxy.obj
        sql, params, positions, prepared = self._sql(database)
        params = params.copy()
        for places, value in zip(positions, values, strict=True):
            for place in places:
                params[place] = value
        if prepared is not None:  # PostgreSQL: parsed and planned once per connection
            return execute_prepared(database, prepared, sql, params)
        return database.execute_sql(sql, params)

    def first(self, *values: Any) -> tuple | None:
        """The first row as a tuple of raw column values, or None."""
        return self.execute(*values).fetchone()

    def all(self, *values: Any) -> list[tuple]:
        return self.execute(*values).fetchall()


def hydrate(model: type[M], fields: Sequence[pw.Field], values: Sequence[Any]) -> M:
    """A ``model`` instance holding ``values`` of ``fields``, converted as peewee does."""
    instance = model(__no_default__=True)
    data = instance.__data__
    for field, value in zip(fields, values, strict=True):
        data[field.name] = value if value is None else field.python_value(value)
    return instance


def insert_row(model: type[M], values: dict[str, Any]) -> M:
    """Insert one row of ``model`` (``values`` by field name, every other field at its
    default) and return it as an instance, with the INSERT text built once per dialect
    and set of fields: peewee's ``Model.create`` builds it for every row, which for a
    twenty-column dependency cost more Python time than the database spent storing it."""
    database = m.database_proxy.obj
    fields = model._meta.fields
    row = {
        name: field.default() if callable(field.default) else field.default
        for name, field in fields.items()
        if name not in values and not getattr(field, "auto_increment", False)
    }
    row.update(values)
    names = tuple(row)
    key = (type(database), database.param, model, names)
    sql = _INSERTS.get(key)
    if sql is None:
        columns = ", ".join(_quoted(database, fields[name].column_name) for name in names)
        marks = ", ".join([database.param] * len(names))
        table = _quoted(database, model._meta.table_name)
        sql = _INSERTS[key] = f"INSERT INTO {table} ({columns}) VALUES ({marks})"
    database.execute_sql(sql, [fields[name].db_value(row[name]) for name in names])
    instance = model(__no_default__=True)
    instance.__data__.update(row)
    return instance


_INSERTS: dict[tuple[Any, ...], str] = {}


def _quoted(database: pw.Database, name: str) -> str:
    return database.get_sql_context().sql(pw.Entity(name)).query()[0]
