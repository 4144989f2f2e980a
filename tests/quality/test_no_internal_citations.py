"""Users never meet a "§" pointing into documents they do not have.

Code, its docstrings and messages, the documentation and every ``--help`` say what a
user needs in words; a section sign is how a citation of an internal document looks.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).parents[2]
SUFFIXES = {".py", ".md", ".txt", ".html", ".js", ".css", ".json", ".toml", ".rst"}


def _shipped_and_documented() -> list[Path]:
    files = [ROOT / "README.md", ROOT / "CHANGELOG.md", ROOT / "CONTRIBUTING.md"]
    for folder in ("sowctl", "docs"):
        files += [p for p in (ROOT / folder).rglob("*") if p.suffix in SUFFIXES and "_build" not in p.parts]
    return [p for p in files if p.is_file()]


def test_no_section_sign_in_code_docs_or_readme():
    cited = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in _shipped_and_documented()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if "§" in line
    ]
    assert not cited, "\n".join(cited)


def test_no_section_sign_in_any_help():
    from tests.support.help import every_help

    cited = [name for name, text in every_help() if "§" in text]
    assert not cited, cited
