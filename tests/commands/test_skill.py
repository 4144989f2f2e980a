"""sowctl skill prints the agent's guide: a skill file with front matter, whose commands exist."""

from __future__ import annotations

import yaml

from sowctl.commands.skill import skill_text
from tests.support.cli import run_main


def test_skill_prints_the_packaged_file_with_its_front_matter() -> None:
    result = run_main("skill")

    assert result.exit_code == 0, result.stderr
    assert result.stdout == skill_text()
    _, front, body = result.stdout.split("---\n", 2)
    meta = yaml.safe_load(front)
    assert meta["name"] == "sowctl" and "dependency chain" in meta["description"]
    assert body.lstrip().startswith("# Using sowctl")


def test_the_skill_states_the_exit_codes_the_cli_uses() -> None:
    from sowctl.foundation.errors import ExitCode

    text = skill_text()
    for code in ExitCode:
        assert f"{int(code)} " in text, code
