"""Docs stay honest: every command is mentioned in the README (tests/commands/test_help.py
checks that every command has help, with an example)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.main import get_command

from sowctl.cli import app

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()


def _commands() -> list[tuple[str, ...]]:
    root = get_command(app)
    found = []
    for name, command in root.commands.items():
        found.append((name,))
        for sub in getattr(command, "commands", {}):
            found.append((name, sub))
    return found


COMMANDS = _commands()


def test_every_group_is_registered() -> None:
    names = {path[0] for path in COMMANDS}
    expected = {"items", "deps", "chain", "po", "budgets", "contracts", "projects", "clients"}
    expected |= {"sows", "tokens", "keys", "config", "import", "export", "serve", "status", "replay"}
    assert expected <= names


@pytest.mark.parametrize("path", COMMANDS, ids=" ".join)
def test_command_is_in_readme(path: tuple[str, ...]) -> None:
    group = path[0]
    assert f"sowctl {group}" in README, f"README never mentions `sowctl {group}`"
    if len(path) == 2:
        # A subcommand appears as `sowctl GROUP SUB` or in that group's row of the table.
        rows = [line for line in README.splitlines() if f"sowctl {group}" in line]
        assert any(re.search(rf"\b{re.escape(path[1])}\b", row) for row in rows), (
            f"README's lines for `sowctl {group}` never mention `{path[1]}`"
        )


def test_readme_setup_commands_match_ci() -> None:
    assert "sowctl serve --demo" in README
    assert "bash .ci/run" in README
    ci = (Path(__file__).resolve().parents[2] / ".ci" / "run").read_text()
    assert "pytest" in ci


def test_readme_fixture_example_is_the_tested_file() -> None:
    """The README's pytest example is byte-identical to the test that runs it in CI."""
    source = (Path(__file__).parent / "test_readme_fixture.py").read_text().splitlines(keepends=True)
    body = "".join(source[4:])  # after the 3-line "keep identical" comment and a blank line
    section = README.split("## Using `sowctl serve` in your test suite", 1)[1]
    block = section.split("```python\n", 1)[1].split("```\n", 1)[0]
    assert block == body
