"""sowctl skill: the guide an agent reads before it uses the CLI (an Agent Skills file)."""

from __future__ import annotations

from importlib import resources

from sowctl.output.terminal import current


def skill_text() -> str:
    """The skill file shipped in the package: YAML front matter (name, description), then Markdown."""
    return resources.files("sowctl").joinpath("data", "skill.md").read_text(encoding="utf-8")


def skill() -> None:
    """Print a skill file (Markdown with a name and description) that tells an AI agent how to
    use sowctl: modes and credentials, JSON output and errors, exit codes, common tasks and the
    rules to follow. Save it as SKILL.md where your agent reads skills (a folder of its own,
    such as .claude/skills/sowctl/).

    Example: sowctl skill
    """
    current().out.write(skill_text())
