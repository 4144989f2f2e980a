"""One version: sowctl/__init__.py holds it, the build reads it, --version prints it, and the
changelog's top entry is that release."""

from __future__ import annotations

import re
from pathlib import Path

import sowctl
from tests.support.cli import run_main

ROOT = Path(__file__).parents[2]


def changelog_versions() -> list[str]:
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    return re.findall(r"^## \[([^\]]+)\]", text, flags=re.M)


def test_changelog_top_entry_is_the_version():
    versions = changelog_versions()
    assert versions, "CHANGELOG.md has no '## [VERSION] - DATE' entry"
    assert versions[0] == sowctl.__version__


def test_changelog_entries_are_newest_first_and_unique():
    versions = [tuple(int(part) for part in v.split(".")) for v in changelog_versions() if v != "Unreleased"]
    assert versions == sorted(set(versions), reverse=True)


def test_version_option_prints_the_version():
    result = run_main("--version")
    assert result.exit_code == 0
    assert result.stdout.strip() == f"sowctl {sowctl.__version__}"


def test_the_build_reads_the_version_from_the_package():
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert 'dynamic = ["version"]' in pyproject
    assert 'version = { attr = "sowctl.foundation.version.VERSION" }' in pyproject
