"""Turns among callers for a worker's threads.

A worker runs ``threads`` requests at once; the rest wait. They used to wait in one line
(the thread pool's queue), so a caller who kept many slow requests queued (six clients
looping reorders of a 5,000-item SOW with one token) put every other caller behind all of
them, each time. Here each caller waits in a line of its own, and a freed thread goes to
the waiting caller with the fewest requests running: another caller's request waits for
one thread to free, not for the queue. A caller is the credential a request carries (its
``Authorization`` or ``x-api-key`` header, kept as a digest), else its client's host; a
caller's own requests still run in the order they came.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter, OrderedDict, deque
from collections.abc import Callable, Hashable

Job = Callable[[], None]

# The first credential header of a request head; what follows the colon, to the line's end.
_CREDENTIAL = re.compile(rb"\r?\n(?:authorization|x-api-key)[ \t]*:[ \t]*([^\r\n]*)", re.IGNORECASE)


def caller_of(head: bytes, client: object) -> Hashable:
    """Who sent a request: a digest of its credential header, else its client's address
    (the host only: one machine's connections are one caller)."""
    found = _CREDENTIAL.search(head)
    if found is not None and found.group(1).strip():
        return hashlib.blake2b(found.group(1).strip(), digest_size=16).digest()
    return client[0] if isinstance(client, tuple) and client else client


class TakingTurns:
    """At most ``capacity`` jobs running; a freed thread goes to the waiting caller with the
    fewest jobs running, the one that waited longest among equals.

    Not thread-safe: the worker's event loop alone submits jobs and reports them done.
    """

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.running = 0
        self._running_by: Counter[Hashable] = Counter()
        self._waiting: OrderedDict[Hashable, deque[Job]] = OrderedDict()  # callers in turn order

    def submit(self, caller: Hashable, job: Job) -> None:
        """Start ``job`` now if a thread is free, else when its caller's turn comes."""
        self._waiting.setdefault(caller, deque()).append(job)
        self._start_next()

    def done(self, caller: Hashable) -> None:
        """One of ``caller``'s jobs finished: its thread goes to the next caller in turn."""
        self.running -= 1
        self._running_by[caller] -= 1
        if self._running_by[caller] <= 0:
            del self._running_by[caller]
        self._start_next()

    def waiting(self) -> int:
        return sum(len(jobs) for jobs in self._waiting.values())

    def _start_next(self) -> None:
        while self.running < self.capacity and self._waiting:
            caller = min(self._waiting, key=self._running_by.__getitem__)  # the first of the least served
            jobs = self._waiting.pop(caller)
            job = jobs.popleft()
            if jobs:
                self._waiting[caller] = jobs  # to the back of the turn order
            self.running += 1
            self._running_by[caller] += 1
            job()
