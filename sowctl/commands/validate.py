"""sowctl validate: datasets, baselines and accepted-risk files checked before they are used
(the pre-commit hook of .pre-commit-hooks.yaml runs it), with the rules of the commands that
read them, and without a database or a server of the user's."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from sowctl.foundation.errors import ExitCode, SowctlError
from sowctl.output.terminal import current


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
    from sowctl.commands import validate_files  # the import machinery: only when a file is checked

    refused = 0
    for file in files:
        chosen = FileKind(validate_files.kind_of(file)) if kind is FileKind.auto else kind
        try:
            validate_files.check(file, chosen.value)
        except SowctlError as exc:
            refused += 1
            problems = [issue.describe() for issue in exc.issues] if len(exc.issues) > 1 else [exc.message]
            current().err.writelines(f"{file}: {problem}\n" for problem in problems)
            continue
        current().out.write(f"ok\t{chosen.value}\t{file}\n")
    if refused:
        raise typer.Exit(int(ExitCode.INVALID_INPUT))
