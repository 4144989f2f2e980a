"""Choosing what is printed: ``--jq`` over the JSON body, ``--columns``, readable times.

``jq`` (the PyPI binding of the C jq) is imported only when ``--jq`` is given.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from sowctl.foundation.errors import UsageError


def run_jq(expression: str, data: Any) -> list[Any]:
    """The results of ``expression`` on ``data``; a bad expression is a usage error naming --jq."""
    import jq

    try:
        program = jq.compile(expression)
    except ValueError as exc:
        raise UsageError(f"--jq: {_jq_message(exc)}") from None
    try:
        return program.input_value(data).all()
    except ValueError as exc:
        raise UsageError(f"--jq: {_jq_message(exc)}") from None


def _jq_message(exc: Exception) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    first = lines[0] if lines else "invalid expression"
    return first.removeprefix("jq: ").removeprefix("error: ").rstrip(":")


def jq_lines(results: Iterable[Any], *, pretty: bool) -> Iterable[str]:
    """One printed result per item: strings raw (as ``gh --jq`` and ``jq -r``), the rest as JSON.

    Piped, an object or array is one compact line, so every result is one line.
    """
    import json

    from sowctl.output.safe import clean, clean_json

    for result in results:
        if isinstance(result, str):
            yield clean(result)
        else:
            text = json.dumps(result, ensure_ascii=False, indent=2 if pretty else None)
            yield clean_json(text)


def key(name: str) -> str:
    """A column or field name as the user may type it: case, spaces, - and _ ignored."""
    return re.sub(r"[^a-z0-9]", "", name.lower())


def parse_columns(text: str) -> list[str]:
    names = [part.strip() for part in text.split(",") if part.strip()]
    if not names:
        raise UsageError("--columns: give column names separated by commas, e.g. --columns id,title")
    return names


def choose(names: Sequence[str], available: Sequence[str]) -> list[int]:
    """Indexes into ``available`` for the names asked for, in the order asked."""
    index = {key(name): i for i, name in enumerate(available)}
    chosen = []
    for name in names:
        if key(name) not in index:
            shown = ", ".join(display_name(a) for a in available)
            raise UsageError(f"--columns: no column {name!r} here; the columns are: {shown}")
        chosen.append(index[key(name)])
    return chosen


def display_name(header: str) -> str:
    return header.lower().replace(" ", "-")


_TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})$")


def readable_time(value: str, tz: Any = None) -> str:
    """``2026-11-25T11:48:06Z`` as ``2026-11-25 12:48 CET`` in the local zone (or ``tz``).

    A value that is not such a timestamp is returned as it is.
    """
    if not isinstance(value, str) or not _TIMESTAMP.match(value):
        return value
    import datetime

    try:
        moment = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return value
    local = moment.astimezone(tz)
    zone = local.tzname() or local.strftime("%z")
    if zone.startswith(("+", "-")) and len(zone) >= 5:
        zone = "UTC" + zone if zone[1:] != "0000" else "UTC"
    return f"{local:%Y-%m-%d %H:%M} {zone}"
