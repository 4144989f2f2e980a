"""The output options of the command being run (set by ``sowctl.output.options``)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Shape:
    jq: str | None = None  # --jq EXPR
    columns: list[str] | None = None  # --columns, parsed


current = Shape()
