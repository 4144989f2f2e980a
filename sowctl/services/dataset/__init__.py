"""Import and export of whole datasets.

Import is all or nothing: every record is validated (types, enums, required
fields, via ``sowctl.schemas.dataset``) and every reference is resolved against
the file and the database, kind by kind, in one transaction that writes the rows
as it goes and is rolled back if the file has a single problem. A problem is
reported as ``items[42] (id item-43): parentItemId: item item-9 not found``; the
database is left unchanged.

Decisions:

* Import adds records; it never updates. An id that already exists in the
  database is an error naming the record (import into a fresh database, or
  delete the records first).
* ``createdByUserId`` and a project's ``ownerUserId`` are free strings, as in the
  API (tokens may name users the dataset does not list): not checked.
* Dependency cycles are not rejected: the file is the record of what exists, and
  the chain report lists cycles under ``issues.circular``. Self-dependencies and
  dependencies across organizations are rejected.
* Missing ``createdAt``/``updatedAt`` (and snake_case ``created_at``/``updated_at``)
  are set to the import time, except a dependency's ``updatedAt``, which stays
  null (the API shows it only once a dependency was updated).
* Export writes every table except credentials (token and key hashes) and rate
  counters: a dataset is data, not access. Records are ordered by id (items: each parent first; lines by
  position), so equal databases export to identical JSON.

Speed and memory: one ``TypeAdapter`` call per batch of records validates in
pydantic's Rust core, the reference checks use compact per-id facts (id -> owner)
built from the file plus one query per referenced table (none when the database is
empty), and rows go in as multi-row INSERTs in batches sized under SQLite's variable
limit, all inside one transaction. A file (``source.open_dataset``) is streamed: one
kind at a time, batch by batch, never the whole file in memory (``importer``).
"""

from sowctl.services.dataset.exporter import export_dataset
from sowctl.services.dataset.importer import import_dataset
from sowctl.services.dataset.validation import validate_dataset
from sowctl.services.dataset.writer import BATCH_ROWS

__all__ = ["BATCH_ROWS", "export_dataset", "import_dataset", "validate_dataset"]
