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
import threading
from collections import Counter, OrderedDict, deque
from collections.abc import Callable, Hashable

Job = Callable[[], None]

# The first credential header of a request head; what follows the colon, to the line's end.
_CREDENTIAL = re.compile(rb"\r?\n(?:authorization|x-api-key)[ \t]*:[ \t]*([^\r\n]*)", re.IGNORECASE)


def _digest(credential: bytes) -> bytes:
    return hashlib.blake2b(credential, digest_size=16).digest()


def caller_of_environ(environ: dict) -> Hashable:
    """``caller_of`` for a request the application runs: the same digest of its credential
    (the header first in the request; here ``Authorization``, then ``x-api-key``), else
    its client's host."""
    for name in ("HTTP_AUTHORIZATION", "HTTP_X_API_KEY"):
        value = environ.get(name, "").strip()
        if value:
            return _digest(value.encode("latin-1"))
    return environ.get("REMOTE_ADDR")


def caller_of(head: bytes, client: object) -> Hashable:
    """Who sent a request: a digest of its credential header, else its client's address
    (the host only: one machine's connections are one caller)."""
    found = _CREDENTIAL.search(head)
    if found is not None and found.group(1).strip():
        return _digest(found.group(1).strip())
    return client[0] if isinstance(client, tuple) and client else client


class TakingTurns:
    """Jobs waiting for a thread, each caller's in a line of its own.

    The worker adds a job and submits one ``run_next`` to its thread pool for it; the
    thread that runs ``run_next`` takes the job of the waiting caller with the fewest jobs
    running (the one that waited longest among equals), so the choice is made when a
    thread frees, without a round trip through the event loop. Thread-safe.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running_by: Counter[Hashable] = Counter()
        self._waiting: OrderedDict[Hashable, deque[Job]] = OrderedDict()  # callers in turn order

    def add(self, caller: Hashable, job: Job) -> None:
        """Queue ``job``; the caller must then have one ``run_next`` run for it."""
        with self._lock:
            self._waiting.setdefault(caller, deque()).append(job)

    def run_next(self) -> None:
        """Run the job whose turn it is (in this thread)."""
        with self._lock:
            caller = min(self._waiting, key=self._running_by.__getitem__)  # first of the least served
            jobs = self._waiting.pop(caller)
            job = jobs.popleft()
            if jobs:
                self._waiting[caller] = jobs  # to the back of the turn order
            self._running_by[caller] += 1
        try:
            job()
        finally:
            with self._lock:
                self._running_by[caller] -= 1
                if self._running_by[caller] <= 0:
                    del self._running_by[caller]

    def waiting(self) -> int:
        with self._lock:
            return sum(len(jobs) for jobs in self._waiting.values())
