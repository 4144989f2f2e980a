"""sowctl schema: the JSON Schema of what a command prints with --json."""

from __future__ import annotations

from typing import Annotated

import typer

from sowctl.foundation.errors import UsageError, suggestion


def schema(
    command: Annotated[
        list[str] | None,
        typer.Argument(help='The command, as typed after "sowctl" ("items list"); none lists them.'),
    ] = None,
) -> None:
    """Print the JSON Schema (draft 2020-12) of what COMMAND prints with --json, or list the
    commands that have one. Each schema carries its output version (x-sowctl-output-version):
    a later sowctl may add fields, but removes, renames or retypes one only with a new version.

    Example: sowctl schema items list
    """
    from sowctl.output import json_schemas
    from sowctl.output.render import emit_json

    if not command:
        for name in json_schemas.commands():
            typer.echo(name)
        return
    name = " ".join(command)
    known = json_schemas.commands()
    if name not in known:
        hint = suggestion(name, known) or "; sowctl schema lists them"
        raise UsageError(f"no JSON output for {name!r}{hint}")
    emit_json(json_schemas.schema(name))
