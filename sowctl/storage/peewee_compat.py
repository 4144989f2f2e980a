"""Where peewee's type stubs fall short of what peewee does, in one place.

The stubs type ``query.tuples()`` as the query itself, so its rows would be models; they
are tuples. And they leave out a database's per-thread connection state (``_state``), where
a connection's own facts are kept beside it; and they allow a model without a primary key.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import peewee as pw


def tuples(query: pw.BaseQuery) -> Iterator[tuple[Any, ...]]:
    """The rows of ``query`` as tuples, in order."""
    return iter(query.tuples())


def connection_state(database: pw.Database) -> Any:
    """This thread's connection state of ``database`` (its connection, and what we note of it)."""
    return database._state  # type: ignore[attr-defined]  # peewee's stubs omit it


def primary_key(model: type[pw.Model]) -> pw.Field:
    """``model``'s primary key field (the stubs allow False, for a model without one)."""
    key = model._meta.primary_key
    if not isinstance(key, pw.Field):
        raise TypeError(f"{model.__name__} has no primary key")
    return key
