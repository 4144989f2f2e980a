"""Fault and latency injection for client resilience tests (``sowctl serve`` as a test double).

A ``FaultConfig`` says which requests are slowed down and which fail:

* ``latency_ms``: ``(min, max)`` milliseconds added before a request is handled
  (a uniform draw; ``min == max`` for a fixed delay), or None;
* ``rate``: the probability (0 to 1) that a request fails instead of being handled;
* ``status`` and ``mode``: a failure is an error response with that status in the
  group's own envelope (``mode="error"``), or a connection closed without any
  response (``mode="drop"``);
* ``routes``: fnmatch patterns on the path, each optionally prefixed by a method
  (``"GET /projects"``, ``"/api/items/*"``); empty means every API route;
* ``count``: at most this many failures are injected, then none (None: no
  limit). ``{"rate": 1, "count": 2}`` fails the next two matching requests and
  then lets every request through: a deterministic retry test. The count is
  shared by all workers (kept in the database) and shown as it goes down.

The decision is taken before the handler runs, so an injected failure never
changes stored data. ``/healthz`` and ``/_admin/*`` are never slowed down or failed.
The same config is set with ``serve --latency/--fault-rate/--fault-status/
--fault-mode/--fault-route`` and at run time with ``/_admin/faults`` (JSON:
``{"latencyMs": [min, max] or n, "rate", "status", "mode", "routes", "count"}``).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from sowctl.foundation.budgets import MAX_FAULT_ROUTES
from sowctl.foundation.errors import InvalidInput, Issue, quoted

MODES = ("error", "drop")
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
MAX_LATENCY_MS = 600_000  # ten minutes: longer is a typo, not a test
FAULT_MESSAGE = "injected fault"
FAULT_HEADER = "X-Sowctl-Fault"

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s)?\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class FaultConfig:
    latency_ms: tuple[float, float] | None = None
    rate: float = 0.0
    status: int = 503
    mode: str = "error"
    routes: tuple[str, ...] = ()
    count: int | None = None

    def __post_init__(self) -> None:
        problems = _problems(self)
        if problems:
            field, message = problems[0]
            raise InvalidInput(f"{field}: {message}", [Issue((f,), m) for f, m in problems])

    @property
    def active(self) -> bool:
        return self.latency_ms is not None or self.fails

    @property
    def fails(self) -> bool:
        """Whether any request can still fail."""
        return self.rate > 0 and (self.count is None or self.count > 0)

    def matches(self, method: str, path: str) -> bool:
        """Whether a request is subject to this config (every route when ``routes`` is empty)."""
        if not self.routes:
            return True
        method = method.upper()
        for route in self.routes:
            wanted, pattern = split_route(route)
            if (wanted is None or wanted == method or (wanted == "GET" and method == "HEAD")) and fnmatchcase(
                path, pattern
            ):
                return True
        return False

    def to_json(self) -> dict[str, Any]:
        return {
            "latencyMs": [_number(v) for v in self.latency_ms] if self.latency_ms is not None else None,
            "rate": self.rate,
            "status": self.status,
            "mode": self.mode,
            "routes": list(self.routes),
            "count": self.count,
        }

    @classmethod
    def from_json(cls, data: Any) -> FaultConfig:
        """The config of a ``/_admin/faults`` body; unknown keys and bad values are a 400."""
        if not isinstance(data, dict):
            raise InvalidInput(
                'the fault config must be a JSON object: {"latencyMs", "rate", "status", "mode", "routes"}',
                [Issue((), "must be a JSON object")],
            )
        known = {"latencyMs", "rate", "status", "mode", "routes", "count"}
        unknown = sorted(set(data) - known)
        if unknown:
            raise InvalidInput.for_field(unknown[0], f"unknown field (expected: {', '.join(sorted(known))})")
        latency = data.get("latencyMs")
        if latency is not None:
            latency = _latency_json(latency)
        rate = data.get("rate", 0.0)
        if isinstance(rate, bool) or not isinstance(rate, int | float):
            raise InvalidInput.for_field("rate", "must be a number from 0 to 1")
        status = data.get("status", 503)
        if isinstance(status, bool) or not isinstance(status, int):
            raise InvalidInput.for_field("status", "must be an integer HTTP status from 400 to 599")
        mode = data.get("mode", "error")
        if not isinstance(mode, str):
            raise InvalidInput.for_field("mode", "must be one of: error, drop")
        routes = data.get("routes") or []
        if not isinstance(routes, list) or not all(isinstance(r, str) for r in routes):
            raise InvalidInput.for_field("routes", "must be an array of route patterns")
        count = data.get("count")
        if count is not None and (isinstance(count, bool) or not isinstance(count, int)):
            raise InvalidInput.for_field("count", "must be a whole number of failures, or null for no limit")
        return cls(
            latency_ms=latency, rate=float(rate), status=status, mode=mode, routes=tuple(routes), count=count
        )


def _problems(config: FaultConfig) -> list[tuple[str, str]]:
    problems: list[tuple[str, str]] = []
    if config.latency_ms is not None:
        low, high = config.latency_ms
        if not (0 <= low <= high <= MAX_LATENCY_MS) or not all(math.isfinite(v) for v in (low, high)):
            problems.append(("latencyMs", f"must be 0 <= min <= max <= {MAX_LATENCY_MS} milliseconds"))
    if not (math.isfinite(config.rate) and 0 <= config.rate <= 1):
        problems.append(("rate", "must be a number from 0 to 1"))
    if not 400 <= config.status <= 599:
        problems.append(("status", "must be an integer HTTP status from 400 to 599"))
    if config.count is not None and config.count < 0:
        problems.append(("count", "must be a whole number of failures, or null for no limit"))
    if config.mode not in MODES:
        problems.append(("mode", "must be one of: error, drop"))
    if len(config.routes) > MAX_FAULT_ROUTES:  # every request is matched against each one
        count = len(config.routes)
        problems.append(
            ("routes", f"must contain at most {MAX_FAULT_ROUTES} route patterns (this one has {count})")
        )
        return problems
    for index, route in enumerate(config.routes):
        try:
            split_route(route)
        except ValueError as exc:
            problems.append((f"routes[{index}]", str(exc)))
    return problems


def split_route(route: str) -> tuple[str | None, str]:
    """``"GET /projects"`` -> ("GET", "/projects"); ``"/api/*"`` -> (None, "/api/*")."""
    parts = route.split()
    if len(parts) == 1 and parts[0].startswith("/"):
        return None, parts[0]
    if len(parts) == 2 and parts[0].upper() in METHODS and parts[1].startswith("/"):
        return parts[0].upper(), parts[1]
    raise ValueError(f"{quoted(route)} is not a route pattern such as '/api/items/*' or 'GET /projects'")


def _latency_json(value: Any) -> tuple[float, float]:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value), float(value)
    if (
        isinstance(value, list)
        and len(value) == 2
        and all(isinstance(v, int | float) and not isinstance(v, bool) for v in value)
    ):
        return float(value[0]), float(value[1])
    raise InvalidInput.for_field("latencyMs", "must be a number of milliseconds or [min, max]")


def _number(value: float) -> int | float:
    return int(value) if float(value).is_integer() else value


# --- command-line values ----------------------------------------------------------


def parse_duration_ms(text: str) -> float:
    """``"100ms"``, ``"0.2s"`` or ``"100"`` (milliseconds) -> milliseconds."""
    match = _DURATION.match(text)
    if not match:
        raise ValueError(f"{quoted(text)} is not a duration such as 100ms or 0.2s")
    value = float(match[1])
    return value * 1000 if (match[2] or "ms").lower() == "s" else value


def parse_latency(text: str) -> tuple[float, float]:
    """``"50ms..200ms"`` -> (50, 200); ``"100ms"`` -> (100, 100)."""
    low, sep, high = text.partition("..")
    first = parse_duration_ms(low)
    second = parse_duration_ms(high) if sep else first
    if first > second:
        raise ValueError(f"{quoted(text)}: the minimum is larger than the maximum")
    return first, second
