"""sowctl import / export: whole datasets (admin commands, local mode only)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated

import typer

from sowctl.commands._context import app_context
from sowctl.foundation.errors import UsageError
from sowctl.output.options import output_options
from sowctl.output.render import Column, emit_json, emit_rows
from sowctl.output.terminal import current

# Above this many records an export is written compact: indenting is for people, and
# json.dumps only uses its C encoder without an indent (several times faster).
INDENT_UP_TO = 10_000
# Below this many rows an import is over before a progress bar would be read.
PROGRESS_FROM = 5_000

SUMMARY_COLUMNS = [Column("KIND", "kind"), Column("RECORDS", "records", justify="right", kind="number")]


@output_options()
def import_command(
    ctx: typer.Context,
    file: Annotated[
        Path, typer.Argument(help='Dataset JSON file, as "sowctl export" writes one; "-" reads stdin.')
    ],
    json_: Annotated[
        bool, typer.Option("--json", help='Print {"imported": {kind: count}} instead of the summary.')
    ] = False,
) -> None:
    """Load a dataset into the database: every record, or none (local mode only).

    Every record is checked first (fields, ids, references, item hierarchy); a
    problem names the record and the field and leaves the database unchanged.
    Records whose id already exists in the database are refused, not updated.

    Example: sowctl import dataset.json
    """
    from sowctl.foundation.errors import SowctlError
    from sowctl.services.dataset import import_dataset
    from sowctl.services.dataset.source import open_dataset
    from sowctl.storage.created_files import new_sqlite_file, remove_sqlite_file

    context = app_context(ctx)
    if context.settings.remote:
        context.open_local_database("import")  # says why import needs local mode
    source = open_dataset(file)  # streamed: the file is read kind by kind, never held whole
    created = new_sqlite_file(context.settings.database)
    context.open_local_database("import")
    try:
        with _import_progress(source.total) as progress:
            counts = import_dataset(source, progress=progress)
    except (SowctlError, KeyboardInterrupt):
        if created is not None:  # a refused import leaves no new, empty database behind
            remove_sqlite_file(created)
        raise
    if json_:
        emit_json({"imported": counts})
        return
    rows = [{"kind": kind, "records": count} for kind, count in counts.items() if count]
    if not rows:
        current().out.write("nothing to import: the dataset has no records\n")
        return
    emit_rows(rows, SUMMARY_COLUMNS, id_key="kind", title="Imported")


def export_command(
    ctx: typer.Context,
    file: Annotated[
        Path | None,
        typer.Argument(help='Where to write the dataset; "-" or nothing: stdout.', show_default=False),
    ] = None,
    compact: Annotated[
        bool, typer.Option("--compact", help=f"No indentation (the default above {INDENT_UP_TO:,} records).")
    ] = False,
) -> None:
    """Write the whole database as a dataset (local mode only), as "sowctl import" reads it.

    Importing the file into an empty database reproduces the same API responses.
    Tokens, API keys and rate counters are not exported. A FILE is replaced
    atomically, so a failed export never leaves half a file behind.

    Example: sowctl export backup.json
    """
    from sowctl.services.dataset import export_dataset

    app_context(ctx).open_local_database("export", write=False)
    with _export_progress() as progress:
        data = export_dataset(progress=progress)
    import json  # imported when used: keeps start-up light

    records = sum(len(rows) for rows in data.values())
    if compact or records > INDENT_UP_TO:
        text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    else:
        text = json.dumps(data, ensure_ascii=False, indent=2)
    if file is None or str(file) == "-":
        current().out.write(text + "\n")
        return
    _write_atomically(file, text + "\n")
    current().err.write(f"exported {records:,} records to {file}\n")


# --- input and output -----------------------------------------------------------


def _write_atomically(path: Path, text: str) -> None:
    """All of the file or none (``sowctl.foundation.files``); a failure is a usage error naming the path."""
    from sowctl.foundation.files import write_file

    try:
        write_file(path.expanduser(), text)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None


# --- progress (stderr, and only when a person watches it) --------------------------


@contextlib.contextmanager
def _import_progress(records: int) -> Iterator[Callable[[int, int], None] | None]:
    """On a TTY, for PROGRESS_FROM records or more: "Checking", then a bar while rows go in."""
    if records < PROGRESS_FROM or not current().err.isatty():
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from sowctl.output.render import error_console

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=error_console(), transient=True) as progress:
        task = progress.add_task(f"Checking {records:,} records", total=None)

        def update(done: int, total: int) -> None:
            progress.update(task, description="Importing", completed=done, total=total)

        yield update


@contextlib.contextmanager
def _export_progress() -> Iterator[Callable[[int, int], None] | None]:
    if not current().err.isatty():
        yield None
        return
    from rich.progress import BarColumn, Progress, TextColumn

    from sowctl.output.render import error_console

    with Progress(TextColumn("Exporting"), BarColumn(), console=error_console(), transient=True) as progress:
        task = progress.add_task("export", total=None)

        def update(done: int, total: int) -> None:
            progress.update(task, completed=done, total=total)

        yield update
