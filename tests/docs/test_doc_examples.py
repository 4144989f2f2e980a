"""Every code example of the README and of docs/ works as written.

Some examples run whole elsewhere: the first session (test_readme_session.py), the pytest
plugin example (test_plugin_example.py), the CI jobs' commands (tests/reports/
test_ci_examples.py) and ``serve --exec`` (tests/commands/test_serve_exec.py). Here every
block is checked for what it is: JSON, TOML and YAML parse; Python compiles; shell is valid
bash, and each ``sowctl`` command in it names commands and options that exist (``--help``
appended: click parses every option before help answers). The README's pytest example runs.
A block in a language not listed here fails, so a new kind of example gets a check.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest
import yaml

from tests.support.cli import run_main

ROOT = Path(__file__).resolve().parents[2]
# The README, CONTRIBUTING.md, docs/ and the files its pages include.
INCLUDED = ["ARCHITECTURE.md", "BENCHMARKS.md", "CHANGELOG.md", "bench/WSGI_SERVERS.md"]
PAGES = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]
PAGES += [ROOT / name for name in INCLUDED]
PAGES += [ROOT / "sowctl" / "data" / "skill.md"]  # sowctl skill: what an agent is told to run
NOT_RUN = {"nginx", "text"}  # a proxy's configuration, program output


def code_blocks(path: Path) -> list[tuple[str, str, int]]:
    """(language, code, line) of each fenced block; MyST directives (``{toctree}``) excluded."""
    blocks, language, start, lines, indent = [], None, 0, [], 0
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        fence = re.match(r"^(\s*)```(\S*)\s*$", line)
        if language is None and fence:
            indent, language, start, lines = len(fence.group(1)), fence.group(2) or "sh", number, []
        elif language is not None and fence and not fence.group(2):
            if not language.startswith("{"):
                blocks.append((language, textwrap.dedent("\n".join(lines)) + "\n", start))
            language = None
        elif language is not None:
            lines.append(line[indent:] if line[:indent].isspace() else line)
    return blocks


EXAMPLES = [
    pytest.param(language, code, id=f"{path.relative_to(ROOT)}:{line}:{language}")
    for path in PAGES
    for language, code, line in code_blocks(path)
]


def sowctl_commands(script: str) -> list[list[str]]:
    """The arguments of each ``sowctl`` command of a shell script, up to a pipe, ``&&``,
    ``||``, a redirection or ``&``; ``$(sowctl ...)`` substitutions included."""
    commands = []
    for line in script.replace("\\\n", " ").splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        words, current, previous = list(lexer), None, None
        for word in words:
            operator = bool(word) and set(word) <= set("();<>|&")
            if current is not None and operator:
                commands.append(current)
                current = None
            elif current is not None:
                current.append(word)
            elif word == "sowctl" and (
                previous is None or previous in ("do", "then") or set(previous) <= set("();<>|&")
            ):
                current = []
            previous = word
        if current is not None:
            commands.append(current)
    return commands


def test_the_pages_have_examples():
    languages = {language for language, _ in (p.values[:2] for p in EXAMPLES)}
    assert {"sh", "python", "json", "toml", "yaml"} <= languages


@pytest.mark.parametrize(("language", "code"), EXAMPLES)
def test_example(language: str, code: str) -> None:
    if language == "json":
        json.loads(code)
    elif language == "toml":
        tomllib.loads(code)
    elif language == "yaml":
        assert yaml.safe_load(code)
    elif language == "python":
        compile(code, "<example>", "exec")
    elif language in ("sh", "bash"):
        syntax = subprocess.run(["bash", "-n"], input=code, capture_output=True, text=True)
        assert syntax.returncode == 0, syntax.stderr
        for args in sowctl_commands(code):
            result = run_main(*args, "--help")
            assert result.exit_code == 0, f"sowctl {shlex.join(args)}: {result.stderr}"
    else:
        assert language in NOT_RUN, f"no check for ```{language} examples: add one"


def test_sowctl_commands_are_found():
    found = sowctl_commands(
        "DEP=$(sowctl deps create --source a -q)\nsowctl chain check s || echo x\nsowctl a \\\n  --b c | jq\n"
    )
    assert found == [["deps", "create", "--source", "a", "-q"], ["chain", "check", "s"], ["a", "--b", "c"]]


@pytest.mark.slow
@pytest.mark.parametrize(
    "heading", ["A local instance for your tests", "Webhooks and events from real state"]
)
def test_the_readme_pytest_examples_pass(tmp_path: Path, heading: str) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split(f"### {heading}", 1)[1]
    (tmp_path / "test_example.py").write_text(section.split("```python\n", 1)[1].split("```\n", 1)[0])
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:randomly",
            # The examples use only what the service describes: strict contract mode passes them.
            "--sowctl-contract",
            "strict",
            "test_example.py",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout


def test_every_included_file_is_checked():
    included = set()
    for page in (ROOT / "docs").glob("*.md"):
        included |= set(
            re.findall(r"^```\{include\} \.\./(\S+)$", page.read_text(encoding="utf-8"), flags=re.M)
        )
    assert included == set(INCLUDED)
