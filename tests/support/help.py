"""The CLI's command tree and each command's ``--help`` output, for tests of the help texts."""

from __future__ import annotations

import typer.main

from sowctl.cli import app
from tests.support.cli import run_main


def _walk(command, path: tuple[str, ...]):
    yield path, command
    for name, sub in (getattr(command, "commands", None) or {}).items():
        yield from _walk(sub, (*path, name))


ROOT = typer.main.get_command(app)
COMMANDS = [(path, command) for path, command in _walk(ROOT, ()) if path]


def help_text(path: tuple[str, ...]) -> str:
    result = run_main(*path, "--help")
    assert result.exit_code == 0, result.stderr
    return result.stdout


def every_help() -> list[tuple[str, str]]:
    """(command line, --help output) of the root and of every group and command."""
    return [("sowctl", help_text(()))] + [("sowctl " + " ".join(p), help_text(p)) for p, _ in COMMANDS]
