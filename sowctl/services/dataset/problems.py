"""Problems found in a dataset, each naming its record and field; the first few are kept,
the others counted (``limits.MAX_REPORTED_ISSUES``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sowctl.foundation.budgets import MAX_REPORTED_ISSUES
from sowctl.foundation.errors import InvalidInput, Issue, bounded_issues, more_problems


class _Problems:
    """Collects what is wrong with a file; raises one InvalidInput for all of it."""

    def __init__(self) -> None:
        self.issues: list[Issue] = []
        self.lines: list[str] = []
        self.total = 0

    def add(self, kind: str, index: int | None, record_id: Any, field: str, message: str) -> None:
        self.total += 1
        if len(self.issues) >= MAX_REPORTED_ISSUES:
            return
        where = kind if index is None else f"{kind}[{index}]"
        if record_id is not None:
            where += f" (id {record_id})"
        self.lines.append(f"{where}: {field}: {message}" if field else f"{where}: {message}")
        path: tuple[str | int, ...] = (kind,) if index is None else (kind, index)
        self.issues.append(Issue(path + ((field,) if field else ()), message))

    def absorb(self, other: _Problems) -> None:
        """``other``'s problems after this one's (as if they had been added here)."""
        room = max(0, MAX_REPORTED_ISSUES - len(self.issues))
        self.issues.extend(other.issues[:room])
        self.lines.extend(other.lines[:room])
        self.total += other.total

    def raise_if_any(self) -> None:
        if not self.total:
            return
        message = self.lines[0]
        if self.total > 1:
            message += f" ({more_problems(self.total - 1)})"
        raise InvalidInput(message, bounded_issues(self.issues, self.total))


def _field_path(loc: Sequence[str | int]) -> str:
    """("contacts", 1, "email") -> "contacts[1].email"."""
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += ("." if text else "") + part
    return text
