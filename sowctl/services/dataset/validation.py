"""Validation of a dataset's records: types, enums, required fields, storable text."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pydantic import ValidationError

from sowctl.schemas import dataset as s
from sowctl.schemas.common import (
    UNSTORABLE_MESSAGE,
    escape_unstorable,
    issues_of,
    may_hold_unstorable,
    unstorable_text,
)
from sowctl.services.dataset.problems import _field_path, _Problems
from sowctl.services.dataset.source import DatasetSource, DictSource


def validate_dataset(data: Any) -> dict[str, list]:
    """Every record of ``data`` as its model, per kind; InvalidInput naming each bad field."""
    source = DictSource(data)
    problems = _Problems()
    records = {
        kind: [record for _, batch in validated_batches(kind, source, problems) for record in batch]
        for kind in s.KINDS
    }
    problems.raise_if_any()
    return records


def validated_batches(
    kind: str, source: DatasetSource, problems: _Problems, *, storable_checked: bool = False
) -> Iterator[tuple[int, list]]:
    """(index of the first, records) per batch of ``kind``, validated; a batch with a problem is
    left out, and its problems go to ``problems`` (per kind: unstorable text first, then the rest).
    ``storable_checked``: a second pass over records already checked for unstorable text."""
    count = source.counts.get(kind)
    if count is None:
        return
    if count < 0:
        problems.add(kind, None, None, "", "must be an array of records")
        return
    storable_checked = storable_checked or not source.may_hold_nul
    storable, typed = _Problems(), _Problems()
    adapter = s.ADAPTERS[kind]
    offset = 0
    try:
        for raw in source.batches(kind):
            bad = not storable_checked and _check_storable(kind, raw, offset, storable)
            try:
                records = adapter.validate_python(raw)
            except ValidationError as exc:
                _report(kind, raw, offset, exc, typed)
            else:
                if not bad:
                    yield offset, records
            offset += len(raw)
    finally:
        problems.absorb(storable)
        problems.absorb(typed)


def _report(kind: str, raw: list, offset: int, exc: ValidationError, problems: _Problems) -> None:
    for issue in issues_of(exc):
        index, *field = issue.path
        record = raw[index] if isinstance(index, int) and index < len(raw) else None
        record_id = record.get("id") if isinstance(record, dict) else None
        message = issue.message
        if message.startswith("input should be a valid dictionary"):
            message = "must be an object"
        where = index + offset if isinstance(index, int) else None
        problems.add(kind, where, record_id, _field_path(field), message)


def _check_storable(kind: str, raw: list, offset: int, problems: _Problems) -> bool:
    """NUL characters and lone surrogates: refused as the API refuses them (on every backend).
    True if some record of ``raw`` has one."""
    if not may_hold_unstorable(raw):  # ~0.5 s per 100,000 records
        return False
    found = False
    for index, record in enumerate(raw):
        path = unstorable_text(record)
        if path is not None:
            found = True
            record_id = record.get("id") if isinstance(record, dict) else None
            if isinstance(record_id, str):
                record_id = escape_unstorable(record_id)
            problems.add(kind, index + offset, record_id, _field_path(path), UNSTORABLE_MESSAGE)
    return found
