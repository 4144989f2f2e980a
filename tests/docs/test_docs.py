"""Docs stay honest: every command is in the generated CLI reference, which is current
(tests/commands/test_help.py checks every command's help, its options' help and its example)."""

from __future__ import annotations

from pathlib import Path

from typer.main import get_command

from sowctl.cli import app

ROOT = Path(__file__).resolve().parents[2]
# The README and the pages under docs/ it leads to, read as one text.
README = "\n".join(path.read_text() for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))])


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


def test_cli_reference_is_current() -> None:
    """docs/cli.md is what docs/gen_cli_reference.py writes from today's commands."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("gen_cli_reference", ROOT / "docs" / "gen_cli_reference.py")
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    assert generator.OUTPUT.read_text(encoding="utf-8") == generator.render(), (
        "docs/cli.md is stale: run python docs/gen_cli_reference.py"
    )


def test_cli_reference_has_every_command() -> None:
    reference = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    for path in COMMANDS:
        assert f"## `sowctl {' '.join(path)}`" in reference, path


def test_readme_setup_commands_match_ci() -> None:
    assert "pip install . && sowctl serve --demo" in README
    assert "\nbash .ci/run\n" in README
    ci = (ROOT / ".ci" / "run").read_text()
    assert "pytest" in ci and "bash .ci/wheel" in ci and "bash .ci/docs" in ci


def test_plugin_example_is_the_tested_file() -> None:
    """The test-double guide's pytest example is byte-identical to the test that runs it in CI."""
    source = (Path(__file__).parent / "test_plugin_example.py").read_text().splitlines(keepends=True)
    body = "".join(source[4:])  # after the 3-line "keep identical" comment and a blank line
    page = (ROOT / "docs" / "test-double.md").read_text()
    section = page.split("## With pytest: the plugin", 1)[1]
    block = section.split("```python\n", 1)[1].split("```\n", 1)[0]
    assert block == body
