"""PostgreSQL write transactions whose opening travels with their first statement.

A write on PostgreSQL opens with ``BEGIN`` and the advisory lock that serialises the
writers of one organization. Sent on its own, that opening is a round trip during which
the lock is already held; every round trip inside the transaction lengthens the time the
organization's other writers wait. Here the opening is held back and sent in front of the
transaction's first statement, in the same round trip
(``BEGIN; SELECT pg_advisory_xact_lock(n); SELECT ...``). PostgreSQL runs the three one
after the other, each with its own snapshot under READ COMMITTED, so the first statement
still reads only after the lock is held: what it reads is what the previous writer
committed.

A transaction that sends no statement sends no ``COMMIT`` either. A caller that takes the
driver's cursor directly (``Database.cursor()``: ``executemany``, ``execute_values``) gets
one on which the opening has already run.
"""

from __future__ import annotations

import peewee as pw

from sowctl.storage.peewee_compat import connection_state


class PostgresqlWrites(pw.PostgresqlDatabase):
    """Peewee's PostgreSQL database, able to hold a transaction's opening back."""

    def defer_opening(self, opening: str) -> None:
        """Send ``opening`` (complete statements, each ending with ``;``, no parameters)
        in front of this thread's next statement."""
        connection_state(self).sowctl_opening = opening

    def _take_opening(self) -> str:
        opening = getattr(connection_state(self), "sowctl_opening", "")
        if opening:
            connection_state(self).sowctl_opening = ""
        return opening

    def execute_sql(self, sql, params=None):
        opening = self._take_opening()
        return super().execute_sql(f"{opening} {sql}" if opening else sql, params)

    def cursor(self, named_cursor=None):
        opening = self._take_opening()
        cursor = super().cursor(named_cursor)
        if opening:
            cursor.execute(opening)
        return cursor

    def close(self):
        closed = super().close()
        connection_state(self).sowctl_opening = ""  # an opening never sent ends with its connection
        return closed

    def commit(self):
        if self._take_opening():
            return None  # nothing was sent: no transaction began
        return super().commit()

    def rollback(self):
        if self._take_opening():
            return None
        return super().rollback()


class LockedTransaction(pw._transaction):
    """A top-level PostgreSQL transaction that begins by taking an advisory lock, sent with
    its first statement on ``PostgresqlWrites`` (otherwise in one round trip of its own).
    If taking the lock fails (a deadline), the transaction is rolled back before the error
    goes on, as it would be inside ``atomic()``."""

    def __init__(self, database: pw.Database, lock_id: int) -> None:
        super().__init__(database)
        self._lock_id = int(lock_id)

    def _begin(self) -> None:
        opening = f"BEGIN; SELECT pg_advisory_xact_lock({self._lock_id});"
        if isinstance(self.db, PostgresqlWrites):
            # Connected now, as a BEGIN sent now would: connecting later, in the first
            # statement, would empty Peewee's stack of this thread's transactions.
            self.db.connect(reuse_if_open=True)
            self.db.defer_opening(opening)
            return
        try:
            self.db.execute_sql(opening)
        except Exception:
            try:
                self.db.execute_sql("ROLLBACK")
            except Exception:  # the connection may be gone; the original error says why
                pass
            raise
