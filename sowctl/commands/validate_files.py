"""What sowctl validate checks a file with: the rules of sowctl import (a dataset, into a
throwaway database) and of sowctl chain check (a baseline, accepted risks)."""

from __future__ import annotations

import re
from pathlib import Path

from sowctl.foundation.errors import UsageError
from sowctl.gate.verdict import parse_accepted, parse_baseline
from sowctl.services.dataset import import_dataset
from sowctl.services.dataset.source import open_dataset
from sowctl.storage.database import open_database

DATASET, BASELINE, ACCEPTED_RISKS = "dataset", "baseline", "accepted-risks"  # the --kind values
# What sowctl chain check --write-baseline puts first: how a baseline tells itself apart.
_BASELINE_MARK = re.compile(rb'"tool"\s*:\s*"sowctl chain check"')
_SNIFFED_BYTES = 4096


def kind_of(file: Path) -> str:
    if file.suffix.lower() == ".toml":
        return ACCEPTED_RISKS
    try:
        with open(file, "rb") as handle:
            start = handle.read(_SNIFFED_BYTES)
    except OSError:
        return DATASET  # the dataset's reader says why it cannot be read
    return BASELINE if _BASELINE_MARK.search(start) else DATASET


def check(file: Path, kind: str) -> None:
    """Refuse ``file`` (a SowctlError naming the problem) unless it is a good ``kind``."""
    if kind == DATASET:
        _check_dataset(file)
        return
    text = _read_text(file)
    if kind == BASELINE:
        parse_baseline(text, option="baseline")
    else:
        parse_accepted(text, option="accepted risks")


def _read_text(file: Path) -> str:
    try:
        return file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read: {getattr(exc, 'strerror', None) or exc}") from None


def _check_dataset(file: Path) -> None:
    """Import the file into a new in-memory database, thrown away afterwards: every rule of
    sowctl import applies, except clashes with the records of a database that holds some."""
    source = open_dataset(file)
    database = open_database(":memory:")
    try:
        import_dataset(source)
    finally:
        database.close()
