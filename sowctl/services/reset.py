"""The database emptied: every row of every table but the schema version (the test double's
reset, and the first step of replacing every record with a dataset's)."""

from __future__ import annotations

from collections.abc import Iterable

import peewee as pw

from sowctl.storage import models as m
from sowctl.storage import sandbox_models
from sowctl.storage.database import write_transaction
from sowctl.storage.webhook_models import V12_MODELS

# The Meta rows holding run-time settings (the test double's faults and clock): a reset
# forgets them; the schema version stays.
RUNTIME_KEYS = ("faults", "clock", "contract", "webhook_faults", "sandbox-faults")


def data_tables() -> list[type[m.BaseModel]]:
    """Every table but Meta, children before parents (the order rows can be deleted in)."""
    return [
        *V12_MODELS,
        *sandbox_models.V13_MODELS,
        *m.V11_MODELS,
        *m.V2_MODELS,
        *(model for model in reversed(m.ALL_MODELS) if model is not m.Meta),
    ]


def reset_database() -> None:
    """Delete every row of every table except the schema version."""
    with write_transaction("global"):
        for model in data_tables():
            model.delete().execute()
        m.Meta.delete().where(m.Meta.key.in_(RUNTIME_KEYS)).execute()
        _restart_sequences(data_tables())


def _restart_sequences(models: Iterable[type[m.BaseModel]]) -> None:
    """PostgreSQL: serial ids start at 1 again, as they do on an emptied SQLite table."""
    database = m.database_proxy.obj
    if not isinstance(database, pw.PostgresqlDatabase):
        return
    for model in models:
        key = model._meta.primary_key
        if isinstance(key, pw.AutoField):
            database.execute_sql(
                "SELECT setval(pg_get_serial_sequence(%s, %s), 1, false)",
                (model._meta.table_name, key.column_name),
            )
