"""The output state of the command being run: its output options (set by ``sowctl.output.options``)
and the exit code it has already decided on (``decide_exit``), which a reader leaving early must not
change."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Shape:
    jq: str | None = None  # --jq EXPR
    columns: list[str] | None = None  # --columns, parsed


current = Shape()

# The exit code a command has settled before it prints (a failed check is 1 whatever the reader
# does); ``sowctl.cli`` returns it when stdout's reader leaves early, 0 when none was decided.
decided_exit: int | None = None


def decide_exit(code: int) -> None:
    """Record the command's exit code before its output is written (see ``decided_exit``)."""
    global decided_exit
    decided_exit = code
