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

from sowctl.server.auth import bearer_secret
from sowctl.server.errors import group_of_path

Job = Callable[[], None]

_HEAD_END = re.compile(rb"\r?\n\r?\n")
_HEADER = re.compile(rb"\n(authorization|x-api-key)[ \t]*:[ \t]*([^\r\n]*)", re.IGNORECASE)


def _digest(secret: str) -> bytes:
    return hashlib.blake2b(secret.encode("latin-1", "replace"), digest_size=16).digest()


def caller_key(path: str, authorization: str | None, api_key: str | None, host: Hashable) -> Hashable:
    """Who sent a request: the credential that authenticates it on its route, as a digest
    (the API key under ``/api/external``, where ``Authorization`` is ignored; the bearer
    token elsewhere, read as authentication reads it: any case of ``Bearer``, spaces
    trimmed), so one credential is one caller however its header is spelt; without one,
    the client's host (one machine's connections are one caller)."""
    group_b = group_of_path(path) == "B"
    secret = (api_key or "").strip() if group_b else bearer_secret(authorization)
    return _digest(secret) if secret else host


def caller_of_environ(environ: dict) -> Hashable:
    """``caller_key`` of a request the application runs."""
    return caller_key(
        environ.get("PATH_INFO", ""),
        environ.get("HTTP_AUTHORIZATION"),
        environ.get("HTTP_X_API_KEY"),
        environ.get("REMOTE_ADDR"),
    )


def caller_of(request: bytes, client: object) -> Hashable:
    """``caller_key`` of a complete request as the worker's loop holds it (its head only is
    read: a body's bytes never name the caller); the first of each header counts (a
    repeated ``Authorization`` is refused by authentication anyway)."""
    end = _HEAD_END.search(request)
    head = request[: end.start() if end else len(request)]
    target = head.split(b"\n", 1)[0].split(b" ")
    path = target[1].split(b"?", 1)[0].decode("latin-1") if len(target) > 1 else ""
    found: dict[bytes, str] = {}
    for match in _HEADER.finditer(head):
        found.setdefault(match.group(1).lower(), match.group(2).decode("latin-1"))
    host = client[0] if isinstance(client, tuple) and client else client
    return caller_key(path, found.get(b"authorization"), found.get(b"x-api-key"), host)


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
