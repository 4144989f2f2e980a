"""Reports of ``sowctl chain check`` in the formats CI systems read: one small module per format.

Each writer turns the check's summary (``gate.risks.check_chain`` after
``gate.verdict.apply_gate``) into text, and says the same thing in its own
format when the check could not run (``render_error``), so a dashboard never shows
a stale green. This package only formats; the rules live in the services.
"""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sowctl.foundation.errors import InvalidInput, quoted

FORMATS = ("sarif", "junit", "gitlab", "markdown")
STDOUT = "-"
# The summary handed to the writers may carry the chain's item titles by id under this key (the
# --json summary does not): a cycle's finding names item ids only, and the Markdown diagram draws
# an item as its title over its id, as ``chain show --format mermaid`` does.
ITEM_TITLES = "itemTitles"


@dataclass(frozen=True)
class ReportSpec:
    fmt: str
    path: str  # "-" for stdout

    @property
    def to_stdout(self) -> bool:
        # /dev/stdout is this process's stdout: written through it, not opened again (an
        # open truncates a file stdout is redirected to, under the command's own output).
        return self.path == STDOUT or self.path in _STDOUT_PATHS


_STDOUT_PATHS = frozenset({"/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"})


def parse_specs(values: list[str] | None) -> tuple[list[ReportSpec], InvalidInput | None]:
    """``--report FORMAT=PATH`` options: the valid ones, and the first problem (or None).

    The valid ones are returned even when another is wrong, so the error can still be
    written into every report file that was named correctly.
    """
    specs: list[ReportSpec] = []
    problem: InvalidInput | None = None
    for value in values or ():
        fmt, sep, path = value.partition("=")
        fmt = fmt.strip().lower()
        if not sep or not path:
            problem = problem or InvalidInput.for_field(
                "--report", f"{quoted(value)}: expected FORMAT=PATH (- for stdout)"
            )
        elif fmt not in FORMATS:
            problem = problem or InvalidInput.for_field(
                "--report", f"unknown format {fmt!r} (choose from {', '.join(FORMATS)})"
            )
        elif (path == STDOUT or path in _STDOUT_PATHS) and any(spec.to_stdout for spec in specs):
            problem = problem or InvalidInput.for_field("--report", "only one report can go to stdout (-)")
        else:
            specs.append(ReportSpec(fmt, path))
    return specs, problem


def _module(fmt: str) -> Any:
    return importlib.import_module(f"sowctl.gate.reports.{fmt}")


def render(fmt: str, summary: dict[str, Any]) -> str:
    return _module(fmt).render(summary)


def render_error(fmt: str, sow_id: str, message: str, exit_code: int) -> str:
    return _module(fmt).render_error(sow_id, message, exit_code)


def write(spec: ReportSpec, text: str, option: str = "--report", *, wait_for_reader: bool = True) -> None:
    """Write a report whole: stdout, or PATH (``sowctl.foundation.files``: never half a file, links kept)."""
    if spec.to_stdout:
        sys.stdout.write(text)
        return
    from sowctl.foundation.files import write_file

    try:
        # errors="replace": a lone surrogate (which no UTF-8 file can hold) becomes "?" rather
        # than losing the whole report.
        write_file(Path(spec.path), text, errors="replace", wait_for_reader=wait_for_reader)
    except OSError as exc:
        raise InvalidInput.for_field(option, f"cannot write {spec.path}: {exc.strerror or exc}") from None


def append_step_summary(path: str, text: str) -> None:
    """Append the Markdown summary to GitHub's job summary file (GITHUB_STEP_SUMMARY)."""
    try:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(text)
    except OSError as exc:
        raise InvalidInput.for_field(
            "GITHUB_STEP_SUMMARY", f"cannot append to {path}: {exc.strerror or exc}"
        ) from None
