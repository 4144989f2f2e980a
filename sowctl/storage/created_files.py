"""A SQLite file a failed command created: found before, removed after.

``serve --load`` and ``import`` refuse a bad dataset with nothing written; when the
database file did not exist before the command, "nothing" includes the file itself, so a
mistyped ``--db`` is not left behind looking like an empty database.
"""

from __future__ import annotations

from pathlib import Path


def new_sqlite_file(database: str) -> Path | None:
    """The SQLite file ``database`` names if opening it will create it, else None."""
    from sowctl.storage.database import sqlite_file

    path = sqlite_file(database)
    if path is None or path == ":memory:" or Path(path).exists():
        return None
    return Path(path)


def remove_sqlite_file(path: Path) -> None:
    """Close the database and remove ``path`` with its WAL and shared-memory files."""
    from sowctl.storage.database import close_database

    close_database()
    for suffix in ("", "-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
