"""Two servers' answers to the same scenario, side by side: where they differ.

Ids and timestamps are ignored (each server makes its own): a field named ``id`` or
ending in ``Id``, ``_id`` or ``Ids``, and any string shaped as a date or a timestamp.
The answers are paired in the order the scenario asked them, so a request one server
was not asked (its data led the scenario elsewhere) is said as such.
"""

from __future__ import annotations

import re
from typing import Any

from sowctl.conformance.checks import Difference, route_of
from sowctl.conformance.scenario import Exchange, Run

_DATE_LIKE = re.compile(r"^\d{4}-\d{2}-\d{2}([T ][\d:.]+(Z|[+-]\d{2}:?\d{2})?)?$")
_MAX_PER_ANSWER = 10
IGNORED = "(ignored)"


def _is_id_field(name: str) -> bool:
    return name == "id" or name.endswith(("Id", "_id", "Ids", "_ids"))


def normalized(value: Any, name: str = "") -> Any:
    """``value`` with ids and timestamps replaced by one placeholder."""
    if _is_id_field(name) and value is not None:
        return IGNORED
    if isinstance(value, dict):
        return {key: normalized(item, key) for key, item in value.items()}
    if isinstance(value, list):
        return [normalized(item, name) for item in value]
    if isinstance(value, str) and _DATE_LIKE.match(value):
        return IGNORED
    return value


def _walk(left: Any, right: Any, where: str, out: list[tuple[str, str]]) -> None:
    if len(out) >= _MAX_PER_ANSWER:
        return
    here = where or "(root)"
    if isinstance(left, dict) and isinstance(right, dict):
        for key in sorted(left.keys() - right.keys()):
            out.append((f"{where}/{key}".lstrip("/"), "only the first server answers this field"))
        for key in sorted(right.keys() - left.keys()):
            out.append((f"{where}/{key}".lstrip("/"), "only the second server answers this field"))
        for key in left.keys() & right.keys():
            _walk(left[key], right[key], f"{where}/{key}", out)
    elif isinstance(left, list) and isinstance(right, list):
        if len(left) != len(right):
            out.append((here.lstrip("/"), f"{len(left)} entries against {len(right)}"))
        for index, (one, other) in enumerate(zip(left, right, strict=False)):
            _walk(one, other, f"{where}/{index}", out)
    elif type(left) is not type(right) and not (
        isinstance(left, int | float) and isinstance(right, int | float)
    ):
        out.append((here.lstrip("/"), f"{type(left).__name__} against {type(right).__name__}"))
    elif left != right:
        out.append((here.lstrip("/"), f"{_short(left)} against {_short(right)}"))


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _pair_differences(first: Exchange, second: Exchange) -> list[Difference]:
    found_route = route_of(first.path.split("?", 1)[0])
    route = found_route[0] if found_route else first.path

    def diff(where: str, detail: str) -> Difference:
        return Difference(first.step, first.method, first.path, route, "comparison", where, detail)

    if first.answer.status != second.answer.status:
        return [diff("status", f"{first.answer.status} against {second.answer.status}")]
    types = [exchange.answer.headers.get("content-type", "").split(";")[0] for exchange in (first, second)]
    if types[0] != types[1]:
        return [diff("content-type", f"{types[0]!r} against {types[1]!r}")]
    found: list[tuple[str, str]] = []
    _walk(normalized(first.answer.json()), normalized(second.answer.json()), "", found)
    return [diff(where, detail) for where, detail in found]


def compare(first: Run, second: Run) -> list[Difference]:
    """Where the second server's answers differ from the first's."""
    found: list[Difference] = []
    for one, other in zip(first.exchanges, second.exchanges, strict=False):
        if (one.step, one.method) != (other.step, other.method):
            detail = f"the scenario went on differently: {one.step!r} against {other.step!r}"
            route = route_of(one.path.split("?", 1)[0])
            found.append(
                Difference(
                    one.step,
                    one.method,
                    one.path,
                    route[0] if route else one.path,
                    "comparison",
                    "scenario",
                    detail,
                )
            )
            return found
        found.extend(_pair_differences(one, other))
    longer = first.exchanges[len(second.exchanges) :] or second.exchanges[len(first.exchanges) :]
    if longer:
        which = "first" if len(first.exchanges) > len(second.exchanges) else "second"
        extra = longer[0]
        route = route_of(extra.path.split("?", 1)[0])
        detail = f"only the {which} server was asked this and {len(longer) - 1} more requests"
        found.append(
            Difference(
                extra.step,
                extra.method,
                extra.path,
                route[0] if route else extra.path,
                "comparison",
                "scenario",
                detail,
            )
        )
    return found
