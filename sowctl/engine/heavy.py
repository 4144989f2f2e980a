"""The worker's lane for heavy requests: run in helper processes (``sowctl.engine.isolation``).

A request is heavy when the application says so from its head and the size of its body
(``Hooks.heavy``: a reorder of thousands of items, a long report), or when its caller has
spent more than ``Limits.heavy_cpu`` seconds of its processor bucket (``engine.usage``):
whatever such a caller sends next may be costly too (a dependency whose re-ranking walks a
long chain announces nothing in its head). A heavy request holds none of the worker's
threads: it waits on the event loop for a helper in its caller's turn (``engine.turns``, the
same processor buckets), and the helper's time is charged to it. A caller with
``Limits.heavy_queue`` heavy requests already waiting is refused at once (503, Retry-After):
what it queues is bounded, whatever it sends.

A helper runs one request at a time and holds it until its answer is closed, so a streamed
answer is made piece by piece there, as a thread would make it. A helper that dies answers
503 (or cuts the answer under way short) and is replaced; while none can be started the
lane runs its requests in the worker's threads, as before it existed.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import Hashable
from concurrent.futures import ThreadPoolExecutor
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


class Helper:
    """One helper process, seen from the worker: a connection, and a thread that waits on it."""

    def __init__(self, zygote: Zygote) -> None:
        self.zygote = zygote
        self.connection: Connection | None = None
        self.io = ThreadPoolExecutor(1, thread_name_prefix="sowctl-helper")
        self.io.submit(self._ready)  # loaded before the first heavy request, not by it

    async def call(self, message: tuple[Any, ...]) -> tuple[Any, ...]:
        """Send ``message`` and return the reply; ``HelperGone`` when the helper ended (the next
        call starts another)."""
        return await asyncio.get_running_loop().run_in_executor(self.io, self._round_trip, message)

    def _round_trip(self, message: tuple[Any, ...]) -> tuple[Any, ...]:
        if self.connection is None:
            self.connection = self._started()
        try:
            self.connection.send(message)
            return tuple(self.connection.recv())
        except (EOFError, OSError) as exc:
            self._forget()
            self.io.submit(self._ready)  # its successor starts now, not at the next request
            raise HelperGone(f"the helper process ended: {type(exc).__name__}") from None

    def _ready(self) -> None:
        if self.connection is None:
            with contextlib.suppress(HelperGone):
                self.connection = self._started()

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

    def _forget(self) -> None:
        if self.connection is not None:
            self.connection.close()
            self.connection = None


@dataclass
class RemoteAnswer:
    """An answer under way in a helper: what ``running.Answer`` is for a thread."""

    status: int
    headers: list[tuple[bytes, bytes]]
    pieces: list[bytes]
    done: bool
    helper: Helper
    caller: Hashable


class HeavyLane:
    def __init__(self, zygote: Zygote, usage: CpuUsage, limits: Limits) -> None:
        self.usage = usage
        self.limits = limits
        self.zygote = zygote
        self.idle = [Helper(zygote) for _ in range(limits.heavy_processes)]
        self.turns = Turns(limits.heavy_processes, usage, limits.queue_timeout)
        self.waiting: Counter[Hashable] = Counter()
        self.in_process = False  # no helper could be started: heavy requests run in threads

    def wants(self, caller: Hashable, heavy_by_head: bool) -> bool:
        """Whether a request goes to a helper."""
        if self.in_process:
            return False
        spent = self.usage.burst - self.usage.level(caller)
        return heavy_by_head or (self.usage.share > 0 and spent > self.limits.heavy_cpu)

    async def start(self, caller: Hashable, environ: dict[str, Any], head_only: bool) -> RemoteAnswer:
        """Run the request in a helper, in ``caller``'s turn. ``QueueFull``, ``QueueTimeout``,
        ``Dropped``, ``HelperGone`` or ``RuntimeError`` (the application failed)."""
        if self.waiting[caller] >= self.limits.heavy_queue:
            raise QueueFull
        self.waiting[caller] += 1
        try:
            await self.turns.acquire(caller)
        finally:
            self.waiting[caller] -= 1
            if self.waiting[caller] <= 0:
                del self.waiting[caller]
        helper = self.idle.pop()
        body = environ["wsgi.input"].getvalue()
        try:
            reply = await helper.call(("start", sendable(environ), body, head_only))
        except HelperGone as gone:
            self._release(helper, caller)
            self.in_process = isinstance(gone, HelperUnavailable)
            raise
        self.usage.charge(caller, reply[-1])
        if reply[0] == "answer":
            _, status, headers, pieces, done, _ = reply
            answer = RemoteAnswer(status, headers, pieces, done, helper, caller)
            if done:
                self._release(helper, caller)
            return answer
        self._release(helper, caller)
        if reply[0] == "dropped":
            raise Dropped
        raise RuntimeError(reply[1])

    async def advance(self, answer: RemoteAnswer) -> None:
        """The next pieces of ``answer``; ``HelperGone`` or ``RuntimeError`` end it."""
        try:
            reply = await answer.helper.call(("next",))
        except HelperGone:
            answer.done = True
            self._release(answer.helper, answer.caller)
            raise
        _, ok, pieces, done, seconds = reply
        self.usage.charge(answer.caller, seconds)
        if not ok:
            answer.done = True
            self._release(answer.helper, answer.caller)
            raise RuntimeError(pieces)
        answer.pieces, answer.done = pieces, done
        if done:
            self._release(answer.helper, answer.caller)

    async def close(self, answer: RemoteAnswer, cut_short: str | None) -> None:
        """Close an answer not sent to its end, and give its helper back."""
        if answer.done:
            return
        answer.done = True
        try:
            await answer.helper.call(("close", cut_short))
        except HelperGone:
            pass
        finally:
            self._release(answer.helper, answer.caller)

    def stop(self) -> None:
        """End the helpers and the zygote (their sockets close; each ends as it reads that)."""
        for helper in self.idle:
            helper.io.submit(helper._forget)
            helper.io.shutdown(wait=True)
        self.zygote.stop()

    def _release(self, helper: Helper, caller: Hashable) -> None:
        self.idle.append(helper)
        self.turns.release(caller)
