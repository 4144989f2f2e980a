"""How much of a worker's processor each caller has taken lately: a bucket per caller.

A caller's bucket holds ``burst`` seconds of processor time and refills at ``share`` seconds
per second; every piece of work a thread does for the caller (the application's call, each
piece of a streamed answer) is charged its thread CPU time. A caller whose bucket is empty
is *over its share*. That is the model of GitHub's secondary rate limits (processor time per
minute of real time, per token), measured per worker rather than guessed from requests.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable

# Callers remembered at most; past it, those whose bucket is full again are forgotten.
_REMEMBERED = 10_000


class CpuUsage:
    def __init__(self, burst: float, share: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.burst = burst
        self.share = share
        self._clock = clock
        self._buckets: dict[Hashable, tuple[float, float]] = {}  # caller: (level, when)

    def level(self, caller: Hashable) -> float:
        """Seconds left in ``caller``'s bucket (negative: a debt)."""
        entry = self._buckets.get(caller)
        if entry is None:
            return self.burst
        level, when = entry
        return min(self.burst, level + (self._clock() - when) * self.share)

    def over(self, caller: Hashable) -> bool:
        return self.share > 0 and self.level(caller) < 0

    def charge(self, caller: Hashable, seconds: float) -> None:
        if self.share <= 0 or seconds <= 0:
            return
        self._buckets[caller] = (self.level(caller) - seconds, self._clock())
        if len(self._buckets) > _REMEMBERED:
            self._forget_full()

    def _forget_full(self) -> None:
        for caller in [c for c in self._buckets if self.level(c) >= self.burst]:
            del self._buckets[caller]
