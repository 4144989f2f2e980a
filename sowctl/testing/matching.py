"""Whether an event (or any JSON object) matches a pattern, and how a near miss differs.

A pattern is a subset: every key it names must be in the value with an equal value;
objects are compared key by key the same way, anything else for equality. The differences
are worded like ``verify``'s near misses (``data.title: expected "Walls", got "Wall"``), so a
failed wait shows the closest events and what kept each from matching.
"""

from __future__ import annotations

import json
from typing import Any

CLOSEST_SHOWN = 3


def differences(pattern: Any, value: Any, path: str = "") -> list[str]:
    """What keeps ``value`` from matching ``pattern`` (an empty list: it matches)."""
    if isinstance(pattern, dict):
        if not isinstance(value, dict):
            return [f"{path or 'value'}: expected an object, got {_shown(value)}"]
        found: list[str] = []
        for key, expected in pattern.items():
            where = f"{path}.{key}" if path else str(key)
            if key not in value:
                found.append(f"{where}: expected {_shown(expected)}, missing")
            else:
                found.extend(differences(expected, value[key], where))
        return found
    if pattern != value:
        return [f"{path or 'value'}: expected {_shown(pattern)}, got {_shown(value)}"]
    return []


def closest(pattern: dict[str, Any], values: list[dict[str, Any]]) -> list[tuple[dict[str, Any], list[str]]]:
    """The values with the fewest differences (at most ``CLOSEST_SHOWN``, newest first on ties)."""
    ranked = sorted(
        ((value, differences(pattern, value)) for value in reversed(values)), key=lambda pair: len(pair[1])
    )
    return ranked[:CLOSEST_SHOWN]


def no_match_message(what: str, pattern: dict[str, Any], values: list[dict[str, Any]], timeout: float) -> str:
    """The failure of a wait: the pattern, how many were seen, and the closest of them."""
    lines = [f"no {what} matching {_shown(pattern)} within {timeout:g} s ({len(values)} seen)"]
    for value, problems in closest(pattern, values):
        lines.append(f"  {value.get('id', '?')} {value.get('type', '')}".rstrip())
        lines.extend(f"     {problem}" for problem in problems)
    return "\n".join(lines)


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 80 else text[:77] + "..."
