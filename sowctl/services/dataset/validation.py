"""Validation of a dataset's records: types, enums, required fields, storable text."""

from __future__ import annotations

import re
from typing import Any

from pydantic import ValidationError

from sowctl.errors import InvalidInput, Issue
from sowctl.schemas import dataset as s
from sowctl.schemas.common import (
    UNSTORABLE_MESSAGE,
    escape_unstorable,
    unstorable_text,
    validation_error,
)
from sowctl.services.dataset.problems import _field_path, _Problems


def validate_dataset(data: Any) -> dict[str, list]:
    """Every record of ``data`` as its model, per kind; InvalidInput naming each bad field."""
    if not isinstance(data, dict):
        raise InvalidInput(
            "a dataset must be a JSON object with keys such as organizations, items, dependencies",
            [Issue((), "must be a JSON object")],
        )
    unknown = [key for key in data if key not in s.RECORD_MODELS]
    if unknown:
        raise InvalidInput(
            f"unknown record kind {unknown[0]!r} (expected: {', '.join(s.KINDS)})",
            [Issue((key,), "unknown record kind") for key in unknown],
        )
    problems = _Problems()
    records: dict[str, list] = {}
    for kind in s.KINDS:
        raw = data.get(kind)
        if raw is None:
            records[kind] = []
            continue
        if not isinstance(raw, list):
            problems.add(kind, None, None, "", "must be an array of records")
            continue
        _check_storable(kind, raw, problems)
        try:
            records[kind] = s.ADAPTERS[kind].validate_python(raw)
        except ValidationError as exc:
            for issue in validation_error(exc).issues:
                index, *field = issue.path
                record = raw[index] if isinstance(index, int) and index < len(raw) else None
                record_id = record.get("id") if isinstance(record, dict) else None
                message = issue.message
                if message.startswith("input should be a valid dictionary"):
                    message = "must be an object"
                problems.add(
                    kind, index if isinstance(index, int) else None, record_id, _field_path(field), message
                )
    problems.raise_if_any()
    return records


_ESCAPED_UNSTORABLE = re.compile(r"\\x00|\\ud[89a-f]")


def _check_storable(kind: str, raw: list, problems: _Problems) -> None:
    """NUL characters and lone surrogates: refused as the API refuses them (on every backend)."""
    # repr() escapes both as \x00 and \udXXX, at C speed (~0.5 s per 100,000 records);
    # the exact walk runs only on a hit (or on a backslash-x00 typed in the data).
    if not _ESCAPED_UNSTORABLE.search(repr(raw)):
        return
    for index, record in enumerate(raw):
        path = unstorable_text(record)
        if path is not None:
            record_id = record.get("id") if isinstance(record, dict) else None
            if isinstance(record_id, str):
                record_id = escape_unstorable(record_id)
            problems.add(kind, index, record_id, _field_path(path), UNSTORABLE_MESSAGE)
