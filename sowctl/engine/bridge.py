"""The ASGI application each worker runs: a WSGI application behind it, each request read whole first.

For each request:

1. Its head is checked before any of its body is read: the request line (414), the header
   block (431), the transfer coding (400), a body announced larger than the route takes (413),
   and whatever the application refuses from the head alone (``Hooks.body_limit``).
2. Its body is read whole on the event loop, so a client sending slowly holds no thread
   (``sowctl.engine.body``: 408, 413, 503).
3. It waits for one of the worker's threads in its caller's turn (``sowctl.engine.turns``;
   503 after ``queue_timeout``), and a thread runs the application (``sowctl.engine.running``).
   A longer answer is made piece by piece by further turns and sent between them at a pace the
   client must keep (``sowctl.engine.pacing``); the thread time of every turn is charged to the
   caller's share of the processor (``sowctl.engine.usage``).

The engine's own answers are worded by the application (``Hooks.answer``) and logged through
``Hooks.on_refusal``. Nothing an application does reaches granian as an exception: a failure
of the engine itself is one line on stderr.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable, Hashable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any
from urllib.parse import unquote_to_bytes

from sowctl.engine import environ as wsgi_environ
from sowctl.engine.body import BodyBuffers, Refused, read_body, too_large
from sowctl.engine.heavy import HeavyLane, QueueFull, RemoteAnswer
from sowctl.engine.hooks import CUT_SHORT_KEY, PAUSE_KEY, Hooks, Refusal
from sowctl.engine.isolation import HelperGone, Zygote
from sowctl.engine.limits import Limits
from sowctl.engine.pacing import Pace, pieces
from sowctl.engine.running import Answer, Dropped, WSGIApp, advance, close, start, timed
from sowctl.engine.turns import QueueTimeout, Turns
from sowctl.engine.usage import CpuUsage
from sowctl.foundation.redaction import redact_text

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

BUSY = "the server is busy; retry later"
FRAMING = "invalid or conflicting Content-Length or Transfer-Encoding header"
INTERNAL = "internal server error"
HEAVY_QUEUE_FULL = "too many heavy requests of this caller are waiting; retry later"


class Bridge:
    def __init__(
        self, app: WSGIApp, hooks: Hooks, limits: Limits, *, multiprocess: bool, zygote: Zygote | None = None
    ) -> None:
        self.app = app
        self.hooks = hooks
        self.limits = limits
        self.multiprocess = multiprocess
        self.usage = CpuUsage(limits.cpu_burst, limits.cpu_share)
        # Heavy requests' helper processes (None: every request runs in a thread).
        self.lane = HeavyLane(zygote, self.usage, limits) if zygote and limits.heavy_processes else None
        self.turns = Turns(limits.threads, self.usage, limits.queue_timeout)
        self.buffers = BodyBuffers(limits.max_buffered_bytes, limits.free_body_bytes)
        self._pool: ThreadPoolExecutor | None = None

    @property
    def pool(self) -> ThreadPoolExecutor:
        if self._pool is None:  # made in the worker, after the fork
            self._pool = ThreadPoolExecutor(self.limits.threads + 1, thread_name_prefix="sowctl-app")
        return self._pool

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope.get("type")
        if kind == "lifespan":
            await self._lifespan(receive, send)
        elif kind == "http":
            try:
                await Exchange(self, scope, receive, send).run()
            except Exception as exc:  # never granian's traceback and 500
                log_line(f"the engine failed a request: {type(exc).__name__}: {exc}")

    async def in_turn(self, caller: Hashable, work: Callable[[], Any]) -> Any:
        """``work()`` in one of the worker's threads, in ``caller``'s turn, charged to it."""
        await self.turns.acquire(caller)
        try:
            ok, result, seconds = await asyncio.get_running_loop().run_in_executor(self.pool, timed, work)
        finally:
            self.turns.release(caller)
        self.usage.charge(caller, seconds)
        if not ok:
            raise result
        return result

    async def off_turn(self, work: Callable[[], Any]) -> None:
        """Short work that must not wait for a turn (closing an answer), errors logged."""
        ok, result, _ = await asyncio.get_running_loop().run_in_executor(self.pool, timed, work)
        if not ok:
            log_line(f"closing an answer failed: {type(result).__name__}: {result}")

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                if self._pool is not None:
                    self._pool.shutdown(wait=False, cancel_futures=True)
                if self.lane is not None:
                    self.lane.stop()
                await send({"type": "lifespan.shutdown.complete"})
                return


class Exchange:
    """One request and its answer."""

    def __init__(self, bridge: Bridge, scope: Scope, receive: Receive, send: Send) -> None:
        self.bridge = bridge
        self.limits = bridge.limits
        self.scope = scope
        self.receive = receive
        self.send = send
        self.method = str(scope.get("method", "GET"))
        self.path = unquote_to_bytes(wsgi_environ.raw_path(scope)).decode("latin-1")
        self.environ: dict[str, Any] = {}

    async def run(self) -> None:
        try:
            await self._run()
        finally:
            self.bridge.buffers.release(id(self))

    async def _run(self) -> None:
        try:
            limit = self.admit()
            body = await self.read(limit)
        except Refused as refused:
            self.bridge.buffers.release(id(self))  # now, not once the answer is sent
            await self.refuse(refused.refusal, close=True)
            return
        self.environ = wsgi_environ.build(self.scope, body, multiprocess=self.bridge.multiprocess)
        self.environ[PAUSE_KEY] = True
        del body
        caller = self._caller()
        lane = self.bridge.lane
        contended = self.bridge.turns.contended(caller)
        by_head = self._heavy_by_head()
        # An ordinary request sent aside for its caller's spending alone waits its turn in the
        # worker when the caller's helper queue is full: only heavy ones are refused for it.
        if (
            lane is not None
            and by_head is not None
            and lane.wants(caller, by_head, contended)
            and (by_head or lane.has_room(caller))
        ):
            await self._run_heavy(lane, caller)
            return
        answer = await self._started(
            self.bridge.in_turn(caller, partial(start, self.bridge.app, self.environ, self.method == "HEAD"))
        )
        if answer is None:
            return
        await self.respond(
            answer,
            partial(self.bridge.in_turn, caller, partial(advance, answer)),
            partial(self._close_local, answer),
        )

    async def _started(self, starting: Awaitable[Any]) -> Any:
        """The answer ``starting`` makes (in a thread or a helper), or None once the refusal
        that says why it made none was sent."""
        try:
            return await starting
        except QueueFull:
            await self.refuse(Refusal(503, HEAVY_QUEUE_FULL, retry_after=1), close=False)
        except (QueueTimeout, HelperGone):
            await self.refuse(Refusal(503, BUSY, retry_after=1), close=False)
        except Dropped:
            await self.drop()
        except Exception as exc:
            log_line(f"the application failed: {type(exc).__name__}: {exc}")
            await self.refuse(Refusal(500, INTERNAL), close=True)
        return None

    async def _close_local(self, answer: Answer) -> None:
        if not answer.done:
            answer.done = True
            await self.bridge.off_turn(partial(close, answer.body))

    async def _run_heavy(self, lane: HeavyLane, caller: Hashable) -> None:
        """The request in a helper process (``sowctl.engine.heavy``)."""
        answer = await self._started(lane.start(caller, self.environ, self.method == "HEAD"))
        if answer is None:
            return
        await self.respond(
            answer,
            partial(lane.advance, answer),
            lambda: lane.close(answer, self.environ.get(CUT_SHORT_KEY)),
        )

    def _heavy_by_head(self) -> bool | None:
        """Whether the application calls this request heavy from its head and body size; None:
        it must stay in the worker whatever its caller spent (an event stream, which waits
        between its pieces without a thread: a helper would be held for its whole life)."""
        if self.bridge.hooks.heavy is None:
            return False
        size = int(self.environ.get("CONTENT_LENGTH") or 0)
        try:
            judged = self.bridge.hooks.heavy(self.method, self.path, size)
            return None if judged is None else bool(judged)
        except Exception as exc:
            log_line(f"judging a request heavy failed: {type(exc).__name__}: {exc}")
            return False

    def _caller(self) -> Hashable:
        try:
            return self.bridge.hooks.caller(self.environ)
        except Exception as exc:  # the application's hook failed: the client's host is a caller
            log_line(f"naming the caller failed: {type(exc).__name__}: {exc}")
            return self.environ.get("REMOTE_ADDR")

    # --- before the application -----------------------------------------------------

    def admit(self) -> int:
        """The largest body this request may carry; ``Refused`` for a head refused as it is."""
        line = len(self.method) + len(wsgi_environ.target(self.scope)) + 10
        if line > self.limits.max_request_line:
            raise Refused(
                Refusal(414, f"request line too long: the limit is {self.limits.max_request_line} bytes")
            )
        if wsgi_environ.header_bytes(self.scope) > self.limits.max_header_bytes:
            header_limit = self.limits.max_header_bytes
            raise Refused(Refusal(431, f"request header fields too large: the limit is {header_limit} bytes"))
        codings = wsgi_environ.header_values(self.scope, b"transfer-encoding")
        if codings and wsgi_environ.header_values(self.scope, b"content-length"):
            # Which one frames the body is what a proxy in front may read otherwise: refuse both.
            raise Refused(Refusal(400, FRAMING))
        if codings and ",".join(codings).strip().lower() != "chunked":
            raise Refused(Refusal(400, "unsupported transfer coding (only chunked is)"))
        limit: int | Refusal = self.limits.max_body_bytes
        if self.bridge.hooks.body_limit is not None:
            authorization = wsgi_environ.header(self.scope, b"authorization")
            limit = self.bridge.hooks.body_limit(self.method, self.path, authorization)
        if isinstance(limit, Refusal):
            if self._body_announced() > self.limits.max_body_bytes or self._chunked():
                raise Refused(limit)
            limit = self.limits.max_body_bytes
        if self._body_announced() > limit:
            raise Refused(too_large(limit))
        return limit

    def _chunked(self) -> bool:
        return wsgi_environ.header(self.scope, b"transfer-encoding") is not None

    def _body_announced(self) -> int:
        text = (wsgi_environ.header(self.scope, b"content-length") or "").strip()
        return int(text) if text.isdigit() and len(text) < 20 else 0

    async def read(self, limit: int) -> bytes:
        if not self._chunked() and self._body_announced() == 0:
            return b""  # nothing to read: no trip to the parser
        return await read_body(
            self.receive,
            limit=limit,
            timeout=self.limits.body_timeout,
            buffers=self.bridge.buffers,
            request=id(self),
            chunked=self._chunked(),
        )

    # --- answers --------------------------------------------------------------------

    async def respond(
        self,
        answer: Answer | RemoteAnswer,
        more: Callable[[], Awaitable[Any]],
        finish: Callable[[], Awaitable[None]],
    ) -> None:
        """Send ``answer``, asking ``more()`` for its next pieces, and ``finish()`` it at the end
        (closing it if it was not made to its end)."""
        pace = Pace(self.limits.send_timeout, self.limits.min_send_rate)
        try:
            try:
                await self.send(
                    {"type": "http.response.start", "status": answer.status, "headers": answer.headers}
                )
            except Exception:  # the connection is gone
                self.environ.setdefault(CUT_SHORT_KEY, "gone")
                return
            while True:
                for piece in [p for chunk in answer.pieces for p in pieces(chunk)]:
                    if not await self.send_piece(pace, piece):
                        return
                if answer.done:
                    break
                if answer.wait > 0:  # the body paused (an event stream between two looks): no thread
                    await asyncio.sleep(answer.wait)
                try:
                    await more()
                except Exception as exc:  # the application failed mid-answer: the body ends early
                    log_line(f"the application failed mid-answer: {type(exc).__name__}: {exc}")
                    self.environ.setdefault(CUT_SHORT_KEY, "failed")
                    return
            await self.send({"type": "http.response.body", "body": b"", "more_body": False})
        except QueueTimeout:
            self.environ.setdefault(CUT_SHORT_KEY, "busy")
        finally:
            await finish()

    async def send_piece(self, pace: Pace, piece: bytes) -> bool:
        """Send ``piece`` within its allowance; False when the client is cut off or gone."""
        allowed = pace.allowance(len(piece))
        loop = asyncio.get_running_loop()
        started = loop.time()
        try:
            if allowed <= 0:
                raise TimeoutError
            await asyncio.wait_for(
                self.send({"type": "http.response.body", "body": piece, "more_body": True}), allowed
            )
        except TimeoutError:
            self.environ[CUT_SHORT_KEY] = "too-slow"
            return False
        except Exception:  # the connection is gone
            self.environ.setdefault(CUT_SHORT_KEY, "gone")
            return False
        pace.record(len(piece), loop.time() - started)
        return True

    async def refuse(self, refusal: Refusal, *, close: bool) -> None:
        """Answer ``refusal`` in the application's words; ``close``: end the connection after
        it (a body left unread cannot be skipped safely)."""
        headers, body = self.bridge.hooks.answer(self.path, refusal)
        encoded = [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in headers]
        encoded.append((b"content-length", str(len(body)).encode()))
        if refusal.retry_after is not None and not any(name == b"retry-after" for name, _ in encoded):
            encoded.append((b"retry-after", str(refusal.retry_after).encode()))
        if close:
            encoded.append((b"connection", b"close"))
        try:
            await asyncio.wait_for(self._answer(refusal.status, encoded, body), self.limits.send_timeout)
        except Exception:  # the client is gone or does not read: nothing more to do
            pass
        client = self.scope.get("client") or ("-",)
        protocol = wsgi_environ.protocol(self.scope)
        target = wsgi_environ.target(self.scope)
        self.bridge.hooks.on_refusal(str(client[0]), self.method, target, protocol, refusal.status, headers)

    async def _answer(self, status: int, headers: list[tuple[bytes, bytes]], body: bytes) -> None:
        await self.send({"type": "http.response.start", "status": status, "headers": headers})
        await self.send({"type": "http.response.body", "body": b"" if self.method == "HEAD" else body})

    async def drop(self) -> None:
        """Cut the connection as early as the parser lets an application: after a status line
        and headers, before any of the body (a client reading the answer sees a broken one)."""
        headers = [(b"connection", b"close"), (b"content-type", b"application/json")]
        try:
            await self.send({"type": "http.response.start", "status": 503, "headers": headers})
            await self.send({"type": "http.response.body", "body": b"", "more_body": True})
        except Exception:
            pass


def log_line(message: str) -> None:
    try:
        sys.stderr.write(redact_text(f"[sowctl] {message}") + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
