"""The worker's lane for heavy requests: run in helper processes (``sowctl.engine.isolation``).

A request is heavy when the application says so from its head and the size of its body
(``Hooks.heavy``: a reorder of thousands of items, a long report), or when its caller has
spent more than ``Limits.heavy_cpu`` seconds of its processor bucket (``engine.usage``) while
other callers are active: whatever such a caller sends next may be costly too (a dependency
whose re-ranking walks a long chain announces nothing in its head). A heavy request holds none of the worker's
threads: it waits on the event loop for a helper in its caller's turn (``engine.turns``, the
same processor buckets), and the helper's time is charged to it. A caller with
``Limits.heavy_queue`` heavy requests already waiting is refused at once (503, Retry-After):
what it queues is bounded, whatever it sends.

A helper runs one call at a time (a start, or the next pieces of a streamed answer, each in
its caller's turn), so two heavy calls never stretch each other in one interpreter; an
answer waiting for its client between pieces holds no turn, and is made piece by piece as a
thread would make it. A helper that dies answers 503 (or cuts the answer under way short)
and is replaced; while none can be started the lane runs its requests in the worker's
threads, as before it existed.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import queue
import threading
from collections import Counter
from collections.abc import Callable, Hashable
from concurrent.futures import Future
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from sowctl.engine.isolation import HelperGone, HelperUnavailable, Zygote, sendable
from sowctl.engine.limits import Limits
from sowctl.engine.running import Dropped
from sowctl.engine.turns import Turns
from sowctl.engine.usage import CpuUsage

HELPER_GONE = "the server is busy; retry later"


class QueueFull(Exception):
    """The caller already has its share of heavy requests waiting."""


class Channel:
    """One helper process's socket: requests sent, and a thread that hands each reply to the
    request waiting for it (every waiting request gets ``HelperGone`` when the socket ends)."""

    def __init__(self, connection: Connection, on_end: Callable[[Channel], None]) -> None:
        self.connection = connection
        self.on_end = on_end
        self.lock = threading.Lock()
        self.open = True
        self.pending: dict[int, tuple[asyncio.AbstractEventLoop, asyncio.Future[Any]]] = {}
        threading.Thread(target=self._read, name="sowctl-helper-replies", daemon=True).start()

    def send(self, request: int, message: tuple[Any, ...], waiter: tuple[Any, asyncio.Future[Any]]) -> None:
        with self.lock:
            if not self.open:
                raise HelperGone("the helper process ended")
            self.pending[request] = waiter
        try:
            self.connection.send((request, message))
        except OSError:
            with self.lock:
                self.pending.pop(request, None)
            raise HelperGone("the helper process ended") from None

    def _read(self) -> None:
        while True:
            try:
                request, reply = self.connection.recv()
            except (EOFError, OSError):
                break
            with self.lock:
                waiter = self.pending.pop(request, None)
            if waiter is not None:
                waiter[0].call_soon_threadsafe(_settle, waiter[1], tuple(reply), None)
        with self.lock:
            self.open = False
            waiters, self.pending = list(self.pending.values()), {}
        for loop, future in waiters:
            loop.call_soon_threadsafe(_settle, future, None, HelperGone("the helper process ended"))
        self.connection.close()
        self.on_end(self)


def _settle(future: asyncio.Future[Any], reply: Any, error: BaseException | None) -> None:
    if future.done():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(reply)


class Helper:
    """One helper process, seen from the worker: its channel, started (again) by a thread of
    its own, which also sends every message (so the event loop never blocks on the socket)."""

    def __init__(self, zygote: Zygote) -> None:
        self.zygote = zygote
        self.channel: Channel | None = None
        self.running = 0  # requests under way in it
        self._ids = itertools.count()
        self.io = _Line()
        self.io.submit(self._ready)  # loaded before the first heavy request, not by it

    def new_request(self) -> int:
        return next(self._ids)

    async def call(self, request: int, message: tuple[Any, ...]) -> tuple[Any, ...]:
        """Send ``message`` of ``request`` and return the reply; ``HelperGone`` when the helper ended (another
        is started at once), ``HelperUnavailable`` when none can be."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        await asyncio.wrap_future(self.io.submit(self._send, request, message, (loop, future)))
        return await future

    def _send(self, request: int, message: tuple[Any, ...], waiter: tuple[Any, asyncio.Future[Any]]) -> None:
        if self.channel is None or not self.channel.open:
            self.channel = Channel(self._started(), self._ended)
        self.channel.send(request, message, waiter)

    def _ended(self, channel: Channel) -> None:
        def replace() -> None:
            if self.channel is channel:
                self.channel = None
                self._ready()

        with contextlib.suppress(RuntimeError):  # the worker is stopping
            self.io.submit(replace)

    def _ready(self) -> None:
        if self.channel is None:
            with contextlib.suppress(HelperGone):
                self.channel = Channel(self._started(), self._ended)

    def _started(self) -> Connection:
        connection = self.zygote.helper()
        try:
            reply = connection.recv()
        except (EOFError, OSError):
            connection.close()
            raise HelperGone("the helper process ended as it started") from None
        if reply[0] != "ready":
            connection.close()
            raise HelperUnavailable(f"the helper process could not start: {reply[1]}")
        return connection

    def stop(self) -> None:
        """Close the helper's socket (it ends as it reads that), without waiting for it."""
        channel = self.channel
        if channel is not None:
            with contextlib.suppress(OSError):
                channel.connection.close()
        self.io.stopped = True


_Work = tuple[Future[Any], Callable[..., Any], tuple[Any, ...]]


class _Line:
    """Work done one piece after another by a daemon thread of its own: a helper that is slow
    to start never holds up the worker's exit, as a pool's thread would (they are joined)."""

    def __init__(self) -> None:
        self.stopped = False
        self._queue: queue.SimpleQueue[_Work] = queue.SimpleQueue()
        threading.Thread(target=self._run, name="sowctl-helper", daemon=True).start()

    def submit(self, work: Callable[..., Any], *args: Any) -> Future[Any]:
        if self.stopped:
            raise RuntimeError("the worker is stopping")
        future: Future[Any] = Future()
        self._queue.put((future, work, args))
        return future

    def _run(self) -> None:
        while True:
            future, work, args = self._queue.get()
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(work(*args))
            except BaseException as exc:
                future.set_exception(exc)


@dataclass
class RemoteAnswer:
    """An answer under way in a helper: what ``running.Answer`` is for a thread."""

    status: int
    headers: list[tuple[bytes, bytes]]
    pieces: list[bytes]
    done: bool
    helper: Helper
    request: int
    caller: Hashable
    wait: float = 0.0  # a helper's answer never pauses (streams stay in the worker)


class HeavyLane:
    def __init__(self, zygote: Zygote, usage: CpuUsage, limits: Limits) -> None:
        self.usage = usage
        self.limits = limits
        self.zygote = zygote
        self.helpers = [Helper(zygote) for _ in range(limits.heavy_processes)]
        # One call at a time in each helper: two heavy calls in one interpreter would stretch
        # each other (a write holding SQLite's lock waits for another's json.loads). An answer
        # paused between pieces holds no turn, so a slow reader does not hold the helper.
        self.turns = Turns(limits.heavy_processes, usage, limits.queue_timeout)
        self.waiting: Counter[Hashable] = Counter()
        self.in_process = False  # no helper could be started: heavy requests run in threads

    def wants(self, caller: Hashable, heavy_by_head: bool, contended: bool) -> bool:
        """Whether a request goes to a helper (``contended``: other callers are active in the
        worker; a caller alone keeps the worker's threads whatever it spends)."""
        if self.in_process:
            return False
        spent = self.usage.burst - self.usage.level(caller)
        return heavy_by_head or (contended and self.usage.share > 0 and spent > self.limits.heavy_cpu)

    def has_room(self, caller: Hashable) -> bool:
        """Whether ``caller`` may queue one more request for a helper."""
        return self.waiting[caller] < self.limits.heavy_queue

    async def start(self, caller: Hashable, environ: dict[str, Any], head_only: bool) -> RemoteAnswer:
        """Run the request in a helper, in ``caller``'s turn. ``QueueFull``, ``QueueTimeout``,
        ``Dropped``, ``HelperGone`` or ``RuntimeError`` (the application failed)."""
        if self.waiting[caller] >= self.limits.heavy_queue:
            raise QueueFull
        helper = min(self.helpers, key=lambda h: h.running)
        answer = RemoteAnswer(0, [], [], False, helper, helper.new_request(), caller)
        message = ("start", sendable(environ), environ["wsgi.input"].getvalue(), head_only)
        helper.running += 1
        try:
            reply = await self._in_turn(answer, message, counted=True)
        except BaseException as exc:
            helper.running -= 1
            self.in_process = isinstance(exc, HelperUnavailable)
            raise
        if reply[0] == "answer":
            _, answer.status, answer.headers, answer.pieces, answer.done, _ = reply
            if answer.done:
                helper.running -= 1
            return answer
        answer.done = True
        helper.running -= 1
        if reply[0] == "dropped":
            raise Dropped
        raise RuntimeError(reply[1])

    async def advance(self, answer: RemoteAnswer) -> None:
        """The next pieces of ``answer``; ``HelperGone`` or ``RuntimeError`` end it."""
        try:
            _, ok, pieces, done, _ = await self._in_turn(answer, ("next",))
        except BaseException:
            self._end(answer)
            raise
        if not ok:
            self._end(answer)
            raise RuntimeError(pieces)
        answer.pieces = pieces
        if done:
            self._end(answer)

    async def close(self, answer: RemoteAnswer, cut_short: str | None) -> None:
        """Close an answer not sent to its end (not in a turn: it must not wait)."""
        if answer.done:
            return
        self._end(answer)
        with contextlib.suppress(HelperGone):
            await answer.helper.call(answer.request, ("close", cut_short))

    async def _in_turn(self, answer: RemoteAnswer, message: tuple[Any, ...], counted: bool = False) -> Any:
        """``message``'s reply from the answer's helper, in its caller's turn, charged to it;
        ``counted``: the wait counts against the caller's queue of heavy requests."""
        caller = answer.caller
        self.waiting[caller] += counted
        try:
            await self.turns.acquire(caller)
        finally:
            self.waiting[caller] -= counted
            if self.waiting[caller] <= 0:
                del self.waiting[caller]
        try:
            reply = await answer.helper.call(answer.request, message)
        finally:
            self.turns.release(caller)
        self.usage.charge(caller, reply[-1])
        return reply

    def _end(self, answer: RemoteAnswer) -> None:
        if not answer.done:
            answer.done = True
            answer.helper.running -= 1

    def stop(self) -> None:
        """End the helpers and the zygote (their sockets close; each ends as it reads that)."""
        for helper in self.helpers:
            helper.stop()
        self.zygote.stop()
