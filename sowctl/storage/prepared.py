"""Server-side prepared statements for the hot-path reads on PostgreSQL.

PostgreSQL parses, analyses and plans every statement it receives as text. For the
one-row lookups every request makes (a token by hash, an item with its SOW and
organization) that costs three times what running them does: about 0.15 ms of
0.2 ms on the benchmark machine, on the database's CPU, which the server shares. A
statement prepared once per connection (``PREPARE``) is only executed afterwards.

Only statements run outside a transaction are prepared (the reads that open a request),
so that a failure of the mechanism can never abort a transaction: it falls back to
sending the text. That is also what makes it safe behind a pooler in transaction mode
(PgBouncer's ``pool_mode = transaction``), where consecutive statements of one
client connection may run on different server connections, and a statement prepared
on one is unknown on the next (SQLSTATE 26000) or already there (42P05, from another
client: names are hashes of the statement text, so it is the same statement). The
first such error turns preparing off for that database in this process, and the
statement is sent as text at once; nothing else changes. Set
``SOWCTL_PG_PREPARE=off`` to never prepare.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from typing import Any

import peewee as pw

from sowctl.storage import failures
from sowctl.storage.peewee_compat import connection_state

# SQLSTATEs that mean "this server connection does not hold what this client prepared":
# invalid_sql_statement_name, duplicate_prepared_statement, and feature_not_supported
# (a prepared plan whose result type a migration changed).
_POOLED_STATES = frozenset({"26000", "42P05", "0A000"})
_USABLE = "_sowctl_prepare"  # on the database object: whether to prepare there


class Prepared:
    """The PREPARE and EXECUTE texts of one statement (psycopg2's %s placeholders)."""

    def __init__(self, sql: str, arity: int) -> None:
        self.name = "sowctl_" + hashlib.sha256(sql.encode()).hexdigest()[:24]
        numbered = sql
        for k in range(1, arity + 1):
            numbered = numbered.replace("%s", f"${k}", 1)
        self.prepare_sql = f"PREPARE {self.name} AS {numbered}"
        self.execute_sql = f"EXECUTE {self.name}" + (f"({', '.join(['%s'] * arity)})" if arity else "")

    @classmethod
    def of(cls, database: pw.Database, sql: str, arity: int) -> Prepared | None:
        """The prepared form of ``sql`` for a PostgreSQL dialect; None for other dialects and
        for text this cannot number. Whether it is used is decided per call (``usable``)."""
        if not isinstance(database, pw.PostgresqlDatabase) or "%%" in sql or sql.count("%s") != arity:
            return None
        return cls(sql, arity)


def usable(database: pw.Database) -> bool:
    """PostgreSQL itself (not CockroachDB), unless turned off or found behind a pooler."""
    decided = getattr(database, _USABLE, None)
    if decided is None:
        from playhouse.cockroachdb import CockroachDatabase

        wanted = (os.environ.get("SOWCTL_PG_PREPARE") or "on").strip().lower() not in (
            "off",
            "0",
            "false",
            "no",
        )
        decided = (
            wanted
            and isinstance(database, pw.PostgresqlDatabase)
            and not isinstance(database, CockroachDatabase)
        )
        setattr(database, _USABLE, decided)
    return decided


def execute(database: pw.Database, statement: Prepared, sql: str, params: Sequence[Any]) -> Any:
    """Run ``sql`` with ``params``, through ``statement`` when that is safe; the cursor."""
    if database.in_transaction() or not usable(database):
        return database.execute_sql(sql, params)
    connection = database.connection()
    state = connection_state(database)
    known = getattr(state, "sowctl_prepared", None)
    if known is None or known[0] is not connection:  # a new connection knows no statement
        known = (connection, set[str]())
        state.sowctl_prepared = known
    try:
        if statement.name not in known[1]:
            database.execute_sql(statement.prepare_sql)
            known[1].add(statement.name)
        return database.execute_sql(statement.execute_sql, params)
    except (pw.ProgrammingError, pw.OperationalError, pw.NotSupportedError, pw.InternalError) as exc:
        if failures.sqlstate(exc) not in _POOLED_STATES:
            raise
        # Behind a transaction pooler: each statement may meet another server connection.
        setattr(database, _USABLE, False)
        known[1].clear()
        return database.execute_sql(sql, params)
