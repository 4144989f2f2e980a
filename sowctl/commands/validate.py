"""sowctl validate: datasets, baselines and accepted-risk files checked before they are used
(the pre-commit hook of .pre-commit-hooks.yaml runs it), with the rules of the commands that
read them, and without a database or a server of the user's."""

from __future__ import annotations

import re
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from sowctl.foundation.errors import ExitCode, SowctlError, UsageError
from sowctl.gate.verdict import parse_accepted, parse_baseline
from sowctl.services.dataset import import_dataset
from sowctl.services.dataset.source import open_dataset
from sowctl.storage.database import open_database

# What sowctl chain check --write-baseline puts first: how a baseline tells itself apart.
_BASELINE_MARK = re.compile(rb'"tool"\s*:\s*"sowctl chain check"')
_SNIFFED_BYTES = 4096


class FileKind(StrEnum):
    auto = "auto"
    dataset = "dataset"
    baseline = "baseline"
    accepted_risks = "accepted-risks"


def validate(
    files: Annotated[list[Path], typer.Argument(help="The files to check.", show_default=False)],
    kind: Annotated[
        FileKind,
        typer.Option(
            "--kind",
            help="What the files are. auto: *.toml is accepted risks, a JSON file that "
            "sowctl chain check --write-baseline wrote is a baseline, any other a dataset.",
        ),
    ] = FileKind.auto,
) -> None:
    """Check dataset, baseline and accepted-risks files with the rules of sowctl import
    (into an empty database) and sowctl chain check (--baseline, --accepted-risks).

    Prints "ok KIND FILE" for each good file, and "FILE: problem" on stderr for each
    problem of the others. Exits 0 when every file is good, 2 otherwise. Nothing is
    written anywhere: the pre-commit hook sowctl-validate runs this.

    Example: sowctl validate datasets/tower-a.json .sowctl/baseline.json .sowctl/accepted-risks.toml
    """
    refused = 0
    for file in files:
        chosen = _kind_of(file) if kind is FileKind.auto else kind
        try:
            _check(file, chosen)
        except SowctlError as exc:
            refused += 1
            problems = [issue.describe() for issue in exc.issues] if len(exc.issues) > 1 else [exc.message]
            sys.stderr.writelines(f"{file}: {problem}\n" for problem in problems)
            continue
        sys.stdout.write(f"ok\t{chosen.value}\t{file}\n")
    if refused:
        raise typer.Exit(int(ExitCode.INVALID_INPUT))


def _kind_of(file: Path) -> FileKind:
    if file.suffix.lower() == ".toml":
        return FileKind.accepted_risks
    try:
        with open(file, "rb") as handle:
            start = handle.read(_SNIFFED_BYTES)
    except OSError:
        return FileKind.dataset  # the dataset's reader says why it cannot be read
    return FileKind.baseline if _BASELINE_MARK.search(start) else FileKind.dataset


def _check(file: Path, kind: FileKind) -> None:
    if kind is FileKind.dataset:
        _check_dataset(file)
        return
    text = _read_text(file)
    if kind is FileKind.baseline:
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
