"""Each caller's share of SQLite's write lock, measured: a bucket of lock-hold seconds per caller.

SQLite has one write lock for the whole file, so a caller whose writes hold it long (a
reorder of 10,000 items, a re-ranking of a long chain, a cascade delete) makes every other
caller's write wait, whatever organization it belongs to. Here every outermost write
transaction of a caller (``acting_for``: the server names the request's credential) is
charged the time it held the lock, commit included, into a bucket of ``Budget.burst``
seconds refilled at ``Budget.share`` seconds per second. A caller whose bucket is empty, while
another caller asked for the lock within the last ``Budget.window`` seconds, waits before
it asks for the lock until its bucket is back to zero (so beside others it holds the lock
at most ``share`` of the time), or, when that would take longer than ``Budget.wait``, is
refused at once with ``WriteShareSpent`` (429 with ``Retry-After``), having taken nothing.
Alone, it writes as before. An ordinary write holds the lock a millisecond or two, so only
callers that keep the lock busy ever meet the share.

The buckets live in a small file beside the database (``<database>-lockshare``), mapped into
memory by every process of ``sowctl serve`` (its workers and their helper processes), so that
a caller's share is one per server, not one per process; an ``flock`` on it makes each
update whole. ``time.monotonic`` is the system's clock, the same in every process. Without
the file (an in-memory database, a directory that cannot be written) the buckets are this
process's own.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import math
import mmap
import os
import threading
import time
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass

import peewee as pw

from sowctl.foundation.errors import RateLimited

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]


@dataclass(frozen=True)
class Budget:
    """How much of the write lock one caller may hold (``ServerSettings.lock_burst``, ``lock_share``)."""

    burst: float = 1.0  # seconds of lock hold a caller may take at once
    share: float = 0.25  # seconds refilled per second: the caller's share of the lock's time
    window: float = 1.0  # another caller is active this long after it last asked for the lock
    wait: float = 1.0  # a caller past its share waits at most this long for it; past it, 429


class WriteShareSpent(RateLimited):
    """A caller held the database's write lock more than its share lately, while others wait."""

    def __init__(self, seconds: float) -> None:
        retry_after = max(1, math.ceil(seconds))
        super().__init__(
            "this credential's writes have held the database's write lock more than their share "
            f"lately while others wait for it; retry in {retry_after} s",
            retry_after,
        )


# One slot per caller: its id (a hash; 0 is a free slot), bucket level, when the level was
# last computed, when it last asked for the lock. A caller hashes to one of PROBES slots.
_FIELDS = 4
_SLOTS = 512
_PROBES = 8
_FLOAT = 8


def caller_id(caller: Hashable) -> int:
    """A nonzero 63-bit id of ``caller`` (a credential's digest, or a host), the same in every process."""
    digest = hashlib.blake2b(repr(caller).encode(), digest_size=8).digest()
    return (int.from_bytes(digest, "little") >> 1) or 1


class LockShare:
    """The buckets of one database's writers (see the module's description)."""

    def __init__(self, budget: Budget, path: str | None = None, clock: Callable[[], float] = time.monotonic):
        self.budget = budget
        self._clock = clock
        self._lock = threading.Lock()
        self._fd: int | None = None
        size = _SLOTS * _FIELDS * _FLOAT
        if path is not None and fcntl is not None:
            with contextlib.suppress(OSError):
                fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
                if os.fstat(fd).st_size < size:
                    os.ftruncate(fd, size)  # zeros: every slot free
                self._map = mmap.mmap(fd, size)
                self._fd = fd
        if self._fd is None:
            self._map = mmap.mmap(-1, size)
        self._slots = memoryview(self._map).cast("d")  # level, when, seen: floats; ids as floats' bits

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        with self._lock:
            if self._fd is None:
                yield
                return
            fcntl.flock(self._fd, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(self._fd, fcntl.LOCK_UN)

    def _id_at(self, slot: int) -> int:
        return int.from_bytes(self._map[slot * _FIELDS * _FLOAT : slot * _FIELDS * _FLOAT + _FLOAT], "little")

    def _set_id(self, slot: int, ident: int) -> None:
        start = slot * _FIELDS * _FLOAT
        self._map[start : start + _FLOAT] = ident.to_bytes(_FLOAT, "little")

    def _slot(self, ident: int, now: float) -> int | None:
        """The slot of ``ident``, claiming a free or forgotten one if need be; None when all
        its slots are taken by callers still counted (then it is not counted either)."""
        first = ident % _SLOTS
        spare = None
        for step in range(_PROBES):
            slot = (first + step) % _SLOTS
            held = self._id_at(slot)
            if held == ident:
                return slot
            if spare is None and (held == 0 or self._forgotten(slot, now)):
                spare = slot
        if spare is not None:
            self._set_id(spare, ident)
            base = spare * _FIELDS
            self._slots[base + 1], self._slots[base + 2], self._slots[base + 3] = self.budget.burst, now, 0.0
        return spare

    def _forgotten(self, slot: int, now: float) -> bool:
        """A caller whose bucket is full again and who has not asked for the lock lately."""
        base = slot * _FIELDS
        level, when, seen = self._slots[base + 1], self._slots[base + 2], self._slots[base + 3]
        return self._refilled(level, when, now) >= self.budget.burst and now - seen > self.budget.window

    def _refilled(self, level: float, when: float, now: float) -> float:
        if when > now:  # written under another boot's clock: start afresh
            return self.budget.burst
        return min(self.budget.burst, level + (now - when) * self.budget.share)

    def level(self, caller: Hashable) -> float:
        """Seconds of lock hold left in ``caller``'s bucket (negative: a debt)."""
        now = self._clock()
        with self._locked():
            slot = self._slot(caller_id(caller), now)
            if slot is None:
                return self.budget.burst
            base = slot * _FIELDS
            return self._refilled(self._slots[base + 1], self._slots[base + 2], now)

    def admit(self, caller: Hashable) -> float:
        """Seconds ``caller`` must wait before it asks for the lock (0: at once); raises
        ``WriteShareSpent`` when that would be longer than ``Budget.wait``."""
        if self.budget.share <= 0:
            return 0.0
        ident, now = caller_id(caller), self._clock()
        with self._locked():
            slot = self._slot(ident, now)
            if slot is None:
                return 0.0
            base = slot * _FIELDS
            level = self._refilled(self._slots[base + 1], self._slots[base + 2], now)
            self._slots[base + 1], self._slots[base + 2], self._slots[base + 3] = level, now, now
            if level >= 0 or not self._others_active(ident, now):
                return 0.0
        wait = -level / self.budget.share
        if wait > self.budget.wait:
            raise WriteShareSpent(wait)
        return wait

    def _others_active(self, ident: int, now: float) -> bool:
        horizon = now - self.budget.window
        for slot in range(_SLOTS):
            if self._slots[slot * _FIELDS + 3] >= horizon and self._id_at(slot) not in (0, ident):
                return True
        return False

    def charge(self, caller: Hashable, seconds: float) -> None:
        """Take ``seconds`` of lock hold out of ``caller``'s bucket."""
        if self.budget.share <= 0 or seconds <= 0:
            return
        now = self._clock()
        with self._locked():
            slot = self._slot(caller_id(caller), now)
            if slot is None:
                return
            base = slot * _FIELDS
            level = self._refilled(self._slots[base + 1], self._slots[base + 2], now)
            self._slots[base + 1], self._slots[base + 2] = level - seconds, now


# The caller on whose behalf this thread writes (``acting_for``); None: nobody's (local mode,
# the server's own work), never counted.
_caller: contextvars.ContextVar[Hashable | None] = contextvars.ContextVar("sowctl_lock_caller", default=None)
# Whether this thread's caller was admitted already (``acting_for`` with a database): its next
# write transaction does not ask again.
_admitted: contextvars.ContextVar[bool] = contextvars.ContextVar("sowctl_lock_admitted", default=False)
_budget: Budget | None = None
_shares: dict[str, LockShare] = {}
_shares_lock = threading.Lock()


def enable(budget: Budget | None) -> None:
    """Give every caller of this process's SQLite databases a share of the write lock
    (``sowctl serve``); None turns it off."""
    global _budget
    with _shares_lock:
        _budget = budget
        _shares.clear()


@contextlib.contextmanager
def acting_for(caller: Hashable, admit_on: pw.Database | None = None) -> Iterator[None]:
    """Charge this thread's write transactions inside the block to ``caller``. ``admit_on``: a
    request that will write ``admit_on`` waits for (or is refused) its share here, at the
    start, so that it waits holding nothing (the server's write slots are taken after)."""
    token, admitted = _caller.set(caller), _admitted.set(False)
    try:
        share = of(admit_on) if admit_on is not None else None
        if share is not None:
            _wait_for(share, caller)
            _admitted.set(True)
        yield
    finally:
        _admitted.reset(admitted)
        _caller.reset(token)


def _wait_for(share: LockShare, caller: Hashable) -> None:
    wait = share.admit(caller)
    if wait > 0:
        time.sleep(wait)


def of(database: pw.Database) -> LockShare | None:
    """The buckets of ``database``'s writers, when shares are on and it is a SQLite database."""
    if _budget is None or not isinstance(database, pw.SqliteDatabase):
        return None
    path = database.database
    with _shares_lock:
        share = _shares.get(path)
        if share is None:
            in_memory = path in ("", ":memory:")
            share = _shares[path] = LockShare(_budget, None if in_memory else f"{path}-lockshare")
        return share


class _Hold:
    """When the write lock was taken (``started``), for the charge at the end."""

    def __init__(self) -> None:
        self.taken: float | None = None

    def started(self) -> None:
        self.taken = time.monotonic()


@contextlib.contextmanager
def accounted(database: pw.Database) -> Iterator[_Hold]:
    """Around an outermost write transaction of ``database``: first wait for (or be refused)
    the caller's share; at the end charge the caller from ``_Hold.started`` (called once the
    lock is held) to now, commit included."""
    hold = _Hold()
    caller = _caller.get()
    share = of(database) if caller is not None else None
    if share is None or caller is None:
        yield hold
        return
    if _admitted.get():
        _admitted.set(False)  # the request waited for its share before its first write
    else:
        _wait_for(share, caller)
    try:
        yield hold
    finally:
        if hold.taken is not None:
            share.charge(caller, time.monotonic() - hold.taken)
