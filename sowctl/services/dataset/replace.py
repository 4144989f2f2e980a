"""Every record replaced by a dataset's: the database emptied and the dataset imported, in one
transaction (all of it, or nothing). ``serve --load`` and ``POST /_admin/dataset?replace=true``
both replace through here."""

from __future__ import annotations

from typing import Any

from sowctl.services.dataset.importer import import_dataset
from sowctl.services.reset import reset_database
from sowctl.storage.database import write_transaction


def replace_dataset(source: Any) -> dict[str, int]:
    """Empty the database and import ``source`` (a dataset, or an opened dataset file), in
    one transaction: the counts of the records imported."""
    with write_transaction("global"):
        reset_database()
        return import_dataset(source)
