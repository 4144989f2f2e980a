"""Which declared operation a method and path name (``sowctl api``): the registry read as
the server's router reads it, so both modes reach the same operation for a path."""

from __future__ import annotations

import re
from functools import cache
from urllib.parse import unquote

from sowctl.foundation.errors import MethodNotAllowed
from sowctl.operations import Operation, load_all


@cache
def _patterns() -> list[tuple[re.Pattern[str], Operation]]:
    out = []
    for op in load_all().values():
        pattern = re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", re.escape(op.path))
        out.append((re.compile(pattern), op))
    return out


def match(method: str, path: str) -> tuple[Operation, dict[str, str]] | None:
    """The operation of ``method`` ``path`` (no query string) and its path parameters;
    None when no operation has the path; MethodNotAllowed when one has it, for another
    method."""
    methods = []
    for pattern, op in _patterns():
        found = pattern.fullmatch(path)
        if found is None:
            continue
        if op.method == method:
            return op, {name: unquote(value) for name, value in found.groupdict().items()}
        methods.append(op.method)
    if methods:
        raise MethodNotAllowed(f"{path} takes {', '.join(sorted(set(methods)))}, not {method}")
    return None
