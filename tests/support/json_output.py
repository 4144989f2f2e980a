"""Every ``--json`` output a test produces is checked against ``sowctl schema COMMAND``.

``run_main`` calls :func:`check` after each successful run, so the hundreds of command tests,
in local and in remote mode, check the published schemas as a side effect.
"""

from __future__ import annotations

import functools
import json
from typing import Any

import jsonschema

from sowctl.cli import _VALUE_OPTIONS
from sowctl.commands import GROUP_NAMES
from sowctl.output import json_schemas


def command_of(args: list[str]) -> str | None:
    """The command ``sowctl ARGS`` runs ("items list"), global options skipped."""
    words: list[str] = []
    index = 0
    while index < len(args) and len(words) < 2:
        arg = args[index]
        if arg.startswith("-"):
            index += 2 if arg in _VALUE_OPTIONS and "=" not in arg else 1
            continue
        words.append(arg)
        if words[0] not in GROUP_NAMES:
            break
        index += 1
    return " ".join(words) or None


@functools.cache
def validator(command: str) -> jsonschema.protocols.Validator:
    schema = json_schemas.schema(command)
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def check(args: list[str], stdout: str) -> None:
    """Assert that a ``--json`` run's output matches its command's schema."""
    if "--json" not in args or any(arg.startswith("--jq") or arg in ("--help", "-h") for arg in args):
        return
    command = command_of(args)
    if command not in json_schemas.SOURCES:
        return
    bodies: list[Any] = (
        [json.loads(line) for line in stdout.splitlines()]
        if command in json_schemas.JSON_LINES
        else [json.loads(stdout)]
    )
    for body in bodies:
        errors = sorted(validator(command).iter_errors(body), key=lambda error: list(error.path))
        where = list(errors[0].path) if errors else []
        assert not errors, (
            f"sowctl {command} --json does not match its schema: {errors[0].message} at {where}"
        )
