"""Per-API-key rate limits, counted in the database.

Semantics, decided here and documented in docs/api.md:

* **Fixed windows**: a minute window aligned to the wall-clock minute (UTC) and a
  day window aligned to the UTC day. Both count every accepted request of a key.
* **Shared and durable**: counters are rows of ``RateCounter``, so every worker
  process of a server (and every server on one database) shares them, and they
  survive a restart within their window.
* **Atomic**: the check and the increment run in one ``write_transaction`` keyed
  by the API key (``BEGIN IMMEDIATE`` on SQLite, an advisory lock on PostgreSQL),
  so N concurrent requests on a fresh key with a limit of L give exactly L
  acceptances.
* **A refused request does not consume quota**: it is not counted, so a client
  that keeps retrying during a 429 is not pushed further into the future.
* **Headers**: ``X-RateLimit-Limit``/``-Remaining``/``-Reset`` describe the
  *binding* window, the one with fewer requests left (the minute window on a
  tie, and in practice almost always); ``Reset`` is the epoch second at which that
  window starts afresh. On a 429, they describe the exhausted window (the one that
  resets last, if both are), ``Remaining`` is 0 and ``Retry-After`` is the number
  of seconds until it resets.
* **One clock**: windows are computed from the *database's* clock, read inside the
  key's transaction, not from the clock of the process that serves the request, so
  instances whose clocks drift apart still agree on every window (and none of them
  prunes a window another is still counting in). A frozen service clock
  (``serve --clock``, ``/_admin/clock``) still decides, as it does for every date.
* **Pruning**: when a key opens a new window, its older windows of that kind are
  deleted; on a key's first request of a day, finished windows of every key are
  deleted too (best effort).
"""

from __future__ import annotations

import calendar
from dataclasses import dataclass

import peewee as pw

from sowctl.foundation import clock
from sowctl.foundation.errors import UsageError
from sowctl.services.lookup import Lookup
from sowctl.storage import models as m
from sowctl.storage.database import database_epoch, retry_serialization_failures, write_transaction

MINUTE = 60
DAY = 86_400
# A finished window is kept this much longer, for workers whose clocks lag a little.
_GRACE = 60


@dataclass(frozen=True)
class RateLimits:
    per_minute: int = 100
    per_day: int = 5000

    def __post_init__(self) -> None:
        for name in ("per_minute", "per_day"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise UsageError(f"rate limit {name.replace('_', ' ')} must be a positive integer")


@dataclass(frozen=True)
class RateState:
    limit: int
    remaining: int
    reset: int  # epoch seconds when the binding window resets
    retry_after: int | None  # seconds until the exhausted window resets; None when allowed

    @property
    def allowed(self) -> bool:
        return self.retry_after is None

    def headers(self) -> dict[str, str]:
        """The rate-limit response headers (``Retry-After`` only on a refusal)."""
        headers = {
            "X-RateLimit-Limit": str(self.limit),
            "X-RateLimit-Remaining": str(self.remaining),
            "X-RateLimit-Reset": str(self.reset),
        }
        if self.retry_after is not None:
            headers["Retry-After"] = str(self.retry_after)
        return headers


@dataclass(frozen=True)
class _Window:
    name: str
    limit: int
    start: int
    length: int

    @property
    def reset(self) -> int:
        return self.start + self.length


def epoch_now() -> int:
    """``clock.now()`` (naive UTC) as epoch seconds, so a fixed clock fixes the windows."""
    return calendar.timegm(clock.now().timetuple())


def hit(api_key_id: str, limits: RateLimits) -> RateState:
    """Count one request of ``api_key_id`` if both windows have room; report the state.

    Run again from the start if the database aborts the transaction with a
    serialization failure (SQLSTATE 40001, e.g. CockroachDB): nothing was counted.
    """
    return retry_serialization_failures(lambda: _hit(api_key_id, limits))


def uncounted(limits: RateLimits) -> RateState:
    """The state a request no key can be charged for (a missing or refused key) reports:
    the minute window, nothing counted against it. Every Group B response carries the
    headers; this one's ``Remaining`` is what a valid key would have left at most."""
    now = epoch_now()
    return RateState(limits.per_minute, limits.per_minute, now - now % MINUTE + MINUTE, None)


def window_clock() -> int:
    """Epoch seconds that decide the windows: the frozen clock, else the database's."""
    if clock.is_fixed():
        return epoch_now()
    return database_epoch()


def _hit(api_key_id: str, limits: RateLimits) -> RateState:
    with write_transaction(f"ratelimit:{api_key_id}"):
        # Read after the lock is taken: a request that waited for the lock must not
        # count itself in a window that has already closed.
        now = window_clock()
        windows = (
            _Window("minute", limits.per_minute, now - now % MINUTE, MINUTE),
            _Window("day", limits.per_day, now - now % DAY, DAY),
        )
        counts = dict(_COUNTS.all(api_key_id, windows[0].start, windows[1].start))

        exhausted = [w for w in windows if counts.get(w.name, 0) >= w.limit]
        if exhausted:
            window = max(exhausted, key=lambda w: w.reset)
            return RateState(window.limit, 0, window.reset, max(1, window.reset - now))

        for window in windows:
            _COUNT_ONE.execute(api_key_id, window.name, window.start)
            if window.name not in counts:
                _prune(api_key_id, window)

    if "day" not in counts:  # the key's first request of the day
        _prune_stale(now)
    used = {w.name: counts.get(w.name, 0) + 1 for w in windows}
    binding = min(windows, key=lambda w: (w.limit - used[w.name], w.reset))
    return RateState(binding.limit, binding.limit - used[binding.name], binding.reset, None)


# Every Group B request runs these two: their SQL is built once (services.lookup).
_C = m.RateCounter
_COUNTS = Lookup(
    lambda key, minute_start, day_start: _C.select(_C.window, _C.count).where(
        (_C.api_key == key)
        & (
            ((_C.window == "minute") & (_C.window_start == minute_start))
            | ((_C.window == "day") & (_C.window_start == day_start))
        )
    ),
    arity=3,
)
_COUNT_ONE = Lookup(
    lambda key, window, start: _C.insert(api_key=key, window=window, window_start=start, count=1).on_conflict(
        conflict_target=[_C.api_key, _C.window, _C.window_start], update={_C.count: _C.count + 1}
    ),
    arity=3,
)


def _prune(api_key_id: str, window: _Window) -> None:
    """A key opened a new window: its older ones of that kind are history."""
    counter = m.RateCounter
    counter.delete().where(
        (counter.api_key == api_key_id)
        & (counter.window == window.name)
        & (counter.window_start < window.start)
    ).execute()


def _prune_stale(now: int) -> None:
    """Delete every key's finished windows; best effort, outside the key's lock.

    Housekeeping only: if it loses a race with another worker doing the same
    (a PostgreSQL deadlock report, a busy SQLite), the next new day retries it.
    """
    counter = m.RateCounter
    try:
        with m.database_proxy.atomic():
            counter.delete().where(
                ((counter.window == "minute") & (counter.window_start <= now - MINUTE - _GRACE))
                | ((counter.window == "day") & (counter.window_start <= now - DAY - _GRACE))
            ).execute()
    except pw.DatabaseError:
        pass
