"""Every command and command group has help: ``--help`` shows its usage, a description and an
example, with nothing on stderr; every option of it has its own help; and the example is a
command line the CLI accepts (its options exist, its values are valid), so the help cannot
drift from the commands. The one test that every command has help."""

from __future__ import annotations

import re
import shlex

import pytest

from sowctl.cli import _VALUE_OPTIONS, hoist_global_options
from sowctl.output.params import choices
from tests.support.cli import run_main
from tests.support.help import COMMANDS, ROOT, every_help, help_text


def examples(command) -> list[str]:
    return [
        line.strip().removeprefix("Example: ")
        for line in (command.help or "").splitlines()
        if line.strip().startswith("Example: ")
    ]


@pytest.mark.parametrize("path", [p for p, _ in COMMANDS], ids=[" ".join(p) for p, _ in COMMANDS])
def test_every_command_and_group_has_help_with_an_example(path):
    command = dict(COMMANDS)[path]
    lines = [line.strip() for line in (command.help or "").splitlines() if line.strip()]
    assert any(not line.startswith("Example: ") for line in lines), f"sowctl {' '.join(path)}: no help text"
    found = examples(command)
    assert found, f"sowctl {' '.join(path)} has no 'Example: ' line in its help"
    bare = [param.opts for param in command.params if param.param_type_name == "option" and not param.help]
    assert not bare, f"sowctl {' '.join(path)}: options without help: {bare}"
    result = run_main(*path, "--help")  # which fails the test on a traceback
    assert (result.exit_code, result.stderr) == (0, ""), result.stderr
    shown = result.stdout
    assert shown.lstrip().startswith("Usage: sowctl") and "Example: sowctl" in shown.replace("\n", " ")
    for example in found:
        argv = shlex.split(example)
        assert argv[0] == "sowctl"
        args = hoist_global_options(ROOT, argv[1:])
        command, index, names = ROOT, 0, []
        while getattr(command, "commands", None) is not None:
            arg = args[index]
            if arg.startswith("-"):
                index += 2 if arg in _VALUE_OPTIONS else 1
                continue
            command, index = command.commands[arg], index + 1
            names.append(arg)
        assert tuple(names) == path or (tuple(names[: len(path)]) == path), example  # this command's
        # Every option exists and every value is accepted (click raises otherwise).
        command.make_context(names[-1], list(args[index:]))


CHOICE_COMMANDS = [
    (path, command) for path, command in COMMANDS if any(choices(param) for param in command.params)
]


@pytest.mark.parametrize(
    "path", [p for p, _ in CHOICE_COMMANDS], ids=[" ".join(p) for p, _ in CHOICE_COMMANDS]
)
def test_every_choice_shows_whole_at_80_columns(path, monkeypatch):
    """A choice list cut mid-word (``relate|d_to``) names no value a user can type."""
    monkeypatch.setenv("COLUMNS", "80")
    shown = help_text(path)
    words = set(re.findall(r"[\w-]+", shown))
    command = dict(CHOICE_COMMANDS)[path]
    for param in command.params:
        for choice in choices(param) or ():
            assert str(choice) in words, f"{' '.join(path)} {param.opts}: {choice!r} not shown whole"


def test_help_uses_no_word_an_installed_wheel_cannot_explain():
    """ "Group B" and "the README" name things a user of an installed wheel cannot look up."""
    jargon = re.compile(r"\bGroups? [ABC]\b|\bREADME\b")
    found = {line: jargon.findall(text) for line, text in every_help() if jargon.search(text)}
    assert not found
