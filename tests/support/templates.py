"""Data that many tests start from, written once per process and copied into each test's database.

``seeded(name, build)`` leaves in the open database (the test's, at the current schema) what
``build()`` writes, and returns what ``build`` returned (the secrets it made, say). On
SQLite, ``build`` runs once per process (per xdist worker) into a template file, and each call
copies the template into the test's database with SQLite's backup API, page by page: a copy
costs a fraction of a millisecond, where importing the demo dataset or the finance records
costs 5-10 ms of CPU in each of hundreds of tests. Into a database that holds records already,
and on PostgreSQL, ``build`` runs each time.

What ``build`` writes may depend on the clock (timestamps of keys and tokens), so a template
is made per frozen moment or, on a running clock, per day; with seeded ids and secrets
(``clock.seed``) ``build`` runs each time, as the seed would give other values.
"""

from __future__ import annotations

import atexit
import shutil
import sqlite3
import tempfile
from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Any, TypeVar

import peewee as pw

from sowctl.foundation import clock
from sowctl.storage import models as m
from sowctl.storage.database import open_database

T = TypeVar("T")

_made: dict[tuple[str, object], tuple[Path, Any]] = {}
_folder: Path | None = None


def seeded(name: str, build: Callable[[], T]) -> T:
    """``build()``'s records in the open database, and its result (see the module's text)."""
    database = m.database_proxy.obj
    if not isinstance(database, pw.SqliteDatabase) or clock._rng is not None or not _empty(database):
        return build()  # a copy would replace what the test wrote already
    key = (name, clock.now() if clock.is_fixed() else date.today())
    if key not in _made:
        _made[key] = _make(f"{name}-{len(_made)}", build, database)
    path, result = _made[key]
    source = sqlite3.connect(path)
    try:
        source.backup(database.connection())
    finally:
        source.close()
    return result


def _empty(database: pw.Database) -> bool:
    """Whether the database holds no records (its schema version aside), in one statement."""
    tables = [model._meta.table_name for model in m.ALL_MODELS + list(m.V2_MODELS) + list(m.V11_MODELS)]
    held = " OR ".join(
        f"""EXISTS (SELECT 1 FROM "{table}"{" WHERE key <> 'schema_version'" if table == "meta" else ""})"""
        for table in tables
    )
    return not database.execute_sql(f"SELECT {held}").fetchone()[0]


def _make(name: str, build: Callable[[], T], database: pw.Database) -> tuple[Path, T]:
    global _folder
    if _folder is None:
        _folder = Path(tempfile.mkdtemp(prefix="sowctl-templates-"))
        atexit.register(shutil.rmtree, _folder, ignore_errors=True)
    path = _folder / f"{name}.db"
    template = open_database(str(path))
    try:
        result = build()
        template.execute_sql("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        template.close()
        m.database_proxy.initialize(database)
    return path, result
