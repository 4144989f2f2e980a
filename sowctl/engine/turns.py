"""Which waiting request gets a worker's next free thread.

Each caller waits in a line of its own, and a freed thread goes to the waiting caller with
the fewest requests running (the one that waited longest among equals), so one caller with
many slow requests queued does not put everyone else behind all of them. One caller holds at
most all but one of the threads (``share``), so another caller's request finds a thread at
once instead of waiting for a long request to end. A caller over its processor share
(:class:`sowctl.engine.usage.CpuUsage`) starts nothing while any caller within theirs has been
active within the last ``window`` seconds: its requests wait until its bucket has refilled,
so that beside others it takes at most its share of the processor (threads share one
interpreter: each of its processor-bound requests slows everyone else's). Alone, such a
caller gets its share of the threads, as before. A
request that waited ``timeout`` seconds is given up (:class:`QueueTimeout`).

Runs on the worker's event loop only: no locks.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter, OrderedDict, deque
from collections.abc import Callable, Hashable

from sowctl.engine.usage import CpuUsage


class QueueTimeout(Exception):
    """No thread was free for the request within the wait."""


class Turns:
    def __init__(
        self,
        threads: int,
        usage: CpuUsage,
        timeout: float,
        window: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.free = threads
        self.share = max(1, threads - 1)
        self.usage = usage
        self.timeout = timeout
        self.window = window
        self._clock = clock
        self.running: Counter[Hashable] = Counter()
        self._waiting: OrderedDict[Hashable, deque[asyncio.Future[None]]] = OrderedDict()
        self._last_active: dict[Hashable, float] = {}  # callers within their share, last seen
        self._timer: asyncio.TimerHandle | None = None

    async def acquire(self, caller: Hashable) -> None:
        """Wait for a thread in ``caller``'s turn; ``QueueTimeout`` after ``timeout``."""
        if not self._waiting and self._may_run(caller):
            self._take(caller)
            return
        self._seen(caller)
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(caller, deque()).append(future)
        self._grant()
        try:
            await asyncio.wait_for(asyncio.shield(future), self.timeout)
        except TimeoutError:
            if future.done() and not future.cancelled():
                return  # granted as the wait ended
            self._abandon(caller, future)
            raise QueueTimeout from None
        except BaseException:
            self._abandon(caller, future)
            raise

    def release(self, caller: Hashable) -> None:
        self.running[caller] -= 1
        if self.running[caller] <= 0:
            del self.running[caller]
        self.free += 1
        self._grant()

    def waiting(self) -> int:
        return sum(len(line) for line in self._waiting.values())

    def _take(self, caller: Hashable) -> None:
        self.free -= 1
        self.running[caller] += 1
        self._seen(caller)

    def _seen(self, caller: Hashable) -> None:
        if self.usage.over(caller):
            return
        now = self._clock()
        self._last_active[caller] = now
        if len(self._last_active) > 1000:  # forget callers long gone
            horizon = now - self.window
            self._last_active = {c: t for c, t in self._last_active.items() if t >= horizon}

    def contended(self, caller: Hashable) -> bool:
        """Whether a caller within its share runs, waits, or was active lately besides ``caller``."""
        others = [c for c in (*self.running, *self._waiting) if c != caller]
        if any(not self.usage.over(other) for other in others):
            return True
        horizon = self._clock() - self.window
        return any(c != caller and t >= horizon for c, t in self._last_active.items())

    def _may_run(self, caller: Hashable) -> bool:
        if self.free <= 0 or self.running[caller] >= self.share:
            return False
        return not (self.usage.over(caller) and self.contended(caller))

    def _grant(self) -> None:
        while self.free > 0 and self._waiting:
            eligible = [c for c in self._waiting if self._may_run(c)]
            if not eligible:
                self._wake_when_refilled()
                return
            caller = min(eligible, key=lambda c: (self.usage.over(c), self.running[c]))
            line = self._waiting.pop(caller)
            future = line.popleft()
            if line:
                self._waiting[caller] = line  # to the back of the turn order
            if future.cancelled():
                continue
            self._take(caller)
            future.set_result(None)

    def _wake_when_refilled(self) -> None:
        """Look again once the first waiting caller over its share is back within it, or the
        others have been quiet for a whole window (time changes both, not an event)."""
        if self._timer is not None or self.free <= 0:
            return
        debts = [-self.usage.level(c) for c in self._waiting if self.usage.over(c)]
        if not debts:
            return
        delay = min(debts) / self.usage.share
        if self._last_active:
            delay = min(delay, max(self._last_active.values()) + self.window - self._clock())
        delay = max(0.001, delay)

        def wake() -> None:
            self._timer = None
            self._grant()

        self._timer = asyncio.get_running_loop().call_later(delay, wake)

    def _abandon(self, caller: Hashable, future: asyncio.Future[None]) -> None:
        if future.done() and not future.cancelled():
            self.release(caller)  # granted, but nobody will use it: hand it on
        else:
            future.cancel()
            self._forget(caller, future)

    def _forget(self, caller: Hashable, future: asyncio.Future[None]) -> None:
        line = self._waiting.get(caller)
        if line is None:
            return
        try:
            line.remove(future)
        except ValueError:
            return
        if not line:
            del self._waiting[caller]
