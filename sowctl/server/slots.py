"""Slots: at most N requests of one kind may hold a worker's threads at once.

A worker has ``serve --threads`` threads. Two kinds of request can hold one for long:
writes waiting for a database lock taken outside sowctl, and whole-SOW reports (the
chain) on a large SOW or sent to a client that reads slowly. Each kind gets
``threads - 1`` slots (``ServerSettings.write_slots``, ``report_slots``), so that one
thread is always left for ``/healthz`` and ordinary requests.

One rule for both (:class:`Slots`): a request that finds every slot taken waits for one
while holders keep finishing; after a whole ``wait`` in which none did, the holders are
stuck (a held database, a slow report) and the request is refused with 503 and
``Retry-After`` (``ServiceUnavailable``, answered in the group's envelope by
``Dispatcher.failure_response``). Once a waiter gave up, later ones are refused at once
until a holder finishes: otherwise each queued request would take the free thread for a
whole wait in turn.

Acquired with a ``caller`` (a credential, ``server.callers.caller_of_environ``), as
report slots are, one caller holds at most all slots but one (``share``, when there are two
or more): a caller looping long reports leaves a slot free for everyone else, instead of
making them be refused while it holds them all. Its own further requests wait for one of
its slots the same way (a whole ``wait``, then 503). Write slots are taken without one:
writes are short, and a caller's parallel writes (a script, a CI job) must not be refused
because two of its own are held up by a slow database.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import Counter
from collections.abc import Callable, Hashable, Iterator

from sowctl.foundation.errors import ServiceUnavailable, SowctlError


class Slots:
    """``count`` slots; ``acquire`` waits as described in the module doc, ``release`` frees one."""

    def __init__(
        self,
        count: int,
        wait: float,
        busy_message: str,
        observe: Callable[[float, bool], None] | None = None,
    ) -> None:
        self._free = threading.BoundedSemaphore(count)
        self.wait = wait
        self.busy_message = busy_message
        # Told of each request that found no slot free at once: (seconds waited, refused).
        self.observe = observe
        # Holders that left their slot with an answer: while this moves, waiting for a
        # slot is ordinary queueing, not a stall. Read and bumped without a lock: a lost
        # increment only means one more wait.
        self._done = 0
        self._stalled_at = -1  # _done when a waiter last gave up
        self.share = max(1, count - 1)  # slots one caller may hold at once
        self._held_by: Counter[Hashable] = Counter()
        self._shares = threading.Condition()

    def acquire(self, caller: Hashable | None = None) -> None:
        """Take a slot (one of ``caller``'s share when given), or raise ``ServiceUnavailable``
        (503 with ``Retry-After``)."""
        started = time.monotonic()
        try:
            waited = self._acquire(caller)
        except ServiceUnavailable:
            if self.observe is not None:
                self.observe(time.monotonic() - started, True)
            raise
        if waited and self.observe is not None:
            self.observe(time.monotonic() - started, False)

    def _acquire(self, caller: Hashable | None) -> bool:
        """Take a slot as ``acquire`` says; whether the request had to wait for it."""
        if caller is None:
            return self._acquire_slot()
        with self._shares:
            waited = self._held_by[caller] >= self.share
            if not self._shares.wait_for(lambda: self._held_by[caller] < self.share, timeout=self.wait):
                raise ServiceUnavailable(self.busy_message)
            self._held_by[caller] += 1
        try:
            return self._acquire_slot() or waited
        except BaseException:
            self._release_share(caller)
            raise

    def _release_share(self, caller: Hashable) -> None:
        with self._shares:
            self._held_by[caller] -= 1
            if self._held_by[caller] <= 0:
                del self._held_by[caller]
            self._shares.notify_all()

    def _acquire_slot(self) -> bool:
        if self._free.acquire(blocking=False):
            return False
        while True:
            done = self._done
            if self._stalled_at == done:
                # A waiter already saw no holder finish for a whole wait, and none has since.
                if self._free.acquire(blocking=False):
                    return True
                raise ServiceUnavailable(self.busy_message)
            if self._free.acquire(timeout=self.wait):
                return True
            if self._done == done:
                self._stalled_at = done
                raise ServiceUnavailable(self.busy_message)

    def release(self, answered: bool = True, caller: Hashable | None = None) -> None:
        """Free a slot (``caller``'s, as acquired). ``answered``: the holder finished (False:
        a database error held it up, which is no sign of progress)."""
        if answered:
            self._done += 1
        self._free.release()
        if caller is not None:
            self._release_share(caller)

    @contextlib.contextmanager
    def held(self, caller: Hashable | None = None) -> Iterator[None]:
        """A slot for the duration of the block; a typed refusal counts as an answer."""
        self.acquire(caller)
        answered = False
        try:
            yield
            answered = True
        except SowctlError:
            answered = True  # refused, but answered: the database moves
            raise
        finally:
            self.release(answered, caller)
